// The training loop, top to bottom: set the run up (data, backend, model, optimizer, resume), start its
// parts, then per step: issue it (batch -> upload -> forward/backward/update), read it back (every
// step's finite flag, every log_every its losses; pipelined steps later), run what its intervals ask
// (validation, checkpoint, eval audio), record it. The parts live in loop/; nothing waits for the
// device except the readbacks the config asks for.
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, takeGpuError } from '../backend/index.js';
import { lintConfig, TRAIN_BLOCKING_RULES } from '../config/index.js';
import { configInvalid, type LoadedConfig, requireAcousticTask } from '../config/index.js';
import { ExitCode, isXttsError, XttsError } from '../errors.js';
import { SpanTimer, type StepRecord } from '../telemetry/index.js';
import { summarize } from '../util/index.js';
import { checkModelBudget } from './budget.js';
import { openRunFolder, runCommand, runFolderForDataset } from './run-folder.js';
import { type ClosedRun, closeRun, type RunParts, startRun } from './loop/run-parts.js';
import { setUpRun } from './loop/run-setup.js';
import type { RunLog } from './loop/run-log.js';
import { type IssuedStep, PIPELINE_DEPTH, type SettleStep } from './loop/step-queue.js';
import type { TrainOptions, TrainResult } from './loop/types.js';
import { trainVocoder, type VocoderTrainResult } from './vocoder-trainer.js';

export { ringDepthWithin } from './loop/batch-feed.js';
export type { TrainOptions, TrainProgress, TrainResult } from './loop/types.js';

/** Trains what the config's `task` says: the acoustic model (train) or the vocoder (trainVocoder). */
export async function trainTask(o: TrainOptions): Promise<TrainResult | VocoderTrainResult> {
  if (o.loaded.config.task !== 'vocoder') return train(o);
  return inRunFolder(o, (runDir, runId, loaded) => trainVocoder({ ...o, loaded }, runDir, runId));
}

/** Trains the acoustic model; a config with `task: vocoder` is refused (trainTask trains either). */
export async function train(o: TrainOptions): Promise<TrainResult> {
  requireAcousticTask(
    o.loaded,
    "this command runs the acoustic model's training steps",
    'train the vocoder with `xtts train --config FILE`; profile an acoustic config',
  );
  return inRunFolder(o, (runDir, runId, loaded) => trainInFolder({ ...o, loaded }, runDir, runId));
}

/**
 * Lints the config, opens (and locks) the run folder, runs `body` in it, releases it; a run refused before it recorded
 * anything leaves no folder behind.
 */
async function inRunFolder<R>(
  o: TrainOptions,
  body: (runDir: string, runId: string, loaded: LoadedConfig) => Promise<R>,
): Promise<R> {
  // What would fail later or train something other than asked stops here, before any work.
  const blockers = lintConfig(o.loaded, { environment: false, only: TRAIN_BLOCKING_RULES }).filter(
    (f) => f.severity === 'error',
  );
  if (blockers.length) throw configInvalid(o.loaded.file, blockers, o.loaded.set);
  const runDir =
    o.outputDir ??
    (o.datasetDir !== undefined ? runFolderForDataset(o.loaded.outputDir, o.datasetDir) : o.loaded.outputDir);
  const folder = openRunFolder(runDir, o.resume === true);
  let result: R;
  try {
    result = await body(runDir, folder.runId, withRunFlags(o));
  } catch (e) {
    folder.abandon();
    throw o.resume ? withRunCommand(e, runDir) : e;
  }
  folder.release();
  return result;
}

/** What a resume refuses where its run was begun otherwise (withRunCommand). */
const RUN_MISMATCHES = ['CHECKPOINT_KIND', 'WEIGHTS_MISMATCH', 'RESUME_AUDIO_CHANGED', 'RESUME_TOKENIZER_CHANGED'];

/**
 * `e`, where a resume's model is not its run's (another model's shape, a vocoder run under an acoustic config, other
 * mel or text settings), with the command that began the run as what to do: added to the error's advice, in place of a
 * checkpoint kind's (which speaks of synthesize's flags).
 */
function withRunCommand(e: unknown, runDir: string): unknown {
  const command = runCommand(runDir);
  if (!isXttsError(e) || !RUN_MISMATCHES.includes(e.code) || command === undefined) return e;
  const began = `this run began with \`xtts ${command}\`: resume it with the same config and --set, adding --resume`;
  return new XttsError(e.code, e.message, {
    exitCode: e.exitCode,
    position: e.position,
    cause: e.cause,
    suggestions: e.code === 'CHECKPOINT_KIND' ? [began] : [began, ...e.suggestions],
  });
}

