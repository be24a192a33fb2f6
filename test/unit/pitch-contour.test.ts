// model.pitch_contour: every token's pitch in the decoder's memory. The producers give each target frame its log F0
// (read on its log-mel as a reference's pitch is), the model averages them over each token's aligned frames and
// embeds them, a pitch predictor learns each token's rise over the utterance's mean, and synthesis speaks the
// voice's measured pitch plus the predicted rise: the pitch comes from the reference's number, in training and out;
// `synthesize --pitch` replaces the number.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { lintConfig } from '../../src/core/config/rules.js';
import { estimateParameters } from '../../src/core/config/estimate.js';
import { MelExtractor } from '../../src/core/data/audio/index.js';
import { frameLogF0 } from '../../src/core/data/audio/pitch.js';
import { isXttsError } from '../../src/core/errors.js';
import { computeLosses } from '../../src/core/model/losses.js';
import { countParameters, XttsModel } from '../../src/core/model/model.js';
import { PitchContour } from '../../src/core/model/pitch-contour.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import { disposeStepResult, trainStep } from '../../src/core/training/optim/train-step.js';
import { parsePitch, withPitch } from '../../src/core/training/pitch-request.js';
import { trainedVoices, windowsProsody } from '../../src/core/training/voices.js';
import { cachedClips, eachUtterance } from '../helpers/cached-clips.js';
import { vowel as voicedVowel } from '../helpers/wav.js';
import { PRESETS, SIZES, syntheticBatch, trainingConfig } from './model-fixtures.js';

const config = loadConfig(presetPath('tiny')).loaded!.config;
const audio = config.audio;
const extractor = new MelExtractor(audio);

/** A voiced vowel at f0 (helpers/wav.ts), at the model's sample rate. */
const vowel = (f0: number, seconds: number) => voicedVowel(audio.sample_rate_hz, f0, seconds);

test("a frame's log F0 is read where it is voiced and 0 in silence", () => {
  const sound = vowel(150, 0.4);
  const withSilence = new Float32Array(sound.length * 2);
  withSilence.set(sound);
  const { mel, frames } = extractor.compute(withSilence);
  const track = frameLogF0(mel, frames, audio);
  const firstHalf = Array.from(track.subarray(3, Math.floor(frames / 2) - 3));
  const secondHalf = Array.from(track.subarray(Math.floor(frames / 2) + 3));
  assert.ok(
    firstHalf.every((v) => Math.abs(v - Math.log(150)) < 0.03),
    `${firstHalf.map((v) => Math.exp(v))}`,
  );
  assert.ok(
    secondHalf.every((v) => v === 0),
    'silence is unvoiced',
  );
});

