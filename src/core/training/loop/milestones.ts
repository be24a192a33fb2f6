// What a run does between steps at its intervals: validation passes (and early stopping), checkpoints
// (the best one marked), eval synthesis. With device.data_device set, validation and eval run on that
// device from weight snapshots (side-device.ts) and their results land here when they come back.
import { basename, join } from 'node:path';
import type { XttsConfig } from '../../config/index.js';
import type { PreparedDataset } from '../../data/index.js';
import { XttsError } from '../../errors.js';
import type { XttsModel } from '../../model/index.js';
import type { CheckpointState, CheckpointStore } from '../checkpoint.js';
import { type LoaderCommon, synthesizeEval, validate, type ValidationResult } from '../evaluation.js';
import type { AdamW } from '../optim/adamw.js';
import type { ReplicaGroup } from '../parallel/group.js';
import { SideDevice, type SideResult } from '../side-device.js';
import { speakerVoices } from '../voices.js';
import { toArrays, toArraysDisposing } from './host-arrays.js';
import type { RunLog } from './run-log.js';
import type { RunState } from './types.js';
import { loaderItems } from '../../data/index.js';

/** A checkpoint's folder name. */
export const stepName = (at: number) => `step-${String(at).padStart(8, '0')}`;

export interface MilestonesOptions {
  runId: string;
  runDir: string;
  state: RunState;
  model: XttsModel;
  optimizer: AdamW;
  data: PreparedDataset;
  config: XttsConfig;
  sizes: CheckpointState['sizes'];
  store: CheckpointStore;
  log: RunLog;
  say: (m: string) => void;
  /** Where the run resumed: its best validation loss and the validations since it. */
  resumed: { bestValidationLoss: number | null; validationsWithoutImprovement: number };
  /** The validation loader's settings (shared with training). */
  bucketOptions: Parameters<typeof validate>[3];
  common: LoaderCommon;
  /** Profiling: no checkpoints, validation or eval audio. */
  stepsOnly: boolean;
}

export class Milestones {
  bestValidationLoss: number | null;
  readonly checkpoints: string[] = [];
  /** Replicas hold rank 0's weights at every checkpoint: set once they run. */
  group?: ReplicaGroup;
  private validationsWithoutImprovement: number;
  private side?: SideDevice;
  /** The duration predictor's squared log error of the last validation. */
  private validationDurationError = 0;
  private readonly unseenSymbols: string[];

  constructor(private readonly o: MilestonesOptions) {
    this.bestValidationLoss = o.resumed.bestValidationLoss;
    this.validationsWithoutImprovement = o.resumed.validationsWithoutImprovement;
    this.unseenSymbols = o.data.tokenizer.unseenIn(o.data.train.map((i) => i.tokens));
  }

  /** device.data_device: starts the side worker that validates and evaluates while training goes on; its device. */
  async startSide(ref: number | string): Promise<string> {
    const { config, sizes, data, bucketOptions, common } = this.o;
    this.side = await SideDevice.start({
      ref,
      config,
      sizes,
      data,
      bucketOptions,
      common,
      onResult: (r) => this.onSideResult(r),
    });
    return this.side.device;
  }

  /** The validation, checkpoint and eval due after step `state.step`. */
  async afterStep(): Promise<void> {
    if (this.o.stepsOnly) return;
    const { config, data, model, state } = this.o;
    const t = config.training;
    const step = state.step;
    if (step % t.validate_every === 0 && data.validation.length > 0) {
      if (this.side) {
        // Marked best when its validation, running on the data device, says so.
        await this.saveCheckpoint(false);
        await this.side.submit({ type: 'validate', step, weights: await toArrays(model.getWeights()) });
      } else {
        let loss: Awaited<ReturnType<typeof validate>>;
        try {
          loss = await validate(model, data, config, this.o.bucketOptions, this.o.common, loaderItems);
        } catch (e) {
          // The steps trained since the last checkpoint are kept before the error ends the run (the error said is the
          // validation's, whatever became of the checkpoint).
          await this.saveCheckpoint(false).catch((c: Error) =>
            this.o.say(`warning: step ${step}: no checkpoint after the failed validation (${c.message})`),
          );
          throw e;
        }
        await this.saveCheckpoint(this.recordValidation(step, loss));
      }
    } else if (step % t.checkpoint_every === 0) await this.saveCheckpoint(false);
    if (step % t.eval_every === 0 && state.stoppedBy !== 'non_finite') await this.evaluate();
  }

  /**
   * The run's end: the data device's queued validations land first, then (unless the state diverged)
   * a checkpoint and an eval of the last step where the intervals made none.
   */
  async finish(startStep: number): Promise<void> {
    const { state, log, stepsOnly } = this.o;
    await this.side?.drain();
    // A run none of whose steps made an update trained nothing, whatever stopped it.
    if (state.step > startStep && log.nonFiniteSteps === state.step - startStep) state.stoppedBy = 'non_finite';
    if (stepsOnly || state.step <= startStep) return;
    log.writeLossCurve();
    if (state.stoppedBy === 'non_finite') return;
    if (!this.checkpoints.some((c) => basename(c) === stepName(state.step))) await this.saveCheckpoint(false);
    const evaluated = state.step % this.o.config.training.eval_every === 0;
    // The checkpoint may have found the state diverged (saveCheckpoint sets it): read again.
    const stoppedBy = state.stoppedBy as RunState['stoppedBy'];
    if (stoppedBy !== 'interrupted' && stoppedBy !== 'non_finite' && !evaluated) await this.evaluate();
    await this.side?.drain();
  }

  /** Stops the data device's worker. */
  async close(): Promise<void> {
    await this.side?.close();
  }

