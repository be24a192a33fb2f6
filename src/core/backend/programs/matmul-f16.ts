import type * as tfTypes from '@tensorflow/tfjs-core';
import { type F16Tuning, gpuProgramSelection, type SubgroupMatrixShape } from '../gpu-programs.js';
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

/** The shortest slab of K a tuning may pick (f16UnitFits). */
const F16_SLAB = 32;
const F16_PAD = 8;

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
 * One product of the f16 program: its shape, transposes and epilogue, K split into `parts` of `chunk`,
 * how it is built (`tuning`; `buffers` 1 where two copies of the slabs would not fit the device's
 * workgroup memory), and which operands are read four values at a load (their contiguous dimension a
 * multiple of 4).
 */
interface F16Product {
  d: MatMulDims;
  transposeA: boolean;
  transposeB: boolean;
  epilogue: { bias: boolean; relu: boolean };
  parts: number;
  chunk: number;
  tuning: F16Tuning;
  vecA: boolean;
  vecB: boolean;
  /** Whole tiles store their sums straight into the output (no epilogue, rows 16-byte aligned). */
  direct: boolean;
}

/** Workgroup memory the f16 program may use when the device does not say (WebGPU's guaranteed least is 16 KiB). */
const F16_DEFAULT_STORAGE = 16384;

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

/** The workgroup memory a backend's device offers (its maxComputeWorkgroupStorageSize). */
function storageLimitOf(backend: unknown): number {
  const limits = (backend as { device?: { limits?: { maxComputeWorkgroupStorageSize?: number } } }).device?.limits;
  return limits?.maxComputeWorkgroupStorageSize ?? F16_DEFAULT_STORAGE;
}

/**
 * How a tile of a product lies in the f16 program: the subgroup matrices' shape (M × N, K deep); the
 * tile's side and K per slab; its split among the subgroups, SR × SC parts of subRows × subCols, each
 * RI × RJ unit matrices; the rows' strides of A's and B's slabs in workgroup memory (AST, BST) and the
 * size of one copy of each (ASIZE, BSIZE). Workgroup layouts: A row-major [TILE][SLAB] or, for Aᵀ,
 * column-major [SLAB][TILE]; B row-major [SLAB][TILE] or, for Bᵀ, column-major [TILE][SLAB]; each row
 * padded by F16_PAD.
 */
interface F16Layout {
  M: number;
  N: number;
  K: number;
  TILE: number;
  SLAB: number;
  SC: number;
  subRows: number;
  subCols: number;
  RI: number;
  RJ: number;
  AST: number;
  BST: number;
  ASIZE: number;
  BSIZE: number;
}

function f16Layout(p: F16Product): F16Layout {
  const { M, N, K } = gpuProgramSelection().subgroupShape;
  const TILE = f16Tile(p.d);
  const SLAB = p.tuning.slab;
  // Eight subgroups of 32 × 64 (128 tiles) or 32 × 16 (64 tiles), or four of 64 × 64 or 32 × 32.
  const [SR, SC] = p.tuning.subgroups === 4 ? [2, 2] : TILE === 128 ? [4, 2] : [2, 4];
  const subRows = TILE / SR;
  const subCols = TILE / SC;
  const AST = p.transposeA ? TILE + F16_PAD : SLAB + F16_PAD;
  const BST = p.transposeB ? SLAB + F16_PAD : TILE + F16_PAD;
  return {
    M,
    N,
    K,
    TILE,
    SLAB,
    SC,
    subRows,
    subCols,
    RI: subRows / M,
    RJ: subCols / N,
    AST,
    BST,
    ASIZE: (p.transposeA ? SLAB : TILE) * AST,
    BSIZE: (p.transposeB ? TILE : SLAB) * BST,
  };
}

/** Elements of the f16 program's workgroup arrays for a product: A's slabs, B's slabs and the staging area. */
function f16Shared(p: F16Product): [number, number, number] {
  const { ASIZE, BSIZE } = f16Layout(p);
  const { M, N } = gpuProgramSelection().subgroupShape;
  return [ASIZE * p.tuning.buffers, BSIZE * p.tuning.buffers, p.tuning.subgroups * M * N];
}

