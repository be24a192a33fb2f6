// Voice warping (batching.voice_warp): the mel axis is read scaled by α, so a tone's band moves where the
// scaled tone's band is; every training utterance and its reference clip get one α, drawn per utterance
// within the configured range and share, identically with any number of producer threads; without it the
// batches are what they were.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { melBandEdgesHz, processClip } from '../../src/core/data/audio/index.js';
import { mulberry32 } from '../../src/core/data/buckets.js';
import {
  drawVoiceWarp,
  melWarpSources,
  type VoiceWarp,
  voiceWarpFor,
  warpedBand,
  warpTable,
} from '../../src/core/data/voice-warp.js';
import { type CachedClips, cachedClips, eachUtterance } from '../helpers/cached-clips.js';
import { pcm16Wav, tone } from '../helpers/wav.js';

const melOf80 = { n_mels: 80, fmin_hz: 0, fmax_hz: 8000, mel_scale: 'slaney' as const };

test('α = 1 reads every band from itself; α > 1 reads lower bands, clamped at the first', () => {
  const same = melWarpSources(melOf80, 1);
  same.forEach((s, m) => assert.ok(Math.abs(s - m) < 1e-3, `band ${m} reads ${s}`));
  const up = melWarpSources(melOf80, 1.2);
  up.forEach((s, m) => assert.ok(s <= m + 1e-6, `band ${m} reads ${s}, above itself`));
  assert.equal(up[0], 0);
  const down = melWarpSources(melOf80, 1 / 1.2);
  assert.equal(down[79], 79, 'the last bands clamp to the last');
});

test("a 500 Hz tone warped by 1.2 peaks in the band of a 600 Hz tone, and by 1 / 1.2 in a 417 Hz tone's", () => {
  const config = loadConfig(presetPath('tiny')).loaded!.config;
  const audio = config.audio;
  const peak = (mel: Float32Array, frames: number, nMels: number) => {
    const f = Math.floor(frames / 2);
    const row = mel.subarray(f * nMels, (f + 1) * nMels);
    return row.indexOf(Math.max(...row));
  };
  const clip = (hz: number) =>
    processClip(pcm16Wav(tone(1, audio.sample_rate_hz, hz), audio.sample_rate_hz), audio, 't');
  const base = clip(500);
  const nMels = audio.n_mels;
  for (const [alpha, hz] of [
    [1.2, 600],
    [1 / 1.2, 500 / 1.2],
  ]) {
    const table = warpTable(melWarpSources(audio, alpha));
    const warped = base.mel.map((_, i) => warpedBand(base.mel, i - (i % nMels), table, i % nMels));
    const target = clip(hz);
    assert.equal(peak(warped, base.frames, nMels), peak(target.mel, target.frames, nMels), `α ${alpha}`);
    assert.notEqual(peak(warped, base.frames, nMels), peak(base.mel, base.frames, nMels), `α ${alpha} moved it`);
  }
});

test('α is drawn log-uniform within [1 / (1 + max), 1 + max] for the configured share of utterances', () => {
  const warp: VoiceWarp = { max: 0.15, share: 0.25, mel: melOf80 };
  const rand = mulberry32(3);
  const alphas: number[] = [];
  let plain = 0;
  for (let i = 0; i < 4000; i++) {
    const w = drawVoiceWarp(warp, rand);
    if (w) alphas.push(w.alpha);
    else plain++;
  }
  assert.ok(Math.abs(alphas.length / 4000 - 0.25) < 0.03, `${alphas.length} of 4000 warped`);
  assert.ok(alphas.every((a) => a >= 1 / 1.15 - 1e-9 && a <= 1.15 + 1e-9));
  const logs = alphas.map(Math.log);
  const below = logs.filter((l) => l < 0).length;
  assert.ok(Math.abs(below / logs.length - 0.5) < 0.06, `${below} of ${logs.length} below 1`);
  assert.ok(Math.max(...logs) > 0.9 * Math.log(1.15) && Math.min(...logs) < -0.9 * Math.log(1.15), 'the range is used');
  assert.equal(plain + alphas.length, 4000);
  assert.equal(
    drawVoiceWarp(undefined, () => assert.fail('no draw without a warp')),
    undefined,
  );
});

