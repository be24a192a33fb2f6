import type * as tfTypes from '@tensorflow/tfjs-core';
import { gpuProgramSelection, type SubgroupMatrixShape } from '../gpu-programs.js';
import { namedProgram, outputsProgram, runWithOutputs, type WebgpuProgramRunner } from '../kernels.js';
import {
  epilogueCode,
  type MatMulCall,
  matMulDims,
  type MatMulDims,
  operandIndex,
  slabLoad,
  sumPartsInOrder,
  tfjsPacks,
  type WebgpuBackendLike,
} from './matmul-core.js';
import { LARGE_TILES_FROM } from './matmul-wide.js';

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

/**
 * How a tile of a product lies in the f16 program: the subgroup matrices' shape (M × N, K deep); the
 * tile's side; its split among the subgroups, SR × SC parts of subRows × subCols, each RI × RJ unit
 * matrices; the rows' strides of A's and B's slabs in workgroup memory (AST, BST). Workgroup layouts:
 * A row-major [TILE][SLAB] or, for Aᵀ, column-major [SLAB][TILE]; B row-major [SLAB][TILE] or, for
 * Bᵀ, column-major [TILE][SLAB]; each row padded by F16_PAD.
 */
interface F16Layout {
  M: number;
  N: number;
  K: number;
  TILE: number;
  SC: number;
  subRows: number;
  subCols: number;
  RI: number;
  RJ: number;
  AST: number;
  BST: number;
}

function f16Layout(p: F16Product): F16Layout {
  const { M, N, K } = gpuProgramSelection().subgroupShape;
  const TILE = f16Tile(p.d);
  const [SR, SC] = TILE === 128 ? [4, 2] : [2, 4];
  const subRows = TILE / SR;
  const subCols = TILE / SC;
  return {
    M,
    N,
    K,
    TILE,
    SC,
    subRows,
    subCols,
    RI: subRows / M,
    RJ: subCols / N,
    AST: p.transposeA ? TILE + F16_PAD : F16_SLAB + F16_PAD,
    BST: p.transposeB ? F16_SLAB + F16_PAD : TILE + F16_PAD,
  };
}

