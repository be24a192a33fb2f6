import type * as tfTypes from '@tensorflow/tfjs-core';
import { gpuProgramSelection } from '../gpu-programs.js';
import { namedProgram, outputsProgram, runWithOutputs, type WebgpuProgramRunner } from '../kernels.js';
import {
  type MatMulCall,
  matMulDims,
  type MatMulDims,
  sumPartsInOrder,
  tfjsPacks,
  type WebgpuBackendLike,
} from './matmul-core.js';
import {
  type F16Product,
  f16Key,
  f16SharedBytes,
  f16SharedDeclarations,
  f16Tile,
  f16TileCode,
  storageLimitOf,
} from './matmul-f16-tile.js';
import { F16_STRIDED_PROGRAM } from './matmul-f16-strided.js';

export { f16Tile, f16UnitFits } from './matmul-f16-tile.js';

// ---------------------------------------------------------------------------------------------
// The tensor-core matmul (training.precision: mixed_fp16). Dawn's subgroup matrices (Vulkan's
// cooperative matrices) multiply f16 operands into f32 sums on the tensor cores. Every tensor stays
// float32: the program reads A and B as f32, rounds each slab of K to f16 on its way into workgroup
// memory, and keeps its sums in f32, so only the products see f16 operands (10 bits of mantissa,
// 2⁻²⁴ to 65,504: the trainer's loss scale keeps small gradients above the bottom of that range).
//
// A workgroup of 256 invocations (8 subgroups of 32, NVIDIA's width; or 4 of them) computes a TILE × TILE
// output tile (128 × 128 where there are enough of them to fill an H100 about twice, else 64 × 64); its
// subgroups split the tile SR × SC, each keeping a grid of unit-sized result matrices. K goes in slabs
// (32 or 64): each slab of A (TILE × slab) and of B (slab × TILE) is read from global memory in the
// order it lies there by all the invocations, converted and stored in that same order (row-major for
// A and B, column-major for Aᵀ and Bᵀ, so that neighbouring invocations store neighbouring values)
// with rows padded by 8 values (16 bytes, the alignment of a matrix load's offset and stride); then
// every subgroup loads its left and right matrices from it in that majorness and multiplies. The sums
// go out through a staging area per subgroup, so that the edges of the output, the bias and the ReLU of
// a dense layer (_FusedMatMul) are written by ordinary code. How a program is built is the selection's
// f16Tuning (gpu-programs.ts): four values a load where an operand's contiguous dimension is a multiple
// of 4 (a vec4 binding); the next slab read into registers while this one is multiplied (prefetch), with
// one or two copies of the slabs in workgroup memory (two: one barrier a slab); the sums of a tile
// wholly inside the output of a product without an epilogue stored straight into it (subgroupMatrixStore
// to the storage buffer); the slab's depth, the subgroups, and the most parts K may be split into.
// WGSL's uniformity analysis wants a matrix load's offset uniform across the whole workgroup; each
// subgroup's offsets here are uniform across the subgroup (they derive from local_invocation_index /
// 32, and on an adapter whose subgroups are exactly 32 wide — tensorCoreSupport requires it — a
// subgroup is 32 consecutive invocations), which is what the hardware needs, so the analysis is
// switched off for the matrix builtins in this program only.

/** Workgroups the f16 program aims for: eight per H100 multiprocessor. */
const F16_WORKGROUPS = 1056;
/** The least K a part of a split matmul sums (16 slabs of 32). */
const F16_MIN_PART = 512;

/**
 * Parts the f16 program splits K into: a weight gradient (a 512 × 2,048 output over batch × frames,
 * K of 12,032 in a normal step) has too few output tiles to fill the device, each with a long loop
 * over K. Then every part sums its own range of K into a partial output, and the parts are added in
 * order (the same value every run). Unbatched matmuls without an epilogue only; at most `maxParts`
 * (selection.f16Tuning).
 */
export function f16Parts(d: MatMulDims, maxParts = gpuProgramSelection().f16Tuning.maxParts): number {
  if (d.batch !== 1) return 1;
  const tiles = Math.ceil(d.m / f16Tile(d)) * Math.ceil(d.n / f16Tile(d));
  if (tiles >= F16_WORKGROUPS / 2) return 1;
  return Math.max(1, Math.min(Math.ceil(F16_WORKGROUPS / tiles), Math.floor(d.k / F16_MIN_PART), maxParts));
}

