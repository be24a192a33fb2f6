// One data-parallel replica's part of a training step; rank 0 (the trainer's thread) and every
// replica worker run this same code. Per micro-batch: upload this replica's rows of the batch, align
// them (monotonic alignment search), add up every replica's loss denominators (two numbers), then
// forward and backward with the whole batch's denominators and this replica's rows of the whole
// batch's dropout masks — so the replicas' gradients add up to the gradient of the whole batch. At
// the update: the accumulated gradient read back in buckets, each exchanged through shared memory as
// soon as it is on the host while the next is read, the other replicas' copies added on this device
// (the all-reduce), and the same AdamW update on every replica from the same sums, which keeps their
// parameters identical. With step capture (webgpu) the alignment forward, the micro-batch's step and
// the update are each replayed from their captures (optim/step-replay.ts), as on one device; a replayed
// last micro-batch hands out each bucket as soon as it is made (backend/replay-order.ts), so the
// all-reduce overlaps the rest of the backward pass.
import * as tf from '@tensorflow/tfjs-core';
import { deviceIdle, HostTransfers } from '../../backend/index.js';
import { bf16ExchangeOnDevice, packBf16, roundBf16, sumPackedBf16 } from '../../backend/programs/index.js';
import {
  batchFor,
  type BatchDims,
  disposeBatch,
  type HostBatch,
  uploadBatch,
  wholeDenominators,
} from '../../model/index.js';
import type { DeviceConfig } from '../../config/index.js';
import type { LossConfig } from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import type { AdamW } from '../optim/adamw.js';
import {
  type StepCallOptions,
  type StepCaptureMode,
  type StepCaptureSummary,
  StepReplayer,
} from '../optim/step-replay.js';
import { disposeStepResult, STEP_STATS, type StepResult } from '../optim/train-step.js';
import type { Collective } from './collective.js';

/** Rows [start, start + size) of a batch of `total`. */
export interface ShardRows {
  start: number;
  size: number;
  total: number;
}

/** One micro-batch for one replica. */
export interface ShardJob {
  host: HostBatch;
  dims: BatchDims;
  rows: ShardRows;
  /** The last micro-batch of an optimizer step: the update follows. */
  last: boolean;
  /** Rank 0's dropout generator state before this micro-batch: every replica draws the same masks. */
  dropoutRng: number;
}

/** Where a replica's micro-batch went, in milliseconds. */
export interface ReplicaSpans {
  uploadMs: number;
  /**
   * Waiting: for the alignment scores, for this device to finish the step before the gradient is read, and for the
   * other replicas to reach the collectives (peerWaitMs of it).
   */
  syncMs: number;
  forwardBackwardMs: number;
  /**
   * The gradient all-reduce's own time: its readback, the exchange through host shared memory (the waits between its
   * buckets included), and the upload of the other replicas' gradients and their sum on the device.
   */
  allReduceMs: number;
  optimizerMs: number;
  /** Of syncMs: waiting for the other replicas to arrive at a collective (the slowest replica sets it). */
  peerWaitMs: number;
  /** Of allReduceMs: waiting for the gradient's buckets to come back from this device. */
  readbackMs: number;
  /** Of allReduceMs: the buckets' exchange through shared memory (the waits between the replicas' buckets). */
  exchangeMs: number;
  /**
   * Not in the step's spans: the all-reduce's host copies (into shared memory and to the device) done while the
   * devices were still computing the step, hidden behind it.
   */
  overlapMs: number;
}

/**
 * A piece of a replica's all-reduce, on its thread's clock: waiting for a bucket's copy from the device (fetch), its
 * copy into shared memory (readback; on other backends the gradient's readback), the gathers and releases with the
 * other replicas (exchange), the other replicas' buckets to the device (upload).
 */
export interface Interval {
  kind: 'fetch' | 'readback' | 'exchange' | 'upload';
  t0: number;
  t1: number;
}

/** The exchange buckets a replay fetched as it made them: their fetches by bucket, and the order it made them. */
interface EarlyBuckets {
  fetches: Promise<void>[];
  told: number[];
}

