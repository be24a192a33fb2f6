// What the vocoder is trained to match: the real waveform's spectra. Two reconstruction losses, both
// on magnitudes (a waveform loss would punish any phase that is not the recording's, though many
// sound the same):
// - mel: L1 between the log-mels of the output and of the real segment, at the features' own settings
//   (HiFi-GAN's mel loss, Kong et al. 2020; Vocos's);
// - multi-resolution STFT: spectral convergence ‖|S| − |Ŝ|‖_F / ‖|S|‖_F plus L1 of the log-magnitudes
//   at three FFT sizes (n_fft/2, n_fft, 2·n_fft, hop a quarter of each), averaged (Yamamoto et al. 2020,
//   Parallel WaveGAN), which ties the phase of neighbouring frames to each other at every resolution.
import * as tf from '@tensorflow/tfjs-core';
import type { AudioConfig, VocoderConfig } from '../config/index.js';
import { scalar } from '../model/index.js';
import { logMel, stftMagnitude, type StftSize } from './spectral.js';

export interface VocoderLossParts {
  /** The weighted sum the optimizer minimises. */
  loss: tf.Scalar;
  mel: tf.Scalar;
  spectralConvergence: tf.Scalar;
  logMagnitude: tf.Scalar;
}

/** The three STFT sizes of the multi-resolution loss for an n_fft. */
export function lossResolutions(audio: Pick<AudioConfig, 'n_fft'>): StftSize[] {
  return [audio.n_fft / 2, audio.n_fft, audio.n_fft * 2].map((n) => ({
    nFft: n,
    hop: n / 4,
    winLength: n,
    window: 'hann' as const,
  }));
}

/** predicted, target: [batch, samples] (samples a multiple of 2·n_fft / 4 and at least 2·n_fft). */
export function vocoderLosses(
  predicted: tf.Tensor2D,
  target: tf.Tensor2D,
  audio: AudioConfig,
  weights: Pick<VocoderConfig, 'mel_loss_weight' | 'stft_loss_weight'>,
): VocoderLossParts {
  const mel = tf.mean(tf.abs(tf.sub(logMel(predicted, audio), logMel(target, audio)))) as tf.Scalar;
  const sc: tf.Scalar[] = [];
  const lm: tf.Scalar[] = [];
  for (const size of lossResolutions(audio)) {
    const p = stftMagnitude(predicted, size);
    const t = stftMagnitude(target, size);
    const diff = tf.sub(t, p);
    sc.push(tf.div(tf.sqrt(tf.sum(tf.square(diff))), tf.sqrt(tf.sum(tf.square(t)))) as tf.Scalar);
    lm.push(tf.mean(tf.abs(tf.sub(tf.log(t), tf.log(p)))) as tf.Scalar);
  }
  const third = scalar(1 / sc.length);
  const spectralConvergence = tf.mul(tf.addN(sc), third) as tf.Scalar;
  const logMagnitude = tf.mul(tf.addN(lm), third) as tf.Scalar;
  const loss = tf.add(
    tf.mul(mel, scalar(weights.mel_loss_weight)),
    tf.mul(tf.add(spectralConvergence, logMagnitude), scalar(weights.stft_loss_weight)),
  ) as tf.Scalar;
  return { loss, mel, spectralConvergence, logMagnitude };
}
