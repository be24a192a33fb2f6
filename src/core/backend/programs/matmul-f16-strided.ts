// The attention's strided batched products on the tensor cores (training.precision: mixed_fp16). Each
// product is the f16 program's tile (matmul-f16-tile.ts: slabs of K rounded to f16 into workgroup memory,
// subgroup matrices, f32 sums) with its operands read and its output written through strides
// (StridedMatrix), as the wide float32 program reads and writes them in stridedMatMuls: the heads of q, k
// and v where they lie in their projections, the context and the gradients of q, k and v where they go.
// Several products of one shape (dq, dk and dv of a packed projection) are one dispatch: workgroup z is
// the product, y the (batch entry, head), x the output tile. An operand is read four values at a load
// where every product reads it along a contiguous dimension that is a multiple of 4 and its other strides
// and offset are too. A product whose operands have no contiguous dimension stays in the wide program.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { gpuProgramSelection } from '../gpu-programs.js';
import { namedProgram } from '../kernels.js';
import type { WebgpuBackendLike } from './matmul-core.js';
import {
  type F16Product,
  f16Key,
  f16SharedBytes,
  f16SharedDeclarations,
  f16TileCode,
  f16TileOf,
  f16UnitFits,
  storageLimitOf,
} from './matmul-f16-tile.js';
import { type StridedDims, stridedFlops, type StridedMatrix, type StridedProduct, stridedSide } from './matmul-wide.js';

export const F16_STRIDED_PROGRAM = 'XttsStridedSubgroupMatMulProgram';

/** The most (batch entry, head) pairs a dispatch's y takes (WebGPU's least maxComputeWorkgroupsPerDimension). */
const MAX_BATCHES = 65535;

/** Whether A's (i: row, j: k) or B's (i: k, j: column) view has a contiguous dimension. */
const contiguous = (v: StridedMatrix) => v.si === 1 || v.sj === 1;

/**
 * Whether the strided products go to the tensor cores here: mixed_fp16's f16 program selected with its
 * `attention` switch on, subgroup matrices it can tile with, and every operand with a contiguous dimension.
 */
export function stridedF16Takes(products: StridedProduct[], d: StridedDims): boolean {
  const selection = gpuProgramSelection();
  return (
    selection.matmul === 'f16' &&
    selection.f16Tuning.attention &&
    f16UnitFits(selection.subgroupShape) &&
    d.batch * d.heads <= MAX_BATCHES &&
    products.every((q) => contiguous(q.av) && contiguous(q.bv))
  );
}

/**
 * A: the k index contiguous (j), else its rows (i: Aᵀ). B: its columns contiguous (j), else the k index (i: Bᵀ).
 */
const transposedA = (q: StridedProduct) => q.av.sj !== 1;
const transposedB = (q: StridedProduct) => q.bv.sj !== 1;

/**
 * Which inputs are read four values at a load: every read of it along a contiguous extent that is a
 * multiple of 4, its offset and its other strides multiples of 4, and the input's size too.
 */
function vectorInputs(inputs: tfTypes.TensorInfo[], products: StridedProduct[], d: StridedDims): boolean[] {
  const fours = (...xs: number[]) => xs.every((x) => x % 4 === 0);
  const readsOk = (x: number) =>
    products.every((q) => {
      const a =
        q.a !== x ||
        (transposedA(q)
          ? fours(d.m, q.av.offset, q.av.sb, q.av.sh, q.av.sj)
          : fours(d.k, q.av.offset, q.av.sb, q.av.sh, q.av.si));
      const b =
        q.b !== x ||
        (transposedB(q)
          ? fours(d.k, q.bv.offset, q.bv.sb, q.bv.sh, q.bv.sj)
          : fours(d.n, q.bv.offset, q.bv.sb, q.bv.sh, q.bv.si));
      return a && b;
    });
  return inputs.map(
    (x, i) => gpuProgramSelection().f16Tuning.vector && x.shape.reduce((s, v) => s * v, 1) % 4 === 0 && readsOk(i),
  );
}

const STRIDES = ['Offset', 'B', 'H', 'I', 'J'];
const view = (v: StridedMatrix) => [v.offset, v.sb, v.sh, v.si, v.sj];
/** The uniforms every product shares (f16TileCode's m, n and k, and the dispatch's). */
const SHARED = ['m', 'n', 'k', 'heads', 'cols'];

