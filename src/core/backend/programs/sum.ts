// Sums on the webgpu backend that tfjs-backend-webgpu runs in more programs, or fewer workgroups, than
// they need.
//
// Full sums over many workgroups. tfjs reduces a tensor to one value in a single workgroup (its
// reduce program runs one workgroup per output): the gradient norm over every parameter (62 M floats
// in the normal preset) and the masked loss sums over a batch's frames ran on one of the GPU's ~130
// multiprocessors. Here a float32 sum over all axes of at least SPREAD_FROM values runs in two
// dispatches of one program: up to 1,024 workgroups each sum a contiguous chunk into a partial, then
// one workgroup sums the partials — in a fixed order, so the result is the same every time.
//
// Sums over leading or middle axes in one program. tfjs sums only over the innermost axes: any
// other sum is a transpose (a full pass over the tensor, and a program) before the reduction. Every
// bias gradient is one (Σ over the rows of [rows, out]), as are the layer norms' gain gradients and
// the convolutions' bias gradients: 62 of a tiny training step's 867 programs were such transposes.
// Viewed as [outer, rows, inner] (the summed axes contiguous), out[o, i] = Σ_r x[o, r, i] here runs
// as one program whose invocations read neighbouring i (coalesced) and split r among themselves,
// summed in a fixed order. Everything else goes to tfjs's own kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { defineGpuKernel, defineGpuOverride } from '../gpu-programs.js';
import { namedProgram, outputsProgram, runWithOutputs, type WebgpuProgramRunner } from '../kernels.js';

type Tf = typeof import('@tensorflow/tfjs-core');

/**
 * Values from which a full sum is spread over workgroups. A GPU runs the workgroups side by side; on
 * Mesa's llvmpipe (2 CPU cores) bench/reduce.bench.ts measured the spread sum 0.7× as fast at 0.5 M
 * values (two dispatches instead of one) and 2.1× at 10.8 M; the GPU figures are still to be taken.
 */
export const SPREAD_FROM = 1 << 15;
const WORKGROUP = 256;
const MAX_PARTIALS = 1024;
/** At least this many values per invocation in the first pass. */
const PER_INVOCATION = 16;

/**
 * What a sum adds up: by default x's values; else the value a WGSL function body makes of the inputs
 * at (at: the flat index, r: in a strided sum the row within its outer index, else 0) — x², or a
 * product of two tensors (a layer norm's gain gradient), or a masked error — summed without a program
 * that writes those values first.
 */
export interface Summand {
  variableNames: string[];
  /** Tells its shader apart. */
  key: string;
  /** The body of `fn value(at : i32, r : i32) -> f32`. */
  body: string;
  /**
   * A strided sum also writes every value it adds, at its flat index, into a second output (`stored`,
   * the inputs' shape): an elementwise result and its column sums in one program (ReLU's gradient and
   * the bias gradient under it).
   */
  stores?: boolean;
  /** Uniforms of its own (WGSL declarations, `name : i32,` each, read as uniforms.name) and their values. */
  uniforms?: { declarations: string; values: number[] };
}
/**
 * WGSL: `value` of every invocation (`tid`, one of `lanes`) summed into array[0], in a tree of halves:
 * a fixed order, the same sum every run. Its barriers want uniform control flow.
 */
export function workgroupSum(array: string, value: string, lanes: number): string {
  return `${array}[tid] = ${value};
        workgroupBarrier();
        for (var size = ${lanes / 2}; size > 0; size = size >> 1) {
          if (tid < size) {
            ${array}[tid] = ${array}[tid] + ${array}[tid + size];
          }
          workgroupBarrier();
        }`;
}

const VALUES: Summand = { variableNames: ['x'], key: '', body: 'return f32(x[at]);' };
const SQUARES: Summand = { variableNames: ['x'], key: '_squares', body: 'let v = f32(x[at]);\n        return v * v;' };

/**
 * out[w] = Σ value(i) over i in [w·chunk, min(n, (w+1)·chunk)), one workgroup per w; `over`: the sum
 * divided by the one value of a last input named `over`.
 */
