// Attention over heads read in place from their projections. Composed, an attention first moves its
// heads out of the projection's [rows, heads·dh] layout into [B, H, T, dh] (a transpose, and a slice
// per part of a packed projection: q, k and v come out of one matmul) and its context back (another
// transpose); backward, the same moves in reverse and a concatenation: about 8 programs per attention
// and step besides its products and softmax. Here the batched products read q, k, v and the context's
// gradient through strides where they lie, and write the context, and the gradients of q, k and v
// where those lie in their projections' layout (backend/programs/matmul.ts's stridedMatMuls): 3
// programs forward (scores, softmax, context) and, backward, the weights' gradient, the softmax's and
// one program per projection for the gradients of its parts (dq, dk and dv of a self-attention's
// packed projection in one): 3 for a self-attention, 4 for a cross-attention. With mixed_fp16 the
// products run on the tensor cores (matmul-f16-strided.ts), else in the wide float32 program. Registered
// for the webgpu backend only; other backends keep the composition (attention.ts).
import * as tf from '@tensorflow/tfjs-core';
import {
  defineGpuKernel,
  gpuKernelActive,
  type StridedDims,
  stridedF16Takes,
  stridedMatMuls,
  type StridedMatrix,
  type StridedProduct,
  stridedSubgroupMatMuls,
} from '../index.js';
import { fusedScaledSoftmax, fusedScaledSoftmaxGrad, fusedSoftmaxAvailable } from './softmax.js';

export const STRIDED_MATMUL_KERNEL = 'XttsStridedMatMul';

type Strides = [number, number, number, number, number];
/** A product for the kernel: A's input and strides, B's, the output's. */
type Product = [number, Strides, number, Strides, Strides];
defineGpuKernel(
  tf,
  'packed-attention',
  STRIDED_MATMUL_KERNEL,
  () =>
    (({
      inputs,
      backend,
      attrs,
    }: {
      inputs: Record<string, tf.TensorInfo>;
      backend: Parameters<typeof stridedMatMuls>[0];
      attrs: { products: Product[]; outShape: number[]; dims: [number, number, number, number, number] };
    }) => {
      const view = ([offset, sb, sh, si, sj]: Strides): StridedMatrix => ({ offset, sb, sh, si, sj });
      const [batch, heads, m, n, k] = attrs.dims;
      const d: StridedDims = { batch, heads, m, n, k };
      const products: StridedProduct[] = attrs.products.map(([a, av, b, bv, ov]) => ({
        a,
        av: view(av),
        b,
        bv: view(bv),
        ov: view(ov),
      }));
      const xs = Object.keys(inputs)
        .sort((x, y) => Number(x.slice(1)) - Number(y.slice(1)))
        .map((name) => inputs[name]);
      // On the tensor cores where mixed_fp16's f16 program takes them, else in the wide float32 program.
      const run = stridedF16Takes(products, d) ? stridedSubgroupMatMuls : stridedMatMuls;
      const out = run(backend, xs, products, attrs.outShape, d);
      return { ...out, shape: attrs.outShape };
    }) as unknown as tf.KernelFunc,
);

/** Whether attention reads its heads in place here (webgpu, with the fused softmax). */
export function packedAttentionAvailable(): boolean {
  return fusedSoftmaxAvailable() && gpuKernelActive(tf, STRIDED_MATMUL_KERNEL);
}

/**
 * Attention heads in place in a 2-D projection: head h of query or key t of batch entry b at
 * x[b·steps + t, column + h·dh]. `shared`: x has `steps` rows only, the same for every batch entry
 * (learned queries).
 */
export interface PackedHeads {
  x: tf.Tensor2D;
  column: number;
  steps: number;
  shared?: boolean;
}

/** A [B, H, T, dh] matrix of `p` as (offset, b, h, t, d) strides; `transposed`: as [dh, T]. */
function headsView(p: PackedHeads, headDim: number, transposed = false): Strides {
  const width = p.x.shape[1];
  const [si, sj] = transposed ? [1, width] : [width, 1];
  return [p.column, p.shared ? 0 : p.steps * width, headDim, si, sj];
}

/** The [B·T, H·dh] layout of a context or a part's gradient, as strides. */
function rowsView(steps: number, heads: number, headDim: number): Strides {
  return [0, steps * heads * headDim, headDim, heads * headDim, 1];
}

/** A contiguous [B, H, Tq, Tk] tensor (scores, weights) as strides; `transposed`: as [Tk, Tq]. */
function scoresView(tq: number, tk: number, heads: number, transposed = false): Strides {
  const [si, sj] = transposed ? [1, tk] : [tk, 1];
  return [0, heads * tq * tk, tq * tk, si, sj];
}

/** The products (A, B and where each output goes: all of one m × n × k) into one tensor of `outShape`, one program. */
function matmuls(
  inputs: tf.Tensor[],
  products: Product[],
  outShape: number[],
  dims: [number, number, number, number, number],
): tf.Tensor {
  const named = Object.fromEntries(inputs.map((x, i) => [`x${i}`, x]));
  return tf
    .engine()
    .runKernel(STRIDED_MATMUL_KERNEL, named, { products, outShape, dims } as unknown as tf.NamedAttrMap) as tf.Tensor;
}

