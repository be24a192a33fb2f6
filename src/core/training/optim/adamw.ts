// AdamW (Loshchilov & Hutter 2019: Adam with decoupled weight decay) over ONE flat vector: every
// gradient is concatenated once, the moments are two flat tensors, and the update is the same ~40
// kernels whether the model has 20 parameters or 300 (a per-variable optimizer costs ~15 kernels
// per variable: ~1,500 for the small preset). The new values go back with one split.
//
// Per update, with bias corrections folded into two scalars (Kingma & Ba 2015, §2, the "more
// efficient" ordering; PyTorch's AdamW gives the same values up to rounding):
//   g  = Σ micro-batch gradients · (1/N) · clip
//   m  = β1·m + (1−β1)·g          v = β2·v + (1−β2)·g²
//   p  = p·(1 − lr·wd·decayMask) − lr·√(1−β2ᵗ)/(1−β1ᵗ) · m / (√v + ε·√(1−β2ᵗ))
// A step whose loss or gradient norm is not finite leaves p, m and v untouched (chosen on the
// device with `where`, no read-back) and counts itself in `nonFiniteSteps`.
//
// Dynamic loss scaling (training.precision: mixed_fp16, whose matmuls round their operands to f16:
// gradients below 2⁻²⁴ would vanish there): the step multiplies its loss by S (lossScale), so every
// gradient arrives S times larger, and the update divides by S again (folded into the same scalar
// factors). A step whose scaled gradient overflowed while S > 1 halves S and makes no update, and is
// not counted as non-finite: its flag is −1 (the trainer then neither stops for it nor counts it).
// After `growthInterval` updates in a row S doubles (at most 2²⁴). Everything stays on the device.
import * as tf from '@tensorflow/tfjs-core';
import type { TrainingConfig } from '../../config/index.js';
import { XttsError } from '../../errors.js';
import { scalar } from '../../model/index.js';
import { gather, segments } from '../../model/index.js';
import { clipFactor, sumOfSquares } from './clip.js';
import { learningRateAt } from './schedule.js';
import { fusedUpdate, fusedUpdateAvailable, stepScalars, stepScalarsAvailable } from '../../backend/programs/index.js';

export type OptimizerConfig = Pick<
  TrainingConfig,
  'learning_rate' | 'max_steps' | 'schedule' | 'optimizer' | 'grad_clip_norm'
>;

export interface AdamWOptions {
  /** Which parameters get weight decay. Default: tensors of rank ≥ 2 (matmul and conv weights,
   * embeddings), not biases and norm gains (the nanoGPT rule). */
  decay?: (name: string, shape: readonly number[]) => boolean;
  /** 'auto' uses a backend's one-pass update kernel where there is one (cpu), else the composition. */
  update?: 'auto' | 'composed';
  /** Dynamic loss scaling: the first scale and the updates in a row after which it doubles. */
  lossScale?: { initial: number; growthInterval: number };
}

/** The largest loss scale: 2²⁴ keeps S·loss and S² well inside float32. */
const MAX_LOSS_SCALE = 2 ** 24;

export interface ApplyResult {
  /** Norm of the averaged gradient before clipping (device scalar). */
  gradNorm: tf.Scalar;
  /**
   * 1 when the update was applied, 0 when it was skipped as non-finite, −1 when it was skipped as a
   * loss-scale overflow (loss scaling only; the scale has been halved) (device scalar, float32).
   */
  finite: tf.Scalar;
  /** The learning rate this update used. */
  learningRate: number;
}

const STATE_PREFIX = 'adamw.';

/**
 * A non-trainable variable holding `initial`, which is then disposed: tf.variable shares the tensor's
 * data, so the initial tensor left alive would keep that memory after the variable is disposed (a
 * train() in a process that trains again, as diagnose and the config fuzz do, leaked 12 bytes a
 * parameter each time).
 */
function stateVariable(initial: tf.Tensor): tf.Variable {
  const v = tf.variable(initial, false);
  initial.dispose();
  return v;
}

