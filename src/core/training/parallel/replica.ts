// One data-parallel replica's part of a training step; rank 0 (the trainer's thread) and every
// replica worker run this same code. Per micro-batch: upload this replica's rows of the batch, align
// them (monotonic alignment search), add up every replica's loss denominators (two numbers), then
// forward and backward with the whole batch's denominators and this replica's rows of the whole
// batch's dropout masks — so the replicas' gradients add up to the gradient of the whole batch. At
// the update: one readback of the accumulated gradient and loss parts, an all-reduce (sum), and the
// same AdamW update on every replica from the same sums, which keeps their parameters identical.
import * as tf from '@tensorflow/tfjs-core';
import { type BatchDims, disposeBatch, type HostBatch, uploadBatch } from '../../model/index.js';
import type { LossConfig } from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import type { AdamW } from '../optim/adamw.js';
import { disposeStepResult, STEP_STATS, trainStep } from '../optim/train-step.js';
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
  /** Readbacks: the alignment scores and, at the update, the gradient. */
  syncMs: number;
  forwardBackwardMs: number;
  /** Waiting in collectives (the slowest replica sets it) and summing. */
  allReduceMs: number;
  optimizerMs: number;
}

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

export class Replica {
  /** The loss parts summed over this step's micro-batches so far (device). */
  private parts: tf.Tensor1D | null = null;

  constructor(
    readonly model: XttsModel,
    readonly optimizer: AdamW,
    readonly comm: Collective,
    private readonly o: { loss: LossConfig; alignmentPrior: number; accumulate: number },
  ) {}

  async micro(job: ShardJob): Promise<MicroResult> {
    const spans: ReplicaSpans = { uploadMs: 0, syncMs: 0, forwardBackwardMs: 0, allReduceMs: 0, optimizerMs: 0 };
    let last = performance.now();
    const mark = (span: keyof ReplicaSpans) => {
      const now = performance.now();
      spans[span] += now - last;
      last = now;
    };
    const { model, optimizer, comm } = this;
    const size = job.rows.size;
    const textLengths = job.host.textLengths.subarray(0, size);
    const melLengths = job.host.melLengths.subarray(0, size);
    const tensors = uploadBatch(job.host, job.dims);
    mark('uploadMs');
    let result: ReturnType<typeof trainStep> | undefined;
    let alignment: Awaited<ReturnType<XttsModel['align']>> | undefined;
    try {
      alignment = await model.align(tensors, textLengths, melLengths, this.o.alignmentPrior);
      mark('syncMs');
      let frames = 0;
      for (const f of melLengths) frames += f;
      const whole = await comm.allReduceSum(new Float32Array([frames * job.dims.nMels, alignment.spokenTokens ?? 0]));
      mark('allReduceMs');
      model.dropout.rngState = job.dropoutRng;
      model.dropout.shard = job.rows;
      try {
        result = trainStep(model, optimizer, { ...tensors, alignment }, this.o.loss, {
          accumulate: this.o.accumulate,
          whole: { melValues: whole[0], spokenTokens: whole[1] },
          deferUpdate: true,
        });
      } finally {
        model.dropout.shard = null;
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
    if (!job.last) return { spans, samples };

    // The update: one readback of [gradient sum, loss parts sum], summed over the replicas.
    const accumulated = optimizer.accumulated;
    if (!accumulated || !this.parts) throw new Error('an update without accumulated gradients');
    const combined = tf.concat([accumulated.grad, this.parts]) as tf.Tensor1D;
    tf.dispose(this.parts);
    this.parts = null;
    const local = (await combined.data()) as Float32Array;
    combined.dispose();
    mark('syncMs');
    const summed = await comm.allReduceSum(local);
    mark('allReduceMs');
    const n = optimizer.parameterCount;
    optimizer.replaceAccumulated(tf.tensor1d(summed.subarray(0, n)), tf.scalar(summed[n]));
    const applied = optimizer.apply();
    mark('optimizerMs');
    const losses = summed.slice(n, n + LOSS_PARTS).map((x) => x / this.o.accumulate);
    return {
      spans,
      samples,
      update: { losses, gradNorm: applied.gradNorm, finite: applied.finite, learningRate: applied.learningRate },
    };
  }

  /** Drop a step's partial work (the data ran out inside an accumulation). */
  discard(): void {
    tf.dispose(this.parts ?? []);
    this.parts = null;
    this.optimizer.discardAccumulated();
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
