// Training the neural vocoder (`task: vocoder`), top to bottom: the clips (processed as the features
// are), the backend, the generator and its optimizer (and with `vocoder.adversarial` the
// discriminators and theirs), resume; then per step (vocoder-step.ts: random segments -> upload ->
// forward/backward/update), its losses read back every log_every, validation, checkpoints and eval
// audio at their intervals. The same run folder, lock, checkpoints (safetensors), run database,
// metrics.jsonl and TensorBoard file as the acoustic model's runs; one static batch shape.
import { totalmem } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendChoice, boundsChecksNote, disposeBackend, initBackend, KernelCounter } from '../backend/index.js';
import type { XttsConfig } from '../config/index.js';
import {
  buildManifest,
  encodeWav,
  noValidationWarning,
  refuseUnusable,
  skippedRowsWarning,
  type SourceNotes,
  sourceNoteWarnings,
} from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { mixSeed } from '../model/index.js';
import { SpanTimer } from '../telemetry/index.js';
import { makeFolders, summarize, writeFileAtomic } from '../util/index.js';
import { loadClips, SegmentSampler, type VocoderClip, VocoderGenerator, vocoderLosses } from '../vocoder/index.js';
import { checkCheckpointDisk } from './budget.js';
import { assignArrays, CheckpointStore, refuseNonFinite } from './checkpoint.js';
import { toArrays, toArraysDisposing } from './loop/host-arrays.js';
import { RunLog } from './loop/run-log.js';
import type { TrainOptions } from './loop/types.js';
import { AdamW } from './optim/adamw.js';
import { checkResume } from './loop/resume-checks.js';
import { MIXED_FP16_GROWTH_INTERVAL, MIXED_FP16_LOSS_SCALE } from './loop/run-setup.js';
import { describeFinetune, type FinetuneMels, initVocoderFrom, predictClipMels } from './vocoder-finetune.js';
import { type VocoderCheckpointState, VocoderStateSchema } from './vocoder-state.js';
import {
  ADVERSARIAL_METRICS,
  type Adversary,
  adversarialStepBytes,
  adversaryState,
  makeDiscriminators,
  newCapture,
  restoreAdversary,
  splitOptimizerArrays,
  type StepParts,
  trainOneStep,
  type VocoderStepRun,
} from './vocoder-step.js';

/** Validation clips at most: their segments are one batch-sized pass, every validate_every steps. */
const VALIDATION_CLIPS = 64;
/** Eval clips vocoded (whole) at every eval_every, from the validation clips (else the training ones). */
const EVAL_CLIPS = 2;

export interface VocoderTrainResult {
  task: 'vocoder';
  runDir: string;
  backend: BackendChoice;
  parameters: number;
  startStep: number;
  steps: number;
  stoppedBy: 'max_steps' | 'time_limit' | 'interrupted' | 'non_finite';
  trainClips: number;
  validationClips: number;
  /** Hours of processed audio the training segments are drawn from. */
  trainHours: number;
  skippedRows: number;
  /** Rows left out to keep the clips held in memory within MAX_HELD_SAMPLES. */
  leftOutRows: number;
  /** vocoder.finetune_acoustic: the acoustic checkpoint whose predicted mels it trained on, and how many. */
  finetune: FinetuneMels | null;
  /** vocoder.init_from: the vocoder checkpoint whose weights it started from. */
  initFrom: { checkpoint: string; step: number } | null;
  /** vocoder.adversarial: its discriminators, their parameters and the step after which they joined. */
  adversarial: { discriminators: string[]; parameters: number; startStep: number } | null;
  lossCurve: { step: number; loss: number }[];
  validation: { step: number; loss: number; mel: number }[];
  bestValidationLoss: number | null;
  nonFiniteSteps: number;
  checkpoints: string[];
  evalFiles: string[];
  /** stepMsMean: over the steps from the sixth, readbacks included; the per-second figures follow it. */
  timing: { stepMsMedian: number; stepMsMean: number; segmentsPerS: number; audioSecondsPerS: number };
}