export class AdamW {
  readonly names: string[];
  readonly variables: tf.Variable[];
  private readonly sizes: number[];
  private readonly total: number;
  private readonly m: tf.Variable;
  private readonly v: tf.Variable;
  /**
   * The parameters as one flat vector, kept from the last update: its new values went to the
   * variables and here, so the next update reads them without concatenating every variable again
   * (about 10 programs a step). Valid while every variable still holds the tensor that update gave it
   * (`flatOf`: their dataIds then); anything that assigns a variable (loaded weights) gives it another,
   * and the next update concatenates. A replay updates both in place.
   */
  private readonly flat: tf.Variable;
  private flatOf: object[] | null = null;
  private readonly decayMask: tf.Tensor1D;
  private readonly skipped: tf.Variable;
  /** Updates made so far (skipped non-finite ones included: the schedule advances regardless). */
  step = 0;
  private accum: tf.Tensor1D | null = null;
  private accumLoss: tf.Scalar | null = null;
  private accumCount = 0;
  /**
   * Sums carried from one call to the next of an accumulation (carry()) in variables of their own, so
   * that an accumulate-only step assigns them as it assigns weights and step capture can replay it.
   * Made at the first carry and kept (4 bytes a parameter more between steps once a run accumulates).
   */
  private carriedGrad: tf.Variable | null = null;
  private carriedLoss: tf.Variable | null = null;
  private carried = false;
  private readonly updateImpl: 'auto' | 'composed';
  /** Loss scaling: the scale S and the updates made in a row since it last changed (device scalars). */
  private readonly scaling: { scale: tf.Variable; good: tf.Variable; growthInterval: number } | null;

  constructor(
    params: ReadonlyMap<string, tf.Variable>,
    readonly config: OptimizerConfig,
    options: AdamWOptions = {},
  ) {
    const decay = options.decay ?? ((_name, shape) => shape.length >= 2);
    this.updateImpl = options.update ?? 'auto';
    this.names = [...params.keys()];
    this.variables = [...params.values()];
    this.sizes = this.variables.map((v) => v.size);
    this.total = this.sizes.reduce((a, b) => a + b, 0);
    const mask = new Float32Array(this.total);
    let offset = 0;
    this.variables.forEach((v, i) => {
      if (decay(this.names[i], v.shape)) mask.fill(1, offset, offset + v.size);
      offset += v.size;
    });
    this.decayMask = tf.keep(tf.tensor1d(mask));
    this.flat = stateVariable(tf.zeros([this.total]));
    this.m = stateVariable(tf.zeros([this.total]));
    this.v = stateVariable(tf.zeros([this.total]));
    this.skipped = stateVariable(tf.zeros([]));
    const ls = options.lossScale;
    if (
      ls &&
      !(
        ls.initial >= 1 &&
        ls.initial <= MAX_LOSS_SCALE &&
        Number.isInteger(ls.growthInterval) &&
        ls.growthInterval >= 1
      )
    ) {
      throw new Error(
        `loss scale ${ls.initial} (1 to 2^24) and growth interval ${ls.growthInterval} ` +
          `(a whole number of updates, at least 1)`,
      );
    }
    this.scaling = ls
      ? {
          scale: stateVariable(tf.scalar(ls.initial)),
          good: stateVariable(tf.zeros([])),
          growthInterval: ls.growthInterval,
        }
      : null;
  }

  /** The loss scale S as a device scalar (the optimizer's own: do not dispose it), or null without loss scaling. */
  get lossScale(): tf.Scalar | null {
    return (this.scaling?.scale as tf.Scalar | undefined) ?? null;
  }

  get parameterCount(): number {
    return this.total;
  }

  /** Micro-batch gradients added since the last update. */
  get pendingMicroBatches(): number {
    return this.accumCount;
  }

  /** Non-finite updates skipped so far (device scalar; read it at log intervals). */
  get nonFiniteSteps(): tf.Scalar {
    return this.skipped as tf.Scalar;
  }

  learningRate(step = this.step + 1): number {
    return learningRateAt(step, this.config);
  }

  /** Gradients as tf.variableGrads returns them (keyed by tfjs variable name) -> one flat vector in
   * this optimizer's order, zeros for variables the loss did not reach (on webgpu each value copied once: gather). */
  flatten(grads: tf.NamedTensorMap): tf.Tensor1D {
    return tf.tidy(() => gather(this.variables.map((v, i) => [this.gradientOf(grads, i), 0, this.sizes[i]])));
  }

  /** Variable i's gradient in `grads`, zeros where the loss did not reach it. */
  private gradientOf(grads: tf.NamedTensorMap, i: number): tf.Tensor {
    return grads[this.variables[i].name] ?? tf.zeros(this.variables[i].shape);
  }

