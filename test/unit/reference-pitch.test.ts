// model.speaker_pitch: a reference's pitch, read from its log-mel (data/audio/pitch.ts), and carried by the batch
// producers to the model: each reference window's refPitch is the median log F0 of the clips it is read from,
// moved by a voice warp's α, pooled over joined clips, and 0 where nothing is asked or nothing is voiced.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { lintConfig } from '../../src/core/config/rules.js';
import { f0Track, MelExtractor, processClip } from '../../src/core/data/audio/index.js';
import {
  clipPitch,
  PitchEstimator,
  pitchBands,
  pitchEstimatorFor,
  pooledLogF0,
  referenceLogF0,
} from '../../src/core/data/audio/pitch.js';
import { melWarpSources, warpedBand, warpTable } from '../../src/core/data/voice-warp.js';
import { voiceWindows } from '../../src/core/training/voices.js';
import { cachedClips, eachUtterance } from '../helpers/cached-clips.js';
import { vowel as voicedVowel } from '../helpers/wav.js';

const config = loadConfig(presetPath('tiny')).loaded!.config;
const audio = config.audio;
const extractor = new MelExtractor(audio);

/** A voiced vowel at f0 (helpers/wav.ts), at the model's sample rate. */
const vowel = (f0: number, seconds = 0.8) => voicedVowel(audio.sample_rate_hz, f0, seconds);

const medianHz = (mel: Float32Array, frames: number) =>
  Math.exp(clipPitch(pitchEstimatorFor(audio).voicedLogF0(mel, frames)).logF0);

test('a vowel at 80 to 280 Hz is read within 3% of its F0, whatever its formants', () => {
  assert.equal(pitchBands(audio).length, 25, '80 bands to 8 kHz: 25 centred within 50-1000 Hz');
  for (const f0 of [80, 97, 112, 150, 210, 280]) {
    const { mel, frames } = extractor.compute(vowel(f0));
    const hz = medianHz(mel, frames);
    assert.ok(Math.abs(hz / f0 - 1) < 0.03, `${f0} Hz read as ${hz.toFixed(1)} Hz`);
  }
});

test('noise has no pitch: the model is told "unknown" (0)', () => {
  let seed = 7;
  const noise = Float32Array.from({ length: 20000 }, () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed / 2 ** 32 - 0.5) * 0.3;
  });
  const { mel, frames } = extractor.compute(noise);
  const p = clipPitch(pitchEstimatorFor(audio).voicedLogF0(mel, frames));
  assert.deepEqual(p, { logF0: 0, voiced: 0 });
  assert.equal(pooledLogF0([p, p]), 0);
  // Clips pool by their voiced frames: 10 frames at 100 Hz and 30 at 200 Hz.
  const pooled = pooledLogF0([p, { logF0: Math.log(100), voiced: 10 }, { logF0: Math.log(200), voiced: 30 }]);
  assert.ok(Math.abs(pooled - (0.25 * Math.log(100) + 0.75 * Math.log(200))) < 1e-9);
});

test('espeak-ng speech at two pitches: each read within 12% of YIN on the waveform, in order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-pitch-'));
  try {
    const read: number[] = [];
    for (const pitch of ['40', '85']) {
      const wav = join(dir, `${pitch}.wav`);
      execFileSync('espeak-ng', ['-v', 'en-us', '-p', pitch, '-w', wav, 'We were away a year ago, all alone.']);
      const clip = processClip(readFileSync(wav), audio, wav);
      const hz = medianHz(clip.mel, clip.frames);
      const yin = [...f0Track(clip.samples, audio.sample_rate_hz)].filter((v) => v > 0).sort((a, b) => a - b);
      const yinHz = yin[Math.floor(yin.length / 2)];
      assert.ok(Math.abs(hz / yinHz - 1) < 0.12, `pitch ${pitch}: ${hz.toFixed(1)} Hz against YIN's ${yinHz}`);
      read.push(hz);
    }
    assert.ok(read[1] > read[0] * 1.3, `${read.map((h) => h.toFixed(0)).join(' < ')} Hz`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a warped voice (batching.voice_warp) is read at F0 × α', () => {
  const { mel, frames } = extractor.compute(vowel(120));
  const nMels = audio.n_mels;
  for (const alpha of [0.87, 1.15]) {
    const table = warpTable(melWarpSources(audio, alpha));
    const warped = new Float32Array(mel.length);
    for (let f = 0; f < frames; f++)
      for (let m = 0; m < nMels; m++) warped[f * nMels + m] = warpedBand(mel, f * nMels, table, m);
    const hz = medianHz(warped, frames);
    assert.ok(Math.abs(hz / (120 * alpha) - 1) < 0.04, `α ${alpha}: ${hz.toFixed(1)} Hz`);
  }
});