test("the producers give each target frame its log F0, moved by a warp's α; zeros unless asked", async () => {
  const clips = Array.from({ length: 16 }, (_, i) => {
    const { mel } = extractor.compute(vowel(i % 2 ? 200 : 100, 0.3 + 0.02 * i));
    return { mel, speaker: i % 2 };
  });
  const f = cachedClips('xtts-contour-', audio.n_mels, clips, 1);
  const expected = [100, 200].map((hz) => Math.log(hz));
  const read = (o: Parameters<typeof eachUtterance>[1] & { framePitch?: boolean; referencePitch?: typeof audio }) =>
    eachUtterance(f, { seed: 3, producers: 0, refFrames: 24, ...o }, 4, (b, j) => {
      const row = b.melPitch.subarray(j * b.shape.frames, (j + 1) * b.shape.frames);
      return {
        speaker: b.speakers[j],
        refPitch: b.refPitch[j],
        real: Array.from(row.subarray(0, b.melLengths[j])),
        padded: Array.from(row.subarray(b.melLengths[j])),
      };
    });
  try {
    const plain = await read({ referencePitch: audio });
    assert.ok(plain.length >= 12 && plain.every((u) => u.real.every((v) => v === 0)), 'nothing asked, zeros');
    const asked = await read({ referencePitch: audio, framePitch: true });
    for (const u of asked) {
      const voiced = u.real.filter((v) => v > 0);
      assert.ok(voiced.length >= u.real.length / 2, `${voiced.length} of ${u.real.length} frames voiced`);
      assert.ok(
        voiced.every((v) => Math.abs(v - expected[u.speaker]) < 0.03),
        `${voiced.map(Math.exp)}`,
      );
      assert.ok(
        u.padded.every((v) => v === 0),
        'padding unvoiced',
      );
    }
    // A warp moves the target's frames as it moves its reference's pitch: by log α, the same α for both.
    const warped = await read({
      referencePitch: audio,
      framePitch: true,
      voiceWarp: { max: 0.2, share: 1, mel: audio },
    });
    const shifts = warped.map((u) => {
      const voiced = u.real.filter((v) => v > 0);
      const shift = voiced.reduce((a, v) => a + v, 0) / voiced.length - expected[u.speaker];
      assert.ok(Math.abs(shift - (u.refPitch - expected[u.speaker])) < 0.04, `${shift} against the reference's`);
      return shift;
    });
    assert.ok(new Set(shifts.map((s) => s.toFixed(2))).size > 3, 'each utterance its own α');
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test("each token's pitch is its voiced frames' mean; its rise is over the utterance's mean; no pitch, no loss", () => {
  tf.tidy(() => {
    // Utterance 0: token 2 takes 3 steps (6 frames at 4.6), token 3 two (4.8, 4.8 then two unvoiced), token 4 one
    // (unvoiced): 8 voiced frames, mean 4.65. Utterance 1: nothing voiced, so no pitch at all.
    const alignment = tf.tensor2d([2, 2, 2, 3, 3, 4, 2, 2, 3, 3, 4, 4], [2, 6], 'int32');
    const durations = tf.tensor2d([0, 0, 3, 2, 1, 0, 0, 2, 2, 2], [2, 5]);
    const voiced = [4.6, 4.6, 4.6, 4.6, 4.6, 4.6, 4.8, 4.8, 0, 0, 0, 0];
    const melPitch = tf.tensor2d([...voiced, ...new Array(12).fill(0)], [2, 12]);
    const t = PitchContour.targets(alignment, durations, melPitch, 2);
    const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]) < 1e-5);
    const [logF0, rise, weight] = [t.logF0, t.rise, t.weight].map((x) => x.arraySync() as number[][]);
    assert.ok(near(rise[0], [0, 0, -0.05, 0.15, 0]), `${rise[0]}`);
    assert.ok(near(logF0[0], [4.65, 4.65, 4.6, 4.8, 4.65]), `${logF0[0]}`);
    assert.deepEqual(weight[0], [0, 0, 1, 1, 1]);
    assert.deepEqual(
      [logF0[1], rise[1], weight[1]],
      [new Array(5).fill(0), new Array(5).fill(0), new Array(5).fill(0)],
    );
    // Synthesis: the voice's log F0 plus the predicted rise; a voice of unknown pitch (0) stays unknown.
    const spoken = PitchContour.spoken(tf.tensor1d([Math.log(120), 0]), tf.tensor2d([0.1, -0.1, 0.2, 0], [2, 2]));
    assert.ok(near((spoken.arraySync() as number[][]).flat(), [Math.log(120) + 0.1, Math.log(120) - 0.1, 0, 0]));
  });
});

/** The synthetic batch with each frame's log F0: a token's pitch is a function of the token (rise up to ±0.3). */
function pitchedBatch(seed: number) {
  const shape = {
    batchSize: 4,
    tokens: 8,
    frames: 16,
    refFrames: 8,
    nMels: SIZES.nMels,
    reductionFactor: 2,
    vocabSize: SIZES.vocabSize,
    numLanguages: SIZES.numLanguages,
  };
  const batch = syntheticBatch(shape, seed);
  const tokens = batch.tokens.arraySync() as number[][];
  const path = batch.alignment.steps.arraySync() as number[][];
  const lengths = batch.melLengths.arraySync() as number[];
  const pitch = new Float32Array(shape.batchSize * shape.frames);
  for (let b = 0; b < shape.batchSize; b++)
    for (let f = 0; f < lengths[b]; f++)
      pitch[b * shape.frames + f] = Math.log(150) + 0.3 * Math.sin(tokens[b][path[b][f >> 1]]);
  return { ...batch, melPitch: tf.tensor2d(pitch, [shape.batchSize, shape.frames]) };
}

