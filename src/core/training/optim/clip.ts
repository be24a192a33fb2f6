// Global-norm gradient clipping (Pascanu et al. 2013) on one flat gradient vector: the norm is one
// square + one sum however many parameters there are. Everything stays on the device.
import * as tf from '@tensorflow/tfjs-core';
import { SUM_OF_SQUARES_KERNEL } from '../../backend/index.js';
import { scalar } from '../../model/index.js';

/** ‖g‖₂ of a flat vector, as a device scalar. */
export function globalNorm(flat: tf.Tensor1D): tf.Scalar {
  return tf.sqrt(sumOfSquares(flat)) as tf.Scalar;
}

/** Σ x² of a float32 tensor as a device scalar: on webgpu one spread sum (no squared copy first). */
export function sumOfSquares(x: tf.Tensor): tf.Scalar {
  if (x.dtype === 'float32' && tf.getKernel(SUM_OF_SQUARES_KERNEL, tf.getBackend()))
    return tf.engine().runKernel(SUM_OF_SQUARES_KERNEL, { x }) as tf.Scalar;
  return tf.sum(tf.square(x)) as tf.Scalar;
}

/**
 * The factor that brings a gradient of norm `norm` to at most `maxNorm`: min(1, maxNorm / (norm + 1e-6)).
 * maxNorm 0 disables clipping (factor 1). A non-finite norm gives a non-finite or zero factor; the
 * optimizer skips such steps anyway.
 */
export function clipFactor(norm: tf.Scalar, maxNorm: number): tf.Scalar {
  if (maxNorm <= 0) return scalar(1);
  return tf.minimum(scalar(1), tf.div(scalar(maxNorm), tf.add(norm, scalar(1e-6)))) as tf.Scalar;
}

/** Clip a list of gradients by their global norm; returns the clipped list and the norm before clipping. */
export function clipByGlobalNorm(grads: tf.Tensor[], maxNorm: number): { clipped: tf.Tensor[]; norm: tf.Scalar } {
  return tf.tidy(() => {
    const flat = tf.concat(grads.map((g) => tf.reshape(g, [-1]))) as tf.Tensor1D;
    const norm = globalNorm(flat);
    const factor = clipFactor(norm, maxNorm);
    return { clipped: grads.map((g) => tf.mul(g, factor)), norm };
  });
}
