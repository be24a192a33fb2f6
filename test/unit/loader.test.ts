// The prefetch ring and producers on a real SQLite cache: batches arrive in the planned order with
// the right (normalised, padded) contents, identically with 0, 1 or 2 producer threads, and a run
// restarted at a saved position continues with exactly the batches the first run would have had.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { FeatureCache } from '../../src/core/cache/cache.js';
import { epochBatches, mulberry32, planBuckets } from '../../src/core/data/buckets.js';
import { DataLoader, type LoadedBatch } from '../../src/core/data/loader.js';
import type { ProducerItem } from '../../src/core/data/producer.js';
import { processClip } from '../../src/core/data/audio/index.js';
import type { AudioConfig } from '../../src/core/config/schema.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { repoRoot } from '../helpers/cli.js';
import { pcm16Wav, tone } from '../helpers/wav.js';

const nMels = 8;

function fixture(n: number) {
  const path = join(mkdtempSync(join(tmpdir(), 'xtts-loader-')), 'cache.sqlite');
  const cache = FeatureCache.open(path);
  const rand = mulberry32(9);
  const items: ProducerItem[] = [];
  const mels: Float32Array[] = [];
  const features = [];
  for (let i = 0; i < n; i++) {
    const frames = 10 + Math.floor(rand() * 50);
    const mel = new Float32Array(frames * nMels).map(() => rand() * 4 - 2);
    mels.push(mel);
    features.push({ key: `feature:${i}`, feature: { frames, nMels, durationS: frames / 86, mel } });
    items.push({
      featureKey: `feature:${i}`,
      frames,
      tokens: Int32Array.from({ length: 5 + (i % 7) }, (_, t) => 1 + ((i + t) % 30)),
      language: i % 2,
      speaker: i % 3,
    });
  }
  cache.putMany({ features });
  cache.close();
  const plan = planBuckets(
    items.map((it) => ({ tokens: it.tokens.length, frames: it.frames })),
    { buckets: 3, batchSize: 4, frameBudget: null, frameMultiple: 2 },
  );
  const mean = new Float32Array(nMels).fill(0.5);
  const std = new Float32Array(nMels).fill(2);
  return { path, items, mels, plan, mean, std };
}

async function collect(
  f: Pick<ReturnType<typeof fixture>, 'path' | 'items' | 'plan' | 'mean' | 'std'>,
  producers: number,
  maxBatches: number,
  start?: { epoch: number; batch: number },
  recomputeAudio?: AudioConfig,
) {
  const loader = new DataLoader({
    cachePath: f.path,
    items: f.items,
    plan: f.plan,
    mean: f.mean,
    std: f.std,
    seed: 5,
    shuffle: true,
    depth: 3,
    producers,
    refFrames: 16,
    nMels,
    start,
    maxBatches,
    recomputeAudio,
  });
  const out: { pos: [number, number]; tokens: number[]; mel: number[]; melLengths: number[]; refLengths: number[] }[] =
    [];
  const batches: LoadedBatch[] = [];
  for (;;) {
    const b = await loader.next();
    if (!b) break;
    batches.push(b);
    out.push({
      pos: [b.epoch, b.index],
      tokens: [...b.tokens],
      mel: [...b.mel],
      melLengths: [...b.melLengths],
      refLengths: [...b.refLengths],
    });
    loader.release(b);
  }
  await loader.close();
  return { out, batches };
}

test('batches follow the plan with normalised, padded contents', async () => {
  const f = fixture(30);
  const perEpoch = epochBatches(f.plan, 5, 0, true);
  const { out, batches } = await collect(f, 1, perEpoch.length);
  assert.equal(out.length, perEpoch.length);
  batches.forEach((b, k) => {
    const planned = perEpoch[k];
    assert.equal(b.bucket, planned.bucket);
    const shape = b.shape;
    planned.items.forEach((itemIndex, j) => {
      const item = f.items[itemIndex];
      const filler = j >= planned.items.length - planned.fillers;
      assert.equal(out[k].melLengths[j], filler ? 0 : item.frames);
      assert.deepEqual(out[k].tokens.slice(j * shape.tokens, j * shape.tokens + item.tokens.length), [...item.tokens]);
      assert.ok(
        out[k].tokens.slice(j * shape.tokens + item.tokens.length, (j + 1) * shape.tokens).every((t) => t === 0),
        'token padding is 0',
      );
      const got = out[k].mel[j * shape.frames * nMels + 3];
      assert.ok(Math.abs(got - (f.mels[itemIndex][3] - 0.5) / 2) < 1e-6, 'mel normalised per bin');
      assert.ok(
        out[k].mel
          .slice(j * shape.frames * nMels + item.frames * nMels, (j + 1) * shape.frames * nMels)
          .every((x) => x === 0),
        'frame padding is 0',
      );
      assert.ok(out[k].refLengths[j] > 0 && out[k].refLengths[j] <= 16);
    });
  });
});