/** Sizes of the buckets `n` values make, `bucket` each but the last. */
export function bucketSizes(n: number, bucket: number): number[] {
  const out: number[] = [];
  for (let offset = 0; offset < n; offset += bucket) out.push(Math.min(bucket, n - offset));
  return out;
}

/**
 * A replica's all-reduce in its spans. It started (`start`) as the step was issued; `idle`: this device done with the
 * step; `stepDone`: the last replica's device done. Until then the replica waits for the step (syncMs; for the
 * other replicas' devices: peerWaitMs of it) and what the all-reduce does meanwhile is hidden behind the step
 * (overlapMs: the host copies done then); after it, everything is the all-reduce's own time (allReduceMs), its
 * fetches and copies out of the device counted as readbackMs and its gathers as exchangeMs.
 */
export function allReduceSpans(
  spans: ReplicaSpans,
  a: { start: number; end: number; idle: number; stepDone: number; timeline: readonly Interval[] },
): void {
  const done = Math.min(a.end, Math.max(a.start, a.stepDone));
  const own = Math.min(done, Math.max(a.start, a.idle));
  spans.syncMs += done - a.start;
  spans.peerWaitMs += done - own;
  spans.allReduceMs += a.end - done;
  for (const x of a.timeline) {
    const after = Math.max(0, x.t1 - Math.max(x.t0, done));
    const before = x.t1 - x.t0 - after;
    if (x.kind === 'fetch' || x.kind === 'readback') spans.readbackMs += after;
    else if (x.kind === 'exchange') spans.exchangeMs += after;
    if (x.kind === 'readback' || x.kind === 'upload') spans.overlapMs += before;
  }
}

/** The spans a replica's micro-batch charges to the trainer's step (StepSpans' names). */
export const STEP_SPANS = ['uploadMs', 'syncMs', 'forwardBackwardMs', 'allReduceMs', 'optimizerMs'] as const;
/** Every span of ReplicaSpans: STEP_SPANS and their parts. */
export const REPLICA_SPANS = [...STEP_SPANS, 'peerWaitMs', 'readbackMs', 'exchangeMs', 'overlapMs'] as const;

/** ReplicaSpans at zero. */
export const zeroSpans = (): ReplicaSpans =>
  Object.fromEntries(REPLICA_SPANS.map((k) => [k, 0])) as Record<(typeof REPLICA_SPANS)[number], number>;

/** The loss parts STEP_STATS names before the gradient norm: total, melPre, melPost, alignedText, duration, pitch. */
export const LOSS_PARTS = STEP_STATS.indexOf('gradNorm');

export interface ReplicaUpdate {
  /** The whole batch's loss parts, the mean over the step's micro-batches (LOSS_PARTS values). */
  losses: Float32Array;
  gradNorm: tf.Scalar;
  finite: tf.Scalar;
  learningRate: number;
}

export interface MicroResult {
  spans: ReplicaSpans;
  /** Real utterances (not fillers) in this replica's rows. */
  samples: number;
  /** The micro-batch's step, and at the update the update, were replays of their captures. */
  replayed: boolean;
  /** GPU programs its replays ran (the step's, the alignment forward's, the update's): no kernel counter sees them. */
  replayedPrograms: number;
  /** Present on the last micro-batch of a step. */
  update?: ReplicaUpdate;
}

/** Rows of `total` for each of `world` replicas, as even as possible, the larger shares first. */
export function shardRows(total: number, world: number): ShardRows[] {
  const base = Math.floor(total / world);
  const extra = total % world;
  const out: ShardRows[] = [];
  let start = 0;
  for (let r = 0; r < world; r++) {
    const size = base + (r < extra ? 1 : 0);
    out.push({ start, size, total });
    start += size;
  }
  return out;
}

