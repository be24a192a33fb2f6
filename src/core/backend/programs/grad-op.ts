// Ops with their gradients written out, for the programs here and the model's layers.
import * as tf from '@tensorflow/tfjs-core';

/**
 * An op with its gradient written out, of one or several outputs (tf.customGrad takes one output, and
 * makes every input's gradient whether the tape needs it or not): through the engine's runKernelFunc,
 * as customGrad itself does. `backward` gets the outputs' gradients (an array for several outputs) and
 * what `forward` saved, and returns a function per input, called only for the inputs the tape needs.
 */
export function gradOp<O extends tf.Tensor | tf.Tensor[]>(
  inputs: Record<string, tf.Tensor>,
  forward: (save: tf.GradSaveFunc) => O,
  backward: (dy: O, saved: tf.Tensor[]) => Record<string, () => tf.Tensor>,
): O {
  const engine = tf.engine() as unknown as {
    runKernelFunc(k: {
      forwardFunc: (backend: unknown, save: tf.GradSaveFunc) => O;
      backwardsFunc: (dy: O, saved: tf.Tensor[]) => Record<string, () => tf.Tensor>;
      inputs: Record<string, tf.Tensor>;
    }): O;
  };
  return engine.runKernelFunc({ forwardFunc: (_backend, save) => forward(save), backwardsFunc: backward, inputs });
}
