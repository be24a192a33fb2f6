// Host copies of named tensors, for checkpoints, weight snapshots and replicas' first state.
import * as tf from '@tensorflow/tfjs-core';
import type { NamedArray } from '../checkpoint.js';

/** Host copies of tensors. Asynchronous reads: WebGPU's synchronous readback needs a canvas, which Node has not. */
export async function toArrays(tensors: Map<string, tf.Tensor>): Promise<NamedArray[]> {
  return Promise.all(
    [...tensors.entries()].map(async ([name, t]) => ({
      name,
      shape: t.shape,
      dtype: t.dtype === 'int32' ? ('int32' as const) : ('float32' as const),
      data: (await t.data()) as Float32Array | Int32Array,
    })),
  );
}

/** toArrays of tensors the caller owns, then disposed. */
export async function toArraysDisposing(tensors: Map<string, tf.Tensor>): Promise<NamedArray[]> {
  try {
    return await toArrays(tensors);
  } finally {
    tf.dispose([...tensors.values()]);
  }
}
