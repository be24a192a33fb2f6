// One run per run folder, and nothing written into a folder that is not one. A run has an id, kept in
// the folder's xtts-run.json, run.sqlite's meta and every checkpoint's state: a second `xtts train`
// into a folder that holds a run is refused unless it resumes that run (--resume), so one run's
// checkpoint rotation never deletes another's and `latest` never names a stranger's step. A folder
// that holds anything else (a user's files, `/`, `/etc`, a foreign run.sqlite) is refused with what
// was found there, before anything is written to it.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ExitCode, XttsError } from '../errors.js';
import { RUN_ENTRIES, RUN_MARKER, writeFileAtomic } from '../util/index.js';
import { lockRunFolder } from './run-lock.js';

export { RUN_MARKER };

export const RUN_MARKER_FORMAT = 'xtts-run@1';

export interface RunMarker {
  format: typeof RUN_MARKER_FORMAT;
  runId: string;
  createdAt: string;
  command: string;
}

/** What is in a folder named as a run folder. */
export type RunFolderState =
  | { kind: 'new' }
  | { kind: 'run'; runId: string }
  /** Written by xtts before runs had ids: resumable, and adopted (given an id) when resumed. */
  | { kind: 'legacy' }
  /**
   * A run that began (its marker) but wrote nothing else (refused or stopped while it prepared): a new run may start
   * here, --resume starts it over.
   */
  | { kind: 'begun'; runId: string }
  | { kind: 'foreign'; entries: string[]; why: string };

function newRunId(): string {
  return randomBytes(8).toString('hex');
}

/** The command line that began the run in `runDir` (its marker's), where there is one. */
export function runCommand(runDir: string): string | undefined {
  return readMarker(join(runDir, RUN_MARKER))?.command;
}

function readMarker(path: string): RunMarker | undefined {
  try {
    const m = JSON.parse(readFileSync(path, 'utf8')) as RunMarker;
    return m.format === RUN_MARKER_FORMAT && typeof m.runId === 'string' && /^[0-9a-f]{16}$/.test(m.runId)
      ? m
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether run.sqlite is one xtts wrote (its meta table holds the run's config), not a user's
 * database. Opened read-only; the -wal/-shm files SQLite makes to read a WAL database are removed
 * again where they were not there before (a refused folder is left exactly as it was).
 */
function isXttsRunDatabase(path: string): boolean {
  const sidecars = [`${path}-wal`, `${path}-shm`].filter((p) => !existsSync(p));
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
        (t) => t.name,
      ),
    );
    if (!tables.has('meta') || !tables.has('steps') || !tables.has('metrics')) return false;
    return db.prepare("SELECT 1 FROM meta WHERE k = 'config'").get() !== undefined;
  } catch {
    return false;
  } finally {
    db?.close();
    for (const p of sidecars) rmSync(p, { force: true });
  }
}

/**
 * Whether a name in checkpoints/ is one CheckpointStore writes (step folders, pointers, temporaries); a damaged
 * state.json is named when it is loaded. step-N.damaged / .diverged: a checkpoint the user moved aside to resume from
 * the one before (loadForResume).
 */
function isCheckpointEntry(name: string): boolean {
  return (
    name === 'latest' || name === 'best' || name.startsWith('.') || /^step-\d{8}(\.(damaged|diverged))?$/.test(name)
  );
}

