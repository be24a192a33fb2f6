// The vocoder's matmul spectral transforms against the features' own numerics: the inverse STFT
// inverts a centred STFT exactly (edges included), magnitudes are RealFft's, and the log-mel is the
// features' MelExtractor's for the frames both compute.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { loadConfigOrThrow, presetPath } from '../../src/core/config/load.js';
import { RealFft } from '../../src/core/data/audio/fft.js';
import { MelExtractor, stftWindow } from '../../src/core/data/audio/mel.js';
import { Rng } from '../../src/core/model/init.js';
import { frameSignal, istft, logMel, stftMagnitude } from '../../src/core/vocoder/spectral.js';

const audio = loadConfigOrThrow(presetPath('vocoder-tiny')).config.audio;
const size = { nFft: audio.n_fft, hop: audio.hop_length, winLength: audio.win_length, window: audio.window };

function speechLike(samples: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(samples);
  for (let i = 0; i < samples; i++) {
    const f0 = 120 + 30 * Math.sin((2 * Math.PI * i) / 9000);
    let v = 0.05 * (rng.next() - 0.5);
    for (let h = 1; h <= 8; h++) v += (0.3 / h) * Math.sin((2 * Math.PI * f0 * h * i) / audio.sample_rate_hz);
    x[i] = v;
  }
  return x;
}

before(async () => {
  await tf.setBackend('cpu');
});

describe('vocoder spectral transforms', () => {
  it('istft inverts the centred STFT of the features exactly, first and last samples included', () => {
    const frames = 24;
    const x = speechLike(frames * size.hop, 3);
    const n = size.nFft;
    const bins = n / 2 + 1;
    const fft = new RealFft(n);
    const w = stftWindow(size.window, size.winLength, n);
    const spectrum = new Float32Array(frames * 2 * bins);
    const re = new Float64Array(n);
    const im = new Float64Array(n);
    const frame = new Float64Array(n);
    for (let t = 0; t < frames; t++) {
      // Frame t is centred on sample t·hop; outside the signal, zeros.
      for (let j = 0; j < n; j++) {
        const s = t * size.hop - n / 2 + j;
        frame[j] = s >= 0 && s < x.length ? x[s] : 0;
      }
      fft.forwardWindowed(frame, 0, w, re, im, bins);
      for (let k = 0; k < bins; k++) {
        spectrum[t * 2 * bins + k] = re[k];
        spectrum[t * 2 * bins + bins + k] = im[k];
      }
    }
    const y = tf.tidy(() => istft(tf.tensor3d(spectrum, [1, frames, 2 * bins]), size).dataSync());
    assert.equal(y.length, x.length);
    let worst = 0;
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(y[i] - x[i]));
    assert.ok(worst < 1e-4, `largest error ${worst}`);
  });

  it('stftMagnitude frames without padding and gives RealFft magnitudes', () => {
    const x = speechLike(8 * size.hop, 5);
    const mags = tf.tidy(() => stftMagnitude(tf.tensor2d(x, [1, x.length]), size).arraySync());
    assert.equal(mags.length, 8 - size.nFft / size.hop + 1);
    const fft = new RealFft(size.nFft);
    const re = new Float64Array(size.nFft);
    const im = new Float64Array(size.nFft);
    fft.forwardWindowed(
      Float64Array.from(x),
      2 * size.hop,
      stftWindow(size.window, size.winLength, size.nFft),
      re,
      im,
      513,
    );
    for (const k of [0, 10, 100, 512]) {
      const want = Math.hypot(re[k], im[k]);
      assert.ok(Math.abs(mags[2][k] - want) < 1e-3 * Math.max(1, want), `bin ${k}: ${mags[2][k]} vs ${want}`);
    }
    assert.throws(() => frameSignal(tf.zeros([1, 1000]) as tf.Tensor2D, size), /multiple of hop/);
  });

  it("logMel equals the features' log-mel where both frame the same samples", () => {
    const x = speechLike(40 * size.hop, 7);
    const ours = tf.tidy(() => logMel(tf.tensor2d(x, [1, x.length]), audio).arraySync());
    const extractor = new MelExtractor(audio);
    const frames = extractor.framesFor(x.length);
    const theirs = new Float32Array(frames * audio.n_mels);
    extractor.computeInto(x, theirs);
    // Our frame f starts at f·hop, so it is centred where the features' frame f + n_fft/(2·hop) is.
    const shift = size.nFft / (2 * size.hop);
    let worst = 0;
    for (let f = 0; f < ours.length; f++)
      for (let m = 0; m < audio.n_mels; m++)
        worst = Math.max(worst, Math.abs(ours[f][m] - theirs[(f + shift) * audio.n_mels + m]));
    assert.ok(worst < 1e-3, `largest log-mel difference ${worst}`);
  });
});
