// The loop's parts, started once the run is set up and closed when it ends: the run log, the batch
// feed, the step issuer (one device, or replicas), the queue of pipelined steps, the milestones
// (validation, checkpoints, eval), the device probes, and the telemetry beside them.
import { availableParallelism } from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { KernelCounter, noDeviceTime } from '../../backend/index.js';
import type { CaptureState } from '../../backend/index.js';
import { stagedUploadStats } from '../../backend/index.js';
import { formatBytes } from '../../config/index.js';
import { batchSizeWithin, planBuckets } from '../../data/index.js';
import { DataLoader, producerThreads, voiceWarpFor } from '../../data/index.js';
import { slotBytes } from '../../data/index.js';
import { ExitCode, XttsError } from '../../errors.js';
import { AlignmentSearcher } from '../../model/index.js';
import { GpuSampler } from '../../telemetry/index.js';
import { toDeviceSampleRecord } from '../../telemetry/index.js';
import { HostGcRecorder, type HostGcSummary } from '../../telemetry/index.js';
import { type StepCaptureSummary, StepReplayer } from '../optim/step-replay.js';
import { ReplicaGroup } from '../parallel/group.js';
import { BatchFeed, ringDepthWithin } from './batch-feed.js';
import { DeviceProbes } from './device-probes.js';
import { toArrays, toArraysDisposing } from './host-arrays.js';
import { LocalSteps, type StepIssuer } from './local-steps.js';
import { Milestones } from './milestones.js';
import { ReplicaSteps } from './replica-steps.js';
import { RunLog } from './run-log.js';
import type { RunSetup } from './run-setup.js';
import { PIPELINE_DEPTH, type SettleStep, StepQueue } from './step-queue.js';
import type { RunState, TrainOptions, TrainResult } from './types.js';
import { readsPitch } from '../voices.js';
import { loaderItems } from '../../data/index.js';

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

export interface RunParts {
  setup: RunSetup;
  state: RunState;
  startStep: number;
  /** Steps the run makes (device-timed probes that cannot run are taken off). */
  maxSteps: number;
  /** performance.now() at the first step's start: step times count from here. */
  runStart: number;
  log: RunLog;
  feed: BatchFeed;
  issuer: StepIssuer;
  queue: StepQueue;
  milestones: Milestones;
  probes: DeviceProbes;
  kernels: KernelCounter;
  gc: HostGcRecorder;
  replayer?: StepReplayer;
  group?: ReplicaGroup;
  /** device.pipeline_steps: a step after which nothing reads the weights is issued before the one before it is read. */
  pipelined: boolean;
  /** Profiling: no checkpoints, validation or eval audio; only the steps. */
  stepsOnly: boolean;
  say: (m: string) => void;
}

/** What closing the parts leaves for the result. */
export interface ClosedRun {
  stepCapture: StepCaptureSummary | null;
  /** Null only where the run failed before its first step. */
  hostGc: HostGcSummary | null;
  batchUploads: TrainResult['batchUploads'];
}

