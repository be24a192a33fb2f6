// The verdicts on the GPU's side of a step (verdicts.ts judges the rest): whether the GPU idles while the host
// issues kernels (dispatch-bound), and whether a busy GPU is the healthy bottleneck or runs slow kernels (busy but
// slow: its top kernels named, a matmul's rate against the device's peak).
import { peakFor } from './peaks.js';
import { describeKernel, topKernels } from './top-kernels.js';
import type { StepBreakdown } from './breakdown.js';
import { type Finding, type Grade, pct, type Thresholds, type VerdictContext } from './verdicts.js';

/** Where the busy share comes from, with the other measurements beside it. */
function busyText(b: StepBreakdown): string {
  const parts: string[] = [];
  if (b.gpuBusySource === 'timestamp-queries' && b.deviceMs)
    parts.push(
      `timestamp queries: ${b.deviceMs.p50.toFixed(1)} ms of device time per ${b.wallMs.mean.toFixed(1)} ms step`,
    );
  if (b.utilizationPct !== null) parts.push(`NVML utilisation ${b.utilizationPct.toFixed(1)}%`);
  if (b.smActivityPct !== null) parts.push(`SM activity ${b.smActivityPct.toFixed(1)}%`);
  return parts.join('; ') || String(b.gpuBusySource);
}

/** Replaying each bucket's recorded step: what removes the host's per-kernel cost on webgpu. */
const STEP_CAPTURE_ACTION = {
  key: 'device.step_capture',
  value: 'auto',
  effect:
    "each bucket's step is recorded once and replayed: a few host calls per program " +
    "instead of the engine's bookkeeping per kernel",
};

/**
 * Whether the GPU idles while the host issues kernels. An input-bound run idles too; that comes first,
 * so dispatch is only graded once the input is not the problem.
 */
export function dispatchVerdict(
  b: StepBreakdown,
  gpuBusyShare: number,
  inputGrade: Grade,
  ctx: VerdictContext,
  th: Thresholds,
): Finding {
  const dispatchShare = b.shares.forwardBackwardMs + b.shares.optimizerMs;
  const underused = gpuBusyShare < th.dispatchBoundGpuBusy;
  const idle = underused && inputGrade === 'ok';
  return {
    id: 'dispatch-bound',
    grade: idle ? (gpuBusyShare < th.dispatchBoundGpuBusy / 2 ? 'high' : 'moderate') : 'ok',
    title: idle
      ? 'host/dispatch-bound: the GPU idles while the host issues kernels'
      : underused
        ? 'the GPU idles, but waiting for input comes first (judge dispatch again once input-bound is fixed)'
        : 'the host keeps the GPU supplied',
    evidence:
      `GPU busy ${pct(gpuBusyShare)} of the wall time ` +
      `(${busyText(b)}); ${b.kernels.mean.toFixed(0)} kernels a step ` +
      `at ${b.hostMsPerKernel === null ? '?' : `${(b.hostMsPerKernel * 1000).toFixed(0)} µs`} ` +
      `of host time each; dispatch is ${pct(dispatchShare)} of the step`,
    actions: idle
      ? [
          ...(ctx.stepCapture === 'off' && !ctx.cpuBackend ? [STEP_CAPTURE_ACTION] : []),
          {
            key: 'batching.batch_size',
            value: ctx.batchSize * 2,
            effect:
              'the same kernels carry twice the work: per-kernel host cost is amortised (check ' +
              'memory with the validator)',
            rule: 'batching/memory',
          },
          ...(ctx.buckets > 4
            ? [
                {
                  key: 'batching.buckets',
                  value: 4,
                  effect: 'fewer shapes, fewer pipeline compilations',
                  rule: 'batching/static-shapes',
                },
              ]
            : []),
        ]
      : [],
  };
}

/**
 * Whether the GPU is the bottleneck, and whether its kernels reach a fair share of the device's peak; a busy GPU
 * names its top kernels (device time, and a matmul's TFLOP/s against the peak), and a slow one the changes that
 * make its matmuls faster.
 */
