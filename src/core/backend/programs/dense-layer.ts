// A dense layer's backward — dz (dy, or a ReLU's or dropout's gradient of it), dx = dz·Wᵀ,
// dW = xᵀ·dz and db = Σ_rows dz — as one kernel: on webgpu one program for the layers that are small
// enough (backend/programs/dense.ts), elsewhere and for larger layers the programs apart; with
// mixed_fp16 a larger layer's two matmuls share one dispatch on the tensor cores.
import * as tf from '@tensorflow/tfjs-core';
import type { WebgpuProgramRunner } from '../index.js';
import {
  defineGpuKernel,
  type DenseGradKind,
  denseGrads,
  denseGradsMaxFlops,
  dzInputs,
  gpuKernelActive,
  webgpuKernel,
} from '../index.js';
import { f16PairTakes, type PairedMatMul, subgroupMatMulPair } from '../index.js';
import { reluGradAndColumnSums } from './relu.js';
import { maskAtAndColumnSums } from './slices.js';

export const DENSE_GRADS_KERNEL = 'XttsDenseGrads';
/**
 * dx = dz·Wᵀ and dW = xᵀ·dz of a layer above the one program's size, on the tensor cores in one dispatch (mixed_fp16).
 */
const DENSE_MATMULS_F16_KERNEL = 'XttsDenseMatMulsF16';
/** The two products of a dense layer's backward over inputs [dz, W, x]: dz·Wᵀ, then xᵀ·dz. */
const DENSE_PRODUCTS: [PairedMatMul, PairedMatMul] = [
  { a: 0, b: 1, transposeA: false, transposeB: true },
  { a: 2, b: 0, transposeA: true, transposeB: false },
];
defineGpuKernel(
  tf,
  'dense-grads',
  DENSE_GRADS_KERNEL,
  () =>
    (({
      inputs,
      backend,
      attrs,
    }: {
      inputs: Record<string, tf.TensorInfo>;
      backend: WebgpuProgramRunner;
      attrs: { kind: DenseGradKind; k: number };
    }) => {
      const [rows, outDim] = inputs.dy.shape;
      const inDim = inputs.x.shape[1];
      const extra = dzInputs(attrs.kind).map((name) => inputs[name]);
      const [dx, dW, db] = denseGrads(
        backend,
        inputs.dy,
        inputs.x,
        inputs.w,
        extra,
        { rows, in: inDim, out: outDim, kind: attrs.kind },
        attrs.k,
      );
      return [
        { ...dx, shape: [rows, inDim] },
        { ...dW, shape: [inDim, outDim] },
        { ...db, shape: [outDim] },
      ];
    }) as unknown as tf.KernelFunc,
);
defineGpuKernel(tf, 'paired-dense', DENSE_MATMULS_F16_KERNEL, () =>
  webgpuKernel((inputs: Record<'dz' | 'w' | 'x', tf.TensorInfo>, backend) =>
    subgroupMatMulPair(backend, [inputs.dz, inputs.w, inputs.x], DENSE_PRODUCTS),
  ),
);

/** What dz is made of: dy, dy·step(y) (y a ReLU's output), or dy times the dropout window pool[offsets[k] ..]. */
export type DenseGradOf =
  | { kind: 'plain' }
  | { kind: 'relu'; y: tf.Tensor2D }
  | { kind: 'mask'; pool: tf.Tensor1D; offsets: tf.Tensor1D; k: number };

/**
 * [dx, dW, db] of y = x·W + b under `of` for dy = ∂L/∂(its output): one program on webgpu where the
 * layer is small enough (denseGradsMaxFlops), else dz and db (one program on webgpu), then the two matmuls
 * (with mixed_fp16 one dispatch, then the weight gradient's parts added).
 */
export function denseBackward(
  dy: tf.Tensor2D,
  x: tf.Tensor2D,
  w: tf.Tensor2D,
  of: DenseGradOf,
): [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D] {
  const [rows, outDim] = dy.shape;
  const small = 4 * rows * x.shape[1] * outDim <= denseGradsMaxFlops();
  if (small && gpuKernelActive(tf, DENSE_GRADS_KERNEL) && [dy, x, w].every((t) => t.dtype === 'float32')) {
    const inputs = {
      dy,
      x,
      w,
      ...(of.kind === 'relu' ? { y: of.y } : of.kind === 'mask' ? { pool: of.pool, offsets: of.offsets } : {}),
    };
    return tf.engine().runKernel(DENSE_GRADS_KERNEL, inputs, {
      kind: of.kind,
      k: of.kind === 'mask' ? of.k : 0,
    } as never) as unknown as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
  }
  const [dz, db] =
    of.kind === 'relu'
      ? reluGradAndColumnSums(dy, of.y)
      : of.kind === 'mask'
        ? maskAtAndColumnSums(dy, of.pool, of.offsets, of.k)
        : [dy, null];
  const operands = [dz, w, x];
  if (
    gpuKernelActive(tf, DENSE_MATMULS_F16_KERNEL) &&
    f16PairTakes(
      tf.backend(),
      DENSE_PRODUCTS.map((q) => ({ ...q, a: operands[q.a], b: operands[q.b] })),
    )
  ) {
    const [dx, dW] = tf.engine().runKernel(DENSE_MATMULS_F16_KERNEL, { dz, w, x }) as unknown as [
      tf.Tensor2D,
      tf.Tensor2D,
    ];
    return [dx, dW, db ?? tf.sum(dz, 0)];
  }
  return [tf.matMul(dz, w, false, true), tf.matMul(x, dz, true, false), db ?? tf.sum(dz, 0)];
}
