// Shapes of every preset, parameter counts, seeded initialisation, weights by name, and free-running
// generation (which must agree with the teacher-forced pass on its own output).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { isXttsError } from '../../src/core/errors.js';
import { countParameters, XttsModel } from '../../src/core/model/model.js';
import { maxAbsDiff, PRESETS, shapeFor, SIZES, syntheticBatch, syntheticHostBatch } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

describe('presets', () => {
  // The table in src/core/model/model.ts's header (vocabulary 160, 80 mels, 1 language).
  const documented = { tiny: 1_648_113, small: 10_785_009, normal: 62_002_417, big: 422_761_713 };
  for (const preset of ['tiny', 'small', 'normal', 'big'] as const) {
    it(`${preset}: ${documented[preset].toLocaleString('en')} parameters as documented; forward shapes on a small batch`, () => {
      assert.equal(countParameters(PRESETS[preset], { vocabSize: 160, nMels: 80, numLanguages: 1 }), documented[preset]);
      const config = PRESETS[preset];
      const model = new XttsModel(config, SIZES, { seed: 1 });
      try {
        assert.equal(model.parameterCount(), countParameters(config, SIZES));
        assert.equal([...model.getWeights().values()].reduce((n, t) => n + t.size, 0), model.parameterCount());
        // Short sequences, and one utterance for big: its forward pass is still ~4 GFLOP (mostly the
        // 32 latents and the text through every layer's cross-attention keys), ~10 s on tfjs-cpu here.
        const utterances = preset === 'big' ? 1 : 2;
        const batch = syntheticBatch(shapeFor(config, utterances, 5, 8, 6), 3);
        tf.tidy(() => {
          const out = model.forward(batch, { training: preset !== 'big', attention: true });
          assert.deepEqual(out.melPre.shape, [utterances, 8, SIZES.nMels]);
          assert.deepEqual(out.melPost!.shape, [utterances, 8, SIZES.nMels]);
          assert.deepEqual(out.stopLogits.shape, [utterances, 4]);
          assert.deepEqual(out.frameMask.shape, [utterances, 8, 1]);
          assert.equal(out.textAttention!.length, config.decoder_layers);
          for (const a of out.textAttention!) assert.deepEqual(a.shape, [utterances, 4, 5]);
          assert.equal(tf.all(tf.isFinite(out.melPost!)).dataSync()[0], 1);
        });
      } finally {
        model.dispose();
      }
    });
  }

  it('rejects heads that do not divide d_model, and an even postnet kernel', () => {
    assert.throws(() => new XttsModel({ ...PRESETS.tiny, heads: 3 }, SIZES), (e) => isXttsError(e) && e.code === 'model_config_invalid' && /heads/.test(e.message));
    assert.throws(() => new XttsModel({ ...PRESETS.tiny, postnet_kernel: 4 }, SIZES), (e) => isXttsError(e) && /postnet_kernel/.test(e.message));
  });

  it('takes a single language (a one-entry language table)', () => {
    const model = new XttsModel(PRESETS.tiny, { ...SIZES, numLanguages: 1 }, { seed: 1 });
    const batch = syntheticBatch({ ...shapeFor(PRESETS.tiny, 2, 4, 8), numLanguages: 1 }, 1);
    const out = model.forward(batch, { training: false });
    assert.equal(tf.all(tf.isFinite(out.melPost!)).dataSync()[0], 1);
    model.dispose();
  });

  it('runs without a postnet (postnet_layers 0)', () => {
    const model = new XttsModel({ ...PRESETS.tiny, postnet_layers: 0 }, SIZES, { seed: 1 });
    const out = model.forward(syntheticBatch(shapeFor(PRESETS.tiny, 1, 4, 8), 1), { training: false });
    assert.equal(out.melPost, null);
    model.dispose();
  });
});

