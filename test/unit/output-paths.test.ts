// Where outputs go (util/output.ts). makeFolders, the mkdir -p every run folder, cache and output folder goes
// through: the missing levels made one at a time; a file in the way is ENOTDIR; a folder that takes no new entries
// (/proc, where Node's recursive mkdir loops for ever at full CPU, deaf to SIGTERM) is an EACCES error naming it.
// refuseOutputsOverInputs: an output that is an input however it is spelt (a link, a path through ..), or two outputs
// that are one file, are refused naming both. requireRegularFile: a pipe, socket, device or folder named as a file is
// refused before anything opens it, in the words every such refusal uses (otherFileKind).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  checkOutputFolder,
  makeFolders,
  otherFileKind,
  refuseOutputsOverInputs,
  requireRegularFile,
  unreadableWhy,
  writeOutputFile,
} from '../../src/core/util/index.js';
import type { XttsError } from '../../src/core/errors.js';
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

test('an output that is an input by another name, or two outputs that are one file, are refused naming both', () => {
  const tmp = new TempDir('xtts-outputs-');
  try {
    const clip = tmp.write('in/clip.wav', 'RIFF');
    tmp.mkdir('out');
    linkSync(clip, tmp.at('out/hard.wav'));
    symlinkSync(tmp.at('in'), tmp.at('alias'));
    const inputs = [{ file: clip, what: 'the reference clip (--reference)' }];
    for (const out of [clip, tmp.at('out/../in/clip.wav'), tmp.at('out/hard.wav'), tmp.at('alias/clip.wav')])
      assert.throws(
        () => refuseOutputsOverInputs([{ file: out, what: 'the WAV' }], inputs),
        (e: Error & { code: string }) =>
          e.code === 'OUTPUT_IS_INPUT' &&
          e.message ===
            `the WAV ${out} is the reference clip (--reference) ${clip}: ` + 'xtts never writes over a file it reads',
      );
    // New files: apart, or one file by two spellings (the second through a link to the folder).
    refuseOutputsOverInputs(
      [
        { file: tmp.at('out/a.wav'), what: 'the WAV' },
        { file: tmp.at('out/b.wav'), what: 'x' },
      ],
      inputs,
    );
    assert.throws(
      () =>
        refuseOutputsOverInputs(
          [
            { file: tmp.at('in/new.wav'), what: 'the WAV' },
            { file: tmp.at('alias/new.wav'), what: 'the reference WAV' },
          ],
          inputs,
        ),
      { code: 'OUTPUTS_COLLIDE' },
    );
  } finally {
    tmp.remove();
  }
});

test('an output that is a pipe, socket or device (/dev/null, /dev/stdout) is refused, --overwrite or not', async () => {
  const tmp = new TempDir('xtts-out-not-file-');
  const server = createServer();
  try {
    // With --overwrite the write's rename into place replaced a named pipe, or as root /dev/null itself, with a file.
    execFileSync('mkfifo', [tmp.at('pipe.wav')]);
    await new Promise<void>((done) => server.listen(tmp.at('socket.wav'), done));
    const cases: [string, RegExp][] = [
      [tmp.at('pipe.wav'), /it is a named pipe \(FIFO\), not a file: xtts writes a file whole and renames it/],
      [tmp.at('socket.wav'), /it is a socket, not a file/],
      ['/dev/null', /it is a device, not a file/],
    ];
    for (const [path, why] of cases)
      for (const overwrite of [true, false]) {
        const refused = (e: XttsError) => e.code === 'OUTPUT_UNWRITABLE' && why.test(e.message);
        assert.throws(() => checkOutputFolder(path, 'the WAV', { overwrite }), refused, path);
        assert.throws(() => writeOutputFile(path, 'RIFF', 'the WAV', { overwrite }), refused, path);
      }
    assert.ok(statSync(tmp.at('pipe.wav')).isFIFO());
    assert.ok(statSync('/dev/null').isCharacterDevice());
    // A regular file is replaced with --overwrite, as before; a path through a file is the write's error.
    writeFileSync(tmp.at('old.wav'), 'old');
    writeOutputFile(tmp.at('old.wav'), 'new', 'the WAV', { overwrite: true });
    assert.equal(readFileSync(tmp.at('old.wav'), 'utf8'), 'new');
    assert.throws(() => writeOutputFile(tmp.at('old.wav/x.wav'), 'x', 'the WAV'), { code: 'OUTPUT_UNWRITABLE' });
  } finally {
    server.close();
    tmp.remove();
  }
});

test('an output in a kernel file system (/proc, /sys) is refused as such, not as a folder that does not exist', () => {
  // As root the folder passes the access check and the write then fails with ENOENT.
  for (const [path, fs] of [
    ['/proc/x.wav', 'proc'],
    ['/sys/x.wav', 'sysfs'],
  ]) {
    const folder = path.slice(0, path.lastIndexOf('/'));
    assert.throws(
      () => checkOutputFolder(path, 'the WAV'),
      (e: XttsError) =>
        e.code === 'OUTPUT_UNWRITABLE' &&
        e.message.includes(`its folder ${folder} is on the kernel's ${fs} file system`),
    );
    assert.throws(
      () => writeOutputFile(path, 'RIFF', 'the WAV'),
      (e: XttsError) => e.code === 'OUTPUT_UNWRITABLE' && !e.message.includes('does not exist'),
      path,
    );
  }
});

test('a file the user named that is not a regular file is refused naming what it is, in one wording', async () => {
  const tmp = new TempDir('xtts-not-file-');
  const server = createServer();
  try {
    execFileSync('mkfifo', [tmp.at('pipe')]);
    await new Promise<void>((done) => server.listen(tmp.at('socket'), done));
    const cases: [string, string, string][] = [
      [tmp.at('pipe'), 'XTTS_NOT_FILE', 'it is a named pipe (FIFO), not a file'],
      [tmp.at('socket'), 'XTTS_NOT_FILE', 'it is a socket, not a file'],
      ['/dev/null', 'XTTS_NOT_FILE', 'it is a device, not a file'],
      [tmp.path, 'EISDIR', 'it is a folder'],
    ];
    for (const [path, code, why] of cases) {
      assert.equal(otherFileKind(statSync(path)), why.replace(/^it is (.*?)(, not a file)?$/, '$1'));
      const e = (() => {
        try {
          requireRegularFile(path);
        } catch (err) {
          return err as Error;
        }
        return undefined;
      })();
      assert.ok(e, path);
      assert.equal((e as NodeJS.ErrnoException).code, code);
      assert.equal(unreadableWhy(e), why);
      assert.equal(e.message, `${path}: ${why} (write it to a file first)`);
    }
    writeFileSync(tmp.at('file'), 'mine');
    requireRegularFile(tmp.at('file'));
    // A path through a file: in general, and through a checkpoint pointer (checkpoints/latest names a step folder).
    mkdirSync(tmp.at('checkpoints'));
    writeFileSync(tmp.at('checkpoints/latest'), 'step-00000020\n');
    const through = (path: string) => {
      try {
        readFileSync(path);
      } catch (err) {
        return unreadableWhy(err);
      }
      return undefined;
    };
    assert.equal(through(tmp.at('file/voices.safetensors')), 'a folder on its path is a file');
    assert.match(
      through(tmp.at('checkpoints/latest/voices.safetensors')) ?? '',
      /^checkpoints\/latest is a file naming a/,
    );
  } finally {
    server.close();
    tmp.remove();
  }
});
