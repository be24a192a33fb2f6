// Training losses, all masked to real frames / steps / tokens so that padding contributes nothing
// (and a padded frame's prediction receives exactly zero gradient). Every denominator comes from
// the lengths on the device: no value is read back.
import * as tf from '@tensorflow/tfjs-core';
import type { TrainingConfig } from '../config/index.js';
import type { ModelInputs } from './batch.js';
import type { ModelOutputs } from './model.js';
import { scalar } from './nn.js';
import { pitchLoss } from './pitch-contour.js';
import { fusedDurationLoss, fusedLossesAvailable, fusedMaskedError } from '../backend/programs/index.js';

export type LossConfig = TrainingConfig['loss'];

export interface LossParts {
  total: tf.Scalar;
  melPre: tf.Scalar;
  /** Zero when the model has no postnet. */
  melPost: tf.Scalar;
  /** The mel loss of the aligned symbols' mean frames alone (ModelOutputs.textMel). */
  alignedText: tf.Scalar;
  /** The duration predictor's log-duration error. */
  duration: tf.Scalar;
  /** model.pitch_contour: the pitch predictor's error; null without it. */
  pitch: tf.Scalar | null;
}

/**
 * Mean |pred − target| (l1), (pred − target)² (l2) or their sum (l1_l2) over real frames and mel
 * bins. pred, target [B, T, nMels]; frameMask [B, T, 1]; denominator = real frames · nMels (≥ 1).
 */
export function maskedMelLoss(
  pred: tf.Tensor3D,
  target: tf.Tensor3D,
  frameMask: tf.Tensor3D,
  kind: LossConfig['mel'],
  denominator: tf.Scalar,
): tf.Scalar {
  // webgpu: 2 programs forward and 1 backward (backend/programs/losses.ts).
  if (
    fusedLossesAvailable() &&
    pred.dtype === 'float32' &&
    target.dtype === 'float32' &&
    frameMask.shape.join() === [...pred.shape.slice(0, 2), 1].join()
  ) {
    return fusedMaskedError(pred, target, frameMask, kind, denominator);
  }
  const masked = (err: tf.Tensor) => tf.sum(tf.mul(err, frameMask));
  let sum: tf.Tensor;
  if (kind === 'l1') sum = masked(tf.abs(tf.sub(pred, target)));
  else if (kind === 'l2') sum = masked(tf.squaredDifference(pred, target));
  else {
    const diff = tf.sub(pred, target);
    sum = masked(tf.add(tf.abs(diff), tf.square(diff)));
  }
  return tf.div(sum, denominator) as tf.Scalar;
}

/**
 * The duration predictor's loss: mean squared error of log(1 + steps) over the tokens that take
 * steps (durations > 0: the symbols of real utterances), as FastSpeech predicts log durations.
 * logDurations, durations [B, T_text].
 */
export function durationLoss(logDurations: tf.Tensor2D, durations: tf.Tensor2D, denominator?: tf.Scalar): tf.Scalar {
  // webgpu: 1 program forward and 1 backward (backend/programs/losses.ts).
  if (fusedLossesAvailable() && logDurations.dtype === 'float32' && durations.dtype === 'float32')
    return fusedDurationLoss(logDurations, durations, denominator);
  const spoken = tf.cast(tf.greater(durations, scalar(0)), 'float32');
  const err = tf.mul(tf.squaredDifference(logDurations, tf.log1p(durations)), spoken);
  return tf.div(tf.sum(err), denominator ?? tf.maximum(tf.sum(spoken), scalar(1))) as tf.Scalar;
}

/**
 * The denominators of a whole batch when this one is a replica's shard of it (data-parallel
 * training): [real frames · nMels, spoken tokens] of every shard together, each at least 1, so that the
 * shards' losses — and gradients — add up to the whole batch's. A device tensor (float32 [2]): a captured
 * replica step takes it as an input (wholeDenominators makes it).
 */
export type LossDenominators = tf.Tensor1D;

/** The whole batch's LossDenominators from its host sums. */
export function wholeDenominators(melValues: number, spokenTokens: number): LossDenominators {
  return tf.tensor1d([Math.max(melValues, 1), Math.max(spokenTokens, 1)]);
}

const denominator = (whole: LossDenominators, k: number) => tf.reshape(tf.slice(whole, [k], [1]), []) as tf.Scalar;

/** All loss terms of one batch, weighted as TrainingConfig.loss says. */
export function computeLosses(
  out: ModelOutputs,
  batch: ModelInputs,
  loss: LossConfig,
  whole?: LossDenominators,
): LossParts {
  const nMels = out.melPre.shape[2];
  const frames = tf.cast(batch.melLengths, 'float32');
  const melDenominator = (
    whole ? denominator(whole, 0) : tf.maximum(tf.mul(tf.sum(frames), scalar(nMels)), scalar(1))
  ) as tf.Scalar;
  const melPre = maskedMelLoss(out.melPre, batch.mel, out.frameMask, loss.mel, melDenominator);
  const melPost = out.melPost
    ? maskedMelLoss(out.melPost, batch.mel, out.frameMask, loss.mel, melDenominator)
    : (tf.zeros([]) as tf.Scalar);
  const alignedText = maskedMelLoss(out.textMel, batch.mel, out.frameMask, loss.mel, melDenominator);
  const duration = durationLoss(out.logDurations, batch.alignment.durations, whole ? denominator(whole, 1) : undefined);
  // It reaches the pitch predictor alone (which reads the text encodings without changing them): weight 1.
  const pitch = out.pitch
    ? pitchLoss(out.pitch.predicted, out.pitch.targets, whole ? denominator(whole, 1) : undefined)
    : null;
  const total = tf.addN([
    melPre,
    melPost,
    tf.mul(alignedText, scalar(loss.aligned_text_weight)),
    tf.mul(duration, scalar(loss.duration_weight)),
    ...(pitch ? [pitch] : []),
  ]) as tf.Scalar;
  return { total, melPre, melPost, alignedText, duration, pitch };
}
