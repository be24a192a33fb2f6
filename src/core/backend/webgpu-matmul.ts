// Matmuls with a long inner dimension and a small output, without atomics. tfjs-backend-webgpu gives
// them more workgroups by splitting K (MatMulSplitKProgram) and adds the parts into the output with an
// atomic compare-and-swap loop: the order of the additions changes from run to run, so a weight
// gradient such as the duration predictor's output layer's (dur.out: a [256, 1] output over batch ×
// text tokens, 32 × 80, in the small preset) is not the same twice, and a replayed training step cannot equal an eager
// one bit for bit. Here the same
// cases run in two programs: every (part, row, column) sums its slice of K into a partial of its
// own, then each output sums its parts in order — the same value every time. With device.matmul:
// tiled (setMatMulProgram; the default) the matmuls tfjs would run as its 32×32-tile
// MatMulPackedProgram go to the wide program further down where its tiles fill the device (wideShape);
// with training.precision: mixed_fp16 they, and the dense layers'
// _FusedMatMul, go to the tensor-core program at the end of this file. Everything else (and anything tfjs's
// WEBGPU_MATMUL_PROGRAM_TYPE flag forces) goes to tfjs's own kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram, outputsProgram, runWithOutputs, type WebgpuProgramRunner, wrapWebgpuKernel } from './kernels.js';

type Tf = typeof import('@tensorflow/tfjs-core');

const WORKGROUP = 64;
/** K values each partial sums. */
const CHUNK = 256;

