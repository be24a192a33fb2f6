// One data-parallel replica's part of a training step; rank 0 (the trainer's thread) and every
// replica worker run this same code. Per micro-batch: upload this replica's rows of the batch, align
// them (monotonic alignment search), add up every replica's loss denominators (two numbers), then
// forward and backward with the whole batch's denominators and this replica's rows of the whole
// batch's dropout masks — so the replicas' gradients add up to the gradient of the whole batch. At
// the update: the accumulated gradient read back in buckets, each exchanged through shared memory as
// soon as it is on the host while the next is read, the other replicas' copies added on this device
// (the all-reduce), and the same AdamW update on every replica from the same sums, which keeps their
// parameters identical. With step capture (webgpu) the alignment forward, the micro-batch's step and
// the update are each replayed from their captures (optim/step-replay.ts), as on one device.
import * as tf from '@tensorflow/tfjs-core';
import { deviceIdle, HostTransfers } from '../../backend/index.js';
import { bf16ExchangeOnDevice, packBf16, roundBf16, sumPackedBf16 } from '../../backend/programs/index.js';
import { type BatchDims, disposeBatch, type HostBatch, uploadBatch, wholeDenominators } from '../../model/index.js';
import type { DeviceConfig } from '../../config/index.js';
import type { LossConfig } from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import type { AdamW } from '../optim/adamw.js';
import { type StepCaptureMode, type StepCaptureSummary, StepReplayer } from '../optim/step-replay.js';
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
}

/** The spans a replica's micro-batch charges to the trainer's step (StepSpans' names). */
export const STEP_SPANS = ['uploadMs', 'syncMs', 'forwardBackwardMs', 'allReduceMs', 'optimizerMs'] as const;
/** Every span of ReplicaSpans: STEP_SPANS and their parts. */
export const REPLICA_SPANS = [...STEP_SPANS, 'peerWaitMs', 'readbackMs', 'exchangeMs'] as const;

/** ReplicaSpans at zero. */
export const zeroSpans = (): ReplicaSpans =>
  Object.fromEntries(REPLICA_SPANS.map((k) => [k, 0])) as Record<(typeof REPLICA_SPANS)[number], number>;

