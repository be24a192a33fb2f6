// The self-contained bundle runs where there is no node_modules: built by the real bundler, copied to
// a temporary folder outside the repository, it shows its help with every built command, lints a
// preset, answers with the JSON error envelope, and its backend bench trains on wasm and reaches
// Dawn (unpacked from its compressed copy on first use; Dawn's null backend stands in for a GPU).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

test('npm run bundle builds a bundle that runs with no node_modules', (t) => {
  const b = spawnSync(process.execPath, ['src/cli/bundle/build.js'], { cwd: repoRoot, encoding: 'utf8' });
  assert.equal(b.status, 0, b.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'xtts-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.ok(!dir.startsWith(repoRoot));
  for (let d = dir; d !== dirname(d); d = dirname(d))
    assert.ok(!existsSync(join(d, 'node_modules')), `${d}/node_modules would be reachable`);
  cpSync(join(repoRoot, 'bundle'), dir, { recursive: true });
  const files = readdirSync(dir);
  for (const f of [
    'xtts.cjs',
    'package.json',
    'backend-bench.cjs',
    'dawn.node.br',
    'better_sqlite3.node',
    'tfjs-backend-wasm-simd.wasm',
    'configs',
  ])
    assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
  assert.ok(!files.includes('dawn.node'), 'Dawn travels compressed');
  const run = (file: string, ...args: string[]) =>
    spawnSync(process.execPath, [file, ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NODE_PATH: '', NO_COLOR: '1', NODE_OPTIONS: '' },
      timeout: 60_000,
    });

  // Every command a plugin has built is there, found at bundle time.
  const help = run('xtts.cjs', '--help');
  assert.equal(help.status, 0, help.stderr);
  const built = readdirSync(join(repoRoot, 'plugins')).flatMap((p) => {
    const d = join(repoRoot, 'plugins', p, 'dist', 'commands');
    return existsSync(d)
      ? readdirSync(d)
          .filter((f) => f.endsWith('.js') || statSync(join(d, f)).isDirectory())
          .map((f) => f.replace(/\.js$/, ''))
      : [];
  });
  assert.ok(built.includes('validate-gpu-optimization'));
  for (const cmd of built) assert.match(help.stdout, new RegExp(`^  ${cmd}\\b`, 'm'), `${cmd} in --help`);

  const v = run('xtts.cjs', 'validate-gpu-optimization', '--config', join(dir, 'configs', 'quickstart.yaml'), '--json');
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).result.summary.error, 0);
  const human = run('xtts.cjs', 'validate-gpu-optimization', '--config', 'configs/quickstart.yaml');
  assert.equal(human.status, 0, human.stdout + human.stderr);
  assert.match(human.stdout, /no findings/);

  const c = run('xtts.cjs', 'cache', 'stats', '--cache', join(dir, 'none.sqlite'), '--json');
  assert.equal(c.status, 2);
  assert.equal(JSON.parse(c.stdout).error.code, 'CACHE_NOT_FOUND');

  const wasm = run('backend-bench.cjs', '--backends', 'wasm', '--steps', '1');
  assert.equal(wasm.status, 0, wasm.stdout + wasm.stderr);
  const wasmJson = JSON.parse(/^BENCH_JSON (.*)$/m.exec(wasm.stdout)?.[1] ?? 'null');
  assert.equal(wasmJson.results[0].backend, 'wasm');
  assert.ok(wasmJson.results[0].kernels > 100 && Number.isFinite(wasmJson.results[0].loss));

  const gpu = run('backend-bench.cjs', '--backends', 'webgpu', '--dawn-backend', 'null', '--steps', '1');
  assert.equal(gpu.status, 0, gpu.stdout + gpu.stderr);
  assert.match(gpu.stdout, /^webgpu +Null backend \(null\): step/m);
  assert.equal(statSync(join(dir, 'dawn.node')).size > 10 * 2 ** 20, true, 'dawn.node unpacked beside the bundle');

  const tf = run('backend-bench.cjs', '--backends', 'tensorflow');
  assert.equal(tf.status, 1);
  assert.match(tf.stderr, /neither @tensorflow\/tfjs-node-gpu nor @tensorflow\/tfjs-node is installed/);
  assert.doesNotMatch(tf.stderr, /^\s+at /m, 'an explanation, not a stack trace');
});