/**
 * The config as the run trains it: what the command line says instead of the config's keys (--dataset, --backend)
 * written into it, so that the run's records (run.sqlite, TensorBoard, every checkpoint) say what it did and a resume
 * can tell its data; vocoder.checkpoint as an absolute path. --max-steps is where this command stops: the schedule
 * keeps training.max_steps, as with --max-minutes (a run stopped early and resumed follows one schedule). output.dir
 * stays the config's: a checkpoint does not say where it lies (the same run in two folders writes the same bytes,
 * and a moved run is not wrong).
 */
function withRunFlags(o: TrainOptions): LoadedConfig {
  const c = o.loaded.config;
  const datasetDir = o.datasetDir !== undefined ? resolve(o.datasetDir) : o.loaded.datasetDir;
  return {
    ...o.loaded,
    datasetDir,
    config: {
      ...c,
      dataset: { ...c.dataset, path: datasetDir },
      device: { ...c.device, backend: o.backend ?? c.device.backend },
      // Relative to the folder the run started in: recorded absolute, so that synthesis run from elsewhere finds it.
      ...(c.vocoder?.checkpoint ? { vocoder: { ...c.vocoder, checkpoint: resolve(c.vocoder.checkpoint) } } : {}),
    },
  };
}

async function trainInFolder(o: TrainOptions, runDir: string, runId: string): Promise<TrainResult> {
  const say = o.onMessage ?? (() => undefined);
  const setup = await setUpRun(o, runDir, runId, say);
  const nonFiniteLimit = Math.max(1, setup.config.training.max_nonfinite_steps);
  const p = await startRun(o, setup, runDir, runId, (log) => settled(log, nonFiniteLimit));
  let closed: ClosedRun;
  try {
    await trainSteps(p, o, nonFiniteLimit);
    // Steps the loop issued without waiting for them (it ended on the time limit or a stop). Where one
    // reaches the limit, those after it are dropped, not counted (closeRun frees them).
    const stop = await p.queue.settle(0);
    if (stop !== null) {
      if (p.state.stoppedBy !== 'non_finite') stopForNonFinite(p, stop);
      p.state.step = stop;
    }
    await p.milestones.finish(p.startStep);
  } finally {
    closed = await closeRun(p);
  }
  const result = runResult(p, runDir, closed);
  setup.optimizer.dispose?.();
  setup.model.dispose();
  // Dawn keeps Node alive while a GPU device is referenced.
  disposeBackend(tf as never);
  return result;
}

/**
 * The loop. One optimizer step: grad_accumulation_steps micro-batches, each forward and backward, the
 * last one also clips and updates. Steps, schedules, intervals and the progress line count these.
 */
async function trainSteps(p: RunParts, o: TrainOptions, nonFiniteLimit: number): Promise<void> {
  const { state, log, queue, issuer, milestones, probes } = p;
  const t = p.setup.config.training;
  while (state.step < p.maxSteps) {
    // Let the event loop run between steps: when the ring is always ready, the loop would otherwise
    // be one endless chain of microtasks and signals (Ctrl-C) and timers would never fire.
    await new Promise((resolve) => setImmediate(resolve));
    // A stop that arrived while the last step computed (a CPU backend's step holds the thread): its signal is
    // handled in the event loop's poll phase, which the first yield (scheduled from a microtask) may not pass
    // through; after a second one it has, and no further step is issued.
    // (Only where nothing is pending: pipelined steps are settled first, and stop at the end of the iteration.)
    if (queue.length === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      if (o.control?.stop) {
        state.stoppedBy = 'interrupted';
        return;
      }
    }
    const timer = new SpanTimer();
    const issued = await issuer.issue(state.step, timer);
    if (queue.length) {
      // Steps before this one were issued without waiting for them: now that this one is queued
      // behind them, whether the oldest's update was made (and its record); all of them where this
      // step is waited for (their records, and the limit, in order).
      const stop = await queue.settle(issued && deferrable(p, state.step + 1) ? PIPELINE_DEPTH - 1 : 0);
      timer.mark('syncMs');
      if (stop !== null) {
        // This step and those pending were issued already; they are dropped, not counted (no checkpoint follows).
        issued?.dispose();
        queue.drop();
        stopForNonFinite(p, stop);
        state.step = stop;
        return;
      }
    }
    // The data ran out (inside an accumulation, its gradients made no update).
    if (!issued) return;
    log.addReplicaSteps(state.step + 1, issued.replicaParts);
    state.step++;
    if (issued.deviceMs !== undefined) probes.countStep();
    state.position = { epoch: issued.batch.epoch, batch: issued.batch.index + 1 };
    const step = state.step;
    const logNow = step % t.log_every === 0 || step === p.maxSteps;
    // Whether the update was made, every step so that the limit holds exactly. Pipelined, a step after
    // which nothing reads the weights is not waited for: the next steps are issued first, and its flag
    // (or, where it logs, its losses) is read later.
    const defer = deferrable(p, step);
    const read = defer ? undefined : await readNow(log, issued, step, logNow, timer);
    const checkpoints = milestones.checkpoints.length;
    if (!o.stepsOnly) {
      await milestones.afterStep();
      timer.mark('checkpointMs');
    }
    const rec = stepRecord(p, timer, issued, read);
    if (defer) queue.push(rec, issued, logNow);
    else log.addStep(rec);
    // A checkpoint's own step into run.sqlite at once (the steps before it were, before it was written): a process
    // killed after it leaves no step the resumed run will not train again unrecorded.
    if (milestones.checkpoints.length > checkpoints) log.db.flush();
    o.onStep?.({ step, startStep: p.startStep, maxSteps: p.maxSteps, elapsedMs: performance.now() - p.runStart });
    if (read?.logged) log.reportProgress(step, read.logged.loss, issued.learningRate);
    throwOnGpuError(step);
    if (read?.flag === 0 && log.nonFiniteSteps >= nonFiniteLimit) return stopForNonFinite(p, step);
    if (state.stoppedBy === 'early_stopping' || state.stoppedBy === 'non_finite') return;
    if (o.maxMinutes !== undefined && performance.now() - p.runStart >= o.maxMinutes * 60_000) {
      state.stoppedBy = 'time_limit';
      return;
    }
    if (o.control?.stop) {
      state.stoppedBy = 'interrupted';
      return;
    }
  }
}

