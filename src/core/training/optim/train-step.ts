// One training call: forward, losses, backward, and — every `accumulate`-th call — clip and update.
// Returns device scalars only; nothing is read back, so the trainer decides when to wait for the
// device (at log intervals, reading `stats` in one transfer).
import * as tf from '@tensorflow/tfjs-core';
import { onDeviceOnly } from '../../backend/index.js';
import '../../model/gradients.js';
import type { ModelInputs } from '../../model/index.js';
import { computeLosses, type LossConfig, type LossDenominators, type LossParts } from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import { packBf16 } from '../../backend/programs/index.js';
import type { AdamW } from './adamw.js';

export interface TrainStepOptions {
  /** Micro-batches whose gradients make one update (training.grad_accumulation_steps). Default 1. */
  accumulate?: number;
  /** Called once forward and backward are issued, before the optimizer's work: the trainer's
   * span boundary between "forward/backward" and "optimizer" dispatch. */
  onGradients?: () => void;
  /** Data-parallel training: the whole batch's denominators (this batch is one replica's shard). */
  whole?: LossDenominators;
  /** Only forward, backward and accumulate (the sums carried in the optimizer's variables); the caller
   * sums the gradients of every replica and applies the update (parallel/replica.ts). */
  deferUpdate?: boolean;
  /** The update's per-step scalars (AdamW.updateScalars) as a device tensor [3]: a captured step's input. */
  updateScalars?: tf.Tensor1D;
  /**
   * A replica's last micro-batch: its accumulated gradient also as exchange buckets of `values` values
   * (AdamW.exchangeBuckets), each rounded to bfloat16 and packed two values a word with `bf16` (`values` even).
   */
  exchange?: { values: number; bf16: boolean };
}

/** Order of the values in StepResult.stats. */
export const STEP_STATS = [
  'loss',
  'melPre',
  'melPost',
  'alignedText',
  'duration',
  'pitch',
  'gradNorm',
  'finite',
] as const;

export interface StepResult extends LossParts {
  /** True when this call made an optimizer update (the last micro-batch of an accumulation). */
  applied: boolean;
  /** Norm of the averaged gradient before clipping; null on calls that only accumulated. */
  gradNorm: tf.Scalar | null;
  /** 1 if the update was applied, 0 if it was skipped as non-finite, −1 if it was skipped as a
   * loss-scale overflow (mixed_fp16); for accumulate-only calls, whether this micro-batch's loss is finite. */
  finite: tf.Scalar;
  /** Learning rate of the update (NaN on accumulate-only calls). */
  learningRate: number;
  /** [loss, melPre, melPost, alignedText, duration, pitch, gradNorm (0 if none), finite]: one read-back. */
  stats: tf.Tensor1D;
  /** With TrainStepOptions.exchange: the accumulated gradient's exchange buckets; else null. */
  exchange: tf.Tensor1D[] | null;
}

/** A training step's batch: it must be aligned first (XttsModel.align). */
export function trainStep(
  model: XttsModel,
  optimizer: AdamW,
  batch: ModelInputs,
  loss: LossConfig,
  opts: TrainStepOptions = {},
): StepResult {
  return onDeviceOnly(tf, () => issueStep(model, optimizer, batch, loss, opts));
}

function issueStep(
  model: XttsModel,
  optimizer: AdamW,
  batch: ModelInputs,
  loss: LossConfig,
  opts: TrainStepOptions,
): StepResult {
  const accumulate = Math.max(1, Math.floor(opts.accumulate ?? 1));
  let parts: LossParts | undefined;
  // Loss scaling (mixed_fp16): the gradients of S·loss, which the optimizer divides by S again.
  const lossScale = optimizer.lossScale;
  const { value, grads } = tf.variableGrads(() => {
    const out = model.forward(batch, { training: true });
    const p = computeLosses(out, batch, loss, opts.whole);
    parts = {
      total: p.total,
      melPre: tf.keep(p.melPre),
      melPost: tf.keep(p.melPost),
      alignedText: tf.keep(p.alignedText),
      duration: tf.keep(p.duration),
      pitch: p.pitch && tf.keep(p.pitch),
    };
    return lossScale ? (tf.mul(p.total, lossScale) as tf.Scalar) : p.total;
  }, optimizer.variables);
  const lossParts: LossParts = { ...parts!, total: lossScale ? (tf.div(value, lossScale) as tf.Scalar) : value };
  opts.onGradients?.();
  let exchange: tf.Tensor1D[] | null = null;
  if (opts.exchange) {
    const { values, bf16 } = opts.exchange;
    if (bf16 && values % 2 !== 0) throw new Error(`bfloat16 buckets of an odd number of values (${values})`);
    const buckets = optimizer.exchangeBuckets(grads, values);
    exchange = bf16 ? buckets.map((b) => packBf16(b)) : buckets;
    if (bf16) tf.dispose(buckets);
  }
  const flat = optimizer.flatten(grads);
  tf.dispose(Object.values(grads));
  // The optimizer's loss sum is only tested for being finite: the scaled one will do.
  optimizer.accumulate(flat, lossScale ? value : tf.clone(value));

  let applied = false;
  let gradNorm: tf.Scalar | null = null;
  let finite: tf.Scalar;
  let learningRate = Number.NaN;
  if (!opts.deferUpdate && optimizer.pendingMicroBatches >= accumulate) {
    const r = optimizer.apply(opts.updateScalars);
    applied = true;
    gradNorm = r.gradNorm;
    finite = r.finite;
    learningRate = r.learningRate;
  } else {
    finite = tf.tidy(() => tf.cast(tf.isFinite(lossParts.total), 'float32') as tf.Scalar);
    // The sums wait in the optimizer's variables for the next micro-batch, or for a data-parallel
    // replica's readback (a step capture replays that as it replays weight updates).
    optimizer.carry();
  }
  const stats = tf.tidy(() =>
    tf.stack([
      lossParts.total,
      lossParts.melPre,
      lossParts.melPost,
      lossParts.alignedText,
      lossParts.duration,
      lossParts.pitch ?? tf.zeros([]),
      gradNorm ?? tf.zeros([]),
      finite,
    ]),
  ) as tf.Tensor1D;
  return { ...lossParts, applied, gradNorm, finite, learningRate, stats, exchange };
}

/** The tensors a step's result holds until it is disposed. */
export function stepResultTensors(r: StepResult): tf.Tensor[] {
  return [
    r.total,
    r.melPre,
    r.melPost,
    r.alignedText,
    r.duration,
    ...(r.pitch ? [r.pitch] : []),
    r.finite,
    r.stats,
    ...(r.gradNorm ? [r.gradNorm] : []),
    ...(r.exchange ?? []),
  ];
}

/** Free every tensor of a StepResult. */
export function disposeStepResult(r: StepResult): void {
  tf.dispose(stepResultTensors(r));
}