/** Starts the parts; what was started is closed again where a later part fails to start. */
export async function startRun(
  o: TrainOptions,
  setup: RunSetup,
  runDir: string,
  runId: string,
  onSettled: (log: RunLog) => SettleStep,
): Promise<RunParts> {
  const say = o.onMessage ?? (() => undefined);
  const { config, choice, replicas } = setup;
  const t = config.training;
  const untimeable =
    noDeviceTime(choice.backend) ??
    (replicas && replicas.devices.length > 1
      ? 'device time is measured on one device: run without device.gpus'
      : undefined);
  const { probes, maxSteps } = DeviceProbes.plan(o.deviceTimedSteps ?? 0, o.maxSteps ?? t.max_steps, untimeable);
  const log = RunLog.open(runDir, {
    tensorboard: !o.stepsOnly,
    maxSteps,
    logEvery: t.log_every,
    onProgress: o.onProgress,
  });
  describeRun(log, o, setup, runId);
  const state: RunState = { step: setup.resumed.step, position: setup.resumed.position, stoppedBy: 'max_steps' };
  const parts: Partial<RunParts> = {
    setup,
    state,
    startStep: state.step,
    maxSteps,
    log,
    probes,
    stepsOnly: o.stepsOnly === true,
    say,
  };
  try {
    const { source, bucketOptions, common } = openLoader(setup, state.position, say);
    // Kernels per step, and the model FLOPs of their matmuls and convolutions (the profiler's MFU).
    parts.kernels = new KernelCounter({ flops: true }).install(tf as never);
    parts.runStart = performance.now();
    parts.gc = await startTelemetry(log, choice.backend, parts.runStart);
    // Which steps are this process's (a resumed run's database holds every process's): the profiler's trends.
    log.db.setMeta('processFirstStep', state.step + 1);
    // Capture and replay of each bucket shape's step (webgpu); replicas capture their own (parallel/replica.ts).
    const replayer = replicas && replicas.devices.length > 1 ? undefined : startReplayer(setup, say);
    parts.replayer = replayer;
    const milestones = new Milestones({
      runId,
      runDir,
      state,
      ...setup,
      log,
      say,
      bucketOptions,
      common,
      stepsOnly: o.stepsOnly === true,
    });
    parts.milestones = milestones;
    parts.group = replicas && replicas.devices.length > 1 ? await startReplicas(setup, log, say) : undefined;
    milestones.group = parts.group;
    if (config.device.data_device !== null && !o.stepsOnly) {
      const device = await milestones.startSide(config.device.data_device);
      say(
        `data device: ${device} runs the validation passes and eval synthesis from ` +
          `weight snapshots while training goes on`,
      );
      log.db.setMeta('dataDevice', device);
    }
    const webgpu = choice.backend === 'webgpu';
    const pipelined =
      !parts.group && (config.device.pipeline_steps === 'on' || (config.device.pipeline_steps === 'auto' && webgpu));
    // training.alignment_lookahead: a batch uploaded and its alignment search under way, waiting for
    // its step. Not with replicas (each aligns its own rows).
    const lookahead = !parts.group && (t.alignment_lookahead === 'on' || (t.alignment_lookahead === 'auto' && webgpu));
    parts.feed = startFeed(
      setup,
      source,
      replayer,
      lookahead ? (pipelined ? LOOKAHEAD_BATCHES.pipelined : LOOKAHEAD_BATCHES.plain) : 0,
      say,
    );
    if (pipelined)
      say(
        'pipelined steps: each step is issued before the one before it is waited for, ' +
          'except where the weights are read in between (device.pipeline_steps)',
      );
    const { model, optimizer } = setup;
    const kernels = parts.kernels;
    parts.issuer = parts.group
      ? new ReplicaSteps({ feed: parts.feed, group: parts.group, model, config, kernels })
      : new LocalSteps({ feed: parts.feed, model, optimizer, config, replayer, kernels, probes, maxSteps, lookahead });
    parts.queue = new StepQueue(onSettled(log));
    parts.pipelined = pipelined;
    return parts as RunParts;
  } catch (e) {
    await closeRun(parts);
    throw e;
  }
}

/** What the run database says of the run before its first step. */
function describeRun(log: RunLog, o: TrainOptions, setup: RunSetup, runId: string): void {
  const { db } = log;
  db.setMeta('runId', runId);
  db.setMeta('config', setup.config);
  log.recordConfigFile(o.loaded.file);
  db.setMeta('backend', setup.choice.backend);
  db.setMeta('device', setup.choice.adapter ? setup.choice.adapter.name : null);
  db.setMeta('parameters', setup.model.parameterCount());
  // What makes the eval WAVs: vocoder.checkpoint's neural vocoder, or Griffin-Lim.
  db.setMeta('evalVocoder', setup.config.vocoder?.checkpoint ?? 'griffin-lim');
  log.describeConfig(setup.resumed.step, setup.config, o.loaded.file);
}

/** The batch size the run trains with (batchSizeWithin), said where it is not the config's. */
export function batchSizeFor(setup: Pick<RunSetup, 'config' | 'data'>, say: (m: string) => void): number {
  const { size, note } = batchSizeWithin(setup.config.batching.batch_size, setup.data.train.length);
  if (note) say(note);
  return size;
}

/**
 * What the training and the validation loaders share: the cache, the statistics, the seed, the reference window
 * (joined as in training and synthesis: validation's loss then measures what a joined window gives). Voice warping
 * is the training loader's alone.
 */
export function loaderCommon(config: RunSetup['config'], data: Pick<RunSetup['data'], 'cachePath' | 'stats'>) {
  return {
    cachePath: data.cachePath,
    mean: data.stats.mean,
    std: data.stats.std,
    seed: config.training.seed,
    refFrames: config.batching.reference_frames,
    nMels: config.audio.n_mels,
    // Without the cache, producers recompute every clip's features from its audio for every batch.
    recomputeAudio: config.pipeline.cache.enabled ? undefined : config.audio,
    referenceJoin: config.batching.reference_join,
    referencePitch: readsPitch(config) ? config.audio : undefined,
    framePitch: config.model.pitch_contour,
    referenceRate: config.model.reference_rate ? config.audio : undefined,
  };
}

