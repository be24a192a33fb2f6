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
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  statfsSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';

/**
 * mkdir -p: `path` and the folders above it that are missing, one level at a time. Node's own recursive mkdir loops
 * for ever, at full CPU and deaf to SIGTERM, under a folder that refuses new entries with ENOENT (/proc): here that
 * is an EACCES error naming the folder. Errors carry Node's codes (ENOTDIR where a file stands in the way). Returns the
 * folders it made, the outermost first.
 */
export function makeFolders(path: string): string[] {
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
  const made: string[] = [];
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder);
      made.push(folder);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && statSync(folder).isDirectory()) continue; // made meanwhile
      if (code === 'ENOENT')
        throw Object.assign(new Error(`${dirname(folder)} takes no new folders`), { code: 'EACCES', path: folder });
      throw e;
    }
  }
  return made;
}

/** An output folder that cannot be made or written: the usage error naming it as `what` and the `flag` naming it. */
export function folderUnwritable(folder: string, what: string, flag: string, e: unknown): XttsError {
  const code = (e as NodeJS.ErrnoException).code;
  const why =
    code === 'EEXIST' || code === 'ENOTDIR'
      ? 'a file of that name (or above it) is not a folder'
      : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
        ? `it cannot be written (${(e as Error).message})`
        : code === 'ENOSPC'
          ? 'the disk is full'
          : (e as Error).message;
  return new XttsError('OUTPUT_UNWRITABLE', `cannot use ${folder} as ${what}: ${why}`, {
    exitCode: ExitCode.usage,
    suggestions: [`name a folder you can write with ${flag}`],
  });
}

/** makeFolders for a folder the user named for output, refusing (folderUnwritable) one that cannot be made. */
export function makeOutputFolders(folder: string, what: string, flag: string): string[] {
  try {
    const made = makeFolders(folder);
    if (!statSync(folder).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    return made;
  } catch (e) {
    throw folderUnwritable(folder, what, flag, e);
  }
}

/**
 * What a path that is not a regular file is, in the words every refusal of one uses: "a folder", "a named pipe
 * (FIFO)", "a socket", "a device".
 */
export function otherFileKind(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  return 'a device';
}

/**
 * Throws where `file` is not a regular file, before anything opens it: opening a named pipe waits for a writer for
 * ever. The error's code is Node's (ENOENT, EISDIR) or XTTS_NOT_FILE with the `kind` otherFileKind names, which
 * unreadableWhy words.
 */
export function requireRegularFile(file: string): void {
  const st = statSync(file);
  if (st.isFile()) return;
  const code = st.isDirectory() ? 'EISDIR' : 'XTTS_NOT_FILE';
  const e = { code, kind: otherFileKind(st) };
  throw Object.assign(new Error(`${file}: ${unreadableWhy(e)} (write it to a file first)`), e);
}

/**
 * Says on stderr which of the files named with `flag` are pipes (`<(…)`, a named pipe): each is read once, and waits
 * for its writer, which would otherwise look like a hang.
 */
export function announcePipes(flag: string, files: readonly string[]): void {
  for (const file of files)
    if (statSync(file, { throwIfNoEntry: false })?.isFIFO())
      process.stderr.write(`reading ${flag} from the pipe ${file} (until its writer ends)\n`);
}

/**
 * A descriptor's bytes to its end (a pipe, standard input), or undefined once more than `maxBytes` came: never held
 * without bound. A non-blocking descriptor (standard input from a program still writing) waits on EAGAIN for more.
 */
export function readToEnd(fd: number, maxBytes: number): Buffer | undefined {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const chunks: Buffer[] = [];
  let total = 0;
  // One read buffer; each read's bytes are copied out (a pipe gives 64 KiB a read: a view of a fresh 1 MiB buffer
  // each time kept 16 times the bytes read alive).
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      Atomics.wait(pause, 0, 0, 10);
      continue;
    }
    if (n === 0) return Buffer.concat(chunks, total);
    total += n;
    if (total > maxBytes) return undefined;
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
}