/** Copies of one shard's rows of a batch (HostBatch layout, BatchDims for `rows.size`). */
export function shardOf(host: HostBatch, dims: BatchDims, rows: ShardRows): { host: HostBatch; dims: BatchDims } {
  const rowsOf = <A extends Int32Array | Float32Array>(a: A, perRow: number): A =>
    a.slice(rows.start * perRow, (rows.start + rows.size) * perRow) as A;
  return {
    host: {
      tokens: rowsOf(host.tokens, dims.tokens),
      textLengths: rowsOf(host.textLengths, 1),
      languages: rowsOf(host.languages, 1),
      mel: rowsOf(host.mel, dims.frames * dims.nMels),
      melLengths: rowsOf(host.melLengths, 1),
      refMel: rowsOf(host.refMel, dims.refFrames * dims.nMels),
      refLengths: rowsOf(host.refLengths, 1),
      refPitch: rowsOf(host.refPitch, 1),
      ...(host.melPitch ? { melPitch: rowsOf(host.melPitch, dims.frames) } : {}),
      ...(host.refRate ? { refRate: rowsOf(host.refRate, 1) } : {}),
    },
    dims: { ...dims, batchSize: rows.size },
  };
}

export interface ReplicaOptions {
  loss: LossConfig;
  alignmentPrior: number;
  accumulate: number;
  /** device.step_capture. */
  capture: StepCaptureMode;
  /** device.gradient_exchange: bfloat16 rounds every replica's gradient before the exchange (half the bytes). */
  exchange: GradientExchange;
}

export type GradientExchange = DeviceConfig['gradient_exchange'];

export class Replica {
  /** The loss parts summed over this step's micro-batches so far (device). */
  private parts: tf.Tensor1D | null = null;
  /** The steps, the alignment forwards and the updates, captured and replayed (or eager, and why). */
  readonly replayer: StepReplayer;
  /** webgpu: the gradient's buckets read straight into shared memory and uploaded straight from it. */
  private transfers: HostTransfers | null = null;

  constructor(
    readonly model: XttsModel,
    readonly optimizer: AdamW,
    readonly comm: Collective,
    private readonly o: ReplicaOptions,
  ) {
    this.replayer = new StepReplayer(model, optimizer, o.loss, o.capture, o.accumulate, true);
  }

