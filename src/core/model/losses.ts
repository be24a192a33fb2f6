// Training losses, all masked to real frames / steps / tokens so that padding contributes nothing
// (and a padded frame's prediction receives exactly zero gradient). Every denominator comes from
// the lengths on the device: no value is read back.
import * as tf from '@tensorflow/tfjs-core';
import type { TrainingConfig } from '../config/schema.js';
import type { TrainBatch } from './batch.js';
import type { ModelOutputs } from './model.js';
import { lengthMask, scalar } from './nn.js';

export type LossConfig = TrainingConfig['loss'];

export interface LossParts {
  total: tf.Scalar;
  melPre: tf.Scalar;
  /** Zero when the model has no postnet. */
  melPost: tf.Scalar;
  stop: tf.Scalar;
  /** Zero when guided_attention_weight is 0. */
  guidedAttention: tf.Scalar;
}

/**
 * Mean |pred − target| (l1), (pred − target)² (l2) or their sum (l1_l2) over real frames and mel
 * bins. pred, target [B, T, nMels]; frameMask [B, T, 1]; denominator = real frames · nMels (≥ 1).
 */
export function maskedMelLoss(pred: tf.Tensor3D, target: tf.Tensor3D, frameMask: tf.Tensor3D, kind: LossConfig['mel'], denominator: tf.Scalar): tf.Scalar {
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
 * Binary cross-entropy with logits and a weight on positives, PyTorch's BCEWithLogitsLoss(pos_weight)
 * form: (1 − y)·x + (1 + (w − 1)·y)·softplus(−x), stable for any x. Mean over real steps.
 * logits, targets, stepMask [B, S].
 */
export function stopTokenLoss(logits: tf.Tensor2D, targets: tf.Tensor2D, stepMask: tf.Tensor2D, posWeight: number): tf.Scalar {
  // The masks fold into the two (constant) coefficients, keeping the gradient path short.
  const negCoef = tf.mul(tf.sub(scalar(1), targets), stepMask);
  const posCoef = tf.mul(tf.add(scalar(1), tf.mul(targets, scalar(posWeight - 1))), stepMask);
  const perStep = tf.add(tf.mul(negCoef, logits), tf.mul(posCoef, tf.softplus(tf.neg(logits))));
  return tf.div(tf.sum(perStep), tf.maximum(tf.sum(stepMask), scalar(1))) as tf.Scalar;
}

/**
 * Guided attention (Tachibana et al. 2017, eq. 5): W[t, n] = 1 − exp(−(n/N − t/T)² / (2g²)) penalises
 * attention far from the diagonal, for decoder step t < T and text position n < N of each utterance.
 * attention: per layer [B, S, T_text] (head-averaged weights on the text keys). Mean over valid
 * (t, n) pairs and layers.
 */
export function guidedAttentionLoss(attention: tf.Tensor3D[], textLengths: tf.Tensor1D, stepLengths: tf.Tensor1D, sigma: number): tf.Scalar {
  const [batch, steps, textSteps] = attention[0].shape;
  const weights = tf.tidy(() => {
    const n = tf.cast(textLengths, 'float32');
    const t = stepLengths;
    const textPos = tf.div(tf.reshape(tf.range(0, textSteps, 1, 'float32'), [1, 1, textSteps]), tf.reshape(tf.maximum(n, scalar(1)), [batch, 1, 1]));
    const stepPos = tf.div(tf.reshape(tf.range(0, steps, 1, 'float32'), [1, steps, 1]), tf.reshape(tf.maximum(t, scalar(1)), [batch, 1, 1]));
    const w = tf.sub(scalar(1), tf.exp(tf.div(tf.neg(tf.squaredDifference(textPos, stepPos)), scalar(2 * sigma * sigma))));
    const valid = tf.mul(tf.reshape(lengthMask(n, textSteps), [batch, 1, textSteps]), tf.reshape(lengthMask(t, steps), [batch, steps, 1]));
    const count = tf.mul(tf.maximum(tf.sum(valid), scalar(1)), scalar(attention.length));
    return tf.div(tf.mul(w, valid), count);
  });
  const summed = attention.length === 1 ? attention[0] : tf.addN(attention);
  return tf.sum(tf.mul(summed, weights)) as tf.Scalar;
}

/** All loss terms of one batch, weighted as TrainingConfig.loss says. */
export function computeLosses(out: ModelOutputs, batch: TrainBatch, loss: LossConfig, reductionFactor: number): LossParts {
  const nMels = out.melPre.shape[2];
  const steps = out.stopLogits.shape[1];
  const frames = tf.cast(batch.melLengths, 'float32');
  const melDenominator = tf.maximum(tf.mul(tf.sum(frames), scalar(nMels)), scalar(1)) as tf.Scalar;
  // Decoder steps holding at least one real frame: ceil(frames / r).
  const stepLengths = tf.ceil(tf.div(frames, scalar(reductionFactor))) as tf.Tensor1D;
  const stepMask = lengthMask(stepLengths, steps);

  const melPre = maskedMelLoss(out.melPre, batch.mel, out.frameMask, loss.mel, melDenominator);
  const melPost = out.melPost ? maskedMelLoss(out.melPost, batch.mel, out.frameMask, loss.mel, melDenominator) : tf.zeros([]) as tf.Scalar;
  const stop = stopTokenLoss(out.stopLogits, batch.stopTargets, stepMask, loss.stop_pos_weight);
  let total = tf.add(tf.add(melPre, melPost), tf.mul(stop, scalar(loss.stop_weight))) as tf.Scalar;
  let guidedAttention = tf.zeros([]) as tf.Scalar;
  if (loss.guided_attention_weight > 0) {
    if (!out.textAttention) throw new Error('guided attention loss needs forward(..., { attention: true })');
    guidedAttention = guidedAttentionLoss(out.textAttention, batch.textLengths, stepLengths, loss.guided_attention_sigma);
    total = tf.add(total, tf.mul(guidedAttention, scalar(loss.guided_attention_weight)));
  }
  return { total, melPre, melPost, stop, guidedAttention };
}
