// Writing a file the user named (a trace, a report, a patched config, a WAV): a folder that does not
// exist or cannot be written is a usage error that says which file, not a stack trace. Every write
// goes to a temporary file beside the target and is renamed over it once whole and on disk: a run
// killed mid-write leaves the old file or the new one, never half of either.
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';

/**
 * mkdir -p: `path` and the folders above it that are missing, one level at a time. Node's own recursive mkdir loops
 * for ever, at full CPU and deaf to SIGTERM, under a folder that refuses new entries with ENOENT (/proc): here that
 * is an EACCES error naming the folder. Errors carry Node's codes (ENOTDIR where a file stands in the way).
 */
export function makeFolders(path: string): void {
  const missing: string[] = [];
  let at = resolve(path);
  for (;;) {
    const st = statSync(at, { throwIfNoEntry: false });
    if (st) {
      if (!st.isDirectory()) throw Object.assign(new Error(`${at} is not a folder`), { code: 'ENOTDIR' });
      break;
    }
    missing.push(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && statSync(folder).isDirectory()) continue; // made meanwhile
      if (code === 'ENOENT')
        throw Object.assign(new Error(`${dirname(folder)} takes no new folders`), { code: 'EACCES', path: folder });
      throw e;
    }
  }
}

function temporaryBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
}

/** What a file is written from: text, bytes, or a function writing to the open file (writeAllSync) as it goes. */
export type FileContent = string | Uint8Array | ((fd: number) => void);

/** One write takes at most 2 GiB - 1 bytes (Node's int32 length); a model's weights can be more. */
const WRITE_PIECE = 1 << 30;

/** Writes all of `bytes` at `fd`'s position, in pieces of at most 1 GiB. */
export function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, Math.min(bytes.length - off, WRITE_PIECE));
}

/** Writes `data` to `path` and fsyncs it (the caller renames it into place). */
export function writeDurable(path: string, data: FileContent): void {
  const fd = openSync(path, 'w');
  try {
    if (typeof data === 'function') data(fd);
    else writeAllSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `data` to `path` through a temporary file and a rename. With `overwrite: false` an existing
 * `path` is never replaced, even one created meanwhile (the new file is linked in, which fails if
 * the name exists): EEXIST is thrown.
 */
export function writeFileAtomic(path: string, data: FileContent, options: { overwrite?: boolean } = {}): void {
  const tmp = temporaryBeside(path);
  try {
    writeDurable(tmp, data);
    if (options.overwrite === false) {
      linkSync(tmp, path);
      rmSync(tmp, { force: true });
    } else renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

function exists(file: string, what: string): XttsError {
  return new XttsError('OUTPUT_EXISTS', `${file} exists: xtts does not replace ${what} it did not just write`, {
    exitCode: ExitCode.usage,
    suggestions: ['name a new file, or add --overwrite to replace it'],
  });
}

/** Write `text` to `file` (atomically); `what` names it for the message, e.g. "the trace (--trace)". */
export function writeOutputFile(
  file: string,
  text: FileContent,
  what: string,
  options: { overwrite?: boolean } = {},
): void {
  try {
    writeFileAtomic(file, text, options);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw exists(file, what);
    throw new XttsError(
      'OUTPUT_UNWRITABLE',
      `cannot write ${what} to ${file}: ${code === 'ENOENT' ? 'its folder does not exist' : (e as Error).message}`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['name a file in a folder that exists and that you can write'],
      },
    );
  }
}

/**
 * Before long work: the folder `file` goes into exists and can be written, or a usage error naming
 * it; with `overwrite: false`, `file` must not exist yet.
 */
export function checkOutputFolder(file: string, what: string, options: { overwrite?: boolean } = {}): void {
  const folder = dirname(file);
  let problem: string | undefined;
  try {
    if (!statSync(folder).isDirectory()) problem = `${folder} is not a folder`;
    else accessSync(folder, constants.W_OK);
  } catch (e) {
    problem =
      (e as NodeJS.ErrnoException).code === 'ENOENT'
        ? `its folder ${folder} does not exist`
        : `its folder ${folder} cannot be written`;
  }
  if (problem)
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${problem}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a file in a folder that exists and that you can write'],
    });
  if (options.overwrite === false && existsSync(file)) throw exists(file, what);
}
