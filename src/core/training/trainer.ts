// The training loop, top to bottom: prepare the data, pick the backend, build the model and the
// optimizer (or resume them), then per step: batch -> upload -> forward/backward/update -> (every
// log_every) one readback -> (intervals) validation, checkpoint, eval audio. Every step's spans go
// to the run database; nothing waits for the device except the readbacks the config asks for.
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, KernelCounter, mergeProgramTimes, noDeviceTime, type ProgramTime, programTimesPerStep, takeGpuError, timeOnDevice, type BackendChoice } from '../backend/index.js';
import type { CaptureState } from '../backend/step-capture.js';
import { stagedUploadStats } from '../backend/webgpu-uploads.js';
import { configInvalid, type LoadedConfig } from '../config/load.js';
import { formatBytes } from '../config/estimate.js';
import { lintConfig, TRAIN_BLOCKING_RULES } from '../config/rules.js';
import type { Backend, XttsConfig } from '../config/schema.js';
import { planBuckets } from '../data/buckets.js';
import { DataLoader, producerThreads, type LoadedBatch } from '../data/loader.js';
import { slotBytes } from '../data/ring.js';
import { prepareDataset, type PrepareProgress } from '../data/prepare.js';
import { ExitCode, XttsError } from '../errors.js';
import { writeFileAtomic } from '../util/output.js';
import { AlignmentSearcher } from '../model/align-worker.js';
import { type BatchAlignment, type BatchDims, disposeBatch, uploadBatch } from '../model/batch.js';
import { XttsModel } from '../model/model.js';
import { curveFigure } from '../render/figures.js';
import { GpuSampler } from '../telemetry/gpu-sampler.js';
import { HostGcRecorder, type HostGcSummary } from '../telemetry/host-gc.js';
import { toDeviceSampleRecord } from '../telemetry/gpu-sample.js';
import { type ReplicaStepRecord, RunDatabase } from '../telemetry/run-db.js';
import { EventFileWriter } from '../telemetry/tensorboard.js';
import { SpanTimer, type StepRecord } from '../telemetry/spans.js';
import { summarize } from '../util/stats.js';
import { assignArrays, CheckpointStore, refuseNonFinite, type CheckpointState, type NamedArray } from './checkpoint.js';
import { openRunFolder, runFolderForDataset } from './run-folder.js';
import { AdamW } from './optim/adamw.js';
import { type StepCaptureSummary, StepReplayer } from './optim/step-replay.js';
import { disposeStepResult, STEP_STATS, trainStep } from './optim/train-step.js';
import { planReplicas, ReplicaGroup } from './parallel/group.js';
import type { ReplicaUpdate } from './parallel/replica.js';
import { checkMemoryEstimate, checkModelBudget } from './budget.js';
import { loaderItems, synthesizeEval, validate, type ValidationResult } from './evaluation.js';
import { SideDevice, type SideResult } from './side-device.js';

/** mixed_fp16's first loss scale (2¹²) and the updates in a row after which it doubles. */
const MIXED_FP16_LOSS_SCALE = 4096;
const MIXED_FP16_GROWTH_INTERVAL = 1000;

/** Command buffers a replayed step is submitted in with the alignment lookahead (StepReplayer.stepInParts). */
const REPLAY_PARTS = 4;
/**
 * Pipelined steps (device.pipeline_steps): how many issued steps may wait unread. After issuing step N
 * the host reads step N − 4's flag (or its losses, where it logs), so the device holds steps N − 3 to
 * N while the host prepares and issues N + 1: a host faster than the device on average absorbs a stall
 * (a garbage collection, a slow batch) without the queue running dry. On an H100 host tiny's host
 * stopped for 10–28 ms every few dozen steps (full collections) and refilled the queue at only ~1 ms
 * a step (its host work 5.8 ms of a 6.7 ms device cycle): with two steps in hand the device ran dry
 * after most stops. Four against two, alternated in two calls: tiny busy 90.7–95.5% (8 runs, mean
 * 93.1%) against 86.5–93.4% (mean 90.6%), higher in every pair; small 95.4–98.4% against 92.1–96.8%;
 * normal 98% either way. With one step in hand, and every log step's losses read at once (the queue
 * drained then: tiny's log steps took 10.6–11.1 ms against 6.0–7.0 for the others), it was worse
 * still. A host slower than the device (tiny on slower CPUs) keeps it waiting either way.
 */
const PIPELINE_DEPTH = 4;
/**
 * Batches the alignment lookahead keeps prepared: one, or PIPELINE_DEPTH with pipelined steps. There
 * the host issues step N while the device still computes the steps before it, so a batch whose
 * alignment forward is queued just before step N has its scores only once those are done: queued
 * fewer steps ahead than there are steps in flight, the host would want the scores before they are
 * back and wait for the search while the device ran out of work (about 1 ms of a 5.3 ms tiny
 * mixed_fp16 step, queued one step ahead of two in flight). Queued PIPELINE_DEPTH steps ahead, the
 * scores are back and searched while the steps between are issued.
 */
const LOOKAHEAD_BATCHES = { plain: 1, pipelined: PIPELINE_DEPTH };

/** A step issued and not yet read back (device.pipeline_steps). */
interface PendingStep {
  rec: StepRecord;
  result: ReturnType<typeof trainStep>;
  /** Its finite flag's readback; or, where the step logs, its micro-batches' stats' readbacks. */
  finite?: Promise<ArrayLike<number>>;
  stats?: Promise<ArrayLike<number>[]>;
  /** The accumulated micro-batches' stats, freed once read. */
  microStats: tf.Tensor[];
}

/** The readbacks of a step's stats: its accumulated micro-batches', then the update's. */
function readStats(microStats: readonly tf.Tensor[], result: ReturnType<typeof trainStep>): Promise<ArrayLike<number>[]> {
  return Promise.all([...microStats.map((x) => x.data()), result.stats.data()]);
}

/** A step's stats from its micro-batches' (the update's last): losses averaged, the gradient norm and finite flag the update's. */
function meanStats(all: readonly ArrayLike<number>[]): number[] {
  return STEP_STATS.map((name, i) => (name === 'gradNorm' || name === 'finite' ? all[all.length - 1][i] : all.reduce((a, x) => a + x[i], 0) / all.length));
}

/** training.optimizer.name -> the optimizer it builds (AdamW over one flat buffer; others plug in here). */
const OPTIMIZERS: Record<XttsConfig['training']['optimizer']['name'], typeof AdamW> = { adamw: AdamW };

export interface TrainProgress {
  step: number;
  maxSteps: number;
  loss: number;
  learningRate: number;
  samplesPerS: number;
  dataWaitShare: number;
  stepMs: number;
  etaS: number;
  nonFiniteSteps: number;
  /** Mean GPU utilisation over the last log interval (NVML or nvidia-smi), when on a GPU. */
  gpuUtilizationPct?: number;
}