interface VocoderData {
  train: VocoderClip[];
  validation: VocoderClip[];
  skippedRows: number;
  leftOutRows: number;
}

async function loadData(o: TrainOptions, say: (m: string) => void): Promise<VocoderData> {
  const config = o.loaded.config;
  const manifest = buildManifest(o.datasetDir ?? o.loaded.datasetDir, config.dataset);
  const notes: SourceNotes = {};
  const common = { segmentFrames: config.vocoder.segment_frames, seed: config.training.seed, notes };
  const train = await loadClips(manifest.train, config.audio, config.limits, common);
  const validation = await loadClips(manifest.validation.slice(0, VALIDATION_CLIPS), config.audio, config.limits, {
    ...common,
    budget: 64 * config.audio.sample_rate_hz * 60,
  });
  const skipped = [...manifest.skipped, ...train.skipped, ...validation.skipped];
  refuseUnusable(skipped, train.clips.length, manifest.datasetDir, o.strict === true);
  const hours = train.clips.reduce((a, c) => a + c.samples.length, 0) / config.audio.sample_rate_hz / 3600;
  say(
    `vocoder data: ${train.clips.length} clips (${hours.toFixed(2)} h) to train on, ` +
      `${validation.clips.length} to validate on; ${skipped.length} rows skipped` +
      (train.leftOut ? `; ${train.leftOut} rows left out to keep the clips held in memory under 1 GiB` : ''),
  );
  // The acoustic trainer's warnings that concern a vocoder too (describeDataset): where the skipped rows are,
  // recordings that lack what the model's audio has, and nothing to validate on.
  const warnings = [skippedRowsWarning(skipped), ...sourceNoteWarnings(notes)];
  if (validation.clips.length === 0)
    warnings.push(
      noValidationWarning(manifest, train.clips.length, 'clips', 'the validation loss and the best checkpoint'),
    );
  for (const w of warnings) if (w) say(`warning: ${w}`);
  return { train: train.clips, validation: validation.clips, skippedRows: skipped.length, leftOutRows: train.leftOut };
}

/**
 * The generator's waveform of one whole clip's mel (or `batch` of them, [batch, frames, n_mels]), cut to
 * `samples` when given. Read back asynchronously:
 * webgpu's synchronous readback needs a canvas, which Node has not.
 */
export async function vocodeClip(
  generator: VocoderGenerator,
  mel: Float32Array,
  frames: number,
  samples?: number,
  batch = 1,
): Promise<Float32Array> {
  const input = tf.tensor3d(mel, [batch, frames, generator.audio.n_mels]);
  const wave = tf.tidy(() => generator.forward(input, { inference: true }));
  input.dispose();
  try {
    const out = (await wave.data()) as Float32Array;
    return samples === undefined ? out : out.slice(0, Math.min(samples, out.length));
  } finally {
    wave.dispose();
  }
}

/** A vocoder run's parts, made before its first step. */
interface VocoderRun extends VocoderStepRun {
  o: TrainOptions;
  finetune: FinetuneMels | undefined;
  initFrom: { checkpoint: string; step: number } | undefined;
  runId: string;
  runDir: string;
  data: VocoderData;
  choice: BackendChoice;
  store: CheckpointStore;
  log: RunLog;
  /** Kernels, GPU programs and model FLOPs of each step, for the run database (and the profiler). */
  kernels: KernelCounter;
  /** One fixed batch of validation segments [mel, wave], kept on the device. */
  validation: tf.Tensor[];
  evalClips: VocoderClip[];
  startStep: number;
  maxSteps: number;
  /** What the loop changes (and `step`). */
  best: number | null;
  stoppedBy: VocoderTrainResult['stoppedBy'];
  nonFinite: number;
  checkpoints: string[];
  validationLosses: VocoderTrainResult['validation'];
  stepMs: number[];
}

