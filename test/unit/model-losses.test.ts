// Loss terms against hand computations, and the property that matters most: a padded frame's
// prediction gets exactly zero gradient, through the postnet as well.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { computeLosses, durationLoss, maskedMelLoss } from '../../src/core/model/losses.js';
import { XttsModel } from '../../src/core/model/model.js';
import { lengthMask } from '../../src/core/model/nn.js';
import { PRESETS, shapeFor, SIZES, syntheticBatch, trainingConfig } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

const close = (a: number, b: number, tol = 1e-5) =>
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} vs ${b}`);

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
    const [grad] = tf.grads(
      (pre: tf.Tensor) =>
        computeLosses(
          { ...out, melPre: pre as tf.Tensor3D, melPost: model.refine(pre as tf.Tensor3D, out.frameMask) },
          batch,
          loss,
        ).total,
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

describe('duration loss', () => {
  it('is the squared error of log(1 + steps) over the tokens that take steps only', () => {
    const predicted = tf.tensor2d([
      [0.3, -1, 1.2, 0.7, 4],
      [2, 0.1, 0.5, 9, 9],
    ]);
    // Row 0: tokens 2 and 3 take 3 and 1 steps; row 1: token 2 takes 2 steps; the rest take none.
    const durations = tf.tensor2d([
      [0, 0, 3, 1, 0],
      [0, 0, 2, 0, 0],
    ]);
    const manual = ((1.2 - Math.log(4)) ** 2 + (0.7 - Math.log(2)) ** 2 + (0.5 - Math.log(3)) ** 2) / 3;
    close(durationLoss(predicted, durations).dataSync()[0], manual);
  });

  it('gives no gradient to tokens that take no steps (specials, padding, filler utterances)', () => {
    const predicted = tf.tensor2d([[0.3, -1, 1.2, 0.7, 4]]);
    const [g] = tf.grads((p: tf.Tensor) => durationLoss(p as tf.Tensor2D, tf.tensor2d([[0, 0, 3, 1, 0]])))([predicted]);
    const grad = g.arraySync() as number[][];
    assert.ok(
      [grad[0][0], grad[0][1], grad[0][4]].every((x) => x === 0),
      String(grad[0]),
    );
    assert.ok(grad[0][2] !== 0 && grad[0][3] !== 0);
  });
});