  /** The duration predictor's squared log error, for synthesis: from the last validation, else the training loss. */
  private get durationVariance(): number {
    return this.o.data.validation.length > 0 ? this.validationDurationError : this.o.log.trainingDurationError;
  }

  private async evaluate(): Promise<void> {
    const { runDir, model, data, config, say, log, state } = this.o;
    const step = state.step;
    const dir = join(runDir, 'eval', stepName(step));
    if (this.side)
      return this.side.submit({
        type: 'eval',
        step,
        weights: await toArrays(model.getWeights()),
        dir,
        logDurationVariance: this.durationVariance,
      });
    log.publishEval(
      step,
      await synthesizeEval(model, data, config, dir, this.durationVariance, say, (name, value) =>
        log.metric(step, name, value),
      ),
    );
  }

  /** A validation pass's figures, at the step whose weights it measured; whether it is the best so far. */
  private recordValidation(at: number, v: ValidationResult): boolean {
    const { log, state, say } = this.o;
    this.validationDurationError = v.durationVariance;
    log.validation.push({ step: at, loss: v.loss });
    log.metric(at, 'loss/val', v.loss);
    log.metric(at, 'align/duration_error', v.durationError);
    log.metric(at, 'align/length_ratio', v.lengthRatio);
    log.metric(at, 'align/diagonal', v.diagonal);
    const improved = this.bestValidationLoss === null || v.loss < this.bestValidationLoss;
    if (improved) {
      this.bestValidationLoss = v.loss;
      this.validationsWithoutImprovement = 0;
    } else this.validationsWithoutImprovement++;
    log.writeLossCurve();
    const where = this.side ? ` (on ${this.side.device}, ${state.step - at} steps later)` : '';
    const durations =
      `durations: log error ${v.durationError.toFixed(3)}, predicted/found ` + `length ${v.lengthRatio.toFixed(2)}`;
    say(
      `step ${at}: validation ` +
        `loss ${v.loss.toFixed(4)}${improved ? ' (best)' : ''}; ${durations}; alignment ` +
        `on the diagonal ${(v.diagonal * 100).toFixed(0)}%${where}`,
    );
    const patience = this.o.config.training.early_stopping_patience;
    if (patience > 0 && this.validationsWithoutImprovement >= patience) state.stoppedBy = 'early_stopping';
    return improved;
  }

  private onSideResult(r: SideResult): void {
    const { log, say, store } = this.o;
    if (r.type === 'evaluated') {
      for (const m of r.messages) say(`${m} (step ${r.step}, on ${this.side?.device}, ${(r.ms / 1000).toFixed(1)} s)`);
      for (const x of r.metrics) log.metric(r.step, x.name, x.value);
      log.publishEval(r.step, r.files);
      return;
    }
    // Its checkpoint was written when the snapshot was taken; it becomes the best now, if it is.
    if (this.recordValidation(r.step, r.result)) {
      const dir = this.checkpoints.find((c) => basename(c) === stepName(r.step));
      if (!dir || !store.markBest(dir))
        say(
          `step ${r.step}'s checkpoint, the best so far, was rotated away before its ` +
            `validation finished (raise training.keep_checkpoints)`,
        );
    }
  }

  private async saveCheckpoint(best: boolean): Promise<void> {
    const { model, optimizer, data, config, store, state, say } = this.o;
    // Replicas update from the same sums and must hold rank 0's weights: checked before they are saved.
    await this.group?.checkInSync(state.step);
    const ckpt: CheckpointState = {
      runId: this.o.runId,
      step: state.step,
      position: state.position,
      dropoutRng: model.dropout.rngState,
      bestValidationLoss: this.bestValidationLoss,
      validationsWithoutImprovement: this.validationsWithoutImprovement,
      tokenizer: data.tokenizer.toJSON(),
      tokenizerIdentity: data.tokenizer.identity(),
      stats: { mean: [...data.stats.mean], std: [...data.stats.std] },
      speakers: data.speakers,
      languages: data.languages,
      sizes: this.o.sizes,
      unseenSymbols: this.unseenSymbols,
      logDurationVariance: this.durationVariance,
      config,
    };
    let dir: string;
    try {
      const arrays = {
        weights: await toArrays(model.getWeights()),
        optimizer: await toArraysDisposing(optimizer.getState()),
        state: ckpt,
        // Each trained speaker's voice with these weights: `synthesize --speaker` reads it. Without them (their clips
        // unreadable: a feature cache removed under the run) the checkpoint keeps the run's work all the same.
        voices: await speakerVoices(model, data, config).catch((e: Error) => {
          say(
            `warning: step ${state.step}: the trained voices were not computed (${e.message}); the checkpoint holds ` +
              'the weights without them (synthesize --reference clones a voice from a clip)',
          );
          return [];
        }),
      };
      // The steps' records first (they are written at each logged step): a process killed after the checkpoint
      // must not leave run.sqlite without the steps it covers, a gap no resume fills.
      this.o.log.db.flush();
      dir = store.save(state.step, arrays, { keep: config.training.keep_checkpoints, best });
    } catch (e) {
      if (!(e instanceof XttsError && e.code === 'CHECKPOINT_NOT_FINITE')) throw e;
      // Skipped updates keep weights finite; this is a diverged state all the same: it is not written.
      state.stoppedBy = 'non_finite';
      say(
        `step ${state.step}: ${e.message.replace(/^.*?: /, '')}; no checkpoint is ` +
          `written, the run stops (the last checkpoint, ${store.latest() ?? 'none'}, ` +
          `stands)`,
      );
      return;
    }
    this.checkpoints.push(dir);
  }
}
