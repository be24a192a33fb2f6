// The training step with capture and replay (device.step_capture): on the webgpu backend each bucket
// shape's step is planned once (its dropout calls), recorded twice (two eager steps whose programs
// must agree) and from then on replayed (backend/step-capture.ts). Per step, the inputs of a replay
// are the batch, its alignment, the dropout offsets (drawn beforehand from the same generator, in the
// same order, so an eager and a replayed run draw the same masks) and the optimizer's three per-step
// scalars. With gradient accumulation each kind of micro-batch (first, between, last) is captured
// apart. Anything that makes a step unreplayable is recorded with its reason and that shape steps
// eagerly; weights assigned between replays (loaded, or by an eager timed step) are bound again, and a
// replay whose other tensors were disposed is recorded again.
//
// A data-parallel replica's steps (`replica`) are captured the same way: forward, backward and the sums
// carried in the optimizer's variables, with the whole batch's loss denominators as one more input and
// the replica's rows of the batch in the shape's key (its dropout masks are those rows of the whole
// batch's); its update, from the gradients summed over every replica, is captured apart (applySums).
import * as tf from '@tensorflow/tfjs-core';
import type { GpuDevice } from '../../backend/index.js';
import { type DeviceSpans, type OnReady, SpanTimer } from '../../backend/index.js';
import {
  advanceCapture,
  arenaBytesOf,
  type CallCaptureSummary,
  CallReplayer,
  type CaptureState,
  dropStaleCapture,
  recordStep,
  type ShapeCaptureSummary,
  summarizeShapes,
} from '../../backend/index.js';
import type { LossDenominators, ModelInputs } from '../../model/index.js';
import type { LossConfig } from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import type { DropoutCall } from '../../model/index.js';
import { summarize } from '../../util/index.js';
import type { AdamW, ApplyResult } from './adamw.js';
import { type StepResult, trainStep, type TrainStepOptions } from './train-step.js';

export type StepCaptureMode = 'auto' | 'off';

/**
 * What a step call is told: the timer's boundary, whether it is timed, a replica's whole-batch denominators, and on
 * its last micro-batch its exchange buckets (TrainStepOptions.exchange) with, for a replay, `onReady`: told as each
 * bucket is made in the buffer it is made in, before the rest of the step has run (an eager step's buckets are the
 * result's, once it is issued).
 */
export type StepCallOptions = Pick<TrainStepOptions, 'onGradients' | 'exchange'> & {
  timed?: boolean;
  whole?: LossDenominators;
  onReady?: OnReady;
};

interface ShapeState extends CaptureState {
  calls?: DropoutCall[];
}

/** What the run records about capture: per bucket shape, its state and why. */
export interface StepCaptureSummary {
  mode: StepCaptureMode;
  /** Why no step is captured at all (capture off, another backend), or null. */
  off: string | null;
  /** Training calls replayed and run eagerly (micro-batches, when a run accumulates gradients). */
  replayedSteps: number;
  eagerSteps: number;
  /**
   * encodeUsPerProgram: the median replay's host time encoding the step (its inputs written, every
   * program and copy encoded; the submit, where some drivers run the work, excluded) per program;
   * submitUsPerProgram: the median replay's host time in its submits (finish and queue.submit: Dawn
   * records the driver's commands there) per program; rebinds: replays that bound weights assigned
   * since the one before.
   */
  shapes: (ShapeCaptureSummary & {
    encodeUsPerProgram: number | null;
    submitUsPerProgram: number | null;
    rebinds: number;
  })[];
  /**
   * The alignment forward each batch runs before its step (its scores for the search), per batch shape; null with
   * capture off.
   */
  alignment: CallCaptureSummary | null;
  /** A data-parallel replica's updates from the summed gradients, per micro-batch count; absent on one device. */
  updates?: CallCaptureSummary | null;
  /**
   * The replayed steps' device time from timestamps at their passes' edges (backend/replay-spans.ts):
   * medians of a step's span, of its passes' own time and of the device time between steps; or why
   * there are none. Absent in runs recorded before xtts measured it.
   */
  deviceSpans?: DeviceSpans;
}