  async micro(job: ShardJob): Promise<MicroResult> {
    const spans = zeroSpans();
    let last = performance.now();
    const mark = (span: keyof ReplicaSpans) => {
      const now = performance.now();
      spans[span] += now - last;
      last = now;
    };
    // The wait for the other replicas to arrive at the collective just made, moved from allReduceMs to syncMs.
    const arrival = () => {
      const ms = Math.min(this.comm.arrivalMs, spans.allReduceMs);
      spans.allReduceMs -= ms;
      spans.syncMs += ms;
      spans.peerWaitMs += ms;
    };
    const { model, optimizer, comm, replayer } = this;
    const size = job.rows.size;
    const textLengths = job.host.textLengths.subarray(0, size);
    const melLengths = job.host.melLengths.subarray(0, size);
    const tensors = uploadBatch(batchFor(model, job.host), job.dims);
    mark('uploadMs');
    let result: StepResult | undefined;
    let alignment: Awaited<ReturnType<XttsModel['align']>> | undefined;
    // The last micro-batch's exchange buckets (webgpu), and their fetches a replay started as it made them.
    let exchange: tf.Tensor1D[] | null = null;
    const early: EarlyBuckets = { fetches: [], told: [] };
    let replayed = true;
    let replayedPrograms = 0;
    try {
      const alignReplays = replayer.alignment?.replays ?? 0;
      alignment = await model.align(tensors, textLengths, melLengths, this.o.alignmentPrior, {
        replayer: replayer.alignment ?? undefined,
      });
      const alignReplayed = replayer.alignment !== null && replayer.alignment.replays > alignReplays;
      if (alignReplayed) replayedPrograms += replayer.alignment!.lastPrograms;
      replayed &&= alignReplayed;
      mark('syncMs');
      let frames = 0;
      for (const f of melLengths) frames += f;
      const sums = await comm.allReduceSum(new Float32Array([frames * job.dims.nMels, alignment.spokenTokens ?? 0]));
      mark('allReduceMs');
      arrival();
      const whole = wholeDenominators(sums[0], sums[1]);
      model.dropout.rngState = job.dropoutRng;
      model.dropout.shard = job.rows;
      try {
        result = replayer.step({ ...tensors, alignment }, { whole, ...this.exchangeOptions(job, early) });
        replayed &&= replayer.last?.replayed === true;
        replayedPrograms += replayer.last?.programs ?? 0;
        exchange = result.exchange;
        result.exchange = null;
      } catch (e) {
        // Buckets fetched as the replay made them, before it failed: their buffers serve the next step.
        await Promise.allSettled(early.fetches);
        this.transfers?.unmapAll();
        throw e;
      } finally {
        model.dropout.shard = null;
        whole.dispose();
      }
      const parts = tf.tidy(() => tf.slice(result!.stats, [0], [LOSS_PARTS])) as tf.Tensor1D;
      if (this.parts) {
        const sum = tf.add(this.parts, parts) as tf.Tensor1D;
        tf.dispose([this.parts, parts]);
        this.parts = sum;
      } else this.parts = parts;
      mark('forwardBackwardMs');
    } finally {
      disposeBatch(tensors);
      if (alignment) tf.dispose([alignment.steps, alignment.durations]);
      if (result) disposeStepResult(result);
    }
    let samples = 0;
    for (const f of melLengths) if (f > 0) samples++;
    if (!job.last) return { spans, samples, replayed, replayedPrograms };

    const accumulated = optimizer.accumulated;
    if (!accumulated || !this.parts) throw new Error('an update without accumulated gradients');
    const parts = this.parts;
    this.parts = null;
    // The all-reduce starts while this device may still be computing the step (its buckets come back as they are
    // made); what it costs the step is what it takes after the last replica's device is done (allReduceSpans).
    const start = last;
    const idle = deviceIdle(tf).then(() => performance.now());
    const timeline: Interval[] = [];
    let sums: { grad: tf.Tensor1D; losses: Float32Array };
    try {
      sums = await this.allReduce(accumulated.grad, { exchange, early, parts, idle, timeline });
    } finally {
      parts.dispose();
      tf.dispose(exchange ?? []);
    }
    const end = performance.now();
    allReduceSpans(spans, { start, end, idle: await idle, stepDone: comm.latestTime(), timeline });
    last = end;
    let update: ReplicaUpdate;
    try {
      const loss = tf.scalar(sums.losses[0]);
      const { applied, replayed: updateReplayed } = replayer.applySums(sums.grad, loss);
      loss.dispose();
      replayed &&= updateReplayed;
      if (updateReplayed) replayedPrograms += replayer.updates!.lastPrograms;
      const losses = sums.losses.map((x) => x / this.o.accumulate);
      update = { losses, gradNorm: applied.gradNorm, finite: applied.finite, learningRate: applied.learningRate };
    } finally {
      sums.grad.dispose();
    }
    mark('optimizerMs');
    return { spans, samples, replayed, replayedPrograms, update };
  }

  /** Whether the gradient moves through HostTransfers (webgpu; bfloat16 with its programs). */
  private get onDevice(): boolean {
    return tf.getBackend() === 'webgpu' && (this.o.exchange !== 'bfloat16' || bf16ExchangeOnDevice());
  }

  /**
   * On the device, the last micro-batch's step makes its gradient's exchange buckets (each bucket's values, or with
   * bfloat16 its words); a replay starts each one's fetch into `early` as soon as it is made.
   */
  private exchangeOptions(job: ShardJob, early: EarlyBuckets): Pick<StepCallOptions, 'exchange' | 'onReady'> {
    // XTTS_EXCHANGE_OVERLAP=off: the benchmarks' switch (bench/parallel-gpu.sh) to measure the all-reduce without it.
    if (!job.last || !this.onDevice || process.env.XTTS_EXCHANGE_OVERLAP === 'off') return {};
    const { bucket } = this.comm.shared;
    const t = (this.transfers ??= new HostTransfers(tf, bucket));
    const bf16 = this.o.exchange === 'bfloat16';
    return {
      exchange: { values: bf16 ? 2 * bucket : bucket, bf16 },
      onReady: (k, buffer, bytes) => {
        early.told.push(k);
        early.fetches[k] = t.fetchBuffer(buffer, 0, bytes / 4, k);
      },
    };
  }