test('0, 1 and 2 producers deliver identical batches; a restart at a saved position continues exactly', async () => {
  const f = fixture(40);
  const n = 25; // crosses an epoch boundary
  const one = (await collect(f, 1, n)).out;
  const two = (await collect(f, 2, n)).out;
  const none = (await collect(f, 0, n)).out;
  assert.deepEqual(two, one);
  assert.deepEqual(none, one);
  const k = 11;
  const [epoch, index] = one[k - 1].pos;
  const resumed = (await collect(f, 2, n - k, { epoch, batch: index + 1 })).out;
  assert.deepEqual(resumed, one.slice(k));
});

test("a missing feature fails the loader with the producer's message instead of hanging", async () => {
  const f = fixture(12);
  f.items[3] = { ...f.items[3], featureKey: 'feature:missing' };
  await assert.rejects(collect(f, 1, 50), /feature:missing is missing from the cache/);
});

test(
  "with the cache off (recomputeAudio), producers rebuild each clip's features " +
    'from its WAV: the same batches as from the cache',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-loader-audio-'));
    const audio = { ...loadConfig(presetPath('quickstart')).loaded!.config.audio, n_mels: nMels };
    const cachePath = join(dir, 'cache.sqlite');
    const cache = FeatureCache.open(cachePath);
    const items: ProducerItem[] = [];
    const features = [];
    for (let i = 0; i < 10; i++) {
      const audioPath = join(dir, `u${i}.wav`);
      // Tones of different lengths and pitches at 16 kHz: the producer must also resample to 22.05 kHz.
      writeFileSync(audioPath, pcm16Wav(tone(0.4 + 0.05 * i, 16000, 150 + 40 * i), 16000));
      const clip = processClip(readFileSync(audioPath), audio, audioPath);
      features.push({
        key: `feature:${i}`,
        feature: { frames: clip.frames, nMels, durationS: clip.durationS, mel: clip.mel },
      });
      items.push({
        featureKey: `feature:${i}`,
        frames: clip.frames,
        tokens: Int32Array.of(1, 2, 3 + i),
        language: 0,
        speaker: i % 2,
        audioPath,
      });
    }
    cache.putMany({ features });
    cache.close();
    const plan = planBuckets(
      items.map((it) => ({ tokens: it.tokens.length, frames: it.frames })),
      { buckets: 2, batchSize: 3, frameBudget: null, frameMultiple: 2 },
    );
    const f = {
      path: cachePath,
      items,
      mels: [],
      plan,
      mean: new Float32Array(nMels).fill(-3),
      std: new Float32Array(nMels).fill(1.5),
    };
    const cached = (await collect(f, 1, 8)).out;
    const recomputed = (await collect(f, 1, 8, undefined, audio)).out;
    assert.equal(recomputed.length, 8);
    assert.deepEqual(recomputed, cached);
    // A moved WAV is reported with its path, not as a hang.
    rmSync(items[4].audioPath!);
    await assert.rejects(collect(f, 1, 8, undefined, audio), new RegExp(`u4\\.wav`));
    rmSync(dir, { recursive: true, force: true });
  },
);

// Every run starts its producer threads, each of which loads its modules afresh: through the cache's index they
// once loaded the config subsystem (ajv, the schema) and the backends, ~0.5 s of CPU a thread.
test('a producer thread loads neither the config subsystem, ajv nor tfjs', () => {
  const hook = `import { writeSync } from 'node:fs';
export async function load(url, context, next) { writeSync(2, 'loaded ' + url + '\\n'); return next(url, context); }`;
  const entry = pathToFileURL(join(repoRoot, 'src', 'core', 'dist', 'data', 'producer-worker.js')).href;
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
await import(${JSON.stringify(entry)});`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const loaded = r.stderr.split('\n').filter((l) => l.startsWith('loaded '));
  assert.ok(
    loaded.some((l) => l.endsWith('/data/producer.js')),
    r.stderr,
  );
  assert.deepEqual(
    loaded.filter((l) => /\/dist\/(config|backend)\/|node_modules\/(ajv|@sinclair|@tensorflow)\//.test(l)),
    [],
  );
});
