// A feature cache whose file is damaged (a disk error, a copy cut short, bytes overwritten): SQLite says so as
// SQLITE_CORRUPT or SQLITE_NOTADB, on opening or only when a query reaches the damaged page. Either way it is the
// user's file, not a bug of xtts: CACHE_CORRUPT names it and says what to do. The cache holds only what xtts
// computes from the data and text, so removing it loses nothing the next run cannot rebuild. And a cache this user
// cannot open where it lies (unreadableFolder).
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

/**
 * A cache in a folder this user may not write: SQLite reads a WAL database only where it can make the -shm file
 * beside it, so even a read-only command cannot open it there.
 */
export function unreadableFolder(path: string, e: unknown): XttsError {
  return new XttsError(
    'CACHE_OPEN_FAILED',
    `cannot open the feature cache ${path}: SQLite needs to write its -shm file in ${dirname(path)}, which this user ` +
      `may not (${(e as Error).message})`,
    {
      exitCode: ExitCode.environment,
      suggestions: [
        'run as a user who may write that folder, or copy the cache to one you may write and name the copy ' +
          '(--cache, or pipeline.cache.path)',
      ],
    },
  );
}
