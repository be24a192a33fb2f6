// Matmuls with a long inner dimension and a small output, without atomics. tfjs-backend-webgpu gives
// them more workgroups by splitting K (MatMulSplitKProgram) and adds the parts into the output with an
// atomic compare-and-swap loop: the order of the additions changes from run to run, so a weight
// gradient such as the duration predictor's output layer's (dur.out: a [256, 1] output over batch ×
// text tokens, 32 × 80, in the small preset) is not the same twice, and a replayed training step cannot equal an eager one bit for bit. Here the same
// cases run in two programs: every (part, row, column) sums its slice of K into a partial of its
// own, then each output sums its parts in order — the same value every time. Everything else (and
// anything tfjs's WEBGPU_MATMUL_PROGRAM_TYPE flag forces) goes to tfjs's own kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram } from './kernels.js';

type Tf = typeof import('@tensorflow/tfjs-core');

const WORKGROUP = 64;
/** K values each partial sums. */
const CHUNK = 256;

interface WebgpuBackendLike {
  runWebGPUProgram(program: object, inputs: tfTypes.TensorInfo[], dtype: tfTypes.DataType, uniforms?: { type: string; data: number[] }[]): tfTypes.TensorInfo;
  disposeData(id: object): void;
  thresholdToIncreaseWorkgroups?: number;
}

/** The shape of a BatchMatMul as tfjs-backend-webgpu 4.22 reads it (BatchMatMul_impl.js). */
export interface MatMulDims {
  batch: number;
  /** Rows of the output (A's outer dimension). */
  m: number;
  /** Columns of the output (B's outer dimension). */
  n: number;
  k: number;
}

export function matMulDims(a: readonly number[], b: readonly number[], transposeA: boolean, transposeB: boolean): MatMulDims {
  const ra = a.length;
  const rb = b.length;
  const size = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
  return {
    batch: Math.max(size(a.slice(0, -2)), size(b.slice(0, -2))),
    m: transposeA ? a[ra - 1] : a[ra - 2],
    n: transposeB ? b[rb - 2] : b[rb - 1],
    k: transposeA ? a[ra - 2] : a[ra - 1],
  };
}

/**
 * Whether tfjs-backend-webgpu 4.22 would run this matmul as MatMulSplitKProgram: few 32×32 output
 * tiles (at most `threshold`, or twice that with at most 8 rows), more than 128 outputs, one batch,
 * K of at least 2,000.
 */
export function tfjsSplitsK(d: MatMulDims, threshold: number): boolean {
  const tiles = d.batch * Math.ceil(d.m / 32) * Math.ceil(d.n / 32);
  const few = tiles <= threshold || (d.m <= 8 && tiles <= threshold * 2);
  return few && d.batch * d.m * d.n > 128 && d.batch === 1 && d.k >= 2000;
}

/** partial[p, i, j] = Σ_{k in part p} A[i, k]·B[k, j], with A and B read through their transposes. */
function partialProgram(parts: number, d: MatMulDims, transposeA: boolean, transposeB: boolean) {
  const aAt = transposeA ? 'k * uniforms.m + i' : 'i * uniforms.k + k';
  const bAt = transposeB ? 'j * uniforms.k + k' : 'k * uniforms.n + j';
  return namedProgram('XttsSplitKPartialProgram', {
    variableNames: ['A', 'B'],
    outputShape: [parts, d.m, d.n],
    shaderKey: `xtts_splitk_partial_${transposeA}_${transposeB}`,
    dispatchLayout: { x: [0, 1, 2] },
    dispatch: [Math.ceil((parts * d.m * d.n) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    uniforms: 'm : i32, n : i32, k : i32, chunk : i32,',
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          let j = index % uniforms.n;
          let i = (index / uniforms.n) % uniforms.m;
          let p = index / (uniforms.n * uniforms.m);
          let start = p * uniforms.chunk;
          let end = min(start + uniforms.chunk, uniforms.k);
          var s = 0.0;
          for (var k = start; k < end; k = k + 1) {
            s += A[${aAt}] * B[${bAt}];
          }
          setOutputAtIndex(index, s);
        }
      }`,
  });
}

/** out[i] = Σ_p partial[p·size + i], p in order. */
function sumPartsProgram(parts: number, size: number) {
  return namedProgram('XttsSplitKSumProgram', {
    variableNames: ['P'],
    outputShape: [size],
    shaderKey: 'xtts_splitk_sum',
    dispatchLayout: { x: [0] },
    dispatch: [Math.ceil(size / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    uniforms: 'parts : i32,',
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          var s = 0.0;
          for (var p = 0; p < uniforms.parts; p = p + 1) {
            s += P[p * uniforms.size + index];
          }
          setOutputAtIndex(index, s);
        }
      }`,
  });
}

