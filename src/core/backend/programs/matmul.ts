// Which program takes which matmul on webgpu. Matmuls with a long inner dimension and a small output
// run without atomics: tfjs-backend-webgpu gives them more workgroups by splitting K
// (MatMulSplitKProgram) and adds the parts into the output with an atomic compare-and-swap loop, so the
// order of the additions changes from run to run, a weight gradient such as the duration predictor's
// output layer's (dur.out: a [256, 1] output over batch × text tokens, 32 × 80, in the small preset) is
// not the same twice, and a replayed training step cannot equal an eager one bit for bit. Here those
// run as the ordered split-K (matmul-core.ts): every (part, row, column) sums its slice of K into a
// partial of its own, then each output sums its parts in order — the same value every time. With
// device.matmul: tiled the matmuls tfjs would run as its 32×32-tile MatMulPackedProgram go to the wide
// program (matmul-wide.ts) where its tiles fill the device (wideShape); with training.precision:
// mixed_fp16 they, and the dense layers' _FusedMatMul, go to the tensor-core program (matmul-f16.ts).
// Everything else (and anything tfjs's WEBGPU_MATMUL_PROGRAM_TYPE flag forces) goes to tfjs's kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { defineGpuOverride } from '../gpu-programs.js';
import { matMulDims, orderedSplitK, tfjsPacks, tfjsSplitsK, type WebgpuBackendLike } from './matmul-core.js';
import { wideDenseShape, wideMatMul, wideShape } from './matmul-wide.js';
import { subgroupMatMul } from './matmul-f16.js';

type Tf = typeof import('@tensorflow/tfjs-core');

/**
 * Puts the ordered split-K, and the program the selection picks for large matmuls, in front of tfjs's
 * BatchMatMul on webgpu; and the f16 program in front of _FusedMatMul (a dense layer's act(x·W + b))
 * while it is the one picked (gpu-programs.ts: group 'matmul'; selection.matmul 'tfjs' leaves the large
 * float32 matmuls to tfjs, 'tiled' sends those whose tiles fill the device to xtts's wide float32
 * program (wideShape), 'f16' to the tensor-core program: f16 operands through Dawn's subgroup matrices
 * of selection.subgroupShape, f32 sums).
 */
export function defineMatMulPrograms(tf: Tf): void {
  defineGpuOverride(tf, 'matmul', 'BatchMatMul', (original, { matmul: program }) => (args) => {
    const a = args.inputs.a as tfTypes.TensorInfo;
    const b = args.inputs.b as tfTypes.TensorInfo;
    const transposeA = args.attrs?.transposeA === true;
    const transposeB = args.attrs?.transposeB === true;
    const backend = args.backend as WebgpuBackendLike;
    const d = matMulDims(a.shape, b.shape, transposeA, transposeB);
    const forced = tf.env().getNumber('WEBGPU_MATMUL_PROGRAM_TYPE') >= 0;
    if (
      forced ||
      a.dtype !== 'float32' ||
      b.dtype !== 'float32' ||
      d.k !== (transposeB ? b.shape[b.shape.length - 1] : b.shape[b.shape.length - 2])
    ) {
      return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    }
    const threshold = backend.thresholdToIncreaseWorkgroups ?? 8;
    const ordered = tfjsSplitsK(d, threshold);
    // The programs here take equal batches or one of 1. The f16 one takes unbatched matmuls only: on
    // an H100 the attention's batched products (188 × 64 × 188 per head, 256 heads) ran 2 to 4 times
    // slower through it than through tfjs's program (bench/matmul.bench.ts).
    const large = tfjsPacks(d, threshold) && (d.batchA === d.batchB || d.batchA === 1 || d.batchB === 1);
    const f16 = program === 'f16' && large && d.batch === 1;
    // The wide program where its tiles fill the device (128×128, over parts of K where they are few,
    // or 64×64: wideShape); tfjs's 32×32 tiles elsewhere.
    const wide = program === 'tiled' && large ? wideShape(d) : null;
    if (!ordered && !f16 && !wide) return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const call = { a, b, d, transposeA, transposeB };
    const out = ordered
      ? orderedSplitK(call, backend)
      : f16
        ? subgroupMatMul(call, backend)
        : wideMatMul(call, wide!, backend);
    // The output's shape (tfjs broadcasts the batch dimensions): the same buffer, as tfjs's Reshape does.
    const outer = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
    return { dataId: out.dataId, shape: [...outer, d.m, d.n], dtype: 'float32' as const };
  });
  defineGpuOverride(tf, 'matmul', '_FusedMatMul', (original, { matmul: program }) => (args) => {
    const { a, b, bias, preluActivationWeights } = args.inputs as Record<string, tfTypes.TensorInfo | undefined>;
    const activation = String(args.attrs?.activation ?? 'linear');
    const transposeA = args.attrs?.transposeA === true;
    const transposeB = args.attrs?.transposeB === true;
    const backend = args.backend as WebgpuBackendLike;
    if (
      program === 'tfjs' ||
      !a ||
      !b ||
      a.shape.length !== 2 ||
      b.shape.length !== 2 ||
      preluActivationWeights ||
      !(activation === 'linear' || activation === 'relu')
    )
      return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const d = matMulDims(a.shape, b.shape, transposeA, transposeB);
    const biasOk = !bias || (bias.dtype === 'float32' && tf.util.sizeFromShape(bias.shape) === d.n);
    if (
      a.dtype !== 'float32' ||
      b.dtype !== 'float32' ||
      !biasOk ||
      !tfjsPacks(d, backend.thresholdToIncreaseWorkgroups ?? 8)
    )
      return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const epilogue = { bias, relu: activation === 'relu' };
    // float32: the wide program where its tiles fill the device (split over K, the sum of the parts
    // adds the bias and applies the ReLU), tfjs's fused program elsewhere.
    const wide = program === 'tiled' ? wideDenseShape(d) : null;
    if (program === 'tiled' && !wide) return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const call = { a, b, d, transposeA, transposeB };
    const out =
      program === 'f16' ? subgroupMatMul(call, backend, epilogue) : wideMatMul(call, wide!, backend, epilogue);
    return { dataId: out.dataId, shape: [d.m, d.n], dtype: 'float32' as const };
  });
}

// What the matmul programs offer the rest of the backend.
export { type MatMulDims, matMulDims, slabLoad, type SlabOperand, tfjsPacks, tfjsSplitsK } from './matmul-core.js';
export {
  SLAB,
  type StridedDims,
  stridedMatMuls,
  type StridedMatrix,
  type StridedProduct,
  stridedSide,
  wideDenseShape,
  type WideShape,
  wideShape,
} from './matmul-wide.js';
export {
  F16_MATMUL_ENABLES,
  F16_PROGRAMS,
  f16PairTakes,
  f16Parts,
  f16Tile,
  f16UnitFits,
  type PairedMatMul,
  subgroupMatMulPair,
} from './matmul-f16.js';
export { stridedF16Takes, stridedSubgroupMatMuls } from './matmul-f16-strided.js';
