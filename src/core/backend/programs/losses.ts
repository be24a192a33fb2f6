// The masked mel losses as few WebGPU programs. Composed, Σ err(pred − target)·mask / denominator is a
// subtraction, the error, the mask's multiply, a two-pass sum and a division forward (6 programs) and
// about as many backward; a step has three of them (the decoder's frames before and after the postnet,
// and the aligned symbols' mean frames). Here the forward is one spread sum whose summand makes the
// masked error in place and whose second pass divides by the denominator (2 programs), and the
// gradient one program with the composition's arithmetic, in its order: ((dy / denominator)·mask)·err′.
// Registered for the webgpu backend only; other backends keep the composition (losses.ts).
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, flatProgram, gpuKernelActive, namedProgram, webgpuKernel } from '../index.js';
import { spreadSum, type Summand, workgroupSum } from './sum.js';
import { gradOp } from './grad-op.js';

export const MASKED_ERROR_KERNEL = 'XttsMaskedError';
export const MASKED_ERROR_GRAD_KERNEL = 'XttsMaskedErrorGrad';

export type ErrorKind = 'l1' | 'l2' | 'l1_l2';

/** The error of d = pred − target, as the composition computes it (abs, squaredDifference, their sum). */
const ERROR: Record<ErrorKind, string> = { l1: 'abs(d)', l2: 'd * d', l1_l2: 'abs(d) + d * d' };
/**
 * Its derivative as tfjs's gradients compute it: |d|′ is step(d, −1) (1 where d > 0, NaN where d is
 * NaN (tfjs's isnan, which no compiler folds away), else −1); (d²)′ = 2·d (squaredDifference's gradient:
 * dy·2·(a − b); Square's: dy·2·x).
 */
const SLOPE: Record<ErrorKind, string> = {
  l1: 'select(select(-1.0, 1.0, d > 0.0), d, isnan(d))',
  l2: '2.0 * d',
  l1_l2: 'select(select(-1.0, 1.0, d > 0.0), d, isnan(d)) + 2.0 * d',
};

/**
 * err(pred − target)·mask, pred and target [rows·bins] flat, mask one value per row of `bins` (WGSL reserves `target`:
 * truth).
 */
function maskedError(kind: ErrorKind, bins: number): Summand {
  return {
    variableNames: ['pred', 'truth', 'mask'],
    key: `_masked_${kind}_${bins}`,
    body: `let d = f32(pred[at]) - f32(truth[at]);
        return (${ERROR[kind]}) * f32(mask[at / ${bins}]);`,
  };
}

function gradProgram(kind: ErrorKind, bins: number, size: number) {
  return flatProgram(
    'XttsMaskedErrorGradProgram',
    `xtts_masked_error_grad_${kind}_${bins}`,
    ['dy', 'pred', 'truth', 'mask', 'denominator'],
    [size],
    '',
    `
          let d = f32(pred[index]) - f32(truth[index]);
          let g = (f32(dy[0]) / f32(denominator[0])) * f32(mask[index / ${bins}]);
          setOutputAtIndex(index, g * (${SLOPE[kind]}));`,
  );
}

interface Attrs {
  kind: ErrorKind;
}
type Inputs = Record<'pred' | 'target' | 'mask' | 'denominator', tf.TensorInfo>;
defineGpuKernel(tf, 'losses', MASKED_ERROR_KERNEL, () =>
  webgpuKernel((inputs: Inputs, backend, attrs: Attrs) => {
    const { pred, target, mask, denominator } = inputs;
    const size = pred.shape.reduce((a, b) => a * b, 1);
    const bins = pred.shape[pred.shape.length - 1];
    const out = spreadSum([pred, target, mask], backend, size, maskedError(attrs.kind, bins), denominator);
    return { ...out, shape: [] };
  }),
);
defineGpuKernel(tf, 'losses', MASKED_ERROR_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Inputs & { dy: tf.TensorInfo }, backend, attrs: Attrs) => {
    const { dy, pred, target, mask, denominator } = inputs;
    const size = pred.shape.reduce((a, b) => a * b, 1);
    const out = backend.runWebGPUProgram(
      gradProgram(attrs.kind, pred.shape[pred.shape.length - 1], size),
      [dy, pred, target, mask, denominator],
      'float32',
    );
    return { ...out, shape: pred.shape };
  }),
);

