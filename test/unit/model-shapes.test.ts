// Shapes of every preset, parameter counts, seeded initialisation, weights by name, and free-running
// generation (which must agree with the teacher-forced pass on its own output).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { estimateParameters } from '../../src/core/config/estimate.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { isXttsError } from '../../src/core/errors.js';
import { countParameters, XttsModel } from '../../src/core/model/model.js';
import { voiceLatents } from '../../src/core/model/generate.js';
import {
  disposeInputs,
  maxAbsDiff,
  PRESETS,
  shapeFor,
  SIZES,
  syntheticBatch,
  syntheticHostBatch,
} from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

describe('presets', () => {
  // The table in src/core/model/model.ts's header (vocabulary 160, 80 mels, 1 language).
  const documented = { tiny: 1_757_249, small: 11_199_809, normal: 63_618_369, big: 429_139_265 };
  for (const preset of ['tiny', 'small', 'normal', 'big'] as const) {
    it(
      `${preset}: ${documented[preset].toLocaleString('en')} parameters as documented; ` +
        `forward shapes on a small batch`,
      () => {
        assert.equal(
          countParameters(PRESETS[preset], { vocabSize: 160, nMels: 80, numLanguages: 1 }),
          documented[preset],
        );
        const config = PRESETS[preset];
        const model = new XttsModel(config, SIZES, { seed: 1 });
        try {
          assert.equal(model.parameterCount(), countParameters(config, SIZES));
          assert.equal(
            [...model.getWeights().values()].reduce((n, t) => n + t.size, 0),
            model.parameterCount(),
          );
          // Short sequences, and one utterance for big: its forward pass is still ~4 GFLOP (mostly the
          // 32 latents and the text through every layer's cross-attention keys), ~10 s on tfjs-cpu here.
          const utterances = preset === 'big' ? 1 : 2;
          const batch = syntheticBatch(shapeFor(config, utterances, 5, 8, 6), 3);
          tf.tidy(() => {
            const out = model.forward(batch, { training: preset !== 'big' });
            assert.deepEqual(out.melPre.shape, [utterances, 8, SIZES.nMels]);
            assert.deepEqual(out.melPost!.shape, [utterances, 8, SIZES.nMels]);
            assert.deepEqual(out.textMel.shape, [utterances, 8, SIZES.nMels]);
            assert.deepEqual(out.logDurations.shape, [utterances, 5]);
            assert.deepEqual(out.frameMask.shape, [utterances, 8, 1]);
            assert.equal(tf.all(tf.isFinite(out.melPost!)).dataSync()[0], 1);
          });
        } finally {
          model.dispose();
        }
      },
    );
  }

  it("the validator's closed-form count (config/estimate.ts) is the built model's, for every preset and option", () => {
    for (const preset of ['tiny', 'small', 'normal', 'big', 'quickstart']) {
      const config = loadConfig(presetPath(preset)).loaded!.config;
      for (const model of [
        config.model,
        { ...config.model, speaker_offset: true, speaker_rate: true, speaker_pitch: true },
        { ...config.model, postnet_layers: 0 },
        { ...config.model, postnet_layers: 1, reduction_factor: 3 },
      ]) {
        const sizes = { vocabSize: 160, nMels: config.audio.n_mels, numLanguages: config.text.languages.length };
        assert.equal(estimateParameters({ ...config, model }), countParameters(model, sizes), `${preset}`);
      }
    }
  });

  it("speaker_offset: one more matrix; each voice's means move by its own offset, which learns", () => {
    const config = { ...PRESETS.tiny, speaker_offset: true };
    const { d_model: d } = config;
    assert.equal(countParameters(config, SIZES), countParameters(PRESETS.tiny, SIZES) + d * SIZES.nMels + SIZES.nMels);
    const model = new XttsModel(config, SIZES, { seed: 1 });
    const plain = new XttsModel(PRESETS.tiny, SIZES, { seed: 1 });
    try {
      const batch = syntheticBatch(shapeFor(config, 2, 5, 8), 3);
      tf.tidy(() => {
        // The same seed gives every shared parameter the same values: the token means differ by one offset per
        // utterance, the same on every frame, and the two utterances' offsets (different references) differ.
        const forward = (m: XttsModel) => m.forward(batch, { training: false }).textMel;
        const rows = tf.sub(forward(model), forward(plain)).arraySync() as number[][][];
        const apart = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));
        for (const u of rows) for (const frame of u) assert.ok(apart(frame, u[0]) < 1e-5);
        assert.ok(apart(rows[0][0], rows[1][0]) > 1e-4, 'two references, one offset');
        const offset = model.voiceMel!;
        const { grads } = tf.variableGrads(
          () => tf.mean(tf.square(model.forward(batch, { training: false }).textMel)) as tf.Scalar,
          [offset.w, offset.b] as tf.Variable[],
        );
        for (const g of Object.values(grads)) assert.ok((tf.norm(g).dataSync()[0] as number) > 0);
      });
    } finally {
      model.dispose();
      plain.dispose();
    }
  });

  it("speaker_rate: one more matrix; the voice moves each utterance's durations, which the loss trains", () => {
    const config = { ...PRESETS.tiny, speaker_rate: true };
    const { d_model: d } = config;
    assert.equal(countParameters(config, SIZES), countParameters(PRESETS.tiny, SIZES) + d * d + d);
    const model = new XttsModel(config, SIZES, { seed: 1 });
    const plain = new XttsModel(PRESETS.tiny, SIZES, { seed: 1 });
    try {
      const batch = syntheticBatch(shapeFor(config, 2, 5, 8), 3);
      tf.tidy(() => {
        // The same seed gives every shared parameter the same values: the frames are the same, the durations move.
        const a = model.forward(batch, { training: false });
        const b = plain.forward(batch, { training: false });
        assert.ok(maxAbsDiff(a.melPre, b.melPre) < 1e-6, 'the frames do not read the pace');
        assert.ok(maxAbsDiff(a.logDurations, b.logDurations) > 1e-4, 'the durations read the voice');
        // The duration predictor's input is the text without its gradient (Glow-TTS §3.3), but the voice's pace
        // learns from the duration loss: gradients reach its projection and the conditioning encoder.
        const rate = model.voiceRate!;
        const pool = model.trainableVariables().get('cond.pool.out.w')!;
        const { grads } = tf.variableGrads(
          () => tf.mean(tf.square(model.forward(batch, { training: false }).logDurations)) as tf.Scalar,
          [rate.w, rate.b, pool],
        );
        for (const g of Object.values(grads)) assert.ok((tf.norm(g).dataSync()[0] as number) > 0);
      });
    } finally {
      model.dispose();
      plain.dispose();
    }
  });

  it("speaker_pitch: one more matrix; a known pitch moves the voice's latents, which learn from it", async () => {
    const config = { ...PRESETS.tiny, speaker_offset: true, speaker_pitch: true };
    const { d_model: d } = config;
    const plainConfig = { ...config, speaker_pitch: false };
    assert.equal(countParameters(config, SIZES), countParameters(plainConfig, SIZES) + 10 * d + d);
    const model = new XttsModel(config, SIZES, { seed: 1 });
    const plain = new XttsModel(plainConfig, SIZES, { seed: 1 });
    try {
      const batch = syntheticBatch(shapeFor(config, 2, 5, 8), 3);
      const pitched = { ...batch, refPitch: tf.tensor1d([Math.log(95), Math.log(230)]) };
      tf.tidy(() => {
        const mel = (m: XttsModel, b: typeof batch) => m.forward(b, { training: false }).melPre;
        // Unknown pitch (0) adds the projection's bias alone, zero at initialisation: the model without it.
        assert.ok(maxAbsDiff(mel(model, batch), mel(plain, batch)) < 1e-6, 'an unknown pitch changes nothing');
        assert.ok(maxAbsDiff(mel(model, pitched), mel(plain, batch)) > 1e-4, 'a known pitch moves the frames');
        const pitch = model.voicePitch!.project;
        const { grads } = tf.variableGrads(() => tf.mean(tf.square(mel(model, pitched))) as tf.Scalar, [
          pitch.w,
          pitch.b,
        ] as tf.Variable[]);
        for (const g of Object.values(grads)) assert.ok((tf.norm(g).dataSync()[0] as number) > 0);
      });
      // Generation and stored voices read the pitch a reference carries; a bare log-mel's is unknown.
      const ref = tf.slice(batch.refMel, [0, 0, 0], [1, 16, SIZES.nMels]).dataSync() as Float32Array;
      const ids = [1, 4, 10, 11, 2];
      const low = await model.generate(ids, 0, { mel: ref, logF0: Math.log(95) }, { seed: 3, maxFrames: 12 });
      const high = await model.generate(ids, 0, { mel: ref, logF0: Math.log(230) }, { seed: 3, maxFrames: 12 });
      const bare = await model.generate(ids, 0, ref, { seed: 3, maxFrames: 12 });
      const unknown = await model.generate(ids, 0, { mel: ref, logF0: 0 }, { seed: 3, maxFrames: 12 });
      assert.deepEqual(bare.mel, unknown.mel);
      assert.ok(Math.max(...low.mel.map((v, i) => Math.abs(v - high.mel[i]))) > 1e-4, 'two pitches, two voices');
      const latents = await voiceLatents(model, [{ mel: ref, logF0: Math.log(95) }]);
      const fromLatents = await model.generate(ids, 0, { latents }, { seed: 3, maxFrames: 12 });
      assert.ok(Math.max(...fromLatents.mel.map((v, i) => Math.abs(v - low.mel[i]))) < 1e-4);
      disposeInputs(batch);
      pitched.refPitch.dispose();
    } finally {
      model.dispose();
      plain.dispose();
    }
  });

  it('rejects heads that do not divide d_model, and an even postnet kernel', () => {
    assert.throws(
      () => new XttsModel({ ...PRESETS.tiny, heads: 3 }, SIZES),
      (e) => isXttsError(e) && e.code === 'MODEL_CONFIG_INVALID' && /heads/.test(e.message),
    );
    assert.throws(
      () => new XttsModel({ ...PRESETS.tiny, postnet_kernel: 4 }, SIZES),
      (e) => isXttsError(e) && /postnet_kernel/.test(e.message),
    );
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
    for (const n of [
      'text.tok_embed',
      'text.blocks.0.attn.qkv.w',
      'cond.latents',
      'dec.cross_kv.w',
      'dec.head.b',
      'postnet.1.w',
    ])
      assert.ok(names.includes(n), n);
    const other = new XttsModel({ ...PRESETS.tiny, ff_mult: 2 }, SIZES, { seed: 2 });
    assert.throws(
      () => a.setWeights(other.getWeights()),
      (e) => isXttsError(e) && e.code === 'WEIGHTS_MISMATCH' && /mlp\.fc\.w/.test(e.message),
    );
    const b = new XttsModel(PRESETS.tiny, SIZES, { seed: 9 });
    b.setWeights(a.getWeights());
    for (const [name, t] of a.getWeights()) assert.equal(maxAbsDiff(t, b.getWeights().get(name)!), 0);
    [a, b, other].forEach((m) => m.dispose());
  });
});

