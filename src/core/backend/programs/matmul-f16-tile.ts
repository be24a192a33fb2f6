// One output tile of the f16 tensor-core matmul as WGSL (matmul-f16.ts has the programs around it): how
// a product's tile lies in workgroup memory and among the subgroups, the operands' slabs of K read from
// global memory (scalars or vec4, straight or through registers a slab ahead) and rounded to f16 on their
// way into workgroup memory, the subgroup matrices' products, and the sums out (straight into the
// output, or through a staging area where an epilogue or the output's edge wants ordinary code).
import { type F16Tuning, gpuProgramSelection, type SubgroupMatrixShape } from '../gpu-programs.js';
import { epilogueCode, type MatMulDims } from './matmul-core.js';
import { LARGE_TILES_FROM } from './matmul-wide.js';

/** Workgroup memory the f16 program may use when the device does not say (WebGPU's guaranteed least is 16 KiB). */
const F16_DEFAULT_STORAGE = 16384;

/** The workgroup memory a backend's device offers (its maxComputeWorkgroupStorageSize). */
export function storageLimitOf(backend: unknown): number {
  const limits = (backend as { device?: { limits?: { maxComputeWorkgroupStorageSize?: number } } }).device?.limits;
  return limits?.maxComputeWorkgroupStorageSize ?? F16_DEFAULT_STORAGE;
}

/** The shortest slab of K a tuning may pick (f16UnitFits). */
const F16_SLAB = 32;
const F16_PAD = 8;

/** Output tile side: 128 where the output has enough such tiles (about two per H100 multiprocessor), else 64. */
export function f16Tile(d: MatMulDims): 64 | 128 {
  return Math.ceil(d.m / 128) * Math.ceil(d.n / 128) * d.batch >= LARGE_TILES_FROM ? 128 : 64;
}

/**
 * Whether the f16 program can be built from subgroup matrices of this shape: a subgroup's part of a tile
 * is 32 rows × 64 columns (128×128 tiles), 32 × 16 (64×64), 64 × 64 or 32 × 32 (four subgroups), and K
 * goes in slabs of 32 or 64.
 */
export function f16UnitFits(u: SubgroupMatrixShape): boolean {
  return 32 % u.M === 0 && 16 % u.N === 0 && F16_SLAB % u.K === 0;
}

/**
 * One product of the f16 program: its shape, transposes and epilogue, K split into `parts` of `chunk`,
 * how it is built (`tuning`; `buffers` 1 where two copies of the slabs would not fit the device's
 * workgroup memory), and which operands are read four values at a load (their contiguous dimension a
 * multiple of 4).
 */
export interface F16Product {
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
  /** The output tile's side where the product picks it (strided products), else f16Tile's. */
  tile?: 64 | 128;
  /**
   * A and B read through strides (matmul-f16-strided.ts): element (row or column L, k) of A at aOrigin + L·aI +
   * k·aJ, of B at bOrigin + k·bI + L·bJ (WGSL lets and the product's uniforms aI, aJ, bI, bJ).
   */
  strided?: boolean;
}

/** A product's output tile side. */
export function f16TileOf(p: F16Product): 64 | 128 {
  return p.tile ?? f16Tile(p.d);
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
  const TILE = f16TileOf(p);
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
export function f16SharedBytes(products: F16Product[]): number {
  const [a, b, c] = f16SharedSizes(products);
  // And the 16 bytes through which each program shares its tile's or workgroup's index (a vec4<i32>).
  return 2 * (a + b) + 4 * c + 16;
}

/** The workgroup arrays of the f16 program (sized for the largest of its products). */
export function f16SharedDeclarations(products: F16Product[]): string {
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
    alongK: !p.transposeA,
    width: p.vecA ? 4 : 1,
    origin: 'row0',
    limit: m,
    at: p.strided
      ? (L, kk) => `aOrigin + ${L} * ${u('aI')} + ${kk} * ${u('aJ')}`
      : p.transposeA
        ? (L, kk) => `bA * ${k} * ${m} + ${kk} * ${m} + ${L}`
        : (L, kk) => `bA * ${m} * ${k} + ${L} * ${k} + ${kk}`,
    shared: p.transposeA ? (s, lane) => `${s} * ${AST} + ${lane}` : (s, lane) => `${lane} * ${AST} + ${s}`,
  });
  const b = slab({
    x: 'b',
    input: names.B,
    array: 'Bs',
    alongK: p.transposeB,
    width: p.vecB ? 4 : 1,
    origin: 'col0',
    limit: n,
    at: p.strided
      ? (L, kk) => `bOrigin + ${kk} * ${u('bI')} + ${L} * ${u('bJ')}`
      : p.transposeB
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
  // The value converted to f32: a float32 tensor's buffer may hold int32 values (tfjs casts int32 to
  // float32 without a copy, and then declares the binding by the buffer's own type).
  const type = o.width === 4 ? 'vec4<f32>' : 'f32';
  return range(o.units)
    .map((e) => {
      const x = `${o.x}`;
      const at = o.at(`${x}L${e}`, `(k0 + ${x}S${e})`);
      return `${x}R${e} = ${type}(0.0);
            if (${x}Ok${e} && k0 + ${x}S${e} < kEnd) {
              ${x}R${e} = ${type}(${o.input}[${o.width === 4 ? `(${at}) / 4` : at}]);
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
export function f16TileCode(
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
export function f16Key(p: F16Product): string {
  const t = p.tuning;
  const flags = [p.transposeA, p.transposeB, p.vecA, p.vecB, p.direct, t.prefetch, p.strided]
    .map((f) => (f ? 1 : 0))
    .join('');
  return `${f16TileOf(p)}_${flags}_${t.slab}_${t.buffers}_${t.subgroups}`;
}
