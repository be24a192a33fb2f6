// Two slices of a flat tensor as WebGPU programs of our own, for what step capture needs to know:
//  - windowAt: pool[offsets[k] + i], a slice whose start is read on the device. A dropout mask is a
//    window of a fixed random pool at an offset drawn per call; tf.slice passes the offset as a
//    uniform, so every step's programs would differ by their uniforms and a step could not be captured.
//    Here a whole step's offsets sit in one int32 tensor, an input of the step.
//  - segments: the consecutive pieces of a flat tensor (tf.split's result for a 1-D tensor). The
//    optimizer updates every parameter in one flat vector and splits it back; a captured step knows
//    these programs are plain copies (COPY_SHADER_KEY) and replays the pieces that go to variables as
//    buffer copies straight into the variables' buffers instead of ~one program per parameter.
import * as tf from '@tensorflow/tfjs-core';
import { COPY_SHADER_KEY } from '../backend/step-capture.js';
import { namedProgram } from '../backend/kernels.js';

export const WINDOW_KERNEL = 'XttsWindowAt';
export const SEGMENT_KERNEL = 'XttsSegment';

const WORKGROUP = 64;

interface WebgpuBackendLike {
  runWebGPUProgram(program: object, inputs: tf.TensorInfo[], dtype: tf.DataType, uniforms?: { type: string; data: number[] }[]): tf.TensorInfo;
}

/** out[i] = src[start + i], start from `startCode` (WGSL), for i < size. */
function copyProgram(shaderKey: string, variableNames: string[], size: number, uniforms: string, startCode: string) {
  return namedProgram(shaderKey === 'xtts_segment' ? 'XttsSegmentProgram' : 'XttsWindowProgram', {
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
          setOutputAtIndex(index, ${variableNames[0]}[${startCode} + index]);
        }
      }`,
  });
}

if (!tf.getKernel(WINDOW_KERNEL, 'webgpu')) {
  tf.registerKernel({
    kernelName: WINDOW_KERNEL,
    backendName: 'webgpu',
    kernelFunc: (({ inputs, backend, attrs }: { inputs: Record<'pool' | 'offsets', tf.TensorInfo>; backend: WebgpuBackendLike; attrs: { k: number; size: number } }) =>
      backend.runWebGPUProgram(copyProgram('xtts_window_at', ['pool', 'offsets'], attrs.size, 'k : i32,', 'offsets[uniforms.k]'), [inputs.pool, inputs.offsets], 'float32', [
        { type: 'int32', data: [attrs.k] },
      ])) as unknown as tf.KernelFunc,
  });
  tf.registerKernel({
    kernelName: SEGMENT_KERNEL,
    backendName: 'webgpu',
    kernelFunc: (({ inputs, backend, attrs }: { inputs: Record<'x', tf.TensorInfo>; backend: WebgpuBackendLike; attrs: { sizes: number[] } }) => {
      let start = 0;
      return attrs.sizes.map((size) => {
        const out = backend.runWebGPUProgram(copyProgram(COPY_SHADER_KEY, ['x'], size, 'start : i32,', 'uniforms.start'), [inputs.x], inputs.x.dtype, [{ type: 'int32', data: [start] }]);
        start += size;
        return out;
      });
    }) as unknown as tf.KernelFunc,
  });
}

/** x [Σ sizes] -> its consecutive pieces; on webgpu as segment programs, elsewhere tf.split. */
export function segments(x: tf.Tensor1D, sizes: number[]): tf.Tensor1D[] {
  if (tf.getKernel(SEGMENT_KERNEL, tf.getBackend())) return tf.engine().runKernel(SEGMENT_KERNEL, { x }, { sizes }) as unknown as tf.Tensor1D[];
  return tf.split(x, sizes) as tf.Tensor1D[];
}
