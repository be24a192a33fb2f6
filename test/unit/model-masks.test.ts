// Masks, tested directly: a padded key gets exactly zero attention weight; padded tokens, padded
// reference frames and padded target frames change nothing; a decoder step never sees a later frame.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { attend } from '../../src/core/model/attention.js';
import { computeLosses } from '../../src/core/model/losses.js';
import { XttsModel } from '../../src/core/model/model.js';
import { keyPaddingBias } from '../../src/core/model/nn.js';
import { maxAbsDiff, PRESETS, shapeFor, SIZES, syntheticBatch, trainingConfig, withTensors } from './model-fixtures.js';

const config = { ...PRESETS.tiny, dropout: 0.1 };
let model: XttsModel;

before(async () => {
  await tf.setBackend('cpu');
  // Prenet dropout off so that two forward passes see the same inputs (block dropout is off at inference).
  model = new XttsModel(config, SIZES, { seed: 7, prenetDropout: 0 });
});
after(() => model.dispose());

describe('attention masks', () => {
  it('gives a padded key exactly zero weight and real keys weights summing to 1', () => {
    const lengths = tf.tensor1d([3, 6, 1], 'int32');
    const q = tf.randomNormal([3, 2, 5, 8], 0, 3, 'float32', 1) as tf.Tensor4D;
    const k = tf.randomNormal([3, 2, 6, 8], 0, 3, 'float32', 2) as tf.Tensor4D;
    const v = tf.randomNormal([3, 2, 6, 8], 0, 1, 'float32', 3) as tf.Tensor4D;
    const { weights } = attend(q, k, v, keyPaddingBias(lengths, 6));
    const w = weights.arraySync() as number[][][][];
    [3, 6, 1].forEach((len, b) => {
      for (const head of w[b]) {
        for (const row of head) {
          for (let key = len; key < 6; key++)
            assert.equal(row[key], 0, `utterance ${b} key ${key} (padded) has weight ${row[key]}`);
          assert.ok(Math.abs(row.slice(0, len).reduce((a, x) => a + x, 0) - 1) < 1e-6);
          assert.ok(row.slice(0, len).every((x) => x > 0));
        }
      }
    });
  });

  it('reads at each step the token the alignment gives it, and no other', () => {
    const batch = syntheticBatch(shapeFor(config, 2, 10, 16), 11, { text: [10, 7], frames: [16, 16] });
    const base = model.forward(batch, { training: false });
    // Move step 3 of utterance 0 to another symbol: the text's frames change at that step only.
    const path = batch.alignment.steps.arraySync() as number[][];
    path[0][3] = path[0][3] === 4 ? 5 : 4;
    const moved = model.forward(
      { ...batch, alignment: { ...batch.alignment, steps: tf.tensor2d(path, [2, 8], 'int32') } },
      { training: false },
    );
    const r = config.reduction_factor;
    const diff = tf.sum(tf.abs(tf.sub(base.textMel, moved.textMel)), 2).arraySync() as number[][];
    diff[0].forEach((d, f) =>
      Math.floor(f / r) === 3
        ? assert.ok(d > 1e-4, `frame ${f} did not change`)
        : assert.equal(d, 0, `frame ${f} changed`),
    );
    assert.ok(diff[1].every((d) => d === 0));
    // The decoder reads the other symbol too: its frames move from step 3 on, not before.
    const pre = tf.sum(tf.abs(tf.sub(base.melPre, moved.melPre)), 2).arraySync() as number[][];
    pre[0].forEach((d, f) => (Math.floor(f / r) < 3 ? assert.ok(d <= 1e-6, `frame ${f} moved`) : undefined));
    assert.ok(pre[0].slice(3 * r).some((d) => d > 1e-4));
  });

  it('ignores padded tokens and padded reference frames bit for bit', () => {
    const batch = syntheticBatch(shapeFor(config, 2, 10, 16, 12), 12, { text: [5, 8] });
    const base = model.forward(batch, { training: false });
    const tokens = batch.tokens.arraySync() as number[][];
    tokens[0] = tokens[0].map((t, i) => (i >= 5 ? 1 + ((t + 7 * i) % (SIZES.vocabSize - 1)) : t));
    tokens[1] = tokens[1].map((t, i) => (i >= 8 ? 3 : t));
    const refLengths = batch.refLengths.arraySync() as number[];
    const refMel = tf.tidy(() => {
      const mask = tf.less(
        tf.reshape(tf.range(0, 12), [1, 12, 1]),
        tf.reshape(tf.cast(batch.refLengths, 'float32'), [2, 1, 1]),
      );
      return tf.where(mask, batch.refMel, tf.fill(batch.refMel.shape, 9.5)) as tf.Tensor3D;
    });
    assert.ok(
      refLengths.some((n) => n < 12),
      'the batch has padded reference frames',
    );
    const perturbed = model.forward(withTensors(batch, { tokens: tf.tensor2d(tokens, [2, 10], 'int32'), refMel }), {
      training: false,
    });
    assert.equal(maxAbsDiff(base.melPre, perturbed.melPre), 0);
    assert.equal(maxAbsDiff(base.melPost!, perturbed.melPost!), 0);
    // Durations of the real tokens too (utterance 0 has 5, utterance 1 has 8).
    assert.equal(
      maxAbsDiff(tf.slice(base.logDurations, [0, 0], [1, 5]), tf.slice(perturbed.logDurations, [0, 0], [1, 5])),
      0,
    );
    assert.equal(
      maxAbsDiff(tf.slice(base.logDurations, [1, 0], [1, 8]), tf.slice(perturbed.logDurations, [1, 0], [1, 8])),
      0,
    );
  });

  it('never lets a decoder step see a later frame', () => {
    const r = config.reduction_factor;
    const batch = syntheticBatch(shapeFor(config, 2, 8, 24), 13, { text: [8, 8], frames: [24, 24] });
    const base = model.forward(batch, { training: false });
    for (const k of [1, 5, 10]) {
      // Change every frame from group k on; step s reads group s − 1, so steps 0..k must not move.
      const mel = tf.tidy(() => {
        const frame = tf.reshape(tf.range(0, 24), [1, 24, 1]);
        return tf.where(tf.greaterEqual(frame, k * r), tf.add(batch.mel, tf.scalar(3)), batch.mel) as tf.Tensor3D;
      });
      const out = model.forward(withTensors(batch, { mel }), { training: false });
      const keepFrames = (k + 1) * r;
      const pre = tf.slice(base.melPre, [0, 0, 0], [2, keepFrames, SIZES.nMels]);
      const prePerturbed = tf.slice(out.melPre, [0, 0, 0], [2, keepFrames, SIZES.nMels]);
      assert.ok(maxAbsDiff(pre, prePerturbed) <= 1e-6, `frames before ${keepFrames} moved when groups ≥ ${k} changed`);
      // And the perturbation does reach the later steps (the test can fail).
      assert.ok(
        maxAbsDiff(
          tf.slice(base.melPre, [0, keepFrames, 0], [2, 24 - keepFrames, SIZES.nMels]),
          tf.slice(out.melPre, [0, keepFrames, 0], [2, 24 - keepFrames, SIZES.nMels]),
        ) > 1e-3,
      );
    }
  });

  it('gives padded target frames no say in the loss', () => {
    const loss = trainingConfig().loss;
    const batch = syntheticBatch(shapeFor(config, 2, 8, 24), 14, { text: [8, 5], frames: [24, 10] });
    const lossOf = (b: typeof batch) =>
      computeLosses(model.forward(b, { training: false }), b, { ...loss, mel: 'l1_l2' }).total.dataSync()[0];
    const mel = tf.tidy(() => {
      const frame = tf.reshape(tf.range(0, 24), [1, 24, 1]);
      return tf.where(
        tf.greaterEqual(frame, tf.reshape(tf.cast(batch.melLengths, 'float32'), [2, 1, 1])),
        tf.fill(batch.mel.shape, -4),
        batch.mel,
      ) as tf.Tensor3D;
    });
    assert.ok(Math.abs(lossOf(batch) - lossOf(withTensors(batch, { mel }))) <= 1e-6);
  });

  it('keeps a filler utterance (no frames, no text) finite', () => {
    const batch = syntheticBatch(shapeFor(config, 2, 8, 16), 15, { text: [6, 0], frames: [16, 0] });
    const out = model.forward(batch, { training: false });
    const parts = computeLosses(out, batch, trainingConfig().loss);
    for (const t of [
      out.melPre,
      out.melPost!,
      out.textMel,
      out.logDurations,
      parts.total,
      parts.duration,
      parts.alignedText,
    ])
      assert.ok(tf.all(tf.isFinite(t)).dataSync()[0] === 1);
  });
});