  /**
   * The flat gradient that accumulate(flatten(grads)) would hold, in pieces of `values` values (the last shorter),
   * each computed from the gradients of its own variables only (and the sums carried from earlier micro-batches):
   * a data-parallel replica's exchange buckets, which a replayed step computes, and reads back, as soon as their
   * variables' gradients are made instead of once the whole backward pass is done. The same bits as the matching
   * range of the accumulated sum (the same float32 additions).
   */
  exchangeBuckets(grads: tf.NamedTensorMap, values: number): tf.Tensor1D[] {
    if (!Number.isInteger(values) || values < 1) throw new Error(`a bucket of ${values} values`);
    // What accumulate() would add this gradient to.
    const before = this.carried ? this.carriedGrad : this.accum;
    return tf.tidy(() => {
      const out: tf.Tensor1D[] = [];
      let variable = 0;
      let start = 0;
      for (let from = 0; from < this.total; from += values) {
        const to = Math.min(this.total, from + values);
        const pieces: [tf.Tensor, number, number][] = [];
        while (start < to) {
          const size = this.sizes[variable];
          const lo = Math.max(from, start);
          const hi = Math.min(to, start + size);
          pieces.push([this.gradientOf(grads, variable), lo - start, hi - lo]);
          if (start + size > to) break;
          start += size;
          variable++;
        }
        let bucket = gather(pieces);
        if (before) bucket = tf.add(tf.slice(before, [from], [to - from]), bucket) as tf.Tensor1D;
        out.push(bucket);
      }
      return out;
    });
  }

  /** Add one micro-batch's flat gradient and loss to the accumulator (takes ownership of both). */
  accumulate(flatGrad: tf.Tensor1D, loss: tf.Scalar): void {
    if (flatGrad.size !== this.total)
      throw new Error(`gradient has ${flatGrad.size} values, the optimizer ${this.total}`);
    if (this.carried) {
      const [a, l] = [tf.add(this.carriedGrad!, flatGrad) as tf.Tensor1D, tf.add(this.carriedLoss!, loss) as tf.Scalar];
      tf.dispose([flatGrad, loss]);
      this.accum = a;
      this.accumLoss = l;
      this.carried = false;
    } else if (this.accum === null || this.accumLoss === null) {
      this.accum = flatGrad;
      this.accumLoss = loss;
    } else {
      const [a, l] = [tf.add(this.accum, flatGrad) as tf.Tensor1D, tf.add(this.accumLoss, loss) as tf.Scalar];
      tf.dispose([this.accum, this.accumLoss, flatGrad, loss]);
      this.accum = a;
      this.accumLoss = l;
    }
    this.accumCount++;
  }

  /**
   * Keeps the sums so far in the optimizer's variables until the next accumulate() or, on a data-parallel
   * replica, until they are read back and summed over the replicas (an accumulate-only call: trainStep).
   */
  carry(): void {
    if (this.accum === null || this.accumLoss === null) throw new Error('carry() without accumulated gradients');
    if (!this.carriedGrad || !this.carriedLoss) {
      this.carriedGrad = tf.variable(this.accum, false);
      this.carriedLoss = tf.variable(this.accumLoss, false);
    } else {
      this.carriedGrad.assign(this.accum);
      this.carriedLoss.assign(this.accumLoss);
    }
    tf.dispose([this.accum, this.accumLoss]);
    this.accum = null;
    this.accumLoss = null;
    this.carried = true;
  }

  /** The accumulated gradient and loss sums (the optimizer's own: do not dispose them); null before any. */
  get accumulated(): { grad: tf.Tensor1D; loss: tf.Scalar } | null {
    if (this.carried) return { grad: this.carriedGrad as tf.Tensor1D, loss: this.carriedLoss as tf.Scalar };
    return this.accum && this.accumLoss ? { grad: this.accum, loss: this.accumLoss } : null;
  }

  /**
   * The host numbers of update `t`: its learning rate and the three scalars that change per step —
   * lr·√(1−β2ᵗ)/(1−β1ᵗ), ε·√(1−β2ᵗ) and lr·wd.
   */
  updateScalars(t = this.step + 1): { learningRate: number; values: Float32Array; exact: [number, number, number] } {
    const lr = this.learningRate(t);
    const { beta1, beta2, epsilon, weight_decay: wd } = this.config.optimizer;
    const bc1 = 1 - beta1 ** t;
    const bc2 = Math.sqrt(1 - beta2 ** t);
    const exact: [number, number, number] = [lr * (bc2 / bc1), epsilon * bc2, lr * wd];
    return { learningRate: lr, values: Float32Array.from(exact), exact };
  }