/** Why this run's steps cannot be captured, or null when they can. */
export function captureUnavailable(mode: StepCaptureMode, backend: string): string | null {
  if (mode === 'off') return 'device.step_capture is off';
  if (backend !== 'webgpu')
    return `the ${backend} backend has no per-program host cost to save (capture is for webgpu)`;
  return null;
}

export class StepReplayer {
  private readonly shapes = new Map<string, ShapeState>();
  private replayed = 0;
  private eager = 0;
  /** The replays' timestamps at their passes' edges. */
  private readonly spans = new SpanTimer();
  readonly off: string | null;
  /** The last step: its bucket shape, whether it was replayed, and the programs it replayed. */
  last: { shape: string; replayed: boolean; programs: number } | null = null;
  /** Told when a shape is captured, refused or recorded again (the trainer prints it). */
  onChange?: (shape: string, state: ShapeState) => void;
  /**
   * The alignment forward of each batch (the text encoder and the scores the search reads back),
   * captured per batch shape like the step: null with capture off.
   */
  readonly alignment: CallReplayer | null;
  /** A replica's update (applySums), captured per micro-batch count: null on one device or with capture off. */
  readonly updates: CallReplayer | null;

  constructor(
    private readonly model: XttsModel,
    private readonly optimizer: AdamW,
    private readonly loss: LossConfig,
    private readonly mode: StepCaptureMode,
    private readonly accumulate: number,
    /** The steps of a data-parallel replica: no update inside them (applySums makes it), whole-batch denominators. */
    private readonly replica = false,
  ) {
    this.off = captureUnavailable(mode, tf.getBackend());
    this.alignment = this.off === null ? new CallReplayer(tf) : null;
    this.updates = this.off === null && replica ? new CallReplayer(tf) : null;
  }

  /**
   * One training step (forward, backward, update) of an aligned batch. `timed`: the caller measures
   * this step's programs (tf.time): it runs eagerly.
   */
  step(batch: ModelInputs, opts: StepCallOptions = {}): StepResult {
    const r = this.route(batch, opts);
    return 'result' in r ? r.result : this.replayStep(r.replay, batch, opts);
  }

  /**
   * step, with a replay submitted in `parts` command buffers and the event loop let run between them
   * (StepCapture.replayInParts): what resolves meanwhile, such as the next batch's alignment scores
   * going to the search's worker threads, then overlaps the step's encoding. Other steps as in step.
   */
  async stepInParts(batch: ModelInputs, parts: number, opts: StepCallOptions = {}): Promise<StepResult> {
    const r = this.route(batch, opts);
    if ('result' in r) return r.result;
    this.timeSpans(r.replay);
    const { made, all } = this.inputs(r.replay, batch, opts);
    let out: tf.Tensor[];
    try {
      out = await r.replay.capture!.replayInParts(all, parts);
    } finally {
      tf.dispose(made);
    }
    return this.replayResult(r.replay, out, opts);
  }

  /**
   * A replica's update from the gradient and loss summed over every replica (the caller's tensors, not taken),
   * replayed from its capture per micro-batch count once two of its calls agree.
   */
  applySums(grad: tf.Tensor1D, loss: tf.Scalar): { applied: ApplyResult; replayed: boolean } {
    const { optimizer } = this;
    const scalars = tf.tensor1d(optimizer.updateScalars().values);
    try {
      if (!this.updates) return { applied: optimizer.applySums(grad, loss, scalars), replayed: false };
      let applied: ApplyResult | undefined;
      const out = this.updates.run(`after ${optimizer.pendingMicroBatches}`, [grad, loss, scalars], () => {
        applied = optimizer.applySums(grad, loss, scalars);
        return [applied.gradNorm, applied.finite];
      });
      if (applied) return { applied, replayed: false };
      const [gradNorm, finite] = out as tf.Scalar[];
      return { applied: { gradNorm, finite, learningRate: optimizer.countReplayedUpdate() }, replayed: true };
    } finally {
      scalars.dispose();
    }
  }

