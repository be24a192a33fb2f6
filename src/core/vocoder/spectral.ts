// The vocoder's spectral transforms, written as matmuls so that they run and differentiate on every
// backend (tfjs has no gradient for its FFT kernels, and wasm has none of them): a frame's DFT is one
// product with a [n_fft, 2·bins] basis (window folded in), its inverse one product with a
// [2·bins, n_fft] basis (the synthesis window and the 1/N and 2× half-spectrum weights folded in).
// Every FFT size must be a multiple of its hop, so framing is a reshape and n_fft/hop slices and
// overlap-add is n_fft/hop pads and a sum: no gather, no scatter.
//
// The inverse STFT follows the features' framing (data/audio/mel.ts: centred frames, frame t covers
// samples t·hop − n_fft/2 …): the output of T frames is T·hop samples, sample 0 under frame 0's centre,
// so a segment of mel frames t0 … t0+T−1 gives samples t0·hop … (t0+T)·hop − 1 of the clip. Overlap-
// added frames are divided by the sum of the squared synthesis windows over them (least-squares
// ISTFT, Griffin & Lim 1984), which is exact for the frames present, edges included.
import * as tf from '@tensorflow/tfjs-core';
import type { AudioConfig } from '../config/index.js';
import { melFilterbank, stftWindow } from '../data/index.js';
import { cachedConstant, scalar } from '../model/index.js';

/** The STFT settings a transform needs. */
export interface StftSize {
  nFft: number;
  hop: number;
  /** Window length (≤ nFft; centred in nFft as the features' window is). */
  winLength: number;
  window: 'hann' | 'hamming';
}

/** How many frames of `hop` one window spans; nFft must be a multiple of hop. */
export function framesPerWindow(s: Pick<StftSize, 'nFft' | 'hop'>): number {
  if (s.nFft % s.hop !== 0) throw new Error(`n_fft ${s.nFft} is not a multiple of hop ${s.hop}`);
  return s.nFft / s.hop;
}

function sizeKey(s: StftSize): string {
  return `${s.nFft}/${s.hop}/${s.winLength}/${s.window}`;
}

/** [nFft, 2·bins]: window·cos | −window·sin, so frames × basis = [Re X | Im X]. */
function analysisBasis(s: StftSize): tf.Tensor2D {
  return cachedConstant(`vocoder:dft:${sizeKey(s)}`, () => {
    const n = s.nFft;
    const bins = n / 2 + 1;
    const w = stftWindow(s.window, s.winLength, n);
    const v = new Float32Array(n * 2 * bins);
    for (let j = 0; j < n; j++)
      for (let k = 0; k < bins; k++) {
        const a = (2 * Math.PI * ((j * k) % n)) / n;
        v[j * 2 * bins + k] = w[j] * Math.cos(a);
        v[j * 2 * bins + bins + k] = -w[j] * Math.sin(a);
      }
    return tf.tensor2d(v, [n, 2 * bins]);
  }) as tf.Tensor2D;
}

/** [2·bins, nFft]: the real inverse DFT of a half spectrum [Re | Im], times the synthesis window. */
function synthesisBasis(s: StftSize): tf.Tensor2D {
  return cachedConstant(`vocoder:idft:${sizeKey(s)}`, () => {
    const n = s.nFft;
    const bins = n / 2 + 1;
    const w = stftWindow(s.window, s.winLength, n);
    const v = new Float32Array(2 * bins * n);
    for (let k = 0; k < bins; k++) {
      // Bins 0 and n/2 appear once in the full spectrum, every other bin twice (with its conjugate).
      const weight = (k === 0 || k === bins - 1 ? 1 : 2) / n;
      for (let j = 0; j < n; j++) {
        const a = (2 * Math.PI * ((j * k) % n)) / n;
        v[k * n + j] = weight * Math.cos(a) * w[j];
        v[(bins + k) * n + j] = -weight * Math.sin(a) * w[j];
      }
    }
    return tf.tensor2d(v, [2 * bins, n]);
  }) as tf.Tensor2D;
}

/** 1 / Σ_t w²(p − t·hop) over the overlap-added positions p of `frames` frames, cropped as istft crops. */
function inverseEnvelope(s: StftSize, frames: number): tf.Tensor1D {
  return cachedConstant(`vocoder:envelope:${sizeKey(s)}:${frames}`, () => {
    const w = stftWindow(s.window, s.winLength, s.nFft);
    const total = (frames + framesPerWindow(s) - 1) * s.hop;
    const env = new Float64Array(total);
    for (let t = 0; t < frames; t++) for (let j = 0; j < s.nFft; j++) env[t * s.hop + j] += w[j] * w[j];
    const out = new Float32Array(frames * s.hop);
    for (let i = 0; i < out.length; i++) {
      const e = env[i + s.nFft / 2];
      out[i] = e > 1e-8 ? 1 / e : 0;
    }
    return tf.tensor1d(out);
  }) as tf.Tensor1D;
}

