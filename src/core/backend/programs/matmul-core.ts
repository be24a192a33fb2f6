// What the matmul programs share: a matmul's dimensions as tfjs reads them, the ordered split-K (the
// parts of K summed in a fixed order, with a dense layer's bias and ReLU as its epilogue), and reading
// an operand's slab of K into workgroup memory. matmul.ts says which program takes which matmul.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram, type WebgpuProgramRunner } from '../kernels.js';

const WORKGROUP = 64;
/** K values each partial sums. */
const CHUNK = 256;

export interface WebgpuBackendLike extends WebgpuProgramRunner {
  thresholdToIncreaseWorkgroups?: number;
}

/** The shape of a BatchMatMul as tfjs-backend-webgpu 4.22 reads it (BatchMatMul_impl.js). */
export interface MatMulDims {
  /** The output's batch: the larger of A's and B's (the other is the same or 1). */
  batch: number;
  batchA: number;
  batchB: number;
  /** Rows of the output (A's outer dimension). */
  m: number;
  /** Columns of the output (B's outer dimension). */
  n: number;
  k: number;
}

export function matMulDims(
  a: readonly number[],
  b: readonly number[],
  transposeA: boolean,
  transposeB: boolean,
): MatMulDims {
  const ra = a.length;
  const rb = b.length;
  const size = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
  const [batchA, batchB] = [size(a.slice(0, -2)), size(b.slice(0, -2))];
  return {
    batch: Math.max(batchA, batchB),
    batchA,
    batchB,
    m: transposeA ? a[ra - 1] : a[ra - 2],
    n: transposeB ? b[rb - 2] : b[rb - 1],
    k: transposeA ? a[ra - 2] : a[ra - 1],
  };
}

/** One matmul as the programs take it: A and B, its dimensions (matMulDims), and whether each is read transposed. */
export interface MatMulCall {
  a: tfTypes.TensorInfo;
  b: tfTypes.TensorInfo;
  d: MatMulDims;
  transposeA: boolean;
  transposeB: boolean;
}

/**
 * tfjs-backend-webgpu 4.22's test for a matmul with too few 32×32 output tiles to fill the GPU (at
 * most `threshold`, or twice that with at most 8 rows): those get more workgroups another way.
 */
function fewTiles(d: MatMulDims, threshold: number): boolean {
  const tiles = d.batch * Math.ceil(d.m / 32) * Math.ceil(d.n / 32);
  return tiles <= threshold || (d.m <= 8 && tiles <= threshold * 2);
}

/**
 * Whether tfjs would run this matmul as MatMulSplitKProgram: few tiles, more than 128 outputs, one batch, K of at least
 * 2,000.
 */
export function tfjsSplitsK(d: MatMulDims, threshold: number): boolean {
  return fewTiles(d, threshold) && d.batch * d.m * d.n > 128 && d.batch === 1 && d.k >= 2000;
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
            s += f32(A[${aAt}]) * f32(B[${bAt}]);
          }
          setOutputAtIndex(index, s);
        }
      }`,
  });
}

/** WGSL of a dense layer's epilogue on the sum `v`: plus `bias` (a WGSL read; null: none), then ReLU where `relu`. */
export function epilogueCode(v: string, bias: string | null, relu: boolean): string {
  const biased = bias ? `${v} + ${bias}` : v;
  return relu ? `max(${biased}, 0.0)` : biased;
}

/**
 * out[i] = Σ_p partial[p·size + i], p in order; with `epilogue` (the wide program's split dense
 * layers), then plus bias[i mod n], then ReLU.
 */
export function sumPartsProgram(parts: number, size: number, epilogue?: { n: number; bias: boolean; relu: boolean }) {
  const value = epilogueCode('s', epilogue?.bias ? 'bias[index % uniforms.n]' : null, epilogue?.relu ?? false);
  return namedProgram('XttsSplitKSumProgram', {
    variableNames: epilogue?.bias ? ['P', 'bias'] : ['P'],
    outputShape: [size],
    shaderKey: epilogue ? `xtts_splitk_sum_${epilogue.bias}_${epilogue.relu}` : 'xtts_splitk_sum',
    dispatchLayout: { x: [0] },
    dispatch: [Math.ceil(size / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    uniforms: epilogue ? 'parts : i32, n : i32,' : 'parts : i32,',
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          var s = 0.0;
          for (var p = 0; p < uniforms.parts; p = p + 1) {
            s += P[p * uniforms.size + index];
          }
          setOutputAtIndex(index, ${value});
        }
      }`,
  });
}

