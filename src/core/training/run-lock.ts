// One run per run folder. The lock file is written before any other work, so that a second
// `xtts train` into a folder in use stops at once and names the run that holds it, instead of both
// writing checkpoints, metrics.jsonl and run.sqlite into the same place. A lock left by a run that was
// killed (its process is gone) is taken over; so is one whose pid now belongs to another process (the
// pid was reused: its start time differs from the one recorded); one held from another host is never
// guessed at.
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';
import { folderUnwritable, makeOutputFolders } from '../util/index.js';

export const RUN_LOCK_FILE = '.xtts-run.lock';

interface Holder {
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/PID/stat field 22); null where there is no /proc. */
  processStart?: string | null;
  host: string;
  startedAt: string;
  command: string;
}

/** A process's start time (field 22 of /proc/PID/stat, after the parenthesised name), or null. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function readHolder(path: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as Holder;
    return Number.isInteger(h.pid) && typeof h.host === 'string' ? h : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the lock's holder is still running: its pid alive and, where recorded, started when the lock says. */
function holderAlive(h: Holder): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (h.processStart === undefined || h.processStart === null) return true;
  const now = processStartTime(h.pid);
  return now === null || now === h.processStart;
}

/**
 * The run training in `runDir` now, as "process PID on HOST, started AT", or undefined where none holds its lock (or
 * one on another host, which cannot be told alive from here: it is named as such).
 */
export function runInProgress(runDir: string): string | undefined {
  const holder = readHolder(join(runDir, RUN_LOCK_FILE));
  if (!holder) return undefined;
  const where = `process ${holder.pid} on ${holder.host}, started ${holder.startedAt}`;
  if (holder.host !== hostname()) return `${where} (another host: whether it still runs is not known here)`;
  return holderAlive(holder) ? where : undefined;
}

/**
 * Takes the run folder (creating it) or throws RUN_FOLDER_IN_USE naming the holder; release() gives it back. `made`:
 * the folders it created for it, the outermost first.
 */
export function lockRunFolder(runDir: string): { release(): void; made: string[] } {
  if (runDir.trim() === '') {
    throw new XttsError('OUTPUT_UNWRITABLE', 'the run folder is empty', {
      exitCode: ExitCode.usage,
      suggestions: ['name a folder with --output (or output.dir)'],
    });
  }
  const made = makeOutputFolders(runDir, 'the run folder', '--output (or output.dir)');
  const path = join(runDir, RUN_LOCK_FILE);
  const me: Holder = {
    pid: process.pid,
    processStart: processStartTime(process.pid),
    host: hostname(),
    startedAt: new Date().toISOString(),
    command: process.argv.slice(2).join(' '),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
        throw folderUnwritable(runDir, 'the run folder', '--output (or output.dir)', e);
      const holder = readHolder(path);
      let ageMs = 0;
      try {
        ageMs = Date.now() - statSync(path).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      // A lock being written this instant has no holder yet: in use. An unreadable old one is stale.
      const inUse = holder ? holder.host !== me.host || holderAlive(holder) : ageMs < 10_000;
      if (inUse) {
        const who = holder
          ? `xtts (process ${holder.pid} on ${holder.host}, ` +
            `started ${holder.startedAt}${holder.command ? `: ${holder.command}` : ''})`
          : 'another xtts run that is starting';
        throw new XttsError('RUN_FOLDER_IN_USE', `the run folder ${runDir} is in use by ${who}`, {
          exitCode: ExitCode.usage,
          suggestions: [
            'wait for that run to end, or train into another folder with --output',
            ...(holder && holder.host !== me.host ? [`if that run on ${holder.host} is over, delete ${path}`] : []),
          ],
        });
      }
      rmSync(path, { force: true }); // its process is gone (or its pid is another process's now): a killed run's lock
      continue;
    }
    try {
      writeSync(fd, JSON.stringify(me));
    } finally {
      closeSync(fd);
    }
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      if (readHolder(path)?.pid === process.pid) rmSync(path, { force: true });
    };
    process.once('exit', release);
    return {
      release: () => {
        process.off('exit', release);
        release();
      },
      made,
    };
  }
  throw new XttsError('RUN_FOLDER_IN_USE', `the run folder ${runDir} is being taken by another xtts run`, {
    exitCode: ExitCode.usage,
    suggestions: ['train into another folder with --output'],
  });
}
