// model.reference_rate: a voice's speaking rate, read without its text from its log-mel (data/audio/rate.ts), carried
// by the batch producers (each utterance its speaker's rate, pooled over its clips) and by voices, and every token's
// log duration moved by it, so that a voice is spoken at the pace its clip was measured at.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { MelExtractor, processClip } from '../../src/core/data/audio/index.js';
import { clipRate, pooledLogRate, referenceLogRate } from '../../src/core/data/audio/rate.js';
import { RATE_CLIPS, rateClips } from '../../src/core/data/producer.js';
import { countParameters, XttsModel } from '../../src/core/model/model.js';
import { atRate, RATE_CENTRE } from '../../src/core/model/voice-rate.js';
import { trainedVoices, windowsProsody } from '../../src/core/training/voices.js';
import { cachedClips, eachUtterance } from '../helpers/cached-clips.js';
import { PRESETS, SIZES, shapeFor, syntheticBatch, disposeInputs } from './model-fixtures.js';

const config = loadConfig(presetPath('tiny')).loaded!.config;
const audio = config.audio;

const SENTENCES = [
  'The boat drifted slowly past the harbour wall while the gulls circled overhead.',
  'She counted the coins twice before handing them over to the baker.',
  'Every morning the old clock in the hall struck seven, a little late.',
  'A cold wind came down from the hills and rattled the shutters all night.',
];

/** espeak-ng's rendering of `text` at `wpm` words a minute, as the front end's raw log-mel. */
function spoken(dir: string, text: string, wpm: number) {
  const wav = join(dir, `${wpm}-${text.length}.wav`);
  execFileSync('espeak-ng', ['-v', 'en-us', '-s', String(wpm), '-w', wav, text]);
  return processClip(readFileSync(wav), audio, wav);
}

