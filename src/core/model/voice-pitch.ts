// model.speaker_pitch: the reference's pitch as a vector added to every conditioning latent. The data pipeline
// measures it (data/audio/pitch.ts: the median log F0 of the reference clips' voiced frames, 0 where it found none);
// here it becomes features the model can interpolate between the voices it was trained on: octaves from 150 Hz, and
// their sines and cosines at four scales (a smooth code of the same number), all zero, with the "known" flag, when
// the pitch is unknown.
import * as tf from '@tensorflow/tfjs-core';
import { Linear } from './nn.js';
import type { ParamStore } from './params.js';

/** Features of one pitch: the known flag, octaves from 150 Hz, and 4 sines and 4 cosines of them. */
export const PITCH_FEATURES = 10;
const CENTRE_LOG_HZ = Math.log(150);
const SCALES = [Math.PI / 2, Math.PI, 2 * Math.PI, 4 * Math.PI];

export class VoicePitch {
  readonly project: Linear;
  constructor(store: ParamStore, dModel: number) {
    this.project = new Linear(store, 'cond.pitch', PITCH_FEATURES, dModel);
  }

  /** The features [B, PITCH_FEATURES] of log-F0 values [B] (0: unknown). */
  static features(refPitch: tf.Tensor1D): tf.Tensor2D {
    const known = tf.cast(tf.greater(refPitch, 0), 'float32');
    const octaves = tf.mul(tf.div(tf.sub(refPitch, CENTRE_LOG_HZ), Math.LN2), known);
    const columns = [known, octaves];
    for (const s of SCALES) {
      const x = tf.mul(octaves, s);
      columns.push(tf.mul(tf.sin(x), known), tf.mul(tf.cos(x), known));
    }
    return tf.stack(columns, 1) as tf.Tensor2D;
  }

  /** Latents [B·L, D] with each utterance's pitch vector added to its L latents. */
  apply(latents: tf.Tensor2D, refPitch: tf.Tensor1D): tf.Tensor2D {
    const batch = refPitch.shape[0];
    const [rows, dModel] = latents.shape;
    const vector = tf.reshape(this.project.apply(VoicePitch.features(refPitch)), [batch, 1, dModel]);
    return tf.reshape(tf.add(tf.reshape(latents, [batch, rows / batch, dModel]), vector), [
      rows,
      dModel,
    ]) as tf.Tensor2D;
  }
}
