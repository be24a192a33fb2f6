// makeFolders (util/output.ts), the mkdir -p every run folder, cache and output folder goes through: the missing
// levels made one at a time; a file in the way is ENOTDIR; a folder that takes no new entries (/proc, where Node's
// recursive mkdir loops for ever at full CPU, deaf to SIGTERM) is an EACCES error naming it.
import assert from 'node:assert/strict';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { makeFolders } from '../../src/core/util/index.js';
import { TempDir } from '../helpers/tmp.js';

test('makeFolders makes the missing levels, leaves existing ones, and refuses a file in the way', () => {
  const tmp = new TempDir('xtts-folders-');
  try {
    const deep = tmp.at('a/b/c');
    makeFolders(deep);
    assert.ok(statSync(deep).isDirectory());
    makeFolders(deep); // there already: nothing to do
    makeFolders(tmp.at('a/b/c/../d'));
    assert.ok(statSync(tmp.at('a/b/d')).isDirectory());
    writeFileSync(tmp.at('file'), 'mine');
    assert.throws(() => makeFolders(tmp.at('file/x')), { code: 'ENOTDIR' });
    assert.throws(() => makeFolders(tmp.at('file')), { code: 'ENOTDIR' });
    assert.equal(statSync(tmp.at('file')).isFile(), true);
  } finally {
    tmp.remove();
  }
});

test('a folder under /proc is refused with EACCES naming /proc, where node loops for ever', {
  skip: existsSync('/proc/self') ? false : 'no /proc here',
}, () => {
  assert.throws(() => makeFolders('/proc/xtts-nowhere/run'), {
    code: 'EACCES',
    message: '/proc takes no new folders',
  });
});
