// A dense layer's backward as one WebGPU program. Given dy (the gradient at the layer's output or, for
// a layer under a ReLU or a dropout, at what those made of it), the layer's input x ([rows, in]) and
// its weight W ([in, out]), the backward is dz (dy itself, dy·step(y) under a ReLU, dy times the
// dropout's mask), two matmuls and a column sum: dx = dz·Wᵀ, dW = xᵀ·dz and db = Σ_rows dz. tfjs and
// the programs apart make that three programs or four (a ReLU's or dropout's gradient with the column
// sum; dx; dW, in mixed_fp16 a partial and its sum), and on an H100 a tiny step is bound by the programs
// the host issues and by the device's gaps between them, not by their arithmetic. Here one dispatch
// holds both matmuls' output tiles side by side: a workgroup's flat index says which product and tile
// it computes. dz is made where it is read; db is the last row of [x | 1]ᵀ·dz.
//
// dx's tiles are 64 × 64 over K = out (short): 16 × 16 invocations of 4 × 4 outputs, K in slabs of
// 16 through workgroup memory, as the tiled matmul (backend/programs/matmul.ts). dW's K is the batch's rows
// (thousands) over a small output, so its tiles are few with a long loop each; tfjs, and xtts's
// mixed_fp16 program, split such a K over workgroups and add the parts in a program of their own. Here
// the split is within the workgroup: dW's tiles are 16 × 16, and the workgroup's 256 invocations are 8
// groups of 32 (8 × 4 of 4 × 2 outputs), each summing every 8th slab of 16 rows; then each invocation
// adds one output's 8 sums in the groups' order through workgroup memory (the same value every run).
// Many small tiles keep the device's multiprocessors busy where a few long ones would wait on their
// loads (on an H100, 16 × 16 tiles in 8 groups took 0.11 ms for a tiny step's largest layer, 32 × 32
// in 4 groups 0.14). Float32 throughout, also under mixed_fp16, and only for small layers
// (denseGradsMaxFlops), where the step is bound by its programs more than by their arithmetic.
//
// Which product a workgroup computes comes from its index through workgroupUniformLoad, so that its
// loop over K, whose length depends on the product, is uniform across the workgroup as its barriers
// want.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { outputsProgram, runWithOutputs, type WebgpuProgramRunner } from '../kernels.js';
import { gpuProgramSelection } from '../gpu-programs.js';
import { SLAB, slabLoad } from './matmul.js';

/**
 * What dz is made of: dy itself, dy·step(y) (a ReLU's output y), or dy times a dropout's mask (pool[offsets[k] + i]).
 */
export type DenseGradKind = 'plain' | 'relu' | 'mask';

/** The shape of a dense layer's backward: dy [rows, out], x [rows, in], W [in, out]. */
export interface DenseDims {
  rows: number;
  in: number;
  out: number;
  kind: DenseGradKind;
}

/**
 * The largest layer (4·rows·in·out: both matmuls' FLOPs) taken as one program: 2³⁰ in float32 (a tiny
 * step's layers, 3,008 frames × 128 × 512, ran in 0.09–0.11 ms against tfjs's 0.12–0.13 on an H100),
 * 3·2²⁷ with mixed_fp16, whose tensor-core matmuls do a tiny step's 3,008-frame layers apart in 0.07 ms
 * against this program's 0.09–0.11 but not its 1,280-token ones (0.064–0.074 against 0.050–0.060).
 * Larger layers are bound by the device's arithmetic, and do better apart.
 */
export function denseGradsMaxFlops(): number {
  return gpuProgramSelection().matmul === 'f16' ? 3 * 2 ** 27 : 2 ** 30;
}

/**
 * dx's tile side (16 × 16 invocations of 4 × 4 outputs); dW's, its groups over K and a group's invocations (8 × 4, each
 * 4 rows × 2 columns of the tile).
 */
const DX_TILE = 64;
const DW_TILE = 16;
const GROUPS = 8;
const DW_LANES = 256 / GROUPS;
/** Workgroup rows of a slab: the tile and 2 (so that either order of stores falls in distinct banks). */
const DX_STRIDE = DX_TILE + 2;
const DW_STRIDE = DW_TILE + 2;
/** Workgroup memory (f32): dx's two slabs, dW's groups' two slabs each, or every group's sums of the dW tile. */
const SHARED = Math.max(2 * SLAB * DX_STRIDE, GROUPS * 2 * SLAB * DW_STRIDE, GROUPS * DW_TILE * DW_TILE);

const DENSE_GRADS_PROGRAM = 'XttsDenseGradsProgram';

/** The inputs dz is made from, after dy, x and W. */
export function dzInputs(kind: DenseGradKind): string[] {
  return kind === 'relu' ? ['y'] : kind === 'mask' ? ['pool', 'offsets'] : [];
}

