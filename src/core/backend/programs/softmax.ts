// The attention's softmax as single WebGPU programs. Composed, softmax(q·kᵀ·s + bias) is a scaling,
// an addition and tfjs's softmax forward, and its gradient (ds = s·w ⊙ (dw − Σ_k dw ⊙ w)) four
// programs and a scaling of dq: 9 programs per attention and step, 8 attentions in the tiny preset.
// Here forward is one program (scale, bias, maximum, exponentials and their sum over a row) and
// backward one (the row's dot product, then ds with the scale in it, so dq and dk need no scaling).
// One workgroup per row of [B, H, Tq, Tk] (backend/programs/layernorm.ts's row reduction); the bias is any
// tensor that broadcasts to [B, H, Tq, Tk] (a key-padding mask [B, 1, 1, Tk], a causal one [Tq, Tk]),
// read in place through strides that are 0 along its broadcast axes. Registered for the webgpu
// backend only; other backends keep the composition (wasm and cpu pay no per-kernel launch cost).
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, gpuKernelActive, namedProgram, webgpuKernel, workgroupGrid } from '../index.js';
import { ROW_BLOCK, ROW_REDUCE } from './layernorm.js';

export const SOFTMAX_KERNEL = 'XttsScaledSoftmax';
export const SOFTMAX_GRAD_KERNEL = 'XttsScaledSoftmaxGrad';

/**
 * The row this workgroup reduces. A workgroup past the last row reads and writes nothing (n = 0) but
 * still takes part in the barriers: a return before them would not be uniform control flow to WGSL.
 */
const ROW = `
        let row = i32(workgroupId.y * numWorkgroups.x + workgroupId.x);
        let tid = i32(localId.x);
        let rows = uniforms.outShape[0] * uniforms.outShape[1] * uniforms.outShape[2];
        let n = select(0, uniforms.outShape[3], row < rows);
        let base = row * uniforms.outShape[3];`;

/** One workgroup per row of [B, H, Tq, Tk] (workgroupGrid: rows past 65,535 go along y as well). */
function rowProgram(
  name: string,
  shaderKey: string,
  variableNames: string[],
  shape: number[],
  uniforms: string,
  body: string,
) {
  return namedProgram(name, {
    variableNames,
    outputShape: shape,
    shaderKey,
    dispatchLayout: { x: [0, 1, 2, 3] },
    dispatch: workgroupGrid(shape[0] * shape[1] * shape[2]),
    workgroupSize: [ROW_BLOCK, 1, 1],
    uniforms: `scale : f32, ${uniforms}`,
    getUserCode: () => `
      ${ROW_REDUCE}
      fn main(index : i32) {${ROW}${body}
      }`,
  });
}

/** w = softmax(S·scale + bias) along the last axis; bias read at b·s0 + h·s1 + q·s2 + k·s3. */
const softmaxProgram = (shape: number[]) =>
  rowProgram(
    'XttsScaledSoftmaxProgram',
    'xtts_scaled_softmax',
    ['S', 'Bias'],
    shape,
    's0 : i32, s1 : i32, s2 : i32, s3 : i32,',
    `
        let q = row % uniforms.outShape[2];
        let h = (row / uniforms.outShape[2]) % uniforms.outShape[1];
        let b = row / (uniforms.outShape[2] * uniforms.outShape[1]);
        let biasBase = b * uniforms.s0 + h * uniforms.s1 + q * uniforms.s2;
        var m = -3.402823e38;
        for (var k = tid; k < n; k += blockSize) {
          m = max(m, f32(S[base + k]) * uniforms.scale + f32(Bias[biasBase + k * uniforms.s3]));
        }
        let rowMaximum = rowMax(tid, m);
        var s = 0.0;
        for (var k = tid; k < n; k += blockSize) {
          s += exp(f32(S[base + k]) * uniforms.scale + f32(Bias[biasBase + k * uniforms.s3]) - rowMaximum);
        }
        let total = rowSum(tid, s);
        for (var k = tid; k < n; k += blockSize) {
          let logit = f32(S[base + k]) * uniforms.scale + f32(Bias[biasBase + k * uniforms.s3]);
          setOutputAtIndex(base + k, exp(logit - rowMaximum) / total);
        }`,
  );

/** dS = scale · W ⊙ (dW − Σ_k dW ⊙ W), the gradient of the scaled scores. */
const softmaxGradProgram = (shape: number[]) =>
  rowProgram(
    'XttsScaledSoftmaxGradProgram',
    'xtts_scaled_softmax_grad',
    ['W', 'DW'],
    shape,
    '',
    `
        var s = 0.0;
        for (var k = tid; k < n; k += blockSize) {
          s += f32(W[base + k]) * f32(DW[base + k]);
        }
        let dot = rowSum(tid, s);
        for (var k = tid; k < n; k += blockSize) {
          setOutputAtIndex(base + k, uniforms.scale * f32(W[base + k]) * (f32(DW[base + k]) - dot));
        }`,
  );

/** Element strides of a bias of shape `bias` read as [B, H, Tq, Tk]: 0 along the axes it broadcasts. */
export function broadcastStrides(bias: readonly number[], scores: readonly number[]): number[] {
  if (bias.length > 4) throw new Error(`an attention bias of rank ${bias.length}: at most 4`);
  const full = [...new Array(4 - bias.length).fill(1), ...bias];
  const strides = [0, 0, 0, 0];
  let stride = 1;
  for (let i = 3; i >= 0; i--) {
    if (full[i] !== 1 && full[i] !== scores[i])
      throw new Error(`an attention bias of shape [${bias}] does not broadcast to [${scores}]`);
    strides[i] = full[i] === 1 ? 0 : stride;
    stride *= full[i];
  }
  return strides;
}

const uniform = (type: 'int32' | 'float32', v: number) => ({ type, data: [v] });
defineGpuKernel(tf, 'softmax', SOFTMAX_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend, attrs: { scale: number }) => {
    const { scores, bias } = inputs;
    const strides = broadcastStrides(bias.shape, scores.shape);
    return backend.runWebGPUProgram(softmaxProgram(scores.shape), [scores, bias], 'float32', [
      uniform('float32', attrs.scale),
      ...strides.map((s) => uniform('int32', s)),
    ]);
  }),
);
defineGpuKernel(tf, 'softmax', SOFTMAX_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend, attrs: { scale: number }) =>
    backend.runWebGPUProgram(softmaxGradProgram(inputs.weights.shape), [inputs.weights, inputs.dWeights], 'float32', [
      uniform('float32', attrs.scale),
    ]),
  ),
);

/** Whether the attention's softmax runs as these programs on this backend (tests compare both paths). */
export function fusedSoftmaxAvailable(): boolean {
  return gpuKernelActive(tf, SOFTMAX_KERNEL);
}

// scores [B, H, Tq, Tk], bias broadcastable to it -> softmax(scores·scale + bias) over Tk
export function fusedScaledSoftmax(scores: tf.Tensor4D, bias: tf.Tensor, scale: number): tf.Tensor4D {
  return tf.engine().runKernel(SOFTMAX_KERNEL, { scores, bias }, { scale }) as tf.Tensor4D;
}

// weights, dWeights [B, H, Tq, Tk] -> the gradient of the scores (scale included)
export function fusedScaledSoftmaxGrad(weights: tf.Tensor4D, dWeights: tf.Tensor4D, scale: number): tf.Tensor4D {
  return tf.engine().runKernel(SOFTMAX_GRAD_KERNEL, { weights, dWeights }, { scale }) as tf.Tensor4D;
}
