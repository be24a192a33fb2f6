// One error-code style: every code xtts can print is UPPER_SNAKE_CASE. The compiler refuses a
// lower-case literal passed to XttsError (its type is Uppercase<string>); this reads every source
// file for the codes that reach users in other ways too (fail helpers, the hooks' envelopes).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (/\.(ts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const CODE_SITES = [/XttsError\(\s*'([^']+)'/g, /\bcode: '([^']+)'/g, /\bfail\(\s*'([^']+)'/g];

test('every error code in src/ and plugins/ is UPPER_SNAKE_CASE (and there are many to check)', () => {
  const codes = new Map<string, string>();
  for (const file of [...sources(join(repoRoot, 'src')), ...sources(join(repoRoot, 'plugins'))]) {
    const text = readFileSync(file, 'utf8');
    for (const re of CODE_SITES) for (const m of text.matchAll(re)) codes.set(m[1], file.slice(repoRoot.length));
  }
  // Node's errno codes (ENOENT, EACCES …) are matched too: upper case as well.
  assert.ok(codes.size > 60, `only ${codes.size} codes found: the scan no longer sees them`);
  const bad = [...codes].filter(([code]) => !/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/.test(code));
  assert.deepEqual(bad, [], `codes not in UPPER_SNAKE_CASE: ${bad.map(([c, f]) => `${c} (${f})`).join(', ')}`);
});

test('docs/exit-codes.md gives every exit code a meaning and every --json status the code it follows', async () => {
  const { generateExitCodesDoc } = await import('../../src/core/config/docs.js');
  const { ExitCode } = await import('../../src/core/errors.js');
  const doc = generateExitCodesDoc();
  for (const [name, code] of Object.entries(ExitCode))
    assert.match(doc, new RegExp(`\\| ${code} \\| \`${name}\` \\| \\S`), `exit ${code} (${name}) has no meaning`);
  for (const status of ['success', 'findings', 'interrupted', 'error'])
    assert.ok(doc.includes(`\`${status}\``), status);
  assert.equal(readFileSync(join(repoRoot, 'docs', 'exit-codes.md'), 'utf8'), doc, 'npm run build writes it');
});