  /** Counts an update whose device work a replayed step did (step capture): the schedule advances. */
  countReplayedUpdate(): number {
    this.step++;
    this.accumCount = 0;
    this.carried = false;
    return this.learningRate(this.step);
  }

  /**
   * One update from the accumulated gradients (their mean), then clear the accumulator. `scalars`:
   * updateScalars' values of this update as a device tensor [3] the caller owns (a captured step takes
   * them as an input); without it they are uploaded here.
   */
  apply(scalars?: tf.Tensor1D): ApplyResult {
    const acc = this.accumulated;
    if (!acc) throw new Error('apply() without accumulated gradients');
    return this.update(acc.grad, acc.loss, scalars);
  }

  /**
   * apply() from sums the caller holds (not taken): a data-parallel replica's update from the gradient and loss
   * summed over every replica; its own accumulated sums, which went into those, are dropped. `scalars` as apply's.
   */
  applySums(grad: tf.Tensor1D, loss: tf.Scalar, scalars?: tf.Tensor1D): ApplyResult {
    if (!this.accumulated) throw new Error('applySums() without accumulated gradients');
    if (grad.size !== this.total) throw new Error(`gradient has ${grad.size} values, the optimizer ${this.total}`);
    return this.update(grad, loss, scalars);
  }

  /** The update from `sum` and `lossSum` over the pending micro-batches; the accumulator is cleared after. */
  private update(sum: tf.Tensor1D, lossSum: tf.Scalar, scalars: tf.Tensor1D | undefined): ApplyResult {
    const count = this.accumCount;
    this.step++;
    const t = this.step;
    const { learningRate: lr, values, exact } = this.updateScalars(t);
    const { beta1, beta2 } = this.config.optimizer;
    const uploaded = scalars ? [] : [tf.tensor1d(values)];
    // The three scalars that change per step, one upload (or the caller's input).
    const perStep = scalars ?? uploaded[0];
    const scaling = this.scaling;
    const fused = this.updateImpl === 'auto' && fusedUpdateAvailable();
    const result = tf.tidy(() => {
      // The fused update needs no squared gradients of its own: only their sum, in one pass.
      const squares = fused ? null : tf.square(sum);
      // On webgpu the scalars below (norm, finiteness, clipping, the skipped count and the loss scale)
      // are one program (stepScalars), with the same arithmetic.
      const one =
        fused && stepScalarsAvailable(scaling !== null)
          ? this.stepScalarsAtOnce(sumOfSquares(sum), lossSum, count)
          : null;
      // With loss scaling the sums are S times the gradients: 1/S joins 1/count.
      const unscale = one
        ? null
        : scaling
          ? (tf.div(scalar(1 / count), scaling.scale) as tf.Scalar)
          : scalar(1 / count);
      const gradNorm =
        one?.gradNorm ?? (tf.mul(tf.sqrt(squares ? tf.sum(squares) : sumOfSquares(sum)), unscale!) as tf.Scalar);
      // bool (float 1/0 from stepScalars)
      const finiteFlag = one?.flag ?? (tf.isFinite(tf.add(gradNorm, lossSum)) as tf.Scalar);
      // g = sum · scale is never materialised: scale folds into the moments' scalar factors.
      const scale = one?.gradScale ?? (tf.mul(clipFactor(gradNorm, this.config.grad_clip_norm), unscale!) as tf.Scalar);
      const kept = this.flatOf;
      const params =
        kept && this.variables.every((x, i) => x.dataId === kept[i])
          ? (this.flat as tf.Tensor1D)
          : (tf.concat(this.variables.map((x) => tf.reshape(x, [-1]))) as tf.Tensor1D);
      let next: tf.Tensor;
      if (fused) {
        const [p, m, v] = fusedUpdate(
          {
            params,
            m: this.m as tf.Tensor1D,
            v: this.v as tf.Tensor1D,
            grad: sum,
            decayMask: this.decayMask,
            gradScale: scale,
            finite: finiteFlag,
            scalars: perStep,
          },
          { beta1, beta2, stepSize: exact[0], epsHat: exact[1], lrWd: exact[2] },
        );
        this.m.assign(m);
        this.v.assign(v);
        next = p;
      } else {
        const [stepSize, epsHat, lrWd] = tf.split(perStep, 3) as tf.Tensor1D[];
        const m = tf.add(tf.mul(this.m, scalar(beta1)), tf.mul(sum, tf.mul(scale, scalar(1 - beta1))));
        const v = tf.add(tf.mul(this.v, scalar(beta2)), tf.mul(squares!, tf.mul(tf.square(scale), scalar(1 - beta2))));
        const update = tf.mul(tf.div(m, tf.add(tf.sqrt(v), epsHat)), stepSize);
        const decayed = tf.mul(params, tf.sub(scalar(1), tf.mul(this.decayMask, lrWd)));
        // where() would broadcast the condition once per call; do it once for all three.
        const keep = tf.broadcastTo(tf.reshape(finiteFlag, [1]), [this.total]);
        this.m.assign(tf.where(keep, m, this.m) as tf.Tensor1D);
        this.v.assign(tf.where(keep, v, this.v) as tf.Tensor1D);
        next = tf.where(keep, tf.sub(decayed, update), params);
      }
      const pieces = segments(next as tf.Tensor1D, this.sizes);
      this.variables.forEach((x, i) => x.assign(tf.reshape(pieces[i], x.shape)));
      this.flat.assign(next);
      this.flatOf = this.variables.map((x) => x.dataId);
      if (one) {
        this.skipped.assign(one.skipped);
        if (scaling) {
          scaling.scale.assign(one.scale!);
          scaling.good.assign(one.good!);
        }
        return { gradNorm, finite: one.finite };
      }
      const applied = tf.cast(finiteFlag, 'float32') as tf.Scalar;
      let finite = applied;
      if (scaling) {
        const { scale: s, good, growthInterval } = scaling;
        // Skipped with S > 1: an overflow of the scaled gradient (−1); at S = 1 a real non-finite step (0).
        finite = tf.where(
          finiteFlag,
          scalar(1),
          tf.where(tf.greater(s, scalar(1)), scalar(-1), scalar(0)),
        ) as tf.Scalar;
        const inARow = tf.mul(tf.add(good, scalar(1)), applied);
        const grow = tf.greaterEqual(inARow, scalar(growthInterval));
        s.assign(
          tf.where(
            finiteFlag,
            tf.where(grow, tf.minimum(tf.mul(s, scalar(2)), scalar(MAX_LOSS_SCALE)), s),
            tf.maximum(tf.mul(s, scalar(0.5)), scalar(1)),
          ) as tf.Scalar,
        );
        good.assign(tf.where(grow, scalar(0), inARow) as tf.Scalar);
      }
      this.skipped.assign(tf.add(this.skipped, tf.cast(tf.equal(finite, scalar(0)), 'float32')));
      return { gradNorm, finite };
    });
    // Carried sums are the optimizer's variables: kept for the next accumulation.
    tf.dispose([this.accum ?? [], this.accumLoss ?? [], ...uploaded]);
    this.accum = null;
    this.accumLoss = null;
    this.accumCount = 0;
    this.carried = false;
    return { ...result, learningRate: lr };
  }