function partialSums(outputs: number, summand: Summand, over = false) {
  return namedProgram('XttsSpreadSumProgram', {
    variableNames: over ? [...summand.variableNames, 'over'] : summand.variableNames,
    outputShape: [outputs],
    shaderKey: `xtts_sum_spread${summand.key}${over ? '_over' : ''}`,
    dispatchLayout: { x: [0] },
    dispatch: [outputs, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'n : i32, chunk : i32,',
    getUserCode: () => `
      var<workgroup> partial : array<f32, ${WORKGROUP}>;
      fn value(at : i32, r : i32) -> f32 {
        ${summand.body}
      }
      fn main(index : i32) {
        let tid = i32(localId.x);
        let w = i32(workgroupId.x);
        let start = w * uniforms.chunk;
        let end = min(start + uniforms.chunk, uniforms.n);
        var s = 0.0;
        for (var i = start + tid; i < end; i += ${WORKGROUP}) {
          s += value(i, 0);
        }
        ${workgroupSum('partial', 's', WORKGROUP)}
        if (tid == 0) {
          setOutputAtIndex(w, partial[0]${over ? ' / f32(over[0])' : ''});
        }
      }`,
  });
}

/**
 * Σ value over `size` flat indices of `inputs` in two programs (partials side by side, then their sum
 * in order), a one-value tensor; `over` (one value): the sum divided by it, in the second program.
 */
export function spreadSum(
  inputs: tfTypes.TensorInfo[],
  backend: WebgpuProgramRunner,
  size: number,
  summand: Summand = VALUES,
  over?: tfTypes.TensorInfo,
): tfTypes.TensorInfo {
  const parts = Math.min(MAX_PARTIALS, Math.ceil(size / (WORKGROUP * PER_INVOCATION)));
  const chunk = Math.ceil(size / parts);
  // One entry per uniform: tfjs aligns a 2-value entry to 8 bytes, the struct's two i32 to 4.
  const partials = backend.runWebGPUProgram(
    partialSums(parts, summand),
    inputs,
    'float32',
    [size, chunk].map((v) => ({ type: 'int32', data: [v] })),
  );
  const total = backend.runWebGPUProgram(
    partialSums(1, VALUES, over !== undefined),
    over ? [partials, over] : [partials],
    'float32',
    [parts, parts].map((v) => ({ type: 'int32', data: [v] })),
  );
  backend.disposeData(partials.dataId);
  return total;
}

/** Most invocations summing one output value side by side (one workgroup: COLUMNS_MAX columns at least 4 wide). */
const COLUMNS_MAX = 64;
const COLUMNS_MIN = 4;
/**
 * Workgroups wanted before a workgroup takes fewer columns: a few per multiprocessor of a large GPU.
 * With 128 (16 columns each for a [12032, 2048] bias gradient) the H200 summed at 0.33 ms against
 * 0.17 for tfjs's transpose and reduction (bench/reduce.bench.ts). Splitting a large sum's rows
 * instead (64 columns a workgroup, 512 workgroups, the parts added in order by a second program) was
 * tried on whole steps (an H100, float32, the same call): normal's passes 92.96 ms against 93.23,
 * small's 28.88 against 28.42.
 */
const WORKGROUPS_WANTED = 512;
const MAX_WORKGROUPS = 65535;

/**
 * out[o·inner + i] = Σ_r value((o·rows + r)·inner + i, r): `columns` values of i per workgroup, 256 / columns row
 * groups.
 */
function stridedSums(outer: number, inner: number, columns: number, summand: Summand) {
  const groups = WORKGROUP / columns;
  const blocks = Math.ceil(inner / columns);
  const stores = summand.stores === true;
  const fields = {
    variableNames: stores ? [...summand.variableNames, 'stored'] : summand.variableNames,
    outputShape: [outer * inner],
    shaderKey: `xtts_sum_strided_${columns}${summand.key}${stores ? '_stored' : ''}`,
    dispatchLayout: { x: [0] },
    dispatch: [outer * blocks, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: `rows : i32, inner : i32, blocks : i32, ${summand.uniforms?.declarations ?? ''}`,
    getUserCode: () => `
      var<workgroup> partial : array<f32, ${WORKGROUP}>;
      fn made(at : i32, r : i32) -> f32 {
        ${summand.body}
      }
      fn value(at : i32, r : i32) -> f32 {
        let v = made(at, r);
        ${stores ? 'stored[at] = v;' : ''}
        return v;
      }
      fn main(index : i32) {
        let tid = i32(localId.x);
        let c = tid % ${columns};
        let g = tid / ${columns};
        let w = i32(workgroupId.x);
        let o = w / uniforms.blocks;
        let i = (w % uniforms.blocks) * ${columns} + c;
        // Four sums side by side (rows r, r + G, r + 2G, r + 3G of each stride of 4G) keep four loads
        // in flight; they are added in a fixed order.
        var s = vec4<f32>(0.0);
        if (i < uniforms.inner) {
          let base = o * uniforms.rows * uniforms.inner + i;
          let step = ${groups} * uniforms.inner;
          var r = g;
          for (; r + ${3 * groups} < uniforms.rows; r += ${4 * groups}) {
            let at = base + r * uniforms.inner;
            s += vec4<f32>(value(at, r), value(at + step, r + ${groups}),
                           value(at + 2 * step, r + ${2 * groups}), value(at + 3 * step, r + ${3 * groups}));
          }
          for (; r < uniforms.rows; r += ${groups}) {
            s.x += value(base + r * uniforms.inner, r);
          }
        }
        partial[tid] = (s.x + s.y) + (s.z + s.w);
        workgroupBarrier();
        for (var size = ${groups / 2}; size > 0; size = size >> 1) {
          if (g < size) {
            partial[tid] = partial[tid] + partial[tid + size * ${columns}];
          }
          workgroupBarrier();
        }
        if (g == 0 && i < uniforms.inner) {
          setOutputAtIndex(o * uniforms.inner + i, partial[tid]);
        }
      }`,
  };
  return stores
    ? outputsProgram('XttsStridedSumStoringProgram', ['stored'], fields)
    : namedProgram('XttsStridedSumProgram', fields);
}

/**
 * A sum over `axes` as [outer, rows, inner] (the axes one contiguous block, not the innermost: inner
 * > 1), or null where it is not one.
 */
export function stridedSumDims(
  shape: readonly number[],
  axes: readonly number[],
): { outer: number; rows: number; inner: number } | null {
  if (axes.length === 0) return null;
  const sorted = [...new Set(axes)].sort((a, b) => a - b);
  const [first, last] = [sorted[0], sorted[sorted.length - 1]];
  if (last - first + 1 !== sorted.length) return null;
  const product = (from: number, to: number) => shape.slice(from, to).reduce((a, b) => a * b, 1);
  const dims = { outer: product(0, first), rows: product(first, last + 1), inner: product(last + 1, shape.length) };
  return dims.inner > 1 && dims.rows > 0 ? dims : null;
}

/** Columns per workgroup: as many as keep WORKGROUPS_WANTED workgroups busy, no wider than the rows. */
export function stridedSumColumns(outer: number, inner: number): number {
  let columns = COLUMNS_MAX;
  while (columns > COLUMNS_MIN && (columns / 2 >= inner || outer * Math.ceil(inner / columns) < WORKGROUPS_WANTED))
    columns /= 2;
  return columns;
}

type SumDims = { outer: number; rows: number; inner: number };

/** The strided sum's program and uniforms, or null where it would take too many workgroups. */
function stridedSumCall(dims: SumDims, summand: Summand) {
  const columns = stridedSumColumns(dims.outer, dims.inner);
  const blocks = Math.ceil(dims.inner / columns);
  if (dims.outer * blocks > MAX_WORKGROUPS) return null;
  const uniforms = [dims.rows, dims.inner, blocks, ...(summand.uniforms?.values ?? [])].map((v) => ({
    type: 'int32',
    data: [v],
  }));
  return { program: stridedSums(dims.outer, dims.inner, columns, summand), uniforms };
}

/**
 * Σ over the rows of [outer, rows, inner] in one program (null: too many workgroups), of x's values or
 * of `summand` over `inputs` (each read as that shape through its flat index).
 */
export function stridedSum(
  inputs: tfTypes.TensorInfo[],
  backend: WebgpuProgramRunner,
  dims: SumDims,
  summand: Summand = VALUES,
): tfTypes.TensorInfo | null {
  if (summand.stores) throw new Error('a storing summand has two outputs: stridedSumStoring');
  const call = stridedSumCall(dims, summand);
  return call && backend.runWebGPUProgram(call.program, inputs, 'float32', call.uniforms);
}

/**
 * stridedSum of a storing summand: [the sums, every value summed, as [outer·rows·inner]] in one program (null: too many
 * workgroups).
 */
export function stridedSumStoring(
  inputs: tfTypes.TensorInfo[],
  backend: WebgpuProgramRunner,
  dims: SumDims,
  summand: Summand,
): [tfTypes.TensorInfo, tfTypes.TensorInfo] | null {
  if (!summand.stores) throw new Error('a summand that stores nothing: stridedSum');
  const call = stridedSumCall(dims, summand);
  if (!call) return null;
  const [sums, stored] = runWithOutputs(
    backend,
    call.program as typeof call.program & { extraOutputs: number },
    inputs,
    [[dims.outer * dims.rows * dims.inner]],
    call.uniforms,
  );
  return [sums, stored];
}

/**
 * Σ x² over a whole float32 tensor as the spread sum with the square in its first pass (the gradient
 * norm: no squared copy of every gradient first), a scalar; registered with setDeviceSums.
 */
export const SUM_OF_SQUARES_KERNEL = 'XttsSumOfSquares';

/**
 * The spread full sum and the strided sum in front of tfjs's Sum kernel on webgpu, and the sum of
 * squares (gpu-programs.ts: group 'device-sums').
 */
export function defineDeviceSums(tf: Tf): void {
  defineGpuKernel(
    tf,
    'device-sums',
    SUM_OF_SQUARES_KERNEL,
    () =>
      ((args: { inputs: { x: tfTypes.TensorInfo }; backend: WebgpuProgramRunner }) => {
        const x = args.inputs.x;
        if (x.dtype !== 'float32') throw new Error(`a sum of squares of ${x.dtype} values: float32 only`);
        const out = spreadSum(
          [x],
          args.backend,
          Math.max(
            1,
            x.shape.reduce((a, b) => a * b, 1),
          ),
          SQUARES,
        );
        return { dataId: out.dataId, shape: [], dtype: 'float32' as const };
      }) as unknown as tfTypes.KernelFunc,
  );
  defineGpuOverride(tf, 'device-sums', 'Sum', (original) => (args) => {
    const x = args.inputs.x as tfTypes.TensorInfo;
    const size = x.shape.reduce((a, b) => a * b, 1);
    const axis = args.attrs?.axis as number | number[] | null | undefined;
    const axes = axis == null ? x.shape.map((_, i) => i) : tf.util.parseAxisParam(axis, x.shape);
    const keepDims = Boolean(args.attrs?.keepDims);
    const outShape = x.shape.map((d, i) => (axes.includes(i) ? 1 : d)).filter((_, i) => keepDims || !axes.includes(i));
    const tfjs = () => original.kernelFunc(args as never) as tfTypes.TensorInfo;
    if (x.dtype !== 'float32' || size === 0) return tfjs();
    const backend = args.backend as WebgpuProgramRunner;
    let out: tfTypes.TensorInfo | null = null;
    if (new Set(axes).size === x.shape.length) {
      if (size < SPREAD_FROM) return tfjs();
      out = spreadSum([x], backend, size);
    } else {
      const dims = stridedSumDims(x.shape, axes);
      out = dims && stridedSum([x], backend, dims);
    }
    if (!out) return tfjs();
    // The same buffer under the sum's shape, as tfjs's Reshape does.
    return { dataId: out.dataId, shape: outShape, dtype: 'float32' as const };
  });
}
