import { Flags } from '@oclif/core';
import {
  datasetFlag,
  ExitCode,
  onStopSignals,
  plural,
  positiveNumberFlag,
  SIGNAL_EXIT,
  type StopSignal,
  setFlag,
  shellQuote,
  XttsCommand,
} from '@xtts/core';
import { loadConfigOrThrow, presetPath, BACKENDS } from '@xtts/core/config';
import { describeSpans } from '@xtts/core/profile';
import { etaText, paint, ProgressLine } from '@xtts/core/render';
import type { TrainResult, VocoderTrainResult } from '@xtts/core/training';

/** How a run ended, for its summary line. */
const STOPPED: Record<TrainResult['stoppedBy'], string> = {
  max_steps: 'reached max_steps',
  time_limit: 'stopped at the time limit (--max-minutes)',
  early_stopping: 'stopped early: validation stopped improving',
  interrupted: 'stopped by a signal',
  non_finite: 'stopped: losses were not finite',
};

/** This command line again with --resume (its config, --set and --output as given), quoted for a POSIX shell. */
function resumeCommand(): string {
  return `xtts ${[...process.argv.slice(2).filter((a) => a !== '--resume'), '--resume'].map(shellQuote).join(' ')}`;
}

export default class Train extends XttsCommand<TrainResult | VocoderTrainResult> {
  static override summary =
    'Train (or resume) an XTTS-style model; with no arguments, the tiny model on the bundled quickstart data.';