test('voiceWarpFor reads batching.voice_warp, voice_warp_share and voice_warp_reference; 0 of either is off', () => {
  const config = loadConfig(presetPath('tiny')).loaded!.config;
  assert.equal(config.batching.voice_warp, 0, 'off by default');
  assert.equal(voiceWarpFor(config), undefined);
  const on = { ...config, batching: { ...config.batching, voice_warp: 0.2, voice_warp_share: 0.4 } };
  assert.deepEqual(voiceWarpFor(on), {
    max: 0.2,
    share: 0.4,
    reference: true,
    mel: { n_mels: 80, fmin_hz: 0, fmax_hz: 8000, mel_scale: 'slaney' },
  });
  assert.equal(voiceWarpFor({ ...on, batching: { ...on.batching, voice_warp_reference: false } })?.reference, false);
  assert.equal(voiceWarpFor({ ...on, batching: { ...on.batching, voice_warp_share: 0 } }), undefined);
});

// Every frame of every clip is log(band centre in Hz): warped by α, band m reads log(centre_m / α), so each
// utterance's α can be read back from its target frames and from its reference frames.
const nMels = 24;
const mel = { n_mels: nMels, fmin_hz: 0, fmax_hz: 8000, mel_scale: 'slaney' as const };
const logCentres = Float32Array.from(melBandEdgesHz(mel).slice(1, -1), (hz) => Math.log(hz));

const fixture = (n: number) =>
  cachedClips(
    'xtts-warp-',
    nMels,
    Array.from({ length: n }, (_, i) => {
      const frames = 20 + (i % 5) * 4;
      const m = new Float32Array(frames * nMels);
      for (let f = 0; f < frames; f++) m.set(logCentres, f * nMels);
      return { mel: m, speaker: i % 3 };
    }),
    2,
  );

// α from the middle bands (10 … 19; the edges clamp): log(centre) − value, averaged.
const alphaAt = (values: Float32Array, offset: number) => {
  let sum = 0;
  for (let m = 10; m < 20; m++) sum += logCentres[m] - values[offset + m];
  return Math.exp(sum / 10);
};

/** Per utterance: the α read back from its frames and from its reference window's. */
const alphasOf = (f: CachedClips, producers: number, voiceWarp?: VoiceWarp) =>
  eachUtterance(f, { seed: 11, producers, refFrames: 16, voiceWarp }, 12, (b, j) => [
    alphaAt(b.mel, j * b.shape.frames * nMels),
    alphaAt(b.refMel, j * 16 * nMels),
  ]);

test('each utterance and its reference share one α; threads change nothing; without a warp α is 1', async () => {
  const f = fixture(40);
  try {
    const warp: VoiceWarp = { max: 0.3, share: 0.5, mel };
    const pairs = await alphasOf(f, 0, warp);
    assert.ok(pairs.length >= 40);
    for (const [target, reference] of pairs) {
      assert.ok(Math.abs(Math.log(target / reference)) < 0.01, `target α ${target}, reference α ${reference}`);
      assert.ok(target > 1 / 1.3 - 0.01 && target < 1.3 + 0.01, `α ${target}`);
    }
    const warped = pairs.filter(([a]) => Math.abs(Math.log(a)) > 0.005).length;
    assert.ok(warped > pairs.length * 0.3 && warped < pairs.length * 0.7, `${warped} of ${pairs.length} warped`);
    assert.deepEqual(await alphasOf(f, 2, warp), pairs, 'two producer threads draw the same warps');
    const plain = await alphasOf(f, 1);
    assert.ok(plain.every(([a, r]) => Math.abs(a - 1) < 1e-5 && Math.abs(r - 1) < 1e-5));
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});