/** Whether step n (pipelined) may be issued and left unread: nothing reads the weights after it. */
function deferrable(p: RunParts, n: number): boolean {
  if (!p.pipelined || n >= p.maxSteps) return false;
  const t = p.setup.config.training;
  const validates = n % t.validate_every === 0 && p.setup.data.validation.length > 0;
  return p.stepsOnly || !(validates || n % t.checkpoint_every === 0 || n % t.eval_every === 0);
}

/** Reads a step back now: its stats where it logs (into the metrics), its finite flag (counted); frees it. */
async function readNow(log: RunLog, issued: IssuedStep, step: number, logNow: boolean, timer: SpanTimer) {
  const read = await issued.read(logNow);
  timer.mark('syncMs');
  issued.dispose();
  const logged = read.stats ? log.logStats(step, read.stats, issued.learningRate) : undefined;
  log.countFlag(read.flag);
  return { flag: read.flag, logged };
}

/**
 * A pipelined step's readback, once it settles: its record, its stats; whether it reached training.max_nonfinite_steps.
 */
function settled(log: RunLog, nonFiniteLimit: number): SettleStep {
  return (rec, read) => {
    if (read.stats) {
      const logged = log.logStats(rec.step, read.stats, rec.learningRate);
      rec.loss = logged.loss;
      rec.gradNorm = logged.gradNorm;
    }
    const nonFinite = log.countFlag(read.flag);
    if (read.flag !== 1) rec.nonFinite = true;
    log.addStep(rec);
    if (read.stats) log.reportProgress(rec.step, rec.loss!, rec.learningRate);
    return nonFinite && log.nonFiniteSteps >= nonFiniteLimit;
  };
}

function stopForNonFinite(p: RunParts, step: number): void {
  p.state.stoppedBy = 'non_finite';
  const limit = p.setup.config.training.max_nonfinite_steps;
  p.say(
    `step ${step}: ${p.log.nonFiniteSteps} steps had a NaN/Inf loss or gradient and ` +
      `made no update (training.max_nonfinite_steps: ${limit}); stopping without a ` +
      `checkpoint or eval of this state`,
  );
}

/**
 * The step's record, once its spans are closed; device.model_memory_budget_mb checked against what the engine holds
 * after it.
 */
