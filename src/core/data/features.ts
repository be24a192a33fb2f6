// The audio half of preprocessing: content-hash every clip, take what the cache has, compute the
// rest in a worker pool, and write results in small transactions so that a killed build keeps all
// finished clips and resumes with the rest.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { contentKey, type FeatureCache } from '../cache/cache.js';
import type { AudioConfig } from '../config/schema.js';
import type { FeatureTaskResult } from './feature-worker.js';
import { featureTask } from './feature-worker.js';
import type { ManifestRow, SkipReason } from './manifest.js';

/** Bumped when the feature computation changes in a way the settings do not capture. */
export const FEATURE_CODE_VERSION = 1;

export interface FeatureInfo {
  featureKey: string;
  frames: number;
  durationS: number;
}

export interface FeatureProgress {
  done: number;
  total: number;
  computed: number;
  fromCache: number;
  elapsedMs: number;
}

export interface FeatureStageResult {
  features: Map<string, FeatureInfo>;
  failures: { row: ManifestRow; reason: SkipReason; message: string }[];
  computed: number;
  fromCache: number;
  timings: { hashMs: number; computeMs: number; writeMs: number; wallMs: number; perClipMs: number[] };
}

export function featureKeyFor(audioSha256: string, audio: AudioConfig): string {
  return contentKey('feature', { audio: audioSha256, settings: audio, version: FEATURE_CODE_VERSION });
}

function workerFile(): string {
  const bundled = (globalThis as { __XTTS_WORKER_ENTRY__?: string }).__XTTS_WORKER_ENTRY__;
  if (bundled) return bundled;
  const js = fileURLToPath(new URL('./feature-worker.js', import.meta.url));
  if (existsSync(js)) return js;
  const built = fileURLToPath(new URL('../dist/data/feature-worker.js', import.meta.url));
  if (existsSync(built)) return built;
  throw new Error(`the feature worker is not built (${built}): run \`npm run build\``);
}

export interface FeatureStageOptions {
  cache: FeatureCache;
  rows: readonly ManifestRow[];
  audio: AudioConfig;
  /** Worker threads; 0 computes on this thread. */
  workers: number;
  onProgress?: (p: FeatureProgress) => void;
  /** Rows per write transaction. */
  commitEvery?: number;
}

export async function prepareFeatures(o: FeatureStageOptions): Promise<FeatureStageResult> {
  const t0 = performance.now();
  const features = new Map<string, FeatureInfo>();
  const failures: FeatureStageResult['failures'] = [];
  const todo: { row: ManifestRow; key: string }[] = [];
  let fromCache = 0;
  for (const row of o.rows) {
    const key = featureKeyFor(o.cache.audioHash(row.audioPath), o.audio);
    const info = o.cache.getFeatureInfo(key);
    if (info) {
      features.set(row.id, { featureKey: key, frames: info.frames, durationS: info.durationS });
      fromCache++;
      continue;
    }
    const failure = o.cache.getFailure(key);
    if (failure) failures.push({ row, reason: failure.reason as SkipReason, message: failure.message });
    else todo.push({ row, key });
  }
  const hashMs = performance.now() - t0;
  const total = o.rows.length;
  let done = total - todo.length;
  let writeMs = 0;
  const perClipMs: number[] = [];
  const pending: Parameters<FeatureCache['putMany']>[0] = { features: [], failures: [] };
  const commit = () => {
    const t = performance.now();
    o.cache.putMany(pending);
    pending.features = [];
    pending.failures = [];
    writeMs += performance.now() - t;
  };
  const commitEvery = o.commitEvery ?? 64;
  const accept = (item: { row: ManifestRow; key: string }, r: FeatureTaskResult) => {
    if (r.ok) {
      pending.features!.push({ key: item.key, feature: { frames: r.frames, nMels: r.nMels, durationS: r.durationS, mel: r.mel } });
      features.set(item.row.id, { featureKey: item.key, frames: r.frames, durationS: r.durationS });
      perClipMs.push(r.ms.read + r.ms.process);
    } else {
      pending.failures!.push({ key: item.key, failure: { reason: r.reason, message: r.message } });
      failures.push({ row: item.row, reason: r.reason, message: r.message });
    }
    done++;
    if (pending.features!.length + pending.failures!.length >= commitEvery) commit();
    o.onProgress?.({ done, total, computed: done - fromCache, fromCache, elapsedMs: performance.now() - t0 });
  };
  const tc = performance.now();
  if (todo.length > 0 && o.workers > 0) {
    const pool = new Piscina({ filename: workerFile(), maxThreads: o.workers, minThreads: Math.min(o.workers, todo.length), idleTimeout: 1000 });
    try {
      // Keep at most 4 tasks per thread in flight so results stream back in order of completion.
      const inFlight = new Set<Promise<void>>();
      for (const item of todo) {
        const p: Promise<void> = pool.run({ audioPath: item.row.audioPath, audio: o.audio }).then((r: FeatureTaskResult) => accept(item, r));
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        if (inFlight.size >= o.workers * 4) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    } finally {
      await pool.destroy();
    }
  } else {
    for (const item of todo) accept(item, featureTask({ audioPath: item.row.audioPath, audio: o.audio }));
  }
  commit();
  const computeMs = performance.now() - tc;
  return { features, failures, computed: todo.length, fromCache, timings: { hashMs, computeMs, writeMs, wallMs: performance.now() - t0, perClipMs } };
}