  /**
   * The gradient and the loss parts summed over every replica. Bucket by bucket — the step's exchange buckets, whose
   * fetches a replay started as it made them, or ranges of the gradient, all fetched at once (webgpu) — as it
   * arrives, each is copied into this replica's slot of host shared memory and gathered (every replica's copy of the
   * bucket there); the other replicas' copies go to this device, each into a tensor of its own; then the gradients
   * are added on the device in rank order: the same bits on every replica (a float32 sum rounds the same on any
   * device), and no sums on the host. With the bfloat16 exchange what moves is every replica's gradient rounded to
   * bfloat16 (two values a word on webgpu, half the bytes), and the sum adds the rounded gradients of every replica,
   * this one's too. Every piece of the work is logged in `timeline`; this device's being done (`idle`) is published.
   */
  private async allReduce(
    grad: tf.Tensor1D,
    o: {
      exchange: tf.Tensor1D[] | null;
      early: EarlyBuckets;
      parts: tf.Tensor1D;
      idle: Promise<number>;
      timeline: Interval[];
    },
  ): Promise<{ grad: tf.Tensor1D; losses: Float32Array }> {
    const { comm } = this;
    const { bucket } = comm.shared;
    const { exchange, timeline } = o;
    const bf16 = this.o.exchange === 'bfloat16';
    // webgpu moves device buffers through mapped ones; bfloat16 without the exchange programs is rounded on the host.
    const t = this.onDevice ? (this.transfers ??= new HostTransfers(tf, bucket)) : null;
    const partsRead = o.parts.data() as Promise<Float32Array>;
    // What is exchanged: the step's buckets, or the gradient, or (bfloat16 on the device) its packed words.
    const sent = exchange ? null : t && bf16 ? packBf16(grad) : grad;
    const sizes = exchange ? exchange.map((b) => b.size) : bucketSizes(sent!.size, bucket);
    const n = sizes.reduce((a, b) => a + b, 0);
    const dtype = (exchange ? exchange[0] : sent!).dtype as 'float32' | 'int32';
    // Other backends compute on the host: a bucket is copied out of the slot into a tensor and added there.
    const others = new Map<number, tf.Tensor1D | Float32Array>();
    for (let r = 0; r < comm.world; r++)
      if (r !== comm.rank) others.set(r, t ? t.empty(n, dtype) : new Float32Array(n));
    const log = (kind: Interval['kind'], t0: number) => {
      const t1 = performance.now();
      timeline.push({ kind, t0, t1 });
      return t1;
    };
    let hostGrad: Float32Array | null = null;
    if (!t) {
      const t0 = performance.now();
      const values = (await grad.data()) as Float32Array;
      // The cpu backend hands out the tensor's own array: rounded in a copy.
      hostGrad = bf16 ? roundBf16(values.slice()) : values;
      log('readback', t0);
    }
    const fetches: Promise<void>[] = [];
    let ownWords: tf.Tensor1D | null = null;
    const offsets: number[] = [];
    for (let k = 0, at = 0; k < sizes.length; at += sizes[k++]) offsets.push(at);
    if (t)
      for (let k = 0; k < sizes.length; k++)
        fetches.push(
          o.early.fetches[k] ?? t.fetch(exchange ? exchange[k] : sent!, exchange ? 0 : offsets[k], sizes[k], k),
        );
    try {
      // The buckets in the order rank 0's replay made them (all in that order, or they would gather others' buckets);
      // by index on other backends, which never replay.
      const order = t ? await this.bucketOrder(o.early.told, sizes.length, timeline) : sizes.map((_, k) => k);
      for (const k of order) {
        const offset = offsets[k];
        const count = sizes[k];
        let t0 = performance.now();
        if (t) {
          await fetches[k];
          t0 = log('fetch', t0);
          t.take(k, comm.ownSlot.subarray(0, count));
        } else comm.ownSlot.set(hostGrad!.subarray(offset, offset + count));
        const t1 = log('readback', t0);
        const slots = await comm.gather(count);
        t0 = log('exchange', t1);
        let i = 0;
        const writes: Promise<void>[] = [];
        for (const [r, into] of others) {
          if (into instanceof Float32Array) into.set(slots[r], offset);
          else writes.push(t!.write(into, offset, slots[r], k * (comm.world - 1) + i++));
        }
        await Promise.all(writes);
        t0 = log('upload', t0);
        await comm.release();
        log('exchange', t0);
      }
      // This replica's packed buckets in one tensor, copied as words (tfjs's int32 concat rounds them through float32).
      if (exchange && bf16) {
        ownWords = t!.empty(n, 'int32');
        for (let k = 0; k < sizes.length; k++) t!.copy(exchange[k], ownWords, offsets[k]);
      }
      // In rank order; a new tensor (world ≥ 2 adds at least once), the terms and partial sums freed by the tidy.
      const sum = tf.tidy(() => {
        const own = () => {
          if (exchange) return ownWords ?? grad;
          return hostGrad && bf16 ? tf.tensor1d(hostGrad) : sent!;
        };
        const terms = Array.from({ length: comm.world }, (_, r) => {
          const x = others.get(r);
          if (x === undefined) return own();
          return x instanceof Float32Array ? tf.tensor1d(x) : x;
        });
        if (t && bf16) return sumPackedBf16(terms, grad.size);
        return terms.slice(1).reduce((a, b) => tf.add(a, b) as tf.Tensor1D, terms[0]);
      });
      comm.publishTime(await o.idle);
      const losses = await comm.allReduceSum(await partsRead);
      return { grad: sum, losses };
    } finally {
      await Promise.allSettled([partsRead, ...fetches]);
      // After a failure: buckets fetched and never taken are unmapped (their buffers serve the next fetch).
      t?.unmapAll();
      for (const x of others.values()) if (!(x instanceof Float32Array)) x.dispose();
      if (sent && sent !== grad) sent.dispose();
      ownWords?.dispose();
    }
  }