interface WebgpuBackendLike extends WebgpuProgramRunner {
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
function epilogueCode(v: string, bias: string | null, relu: boolean): string {
  const biased = bias ? `${v} + ${bias}` : v;
  return relu ? `max(${biased}, 0.0)` : biased;
}

/**
 * out[i] = Σ_p partial[p·size + i], p in order; with `epilogue` (the wide program's split dense
 * layers), then plus bias[i mod n], then ReLU.
 */
function sumPartsProgram(parts: number, size: number, epilogue?: { n: number; bias: boolean; relu: boolean }) {
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

function orderedSplitK(
  a: tfTypes.TensorInfo,
  b: tfTypes.TensorInfo,
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
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
  const out = backend.runWebGPUProgram(sumPartsProgram(parts, d.m * d.n), [partial], 'float32', [
    { type: 'int32', data: [parts] },
  ]);
  backend.disposeData(partial.dataId);
  return out;
}

/** Whether tfjs would run this matmul as its 32×32-tile MatMulPackedProgram (enough output tiles). */
export function tfjsPacks(d: MatMulDims, threshold: number): boolean {
  return !fewTiles(d, threshold);
}

/** Which program runs the matmuls tfjs would run as MatMulPackedProgram (set per engine). */
export type MatMulProgram = 'tfjs' | 'tiled' | 'f16';
let program: MatMulProgram = 'tfjs';
/** The subgroup-matrix shape the f16 program is built for (the adapter's f16→f32 configuration). */
let unit: SubgroupMatrixShape = { M: 16, N: 16, K: 16 };

export interface SubgroupMatrixShape {
  M: number;
  N: number;
  K: number;
}

/**
 * 'tfjs' leaves the large float32 matmuls to tfjs; 'tiled' (device.matmul: tiled) sends those whose
 * tiles fill the device to xtts's wide float32 program (wideShape); 'f16' (training.precision: mixed_fp16) to the
 * tensor-core program (f16
 * operands through Dawn's subgroup matrices of shape `shape`, f32 sums), which also takes the dense
 * layers' _FusedMatMul. Set with the backend (registerWebgpuBackend); the ordered split-K
 * (setOrderedSplitK) must be in place.
 */
export function setMatMulProgram(p: MatMulProgram, shape?: SubgroupMatrixShape): void {
  program = p;
  if (shape) unit = shape;
}

/** The program the large matmuls run in now (setMatMulProgram). */
export function matMulProgram(): MatMulProgram {
  return program;
}

/**
 * Puts the ordered split-K (and, once setMatMulProgram picks one, the tiled or f16 matmul) in front of
 * tfjs's BatchMatMul on webgpu (on), or takes it away (off: benches, tests); and the f16 program in
 * front of _FusedMatMul (a dense layer's act(x·W + b)) while it is the one picked.
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
    const out = ordered
      ? orderedSplitK(a, b, d, transposeA, transposeB, backend)
      : f16
        ? subgroupMatMul(a, b, d, transposeA, transposeB, backend)
        : wideMatMul(a, b, d, transposeA, transposeB, wide!, backend);
    // The output's shape (tfjs broadcasts the batch dimensions): the same buffer, as tfjs's Reshape does.
    const outer = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
    return { dataId: out.dataId, shape: [...outer, d.m, d.n], dtype: 'float32' as const };
  });
  wrapWebgpuKernel(tf, '_FusedMatMul', on, (original) => (args) => {
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
    const out =
      program === 'f16'
        ? subgroupMatMul(a, b, d, transposeA, transposeB, backend, epilogue)
        : wideMatMul(a, b, d, transposeA, transposeB, wide!, backend, epilogue);
    return { dataId: out.dataId, shape: [d.m, d.n], dtype: 'float32' as const };
  });
}

// ---------------------------------------------------------------------------------------------
// What the f16 program and the dense layers' one-program backward (webgpu-dense.ts) share: reading one
// operand's slab of K into workgroup memory; and the operands' indices, which the wide program reads too.

/** Logical A[r, kk] of batch bA and B[kk, c] of batch bB, read through the transposes. */
function operandIndex(
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

// ---------------------------------------------------------------------------------------------
// The wide program.

/** K in slabs of this many through workgroup memory (the dense layers' one-program backward, webgpu-dense.ts). */
export const SLAB = 16;
/** 128×128 tiles from this many of them (about two per streaming multiprocessor of an H100). */
const LARGE_TILES_FROM = 256;

// The wide float32 program (device.matmul: tiled, where wideShape says; and the attention's strided
// products, stridedMatMuls, whatever the precision): 16×16 invocations of 8×8
// outputs each in 128×128 tiles, as two 4×4 blocks 64 rows and 64 columns apart (one 4×4 block in
// 64×64 tiles). Both operands' slabs of K (`WIDE_SLAB` deep) lie in workgroup memory as vec4 of four
// rows (A) or four columns (B) at each k: per k an invocation of the 128×128 tiles reads two vec4 of A
// and two of B and makes 64 fused multiply-adds into sixteen vec4 sums (a scalar 8×8 block reads 16
// values for its 64). Each k's row of vec4 has one vec4 of padding, so that the slab's
// stores, along K or along the tile, fall in distinct banks. The next slab's values are read from
// global memory into registers while the current slab is multiplied, and stored once every
// invocation is done with it. Slabs of 8: slabs of 16 ran slower on an H100 (bench/matmul.bench.ts,
// the same call). The loop over a slab's 8 k is left to the compiler: written out 8 times (constant
// offsets), normal's passes took 99.8 ms against 93.2 (an H100, float32, the same call).
const WIDE_SLAB = 8;

/** The wide program's output tile side (128, or 64) and the parts of K it sums a matmul in. */
export interface WideShape {
  side: 128 | 64;
  parts: number;
}

/**
 * How the wide program takes a matmul, or null where it does not: 128×128 tiles where they fill the
 * device (LARGE_TILES_FROM); for an unbatched matmul with a long K and too few of them, at least 16
 * (a weight gradient: 512 × 2,048 over 12,032 is 64 tiles), those tiles over 2–8 equal parts of K,
 * each at least 512 deep; else 64×64 tiles where they fill the device (a text encoder's 2,560 × 512).
 * Tried on whole steps (an H100, float32, same call): not counting the tiles of a side shorter than
 * the tile, with a split only from 32 tiles, made normal's passes 102.3–102.9 ms against 101.2 and
 * small's 30.9 against 30.0, though the matmul bench had found single matmuls of those kinds faster so;
 * 128×128 tiles from 128 of them (a decoder's 6,016 × 512: 188 tiles, not 752 of 64×64) made
 * normal's passes 95.0 ms against 93.3, small's 28.56 against 28.42.
 */
export function wideShape(d: MatMulDims): WideShape | null {
  const tiles = (side: number) => Math.ceil(d.m / side) * Math.ceil(d.n / side) * d.batch;
  if (tiles(128) >= LARGE_TILES_FROM) return { side: 128, parts: 1 };
  if (d.batch === 1 && tiles(128) >= 16) {
    // Parts of equal depth, a whole number of slabs each (the program's loop runs a part's chunk):
    // the most up to what fills the device that divide K so (12,032 in 4 or 8).
    for (
      let parts = Math.min(8, Math.ceil(LARGE_TILES_FROM / tiles(128)), Math.floor(d.k / 512));
      parts >= 2;
      parts--
    ) {
      if (d.k % (parts * WIDE_SLAB) === 0) return { side: 128, parts };
    }
  }
  return tiles(64) >= LARGE_TILES_FROM ? { side: 64, parts: 1 } : null;
}

/**
 * wideShape for a dense layer's forward (_FusedMatMul), but split over K only where the parts'
 * workgroups are as many as the 128×128 tiles must be (LARGE_TILES_FROM). On an H100, float32, in one
 * call: normal's FFN outputs (2,560 × 512 over 2,048 in 4 parts: 320 workgroups; 6,016 × 512 in 2:
 * 376) took its step's passes from 95.8 to 95.0 ms; small's (2,560 × 256 over 1,024 in 2 parts: 80;
 * 6,016 × 256: 188) took its passes from 28.3 to 28.7 ms against tfjs's fused program.
 */
export function wideDenseShape(d: MatMulDims): WideShape | null {
  const shape = wideShape(d);
  if (!shape || shape.parts === 1) return shape;
  return Math.ceil(d.m / 128) * Math.ceil(d.n / 128) * shape.parts >= LARGE_TILES_FROM ? shape : null;
}

/**
 * The depth of K each part of the wide program runs (its loop's bound): one part, the whole of K in
 * slabs (the last one partly past K, read as zeros); several, equal parts (wideShape).
 */
function wideChunk(k: number, parts: number): number {
  return Math.ceil(k / parts / WIDE_SLAB) * WIDE_SLAB;
}

/**
 * A × B through the wide program, in `shape.parts` of K summed in order (sumPartsProgram, with the epilogue) where
 * there are several.
 */
function wideMatMul(
  a: tfTypes.TensorInfo,
  b: tfTypes.TensorInfo,
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
  shape: WideShape,
  backend: WebgpuBackendLike,
  epilogue: { bias?: tfTypes.TensorInfo; relu: boolean } = { relu: false },
): tfTypes.TensorInfo {
  const parts = shape.parts;
  const uniforms = [d.m, d.n, d.k, d.batchA, d.batchB, wideChunk(d.k, parts)].map((v) => ({
    type: 'int32',
    data: [v],
  }));
  // The epilogue on each finished sum: in the program where K is whole, else in the sum of the parts.
  const bias = epilogue.bias !== undefined;
  const inputs = bias && parts === 1 ? [a, b, epilogue.bias!] : [a, b];
  const program = wideProgram(
    d,
    shape,
    matMulAddressing(
      d,
      transposeA,
      transposeB,
      parts,
      parts === 1 ? { bias, relu: epilogue.relu } : { bias: false, relu: false },
    ),
  );
  const out = backend.runWebGPUProgram(program, inputs, 'float32', uniforms);
  if (parts === 1) return out;
  const after = bias || epilogue.relu;
  const sums = sumPartsProgram(parts, d.m * d.n, after ? { n: d.n, bias, relu: epilogue.relu } : undefined);
  const values = after ? [parts, d.n] : [parts];
  const sum = backend.runWebGPUProgram(
    sums,
    bias ? [out, epilogue.bias!] : [out],
    'float32',
    values.map((v) => ({ type: 'int32', data: [v] })),
  );
  backend.disposeData(out.dataId);
  return sum;
}

/**
 * How one operand of the wide program is read where its products read it one way: whether K is its
 * contiguous dimension (A, Bᵀ: neighbouring invocations then read along K), and the value at
 * (r, kk) of A or (kk, c) of B, WGSL; `when`, the condition (uniform across a workgroup) under which
 * this way is taken where there are several, one per product of stridedMatMuls.
 */
interface WideOperand {
  when: string | null;
  alongK: boolean;
  read: string;
}

/**
 * Where the wide program reads and writes: its inputs' and uniforms' names (m, n, k and chunk among
 * them), output shape and dispatch layout (x the columns, y the rows), workgroups along z; the
 * prologue, which names from workgroup z (`b`) the part of K (kBegin, kEnd) and what the reads and
 * the store use; the ways of reading A and B; the store of output (r, c) of value v.
 */
interface WideAddressing {
  name: string;
  key: string;
  inputs: string[];
  uniforms: string;
  outputShape: number[];
  layout: Record<string, number[]>;
  z: number;
  prologue: string;
  A: WideOperand[];
  B: WideOperand[];
  store: (r: string, c: string, v: string) => string;
}

/**
 * A (batched) matmul's addressing in the wide program, in `parts` of K; `epilogue` (a dense layer's _FusedMatMul, one
 * part): the bias added to each sum, then ReLU.
 */
function matMulAddressing(
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
  parts: number,
  epilogue: { bias: boolean; relu: boolean },
): WideAddressing {
  const at = operandIndex(transposeA, transposeB);
  return {
    name: 'XttsWideMatMulProgram',
    key: `${transposeA}_${transposeB}_${parts > 1 ? 'parts' : 'whole'}_${epilogue.bias}_${epilogue.relu}`,
    inputs: epilogue.bias ? ['A', 'B', 'bias'] : ['A', 'B'],
    uniforms: 'm : i32, n : i32, k : i32, batchA : i32, batchB : i32, chunk : i32,',
    // Split over K (an unbatched matmul): workgroup z is the part, and each part's sums its own output.
    outputShape: [d.batch * parts, d.m, d.n],
    layout: { x: [2], y: [1], z: [0] },
    z: d.batch * parts,
    prologue:
      parts > 1
        ? 'let bA = 0; let bB = 0; let kBegin = b * uniforms.chunk; let kEnd = min(kBegin ' +
          '+ uniforms.chunk, uniforms.k);'
        : 'let bA = select(b, 0, uniforms.batchA == 1); let bB = select(b, 0, ' +
          'uniforms.batchB == 1); let kBegin = 0; let kEnd = uniforms.k;',
    A: [{ when: null, alongK: !transposeA, read: `f32(A[${at.aAt}])` }],
    B: [{ when: null, alongK: transposeB, read: `f32(B[${at.bAt}])` }],
    store: (r, c, v) =>
      `setOutputAtCoords(b, ${r}, ${c}, ${epilogueCode(v, epilogue.bias ? 'bias[c]' : null, epilogue.relu)});`,
  };
}

/** The wide program of `shape` (its tile side; its parts of K, the addressing's), reading and writing through `at`. */
function wideProgram(d: { m: number; n: number }, shape: WideShape, at: WideAddressing) {
  const K = WIDE_SLAB;
  const H = shape.side / 64; // 4×4 blocks per invocation along each side, 64 rows or columns apart
  const TILE = shape.side;
  const ROW = TILE / 4 + 1; // vec4 per k: the tile's and one of padding
  const L = (TILE * K) / 256; // values of each operand an invocation loads per slab
  const range = (n: number) => [...Array(n).keys()];
  // Invocation tid's e-th load of a slab: k (s) and tile lane, along K where K is contiguous in memory.
  const slot = (alongK: boolean, e: number) =>
    alongK
      ? `let s = (tid + ${256 * e}) % ${K}; let lane = (tid + ${256 * e}) / ${K};`
      : `let s = (tid + ${256 * e}) / ${TILE}; let lane = (tid + ${256 * e}) % ${TILE};`;
  // Each way of reading an operand under its condition (one way: unconditionally).
  const ways = (operand: WideOperand[], code: (way: WideOperand) => string) =>
    operand.length === 1
      ? code(operand[0])
      : operand.map((way, i) => `${i ? ' else ' : '\n          '}if (${way.when}) {${code(way)}\n          }`).join('');
  const fetchWay = (operand: 'A' | 'B', way: WideOperand, index: string, origin: string, limit: string) =>
    range(L)
      .map(
        (e) => `{
          ${slot(way.alongK, e)}
          let ${index} = ${origin} + lane;
          let kk = k0 + s;
          p${operand}${e} = 0.0;
          if (${index} < ${limit} && kk < kEnd) { p${operand}${e} = ${way.read}; }
        }`,
      )
      .join('');
  const fetch = (operand: 'A' | 'B', index: string, origin: string, limit: string) =>
    ways(at[operand], (way) => fetchWay(operand, way, index, origin, limit));
  // The stores follow the loads' order: one way where the ways agree on it.
  const put = (operand: 'A' | 'B', base = '0') => {
    const putWay = (way: WideOperand) =>
      range(L)
        .map(
          (e) => `{ ${slot(way.alongK, e)} ${operand}s[${base} + s * ${ROW} + lane / 4][lane % 4] = p${operand}${e}; }`,
        )
        .join('\n          ');
    const one = at[operand].every((way) => way.alongK === at[operand][0].alongK);
    return one ? putWay(at[operand][0]) : ways(at[operand], putWay);
  };
  const rows = range(4 * H);
  const blocks = range(H);
  const component = (i: number) => `a${Math.floor(i / 4)}.${'xyzw'[i % 4]}`;
  return namedProgram(at.name, {
    variableNames: at.inputs,
    outputShape: at.outputShape,
    shaderKey: `xtts_matmul_wide${K}_${at.key}_${TILE}`,
    dispatchLayout: at.layout,
    dispatch: [Math.ceil(d.n / TILE), Math.ceil(d.m / TILE), at.z],
    workgroupSize: [16, 16, 1],
    uniforms: at.uniforms,
    getUserCode: () => `
      var<workgroup> As : array<vec4<f32>, ${2 * K * ROW}>;
      var<workgroup> Bs : array<vec4<f32>, ${2 * K * ROW}>;
      fn main() {
        let tx = i32(localId.x);
        let ty = i32(localId.y);
        let tid = ty * 16 + tx;
        let b = i32(workgroupId.z);
        ${at.prologue}
        let row0 = i32(workgroupId.y) * ${TILE};
        let col0 = i32(workgroupId.x) * ${TILE};
        ${rows.map((i) => blocks.map((h) => `var c${i}_${h} = vec4<f32>(0.0);`).join(' ')).join(' ')}
        ${range(L)
          .map((e) => `var pA${e} = 0.0; var pB${e} = 0.0;`)
          .join(' ')}
        var k0 = kBegin;
        ${fetch('A', 'r', 'row0', 'uniforms.m')}${fetch('B', 'c', 'col0', 'uniforms.n')}
        ${put('A')}
        ${put('B')}
        workgroupBarrier();
        // Two slabs in workgroup memory, one barrier a slab: slab i is multiplied from half cur while
        // slab i + 1 goes into the other half, which every invocation was done reading at the barrier
        // before. A loop bound of uniforms only (its barriers need uniform control flow): the part's chunk of K.
        var cur = 0;
        for (var t = 0; t < uniforms.chunk; t = t + ${K}) {
          k0 = k0 + ${K};
          // The next slab while this one is multiplied. A part must be exactly its chunk deep
          // (wideShape splits only so): past a part's end the registers would keep this slab.
          if (k0 < kEnd) {${fetch('A', 'r', 'row0', 'uniforms.m')}${fetch('B', 'c', 'col0', 'uniforms.n')}
          }
          for (var s = 0; s < ${K}; s = s + 1) {
            ${blocks
              .map(
                (h) =>
                  `let a${h} = As[cur + s * ${ROW} + ${16 * h} + ty];\n` +
                  `            let b${h} = Bs[cur + s * ${ROW} + ${16 * h} + tx];`,
              )
              .join('\n            ')}
            ${rows
              .map((i) =>
                blocks
                  .map((h) => `c${i}_${h} = fma(vec4<f32>(${component(i)}), b${h}, c${i}_${h});`)
                  .join('\n            '),
              )
              .join('\n            ')}
          }
          let next = ${K * ROW} - cur;
          ${put('A', 'next')}
          ${put('B', 'next')}
          workgroupBarrier();
          cur = next;
        }
        ${rows
          .map(
            (i) => `{
          let r = row0 + ${64 * Math.floor(i / 4)} + ty * 4 + ${i % 4};
          if (r < uniforms.m) {
            ${blocks
              .flatMap((h) =>
                range(4).map(
                  (j) =>
                    `{ let c = col0 + ${h * 64} + tx * 4 + ${j}; if (c < uniforms.n) ` +
                    `{ ${at.store('r', 'c', `c${i}_${h}.${'xyzw'[j]}`)} } }`,
                ),
              )
              .join('\n            ')}
          }
        }`,
          )
          .join('\n        ')}
      }`,
  });
}

/**
 * A matrix of a [batch, heads]-batched matmul's operand or output, in place in a larger tensor:
 * element (b, h, i, j) at offset + b·sb + h·sh + i·si + j·sj (in elements).
 */
export interface StridedMatrix {
  offset: number;
  sb: number;
  sh: number;
  si: number;
  sj: number;
}

/** The shape of a strided batched matmul: out[b, h] (m × n) = A[b, h] (m × k) · B[b, h] (k × n). */
export interface StridedDims {
  batch: number;
  heads: number;
  m: number;
  n: number;
  k: number;
}

/** One product of stridedMatMuls: A and B (indices into its inputs) and the output, each through strides. */
export interface StridedProduct {
  a: number;
  av: StridedMatrix;
  b: number;
  bv: StridedMatrix;
  ov: StridedMatrix;
}

const STRIDES = ['Offset', 'B', 'H', 'I', 'J'];

/**
 * The wide program's tile side for strided products of `d` (`count` of them): 128 where those tiles
 * fill the device and cover no more than 64×64 tiles would, else 64. An attention's products are
 * about 188 long on a side and 64 on the other (a head), which 128×128 tiles would cover at a third
 * to a half of their work.
 */
export function stridedSide(d: StridedDims, count: number): 64 | 128 {
  const covered = (side: number) => Math.ceil(d.m / side) * Math.ceil(d.n / side) * side * side;
  const tiles = Math.ceil(d.m / 128) * Math.ceil(d.n / 128) * d.batch * d.heads * count;
  return tiles >= LARGE_TILES_FROM && covered(128) <= covered(64) ? 128 : 64;
}

/**
 * out = A·B for every (b, h) of each product (all of the same m, n and k, into one output tensor of
 * `outShape`), the wide program reading A and B and writing the output through strides
 * (StridedMatrix), so that attention heads are read from and written to their projections'
 * [rows, heads·dh] layout in place, without transposes, slices or concatenations. The caller's
 * strides write each element of the output once. Float32, on the webgpu backend.
 */
export function stridedMatMuls(
  backend: WebgpuBackendLike,
  inputs: tfTypes.TensorInfo[],
  products: StridedProduct[],
  outShape: number[],
  d: StridedDims,
): tfTypes.TensorInfo {
  const batches = d.batch * d.heads;
  const names = inputs.map((_, i) => `x${i}`);
  const u = (p: number, operand: string, field: string) => `uniforms.${operand}${field}${p}`;
  // Workgroup z is (product, b, h); each product's bases are picked by its index (uniform across a workgroup).
  const pick = (operand: string) =>
    products.reduceRight(
      (rest, _, p) => (p === products.length - 1 ? rest : `select(${rest}, ${operand}${p}, product == ${p})`),
      `${operand}${products.length - 1}`,
    );
  const bases = (operand: string) =>
    products
      .map(
        (_, p) =>
          `let ${operand}Base${p} = ${u(p, operand, 'Offset')} + bb ` +
          `* ${u(p, operand, 'B')} + hh * ${u(p, operand, 'H')};`,
      )
      .join('\n        ');
  // Each product's way of reading A and B; neighbouring invocations read along K where the operand lies along K (A's j,
  // B's i).
  const when = (p: number) => (products.length === 1 ? null : `product == ${p}`);
  const A = products.map((q, p) => ({
    when: when(p),
    alongK: q.av.sj === 1,
    read: `${names[q.a]}[aBase${p} + r * ${u(p, 'a', 'I')} + kk * ${u(p, 'a', 'J')}]`,
  }));
  const B = products.map((q, p) => ({
    when: when(p),
    alongK: q.bv.si === 1,
    read: `${names[q.b]}[bBase${p} + kk * ${u(p, 'b', 'I')} + c * ${u(p, 'b', 'J')}]`,
  }));
  const shape = products.map((q) => `${q.a}${q.av.sj === 1 ? 'k' : 'r'}${q.b}${q.bv.si === 1 ? 'k' : 'c'}`).join('_');
  const side = stridedSide(d, products.length);
  const program = wideProgram(
    d,
    { side, parts: 1 },
    {
      name: 'XttsStridedMatMulProgram',
      key: `strided_${inputs.length}_${shape}`,
      inputs: names,
      uniforms:
        `m : i32, n : i32, k : i32, heads : i32, batches : i32, chunk : ` +
        (`i32, ` +
          products
            .map((_, p) => ['a', 'b', 'o'].map((o) => STRIDES.map((f) => `${o}${f}${p} : i32,`).join(' ')).join(' '))
            .join(' ')),
      outputShape: outShape,
      // Not flat (x over every axis would make tfjs pass main an index).
      layout:
        outShape.length > 2
          ? { x: [outShape.length - 1], y: [outShape.length - 2], z: outShape.slice(0, -2).map((_, i) => i) }
          : { x: [1], y: [0] },
      z: batches * products.length,
      prologue: `let product = b / uniforms.batches;
        let bb = (b % uniforms.batches) / uniforms.heads;
        let hh = b % uniforms.heads;
        let kBegin = 0; let kEnd = uniforms.k;
        ${bases('a')}
        ${bases('b')}
        ${bases('o')}
        let oBase = ${pick('oBase')};
        let oI = ${pick('uniforms.oI')};
        let oJ = ${pick('uniforms.oJ')};`,
      A,
      B,
      store: (r, c, v) => `setOutputAtIndex(oBase + ${r} * oI + ${c} * oJ, ${v});`,
    },
  );
  const view = (v: StridedMatrix) => [v.offset, v.sb, v.sh, v.si, v.sj];
  const values = [
    d.m,
    d.n,
    d.k,
    d.heads,
    batches,
    wideChunk(d.k, 1),
    ...products.flatMap((q) => [...view(q.av), ...view(q.bv), ...view(q.ov)]),
  ];
  return backend.runWebGPUProgram(
    program,
    inputs,
    'float32',
    values.map((v) => ({ type: 'int32', data: [v] })),
  );
}

// ---------------------------------------------------------------------------------------------
// The tensor-core matmul (training.precision: mixed_fp16). Dawn's subgroup matrices (Vulkan's
// cooperative matrices) multiply f16 operands into f32 sums on the tensor cores. Every tensor stays
// float32: the program reads A and B as f32, rounds each slab of K to f16 on its way into workgroup
// memory, and keeps its sums in f32, so only the products see f16 operands (10 bits of mantissa,
// 2⁻²⁴ to 65,504: the trainer's loss scale keeps small gradients above the bottom of that range).
//
// A workgroup of 256 invocations (8 subgroups of 32, NVIDIA's width) computes a TILE × TILE output
// tile (128 × 128 where there are enough of them to fill an H100 about twice, else 64 × 64); its
// subgroups split the tile SR × SC, each keeping a grid of unit-sized result matrices. K goes in slabs
// of 32: each slab of A (TILE × 32) and of B (32 × TILE) is read from global memory in the order it
// lies there by all 256 invocations, converted and stored in that same order (row-major for A and B,
// column-major for Aᵀ and Bᵀ, so that neighbouring invocations store neighbouring values) with rows
// padded by 8 values (16 bytes, the alignment of a matrix load's offset and stride); then every
// subgroup loads its left and right matrices from it in that majorness and multiplies. The results go
// out through a staging area per subgroup, so that the edges of the output, the batch, the bias and
// the ReLU of a dense layer (_FusedMatMul) are written by ordinary code. WGSL's uniformity analysis
// wants a matrix load's offset uniform across the whole workgroup; each subgroup's offsets here are
// uniform across the subgroup (they derive from local_invocation_index / 32, and on an adapter whose
// subgroups are exactly 32 wide — tensorCoreSupport requires it — a subgroup is 32 consecutive
// invocations), which is what the hardware needs, so the analysis is switched off for the matrix
// builtins in this program only.

const F16_SLAB = 32;
const F16_PAD = 8;
const F16_LANES = 256;

/** Output tile side: 128 where the output has enough such tiles (about two per H100 multiprocessor), else 64. */
export function f16Tile(d: MatMulDims): 64 | 128 {
  return Math.ceil(d.m / 128) * Math.ceil(d.n / 128) * d.batch >= LARGE_TILES_FROM ? 128 : 64;
}

/**
 * Whether the f16 program can be built from subgroup matrices of this shape: a subgroup's part of a tile
 * is 32 rows × 64 columns (128×128 tiles) or 32 × 16 (64×64), and K goes in slabs of 32.
 */
export function f16UnitFits(u: SubgroupMatrixShape): boolean {
  return 32 % u.M === 0 && 16 % u.N === 0 && F16_SLAB % u.K === 0;
}

/** Workgroups the f16 program aims for: eight per H100 multiprocessor. */
const F16_WORKGROUPS = 1056;
/** The least K a part of a split matmul sums (16 slabs). */
const F16_MIN_PART = 512;

/**
 * Parts the f16 program splits K into: a weight gradient (a 512 × 2,048 output over batch × frames,
 * K of 12,032 in a normal step) has too few output tiles to fill the device, each with a long loop
 * over K. Then every part sums its own range of K into a partial output, and the parts are added in
 * order (the same value every run). Unbatched matmuls without an epilogue only.
 */
export function f16Parts(d: MatMulDims): number {
  if (d.batch !== 1) return 1;
  const tiles = Math.ceil(d.m / f16Tile(d)) * Math.ceil(d.n / f16Tile(d));
  if (tiles >= F16_WORKGROUPS / 2) return 1;
  return Math.max(1, Math.min(Math.ceil(F16_WORKGROUPS / tiles), Math.floor(d.k / F16_MIN_PART)));
}

/** The shader source's first lines for the f16 program: WGSL wants its directives before anything else. */
export const F16_MATMUL_ENABLES =
  'enable f16;\nenable subgroups;\nenable ' +
  'chromium_experimental_subgroup_matrix;\ndiagnostic(off, ' +
  'chromium.subgroup_matrix_uniformity);\n';
const F16_MATMUL_PROGRAM = 'XttsSubgroupMatMulProgram';

/** One product of the f16 program: its shape, transposes and epilogue, and K split into `parts` of `chunk`. */
interface F16Product {
  d: MatMulDims;
  transposeA: boolean;
  transposeB: boolean;
  epilogue: { bias: boolean; relu: boolean };
  parts: number;
  chunk: number;
}

/**
 * A product's parts (f16Parts, or 1 with an epilogue) and its chunk of K: a whole number of slabs per part, so that
 * only the last part's last slab is short.
 */
function f16Product(
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
  epilogue: { bias: boolean; relu: boolean } = { bias: false, relu: false },
): F16Product {
  const split = epilogue.bias || epilogue.relu ? 1 : f16Parts(d);
  const chunk = split > 1 ? Math.ceil(d.k / split / F16_SLAB) * F16_SLAB : d.k;
  return { d, transposeA, transposeB, epilogue, parts: Math.ceil(d.k / chunk), chunk };
}

/** Elements of the f16 program's workgroup arrays for a product: A's slab, B's slab and the subgroups' staging area. */
function f16Shared(p: F16Product): [number, number, number] {
  const TILE = f16Tile(p.d);
  const AST = p.transposeA ? TILE + F16_PAD : F16_SLAB + F16_PAD;
  const BST = p.transposeB ? F16_SLAB + F16_PAD : TILE + F16_PAD;
  return [
    (p.transposeA ? F16_SLAB : TILE) * AST,
    (p.transposeB ? TILE : F16_SLAB) * BST,
    (F16_LANES / 32) * unit.M * unit.N,
  ];
}

/** The workgroup arrays of the f16 program (sized for the largest of its products). */
function f16SharedDeclarations(products: F16Product[]): string {
  const [a, b, c] = [0, 1, 2].map((i) => Math.max(...products.map((p) => f16Shared(p)[i])));
  return `
      var<workgroup> As : array<f16, ${a}>;
      var<workgroup> Bs : array<f16, ${b}>;
      var<workgroup> Cs : array<f32, ${c}>;`;
}

/**
 * The WGSL of one output tile of product `p` (after `let t = i32(localId.x);` and the tile's
 * `row0`, `col0` and batch or part `b`): its part of K through subgroup matrices into f32 sums,
 * then out through the staging area by `store(b, row, col, value)`. `u(name)`: the product's uniform
 * (m, n, k, batchA, batchB, chunk); `A`, `B` and `bias`: its inputs' names.
 */
function f16TileCode(
  p: F16Product,
  names: { A: string; B: string; bias: string },
  u: (name: string) => string,
  store: (b: string, row: string, col: string, v: string) => string,
): string {
  const { M, N, K } = unit;
  const { transposeA, transposeB, epilogue } = p;
  const TILE = f16Tile(p.d);
  const [SR, SC] = TILE === 128 ? [4, 2] : [2, 4];
  const subRows = TILE / SR;
  const subCols = TILE / SC;
  if (!f16UnitFits(unit))
    throw new Error(`the f16 matmul cannot tile ${TILE}×${TILE} with ${M}×${N}×${K} subgroup matrices`);
  const RI = subRows / M;
  const RJ = subCols / N;
  // Workgroup layouts: A row-major [TILE][SLAB] or, for Aᵀ, column-major [SLAB][TILE]; B row-major
  // [SLAB][TILE] or, for Bᵀ, column-major [TILE][SLAB]; each row padded by F16_PAD.
  const AST = transposeA ? TILE + F16_PAD : F16_SLAB + F16_PAD;
  const BST = transposeB ? F16_SLAB + F16_PAD : TILE + F16_PAD;
  const { aAt, bAt } = operandIndex(transposeA, transposeB, u);
  const load = (
    array: string,
    operand: string,
    alongK: boolean,
    index: string,
    origin: string,
    limit: string,
    at: string,
    where: string,
  ) =>
    slabLoad({
      lanes: F16_LANES,
      slab: F16_SLAB,
      tile: TILE,
      tid: 't',
      alongK,
      array,
      index,
      origin,
      limit,
      read: `f32(${operand}[${at}])`,
      kLimit: 'kEnd',
      store: where,
      convert: (v) => `f16(${v})`,
    });
  // Offsets of left matrix i and right matrix j at K step `step` within this subgroup's part.
  const leftAt = (i: number, step: number) =>
    transposeA ? `aBase + ${step * K * AST + i * M}u` : `aBase + ${i * M * AST + step * K}u`;
  const rightAt = (j: number, step: number) =>
    transposeB ? `bBase + ${j * N * BST + step * K}u` : `bBase + ${step * K * BST + j * N}u`;
  const aMajor = transposeA ? 'col_major' : 'row_major';
  const bMajor = transposeB ? 'col_major' : 'row_major';
  const range = (n: number) => [...Array(n).keys()];
  const grid = range(RI).flatMap((i) => range(RJ).map((j) => [i, j] as const));
  const value = epilogueCode(
    `Cs[sg * ${M * N} + idx]`,
    epilogue.bias ? `f32(${names.bias}[col])` : null,
    epilogue.relu,
  );
  const loadA = load(
    'As',
    names.A,
    !transposeA,
    'r',
    'row0',
    u('m'),
    aAt,
    transposeA ? `s * ${AST} + lane` : `lane * ${AST} + s`,
  );
  const loadB = load(
    'Bs',
    names.B,
    transposeB,
    'c',
    'col0',
    u('n'),
    bAt,
    transposeB ? `lane * ${BST} + s` : `s * ${BST} + lane`,
  );
  return `
        let sg = t / 32;
        let lane32 = t % 32;
        let aBase = u32((sg / ${SC}) * ${transposeA ? subRows : subRows * AST});
        let bBase = u32((sg % ${SC}) * ${transposeB ? subCols * BST : subCols});
        // b is the batch, or with K split (batch 1) the part.
        let bA = select(b, 0, ${u('batchA')} == 1 || ${u('chunk')} < ${u('k')});
        let bB = select(b, 0, ${u('batchB')} == 1 || ${u('chunk')} < ${u('k')});
        let kStart = select(0, b * ${u('chunk')}, ${u('chunk')} < ${u('k')});
        let kEnd = min(kStart + ${u('chunk')}, ${u('k')});
        ${grid.map(([i, j]) => `var acc${i}_${j} = subgroup_matrix_result<f32, ${N}, ${M}>();`).join('\n        ')}
        // A trip count the whole workgroup shares (workgroupBarrier wants uniform control flow):
        // the slabs of one part; a shorter last part reads zeros past kEnd.
        for (var slab = 0; slab < (min(${u('chunk')}, ${u('k')}) + ${F16_SLAB - 1}) / ${F16_SLAB}; slab = slab + 1) {
          let k0 = kStart + slab * ${F16_SLAB};${loadA}${loadB}
          workgroupBarrier();
          ${range(F16_SLAB / K)
            .map(
              (step) => `{
            ${range(RI)
              .map(
                (i) =>
                  `let l${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, ${K}, ${M}>, ${aMajor}>(\n` +
                  `              &As, ${leftAt(i, step)}, ${AST}u);`,
              )
              .join('\n            ')}
            ${range(RJ)
              .map(
                (j) =>
                  `let r${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, ${N}, ${K}>, ${bMajor}>(\n` +
                  `              &Bs, ${rightAt(j, step)}, ${BST}u);`,
              )
              .join('\n            ')}
            ${grid
              .map(([i, j]) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`)
              .join('\n            ')}
          }`,
            )
            .join('\n          ')}
          workgroupBarrier();
        }
        ${grid
          .map(
            ([i, j]) => `subgroupMatrixStore<row_major>(&Cs, u32(sg * ${M * N}), acc${i}_${j}, ${N}u);
        workgroupBarrier();
        for (var e = 0; e < ${(M * N) / 32}; e = e + 1) {
          let idx = lane32 + e * 32;
          let row = row0 + (sg / ${SC}) * ${subRows} + ${i * M} + idx / ${N};
          let col = col0 + (sg % ${SC}) * ${subCols} + ${j * N} + idx % ${N};
          if (row < ${u('m')} && col < ${u('n')}) {
            ${store('b', 'row', 'col', value)}
          }
        }
        workgroupBarrier();`,
          )
          .join('\n        ')}`;
}

/** A product's output tiles per row of tiles and per part of K. */
function f16TilesPerPart(p: F16Product): { cols: number; perPart: number } {
  const TILE = f16Tile(p.d);
  const cols = Math.ceil(p.d.n / TILE);
  return { cols, perPart: cols * Math.ceil(p.d.m / TILE) };
}

/**
 * The uniforms of one product (f16TileCode's names; the paired program adds the product's index to each) and their
 * values.
 */
const F16_UNIFORMS = ['m', 'n', 'k', 'batchA', 'batchB', 'chunk'];
const f16UniformValues = (p: F16Product) => [p.d.m, p.d.n, p.d.k, p.d.batchA, p.d.batchB, p.chunk];

function subgroupProgram(p: F16Product) {
  const { M, N, K } = unit;
  const { d, transposeA, transposeB, epilogue } = p;
  const TILE = f16Tile(d);
  return namedProgram(F16_MATMUL_PROGRAM, {
    variableNames: epilogue.bias ? ['A', 'B', 'bias'] : ['A', 'B'],
    // Split over K (batch 1), the batch dimension holds the parts: part p sums K from p·chunk.
    outputShape: [d.batch * p.parts, d.m, d.n],
    shaderKey: `xtts_matmul_f16_${M}x${N}x${K}_${TILE}_${transposeA}_${transposeB}_${epilogue.bias}_${epilogue.relu}`,
    dispatchLayout: { x: [2], y: [1], z: [0] },
    dispatch: [Math.ceil(d.n / TILE), Math.ceil(d.m / TILE), d.batch * p.parts] as [number, number, number],
    workgroupSize: [F16_LANES, 1, 1] as [number, number, number],
    uniforms: F16_UNIFORMS.map((n) => `${n} : i32,`).join(' '),
    getUserCode: () => `${f16SharedDeclarations([p])}
      fn main() {
        let t = i32(localId.x);
        // z is the batch, or with K split (batch 1) the part.
        let b = i32(workgroupId.z);
        let row0 = i32(workgroupId.y) * ${TILE};
        let col0 = i32(workgroupId.x) * ${TILE};${f16TileCode(
          p,
          { A: 'A', B: 'B', bias: 'bias' },
          (n) => `uniforms.${n}`,
          (b, row, col, v) => `setOutputAtCoords(${b}, ${row}, ${col}, ${v});`,
        )}
      }`,
  });
}

const F16_PAIR_PROGRAM = 'XttsSubgroupMatMulPairProgram';
/** The f16 programs' names: their shader source starts with F16_MATMUL_ENABLES. */
export const F16_PROGRAMS: ReadonlySet<string> = new Set([F16_MATMUL_PROGRAM, F16_PAIR_PROGRAM]);

/** One product of subgroupMatMulPair: A and B (indices into its inputs) and their transposes. */
export interface PairedMatMul {
  a: number;
  b: number;
  transposeA: boolean;
  transposeB: boolean;
}

/**
 * Two unbatched products of f16 tiles in one dispatch (the output tiles of the first, then those of the
 * second: the workgroup's flat index says which), each tile computed as the f16 program computes it
 * (the same tile, parts and chunk of K), so each output has the bits the program gives it alone. The
 * first product is the program's output, the second its further output, each [parts, m, n].
 */
function subgroupPairProgram(
  products: [F16Product, F16Product],
  inputs: [PairedMatMul, PairedMatMul],
  inputCount: number,
) {
  const { M, N, K } = unit;
  const names = [...Array(inputCount).keys()].map((i) => `x${i}`);
  const fn = (i: number) => {
    const p = products[i];
    const TILE = f16Tile(p.d);
    const store =
      i === 0
        ? (b: string, row: string, col: string, v: string) =>
            `setOutputAtIndex((${b} * uniforms.m0 + ${row}) * uniforms.n0 + ${col}, ${v});`
        : (b: string, row: string, col: string, v: string) =>
            `second[(${b} * uniforms.m1 + ${row}) * uniforms.n1 + ${col}] = ${v};`;
    const operands = { A: names[inputs[i].a], B: names[inputs[i].b], bias: '' };
    const tileCode = f16TileCode(p, operands, (n) => `uniforms.${n}${i}`, store);
    return `
      fn product${i}(wg : i32, t : i32) {
        let b = wg / uniforms.perPart${i};
        let tile = wg % uniforms.perPart${i};
        let row0 = (tile / uniforms.cols${i}) * ${TILE};
        let col0 = (tile % uniforms.cols${i}) * ${TILE};${tileCode}
      }`;
  };
  const key = products.map((p) => `${f16Tile(p.d)}_${p.transposeA}_${p.transposeB}`).join('_');
  const shape = inputs.map((q) => `${q.a}${q.b}`).join('_');
  return outputsProgram(F16_PAIR_PROGRAM, ['second'], {
    variableNames: [...names, 'second'],
    outputShape: [products[0].parts, products[0].d.m, products[0].d.n],
    shaderKey: `xtts_matmul_f16_pair_${M}x${N}x${K}_${key}_${inputCount}_${shape}`,
    dispatchLayout: { x: [2], y: [1], z: [0] },
    dispatch: [products.reduce((n, p) => n + f16TilesPerPart(p).perPart * p.parts, 0), 1, 1] as [
      number,
      number,
      number,
    ],
    workgroupSize: [F16_LANES, 1, 1] as [number, number, number],
    uniforms:
      [0, 1].map((i) => [...F16_UNIFORMS, 'cols', 'perPart'].map((n) => `${n}${i} : i32,`).join(' ')).join(' ') +
      ' first : i32,',
    getUserCode: () => `${f16SharedDeclarations(products)}
      var<workgroup> wgIndex : vec4<i32>;${fn(0)}${fn(1)}
      fn main() {
        let t = i32(localId.x);
        // The workgroup's index through workgroup memory: uniform, so that either product's loop over
        // K (of its own length) is too, as its barriers want. 16 bytes of it: with an i32 the H100's
        // compiler placed it before Cs, whose matrix stores then landed off their 16-byte alignment
        // (every output one value off).
        if (t == 0) {
          wgIndex = vec4<i32>(i32(workgroupId.x));
        }
        let wg = workgroupUniformLoad(&wgIndex).x;
        if (wg < uniforms.first) {
          product0(wg, t);
        } else {
          product1(wg - uniforms.first, t);
        }
      }`,
  });
}

/**
 * A × B (+ bias, ReLU) through the f16 tensor-core program; the caller checks the dtypes, inner dimensions and batches.
 */
function subgroupMatMul(
  a: tfTypes.TensorInfo,
  b: tfTypes.TensorInfo,
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
  backend: WebgpuBackendLike,
  epilogue: { bias?: tfTypes.TensorInfo; relu: boolean } = { relu: false },
): tfTypes.TensorInfo {
  const inputs = epilogue.bias ? [a, b, epilogue.bias] : [a, b];
  const p = f16Product(d, transposeA, transposeB, { bias: epilogue.bias !== undefined, relu: epilogue.relu });
  const out = backend.runWebGPUProgram(
    subgroupProgram(p),
    inputs,
    'float32',
    f16UniformValues(p).map((v) => ({ type: 'int32', data: [v] })),
  );
  return sumParts(backend, out, p);
}

/** A split product's parts added in order (sumPartsProgram), or the output itself where K was not split. */
function sumParts(backend: WebgpuBackendLike, out: tfTypes.TensorInfo, p: F16Product): tfTypes.TensorInfo {
  if (p.parts === 1) return out;
  const sum = backend.runWebGPUProgram(sumPartsProgram(p.parts, p.d.m * p.d.n), [out], 'float32', [
    { type: 'int32', data: [p.parts] },
  ]);
  backend.disposeData(out.dataId);
  return sum;
}

/**
 * Whether subgroupMatMulPair takes these two products on this backend: mixed_fp16 picked, and both
 * unbatched float32 matmuls that the f16 program would take on their own (enough output tiles).
 */
export function f16PairTakes(
  backend: unknown,
  products: { a: tfTypes.TensorInfo; b: tfTypes.TensorInfo; transposeA: boolean; transposeB: boolean }[],
): boolean {
  if (program !== 'f16') return false;
  const threshold = (backend as WebgpuBackendLike).thresholdToIncreaseWorkgroups ?? 8;
  return products.every((q) => {
    if (q.a.dtype !== 'float32' || q.b.dtype !== 'float32' || q.a.shape.length !== 2 || q.b.shape.length !== 2)
      return false;
    const d = matMulDims(q.a.shape, q.b.shape, q.transposeA, q.transposeB);
    return d.k === (q.transposeB ? q.b.shape[1] : q.b.shape[0]) && tfjsPacks(d, threshold);
  });
}

/**
 * Two products (f16PairTakes) through the tensor cores in one dispatch, each then its parts added:
 * the outputs [m, n] of each, with the bits of subgroupMatMul's for the same product.
 */
export function subgroupMatMulPair(
  backend: WebgpuProgramRunner,
  inputs: tfTypes.TensorInfo[],
  pair: [PairedMatMul, PairedMatMul],
): [tfTypes.TensorInfo, tfTypes.TensorInfo] {
  const products = pair.map((q) =>
    f16Product(
      matMulDims(inputs[q.a].shape, inputs[q.b].shape, q.transposeA, q.transposeB),
      q.transposeA,
      q.transposeB,
    ),
  ) as [F16Product, F16Product];
  const program = subgroupPairProgram(products, pair, inputs.length);
  const values = products.flatMap((p) => {
    const { cols, perPart } = f16TilesPerPart(p);
    return [...f16UniformValues(p), cols, perPart];
  });
  const first = f16TilesPerPart(products[0]).perPart * products[0].parts;
  const [out, second] = runWithOutputs(
    backend,
    program,
    inputs,
    [[products[1].parts, products[1].d.m, products[1].d.n]],
    [...values, first].map((v) => ({ type: 'int32', data: [v] })),
  );
  const b = backend as WebgpuBackendLike;
  return [
    { ...sumParts(b, out, products[0]), shape: [products[0].d.m, products[0].d.n] },
    { ...sumParts(b, second, products[1]), shape: [products[1].d.m, products[1].d.n] },
  ];
}