export interface TrainOptions {
  loaded: LoadedConfig;
  datasetDir?: string;
  backend?: Backend;
  maxSteps?: number;
  /** Stop after the step that passes this many minutes of training (preparation not counted). */
  maxMinutes?: number;
  /** After every step (cheap: for a progress bar). */
  onStep?: (s: { step: number; startStep: number; maxSteps: number; elapsedMs: number }) => void;
  /** Refuse a dataset with any unusable row (DATASET_ROWS_SKIPPED, naming the first) instead of training on the rest. */
  strict?: boolean;
  outputDir?: string;
  resume?: boolean;
  /** Profiling: no checkpoints, validation or eval audio; only the steps. */
  stepsOnly?: boolean;
  /**
   * Profiling: run the last N steps under the backend's device timer (WebGPU timestamp queries around
   * every program; libtensorflow's kernel times; none on the CPU backends, which then run no such
   * steps) and record each one's device time. Timing serialises dispatch, so these steps are probes
   * for device time, never part of the step-time statistics.
   */
  deviceTimedSteps?: number;
  onPrepareProgress?: (p: PrepareProgress) => void;
  onProgress?: (p: TrainProgress) => void;
  onMessage?: (m: string) => void;
  /** Set `stop` to end the run after the current step (Ctrl-C): a checkpoint is written first. */
  control?: { stop: boolean };
}

export interface TrainResult {
  runDir: string;
  backend: BackendChoice;
  parameters: number;
  startStep: number;
  steps: number;
  stoppedBy: 'max_steps' | 'time_limit' | 'early_stopping' | 'interrupted' | 'non_finite';
  trainRows: number;
  validationRows: number;
  skippedRows: number;
  /** Loss read back at each log interval. */
  lossCurve: { step: number; loss: number }[];
  validation: { step: number; loss: number }[];
  bestValidationLoss: number | null;
  nonFiniteSteps: number;
  checkpoints: string[];
  evalFiles: string[];
  /**
   * kernelsPerStep: engine kernels of an eager step, GPU programs of a replayed one (replayedShare of
   * the measured steps were); programsPerStep: GPU programs (webgpu, else null); hostDispatchMsMedian:
   * the host's time issuing a step's work (forward/backward and optimizer spans).
   */
  timing: { stepMsMedian: number; samplesPerS: number; kernelsPerStep: number; programsPerStep: number | null; replayedShare: number; hostDispatchMsMedian: number; dataWaitShare: number };
  /** What step capture did (device.step_capture), per bucket shape; null on data-parallel runs. */
  stepCapture: StepCaptureSummary | null;
  /** Garbage collection on the trainer's thread, which issues the device's work, over the run. */
  hostGc: HostGcSummary;
  /**
   * webgpu on one device: batches uploaded through a reused staging buffer, and those that went
   * through queue.writeBuffer because none was free (backend/webgpu-uploads.ts); null elsewhere.
   */
  batchUploads: { staged: number; missed: number } | null;
}


/**
 * The prefetch ring's depth within device.data_memory_budget_mb: pipeline.prefetch_depth slots, or as
 * many as the budget holds (said), or DATA_BUDGET_TOO_SMALL when it holds fewer than two (no overlap).
 */
export function ringDepthWithin(config: XttsConfig, perSlot: number, say: (m: string) => void): number {
  const depth = config.pipeline.prefetch_depth;
  const setting = config.device.data_memory_budget_mb;
  // null: an eighth of this host's memory, as the key's description says.
  const budgetBytes = setting !== null ? setting * 2 ** 20 : totalmem() / 8;
  const budget = setting !== null ? `${setting}` : `null (an eighth of this host's memory, ${formatBytes(budgetBytes)})`;
  const fits = Math.floor(budgetBytes / perSlot);
  if (fits < 2) {
    throw new XttsError('DATA_BUDGET_TOO_SMALL', `device.data_memory_budget_mb ${budget} holds ${fits} prefetch slot${fits === 1 ? '' : 's'} of ${formatBytes(perSlot)} (the largest bucket's batch); the ring needs two to overlap loading with training`, {
      exitCode: ExitCode.usage,
      suggestions: [`raise device.data_memory_budget_mb to at least ${Math.ceil((2 * perSlot) / 2 ** 20)}`, 'or lower batching.batch_size, limits.max_audio_s or batching.reference_frames'],
    });
  }
  if (fits < depth) say(`pipeline.prefetch_depth ${depth} × ${formatBytes(perSlot)} would exceed device.data_memory_budget_mb ${budget}: the prefetch ring holds ${fits} batches`);
  return Math.min(depth, fits);
}

/** toArrays of tensors the caller owns, then disposed. */
async function toArraysDisposing(tensors: Map<string, tf.Tensor>): Promise<NamedArray[]> {
  try {
    return await toArrays(tensors);
  } finally {
    tf.dispose([...tensors.values()]);
  }
}

/** Host copies of tensors. Asynchronous reads: WebGPU's synchronous readback needs a canvas, which Node has not. */
async function toArrays(tensors: Map<string, tf.Tensor>): Promise<NamedArray[]> {
  return Promise.all([...tensors.entries()].map(async ([name, t]) => ({ name, shape: t.shape, dtype: t.dtype === 'int32' ? ('int32' as const) : ('float32' as const), data: (await t.data()) as Float32Array | Int32Array })));
}

