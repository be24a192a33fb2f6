import { join } from 'node:path';
import { Flags, type Interfaces } from '@oclif/core';
import {
  datasetFlag,
  ExitCode,
  isXttsError,
  makeTemporaryFolder,
  onStopSignals,
  parseThresholds,
  plural,
  removeTemporaryFolder,
  SIGNAL_EXIT,
  type StopSignal,
  setFlag,
  thresholdFlag,
  XttsCommand,
  XttsError,
} from '@xtts/core';
import { BACKENDS, type LoadedConfig, loadConfigOrThrow } from '@xtts/core/config';
import { checkProfileOutputs, describeSpans, profileRecordedRun, type ProfileResult } from '@xtts/core/profile';
import { paint, renderTable } from '@xtts/core/render';

/** A figure (ms, TFLOP/s): two decimals under 10, one under 100, none from 100. */
const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

type Summary = ProfileResult['breakdown']['wallMs'];
type ProfileFlags = Interfaces.InferredFlags<(typeof ProfileBottleneck)['flags']>;
type StepCapture = NonNullable<ProfileResult['stepCapture']>;

/** A row of the span table: mean, std, min, max and p95 in ms, CV, and the share given. */
const summaryRow = (label: string, s: Summary, share: string): string[] => [
  label,
  f(s.mean),
  f(s.std),
  f(s.min),
  f(s.max),
  f(s.p95),
  s.cv.toFixed(2),
  share,
];

export default class ProfileBottleneck extends XttsCommand<ProfileResult> {
  static override summary = "Run (or read) real training steps, split each step's time, and say what bounds it.";

  static override description =
    'Trains --steps real steps of the configured model, data and backend after ' +
    '--warmup steps (or reads a recorded run with --run), splits every step into ' +
    'data wait, upload, host dispatch of forward/backward and the optimizer, device ' +
    'sync/readback and other, and gives mean, std, min, max, p95 and CV per span, ' +
    'kernels per step and host time per kernel, the device time per step (WebGPU ' +
    'timestamp queries on --device-timed-steps extra steps) and the GPU busy share ' +
    'by timestamps, NVML/nvidia-smi utilisation and GPM SM activity. See ' +
    'docs/profile-bottleneck.md. Verdicts — input-bound, dispatch-bound, sync-bound, ' +
    'compute-bound, memory headroom, oscillating step time — use the thresholds ' +
    'every xtts tool shares (docs/rules.md#thresholds); override them with ' +
    '--threshold NAME=VALUE.\n' +
    '\n' +
    'Ctrl-C (SIGINT), SIGTERM or SIGHUP while it trains: the step under way finishes and the steps so far are ' +
    'judged. A second signal exits at once.\n' +
    '\n' +
    'Exit codes: 0 no verdict graded high; 1 a verdict graded high; 2 bad config or run; 130, 143, 129 stopped ' +
    'by a signal.';

  static override examples = [
    '<%= config.bin %> <%= command.id %> --config configs/small.yaml --backend ' +
      'webgpu --steps 50 --trace trace.json --report report.html',
    '<%= config.bin %> <%= command.id %> --run runs/small --fix-config small-fixed.yaml',
  ];

  static override flags = {
    config: Flags.string({
      char: 'c',
      summary: 'Training config to profile.',
      helpValue: 'FILE',
      exactlyOne: ['config', 'run'],
    }),
    run: Flags.string({
      summary: 'Read a recorded run (an xtts train output folder) instead of training.',
      helpValue: 'DIR',
      exactlyOne: ['config', 'run'],
    }),
    set: setFlag,
    dataset: datasetFlag,
    backend: Flags.string({ summary: 'TensorFlow.js backend.', options: [...BACKENDS], env: 'XTTS_BACKEND' }),
    steps: Flags.integer({ summary: 'Steps to measure.', default: 30, min: 2 }),
    warmup: Flags.integer({
      summary: 'Steps before them, left out (kernel compilation, cache warm-up).',
      default: 5,
      min: 0,
    }),
    'device-timed-steps': Flags.integer({
      summary:
        'Steps after them run under the device timer (WebGPU timestamp queries) for the device time per step; 0 skips.',
      default: 3,
      min: 0,
    }),
    output: Flags.string({ summary: 'Keep the profiled run here (default: a temporary folder).', helpValue: 'DIR' }),
    trace: Flags.string({ summary: 'Write a Perfetto/Chrome trace of the measured steps.', helpValue: 'FILE' }),
    report: Flags.string({ summary: 'Write a self-contained HTML report with charts.', helpValue: 'FILE' }),
    'fix-config': Flags.string({
      summary: 'Write the config with the recommended changes applied.',
      helpValue: 'FILE',
    }),
    overwrite: Flags.boolean({
      summary: 'Replace the --trace, --report and --fix-config files where they exist.',
      default: false,
    }),
    threshold: thresholdFlag,
  };

