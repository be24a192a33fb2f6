// Log-mels of made-up clips in a real feature cache, and the batches a DataLoader makes of them (unnormalised:
// mean 0, std 1), utterance by utterance: for tests of what the producers put into a batch.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FeatureCache } from '../../src/core/cache/cache.js';
import { planBuckets } from '../../src/core/data/buckets.js';
import { type LoadedBatch, DataLoader, type LoaderOptions } from '../../src/core/data/loader.js';
import type { ProducerItem } from '../../src/core/data/producer.js';

export interface CachedClips {
  dir: string;
  path: string;
  items: ProducerItem[];
  plan: ReturnType<typeof planBuckets>;
  nMels: number;
}

/** The clips (log-mel [frames, nMels], speaker) in a cache in a new temporary folder, planned in batches of 4. */
export function cachedClips(
  prefix: string,
  nMels: number,
  clips: readonly { mel: Float32Array; speaker: number }[],
  buckets: number,
): CachedClips {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, 'cache.sqlite');
  const cache = FeatureCache.open(path);
  const items = clips.map(({ mel, speaker }, i) => ({
    featureKey: `f:${i}`,
    frames: mel.length / nMels,
    tokens: Int32Array.of(1, 2),
    language: 0,
    speaker,
  }));
  cache.putMany({
    features: items.map((it, i) => ({
      key: it.featureKey,
      feature: { frames: it.frames, nMels, durationS: it.frames / 86, mel: clips[i].mel },
    })),
  });
  cache.close();
  const plan = planBuckets(
    items.map((it) => ({ tokens: it.tokens.length, frames: it.frames })),
    { buckets, batchSize: 4, frameBudget: null, frameMultiple: 2 },
  );
  return { dir, path, items, plan, nMels };
}

/** Each real utterance of the first `batches` batches, in order: its batch, its row, the batch's reference window. */
export async function eachUtterance<T>(
  f: CachedClips,
  options: Pick<
    LoaderOptions,
    'seed' | 'producers' | 'refFrames' | 'referenceJoin' | 'voiceWarp' | 'referenceRate' | 'rateItems'
  >,
  batches: number,
  visit: (b: LoadedBatch, row: number) => T,
): Promise<T[]> {
  const loader = new DataLoader({
    cachePath: f.path,
    items: f.items,
    plan: f.plan,
    mean: new Float32Array(f.nMels),
    std: new Float32Array(f.nMels).fill(1),
    shuffle: true,
    depth: 3,
    nMels: f.nMels,
    maxBatches: batches,
    ...options,
  });
  const out: T[] = [];
  try {
    for (;;) {
      const b = await loader.next();
      if (!b) break;
      for (let j = 0; j < b.shape.batchSize; j++) if (b.melLengths[j] > 0) out.push(visit(b, j));
      loader.release(b);
    }
  } finally {
    await loader.close();
  }
  return out;
}
