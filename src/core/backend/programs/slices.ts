// Two slices of a flat tensor as WebGPU programs of our own, for what step capture needs to know:
//  - windowAt: pool[offsets[k] + i], a slice whose start is read on the device. A dropout mask is a
//    window of a fixed random pool at an offset drawn per call; tf.slice passes the offset as a
//    uniform, so every step's programs would differ by their uniforms and a step could not be captured.
//    Here a whole step's offsets sit in one int32 tensor, an input of the step. maskAt multiplies by
//    that window in the same program (x[i]·pool[offsets[k] + i]): a dropout, forward or backward, is
//    then one program instead of a window and a multiply; maskAdd also adds a residual connection's
//    input (base[i] + x[i]·pool[offsets[k] + i]), one program instead of a dropout and an add.
//  - segments: the consecutive pieces of a flat tensor (tf.split's result for a 1-D tensor). The
//    optimizer updates every parameter in one flat vector and splits it back; a captured step knows
//    these programs are plain copies (COPY_SHADER_KEY) and replays the pieces that go to variables as
//    buffer copies straight into the variables' buffers instead of ~one program per parameter.
//  - gather: the other way, ranges of many tensors into one flat tensor (the optimizer's flat gradient, a
//    data-parallel replica's exchange buckets). tf.concat on webgpu binds at most 15 inputs a program and
//    concatenates the results again, level after level: a normal-preset gradient (~300 tensors, 64 Mi
//    values) was copied three times (2.3 ms of an H200's 50 ms step), each value found by a chain of
//    comparisons. Here every value is copied once: programs of up to 15 pieces, each writing its pieces'
//    ranges of the one output (workgroup row k copies piece k).
import * as tf from '@tensorflow/tfjs-core';
import { COPY_SHADER_KEY, defineGpuKernel, gpuKernelActive, webgpuKernel } from '../index.js';
import { namedProgram, type WebgpuProgramRunner } from '../index.js';
import { stridedSumStoring, type Summand } from '../index.js';

export const WINDOW_KERNEL = 'XttsWindowAt';
export const SEGMENT_KERNEL = 'XttsSegment';
export const MASK_KERNEL = 'XttsMaskAt';
export const MASK_ADD_KERNEL = 'XttsMaskAdd';
/** maskAt of a [rows, columns] tensor and the masked values' column sums, one program. */
export const MASK_SUMS_KERNEL = 'XttsMaskAtSums';
export const GATHER_KERNEL = 'XttsGather';

const WORKGROUP = 64;

const PROGRAM_NAMES: Record<string, string> = {
  [COPY_SHADER_KEY]: 'XttsSegmentProgram',
  xtts_window_at: 'XttsWindowProgram',
  xtts_mask_at: 'XttsMaskProgram',
  xtts_mask_add: 'XttsMaskAddProgram',
};

/**
 * out[i] = value(src[start + i]) (WGSL of index; by default the value itself), start from `startCode` (WGSL), for i <
 * size.
 */