  /** The temporary run folder of a profile without --output, if any; removed once judged. */
  private temporaryRun: string | undefined;

  /** The signal that stopped the profiled training, if one did: the steps so far are judged; it is the exit status. */
  private stopSignal: StopSignal | undefined;

  protected async execute(): Promise<ProfileResult> {
    const { flags } = await this.parse(ProfileBottleneck);
    const thresholds = parseThresholds(flags.threshold);
    const files = {
      trace: flags.trace,
      report: flags.report,
      fixConfig: flags['fix-config'],
      overwrite: flags.overwrite,
    };
    let runDir = flags.run;
    if (!runDir) {
      const loaded = loadConfigOrThrow(flags.config!, { set: flags.set });
      // Before minutes of profiled training, not after.
      checkProfileOutputs({ warmup: flags.warmup, ...files }, loaded.file);
      // Without --output the profiled run goes to a temporary folder, removed once it is judged.
      if (!flags.output) this.temporaryRun = makeTemporaryFolder('xtts-profile-');
      runDir = flags.output ?? this.temporaryRun!;
      await this.profileTraining(flags, loaded, runDir);
    }
    if (flags.run) {
      const { runInProgress } = await import('@xtts/core/training');
      const live = runInProgress(flags.run);
      if (live) this.addWarning(`${flags.run} is still training (${live}): this judges its steps so far`);
    }
    try {
      const result = profileRecordedRun(runDir, { warmup: flags.warmup, thresholds, ...files });
      for (const note of result.fixConfigNotes) this.addWarning(note);
      return result;
    } catch (e) {
      // Stopped before two steps past the warm-up: the signal's story, with its exit status, not a usage error.
      if (this.stopSignal && isXttsError(e) && e.code === 'RUN_TOO_SHORT')
        throw new XttsError(
          'INTERRUPTED',
          `${this.stopSignal} stopped the profile before 2 steps past the ${flags.warmup} warm-up steps were ` +
            'measured: nothing to judge',
          {
            exitCode: SIGNAL_EXIT[this.stopSignal],
            suggestions: [
              flags.output
                ? `the steps that ran are in ${flags.output}: judge them with a lower warm-up, ` +
                  `xtts profile-bottleneck --run ${flags.output} --warmup 0`
                : 'profile again and let at least --warmup + 2 steps run (--steps, --warmup set how many)',
            ],
          },
        );
      throw e;
    } finally {
      this.removeTemporaryRun();
    }
  }

