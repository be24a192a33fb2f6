// batching.reference_join: a reference window that one clip leaves part empty is filled with further clips of
// the same speaker (each once, never the utterance itself, at most REFERENCE_JOIN_CLIPS), so the conditioning
// encoder sees as many seconds of the voice as the window holds; without it the window is padded. The
// config rule then admits windows up to that many of the longest clips.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FeatureCache } from '../../src/core/cache/cache.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { lintConfig } from '../../src/core/config/rules.js';
import { planBuckets } from '../../src/core/data/buckets.js';
import { DataLoader } from '../../src/core/data/loader.js';
import { type ProducerItem, REFERENCE_JOIN_CLIPS } from '../../src/core/data/producer.js';

const nMels = 4;
const window = 100;

// Clip i is `frames` frames of the value i + 1 in every band, so the clips a window holds can be read back.
function fixture(speakerOf: (i: number) => number, n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-join-'));
  const path = join(dir, 'cache.sqlite');
  const cache = FeatureCache.open(path);
  const items: ProducerItem[] = [];
  const features = [];
  for (let i = 0; i < n; i++) {
    const frames = 12 + ((i * 7) % 20);
    const mel = new Float32Array(frames * nMels).fill(i + 1);
    features.push({ key: `f:${i}`, feature: { frames, nMels, durationS: frames / 86, mel } });
    items.push({ featureKey: `f:${i}`, frames, tokens: Int32Array.of(1, 2), language: 0, speaker: speakerOf(i) });
  }
  cache.putMany({ features });
  cache.close();
  const plan = planBuckets(
    items.map((it) => ({ tokens: it.tokens.length, frames: it.frames })),
    { buckets: 1, batchSize: 4, frameBudget: null, frameMultiple: 2 },
  );
  return { dir, path, items, plan };
}

/** Per utterance: its clip, the clips its reference window holds in order (runs of one value), its length. */
async function windows(f: ReturnType<typeof fixture>, referenceJoin: boolean, producers = 0) {
  const loader = new DataLoader({
    cachePath: f.path,
    items: f.items,
    plan: f.plan,
    mean: new Float32Array(nMels),
    std: new Float32Array(nMels).fill(1),
    seed: 3,
    shuffle: true,
    depth: 2,
    producers,
    refFrames: window,
    nMels,
    maxBatches: 10,
    referenceJoin,
  });
  const seen: { clip: number; clips: number[]; runs: number[]; length: number }[] = [];
  for (;;) {
    const b = await loader.next();
    if (!b) break;
    for (let j = 0; j < b.shape.batchSize; j++) {
      if (b.melLengths[j] === 0) continue;
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
      seen.push({ clip, clips, runs, length });
    }
    loader.release(b);
  }
  await loader.close();
  return seen;
}

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