test('espeak-ng at 120 and 200 words a minute: read 1.3 to 1.8 times as fast, silence not counted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-rate-'));
  try {
    const rates = [120, 200].map((wpm) => {
      const clips = SENTENCES.map((s) => spoken(dir, s, wpm));
      const perS = Math.exp(referenceLogRate(clips, audio));
      assert.ok(perS > 4 && perS < 16, `${wpm} words a minute: ${perS.toFixed(2)} changes a second`);
      return { perS, clips };
    });
    // 1.67 times the words: the peaks grow as the pace to the power 0.6-0.7 (audio/rate.ts), 1.38 times here.
    const ratio = rates[1].perS / rates[0].perS;
    assert.ok(ratio > 1.3 && ratio < 1.8, `read ${ratio.toFixed(2)} times as fast`);
    // A second of silence after the speech is not speech: the same rate within 2%.
    const { mel, frames } = rates[0].clips[0];
    const extractor = new MelExtractor(audio);
    const silence = extractor.compute(new Float32Array(audio.sample_rate_hz));
    const floor = Math.min(...mel);
    const padded = new Float32Array(mel.length + silence.mel.length).fill(floor);
    padded.set(mel);
    const alone = clipRate(mel, frames, audio);
    const withSilence = clipRate(padded, frames + silence.frames, audio);
    assert.ok(
      Math.abs(withSilence.seconds / alone.seconds - 1) < 0.02,
      `${withSilence.seconds} s against ${alone.seconds}`,
    );
    assert.ok(Math.abs(withSilence.peaks - alone.peaks) <= 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('too little speech has no rate: the model is told "unknown" (0)', () => {
  assert.equal(pooledLogRate([]), 0);
  assert.equal(pooledLogRate([{ peaks: 5, seconds: 0.6 }]), 0, 'under a second of speech');
  assert.equal(pooledLogRate([{ peaks: 1, seconds: 3 }]), 0, 'under a change a second');
  // Clips pool by their seconds: 20 peaks in 2 s and 60 in 4 s are 80 in 6 s.
  assert.ok(
    Math.abs(
      pooledLogRate([
        { peaks: 20, seconds: 2 },
        { peaks: 60, seconds: 4 },
      ]) - Math.log(80 / 6),
    ) < 1e-12,
  );
  const { mel, frames } = new MelExtractor(audio).compute(new Float32Array(4000));
  assert.deepEqual(clipRate(mel, frames, audio).peaks, 0, 'silence changes nothing');
});

test("the producers give each utterance its speaker's rate, pooled over its clips; none unless asked", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-rate-clips-'));
  // Speaker 0 speaks at 120 words a minute, speaker 1 at 220; four clips each.
  const processed = SENTENCES.flatMap((s) =>
    [120, 220].map((wpm, speaker) => ({ clip: spoken(dir, s, wpm), speaker })),
  );
  const f = cachedClips(
    'xtts-rate-',
    audio.n_mels,
    processed.map((p) => ({ mel: p.clip.mel, speaker: p.speaker })),
    1,
  );
  const pooled = (speaker: number, only?: number) =>
    referenceLogRate(
      processed.filter((p, i) => p.speaker === speaker && (only === undefined || i === only)).map((p) => p.clip),
      audio,
    );
  const read = (o: Parameters<typeof eachUtterance>[1]) =>
    eachUtterance(f, { seed: 3, producers: 0, refFrames: 24, ...o }, 2, (b, j) => ({
      speaker: b.speakers[j],
      refRate: b.refRate[j],
    }));
  try {
    assert.ok(
      (await read({})).every((u) => u.refRate === 0),
      'nothing asked, zeros',
    );
    const asked = await read({ referenceRate: audio });
    assert.ok(asked.length === 8);
    const expected = [pooled(0), pooled(1)];
    assert.ok(expected[1] - expected[0] > Math.log(1.4), `${expected.map(Math.exp)}`);
    for (const u of asked) assert.ok(Math.abs(u.refRate - expected[u.speaker]) < 1e-6, `${u.refRate}`);
    // The validation batches read the training clips' rates (rateItems): speaker 0's from its first clip alone
    // there; speaker 1, not among them, from its own clips.
    const rateItems = [f.items[0]];
    const validation = await read({ referenceRate: audio, rateItems });
    for (const u of validation)
      assert.ok(Math.abs(u.refRate - (u.speaker === 0 ? pooled(0, 0) : expected[1])) < 1e-6, `${u.speaker}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test("a speaker's rate is pooled over at most 16 of its clips, spread through its list", () => {
  const of = (n: number) => Array.from({ length: n }, (_, i) => i);
  assert.deepEqual(rateClips(of(5)), of(5));
  const chosen = rateClips(of(40));
  assert.equal(chosen.length, RATE_CLIPS);
  assert.deepEqual(chosen.slice(0, 4), [0, 2, 5, 7], 'every 2.5th clip');
  assert.ok(chosen.at(-1)! >= 37, 'to the end of the list');
});

test('reference_rate moves every log duration by the rate; no parameters; synthesis speaks faster', async () => {
  const modelConfig = { ...PRESETS.tiny, reference_rate: true };
  assert.equal(countParameters(modelConfig, SIZES), countParameters(PRESETS.tiny, SIZES));
  const model = new XttsModel(modelConfig, SIZES, { seed: 1 });
  const plain = new XttsModel(PRESETS.tiny, SIZES, { seed: 1 });
  const batch = syntheticBatch(shapeFor(modelConfig, 3, 10, 24), 5);
  try {
    tf.tidy(() => {
      const at = (m: XttsModel, logRate: number[]) =>
        m.forward({ ...batch, refRate: tf.tensor1d(logRate) }, { training: false }).logDurations.arraySync();
      // Every token's steps scaled by the rate, e^-0.3 and e^0.2; none at an unknown rate, nor where none are said.
      const centre = at(model, [RATE_CENTRE, RATE_CENTRE, RATE_CENTRE]);
      const moved = at(model, [RATE_CENTRE + 0.3, 0, RATE_CENTRE - 0.2]);
      const scale = [Math.exp(-0.3), 1, Math.exp(0.2)];
      const stepsOf = (v: number) => Math.max(Math.exp(v) - 1, 0);
      let spoken = 0;
      moved.forEach((row, b) =>
        row.forEach((v, t) => {
          const c = centre[b][t];
          if (c <= 0) return assert.equal(v, c, `${b},${t}: no steps, no move`);
          spoken++;
          assert.ok(Math.abs(stepsOf(v) - stepsOf(c) * scale[b]) < 1e-4 * (1 + stepsOf(c)), `${b},${t}`);
        }),
      );
      assert.ok(spoken > 10, `${spoken} tokens said`);
      const without = model.forward(batch, { training: false }).logDurations.arraySync();
      // At the centre rate the steps are scaled by 1: the same, to float32's rounding through exp and log1p.
      without.forEach((row, b) =>
        row.forEach((v, t) => assert.ok(Math.abs(v - centre[b][t]) < 1e-6, 'no rate in the batch: nothing moved')),
      );
      assert.deepEqual(at(plain, [RATE_CENTRE + 0.3, 0, 0]), at(plain, [0, 0, 0]), 'a model without it reads none');
      // The duration loss trains through the move: d/dx log(1 + (e^x - 1) k) = e^x k / (1 + (e^x - 1) k) where a token
      // says steps, 1 where it says none.
      const x = tf.tensor2d([[0.5, 1.5, -0.2]]);
      const k = Math.exp(-0.3);
      const grad = tf
        .grad((d: tf.Tensor2D) => tf.sum(atRate(d, tf.tensor1d([RATE_CENTRE + 0.3]))))(x)
        .arraySync()[0];
      [0.5, 1.5].forEach((v, i) =>
        assert.ok(Math.abs(grad[i] - (Math.exp(v) * k) / (1 + (Math.exp(v) - 1) * k)) < 1e-5, `${grad[i]}`),
      );
      assert.ok(Math.abs(grad[2] - 1) < 1e-6);
    });
    // The same voice measured 7.4 times as fast (e^2) says the text in fewer frames.
    const ref = tf.slice(batch.refMel, [0, 0, 0], [1, 8, SIZES.nMels]).dataSync() as Float32Array;
    const ids = [1, 4, 10, 11, 12, 13, 14, 2];
    const options = { seed: 3, maxFrames: 400 };
    const slow = await model.generate(ids, 0, { mel: ref, logF0: 0, logRate: RATE_CENTRE - 2 }, options);
    const fast = await model.generate(ids, 0, { mel: ref, logF0: 0, logRate: RATE_CENTRE }, options);
    assert.ok(slow.frames > fast.frames * 2, `${slow.frames} frames slow, ${fast.frames} fast`);
  } finally {
    disposeInputs(batch);
    model.dispose();
    plain.dispose();
  }
});

test("a checkpoint's trained voices carry their rate; several windows' rate is their known ones' mean", () => {
  const latents = new Float32Array(8).fill(0.5);
  const voices = trainedVoices([
    { name: 'voice/ann', shape: [2, 4], dtype: 'float32', data: latents },
    { name: 'voice-rate/ann', shape: [1], dtype: 'float32', data: Float32Array.of(Math.log(9)) },
    { name: 'voice/bob', shape: [2, 4], dtype: 'float32', data: latents },
  ]);
  assert.ok(Math.abs(voices.get('ann')!.logRate! - Math.log(9)) < 1e-6);
  assert.equal(voices.get('bob')!.logRate, undefined, 'a model that reads no rate stored none');
  const mel = new Float32Array(4);
  const windows = [
    { mel, logF0: 0, logRate: 2 },
    { mel, logF0: 5, logRate: 0 },
    { mel, logF0: 0, logRate: 2.5 },
  ];
  assert.deepEqual(windowsProsody(windows), { logF0: 5, logRate: 2.25 });
});