  /**
   * Trains the profiled steps into runDir. Ctrl-C (or SIGTERM, SIGHUP) ends the training after its step, and the
   * steps so far are judged; a second signal, or one before any step, exits at once (a temporary run folder is
   * removed on the way out).
   */
  private async profileTraining(flags: ProfileFlags, loaded: LoadedConfig, runDir: string): Promise<void> {
    const { freeSibling, train } = await import('@xtts/core/training');
    const human = !this.jsonEnabled();
    const maxSteps = flags.warmup + flags.steps + flags['device-timed-steps'];
    const control = { stop: false };
    let stepsDone = 0;
    const onSignal = (signal: StopSignal) => {
      if (control.stop || stepsDone === 0)
        this.exitForSignal(
          signal,
          control.stop ? 'second signal: exiting now, nothing judged' : 'no step has run yet: exiting now',
        );
      this.stopSignal = signal;
      control.stop = true;
      this.tellSignal(
        signal,
        `finishing this step, then judging the ${plural(stepsDone, 'step')} so far (a second signal quits at once)`,
      );
    };
    const stopListening = onStopSignals(onSignal);
    try {
      await train({
        loaded,
        datasetDir: flags.dataset,
        backend: flags.backend as never,
        maxSteps,
        outputDir: runDir,
        stepsOnly: true,
        control,
        onStep: (p) => {
          stepsDone = p.step - p.startStep;
        },
        deviceTimedSteps: flags['device-timed-steps'],
        onMessage: human ? (m) => process.stderr.write(`${m}\n`) : undefined,
        // Rewritten in place on a terminal; a line a step where stderr goes to a file or a pipe.
        onProgress: human
          ? (p) =>
              process.stderr.write(
                process.stderr.isTTY
                  ? `\rprofiling step ${p.step}/${p.maxSteps}`
                  : `profiling step ${p.step}/${p.maxSteps}\n`,
              )
          : undefined,
      });
    } catch (e) {
      this.removeTemporaryRun();
      // train's advice for a used folder is --resume, which profiling has not: a new folder, or the run there.
      if (isXttsError(e) && e.code === 'RUN_FOLDER_USED')
        throw new XttsError('RUN_FOLDER_USED', e.message, {
          exitCode: ExitCode.usage,
          suggestions: [
            `profile into a new folder: --output ${freeSibling(runDir)}`,
            `or judge the run already there: xtts profile-bottleneck --run ${runDir}`,
          ],
        });
      throw e;
    } finally {
      stopListening();
    }
    if (human && process.stderr.isTTY) process.stderr.write('\n');
    if (this.stopSignal) {
      const past = stepsDone - flags.warmup - flags.steps;
      this.addWarning(
        `${this.stopSignal} stopped the profile after ${stepsDone} of ${maxSteps} steps: ` +
          (past < 0
            ? `${Math.max(0, stepsDone - flags.warmup)} of them past the warm-up where --steps asked for ${flags.steps}`
            : `${past} of the ${flags['device-timed-steps']} device-timed steps ran`),
      );
    }
  }

  private removeTemporaryRun(): void {
    if (this.temporaryRun) removeTemporaryFolder(this.temporaryRun);
  }

  protected render(r: ProfileResult): void {
    this.renderHeadline(r);
    if (r.stepCapture?.summary) this.renderStepCapture(r.stepCapture, r.stepCapture.summary, r.breakdown.wallMs.p50);
    if (r.gpuNote) this.log(paint.dim(r.gpuNote));
    if (!r.deviceTiming.available && r.deviceTiming.reason)
      this.log(paint.dim(`device time not measured: ${r.deviceTiming.reason}`));
    this.renderSpans(r);
    this.renderGpuPrograms(r);
    if (r.replicas) this.renderReplicas(r.replicas);
    this.log(
      paint.dim(
        'timeline (D data wait, U upload, F forward/backward dispatch, O optimizer ' +
          'dispatch, S sync, A all-reduce, C checkpoint/eval, . other):',
      ),
    );
    for (const line of r.timeline.slice(0, 20)) this.log(`  ${line}`);
    this.log('');
    this.renderVerdicts(r.verdicts);
    for (const [k, file] of Object.entries(r.files)) this.log(paint.dim(`${k}: ${file}`));
  }

  /** The run, its step rate and kernels, model FLOPs against the peak, and how busy the GPU was. */
  private renderHeadline(r: ProfileResult): void {
    const b = r.breakdown;
    const where = this.temporaryRun ? `a temporary run, removed (--output DIR keeps it)` : r.runDir;
    this.log(paint.bold(`xtts profile-bottleneck — ${where} (${r.backend}${r.device ? `, ${r.device}` : ''})`));
    this.log(
      `${b.steps} steps after ${r.warmupSteps} warm-up; median step ${f(b.wallMs.p50)} ` +
        `ms, ${b.samplesPerS.toFixed(1)} samples/s, ${b.kernels.mean.toFixed(0)} ` +
        (`kernels/step` +
          (b.hostMsPerKernel !== null ? `, ${(b.hostMsPerKernel * 1000).toFixed(0)} µs host time per kernel` : '')),
    );
    if (b.flopsPerStep !== null)
      this.log(
        `model FLOPs ${(b.flopsPerStep / 1e9).toFixed(1)} G a step (matmuls and ` +
          `convolutions, forward and backward), ${b.achievedTflops!.toFixed(3)} ` +
          (`TFLOP/s` +
            (b.mfu !== null
              ? `: MFU ${pct(b.mfu)} of the device's ${b.peakPrecision} peak (${b.peakTflops} ` + `TFLOP/s)`
              : '')),
      );
    const gpu = [
      b.gpuBusyShare !== null ? `GPU busy ${pct(b.gpuBusyShare)} (${b.gpuBusySource})` : null,
      b.utilizationPct !== null ? `NVML utilisation ${b.utilizationPct.toFixed(1)}%` : null,
      b.smActivityPct !== null ? `SM activity ${b.smActivityPct.toFixed(1)}%` : null,
      b.peakMemoryShare !== null ? `peak memory ${pct(b.peakMemoryShare)}` : null,
    ].filter(Boolean);
    if (gpu.length) this.log(gpu.join(', '));
    if (r.gpuTelemetry.available)
      this.log(
        paint.dim(
          `GPU telemetry: ${r.gpuTelemetry.source}, ` +
            r.gpuTelemetry.devices?.map((d) => `${d.index}: ${d.name ?? '?'}${d.gpm ? ' (GPM)' : ''}`).join(', '),
        ),
      );
  }

