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
 * RATE_CENTRE says every token in proportionally fewer steps (exactly so for the long ones, whose log(1 + steps) is
 * close to log steps); a rate of 0 (unknown) moves nothing.
 */
export function atRate(logDurations: tf.Tensor2D, logRate: tf.Tensor1D): tf.Tensor2D {
  const known = tf.cast(tf.greater(logRate, 0), 'float32');
  const move = tf.mul(tf.sub(logRate, RATE_CENTRE), known);
  return tf.sub(logDurations, tf.reshape(move, [logRate.shape[0], 1])) as tf.Tensor2D;
}
