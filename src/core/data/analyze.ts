// `xtts analyze-data-pipeline` as one core call: measure each input stage on the real dataset —
// manifest, text front end cold (scratch cache) and warm, audio read/decode/resample/trim/mel per
// file, batch assembly, and the prefetch ring against a consumer that takes a batch every stepMs —
// then grade the consumer's wait the way every xtts tool does and say what to change.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { FeatureCache } from '../cache/index.js';
import type { LoadedConfig, XttsConfig } from '../config/index.js';
import {
  configInvalid,
  DATA_BLOCKING_RULES,
  effectiveWorkers,
  lintConfig,
  requireAcousticTask,
} from '../config/index.js';
import { gradeInputWait, THRESHOLDS } from '../config/index.js';
import { makeTemporaryFolder, removeTemporaryFolder, summarize, type Summary } from '../util/index.js';
import { normaliseLoudness, trimSilence } from './audio/dynamics.js';
import { melExtractorFor, readAudioFile } from './audio/index.js';
import { resample } from './audio/resample.js';
import { decodeAudio, sniffAudio } from './audio/decode.js';
import { batchSizeWithin, type BucketPlan, planBuckets } from './buckets.js';
import { DataLoader, type LoaderOptions, producerThreads } from './loader.js';
import { describeDataset } from './describe.js';
import { voiceWarpFor } from './voice-warp.js';
import { buildManifest, type Manifest, type ManifestRow, type SkippedRow } from './manifest.js';
import {
  assignLanguages,
  loaderItems,
  type PreparedDataset,
  prepareDataset,
  prepareTexts,
  type PrepareProgress,
} from './prepare.js';
import { Phonemizer } from './text/phonemizer.js';

export interface StageRow {
  stage: string;
  /** What one sample is: a file, a row, a batch. */
  unit: string;
  ms: Summary;
}

export interface Recommendation {
  key: string;
  value: string;
  why: string;
  /** The validator rule that checks the same thing. */
  rule?: string;
}

export interface PipelineAnalysis {
  datasetDir: string;
  rows: { train: number; validation: number; skipped: number };
  /** What was found (describeDataset): the layout, rows, hours, speakers and languages, and warnings. */
  dataset: { line: string; warnings: string[] };
  skipped: SkippedRow[];
  stages: StageRow[];
  text: { rows: number; coldMs: number; warmMs: number; coldRowsPerS: number; warmRowsPerS: number; mode: string };
  audio: { files: number; audioSeconds: number; realtimeFactor: number };
  prepare: { ms: number; computedFeatures: number; cachedFeatures: number };
  buckets: {
    count: number;
    shapes: { batchSize: number; tokens: number; frames: number; batches: number }[];
    paddingShare: number;
  };
  ring: {
    stepMs: number;
    stepMsSource: 'flag' | 'run' | 'default';
    batches: number;
    depth: number;
    producers: number;
    waitShare: number;
    waitMs: Summary;
    readySlots: Summary;
    grade: 'not' | 'moderately' | 'highly';
  };
  recommendations: Recommendation[];
}

export interface AnalyzeOptions {
  datasetDir?: string;
  stepMs?: number;
  stepMsSource?: 'flag' | 'run' | 'default';
  /** Audio files to time stage by stage (all when fewer). */
  audioFiles?: number;
  /** Batches to pull through the ring. */
  batches?: number;
  onProgress?: (message: string) => void;
  /** Progress of the dataset preparation (text and features). */
  onPrepareProgress?: (p: PrepareProgress) => void;
}

export const DEFAULT_STEP_MS = 100;

/** The loader's settings shared by the assembly and ring measurements. */
type RingLoaderOptions = Omit<LoaderOptions, 'depth' | 'producers' | 'maxBatches'>;

/** Why a vocoder's config is not analysed here, and what to do instead. */
const ANALYZES =
  "analyze-data-pipeline measures the acoustic model's input pipeline (text, buckets, reference windows); a " +
  'vocoder trains on random segments of the cached log-mels';
const ANALYZE_INSTEAD =
  "analyze an acoustic config of the same dataset (the features are the same); a vocoder run's progress line " +
  'shows its data wait';