/** What `runDir` holds: nothing (or missing), an xtts run (with its id), an older xtts run, or something else. */
export function inspectRunFolder(runDir: string): RunFolderState {
  let st;
  try {
    st = statSync(runDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'new' };
    throw e;
  }
  if (!st.isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
  const all = readdirSync(runDir);
  const names = all.filter((n) => RUN_ENTRIES.some((re) => re.test(n)));
  const strangers = all.filter((n) => !names.includes(n));
  const marker = existsSync(join(runDir, RUN_MARKER)) ? readMarker(join(runDir, RUN_MARKER)) : undefined;
  // A folder xtts made a run in (its marker) may hold the user's files too (a WAV synthesized beside the checkpoints,
  // a voice file, a run nested in it): the run's own entries are all xtts touches there. Any other folder is only
  // written into when it holds nothing but xtts's entries.
  if (strangers.length && !marker)
    return {
      kind: 'foreign',
      entries: strangers,
      why: `it holds ${strangers.length} entr${strangers.length === 1 ? 'y' : 'ies'} xtts did not write`,
    };
  if (existsSync(join(runDir, RUN_MARKER)) && !marker)
    return {
      kind: 'foreign',
      entries: [RUN_MARKER],
      why: `its ${RUN_MARKER} is not one xtts wrote (unreadable, or another format)`,
    };
  const db = join(runDir, 'run.sqlite');
  if (existsSync(db) && !isXttsRunDatabase(db))
    return {
      kind: 'foreign',
      entries: ['run.sqlite'],
      why: `its run.sqlite is ${marker ? 'damaged' : 'not an xtts run database'}`,
    };
  const ckpts = join(runDir, 'checkpoints');
  if (existsSync(ckpts) && (!lstatSync(ckpts).isDirectory() || !readdirSync(ckpts).every(isCheckpointEntry))) {
    return {
      kind: 'foreign',
      entries: ['checkpoints'],
      why: 'its checkpoints/ holds files that are not xtts checkpoints',
    };
  }
  // Only a lock and a marker (a run refused before its first record: memory, data) or nothing at all: a folder to start
  // in.
  const records = names.filter((n) => n !== '.xtts-run.lock' && n !== RUN_MARKER && !n.endsWith('.tmp'));
  if (records.length === 0) return marker ? { kind: 'begun', runId: marker.runId } : { kind: 'new' };
  return marker ? { kind: 'run', runId: marker.runId } : { kind: 'legacy' };
}

/**
 * What to do about a folder refused as not a run's: never "empty it" where it holds checkpoints (a run's work); a
 * damaged run.sqlite beside them is moved aside, and the run resumes from them.
 */
function runFolderRemedies(runDir: string, entries: readonly string[]): string[] {
  if (!existsSync(join(runDir, 'checkpoints')))
    return [
      `train into a new folder, e.g. --output ${join(runDir, 'xtts-run')}`,
      'or empty that folder first if its contents are yours to remove',
    ];
  if (entries.length === 1 && entries[0] === 'run.sqlite')
    return [
      `move it aside (mv ${join(runDir, 'run.sqlite')} ${runDir}.run.sqlite.damaged) and resume: the ` +
        'checkpoints are kept, the step history before now is in the moved file',
    ];
  // Files of the user's inside checkpoints/ are named there: moving checkpoints/ itself would lose the run's.
  const strange =
    entries.length === 1 && entries[0] === 'checkpoints'
      ? readdirSync(join(runDir, 'checkpoints'))
          .filter((n) => !isCheckpointEntry(n))
          .map((n) => join('checkpoints', n))
      : [...entries];
  return [
    `it holds checkpoints: move ${listed(strange)} out of it to resume there, or train into a new folder, ` +
      `e.g. --output ${freeSibling(runDir)}`,
  ];
}

function listed(entries: string[]): string {
  const shown = entries.slice(0, 6).join(', ');
  return entries.length > 6 ? `${shown}, … (${entries.length} in all)` : shown;
}

/** The first of `<runDir>-2`, `<runDir>-3`, … that is free: a concrete new --output to suggest. */
export function freeSibling(runDir: string): string {
  for (let n = 2; ; n++) {
    const candidate = `${runDir}-${n}`;
    if (!existsSync(candidate)) return candidate;
  }
}

/**
 * Refuses a folder that cannot hold this run (before anything is written to it): a foreign one
 * always; a used one unless resuming (`used: false` leaves that to the check under the run lock, so
 * that a folder a live run holds is named as in use, with its holder). Returns what it holds.
 */
export function checkRunFolder(runDir: string, resume: boolean, options: { used?: boolean } = {}): RunFolderState {
  let state: RunFolderState;
  try {
    state = inspectRunFolder(runDir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOTDIR'
        ? 'a file of that name (or above it) is not a folder'
        : code === 'EACCES' || code === 'EPERM'
          ? 'it cannot be read'
          : (e as Error).message;
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot use ${runDir} as the run folder: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a folder you can read and write with --output (or output.dir)'],
    });
  }
  if (state.kind === 'foreign') {
    throw new XttsError(
      'OUTPUT_NOT_RUN_FOLDER',
      `${runDir} is not a run ` +
        `folder: ${state.why}${state.entries.length ? ` (${listed(state.entries)})` : ''}; ` +
        `xtts writes only into an empty folder, a new one, or one of its own runs`,
      {
        exitCode: ExitCode.usage,
        suggestions: runFolderRemedies(runDir, state.entries),
      },
    );
  }
  if (options.used !== false && !resume && (state.kind === 'run' || state.kind === 'legacy')) {
    throw new XttsError(
      'RUN_FOLDER_USED',
      `${runDir} holds another ` +
        `run${state.kind === 'run' ? ` (run ${state.runId})` : ''}: training into it ` +
        `would mix two runs and rotate its checkpoints away`,
      {
        exitCode: ExitCode.usage,
        suggestions: [
          `continue that run: add --resume`,
          `or start a new run in another folder: --output ${freeSibling(runDir)}`,
        ],
      },
    );
  }
  return state;
}