test("the producers give each reference its clips' pitch, moved by a warp's α; none unless asked", async () => {
  // Speaker 0 speaks at 100 Hz, speaker 1 at 200 Hz; clip i is i frames longer than the first.
  const clips = Array.from({ length: 16 }, (_, i) => {
    const { mel } = extractor.compute(vowel(i % 2 ? 200 : 100, 0.3 + 0.02 * i));
    return { mel, speaker: i % 2 };
  });
  const f = cachedClips('xtts-pitch-', audio.n_mels, clips, 1);
  const expected = [100, 200].map((hz) => Math.log(hz));
  const read = (o: Parameters<typeof eachUtterance>[1]) =>
    eachUtterance(f, { seed: 3, producers: 0, refFrames: 24, ...o }, 4, (b, j) => ({
      speaker: f.items.findIndex((_, i) => i % 2 === b.speakers[j]) % 2,
      pitch: b.refPitch[j],
    }));
  try {
    const plain = await read({});
    assert.ok(plain.length >= 12 && plain.every((u) => u.pitch === 0), 'nothing asked, nothing measured');
    const pitched = await read({ referencePitch: audio });
    for (const u of pitched) assert.ok(Math.abs(u.pitch - expected[u.speaker]) < 0.03, `${u.pitch}`);
    const joined = await read({ referencePitch: audio, referenceJoin: true });
    for (const u of joined) assert.ok(Math.abs(u.pitch - expected[u.speaker]) < 0.03, `${u.pitch}`);
    const voiceWarp = { max: 0.2, share: 1, mel: audio };
    const warped = await read({ referencePitch: audio, voiceWarp });
    const shifts = warped.map((u) => u.pitch - expected[u.speaker]);
    assert.ok(
      shifts.every((s) => Math.abs(s) <= Math.log(1.2) + 0.03),
      `${shifts}`,
    );
    assert.ok(new Set(shifts.map((s) => s.toFixed(2))).size > 3, 'each utterance its own α');
    // batching.voice_warp_reference false: the same α for each utterance (the same draws), the reference read as
    // recorded, and its pitch still moved by α: the pitch alone tells the model the warp.
    const refs = (o: Parameters<typeof eachUtterance>[1]) =>
      eachUtterance(f, { seed: 3, producers: 0, refFrames: 24, ...o }, 4, (b, j) =>
        Array.from(b.refMel.subarray(j * 24 * audio.n_mels, (j + 1) * 24 * audio.n_mels)),
      );
    const unwarped = { referencePitch: audio, voiceWarp: { ...voiceWarp, reference: false } };
    const asRecorded = await read(unwarped);
    assert.deepEqual(
      asRecorded.map((u) => u.pitch),
      warped.map((u) => u.pitch),
    );
    assert.deepEqual(await refs(unwarped), await refs({ referencePitch: audio }), 'references as recorded');
    assert.notDeepEqual(await refs({ referencePitch: audio, voiceWarp }), await refs({ referencePitch: audio }));
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test("synthesis's reference windows carry their clip's pitch, or the joined clips' together", () => {
  const pitched = { ...config, model: { ...config.model, speaker_pitch: true } };
  const stats = { mean: new Float32Array(audio.n_mels), std: new Float32Array(audio.n_mels).fill(1) };
  const clips = [100, 200].map((hz) => extractor.compute(vowel(hz, 0.5)));
  const apart = voiceWindows(clips, stats, pitched);
  assert.equal(apart.length, 2);
  apart.forEach((w, i) => assert.ok(Math.abs(Math.exp(w.logF0) / [100, 200][i] - 1) < 0.03, `${Math.exp(w.logF0)}`));
  const joined = voiceWindows(clips, stats, { ...pitched, batching: { ...config.batching, reference_join: true } });
  const pooled = pooledLogF0(clips.map((c) => clipPitch(pitchEstimatorFor(audio).voicedLogF0(c.mel, c.frames))));
  assert.ok(joined.every((w) => w.logF0 === pooled));
  assert.ok(pooled > Math.log(120) && pooled < Math.log(170), `${Math.exp(pooled)} Hz`);
});

test("a clip's pitch is measured once however often a reference is read (its warning, then its windows)", () => {
  const { mel, frames } = extractor.compute(vowel(130, 0.5));
  const measure = PitchEstimator.prototype.voicedLogF0;
  let calls = 0;
  PitchEstimator.prototype.voicedLogF0 = function (this: PitchEstimator, m: Float32Array, f: number) {
    calls++;
    return measure.call(this, m, f);
  };
  try {
    const first = referenceLogF0([{ mel, frames }], audio);
    assert.equal(referenceLogF0([{ mel, frames }], audio), first);
    assert.equal(calls, 1);
    // Fewer frames of the same array: measured again.
    const fewer = referenceLogF0([{ mel, frames: frames - 4 }], audio);
    assert.equal(calls, 2);
    assert.ok(Math.abs(fewer - first) < 0.05);
    assert.ok(Math.abs(Math.exp(first) / 130 - 1) < 0.03, `${Math.exp(first)} Hz`);
  } finally {
    PitchEstimator.prototype.voicedLogF0 = measure;
  }
});

test('validate refuses speaker_pitch on a mel too coarse to read a pitch from, and says why', () => {
  const loaded = loadConfig(presetPath('tiny'), {
    set: ['model.speaker_pitch=true', 'audio.n_mels=20'],
  }).loaded!;
  const finding = lintConfig(loaded, { environment: false }).find((x) => x.keyPath === 'model.speaker_pitch');
  assert.ok(finding, 'a finding on model.speaker_pitch');
  assert.equal(finding.severity, 'error');
  assert.match(finding.message, /20 mel bands .* have \d+ centred within 50-1000 Hz/);
  const fine = loadConfig(presetPath('tiny'), { set: ['model.speaker_pitch=true'] }).loaded!;
  assert.equal(lintConfig(fine, { environment: false }).filter((x) => x.keyPath === 'model.speaker_pitch').length, 0);
});
