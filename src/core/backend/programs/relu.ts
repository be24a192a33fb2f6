// ReLU's gradient as one WebGPU program: dy · step(x), which tfjs computes as a step program and a
// multiply (two programs and a tensor between them) for every ReLU of the backward pass. The same
// arithmetic: step(x) is 1 where x > 0, x itself where x is NaN, else 0, and dy is multiplied by it,
// so the gradients are bit for bit tfjs's. x is the ReLU's input, or its output (the same signs, but
// tfjs's ReLU turns NaN into 0).
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, flatProgram, gpuKernelActive, webgpuKernel } from '../index.js';
import { stridedSumStoring, type Summand } from '../index.js';

export const RELU_GRAD_KERNEL = 'XttsReluGrad';
/** ReLU's gradient of a [rows, columns] layer and its column sums (the bias gradient under it), one program. */
export const RELU_GRAD_SUMS_KERNEL = 'XttsReluGradSums';

/** dy · step(x), the arithmetic of the gradient program below, as a strided sum's summand that keeps every value. */
const RELU_GRAD: Summand = {
  variableNames: ['dy', 'x'],
  key: '_relu_grad',
  body: `let v = x[at];
        var step = select(0.0, 1.0, v > 0.0);
        if (isnan(v)) {
          step = v;
        }
        return dy[at] * step;`,
  stores: true,
};
defineGpuKernel(tf, 'relu-grads', RELU_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Record<'dy' | 'x', tf.TensorInfo>, backend) => {
    const size = inputs.dy.shape.reduce((a, b) => a * b, 1);
    const program = flatProgram(
      'XttsReluGradProgram',
      'xtts_relu_grad',
      ['dy', 'x'],
      [size],
      '',
      `
        let v = x[index];
        var step = select(0.0, 1.0, v > 0.0);
        if (isnan(v)) {
          step = v;
        }
        setOutputAtIndex(index, dy[index] * step);`,
    );
    return { ...backend.runWebGPUProgram(program, [inputs.dy, inputs.x], 'float32'), shape: inputs.dy.shape };
  }),
);
defineGpuKernel(tf, 'relu-grads', RELU_GRAD_SUMS_KERNEL, () =>
  webgpuKernel((inputs: Record<'dy' | 'x', tf.TensorInfo>, backend) => {
    const [rows, columns] = inputs.dy.shape;
    const out = stridedSumStoring([inputs.dy, inputs.x], backend, { outer: 1, rows, inner: columns }, RELU_GRAD);
    if (!out) throw new Error(`ReLU's gradient of ${columns} columns: too wide for one strided sum`);
    const [sums, dz] = out;
    return [
      { ...dz, shape: inputs.dy.shape },
      { ...sums, shape: [columns] },
    ];
  }),
);

/**
 * [dy · step(x), its sum over the rows] for a [rows, columns] layer: ReLU's gradient and the bias
 * gradient under it, one program on webgpu (a strided sum that keeps what it adds), two elsewhere.
 */
export function reluGradAndColumnSums(dy: tf.Tensor2D, x: tf.Tensor2D): [tf.Tensor2D, tf.Tensor1D] {
  if (gpuKernelActive(tf, RELU_GRAD_SUMS_KERNEL))
    return tf.engine().runKernel(RELU_GRAD_SUMS_KERNEL, { dy, x }) as [tf.Tensor2D, tf.Tensor1D];
  const dz = reluGrad(dy, x) as tf.Tensor2D;
  return [dz, tf.sum(dz, 0)];
}

/** dy · step(x), x a ReLU's input or output: its gradient; one program on webgpu, tfjs's two elsewhere. */
export function reluGrad(dy: tf.Tensor, x: tf.Tensor): tf.Tensor {
  if (gpuKernelActive(tf, RELU_GRAD_KERNEL)) return tf.engine().runKernel(RELU_GRAD_KERNEL, { dy, x }) as tf.Tensor;
  return tf.mul(dy, tf.step(x));
}