// Out-of-memory as each backend words it; the wasm backend aborts its module when its heap (at most
// 4 GiB) runs out, or, when an allocation's null pointer is written to first, traps with "memory
// access out of bounds" (seen with the small preset's batch of 32: a RuntimeError from a transpose).
const OOM = /out of memory|OOM|failed to allocate|allocation failed|exceeds the (maximum|max) buffer size|createBuffer|^Aborted\(|memory access out of bounds/i;

export async function train(o: TrainOptions): Promise<TrainResult> {
  // What would fail later or train something other than asked stops here, before any work.
  const blockers = lintConfig(o.loaded, { environment: false, only: TRAIN_BLOCKING_RULES }).filter((f) => f.severity === 'error');
  if (blockers.length) throw configInvalid(o.loaded.file, blockers);
  const runDir = o.outputDir ?? (o.datasetDir !== undefined ? runFolderForDataset(o.loaded.outputDir, o.datasetDir) : o.loaded.outputDir);
  const folder = openRunFolder(runDir, o.resume === true);
  try {
    return await trainInFolder(o, runDir, folder.runId);
  } finally {
    folder.release();
  }
}

async function trainInFolder(o: TrainOptions, runDir: string, runId: string): Promise<TrainResult> {
  const config = o.loaded.config;
  const t = config.training;
  let maxSteps = o.maxSteps ?? t.max_steps;
  const say = o.onMessage ?? (() => undefined);

  // Data.
  const data = await prepareDataset(o.loaded, { datasetDir: o.datasetDir, onProgress: o.onPrepareProgress, strict: o.strict });
  say(`data: ${data.train.length} training and ${data.validation.length} validation utterances, ${data.skipped.length} rows skipped (see \`xtts analyze-data-pipeline\`)`);

  // Backend, model, optimizer.
  // Data-parallel replicas (device.gpus): rank 0 trains here, on the plan's first device.
  const replicas = await planReplicas(config.device.gpus, o.backend ?? config.device.backend);
  if (replicas && t.precision === 'mixed_fp16') {
    throw new XttsError('PRECISION_UNSUPPORTED', `training.precision mixed_fp16 trains on one GPU: data-parallel training (device.gpus: ${JSON.stringify(config.device.gpus)}) runs its replicas in float32`, {
      exitCode: ExitCode.usage,
      suggestions: ['set device.gpus to one GPU for mixed_fp16', 'or training.precision: fp32 to train on several'],
    });
  }
  const { choice } = await initBackend(replicas ? replicas.backend : (o.backend ?? config.device.backend), {
    device: replicas ? replicas.devices[0] : config.device.model_device,
    unsafeApis: true,
    matmul: config.device.matmul,
    precision: t.precision,
  });
  await import('../model/gradients.js');
  say(`backend: ${choice.backend} — ${choice.reason}${choice.adapter ? ` (${choice.adapter.description || choice.adapter.device || choice.adapter.vendor})` : ''}`);
  // At the batch the run will train: a batch_size above the training set is the training set (below).
  checkMemoryEstimate({ ...config, batching: { ...config.batching, batch_size: Math.min(config.batching.batch_size, data.train.length) } }, choice.backend, say);
  const sizes = { vocabSize: data.tokenizer.vocabSize, nMels: config.audio.n_mels, numLanguages: config.text.languages.length };
  const model = new XttsModel(config.model, sizes, { seed: t.seed, convImpl: config.device.conv_kernels });
  // mixed_fp16: the matmuls round their operands to f16, so small gradients need the loss scale.
  const optimizer = new OPTIMIZERS[t.optimizer.name](model.trainableVariables(), t, t.precision === 'mixed_fp16' ? { lossScale: { initial: MIXED_FP16_LOSS_SCALE, growthInterval: MIXED_FP16_GROWTH_INTERVAL } } : {});
  if (t.precision === 'mixed_fp16') say(`mixed_fp16: matmuls on tensor cores (f16 operands, f32 sums); dynamic loss scale from ${MIXED_FP16_LOSS_SCALE}, doubled after ${MIXED_FP16_GROWTH_INTERVAL} updates in a row, halved on an overflow (that step makes no update)`);
  const store = new CheckpointStore(runDir);
  let step = 0;
  let position = { epoch: 0, batch: 0 };
  let bestValidationLoss: number | null = null;
  let validationsWithoutImprovement = 0;
  const resumeFrom = o.resume ? store.latest() : undefined;
  // A run stopped before its first checkpoint (killed while preparing, or in its first steps) starts over, as the same run.
  if (o.resume && !resumeFrom) say(`--resume: ${runDir}'s run has no checkpoint yet: it starts over from step 0`);
  if (resumeFrom) {
    const dir = resumeFrom;
    const ckpt = store.load<CheckpointState>(dir);
    if (ckpt.state.runId !== undefined && ckpt.state.runId !== runId) {
      throw new XttsError('RUN_MIXED', `${dir} was written by run ${ckpt.state.runId}, not by ${runDir}'s run ${runId}`, { exitCode: ExitCode.usage, position: { file: join(dir, 'state.json') }, suggestions: ['resume with --output naming the folder that run was trained in'] });
    }
    // A diverged checkpoint would train on NaN and write more of them: refused, naming what is broken.
    refuseNonFinite(dir, ckpt);
    if (ckpt.state.tokenizerIdentity !== data.tokenizer.identity()) {
      throw new XttsError('RESUME_TOKENIZER_CHANGED', `the dataset's characters changed since ${dir} was written: its tokenizer no longer matches`, {
        suggestions: ['resume with the dataset the run was trained on, or start a new run (--output NEW_DIR)'],
      });
    }
    assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => model.setWeights(w));
    assignArrays(ckpt.optimizer, join(dir, 'optimizer.safetensors'), (o) => optimizer.setState(o));
    model.dropout.rngState = ckpt.state.dropoutRng;
    step = ckpt.state.step;
    position = ckpt.state.position;
    bestValidationLoss = ckpt.state.bestValidationLoss;
    validationsWithoutImprovement = ckpt.state.validationsWithoutImprovement;
    say(`resumed from ${dir} at step ${step}`);
  }
  const startStep = step;

  // Run database (the run folder exists: lockRunFolder made it).
  const db = RunDatabase.create(runDir);
  // TensorBoard event files beside run.sqlite (`tensorboard --logdir runs`); measurement runs write none.
  const events = o.stepsOnly ? undefined : new EventFileWriter(runDir);
  const metric = (at: number, name: string, value: number) => {
    db.addMetric(at, name, value);
    events?.scalar(name, at, value);
  };
  db.setMeta('runId', runId);
  db.setMeta('config', config);
  db.setMeta('configFile', o.loaded.file);
  db.setMeta('backend', choice.backend);
  db.setMeta('device', choice.adapter ? choice.adapter.name : null);
  db.setMeta('parameters', model.parameterCount());

  // Batches.
  const r = config.model.reduction_factor;
  // A batch larger than the training set would repeat every clip in it many times over (memory and
  // time for nothing): it becomes the training set.
  const batchSize = Math.min(config.batching.batch_size, data.train.length);
  if (batchSize < config.batching.batch_size) say(`batching.batch_size ${config.batching.batch_size} is more than the ${data.train.length} training utterances: each batch holds all ${batchSize} of them once`);
  const bucketOptions = { buckets: config.batching.buckets, batchSize, frameBudget: config.batching.frame_budget, frameMultiple: r };
  const plan = planBuckets(data.train.map((i) => ({ tokens: i.tokens.length, frames: i.frames })), bucketOptions);
  // Without the cache, producers recompute every clip's features from its audio for every batch.
  const recomputeAudio = config.pipeline.cache.enabled ? undefined : config.audio;
  const common = { cachePath: data.cachePath, mean: data.stats.mean, std: data.stats.std, seed: t.seed, refFrames: config.batching.reference_frames, nMels: config.audio.n_mels, recomputeAudio };
  const depth = ringDepthWithin(config, slotBytes(DataLoader.layoutFor(plan, config.batching.reference_frames, config.audio.n_mels)), say);
  const loader = new DataLoader({ ...common, items: loaderItems(data.train), plan, shuffle: config.batching.shuffle, depth, producers: producerThreads(config, availableParallelism()), start: position });

  // Kernels per step, and the model FLOPs of their matmuls and convolutions (the profiler's MFU).
  const kernels = new KernelCounter({ flops: true }).install(tf as never);
  const records: StepRecord[] = [];
  const lossCurve: TrainResult['lossCurve'] = [];
  const validation: TrainResult['validation'] = [];
  const checkpoints: string[] = [];
  const evalFiles: string[] = [];
  // Updates skipped for a NaN/Inf loss or gradient, in this run (a resumed run counts afresh).
  let nonFiniteStepsHere = 0;
  // Asserted, not narrowed: the data device's results may set it from a callback.
  let stoppedBy = 'max_steps' as TrainResult['stoppedBy'];
  // Device-timed probe steps come last; a backend with no device time runs none of them.
  let timedSteps = Math.max(0, Math.floor(o.deviceTimedSteps ?? 0));
  let deviceTiming: { available: boolean; source?: string; reason?: string; programs?: ProgramTime[] } | undefined;
  // Device time per program kind, summed over the device-timed steps (and how many there were).
  const timedPrograms = new Map<string, ProgramTime>();
  let timedStepCount = 0;
  const untimeable = noDeviceTime(choice.backend) ?? (replicas && replicas.devices.length > 1 ? 'device time is measured on one device: run without device.gpus' : undefined);
  if (timedSteps > 0 && untimeable) {
    deviceTiming = { available: false, reason: untimeable };
    maxSteps -= timedSteps;
    timedSteps = 0;
  }
  const timedFrom = maxSteps - timedSteps;
  const runStart = performance.now();
  // Step and sample times count from runStart; this ties them to the wall clock (other tools' logs).
  db.setMeta('startedAtEpochMs', Date.now());
  // Advice on producer threads must follow the cores of the host that ran, not of one that reads the run later.
  db.setMeta('cpuCores', availableParallelism());
  // Device samples (utilisation, memory, clocks) for the progress line and the profiler, on GPUs.
  const sampler = choice.backend === 'webgpu' || choice.backend === 'tensorflow' ? await GpuSampler.start({ rateHz: 10, originMs: runStart }) : undefined;
  sampler?.onSample((sample) => db.addDeviceSample(toDeviceSampleRecord(sample)));
  // While this thread collects garbage, nothing reaches the device: the run says how long that was.
  const gc = new HostGcRecorder().start();
  db.setMeta('gpuTelemetry', sampler ? sampler.status : { available: false, reason: `the ${choice.backend} backend computes on the CPU: no GPU to sample`, notes: [] });
  const dims = (b: LoadedBatch): BatchDims => ({ batchSize: b.shape.batchSize, tokens: b.shape.tokens, frames: b.shape.frames, refFrames: b.shape.refFrames, nMels: b.shape.nMels, reductionFactor: r });

  const unseenSymbols = data.tokenizer.unseenIn(data.train.map((i) => i.tokens));
  // The duration predictor's squared log error: from the last validation, else the training loss.
  let logDurationVariance = 0;
  const stepName = (at: number) => `step-${String(at).padStart(8, '0')}`;
  // TensorBoard: the mel (predicted above target) and alignment pictures, and the audio.
  const publishEval = (at: number, files: string[]) => {
    for (const f of files) {
      const tag = `eval/${basename(f).replace(/\.(png|wav)$/, '')}`;
      if (f.endsWith('.png')) events?.image(tag, at, readFileSync(f));
      else if (f.endsWith('.wav')) events?.audio(tag, at, readFileSync(f));
    }
    events?.flush();
    evalFiles.push(...files);
  };
  // device.data_device: validation and eval run there from weight snapshots (side-device.ts).
  let side: SideDevice | undefined;
  const evaluate = async () => {
    const dir = join(runDir, 'eval', stepName(step));
    if (side) return side.submit({ type: 'eval', step, weights: await toArrays(model.getWeights()), dir, logDurationVariance });
    publishEval(step, await synthesizeEval(model, data, config, dir, logDurationVariance, say, (name, value) => metric(step, name, value)));
  };
  /** A validation pass's figures, at the step whose weights it measured; whether it is the best so far. */
  const recordValidation = (at: number, v: ValidationResult): boolean => {
    logDurationVariance = v.durationVariance;
    validation.push({ step: at, loss: v.loss });
    metric(at, 'loss/val', v.loss);
    metric(at, 'align/duration_error', v.durationError);
    metric(at, 'align/length_ratio', v.lengthRatio);
    metric(at, 'align/diagonal', v.diagonal);
    const improved = bestValidationLoss === null || v.loss < bestValidationLoss;
    if (improved) {
      bestValidationLoss = v.loss;
      validationsWithoutImprovement = 0;
    } else validationsWithoutImprovement++;
    writeLossCurve();
    say(`step ${at}: validation loss ${v.loss.toFixed(4)}${improved ? ' (best)' : ''}; durations: log error ${v.durationError.toFixed(3)}, predicted/found length ${v.lengthRatio.toFixed(2)}; alignment on the diagonal ${(v.diagonal * 100).toFixed(0)}%${side ? ` (on ${side.device}, ${step - at} steps later)` : ''}`);
    if (t.early_stopping_patience > 0 && validationsWithoutImprovement >= t.early_stopping_patience) stoppedBy = 'early_stopping';
    return improved;
  };
  const onSideResult = (r: SideResult) => {
    if (r.type === 'evaluated') {
      for (const m of r.messages) say(`${m} (step ${r.step}, on ${side?.device}, ${(r.ms / 1000).toFixed(1)} s)`);
      for (const x of r.metrics) metric(r.step, x.name, x.value);
      publishEval(r.step, r.files);
      return;
    }
    // Its checkpoint was written when the snapshot was taken; it becomes the best now, if it is.
    if (recordValidation(r.step, r.result)) {
      const dir = checkpoints.find((c) => basename(c) === stepName(r.step));
      if (!dir || !store.markBest(dir)) say(`step ${r.step}'s checkpoint, the best so far, was rotated away before its validation finished (raise training.keep_checkpoints)`);
    }
  };

  // The loss curves as a picture in the run folder (TensorBoard has them as scalars).
  const writeLossCurve = () =>
    writeFileAtomic(
      join(runDir, 'loss-curve.png'),
      curveFigure({
        title: `${basename(runDir)} · loss`,
        yTitle: 'LOSS',
        series: [
          { label: 'TRAINING', points: lossCurve.map((x) => [x.step, x.loss]) },
          { label: 'VALIDATION', points: validation.map((x) => [x.step, x.loss]) },
        ],
      }),
    );

  const saveCheckpoint = async (best: boolean) => {
    // Replicas update from the same sums and must hold rank 0's weights: checked before they are saved.
    await group?.checkInSync(step);
    const state: CheckpointState = {
      runId,
      step,
      position,
      dropoutRng: model.dropout.rngState,
      bestValidationLoss,
      validationsWithoutImprovement,
      tokenizer: data.tokenizer.toJSON(),
      tokenizerIdentity: data.tokenizer.identity(),
      stats: { mean: [...data.stats.mean], std: [...data.stats.std] },
      speakers: data.speakers,
      languages: data.languages,
      sizes,
      unseenSymbols,
      logDurationVariance,
      config,
    };
    let dir: string;
    try {
      dir = store.save(step, { weights: await toArrays(model.getWeights()), optimizer: await toArraysDisposing(optimizer.getState()), state }, { keep: t.keep_checkpoints, best });
    } catch (e) {
      if (!(e instanceof XttsError && e.code === 'CHECKPOINT_NOT_FINITE')) throw e;
      // Skipped updates keep weights finite; this is a diverged state all the same: it is not written.
      stoppedBy = 'non_finite';
      say(`step ${step}: ${e.message.replace(/^.*?: /, '')}; no checkpoint is written, the run stops (the last checkpoint, ${store.latest() ?? 'none'}, stands)`);
      return;
    }
    checkpoints.push(dir);
  };

  const accumulate = Math.max(1, t.grad_accumulation_steps);
  let group: ReplicaGroup | undefined;
  // Capture and replay of each bucket shape's step (webgpu); one device only.
  const replayer = replicas && replicas.devices.length > 1 ? undefined : new StepReplayer(model, optimizer, t.loss, config.device.step_capture, accumulate);
  const flopsByShape = new Map<string, number>();
  let captureSummary: StepCaptureSummary | null = null;
  let hostGc: HostGcSummary | null = null;
  let batchUploads: TrainResult['batchUploads'] = null;
  /** Batches uploaded with their alignment search started, in the loader's order (training.alignment_lookahead). */
  const ahead: PreparedBatch[] = [];
  /** The alignment search's worker threads (with the lookahead: the search then leaves this thread free to issue steps). */
  let searcher: AlignmentSearcher | undefined;
  // Steps issued without waiting for them (device.pipeline_steps), oldest first: each one's record, its
  // result and the readback of its finite flag, or of its losses where it logs (then its progress line
  // is printed when they are read), settled once PIPELINE_DEPTH later steps are queued.
  const pending: PendingStep[] = [];
  /** Frees what the pending steps hold without reading them (a run that stops). */
  const dropPending = () => {
    for (const d of pending.splice(0)) {
      disposeStepResult(d.result);
      tf.dispose(d.microStats);
    }
  };
  if (replayer) {
    if (replayer.off === null) say('step capture: each bucket shape\'s step is recorded twice, then replayed (device.step_capture)');
    else if (choice.backend === 'webgpu' && config.device.step_capture === 'auto') say(`step capture: off — ${replayer.off}`);
    const tell = (what: string, eagerly: string) => (shape: string, s: CaptureState) => {
      if (s.phase === 'replay') say(`step capture: ${what} ${shape} replayed from here on (${s.capture!.programs} programs, ${formatBytes(s.capture!.bytes)} of buffers; ${formatBytes(s.pooledBytesReleased ?? 0)} of the eager runs' pooled buffers released)${s.reason ? ` — ${s.reason}` : ''}`);
      else if (s.phase === 'refused') say(`step capture: ${what} ${shape} ${eagerly} — ${s.reason}`);
    };
    replayer.onChange = tell('bucket', 'steps eagerly');
    if (replayer.alignment) replayer.alignment.onChange = tell('the alignment forward of batches', 'runs eagerly');
  }
  try {
    if (replicas && replicas.devices.length > 1) {
      const world = replicas.devices.length;
      if (batchSize < world) {
        throw new XttsError('GPUS_EXCEED_BATCH', `${world} replicas (device.gpus) but batches of ${batchSize}: every replica needs at least one utterance of each batch`, {
          exitCode: ExitCode.usage,
          suggestions: [`raise batching.batch_size to at least ${world} (it is the global batch: each replica takes its share)`, 'or train on fewer devices'],
        });
      }
      say(`data-parallel: ${world} replicas, ${replicas.reason}; each trains on ${Math.floor(batchSize / world)}${batchSize % world ? `–${Math.ceil(batchSize / world)}` : ''} of every batch of ${batchSize}, gradients summed every optimizer step`);
      const rank0Device = choice.adapter ? `${choice.backend} ${choice.adapter.name}` : choice.backend;
      group = await ReplicaGroup.start({ plan: replicas, config, sizes, model, optimizer, rank0Device, state: async () => ({ weights: await toArrays(model.getWeights()), optimizer: await toArraysDisposing(optimizer.getState()) }) });
      say(`replicas: ${group.devices.map((d, r) => `${r} ${d}`).join(', ')}`);
      db.setMeta('replicas', group.devices);
    }
    if (config.device.data_device !== null && !o.stepsOnly) {
      side = await SideDevice.start({ ref: config.device.data_device, config, sizes, data, bucketOptions, common, onResult: onSideResult });
      say(`data device: ${side.device} runs the validation passes and eval synthesis from weight snapshots while training goes on`);
      db.setMeta('dataDevice', side.device);
    }
    // training.alignment_lookahead: a batch uploaded and its alignment search under way, waiting for
    // its step. Not with replicas (each aligns its own rows).
    const lookahead = !group && (t.alignment_lookahead === 'on' || (t.alignment_lookahead === 'auto' && choice.backend === 'webgpu'));
    const prepareBatch = (b: LoadedBatch): PreparedBatch => {
      const tensors = uploadBatch(b, dims(b));
      const lengths = { text: b.textLengths.slice(0, b.shape.batchSize), mel: b.melLengths.slice(0, b.shape.batchSize) };
      loader.release(b);
      const alignment = model.align(tensors, lengths.text, lengths.mel, t.alignment_prior, { replayer: replayer?.alignment ?? undefined, search: searcher && ((task) => searcher!.search(task)) });
      // Awaited by its step; a run that ends first disposes it (disposeAhead) instead.
      alignment.catch(() => undefined);
      return { batch: b, tensors, alignment };
    };
    // device.pipeline_steps: issue the next step before waiting for this one, where nothing reads
    // the weights in between.
    const pipelined = !group && (config.device.pipeline_steps === 'on' || (config.device.pipeline_steps === 'auto' && choice.backend === 'webgpu'));
    const lookaheadBatches = pipelined ? LOOKAHEAD_BATCHES.pipelined : LOOKAHEAD_BATCHES.plain;
    if (lookahead) {
      const threads = AlignmentSearcher.threadsFor(availableParallelism());
      searcher = new AlignmentSearcher(threads);
      const before = lookaheadBatches === 1 ? 'the step before it computes' : `the ${lookaheadBatches} steps before it compute (its weights are ${lookaheadBatches} updates old)`;
      say(`alignment lookahead: each batch's alignment is searched on ${threads === 1 ? 'a worker thread' : `${threads} worker threads`} while ${before} (training.alignment_lookahead)`);
    }
    if (pipelined) say('pipelined steps: each step is issued before the one before it is waited for, except where the weights are read in between (device.pipeline_steps)');
    const nonFiniteLimit = Math.max(1, t.max_nonfinite_steps);
    const weightsReadAfter = (n: number) =>
      !o.stepsOnly && ((n % t.validate_every === 0 && data.validation.length > 0) || n % t.checkpoint_every === 0 || n % t.eval_every === 0);
    /** Whether step n (pipelined) may be issued and left unread: nothing reads the weights after it. */
    const deferrable = (n: number) => pipelined && n < maxSteps && !weightsReadAfter(n);
    const stopForNonFinite = (n: number) => {
      stoppedBy = 'non_finite';
      say(`step ${n}: ${nonFiniteStepsHere} steps had a NaN/Inf loss or gradient and made no update (training.max_nonfinite_steps: ${t.max_nonfinite_steps}); stopping without a checkpoint or eval of this state`);
    };
    /** A logged step's losses and gradient norm into the metrics; its finite flag. */
    const logStats = (at: number, stats: readonly number[], learningRate: number): { loss: number; gradNorm: number; flag: number } => {
      const loss = stats[STEP_STATS.indexOf('loss')];
      const gradNorm = stats[STEP_STATS.indexOf('gradNorm')];
      lossCurve.push({ step: at, loss });
      metric(at, 'loss/train', loss);
      metric(at, 'loss/mel_pre', stats[STEP_STATS.indexOf('melPre')]);
      metric(at, 'loss/mel_post', stats[STEP_STATS.indexOf('melPost')]);
      metric(at, 'loss/aligned_text', stats[STEP_STATS.indexOf('alignedText')]);
      metric(at, 'loss/duration', stats[STEP_STATS.indexOf('duration')]);
      if (data.validation.length === 0) logDurationVariance = stats[STEP_STATS.indexOf('duration')];
      metric(at, 'grad_norm', gradNorm);
      metric(at, 'learning_rate', learningRate);
      return { loss, gradNorm, flag: stats[STEP_STATS.indexOf('finite')] };
    };
    /** The progress line of a logged step, once its record is in `records`. */
    const reportProgress = (at: number, loss: number, learningRate: number) => {
      db.flush();
      const recent = records.slice(-t.log_every);
      const wall = recent.reduce((a, x) => a + x.wallMs, 0);
      const progress: TrainProgress = {
        step: at,
        maxSteps,
        loss,
        learningRate,
        samplesPerS: recent.reduce((a, x) => a + x.batchSize, 0) / (wall / 1000),
        dataWaitShare: recent.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wall,
        stepMs: wall / recent.length,
        etaS: ((maxSteps - at) * wall) / recent.length / 1000,
        nonFiniteSteps: nonFiniteStepsHere,
        gpuUtilizationPct: sampler?.summary({ fromMs: recent[0].startMs })[0]?.utilizationPct?.mean,
      };
      events?.scalar('perf/samples_per_s', at, progress.samplesPerS);
      events?.scalar('perf/data_wait_share', at, progress.dataWaitShare);
      events?.scalar('perf/step_ms', at, progress.stepMs);
      if (progress.gpuUtilizationPct !== undefined) events?.scalar('perf/gpu_utilization_pct', at, progress.gpuUtilizationPct);
      o.onProgress?.(progress);
    };
    /**
     * Reads the oldest pending step's flag (or its losses, where it logs), records it, frees it; the
     * step's number where it was non-finite and the run has reached training.max_nonfinite_steps.
     */
    const settleOldest = async (): Promise<number | null> => {
      const d = pending.shift()!;
      let flag: number;
      if (d.stats) {
        const logged = logStats(d.rec.step, meanStats(await d.stats), d.rec.learningRate);
        [d.rec.loss, d.rec.gradNorm, flag] = [logged.loss, logged.gradNorm, logged.flag];
      } else flag = (await d.finite!)[0];
      disposeStepResult(d.result);
      tf.dispose(d.microStats);
      if (flag !== 1) {
        if (flag === 0) nonFiniteStepsHere++;
        d.rec.nonFinite = true;
      }
      records.push(d.rec);
      db.addStep(d.rec);
      if (d.stats) reportProgress(d.rec.step, d.rec.loss!, d.rec.learningRate);
      return flag !== 1 && nonFiniteStepsHere >= nonFiniteLimit ? d.rec.step : null;
    };
    /** Settles pending steps, oldest first, until at most `keep` wait; where one stops the run, its step. */
    const settlePending = async (keep: number): Promise<number | null> => {
      while (pending.length > keep) {
        const stop = await settleOldest();
        if (stop !== null) return stop;
      }
      return null;
    };
    while (step < maxSteps) {
      // Let the event loop run between steps: when the ring is always ready, the loop would
      // otherwise be one endless chain of microtasks and signals (Ctrl-C) and timers would never fire.
      await new Promise((resolve) => setImmediate(resolve));
      const timer = new SpanTimer();
      // One optimizer step: grad_accumulation_steps micro-batches, each forward and backward, the
      // last one also clips and updates. Steps, schedules, intervals and the progress line count these.
      let batch: LoadedBatch | undefined;
      let result: ReturnType<typeof trainStep> | undefined;
      let deviceMs: number | undefined;
      let stepKernels = 0;
      let replayed = false;
      let stepFlops = 0;
      let stepPrograms = 0;
      let samples = 0;
      const microStats: tf.Tensor1D[] = [];
      // Data-parallel: the update's sums, and each replica's part of the step.
      let dpUpdate: ReplicaUpdate | undefined;
      const replicaParts: Omit<ReplicaStepRecord, 'step' | 'rank'>[] = [];
      for (let micro = 0; micro < accumulate; micro++) {
        // The batch whose alignment the previous micro-batch queued ahead of its step, or the next one.
        const prepared = ahead.shift();
        batch = prepared?.batch ?? (await loader.next());
        if (!batch) break;
        timer.mark('dataWaitMs');
        if (group) {
          kernels.take();
          // The group copies each replica's rows before its first wait: the slot can go back at once.
          const pending = group.micro(step + 1, batch, dims(batch), micro === accumulate - 1, model.dropout.rngState);
          loader.release(batch);
          let out: Awaited<typeof pending>;
          try {
            out = await pending;
          } catch (e) {
            throw OOM.test((e as Error).message) ? outOfMemory(e as Error, config, batch) : e;
          }
          stepFlops += kernels.flops;
          stepKernels += kernels.take();
          timer.markParts(out.rank0.spans, 'otherMs');
          const held = tf.memory();
          [{ ...out.rank0, tensors: held.numTensors, tensorBytes: held.numBytes }, ...out.workers].forEach((r, rank) => {
            const acc = (replicaParts[rank] ??= { samples: 0, uploadMs: 0, syncMs: 0, forwardBackwardMs: 0, allReduceMs: 0, optimizerMs: 0, tensors: 0, tensorBytes: 0 });
            acc.samples += r.samples;
            for (const k of ['uploadMs', 'syncMs', 'forwardBackwardMs', 'allReduceMs', 'optimizerMs'] as const) acc[k] += r.spans[k];
            acc.tensors = r.tensors;
            acc.tensorBytes = r.tensorBytes;
            samples += r.samples;
          });
          dpUpdate = out.rank0.update;
          continue;
        }
        const { tensors, alignment } = prepared ?? prepareBatch(batch);
        timer.mark('uploadMs');
        // Which symbol each step says (one readback and the alignment search on the host).
        const aligned = { ...tensors, alignment: await alignment };
        timer.mark('syncMs');
        // The micro-batches this run still trains after this one: none is prepared past the last.
        const remaining = (maxSteps - step - 1) * accumulate + (accumulate - 1 - micro);
        while (lookahead && ahead.length < Math.min(lookaheadBatches, remaining)) {
          // The next batches' alignment forwards go to the device before this step, so their readbacks
          // and searches on the host overlap the steps' computing.
          const next = await loader.next();
          timer.mark('dataWaitMs');
          if (!next) break;
          ahead.push(prepareBatch(next));
          timer.mark('uploadMs');
        }
        kernels.take();
        const onGradients = () => timer.mark('forwardBackwardMs');
        const stepOptions = { accumulate, onGradients };
        const run = (timed: boolean) => (replayer ? replayer.step(aligned, { onGradients, timed }) : trainStep(model, optimizer, aligned, t.loss, stepOptions));
        try {
          if (step >= timedFrom) {
            const timing = await timeOnDevice(tf as never, () => {
              result = run(true);
            });
            if (timing.available) {
              deviceMs = (deviceMs ?? 0) + timing.kernelMs;
              mergeProgramTimes(timedPrograms, timing.programs);
            }
            deviceTiming = timing.available ? { available: true, source: timing.source } : { available: false, reason: timing.reason };
          } else if (replayer && lookahead) {
            // In parts, the event loop let run between them: the next batch's alignment scores reach
            // the search's worker threads while the rest of this step is encoded.
            result = await replayer.stepInParts(aligned, REPLAY_PARTS, { onGradients });
          } else result = run(false);
        } catch (e) {
          throw OOM.test((e as Error).message) ? outOfMemory(e as Error, config, batch) : e;
        }
        if (!result) throw new Error('the training step returned nothing');
        const last = replayer?.last;
        if (last?.replayed) {
          // No kernel went through the engine: the step's programs and FLOPs are its recording's.
          replayed = true;
          stepFlops += flopsByShape.get(last.shape) ?? 0;
          stepKernels += last.programs;
          stepPrograms += last.programs;
          kernels.take();
        } else {
          if (last) flopsByShape.set(last.shape, kernels.flops);
          stepFlops += kernels.flops;
          stepPrograms += kernels.dispatches;
          stepKernels += kernels.take();
        }
        timer.mark('optimizerMs');
        samples += batch.shape.batchSize - batch.fillers;
        disposeBatch(tensors);
        tf.dispose([aligned.alignment.steps, aligned.alignment.durations]);
        if (!result.applied) {
          microStats.push(tf.clone(result.stats));
          disposeStepResult(result);
        }
      }
      if (pending.length) {
        // Steps before this one were issued without waiting for them: now that this one is queued
        // behind them, whether the oldest's update was made (and its record); all of them where this
        // step is waited for (their records, and the limit, in order).
        const stop = await settlePending(result && deferrable(step + 1) ? PIPELINE_DEPTH - 1 : 0);
        timer.mark('syncMs');
        if (stop !== null) {
          // This step and those pending were issued already; they are dropped, not counted (no
          // checkpoint follows).
          if (result) disposeStepResult(result);
          tf.dispose(microStats);
          dropPending();
          stopForNonFinite(stop);
          step = stop;
          break;
        }
      }
      if (!batch || (group ? !dpUpdate : !result?.applied)) {
        // The data ran out inside an accumulation: its gradients make no update.
        if (group) await group.discard();
        else optimizer.discardAccumulated();
        tf.dispose(microStats);
        break;
      }
      for (const [rank, r] of replicaParts.entries()) db.addReplicaStep({ step: step + 1, rank, ...r });
      step++;
      if (deviceMs !== undefined) timedStepCount++;
      position = { epoch: batch.epoch, batch: batch.index + 1 };
      let loss: number | undefined;
      let gradNorm: number | undefined;
      let updated: boolean | undefined;
      /** The step's finite flag: 1 made, 0 non-finite, −1 a loss-scale overflow (not counted against max_nonfinite_steps). */
      let flag: number | undefined;
      const logNow = step % t.log_every === 0 || step === maxSteps;
      const learningRate = (dpUpdate ?? result!).learningRate;
      // Whether the update was made, every step so that the limit holds exactly. Pipelined
      // (device.pipeline_steps), a step after which nothing reads the weights is not waited for: the
      // next steps are issued first, and its flag (or, where it logs, its losses) is read later.
      const defer = !dpUpdate && deferrable(step);
      if (logNow && !defer) {
        // Losses are the mean over the step's micro-batches; the gradient norm is the update's.
        let stats: number[];
        if (dpUpdate) {
          // The replicas' summed losses are on the host already.
          const [norm, finite] = await Promise.all([dpUpdate.gradNorm.data(), dpUpdate.finite.data()]);
          stats = [...dpUpdate.losses, norm[0], finite[0]];
        } else stats = meanStats(await readStats(microStats, result!));
        timer.mark('syncMs');
        ({ loss, gradNorm, flag } = logStats(step, stats, learningRate));
        updated = flag === 1;
      }
      if (!defer) {
        flag ??= (await (dpUpdate ?? result!).finite.data())[0];
        updated = flag === 1;
        timer.mark('syncMs');
        if (flag === 0) nonFiniteStepsHere++;
        if (dpUpdate) tf.dispose([dpUpdate.gradNorm, dpUpdate.finite]);
        else disposeStepResult(result!);
        tf.dispose(microStats);
      }

      if (!o.stepsOnly) {
        if (step % t.validate_every === 0 && data.validation.length > 0) {
          if (side) {
            // Marked best when its validation, running on the data device, says so.
            await saveCheckpoint(false);
            await side.submit({ type: 'validate', step, weights: await toArrays(model.getWeights()) });
          } else await saveCheckpoint(recordValidation(step, await validate(model, data, config, bucketOptions, common, loaderItems)));
        } else if (step % t.checkpoint_every === 0) await saveCheckpoint(false);
        if (step % t.eval_every === 0 && stoppedBy !== 'non_finite') await evaluate();
        timer.mark('checkpointMs');
      }
      const { wallMs, spans } = timer.finish();
      // What the engine holds once the step has freed its tensors: the leak verdict reads its growth,
      // and device.model_memory_budget_mb bounds it (checked from the first step on).
      const held = tf.memory();
      checkModelBudget(config.device.model_memory_budget_mb, step, held.numBytes + (replayer?.arenaBytes ?? 0), config.batching.batch_size, group ? `rank 0 (${choice.adapter?.name ?? choice.backend})` : undefined);
      const rec: StepRecord = {
        step,
        startMs: timer.startedAt - runStart,
        wallMs,
        spans,
        epoch: batch.epoch,
        batchIndex: batch.index,
        bucket: batch.bucket,
        batchSize: samples,
        tokens: batch.shape.tokens,
        frames: batch.shape.frames,
        kernels: stepKernels,
        ...(choice.backend === 'webgpu' ? { programs: stepPrograms } : {}),
        ...(replayer ? { replayed } : {}),
        flops: stepFlops,
        ...(deviceMs !== undefined ? { deviceMs } : {}),
        readySlots: batch.readySlots,
        learningRate,
        loss,
        gradNorm,
        ...(updated === false ? { nonFinite: true } : {}),
        tensors: held.numTensors,
        tensorBytes: held.numBytes,
      };
      if (defer) {
        // The readback is queued now, ahead of the next step: queued after it (read once that step is
        // issued), the copy would wait for the next step too, and the host for the device each step.
        const readback = logNow ? { stats: readStats(microStats, result!) } : { finite: result!.finite.data() };
        (readback.stats ?? readback.finite)!.catch(() => undefined);
        pending.push({ rec, result: result!, microStats, ...readback });
      } else {
        records.push(rec);
        db.addStep(rec);
      }
      o.onStep?.({ step, startStep, maxSteps, elapsedMs: performance.now() - runStart });
      if (logNow && !defer) reportProgress(step, loss!, learningRate);
      const gpuError = takeGpuError();
      if (gpuError) {
        // A program the device refused computed nothing: what follows would train on garbage.
        throw new XttsError('WEBGPU_ERROR', `the WebGPU device rejected work by step ${step}: ${gpuError.split('\n')[0]}`, {
          exitCode: ExitCode.findings,
          suggestions: [
            'the run stops here; its checkpoints before this step are intact (--resume continues from the last one)',
            'report it with the log and `xtts diagnose-gpu-utilization --json`: it is a bug in xtts, tfjs-backend-webgpu or the driver',
            'to keep training meanwhile: --backend wasm, or device.step_capture: off / device.matmul: tfjs if the log names their programs',
          ],
        });
      }
      if (flag === 0 && nonFiniteStepsHere >= nonFiniteLimit) {
        stopForNonFinite(step);
        break;
      }
      if (stoppedBy === 'early_stopping' || stoppedBy === 'non_finite') break;
      if (o.maxMinutes !== undefined && performance.now() - runStart >= o.maxMinutes * 60_000) {
        stoppedBy = 'time_limit';
        break;
      }
      if (o.control?.stop) {
        stoppedBy = 'interrupted';
        break;
      }
    }
    // Steps the loop issued without waiting for them (it ended on the time limit or a stop). Where one
    // reaches the limit, those after it are dropped, not counted (`finally` frees them).
    const stop = await settlePending(0);
    if (stop !== null) {
      if (stoppedBy !== 'non_finite') stopForNonFinite(stop);
      step = stop;
    }
    // The data device's queued validations land before the run's last decisions.
    await side?.drain();
    // A run none of whose steps made an update trained nothing, whatever stopped it.
    if (step > startStep && nonFiniteStepsHere === step - startStep) stoppedBy = 'non_finite';
    if (!o.stepsOnly && step > startStep) writeLossCurve();
    if (stoppedBy !== 'non_finite') {
      if (!o.stepsOnly && step > startStep && !checkpoints.some((c) => basename(c) === stepName(step))) await saveCheckpoint(false);
      if (!o.stepsOnly && stoppedBy !== 'interrupted' && (stoppedBy as TrainResult['stoppedBy']) !== 'non_finite' && step > startStep && step % t.eval_every !== 0) await evaluate();
      await side?.drain();
    }
  } finally {
    for (const p of ahead.splice(0)) await disposeAhead(p);
    await searcher?.close();
    dropPending();
    if (replayer) {
      captureSummary = await replayer.summary();
      db.setMeta('stepCapture', captureSummary);
      replayer.dispose();
    }
    await side?.close();
    await group?.close();
    kernels.uninstall();
    await sampler?.stop();
    await loader.close();
    hostGc = gc.stop();
    db.setMeta('hostGc', hostGc);
    if (choice.backend === 'webgpu' && !group) {
      const { staged, missed } = stagedUploadStats(tf.backend());
      batchUploads = { staged, missed };
      db.setMeta('batchUploads', batchUploads);
    }
    db.setMeta('result', { steps: step, stoppedBy, nonFiniteSteps: nonFiniteStepsHere });
    if (deviceTiming?.available && timedPrograms.size > 0) {
      // Per timed step (a step of several micro-batches counts once), largest first.
      deviceTiming.programs = programTimesPerStep(timedPrograms, timedStepCount);
    }
    if (deviceTiming) db.setMeta('deviceTiming', deviceTiming);
    db.close();
    events?.close();
  }
  const untimed = records.filter((x) => x.deviceMs === undefined);
  const measured = untimed.slice(Math.min(5, Math.floor(untimed.length / 4)));
  const wallTotal = measured.reduce((a, x) => a + x.wallMs, 0) || 1;
  const result: TrainResult = {
    runDir,
    backend: choice,
    parameters: model.parameterCount(),
    startStep,
    steps: step,
    stoppedBy,
    trainRows: data.train.length,
    validationRows: data.validation.length,
    skippedRows: data.skipped.length,
    lossCurve,
    validation,
    bestValidationLoss,
    nonFiniteSteps: nonFiniteStepsHere,
    checkpoints,
    evalFiles,
    timing: {
      stepMsMedian: summarize(measured.map((x) => x.wallMs)).p50,
      samplesPerS: measured.reduce((a, x) => a + x.batchSize, 0) / (wallTotal / 1000),
      kernelsPerStep: summarize(measured.map((x) => x.kernels)).p50,
      programsPerStep: measured.some((x) => x.programs !== undefined) ? summarize(measured.map((x) => x.programs ?? 0)).p50 : null,
      replayedShare: measured.length ? measured.filter((x) => x.replayed).length / measured.length : 0,
      hostDispatchMsMedian: summarize(measured.map((x) => x.spans.forwardBackwardMs + x.spans.optimizerMs)).p50,
      dataWaitShare: measured.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wallTotal,
    },
    stepCapture: captureSummary,
    hostGc: hostGc!,
    batchUploads,
  };
  optimizer.dispose?.();
  model.dispose();
  // Dawn keeps Node alive while a GPU device is referenced.
  disposeBackend(tf as never);
  return result;
}