  /** Step capture: which bucket shapes were replayed (or why not), and the replays' device time. */
  private renderStepCapture(capture: StepCapture, c: NonNullable<StepCapture['summary']>, medianStepMs: number): void {
    const shapes = c.shapes.map(
      (x) =>
        `bucket ${x.shape} ` +
        (x.state === 'replay'
          ? `replayed (${x.programs} ` +
            (`programs` +
              (x.encodeUsPerProgram !== null
                ? `, ${x.encodeUsPerProgram.toFixed(1)} µs of host time encoding ` +
                  (`each` +
                    (x.submitUsPerProgram != null ? ` and ${x.submitUsPerProgram.toFixed(1)} µs submitting it` : ''))
                : '') +
              `)`)
          : `${x.state}${x.reason ? `: ${x.reason}` : ''}`),
    );
    // The alignment forward's capture (runs recorded before it existed have none).
    const alignment = (c.alignment?.shapes ?? []).map(
      (x) =>
        `alignment forward ${x.shape} ` +
        (x.state === 'replay' ? `replayed (${x.programs} programs)` : `${x.state}${x.reason ? `: ${x.reason}` : ''}`),
    );
    this.log(
      c.off
        ? `step capture off: ${c.off}`
        : `step capture: ${capture.replayedSteps} of ${capture.measuredSteps} ` +
            `measured steps replayed; ${[...shapes, ...alignment].join('; ')}`,
    );
    const spans = describeSpans(c.deviceSpans, c.alignment?.deviceSpans, medianStepMs);
    if (spans) this.log(spans);
    else if (c.deviceSpans && !c.deviceSpans.available)
      this.log(paint.dim(`device time of the replays not measured: ${c.deviceSpans.reason}`));
  }

  /** The table of spans (mean, std, min, max, p95, CV, share of the wall time), the step, and the device time. */
  private renderSpans(r: ProfileResult): void {
    const b = r.breakdown;
    const rows = (Object.keys(b.spans) as (keyof typeof b.spans)[]).map((k) =>
      summaryRow(k.replace(/Ms$/, ''), b.spans[k], pct(b.shares[k])),
    );
    rows.push(summaryRow('step (wall)', b.wallMs, '100%'));
    if (b.deviceMs)
      rows.push(
        summaryRow(
          `device compute*`,
          b.deviceMs,
          b.gpuBusySource === 'timestamp-queries' && b.gpuBusyShare !== null ? pct(b.gpuBusyShare) : '',
        ),
      );
    this.log(
      renderTable(['span', 'mean ms', 'std', 'min', 'max', 'p95', 'cv', 'share'], rows, {
        right: [1, 2, 3, 4, 5, 6, 7],
      }).trimEnd(),
    );
    if (b.deviceMs)
      this.log(
        paint.dim(
          `* device compute: ${r.deviceTiming.source} over ${b.deviceTimedSteps} timed ` +
            `step${b.deviceTimedSteps === 1 ? '' : 's'}; it overlaps dispatch and sync, so ` +
            `it is not part of the sum`,
        ),
      );
  }