export async function trainVocoder(o: TrainOptions, runDir: string, runId: string): Promise<VocoderTrainResult> {
  const run = await setUpVocoderRun(o, runDir, runId);
  try {
    await vocoderSteps(run);
    // A run stopped early (time limit, signal) keeps its last step.
    const last = run.store.latest();
    const stopped = run.stoppedBy === 'time_limit' || run.stoppedBy === 'interrupted';
    if (stopped && run.step > run.startStep && !last?.endsWith(stepName(run.step))) await saveCheckpoint(run, false);
  } finally {
    run.log.writeLossCurve();
    run.log.close({ step: run.step, stoppedBy: run.stoppedBy });
  }
  const { config, data, generator } = run;
  const result: VocoderTrainResult = {
    task: 'vocoder',
    runDir,
    backend: run.choice,
    parameters: generator.parameterCount(),
    startStep: run.startStep,
    steps: run.step,
    stoppedBy: run.stoppedBy,
    trainClips: data.train.length,
    validationClips: data.validation.length,
    trainHours: data.train.reduce((a, c) => a + c.samples.length, 0) / config.audio.sample_rate_hz / 3600,
    skippedRows: data.skippedRows,
    leftOutRows: data.leftOutRows,
    finetune: run.finetune ?? null,
    initFrom: run.initFrom ?? null,
    adversarial: describeAdversary(run.adversary),
    lossCurve: run.log.lossCurve,
    validation: run.validationLosses,
    bestValidationLoss: run.best,
    nonFiniteSteps: run.nonFinite,
    checkpoints: run.checkpoints,
    evalFiles: run.log.evalFiles,
    timing: timingOf(run.stepMs, config.batching.batch_size, config),
  };
  run.kernels.uninstall();
  run.optimizer.dispose?.();
  run.adversary?.optimizer.dispose?.();
  run.adversary?.discriminators.dispose();
  generator.dispose();
  tf.dispose(run.validation);
  disposeBackend(tf as never);
  return result;
}

const stepName = (step: number) => `step-${String(step).padStart(8, '0')}`;