function copyProgram(
  shaderKey: string,
  variableNames: string[],
  size: number,
  uniforms: string,
  startCode: string,
  value = (w: string) => w,
) {
  return namedProgram(PROGRAM_NAMES[shaderKey], {
    variableNames,
    outputShape: [size],
    shaderKey,
    dispatchLayout: { x: [0] },
    dispatch: [Math.ceil(size / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    uniforms,
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          setOutputAtIndex(index, ${value(`${variableNames[0]}[${startCode} + index]`)});
        }
      }`,
  });
}
defineGpuKernel(
  tf,
  'slices',
  WINDOW_KERNEL,
  () =>
    (({
      inputs,
      backend,
      attrs,
    }: {
      inputs: Record<'pool' | 'offsets', tf.TensorInfo>;
      backend: WebgpuProgramRunner;
      attrs: { k: number; size: number };
    }) =>
      backend.runWebGPUProgram(
        copyProgram('xtts_window_at', ['pool', 'offsets'], attrs.size, 'k : i32,', 'offsets[uniforms.k]'),
        [inputs.pool, inputs.offsets],
        'float32',
        [{ type: 'int32', data: [attrs.k] }],
      )) as unknown as tf.KernelFunc,
);
defineGpuKernel(tf, 'slices', MASK_KERNEL, () =>
  webgpuKernel((inputs: Record<'x' | 'pool' | 'offsets', tf.TensorInfo>, backend, attrs: { k: number }) => {
    const size = inputs.x.shape.reduce((a, b) => a * b, 1);
    const out = backend.runWebGPUProgram(
      copyProgram(
        'xtts_mask_at',
        ['pool', 'offsets', 'x'],
        size,
        'k : i32,',
        'offsets[uniforms.k]',
        (w) => `${w} * x[index]`,
      ),
      [inputs.pool, inputs.offsets, inputs.x],
      'float32',
      [{ type: 'int32', data: [attrs.k] }],
    );
    return { ...out, shape: inputs.x.shape };
  }),
);
defineGpuKernel(tf, 'slices', MASK_ADD_KERNEL, () =>
  webgpuKernel((inputs: Record<'base' | 'x' | 'pool' | 'offsets', tf.TensorInfo>, backend, attrs: { k: number }) => {
    const size = inputs.x.shape.reduce((a, b) => a * b, 1);
    const program = copyProgram(
      'xtts_mask_add',
      ['pool', 'offsets', 'x', 'base'],
      size,
      'k : i32,',
      'offsets[uniforms.k]',
      (w) => `base[index] + ${w} * x[index]`,
    );
    const out = backend.runWebGPUProgram(program, [inputs.pool, inputs.offsets, inputs.x, inputs.base], 'float32', [
      { type: 'int32', data: [attrs.k] },
    ]);
    return { ...out, shape: inputs.x.shape };
  }),
);
defineGpuKernel(tf, 'slices', MASK_SUMS_KERNEL, () =>
  webgpuKernel((inputs: Record<'x' | 'pool' | 'offsets', tf.TensorInfo>, backend, attrs: { k: number }) => {
    const [rows, columns] = inputs.x.shape;
    // maskAt's product (the window's value times x's), kept, and summed over the rows.
    const summand: Summand = {
      variableNames: ['pool', 'offsets', 'x'],
      key: '_mask_at',
      body: 'return pool[offsets[uniforms.k] + at] * x[at];',
      stores: true,
      uniforms: { declarations: 'k : i32,', values: [attrs.k] },
    };
    const out = stridedSumStoring(
      [inputs.pool, inputs.offsets, inputs.x],
      backend,
      { outer: 1, rows, inner: columns },
      summand,
    );
    if (!out) throw new Error(`a dropout's gradient of ${columns} columns: too wide for one strided sum`);
    const [sums, masked] = out;
    return [
      { ...masked, shape: inputs.x.shape },
      { ...sums, shape: [columns] },
    ];
  }),
);
defineGpuKernel(tf, 'slices', SEGMENT_KERNEL, () =>
  webgpuKernel((inputs: Record<'x', tf.TensorInfo>, backend, attrs: { sizes: number[] }) => {
    let start = 0;
    return attrs.sizes.map((size) => {
      const out = backend.runWebGPUProgram(
        copyProgram(COPY_SHADER_KEY, ['x'], size, 'start : i32,', 'uniforms.start'),
        [inputs.x],
        inputs.x.dtype,
        [{ type: 'int32', data: [start] }],
      );
      start += size;
      return out;
    });
  }),
);

/** Threads of a gather workgroup, and values each copies at least before a piece takes more workgroups. */
const GATHER_WORKGROUP = 256;
const GATHER_PER_THREAD = 8;
/** Workgroups a gather program's piece takes at most (its threads then loop). */
const GATHER_GROUPS = 1024;

/** Pieces [start, count] of `inputs` (ranges of their flat values) copied to consecutive ranges of one 1-D tensor. */
interface GatherAttrs {
  ranges: number[];
}

/** A program copying `pieces` ranges, piece k from x{k}, to their places in the output: workgroup row k. */
function gatherProgram(pieces: number, total: number, longest: number) {
  const ks = [...Array(pieces).keys()];
  return namedProgram('XttsGatherProgram', {
    variableNames: ks.map((k) => `x${k}`),
    outputShape: [total],
    shaderKey: `xtts_gather_${pieces}`,
    dispatchLayout: { x: [0] },
    dispatch: [Math.min(GATHER_GROUPS, Math.ceil(longest / (GATHER_WORKGROUP * GATHER_PER_THREAD))), pieces, 1] as [
      number,
      number,
      number,
    ],
    workgroupSize: [GATHER_WORKGROUP, 1, 1] as [number, number, number],
    uniforms: ks.map((k) => `start${k} : i32, offset${k} : i32, count${k} : i32,`).join(' '),
    getUserCode: () => `
      fn main(index : i32) {
        let first = i32(globalId.x);
        let stride = i32(numWorkgroups.x) * ${GATHER_WORKGROUP};
        switch (workgroupId.y) {
${ks
  .map(
    (k) => `          case ${k}u: {
            for (var i = first; i < uniforms.count${k}; i = i + stride) {
              result[uniforms.offset${k} + i] = x${k}[uniforms.start${k} + i];
            }
          }`,
  )
  .join('\n')}
          default: {}
        }
      }`,
  });
}