  /**
   * The GPU programs with the most device time per timed step, and the largest of them by shape: a matmul's with its
   * TFLOP/s and share of the precision's peak.
   */
  private renderGpuPrograms(r: ProfileResult): void {
    const top = r.deviceTiming.programs ?? [];
    if (!top.length) return;
    const total = top.reduce((a, p) => a + p.ms, 0);
    this.log(
      paint.bold(
        `top GPU programs by device time (per timed step; ${top.length} kinds, ${total.toFixed(1)} ms in all):`,
      ),
    );
    const rows = top
      .slice(0, 12)
      .map((p) => [
        p.name,
        f(p.ms),
        pct(p.ms / total),
        p.count.toFixed(0),
        `${((p.ms / p.count) * 1000).toFixed(0)} µs`,
      ]);
    this.log(
      renderTable(['program', 'ms', 'share', 'dispatches', 'mean each'], rows, { right: [1, 2, 3, 4] }).trimEnd(),
    );
    const shapes = r.topKernels.filter((k) => k.shape !== null).slice(0, 10);
    if (!shapes.length) return;
    const peak = r.breakdown.peakTflops ? `% of ${r.breakdown.peakPrecision} peak` : 'of peak (not known)';
    this.log(paint.bold("largest of them by shape (output ← inputs; a matmul's rate from its shape):"));
    const shapeRows = shapes.map((k) => [
      k.name,
      k.shape!,
      f(k.ms),
      pct(k.share),
      k.count.toFixed(0),
      k.tflops === null ? '' : f(k.tflops),
      k.peakShare === null ? '' : pct(k.peakShare),
    ]);
    this.log(
      renderTable(['program', 'shape', 'ms', 'share', 'dispatches', 'TFLOP/s', peak], shapeRows, {
        right: [2, 3, 4, 5, 6],
      }).trimEnd(),
    );
  }

  /** Data-parallel runs: each replica's device, utterances and mean spans per step, and its live tensors. */
  private renderReplicas(replicas: NonNullable<ProfileResult['replicas']>): void {
    this.log(
      paint.bold(
        `${replicas.length} data-parallel replicas (means per step; rank 0's spans are the table above; ` +
          "'of it peers' is sync's wait for the other replicas, readback and exchange are parts of the all-reduce, " +
          "'hidden' its host copies made while the devices still computed the step):",
      ),
    );
    const replicaRows = replicas.map((x) => [
      String(x.rank),
      x.device,
      x.samplesPerStep.toFixed(1),
      f(x.uploadMs),
      f(x.syncMs),
      x.peerWaitMs === null ? '–' : f(x.peerWaitMs),
      f(x.forwardBackwardMs),
      f(x.allReduceMs),
      x.readbackMs === null ? '–' : f(x.readbackMs),
      x.exchangeMs === null ? '–' : f(x.exchangeMs),
      x.overlapMs === null ? '–' : f(x.overlapMs),
      f(x.optimizerMs),
      x.replayedSteps === null ? '–' : `${x.replayedSteps}/${x.steps}`,
      x.tensors.toLocaleString('en-US'),
    ]);
    this.log(
      renderTable(
        [
          'rank',
          'device',
          'utterances',
          'upload',
          'sync',
          'of it peers',
          'fwd/bwd',
          'all-reduce',
          'readback',
          'exchange',
          'hidden',
          'optimizer',
          'replayed',
          'tensors',
        ],
        replicaRows,
        { right: [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] },
      ).trimEnd(),
    );
  }

  /** The numbered verdicts, coloured by grade, with their evidence and the config changes that address them. */
  private renderVerdicts(verdicts: ProfileResult['verdicts']): void {
    for (const v of verdicts) {
      const label =
        v.grade === 'high'
          ? paint.error(`${v.n}. ${v.title}`)
          : v.grade === 'moderate'
            ? paint.warn(`${v.n}. ${v.title}`)
            : paint.ok(`${v.n}. ${v.title}`);
      this.log(`${label} ${paint.dim(`[${v.grade}]`)}\n   ${v.evidence}`);
      for (const a of v.actions)
        this.log(
          `   ${paint.key(`${a.key}: ${a.value}`)} ` +
            (`— ${a.effect}` +
              (a.rule
                ? paint.dim(
                    ` (rule ${a.rule}, ` + `docs/rules.md#${a.rule.replace(/[^a-z0-9]+/gi, '-').toLowerCase()})`,
                  )
                : '')),
        );
    }
  }

  protected override exitCodeFor(r: ProfileResult): number {
    if (this.stopSignal) return SIGNAL_EXIT[this.stopSignal];
    return r.verdicts.some((v) => v.grade === 'high') ? ExitCode.findings : ExitCode.ok;
  }
}