async function setUpVocoderRun(o: TrainOptions, runDir: string, runId: string): Promise<VocoderRun> {
  const say = o.onMessage ?? (() => undefined);
  const config = o.loaded.config;
  const t = config.training;
  // As an acoustic run's resume: on the data the run trained on, checked before any clip is read.
  if (o.resume) checkResume(o, runDir, say);
  const data = await loadData(o, say);
  const { choice } = await initBackend(o.backend ?? config.device.backend, {
    device: config.device.model_device,
    unsafeApis: true,
    robustness: config.device.bounds_checks === 'on',
    matmul: config.device.matmul,
    precision: t.precision,
  });
  await import('../model/gradients.js');
  say(`backend: ${choice.backend} — ${choice.reason}${boundsChecksNote(choice)}`);
  refuseAdversarialMemory(config, choice.backend);
  const { finetune_acoustic: acoustic, init_from: initPath } = config.vocoder;
  const generator = new VocoderGenerator(config.vocoder, config.audio, t.seed);
  let initFrom: VocoderRun['initFrom'];
  let finetune: VocoderRun['finetune'];
  try {
    // A resumed run's own weights replace these.
    initFrom = initPath ? initVocoderFrom(initPath, generator, config) : undefined;
    if (initFrom) say(`generator weights from ${initFrom.checkpoint} (step ${initFrom.step})`);
    finetune = acoustic ? await predictClipMels(acoustic, [...data.train, ...data.validation], config, say) : undefined;
    if (finetune) say(describeFinetune(finetune));
  } catch (e) {
    generator.dispose();
    throw e;
  }
  // mixed_fp16: f16 matmul operands, so the losses are scaled as the acoustic model's is (loop/run-setup.ts).
  const scaling =
    t.precision === 'mixed_fp16'
      ? { lossScale: { initial: MIXED_FP16_LOSS_SCALE, growthInterval: MIXED_FP16_GROWTH_INTERVAL } }
      : {};
  const optimizer = new AdamW(generator.params, t, scaling);
  const discriminators = makeDiscriminators(config);
  const adversary: Adversary | undefined = discriminators && {
    discriminators,
    optimizer: new AdamW(discriminators.params, t, scaling),
    startStep: config.vocoder.adversarial.start_step,
  };
  if (adversary) {
    const { discriminators: names, parameters, startStep } = describeAdversary(adversary)!;
    const from = startStep > 0 ? `after step ${startStep}` : 'from the first step';
    say(`adversarial: ${names.length} discriminators (${names.join(', ')}; ${parameters} parameters), ${from}`);
  }
  const store = new CheckpointStore(runDir);
  // A checkpoint holds the generator and the discriminators with their AdamW moments: 12 bytes a parameter of each.
  const parameters = generator.parameterCount() + (discriminators?.parameterCount() ?? 0);
  checkCheckpointDisk(runDir, parameters, t.keep_checkpoints, say);
  const { hop_length: hop, n_mels: nMels } = config.audio;
  const sampler = new SegmentSampler(data.train, config.vocoder.segment_frames, hop, nMels, mixSeed(t.seed, 1));
  const parts = { generator, optimizer, sampler, adversary };
  const resumed = o.resume ? resumeVocoder(store, runDir, runId, parts, say) : undefined;
  const start = resumed ?? { step: 0, bestValidationLoss: null };
  const maxSteps = o.maxSteps ?? t.max_steps;
  const log = RunLog.open(runDir, { tensorboard: true, maxSteps, logEvery: t.log_every, onProgress: o.onProgress });
  const meta = { runId, task: 'vocoder', config, backend: choice.backend };
  for (const [k, v] of Object.entries(meta)) log.db.setMeta(k, v);
  log.recordConfigFile(o.loaded.file);
  log.db.setMeta('device', choice.adapter ? choice.adapter.name : null);
  log.db.setMeta('parameters', generator.parameterCount());
  // What the run trains on and starts from: the recordings' mels or an acoustic model's, fresh or a vocoder's weights.
  log.db.setMeta('finetune', finetune ?? null);
  log.db.setMeta('initFrom', initFrom ?? null);
  log.db.setMeta('adversarial', describeAdversary(adversary));
  log.describeConfig(start.step, config, o.loaded.file);
  const heldOut = data.validation.length ? data.validation : data.train;
  return {
    ...{ o, config, runId, runDir, data, choice, generator, optimizer, store, sampler, log, say, maxSteps },
    ...{ finetune, initFrom, adversary },
    kernels: new KernelCounter({ flops: true }).install(tf as never),
    capture: newCapture(config, choice.backend),
    validation: validationBatch(heldOut, config, config.batching.batch_size),
    evalClips: heldOut.slice(0, EVAL_CLIPS),
    startStep: start.step,
    step: start.step,
    best: start.bestValidationLoss,
    stoppedBy: 'max_steps',
    nonFinite: 0,
    checkpoints: [],
    validationLosses: [],
    stepMs: [],
  };
}