function matmul(
  a: tf.Tensor,
  av: Strides,
  b: tf.Tensor,
  bv: Strides,
  outShape: number[],
  ov: Strides,
  dims: [number, number, number, number, number],
): tf.Tensor {
  return matmuls([a, b], [[0, av, 1, bv, ov]], outShape, dims);
}

/**
 * softmax(q·kᵀ/√dh + bias)·v for `heads` heads of `headDim`, q, k and v read in place from their
 * projections; bias broadcastable to [B, H, Tq, Tk]. Returns the context [B·Tq, H·dh]. The gradient
 * of each projection is made of its parts' gradients, written where each part lies in it (they must
 * cover its columns exactly, in order). Where packedAttentionAvailable only.
 */
export function attendPacked(
  q: PackedHeads,
  k: PackedHeads,
  v: PackedHeads,
  batch: number,
  heads: number,
  headDim: number,
  bias: tf.Tensor,
): tf.Tensor2D {
  if (k.steps !== v.steps || k.shared || v.shared)
    throw new Error('attendPacked: keys and values must have one length and a batch of their own');
  const inputs = [...new Set([q.x, k.x, v.x])];
  // Each input's parts by column: their gradients make its gradient.
  const parts = inputs.map((x) =>
    (['q', 'k', 'v'] as const)
      .map((name) => ({ name, p: { q, k, v }[name] }))
      .filter(({ p }) => p.x === x)
      .sort((a, b) => a.p.column - b.p.column),
  );
  inputs.forEach((x, i) => {
    let column = 0;
    for (const { p } of parts[i]) {
      if (p.column !== column)
        throw new Error(
          `attendPacked: a projection of width ${x.shape[1]} whose parts do not cover its columns in order`,
        );
      column += heads * headDim;
    }
    if (column !== x.shape[1])
      throw new Error(
        `attendPacked: a projection of width ${x.shape[1]} whose parts do not cover its columns in order`,
      );
  });
  const [tq, tk] = [q.steps, k.steps];
  const factor = 1 / Math.sqrt(headDim);
  const scoresShape = [batch, heads, tq, tk];
  const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const save = args[inputs.length] as tf.GradSaveFunc;
    const scores = matmul(
      q.x,
      headsView(q, headDim),
      k.x,
      headsView(k, headDim, true),
      scoresShape,
      scoresView(tq, tk, heads),
      [batch, heads, tq, tk, headDim],
    );
    const weights = fusedScaledSoftmax(scores as tf.Tensor4D, bias, factor);
    // Everything backward reads is saved: tfjs disposes the forward pass's tensors, these inputs
    // included, before backward starts.
    save([weights, ...inputs]);
    const context = matmul(
      weights,
      scoresView(tq, tk, heads),
      v.x,
      headsView(v, headDim),
      [batch * tq, heads * headDim],
      rowsView(tq, heads, headDim),
      [batch, heads, tq, headDim, tk],
    );
    return {
      value: context,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
        const w = saved[0] as tf.Tensor4D;
        const [qx, kx, vx] = [q, k, v].map((p) => saved[1 + inputs.indexOf(p.x)]);
        const dyView = rowsView(tq, heads, headDim);
        const dWeights = matmul(dy, dyView, vx, headsView(v, headDim, true), scoresShape, scoresView(tq, tk, heads), [
          batch,
          heads,
          tq,
          tk,
          headDim,
        ]);
        const ds = fusedScaledSoftmaxGrad(w, dWeights as tf.Tensor4D, factor);
        // Each part's gradient as one product: A and B, and the part's [steps, dh] of its output.
        const factors: Record<'q' | 'k' | 'v', [tf.Tensor, Strides, tf.Tensor, Strides]> = {
          q: [ds, scoresView(tq, tk, heads), kx, headsView(k, headDim)],
          k: [ds, scoresView(tq, tk, heads, true), qx, headsView(q, headDim)],
          v: [w, scoresView(tq, tk, heads, true), dy, dyView],
        };
        return parts.map((ps, i) => {
          const width = inputs[i].shape[1];
          // Every part of one projection in one program, written where the part lies in it. (A
          // projection holding the queries and the keys is a self-attention's: tq = tk.)
          const steps = ps[0].p.steps;
          const sources: tf.Tensor[] = [];
          const source = (t: tf.Tensor) => (sources.includes(t) ? sources.indexOf(t) : sources.push(t) - 1);
          const products = ps.map(({ name, p }): Product => {
            const [a, av, b, bv] = factors[name];
            return [source(a), av, source(b), bv, [p.column, steps * width, headDim, width, 1]];
          });
          const g = matmuls(
            sources,
            products,
            [batch * steps, width],
            [batch, heads, steps, headDim, ps[0].name === 'q' ? tk : tq],
          );
          // Shared queries: every batch entry's gradient, then their sum over the batch.
          return ps[0].p.shared ? tf.sum(tf.reshape(g, [batch, steps, width]), 0) : g;
        });
      },
    };
  });
  return op(...inputs) as tf.Tensor2D;
}
