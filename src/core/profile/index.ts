// `xtts profile-bottleneck` as core calls: judge the steps of a recorded run (or of a run the
// profiler just made), and write the trace, the HTML report and a patched config on request.
import type { ProgramTime } from '../backend/index.js';
import type { XttsConfig } from '../config/index.js';
import { hostInventory } from '../env/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { RunDatabase, type DeviceSampleRecord, type ReplicaStepRecord } from '../telemetry/index.js';
import type { StepRecord } from '../telemetry/index.js';
import type { StepCaptureSummary } from '../training/index.js';
import { checkOutputFolder, refuseUnsafeOutputs, writeOutputFile } from '../util/index.js';
import { htmlReport, terminalTimeline } from './report.js';
import { toTrace } from './trace.js';
import { writeFixedConfig } from './fix-config.js';
import { type ShapePhase, splitNewShapes } from './shapes.js';
import { describeKernel, type TopKernel, topKernels } from './top-kernels.js';
import {
  judge,
  type ProfileVerdicts,
  type ReplicaSummary,
  summarizeReplicas,
  type Thresholds,
  type VerdictContext,
} from './verdicts.js';

export {
  judge,
  breakdown,
  type ProfileVerdicts,
  type Verdict,
  type Thresholds,
  type StepBreakdown,
  type VerdictContext,
  type ReplicaSummary,
} from './verdicts.js';
export { shapeSteps, splitNewShapes, type ShapePhase } from './shapes.js';
export { describeKernel, matmulFlops, type TopKernel, topKernels } from './top-kernels.js';
export { toTrace, traceProblems } from './trace.js';
export { describeSpans } from '../backend/index.js';
export { htmlReport, terminalTimeline, stepChartSvg } from './report.js';

export interface ProfileOptions {
  /** Steps at the start left out of the statistics (kernel compilation, cache warm-up). */
  warmup: number;
  thresholds?: Partial<Thresholds>;
  trace?: string;
  report?: string;
  /** Write the run's config with the recommended changes applied. */
  fixConfig?: string;
  /** Replace the trace, report and patched config where they exist (else refused before any work). */
  overwrite?: boolean;
}

/**
 * Before any work (the profiled training included): the trace, report and patched config can be written where they
 * are asked for, do not replace a file without `overwrite`, and none is the config they come from or another of them.
 */
export function checkProfileOutputs(options: ProfileOptions, configFile?: string): void {
  const outputs = [
    { file: options.trace, what: 'the trace (--trace)' },
    { file: options.report, what: 'the report (--report)' },
    { file: options.fixConfig, what: 'the patched config (--fix-config)' },
  ].filter((o): o is { file: string; what: string } => o.file !== undefined);
  refuseUnsafeOutputs(outputs, configFile ? [{ file: configFile, what: 'the config (--config)' }] : []);
  for (const o of outputs) checkOutputFolder(o.file, o.what, { overwrite: options.overwrite === true });
}

/** Bumped when a field of ProfileResult changes meaning or goes away (docs/profile-bottleneck.md#outputs). */
export const PROFILE_SCHEMA_VERSION = 1;