/** The elements of each workgroup array, sized for the largest of the products. */
function f16SharedSizes(products: F16Product[]): [number, number, number] {
  return [0, 1, 2].map((i) => Math.max(...products.map((p) => f16Shared(p)[i]))) as [number, number, number];
}

/** Bytes of workgroup memory the f16 program of these products uses (f16 slabs, f32 staging). */
function f16SharedBytes(products: F16Product[]): number {
  const [a, b, c] = f16SharedSizes(products);
  return 2 * (a + b) + 4 * c;
}

/** The workgroup arrays of the f16 program (sized for the largest of its products). */
function f16SharedDeclarations(products: F16Product[]): string {
  const [a, b, c] = f16SharedSizes(products);
  return `
      var<workgroup> As : array<f16, ${a}>;
      var<workgroup> Bs : array<f16, ${b}>;
      var<workgroup> Cs : array<f32, ${c}>;`;
}

const range = (n: number) => [...Array(n).keys()];
/** The (i, j) of a subgroup's RI × RJ unit result matrices. */
const unitGrid = (l: F16Layout) => range(l.RI).flatMap((i) => range(l.RJ).map((j) => [i, j] as const));

/**
 * How one operand's slab is read: by every invocation `units` loads of `width` values (vec4 or f32),
 * load e of invocation t at flat index t + e · lanes; along K where K is the operand's contiguous
 * dimension (A, Bᵀ), along the tile's lanes otherwise (Aᵀ, B), so that neighbouring invocations read
 * neighbouring values and each load's values lie next to each other in workgroup memory too.
 */
interface OperandSlab {
  /** Register and index names' prefix ('a' or 'b'). */
  x: string;
  input: string;
  array: string;
  /** The size of one copy of the slab in the array (its offset in the second copy). */
  size: number;
  alongK: boolean;
  width: number;
  units: number;
  /** Row of A or column of B of a load at `lane` of the tile (origin row0 or col0) and its limit. */
  origin: string;
  limit: string;
  /** The element index in global memory of (lane index L, K index kk). */
  at: (L: string, kk: string) => string;
  /** The element index in workgroup memory of (slab row s, tile lane). */
  shared: (s: string, lane: string) => string;
}

function operandSlabs(p: F16Product, l: F16Layout, names: { A: string; B: string }, u: (n: string) => string) {
  const [m, n, k] = [u('m'), u('n'), u('k')];
  const { TILE, SLAB, AST, BST } = l;
  const lanes = 32 * p.tuning.subgroups;
  const slab = (o: Omit<OperandSlab, 'units'>): OperandSlab => ({ ...o, units: (TILE * SLAB) / (o.width * lanes) });
  const a = slab({
    x: 'a',
    input: names.A,
    array: 'As',
    size: l.ASIZE,
    alongK: !p.transposeA,
    width: p.vecA ? 4 : 1,
    origin: 'row0',
    limit: m,
    at: p.transposeA
      ? (L, kk) => `bA * ${k} * ${m} + ${kk} * ${m} + ${L}`
      : (L, kk) => `bA * ${m} * ${k} + ${L} * ${k} + ${kk}`,
    shared: p.transposeA ? (s, lane) => `${s} * ${AST} + ${lane}` : (s, lane) => `${lane} * ${AST} + ${s}`,
  });
  const b = slab({
    x: 'b',
    input: names.B,
    array: 'Bs',
    size: l.BSIZE,
    alongK: p.transposeB,
    width: p.vecB ? 4 : 1,
    origin: 'col0',
    limit: n,
    at: p.transposeB
      ? (L, kk) => `bB * ${n} * ${k} + ${L} * ${k} + ${kk}`
      : (L, kk) => `bB * ${k} * ${n} + ${kk} * ${n} + ${L}`,
    shared: p.transposeB ? (s, lane) => `${lane} * ${BST} + ${s}` : (s, lane) => `${s} * ${BST} + ${lane}`,
  });
  return [a, b];
}