/** The loop: one optimizer step per iteration until max_steps, the time limit, a stop or divergence. */
async function vocoderSteps(run: VocoderRun): Promise<void> {
  const { o, config, log, optimizer } = run;
  const t = config.training;
  const batch = config.batching.batch_size;
  const runStart = performance.now();
  while (run.step < run.maxSteps) {
    // Let signals and timers in between steps.
    await new Promise((resolve) => setImmediate(resolve));
    if (o.maxMinutes !== undefined && performance.now() - runStart >= o.maxMinutes * 60_000) {
      run.stoppedBy = 'time_limit';
      break;
    }
    if (o.control?.stop) {
      run.stoppedBy = 'interrupted';
      break;
    }
    const timer = new SpanTimer();
    run.kernels.take();
    const step = run.step + 1;
    const logged = step % t.log_every === 0 || step === run.maxSteps;
    const parts = trainOneStep(run, timer);
    // A replayed step dispatched its recording's programs (the kernel counter saw none of them).
    const replayed = run.capture.lastPrograms;
    const work = replayed
      ? { kernels: replayed, flops: run.kernels.flops, programs: replayed }
      : { kernels: run.kernels.count, flops: run.kernels.flops, programs: run.kernels.dispatches };
    const loss = logged ? await logStep(run, step, parts) : undefined;
    if (logged) timer.mark('syncMs');
    tf.dispose(parts);
    run.step = step;
    const { wallMs, spans } = timer.finish();
    run.stepMs.push(wallMs);
    const learningRate = optimizer.learningRate(step);
    const shape = { epoch: 0, batchIndex: step - 1, bucket: 0, batchSize: batch, tokens: 0, readySlots: 0 };
    const counted = {
      kernels: work.kernels,
      ...(work.flops ? { flops: work.flops } : {}),
      ...(work.programs ? { programs: work.programs } : {}),
      ...(run.capture.off === null ? { replayed: replayed > 0 } : {}),
    };
    const frames = config.vocoder.segment_frames;
    log.addStep({
      step,
      startMs: timer.startedAt - runStart,
      wallMs,
      spans,
      ...shape,
      ...counted,
      frames,
      learningRate,
      loss,
    });
    o.onStep?.({ step, startStep: run.startStep, maxSteps: run.maxSteps, elapsedMs: performance.now() - runStart });
    if (loss !== undefined) log.reportProgress(step, loss, learningRate);
    const due = await milestones(step, run);
    if (due.checkpoint) await saveCheckpoint(run, due.best);
    if (run.stoppedBy === 'non_finite') break;
    if (run.nonFinite >= Math.max(1, t.max_nonfinite_steps)) {
      run.stoppedBy = 'non_finite';
      run.say(`${run.nonFinite} logged steps had a NaN/Inf loss: the run stops`);
      break;
    }
  }
}

/** A logged step's figures read back into the metrics; its loss. */
async function logStep(run: VocoderRun, step: number, parts: StepParts): Promise<number> {
  const values = (await Promise.all(parts.map((x) => x.data()))).map((x) => x[0]);
  const [loss, mel, sc, lm, norm, finite] = values;
  // An adversarial step's figures follow the generator's six, then the discriminators' finite flag.
  const adversarial = values.slice(6);
  if (finite === 0 || adversarial[ADVERSARIAL_METRICS.length] === 0) run.nonFinite++;
  ADVERSARIAL_METRICS.forEach((name, i) => {
    if (i < adversarial.length) run.log.metric(step, name, adversarial[i]);
  });
  run.log.lossCurve.push({ step, loss });
  run.log.metric(step, 'loss/train', loss);
  run.log.metric(step, 'loss/mel', mel);
  run.log.metric(step, 'loss/spectral_convergence', sc);
  run.log.metric(step, 'loss/log_magnitude', lm);
  run.log.metric(step, 'grad_norm', norm);
  run.log.metric(step, 'learning_rate', run.optimizer.learningRate(step));
  return loss;
}