export interface ProfileResult extends ProfileVerdicts {
  schemaVersion: number;
  runDir: string;
  backend: string;
  device: string | null;
  configFile: string | null;
  warmupSteps: number;
  /** Kernels per step and the steps' shapes, for the record. */
  timeline: string[];
  /** Said plainly when there is no GPU: what was measured instead. */
  gpuNote: string | null;
  /** The GPU sampler of the run: its source and devices, or why there was none. */
  gpuTelemetry: {
    available: boolean;
    source?: string;
    devices?: { index: number; name: string | null; memoryTotalBytes: number | null; gpm: boolean }[];
    reason?: string;
  };
  /** When the run started (Unix epoch ms) and the measured steps' span in ms from then: ties them to other logs. */
  startedAtEpochMs: number | null;
  measuredWindowMs: { fromMs: number; toMs: number };
  /** Device timing of the probe steps: what it measured, or why there is none. */
  deviceTiming: { available: boolean; steps: number; source?: string; reason?: string; programs?: ProgramTime[] };
  files: { trace?: string; report?: string; fixConfig?: string };
  /** The verdicts' changes --fix-config did not write (judged for a value the run had and its file does not). */
  fixConfigNotes: string[];
  /** Data-parallel runs: each replica's device and mean spans over the measured steps; null on one device. */
  replicas: ReplicaSummary[] | null;
  /**
   * Step capture (device.step_capture) in this run: how many measured steps were replays, and what
   * the trainer recorded per bucket shape; null for runs that record none (CPU runs of older xtts).
   */
  stepCapture: { replayedSteps: number; measuredSteps: number; summary: StepCaptureSummary | null } | null;
  /** Measured steps that met a batch shape first, left out of the verdicts' steps; null where none did. */
  newShapes: ShapePhase | null;
  /**
   * The device-timed step's 12 largest (program, shape)s by device time, a matmul's with its TFLOP/s and share of the
   * precision's peak; empty where no step was device-timed.
   */
  topKernels: TopKernel[];
}

/** What a run's database holds for the profile: its steps, device samples and the meta the trainer recorded. */
interface RecordedRun {
  steps: StepRecord[];
  samples: DeviceSampleRecord[];
  config: XttsConfig | undefined;
  backend: string;
  device: string | null;
  configFile: string | null;
  /** The config file's SHA-256 when the run began (runs recorded before it: null). */
  configSha256: string | null;
  telemetry: GpuTelemetryMeta | undefined;
  timingMeta: Omit<ProfileResult['deviceTiming'], 'steps'> | undefined;
  startedAtEpochMs: number | null;
  cpuCores: number;
  /** The first step of the last process that trained (runs recorded before it: undefined). */
  processFirstStep: number | undefined;
  replicaSteps: ReplicaStepRecord[];
  replicaDevices: string[];
  captureSummary: StepCaptureSummary | null;
}

function readRecordedRun(runDir: string): RecordedRun {
  return RunDatabase.read(runDir, (db) => {
    const captureSummary = db.getMeta<StepCaptureSummary>('stepCapture') ?? null;
    const replicaSteps = db.replicaSteps();
    const replicaDevices = db.getMeta<string[]>('replicas') ?? [];
    const steps = db.steps();
    const samples = db.deviceSamples();
    return {
      captureSummary,
      replicaSteps,
      replicaDevices,
      steps,
      samples,
      config: db.getMeta<XttsConfig>('config'),
      backend: db.getMeta<string>('backend') ?? 'unknown',
      device: db.getMeta<string>('device') ?? null,
      configFile: db.getMeta<string>('configFile') ?? null,
      configSha256: db.getMeta<string>('configSha256') ?? null,
      telemetry: db.getMeta<GpuTelemetryMeta>('gpuTelemetry'),
      timingMeta: db.getMeta('deviceTiming'),
      startedAtEpochMs: db.getMeta<number>('startedAtEpochMs') ?? null,
      cpuCores: db.getMeta<number>('cpuCores') ?? hostInventory().cpuCores,
      processFirstStep: db.getMeta<number>('processFirstStep'),
    };
  });
}

/**
 * The steps to judge, after the warm-up, and the device-timed probes. Probe steps run after the measured ones
 * (TrainOptions.deviceTimedSteps); in a run where every step carries a device time (recorded elsewhere), all are
 * measured steps.
 */
function measuredSteps(
  runDir: string,
  steps: StepRecord[],
  warmup: number,
): { measured: StepRecord[]; probes: StepRecord[]; allTimed: boolean } {
  const allTimed = steps.length > 0 && steps.every((s) => s.deviceMs !== undefined);
  const probes = allTimed ? [] : steps.filter((s) => s.deviceMs !== undefined);
  const measured = (allTimed ? steps : steps.filter((s) => s.deviceMs === undefined)).slice(warmup);
  if (measured.length < 2) {
    throw new XttsError(
      'RUN_TOO_SHORT',
      `${runDir} has ${steps.length} steps; after ${warmup} warm-up steps there are fewer than 2 to judge`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['lower --warmup, or profile more steps (--steps)'],
      },
    );
  }
  return { measured, probes, allTimed };
}