/** The backend as a gather uses it: its device's limits, an output made first, programs that write into it. */
interface GatherRunner {
  device: { limits: { maxStorageBuffersPerShaderStage: number } };
  makeTensorInfo(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  runWebGPUProgram(
    program: object,
    inputs: tf.TensorInfo[],
    dtype: tf.DataType,
    uniforms: { type: string; data: number[] }[],
    output: tf.TensorInfo,
  ): tf.TensorInfo;
}

defineGpuKernel(tf, 'slices', GATHER_KERNEL, () =>
  webgpuKernel((inputs: tf.TensorInfo[], backend, attrs: GatherAttrs) => {
    const runner = backend as unknown as GatherRunner;
    const xs = Object.values(inputs);
    const pieces = xs
      .map((x, k) => ({ x, start: attrs.ranges[2 * k], count: attrs.ranges[2 * k + 1] }))
      .filter((p) => p.count > 0);
    const total = pieces.reduce((n, p) => n + p.count, 0);
    const out = runner.makeTensorInfo([total], xs[0].dtype);
    // One storage buffer a piece beside the output's.
    const perProgram = Math.max(1, runner.device.limits.maxStorageBuffersPerShaderStage - 1);
    let offset = 0;
    for (let from = 0; from < pieces.length; from += perProgram) {
      const group = pieces.slice(from, from + perProgram);
      const uniforms = group.flatMap((p) => {
        const u = [p.start, offset, p.count].map((v) => ({ type: 'int32', data: [v] }));
        offset += p.count;
        return u;
      });
      const program = gatherProgram(group.length, total, Math.max(...group.map((p) => p.count)));
      const flat = group.map((p) => ({ ...p.x, shape: [p.x.shape.reduce((a, b) => a * b, 1)] }));
      runner.runWebGPUProgram(program, flat, out.dtype, uniforms, out);
    }
    return out;
  }),
);

/**
 * The ranges `pieces` ([tensor, first value, values]; a tensor's values in row-major order) one after another in one
 * 1-D tensor; on webgpu each value copied once (gather programs), elsewhere slices and a concatenation.
 */
export function gather(pieces: readonly [tf.Tensor, number, number][]): tf.Tensor1D {
  for (const [x, start, count] of pieces)
    if (!(Number.isInteger(start) && Number.isInteger(count) && start >= 0 && count >= 0 && start + count <= x.size))
      throw new Error(`values ${start} to ${start + count} of a tensor of ${x.size}`);
  const kept = pieces.filter(([, , count]) => count > 0);
  if (kept.length === 0) return tf.tensor1d([], pieces[0]?.[0].dtype === 'int32' ? 'int32' : 'float32');
  // One whole tensor: itself, flat (no copy).
  if (kept.length === 1 && kept[0][2] === kept[0][0].size) return tf.reshape(kept[0][0], [-1]);
  const dtype = kept[0][0].dtype;
  if (
    gpuKernelActive(tf, GATHER_KERNEL) &&
    (dtype === 'float32' || dtype === 'int32') &&
    kept.every(([x]) => x.dtype === dtype)
  ) {
    const ranges = kept.flatMap(([, start, count]) => [start, count]);
    return tf.engine().runKernel(
      GATHER_KERNEL,
      kept.map(([x]) => x) as unknown as tf.NamedTensorMap,
      {
        ranges,
      } as unknown as tf.NamedAttrMap,
    ) as tf.Tensor1D;
  }
  return tf.tidy(() => {
    const flat = kept.map(([x, start, count]) => {
      const v = tf.reshape(x, [-1]);
      return start === 0 && count === x.size ? v : tf.slice(v, [start], [count]);
    });
    return (flat.length === 1 ? flat[0] : tf.concat(flat)) as tf.Tensor1D;
  });
}

/** x [Σ sizes] -> its consecutive pieces; on webgpu as segment programs, elsewhere tf.split. */
export function segments(x: tf.Tensor1D, sizes: number[]): tf.Tensor1D[] {
  if (gpuKernelActive(tf, SEGMENT_KERNEL))
    return tf.engine().runKernel(SEGMENT_KERNEL, { x }, { sizes }) as unknown as tf.Tensor1D[];
  return tf.split(x, sizes) as tf.Tensor1D[];
}

/** Whether this backend has maskAt's program (webgpu). */
export function maskAtAvailable(): boolean {
  return gpuKernelActive(tf, MASK_KERNEL);
}

/** x · pool[offsets[k] .. offsets[k] + x.size), in x's shape, as one program (where maskAtAvailable). */
export function maskAt(x: tf.Tensor, pool: tf.Tensor1D, offsets: tf.Tensor1D, k: number): tf.Tensor {
  return tf.engine().runKernel(MASK_KERNEL, { x, pool, offsets }, { k }) as tf.Tensor;
}

/** [maskAt(x, …), its sum over the rows] for x [rows, columns], one program (where maskAtAvailable). */
export function maskAtAndColumnSums(
  x: tf.Tensor2D,
  pool: tf.Tensor1D,
  offsets: tf.Tensor1D,
  k: number,
): [tf.Tensor2D, tf.Tensor1D] {
  return tf.engine().runKernel(MASK_SUMS_KERNEL, { x, pool, offsets }, { k }) as [tf.Tensor2D, tf.Tensor1D];
}

/** base + maskAt(x, …): a residual add after dropout, as one program (where maskAtAvailable). */
export function maskAdd(base: tf.Tensor, x: tf.Tensor, pool: tf.Tensor1D, offsets: tf.Tensor1D, k: number): tf.Tensor {
  return tf.engine().runKernel(MASK_ADD_KERNEL, { base, x, pool, offsets }, { k }) as tf.Tensor;
}