/** A batch on the device with its alignment search started (training.alignment_lookahead). */
interface PreparedBatch {
  batch: LoadedBatch;
  tensors: ReturnType<typeof uploadBatch>;
  alignment: Promise<BatchAlignment>;
}

/** Frees a batch prepared ahead that no step trained on (the run ended first). */
async function disposeAhead(p: PreparedBatch): Promise<void> {
  disposeBatch(p.tensors);
  const a = await p.alignment.catch(() => undefined);
  if (a) tf.dispose([a.steps, a.durations]);
}

function outOfMemory(e: Error, config: XttsConfig, batch: LoadedBatch): XttsError {
  return new XttsError('DEVICE_OUT_OF_MEMORY', `the device ran out of memory on a batch of ${batch.shape.batchSize} × ${batch.shape.frames} frames (${e.message.split('\n')[0]})`, {
    exitCode: ExitCode.environment,
    suggestions: [
      `lower batching.batch_size (now ${config.batching.batch_size}), e.g. --set batching.batch_size=${Math.max(1, Math.floor(config.batching.batch_size / 2))}`,
      `or lower limits.max_audio_s (now ${config.limits.max_audio_s}) so the longest bucket is shorter`,
      config.device.model_memory_budget_mb ? `device.model_memory_budget_mb is ${config.device.model_memory_budget_mb}; check it with \`xtts validate-gpu-optimization\`` : 'set device.model_memory_budget_mb and check it with `xtts validate-gpu-optimization`',
    ],
  });
}