/** The training set's buckets and the loader over them, from `position` on. */
function openLoader(setup: RunSetup, position: RunState['position'], say: (m: string) => void) {
  const { config, data } = setup;
  const r = config.model.reduction_factor;
  const batchSize = batchSizeFor(setup, say);
  const bucketOptions = {
    buckets: config.batching.buckets,
    batchSize,
    frameBudget: config.batching.frame_budget,
    frameMultiple: r,
  };
  const plan = planBuckets(
    data.train.map((i) => ({ tokens: i.tokens.length, frames: i.frames })),
    bucketOptions,
  );
  const common = loaderCommon(config, data);
  const refFrames = common.refFrames;
  const depth = ringDepthWithin(config, slotBytes(DataLoader.layoutFor(plan, refFrames, config.audio.n_mels)), say);
  const voiceWarp = voiceWarpFor(config);
  if (voiceWarp)
    say(
      `voice warp: ${Math.round(voiceWarp.share * 100)}% of the training utterances ` +
        (voiceWarp.reference ? 'and their references are ' : 'are (their references as recorded, their pitch moved) ') +
        `read with frequencies scaled by α in ${(1 / (1 + voiceWarp.max)).toFixed(2)}–` +
        `${(1 + voiceWarp.max).toFixed(2)} (batching.voice_warp); validation as recorded`,
    );
  const producers = producerThreads(config, availableParallelism());
  const source = new DataLoader({
    ...common,
    items: loaderItems(data.train),
    plan,
    shuffle: config.batching.shuffle,
    voiceWarp,
    depth,
    producers,
    start: position,
  });
  return { source, bucketOptions, common };
}

/**
 * Device samples (utilisation, memory, clocks) for the progress line and the profiler, on GPUs; garbage collection on
 * this thread.
 */
async function startTelemetry(log: RunLog, backend: string, runStart: number): Promise<HostGcRecorder> {
  const { db } = log;
  // Step and sample times count from runStart; this ties them to the wall clock (other tools' logs).
  db.setMeta('startedAtEpochMs', Date.now());
  // Advice on producer threads must follow the cores of the host that ran, not of one that reads the run later.
  db.setMeta('cpuCores', availableParallelism());
  const sampler =
    backend === 'webgpu' || backend === 'tensorflow'
      ? await GpuSampler.start({ rateHz: 10, originMs: runStart })
      : undefined;
  sampler?.onSample((sample) => db.addDeviceSample(toDeviceSampleRecord(sample)));
  log.sampler = sampler;
  // While this thread collects garbage, nothing reaches the device: the run says how long that was.
  const gc = new HostGcRecorder().start();
  db.setMeta(
    'gpuTelemetry',
    sampler
      ? sampler.status
      : { available: false, reason: `the ${backend} backend computes on the CPU: no GPU to sample`, notes: [] },
  );
  return gc;
}

/** Step capture (device.step_capture), saying what it does with each shape. */
function startReplayer(setup: RunSetup, say: (m: string) => void): StepReplayer {
  const { config, model, optimizer, choice } = setup;
  const t = config.training;
  const replayer = new StepReplayer(
    model,
    optimizer,
    t.loss,
    config.device.step_capture,
    Math.max(1, t.grad_accumulation_steps),
  );
  if (replayer.off === null)
    say("step capture: each bucket shape's step is recorded twice, then replayed (device.step_capture)");
  else if (choice.backend === 'webgpu' && config.device.step_capture === 'auto')
    say(`step capture: off — ${replayer.off}`);
  tellCaptures(replayer, '', say);
  return replayer;
}

/** Says when a replayer's shapes are captured, refused or recorded again. */
function tellCaptures(replayer: StepReplayer, who: string, say: (m: string) => void): void {
  const tell = (what: string, eagerly: string) => (shape: string, s: CaptureState) => {
    if (s.phase === 'replay') {
      const released = formatBytes(s.pooledBytesReleased ?? 0);
      say(
        `step capture: ${who}${what} ${shape} replayed from here on (${s.capture!.programs} ` +
          `programs, ${formatBytes(s.capture!.bytes)} of buffers; ${released} of the eager ` +
          `runs' pooled buffers released)${s.reason ? ` — ${s.reason}` : ''}`,
      );
    } else if (s.phase === 'refused') say(`step capture: ${who}${what} ${shape} ${eagerly} — ${s.reason}`);
  };
  replayer.onChange = tell('bucket', 'steps eagerly');
  if (replayer.alignment) replayer.alignment.onChange = tell('the alignment forward of batches', 'runs eagerly');
  if (replayer.updates) replayer.updates.onChange = tell('the update', 'runs eagerly');
}

