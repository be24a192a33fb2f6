// What bounds a training step, from its recorded spans and device samples: a per-span breakdown
// (mean, std, min, max, p95, CV; breakdown.ts) and numbered, graded verdicts with the config changes
// that follow. Thresholds are the shared ones (config/thresholds.ts) and can be overridden per call.
import { formatBytes } from '../config/index.js';
import { THRESHOLDS } from '../config/index.js';
import type { DeviceSampleRecord } from '../telemetry/index.js';
import type { ReplicaStepRecord } from '../telemetry/index.js';
import type { StepRecord } from '../telemetry/index.js';
import { summarize } from '../util/index.js';
import { breakdown, type StepBreakdown } from './breakdown.js';
import type { ProgramTime } from '../backend/index.js';
import { computeVerdict, dispatchVerdict, unmeasuredDispatchVerdict } from './gpu-verdicts.js';
import { newShapeVerdict, type ShapePhase } from './shapes.js';

export { breakdown, type StepBreakdown } from './breakdown.js';

export type Thresholds = { -readonly [K in keyof typeof THRESHOLDS]: number };

export type Grade = 'ok' | 'moderate' | 'high';

export interface Verdict {
  /** 1-based, in order of importance. */
  n: number;
  id:
    | 'input-bound'
    | 'dispatch-bound'
    | 'sync-bound'
    | 'compute-bound'
    | 'memory-headroom'
    | 'oscillating'
    | 'memory-leak'
    | 'all-reduce-bound'
    | 'new-shapes';
  grade: Grade;
  title: string;
  evidence: string;
  /** Config changes that address it, with the validator rule that checks the same thing. */
  actions: { key: string; value: string | number | boolean; effect: string; rule?: string }[];
}

export interface ProfileVerdicts {
  breakdown: StepBreakdown;
  verdicts: Verdict[];
  thresholds: Thresholds;
}

export interface VerdictContext {
  batchSize: number;
  logEvery: number;
  workers: number | 'auto';
  prefetchDepth: number;
  cacheEnabled: boolean;
  buckets: number;
  cpuCores: number;
  checkpointEvery: number;
  /** The backend computes on the CPU (cpu, wasm): there is no GPU to be busy or idle. */
  cpuBackend?: boolean;
  /** The training device's name (the run's adapter), for its peak. */
  device?: string | null;
  /** training.precision of the run: which of the device's peaks its MFU is measured against. */
  precision?: 'fp32' | 'mixed_fp16';
  /** The first step the last process that trained ran (run meta `processFirstStep`; older runs: none). */
  processFirstStep?: number;
  /** Data-parallel runs: every replica's part of the measured steps, and each rank's device. */
  replicas?: { devices: string[]; steps: readonly ReplicaStepRecord[] };
  gradAccumulation?: number;
  /** device.gradient_exchange of a data-parallel run (runs recorded before it: float32). */
  gradientExchange?: 'float32' | 'bfloat16';
  /** device.step_capture of the run (webgpu replays each bucket's step when 'auto'). */
  stepCapture?: 'auto' | 'off';
  /** device.pipeline_steps of the run ('off' waits for every step before issuing the next). */
  pipelineSteps?: 'auto' | 'on' | 'off';
  /** The measured steps that met a batch shape first (shapes.ts), judged apart from the steady ones. */
  newShapes?: ShapePhase | null;
  /** The device-timed steps' GPU programs (per step, largest first): the compute verdict names the top ones. */
  programs?: readonly ProgramTime[];
  /** device.matmul of the run. */
  matmul?: 'tfjs' | 'tiled';
  /** device.bounds_checks of the run (runs recorded before the key ran with them: 'on'). */
  boundsChecks?: 'on' | 'off';
}

/**
 * Per rank of a data-parallel run: its device, the mean of each of its spans over the measured steps
 * (peerWaitMs: null in runs recorded before xtts measured it), its utterances per step, the measured steps
 * it replayed (null where capture was off or unrecorded), and the live tensors after the last measured step.
 */