describe('generate', () => {
  const voiced = { ...PRESETS.tiny, speaker_offset: true, speaker_rate: true, speaker_pitch: true };
  for (const [what, config] of [
    ['', PRESETS.tiny],
    [" (with the voice's offset, pace and pitch)", voiced],
  ] as const)
    it(`decodes step by step as the teacher-forced pass would on its own output, along its plan${what}`, async () => {
      const model = new XttsModel(config, SIZES, { seed: 5, prenetDropout: 0 });
      const host = syntheticHostBatch(shapeFor(config, 1, 8, 8, 10), 21, { text: [8] });
      const ids = host.tokens.subarray(0, 8);
      const ref = host.refMel.subarray(0, host.refLengths[0] * SIZES.nMels);
      const logF0 = Math.log(120);
      const g = await model.generate(ids, host.languages[0], { mel: ref, logF0 });
      assert.equal(g.stopReason, 'end_of_text');
      assert.equal(g.mel.length, g.frames * SIZES.nMels);
      const steps = g.frames / config.reduction_factor;
      const plan = Int32Array.from({ length: steps }, (_, s) => g.alignment.subarray(s * 8, (s + 1) * 8).indexOf(1));
      // Every symbol (positions 2..6) is read, in order, at least one step each.
      assert.deepEqual([...new Set(plan)], [2, 3, 4, 5, 6]);
      const batch = {
        tokens: tf.tensor2d(ids, [1, 8], 'int32'),
        textLengths: tf.tensor1d([8], 'int32'),
        languages: tf.tensor1d([host.languages[0]], 'int32'),
        mel: tf.tensor3d(g.melPre, [1, g.frames, SIZES.nMels]),
        melLengths: tf.tensor1d([g.frames], 'int32'),
        refMel: tf.tensor3d(ref, [1, host.refLengths[0], SIZES.nMels]),
        refLengths: tf.tensor1d([host.refLengths[0]], 'int32'),
        refPitch: tf.tensor1d([logF0]),
        alignment: { steps: tf.tensor2d(plan, [1, steps], 'int32'), durations: tf.zeros([1, 8]) as tf.Tensor2D },
      };
      const out = model.forward(batch, { training: false });
      assert.ok(
        maxAbsDiff(out.melPre, batch.mel) < 1e-4,
        `cached decoding drifts from the teacher-forced pass by ${maxAbsDiff(out.melPre, batch.mel)}`,
      );
      assert.ok(maxAbsDiff(out.melPost!, tf.tensor3d(g.mel, [1, g.frames, SIZES.nMels])) < 1e-4);
      model.dispose();
    });

  it('reads each symbol for its predicted duration, is cut by maxFrames, and repeats with the same seed', async () => {
    const config = PRESETS.tiny;
    const model = new XttsModel(config, SIZES, { seed: 5 });
    // Every token predicted at log(1 + 3): 3 steps per symbol, whatever the text.
    const bias = model.getWeights().get('dur.out.b')! as tf.Variable;
    bias.assign(tf.tensor1d([Math.log(4)]));
    const w = model.getWeights().get('dur.out.w')! as tf.Variable;
    w.assign(tf.zerosLike(w));
    const ref = new Float32Array(8 * SIZES.nMels).fill(0.1);
    const ids = [1, 4, 10, 11, 12, 13, 2]; // 4 symbols
    const a = await model.generate(ids, 0, ref, { seed: 77 });
    assert.equal(a.frames, 4 * 3 * config.reduction_factor);
    assert.equal(a.stopReason, 'end_of_text');
    const cut = await model.generate(ids, 0, ref, { maxFrames: 10, seed: 77 });
    assert.equal(cut.frames, 10);
    assert.equal(cut.stopReason, 'max_frames');
    // A bound that is not a multiple of r: the last step's second frame is cut off, its step kept.
    const odd = await model.generate(ids, 0, ref, { maxFrames: 9, seed: 77 });
    assert.equal(odd.frames, 9);
    assert.equal(odd.alignment.length / odd.textTokens, 5);
    assert.deepEqual(odd.mel, cut.mel.slice(0, 9 * SIZES.nMels));
    const again = await model.generate(ids, 0, ref, { seed: 77 });
    assert.deepEqual(again.mel, a.mel);
    // In a batch, each utterance ends at its own length.
    const [long, short] = await model.generateBatch(
      [
        { ids, language: 0 },
        { ids: [1, 4, 10, 2], language: 0 },
      ],
      ref,
    );
    assert.deepEqual([long.frames, short.frames], [24, 6]);
    // And speaks as it does alone: its last frames read zeros after it in every postnet layer, not the
    // padding's values (they differed by up to 0.30 in the last two frames).
    const alone = await model.generate([1, 4, 10, 2], 0, ref);
    assert.deepEqual(short.mel, alone.mel);
    await assert.rejects(model.generate([3, 99], 0, ref), (e) => isXttsError(e) && e.code === 'GENERATE_TOKEN_INVALID');
    model.dispose();
  });

  it("with prenet dropout an utterance's masks are its text's: the same alone, in any batch, any place", async () => {
    const model = new XttsModel({ ...PRESETS.tiny, prenet_dropout: 0.5 }, SIZES, { seed: 6 });
    const ref = new Float32Array(8 * SIZES.nMels).fill(0.1);
    const short = { ids: [1, 4, 10, 2], language: 0 };
    const long = { ids: [1, 4, 10, 11, 12, 13, 14, 2], language: 0 };
    const [alone] = await model.generateBatch([short], ref);
    const [, second] = await model.generateBatch([long, short], ref);
    const [first, twice] = await model.generateBatch([short, short], ref);
    assert.deepEqual(second.mel, alone.mel);
    assert.deepEqual(first.mel, alone.mel);
    assert.deepEqual(twice.mel, alone.mel);
    model.dispose();
  });

  it('a voice computed from clips speaks as the clip does; clips average; bad latents are refused', async () => {
    const config = { ...PRESETS.tiny, cond_layers: 1 };
    const model = new XttsModel(config, SIZES, { seed: 9 });
    const clip = (frames: number, seed: number) =>
      Float32Array.from({ length: frames * SIZES.nMels }, (_, i) => Math.sin(i * 0.37 + seed) * 0.8);
    const ids = [1, 4, 10, 11, 12, 2];
    const [a, b] = [clip(8, 1), clip(13, 2)];
    const fromClip = await model.generate(ids, 0, a, { seed: 3 });
    const latentsA = await voiceLatents(model, [a]);
    assert.equal(latentsA.length, config.cond_latents * config.d_model);
    const fromLatents = await model.generate(ids, 0, { latents: latentsA }, { seed: 3 });
    assert.equal(fromLatents.frames, fromClip.frames);
    assert.ok(Math.max(...fromLatents.mel.map((v, i) => Math.abs(v - fromClip.mel[i]))) < 1e-4);
    // Clips of different lengths in one batch: each is pooled over its own frames only.
    const latentsB = await voiceLatents(model, [b]);
    const both = await voiceLatents(model, [a, b], 2);
    const mean = latentsA.map((v, i) => (v + latentsB[i]) / 2);
    assert.ok(Math.max(...both.map((v, i) => Math.abs(v - mean[i]))) < 1e-5);
    assert.ok(Math.max(...latentsA.map((v, i) => Math.abs(v - latentsB[i]))) > 1e-3, 'two clips, two voices');
    await assert.rejects(
      model.generate(ids, 0, { latents: latentsA.subarray(1) }),
      (e) => isXttsError(e) && e.code === 'GENERATE_REFERENCE_INVALID',
    );
    await assert.rejects(
      voiceLatents(model, [new Float32Array(SIZES.nMels + 1)]),
      (e) => isXttsError(e) && e.code === 'GENERATE_REFERENCE_INVALID',
    );
    model.dispose();
  });
});