  /** An eager, planned or recorded step run now (its result), or the shape whose replay is to run. */
  private route(batch: ModelInputs, opts: StepCallOptions): { result: StepResult } | { replay: ShapeState } {
    if (this.replica !== (opts.whole !== undefined))
      throw new Error(this.replica ? "a replica's step without the whole batch's denominators" : 'denominators given');
    const key = shapeKey(batch) + this.rowsOf() + this.phaseOf() + (opts.exchange ? ' exchanged' : '');
    this.last = { shape: key, replayed: false, programs: 0 };
    if (this.off !== null || opts.timed) return { result: this.eagerStep(batch, opts) };
    let s = this.shapes.get(key);
    if (!s) {
      s = { phase: 'plan', recaptures: 0 };
      this.shapes.set(key, s);
    }
    if (s.phase === 'refused') return { result: this.eagerStep(batch, opts) };
    if (s.phase === 'plan') {
      const { result, calls } = this.model.dropout.recordPlan(() => this.eagerStep(batch, opts));
      s.calls = calls;
      s.phase = 'record';
      return { result };
    }
    if (s.phase === 'replay') {
      if (!dropStaleCapture(s)) return { replay: s };
      this.onChange?.(key, s);
    }
    return { result: this.recordedStep(key, s, batch, opts) };
  }

  /**
   * With gradient accumulation a step's micro-batches dispatch three different sequences: the first
   * (its sums into the optimizer's variables), the ones between (added to them), the last (added,
   * then the update); each is captured on its own.
   */
  private phaseOf(): string {
    const n = this.accumulate;
    if (n <= 1) return '';
    const k = this.optimizer.pendingMicroBatches;
    // A replica's last micro-batch only accumulates, as the ones before it.
    if (k === 0) return ' (first of ' + n + ')';
    return k === n - 1 && !this.replica ? ' (update)' : ' (accumulate)';
  }

  /** A replica's rows of the batch (its dropout masks' place in the whole batch's follows them). */
  private rowsOf(): string {
    const rows = this.model.dropout.shard;
    return rows ? ` rows ${rows.start}–${rows.start + rows.size} of ${rows.total}` : '';
  }

  private stepOptions(opts: StepCallOptions): TrainStepOptions {
    return {
      accumulate: this.accumulate,
      onGradients: opts.onGradients,
      ...(this.replica ? { deferUpdate: true, whole: opts.whole, exchange: opts.exchange } : {}),
    };
  }

  private eagerStep(batch: ModelInputs, opts: StepCallOptions): StepResult {
    this.eager++;
    return trainStep(this.model, this.optimizer, batch, this.loss, this.stepOptions(opts));
  }

  /**
   * The step's per-step inputs, in the order a recording binds them: the batch, its alignment, the dropout offsets
   * and the update's scalars (a replica's step: the whole batch's denominators instead); `made`: the tensors made
   * here.
   */
  private inputs(
    s: ShapeState,
    batch: ModelInputs,
    opts: StepCallOptions,
  ): { offsets: tf.Tensor1D; scalars?: tf.Tensor1D; made: tf.Tensor[]; all: tf.Tensor[] } {
    const offsets = tf.tensor1d(this.model.dropout.drawOffsets(s.calls!), 'int32');
    const scalars = this.replica ? undefined : tf.tensor1d(this.optimizer.updateScalars().values);
    const b = batch;
    return {
      offsets,
      scalars,
      made: scalars ? [offsets, scalars] : [offsets],
      all: [
        b.tokens,
        b.textLengths,
        b.languages,
        b.mel,
        b.melLengths,
        b.refMel,
        b.refLengths,
        b.refPitch,
        ...(b.melPitch ? [b.melPitch] : []),
        ...(b.refRate ? [b.refRate] : []),
        b.alignment.steps,
        b.alignment.durations,
        offsets,
        (scalars ?? opts.whole)!,
      ],
    };
  }

  private recordedStep(key: string, s: ShapeState, batch: ModelInputs, opts: StepCallOptions): StepResult {
    this.eager++;
    const { offsets, scalars, made, all } = this.inputs(s, batch, opts);
    let result: StepResult | undefined;
    try {
      const { recording } = recordStep(tf, all, () => {
        result = this.model.dropout.useOffsets(s.calls!, offsets, () =>
          trainStep(this.model, this.optimizer, batch, this.loss, {
            ...this.stepOptions(opts),
            ...(scalars ? { updateScalars: scalars } : {}),
          }),
        );
        return [
          result.total,
          result.melPre,
          result.melPost,
          result.alignedText,
          result.duration,
          ...(result.pitch ? [result.pitch] : []),
          result.finite,
          result.stats,
          ...(result.gradNorm ? [result.gradNorm] : []),
          ...(result.exchange ?? []),
        ];
      });
      recording.early = result?.exchange?.length ?? 0;
      if (advanceCapture(tf, s, recording)) this.onChange?.(key, s);
    } finally {
      tf.dispose(made);
    }
    return result!;
  }