/** Writes the folder's marker (a new run, or an older run adopted on resume); returns its id. */
function writeRunMarker(runDir: string, runId: string): void {
  const marker: RunMarker = {
    format: RUN_MARKER_FORMAT,
    runId,
    createdAt: new Date().toISOString(),
    command: process.argv.slice(2).join(' '),
  };
  writeFileAtomic(join(runDir, RUN_MARKER), `${JSON.stringify(marker, null, 1)}\n`);
}

/**
 * The run folder when only --dataset was given: the config's output folder with the dataset folder's
 * name appended (runs/quickstart + /data/LJSpeech-1.1 → runs/quickstart-LJSpeech-1.1), so a run on
 * other data never lands in the config's own run, and the same command with --resume finds it again.
 */
export function runFolderForDataset(configOutputDir: string, datasetDir: string): string {
  const name = basename(resolve(datasetDir)) || 'dataset';
  return join(dirname(configOutputDir), `${basename(configOutputDir)}-${name.replace(/[^A-Za-z0-9._-]+/g, '_')}`);
}

/**
 * Takes `runDir` for a run: checked before the lock (which writes into the folder) and again under
 * it (another run may have begun meanwhile); a run that only began (a marker, nothing else) starts
 * over, as itself with --resume, as a new run without. The run's id, release() for the lock, and abandon() for a run
 * refused before it recorded anything: the lock released, and the marker and the folders made for it removed, so that
 * a mistake leaves no folder behind.
 */
export function openRunFolder(runDir: string, resume: boolean): { runId: string; release(): void; abandon(): void } {
  const nothingToResume = () =>
    new XttsError('RESUME_NOTHING', `--resume: no run in ${runDir}`, {
      exitCode: ExitCode.usage,
      suggestions: ['start without --resume, or pass --output with the run folder to resume'],
    });
  if (checkRunFolder(runDir, resume, { used: false }).kind === 'new' && resume) throw nothingToResume();
  const lock = lockRunFolder(runDir);
  try {
    const found = checkRunFolder(runDir, resume);
    if (found.kind === 'new' && resume) throw nothingToResume();
    const runId = found.kind === 'run' || (found.kind === 'begun' && resume) ? found.runId : newRunId();
    if (found.kind !== 'run') writeRunMarker(runDir, runId);
    const abandon = () => {
      // The marker goes while the lock is held (another run may take the folder once it is released).
      let unmarked = false;
      try {
        if (found.kind !== 'run' && found.kind !== 'legacy' && inspectRunFolder(runDir).kind === 'begun') {
          rmSync(join(runDir, RUN_MARKER), { force: true });
          unmarked = true;
        }
      } catch {
        // left as it is
      }
      lock.release();
      try {
        if (unmarked) for (const folder of [...lock.made].reverse()) rmdirSync(folder);
      } catch {
        // A folder something else wrote into meanwhile stays, with what is in it.
      }
    };
    return { runId, release: () => lock.release(), abandon };
  } catch (e) {
    lock.release();
    throw e;
  }
}
