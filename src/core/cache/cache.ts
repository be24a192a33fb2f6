// The feature cache: one SQLite database (WAL) whose keys are content hashes. A text entry's key
// covers the text, language, cleaner, normalisation and tokenizer/phonemizer identity; a feature's
// key covers the audio bytes' SHA-256 and every feature setting. Nothing is keyed by file names or
// counts, so changing an input invalidates exactly what depends on it. Every write is a transaction:
// a killed build leaves whole entries only, and the next build resumes where it stopped.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, linkSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { isCorruptDatabase, makeFolders, openSqlite, otherFileKind } from '../util/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { corruptCache, guarded, openFailed, unreadableFolder } from './damage.js';
import { refuseCacheInUse, refuseLinkToCache } from './holders.js';

/** Bumped when the table layout changes; an older cache is rebuilt, never misread. */
export const CACHE_SCHEMA_VERSION = 1;

/**
 * SQLite's application_id of an xtts feature cache ("XTFC"): what proves a file is one before it is changed or deleted.
 */
export const CACHE_APPLICATION_ID = 0x58544643;
const CACHE_TABLES = ['meta', 'audio_hashes', 'texts', 'tokens', 'features', 'failures', 'blobs'];

export type CacheIdentity = { kind: 'absent' } | { kind: 'cache' } | { kind: 'other'; why: string };

/**
 * What the file at `path` is, read without changing it: no file, an xtts feature cache (its
 * application_id, or, for caches made before it was set, exactly the cache's tables with a schema
 * version), or something else, with what it is.
 */
export function identifyCache(path: string): CacheIdentity {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) return { kind: 'other', why: `it is ${otherFileKind(st)}` };
    size = st.size;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'other', why: `it cannot be read (${code ?? (e as Error).message})` };
  }
  // A WAL database's first pages may still be in its -wal file: then only SQLite can say. The file goes
  // when its last connection closes, so it is looked at once, not checked and then read.
  const walSize = statSync(path + '-wal', { throwIfNoEntry: false })?.size ?? 0;
  if (size === 0 && walSize === 0) return { kind: 'other', why: 'it is an empty file' };
  if (size > 0) {
    const head = Buffer.alloc(100);
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      return { kind: 'other', why: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
    }
    try {
      readSync(fd, head, 0, 100, 0);
    } finally {
      closeSync(fd);
    }
    if (head.subarray(0, 16).toString('latin1') !== 'SQLite format 3\0')
      return { kind: 'other', why: 'it is not a SQLite database' };
    if (size >= 100 && head.readUInt32BE(68) === CACHE_APPLICATION_ID) return { kind: 'cache' };
  }
  let db: Database.Database | undefined;
  try {
    db = openSqlite(path, 'inspect');
    if (Number(db.pragma('application_id', { simple: true })) === CACHE_APPLICATION_ID) return { kind: 'cache' };
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
      (r) => r.name,
    );
    const foreign = tables.filter((t) => !CACHE_TABLES.includes(t));
    const versioned =
      tables.includes('meta') &&
      tables.includes('features') &&
      db.prepare("SELECT 1 FROM meta WHERE k = 'schema_version'").get() !== undefined;
    if (foreign.length === 0 && versioned) return { kind: 'cache' };
    return {
      kind: 'other',
      why:
        `it is a SQLite database with other tables ` +
        `(${tables.slice(0, 6).join(', ') || 'none'}${tables.length > 6 ? ', …' : ''})`,
    };
  } catch (e) {
    return { kind: 'other', why: `SQLite cannot read it as a database (${(e as Error).message})` };
  } finally {
    db?.close();
  }
}

/**
 * Throws CACHE_NOT_A_CACHE unless `path` is absent or a feature cache: nothing is opened for writing, changed or
 * deleted otherwise.
 */
export function assertCacheOrAbsent(path: string, doing: string): 'absent' | 'cache' {
  const id = identifyCache(path);
  if (id.kind !== 'other') return id.kind;
  throw new XttsError(
    'CACHE_NOT_A_CACHE',
    `${path} is not an xtts feature cache: ${id.why}. Refusing to ${doing}; it was left as it is`,
    {
      exitCode: ExitCode.usage,
      suggestions: [
        'point pipeline.cache.path (or --cache) at an xtts feature cache, or at a new ' +
          'file for a new one (the default is .xtts-cache/cache.sqlite)',
      ],
    },
  );
}

export interface CachedFeature {
  frames: number;
  nMels: number;
  durationS: number;
  /** [frames, nMels] row-major log-mel. */
  mel: Float32Array;
}

export interface CachedFailure {
  reason: string;
  message: string;
}