  static override description =
    'Prepares the dataset (cached by content hash), picks the backend (--backend ' +
    'auto says which and why), and trains with AdamW, the configured schedule, ' +
    'clipping and accumulation. Every log_every steps the loss is read back and a ' +
    'progress line shows loss, samples/s and the share of time spent waiting for ' +
    'data; checkpoints are written atomically (keep-last-N plus best); every ' +
    'eval_every steps the eval sentences are synthesised to WAV (Griffin-Lim) beside ' +
    "a PNG of the mel. Metrics and per-step spans go to the run folder's run.sqlite " +
    'and metrics.jsonl.\n' +
    '\n' +
    'Ctrl-C (SIGINT), SIGTERM (docker stop, Kubernetes, Slurm preemption) and SIGHUP ' +
    '(a closed terminal) finish the current step, write a checkpoint and exit with ' +
    '130, 143 or 129, within --stop-timeout seconds; a second signal exits at once. ' +
    '--resume continues the same loss curve.\n' +
    '\n' +
    'One run per folder: a folder that holds another run is refused unless --resume ' +
    'continues it; one that holds anything xtts did not write is refused. With ' +
    "--dataset and no --output the run goes to the config's output folder with the " +
    "dataset folder's name appended (runs/quickstart-LJSpeech-1.1).";

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --config configs/small.yaml --dataset /data/LJSpeech-1.1 --backend webgpu',
    '<%= config.bin %> <%= command.id %> --output runs/small --resume',
    '<%= config.bin %> <%= command.id %> --config configs/small.yaml --gpus all',
    '<%= config.bin %> <%= command.id %> --gpus cpu:2 --backend cpu',
  ];

  static override flags = {
    config: Flags.string({
      char: 'c',
      summary: 'Training config (default: configs/quickstart.yaml).',
      helpValue: 'FILE',
      env: 'XTTS_CONFIG',
    }),
    set: setFlag,
    dataset: datasetFlag,
    backend: Flags.string({
      summary: 'TensorFlow.js backend (instead of device.backend).',
      options: [...BACKENDS],
      env: 'XTTS_BACKEND',
    }),
    'max-steps': Flags.integer({
      summary:
        'Stop at this optimizer step (instead of training.max_steps); the learning-rate schedule keeps ' +
        'training.max_steps (--set training.max_steps=N changes both).',
      min: 1,
    }),
    'max-minutes': positiveNumberFlag(
      '--max-minutes',
      'minutes',
      'Also stop after the step that passes this many minutes of training (data ' +
        'preparation not counted); the learning-rate schedule still follows max_steps.',
    ),
    output: Flags.string({
      char: 'o',
      summary: 'Run folder (instead of output.dir).',
      helpValue: 'DIR',
      env: 'XTTS_OUTPUT',
    }),
    resume: Flags.boolean({ summary: "Continue from the run folder's latest checkpoint.", default: false }),
    strict: Flags.boolean({
      summary: 'Refuse a dataset with any unusable row (the first is named) instead of training on the rest.',
      default: false,
    }),
    'stop-timeout': Flags.integer({
      summary:
        'After SIGINT, SIGTERM or SIGHUP: seconds to finish the step and write the ' +
        'checkpoint before exiting without it (under the grace time of docker stop -t, ' +
        'Kubernetes or Slurm).',
      helpValue: 'SECONDS',
      min: 1,
      max: 3600,
      default: 25,
      env: 'XTTS_STOP_TIMEOUT',
    }),
    gpus: Flags.string({
      summary:
        'Data-parallel training (instead of device.gpus): `all`, adapter indices or ' +
        'names (`0,1`; `0,0`: two replicas taking turns on one GPU, a rehearsal), or `cpu:N` CPU replicas. ' +
        'The batch size stays the global batch.',
      helpValue: 'DEVICES',
      env: 'XTTS_GPUS',
    }),
  };

  /** The signal that stopped the run, if one did. */
  private stopSignal: StopSignal | undefined;

  protected async execute(): Promise<TrainResult | VocoderTrainResult> {
    const { flags } = await this.parse(Train);
    const { trainTask, parseGpusFlag } = await import('@xtts/core/training');
    const set =
      flags.gpus === undefined ? flags.set : [...flags.set, `device.gpus=${JSON.stringify(parseGpusFlag(flags.gpus))}`];
    const loaded = loadConfigOrThrow(flags.config ?? presetPath('quickstart'), { set });
    const human = !this.jsonEnabled();
    const bars = {
      text: new ProgressLine('text    ', 'rows'),
      features: new ProgressLine('features', 'clips'),
      train: new ProgressLine('train   ', 'steps'),
    };
    const control = { stop: false };
    let stepsDone = 0;
    /** Seconds a step took over the last log interval (the log line's figure), for the bar. */
    let loggedStepS: number | undefined;
    let stoppedByOutput = false;
    const onSignal = (signal: StopSignal) => {
      if (control.stop) {
        // A closed terminal's SIGHUP that comes after its failed writes began the stop is the same event.
        if (signal === 'SIGHUP' && stoppedByOutput) return;
        this.exitForSignal(signal, 'second signal: exiting now, without a checkpoint of the current step');
      }
      this.stopSignal = signal;
      // Nothing trained yet in this process: nothing to save (the feature cache commits row by row).
      if (stepsDone === 0) this.exitForSignal(signal, 'no step has been trained yet: exiting now');
      control.stop = true;
      this.tellSignal(
        signal,
        `finishing this step and writing a checkpoint (at most ${flags['stop-timeout']} ` +
          `s; a second signal quits at once)`,
      );
      setTimeout(() => {
        this.exitForSignal(
          signal,
          `no checkpoint within --stop-timeout ${flags['stop-timeout']} s: exiting without ` +
            `one (--resume continues from the last checkpoint)`,
        );
      }, flags['stop-timeout'] * 1000).unref();
    };
    const stopListening = onStopSignals(onSignal);
    // Output that can no longer be written (a closed terminal; a pipe whose reader is gone: `| head`, a quit pager, a
    // killed tee) fails each later write: never the run's end. As with a closed terminal (SIGHUP), the run finishes
    // its step and writes its checkpoint; what it would print is lost.
    let outputGone = false;
    const onOutputError = () => {
      if (outputGone) return;
      outputGone = true;
      // After a signal (a closed terminal's SIGHUP; Ctrl-C that also ended `| tee`) the stop is under way: a failed
      // write of its message must not read as a second signal.
      if (control.stop) return;
      stoppedByOutput = true;
      onSignal('SIGHUP');
    };
    for (const s of [process.stdout, process.stderr]) s.on('error', onOutputError);
    try {
      return await trainTask({
        loaded,
        datasetDir: flags.dataset,
        backend: flags.backend as never,
        maxSteps: flags['max-steps'],
        maxMinutes: flags['max-minutes'],
        outputDir: flags.output,
        resume: flags.resume,
        strict: flags.strict,
        control,
        onPrepareProgress: human ? (p) => bars[p.stage].update(p.done, p.total, p.elapsedMs) : undefined,
        onMessage: human
          ? (m) => {
              bars.text.finish();
              bars.features.finish();
              bars.train.clear();
              process.stderr.write(`${m}\n`);
            }
          : // --json: the run's warnings (the dataset's, the checkpoints' disk) go into the envelope's warnings.
            (m) => {
              if (m.startsWith('warning: ')) this.addWarning(m.slice('warning: '.length));
            },
        // On a terminal a bar with the ETA stays under the log lines; pipes and --json get the lines alone.
        // The bar's rate and ETA are the last log line's (its recent steps), once there is one.
        onStep: (s) => {
          stepsDone = s.step - s.startStep;
          if (human) bars.train.update(s.step - s.startStep, s.maxSteps - s.startStep, s.elapsedMs, loggedStepS);
        },
        onProgress: human
          ? (p) => {
              loggedStepS = p.stepMs / 1000;
              bars.train.clear();
              process.stderr.write(
                `step ${String(p.step).padStart(String(p.maxSteps).length)}/${p.maxSteps}  ` +
                  `loss ${p.loss.toFixed(4)}  ` +
                  `lr ${p.learningRate.toExponential(2)}  ${p.samplesPerS.toFixed(1)} ` +
                  `samples/s  ${p.stepMs.toFixed(0)} ms/step  data ` +
                  (`wait ${(p.dataWaitShare * 100).toFixed(1)}%` +
                    (p.gpuUtilizationPct !== undefined ? `  GPU ${p.gpuUtilizationPct.toFixed(0)}%` : '') +
                    (p.nonFiniteSteps ? `  ${p.nonFiniteSteps} non-finite` : '') +
                    `  `) +
                  `ETA ${etaText(p.etaS)}\n`,
              );
            }
          : undefined,
      });
    } finally {
      bars.train.finish();
      stopListening();
      outputGone = true; // the run is over: a later failed write (the summary's) is only lost
    }
  }

  protected render(r: TrainResult | VocoderTrainResult): void {
    if (r.task === 'vocoder') {
      this.renderVocoder(r);
      return;
    }
    this.log(
      paint.bold(
        `trained ${plural(r.steps - r.startStep, 'step')} (${r.startStep} -> ${r.steps}) ` +
          `on ${r.backend.backend}; ${STOPPED[r.stoppedBy]}`,
      ),
    );
    const first = r.lossCurve[0];
    const last = r.lossCurve.at(-1);
    if (first && last)
      this.log(`loss ${first.loss.toFixed(4)} (step ${first.step}) -> ${last.loss.toFixed(4)} (step ${last.step})`);
    if (r.bestValidationLoss !== null) this.log(`best validation loss ${r.bestValidationLoss.toFixed(4)}`);
    this.log(
      `${(r.parameters / 1e6).toFixed(2)} M parameters; median ` +
        `step ${r.timing.stepMsMedian.toFixed(0)} ms, ${r.timing.samplesPerS.toFixed(1)} ` +
        (`samples/s, ${r.timing.kernelsPerStep} ` +
          (r.timing.replayedShare > 0.5 ? 'programs/step replayed' : 'kernels/step') +
          `, `) +
        `data wait ${(r.timing.dataWaitShare * 100).toFixed(1)}%`,
    );
    const g = r.hostGc;
    this.log(
      `host garbage collection: ${g.full.count} full (${g.full.ms.toFixed(1)} ms, ` +
        `longest ${g.full.longestMs.toFixed(1)} ms), ${g.minor.count} young ` +
        `(${g.minor.ms.toFixed(1)} ms): ${(g.share * 100).toFixed(1)}% of the run's ` +
        `wall, when the trainer's thread issued nothing`,
    );
    const u = r.batchUploads;
    if (u && u.staged + u.missed > 0)
      this.log(
        `batch uploads: ${u.staged} through reused staging buffers, ${u.missed} through ` +
          `writeBuffer (no staging buffer was free)`,
      );
    const spans = r.stepCapture
      ? describeSpans(r.stepCapture.deviceSpans, r.stepCapture.alignment?.deviceSpans, r.timing.stepMsMedian)
      : null;
    if (spans) this.log(spans);
    if (r.nonFiniteSteps) this.log(paint.warn(`${r.nonFiniteSteps} steps had a NaN/Inf loss and were skipped`));
    this.log(`run folder: ${r.runDir} (checkpoints/, eval/, run.sqlite, metrics.jsonl)`);
    this.renderResume(r);
    if (r.evalFiles.length)
      this.log(
        `eval audio: ${r.evalFiles
          .filter((f) => f.endsWith('.wav'))
          .slice(-3)
          .join(', ')}`,
      );
  }

  private renderVocoder(r: VocoderTrainResult): void {
    this.log(
      paint.bold(
        `trained the vocoder ${plural(r.steps - r.startStep, 'step')} (${r.startStep} -> ${r.steps}) ` +
          `on ${r.backend.backend}; ${STOPPED[r.stoppedBy]}`,
      ),
    );
    const first = r.lossCurve[0];
    const last = r.lossCurve.at(-1);
    if (first && last)
      this.log(`loss ${first.loss.toFixed(4)} (step ${first.step}) -> ${last.loss.toFixed(4)} (step ${last.step})`);
    const v = r.validation.at(-1);
    if (v) this.log(`validation at step ${v.step}: loss ${v.loss.toFixed(4)}, log-mel L1 ${v.mel.toFixed(4)}`);
    this.log(
      `${(r.parameters / 1e6).toFixed(2)} M parameters; ${r.trainClips} clips (${r.trainHours.toFixed(2)} h); ` +
        `step ${r.timing.stepMsMean.toFixed(1)} ms (mean; median ${r.timing.stepMsMedian.toFixed(1)} ms), ` +
        `${r.timing.audioSecondsPerS.toFixed(1)} s of audio/s`,
    );
    if (r.nonFiniteSteps) this.log(paint.warn(`${r.nonFiniteSteps} logged steps had a NaN/Inf loss and were skipped`));
    this.log(`run folder: ${r.runDir} (checkpoints/, eval/, run.sqlite, metrics.jsonl)`);
    this.renderResume(r);
    this.log(`use it: xtts synthesize --checkpoint ACOUSTIC_RUN --vocoder ${r.runDir} --text "..." --out speech.wav`);
  }

  /** A run stopped before max_steps, or asked for no steps: its last checkpoint, and how to go on. */
  private renderResume(r: TrainResult | VocoderTrainResult): void {
    const last = r.checkpoints.at(-1);
    if (r.stoppedBy === 'interrupted' || r.stoppedBy === 'time_limit')
      this.log(`${last ? `last checkpoint: ${last}; ` : 'no checkpoint was written; '}continue: ${resumeCommand()}`);
    if (r.steps === r.startStep && r.startStep > 0 && r.stoppedBy === 'max_steps')
      this.log(
        paint.warn(
          `the run was at step ${r.startStep} already: nothing to train up to --max-steps / training.max_steps; ` +
            'raise it to train on',
        ),
      );
  }

  protected override exitCodeFor(r: TrainResult | VocoderTrainResult): number {
    if (this.stopSignal) return SIGNAL_EXIT[this.stopSignal];
    if (r.stoppedBy === 'interrupted') return ExitCode.interrupted;
    return r.stoppedBy === 'non_finite' ? ExitCode.findings : ExitCode.ok;
  }
}