export type ReplicaSummary = Omit<ReplicaStepRecord, 'step' | 'samples' | 'replayed'> & {
  device: string;
  samplesPerStep: number;
  replayedSteps: number | null;
  steps: number;
};

export function summarizeReplicas(devices: readonly string[], steps: readonly ReplicaStepRecord[]): ReplicaSummary[] {
  const ranks = [...new Set(steps.map((s) => s.rank))].sort((a, b) => a - b);
  return ranks.map((rank) => {
    const mine = steps.filter((s) => s.rank === rank);
    const avg = (k: 'samples' | 'uploadMs' | 'syncMs' | 'forwardBackwardMs' | 'allReduceMs' | 'optimizerMs') =>
      mine.reduce((a, s) => a + s[k], 0) / (mine.length || 1);
    const last = mine[mine.length - 1];
    const mean = (k: 'peerWaitMs' | 'readbackMs' | 'exchangeMs' | 'overlapMs') => {
      const xs = mine.map((s) => s[k]).filter((x): x is number => x !== null);
      return xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : null;
    };
    const captured = mine.filter((s) => s.replayed !== null);
    return {
      rank,
      device: devices[rank] ?? '?',
      samplesPerStep: avg('samples'),
      uploadMs: avg('uploadMs'),
      syncMs: avg('syncMs'),
      forwardBackwardMs: avg('forwardBackwardMs'),
      allReduceMs: avg('allReduceMs'),
      optimizerMs: avg('optimizerMs'),
      peerWaitMs: mean('peerWaitMs'),
      readbackMs: mean('readbackMs'),
      exchangeMs: mean('exchangeMs'),
      overlapMs: mean('overlapMs'),
      replayedSteps: captured.length ? captured.filter((s) => s.replayed).length : null,
      steps: mine.length,
      tensors: last?.tensors ?? 0,
      tensorBytes: last?.tensorBytes ?? 0,
    };
  });
}

/** Mean step time of each whole readback interval (steps (k-1)·n+1 … k·n, ending in the readback). */
function readbackIntervals(steps: readonly StepRecord[], logEvery: number): number[] {
  const groups = new Map<number, number[]>();
  for (const s of steps) {
    const k = Math.ceil(s.step / logEvery);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(s.wallMs);
  }
  return [...groups.values()].filter((g) => g.length === logEvery).map((g) => g.reduce((a, b) => a + b, 0) / g.length);
}

/**
 * The steps of the last process that trained (another process's tensors are no trend of this one's): from
 * `firstStep`, the first step it trained (the run database's meta, written by each process that trains), else,
 * for runs recorded before it, from where the records' clock restarts (startMs counts from a process's start; a
 * resumed process that started later in its clock than the previous one ended is not told apart this way).
 */
function lastProcess<S extends Pick<StepRecord, 'startMs' | 'step'>>(steps: readonly S[], firstStep?: number) {
  if (firstStep !== undefined) return steps.filter((s) => s.step >= firstStep);
  let from = 0;
  for (let i = 1; i < steps.length; i++) if (steps[i].startMs < steps[i - 1].startMs) from = i;
  return steps.slice(from);
}

/**
 * The fewest steps of a process (after its first fifth, and its first) a trend in its live tensors is judged over:
 * fewer say nothing (a resumed run's four steps, 129, 132, 132, 132 tensors, its first step allocating, read as +0.90
 * a step, a leak graded high, when the first was not left out and three steps were enough).
 */
const LEAK_WINDOW = 4;

/**
 * Growth of the engine's live tensors across steps (of the last process that trained): the least-squares slope over
 * the steps after the first fifth, and at least after the first (the first steps allocate optimizer state and caches
 * once). Undefined without records, or with fewer than LEAK_WINDOW steps to judge.
 */