/** The run's settings that the verdicts weigh, from its recorded config. */
function verdictContext(run: RecordedRun, config: XttsConfig, measuredReplicas: ReplicaStepRecord[]): VerdictContext {
  return {
    batchSize: config.batching.batch_size,
    logEvery: config.training.log_every,
    workers: config.pipeline.workers,
    prefetchDepth: config.pipeline.prefetch_depth,
    cacheEnabled: config.pipeline.cache.enabled,
    buckets: config.batching.buckets,
    cpuCores: run.cpuCores,
    processFirstStep: run.processFirstStep,
    checkpointEvery: config.training.checkpoint_every,
    cpuBackend: isCpuBackend(run.backend),
    device: run.device,
    gradAccumulation: config.training.grad_accumulation_steps,
    gradientExchange: config.device.gradient_exchange ?? 'float32',
    stepCapture: config.device.step_capture,
    pipelineSteps: config.device.pipeline_steps,
    precision: config.training.precision,
    matmul: config.device.matmul,
    // A run recorded before device.bounds_checks existed ran with them.
    boundsChecks: config.device.bounds_checks ?? 'on',
    programs: run.timingMeta?.programs,
    replicas: measuredReplicas.length ? { devices: run.replicaDevices, steps: measuredReplicas } : undefined,
  };
}

const isCpuBackend = (backend: string) => backend === 'cpu' || backend === 'wasm';

export function profileRecordedRun(runDir: string, options: ProfileOptions): ProfileResult {
  const run = readRecordedRun(runDir);
  const { steps, samples, config, backend, device, configFile, captureSummary } = run;
  if (!config)
    throw new XttsError(
      'RUN_INCOMPLETE',
      `${runDir} has no config recorded; it was not written by xtts train or profile-bottleneck`,
      { exitCode: ExitCode.usage },
    );
  checkProfileOutputs(options, configFile ?? undefined);
  const afterWarmup = measuredSteps(runDir, steps, options.warmup);
  const { probes, allTimed } = afterWarmup;
  // A shape's first steps (recording for replay, compiling) are a phase of their own, not the steady state.
  const { steady: measured, phase: newShapes } = splitNewShapes(steps, afterWarmup.measured);
  // What replayed among all steps after the warm-up, the new shapes' included (the verdicts judge the steady ones).
  const all = afterWarmup.measured;
  const stepCapture =
    captureSummary || all.some((m) => m.replayed !== undefined)
      ? { replayedSteps: all.filter((m) => m.replayed).length, measuredSteps: all.length, summary: captureSummary }
      : null;
  const measuredStepNumbers = new Set(measured.map((m) => m.step));
  const measuredReplicas = run.replicaSteps.filter((r) => measuredStepNumbers.has(r.step));
  const t0 = measured[0].startMs;
  const last = measured[measured.length - 1];
  const t1 = last.startMs + last.wallMs;
  const window = samples.filter((s) => s.tMs >= t0 && s.tMs <= t1);
  const ctx = { ...verdictContext(run, config, measuredReplicas), newShapes };
  const v = judge(measured, window, ctx, options.thresholds, probes);
  const gpuTelemetry = gpuTelemetryOf(run.telemetry);
  const deviceTiming: ProfileResult['deviceTiming'] = run.timingMeta
    ? { ...run.timingMeta, steps: v.breakdown.deviceTimedSteps }
    : allTimed
      ? { available: true, steps: steps.length, source: 'recorded with every step' }
      : { available: false, steps: 0, reason: 'no device-timed steps in this run' };
  const gpuNote = window.length === 0 ? noGpuNote(backend, gpuTelemetry, v.breakdown, deviceTiming) : null;
  const fixConfigNotes: string[] = [];
  const files = writeRequestedFiles(
    runDir,
    options,
    {
      measured,
      window,
      probes,
      v,
      backend,
      device,
      configFile,
      configSha256: run.configSha256,
      config,
      deviceTiming,
      gpuNote,
    },
    fixConfigNotes,
  );
  return {
    schemaVersion: PROFILE_SCHEMA_VERSION,
    ...v,
    runDir,
    backend,
    device,
    configFile,
    warmupSteps: options.warmup,
    timeline: terminalTimeline(measured),
    gpuNote,
    gpuTelemetry,
    startedAtEpochMs: run.startedAtEpochMs,
    measuredWindowMs: { fromMs: t0, toMs: t1 },
    deviceTiming,
    files,
    fixConfigNotes,
    replicas: measuredReplicas.length ? summarizeReplicas(run.replicaDevices, measuredReplicas) : null,
    stepCapture,
    newShapes,
    topKernels: topKernels(deviceTiming.programs ?? [], v.breakdown.peakTflops, 12),
  };
}

