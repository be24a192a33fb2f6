// What a run writes about itself while it trains: the run database (steps, metrics, meta), the
// TensorBoard event file, the loss curve picture, and the progress line's figures. The loop hands it
// each step's record and each logged step's stats; nothing here touches the device.
import { readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { sha256Hex } from '../../cache/index.js';
import { stringify as stringifyYaml } from 'yaml';
import { curveFigure } from '../../render/index.js';
import type { GpuSampler } from '../../telemetry/index.js';
import { RunDatabase, type ReplicaStepRecord } from '../../telemetry/index.js';
import type { StepRecord } from '../../telemetry/index.js';
import { EventFileWriter } from '../../telemetry/index.js';
import { writeFileAtomic } from '../../util/index.js';
import { STEP_STATS } from '../optim/train-step.js';
import type { TrainProgress, TrainResult } from './types.js';

/**
 * A logged step's figures: its loss, gradient norm and finite flag (1 made, 0 non-finite, −1 a loss-scale overflow).
 */
export interface LoggedStats {
  loss: number;
  gradNorm: number;
  flag: number;
}

export class RunLog {
  /** Every recorded step, in order. */
  readonly records: StepRecord[] = [];
  /** Loss read back at each log interval, and each validation pass's. */
  readonly lossCurve: TrainResult['lossCurve'] = [];
  readonly validation: TrainResult['validation'] = [];
  readonly evalFiles: string[] = [];
  /** Updates skipped for a NaN/Inf loss or gradient, in this run (a resumed run counts afresh). */
  nonFiniteSteps = 0;
  /**
   * The duration predictor's squared log error of the last logged step (stands in for validation's without validation
   * rows).
   */
  trainingDurationError = 0;
  /** Device samples for the progress line's utilisation, on GPUs. */
  sampler?: GpuSampler;

  private constructor(
    readonly runDir: string,
    readonly db: RunDatabase,
    /** Measurement runs (profiling) write no event file. */
    readonly events: EventFileWriter | undefined,
    private readonly progress: { maxSteps: number; logEvery: number; onProgress?: (p: TrainProgress) => void },
  ) {}

  /** Opens the run database (and, unless `tensorboard` is false, the event file) in `runDir`, which exists. */
  static open(
    runDir: string,
    o: { tensorboard: boolean; maxSteps: number; logEvery: number; onProgress?: (p: TrainProgress) => void },
  ): RunLog {
    const db = RunDatabase.create(runDir);
    // TensorBoard event files beside run.sqlite (`tensorboard --logdir runs`).
    return new RunLog(runDir, db, o.tensorboard ? new EventFileWriter(runDir) : undefined, o);
  }

  /** A scalar into the run database and TensorBoard. */
  metric(at: number, name: string, value: number): void {
    this.db.addMetric(at, name, value);
    this.events?.scalar(name, at, value);
  }

  /** A logged step's losses, gradient norm and learning rate into the metrics and the loss curve. */
  logStats(at: number, stats: readonly number[], learningRate: number): LoggedStats {
    const stat = (name: (typeof STEP_STATS)[number]) => stats[STEP_STATS.indexOf(name)];
    const loss = stat('loss');
    const gradNorm = stat('gradNorm');
    this.lossCurve.push({ step: at, loss });
    this.metric(at, 'loss/train', loss);
    this.metric(at, 'loss/mel_pre', stat('melPre'));
    this.metric(at, 'loss/mel_post', stat('melPost'));
    this.metric(at, 'loss/aligned_text', stat('alignedText'));
    this.metric(at, 'loss/duration', stat('duration'));
    // Exactly 0 without model.pitch_contour (no pitch predictor): not a curve then.
    if (stat('pitch') !== 0) this.metric(at, 'loss/pitch', stat('pitch'));
    this.trainingDurationError = stat('duration');
    this.metric(at, 'grad_norm', gradNorm);
    this.metric(at, 'learning_rate', learningRate);
    return { loss, gradNorm, flag: stat('finite') };
  }

  /** Counts a step's finite flag; whether it was a non-finite step. */
  countFlag(flag: number): boolean {
    if (flag === 0) this.nonFiniteSteps++;
    return flag === 0;
  }

  addStep(rec: StepRecord): void {
    this.records.push(rec);
    this.db.addStep(rec);
  }

  addReplicaSteps(step: number, parts: readonly Omit<ReplicaStepRecord, 'step' | 'rank'>[]): void {
    for (const [rank, r] of parts.entries()) this.db.addReplicaStep({ step, rank, ...r });
  }

  /** The progress line of a logged step, once its record is in `records`. */
  reportProgress(at: number, loss: number, learningRate: number): void {
    this.db.flush();
    const { maxSteps, logEvery, onProgress } = this.progress;
    const recent = this.records.slice(-logEvery);
    const wall = recent.reduce((a, x) => a + x.wallMs, 0);
    const p: TrainProgress = {
      step: at,
      maxSteps,
      loss,
      learningRate,
      samplesPerS: recent.reduce((a, x) => a + x.batchSize, 0) / (wall / 1000),
      dataWaitShare: recent.reduce((a, x) => a + x.spans.dataWaitMs, 0) / wall,
      stepMs: wall / recent.length,
      etaS: ((maxSteps - at) * wall) / recent.length / 1000,
      nonFiniteSteps: this.nonFiniteSteps,
      gpuUtilizationPct: this.sampler?.summary({ fromMs: recent[0].startMs })[0]?.utilizationPct?.mean,
    };
    // Speed is a metric like the losses: in run.sqlite and metrics.jsonl as well as in TensorBoard.
    this.metric(at, 'perf/samples_per_s', p.samplesPerS);
    this.metric(at, 'perf/data_wait_share', p.dataWaitShare);
    this.metric(at, 'perf/step_ms', p.stepMs);
    if (p.gpuUtilizationPct !== undefined) this.metric(at, 'perf/gpu_utilization_pct', p.gpuUtilizationPct);
    onProgress?.(p);
  }

  /**
   * Eval files of step `at` into the result, and into TensorBoard, each kind under a tag of its own (one tag holding
   * both an image and audio shows only one of them): `eval/audio/sentence-1` (the WAV), `eval/mel/sentence-1`
   * (sentence-1.png) and `eval/alignment/sentence-1` (sentence-1-alignment.png).
   */
  publishEval(at: number, files: readonly string[]): void {
    for (const f of files) {
      const name = basename(f).replace(/\.(png|wav)$/, '');
      if (f.endsWith('.wav')) this.events?.audio(`eval/audio/${name}`, at, readFileSync(f));
      else if (name.endsWith('-alignment'))
        this.events?.image(`eval/alignment/${name.slice(0, -'-alignment'.length)}`, at, readFileSync(f));
      else if (f.endsWith('.png')) this.events?.image(`eval/mel/${name}`, at, readFileSync(f));
    }
    this.events?.flush();
    this.evalFiles.push(...files);
  }

  /**
   * The config file the run read, its whole path and its bytes' hash (null where it cannot be read): profile-bottleneck
   * --fix-config patches it from any folder, and only as it was.
   */
  recordConfigFile(file: string): void {
    this.db.setMeta('configFile', resolve(file));
    let sha: string | null = null;
    try {
      sha = sha256Hex(readFileSync(file));
    } catch {
      // a config that went away since it was loaded: no hash, and --fix-config will not find it
    }
    this.db.setMeta('configSha256', sha);
  }

  /**
   * The run's resolved config as YAML in TensorBoard's Text tab (tag `config`), and its settings in the HPARAMS
   * tab (every scalar key, dotted: `training.learning_rate`), at the step the run starts from.
   */
  describeConfig(at: number, config: object, file: string | undefined): void {
    const yaml = stringifyYaml(config, { lineWidth: 0 });
    // Markdown: an indented block is shown as code, line for line.
    const indented = yaml.replace(/\n$/, '').replace(/^/gm, '    ');
    this.events?.text('config', at, `${file ? `from \`${file}\`, resolved:\n\n` : ''}${indented}`);
    this.events?.hparams(at, hparamsOf(config), Date.now() / 1000);
    this.events?.flush();
  }

  /** The loss curves as a picture in the run folder (TensorBoard has them as scalars). */
  writeLossCurve(): void {
    writeFileAtomic(
      join(this.runDir, 'loss-curve.png'),
      curveFigure({
        title: `${basename(this.runDir)} · loss`,
        yTitle: 'LOSS',
        series: [
          { label: 'TRAINING', points: this.lossCurve.map((x) => [x.step, x.loss]) },
          { label: 'VALIDATION', points: this.validation.map((x) => [x.step, x.loss]) },
        ],
      }),
    );
  }

  /**
   * `end`: the run's last step and why it stopped, for the HPARAMS tab's status (a run that diverged, or ended
   * with no reason, an error, failed).
   */
  close(end?: { step: number; stoppedBy?: string }): void {
    if (end) {
      const ok = end.stoppedBy !== undefined && end.stoppedBy !== 'non_finite';
      this.events?.hparamsEnd(end.step, ok ? 'success' : 'failure', Date.now() / 1000);
    }
    this.db.close();
    this.events?.close();
  }
}

/**
 * A config's settings as TensorBoard hyperparameters: every number, string and boolean by its dotted key, a
 * list of them as one string ("en, de"); lists of objects (eval sentences) and nulls are left out.
 */
export function hparamsOf(config: object, prefix = ''): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, v] of Object.entries(config)) {
    const name = `${prefix}${key}`;
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') out[name] = v;
    else if (Array.isArray(v)) {
      if (v.every((x) => ['number', 'string', 'boolean'].includes(typeof x))) out[name] = v.join(', ');
    } else if (v !== null && typeof v === 'object') Object.assign(out, hparamsOf(v, `${name}.`));
  }
  return out;
}