export function tensorGrowth(
  steps: readonly StepRecord[],
  firstStep?: number,
):
  | {
      perStep: number;
      first: number;
      last: number;
      firstBytes: number;
      lastBytes: number;
      fromStep: number;
      toStep: number;
    }
  | undefined {
  const held = lastProcess(
    steps.filter((s) => s.tensors !== undefined),
    firstStep,
  );
  const steady = held.slice(Math.max(1, Math.floor(held.length / 5)));
  if (steady.length < LEAK_WINDOW) return undefined;
  const n = steady.length;
  const mx = steady.reduce((a, s) => a + s.step, 0) / n;
  const my = steady.reduce((a, s) => a + s.tensors!, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const s of steady) {
    sxy += (s.step - mx) * (s.tensors! - my);
    sxx += (s.step - mx) ** 2;
  }
  const [a, z] = [steady[0], steady[n - 1]];
  return {
    perStep: sxx > 0 ? sxy / sxx : 0,
    first: a.tensors!,
    last: z.tensors!,
    firstBytes: a.tensorBytes ?? 0,
    lastBytes: z.tensorBytes ?? 0,
    fromStep: a.step,
    toStep: z.step,
  };
}

function grade(value: number, moderate: number, high: number): Grade {
  return value >= high ? 'high' : value >= moderate ? 'moderate' : 'ok';
}

export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** A verdict before judge numbers it by importance. */
export type Finding = Omit<Verdict, 'n'>;

/**
 * The verdicts on the measured steps, most important first: each one graded, with its evidence and the
 * config changes that address it. `probes` are the device-timed steps (see breakdown).
 */
export function judge(
  steps: readonly StepRecord[],
  samples: readonly DeviceSampleRecord[],
  ctx: VerdictContext,
  overrides: Partial<Thresholds> = {},
  probes: readonly StepRecord[] = [],
): ProfileVerdicts {
  const th: Thresholds = { ...THRESHOLDS, ...overrides };
  const b = breakdown(steps, samples, probes, {
    cpuBackend: ctx.cpuBackend,
    device: ctx.device,
    precision: ctx.precision,
  });
  const input = inputVerdict(b, ctx, th);
  const out: Finding[] = [
    input,
    syncVerdict(b, ctx, th),
    ...(b.gpuBusyShare !== null
      ? [dispatchVerdict(b, b.gpuBusyShare, input.grade, ctx, th), computeVerdict(b, b.gpuBusyShare, ctx, th)]
      : [unmeasuredDispatchVerdict(b, ctx, th)]),
    ...memoryHeadroomVerdict(b, ctx, th),
    oscillationVerdict(steps, b, ctx, th),
    ...leakVerdict(steps, th, ctx.processFirstStep),
    ...replicaVerdicts(b, ctx, th),
    ...newShapeVerdict(ctx.newShapes, ctx.buckets),
  ];
  const order: Grade[] = ['high', 'moderate', 'ok'];
  const sorted = [...out].sort((a, c) => order.indexOf(a.grade) - order.indexOf(c.grade));
  return { breakdown: b, verdicts: sorted.map((v, i) => ({ ...v, n: i + 1 })), thresholds: th };
}

