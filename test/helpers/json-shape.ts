// The shape of a --json result — every key path with the type found there — checked against a
// committed snapshot (test/fixtures/json-shapes/NAME.txt), so that a field that is renamed, removed
// or changes type fails a test instead of a user's script. Arrays are `path[]` with their elements'
// keys merged; a null is compatible with any type (it is "not measured here"); paths under `open`
// are records whose keys vary (environment variables, per-reason shares) and are not listed.
// XTTS_UPDATE_SHAPES=1 rewrites the snapshots (then bump the result's schemaVersion if a field
// changed meaning or went away).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from './cli.js';

type Shape = Map<string, Set<string>>;

export function jsonShape(value: unknown, open: readonly string[] = []): Shape {
  const out: Shape = new Map();
  const add = (path: string, type: string) => {
    if (!out.has(path)) out.set(path, new Set());
    out.get(path)!.add(type);
  };
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) {
      add(path, 'array');
      for (const x of v) walk(x, `${path}[]`);
    } else if (v === null) add(path, 'null');
    else if (typeof v === 'object') {
      add(path, 'object');
      if (open.includes(path)) return;
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, path ? `${path}.${k}` : k);
    } else add(path, typeof v);
  };
  walk(value, '');
  out.delete('');
  return out;
}

function format(shape: Shape): string {
  return [...shape.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([p, types]) => `${p}: ${[...types].sort().join('|')}`)
    .join('\n');
}

function parse(text: string): Shape {
  const out: Shape = new Map();
  for (const line of text.split('\n')) {
    const i = line.lastIndexOf(': ');
    if (i > 0) out.set(line.slice(0, i), new Set(line.slice(i + 2).split('|')));
  }
  return out;
}

/** Fails, listing every difference, when `value`'s shape differs from the snapshot `name`. */
export function assertJsonShape(name: string, value: unknown, open: readonly string[] = []): void {
  const file = join(repoRoot, 'test', 'fixtures', 'json-shapes', `${name}.txt`);
  const actual = jsonShape(value, open);
  if (process.env.XTTS_UPDATE_SHAPES === '1' || !existsSync(file)) {
    if (process.env.XTTS_UPDATE_SHAPES !== '1')
      assert.fail(`no snapshot ${file}: run the test with XTTS_UPDATE_SHAPES=1 and commit it`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${format(actual)}\n`);
    return;
  }
  const expected = parse(readFileSync(file, 'utf8'));
  const problems: string[] = [];
  for (const [path, types] of expected) {
    const got = actual.get(path);
    if (!got) problems.push(`missing: ${path} (${[...types].join('|')})`);
    else {
      const real = (s: Set<string>) => [...s].filter((t) => t !== 'null');
      const want = real(types);
      const have = real(got);
      if (want.length && have.length && !have.every((t) => want.includes(t)))
        problems.push(`type changed: ${path}: ${want.join('|')} -> ${have.join('|')}`);
    }
  }
  for (const [path, types] of actual) if (!expected.has(path)) problems.push(`new: ${path} (${[...types].join('|')})`);
  assert.deepEqual(
    problems,
    [],
    `the --json shape of ${name} changed (if intended: XTTS_UPDATE_SHAPES=1, and ` +
      `bump schemaVersion when a field changed meaning or went ` +
      `away):\n${problems.join('\n')}`,
  );
}