/** The checkpoint of the run's current step; a non-finite one is not written, and the run stops. */
async function saveCheckpoint(run: VocoderRun, best: boolean): Promise<void> {
  const state: VocoderCheckpointState = {
    kind: 'vocoder',
    runId: run.runId,
    step: run.step,
    samplerRng: run.sampler.state,
    bestValidationLoss: run.best,
    config: run.config,
  };
  try {
    const contents = {
      weights: await toArrays(run.generator.getWeights()),
      // The discriminators ride in the optimizer's file: weights.safetensors stays the generator, all a
      // synthesis reads.
      optimizer: await toArraysDisposing(
        new Map([...run.optimizer.getState(), ...(run.adversary ? adversaryState(run.adversary) : [])]),
      ),
      state,
    };
    run.log.db.flush(); // the steps the checkpoint covers are recorded before it (as an acoustic run's)
    run.checkpoints.push(run.store.save(run.step, contents, { keep: run.config.training.keep_checkpoints, best }));
  } catch (e) {
    if (!(e instanceof XttsError && e.code === 'CHECKPOINT_NOT_FINITE')) throw e;
    run.stoppedBy = 'non_finite';
    run.say(
      `step ${run.step}: ${e.message}; no checkpoint is written (the last, ${run.store.latest() ?? 'none'}, stands)`,
    );
  }
}

function timingOf(stepMs: number[], batch: number, config: XttsConfig): VocoderTrainResult['timing'] {
  // The median is the typical step's wall time; with replayed steps that is the host's issuing time while the
  // GPU runs behind, paid at the readbacks. Throughput is the mean over the steady steps (from the sixth on:
  // the first ones compile the backend's programs and record the capture), readbacks included.
  const median = summarize(stepMs).p50;
  const steady = stepMs.length > 10 ? stepMs.slice(5) : stepMs;
  const mean = summarize(steady).mean;
  const segmentS = (config.vocoder.segment_frames * config.audio.hop_length) / config.audio.sample_rate_hz;
  return {
    stepMsMedian: median,
    stepMsMean: mean,
    segmentsPerS: mean > 0 ? (batch * 1000) / mean : 0,
    audioSecondsPerS: mean > 0 ? (batch * segmentS * 1000) / mean : 0,
  };
}

/** Fixed segments of the validation clips, one batch (uploaded once, kept for the run). */
function validationBatch(clips: readonly VocoderClip[], config: XttsConfig, batch: number): tf.Tensor[] {
  const frames = config.vocoder.segment_frames;
  const n = Math.max(1, Math.min(batch, clips.length * 4));
  const sampler = new SegmentSampler(clips, frames, config.audio.hop_length, config.audio.n_mels, 7);
  const s = sampler.next(n);
  return [
    tf.tensor3d(s.mel, [n, frames, config.audio.n_mels]),
    tf.tensor2d(s.wave, [n, frames * config.audio.hop_length]),
  ];
}

/** Validation and eval audio where their intervals fall; whether a checkpoint is due, and whether it is the best. */
async function milestones(step: number, run: VocoderRun): Promise<{ checkpoint: boolean; best: boolean }> {
  const { config, log, generator } = run;
  const t = config.training;
  const last = step === run.maxSteps;
  let best = false;
  if (step % t.validate_every === 0 || last) {
    const [mel, wave] = run.validation as [tf.Tensor3D, tf.Tensor2D];
    const parts = tf.tidy(() => {
      const r = vocoderLosses(generator.forward(mel), wave, config.audio, config.vocoder);
      return [r.loss, r.mel];
    });
    const [loss, melLoss] = (await Promise.all(parts.map((x) => x.data()))).map((x) => x[0]);
    tf.dispose(parts);
    log.validation.push({ step, loss });
    run.validationLosses.push({ step, loss, mel: melLoss });
    log.metric(step, 'loss/validation', loss);
    log.metric(step, 'loss/validation_mel', melLoss);
    if (Number.isFinite(loss) && (run.best === null || loss < run.best)) {
      run.best = loss;
      best = true;
    }
  }
  if (step % t.eval_every === 0 || last) {
    const dir = join(run.runDir, 'eval', stepName(step));
    makeFolders(dir);
    const files: string[] = [];
    for (const clip of run.evalClips) {
      const wave = await vocodeClip(generator, clip.mel, clip.frames, clip.samples.length);
      const file = join(dir, `${clip.id.replace(/[^A-Za-z0-9._-]/g, '_')}.wav`);
      writeFileAtomic(file, encodeWav(wave, config.audio.sample_rate_hz));
      files.push(file);
    }
    log.publishEval(step, files);
  }
  return { checkpoint: step % t.checkpoint_every === 0 || last || best, best };
}