/** How long the trainer waited for batches; the pipeline settings that feed it faster. */
function inputVerdict(b: StepBreakdown, ctx: VerdictContext, th: Thresholds): Finding {
  const input = b.shares.dataWaitMs;
  const inputGrade = grade(input, th.inputBoundModerate, th.inputBoundHigh);
  const workers = ctx.workers === 'auto' ? Math.max(1, ctx.cpuCores - 1) : ctx.workers;
  return {
    id: 'input-bound',
    grade: inputGrade,
    title: inputGrade === 'ok' ? 'not input-bound' : `${inputGrade === 'high' ? 'highly' : 'moderately'} input-bound`,
    evidence:
      `the trainer waited for data ${pct(input)} of the wall time ` +
      `(under ${pct(th.inputBoundModerate)} is fine, ${pct(th.inputBoundHigh)} or more ` +
      `is highly input-bound)`,
    actions:
      inputGrade === 'ok'
        ? []
        : [
            ...(!ctx.cacheEnabled
              ? [
                  {
                    key: 'pipeline.cache.enabled',
                    value: true,
                    effect: 'features are read instead of recomputed every epoch',
                    rule: 'pipeline/cache',
                  },
                ]
              : []),
            ...(workers < Math.max(1, ctx.cpuCores - 1)
              ? [
                  {
                    key: 'pipeline.workers',
                    value: Math.max(1, ctx.cpuCores - 1),
                    effect: 'more producer threads fill the ring',
                    rule: 'pipeline/workers-vs-cores',
                  },
                ]
              : []),
            ...(ctx.prefetchDepth < th.maxUsefulPrefetchDepth
              ? [
                  {
                    key: 'pipeline.prefetch_depth',
                    value: Math.min(th.maxUsefulPrefetchDepth, ctx.prefetchDepth * 2),
                    effect: 'deeper buffering absorbs slow batches',
                    rule: 'pipeline/prefetch-depth',
                  },
                ]
              : []),
          ],
  };
}

/** How long the host waited in readbacks for the device (fine when the GPU is busy anyway). */
function syncVerdict(b: StepBreakdown, ctx: VerdictContext, th: Thresholds): Finding {
  const sync = b.shares.syncMs;
  // Waiting in a readback for a GPU that is busy anyway is the compute-bound state, not a problem.
  const busyGpu = b.gpuBusyShare !== null && b.gpuBusyShare >= th.computeBoundGpuBusy;
  const syncGrade = busyGpu ? 'ok' : grade(sync, th.syncBoundShare, th.syncBoundShare * 2);
  return {
    id: 'sync-bound',
    grade: syncGrade,
    title:
      syncGrade !== 'ok'
        ? 'sync-bound: the host waits for the device'
        : busyGpu && sync >= th.syncBoundShare
          ? 'the host waits in readbacks for a busy GPU (compute-bound: fine)'
          : 'device syncs are rare',
    evidence:
      `${pct(sync)} of the wall time is spent in readbacks (whether each update was ` +
      `made; the losses every ${ctx.logEvery} ` +
      `step${ctx.logEvery === 1 ? '' : 's'})${busyGpu ? `; GPU busy ${pct(b.gpuBusyShare!)}` : ''}`,
    actions:
      syncGrade === 'ok'
        ? []
        : [
            ...(ctx.pipelineSteps === 'off' && !ctx.cpuBackend
              ? [
                  {
                    key: 'device.pipeline_steps',
                    value: 'auto',
                    effect: 'the next step is issued before the host waits for this one, so the device has it queued',
                  },
                ]
              : []),
            {
              key: 'training.log_every',
              value: Math.max(25, ctx.logEvery * 5),
              effect: 'fewer readbacks let the host queue work ahead of the device',
              rule: 'training/log-sync',
            },
          ],
  };
}

/** Peak device memory against the headroom threshold (none where the run sampled no memory). */
function memoryHeadroomVerdict(b: StepBreakdown, ctx: VerdictContext, th: Thresholds): Finding[] {
  if (b.peakMemoryShare === null) return [];
  const tight = b.peakMemoryShare > th.memoryHeadroomShare;
  return [
    {
      id: 'memory-headroom',
      grade: tight ? 'high' : 'ok',
      title: tight ? 'little memory headroom' : 'memory headroom is fine',
      evidence: `peak device memory ${pct(b.peakMemoryShare)} of the device`,
      actions: tight
        ? [
            {
              key: 'batching.batch_size',
              value: Math.max(1, Math.floor(ctx.batchSize * 0.75)),
              effect: 'room for allocator fragmentation and longer buckets',
              rule: 'batching/memory',
            },
          ]
        : [],
    },
  ];
}