/** The loss parts STEP_STATS names before the gradient norm: total, melPre, melPost, alignedText, duration. */
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
    const tensors = uploadBatch(job.host, job.dims);
    mark('uploadMs');
    let result: StepResult | undefined;
    let alignment: Awaited<ReturnType<XttsModel['align']>> | undefined;
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
        result = replayer.step({ ...tensors, alignment }, { whole });
        replayed &&= replayer.last?.replayed === true;
        replayedPrograms += replayer.last?.programs ?? 0;
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
    // This device's work done first: what follows is the all-reduce's own time.
    await deviceIdle(tf);
    mark('syncMs');
    let sums: { grad: tf.Tensor1D; losses: Float32Array };
    try {
      sums = await this.allReduce(accumulated.grad, parts, spans, () => {
        mark('allReduceMs');
        arrival();
      });
    } finally {
      parts.dispose();
    }
    mark('allReduceMs');
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

  /**
   * The gradient and the loss parts summed over every replica. Every bucket's readback starts at once (webgpu); bucket
   * by bucket, as it arrives, it is copied into this replica's slot of host shared memory and gathered (every replica's
   * copy of the bucket there); the other replicas' copies go to this device, each into a tensor of its own; then the
   * gradients are added on the device in rank order: the same bits on every replica (a float32 sum rounds the same
   * on any device), and no sums on the host. With the bfloat16 exchange what moves is every replica's gradient
   * rounded to bfloat16 (two values a word on webgpu, half the bytes), and the sum adds the rounded gradients of every
   * replica, this one's too.
   * `arrived` is called after the first bucket's gather, whose wait is the wait for the other replicas' steps.
   */
  private async allReduce(
    grad: tf.Tensor1D,
    parts: tf.Tensor1D,
    spans: ReplicaSpans,
    arrived: () => void,
  ): Promise<{ grad: tf.Tensor1D; losses: Float32Array }> {
    const { comm } = this;
    const { bucket } = comm.shared;
    const bf16 = this.o.exchange === 'bfloat16';
    // webgpu moves device buffers through mapped ones; bfloat16 without the exchange programs is rounded on the host.
    const onDevice = tf.getBackend() === 'webgpu' && (!bf16 || bf16ExchangeOnDevice());
    if (onDevice) this.transfers ??= new HostTransfers(tf, bucket);
    const t = onDevice ? this.transfers : null;
    const partsRead = parts.data() as Promise<Float32Array>;
    // What is exchanged: the gradient, or (bfloat16 on the device) its packed words.
    const sent = t && bf16 ? packBf16(grad) : grad;
    const n = sent.size;
    // Other backends compute on the host: a bucket is copied out of the slot into a tensor and added there.
    const others = new Map<number, tf.Tensor1D | Float32Array>();
    for (let r = 0; r < comm.world; r++)
      if (r !== comm.rank) others.set(r, t ? t.empty(n, sent.dtype as 'float32' | 'int32') : new Float32Array(n));
    const before = performance.now();
    let hostGrad: Float32Array | null = null;
    if (!t) {
      const values = (await grad.data()) as Float32Array;
      // The cpu backend hands out the tensor's own array: rounded in a copy.
      hostGrad = bf16 ? roundBf16(values.slice()) : values;
    }
    spans.readbackMs += performance.now() - before;
    const fetches: Promise<void>[] = [];
    if (t)
      for (let k = 0, offset = 0; offset < n; k++, offset += bucket)
        fetches.push(t.fetch(sent, offset, Math.min(bucket, n - offset), k));
    try {
      for (let k = 0, offset = 0; offset < n; k++, offset += bucket) {
        const count = Math.min(bucket, n - offset);
        let t0 = performance.now();
        if (t) {
          await fetches[k];
          t.take(k, comm.ownSlot.subarray(0, count));
        } else comm.ownSlot.set(hostGrad!.subarray(offset, offset + count));
        const t1 = performance.now();
        spans.readbackMs += t1 - t0;
        const slots = await comm.gather(count);
        // The first bucket's wait for the others is the wait for their steps (peerWaitMs), not the exchange's.
        spans.exchangeMs += performance.now() - t1 - (k === 0 ? comm.arrivalMs : 0);
        if (k === 0) arrived();
        let i = 0;
        const writes: Promise<void>[] = [];
        for (const [r, into] of others) {
          if (into instanceof Float32Array) into.set(slots[r], offset);
          else writes.push(t!.write(into, offset, slots[r], k * (comm.world - 1) + i++));
        }
        await Promise.all(writes);
        t0 = performance.now();
        await comm.release();
        spans.exchangeMs += performance.now() - t0;
      }
      // In rank order; a new tensor (world ≥ 2 adds at least once), the terms and partial sums freed by the tidy.
      const sum = tf.tidy(() => {
        const terms = Array.from({ length: comm.world }, (_, r) => {
          const x = others.get(r) ?? (hostGrad && bf16 ? hostGrad : sent);
          return x instanceof Float32Array ? tf.tensor1d(x) : x;
        });
        if (t && bf16) return sumPackedBf16(terms, grad.size);
        return terms.slice(1).reduce((a, b) => tf.add(a, b) as tf.Tensor1D, terms[0]);
      });
      const losses = await comm.allReduceSum(await partsRead);
      return { grad: sum, losses };
    } finally {
      await Promise.allSettled([partsRead, ...fetches]);
      // After a failure: buckets fetched and never taken are unmapped (their buffers serve the next fetch).
      t?.unmapAll();
      for (const x of others.values()) if (!(x instanceof Float32Array)) x.dispose();
      if (sent !== grad) sent.dispose();
    }
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