export interface CacheStats {
  path: string;
  bytes: number;
  texts: number;
  tokens: number;
  features: number;
  failures: number;
  featureFrames: number;
  audioHashes: number;
  /** Lookups and hits since the cache was created, per table. */
  lookups: Record<'text' | 'tokens' | 'feature', { lookups: number; hits: number; hitRate: number | null }>;
}

export interface VerifyReport {
  integrity: string;
  checkedFeatures: number;
  badFeatures: string[];
  checkedTokens: number;
  badTokens: string[];
  checkedAudio: number;
  staleAudio: string[];
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audio_hashes (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns TEXT NOT NULL,
  ino INTEGER NOT NULL, sha256 TEXT NOT NULL, ctime_ns TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS texts (key TEXT PRIMARY KEY, cleaned TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (key TEXT PRIMARY KEY, n INTEGER NOT NULL, ids BLOB NOT NULL,
  unmappable TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, frames INTEGER NOT NULL, n_mels INTEGER NOT NULL,
  duration_s REAL NOT NULL, mel BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS failures (key TEXT PRIMARY KEY, reason TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL);
`;

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A key from named parts: canonical JSON so that field order or number formatting cannot change it. */
export function contentKey(kind: string, parts: Record<string, unknown>): string {
  return `${kind}:${sha256Hex(canonicalJson(parts))}`;
}

/** JSON with object keys sorted at every depth, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function toBlob(a: Float32Array | Int32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

function f32(blob: Buffer): Float32Array {
  // Copy into an aligned buffer: SQLite blobs come back at arbitrary offsets.
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

function i32(blob: Buffer): Int32Array {
  const out = new Int32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

/** The cache's tables at CACHE_SCHEMA_VERSION; an older layout is dropped rather than misread. */
function createTables(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)');
  const row = db.prepare("SELECT v FROM meta WHERE k = 'schema_version'").get() as { v: string } | undefined;
  if (row && Number(row.v) !== CACHE_SCHEMA_VERSION) {
    for (const table of CACHE_TABLES.filter((t) => t !== 'meta')) db.exec(`DROP TABLE IF EXISTS ${table}`);
    db.exec('DELETE FROM meta');
  }
  db.exec(SCHEMA);
  // The change time joined the hashes' memo later: an older cache gets the column, its memos '' (hashed again once).
  const hashColumns = db.prepare('PRAGMA table_info(audio_hashes)').all() as { name: string }[];
  if (!hashColumns.some((c) => c.name === 'ctime_ns'))
    db.exec("ALTER TABLE audio_hashes ADD COLUMN ctime_ns TEXT NOT NULL DEFAULT ''");
  db.prepare("INSERT OR REPLACE INTO meta (k, v) VALUES ('schema_version', ?)").run(String(CACHE_SCHEMA_VERSION));
  db.pragma(`application_id = ${CACHE_APPLICATION_ID}`);
}

export class FeatureCache {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly counters = { text: [0, 0], tokens: [0, 0], feature: [0, 0] } as Record<
    'text' | 'tokens' | 'feature',
    [number, number]
  >;
  private readonly stmt: Record<string, Database.Statement>;

  private constructor(
    path: string,
    private readonly readonly: boolean,
  ) {
    this.path = path;
    const found = assertCacheOrAbsent(path, readonly ? 'open it' : 'use it as the feature cache');
    try {
      if (!readonly && found === 'absent') FeatureCache.create(path);
      this.db = openSqlite(path, readonly ? 'read' : 'write');
      if (!readonly) this.migrate();
    } catch (e) {
      if (isCorruptDatabase(e)) throw corruptCache(path, e);
      throw openFailed(path, e, found !== 'absent');
    }
    try {
      this.db.pragma('cache_size = -65536');
    } catch (e) {
      this.db.close();
      if (isCorruptDatabase(e)) throw corruptCache(path, e);
      throw /readonly|unable to open/i.test((e as Error).message) ? unreadableFolder(path, e) : e;
    }
    const prep = (sql: string) => guarded(path, this.db.prepare(sql));
    // A read-only cache (producer threads) gets statements that refuse to write, with a clear error.
    const prepWrite = (sql: string) => (readonly ? readonlyStatement(path) : prep(sql));
    this.stmt = {
      getText: prep('SELECT cleaned FROM texts WHERE key = ?'),
      putText: prepWrite('INSERT OR REPLACE INTO texts (key, cleaned) VALUES (?, ?)'),
      getTokens: prep('SELECT ids, unmappable FROM tokens WHERE key = ?'),
      putTokens: prepWrite('INSERT OR REPLACE INTO tokens (key, n, ids, unmappable) VALUES (?, ?, ?, ?)'),
      getFeature: prep('SELECT frames, n_mels, duration_s, mel FROM features WHERE key = ?'),
      getFeatureInfo: prep('SELECT frames, n_mels, duration_s FROM features WHERE key = ?'),
      putFeature: prepWrite(
        'INSERT OR REPLACE INTO features (key, frames, n_mels, duration_s, mel) VALUES (?, ?, ?, ?, ?)',
      ),
      getFailure: prep('SELECT reason, message FROM failures WHERE key = ?'),
      putFailure: prepWrite('INSERT OR REPLACE INTO failures (key, reason, message) VALUES (?, ?, ?)'),
      // Only a writable cache hashes audio (its memo's columns are those of a migrated cache).
      getHash: prepWrite('SELECT size, mtime_ns, ctime_ns, ino, sha256 FROM audio_hashes WHERE path = ?'),
      putHash: prepWrite(
        'INSERT OR REPLACE INTO audio_hashes (path, size, mtime_ns, ctime_ns, ino, sha256) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      getMeta: prep('SELECT v FROM meta WHERE k = ?'),
      putMeta: prepWrite('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)'),
      getBlob: prep('SELECT value FROM blobs WHERE key = ?'),
      blobsOfKind: prep('SELECT key, value FROM blobs WHERE kind = ?'),
      putBlob: prepWrite('INSERT OR REPLACE INTO blobs (key, kind, value) VALUES (?, ?, ?)'),
    };
  }

  /**
   * A new cache is built under a temporary name and linked into place, so that no process ever finds
   * `path` half made (an empty file is not a cache); where another process linked its own first, that
   * one is used.
   */
  private static create(path: string): void {
    makeFolders(dirname(path));
    const temp = `${path}.new-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    try {
      const db = openSqlite(temp, 'write');
      try {
        db.transaction(() => createTables(db)).immediate();
      } finally {
        db.close();
      }
      try {
        linkSync(temp, path);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') return;
        // A file system without hard links: a rename, which another process's cache made meanwhile would not survive.
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw e;
        if (!existsSync(path)) renameSync(temp, path);
      }
    } finally {
      for (const f of [temp, `${temp}-wal`, `${temp}-shm`]) rmSync(f, { force: true });
    }
  }

  /** Open (creating if needed) a cache for writing. */
  static open(path: string): FeatureCache {
    return new FeatureCache(path, false);
  }

  /** Open an existing cache read-only (producer threads, stats). */
  static openReadonly(path: string): FeatureCache {
    return new FeatureCache(path, true);
  }

  /** Create or upgrade the tables, in one write transaction. */
  private migrate(): void {
    this.db.transaction(() => createTables(this.db)).immediate();
  }

  private count(kind: 'text' | 'tokens' | 'feature', hit: boolean): void {
    this.counters[kind][0]++;
    if (hit) this.counters[kind][1]++;
  }

  getText(key: string): string | undefined {
    const row = this.stmt.getText.get(key) as { cleaned: string } | undefined;
    this.count('text', row !== undefined);
    return row?.cleaned;
  }

  getTokens(key: string): { ids: Int32Array; unmappable: string[] } | undefined {
    const row = this.stmt.getTokens.get(key) as { ids: Buffer; unmappable: string } | undefined;
    this.count('tokens', row !== undefined);
    return row ? { ids: i32(row.ids), unmappable: JSON.parse(row.unmappable) as string[] } : undefined;
  }

  getFeature(key: string): CachedFeature | undefined {
    const row = this.stmt.getFeature.get(key) as
      | { frames: number; n_mels: number; duration_s: number; mel: Buffer }
      | undefined;
    this.count('feature', row !== undefined);
    return row ? { frames: row.frames, nMels: row.n_mels, durationS: row.duration_s, mel: f32(row.mel) } : undefined;
  }

  /** Frames and duration of a cached feature without reading its mel. */
  getFeatureInfo(key: string): { frames: number; nMels: number; durationS: number } | undefined {
    const row = this.stmt.getFeatureInfo.get(key) as { frames: number; n_mels: number; duration_s: number } | undefined;
    this.count('feature', row !== undefined);
    return row ? { frames: row.frames, nMels: row.n_mels, durationS: row.duration_s } : undefined;
  }

  /** The raw mel blob (no copy) for hot paths that copy it into a slot themselves. */
  getMelBlob(key: string): Buffer | undefined {
    const row = this.stmt.getFeature.get(key) as { mel: Buffer } | undefined;
    return row?.mel;
  }

  getFailure(key: string): CachedFailure | undefined {
    return this.stmt.getFailure.get(key) as CachedFailure | undefined;
  }

  /** Write many entries in one transaction. */
  putMany(entries: {
    texts?: { key: string; cleaned: string }[];
    tokens?: { key: string; ids: Int32Array; unmappable: string[] }[];
    features?: { key: string; feature: CachedFeature }[];
    failures?: { key: string; failure: CachedFailure }[];
  }): void {
    this.db
      .transaction(() => {
        for (const t of entries.texts ?? []) this.stmt.putText.run(t.key, t.cleaned);
        for (const t of entries.tokens ?? [])
          this.stmt.putTokens.run(t.key, t.ids.length, toBlob(t.ids), JSON.stringify(t.unmappable));
        for (const f of entries.features ?? [])
          this.stmt.putFeature.run(
            f.key,
            f.feature.frames,
            f.feature.nMels,
            f.feature.durationS,
            toBlob(f.feature.mel),
          );
        for (const f of entries.failures ?? []) this.stmt.putFailure.run(f.key, f.failure.reason, f.failure.message);
      })
      .immediate();
  }

  getMeta(k: string): string | undefined {
    return (this.stmt.getMeta.get(k) as { v: string } | undefined)?.v;
  }

  setMeta(k: string, v: string): void {
    this.stmt.putMeta.run(k, v);
  }

  getBlob(key: string): Buffer | undefined {
    return (this.stmt.getBlob.get(key) as { value: Buffer } | undefined)?.value;
  }

  /** Every blob of one kind, by key. */
  blobsOfKind(kind: string): Map<string, Buffer> {
    const rows = this.stmt.blobsOfKind.all(kind) as { key: string; value: Buffer }[];
    return new Map(rows.map((r) => [r.key, r.value]));
  }

  putBlob(key: string, kind: string, value: Buffer | string): void {
    this.stmt.putBlob.run(key, kind, typeof value === 'string' ? Buffer.from(value) : value);
  }

  /**
   * SHA-256 of an audio file's bytes. Like git's index, a (size, mtime, ctime, inode) match with the last
   * hash skips re-reading the file; `verify` re-hashes everything. The change time is the one no tool sets
   * back: a file rewritten in place with its size kept and its mtime restored (`touch -r`) has a new one.
   */
  audioHash(path: string): string {
    const st = statSync(path, { bigint: true });
    const memo = this.stmt.getHash.get(path) as
      | { size: number; mtime_ns: string; ctime_ns: string; ino: number; sha256: string }
      | undefined;
    const [mtime, ctime] = [st.mtimeNs.toString(), st.ctimeNs.toString()];
    const seen = (m: NonNullable<typeof memo>) => [m.size, m.mtime_ns, m.ctime_ns, m.ino].join(' ');
    if (memo && seen(memo) === [st.size, mtime, ctime, st.ino].join(' ')) return memo.sha256;
    const sha = hashFile(path);
    this.stmt.putHash.run(path, Number(st.size), mtime, ctime, Number(st.ino), sha);
    return sha;
  }

  /** Add this session's lookups and hits to the cumulative counters. */
  flushCounters(): void {
    this.db
      .transaction(() => {
        for (const kind of ['text', 'tokens', 'feature'] as const) {
          const [lookups, hits] = this.counters[kind];
          if (lookups === 0) continue;
          this.setMeta(`lookups_${kind}`, String(Number(this.getMeta(`lookups_${kind}`) ?? 0) + lookups));
          this.setMeta(`hits_${kind}`, String(Number(this.getMeta(`hits_${kind}`) ?? 0) + hits));
          this.counters[kind] = [0, 0];
        }
      })
      .immediate();
  }

  /** This session's lookups and hits (not yet flushed). */
  sessionCounters(): Record<'text' | 'tokens' | 'feature', { lookups: number; hits: number }> {
    const out = {} as Record<'text' | 'tokens' | 'feature', { lookups: number; hits: number }>;
    for (const k of ['text', 'tokens', 'feature'] as const)
      out[k] = { lookups: this.counters[k][0], hits: this.counters[k][1] };
    return out;
  }

  stats(): CacheStats {
    const n = (table: string) => (this.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    let bytes = 0;
    for (const suffix of ['', '-wal', '-shm']) {
      try {
        bytes += statSync(this.path + suffix).size;
      } catch {
        /* the WAL files exist only while a writer has them */
      }
    }
    const lookups = {} as CacheStats['lookups'];
    for (const k of ['text', 'tokens', 'feature'] as const) {
      const l = Number(this.getMeta(`lookups_${k}`) ?? 0) + this.counters[k][0];
      const h = Number(this.getMeta(`hits_${k}`) ?? 0) + this.counters[k][1];
      lookups[k] = { lookups: l, hits: h, hitRate: l ? h / l : null };
    }
    return {
      path: this.path,
      bytes,
      texts: n('texts'),
      tokens: n('tokens'),
      features: n('features'),
      failures: n('failures'),
      featureFrames: (this.db.prepare('SELECT COALESCE(SUM(frames), 0) AS f FROM features').get() as { f: number }).f,
      audioHashes: n('audio_hashes'),
      lookups,
    };
  }

  /** SQLite's integrity check, every blob's length against its shape, and every audio hash against the file. */
  verify(): VerifyReport {
    try {
      return this.verifyEntries();
    } catch (e) {
      if (!isCorruptDatabase(e)) throw e;
      // Too damaged to read through: the file is the finding.
      const none = { checkedFeatures: 0, badFeatures: [], checkedTokens: 0, badTokens: [], checkedAudio: 0 };
      return { integrity: `damaged: ${(e as Error).message}`, ...none, staleAudio: [] };
    }
  }

  private verifyEntries(): VerifyReport {
    const integrity = (this.db.pragma('integrity_check', { simple: true }) as string) ?? 'unknown';
    const badFeatures: string[] = [];
    let checkedFeatures = 0;
    for (const row of this.db
      .prepare('SELECT key, frames, n_mels, length(mel) AS len FROM features')
      .iterate() as Iterable<{ key: string; frames: number; n_mels: number; len: number }>) {
      checkedFeatures++;
      if (row.len !== row.frames * row.n_mels * 4) badFeatures.push(row.key);
    }
    const badTokens: string[] = [];
    let checkedTokens = 0;
    for (const row of this.db.prepare('SELECT key, n, length(ids) AS len FROM tokens').iterate() as Iterable<{
      key: string;
      n: number;
      len: number;
    }>) {
      checkedTokens++;
      if (row.len !== row.n * 4) badTokens.push(row.key);
    }
    const staleAudio: string[] = [];
    let checkedAudio = 0;
    for (const row of this.db.prepare('SELECT path, sha256 FROM audio_hashes').all() as {
      path: string;
      sha256: string;
    }[]) {
      checkedAudio++;
      let sha: string | undefined;
      try {
        sha = hashFile(row.path);
      } catch {
        sha = undefined;
      }
      if (sha !== row.sha256) staleAudio.push(row.path);
    }
    return { integrity, checkedFeatures, badFeatures, checkedTokens, badTokens, checkedAudio, staleAudio };
  }

  /** Remove the named entries and forget stale audio hashes (after `verify`). */
  repair(report: VerifyReport): void {
    this.db
      .transaction(() => {
        for (const k of report.badFeatures) this.db.prepare('DELETE FROM features WHERE key = ?').run(k);
        for (const k of report.badTokens) this.db.prepare('DELETE FROM tokens WHERE key = ?').run(k);
        for (const p of report.staleAudio) this.db.prepare('DELETE FROM audio_hashes WHERE path = ?').run(p);
      })
      .immediate();
  }

  close(): void {
    if (this.db.open) {
      if (!this.readonly) this.flushCounters();
      this.db.close();
    }
  }
}

function readonlyStatement(path: string): Database.Statement {
  const refuse = () => {
    throw new XttsError('CACHE_READONLY', `the cache ${path} was opened read-only`, { exitCode: ExitCode.findings });
  };
  return { run: refuse, get: refuse, all: refuse } as unknown as Database.Statement;
}

function hashFile(path: string): string {
  const h = createHash('sha256');
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

/**
 * Delete a cache database and its WAL files, once the database is proven to be a cache (CACHE_NOT_A_CACHE otherwise).
 */
export function clearCache(path: string): { removedBytes: number } {
  refuseLinkToCache(path);
  if (assertCacheOrAbsent(path, 'delete it') === 'absent') return { removedBytes: 0 };
  refuseCacheInUse(path);
  let removedBytes = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    const file = path + suffix;
    const size = statSync(file, { throwIfNoEntry: false })?.size;
    if (size === undefined) continue;
    try {
      rmSync(file);
    } catch (e) {
      // Said, not counted as removed: a cache that is still there must not be reported gone.
      throw new XttsError('CACHE_CLEAR_FAILED', `cannot remove ${file}: ${(e as Error).message}`, {
        exitCode: ExitCode.environment,
        suggestions: [`remove it as a user who may write its folder (${dirname(file)})`],
      });
    }
    removedBytes += size;
  }
  return { removedBytes };
}