/** Whether the step time oscillates: checkpoint stalls, or too many distinct shapes. */
function oscillationVerdict(
  steps: readonly StepRecord[],
  b: StepBreakdown,
  ctx: VerdictContext,
  th: Thresholds,
): Finding {
  // With asynchronous dispatch a step that reads back waits for the steps queued before it, so single
  // steps alternate short and long by design; judge the time per readback interval when there are
  // enough whole intervals, else single steps.
  const intervals = readbackIntervals(steps, ctx.logEvery);
  const perInterval = ctx.logEvery > 1 && intervals.length >= 4;
  // On a GPU, single steps alternate by design: without 4 whole intervals there is nothing to judge (a short
  // profile would be graded by another measure than a long one).
  if (ctx.logEvery > 1 && !perInterval && !ctx.cpuBackend)
    return {
      id: 'oscillating',
      grade: 'ok',
      title: 'too few readback intervals to judge whether step time oscillates',
      evidence:
        `${intervals.length} whole readback interval${intervals.length === 1 ? '' : 's'} of ${ctx.logEvery} ` +
        `steps among the judged steps (4 are needed; single steps alternate by design with asynchronous ` +
        `dispatch: CV ${b.wallMs.cv.toFixed(2)}, p50 ${b.wallMs.p50.toFixed(1)} ms, p95 ` +
        `${b.wallMs.p95.toFixed(1)} ms); profile at least ${4 * ctx.logEvery} steady steps (--steps) to judge it`,
      actions: [],
    };
  const cv = perInterval ? summarize(intervals).cv : b.wallMs.cv;
  const osc = cv > th.oscillatingStepCv;
  return {
    id: 'oscillating',
    grade: osc ? 'moderate' : 'ok',
    title: osc ? 'step time oscillates' : 'step time is steady',
    evidence: perInterval
      ? `mean step time per readback interval (${intervals.length} intervals ` +
        `of ${ctx.logEvery} steps) has CV ${cv.toFixed(2)}; single steps: ` +
        `CV ${b.wallMs.cv.toFixed(2)}, p50 ${b.wallMs.p50.toFixed(1)} ms, ` +
        `p95 ${b.wallMs.p95.toFixed(1)} ms, max ${b.wallMs.max.toFixed(1)} ms`
      : `step time CV ${b.wallMs.cv.toFixed(2)} (p50 ${b.wallMs.p50.toFixed(1)} ms, ` +
        `p95 ${b.wallMs.p95.toFixed(1)} ms, max ${b.wallMs.max.toFixed(1)} ms)`,
    actions: osc
      ? [
          ...(b.shares.checkpointMs > 0.05
            ? [
                {
                  key: 'training.checkpoint_every',
                  value: ctx.checkpointEvery * 4,
                  effect: 'checkpoint writes stall fewer steps',
                  rule: 'training/intervals',
                },
              ]
            : []),
          ...(ctx.buckets === 0 || ctx.buckets > 8
            ? [
                {
                  key: 'batching.buckets',
                  value: 4,
                  effect: 'fewer distinct shapes: steady per-shape cost after compilation',
                  rule: 'batching/static-shapes',
                },
              ]
            : []),
        ]
      : [],
  };
}