test('pitch_contour: a predictor and an embedding; the frames follow the pitch; the predictor learns', async () => {
  const modelConfig = { ...PRESETS.tiny, pitch_contour: true };
  const d = modelConfig.d_model;
  const duration = 2 * (3 * d * d + d) + 2 * d + d + 1;
  assert.equal(countParameters(modelConfig, SIZES), countParameters(PRESETS.tiny, SIZES) + duration + 10 * d + d);
  for (const preset of ['tiny', 'small']) {
    const c = loadConfig(presetPath(preset)).loaded!.config;
    const model = { ...c.model, pitch_contour: true };
    const sizes = { vocabSize: 160, nMels: c.audio.n_mels, numLanguages: c.text.languages.length };
    assert.equal(estimateParameters({ ...c, model }), countParameters(model, sizes), preset);
  }
  const model = new XttsModel(modelConfig, SIZES, { seed: 1 });
  try {
    const batch = pitchedBatch(3);
    const { melPitch: _, ...bare } = batch;
    assert.throws(
      () => model.forward(bare, { training: false }),
      (e) => isXttsError(e) && e.code === 'BATCH_NO_PITCH',
    );
    tf.tidy(() => {
      const out = model.forward(batch, { training: false });
      assert.ok(out.pitch, 'the predicted rise and the targets');
      const loss = computeLosses(out, batch, trainingConfig().loss);
      assert.ok(loss.pitch.dataSync()[0] > 0);
      const lifted = {
        ...batch,
        melPitch: tf.add(batch.melPitch, tf.mul(tf.cast(tf.greater(batch.melPitch, 0), 'float32'), 0.7)),
      };
      const moved = model.forward(lifted as typeof batch, { training: false }).melPre;
      assert.ok(tf.max(tf.abs(tf.sub(moved, out.melPre))).dataSync()[0] > 1e-4, 'another pitch, other frames');
    });
    // Trained on it, the predictor learns each token's rise.
    const t = trainingConfig({ learning_rate: 3e-3 });
    const optimizer = new AdamW(model.trainableVariables(), t);
    const pitchLoss = () =>
      tf.tidy(() => computeLosses(model.forward(batch, { training: false }), batch, t.loss).pitch.dataSync()[0]);
    const before = pitchLoss();
    for (let i = 0; i < 60; i++) disposeStepResult(trainStep(model, optimizer, batch, t.loss));
    const after = pitchLoss();
    assert.ok(after < before / 3, `pitch loss ${before.toFixed(4)} -> ${after.toFixed(4)}`);
    optimizer.dispose();
    // Synthesis speaks at the voice's pitch: one voice's latents at two measured pitches, two readings.
    const ref = tf.slice(batch.refMel, [0, 0, 0], [1, 8, SIZES.nMels]).dataSync() as Float32Array;
    const ids = [1, 4, 10, 11, 2];
    const low = await model.generate(ids, 0, { mel: ref, logF0: Math.log(95) }, { seed: 3, maxFrames: 12 });
    const high = await model.generate(ids, 0, { mel: ref, logF0: Math.log(230) }, { seed: 3, maxFrames: 12 });
    assert.ok(Math.max(...low.mel.map((v, i) => Math.abs(v - high.mel[i]))) > 1e-4, 'two pitches, two readings');
  } finally {
    model.dispose();
  }
});