/** Elements of the f16 program's workgroup arrays for a product: A's slab, B's slab and the subgroups' staging area. */
function f16Shared(p: F16Product): [number, number, number] {
  const { TILE, AST, BST } = f16Layout(p);
  return [
    (p.transposeA ? F16_SLAB : TILE) * AST,
    (p.transposeB ? TILE : F16_SLAB) * BST,
    (F16_LANES / 32) * gpuProgramSelection().subgroupShape.M * gpuProgramSelection().subgroupShape.N,
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

const range = (n: number) => [...Array(n).keys()];
/** The (i, j) of a subgroup's RI × RJ unit result matrices. */
const unitGrid = (l: F16Layout) => range(l.RI).flatMap((i) => range(l.RJ).map((j) => [i, j] as const));

/** WGSL: A's and B's slab of K from global memory into As and Bs, rounded to f16, by all the invocations. */
function f16SlabLoads(
  p: F16Product,
  l: F16Layout,
  names: { A: string; B: string },
  u: (name: string) => string,
): string {
  const { aAt, bAt } = operandIndex(p.transposeA, p.transposeB, u);
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
      tile: l.TILE,
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
  const loadA = load(
    'As',
    names.A,
    !p.transposeA,
    'r',
    'row0',
    u('m'),
    aAt,
    p.transposeA ? `s * ${l.AST} + lane` : `lane * ${l.AST} + s`,
  );
  const loadB = load(
    'Bs',
    names.B,
    p.transposeB,
    'c',
    'col0',
    u('n'),
    bAt,
    p.transposeB ? `lane * ${l.BST} + s` : `s * ${l.BST} + lane`,
  );
  return `${loadA}${loadB}`;
}

/**
 * WGSL: a subgroup's products over the slab in workgroup memory, one block per K step of the unit
 * matrices: its left and right matrices loaded (in the slab's majorness), then multiplied into its sums.
 */
function f16SlabProducts(p: F16Product, l: F16Layout): string {
  const { M, N, K, AST, BST } = l;
  // Offsets of left matrix i and right matrix j at K step `step` within this subgroup's part.
  const leftAt = (i: number, step: number) =>
    p.transposeA ? `aBase + ${step * K * AST + i * M}u` : `aBase + ${i * M * AST + step * K}u`;
  const rightAt = (j: number, step: number) =>
    p.transposeB ? `bBase + ${j * N * BST + step * K}u` : `bBase + ${step * K * BST + j * N}u`;
  const aMajor = p.transposeA ? 'col_major' : 'row_major';
  const bMajor = p.transposeB ? 'col_major' : 'row_major';
  // Matrices `name`0, 1, … of `type`, from `array` at `offsets`.
  const matrixLoads = (name: string, type: string, array: string, offsets: string[], stride: number) =>
    offsets
      .map((at, i) => `let ${name}${i} = subgroupMatrixLoad<${type}>(\n              &${array}, ${at}, ${stride}u);`)
      .join('\n            ');
  const products = unitGrid(l)
    .map(([i, j]) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`)
    .join('\n            ');
  return range(F16_SLAB / K)
    .map((step) => {
      const lefts = range(l.RI).map((i) => leftAt(i, step));
      const rights = range(l.RJ).map((j) => rightAt(j, step));
      return `{
            ${matrixLoads('l', `subgroup_matrix_left<f16, ${K}, ${M}>, ${aMajor}`, 'As', lefts, AST)}
            ${matrixLoads('r', `subgroup_matrix_right<f16, ${N}, ${K}>, ${bMajor}`, 'Bs', rights, BST)}
            ${products}
          }`;
    })
    .join('\n          ');
}

/**
 * WGSL: a subgroup's sums out, one unit matrix at a time through its staging area in Cs, each value
 * inside the output `value` (the epilogue of Cs's) stored by `store(b, row, col, value)`.
 */
function f16TileStores(
  l: F16Layout,
  value: string,
  u: (name: string) => string,
  store: (b: string, row: string, col: string, v: string) => string,
): string {
  const { M, N, SC, subRows, subCols } = l;
  return unitGrid(l)
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
    .join('\n        ');
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
  const l = f16Layout(p);
  const { M, N, K, TILE, SC, subRows, subCols, AST, BST } = l;
  const { transposeA, transposeB, epilogue } = p;
  if (!f16UnitFits(gpuProgramSelection().subgroupShape))
    throw new Error(`the f16 matmul cannot tile ${TILE}×${TILE} with ${M}×${N}×${K} subgroup matrices`);
  const value = epilogueCode(
    `Cs[sg * ${M * N} + idx]`,
    epilogue.bias ? `f32(${names.bias}[col])` : null,
    epilogue.relu,
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
        ${unitGrid(l)
          .map(([i, j]) => `var acc${i}_${j} = subgroup_matrix_result<f32, ${N}, ${M}>();`)
          .join('\n        ')}
        // A trip count the whole workgroup shares (workgroupBarrier wants uniform control flow):
        // the slabs of one part; a shorter last part reads zeros past kEnd.
        for (var slab = 0; slab < (min(${u('chunk')}, ${u('k')}) + ${F16_SLAB - 1}) / ${F16_SLAB}; slab = slab + 1) {
          let k0 = kStart + slab * ${F16_SLAB};${f16SlabLoads(p, l, names, u)}
          workgroupBarrier();
          ${f16SlabProducts(p, l)}
          workgroupBarrier();
        }
        ${f16TileStores(l, value, u, store)}`;
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
export function subgroupMatMul(
  { a, b, d, transposeA, transposeB }: MatMulCall,
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
