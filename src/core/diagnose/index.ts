// `xtts diagnose-gpu-utilization` as one core call: the environment, the GPUs and what they do
// before xtts starts, which TensorFlow.js backends load here (and the exact reason for each that
// does not), the config audit (the validator's rules), a short speed test (a few profiled training
// steps, then the input pipeline against that step time), and one prioritised list of actions.
// Its --json form is the snapshot a user attaches to a bug report.
import { join } from 'node:path';
import type { BackendProbe } from '../backend/index.js';
import { loadConfigOrThrow, presetPath } from '../config/index.js';
import type { Backend } from '../config/index.js';
import { isInputFailure, validateConfigFile, type ValidationReport } from '../config/index.js';
import type { PipelineAnalysis } from '../data/index.js';
import { ExitCode, formatPosition, XttsError } from '../errors.js';
import { makeTemporaryFolder, removeTemporaryFolder } from '../util/index.js';
import { profileRecordedRun, type ProfileResult, type Thresholds } from '../profile/index.js';
import { fromDeviceSampleRecord } from '../telemetry/index.js';
import { summarizeGpuSamples, type GpuWindowSummary } from '../telemetry/index.js';
import { RunDatabase } from '../telemetry/index.js';
import { diagnosisActions, PRIORITIES, type DiagnosisAction, type Priority } from './actions.js';
import { collectEnvironment, type EnvironmentReport } from './environment.js';
import { snapshotGpus, type GpuSnapshot } from './gpus.js';

export { diagnosisActions, prioritise, PRIORITIES, type DiagnosisAction, type Priority } from './actions.js';
export { collectEnvironment, REPORTED_ENV, REPORTED_PACKAGES, type EnvironmentReport } from './environment.js';
export {
  parseComputeApps,
  snapshotGpus,
  watchGpus,
  type GpuProcess,
  type GpuSnapshot,
  type WatchFrame,
  type WatchOptions,
  type WatchResult,
} from './gpus.js';

/** Bumped when a field of Diagnosis changes meaning or goes away (docs/diagnose-gpu-utilization.md#the-json). */
export const DIAGNOSIS_SCHEMA_VERSION = 1;

export interface DiagnoseOptions {
  /** The config to audit and speed-test; without it, the speed test runs the quickstart preset. */
  configFile?: string;
  set?: readonly string[];
  datasetDir?: string;
  backend?: Backend;
  /** Run the speed test (default true). */
  speedTest?: boolean;
  steps?: number;
  warmup?: number;
  deviceTimedSteps?: number;
  /** How long the GPUs are sampled before any work (default 1000 ms). */
  idleWindowMs?: number;
  /** Overrides of the shared thresholds (--threshold NAME=VALUE). */
  thresholds?: Partial<Thresholds>;
  xttsVersion: string | null;
  onMessage?: (m: string) => void;
}

export interface SpeedTest {
  configFile: string;
  /** The preset used when no --config was given. */
  preset: string | null;
  steps: number;
  warmup: number;
  profile: ProfileResult;
  pipeline: PipelineAnalysis;
  /** Per GPU during the profiled steps (clock reasons, power, temperature under load). */
  gpuUnderLoad: GpuWindowSummary[];
}

export interface Diagnosis {
  schemaVersion: number;
  createdAt: string;
  environment: EnvironmentReport;
  gpus: GpuSnapshot;
  backends: BackendProbe[];
  /** The config audit; null without --config. */
  config: { file: string; report: ValidationReport } | null;
  speedTest: SpeedTest | { skipped: string };
  actions: DiagnosisAction[];
  summary: Record<Priority, number>;
}