/** The shader source's first lines for the f16 program: WGSL wants its directives before anything else. */
export const F16_MATMUL_ENABLES =
  'enable f16;\nenable subgroups;\nenable ' +
  'chromium_experimental_subgroup_matrix;\ndiagnostic(off, ' +
  'chromium.subgroup_matrix_uniformity);\n';
const F16_MATMUL_PROGRAM = 'XttsSubgroupMatMulProgram';

/**
 * A product's parts (f16Parts, or 1 with an epilogue) and its chunk of K: a whole number of slabs per part, so that
 * only the last part's last slab is short.
 */
function f16Product(
  d: MatMulDims,
  transposeA: boolean,
  transposeB: boolean,
  storageLimit: number,
  epilogue: { bias: boolean; relu: boolean } = { bias: false, relu: false },
): F16Product {
  const wanted = gpuProgramSelection().f16Tuning;
  const hasEpilogue = epilogue.bias || epilogue.relu;
  const split = hasEpilogue ? 1 : f16Parts(d, wanted.maxParts);
  const chunk = split > 1 ? Math.ceil(d.k / split / wanted.slab) * wanted.slab : d.k;
  const contiguous = (dim: number) => wanted.vector && dim % 4 === 0;
  const p: F16Product = {
    d,
    transposeA,
    transposeB,
    epilogue,
    parts: Math.ceil(d.k / chunk),
    chunk,
    tuning: wanted.prefetch ? wanted : { ...wanted, buffers: 1 },
    vecA: contiguous(transposeA ? d.m : d.k),
    vecB: contiguous(transposeB ? d.k : d.n),
    direct: wanted.direct && !hasEpilogue && d.n % 4 === 0,
  };
  if (p.tuning.buffers === 2 && f16SharedBytes([p]) > storageLimit) p.tuning = { ...p.tuning, buffers: 1 };
  return p;
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
  const { M, N, K } = gpuProgramSelection().subgroupShape;
  const { d, epilogue } = p;
  const TILE = f16Tile(d);
  return namedProgram(F16_MATMUL_PROGRAM, {
    variableNames: epilogue.bias ? ['A', 'B', 'bias'] : ['A', 'B'],
    // A and B as vec4 where they are read four values at a load.
    variableComponents: [p.vecA ? 4 : 1, p.vecB ? 4 : 1, ...(epilogue.bias ? [1] : [])],
    // Split over K (batch 1), the batch dimension holds the parts: part p sums K from p·chunk.
    outputShape: [d.batch * p.parts, d.m, d.n],
    shaderKey: `xtts_matmul_f16_${M}x${N}x${K}_${f16Key(p)}_${epilogue.bias}_${epilogue.relu}`,
    dispatchLayout: { x: [2], y: [1], z: [0] },
    dispatch: [Math.ceil(d.n / TILE), Math.ceil(d.m / TILE), d.batch * p.parts] as [number, number, number],
    workgroupSize: [32 * p.tuning.subgroups, 1, 1] as [number, number, number],
    uniforms: F16_UNIFORMS.map((n) => `${n} : i32,`).join(' '),
    getUserCode: () => `${f16SharedDeclarations([p])}
      var<workgroup> tileAt : vec4<i32>;
      fn main() {
        let t = i32(localId.x);
        // The tile's place through workgroup memory, uniform (tfjs keeps workgroupId in a private
        // variable, which the uniformity analysis cannot trust): whether the whole tile lies inside the
        // output decides between stores with barriers and stores without.
        if (t == 0) {
          tileAt = vec4<i32>(vec3<i32>(workgroupId.xyz), 0);
        }
        let at = workgroupUniformLoad(&tileAt);
        // z is the batch, or with K split (batch 1) the part.
        let b = at.z;
        let row0 = at.y * ${TILE};
        let col0 = at.x * ${TILE};${f16TileCode(
          p,
          { A: 'A', B: 'B', bias: 'bias' },
          (n) => `uniforms.${n}`,
          (b, row, col, v) => `setOutputAtCoords(${b}, ${row}, ${col}, ${v});`,
          'result',
        )}
      }`,
  });
}

