// The vocoder's discriminators (vocoder.adversarial): the strided and 2-D convolutions they are built
// from against a direct loop over the taps, their parameter counts, the LSGAN and feature-matching
// losses on known values, gradients that reach every discriminator parameter and the generator's wave,
// and a few discriminator steps that learn to tell a sine from noise.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '../../src/core/model/gradients.js';
import { initWasm } from '../../src/core/backend/wasm.js';
import {
  adversarialLoss,
  countDiscriminatorParameters,
  discriminatorLoss,
  Discriminators,
  featureMatchingLoss,
  lossResolutions,
  stridedConv1d,
} from '../../src/core/vocoder/index.js';

before(async () => {
  const wasm = await initWasm(tf);
  assert.ok(wasm.ok, JSON.stringify(wasm));
});

/** Direct strided convolution: out[n, t, o] = b[o] + Σ_k Σ_c w[k, c, o]·x[n, s·t + k − h, c]. */
function reference(x: number[][][], w: number[][][], b: number[], stride: number): number[][][] {
  const half = (w.length - 1) / 2;
  const length = x[0].length;
  const outLength = Math.ceil(length / stride);
  return x.map((seq) =>
    Array.from({ length: outLength }, (_, t) =>
      b.map((bias, o) => {
        let sum = bias;
        w.forEach((tap, k) => {
          const i = stride * t + k - half;
          if (i >= 0 && i < length) tap.forEach((row, c) => (sum += row[o] * seq[i][c]));
        });
        return sum;
      }),
    ),
  );
}

const random = (shape: number[], seed: number) => tf.randomUniform(shape, -1, 1, 'float32', seed);

describe('vocoder discriminators', () => {
  for (const [kernel, stride, length] of [
    [5, 3, 31],
    [5, 3, 30],
    [5, 1, 12],
    [9, 2, 17],
    [3, 2, 8],
    [3, 1, 5],
    [7, 4, 23],
  ]) {
    it(`a stride-${stride} convolution of kernel ${kernel} over ${length} positions equals the direct sum`, () => {
      const x = random([2, length, 3], kernel * 10 + stride);
      const w = random([kernel, 3, 4], length);
      const b = random([4], 7);
      const got = stridedConv1d(x as tf.Tensor3D, w as tf.Tensor3D, b as tf.Tensor1D, stride);
      const want = reference(
        x.arraySync() as number[][][],
        w.arraySync() as number[][][],
        b.arraySync() as number[],
        stride,
      );
      assert.deepEqual(got.shape, [2, Math.ceil(length / stride), 4]);
      const g = got.arraySync() as number[][][];
      g.forEach((seq, n) =>
        seq.forEach((row, t) => row.forEach((v, o) => assert.ok(Math.abs(v - want[n][t][o]) < 1e-5))),
      );
      tf.dispose([x, w, b, got]);
    });
  }

  it('the parameter count follows the shape (HiFi-GAN widths at period_channels 1024)', () => {
    const audio = { n_fft: 1024 };
    const sizes = lossResolutions(audio);
    // One period, no resolutions: 5·1·32+32 + 5·32·128+128 + 5·128·512+512 + 5·512·1024+1024
    // + 5·1024·1024+1024
    // + 3·1024+1 = 8,218,433: HiFi-GAN's period discriminator (its 5 periods' 41 M) without weight norm's gains.
    const period = { periods: [2], period_channels: 1024, resolution_channels: 32 };
    assert.equal(countDiscriminatorParameters(period, []), 8_218_433);
    // One resolution at 32 channels: 9·3·1·32+32 + 3·(9·3·32·32+32) + (3·3·32·32+32) + (3·3·32·1+1).
    const one = countDiscriminatorParameters({ periods: [], period_channels: 32, resolution_channels: 32 }, [sizes[0]]);
    assert.equal(one, 9 * 3 * 32 + 32 + 3 * (9 * 3 * 32 * 32 + 32) + (3 * 3 * 32 * 32 + 32) + (3 * 3 * 32 + 1));
  });

  it('the LSGAN and feature-matching losses have their known values', () => {
    const j = (score: number[], f: number[]) => ({ score: tf.tensor1d(score), features: [tf.tensor1d(f)] });
    const real = [j([1, 0.5], [1, 2]), j([0, 0], [0, 0])];
    const fake = [j([0, 0.5], [1, 0]), j([1, 1], [3, 3])];
    // D: ((0 + 0.25)/2 + (0 + 0.25)/2 + (1 + 1)/2 + (1 + 1)/2) / 2 = (0.25 + 2) / 2
    assert.ok(Math.abs(discriminatorLoss(real, fake).arraySync() - 1.125) < 1e-6);
    // G: ((1 + 0.25)/2 + 0) / 2
    assert.ok(Math.abs(adversarialLoss(fake).arraySync() - 0.3125) < 1e-6);
    // FM: (|0| + |2|)/2 = 1 and (3 + 3)/2 = 3: mean 2
    assert.ok(Math.abs(featureMatchingLoss(real, fake).arraySync() - 2) < 1e-6);
  });

  it('gradients reach every discriminator parameter and the judged wave; a few steps tell a sine from noise', () => {
    const sizes = lossResolutions({ n_fft: 256 });
    const disc = new Discriminators({ periods: [2, 3], period_channels: 64, resolution_channels: 8 }, sizes, 5);
    assert.deepEqual(disc.names, ['period2', 'period3', 'resolution128', 'resolution256', 'resolution512']);
    const samples = 2048;
    const sine = tf.tensor2d(
      Array.from({ length: 2 * samples }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 220 * (i % samples)) / 16000)),
      [2, samples],
    );
    const noise = tf.mul(random([2, samples], 3), 0.5) as tf.Tensor2D;
    const { grads } = tf.variableGrads(
      () => discriminatorLoss(disc.judge(sine), disc.judge(noise)),
      [...disc.params.values()],
    );
    for (const [name, g] of Object.entries(grads)) {
      const norm = tf.norm(g).arraySync() as number;
      assert.ok(Number.isFinite(norm) && norm > 0, `${name}: gradient norm ${norm}`);
    }
    tf.dispose(Object.values(grads));
    const wave = tf.variable(noise, true);
    const toWave = tf.grads((w: tf.Tensor) => adversarialLoss(disc.judge(w as tf.Tensor2D)))([wave]);
    const waveNorm = tf.norm(toWave[0]).arraySync() as number;
    assert.ok(Number.isFinite(waveNorm) && waveNorm > 0, `the wave's gradient norm ${waveNorm}`);
    const optimizer = tf.train.adam(1e-3);
    const lossOf = () => discriminatorLoss(disc.judge(sine), disc.judge(noise));
    const first = lossOf().arraySync();
    for (let i = 0; i < 15; i++) optimizer.minimize(lossOf, false, [...disc.params.values()]);
    const last = lossOf().arraySync();
    assert.ok(last < first / 2, `the discriminator's loss went from ${first} to ${last}`);
    disc.dispose();
    tf.dispose([sine, noise, wave, ...toWave]);
  });
});
