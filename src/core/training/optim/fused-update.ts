// A one-pass AdamW update kernel for the cpu backend. The composed update (adamw.ts) is ~22 passes
// over the flat parameter vector; on tfjs-cpu each pass is a separate JavaScript loop with its own
// allocation (15–60 ms per pass over 1.6 M floats on a 2-core host), which made the optimizer cost
// more than forward + backward of a small batch. This kernel reads params, moments and the gradient
// once. Other backends have no such kernel and use the composition, which is what GPU kernel counts
// are measured with. Arithmetic is float64 per element, rounded once when stored, so results differ
// from the composition by float32 rounding only (a test holds them together).
import * as tf from '@tensorflow/tfjs-core';

export const ADAMW_KERNEL = 'XttsAdamWUpdate';

export interface FusedUpdateAttrs {
  beta1: number;
  beta2: number;
  /** lr · √(1−β2ᵗ) / (1−β1ᵗ) */
  stepSize: number;
  /** ε · √(1−β2ᵗ) */
  epsHat: number;
  /** lr · weight_decay */
  lrWd: number;
}

interface CpuBackendLike {
  data: { get(dataId: object): { values: unknown } };
  makeTensorInfo(shape: number[], dtype: tf.DataType, values: Float32Array): tf.TensorInfo;
}

function cpuAdamW({ inputs: named, backend, attrs }: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo[] {
  const b = backend as CpuBackendLike;
  const inputs = named as Record<'params' | 'm' | 'v' | 'grad' | 'decayMask' | 'gradScale' | 'finite', tf.TensorInfo>;
  const read = (t: tf.TensorInfo) => b.data.get(t.dataId).values as Float32Array;
  const p = read(inputs.params);
  const m = read(inputs.m);
  const v = read(inputs.v);
  const g = read(inputs.grad);
  const mask = read(inputs.decayMask);
  const scale = read(inputs.gradScale)[0];
  const finite = (b.data.get(inputs.finite.dataId).values as ArrayLike<number>)[0] !== 0;
  const { beta1, beta2, stepSize, epsHat, lrWd } = attrs as unknown as FusedUpdateAttrs;
  const n = p.length;
  const pOut = new Float32Array(n);
  const mOut = new Float32Array(n);
  const vOut = new Float32Array(n);
  if (!finite) {
    pOut.set(p);
    mOut.set(m);
    vOut.set(v);
  } else {
    const k1 = (1 - beta1) * scale;
    const k2 = (1 - beta2) * scale * scale;
    const decayed = 1 - lrWd;
    for (let i = 0; i < n; i++) {
      const gi = g[i];
      const mi = beta1 * m[i] + k1 * gi;
      const vi = beta2 * v[i] + k2 * gi * gi;
      mOut[i] = mi;
      vOut[i] = vi;
      pOut[i] = p[i] * (mask[i] === 0 ? 1 : decayed) - (stepSize * mi) / (Math.sqrt(vi) + epsHat);
    }
  }
  return [b.makeTensorInfo([n], 'float32', pOut), b.makeTensorInfo([n], 'float32', mOut), b.makeTensorInfo([n], 'float32', vOut)];
}

if (!tf.getKernel(ADAMW_KERNEL, 'cpu')) tf.registerKernel({ kernelName: ADAMW_KERNEL, backendName: 'cpu', kernelFunc: cpuAdamW as unknown as tf.KernelFunc });

export function fusedUpdateAvailable(): boolean {
  return tf.getKernel(ADAMW_KERNEL, tf.getBackend()) !== undefined;
}

/** [params, m, v] after one update; all [P]. `finite` is a bool or float scalar; gradScale scales `grad`. */
export function fusedUpdate(inputs: { params: tf.Tensor1D; m: tf.Tensor1D; v: tf.Tensor1D; grad: tf.Tensor1D; decayMask: tf.Tensor1D; gradScale: tf.Scalar; finite: tf.Scalar }, attrs: FusedUpdateAttrs): tf.Tensor1D[] {
  return tf.engine().runKernel(ADAMW_KERNEL, inputs as unknown as tf.NamedTensorMap, attrs as unknown as tf.NamedAttrMap) as tf.Tensor1D[];
}