export function computeVerdict(b: StepBreakdown, gpuBusyShare: number, ctx: VerdictContext, th: Thresholds): Finding {
  const compute = gpuBusyShare >= th.computeBoundGpuBusy;
  // Busy is not fast: a GPU that runs slow kernels all the time is busy too.
  const slow = compute && b.mfu !== null && b.mfu < th.lowMfu;
  const mfuText =
    b.mfu !== null
      ? `; the model's matmuls and convolutions ran at ${b.achievedTflops!.toFixed(2)} ` +
        `TFLOP/s, ${pct(b.mfu)} of the device's ${b.peakPrecision} peak (${b.peakTflops} ` +
        `TFLOP/s)`
      : b.achievedTflops !== null
        ? `; the model's matmuls and convolutions ran at ${b.achievedTflops.toFixed(2)} ` +
          `TFLOP/s (the device's peak is not known to xtts)`
        : '';
  const programs = ctx.programs ?? [];
  const top = compute ? topKernels(programs, b.peakTflops, 3) : [];
  const topText = top.length
    ? `; the top kernels by device time: ${top.map((k) => describeKernel(k, b.peakPrecision)).join('; ')}`
    : '';
  const tensorPeak = peakFor(ctx.device ?? null, 'mixed_fp16').tflops;
  // Where the device time goes (where it was timed): the tensor cores help where matmuls take most of it.
  const deviceTotal = programs.reduce((a, p) => a + p.ms, 0);
  const matmulShare =
    deviceTotal > 0 ? programs.filter((p) => /MatMul/.test(p.name)).reduce((a, p) => a + p.ms, 0) / deviceTotal : null;
  return {
    id: 'compute-bound',
    grade: slow ? 'moderate' : 'ok',
    title: slow
      ? 'busy but slow: the GPU computes all the time, with slow kernels'
      : compute
        ? 'compute-bound: the GPU is the bottleneck (the healthy state)'
        : 'not compute-bound',
    evidence:
      `GPU busy ${pct(gpuBusyShare)} (${busyText(b)})${mfuText}` +
      (slow ? `: under ${pct(th.lowMfu)} of peak, the kernels themselves are what to make faster` : '') +
      topText +
      (slow && matmulShare !== null ? `; matmuls take ${pct(matmulShare)} of the device time` : ''),
    actions: slow
      ? [
          ...(ctx.precision !== 'mixed_fp16' && tensorPeak && (matmulShare === null || matmulShare >= 0.5)
            ? [
                {
                  key: 'training.precision',
                  value: 'mixed_fp16',
                  effect:
                    `the large matmuls on the tensor cores (f16 operands, f32 sums): a ${tensorPeak} TFLOP/s ` +
                    `peak instead of ${b.peakTflops}`,
                  rule: 'training/precision',
                },
              ]
            : []),
          ...(ctx.matmul === 'tfjs'
            ? [
                {
                  key: 'device.matmul',
                  value: 'tiled',
                  effect: "xtts's tiled matmul programs where they fill the device, tfjs's elsewhere",
                },
              ]
            : []),
          ...(ctx.boundsChecks === 'on'
            ? [
                {
                  key: 'device.bounds_checks',
                  value: 'off',
                  effect:
                    "the shaders without Dawn's clamp on every index (on an H200 the tensor-core matmuls ran " +
                    '1.4–1.7× faster and a normal mixed_fp16 step took 44.6 ms instead of 62.8)',
                },
              ]
            : []),
        ]
      : [],
  };
}

/**
 * No GPU busy share (a CPU backend, or no telemetry): the host's dispatch time, for the record. On a GPU with step
 * capture off that time is still the finding: the host issues every kernel of every step, which replaying removes,
 * whatever the GPU did meanwhile.
 */
export function unmeasuredDispatchVerdict(b: StepBreakdown, ctx: VerdictContext, th: Thresholds): Finding {
  const dispatchShare = b.shares.forwardBackwardMs + b.shares.optimizerMs;
  const perKernel = b.hostMsPerKernel === null ? '?' : `${(b.hostMsPerKernel * 1000).toFixed(0)} µs`;
  const eager = !ctx.cpuBackend && ctx.stepCapture === 'off' && dispatchShare >= th.eagerDispatchShare;
  return {
    id: 'dispatch-bound',
    grade: eager ? 'moderate' : 'ok',
    title: ctx.cpuBackend
      ? 'no GPU: the CPU backend computes while it dispatches'
      : eager
        ? 'host/dispatch-bound: with step capture off the host issues every kernel of every step'
        : "the GPU's busy share is not measured (no timestamp queries, and under 5 GPU telemetry samples in the steps)",
    evidence:
      `host dispatch is ${pct(dispatchShare)} of the ` +
      `step, ${b.kernels.mean.toFixed(0)} kernels a step at ${perKernel} ` +
      `each${ctx.cpuBackend ? ', arithmetic included' : ''}` +
      (eager ? "; the GPU's busy share is not measured here (no timestamp queries or GPU telemetry)" : ''),
    actions: eager ? [STEP_CAPTURE_ACTION] : [],
  };
}
