// The self-contained bundle runs where there is no node_modules: copied to a temporary folder
// outside the repository, it shows its help, lints a preset and reports the cache.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

test('npm run bundle builds a bundle that runs with no node_modules', () => {
  const b = spawnSync(process.execPath, ['src/cli/bundle/build.js'], { cwd: repoRoot, encoding: 'utf8' });
  assert.equal(b.status, 0, b.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'xtts-bundle-'));
  cpSync(join(repoRoot, 'bundle'), dir, { recursive: true });
  assert.ok(!existsSync(join(dir, 'node_modules')));
  const run = (...args: string[]) => spawnSync(process.execPath, ['xtts.cjs', ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_PATH: '', NO_COLOR: '1' } });
  const help = run('--help');
  assert.equal(help.status, 0, help.stderr);
  for (const cmd of ['train', 'synthesize', 'analyze-data-pipeline', 'validate-gpu-optimization', 'cache']) assert.match(help.stdout, new RegExp(cmd));
  const v = run('validate-gpu-optimization', '--config', 'configs/quickstart.yaml', '--json');
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).result.summary.error, 0);
  const c = run('cache', 'stats', '--cache', join(dir, 'none.sqlite'), '--json');
  assert.equal(c.status, 2);
  assert.equal(JSON.parse(c.stdout).error.code, 'CACHE_NOT_FOUND');
});