test("a checkpoint's trained voices carry their pitch; several windows' pitch is their known ones' mean", () => {
  const latents = new Float32Array(8).fill(0.5);
  const voices = trainedVoices([
    { name: 'voice/ann', shape: [2, 4], dtype: 'float32', data: latents },
    { name: 'voice-pitch/ann', shape: [1], dtype: 'float32', data: Float32Array.of(Math.log(180)) },
    { name: 'voice/bob', shape: [2, 4], dtype: 'float32', data: latents },
  ]);
  assert.deepEqual([...voices.keys()], ['ann', 'bob']);
  assert.ok(Math.abs(voices.get('ann')!.logF0! - Math.log(180)) < 1e-6);
  assert.equal(voices.get('bob')!.logF0, undefined, 'a model that reads no pitch stored none');
  const mel = new Float32Array(4);
  assert.equal(
    windowsProsody([
      { mel, logF0: 4 },
      { mel, logF0: 0 },
      { mel, logF0: 5 },
    ]).logF0,
    4.5,
  );
  assert.equal(windowsProsody([{ mel, logF0: 0 }]).logF0, 0);
});

test('validate refuses pitch_contour on a mel too coarse to read a pitch from', () => {
  const loaded = loadConfig(presetPath('tiny'), { set: ['model.pitch_contour=true', 'audio.n_mels=20'] }).loaded!;
  const finding = lintConfig(loaded, { environment: false }).find((x) => x.keyPath === 'model.pitch_contour');
  assert.ok(finding, 'a finding on model.pitch_contour');
  assert.equal(finding.severity, 'error');
  assert.match(finding.message, /pitch_contour reads a voice's pitch/);
});

test('--pitch: Hz or semitones, refused by name where the model would not hear it', () => {
  assert.deepEqual(parsePitch('180'), { hz: 180 });
  assert.deepEqual(parsePitch('97.5Hz'), { hz: 97.5 });
  assert.deepEqual(parsePitch('+3st'), { semitones: 3 });
  assert.deepEqual(parsePitch('-2.5 st'), { semitones: -2.5 });
  for (const [text, why] of [
    ['high', /give a median F0 in Hz/],
    ['20', /20 Hz is outside the 55-420 Hz/],
    ['+30st', /at most 24 semitones/],
  ] as const)
    assert.throws(
      () => parsePitch(text),
      (e) => isXttsError(e) && e.code === 'USAGE' && why.test(e.message),
    );
  const mel = new Float32Array(8);
  const contour = { model: { ...config.model, pitch_contour: true, speaker_pitch: false } };
  const windows = { voice: { mel, logF0: Math.log(120) }, mels: [{ mel, logF0: Math.log(120) }] };
  // No request: the voice's own pitch, reported.
  assert.deepEqual(withPitch(windows, undefined, contour).pitch, { hz: 120 });
  // Hz: every window and the voice take it; semitones: from the voice's own (+12 st: an octave).
  const at = withPitch(windows, { hz: 200 }, contour);
  assert.deepEqual([at.mels[0].logF0, (at.voice as { logF0: number }).logF0], [Math.log(200), Math.log(200)]);
  assert.deepEqual(at.pitch, { hz: 200, voiceHz: 120 });
  assert.equal(withPitch(windows, { semitones: 12 }, contour).pitch!.hz, 240);
  // A trained speaker's latents with their stored pitch, moved.
  const speaker = { voice: { latents: new Float32Array(4), logF0: Math.log(100) }, mels: [] };
  assert.equal(withPitch(speaker, { semitones: -12 }, contour).pitch!.hz, 50);
  const refused = (source: typeof windows | typeof speaker, model: object, why: RegExp) =>
    assert.throws(
      () => withPitch(source, { semitones: 1 }, { model: { ...config.model, ...model } }),
      (e) => isXttsError(e) && e.code === 'SYNTH_PITCH' && why.test(e.message),
    );
  refused(windows, { pitch_contour: false, speaker_pitch: false }, /reads no pitch/);
  refused(speaker, { pitch_contour: false, speaker_pitch: true }, /only from reference clips/);
  refused({ voice: { latents: new Float32Array(4) }, mels: [] } as never, { pitch_contour: true }, /is unknown/);
  // speaker_pitch alone hears it through reference clips.
  const latentsOnly = { model: { ...config.model, pitch_contour: false, speaker_pitch: true } };
  assert.equal(withPitch(windows, { hz: 90 }, latentsOnly).mels[0].logF0, Math.log(90));
});