/** Frames of `samples` samples without padding (samples a multiple of hop and at least nFft). */
export function stftFrames(samples: number, s: Pick<StftSize, 'nFft' | 'hop'>): number {
  return (samples - s.nFft) / s.hop + 1;
}

/**
 * Frames of a signal without padding: [batch, samples] -> [batch, frames, nFft], frame f covering
 * samples f·hop … f·hop + nFft − 1; samples must be a multiple of hop and at least nFft.
 */
export function frameSignal(x: tf.Tensor2D, s: Pick<StftSize, 'nFft' | 'hop'>): tf.Tensor3D {
  const [batch, samples] = x.shape;
  const r = framesPerWindow(s);
  if (samples % s.hop !== 0 || samples < s.nFft)
    throw new Error(`${samples} samples: not a multiple of hop ${s.hop} of at least n_fft ${s.nFft}`);
  const chunks = samples / s.hop;
  const frames = stftFrames(samples, s);
  const c = tf.reshape(x, [batch, chunks, s.hop]);
  if (r === 1) return c as tf.Tensor3D;
  const parts = Array.from({ length: r }, (_, k) => tf.slice(c, [0, k, 0], [batch, frames, s.hop]));
  return tf.concat(parts, 2) as tf.Tensor3D;
}

/** STFT magnitudes of a signal (no padding): [batch, samples] -> [batch·frames, bins]. */
export function stftMagnitude(x: tf.Tensor2D, s: StftSize): tf.Tensor2D {
  const framed = frameSignal(x, s);
  const [batch, frames] = framed.shape;
  const bins = s.nFft / 2 + 1;
  const spec = tf.matMul(tf.reshape(framed, [batch * frames, s.nFft]), analysisBasis(s));
  const re = tf.slice(spec, [0, 0], [batch * frames, bins]);
  const im = tf.slice(spec, [0, bins], [batch * frames, bins]);
  // The small floor keeps sqrt's gradient finite where a bin is exactly 0 (digital silence).
  return tf.sqrt(tf.add(tf.add(tf.square(re), tf.square(im)), scalar(1e-9))) as tf.Tensor2D;
}

/**
 * Inverse STFT of half spectra [batch, frames, 2·bins] ([Re | Im] per frame) -> [batch, frames·hop],
 * framed as the features are (see the header).
 */
export function istft(spectrum: tf.Tensor3D, s: StftSize): tf.Tensor2D {
  const [batch, frames, width] = spectrum.shape;
  const r = framesPerWindow(s);
  const time = tf.matMul(tf.reshape(spectrum, [batch * frames, width]), synthesisBasis(s));
  // Overlap-add: part k of frame t lands on hop-block t + k.
  const blocks = tf.reshape(time, [batch, frames, r, s.hop]);
  const shifted = Array.from({ length: r }, (_, k) =>
    tf.pad(tf.reshape(tf.slice(blocks, [0, 0, k, 0], [batch, frames, 1, s.hop]), [batch, frames, s.hop]), [
      [0, 0],
      [k, r - 1 - k],
      [0, 0],
    ]),
  );
  const summed = tf.reshape(r === 1 ? shifted[0] : tf.addN(shifted), [batch, (frames + r - 1) * s.hop]);
  const cropped = tf.slice(summed, [0, s.nFft / 2], [batch, frames * s.hop]);
  return tf.mul(cropped, inverseEnvelope(s, frames)) as tf.Tensor2D;
}

/** The features' STFT size of an audio config. */
export function featureStft(audio: Pick<AudioConfig, 'n_fft' | 'hop_length' | 'win_length' | 'window'>): StftSize {
  return { nFft: audio.n_fft, hop: audio.hop_length, winLength: audio.win_length, window: audio.window };
}

/** [bins, nMels]: the features' mel filterbank as a dense matrix. */
function melBasis(audio: AudioConfig): tf.Tensor2D {
  const key = [audio.sample_rate_hz, audio.n_fft, audio.n_mels, audio.fmin_hz, audio.fmax_hz, audio.mel_scale];
  return cachedConstant(`vocoder:mel:${key.join('/')}:${audio.mel_norm}`, () => {
    const bins = audio.n_fft / 2 + 1;
    const v = new Float32Array(bins * audio.n_mels);
    melFilterbank(audio).forEach((f, m) => {
      f.weights.forEach((w, j) => {
        v[(f.start + j) * audio.n_mels + m] = w;
      });
    });
    return tf.tensor2d(v, [bins, audio.n_mels]);
  }) as tf.Tensor2D;
}

/**
 * Log-mel of a signal as the features compute it (magnitude, floor, log base), without padding:
 * [batch·frames, nMels].
 */
export function logMel(x: tf.Tensor2D, audio: AudioConfig): tf.Tensor2D {
  const mel = tf.matMul(stftMagnitude(x, featureStft(audio)), melBasis(audio));
  const ln = tf.log(tf.maximum(mel, scalar(audio.log_floor)));
  return (audio.log_base === '10' ? tf.mul(ln, scalar(1 / Math.LN10)) : ln) as tf.Tensor2D;
}
