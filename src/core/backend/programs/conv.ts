// The tap sum of a composed 1-D convolution (nn.ts conv1dComposed) as single WebGPU programs. The
// composition multiplies every frame by all K filter taps at once (one matmul), then output frame t
// sums tap k of frame t + k − (K − 1)/2: on the other backends a pad, K slices and an AddN, then the
// bias, and backward K pads, K − 1 adds and a slice. Here the sum (bias included) is one program
// forward and its gradient one program backward; no padding is needed, frames outside the clip count
// as zero. Registered for the webgpu backend only (the others pay no per-kernel launch cost).
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, flatProgram, gpuKernelActive, webgpuKernel } from '../index.js';

export const TAP_SUM_KERNEL = 'XttsTapSum';
export const TAP_SUM_GRAD_KERNEL = 'XttsTapSumGrad';

/** The convolution's uniforms, for every program here. */
const UNIFORMS = 'frames : i32, kernel : i32, half : i32, outCh : i32,';

/**
 * A program of one invocation per output value (flatProgram) with the convolution's uniforms; `body`
 * starts from `o`, the value's output channel.
 */
const channelsProgram = (name: string, shaderKey: string, inputs: string[], outputShape: number[], body: string) =>
  flatProgram(
    name,
    shaderKey,
    inputs,
    outputShape,
    UNIFORMS,
    `
          let o = index % uniforms.outCh;${body}`,
  );

/** y[b, t, o] = Σ_k taps[b, t + k − half, k, o] (in order of k, frames outside the clip left out) + bias[o]. */
const tapSumProgram = (outputShape: number[]) =>
  channelsProgram(
    'XttsTapSumProgram',
    'xtts_tap_sum',
    ['T', 'Bias'],
    outputShape,
    `
          let bt = index / uniforms.outCh;
          let t = bt % uniforms.frames;
          let b = bt / uniforms.frames;
          var s = 0.0;
          for (var k = 0; k < uniforms.kernel; k = k + 1) {
            let src = t + k - uniforms.half;
            if (src >= 0 && src < uniforms.frames) {
              s = s + f32(T[((b * uniforms.frames + src) * uniforms.kernel + k) * uniforms.outCh + o]);
            }
          }
          setOutputAtIndex(index, s + f32(Bias[o]));`,
  );

/** dTaps[b, s, k, o] = dy[b, s − k + half, o] where that frame is in the clip, else 0. */
const tapSumGradProgram = (outputShape: number[]) =>
  channelsProgram(
    'XttsTapSumGradProgram',
    'xtts_tap_sum_grad',
    ['Dy'],
    outputShape,
    `
          let rest = index / uniforms.outCh;
          let k = rest % uniforms.kernel;
          let bs = rest / uniforms.kernel;
          let s = bs % uniforms.frames;
          let b = bs / uniforms.frames;
          let t = s - k + uniforms.half;
          var v = 0.0;
          if (t >= 0 && t < uniforms.frames) {
            v = f32(Dy[(b * uniforms.frames + t) * uniforms.outCh + o]);
          }
          setOutputAtIndex(index, v);`,
  );

const uniforms = (frames: number, kernel: number, outCh: number) =>
  [frames, kernel, (kernel - 1) / 2, outCh].map((v) => ({ type: 'int32', data: [v] }));
defineGpuKernel(tf, 'tap-sum', TAP_SUM_KERNEL, () =>
  webgpuKernel((inputs: Record<'taps' | 'bias', tf.TensorInfo>, backend) => {
    const [batch, frames, kernel, outCh] = inputs.taps.shape;
    return backend.runWebGPUProgram(
      tapSumProgram([batch, frames, outCh]),
      [inputs.taps, inputs.bias],
      'float32',
      uniforms(frames, kernel, outCh),
    );
  }),
);
defineGpuKernel(tf, 'tap-sum', TAP_SUM_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Record<'dy', tf.TensorInfo>, backend, attrs: { kernel: number }) => {
    const [batch, frames, outCh] = inputs.dy.shape;
    return backend.runWebGPUProgram(
      tapSumGradProgram([batch, frames, attrs.kernel, outCh]),
      [inputs.dy],
      'float32',
      uniforms(frames, attrs.kernel, outCh),
    );
  }),
);

/** Whether the tap sums run as these programs on this backend (tests compare both paths). */
export function tapSumAvailable(): boolean {
  return gpuKernelActive(tf, TAP_SUM_KERNEL);
}

/** taps [batch, frames, K, out] (unpadded frames), bias [out] -> [batch, frames, out], with its gradient. */
export function tapSum(taps: tf.Tensor4D, bias: tf.Tensor1D): tf.Tensor3D {
  const kernel = taps.shape[2];
  const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [t, b] = args as [tf.Tensor4D, tf.Tensor1D];
    return {
      value: tf.engine().runKernel(TAP_SUM_KERNEL, { taps: t, bias: b }) as tf.Tensor3D,
      gradFunc: (dy: tf.Tensor) => [
        tf.engine().runKernel(TAP_SUM_GRAD_KERNEL, { dy }, { kernel }) as tf.Tensor4D,
        tf.sum(dy, [0, 1]),
      ],
    };
  });
  return op(taps, bias) as tf.Tensor3D;
}
