// Which other processes have a feature cache open: a run reads its clips' features from it while it trains (its
// producer threads keep it open), so removing it under the run would end the run at its next evaluation. Found from
// /proc/PID/fd (Linux; elsewhere none is found, and clearing is not refused).
import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { ExitCode, XttsError } from '../errors.js';

export interface CacheHolder {
  pid: number;
  /** The process's command line, as `ps` shows it (at most 200 characters). */
  command: string;
}

/** Processes other than this one that hold `path` (or its -wal or -shm file) open. */
export function cacheHolders(path: string): CacheHolder[] {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return [];
  }
  const files = new Set([real, `${real}-wal`, `${real}-shm`]);
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  } catch {
    return [];
  }
  const out: CacheHolder[] = [];
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile, or another user's
    }
    const holds = fds.some((fd) => {
      try {
        return files.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (!holds) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').slice(0, 200);
    } catch {
      // gone meanwhile
    }
    out.push({ pid: Number(pid), command });
  }
  return out;
}

/** Refuses to clear a cache other processes hold open (a run that reads from it), naming them. */
export function refuseCacheInUse(path: string): void {
  const holders = cacheHolders(path);
  if (holders.length)
    throw new XttsError(
      'CACHE_IN_USE',
      `${path} is in use by ${holders.map((h) => `process ${h.pid}${h.command ? ` (${h.command})` : ''}`).join(', ')}` +
        ': removing it under a run would end that run',
      { exitCode: ExitCode.usage, suggestions: ['clear it when those processes have ended'] },
    );
}

/** Refuses a symbolic link named as the cache to clear: removing the link would leave the cache where it is. */
export function refuseLinkToCache(path: string): void {
  if (!lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) return;
  let target: string;
  try {
    target = realpathSync(path);
  } catch {
    target = 'a file that does not exist';
  }
  throw new XttsError('CACHE_IS_LINK', `${path} is a symbolic link to ${target}, not a cache file`, {
    exitCode: ExitCode.usage,
    suggestions: ['name the cache file itself (--cache); removing the link would leave the cache where it is'],
  });
}