  /** stepScalars of an update of `count` micro-batches whose summed gradients have Σg² `sumSq`. */
  private stepScalarsAtOnce(sumSq: tf.Scalar, lossSum: tf.Scalar, count: number) {
    const scaling = this.scaling;
    return stepScalars(
      sumSq,
      lossSum,
      {
        skipped: this.skipped as tf.Scalar,
        scale: scaling?.scale as tf.Scalar | undefined,
        good: scaling?.good as tf.Scalar | undefined,
      },
      {
        invCount: 1 / count,
        maxNorm: this.config.grad_clip_norm,
        scaling: scaling ? { growthInterval: scaling.growthInterval, maxScale: MAX_LOSS_SCALE } : null,
      },
    );
  }

  /** Drop accumulated gradients without updating (e.g. a run stopped mid-accumulation). */
  discardAccumulated(): void {
    tf.dispose([this.accum ?? [], this.accumLoss ?? []]);
    this.accum = null;
    this.accumLoss = null;
    this.accumCount = 0;
    this.carried = false;
  }

  /** Counts a micro-batch whose accumulate-only work a replayed step did (step capture): its sums are carried. */
  countReplayedMicroBatch(): void {
    if (!this.carriedGrad) throw new Error('a replayed accumulate-only step before any carried sums');
    this.accumCount++;
    this.carried = true;
  }

