// The audio half of preprocessing: content-hash every clip, take what the cache has, compute the
// rest in worker threads, and write results in small transactions so that a killed build keeps all
// finished clips and resumes with the rest. The threads are our own (not a pool library): the same
// mechanism as the producers, which also runs from the single-file bundle.
import { Worker } from 'node:worker_threads';
import { contentKey, type FeatureCache } from '../cache/index.js';
import type { AudioConfig } from '../config/index.js';
import { AUDIO_FRONTEND_VERSION } from './audio/index.js';
import { featureTask, type FeatureTask, type FeatureTaskResult } from './feature-worker.js';
import type { ManifestRow, SkipReason } from './manifest.js';
import { QUIET_PEAK } from './source-notes.js';
import { workerEntry } from '../util/index.js';

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

/**
 * What a clip's recording lacks that no feature can make up: a rate below the model's (upsampled, it has nothing
 * above half its own rate) or 8-bit samples (their quantisation hiss). Kept in the cache beside the clip's features.
 */
export interface SourceNote {
  hz: number;
  pcmBits?: number;
  /** The loudest sample (full scale 1), where it is below QUIET_PEAK. */
  peak?: number;
}

const SOURCE_NOTE_KIND = 'source-note';
const sourceNoteKey = (featureKey: string) => `source:${featureKey}`;

function sourceNote(source: SourceNote, audio: AudioConfig): SourceNote | undefined {
  const quiet = source.peak !== undefined && source.peak < QUIET_PEAK;
  const low = source.hz < audio.sample_rate_hz || (source.pcmBits !== undefined && source.pcmBits <= 8) || quiet;
  if (!low) return undefined;
  const { peak, ...rest } = source;
  return quiet ? source : rest;
}

export interface FeatureStageResult {
  features: Map<string, FeatureInfo>;
  /** The clips of this stage whose recordings lack something (SourceNote), by feature key. */
  notes: Map<string, SourceNote>;
  failures: { row: ManifestRow; reason: SkipReason; message: string }[];
  computed: number;
  fromCache: number;
  timings: { hashMs: number; computeMs: number; writeMs: number; wallMs: number; perClipMs: number[] };
}

export function featureKeyFor(audioSha256: string, audio: AudioConfig): string {
  // The audio front end's own version enters the key: new resampling or mel numerics for the same
  // bytes and settings must not reuse features computed the old way.
  return contentKey('feature', {
    audio: audioSha256,
    settings: audio,
    version: FEATURE_CODE_VERSION,
    frontend: AUDIO_FRONTEND_VERSION,
  });
}

/**
 * A small pool of feature threads with back-pressure: at most `inFlight` tasks per thread are
 * queued, results stream back as they finish, and a thread that dies fails the stage loudly.
 */
async function runPool<T>(
  threads: number,
  items: readonly T[],
  task: (item: T) => FeatureTask,
  onResult: (item: T, r: FeatureTaskResult) => void,
): Promise<void> {
  const workers = Array.from(
    { length: threads },
    () =>
      new Worker(workerEntry(import.meta.url, 'data/feature-worker.js', 'feature worker'), {
        workerData: { xttsRole: 'feature' },
      }),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      let next = 0;
      let done = 0;
      const pending = new Map<number, T>();
      const feed = (w: Worker) => {
        if (next >= items.length) return;
        const id = next++;
        pending.set(id, items[id]);
        w.postMessage({ id, task: task(items[id]) });
      };
      for (const w of workers) {
        w.on('message', (m: { id: number; result: FeatureTaskResult }) => {
          const item = pending.get(m.id)!;
          pending.delete(m.id);
          try {
            onResult(item, m.result);
          } catch (e) {
            // A result that cannot be taken (a full disk under the cache) fails the stage, never hangs it.
            reject(e);
            return;
          }
          if (++done === items.length) resolve();
          else feed(w);
        });
        w.on('error', reject);
        w.on('exit', (code) => {
          if (done < items.length) reject(new Error(`a feature worker exited with code ${code}`));
        });
        // Two tasks per thread in flight: the next is queued while one is computed.
        feed(w);
        feed(w);
      }
      if (items.length === 0) resolve();
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
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
  // One computation a distinct clip: rows whose audio is the same bytes (a corpus of links or copies) share it.
  const todo = new Map<string, { row: ManifestRow; key: string; rows: ManifestRow[] }>();
  const notes = new Map<string, SourceNote>();
  const noted = o.cache.blobsOfKind(SOURCE_NOTE_KIND);
  let fromCache = 0;
  for (const row of o.rows) {
    const key = featureKeyFor(o.cache.audioHash(row.audioPath), o.audio);
    const info = o.cache.getFeatureInfo(key);
    if (info) {
      const note = noted.get(sourceNoteKey(key));
      if (note) notes.set(key, JSON.parse(note.toString('utf8')) as SourceNote);
      features.set(row.id, { featureKey: key, frames: info.frames, durationS: info.durationS });
      fromCache++;
      continue;
    }
    const failure = o.cache.getFailure(key);
    if (failure) failures.push({ row, reason: failure.reason as SkipReason, message: failure.message });
    else if (todo.has(key)) todo.get(key)!.rows.push(row);
    else todo.set(key, { row, key, rows: [row] });
  }
  const hashMs = performance.now() - t0;
  const total = o.rows.length;
  let done = fromCache + failures.length;
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
  const accept = (item: { row: ManifestRow; key: string; rows: ManifestRow[] }, r: FeatureTaskResult) => {
    if (r.ok) {
      pending.features!.push({
        key: item.key,
        feature: { frames: r.frames, nMels: r.nMels, durationS: r.durationS, mel: r.mel },
      });
      for (const row of item.rows)
        features.set(row.id, { featureKey: item.key, frames: r.frames, durationS: r.durationS });
      const note = sourceNote(r.source, o.audio);
      if (note) {
        notes.set(item.key, note);
        o.cache.putBlob(sourceNoteKey(item.key), SOURCE_NOTE_KIND, JSON.stringify(note));
      }
      perClipMs.push(r.ms.read + r.ms.process);
    } else {
      pending.failures!.push({ key: item.key, failure: { reason: r.reason, message: r.message } });
      for (const row of item.rows) failures.push({ row, reason: r.reason, message: r.message });
    }
    done += item.rows.length;
    if (pending.features!.length + pending.failures!.length >= commitEvery) commit();
    o.onProgress?.({ done, total, computed: done - fromCache, fromCache, elapsedMs: performance.now() - t0 });
  };
  const tc = performance.now();
  const distinct = [...todo.values()];
  if (distinct.length > 0 && o.workers > 0) {
    await runPool(
      Math.min(o.workers, distinct.length),
      distinct,
      (item) => ({ audioPath: item.row.audioPath, audio: o.audio }),
      accept,
    );
  } else {
    for (const item of distinct) accept(item, await featureTask({ audioPath: item.row.audioPath, audio: o.audio }));
  }
  commit();
  const computeMs = performance.now() - tc;
  return {
    features,
    notes,
    failures,
    computed: distinct.length,
    fromCache,
    timings: { hashMs, computeMs, writeMs, wallMs: performance.now() - t0, perClipMs },
  };
}