/** dz at flat index i (WGSL): the arithmetic of reluGrad and maskAt, value for value. */
function dzFunction(kind: DenseGradKind): string {
  const body =
    kind === 'relu'
      ? `let v = y[i];
        var st = select(0.0, 1.0, v > 0.0);
        if (isnan(v)) {
          st = v;
        }
        return dy[i] * st;`
      : kind === 'mask'
        ? 'return pool[offsets[uniforms.k] + i] * dy[i];'
        : 'return dy[i];';
  return `
      fn dzAt(i : i32) -> f32 {
        ${body}
      }`;
}

const range = (n: number) => [...Array(n).keys()];

/**
 * dx = dz·Wᵀ for the workgroup's 64 × 64 tile (WGSL, in the branch of the workgroups before
 * uniforms.dxTiles): 16 × 16 invocations of 4 × 4 outputs (rows ty + 16i, columns tx + 16j).
 */
function dxTileCode(): string {
  const pairs = range(4).flatMap((i) => range(4).map((j) => [i, j] as const));
  // Each operand's slab into S (A's first, B's after it), read in the order it lies in memory.
  const load = (operand: 'A' | 'B', index: string, origin: string, limit: string, read: string) =>
    slabLoad({
      lanes: 256,
      slab: SLAB,
      tile: DX_TILE,
      tid: 't',
      alongK: true,
      array: 'S',
      index,
      origin,
      limit,
      kLimit: 'uniforms.outDim',
      store: `${operand === 'A' ? 0 : SLAB * DX_STRIDE} + s * ${DX_STRIDE} + lane`,
      convert: (x) => x,
      read,
    });
  const loadA = load('A', 'r', 'row0', 'uniforms.rows', 'dzAt(r * uniforms.outDim + kk)');
  const loadB = load('B', 'c', 'col0', 'uniforms.inDim', 'w[c * uniforms.outDim + kk]');
  return `
          // dx = dz·Wᵀ: A = dz [rows, out], B[kk, c] = W[c, kk]; both lie along K.
          let tx = t % 16;
          let ty = t / 16;
          let row0 = (wg / uniforms.dxCols) * ${DX_TILE};
          let col0 = (wg % uniforms.dxCols) * ${DX_TILE};
          ${pairs.map(([i, j]) => `var c${i}_${j} = 0.0;`).join(' ')}
          for (var k0 = 0; k0 < uniforms.outDim; k0 = k0 + ${SLAB}) {${loadA}${loadB}
            workgroupBarrier();
            for (var s = 0; s < ${SLAB}; s = s + 1) {
              let base = s * ${DX_STRIDE};
              ${range(4)
                .map((i) => `let a${i} = S[base + ty + ${16 * i}];`)
                .join(' ')}
              ${range(4)
                .map((j) => `let b${j} = S[${SLAB * DX_STRIDE} + base + tx + ${16 * j}];`)
                .join(' ')}
              ${pairs.map(([i, j]) => `c${i}_${j} = fma(a${i}, b${j}, c${i}_${j});`).join('\n              ')}
            }
            workgroupBarrier();
          }
          ${range(4)
            .map(
              (i) => `{
            let r = row0 + ty + ${16 * i};
            if (r < uniforms.rows) {
              ${range(4)
                .map(
                  (j) =>
                    `if (col0 + tx + ${16 * j} < uniforms.inDim) { setOutputAtIndex(r * ` +
                    `uniforms.inDim + col0 + tx + ${16 * j}, c${i}_${j}); }`,
                )
                .join('\n              ')}
            }
          }`,
            )
            .join('\n          ')}`;
}

/**
 * [dW; db] = [x | 1]ᵀ·dz for the workgroup's 16 × 16 tile (WGSL, in the branch of the workgroups
 * from uniforms.dxTiles): GROUPS groups of 8 × 4 invocations of 4 × 2 outputs (rows ty + 4i, columns
 * tx + 8j), each group summing every GROUPS-th slab of K; then the groups' sums added in order.
 */
