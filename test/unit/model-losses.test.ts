// Loss terms against hand computations, and the property that matters most: a padded frame's
// prediction gets exactly zero gradient, through the postnet as well.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { computeLosses, guidedAttentionLoss, maskedMelLoss, stopTokenLoss } from '../../src/core/model/losses.js';
import { XttsModel } from '../../src/core/model/model.js';
import { lengthMask } from '../../src/core/model/nn.js';
import { PRESETS, shapeFor, SIZES, syntheticBatch, trainingConfig } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

const close = (a: number, b: number, tol = 1e-5) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} vs ${b}`);

describe('mel loss', () => {
  const lengths = [5, 2, 0];
  const pred = tf.randomNormal([3, 6, 4], 0, 1, 'float32', 1) as tf.Tensor3D;
  const target = tf.randomNormal([3, 6, 4], 0, 1, 'float32', 2) as tf.Tensor3D;
  const mask = tf.reshape(lengthMask(tf.tensor1d(lengths, 'int32'), 6), [3, 6, 1]) as tf.Tensor3D;
  const p = pred.arraySync();
  const t = target.arraySync();
  const manual = (f: (d: number) => number) => {
    let s = 0;
    lengths.forEach((n, b) => {
      for (let i = 0; i < n; i++) for (let m = 0; m < 4; m++) s += f(p[b][i][m] - t[b][i][m]);
    });
    return s / (7 * 4);
  };
  for (const [kind, f] of [
    ['l1', (d: number) => Math.abs(d)],
    ['l2', (d: number) => d * d],
    ['l1_l2', (d: number) => Math.abs(d) + d * d],
  ] as const) {
    it(`${kind}: mean over real frames and mel bins only`, () => {
      close(maskedMelLoss(pred, target, mask, kind, tf.scalar(7 * 4)).dataSync()[0], manual(f));
    });
  }

  it('gives a padded frame exactly zero gradient, also through the postnet', () => {
    const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 3 });
    const batch = syntheticBatch(shapeFor(PRESETS.tiny, 2, 6, 12), 4, { text: [6, 4], frames: [12, 7] });
    const out = model.forward(batch, { training: false });
    const loss = { ...trainingConfig().loss, mel: 'l1_l2' as const };
    const [grad] = tf.grads((pre: tf.Tensor) =>
      computeLosses({ ...out, melPre: pre as tf.Tensor3D, melPost: model.refine(pre as tf.Tensor3D, out.frameMask) }, batch, loss, 2).total,
    )([out.melPre]);
    const g = grad.arraySync() as number[][][];
    let realNonZero = 0;
    [12, 7].forEach((n, b) => {
      for (let f = 0; f < 12; f++) {
        for (const x of g[b][f]) {
          if (f >= n) assert.ok(x === 0, `utterance ${b} padded frame ${f} has gradient ${x}`);
          else if (x !== 0) realNonZero++;
        }
      }
    });
    assert.ok(realNonZero > 0.9 * 19 * SIZES.nMels, 'real frames do get gradient');
    model.dispose();
  });
});

describe('stop-token loss', () => {
  it('is BCE with logits, positives weighted, over real steps only', () => {
    const logits = [
      [-2, 0.5, 3, 7],
      [1, -1, 0, 2],
    ];
    const targets = [
      [0, 0, 1, 1],
      [0, 1, 1, 1],
    ];
    const steps = [3, 2];
    const posWeight = 5;
    let sum = 0;
    steps.forEach((n, b) => {
      for (let s = 0; s < n; s++) {
        const x = logits[b][s];
        const y = targets[b][s];
        const sig = 1 / (1 + Math.exp(-x));
        sum += -(posWeight * y * Math.log(sig) + (1 - y) * Math.log(1 - sig));
      }
    });
    const mask = lengthMask(tf.tensor1d(steps, 'int32'), 4);
    close(stopTokenLoss(tf.tensor2d(logits), tf.tensor2d(targets), mask, posWeight).dataSync()[0], sum / 5);
    // Stable for large logits (no log(0)).
    assert.ok(Number.isFinite(stopTokenLoss(tf.tensor2d([[200, -200]]), tf.tensor2d([[0, 1]]), tf.ones([1, 2]) as tf.Tensor2D, 5).dataSync()[0]));
  });
});

describe('guided attention loss', () => {
  it('is Tachibana et al.\'s W[n,t] weighted attention over valid (step, token) pairs', () => {
    const sigma = 0.2;
    const textLengths = [4, 3];
    const stepLengths = [5, 2];
    const a = tf.randomUniform([2, 6, 5], 0, 1, 'float32', 8) as tf.Tensor3D;
    const av = a.arraySync();
    let sum = 0;
    let count = 0;
    for (let b = 0; b < 2; b++) {
      for (let t = 0; t < stepLengths[b]; t++) {
        for (let n = 0; n < textLengths[b]; n++) {
          const w = 1 - Math.exp(-((n / textLengths[b] - t / stepLengths[b]) ** 2) / (2 * sigma * sigma));
          sum += w * av[b][t][n];
          count++;
        }
      }
    }
    const loss = guidedAttentionLoss([a, a], tf.tensor1d(textLengths, 'int32'), tf.tensor1d(stepLengths, 'float32'), sigma);
    close(loss.dataSync()[0], sum / count);
  });

  it('is small for a diagonal alignment and large for an anti-diagonal one', () => {
    const steps = 20;
    const tokens = 10;
    const make = (f: (t: number) => number) =>
      tf.tensor3d([Array.from({ length: steps }, (_, t) => Array.from({ length: tokens }, (_, n) => (n === f(t) ? 1 : 0)))]);
    const of = (x: tf.Tensor3D) => guidedAttentionLoss([x], tf.tensor1d([tokens], 'int32'), tf.tensor1d([steps], 'float32'), 0.2).dataSync()[0];
    const diagonal = of(make((t) => Math.floor((t * tokens) / steps)));
    const anti = of(make((t) => tokens - 1 - Math.floor((t * tokens) / steps)));
    assert.ok(diagonal < 0.005, `diagonal ${diagonal}`);
    assert.ok(anti > 20 * diagonal, `anti-diagonal ${anti}`);
  });
});
