// The code is laid out by the formatter (Biome, biome.json: 120 columns) and no line of it is longer
// than 120 characters: not code (the formatter sees to that), and not comments, strings, SQL or WGSL,
// which it leaves as they are.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';
import { longLines, sourceFiles } from '../helpers/structure.js';

test('every file is as the formatter lays it out (npx biome format --write . mends it)', () => {
  const biome = join(repoRoot, 'node_modules', '.bin', 'biome');
  const r = spawnSync(biome, ['format', '--max-diagnostics=20', '.'], { cwd: repoRoot, encoding: 'utf8' });
  const unformatted = [...`${r.stdout}${r.stderr}`.matchAll(/^(\S+\.[cm]?[jt]s) format /gm)].map((m) => m[1]);
  assert.equal(r.status, 0, `not formatted: ${unformatted.join(', ') || `${r.stdout}${r.stderr}`.slice(-2000)}`);
});

test('no line in src/, plugins/, test/ or bench/ is over 120 characters', () => {
  const files = sourceFiles(['src', 'plugins', 'test', 'bench'], /\.([cm]?[jt]s)$/);
  assert.ok(files.length > 200, `only ${files.length} files found`);
  const long = longLines(files, 120);
  assert.deepEqual(
    long.map((l) => `${l.file}:${l.line} is ${l.length} characters`),
    [],
    'wrap the comment, or split the string into pieces joined with +',
  );
});