/**
 * A split matmul's parts (`partial`, `parts` of `size` values) added in order into its output (sumPartsProgram);
 * `partial` is freed.
 */
export function sumPartsInOrder(
  backend: WebgpuProgramRunner,
  partial: tfTypes.TensorInfo,
  parts: number,
  size: number,
): tfTypes.TensorInfo {
  const out = backend.runWebGPUProgram(sumPartsProgram(parts, size), [partial], 'float32', [
    { type: 'int32', data: [parts] },
  ]);
  backend.disposeData(partial.dataId);
  return out;
}

export function orderedSplitK(
  { a, b, d, transposeA, transposeB }: MatMulCall,
  backend: WebgpuBackendLike,
): tfTypes.TensorInfo {
  const parts = Math.ceil(d.k / CHUNK);
  // One entry per uniform: tfjs aligns a 4-value entry as a vec4, which the struct's four i32 are not.
  const partial = backend.runWebGPUProgram(
    partialProgram(parts, d, transposeA, transposeB),
    [a, b],
    'float32',
    [d.m, d.n, d.k, CHUNK].map((v) => ({ type: 'int32', data: [v] })),
  );
  return sumPartsInOrder(backend, partial, parts, d.m * d.n);
}

/** Whether tfjs would run this matmul as its 32×32-tile MatMulPackedProgram (enough output tiles). */
export function tfjsPacks(d: MatMulDims, threshold: number): boolean {
  return !fewTiles(d, threshold);
}

// ---------------------------------------------------------------------------------------------
// What the f16 program and the dense layers' one-program backward (dense.ts) share: reading one
// operand's slab of K into workgroup memory; and the operands' indices, which the wide program reads too.

/** Logical A[r, kk] of batch bA and B[kk, c] of batch bB, read through the transposes. */
export function operandIndex(
  transposeA: boolean,
  transposeB: boolean,
  u: (name: string) => string = (name) => `uniforms.${name}`,
): { aAt: string; bAt: string } {
  const [m, n, k] = [u('m'), u('n'), u('k')];
  return {
    aAt: transposeA ? `bA * ${k} * ${m} + kk * ${m} + r` : `bA * ${m} * ${k} + r * ${k} + kk`,
    bAt: transposeB ? `bB * ${n} * ${k} + c * ${k} + kk` : `bB * ${k} * ${n} + kk * ${n} + c`,
  };
}

/**
 * One operand's slab into its workgroup array (zero outside the matrix) by `lanes` invocations, each
 * its `tile · slab / lanes` loads: load e of invocation `tid` is slab row s and tile lane `lane`, taken
 * along K where K is the operand's contiguous dimension (A, Bᵀ: `alongK`), along the lanes otherwise,
 * so that neighbouring invocations read neighbouring values. `lane` is row r of A or column c of B
 * (`index`), at tile offset `origin`, below `limit`; K below `kLimit`. `store` places (s, lane) in the
 * array; `read` is the value read (WGSL, of `index` and kk); `convert` wraps the value stored.
 */
export interface SlabOperand {
  lanes: number;
  slab: number;
  tile: number;
  tid: string;
  alongK: boolean;
  array: string;
  index: string;
  origin: string;
  limit: string;
  kLimit: string;
  store: string;
  read: string;
  convert: (v: string) => string;
}

/** One operand's slab into its workgroup array (SlabOperand). */
export function slabLoad(o: SlabOperand): string {
  const slot = o.alongK
    ? `let flat = ${o.tid} + e * ${o.lanes}; let s = flat % ${o.slab}; let lane = flat / ${o.slab};`
    : `let flat = ${o.tid} + e * ${o.lanes}; let s = flat / ${o.tile}; let lane = flat % ${o.tile};`;
  return `
          for (var e = 0; e < ${(o.tile * o.slab) / o.lanes}; e = e + 1) {
            ${slot}
            let ${o.index} = ${o.origin} + lane;
            let kk = k0 + s;
            var v = 0.0;
            if (${o.index} < ${o.limit} && kk < ${o.kLimit}) {
              v = ${o.read};
            }
            ${o.array}[${o.store}] = ${o.convert('v')};
          }`;
}
