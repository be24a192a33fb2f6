// The training loop, top to bottom: prepare the data, pick the backend, build the model and the
// optimizer (or resume them), then per step: batch -> upload -> forward/backward/update -> (every
// log_every) one readback -> (intervals) validation, checkpoint, eval audio. Every step's spans go
// to the run database; nothing waits for the device except the readbacks the config asks for.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, KernelCounter, noDeviceTime, timeOnDevice, type BackendChoice } from '../backend/index.js';
import { FeatureCache } from '../cache/cache.js';
import type { LoadedConfig } from '../config/load.js';
import type { Backend, XttsConfig } from '../config/schema.js';
import { encodeWav } from '../data/audio/wav.js';
import { griffinLim } from '../data/audio/griffin-lim.js';
import { planBuckets } from '../data/buckets.js';
import { DataLoader, producerThreads, type LoadedBatch } from '../data/loader.js';
import { prepareDataset, type PreparedDataset, type PreparedItem, type PrepareProgress } from '../data/prepare.js';
import { cleanText } from '../data/text/cleaners.js';
import { Phonemizer } from '../data/text/phonemizer.js';
import { ExitCode, XttsError } from '../errors.js';
import { type BatchDims, disposeBatch, uploadBatch } from '../model/batch.js';
import { computeLosses } from '../model/losses.js';
import { XttsModel } from '../model/model.js';
import { melPanelsPng } from '../render/png.js';
import { GpuSampler } from '../telemetry/gpu-sampler.js';
import { toDeviceSampleRecord } from '../telemetry/gpu-sample.js';
import { RunDatabase } from '../telemetry/run-db.js';
import { SpanTimer, type StepRecord } from '../telemetry/spans.js';
import { summarize } from '../util/stats.js';
import { CheckpointStore, type NamedArray } from './checkpoint.js';
import { AdamW } from './optim/adamw.js';
import { disposeStepResult, STEP_STATS, trainStep } from './optim/train-step.js';

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
  stoppedBy: 'max_steps' | 'early_stopping' | 'interrupted' | 'non_finite';
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
  timing: { stepMsMedian: number; samplesPerS: number; kernelsPerStep: number; dataWaitShare: number };
}

interface CheckpointState {
  step: number;
  /** Next batch to train on: resume continues exactly here. */
  position: { epoch: number; batch: number };
  dropoutRng: number;
  bestValidationLoss: number | null;
  validationsWithoutImprovement: number;
  tokenizer: unknown;
  tokenizerIdentity: string;
  stats: { mean: number[]; std: number[] };
  speakers: string[];
  languages: string[];
  sizes: { vocabSize: number; nMels: number; numLanguages: number };
  config: XttsConfig;
}

/** Host copies of tensors. Asynchronous reads: WebGPU's synchronous readback needs a canvas, which Node has not. */
async function toArrays(tensors: Map<string, tf.Tensor>): Promise<NamedArray[]> {
  return Promise.all([...tensors.entries()].map(async ([name, t]) => ({ name, shape: t.shape, dtype: t.dtype === 'int32' ? ('int32' as const) : ('float32' as const), data: (await t.data()) as Float32Array | Int32Array })));
}

function fromArrays(arrays: NamedArray[]): Map<string, tf.Tensor> {
  return new Map(arrays.map((a) => [a.name, tf.tensor(a.data, a.shape, a.dtype)]));
}