export async function diagnose(o: DiagnoseOptions): Promise<Diagnosis> {
  const say = o.onMessage ?? (() => undefined);
  let config: Diagnosis['config'] = null;
  if (o.configFile) {
    const report = validateConfigFile(o.configFile, { set: o.set, environment: true });
    if (isInputFailure(report)) {
      const f = report.findings.find((x) => x.ruleId.startsWith('input/') || x.ruleId === 'yaml/syntax')!;
      throw new XttsError('CONFIG_UNREADABLE', `${f.position ? `${formatPosition(f.position)}: ` : ''}${f.message}`, {
        exitCode: ExitCode.usage,
        position: f.position,
        suggestions: [f.fix ?? 'check the path and the YAML', 'or run without --config for the machine alone'],
      });
    }
    config = { file: o.configFile, report };
  }

  say('environment and GPUs');
  const environment = collectEnvironment(o.xttsVersion);
  const gpus = await snapshotGpus({ windowMs: o.idleWindowMs });
  say('backends');
  const { probeBackends } = await import('../backend/index.js');
  const backends = await probeBackends({ unsafeApis: true });

  let speedTest: Diagnosis['speedTest'];
  if (o.speedTest === false) speedTest = { skipped: 'skipped (--no-speed-test)' };
  else if (config && !config.report.schemaValid)
    speedTest = { skipped: 'the config does not validate: fix its critical findings first' };
  else if (o.configFile && loadConfigOrThrow(o.configFile, { set: o.set }).config.task === 'vocoder')
    speedTest = {
      skipped:
        "the config trains the vocoder (task: vocoder); the speed test runs the acoustic model's steps: a " +
        "vocoder run's progress line shows its pace and data wait",
    };
  else speedTest = await runSpeedTest(o, say);

  const actions = diagnosisActions({
    gpus,
    backends,
    findings: config?.report.findings,
    ...('profile' in speedTest
      ? { profile: speedTest.profile, pipeline: speedTest.pipeline, underLoad: speedTest.gpuUnderLoad }
      : {}),
    thresholds: o.thresholds,
  });
  const summary = Object.fromEntries(
    PRIORITIES.map((p) => [p, actions.filter((a) => a.priority === p).length]),
  ) as Record<Priority, number>;
  return {
    schemaVersion: DIAGNOSIS_SCHEMA_VERSION,
    createdAt: new Date().toISOString(),
    environment,
    gpus,
    backends,
    config,
    speedTest,
    actions,
    summary,
  };
}

/** A few real training steps of the config, profiled; then the input pipeline against that step time. */
async function runSpeedTest(o: DiagnoseOptions, say: (m: string) => void): Promise<SpeedTest> {
  const preset = o.configFile ? null : 'quickstart';
  const configFile = o.configFile ?? presetPath('quickstart');
  const warmup = o.warmup ?? 3;
  const steps = o.steps ?? 10;
  const timed = o.deviceTimedSteps ?? 2;
  const scratch = makeTemporaryFolder('xtts-diagnose-');
  const runDir = join(scratch, 'run');
  // The preset's feature cache goes with the run (its default, .xtts-cache/, is a folder of the current one, which
  // the user did not name); a config's, or one named with --set, is the user's own.
  const named = loadConfigOrThrow(configFile, { set: o.set });
  const ownCache = o.set?.some((s) => s.trim().startsWith('pipeline.cache.path='));
  const loaded = preset && !ownCache ? { ...named, cachePath: join(scratch, 'cache.sqlite') } : named;
  try {
    say(
      `speed test: ${warmup} + ${steps} training ` +
        `steps${timed ? ` + ${timed} device-timed` : ''} ` +
        `of ${preset ? `the ${preset} preset` : configFile}`,
    );
    const { train } = await import('../training/index.js');
    await train({
      loaded,
      datasetDir: o.datasetDir,
      backend: o.backend,
      maxSteps: warmup + steps + timed,
      outputDir: runDir,
      stepsOnly: true,
      deviceTimedSteps: timed,
      onMessage: say,
    });
    const profile = profileRecordedRun(runDir, { warmup, thresholds: o.thresholds });
    const gpuUnderLoad: GpuWindowSummary[] = RunDatabase.read(runDir, (db) =>
      summarizeGpuSamples(db.deviceSamples().map(fromDeviceSampleRecord)),
    );
    say(`speed test: the input pipeline against a ${profile.breakdown.wallMs.p50.toFixed(0)} ms step`);
    const { analyzePipeline } = await import('../data/index.js');
    // The ring against the measured step: enough batches for a steady state, about 5 s of it at most.
    const stepMs = Math.max(1, Math.round(profile.breakdown.wallMs.p50));
    const pipeline = await analyzePipeline(loaded, {
      datasetDir: o.datasetDir,
      stepMs,
      stepMsSource: 'run',
      audioFiles: 20,
      batches: Math.max(6, Math.min(30, Math.ceil(5000 / stepMs))),
    });
    return {
      configFile,
      preset,
      steps,
      warmup,
      profile: { ...profile, runDir: '(removed after the speed test)' },
      pipeline,
      gpuUnderLoad,
    };
  } finally {
    removeTemporaryFolder(scratch);
  }
}
