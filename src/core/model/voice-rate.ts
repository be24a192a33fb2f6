// model.reference_rate: every token's log duration moved by the voice's measured speaking rate. The data pipeline
// measures it (data/audio/rate.ts: spectral-change peaks a second of speech; in training the speaker's, pooled over
// its clips; at synthesis the reference's). A fixed move rather than a learned input: the duration predictor could
// learn a trained voice's pace from its latents alone and would then ignore a number, as the conditioning encoder
// ignored the reference's pitch (bench/voices); moved by the measured rate, it learns each token's duration at a
// typical rate and the voice's vector only what the measure misses, and a new voice keeps the pace it was read at.
import * as tf from '@tensorflow/tfjs-core';

/** The rate the predicted durations are at before the move: 10 peaks a second, mid-way in espeak-ng's voices. */
export const RATE_CENTRE = Math.log(10);

/**
 * Log durations [B, T_text] (log(1 + decoder steps)) at each utterance's log rate [B]: a voice measured faster than
 * RATE_CENTRE says every token in proportionally fewer steps, short tokens and long alike (moving log(1 + steps)
 * itself moved a token of two steps half as far again as its share: bench/voices/pace.sh spoke two voices 2.57 times
 * apart for espeak-ng's 2.07); a token predicted at no steps stays there, and a rate of 0 (unknown) moves nothing.
 */
export function atRate(logDurations: tf.Tensor2D, logRate: tf.Tensor1D): tf.Tensor2D {
  const known = tf.cast(tf.greater(logRate, 0), 'float32');
  const scale = tf.reshape(tf.exp(tf.neg(tf.mul(tf.sub(logRate, RATE_CENTRE), known))), [logRate.shape[0], 1]);
  const steps = tf.relu(tf.sub(tf.exp(logDurations), 1));
  // A token predicted at no steps (log(1 + steps) <= 0) keeps its value: the scaled steps are 0 there, and its own
  // negative value is added back (a sum rather than a choice, which would put a comparison on the gradient's path).
  return tf.add(tf.log1p(tf.mul(steps, scale)), tf.minimum(logDurations, 0)) as tf.Tensor2D;
}