/** Data-parallel runs: how much the all-reduce costs rank 0, and whether a replica leaks tensors. */
function replicaVerdicts(b: StepBreakdown, ctx: VerdictContext, th: Thresholds): Finding[] {
  const replicas = ctx.replicas;
  if (!replicas || !replicas.steps.length) return [];
  const out: Finding[] = [];
  const ranks = summarizeReplicas(replicas.devices, replicas.steps);
  const share = b.shares.allReduceMs;
  const g = grade(share, th.allReduceModerate, th.allReduceHigh);
  const compute = ranks.map((r) => r.forwardBackwardMs);
  const slowest = ranks[compute.indexOf(Math.max(...compute))];
  const spread = Math.max(...compute) / Math.max(1e-9, Math.min(...compute));
  const accumulation = ctx.gradAccumulation ?? 1;
  out.push({
    id: 'all-reduce-bound',
    grade: g,
    title:
      g === 'ok'
        ? `the all-reduce of ${ranks.length} replicas costs little`
        : `${g === 'high' ? 'highly' : 'moderately'} all-reduce-bound: summing the gradients takes the replicas long`,
    evidence:
      `rank 0 spent ${pct(share)} of the wall time in the all-reduce (its gradient read back, exchanged through ` +
      `host memory, the others' uploaded and summed; under ${pct(th.allReduceModerate)} is fine)` +
      (ranks[0].peerWaitMs === null
        ? ''
        : ` and ${pct(ranks[0].peerWaitMs / Math.max(1e-9, b.wallMs.mean))} waiting for the other replicas`) +
      `; forward/backward per ` +
      `replica ${ranks.map((r) => `${r.rank}: ${r.forwardBackwardMs.toFixed(1)} ms`).join(', ')} ` +
      `(slowest ${slowest.rank}, ${slowest.device}: ${spread.toFixed(2)}× the fastest)`,
    actions:
      g === 'ok'
        ? []
        : [
            {
              key: 'batching.batch_size',
              value: ctx.batchSize * 2,
              effect: 'twice the work per replica between two sums',
            },
            {
              key: 'training.grad_accumulation_steps',
              value: accumulation * 2,
              effect: 'gradients are summed once per optimizer step: half as often',
            },
            ...(ctx.gradientExchange === 'bfloat16'
              ? []
              : [
                  {
                    key: 'device.gradient_exchange',
                    value: 'bfloat16',
                    effect:
                      'half the bytes read back, exchanged and uploaded; the replicas stay identical, and the ' +
                      "sum differs from one device's by bfloat16 rounding",
                  },
                ]),
          ],
  });
  for (const r of ranks.filter((x) => x.rank > 0)) {
    const rankSteps = replicas.steps.filter((s) => s.rank === r.rank) as unknown as StepRecord[];
    const growth = tensorGrowth(rankSteps, ctx.processFirstStep);
    if (growth && growth.perStep >= th.leakTensorsPerStep) {
      out.push({
        id: 'memory-leak',
        grade: 'high',
        title: `memory leak on replica ${r.rank} (${r.device}): it holds more tensors after every step`,
        evidence:
          `live tensors ${growth.first.toLocaleString('en-US')} ` +
          `→ ${growth.last.toLocaleString('en-US')} over ` +
          `steps ${growth.fromStep}–${growth.toStep} (+${growth.perStep.toFixed(2)} a ` +
          `step, from ${th.leakTensorsPerStep}); held ` +
          `bytes ${formatBytes(growth.firstBytes)} → ${formatBytes(growth.lastBytes)}`,
        actions: [],
      });
    }
  }
  return out;
}

/** Whether the engine holds more tensors after every step (none where the run recorded no tensor counts). */
function leakVerdict(steps: readonly StepRecord[], th: Thresholds, firstStep?: number): Finding[] {
  const leak = tensorGrowth(steps, firstStep);
  if (!leak) return [];
  const leaking = leak.perStep >= th.leakTensorsPerStep;
  return [
    {
      id: 'memory-leak',
      grade: leaking ? 'high' : 'ok',
      title: leaking
        ? 'memory leak: the engine holds more tensors after every step'
        : 'no tensor growth from step to step',
      evidence:
        `live tensors ${leak.first.toLocaleString('en-US')} ` +
        `→ ${leak.last.toLocaleString('en-US')} over ` +
        `steps ${leak.fromStep}–${leak.toStep} ` +
        `(${leak.perStep >= 0 ? '+' : ''}${leak.perStep.toFixed(2)} a ` +
        `step, ${leaking ? 'from' : 'under'} ${th.leakTensorsPerStep}); held ` +
        `bytes ${formatBytes(leak.firstBytes)} ` +
        (`→ ${formatBytes(leak.lastBytes)}` +
          (leaking
            ? ': at this rate the device runs out of memory in a long run; look for tensors ' +
              'made outside tf.tidy and never disposed (custom code, callbacks, plugins)'
            : '')),
      actions: [],
    },
  ];
}
