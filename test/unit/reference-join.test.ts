// batching.reference_join: a reference window that one clip leaves part empty is filled with further clips of
// the same speaker (each once, never the utterance itself, at most REFERENCE_JOIN_CLIPS), so the conditioning
// encoder sees as many seconds of the voice as the window holds; without it the window is padded. The
// config rule then admits windows up to that many of the longest clips.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { estimateTrainingMemory } from '../../src/core/config/estimate.js';
import { lintConfig } from '../../src/core/config/rules.js';
import { REFERENCE_JOIN_CLIPS } from '../../src/core/data/producer.js';
import type { VoiceWarp } from '../../src/core/data/voice-warp.js';
import { type CachedClips, cachedClips, eachUtterance } from '../helpers/cached-clips.js';

const nMels = 4;
const window = 100;

// Clip i is 12 to 31 frames of the value i + 1 in every band, so the clips a window holds can be read back.
const fixture = (speakerOf: (i: number) => number, n: number) =>
  cachedClips(
    'xtts-join-',
    nMels,
    Array.from({ length: n }, (_, i) => ({
      mel: new Float32Array((12 + ((i * 7) % 20)) * nMels).fill(i + 1),
      speaker: speakerOf(i),
    })),
    1,
  );

/** Per utterance: its clip, the clips its reference window holds in order (runs of one value), its length. */
const windows = (f: CachedClips, referenceJoin: boolean, producers = 0, voiceWarp?: VoiceWarp) =>
  eachUtterance(f, { seed: 3, producers, refFrames: window, referenceJoin, voiceWarp }, 10, (b, j) => {
    const clip = b.mel[j * b.shape.frames * nMels] - 1;
    const clips: number[] = [];
    const runs: number[] = [];
    const length = b.refLengths[j];
    for (let t = 0; t < length; t++) {
      const v = b.refMel[(j * window + t) * nMels] - 1;
      if (clips.at(-1) === v) runs[runs.length - 1]++;
      else {
        clips.push(v);
        runs.push(1);
      }
    }
    for (let t = length; t < window; t++) assert.equal(b.refMel[(j * window + t) * nMels], 0, 'padding is 0');
    return { clip, clips, runs, length };
  });

