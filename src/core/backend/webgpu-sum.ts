// Full sums over many workgroups on the webgpu backend. tfjs-backend-webgpu reduces a tensor to one
// value in a single workgroup (its reduce program runs one workgroup per output): the gradient norm
// over every parameter (62 M floats in the normal preset) and the masked loss sums over a batch's
// frames ran on one of the GPU's ~130 multiprocessors. Here a float32 sum over all axes of at least
// SPREAD_FROM values runs in two dispatches of one program: up to 1,024 workgroups each sum a
// contiguous chunk into a partial, then one workgroup sums the partials — in a fixed order, so the
// result is the same every time. Everything else goes to tfjs's own kernel.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { namedProgram, wrapWebgpuKernel } from './kernels.js';

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

interface WebgpuBackendLike {
  runWebGPUProgram(program: object, inputs: tfTypes.TensorInfo[], dtype: tfTypes.DataType, uniforms?: { type: string; data: number[] }[]): tfTypes.TensorInfo;
  disposeData(id: object): void;
}

/** out[w] = Σ x[w·chunk .. min(n, (w+1)·chunk)), one workgroup per w. */
function partialSums(outputs: number) {
  return namedProgram('XttsSpreadSumProgram', {
    variableNames: ['x'],
    outputShape: [outputs],
    shaderKey: 'xtts_sum_spread',
    dispatchLayout: { x: [0] },
    dispatch: [outputs, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'n : i32, chunk : i32,',
    getUserCode: () => `
      var<workgroup> partial : array<f32, ${WORKGROUP}>;
      fn main(index : i32) {
        let tid = i32(localId.x);
        let w = i32(workgroupId.x);
        let start = w * uniforms.chunk;
        let end = min(start + uniforms.chunk, uniforms.n);
        var s = 0.0;
        for (var i = start + tid; i < end; i += ${WORKGROUP}) {
          s += f32(x[i]);
        }
        partial[tid] = s;
        workgroupBarrier();
        for (var size = ${WORKGROUP / 2}; size > 0; size = size >> 1) {
          if (tid < size) {
            partial[tid] = partial[tid] + partial[tid + size];
          }
          workgroupBarrier();
        }
        if (tid == 0) {
          setOutputAtIndex(w, partial[0]);
        }
      }`,
  });
}

function spreadSum(x: tfTypes.TensorInfo, backend: WebgpuBackendLike, size: number): tfTypes.TensorInfo {
  const parts = Math.min(MAX_PARTIALS, Math.ceil(size / (WORKGROUP * PER_INVOCATION)));
  const chunk = Math.ceil(size / parts);
  // One entry per uniform: tfjs aligns a 2-value entry to 8 bytes, the struct's two i32 to 4.
  const partials = backend.runWebGPUProgram(partialSums(parts), [x], 'float32', [size, chunk].map((v) => ({ type: 'int32', data: [v] })));
  const total = backend.runWebGPUProgram(partialSums(1), [partials], 'float32', [parts, parts].map((v) => ({ type: 'int32', data: [v] })));
  backend.disposeData(partials.dataId);
  return total;
}

/** Puts the spread full sum in front of tfjs's Sum kernel on webgpu (on), or takes it away (off: benches, tests). */
export function setSpreadSum(tf: Tf, on: boolean): void {
  wrapWebgpuKernel(tf, 'Sum', on, (original) => (args) => {
    const x = args.inputs.x as tfTypes.TensorInfo;
    const size = x.shape.reduce((a, b) => a * b, 1);
    const axis = args.attrs?.axis as number | number[] | null | undefined;
    const axes = axis == null ? x.shape.map((_, i) => i) : tf.util.parseAxisParam(axis, x.shape);
    if (x.dtype !== 'float32' || size < SPREAD_FROM || new Set(axes).size !== x.shape.length) return original.kernelFunc(args as never) as tfTypes.TensorInfo;
    const total = spreadSum(x, args.backend as WebgpuBackendLike, size);
    // [1] -> [] (or [1, …, 1] with keepDims): the same buffer under another shape, as tfjs's Reshape does.
    return { dataId: total.dataId, shape: args.attrs?.keepDims ? x.shape.map(() => 1) : [], dtype: 'float32' as const };
  });
}
