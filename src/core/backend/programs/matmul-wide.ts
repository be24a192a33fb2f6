// The wide float32 matmul program (device.matmul: tiled) and the attention's strided products in it.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram } from '../kernels.js';
import {
  epilogueCode,
  type MatMulCall,
  type MatMulDims,
  operandIndex,
  sumPartsProgram,
  type WebgpuBackendLike,
} from './matmul-core.js';

/** K in slabs of this many through workgroup memory (the dense layers' one-program backward, dense.ts). */
export const SLAB = 16;
/** 128×128 tiles from this many of them (about two per streaming multiprocessor of an H100). */
export const LARGE_TILES_FROM = 256;

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
export function wideMatMul(
  { a, b, d, transposeA, transposeB }: MatMulCall,
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

/**
 * The wide program's tile of `side`: its slab depth K (WIDE_SLAB), H 4×4 blocks per invocation along
 * each side (64 rows or columns apart), ROW vec4 per k of a slab in workgroup memory (the tile's and
 * one of padding), and L values of each operand an invocation loads per slab.
 */
interface WideTile {
  K: number;
  H: number;
  TILE: number;
  ROW: number;
  L: number;
}

function wideTile(side: 128 | 64): WideTile {
  const K = WIDE_SLAB;
  return { K, H: side / 64, TILE: side, ROW: side / 4 + 1, L: (side * K) / 256 };
}

const range = (n: number) => [...Array(n).keys()];

/** WGSL: invocation tid's e-th load of a slab: k (s) and tile lane, along K where K is contiguous in memory. */
function wideSlot(t: WideTile, alongK: boolean, e: number): string {
  return alongK
    ? `let s = (tid + ${256 * e}) % ${t.K}; let lane = (tid + ${256 * e}) / ${t.K};`
    : `let s = (tid + ${256 * e}) / ${t.TILE}; let lane = (tid + ${256 * e}) % ${t.TILE};`;
}

/** WGSL: each way of reading an operand under its condition (one way: unconditionally). */
function eachWay(operand: WideOperand[], code: (way: WideOperand) => string): string {
  return operand.length === 1
    ? code(operand[0])
    : operand.map((way, i) => `${i ? ' else ' : '\n          '}if (${way.when}) {${code(way)}\n          }`).join('');
}

/** WGSL: the operand's next slab from global memory into its registers p{operand}{e} (zero outside the matrix). */
function wideFetch(
  t: WideTile,
  at: WideAddressing,
  operand: 'A' | 'B',
  index: string,
  origin: string,
  limit: string,
): string {
  return eachWay(at[operand], (way) =>
    range(t.L)
      .map(
        (e) => `{
          ${wideSlot(t, way.alongK, e)}
          let ${index} = ${origin} + lane;
          let kk = k0 + s;
          p${operand}${e} = 0.0;
          if (${index} < ${limit} && kk < kEnd) { p${operand}${e} = ${way.read}; }
        }`,
      )
      .join(''),
  );
}

/** WGSL: the operand's registers into its slab in workgroup memory (from vec4 `base`), in the loads' order. */
function widePut(t: WideTile, at: WideAddressing, operand: 'A' | 'B', base = '0'): string {
  const store = (e: number) => `${operand}s[${base} + s * ${t.ROW} + lane / 4][lane % 4] = p${operand}${e};`;
  const putWay = (way: WideOperand) =>
    range(t.L)
      .map((e) => `{ ${wideSlot(t, way.alongK, e)} ${store(e)} }`)
      .join('\n          ');
  // One way where the ways agree on the order.
  const one = at[operand].every((way) => way.alongK === at[operand][0].alongK);
  return one ? putWay(at[operand][0]) : eachWay(at[operand], putWay);
}

/** WGSL: one k of the slab in half `cur`: the invocation's vec4 of A and of B, then its 64 (or 16) multiply-adds. */
function wideProducts(t: WideTile): string {
  const blocks = range(t.H);
  const component = (i: number) => `a${Math.floor(i / 4)}.${'xyzw'[i % 4]}`;
  return `${blocks
    .map(
      (h) =>
        `let a${h} = As[cur + s * ${t.ROW} + ${16 * h} + ty];\n` +
        `            let b${h} = Bs[cur + s * ${t.ROW} + ${16 * h} + tx];`,
    )
    .join('\n            ')}
            ${range(4 * t.H)
              .map((i) =>
                blocks
                  .map((h) => `c${i}_${h} = fma(vec4<f32>(${component(i)}), b${h}, c${i}_${h});`)
                  .join('\n            '),
              )
              .join('\n            ')}`;
}

/** WGSL: the invocation's sums out through the addressing's store, each inside the output. */
function wideStores(t: WideTile, at: WideAddressing): string {
  return range(4 * t.H)
    .map(
      (i) => `{
          let r = row0 + ${64 * Math.floor(i / 4)} + ty * 4 + ${i % 4};
          if (r < uniforms.m) {
            ${range(t.H)
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
    .join('\n        ');
}

/** The wide program of `shape` (its tile side; its parts of K, the addressing's), reading and writing through `at`. */
function wideProgram(d: { m: number; n: number }, shape: WideShape, at: WideAddressing) {
  const t = wideTile(shape.side);
  const { K, ROW, TILE } = t;
  const fetch = wideFetch(t, at, 'A', 'r', 'row0', 'uniforms.m') + wideFetch(t, at, 'B', 'c', 'col0', 'uniforms.n');
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
        ${range(4 * t.H)
          .map((i) =>
            range(t.H)
              .map((h) => `var c${i}_${h} = vec4<f32>(0.0);`)
              .join(' '),
          )
          .join(' ')}
        ${range(t.L)
          .map((e) => `var pA${e} = 0.0; var pB${e} = 0.0;`)
          .join(' ')}
        var k0 = kBegin;
        ${fetch}
        ${widePut(t, at, 'A')}
        ${widePut(t, at, 'B')}
        workgroupBarrier();
        // Two slabs in workgroup memory, one barrier a slab: slab i is multiplied from half cur while
        // slab i + 1 goes into the other half, which every invocation was done reading at the barrier
        // before. A loop bound of uniforms only (its barriers need uniform control flow): the part's chunk of K.
        var cur = 0;
        for (var t = 0; t < uniforms.chunk; t = t + ${K}) {
          k0 = k0 + ${K};
          // The next slab while this one is multiplied. A part must be exactly its chunk deep
          // (wideShape splits only so): past a part's end the registers would keep this slab.
          if (k0 < kEnd) {${fetch}
          }
          for (var s = 0; s < ${K}; s = s + 1) {
            ${wideProducts(t)}
          }
          let next = ${K * ROW} - cur;
          ${widePut(t, at, 'A', 'next')}
          ${widePut(t, at, 'B', 'next')}
          workgroupBarrier();
          cur = next;
        }
        ${wideStores(t, at)}
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

/** The FLOPs of `products` strided products of m × n over k for each of `batches` (batch entry, head) pairs. */
export function stridedFlops(m: number, n: number, k: number, batches: number, products: number): number {
  return 2 * m * n * k * batches * products;
}

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
  // Its shapes (the projections the heads lie in) do not tell its FLOPs: the profiler reads these.
  Object.assign(program, { flops: stridedFlops(d.m, d.n, d.k, batches, products.length) });
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