/** Why a file the user named could not be read, in words: "it does not exist", "it is a folder", else the code. */
export function unreadableWhy(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'it does not exist';
  if (code === 'EISDIR') return 'it is a folder';
  // checkpoints/latest/… : `latest` (and `best`) are files naming a step folder, not folders.
  if (code === 'ENOTDIR') {
    const p = (e as NodeJS.ErrnoException).path ?? '';
    const pointer = /(^|\/)checkpoints\/(latest|best)\//.exec(p);
    return pointer
      ? `checkpoints/${pointer[2]} is a file naming a checkpoint folder (step-…), not a folder: name that folder`
      : 'a folder on its path is a file';
  }
  if (code === 'XTTS_NOT_FILE') return `it is ${(e as { kind?: string }).kind ?? 'not a regular file'}, not a file`;
  if (code === 'EACCES' || code === 'EPERM') return 'it may not be read (permissions)';
  return code ?? (e as Error).message;
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

/**
 * Why an output path that exists is no place for a file xtts writes, or undefined: a folder; a named pipe, socket or
 * device (/dev/stdout among them), which the write's rename into place would replace with a file, not write into.
 */
function notAFileWhy(file: string): string | undefined {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch {
    return undefined; // a path through a file, or a folder that may not be searched: the write says which
  }
  if (!st || st.isFile()) return undefined;
  if (st.isDirectory()) return 'it is a folder, not a file';
  return (
    `it is ${otherFileKind(st)}, not a file: xtts writes a file whole and renames it into place, which would ` +
    'replace it rather than write into it; write a file, then copy it there'
  );
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
  const notFile = notAFileWhy(file);
  if (notFile)
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${notFile}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a file in a folder that exists and that you can write'],
    });
  try {
    writeFileAtomic(file, text, options);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw exists(file, what);
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG')
      throw new XttsError(
        'NO_SPACE',
        `cannot write ${what} to ${file}: ${
          code === 'EFBIG'
            ? 'the file is larger than this process or file system allows (EFBIG: ulimit -f, or the file system)'
            : code === 'EDQUOT'
              ? 'the disk quota is used up'
              : 'the disk is full'
        }`,
        {
          exitCode: ExitCode.environment,
          suggestions: [
            code === 'EFBIG'
              ? 'raise the limit (ulimit -f), or write to a folder on another file system'
              : 'free space there (nothing of the file was left), or write to a folder on another disk',
          ],
        },
      );
    throw new XttsError(
      'OUTPUT_UNWRITABLE',
      `cannot write ${what} to ${file}: ${
        code === 'ENOENT'
          ? statSync(dirname(file), { throwIfNoEntry: false })?.isDirectory()
            ? `its folder ${dirname(file)} takes no new files`
            : 'its folder does not exist'
          : code === 'EISDIR' || code === 'ENOTEMPTY'
            ? 'it is a folder, not a file'
            : (e as Error).message
      }`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['name a file in a folder that exists and that you can write'],
      },
    );
  }
}

/** A file the command reads or writes, and what it is to the user (e.g. "the reference clip (--reference)"). */
export interface NamedFile {
  file: string;
  what: string;
}

/**
 * What names one file: its device and inode where it exists (so a link or another spelling of it is the same file),
 * else its name in its folder's real path.
 */
function identity(file: string): string {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch {
    // ENOTDIR (a path through a file), EACCES: no such file can be an input; the output check names the problem.
    st = undefined;
  }
  if (st) return `inode ${st.dev}:${st.ino}`;
  try {
    return join(realpathSync(dirname(resolve(file))), basename(file));
  } catch {
    return resolve(file);
  }
}

/** The files directly in `folder` (none where it cannot be read), as inputs named `what`. */
export function filesIn(folder: string, what: string): NamedFile[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => ({ file: join(folder, d.name), what }));
  } catch {
    return [];
  }
}

/**
 * Before any work: no output is one of the inputs (with --overwrite a vocode into its own input folder, or a WAV
 * written over its reference clip, would replace the user's recordings), and no two outputs are one file (a.wav and
 * a.flac both vocoded to a.wav). A usage error naming both.
 */
export function refuseOutputsOverInputs(outputs: readonly NamedFile[], inputs: readonly NamedFile[]): void {
  const read = new Map(inputs.map((i) => [identity(i.file), i]));
  const written = new Map<string, NamedFile>();
  for (const out of outputs) {
    const id = identity(out.file);
    const input = read.get(id);
    if (input)
      throw new XttsError(
        'OUTPUT_IS_INPUT',
        `${out.what} ${out.file} is ${input.what} ${input.file}: xtts never writes over a file it reads`,
        { exitCode: ExitCode.usage, suggestions: ['name another file or folder for the output'] },
      );
    const first = written.get(id);
    if (first)
      throw new XttsError(
        'OUTPUTS_COLLIDE',
        `${first.what} ${first.file} and ${out.what} ${out.file} are one file: the second would replace the first`,
        { exitCode: ExitCode.usage, suggestions: ['name the outputs apart (another folder, or rename an input)'] },
      );
    written.set(id, out);
  }
}

/**
 * Refuses an output named other than `.safetensors` for a command that writes safetensors: a file under another
 * format's name (x.wav, x.txt) misleads whoever opens it, and a voice file named .wav passed back as a reference
 * clip was refused as broken audio.
 */
export function requireSafetensorsName(out: string, what: string): void {
  if (!/\.safetensors$/i.test(out))
    throw new XttsError('USAGE', `--out ${out}: ${what} is safetensors; name the file .safetensors`, {
      exitCode: ExitCode.usage,
    });
}

/** Linux's kernel file systems (statfs f_type), where a folder lists the kernel's state and takes no new files. */
const KERNEL_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0xcafe4a11, 'bpf'],
  [0x62656570, 'configfs'],
  [0xde5e81e4, 'efivarfs'],
]);

/**
 * Why a file cannot be made in `folder` because it lies on a kernel file system (/proc, /sys), or undefined. Root
 * passes the access check there, and the write then fails with ENOENT, which read as a folder that does not exist.
 */
function kernelFolderWhy(folder: string): string | undefined {
  let type: number;
  try {
    type = Number(statfsSync(folder).type);
  } catch {
    return undefined;
  }
  const name = KERNEL_FILE_SYSTEMS.get(type);
  return name ? `its folder ${folder} is on the kernel's ${name} file system, which takes no files` : undefined;
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
  if (!problem) problem = kernelFolderWhy(folder) ?? notAFileWhy(file);
  if (problem)
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${problem}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a file in a folder that exists and that you can write'],
    });
  if (options.overwrite === false && existsSync(file)) throw exists(file, what);
}