/** The run's last checkpoint into the generator, optimizer and sampler; undefined when there is none yet. */
function resumeVocoder(
  store: CheckpointStore,
  runDir: string,
  runId: string,
  parts: Pick<VocoderRun, 'generator' | 'optimizer' | 'sampler' | 'adversary'>,
  say: (m: string) => void,
): { step: number; bestValidationLoss: number | null } | undefined {
  const { generator, optimizer, sampler, adversary } = parts;
  const dir = store.latest();
  if (!dir) {
    say(`--resume: ${runDir}'s run has no checkpoint yet: it starts over from step 0`);
    return undefined;
  }
  const ckpt = store.loadForResume<VocoderCheckpointState>(dir, { kind: 'vocoder', schema: VocoderStateSchema }, (c) =>
    refuseNonFinite(dir, c),
  );
  if (ckpt.state.runId !== runId) {
    throw new XttsError('RUN_MIXED', `${dir} was written by run ${ckpt.state.runId}, not by ${runDir}'s run ${runId}`, {
      exitCode: ExitCode.usage,
      position: { file: join(dir, 'state.json') },
      suggestions: ['resume with --output naming the folder that run was trained in'],
    });
  }
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => generator.setWeights(w));
  const arrays = splitOptimizerArrays(ckpt.optimizer);
  const optimizerFile = join(dir, 'optimizer.safetensors');
  assignArrays(arrays.generator, optimizerFile, (s) => optimizer.setState(s));
  if (adversary && arrays.adversary.length > 0)
    assignArrays(arrays.adversary, optimizerFile, (s) => restoreAdversary(adversary, s));
  else if (adversary) say(`${dir} has no discriminators (its run was not adversarial): they start afresh`);
  sampler.state = ckpt.state.samplerRng;
  say(`resumed from ${dir} at step ${ckpt.state.step}`);
  return { step: ckpt.state.step, bestValidationLoss: ckpt.state.bestValidationLoss };
}

/**
 * An adversarial step too large for a CPU backend's memory is refused before it is tried: wasm's heap
 * ends at 4 GiB (beyond it the backend aborts), the cpu backend's at the machine's memory.
 */
function refuseAdversarialMemory(config: XttsConfig, backend: string): void {
  const limit = backend === 'wasm' ? 3 * 2 ** 30 : backend === 'cpu' ? totalmem() / 2 : Infinity;
  const bytes = adversarialStepBytes(config);
  if (bytes <= limit) return;
  const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
  const a = config.vocoder.adversarial;
  const fits = Math.floor((limit / bytes) * a.resolution_channels);
  throw new XttsError(
    'VOCODER_ADVERSARIAL_MEMORY',
    `vocoder.adversarial: the resolution discriminators (${a.resolution_channels} channels, batch ` +
      `${config.batching.batch_size}) would hold about ${gib(bytes)} a step, more than the ${backend} ` +
      `backend has (${gib(limit)})`,
    {
      exitCode: ExitCode.usage,
      suggestions: [
        fits >= 1
          ? `set vocoder.adversarial.resolution_channels to ${fits} or less, or batching.batch_size lower`
          : 'set vocoder.adversarial.resolution_channels: 0 (the period discriminators alone) or a smaller batch',
        'train adversarially on a GPU (device.backend: webgpu)',
      ],
    },
  );
}

/** An adversarial run's discriminators as the result and the run database tell them. */
function describeAdversary(adversary: Adversary | undefined): VocoderTrainResult['adversarial'] {
  if (!adversary) return null;
  const d = adversary.discriminators;
  return { discriminators: d.names, parameters: d.parameterCount(), startStep: adversary.startStep };
}
