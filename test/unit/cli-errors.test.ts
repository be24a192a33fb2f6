// What reaches the user when the machine, not xtts, fails: real errors from the OS and SQLite become
// environment errors (exit 3) with the cause and what to do, never "a bug in xtts".
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { toXttsError } from '../../src/core/cli/command.js';
import { ExitCode } from '../../src/core/errors.js';

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail('it did not throw');
}

test('a full disk (ENOSPC from /dev/full) is NO_SPACE, exit 3, with the cause', () => {
  const e = toXttsError(thrown(() => writeFileSync('/dev/full', 'x')));
  assert.equal(e.code, 'NO_SPACE');
  assert.equal(e.exitCode, ExitCode.environment);
  assert.match(e.message, /the disk is full.*no space left on device/);
  assert.match(e.suggestions.join(' '), /--resume/);
});

test('a full SQLite database (SQLITE_FULL) is NO_SPACE too', () => {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'xtts-full-')), 'x.sqlite'));
  db.exec('CREATE TABLE t (v BLOB)');
  db.pragma('max_page_count = 8');
  const e = toXttsError(thrown(() => db.prepare('INSERT INTO t VALUES (?)').run(Buffer.alloc(1 << 16))));
  db.close();
  assert.equal(e.code, 'NO_SPACE');
  assert.equal(e.exitCode, ExitCode.environment);
});

test('a read-only place is NOT_WRITABLE (exit 3); anything else stays INTERNAL', () => {
  const ro = toXttsError(
    Object.assign(new Error("EROFS: read-only file system, open '/x'"), { code: 'EROFS', path: '/x' }),
  );
  assert.equal(ro.code, 'NOT_WRITABLE');
  assert.equal(ro.exitCode, ExitCode.environment);
  assert.equal(toXttsError(new TypeError('x is undefined')).code, 'INTERNAL');
});