export async function analyzePipeline(loaded: LoadedConfig, options: AnalyzeOptions = {}): Promise<PipelineAnalysis> {
  requireAcousticTask(loaded, ANALYZES, ANALYZE_INSTEAD);
  const blockers = lintConfig(loaded, { environment: false, only: DATA_BLOCKING_RULES }).filter(
    (f) => f.severity === 'error',
  );
  if (blockers.length) throw configInvalid(loaded.file, blockers, loaded.set);
  const config = loaded.config;
  const datasetDir = options.datasetDir ?? loaded.datasetDir;
  const { manifest, stage: manifestStage } = timeManifest(datasetDir, config);
  const stages: StageRow[] = [manifestStage];

  options.onProgress?.('text front end');
  const text = await timeTextFrontEnd(manifest, config);
  stages.push({ stage: `text front end, cold (${config.text.tokenizer})`, unit: 'run', ms: summarize([text.coldMs]) });
  stages.push({ stage: 'text front end, warm (cache)', unit: 'run', ms: summarize([text.warmMs]) });

  options.onProgress?.('audio front end');
  const files = [...manifest.train, ...manifest.validation].slice(0, options.audioFiles ?? 200);
  const audio = await timeAudioStages(files, config);
  stages.push(...audio.stages);

  // The real preparation (warm when the cache already holds this dataset).
  options.onProgress?.('preparing the dataset (feature cache)');
  const tp = performance.now();
  const prepared = await prepareDataset(loaded, { datasetDir, onProgress: options.onPrepareProgress });
  const prepareMs = performance.now() - tp;

  // Buckets and batch assembly through the ring, at the batch size train would use.
  const batch = batchSizeWithin(config.batching.batch_size, prepared.train.length);
  const plan = planBuckets(
    prepared.train.map((i) => ({ tokens: i.tokens.length, frames: i.frames })),
    {
      buckets: config.batching.buckets,
      batchSize: batch.size,
      frameBudget: config.batching.frame_budget,
      frameMultiple: config.model.reduction_factor,
    },
  );
  const stepMs = options.stepMs ?? DEFAULT_STEP_MS;
  const batches = options.batches ?? 50;
  const producers = producerThreads(config, availableParallelism());
  const loaderOptions = trainerLoaderOptions(prepared, plan, config);
  options.onProgress?.('batch assembly');
  const assembly = await timeBatchAssembly(loaderOptions, Math.min(batches, 20));
  stages.push({
    stage: config.pipeline.cache.enabled
      ? 'batch assembly (cache -> padded slot)'
      : 'batch assembly (audio -> features -> padded slot; cache off)',
    unit: 'batch',
    ms: summarize(assembly),
  });

  options.onProgress?.(`prefetch ring vs a ${stepMs} ms step`);
  const ring = await runRing(
    { ...loaderOptions, depth: config.pipeline.prefetch_depth, producers, maxBatches: batches },
    stepMs,
  );
  const grade = gradeInputWait(ring.waitShare);

  const recommendations = recommend(loaded, {
    grade,
    readySlots: summarize(ring.ready.slice(1)),
    assembly: summarize(assembly),
    stepMs,
    producers,
    paddingShare: plan.paddingShare,
    cores: availableParallelism(),
  });
  const rows = text.rows;
  return {
    datasetDir,
    rows: { train: prepared.train.length, validation: prepared.validation.length, skipped: prepared.skipped.length },
    dataset: withNote(describeDataset(prepared), batch.note),
    skipped: prepared.skipped,
    stages,
    text: {
      rows,
      coldMs: text.coldMs,
      warmMs: text.warmMs,
      coldRowsPerS: rows / (text.coldMs / 1000),
      warmRowsPerS: rows / (text.warmMs / 1000),
      mode: config.text.tokenizer,
    },
    audio: {
      files: audio.files,
      audioSeconds: audio.audioSeconds,
      realtimeFactor: audio.totalS ? audio.audioSeconds / audio.totalS : 0,
    },
    prepare: {
      ms: prepareMs,
      computedFeatures: prepared.cacheUse.features.computed,
      cachedFeatures: prepared.cacheUse.features.cached,
    },
    buckets: {
      count: plan.buckets.length,
      shapes: plan.buckets.map((b) => ({
        batchSize: b.batchSize,
        tokens: b.maxTokens,
        frames: b.maxFrames,
        batches: Math.ceil(b.items.length / b.batchSize),
      })),
      paddingShare: plan.paddingShare,
    },
    ring: {
      stepMs,
      stepMsSource: options.stepMsSource ?? (options.stepMs === undefined ? 'default' : 'flag'),
      batches: ring.waits.length,
      depth: config.pipeline.prefetch_depth,
      producers,
      waitShare: ring.waitShare,
      waitMs: summarize(ring.waits.slice(1)),
      readySlots: summarize(ring.ready.slice(1)),
      grade,
    },
    recommendations,
  };
}

/** The manifest (read + validate + split), built once to warm up and then timed over three runs. */
function timeManifest(datasetDir: string, config: XttsConfig): { manifest: Manifest; stage: StageRow } {
  const manifestTimes: number[] = [];
  let manifest = buildManifest(datasetDir, config.dataset);
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    manifest = buildManifest(datasetDir, config.dataset);
    manifestTimes.push(performance.now() - t);
  }
  return {
    manifest,
    stage: { stage: 'manifest (read + validate + split)', unit: 'run', ms: summarize(manifestTimes) },
  };
}