  /**
   * The order every replica takes the buckets in: rank 0's, the buckets its replay made in the order it made them
   * (`told`), then the others by index — passed through rank 0's slot of shared memory (a gather and a release).
   */
  private async bucketOrder(told: readonly number[], count: number, timeline: Interval[]): Promise<number[]> {
    const { comm } = this;
    const mine = [...told, ...Array.from({ length: count }, (_, k) => k).filter((k) => !told.includes(k))];
    if (comm.world === 1) return mine;
    // More buckets than a slot holds numbers (never with buckets of at least a thousand floats): by index.
    if (count > comm.shared.bucket) return mine.sort((a, b) => a - b);
    const t0 = performance.now();
    const words = (slot: Float32Array) => new Int32Array(slot.buffer, slot.byteOffset, count);
    if (comm.rank === 0) words(comm.ownSlot).set(mine);
    const slots = await comm.gather(count);
    const order = Array.from(words(slots[0]));
    await comm.release();
    timeline.push({ kind: 'exchange', t0, t1: performance.now() });
    return order;
  }

  /** Drop a step's partial work (the data ran out inside an accumulation). */
  discard(): void {
    tf.dispose(this.parts ?? []);
    this.parts = null;
    this.optimizer.discardAccumulated();
  }

  /** What step capture did on this replica. */
  captureSummary(): Promise<StepCaptureSummary> {
    return this.replayer.summary();
  }

  dispose(): void {
    this.replayer.dispose();
    this.transfers?.dispose();
  }
}

/**
 * A digest of a model's weights (FNV-1a over their bytes, in the store's order): replicas that hold
 * the same parameters give the same digest. Reads every weight back.
 */
export async function weightsDigest(model: XttsModel): Promise<string> {
  let h = 0x811c9dc5;
  for (const [, t] of model.getWeights()) {
    const values = (await t.data()) as Float32Array;
    const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}