/**
 * WGSL before the loop over K, for one operand: each load's place, which does not change from slab to
 * slab — its K offset in the slab (xS), its lane's row or column (xL) and whether that is inside the
 * matrix (xOk), its index in workgroup memory (xW) — and its register (xR).
 */
function operandSetup(o: OperandSlab, l: F16Layout, lanes: number): string {
  const perRow = o.alongK ? l.SLAB / o.width : l.TILE / o.width;
  const type = o.width === 4 ? 'vec4<f32>' : 'f32';
  return range(o.units)
    .map((e) => {
      const flat = `(t + ${e * lanes})`;
      const [s, lane] = o.alongK
        ? [`(${flat} % ${perRow}) * ${o.width}`, `${flat} / ${perRow}`]
        : [`${flat} / ${perRow}`, `(${flat} % ${perRow}) * ${o.width}`];
      const x = `${o.x}`;
      return `let ${x}S${e} = ${s};
        let ${x}L${e} = ${o.origin} + ${lane};
        let ${x}Ok${e} = ${x}L${e} < ${o.limit};
        let ${x}W${e} = ${o.shared(`${x}S${e}`, lane)};
        var ${x}R${e} : ${type};`;
    })
    .join('\n        ');
}

/** WGSL: one operand's loads of the slab at k0 into its registers (zero outside the matrix and past kEnd). */
function operandLoads(o: OperandSlab): string {
  const zero = o.width === 4 ? 'vec4<f32>(0.0)' : '0.0';
  return range(o.units)
    .map((e) => {
      const x = `${o.x}`;
      const at = o.at(`${x}L${e}`, `(k0 + ${x}S${e})`);
      return `${x}R${e} = ${zero};
            if (${x}Ok${e} && k0 + ${x}S${e} < kEnd) {
              ${x}R${e} = ${o.input}[${o.width === 4 ? `(${at}) / 4` : at}];
            }`;
    })
    .join('\n            ');
}

/** WGSL: one operand's registers into its slab in workgroup memory (at the copy's offset `xOff`), rounded to f16. */
function operandStores(o: OperandSlab): string {
  return range(o.units)
    .flatMap((e) =>
      range(o.width).map(
        (c) => `${o.array}[${o.x}Off + u32(${o.x}W${e} + ${c})] = f16(${o.x}R${e}${o.width === 4 ? `[${c}]` : ''});`,
      ),
    )
    .join('\n          ');
}

/**
 * WGSL: a subgroup's products over the slab in workgroup memory (at aOff and bOff), one block per K step
 * of the unit matrices: its left and right matrices loaded (in the slab's majorness), then multiplied
 * into its sums.
 */