/** The run's GPU sampler as the result reports it: its source and devices, or why there was none. */
function gpuTelemetryOf(telemetry: GpuTelemetryMeta | undefined): ProfileResult['gpuTelemetry'] {
  return telemetry
    ? telemetry.available
      ? {
          available: true,
          source: telemetry.source,
          devices: telemetry.devices.map((d) => ({
            index: d.index,
            name: d.name,
            memoryTotalBytes: d.memoryTotalBytes,
            gpm: d.gpm,
          })),
        }
      : { available: false, reason: telemetry.reason }
    : { available: false, reason: 'the run did not record its GPU telemetry' };
}

/** Said plainly when no GPU sample falls in the measured steps: why, and what the breakdown measured instead. */
function noGpuNote(
  backend: string,
  gpuTelemetry: ProfileResult['gpuTelemetry'],
  b: ProfileResult['breakdown'],
  deviceTiming: ProfileResult['deviceTiming'],
): string {
  const cpuBackend = isCpuBackend(backend);
  const why = cpuBackend
    ? `the run used the ${backend} backend, which computes on the CPU — there is no GPU in this measurement`
    : `no GPU samples ` +
      `(${gpuTelemetry.available ? 'the sampler took none during the measured steps' : gpuTelemetry.reason})`;
  return (
    `${why}; the breakdown is host time per ` +
    (`span` +
      (cpuBackend ? ', where forward/backward includes the arithmetic itself' : '') +
      (b.deviceMs ? `, and "device" is the kernels' own time ` + `(${deviceTiming.source ?? 'kernel timing'})` : ''))
  );
}

/** The judged run, with what the files asked for (--trace, --report, --fix-config) are written from. */
interface JudgedRun {
  measured: StepRecord[];
  window: DeviceSampleRecord[];
  probes: StepRecord[];
  v: ProfileVerdicts;
  backend: string;
  device: string | null;
  configFile: string | null;
  configSha256: string | null;
  config: XttsConfig;
  deviceTiming: ProfileResult['deviceTiming'];
  gpuNote: string | null;
}

/**
 * Writes the trace, the HTML report and the patched config, each where its option asks; returns their paths, and
 * into `notes` the patched config's changes not written (writeFixedConfig).
 */