  /**
   * The optimizer's state as named tensors (copies; the caller disposes them): per parameter
   * `adamw.m/<name>` and `adamw.v/<name>`, plus `adamw.step` (int32), `adamw.nonfinite` and, with
   * loss scaling, `adamw.loss_scale` ([S, updates in a row]).
   * Accumulated micro-batch gradients are not state: checkpoints are taken between updates.
   */
  getState(): Map<string, tf.Tensor> {
    const [ms, vs] = tf.tidy(() => {
      const shaped = (flat: tf.Tensor) =>
        tf.split(flat, this.sizes).map((t, i) => tf.reshape(t, this.variables[i].shape));
      return [shaped(this.m), shaped(this.v)];
    });
    const out = new Map<string, tf.Tensor>();
    this.names.forEach((name, i) => {
      out.set(`${STATE_PREFIX}m/${name}`, ms[i]);
      out.set(`${STATE_PREFIX}v/${name}`, vs[i]);
    });
    out.set(`${STATE_PREFIX}step`, tf.scalar(this.step, 'int32'));
    out.set(`${STATE_PREFIX}nonfinite`, tf.clone(this.skipped));
    if (this.scaling) out.set(`${STATE_PREFIX}loss_scale`, tf.stack([this.scaling.scale, this.scaling.good]));
    return out;
  }

  /** Restore state made by getState (for the same parameter names and shapes). Reads the step back once. */
  setState(state: ReadonlyMap<string, tf.Tensor>): void {
    const problems: string[] = [];
    for (const kind of ['m', 'v']) {
      this.names.forEach((name, i) => {
        const t = state.get(`${STATE_PREFIX}${kind}/${name}`);
        if (!t) problems.push(`missing ${STATE_PREFIX}${kind}/${name}`);
        else if (t.size !== this.sizes[i])
          problems.push(`${STATE_PREFIX}${kind}/${name} has ${t.size} values, the parameter ${this.sizes[i]}`);
      });
    }
    const step = state.get(`${STATE_PREFIX}step`);
    if (!step) problems.push(`missing ${STATE_PREFIX}step`);
    if (problems.length > 0) {
      throw new XttsError(
        'OPTIMIZER_STATE_MISMATCH',
        `optimizer state does not fit this model: ${problems.slice(0, 5).join('; ')}`,
        {
          suggestions: ['Resume with the model config the checkpoint was trained with.'],
        },
      );
    }
    tf.tidy(() => {
      const gather = (kind: string) =>
        tf.concat(
          this.names.map((name) => tf.reshape(tf.cast(state.get(`${STATE_PREFIX}${kind}/${name}`)!, 'float32'), [-1])),
        ) as tf.Tensor1D;
      this.m.assign(gather('m'));
      this.v.assign(gather('v'));
      const nonfinite = state.get(`${STATE_PREFIX}nonfinite`);
      this.skipped.assign(nonfinite ? (tf.cast(tf.reshape(nonfinite, []), 'float32') as tf.Scalar) : tf.zeros([]));
      // A checkpoint of an fp32 run has no scale: the run resumed in mixed_fp16 starts from the first one.
      const ls = state.get(`${STATE_PREFIX}loss_scale`);
      if (this.scaling && ls && ls.size === 2) {
        const [s, good] = tf.split(tf.reshape(tf.cast(ls, 'float32'), [2]), 2);
        this.scaling.scale.assign(tf.reshape(s, []));
        this.scaling.good.assign(tf.reshape(good, []));
      }
    });
    // A synchronous read: the step tensor comes from the host (loadWeights, tf.tensor) and has not
    // been uploaded, so even webgpu (whose device read-backs cannot be synchronous in Node) has it.
    this.step = Number(step!.dataSync()[0]);
    this.discardAccumulated();
  }

  dispose(): void {
    this.discardAccumulated();
    tf.dispose([
      this.flat,
      this.m,
      this.v,
      this.skipped,
      this.decayMask,
      ...(this.carriedGrad ? [this.carriedGrad, this.carriedLoss!] : []),
      ...(this.scaling ? [this.scaling.scale, this.scaling.good] : []),
    ]);
  }
}
