// A feature cache whose file is damaged (a disk error, a copy cut short, bytes overwritten): SQLite says so as
// SQLITE_CORRUPT or SQLITE_NOTADB, on opening or only when a query reaches the damaged page. Either way it is the
// user's file, not a bug of xtts: CACHE_CORRUPT names it and says what to do. The cache holds only what xtts
// computes from the data and text, so removing it loses nothing the next run cannot rebuild. And a cache this user
// cannot open where it lies (unreadableFolder).
import { accessSync, constants } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { ExitCode, XttsError } from '../errors.js';
import { isCorruptDatabase } from '../util/index.js';

export function corruptCache(path: string, e: unknown): XttsError {
  return new XttsError('CACHE_CORRUPT', `the feature cache ${path} is damaged: ${(e as Error).message}`, {
    exitCode: ExitCode.usage,
    suggestions: [
      `remove it (\`xtts cache clear --cache ${path}\`): it holds only what xtts computes from your data, and the ` +
        'next run builds it again',
    ],
  });
}

/** `s` with its queries' damage errors as CACHE_CORRUPT naming `path`. */
export function guarded(path: string, s: Database.Statement): Database.Statement {
  const methods = s as unknown as Record<'get' | 'run' | 'all', (...args: unknown[]) => unknown>;
  for (const m of ['get', 'run', 'all'] as const) {
    const query = methods[m].bind(s);
    methods[m] = (...args: unknown[]) => {
      try {
        return query(...args);
      } catch (e) {
        throw isCorruptDatabase(e) ? corruptCache(path, e) : e;
      }
    };
  }
  return s;
}

/** Why nothing can be written in `dir`: a read-only file system, this user's permissions; null where it can. */
export function unwritableBecause(dir: string): string | null {
  try {
    accessSync(dir, constants.W_OK);
    return null;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'EROFS'
      ? 'is on a read-only file system'
      : code === 'ENOENT'
        ? 'does not exist'
        : 'this user may not write';
  }
}

/**
 * A cache in a folder nothing may be written to: SQLite reads a WAL database only where it can make the -shm file
 * beside it, so even a read-only command cannot open it there.
 */
export function unreadableFolder(path: string, e: unknown): XttsError {
  const why = unwritableBecause(dirname(path)) ?? 'this user may not write';
  const readOnly = why.startsWith('is on');
  return new XttsError(
    'CACHE_OPEN_FAILED',
    `cannot open the feature cache ${path}: SQLite needs to write its -shm file in ${dirname(path)}, which ` +
      `${readOnly ? why : `${why} (${(e as Error).message})`}`,
    {
      exitCode: ExitCode.environment,
      suggestions: [
        (readOnly ? '' : 'run as a user who may write that folder, or ') +
          'copy the cache to a folder you may write and name the copy (--cache, or pipeline.cache.path)',
      ],
    },
  );
}

/**
 * A cache that could not be opened for another reason than damage; removing the file is advice only where there is
 * one (`exists`) and its folder may be written (else `cache clear` fails too).
 */
export function openFailed(path: string, e: unknown, exists: boolean): XttsError {
  const why = unwritableBecause(dirname(path));
  return new XttsError(
    'CACHE_OPEN_FAILED',
    `cannot open the feature cache ${path}: ${(e as Error).message}` + (why ? ` (${dirname(path)} ${why})` : ''),
    {
      exitCode: ExitCode.environment,
      suggestions: [
        'name a cache file in a folder you can write (pipeline.cache.path, or --cache)',
        ...(exists && !why ? [`or, if this file is damaged, remove it: \`xtts cache clear --cache ${path}\``] : []),
      ],
    },
  );
}
