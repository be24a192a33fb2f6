// What a feature cache that cannot be opened is told apart by: a folder that cannot be written (said, and then no
// `cache clear` advice, which would fail the same way), and a file that may be removed. (A read-only file system is
// told by access(2)'s EROFS: not made here, since a test cannot mount one.)
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openFailed, unwritableBecause } from '../../src/core/cache/damage.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-cache-damage-');
after(() => tmp.remove());

test('a cache that cannot be opened: `cache clear` is advised only for a file in a folder that can be written', () => {
  const cause = new Error('unable to open database file');
  assert.equal(unwritableBecause(tmp.path), null);
  const there = openFailed(join(tmp.path, 'cache.sqlite'), cause, true);
  assert.equal(there.code, 'CACHE_OPEN_FAILED');
  assert.equal(there.message, `cannot open the feature cache ${join(tmp.path, 'cache.sqlite')}: ${cause.message}`);
  assert.match(there.suggestions[1], /^or, if this file is damaged, remove it: `xtts cache clear --cache /);
  assert.equal(openFailed(join(tmp.path, 'new.sqlite'), cause, false).suggestions.length, 1);
  const gone = join(tmp.path, 'no-such-folder');
  assert.equal(unwritableBecause(gone), 'does not exist');
  const missing = openFailed(join(gone, 'cache.sqlite'), cause, true);
  assert.match(missing.message, /\(.*no-such-folder does not exist\)$/);
  assert.deepEqual(missing.suggestions, [
    'name a cache file in a folder you can write (pipeline.cache.path, or --cache)',
  ]);
});
