#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner (TypeScript through tsx), after a build so
// that end-to-end tests exercise the compiled CLI. Extra arguments filter test files by substring.
// Every test process gets TMPDIR set to one folder of this run's (os.tmpdir() and Python's tempfile read it),
// removed when the tests pass: a run writes ~3 GB of temporary runs, caches and WAVs (the config fuzz alone
// 2.3 GB), which the tests' own folders left behind in /tmp, run after run, until the disk filled. After a
// failure the folder stays for a look (its path is printed first, so that the runner's summary stays last).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'fixtures') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

const files = walk(join(root, 'test'))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(2);
}
if (!process.env.XTTS_TEST_NO_BUILD) {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const scratch = mkdtempSync(join(tmpdir(), 'xtts-tests-'));
console.log(`temporary files: ${scratch} (removed when the tests pass)`);
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TMPDIR: scratch },
  },
);
if (r.status === 0) rmSync(scratch, { recursive: true, force: true });
process.exit(r.status ?? 1);