/** The text front end over every usable row, cold in a scratch cache and then warm from it. */
async function timeTextFrontEnd(
  manifest: Manifest,
  config: XttsConfig,
): Promise<{ rows: number; coldMs: number; warmMs: number }> {
  const scratch = makeTemporaryFolder('xtts-analyze-');
  const skipSink: SkippedRow[] = [];
  const rows = assignLanguages(manifest, config, (row, reason, detail) =>
    skipSink.push({ file: row.file, line: row.line, id: row.id, reason, detail }),
  );
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  let coldMs: number;
  let warmMs: number;
  try {
    const cache = FeatureCache.open(join(scratch, 'scratch.sqlite'));
    try {
      let t = performance.now();
      await prepareTexts(rows, config, cache, phonemizer);
      coldMs = performance.now() - t;
      t = performance.now();
      await prepareTexts(rows, config, cache, phonemizer);
      warmMs = performance.now() - t;
    } finally {
      cache.close();
    }
  } finally {
    phonemizer?.close();
    removeTemporaryFolder(scratch);
  }
  return { rows: rows.length, coldMs, warmMs };
}

/**
 * The audio front end stage by stage on each file (read, decode, resample, trim and loudness,
 * log-mel): a stage row per stage, the audio's length and the time it all took.
 */
/**
 * Each file through the stages preparation runs, timed: read, decode (whatever its container: WAV, FLAC, MP3 or
 * Ogg, whose decoding is the cost that matters for corpora shipped compressed), resample, trim, log-mel.
 */
async function timeAudioStages(
  files: readonly ManifestRow[],
  config: XttsConfig,
): Promise<{ stages: StageRow[]; files: number; audioSeconds: number; totalS: number }> {
  const per = {
    read: [] as number[],
    decode: [] as number[],
    resample: [] as number[],
    trim: [] as number[],
    mel: [] as number[],
    total: [] as number[],
  };
  let audioSeconds = 0;
  const mel = melExtractorFor(config.audio);
  const containers = new Map<string, number>();
  for (const row of files) {
    try {
      const t0 = performance.now();
      const bytes = readAudioFile(row.audioPath);
      const t1 = performance.now();
      const wav = await decodeAudio(bytes, row.audioPath);
      const t2 = performance.now();
      const kind = sniffAudio(bytes);
      if (typeof kind === 'string') containers.set(kind, (containers.get(kind) ?? 0) + 1);
      let samples = resample(wav.samples, wav.sampleRateHz, config.audio.sample_rate_hz);
      const t3 = performance.now();
      if (config.audio.trim.enabled) {
        const { start, end } = trimSilence(samples, config.audio.trim.top_db);
        samples = samples.subarray(start, end);
      }
      if (config.audio.loudness.enabled)
        samples = normaliseLoudness(samples, config.audio.sample_rate_hz, config.audio.loudness.target_lufs);
      const t4 = performance.now();
      mel.compute(samples);
      const t5 = performance.now();
      per.read.push(t1 - t0);
      per.decode.push(t2 - t1);
      per.resample.push(t3 - t2);
      per.trim.push(t4 - t3);
      per.mel.push(t5 - t4);
      per.total.push(t5 - t0);
      audioSeconds += wav.durationS;
    } catch {
      // Unusable files are reported by the preparation below, with their reason.
    }
  }
  const trimLabel = config.audio.loudness.enabled ? 'trim + loudness' : 'trim';
  const stages: StageRow[] = [];
  for (const [name, values] of [
    ['audio read', per.read],
    [`audio decode (${[...containers].map(([kind, n]) => `${n} ${kind}`).join(', ')})`, per.decode],
    [`resample to ${config.audio.sample_rate_hz} Hz`, per.resample],
    [trimLabel, per.trim],
    ['log-mel', per.mel],
    ['audio total', per.total],
  ] as const) {
    stages.push({ stage: name, unit: 'file', ms: summarize(values) });
  }
  const totalS = per.total.reduce((a, b) => a + b, 0) / 1000;
  return { stages, files: per.total.length, audioSeconds, totalS };
}