function writeRequestedFiles(
  runDir: string,
  options: ProfileOptions,
  run: JudgedRun,
  notes: string[],
): ProfileResult['files'] {
  const { measured, window, probes, v, backend, device, configFile } = run;
  const files: ProfileResult['files'] = {};
  const overwrite = { overwrite: options.overwrite === true };
  if (options.trace) {
    writeOutputFile(
      options.trace,
      JSON.stringify(toTrace(measured, window, { runDir, backend, device }, probes)),
      'the trace (--trace)',
      overwrite,
    );
    files.trace = options.trace;
  }
  if (options.report) {
    const facts = reportFacts(v.breakdown, {
      backend,
      device,
      steps: measured.length,
      warmup: options.warmup,
      deviceTiming: run.deviceTiming,
    });
    if (run.gpuNote) facts.note = run.gpuNote;
    writeOutputFile(
      options.report,
      htmlReport(`xtts profile — ${runDir}`, measured, window, v, facts),
      'the report (--report)',
      overwrite,
    );
    files.report = options.report;
  }
  if (options.fixConfig) {
    const changes = v.verdicts.flatMap((x) =>
      x.actions.map((a) => ({ key: a.key, value: a.value, reason: `${x.title} — ${a.effect}` })),
    );
    notes.push(
      ...writeFixedConfig({
        configFile,
        configSha256: run.configSha256,
        runConfig: run.config,
        changes,
        out: options.fixConfig,
        overwrite: overwrite.overwrite,
      }),
    );
    files.fixConfig = options.fixConfig;
  }
  return files;
}

/** The report's table of figures (--report). */
function reportFacts(
  b: ProfileResult['breakdown'],
  o: {
    backend: string;
    device: string | null;
    steps: number;
    warmup: number;
    deviceTiming: ProfileResult['deviceTiming'];
  },
): Record<string, string> {
  return {
    backend: o.backend,
    device: o.device ?? 'none',
    steps: String(o.steps),
    'warm-up steps': String(o.warmup),
    'median step': `${b.wallMs.p50.toFixed(1)} ms`,
    'samples/s': b.samplesPerS.toFixed(1),
    'kernels/step': b.kernels.mean.toFixed(0),
    'host time per kernel': b.hostMsPerKernel === null ? 'n/a' : `${(b.hostMsPerKernel * 1000).toFixed(0)} µs`,
    'model FLOPs per step':
      b.flopsPerStep === null
        ? 'not counted'
        : `${(b.flopsPerStep / 1e9).toFixed(1)} G, ${b.achievedTflops!.toFixed(3)} ` +
          (`TFLOP/s` +
            (b.mfu !== null
              ? ` (MFU ${(b.mfu * 100).toFixed(1)}% of ${b.peakTflops} ` + `TFLOP/s ${b.peakPrecision})`
              : '')),
    'device time per step': b.deviceMs
      ? `${b.deviceMs.p50.toFixed(1)} ms (${o.deviceTiming.source}, ${b.deviceTimedSteps} timed steps)`
      : `not measured${o.deviceTiming.reason ? `: ${o.deviceTiming.reason}` : ''}`,
    'top GPU programs (device ms per timed step)': o.deviceTiming.programs?.length
      ? o.deviceTiming.programs
          .slice(0, 8)
          .map((p) => `${p.name} ${p.ms.toFixed(2)} ms (${p.count.toFixed(0)}×)`)
          .join(', ')
      : 'not measured',
    "largest GPU dispatches by shape (device ms per timed step, share, a matmul's rate)":
      topKernels(o.deviceTiming.programs ?? [], b.peakTflops, 8)
        .map((k) => `${describeKernel(k, b.peakPrecision)} (${k.count.toFixed(0)}×)`)
        .join('; ') || 'not measured',
    'GPU busy': b.gpuBusyShare === null ? 'not measured' : `${(b.gpuBusyShare * 100).toFixed(1)}% (${b.gpuBusySource})`,
    'NVML utilisation': b.utilizationPct === null ? 'n/a' : `${b.utilizationPct.toFixed(1)}%`,
    'SM activity (GPM)': b.smActivityPct === null ? 'n/a' : `${b.smActivityPct.toFixed(1)}%`,
    'peak device memory': b.peakMemoryShare === null ? 'n/a' : `${(b.peakMemoryShare * 100).toFixed(1)}%`,
  };
}

type GpuTelemetryMeta =
  | {
      available: true;
      source: string;
      devices: { index: number; name: string | null; memoryTotalBytes: number | null; gpm: boolean }[];
    }
  | { available: false; reason: string };