describe('initialisation', () => {
  it('is a function of the seed: same seed, identical weights; another seed, different weights', () => {
    const a = new XttsModel(PRESETS.tiny, SIZES, { seed: 42 });
    const b = new XttsModel(PRESETS.tiny, SIZES, { seed: 42 });
    const c = new XttsModel(PRESETS.tiny, SIZES, { seed: 43 });
    const wa = a.getWeights();
    const wb = b.getWeights();
    const wc = c.getWeights();
    assert.deepEqual([...wa.keys()], [...wb.keys()]);
    let differing = 0;
    let random = 0;
    for (const [name, t] of wa) {
      assert.equal(maxAbsDiff(t, wb.get(name)!), 0, `${name} differs between two models of seed 42`);
      const ones = tf.tidy(() => tf.all(tf.equal(t, tf.onesLike(t))).dataSync()[0] === 1);
      const zeros = tf.tidy(() => tf.all(tf.equal(t, tf.zerosLike(t))).dataSync()[0] === 1);
      if (ones || zeros) continue;
      random++;
      if (maxAbsDiff(t, wc.get(name)!) > 0) differing++;
    }
    assert.ok(random > 30);
    assert.equal(differing, random, 'every randomly initialised tensor changes with the seed');
    [a, b, c].forEach((m) => m.dispose());
  });

  it('names weights stably and refuses weights of another shape', () => {
    const a = new XttsModel(PRESETS.tiny, SIZES, { seed: 1 });
    const names = [...a.getWeights().keys()];
    for (const n of ['text.tok_embed', 'text.blocks.0.attn.qkv.w', 'cond.latents', 'dec.cross_kv.w', 'dec.head.b', 'postnet.1.w']) assert.ok(names.includes(n), n);
    const other = new XttsModel({ ...PRESETS.tiny, ff_mult: 2 }, SIZES, { seed: 2 });
    assert.throws(() => a.setWeights(other.getWeights()), (e) => isXttsError(e) && e.code === 'weights_mismatch' && /mlp\.fc\.w/.test(e.message));
    const b = new XttsModel(PRESETS.tiny, SIZES, { seed: 9 });
    b.setWeights(a.getWeights());
    for (const [name, t] of a.getWeights()) assert.equal(maxAbsDiff(t, b.getWeights().get(name)!), 0);
    [a, b, other].forEach((m) => m.dispose());
  });
});

describe('generate', () => {
  it('decodes step by step exactly as the teacher-forced pass would on its own output', async () => {
    const config = PRESETS.tiny;
    const model = new XttsModel(config, SIZES, { seed: 5, prenetDropout: 0 });
    const host = syntheticHostBatch(shapeFor(config, 1, 6, 8, 10), 21, { text: [6] });
    const ids = host.tokens.subarray(0, 6);
    const ref = host.refMel.subarray(0, host.refLengths[0] * SIZES.nMels);
    // Threshold 1: never stop, decode all 14 frames (7 steps).
    const g = await model.generate(ids, host.languages[0], ref, { maxFrames: 14, stopThreshold: 1, checkEvery: 3 });
    assert.equal(g.frames, 14);
    assert.equal(g.stopped, false);
    assert.equal(g.mel.length, 14 * SIZES.nMels);
    const batch = {
      tokens: tf.tensor2d(ids, [1, 6], 'int32'),
      textLengths: tf.tensor1d([6], 'int32'),
      languages: tf.tensor1d([host.languages[0]], 'int32'),
      mel: tf.tensor3d(g.melPre, [1, 14, SIZES.nMels]),
      melLengths: tf.tensor1d([14], 'int32'),
      refMel: tf.tensor3d(ref, [1, host.refLengths[0], SIZES.nMels]),
      refLengths: tf.tensor1d([host.refLengths[0]], 'int32'),
    };
    const out = model.forward(batch, { training: false });
    assert.ok(maxAbsDiff(out.melPre, batch.mel) < 1e-4, `cached decoding drifts from the teacher-forced pass by ${maxAbsDiff(out.melPre, batch.mel)}`);
    assert.ok(maxAbsDiff(out.melPost!, tf.tensor3d(g.mel, [1, 14, SIZES.nMels])) < 1e-4);
    model.dispose();
  });

  it('stops at the first step whose stop probability passes the threshold, and repeats with the same seed', async () => {
    const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 5 });
    // A stop bias of +20 fires at the first step: one step, r frames.
    const head = model.getWeights().get('dec.head.b')!;
    const bias = head.arraySync() as number[];
    bias[bias.length - 1] = 20;
    (head as tf.Variable).assign(tf.tensor1d(bias));
    const ref = new Float32Array(8 * SIZES.nMels).fill(0.1);
    const a = await model.generate([3, 4, 5], 1, ref, { maxFrames: 40 });
    assert.equal(a.stopped, true);
    assert.equal(a.frames, PRESETS.tiny.reduction_factor);
    bias[bias.length - 1] = -20;
    (head as tf.Variable).assign(tf.tensor1d(bias));
    const b1 = await model.generate([3, 4, 5], 1, ref, { maxFrames: 10, seed: 77 });
    const b2 = await model.generate([3, 4, 5], 1, ref, { maxFrames: 10, seed: 77 });
    assert.equal(b1.stopped, false);
    assert.equal(b1.frames, 10);
    assert.deepEqual(b1.mel, b2.mel);
    await assert.rejects(model.generate([3, 99], 0, ref), (e) => isXttsError(e) && e.code === 'generate_token_invalid');
    model.dispose();
  });
});
