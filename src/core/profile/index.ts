// `xtts profile-bottleneck` as core calls: judge the steps of a recorded run (or of a run the
// profiler just made), and write the trace, the HTML report and a patched config on request.
import { writeFileSync } from 'node:fs';
import type { XttsConfig } from '../config/schema.js';
import { patchConfigFile } from '../config/patch.js';
import { hostInventory } from '../env/host.js';
import { ExitCode, XttsError } from '../errors.js';
import { RunDatabase, type DeviceSampleRecord } from '../telemetry/run-db.js';
import type { StepRecord } from '../telemetry/spans.js';
import { htmlReport, terminalTimeline } from './report.js';
import { toTrace } from './trace.js';
import { judge, type ProfileVerdicts, type Thresholds } from './verdicts.js';

export { judge, breakdown, type ProfileVerdicts, type Verdict, type Thresholds, type StepBreakdown, type VerdictContext } from './verdicts.js';
export { toTrace, traceProblems } from './trace.js';
export { htmlReport, terminalTimeline, stepChartSvg } from './report.js';

export interface ProfileOptions {
  /** Steps at the start left out of the statistics (kernel compilation, cache warm-up). */
  warmup: number;
  thresholds?: Partial<Thresholds>;
  trace?: string;
  report?: string;
  /** Write the run's config with the recommended changes applied. */
  fixConfig?: string;
}

export interface ProfileResult extends ProfileVerdicts {
  runDir: string;
  backend: string;
  device: string | null;
  configFile: string | null;
  warmupSteps: number;
  /** Kernels per step and the steps' shapes, for the record. */
  timeline: string[];
  /** Said plainly when there is no GPU: what was measured instead. */
  gpuNote: string | null;
  files: { trace?: string; report?: string; fixConfig?: string };
}

export function profileRecordedRun(runDir: string, options: ProfileOptions): ProfileResult {
  const db = RunDatabase.open(runDir);
  let steps: StepRecord[];
  let samples: DeviceSampleRecord[];
  let config: XttsConfig | undefined;
  let backend: string;
  let device: string | null;
  let configFile: string | null;
  try {
    steps = db.steps();
    samples = db.deviceSamples();
    config = db.getMeta<XttsConfig>('config');
    backend = db.getMeta<string>('backend') ?? 'unknown';
    device = db.getMeta<string>('device') ?? null;
    configFile = db.getMeta<string>('configFile') ?? null;
  } finally {
    db.close();
  }
  if (!config) throw new XttsError('RUN_INCOMPLETE', `${runDir} has no config recorded; it was not written by xtts train or profile-bottleneck`, { exitCode: ExitCode.usage });
  const measured = steps.slice(options.warmup);
  if (measured.length < 2) {
    throw new XttsError('RUN_TOO_SHORT', `${runDir} has ${steps.length} steps; after ${options.warmup} warm-up steps there are fewer than 2 to judge`, {
      exitCode: ExitCode.usage,
      suggestions: ['lower --warmup, or profile more steps (--steps)'],
    });
  }
  const t0 = measured[0].startMs;
  const window = samples.filter((s) => s.tMs >= t0);
  const v = judge(measured, window, {
    batchSize: config.batching.batch_size,
    logEvery: config.training.log_every,
    workers: config.pipeline.workers,
    prefetchDepth: config.pipeline.prefetch_depth,
    cacheEnabled: config.pipeline.cache.enabled,
    buckets: config.batching.buckets,
    cpuCores: hostInventory().cpuCores,
    checkpointEvery: config.training.checkpoint_every,
  }, options.thresholds);
  const gpuNote = window.length === 0 ? `no GPU samples: ${backend === 'webgpu' ? 'no NVIDIA telemetry on this host' : `the run used the ${backend} backend (no GPU)`}; the breakdown is host time per span${backend === 'cpu' || backend === 'wasm' ? ', where forward/backward includes the arithmetic itself' : ''}` : null;
  const files: ProfileResult['files'] = {};
  if (options.trace) {
    writeFileSync(options.trace, JSON.stringify(toTrace(measured, window, { runDir, backend, device })));
    files.trace = options.trace;
  }
  if (options.report) {
    writeFileSync(options.report, htmlReport(`xtts profile — ${runDir}`, measured, window, v, { backend, device: device ?? 'none', steps: String(measured.length), 'warm-up steps': String(options.warmup), 'samples/s': v.breakdown.samplesPerS.toFixed(1), 'kernels/step': v.breakdown.kernels.mean.toFixed(0) }));
    files.report = options.report;
  }
  if (options.fixConfig) {
    const changes = v.verdicts.flatMap((x) => x.actions.map((a) => ({ key: a.key, value: a.value, reason: `${x.title} — ${a.effect}` })));
    if (!configFile) throw new XttsError('RUN_NO_CONFIG_FILE', 'the run does not record which config file it used, so there is nothing to patch', { exitCode: ExitCode.usage });
    patchConfigFile(configFile, changes, options.fixConfig);
    files.fixConfig = options.fixConfig;
  }
  return { ...v, runDir, backend, device, configFile, warmupSteps: options.warmup, timeline: terminalTimeline(measured), gpuNote, files };
}