function stridedSubgroupProgram(
  ps: F16Product[],
  qs: StridedProduct[],
  vec: boolean[],
  outShape: number[],
  tiles: number,
  batches: number,
) {
  const { M, N, K } = gpuProgramSelection().subgroupShape;
  const names = vec.map((_, i) => `x${i}`);
  const TILE = f16TileOf(ps[0]);
  const fn = (i: number) => {
    const q = qs[i];
    // K is never split (its chunk is k) and every operand's batch is in its strides (batchA, batchB 1).
    const constants: Record<string, string> = { chunk: 'uniforms.k', batchA: '1', batchB: '1' };
    const u = (name: string) =>
      constants[name] ?? (SHARED.includes(name) ? `uniforms.${name}` : `uniforms.${name}${i}`);
    const origin = (o: string) => `uniforms.${o}Offset${i} + bb * uniforms.${o}B${i} + hh * uniforms.${o}H${i}`;
    const store = (_b: string, row: string, col: string, v: string) =>
      `setOutputAtIndex(oOrigin + ${row} * uniforms.oI${i} + ${col} * uniforms.oJ${i}, ${v});`;
    return `
      fn product${i}(tile : i32, bh : i32, t : i32) {
        let bb = bh / uniforms.heads;
        let hh = bh % uniforms.heads;
        let aOrigin = ${origin('a')};
        let bOrigin = ${origin('b')};
        let oOrigin = ${origin('o')};
        let b = 0;
        let row0 = (tile / uniforms.cols) * ${TILE};
        let col0 = (tile % uniforms.cols) * ${TILE};${f16TileCode(
          ps[i],
          { A: names[q.a], B: names[q.b], bias: '' },
          u,
          store,
          'result',
        )}
      }`;
  };
  const calls = ps
    .map((_, i) => `${i === 0 ? '' : ' else '}if (at.z == ${i}) {\n          product${i}(at.x, at.y, t);\n        }`)
    .join('');
  const readers = qs.map((q) => `${q.a}${q.b}`).join('_');
  return namedProgram(F16_STRIDED_PROGRAM, {
    // Its shapes (the projections the heads lie in) do not tell its FLOPs: the profiler reads these.
    flops: stridedFlops(ps[0].d.m, ps[0].d.n, ps[0].d.k, batches, ps.length),
    variableNames: names,
    variableComponents: vec.map((v) => (v ? 4 : 1)),
    outputShape: outShape,
    shaderKey: `xtts_matmul_f16_strided_${M}x${N}x${K}_${ps.map(f16Key).join('_')}_${names.length}_${readers}`,
    // Not flat (x over every axis would make tfjs pass main an index).
    dispatchLayout:
      outShape.length > 2
        ? { x: [outShape.length - 1], y: [outShape.length - 2], z: outShape.slice(0, -2).map((_, i) => i) }
        : { x: [1], y: [0] },
    dispatch: [tiles, batches, ps.length] as [number, number, number],
    workgroupSize: [32 * ps[0].tuning.subgroups, 1, 1] as [number, number, number],
    uniforms:
      SHARED.map((n) => `${n} : i32,`).join(' ') +
      ps
        .map((_, i) => ['a', 'b', 'o'].map((o) => STRIDES.map((f) => ` ${o}${f}${i} : i32,`).join('')).join(''))
        .join(''),
    getUserCode: () => `${f16SharedDeclarations(ps)}
      var<workgroup> tileAt : vec4<i32>;${ps.map((_, i) => fn(i)).join('')}
      fn main() {
        let t = i32(localId.x);
        // The tile, batch entry and product through workgroup memory: uniform, as the barriers of each
        // product's loop over K want.
        if (t == 0) {
          tileAt = vec4<i32>(vec3<i32>(workgroupId.xyz), 0);
        }
        let at = workgroupUniformLoad(&tileAt);
        ${calls}
      }`,
  });
}

/**
 * stridedMatMuls's products (stridedF16Takes) through the tensor cores, one dispatch: out = A·B for every
 * (b, h) of each product, read and written through their strides. The caller's strides write each
 * element of the output once.
 */
export function stridedSubgroupMatMuls(
  backend: WebgpuBackendLike,
  inputs: tfTypes.TensorInfo[],
  products: StridedProduct[],
  outShape: number[],
  d: StridedDims,
): tfTypes.TensorInfo {
  const wanted = gpuProgramSelection().f16Tuning;
  const batches = d.batch * d.heads;
  const tile = stridedSide(d, products.length);
  const vec = vectorInputs(inputs, products, d);
  let ps = products.map(
    (q): F16Product => ({
      d: { batch: batches, batchA: 1, batchB: 1, m: d.m, n: d.n, k: d.k },
      transposeA: transposedA(q),
      transposeB: transposedB(q),
      epilogue: { bias: false, relu: false },
      parts: 1,
      chunk: d.k,
      tuning: wanted.prefetch ? wanted : { ...wanted, buffers: 1 },
      vecA: vec[q.a],
      vecB: vec[q.b],
      direct: false,
      tile,
      strided: true,
    }),
  );
  if (f16SharedBytes(ps) > storageLimitOf(backend)) ps = ps.map((p) => ({ ...p, tuning: { ...p.tuning, buffers: 1 } }));
  const cols = Math.ceil(d.n / tile);
  const tiles = cols * Math.ceil(d.m / tile);
  const program = stridedSubgroupProgram(ps, products, vec, outShape, tiles, batches);
  const values = [d.m, d.n, d.k, d.heads, cols, ...products.flatMap((q) => [q.av, q.bv, q.ov].flatMap(view))];
  return backend.runWebGPUProgram(
    program,
    inputs,
    'float32',
    values.map((v) => ({ type: 'int32', data: [v] })),
  );
}
