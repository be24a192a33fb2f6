// Opening SQLite files: from node_modules normally, or with the native binding shipped beside the
// bundle (the bundle's entry sets __XTTS_BUNDLE_DIR__), in WAL mode for writers.
import Database from 'better-sqlite3';

export function openSqlite(path: string, options: { readonly?: boolean } = {}): Database.Database {
  const dir = (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false, nativeBinding: dir ? `${dir}/better_sqlite3.node` : undefined });
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
  }
  return db;
}
