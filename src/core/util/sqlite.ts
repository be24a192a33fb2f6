// Opening SQLite files: from node_modules normally, or with the native binding shipped beside the
// bundle (the bundle's entry sets __XTTS_BUNDLE_DIR__). Several processes share a feature cache
// (concurrent runs, a run's producer threads, `xtts cache stats` beside a run), so every connection
// waits for another's lock instead of failing at once, and a reader of a WAL database may create
// its shared-memory file.
import Database from 'better-sqlite3';

/**
 * - `write`: read and write, in WAL mode.
 * - `read`: our own database that other processes may be writing: opened so that SQLite can create
 *   the WAL's -shm file when the last writer removed it (a read-only handle cannot, and fails with
 *   "unable to open database file"), with writes refused by `query_only`. Falls back to a read-only
 *   handle where the folder is not writable.
 * - `inspect`: a file that may not be ours: a read-only handle that creates and changes nothing.
 */
export type SqliteAccess = 'write' | 'read' | 'inspect';

/** How long a connection waits for another process's lock before SQLITE_BUSY. */
export const SQLITE_BUSY_TIMEOUT_MS = 30_000;

export function openSqlite(path: string, access: SqliteAccess): Database.Database {
  const dir = (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;
  const open = (readonly: boolean) =>
    new Database(path, {
      readonly,
      fileMustExist: access !== 'write',
      timeout: SQLITE_BUSY_TIMEOUT_MS,
      nativeBinding: dir ? `${dir}/better_sqlite3.node` : undefined,
    });
  if (access === 'inspect') return open(true);
  if (access === 'read') {
    let db: Database.Database;
    try {
      db = open(false);
    } catch (e) {
      if (!/readonly|read-only|unable to open|permission/i.test((e as Error).message)) throw e;
      return open(true);
    }
    db.pragma('query_only = ON');
    return db;
  }
  const db = open(false);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

/** Whether SQLite refused because the database file is damaged or is not a database. */
export function isCorruptDatabase(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return (
    code === 'SQLITE_CORRUPT' ||
    code === 'SQLITE_NOTADB' ||
    /database disk image is malformed|file is not a database/.test((e as Error)?.message ?? '')
  );
}