  private replayStep(s: ShapeState, batch: ModelInputs, opts: StepCallOptions): StepResult {
    this.timeSpans(s);
    const { made, all } = this.inputs(s, batch, opts);
    let out: tf.Tensor[];
    try {
      out = s.capture!.replay(all, opts.onReady);
    } finally {
      tf.dispose(made);
    }
    return this.replayResult(s, out, opts);
  }

  private timeSpans(s: ShapeState): void {
    this.spans.attach(s.capture!, (tf.backend() as unknown as { device: GpuDevice }).device);
  }

  /** The step's result from a replay's outputs. */
  private replayResult(s: ShapeState, out: tf.Tensor[], opts: Pick<TrainStepOptions, 'onGradients'>): StepResult {
    opts.onGradients?.();
    this.replayed++;
    this.last = { shape: this.last!.shape, replayed: true, programs: s.capture!.programs };
    const early = s.capture!.early;
    const exchange = early ? (out.slice(out.length - early) as tf.Tensor1D[]) : null;
    const outputs = out.slice(0, out.length - early) as tf.Scalar[];
    // model.pitch_contour's loss follows the duration's where the model has it.
    const pitch = this.model.pitchContour ? outputs.splice(5, 1)[0] : null;
    const [total, melPre, melPost, alignedText, duration, finite, stats, gradNorm] = outputs;
    const parts = {
      total,
      melPre,
      melPost,
      alignedText,
      duration,
      pitch,
      finite,
      stats: stats as unknown as tf.Tensor1D,
      exchange,
    };
    // An update (gradNorm is its output) or an accumulate-only micro-batch: the host's count follows.
    if (gradNorm) return { ...parts, gradNorm, applied: true, learningRate: this.optimizer.countReplayedUpdate() };
    this.optimizer.countReplayedMicroBatch();
    return { ...parts, gradNorm: null, applied: false, learningRate: Number.NaN };
  }

  /** Bytes the captured steps' buffers hold on the device (beside the tensors tf.memory counts). */
  get arenaBytes(): number {
    return arenaBytesOf(this.shapes) + (this.alignment?.arenaBytes ?? 0) + (this.updates?.arenaBytes ?? 0);
  }

  async summary(): Promise<StepCaptureSummary> {
    return {
      mode: this.mode,
      off: this.off,
      replayedSteps: this.replayed,
      eagerSteps: this.eager,
      shapes: summarizeShapes(this.shapes).map((summary) => {
        const c = this.shapes.get(summary.shape)!.capture;
        const perProgram = (ms: number[]) => (c && ms.length ? (1000 * summarize(ms).p50) / c.programs : null);
        return {
          ...summary,
          encodeUsPerProgram: perProgram(c?.encodeMs ?? []),
          submitUsPerProgram: perProgram(c?.submitMs ?? []),
          rebinds: c?.rebinds ?? 0,
        };
      }),
      alignment: (await this.alignment?.summary()) ?? null,
      ...(this.replica ? { updates: (await this.updates?.summary()) ?? null } : {}),
      ...(this.off === null ? { deviceSpans: await this.spans.summary() } : {}),
    };
  }

  dispose(): void {
    this.spans.dispose();
    for (const s of this.shapes.values()) s.capture?.dispose();
    this.shapes.clear();
    this.alignment?.dispose();
    this.updates?.dispose();
  }
}

/** "batch×tokens×frames×refFrames": one bucket's shape (a phase of accumulation follows it). */
function shapeKey(b: ModelInputs): string {
  return `${b.tokens.shape[0]}×${b.tokens.shape[1]}×${b.mel.shape[1]}×${b.refMel.shape[1]}`;
}
