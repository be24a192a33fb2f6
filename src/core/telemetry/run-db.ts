// A run's database: one SQLite file in the run folder with the config, every step's spans,
// metrics (loss curves, validation) and device samples, mirrored as JSON lines in metrics.jsonl
// for tools that prefer text. Writes are batched into transactions so logging never stalls a step.
import { appendFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { isCorruptDatabase, makeFolders, openSqlite } from '../util/index.js';
import { ExitCode, XttsError } from '../errors.js';
import type { GpuReadings } from './gpu-sample.js';
import { SPAN_NAMES, type StepRecord } from './spans.js';

export const RUN_DB_FILE = 'run.sqlite';
export const METRICS_JSONL = 'metrics.jsonl';

export interface MetricRecord {
  step: number;
  name: string;
  value: number;
}

/** A device_samples row: a GPU sample's readings, its SM activity (GPM) and its clock reasons comma-joined. */
export interface DeviceSampleRecord extends GpuReadings {
  tMs: number;
  device: number;
  smActivityPct: number | null;
  throttleReasons: string | null;
}

/** A span's column in the steps table: dataWaitMs -> data_wait_ms. */
const spanColumn = (s: string) => `${s.replace(/Ms$/, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}_ms`;
const SPAN_COLUMNS = SPAN_NAMES.map((s) => `${spanColumn(s)} REAL`).join(', ');

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (
  step INTEGER PRIMARY KEY, start_ms REAL, wall_ms REAL, ${SPAN_COLUMNS},
  epoch INTEGER, batch_index INTEGER, bucket INTEGER, batch_size INTEGER, tokens INTEGER, frames INTEGER,
  kernels INTEGER, flops REAL, device_ms REAL, ready_slots INTEGER, learning_rate REAL, loss REAL,
  grad_norm REAL, non_finite INTEGER, tensors INTEGER, tensor_bytes REAL, programs INTEGER, replayed INTEGER);
CREATE TABLE IF NOT EXISTS metrics (step INTEGER, name TEXT, value REAL, PRIMARY KEY (step, name));
CREATE TABLE IF NOT EXISTS device_samples (t_ms REAL, device INTEGER, utilization_pct REAL,
  memory_used_bytes REAL, memory_total_bytes REAL,
  sm_clock_mhz REAL, power_w REAL, temperature_c REAL, sm_activity_pct REAL, throttle_reasons TEXT);
CREATE TABLE IF NOT EXISTS replica_steps (step INTEGER, rank INTEGER, samples INTEGER, upload_ms REAL,
  sync_ms REAL, forward_backward_ms REAL,
  all_reduce_ms REAL, optimizer_ms REAL, tensors INTEGER, tensor_bytes REAL, peer_wait_ms REAL, replayed INTEGER,
  readback_ms REAL, exchange_ms REAL, overlap_ms REAL, PRIMARY KEY (step, rank));
`;

/** One data-parallel replica's part of a step (summed over its micro-batches); rank 0 is the trainer's. */
export interface ReplicaStepRecord {
  step: number;
  rank: number;
  /** Real utterances in its rows. */
  samples: number;
  uploadMs: number;
  syncMs: number;
  forwardBackwardMs: number;
  allReduceMs: number;
  optimizerMs: number;
  /** Of syncMs: waiting for the other replicas at the collectives; null in runs recorded before xtts measured it. */
  peerWaitMs: number | null;
  /** Of allReduceMs: the gradient's readback, and its exchange through shared memory (null as peerWaitMs). */
  readbackMs: number | null;
  exchangeMs: number | null;
  /**
   * Not in the spans: the all-reduce's host copies done while the devices still computed the step (hidden behind it);
   * null in runs recorded before xtts overlapped them.
   */
  overlapMs: number | null;
  /** Its micro-batches' steps and its update were replays (step capture); null where capture was off or unrecorded. */
  replayed: boolean | null;
  tensors: number;
  tensorBytes: number;
}

export class RunDatabase {
  readonly dir: string;
  private readonly db: Database.Database;
  private readonly insertStep: Database.Statement;
  private readonly insertMetric: Database.Statement;
  private readonly insertSample: Database.Statement;
  private readonly insertReplica: Database.Statement;
  private pendingReplicas: ReplicaStepRecord[] = [];
  private pendingSteps: StepRecord[] = [];
  private pendingMetrics: MetricRecord[] = [];
  private pendingSamples: DeviceSampleRecord[] = [];

  private constructor(
    dir: string,
    private readonly readonly: boolean,
  ) {
    this.dir = dir;
    const path = join(dir, RUN_DB_FILE);
    if (readonly && !existsSync(path)) {
      throw new XttsError('RUN_NOT_FOUND', `no run database in ${dir} (${RUN_DB_FILE} is missing)`, {
        exitCode: ExitCode.usage,
        suggestions: ['name the output folder of an `xtts train` or `xtts profile-bottleneck` run'],
      });
    }
    if (!readonly) makeFolders(dir);
    this.db = openSqlite(path, readonly ? 'read' : 'write');
    if (!readonly) {
      this.db.exec(SCHEMA);
      // A run folder written by an older xtts (resumed now) lacks the columns added since.
      const addColumns = (table: string, columns: [string, string][]) => {
        const have = new Set(
          (this.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name),
        );
        for (const [col, type] of columns)
          if (!have.has(col)) this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${col} ${type}`);
      };
      addColumns('steps', [
        ['tensors', 'INTEGER'],
        ['tensor_bytes', 'REAL'],
        ['all_reduce_ms', 'REAL'],
        ['flops', 'REAL'],
        ['programs', 'INTEGER'],
        ['replayed', 'INTEGER'],
      ]);
      addColumns('replica_steps', [
        ['peer_wait_ms', 'REAL'],
        ['replayed', 'INTEGER'],
        ['readback_ms', 'REAL'],
        ['exchange_ms', 'REAL'],
        ['overlap_ms', 'REAL'],
      ]);
    }
    const cols = [
      'step',
      'start_ms',
      'wall_ms',
      ...SPAN_NAMES.map(spanColumn),
      'epoch',
      'batch_index',
      'bucket',
      'batch_size',
      'tokens',
      'frames',
      'kernels',
      'flops',
      'device_ms',
      'ready_slots',
      'learning_rate',
      'loss',
      'grad_norm',
      'non_finite',
      'tensors',
      'tensor_bytes',
      'programs',
      'replayed',
    ];
    const w = (sql: string) => (readonly ? (undefined as unknown as Database.Statement) : this.db.prepare(sql));
    this.insertStep = w(`INSERT OR REPLACE INTO steps (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
    this.insertMetric = w('INSERT OR REPLACE INTO metrics (step, name, value) VALUES (?, ?, ?)');
    this.insertSample = w('INSERT INTO device_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    this.insertReplica = w(
      'INSERT OR REPLACE INTO replica_steps (step, rank, samples, upload_ms, sync_ms, forward_backward_ms, ' +
        'all_reduce_ms, optimizer_ms, tensors, tensor_bytes, peer_wait_ms, replayed, readback_ms, exchange_ms, ' +
        'overlap_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
  }

  static create(dir: string): RunDatabase {
    return new RunDatabase(dir, false);
  }

  static open(dir: string): RunDatabase {
    return new RunDatabase(dir, true);
  }

  /**
   * What `body` reads from the run database of `dir`, opened read-only and closed again; a file that is damaged, not
   * a database, or another database is RUN_DB_DAMAGED naming it (a user's file, not a bug of xtts).
   */
  static read<T>(dir: string, body: (db: RunDatabase) => T): T {
    const path = join(dir, RUN_DB_FILE);
    const damaged = (why: string) =>
      new XttsError('RUN_DB_DAMAGED', `${path} cannot be read as a run's database: ${why}`, {
        exitCode: ExitCode.usage,
        position: { file: path },
        suggestions: [
          "name the output folder of another `xtts train` run; this run's checkpoints (checkpoints/) are unaffected",
        ],
      });
    let db: RunDatabase;
    try {
      db = RunDatabase.open(dir);
    } catch (e) {
      if (isCorruptDatabase(e)) throw damaged((e as Error).message);
      throw e;
    }
    try {
      return body(db);
    } catch (e) {
      if (isCorruptDatabase(e) || e instanceof SyntaxError) throw damaged((e as Error).message);
      if (/no such (table|column)/.test((e as Error).message))
        throw damaged(`it is another database (${(e as Error).message})`);
      throw e;
    } finally {
      db.close();
    }
  }

  setMeta(k: string, v: unknown): void {
    this.db.prepare('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)').run(k, JSON.stringify(v));
  }

  getMeta<T>(k: string): T | undefined {
    const row = this.db.prepare('SELECT v FROM meta WHERE k = ?').get(k) as { v: string } | undefined;
    return row ? (JSON.parse(row.v) as T) : undefined;
  }

  addStep(r: StepRecord): void {
    this.pendingSteps.push(r);
  }

  addReplicaStep(r: ReplicaStepRecord): void {
    this.pendingReplicas.push(r);
  }

  addMetric(step: number, name: string, value: number): void {
    this.pendingMetrics.push({ step, name, value });
  }

  addDeviceSample(s: DeviceSampleRecord): void {
    this.pendingSamples.push(s);
  }

  /** Write what is pending in one transaction, and append the metrics to metrics.jsonl. */
  flush(): void {
    if (
      !this.pendingSteps.length &&
      !this.pendingMetrics.length &&
      !this.pendingSamples.length &&
      !this.pendingReplicas.length
    )
      return;
    const replicas = this.pendingReplicas;
    this.pendingReplicas = [];
    const steps = this.pendingSteps;
    const metrics = this.pendingMetrics;
    const samples = this.pendingSamples;
    this.pendingSteps = [];
    this.pendingMetrics = [];
    this.pendingSamples = [];
    this.db
      .transaction(() => {
        for (const r of steps) {
          this.insertStep.run(
            r.step,
            r.startMs,
            r.wallMs,
            ...SPAN_NAMES.map((s) => r.spans[s]),
            r.epoch,
            r.batchIndex,
            r.bucket,
            r.batchSize,
            r.tokens,
            r.frames,
            r.kernels,
            r.flops ?? null,
            r.deviceMs ?? null,
            r.readySlots,
            r.learningRate,
            r.loss ?? null,
            r.gradNorm ?? null,
            r.nonFinite ? 1 : 0,
            r.tensors ?? null,
            r.tensorBytes ?? null,
            r.programs ?? null,
            r.replayed === undefined ? null : r.replayed ? 1 : 0,
          );
        }
        for (const r of replicas)
          this.insertReplica.run(
            r.step,
            r.rank,
            r.samples,
            r.uploadMs,
            r.syncMs,
            r.forwardBackwardMs,
            r.allReduceMs,
            r.optimizerMs,
            r.tensors,
            r.tensorBytes,
            r.peerWaitMs,
            r.replayed === null ? null : r.replayed ? 1 : 0,
            r.readbackMs,
            r.exchangeMs,
            r.overlapMs,
          );
        for (const m of metrics) this.insertMetric.run(m.step, m.name, m.value);
        for (const s of samples)
          this.insertSample.run(
            s.tMs,
            s.device,
            s.utilizationPct,
            s.memoryUsedBytes,
            s.memoryTotalBytes,
            s.smClockMhz,
            s.powerW,
            s.temperatureC,
            s.smActivityPct,
            s.throttleReasons,
          );
      })
      .immediate();
    if (metrics.length)
      appendFileSync(join(this.dir, METRICS_JSONL), metrics.map((m) => JSON.stringify(m)).join('\n') + '\n');
  }

  steps(fromStep = 0): StepRecord[] {
    const rows = this.db.prepare('SELECT * FROM steps WHERE step >= ? ORDER BY step').all(fromStep) as Record<
      string,
      number | null
    >[];
    return rows.map((r) => ({
      step: r.step as number,
      startMs: r.start_ms as number,
      wallMs: r.wall_ms as number,
      spans: Object.fromEntries(
        SPAN_NAMES.map((s) => [s, (r[spanColumn(s)] as number) ?? 0]),
      ) as unknown as StepRecord['spans'],
      epoch: r.epoch as number,
      batchIndex: r.batch_index as number,
      bucket: r.bucket as number,
      batchSize: r.batch_size as number,
      tokens: r.tokens as number,
      frames: r.frames as number,
      kernels: r.kernels as number,
      ...(typeof r.flops === 'number' ? { flops: r.flops } : {}),
      deviceMs: r.device_ms ?? undefined,
      readySlots: r.ready_slots as number,
      learningRate: r.learning_rate as number,
      loss: r.loss ?? undefined,
      gradNorm: r.grad_norm ?? undefined,
      nonFinite: r.non_finite === 1,
      ...(typeof r.tensors === 'number'
        ? { tensors: r.tensors, tensorBytes: (r.tensor_bytes as number | null) ?? undefined }
        : {}),
      ...(typeof r.programs === 'number' ? { programs: r.programs } : {}),
      ...(typeof r.replayed === 'number' ? { replayed: r.replayed === 1 } : {}),
    }));
  }

  /**
   * Every replica's part of every step, by step then rank (empty for a run on one device, or one written before
   * data-parallel training).
   */
  replicaSteps(): ReplicaStepRecord[] {
    const has = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replica_steps'").get();
    if (!has) return [];
    return (this.db.prepare('SELECT * FROM replica_steps ORDER BY step, rank').all() as Record<string, number>[]).map(
      (r) => ({
        step: r.step,
        rank: r.rank,
        samples: r.samples,
        uploadMs: r.upload_ms,
        syncMs: r.sync_ms,
        forwardBackwardMs: r.forward_backward_ms,
        allReduceMs: r.all_reduce_ms,
        optimizerMs: r.optimizer_ms,
        peerWaitMs: r.peer_wait_ms ?? null,
        readbackMs: r.readback_ms ?? null,
        exchangeMs: r.exchange_ms ?? null,
        overlapMs: r.overlap_ms ?? null,
        replayed: typeof r.replayed === 'number' ? r.replayed === 1 : null,
        tensors: r.tensors,
        tensorBytes: r.tensor_bytes,
      }),
    );
  }

  metrics(name?: string): MetricRecord[] {
    return (
      name
        ? this.db.prepare('SELECT step, name, value FROM metrics WHERE name = ? ORDER BY step').all(name)
        : this.db.prepare('SELECT step, name, value FROM metrics ORDER BY step, name').all()
    ) as MetricRecord[];
  }

  deviceSamples(): DeviceSampleRecord[] {
    return (
      this.db.prepare('SELECT * FROM device_samples ORDER BY t_ms').all() as Record<string, number | string | null>[]
    ).map((r) => ({
      tMs: r.t_ms as number,
      device: r.device as number,
      utilizationPct: r.utilization_pct as number | null,
      memoryUsedBytes: r.memory_used_bytes as number | null,
      memoryTotalBytes: r.memory_total_bytes as number | null,
      smClockMhz: r.sm_clock_mhz as number | null,
      powerW: r.power_w as number | null,
      temperatureC: r.temperature_c as number | null,
      smActivityPct: r.sm_activity_pct as number | null,
      throttleReasons: r.throttle_reasons as string | null,
    }));
  }

  close(): void {
    if (!this.db.open) return;
    if (!this.readonly) this.flush();
    this.db.close();
  }
}