// Out-of-memory as each backend words it; the wasm backend aborts its module when its heap (at most
// 4 GiB) runs out, or, when an allocation's null pointer is written to first, traps with "memory
// access out of bounds" (seen with the small preset's batch of 32: a RuntimeError from a transpose).
const OOM = /out of memory|OOM|failed to allocate|allocation failed|exceeds the (maximum|max) buffer size|createBuffer|^Aborted\(|memory access out of bounds/i;

export async function train(o: TrainOptions): Promise<TrainResult> {
  const config = o.loaded.config;
  const t = config.training;
  let maxSteps = o.maxSteps ?? t.max_steps;
  const runDir = o.outputDir ?? o.loaded.outputDir;
  const say = o.onMessage ?? (() => undefined);

  // Data.
  const data = await prepareDataset(o.loaded, { datasetDir: o.datasetDir, onProgress: o.onPrepareProgress });
  say(`data: ${data.train.length} training and ${data.validation.length} validation utterances, ${data.skipped.length} rows skipped (see \`xtts analyze-data-pipeline\`)`);

  // Backend, model, optimizer.
  const { choice } = await initBackend(o.backend ?? config.device.backend, { device: config.device.model_device, unsafeApis: true });
  await import('../model/gradients.js');
  say(`backend: ${choice.backend} — ${choice.reason}${choice.adapter ? ` (${choice.adapter.description || choice.adapter.device || choice.adapter.vendor})` : ''}`);
  const sizes = { vocabSize: data.tokenizer.vocabSize, nMels: config.audio.n_mels, numLanguages: config.text.languages.length };
  const model = new XttsModel(config.model, sizes, { seed: t.seed });
  const optimizer = new AdamW(model.trainableVariables(), t);
  const store = new CheckpointStore(runDir);
  let step = 0;
  let position = { epoch: 0, batch: 0 };
  let bestValidationLoss: number | null = null;
  let validationsWithoutImprovement = 0;
  if (o.resume) {
    const dir = store.latest();
    if (!dir) throw new XttsError('RESUME_NOTHING', `--resume: no checkpoint in ${runDir}`, { suggestions: ['start without --resume, or pass --output with the run folder to resume'] });
    const ckpt = store.load<CheckpointState>(dir);
    if (ckpt.state.tokenizerIdentity !== data.tokenizer.identity()) {
      throw new XttsError('RESUME_TOKENIZER_CHANGED', `the dataset's characters changed since ${dir} was written: its tokenizer no longer matches`, {
        suggestions: ['resume with the dataset the run was trained on, or start a new run (--output NEW_DIR)'],
      });
    }
    const weights = fromArrays(ckpt.weights);
    model.setWeights(weights);
    tf.dispose([...weights.values()]);
    const opt = fromArrays(ckpt.optimizer);
    optimizer.setState(opt);
    tf.dispose([...opt.values()]);
    model.dropout.rngState = ckpt.state.dropoutRng;
    step = ckpt.state.step;
    position = ckpt.state.position;
    bestValidationLoss = ckpt.state.bestValidationLoss;
    validationsWithoutImprovement = ckpt.state.validationsWithoutImprovement;
    say(`resumed from ${dir} at step ${step}`);
  }
  const startStep = step;

  // Run database.
  mkdirSync(runDir, { recursive: true });
  const db = RunDatabase.create(runDir);
  db.setMeta('config', config);
  db.setMeta('configFile', o.loaded.file);
  db.setMeta('backend', choice.backend);
  db.setMeta('device', choice.adapter ? choice.adapter.name : null);
  db.setMeta('parameters', model.parameterCount());

  // Batches.
  const r = config.model.reduction_factor;
  const bucketOptions = { buckets: config.batching.buckets, batchSize: config.batching.batch_size, frameBudget: config.batching.frame_budget, frameMultiple: r };
  const plan = planBuckets(data.train.map((i) => ({ tokens: i.tokens.length, frames: i.frames })), bucketOptions);
  const loaderItems = (items: PreparedItem[]) => items.map((i) => ({ featureKey: i.featureKey, frames: i.frames, tokens: i.tokens, language: i.language, speaker: i.speaker, audioPath: i.audioPath }));
  // Without the cache, producers recompute every clip's features from its audio for every batch.
  const recomputeAudio = config.pipeline.cache.enabled ? undefined : config.audio;
  const common = { cachePath: data.cachePath, mean: data.stats.mean, std: data.stats.std, seed: t.seed, refFrames: config.batching.reference_frames, nMels: config.audio.n_mels, reductionFactor: r, recomputeAudio };
  const loader = new DataLoader({ ...common, items: loaderItems(data.train), plan, shuffle: config.batching.shuffle, depth: config.pipeline.prefetch_depth, producers: producerThreads(config, availableParallelism()), start: position });

  const kernels = new KernelCounter().install(tf as never);
  const records: StepRecord[] = [];
  const lossCurve: TrainResult['lossCurve'] = [];
  const validation: TrainResult['validation'] = [];
  const checkpoints: string[] = [];
  const evalFiles: string[] = [];
  let nonFiniteSteps = 0;
  let stoppedBy: TrainResult['stoppedBy'] = 'max_steps';
  // Device-timed probe steps come last; a backend with no device time runs none of them.
  let timedSteps = Math.max(0, Math.floor(o.deviceTimedSteps ?? 0));
  let deviceTiming: { available: boolean; source?: string; reason?: string } | undefined;
  const untimeable = noDeviceTime(choice.backend);
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
  db.setMeta('gpuTelemetry', sampler ? sampler.status : { available: false, reason: `the ${choice.backend} backend computes on the CPU: no GPU to sample`, notes: [] });
  const dims = (b: LoadedBatch): BatchDims => ({ batchSize: b.shape.batchSize, tokens: b.shape.tokens, frames: b.shape.frames, refFrames: b.shape.refFrames, nMels: b.shape.nMels, reductionFactor: r });

  const saveCheckpoint = async (best: boolean) => {
    const state: CheckpointState = {
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
      config,
    };
    const dir = store.save(step, { weights: await toArrays(model.getWeights()), optimizer: await toArrays(optimizer.getState()), state }, { keep: t.keep_checkpoints, best });
    checkpoints.push(dir);
  };

  try {
    while (step < maxSteps) {
      // Let the event loop run between steps: when the ring is always ready, the loop would
      // otherwise be one endless chain of microtasks and signals (Ctrl-C) and timers would never fire.
      await new Promise((resolve) => setImmediate(resolve));
      const timer = new SpanTimer();
      const batch = await loader.next();
      if (!batch) break;
      timer.mark('dataWaitMs');
      const tensors = uploadBatch(batch, dims(batch));
      loader.release(batch);
      timer.mark('uploadMs');
      kernels.take();
      let result: ReturnType<typeof trainStep> | undefined;
      let deviceMs: number | undefined;
      const stepOptions = { accumulate: t.grad_accumulation_steps, onGradients: () => timer.mark('forwardBackwardMs') };
      try {
        if (step >= timedFrom) {
          const timing = await timeOnDevice(tf as never, () => {
            result = trainStep(model, optimizer, tensors, t.loss, stepOptions);
          });
          if (timing.available) deviceMs = timing.kernelMs;
          deviceTiming = timing.available ? { available: true, source: timing.source } : { available: false, reason: timing.reason };
        } else result = trainStep(model, optimizer, tensors, t.loss, stepOptions);
      } catch (e) {
        throw OOM.test((e as Error).message) ? outOfMemory(e as Error, config, batch) : e;
      }
      if (!result) throw new Error('the training step returned nothing');
      const stepKernels = kernels.take();
      timer.mark('optimizerMs');
      step++;
      position = { epoch: batch.epoch, batch: batch.index + 1 };
      let loss: number | undefined;
      let gradNorm: number | undefined;
      const logNow = step % t.log_every === 0 || step === maxSteps;
      if (logNow) {
        const stats = await result.stats.data();
        nonFiniteSteps = (await optimizer.nonFiniteSteps.data())[0];
        timer.mark('syncMs');
        loss = stats[STEP_STATS.indexOf('loss')];
        gradNorm = stats[STEP_STATS.indexOf('gradNorm')];
        lossCurve.push({ step, loss });
        db.addMetric(step, 'loss/train', loss);
        db.addMetric(step, 'loss/mel_pre', stats[STEP_STATS.indexOf('melPre')]);
        db.addMetric(step, 'loss/mel_post', stats[STEP_STATS.indexOf('melPost')]);
        db.addMetric(step, 'loss/stop', stats[STEP_STATS.indexOf('stop')]);
        db.addMetric(step, 'grad_norm', gradNorm);
        db.addMetric(step, 'learning_rate', result.learningRate);
      }
      const learningRate = result.learningRate;
      disposeStepResult(result);
      disposeBatch(tensors);

      if (!o.stepsOnly) {
        if (step % t.validate_every === 0 && data.validation.length > 0) {
          const val = await validate(model, data, config, bucketOptions, common, loaderItems);
          validation.push({ step, loss: val });
          db.addMetric(step, 'loss/val', val);
          const improved = bestValidationLoss === null || val < bestValidationLoss;
          if (improved) {
            bestValidationLoss = val;
            validationsWithoutImprovement = 0;
          } else validationsWithoutImprovement++;
          say(`step ${step}: validation loss ${val.toFixed(4)}${improved ? ' (best)' : ''}`);
          await saveCheckpoint(improved);
          if (t.early_stopping_patience > 0 && validationsWithoutImprovement >= t.early_stopping_patience) stoppedBy = 'early_stopping';
        } else if (step % t.checkpoint_every === 0) await saveCheckpoint(false);
        if (step % t.eval_every === 0) evalFiles.push(...(await synthesizeEval(model, data, config, join(runDir, 'eval', `step-${String(step).padStart(8, '0')}`), say)));
        timer.mark('checkpointMs');
      }
      const { wallMs, spans } = timer.finish();
      const rec: StepRecord = {
        step,
        startMs: timer.startedAt - runStart,
        wallMs,
        spans,
        epoch: batch.epoch,
        batchIndex: batch.index,
        bucket: batch.bucket,
        batchSize: batch.shape.batchSize - batch.fillers,
        tokens: batch.shape.tokens,
        frames: batch.shape.frames,
        kernels: stepKernels,
        ...(deviceMs !== undefined ? { deviceMs } : {}),
        readySlots: batch.readySlots,
        learningRate,
        loss,
        gradNorm,
      };
      records.push(rec);
      db.addStep(rec);
      if (logNow) {
        db.flush();
        const recent = records.slice(-t.log_every);
        const wall = recent.reduce((a, x) => a + x.wallMs, 0);
        o.onProgress?.({
          step,
          maxSteps,
          loss: loss!,
          learningRate,
          samplesPerS: recent.reduce((a, x) => a + x.batchSize, 0) / (wall / 1000),
          dataWaitShare: recent.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wall,
          stepMs: wall / recent.length,
          etaS: ((maxSteps - step) * wall) / recent.length / 1000,
          nonFiniteSteps,
          gpuUtilizationPct: sampler?.summary({ fromMs: recent[0].startMs })[0]?.utilizationPct?.mean,
        });
        if (nonFiniteSteps > t.max_nonfinite_steps) {
          stoppedBy = 'non_finite';
          break;
        }
      }
      if (stoppedBy === 'early_stopping') break;
      if (o.control?.stop) {
        stoppedBy = 'interrupted';
        break;
      }
    }
    if (!o.stepsOnly && step > startStep && !checkpoints.some((c) => c.endsWith(`step-${String(step).padStart(8, '0')}`))) await saveCheckpoint(false);
    if (!o.stepsOnly && stoppedBy !== 'interrupted' && step > startStep && step % t.eval_every !== 0) evalFiles.push(...(await synthesizeEval(model, data, config, join(runDir, 'eval', `step-${String(step).padStart(8, '0')}`), say)));
  } finally {
    kernels.uninstall();
    await sampler?.stop();
    await loader.close();
    db.setMeta('result', { steps: step, stoppedBy, nonFiniteSteps });
    if (deviceTiming) db.setMeta('deviceTiming', deviceTiming);
    db.close();
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
    nonFiniteSteps,
    checkpoints,
    evalFiles,
    timing: {
      stepMsMedian: summarize(measured.map((x) => x.wallMs)).p50,
      samplesPerS: measured.reduce((a, x) => a + x.batchSize, 0) / (wallTotal / 1000),
      kernelsPerStep: summarize(measured.map((x) => x.kernels)).p50,
      dataWaitShare: measured.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wallTotal,
    },
  };
  optimizer.dispose?.();
  model.dispose();
  // Dawn keeps Node alive while a GPU device is referenced.
  disposeBackend(tf as never);
  return result;
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

/** Mean validation loss over one pass of the validation set (no dropout), one readback at the end. */
async function validate(
  model: XttsModel,
  data: PreparedDataset,
  config: XttsConfig,
  bucketOptions: Parameters<typeof planBuckets>[1],
  common: Omit<ConstructorParameters<typeof DataLoader>[0], 'items' | 'plan' | 'shuffle' | 'depth' | 'producers'>,
  loaderItems: (items: PreparedItem[]) => ConstructorParameters<typeof DataLoader>[0]['items'],
): Promise<number> {
  const plan = planBuckets(data.validation.map((i) => ({ tokens: i.tokens.length, frames: i.frames })), bucketOptions);
  const batches = plan.buckets.reduce((a, b) => a + Math.ceil(b.items.length / b.batchSize), 0);
  const loader = new DataLoader({ ...common, items: loaderItems(data.validation), plan, shuffle: false, depth: 2, producers: 0, maxBatches: batches });
  const r = config.model.reduction_factor;
  let sum: tf.Scalar = tf.scalar(0);
  let n = 0;
  try {
    for (;;) {
      const b = await loader.next();
      if (!b) break;
      const tensors = uploadBatch(b, { batchSize: b.shape.batchSize, tokens: b.shape.tokens, frames: b.shape.frames, refFrames: b.shape.refFrames, nMels: b.shape.nMels, reductionFactor: r });
      loader.release(b);
      const next = tf.tidy(() => {
        const out = model.forward(tensors, { training: false, attention: config.training.loss.guided_attention_weight > 0 });
        return tf.add(sum, computeLosses(out, tensors, config.training.loss, r).total) as tf.Scalar;
      });
      sum.dispose();
      sum = next;
      n++;
      disposeBatch(tensors);
    }
  } finally {
    await loader.close();
  }
  const total = (await sum.data())[0];
  sum.dispose();
  return n ? total / n : Number.NaN;
}

/**
 * Free-running synthesis of the eval sentences (and of one validation utterance, drawn against its
 * real mel) with a validation clip as the voice reference: WAVs by Griffin-Lim and PNGs of the mels.
 */
async function synthesizeEval(model: XttsModel, data: PreparedDataset, config: XttsConfig, dir: string, onSkip?: (m: string) => void): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const refItem = data.validation[0] ?? data.train[0];
  const cache = FeatureCache.openReadonly(data.cachePath);
  const nMels = config.audio.n_mels;
  const normalised = (key: string) => {
    const f = cache.getFeature(key)!;
    const out = new Float32Array(f.frames * nMels);
    for (let i = 0; i < out.length; i++) out[i] = (f.mel[i] - data.stats.mean[i % nMels]) / data.stats.std[i % nMels];
    return { mel: out, frames: f.frames };
  };
  const denormalised = (mel: Float32Array) => mel.map((v, i) => v * data.stats.std[i % nMels] + data.stats.mean[i % nMels]);
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  try {
    const ref = normalised(refItem.featureKey);
    const refMel = ref.mel.subarray(0, Math.min(ref.frames, config.batching.reference_frames) * nMels);
    const jobs: { name: string; ids: ArrayLike<number>; language: number; target?: { mel: Float32Array; frames: number } }[] = [];
    for (const [i, s] of config.training.eval_sentences.entries()) {
      const language = s.language ?? config.dataset.language;
      let text = cleanText(s.text, config.text);
      if (phonemizer) text = await phonemizer.phonemize(text, language);
      const enc = data.tokenizer.encode(text, language);
      if (enc.unmappable.length) {
        onSkip?.(`eval sentence ${i + 1} skipped: characters never seen in training: ${enc.unmappable.map((c) => JSON.stringify(c)).join(' ')}`);
        continue;
      }
      jobs.push({ name: `sentence-${i + 1}`, ids: enc.ids, language: Math.max(0, config.text.languages.indexOf(language)) });
    }
    if (data.validation[0]) {
      const v = data.validation[0];
      jobs.push({ name: `validation-${v.id.replace(/[^\w.-]+/g, '_')}`, ids: v.tokens, language: v.language, target: normalised(v.featureKey) });
    }
    for (const job of jobs) {
      const maxFrames = Math.min(config.model.max_mel_frames, Math.max(64, (job.target?.frames ?? job.ids.length * 12) + 64));
      const g = await model.generate(job.ids, job.language, refMel, { maxFrames });
      const logMel = denormalised(g.mel);
      const wav = join(dir, `${job.name}.wav`);
      writeFileSync(wav, encodeWav(griffinLim(logMel, g.frames, config.audio, { iterations: 24 }), config.audio.sample_rate_hz));
      const png = join(dir, `${job.name}.png`);
      const panels = [{ mel: logMel, frames: g.frames, nMels }];
      if (job.target) panels.push({ mel: denormalised(job.target.mel), frames: job.target.frames, nMels });
      writeFileSync(png, melPanelsPng(panels));
      files.push(wav, png);
    }
  } finally {
    phonemizer?.close();
    cache.close();
  }
  return files;
}