/** Data-parallel replicas (device.gpus), each with rank 0's weights and optimizer state. */
async function startReplicas(setup: RunSetup, log: RunLog, say: (m: string) => void): Promise<ReplicaGroup> {
  const { config, choice, sizes, model, optimizer } = setup;
  const plan = setup.replicas!;
  const world = plan.devices.length;
  const batchSize = Math.min(config.batching.batch_size, setup.data.train.length);
  if (batchSize < world) {
    throw new XttsError(
      'GPUS_EXCEED_BATCH',
      `${world} replicas (device.gpus) but batches of ${batchSize}: every replica ` +
        `needs at least one utterance of each batch`,
      {
        exitCode: ExitCode.usage,
        suggestions: [
          `raise batching.batch_size to at least ${world} (it is the global batch: each replica takes its share)`,
          'or train on fewer devices',
        ],
      },
    );
  }
  const share = `${Math.floor(batchSize / world)}${batchSize % world ? `–${Math.ceil(batchSize / world)}` : ''}`;
  say(
    `data-parallel: ${world} replicas, ${plan.reason}; each trains on ${share} of ` +
      `every batch of ${batchSize}, gradients summed every optimizer step`,
  );
  const rank0Device = choice.adapter ? `${choice.backend} ${choice.adapter.name}` : choice.backend;
  const state = async () => ({
    weights: await toArrays(model.getWeights()),
    optimizer: await toArraysDisposing(optimizer.getState()),
  });
  const group = await ReplicaGroup.start({ plan, config, sizes, model, optimizer, rank0Device, state });
  say(`replicas: ${group.devices.map((d, r) => `${r} ${d}`).join(', ')}`);
  const off = group.replica.replayer.off;
  if (off === null)
    say(
      "step capture: each replica's step, alignment forward and update are recorded twice per shape, then " +
        "replayed (device.step_capture); rank 0's are told here",
    );
  else if (choice.backend === 'webgpu' && config.device.step_capture === 'auto') say(`step capture: off — ${off}`);
  tellCaptures(group.replica.replayer, 'rank 0 ', say);
  log.db.setMeta('replicas', group.devices);
  return group;
}

/** The batch feed, with the alignment lookahead's search threads where batches are prepared ahead. */
function startFeed(
  setup: RunSetup,
  source: DataLoader,
  replayer: StepReplayer | undefined,
  ahead: number,
  say: (m: string) => void,
): BatchFeed {
  const { config, model } = setup;
  let searcher: AlignmentSearcher | undefined;
  if (ahead > 0) {
    const threads = AlignmentSearcher.threadsFor(availableParallelism());
    searcher = new AlignmentSearcher(threads);
    const before =
      ahead === 1
        ? 'the step before it computes'
        : `the ${ahead} steps before it compute (its weights are ${ahead} updates old)`;
    say(
      `alignment lookahead: each batch's alignment is searched ` +
        `on ${threads === 1 ? 'a worker thread' : `${threads} worker threads`} ` +
        `while ${before} (training.alignment_lookahead)`,
    );
  }
  return new BatchFeed({
    source,
    model,
    reductionFactor: config.model.reduction_factor,
    prior: config.training.alignment_prior,
    replayer: replayer?.alignment ?? undefined,
    ahead,
    searcher,
  });
}

/**
 * Closes what was started (in any state: a run that failed to start closes the parts it has); what the result reports
 * of them.
 */
export async function closeRun(p: Partial<RunParts>): Promise<ClosedRun> {
  const db = p.log?.db;
  await p.feed?.close();
  p.queue?.drop();
  let stepCapture: StepCaptureSummary | null = null;
  if (p.replayer) {
    stepCapture = await p.replayer.summary();
    db?.setMeta('stepCapture', stepCapture);
    p.replayer.dispose();
  } else if (p.group) {
    // Rank 0's, as one device's; every replica's beside it.
    const all = await p.group.captureSummaries();
    stepCapture = all.find((x) => x.rank === 0) ?? null;
    db?.setMeta('stepCapture', stepCapture);
    db?.setMeta('replicaStepCapture', all);
  }
  await p.milestones?.close();
  await p.group?.close();
  p.kernels?.uninstall();
  await p.log?.sampler?.stop();
  const hostGc = p.gc?.stop() ?? null;
  if (hostGc) db?.setMeta('hostGc', hostGc);
  let batchUploads: ClosedRun['batchUploads'] = null;
  if (p.setup?.choice.backend === 'webgpu' && !p.group) {
    const { staged, missed } = stagedUploadStats(tf.backend());
    batchUploads = { staged, missed };
    db?.setMeta('batchUploads', batchUploads);
  }
  if (p.state && p.log)
    db?.setMeta('result', { steps: p.state.step, stoppedBy: p.state.stoppedBy, nonFiniteSteps: p.log.nonFiniteSteps });
  const deviceTiming = p.probes?.summary();
  if (deviceTiming) db?.setMeta('deviceTiming', deviceTiming);
  p.log?.close(p.state ? { step: p.state.step, stoppedBy: p.state.stoppedBy } : undefined);
  return { stepCapture, hostGc, batchUploads };
}