// The duration loss: Σ (log d̂ − log(1 + d))²·[d > 0] over [B, T_text] / the spoken tokens (or the
// whole batch's, given), 8 programs composed forward and about 5 backward, here one each. A batch's
// tokens are few (B·T_text, a few thousand): one workgroup sums them, in a fixed order.
export const DURATION_LOSS_KERNEL = 'XttsDurationLoss';
export const DURATION_LOSS_GRAD_KERNEL = 'XttsDurationLossGrad';
const ONE_GROUP = 256;

/**
 * The one-workgroup sums both programs start with: the squared errors' (`errors`) and the spoken tokens' count, then
 * the denominator.
 */
function durationSums(given: boolean, errors: boolean): string {
  return `
      var<workgroup> sums : array<vec2<f32>, ${ONE_GROUP}>;
      fn logTarget(i : i32) -> f32 {
        let d = f32(durations[i]);
        if (isnan(d)) { return d; }
        return log(1.0 + d);
      }
      fn spoken(i : i32) -> f32 {
        return select(0.0, 1.0, f32(durations[i]) > 0.0);
      }
      fn totals(tid : i32, n : i32) -> vec2<f32> {
        var s = vec2<f32>(0.0);
        for (var i = tid; i < n; i += ${ONE_GROUP}) {
          ${errors ? 'let e = f32(logDurations[i]) - logTarget(i);\n          s.x += (e * e) * spoken(i);' : ''}
          s.y += spoken(i);
        }
        ${workgroupSum('sums', 's', ONE_GROUP)}
        let total = sums[0];
        workgroupBarrier();
        return vec2<f32>(total.x, ${given ? 'f32(denominator[0])' : 'max(total.y, 1.0)'});
      }`;
}

function durationProgram(size: number, given: boolean, grad: boolean) {
  const names = grad ? ['dy', 'logDurations', 'durations'] : ['logDurations', 'durations'];
  return namedProgram(grad ? 'XttsDurationLossGradProgram' : 'XttsDurationLossProgram', {
    variableNames: given ? [...names, 'denominator'] : names,
    outputShape: grad ? [size] : [1],
    shaderKey: `xtts_duration_loss${grad ? '_grad' : ''}${given ? '_given' : ''}`,
    dispatchLayout: { x: [0] },
    dispatch: [1, 1, 1] as [number, number, number],
    workgroupSize: [ONE_GROUP, 1, 1] as [number, number, number],
    uniforms: 'n : i32,',
    getUserCode: () => `
      ${durationSums(given, !grad)}
      fn main(index : i32) {
        let tid = i32(localId.x);
        let t = totals(tid, uniforms.n);
        ${
          grad
            ? // The composition's order: (dy / den)·spoken, then ·2(a − b) (squaredDifference's gradient).
              `let g = f32(dy[0]) / t.y;
        for (var i = tid; i < uniforms.n; i += ${ONE_GROUP}) {
          setOutputAtIndex(i, (g * spoken(i)) * (2.0 * (f32(logDurations[i]) - logTarget(i))));
        }`
            : `if (tid == 0) {
          setOutputAtIndex(0, t.x / t.y);
        }`
        }
      }`,
  });
}