function orderedSplitK(a: tfTypes.TensorInfo, b: tfTypes.TensorInfo, d: MatMulDims, transposeA: boolean, transposeB: boolean, backend: WebgpuBackendLike): tfTypes.TensorInfo {
  const parts = Math.ceil(d.k / CHUNK);
  // One entry per uniform: tfjs aligns a 4-value entry as a vec4, which the struct's four i32 are not.
  const partial = backend.runWebGPUProgram(partialProgram(parts, d, transposeA, transposeB), [a, b], 'float32', [d.m, d.n, d.k, CHUNK].map((v) => ({ type: 'int32', data: [v] })));
  const out = backend.runWebGPUProgram(sumPartsProgram(parts, d.m * d.n), [partial], 'float32', [{ type: 'int32', data: [parts] }]);
  backend.disposeData(partial.dataId);
  return out;
}

let tfjsBatchMatMul: tfTypes.KernelConfig | undefined;

/** Puts the ordered split-K in front of tfjs's BatchMatMul on webgpu (on), or takes it away (off: benches, tests). */
export function setOrderedSplitK(tf: Tf, on: boolean): void {
  const current = tf.getKernel('BatchMatMul', 'webgpu');
  if (!current) return;
  const ours = (current.kernelFunc as { xttsOrderedSplitK?: boolean }).xttsOrderedSplitK === true;
  if (!on) {
    if (ours && tfjsBatchMatMul) {
      tf.unregisterKernel('BatchMatMul', 'webgpu');
      tf.registerKernel(tfjsBatchMatMul);
    }
    return;
  }
  if (ours) return;
  const original = current;
  tfjsBatchMatMul = original;
  const kernelFunc = (args: { inputs: tfTypes.NamedTensorInfoMap; backend: unknown; attrs?: tfTypes.NamedAttrMap }) => {
    const a = args.inputs.a as tfTypes.TensorInfo;
    const b = args.inputs.b as tfTypes.TensorInfo;
    const transposeA = args.attrs?.transposeA === true;
    const transposeB = args.attrs?.transposeB === true;
    const backend = args.backend as WebgpuBackendLike;
    const d = matMulDims(a.shape, b.shape, transposeA, transposeB);
    const forced = tf.env().getNumber('WEBGPU_MATMUL_PROGRAM_TYPE') >= 0;
    if (forced || a.dtype !== 'float32' || b.dtype !== 'float32' || d.k !== (transposeB ? b.shape[b.shape.length - 1] : b.shape[b.shape.length - 2]) || !tfjsSplitsK(d, backend.thresholdToIncreaseWorkgroups ?? 8)) {
      return original.kernelFunc(args as never);
    }
    const out = orderedSplitK(a, b, d, transposeA, transposeB, backend);
    // [m·n] -> the output's shape (the batch dimensions of A and B, all 1): the same buffer, as tfjs's Reshape does.
    const outer = (a.shape.length >= b.shape.length ? a.shape : b.shape).slice(0, -2);
    return { dataId: out.dataId, shape: [...outer, d.m, d.n], dtype: 'float32' as const };
  };
  (kernelFunc as { xttsOrderedSplitK?: boolean }).xttsOrderedSplitK = true;
  tf.unregisterKernel('BatchMatMul', 'webgpu');
  tf.registerKernel({ ...original, kernelFunc: kernelFunc as unknown as tfTypes.KernelFunc });
}