test("a short reference is followed by further clips of the speaker's, each once, never the utterance", async () => {
  const speakerOf = (i: number) => i % 3;
  const f = fixture(speakerOf, 36);
  try {
    const joined = await windows(f, true);
    assert.ok(joined.length >= 30);
    for (const { clip, clips, runs, length } of joined) {
      assert.ok(clips.length >= 2 && clips.length <= REFERENCE_JOIN_CLIPS, `${clips.length} clips`);
      assert.ok(!clips.includes(clip), 'never the utterance itself');
      assert.equal(new Set(clips).size, clips.length, 'each clip once');
      assert.ok(
        clips.every((c) => speakerOf(c) === speakerOf(clip)),
        'clips of the speaker',
      );
      // Every clip after the first is read from its start, and the window is full unless 4 clips ran out.
      clips.slice(1).forEach((c, k) => {
        const whole = f.items[c].frames;
        assert.ok(runs[k + 1] === whole || (k + 2 === clips.length && length === window), `clip ${c}`);
      });
      assert.ok(length === window || clips.length === REFERENCE_JOIN_CLIPS, `${length} frames`);
    }
    assert.deepEqual(await windows(f, true, 2), joined, 'two producer threads fill the same windows');
    const padded = await windows(f, false);
    assert.ok(padded.every(({ clips, length }) => clips.length === 1 && length < window));
    assert.deepEqual(
      padded.map((w) => w.clips[0]),
      joined.map((w) => w.clips[0]),
      'the first reference clip is the one drawn without joining',
    );
    // Warping draws from a stream of its own: the same references, from the same frames (a clip's bands all hold
    // one value, which a warp keeps).
    const mel = { n_mels: nMels, fmin_hz: 0, fmax_hz: 8000, mel_scale: 'slaney' as const };
    assert.deepEqual(await windows(f, true, 0, { max: 0.3, share: 1, mel }), joined);
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test('a speaker with no other clip keeps a padded window of its own clip', async () => {
  const f = fixture((i) => i, 8);
  try {
    for (const { clip, clips, length } of await windows(f, true)) {
      assert.deepEqual(clips, [clip]);
      assert.equal(length, f.items[clip].frames);
    }
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test('with reference_join the rule admits a window of up to 4 of the longest clips', () => {
  const loaded = loadConfig(presetPath('tiny'), { set: ['limits.max_audio_s=2', 'batching.reference_frames=400'] })
    .loaded!;
  const fired = (join: boolean) =>
    lintConfig(
      { ...loaded, config: { ...loaded.config, batching: { ...loaded.config.batching, reference_join: join } } },
      { environment: false },
    )
      .filter((x) => x.ruleId === 'batching/reference-frames')
      .map((x) => x.message);
  assert.deepEqual(fired(true), []);
  assert.match(fired(false).join(), /reference_frames 400 is longer than the longest clip .* \(174 frames\)/);
  const over = {
    ...loaded.config,
    batching: { ...loaded.config.batching, reference_join: true, reference_frames: 800 },
  };
  assert.match(
    lintConfig({ ...loaded, config: over }, { environment: false })
      .filter((x) => x.ruleId === 'batching/reference-frames')
      .map((x) => x.message)
      .join(),
    /reference_frames 800 is longer than 4 of the longest clips .* \(696 frames\)/,
  );
});

test('the memory estimate counts the reference window as long as it is set, joined or not', () => {
  const config = loadConfig(presetPath('quickstart')).loaded!.config;
  const withFrames = (frames: number) =>
    estimateTrainingMemory({
      ...config,
      batching: { ...config.batching, reference_frames: frames, reference_join: true },
    }).activationBytes;
  // A window 4× as long: its activations grow with it (its attention as frames² a head).
  assert.ok(withFrames(2700) > 3 * withFrames(675), `${withFrames(2700)} against ${withFrames(675)}`);
  assert.ok(withFrames(96) < withFrames(192));
});

test("a speaker of thousands of clips: joined windows are the speaker's, distinct, and not the utterance", async () => {
  const f = fixture((i) => (i < 3000 ? 0 : 1), 3010);
  try {
    for (const { clip, clips } of await windows(f, true)) {
      assert.ok(clips.length >= 2, `${clips.length} clips`);
      assert.ok(!clips.includes(clip));
      assert.equal(new Set(clips).size, clips.length);
      assert.ok(clips.every((c) => c < 3000 === clip < 3000));
    }
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});

test("validation's loader, as the trainer makes it, joins references; warping is not among its options", async () => {
  const { loaderCommon } = await import('../../src/core/training/loop/run-parts.js');
  const { DataLoader } = await import('../../src/core/data/loader.js');
  const loaded = loadConfig(presetPath('tiny')).loaded!;
  const config = {
    ...loaded.config,
    audio: { ...loaded.config.audio, n_mels: nMels },
    batching: { ...loaded.config.batching, reference_frames: window, reference_join: true, voice_warp: 0.3 },
  };
  const f = fixture((i) => i % 3, 24);
  try {
    const common = loaderCommon(config, { cachePath: f.path, stats: { mean: [0, 0, 0, 0], std: [1, 1, 1, 1] } });
    assert.equal('voiceWarp' in common, false);
    const loader = new DataLoader({ ...common, items: f.items, plan: f.plan, shuffle: false, depth: 2, producers: 0 });
    const b = (await loader.next())!;
    for (let j = 0; j < b.shape.batchSize; j++) {
      if (b.melLengths[j] === 0) continue;
      // A window of 100 frames from clips of 12 to 31: joined, it holds more than one clip's worth.
      assert.ok(b.refLengths[j] > 31, `row ${j}: ${b.refLengths[j]} frames`);
    }
    loader.release(b);
    await loader.close();
  } finally {
    rmSync(f.dir, { recursive: true, force: true });
  }
});