const F16_PAIR_PROGRAM = 'XttsSubgroupMatMulPairProgram';
/** The f16 programs' names: their shader source starts with F16_MATMUL_ENABLES. */
export const F16_PROGRAMS: ReadonlySet<string> = new Set([F16_MATMUL_PROGRAM, F16_PAIR_PROGRAM, F16_STRIDED_PROGRAM]);

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
  const { M, N, K } = gpuProgramSelection().subgroupShape;
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
    const tileCode = f16TileCode(p, operands, (n) => `uniforms.${n}${i}`, store, i === 0 ? 'result' : 'second');
    return `
      fn product${i}(wg : i32, t : i32) {
        let b = wg / uniforms.perPart${i};
        let tile = wg % uniforms.perPart${i};
        let row0 = (tile / uniforms.cols${i}) * ${TILE};
        let col0 = (tile % uniforms.cols${i}) * ${TILE};${tileCode}
      }`;
  };
  const key = products.map(f16Key).join('_');
  const shape = inputs.map((q) => `${q.a}${q.b}`).join('_');
  // An input read four values at a load by either product (both see its contiguous dimension alike).
  const vec = (x: number) => products.some((p, i) => (inputs[i].a === x && p.vecA) || (inputs[i].b === x && p.vecB));
  return outputsProgram(F16_PAIR_PROGRAM, ['second'], {
    variableNames: [...names, 'second'],
    variableComponents: [...names.map((_, x) => (vec(x) ? 4 : 1)), 1],
    outputShape: [products[0].parts, products[0].d.m, products[0].d.n],
    shaderKey: `xtts_matmul_f16_pair_${M}x${N}x${K}_${key}_${inputCount}_${shape}`,
    dispatchLayout: { x: [2], y: [1], z: [0] },
    dispatch: [products.reduce((n, p) => n + f16TilesPerPart(p).perPart * p.parts, 0), 1, 1] as [
      number,
      number,
      number,
    ],
    workgroupSize: [32 * products[0].tuning.subgroups, 1, 1] as [number, number, number],
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
 * A × B (+ bias, ReLU) through the f16 tensor-core program; the caller checks dtypes, inner dimensions and batches.
 */
export function subgroupMatMul(
  { a, b, d, transposeA, transposeB }: MatMulCall,
  backend: WebgpuBackendLike,
  epilogue: { bias?: tfTypes.TensorInfo; relu: boolean } = { relu: false },
): tfTypes.TensorInfo {
  const inputs = epilogue.bias ? [a, b, epilogue.bias] : [a, b];
  const p = f16Product(d, transposeA, transposeB, storageLimitOf(backend), {
    bias: epilogue.bias !== undefined,
    relu: epilogue.relu,
  });
  const out = backend.runWebGPUProgram(
    subgroupProgram(p),
    inputs,
    'float32',
    f16UniformValues(p).map((v) => ({ type: 'int32', data: [v] })),
  );
  return sumParts(backend, out, p);
}

/** A split product's parts added in order (sumPartsInOrder), or the output itself where K was not split. */
function sumParts(backend: WebgpuBackendLike, out: tfTypes.TensorInfo, p: F16Product): tfTypes.TensorInfo {
  return p.parts === 1 ? out : sumPartsInOrder(backend, out, p.parts, p.d.m * p.d.n);
}

/**
 * Whether subgroupMatMulPair takes these two products on this backend: mixed_fp16 picked, and both
 * unbatched float32 matmuls that the f16 program would take on their own (enough output tiles).
 */
export function f16PairTakes(
  backend: unknown,
  products: { a: tfTypes.TensorInfo; b: tfTypes.TensorInfo; transposeA: boolean; transposeB: boolean }[],
): boolean {
  if (gpuProgramSelection().matmul !== 'f16') return false;
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
  const limit = storageLimitOf(backend);
  let products = pair.map((q) =>
    f16Product(
      matMulDims(inputs[q.a].shape, inputs[q.b].shape, q.transposeA, q.transposeB),
      q.transposeA,
      q.transposeB,
      limit,
    ),
  ) as [F16Product, F16Product];
  // The arrays are sized for the larger product: one copy of the slabs each where two would not fit.
  if (f16SharedBytes(products) > limit)
    products = products.map((p) => ({ ...p, tuning: { ...p.tuning, buffers: 1 } })) as [F16Product, F16Product];
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