type DurationInputs = Record<'logDurations' | 'durations', tf.TensorInfo> & {
  denominator?: tf.TensorInfo;
  dy?: tf.TensorInfo;
};
for (const grad of [false, true]) {
  defineGpuKernel(tf, 'losses', grad ? DURATION_LOSS_GRAD_KERNEL : DURATION_LOSS_KERNEL, () =>
    webgpuKernel((inputs: DurationInputs, backend) => {
      const { dy, logDurations, durations, denominator } = inputs;
      const size = logDurations.shape.reduce((a, b) => a * b, 1);
      const ins = [...(grad ? [dy!] : []), logDurations, durations, ...(denominator ? [denominator] : [])];
      const out = backend.runWebGPUProgram(durationProgram(size, denominator !== undefined, grad), ins, 'float32', [
        { type: 'int32', data: [size] },
      ]);
      return { ...out, shape: grad ? logDurations.shape : [] };
    }),
  );
}

/** Whether the masked losses run as these programs on this backend (tests compare both paths). */
export function fusedLossesAvailable(): boolean {
  return gpuKernelActive(tf, MASKED_ERROR_KERNEL);
}

/**
 * Σ err(pred − target)·mask / denominator on webgpu: pred, target [B, T, bins] float32, mask [B, T, 1],
 * denominator a scalar. Its gradient reaches pred in one program; the other inputs' gradients (data,
 * in training) are the composition's, made only where the tape asks for them.
 */
export function fusedMaskedError(
  pred: tf.Tensor3D,
  target: tf.Tensor3D,
  mask: tf.Tensor3D,
  kind: ErrorKind,
  denominator: tf.Scalar,
): tf.Scalar {
  return gradOp(
    { pred, target, mask, denominator },
    (save) => {
      save([pred, target, mask, denominator]);
      return tf
        .engine()
        .runKernel(MASKED_ERROR_KERNEL, { pred, target, mask, denominator }, { kind } as never) as tf.Scalar;
    },
    (dy, saved) => {
      const [p, t, m, den] = saved;
      const dPred = () =>
        tf.engine().runKernel(MASKED_ERROR_GRAD_KERNEL, { dy, pred: p, target: t, mask: m, denominator: den }, {
          kind,
        } as never) as tf.Tensor;
      const err = () => {
        const d = tf.sub(p, t);
        return kind === 'l1' ? tf.abs(d) : kind === 'l2' ? tf.square(d) : tf.add(tf.abs(d), tf.square(d));
      };
      return {
        pred: dPred,
        target: () => tf.neg(dPred()),
        mask: () => tf.sum(tf.mul(err(), tf.div(dy, den)), -1, true),
        denominator: () => tf.neg(tf.div(tf.mul(dy, tf.sum(tf.mul(err(), m))), tf.square(den))),
      };
    },
  );
}

/**
 * The duration loss on webgpu (losses.ts durationLoss): logDurations, durations [B, T_text] float32;
 * `denominator` the whole batch's spoken tokens, else this batch's (at least 1). Its gradient reaches
 * logDurations in one program; durations and the denominator are data, and get none (an error if the
 * tape asks for one).
 */
export function fusedDurationLoss(
  logDurations: tf.Tensor2D,
  durations: tf.Tensor2D,
  denominator?: tf.Scalar,
): tf.Scalar {
  const inputs: Record<string, tf.Tensor> = denominator
    ? { logDurations, durations, denominator }
    : { logDurations, durations };
  const noGradient = (name: string) => () => {
    throw new Error(`the fused duration loss has no gradient for its ${name} (data)`);
  };
  return gradOp(
    inputs,
    (save) => {
      save(Object.values(inputs));
      return tf.engine().runKernel(DURATION_LOSS_KERNEL, inputs as never) as tf.Scalar;
    },
    (dy, saved) => {
      const [l, d, den] = saved;
      return {
        logDurations: () =>
          tf
            .engine()
            .runKernel(
              DURATION_LOSS_GRAD_KERNEL,
              (den
                ? { dy, logDurations: l, durations: d, denominator: den }
                : { dy, logDurations: l, durations: d }) as never,
            ) as tf.Tensor,
        durations: noGradient('durations'),
        ...(denominator ? { denominator: noGradient('denominator') } : {}),
      };
    },
  );
}