function f16SlabProducts(p: F16Product, l: F16Layout): string {
  const { M, N, K, AST, BST } = l;
  // Offsets of left matrix i and right matrix j at K step `step` within this subgroup's part.
  const leftAt = (i: number, step: number) =>
    p.transposeA ? `aBase + aOff + ${step * K * AST + i * M}u` : `aBase + aOff + ${i * M * AST + step * K}u`;
  const rightAt = (j: number, step: number) =>
    p.transposeB ? `bBase + bOff + ${j * N * BST + step * K}u` : `bBase + bOff + ${step * K * BST + j * N}u`;
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
  return range(l.SLAB / K)
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
function f16StagedStores(
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
 * WGSL: a subgroup's sums out. A tile wholly inside the output of a `direct` product stores each unit
 * matrix straight into `output` (row-major, rows of n: [parts or batch, m, n]); the others go through
 * the staging area (f16StagedStores). The test is the same for the whole workgroup.
 */
function f16TileStores(
  p: F16Product,
  l: F16Layout,
  value: string,
  u: (name: string) => string,
  store: (b: string, row: string, col: string, v: string) => string,
  output: string,
): string {
  const staged = f16StagedStores(l, value, u, store);
  if (!p.direct) return staged;
  const { M, N, TILE, SC, subRows, subCols } = l;
  const [m, n] = [u('m'), u('n')];
  const direct = unitGrid(l)
    .map(
      ([i, j]) => `subgroupMatrixStore<row_major>(&${output},
            u32((b * ${m} + rowS + ${i * M}) * ${n} + colS + ${j * N}), acc${i}_${j}, u32(${n}));`,
    )
    .join('\n          ');
  return `if (row0 + ${TILE} <= ${m} && col0 + ${TILE} <= ${n}) {
          let rowS = row0 + (sg / ${SC}) * ${subRows};
          let colS = col0 + (sg % ${SC}) * ${subCols};
          ${direct}
        } else {
        ${staged}
        }`;
}

/**
 * The WGSL of one output tile of product `p` (after `let t = i32(localId.x);` and the tile's
 * `row0`, `col0` and batch or part `b`): its part of K through subgroup matrices into f32 sums,
 * then out through f16TileStores (`store(b, row, col, value)` for a value through the staging area,
 * `output` the storage array a whole tile may go to). `u(name)`: the product's uniform (m, n, k,
 * batchA, batchB, chunk); `A`, `B` and `bias`: its inputs' names.
 */
function f16TileCode(
  p: F16Product,
  names: { A: string; B: string; bias: string },
  u: (name: string) => string,
  store: (b: string, row: string, col: string, v: string) => string,
  output: string,
): string {
  const l = f16Layout(p);
  const { M, N, K, SLAB, SC, subRows, subCols, AST, BST } = l;
  const { transposeA, transposeB, epilogue, tuning } = p;
  if (!f16UnitFits(gpuProgramSelection().subgroupShape))
    throw new Error(`the f16 matmul cannot tile ${l.TILE}×${l.TILE} with ${M}×${N}×${K} subgroup matrices`);
  const value = epilogueCode(
    `Cs[sg * ${M * N} + idx]`,
    epilogue.bias ? `f32(${names.bias}[col])` : null,
    epilogue.relu,
  );
  const operands = operandSlabs(p, l, names, u);
  const loads = operands.map(operandLoads).join('\n            ');
  const stores = operands.map(operandStores).join('\n          ');
  // Which copy of the slabs this slab goes to (the second only with two buffers).
  const copies =
    tuning.buffers === 2
      ? `let aOff = u32(slab % 2) * ${l.ASIZE}u;
          let bOff = u32(slab % 2) * ${l.BSIZE}u;`
      : 'let aOff = 0u;\n          let bOff = 0u;';
  const body = tuning.prefetch
    ? `${tuning.buffers === 1 ? 'workgroupBarrier();' : ''}
          ${stores}
          workgroupBarrier();
          if (slab + 1 < slabs) {
            let k0 = kStart + (slab + 1) * ${SLAB};
            ${loads}
          }
          ${f16SlabProducts(p, l)}`
    : `{
            let k0 = kStart + slab * ${SLAB};
            ${loads}
          }
          ${stores}
          workgroupBarrier();
          ${f16SlabProducts(p, l)}
          workgroupBarrier();`;
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
        ${operands.map((o) => operandSetup(o, l, 32 * tuning.subgroups)).join('\n        ')}
        // A trip count the whole workgroup shares (workgroupBarrier wants uniform control flow):
        // the slabs of one part; a shorter last part reads zeros past kEnd.
        let slabs = (min(${u('chunk')}, ${u('k')}) + ${SLAB - 1}) / ${SLAB};${
          tuning.prefetch
            ? `
        {
          let k0 = kStart;
          ${loads}
        }`
            : ''
        }
        for (var slab = 0; slab < slabs; slab = slab + 1) {
          ${copies}
          ${body}
        }
        ${f16TileStores(p, l, value, u, store, output)}`;
}

/** What a product's program is built from (its shader key): tile, transposes, vec4 loads, direct stores, tuning. */
function f16Key(p: F16Product): string {
  const t = p.tuning;
  const flags = [p.transposeA, p.transposeB, p.vecA, p.vecB, p.direct, t.prefetch].map((f) => (f ? 1 : 0)).join('');
  return `${f16Tile(p.d)}_${flags}_${t.slab}_${t.buffers}`;
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