/** The loader settings the trainer uses for this prepared dataset and bucket plan. */
function trainerLoaderOptions(prepared: PreparedDataset, plan: BucketPlan, config: XttsConfig): RingLoaderOptions {
  return {
    cachePath: prepared.cachePath,
    items: loaderItems(prepared.train),
    plan,
    mean: prepared.stats.mean,
    std: prepared.stats.std,
    seed: config.training.seed,
    shuffle: config.batching.shuffle,
    refFrames: config.batching.reference_frames,
    nMels: config.audio.n_mels,
    // As the trainer does: without the cache, producers recompute features from the audio.
    recomputeAudio: config.pipeline.cache.enabled ? undefined : config.audio,
    referenceJoin: config.batching.reference_join,
    voiceWarp: voiceWarpFor(config),
  };
}

/** Batch assembly alone: one producer on this thread, no consumer work in between; ms per batch. */
async function timeBatchAssembly(loaderOptions: RingLoaderOptions, batches: number): Promise<number[]> {
  const assembly: number[] = [];
  const loader = new DataLoader({ ...loaderOptions, depth: 1, producers: 0, maxBatches: batches });
  for (;;) {
    const b = await loader.next();
    if (!b) break;
    assembly.push(b.waitMs);
    loader.release(b);
  }
  await loader.close();
  return assembly;
}

/**
 * The prefetch ring against a consumer that takes a batch every stepMs: each batch's wait and the
 * slots ready when it was taken, and the share of the steady-state time spent waiting.
 */
async function runRing(
  loaderOptions: LoaderOptions,
  stepMs: number,
): Promise<{ waits: number[]; ready: number[]; waitShare: number }> {
  const waits: number[] = [];
  const ready: number[] = [];
  const loader = new DataLoader(loaderOptions);
  const tr = performance.now();
  try {
    for (;;) {
      const b = await loader.next();
      if (!b) break;
      waits.push(b.waitMs);
      ready.push(b.readySlots);
      loader.release(b);
      await new Promise((r) => setTimeout(r, stepMs));
    }
  } finally {
    await loader.close();
  }
  const totalMs = performance.now() - tr;
  // The first batch is the pipeline filling, which a training run pays once; leave it out.
  const steadyWait = waits.slice(1).reduce((a, b) => a + b, 0);
  return { waits, ready, waitShare: steadyWait / Math.max(1, totalMs - waits[0]) };
}

function recommend(
  loaded: LoadedConfig,
  m: {
    grade: 'not' | 'moderately' | 'highly';
    readySlots: Summary;
    assembly: Summary;
    stepMs: number;
    producers: number;
    paddingShare: number;
    cores: number;
  },
): Recommendation[] {
  const c = loaded.config;
  const out: Recommendation[] = [];
  if (!c.pipeline.cache.enabled)
    out.push({
      key: 'pipeline.cache.enabled',
      value: 'true',
      why: 'every epoch recomputes features without it',
      rule: 'pipeline/cache',
    });
  if (c.batching.buckets === 0)
    out.push({
      key: 'batching.buckets',
      value: '4',
      why: 'dynamic shapes recompile kernels on most steps',
      rule: 'batching/static-shapes',
    });
  else if (m.paddingShare > 0.3 && c.batching.buckets < 8)
    out.push({
      key: 'batching.buckets',
      value: String(Math.min(8, c.batching.buckets * 2)),
      why: `${(m.paddingShare * 100).toFixed(0)}% of the padded frames are padding`,
      rule: 'batching/static-shapes',
    });
  if (m.grade === 'not') return out;
  // Producers cannot keep up: one batch takes longer to assemble than the trainer's step per producer.
  const perProducerMs = m.assembly.p50 / Math.max(1, m.producers);
  if (perProducerMs > m.stepMs * 0.8) {
    const needed = Math.ceil(m.assembly.p50 / (m.stepMs * 0.7));
    out.push({
      key: 'pipeline.workers',
      value: String(Math.min(Math.max(1, m.cores - 1), needed)),
      why:
        `assembling a batch takes ${m.assembly.p50.toFixed(1)} ms (median) for ` +
        `a ${m.stepMs} ms step with ${m.producers} ` +
        `producer${m.producers === 1 ? '' : 's'}`,
      rule: 'pipeline/workers-vs-cores',
    });
  }
  if (m.readySlots.p50 < 1 && c.pipeline.prefetch_depth < THRESHOLDS.maxUsefulPrefetchDepth) {
    out.push({
      key: 'pipeline.prefetch_depth',
      value: String(Math.min(THRESHOLDS.maxUsefulPrefetchDepth, c.pipeline.prefetch_depth * 2)),
      why: 'the ring is usually empty when the trainer asks: deeper buffering absorbs slow batches',
      rule: 'pipeline/prefetch-depth',
    });
  }
  return out;
}

/** The dataset's description with one more warning, where there is one. */
function withNote(d: PipelineAnalysis['dataset'], note: string | undefined): PipelineAnalysis['dataset'] {
  return note ? { ...d, warnings: [...d.warnings, note] } : d;
}
