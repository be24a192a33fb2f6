// Statistics of a run's measured steps: each span's mean, std, min, max, p95 and CV, its share of the
// wall time, host time per kernel, device time, how busy the GPU was, and the model FLOPs against the
// device's peak (MFU). The verdicts (verdicts.ts) are judged on these figures.
import type { DeviceSampleRecord } from '../telemetry/index.js';
import { SPAN_NAMES, type StepRecord, type StepSpans } from '../telemetry/index.js';
import { summarize, type Summary } from '../util/index.js';
import { peakFor } from './peaks.js';

export interface StepBreakdown {
  steps: number;
  wallMs: Summary;
  spans: Record<keyof StepSpans, Summary>;
  /** Share of the summed wall time per span. */
  shares: Record<keyof StepSpans, number>;
  kernels: Summary;
  /** Host milliseconds per kernel: dispatch time (forward/backward + optimizer) over kernels. */
  hostMsPerKernel: number | null;
  /**
   * Device time per step when the backend measured it: WebGPU timestamp queries around every program
   * of the device-timed probe steps (libtensorflow's kernel times on the tensorflow backend; the CPU
   * backends have none). It overlaps the host's dispatch and sync spans rather than adding to them.
   */
  deviceMs: Summary | null;
  /** Steps the device time comes from (probes run after the measured steps). */
  deviceTimedSteps: number;
  /**
   * Share of wall time the GPU was busy: median device time over mean step time if measured, else mean utilisation
   * samples.
   */
  gpuBusyShare: number | null;
  gpuBusySource: 'timestamp-queries' | 'nvml-utilization' | null;
  /** Mean "any kernel running" utilisation of the samples taken during the measured steps. */
  utilizationPct: number | null;
  /** Mean GPM SM activity (Hopper and newer, NVML): the share of SMs busy, a stricter "busy". */
  smActivityPct: number | null;
  peakMemoryShare: number | null;
  samplesPerS: number;
  /**
   * Model FLOPs per step (the matmuls and convolutions, forward and backward), median; null for runs that did not count
   * them.
   */
  flopsPerStep: number | null;
  /** Model FLOPs over the steps' wall time, in TFLOP/s. */
  achievedTflops: number | null;
  /** The device's dense peak for the run's precision (profile/peaks.ts), when known. */
  peakTflops: number | null;
  /** Which peak: FP32 (fp32 runs) or FP16 tensor with FP32 accumulation (mixed_fp16). */
  peakPrecision: 'FP32' | 'FP16 tensor';
  /** Model FLOPs utilisation: achievedTflops / peakTflops. */
  mfu: number | null;
}

/**
 * Telemetry samples (10 a second) a busy share needs: a window of a few steps of a fast model holds one or two, and
 * two samples of a bursty load read anything from 0 to 100%.
 */
const MIN_UTILIZATION_SAMPLES = 5;

const mean = (xs: readonly number[]): number | null => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/**
 * Statistics of the measured steps. `probes` are device-timed steps (StepRecord.deviceMs): their
 * own wall time is perturbed by the timing, so only their device time is used. Without probes, a
 * recorded run whose every step carries deviceMs is judged on those.
 */
export function breakdown(
  steps: readonly StepRecord[],
  samples: readonly DeviceSampleRecord[],
  probes: readonly StepRecord[] = [],
  options: { cpuBackend?: boolean; device?: string | null; precision?: 'fp32' | 'mixed_fp16' } = {},
): StepBreakdown {
  const wall = steps.map((s) => s.wallMs);
  const total = wall.reduce((a, b) => a + b, 0) || 1;
  const spans = {} as Record<keyof StepSpans, Summary>;
  const shares = {} as Record<keyof StepSpans, number>;
  for (const name of SPAN_NAMES) {
    const values = steps.map((s) => s.spans[name]);
    spans[name] = summarize(values);
    shares[name] = values.reduce((a, b) => a + b, 0) / total;
  }
  const kernels = summarize(steps.map((s) => s.kernels));
  const dispatch = steps.reduce((a, s) => a + s.spans.forwardBackwardMs + s.spans.optimizerMs, 0);
  const kernelTotal = steps.reduce((a, s) => a + s.kernels, 0);
  const wallMs = summarize(wall);
  const timed = probes.filter((s) => s.deviceMs !== undefined);
  const everyStepTimed = timed.length === 0 && steps.length > 0 && steps.every((s) => s.deviceMs !== undefined);
  const deviceSource = timed.length ? timed : everyStepTimed ? steps : [];
  const deviceMs = deviceSource.length ? summarize(deviceSource.map((s) => s.deviceMs!)) : null;
  const util = samples.map((s) => s.utilizationPct).filter((u): u is number => u !== null);
  const sm = samples.map((s) => s.smActivityPct).filter((u): u is number => u !== null);
  const utilizationPct = mean(util);
  let gpuBusyShare: number | null = null;
  let gpuBusySource: StepBreakdown['gpuBusySource'] = null;
  if (options.cpuBackend) {
    // A CPU backend has no GPU to be busy or idle, whatever a recorded run carries.
  } else if (deviceMs) {
    // Probes: their median device time against the measured steps' mean wall time (the mean, since
    // readback steps also wait for the work queued by the steps before them). Every step timed (a
    // recorded run): the sums.
    gpuBusyShare = Math.min(1, everyStepTimed ? deviceMs.total / total : deviceMs.p50 / (wallMs.mean || 1));
    gpuBusySource = 'timestamp-queries';
  } else if (utilizationPct !== null && util.length >= MIN_UTILIZATION_SAMPLES) {
    gpuBusyShare = utilizationPct / 100;
    gpuBusySource = 'nvml-utilization';
  }
  const mem = samples.filter((s) => s.memoryUsedBytes !== null && s.memoryTotalBytes);
  const peakMemoryShare = mem.length ? Math.max(...mem.map((s) => s.memoryUsedBytes! / s.memoryTotalBytes!)) : null;
  const utterances = steps.reduce((a, s) => a + s.batchSize, 0);
  const counted = steps.filter((s) => s.flops !== undefined && s.flops > 0);
  const flopsPerStep = counted.length ? summarize(counted.map((s) => s.flops!)).p50 : null;
  const achievedTflops = counted.length
    ? counted.reduce((a, s) => a + s.flops!, 0) / counted.reduce((a, s) => a + s.wallMs, 0) / 1e9
    : null;
  const peak = peakFor(options.device ?? null, options.precision ?? 'fp32');
  const peakTflops = options.cpuBackend ? null : peak.tflops;
  return {
    flopsPerStep,
    achievedTflops,
    peakTflops,
    peakPrecision: peak.label,
    mfu: achievedTflops !== null && peakTflops ? achievedTflops / peakTflops : null,
    steps: steps.length,
    wallMs,
    spans,
    shares,
    kernels,
    hostMsPerKernel: kernelTotal ? dispatch / kernelTotal : null,
    deviceMs,
    deviceTimedSteps: deviceSource.length,
    gpuBusyShare,
    gpuBusySource,
    utilizationPct,
    smActivityPct: mean(sm),
    peakMemoryShare,
    samplesPerS: utterances / (total / 1000),
  };
}