function stepRecord(
  p: RunParts,
  timer: SpanTimer,
  issued: IssuedStep,
  read: { flag: number; logged?: { loss: number; gradNorm: number } } | undefined,
): StepRecord {
  const { config, choice } = p.setup;
  const { wallMs, spans } = timer.finish();
  // What the engine holds once the step has freed its tensors: the leak verdict reads its growth,
  // and device.model_memory_budget_mb bounds it (checked from the first step on).
  const held = tf.memory();
  const rank0 = p.group ? `rank 0 (${choice.adapter?.name ?? choice.backend})` : undefined;
  checkModelBudget(
    config.device.model_memory_budget_mb,
    p.state.step,
    held.numBytes + (p.replayer?.arenaBytes ?? 0),
    config.batching.batch_size,
    rank0,
  );
  // The leak verdict's count leaves out what the pipeline holds for other steps and how long: the batches the
  // lookahead prepared ahead and the steps not yet read back (fewer of both as the run nears its end).
  const ahead = liveTensors([...(p.feed?.aheadTensors() ?? []), ...p.queue.unreadTensors(), ...issued.held()]);
  const b = issued.batch;
  return {
    step: p.state.step,
    startMs: timer.startedAt - p.runStart,
    wallMs,
    spans,
    epoch: b.epoch,
    batchIndex: b.index,
    bucket: b.bucket,
    batchSize: issued.samples,
    tokens: b.shape.tokens,
    frames: b.shape.frames,
    kernels: issued.kernels,
    ...(choice.backend === 'webgpu' ? { programs: issued.programs } : {}),
    ...(issued.replayed !== undefined ? { replayed: issued.replayed } : {}),
    flops: issued.flops,
    ...(issued.deviceMs !== undefined ? { deviceMs: issued.deviceMs } : {}),
    readySlots: b.readySlots,
    learningRate: issued.learningRate,
    loss: read?.logged?.loss,
    gradNorm: read?.logged?.gradNorm,
    ...(read && read.flag !== 1 ? { nonFinite: true } : {}),
    tensors: held.numTensors - ahead.tensors,
    tensorBytes: held.numBytes - ahead.bytes,
  };
}

/** How many of `ts` are alive, counted once each, and their bytes. */
function liveTensors(ts: readonly tf.Tensor[]): { tensors: number; bytes: number } {
  const live = new Set(ts.filter((t) => !t.isDisposed));
  let bytes = 0;
  for (const t of live) bytes += t.size * 4; // float32 and int32
  return { tensors: live.size, bytes };
}

/** A program the device refused computed nothing: what follows would train on garbage. */
function throwOnGpuError(step: number): void {
  const gpuError = takeGpuError();
  if (!gpuError) return;
  throw new XttsError('WEBGPU_ERROR', `the WebGPU device rejected work by step ${step}: ${gpuError.split('\n')[0]}`, {
    exitCode: ExitCode.findings,
    suggestions: [
      'the run stops here; its checkpoints before this step are intact (--resume continues from the last one)',
      'report it with the log and `xtts diagnose-gpu-utilization --json`: it is a bug ' +
        'in xtts, tfjs-backend-webgpu or the driver',
      'to keep training meanwhile: --backend wasm, or device.step_capture: off / ' +
        'device.matmul: tfjs if the log names their programs',
    ],
  });
}

/**
 * The run's result: its figures over the measured steps (the first few, warming up, and device-timed probes left out).
 */
function runResult(p: RunParts, runDir: string, closed: ClosedRun): TrainResult {
  const { setup, log, state } = p;
  const untimed = log.records.filter((x) => x.deviceMs === undefined);
  const measured = untimed.slice(Math.min(5, Math.floor(untimed.length / 4)));
  const wallTotal = measured.reduce((a, x) => a + x.wallMs, 0) || 1;
  const median = (f: (x: StepRecord) => number) => summarize(measured.map(f)).p50;
  return {
    task: 'acoustic',
    runDir,
    backend: setup.choice,
    parameters: setup.model.parameterCount(),
    startStep: p.startStep,
    steps: state.step,
    stoppedBy: state.stoppedBy,
    trainRows: setup.data.train.length,
    validationRows: setup.data.validation.length,
    skippedRows: setup.data.skipped.length,
    lossCurve: log.lossCurve,
    validation: log.validation,
    bestValidationLoss: p.milestones.bestValidationLoss,
    nonFiniteSteps: log.nonFiniteSteps,
    checkpoints: p.milestones.checkpoints,
    evalFiles: log.evalFiles,
    timing: {
      stepMsMedian: median((x) => x.wallMs),
      samplesPerS: measured.reduce((a, x) => a + x.batchSize, 0) / (wallTotal / 1000),
      kernelsPerStep: median((x) => x.kernels),
      programsPerStep: measured.some((x) => x.programs !== undefined) ? median((x) => x.programs ?? 0) : null,
      replayedShare: measured.length ? measured.filter((x) => x.replayed).length / measured.length : 0,
      hostDispatchMsMedian: median((x) => x.spans.forwardBackwardMs + x.spans.optimizerMs),
      dataWaitShare: measured.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wallTotal,
    },
    stepCapture: closed.stepCapture,
    hostGc: closed.hostGc!,
    batchUploads: closed.batchUploads,
  };
}