function dwTileCode(): string {
  const pairs = range(4).flatMap((i) => range(2).map((j) => [i, j] as const));
  // Each operand's slab into the group's part of S (A's first, B's after it), read in the order it lies in memory.
  const load = (operand: 'A' | 'B', index: string, limit: string, read: string) =>
    slabLoad({
      lanes: DW_LANES,
      slab: SLAB,
      tile: DW_TILE,
      tid: 'lt',
      alongK: false,
      array: 'S',
      index,
      origin: operand === 'A' ? 'row0' : 'col0',
      limit,
      kLimit: 'uniforms.rows',
      store: `mine + ${operand === 'A' ? 0 : SLAB * DW_STRIDE} + s * ${DW_STRIDE} + lane`,
      convert: (x) => x,
      read,
    });
  const loadA = load(
    'A',
    'r',
    'uniforms.inDim + 1',
    'select(x[kk * uniforms.inDim + min(r, uniforms.inDim - 1)], 1.0, r == uniforms.inDim)',
  );
  const loadB = load('B', 'c', 'uniforms.outDim', 'dzAt(kk * uniforms.outDim + c)');
  return `
          // [dW; db] = [x | 1]ᵀ·dz: A[r, kk] = x[kk, r] (1 in row r = in), B = dz; both lie along the lanes.
          let tile = wg - uniforms.dxTiles;
          let row0 = (tile / uniforms.dwCols) * ${DW_TILE};
          let col0 = (tile % uniforms.dwCols) * ${DW_TILE};
          let grp = t / ${DW_LANES};
          let lt = t % ${DW_LANES};
          let tx = lt % 8;
          let ty = lt / 8;
          let mine = grp * ${2 * SLAB * DW_STRIDE};
          ${pairs.map(([i, j]) => `var c${i}_${j} = 0.0;`).join(' ')}
          for (var kb = 0; kb < uniforms.rows; kb = kb + ${GROUPS * SLAB}) {
            {
              let k0 = kb + grp * ${SLAB};${loadA}${loadB}
            }
            workgroupBarrier();
            for (var s = 0; s < ${SLAB}; s = s + 1) {
              let base = mine + s * ${DW_STRIDE};
              ${range(4)
                .map((i) => `let a${i} = S[base + ty + ${4 * i}];`)
                .join(' ')}
              ${range(2)
                .map((j) => `let b${j} = S[base + ${SLAB * DW_STRIDE} + tx + ${8 * j}];`)
                .join(' ')}
              ${pairs.map(([i, j]) => `c${i}_${j} = fma(a${i}, b${j}, c${i}_${j});`).join('\n              ')}
            }
            workgroupBarrier();
          }
          // Every group's sums side by side, then each invocation adds one output's in the groups' order.
          ${pairs
            .map(
              ([i, j]) => `S[grp * ${DW_TILE * DW_TILE} + (ty + ${4 * i}) * ${DW_TILE} + tx + ${8 * j}] = c${i}_${j};`,
            )
            .join('\n          ')}
          workgroupBarrier();
          var sum = 0.0;
          for (var g = 0; g < ${GROUPS}; g = g + 1) {
            sum = sum + S[g * ${DW_TILE * DW_TILE} + t];
          }
          let r = row0 + t / ${DW_TILE};
          let c = col0 + t % ${DW_TILE};
          if (c < uniforms.outDim) {
            if (r < uniforms.inDim) {
              dW[r * uniforms.outDim + c] = sum;
            } else if (r == uniforms.inDim) {
              db[c] = sum;
            }
          }`;
}

/** The one program of a dense layer's backward: a workgroup's flat index says which product and tile it computes. */
function program(d: DenseDims) {
  return outputsProgram(DENSE_GRADS_PROGRAM, ['dW', 'db'], {
    variableNames: ['dy', 'x', 'w', ...dzInputs(d.kind), 'dW', 'db'],
    outputShape: [d.rows, d.in],
    shaderKey: `xtts_dense_grads_${d.kind}`,
    dispatchLayout: { x: [1], y: [0] },
    dispatch: [0, 1, 1] as [number, number, number],
    workgroupSize: [256, 1, 1] as [number, number, number],
    uniforms: 'rows : i32, inDim : i32, outDim : i32, dxTiles : i32, dxCols : i32, dwCols : i32, k : i32,',
    getUserCode: () => `
      var<workgroup> S : array<f32, ${SHARED}>;
      var<workgroup> wgIndex : i32;${dzFunction(d.kind)}
      fn main() {
        let t = i32(localIndex);
        if (t == 0) {
          wgIndex = i32(workgroupId.x);
        }
        let wg = workgroupUniformLoad(&wgIndex);
        if (wg < uniforms.dxTiles) {${dxTileCode()}
        } else {${dwTileCode()}
        }
      }`,
  });
}

/**
 * [dx, dW, db] of a dense layer on webgpu, one program. `extra`: y (kind relu) or [pool, offsets]
 * (kind mask, with `k` the step's dropout index into offsets).
 */
export function denseGrads(
  backend: WebgpuProgramRunner,
  dy: tfTypes.TensorInfo,
  x: tfTypes.TensorInfo,
  w: tfTypes.TensorInfo,
  extra: tfTypes.TensorInfo[],
  d: DenseDims,
  k = 0,
): tfTypes.TensorInfo[] {
  const dxCols = Math.ceil(d.in / DX_TILE);
  const dxTiles = dxCols * Math.ceil(d.rows / DX_TILE);
  const dwCols = Math.ceil(d.out / DW_TILE);
  const dwTiles = dwCols * Math.ceil((d.in + 1) / DW_TILE);
  const p = program(d);
  p.dispatch = [dxTiles + dwTiles, 1, 1];
  const uniforms = [d.rows, d.in, d.out, dxTiles, dxCols, dwCols, k].map((v) => ({ type: 'int32', data: [v] }));
  return runWithOutputs(backend, p, [dy, x, w, ...extra], [[d.in, d.out], [d.out]], uniforms);
}
