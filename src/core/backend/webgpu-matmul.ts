// Matmuls with a long inner dimension and a small output, without atomics. tfjs-backend-webgpu gives
// them more workgroups by splitting K (MatMulSplitKProgram) and adds the parts into the output with an
// atomic compare-and-swap loop: the order of the additions changes from run to run, so a weight
// gradient such as the duration predictor's output layer's (dur.out: a [256, 1] output over batch ×
// text tokens, 32 × 80, in the small preset) is not the same twice, and a replayed training step cannot equal an eager one bit for bit. Here the same
// cases run in two programs: every (part, row, column) sums its slice of K into a partial of its
// own, then each output sums its parts in order — the same value every time. With device.matmul:
// tiled (setTiledMatMul) the matmuls tfjs would run as its 32×32-tile MatMulPackedProgram go to the
// tiled program at the end of this file. Everything else (and anything tfjs's
// WEBGPU_MATMUL_PROGRAM_TYPE flag forces) goes to tfjs's own kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram, wrapWebgpuKernel } from './kernels.js';

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

export function matMulDims(a: readonly number[], b: readonly number[], transposeA: boolean, transposeB: boolean): MatMulDims {
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

/**
 * tfjs-backend-webgpu 4.22's test for a matmul with too few 32×32 output tiles to fill the GPU (at
 * most `threshold`, or twice that with at most 8 rows): those get more workgroups another way.
 */
function fewTiles(d: MatMulDims, threshold: number): boolean {
  const tiles = d.batch * Math.ceil(d.m / 32) * Math.ceil(d.n / 32);
  return tiles <= threshold || (d.m <= 8 && tiles <= threshold * 2);
}

/** Whether tfjs would run this matmul as MatMulSplitKProgram: few tiles, more than 128 outputs, one batch, K of at least 2,000. */
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

/** Whether tfjs would run this matmul as its 32×32-tile MatMulPackedProgram (enough output tiles). */
export function tfjsPacks(d: MatMulDims, threshold: number): boolean {
  return !fewTiles(d, threshold);
}

/** device.matmul: tiled — set per engine by setTiledMatMul. */
let tiled = false;

/**
 * device.matmul: 'tiled' sends the matmuls tfjs would run as MatMulPackedProgram to xtts's tiled
 * program (below); 'tfjs' leaves them to tfjs. Set with the backend (initBackend's matmul option);
 * the ordered split-K (setOrderedSplitK) must be in place.
 */
export function setTiledMatMul(on: boolean): void {
  tiled = on;
}

/**
 * Puts the ordered split-K (and, once setTiledMatMul turns it on, the tiled matmul) in front of tfjs's
 * BatchMatMul on webgpu (on), or takes it away (off: benches, tests).
 */
export function setOrderedSplitK(tf: Tf, on: boolean): void {
  wrapWebgpuKernel(tf, 'BatchMatMul', on, (original) => (args) => {
    const a = args.inputs.a as tfTypes.TensorInfo;
    const b = args.inputs.b as tfTypes.TensorInfo;
    const transposeA = args.attrs?.transposeA === true;
    const transposeB = args.attrs?.transposeB === true;
    const backend = args.backend as WebgpuBackendLike;
    const d = matMulDims(a.shape, b.shape, transposeA, transposeB);
    const forced = tf.env().getNumber('WEBGPU_MATMUL_PROGRAM_TYPE') >= 0;
    if (forced || a.dtype !== 'float32' || b.dtype !== 'float32' || d.k !== (transposeB ? b.shape[b.shape.length - 1] : b.shape[b.shape.length - 2])) {
      return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    }
    const threshold = backend.thresholdToIncreaseWorkgroups ?? 8;
    const ordered = tfjsSplitsK(d, threshold);
    // The programs here take equal batches or one of 1.
    if (!ordered && !(tiled && tfjsPacks(d, threshold) && (d.batchA === d.batchB || d.batchA === 1 || d.batchB === 1))) return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const out = ordered ? orderedSplitK(a, b, d, transposeA, transposeB, backend) : tiledMatMul(a, b, d, transposeA, transposeB, backend);
    // The output's shape (tfjs broadcasts the batch dimensions): the same buffer, as tfjs's Reshape does.
    const outer = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
    return { dataId: out.dataId, shape: [...outer, d.m, d.n], dtype: 'float32' as const };
  });
}

// ---------------------------------------------------------------------------------------------
// A tiled matmul (device.matmul: tiled): 16×16 invocations of R×R outputs each, so output tiles of
// 16R × 16R (R = 8: 128×128 where the output has enough such tiles to fill the device twice over; R = 4:
// 64×64 otherwise), K in slabs of 16 through workgroup memory. Each operand's slab is read in the order
// it lies in memory (along K for A and Bᵀ, along the rows or columns for Aᵀ and B), so that neighbouring
// invocations read neighbouring values, and stored K-major with rows of TILE + 2 values, so that the
// stores of either order fall in distinct banks. An invocation's outputs are rows ty + 16i and columns
// tx + 16j: its reads of workgroup memory are broadcasts (A) or 16 consecutive values (B), and its
// writes of the output neighbour its neighbours'. Accumulators are named variables, not an array, so
// that the shader compiler keeps them in registers. Batched, broadcast over a batch of 1, either
// operand transposed.

const SLAB = 16;
/** 128×128 tiles from this many of them (about two per streaming multiprocessor of an H100). */
const LARGE_TILES_FROM = 256;

/** Outputs per invocation along each side: 8 where the 128×128 tiles are enough, else 4. */
export function tiledPerInvocation(d: MatMulDims): 4 | 8 {
  return Math.ceil(d.m / 128) * Math.ceil(d.n / 128) * d.batch >= LARGE_TILES_FROM ? 8 : 4;
}

function tiledProgram(d: MatMulDims, transposeA: boolean, transposeB: boolean) {
  const R = tiledPerInvocation(d);
  const TILE = 16 * R;
  const STRIDE = TILE + 2;
  const loads = (TILE * SLAB) / 256;
  // Logical A[r, kk] and B[kk, c] of batch bA / bB, read through the transposes.
  const aAt = transposeA ? 'bA * uniforms.k * uniforms.m + kk * uniforms.m + r' : 'bA * uniforms.m * uniforms.k + r * uniforms.k + kk';
  const bAt = transposeB ? 'bB * uniforms.n * uniforms.k + c * uniforms.k + kk' : 'bB * uniforms.k * uniforms.n + kk * uniforms.n + c';
  // Which (slab row, tile lane) load number e of invocation tid fills: along K where K is the
  // operand's contiguous dimension, along the lanes otherwise.
  const slot = (alongK: boolean) =>
    alongK ? `let flat = tid + e * 256; let s = flat % ${SLAB}; let lane = flat / ${SLAB};` : `let flat = tid + e * 256; let s = flat / ${TILE}; let lane = flat % ${TILE};`;
  // One operand's slab into its workgroup array (zero outside the matrix): `lane` is row r of A or
  // column c of B, at tile offset `origin`, below `limit`.
  const load = (array: string, operand: string, alongK: boolean, index: string, origin: string, limit: string, at: string) => `
          for (var e = 0; e < ${loads}; e = e + 1) {
            ${slot(alongK)}
            let ${index} = ${origin} + lane;
            let kk = k0 + s;
            var v = 0.0;
            if (${index} < ${limit} && kk < uniforms.k) {
              v = f32(${operand}[${at}]);
            }
            ${array}[s * ${STRIDE} + lane] = v;
          }`;
  const range = (n: number) => [...Array(n).keys()];
  const pairs = range(R).flatMap((i) => range(R).map((j) => [i, j] as const));
  return namedProgram('XttsTiledMatMulProgram', {
    variableNames: ['A', 'B'],
    outputShape: [d.batch, d.m, d.n],
    shaderKey: `xtts_matmul_tiled${R}_${transposeA}_${transposeB}`,
    dispatchLayout: { x: [2], y: [1], z: [0] },
    dispatch: [Math.ceil(d.n / TILE), Math.ceil(d.m / TILE), d.batch],
    workgroupSize: [16, 16, 1],
    uniforms: 'm : i32, n : i32, k : i32, batchA : i32, batchB : i32,',
    getUserCode: () => `
      var<workgroup> As : array<f32, ${SLAB * STRIDE}>;
      var<workgroup> Bs : array<f32, ${SLAB * STRIDE}>;
      fn main() {
        let tx = i32(localId.x);
        let ty = i32(localId.y);
        let tid = ty * 16 + tx;
        let b = i32(workgroupId.z);
        let bA = select(b, 0, uniforms.batchA == 1);
        let bB = select(b, 0, uniforms.batchB == 1);
        let row0 = i32(workgroupId.y) * ${TILE};
        let col0 = i32(workgroupId.x) * ${TILE};
        ${pairs.map(([i, j]) => `var c${i}_${j} = 0.0;`).join(' ')}
        for (var k0 = 0; k0 < uniforms.k; k0 = k0 + ${SLAB}) {${load('As', 'A', !transposeA, 'r', 'row0', 'uniforms.m', aAt)}${load('Bs', 'B', transposeB, 'c', 'col0', 'uniforms.n', bAt)}
          workgroupBarrier();
          for (var s = 0; s < ${SLAB}; s = s + 1) {
            let base = s * ${STRIDE};
            ${range(R).map((i) => `let a${i} = As[base + ty + ${16 * i}];`).join(' ')}
            ${range(R).map((j) => `let b${j} = Bs[base + tx + ${16 * j}];`).join(' ')}
            ${pairs.map(([i, j]) => `c${i}_${j} = fma(a${i}, b${j}, c${i}_${j});`).join('\n            ')}
          }
          workgroupBarrier();
        }
        ${range(R)
          .map(
            (i) => `{
          let r = row0 + ty + ${16 * i};
          if (r < uniforms.m) {
            ${range(R).map((j) => `if (col0 + tx + ${16 * j} < uniforms.n) { setOutputAtCoords(b, r, col0 + tx + ${16 * j}, c${i}_${j}); }`).join('\n            ')}
          }
        }`,
          )
          .join('\n        ')}
      }`,
  });
}

/** A × B through the tiled program; the caller checks the dtypes, inner dimensions and batches. */
function tiledMatMul(a: tfTypes.TensorInfo, b: tfTypes.TensorInfo, d: MatMulDims, transposeA: boolean, transposeB: boolean, backend: WebgpuBackendLike): tfTypes.TensorInfo {
  return backend.runWebGPUProgram(tiledProgram(d, transposeA, transposeB), [a, b], 'float32', [d.m, d.n, d.k, d.batchA, d.batchB].map((v) => ({ type: 'int32', data: [v] })));
}
