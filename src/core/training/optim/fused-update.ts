// One-pass AdamW update kernels. The composed update (adamw.ts) is ~22 passes over the flat parameter
// vector. On tfjs-cpu each pass is a separate JavaScript loop with its own allocation (15–60 ms per
// pass over 1.6 M floats on a 2-core host), which made the optimizer cost more than forward + backward
// of a small batch; the cpu kernel reads params, moments and the gradient once, in float64 per element
// rounded once when stored. On webgpu each pass reads and writes the whole vector (254 MB in a normal
// step: about 5 ms of an H100's device time for the update); the webgpu kernel is three programs — the
// new m, the new v, then the new parameters from them — so 11 vectors' worth of memory traffic instead
// of some 50. Its per-step scalars come from a device tensor (a replayed step writes them there). wasm
// uses the composition. Results differ from the composition by float32 rounding only (tests hold them
// together).
import * as tf from '@tensorflow/tfjs-core';
import { namedProgram, type WebgpuProgramRunner, workgroupGrid } from '../../backend/kernels.js';

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

const WORKGROUP = 256;

/** One elementwise program over the flat vector: `value` of index i from the named inputs, kept where the step is not finite. */
function updateProgram(name: string, inputs: string[], size: number, value: string, kept: string) {
  return namedProgram(name, {
    variableNames: inputs,
    outputShape: [size],
    shaderKey: `xtts_adamw_${name}`,
    dispatchLayout: { x: [0] },
    // tfjs's global index flattens the grid; invocations past `size` do nothing.
    dispatch: workgroupGrid(Math.ceil(size / WORKGROUP)),
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'beta1 : f32, beta2 : f32,',
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          let finite = f32(finite[0]) != 0.0;${inputs.includes('gradScale') ? '\n          let scale = f32(gradScale[0]);' : ''}
          setOutputAtIndex(index, select(${kept}, ${value}, finite));
        }
      }`,
    size: true,
  });
}

/**
 * The webgpu update: m' and v' (each from its moment and the gradient), then p' from them. `beta` are
 * run constants (uniforms); the scale, the finite flag and the per-step scalars are device tensors.
 */
function webgpuUpdate(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo[] {
  const b = args.backend as WebgpuProgramRunner;
  const i = args.inputs as Record<'params' | 'm' | 'v' | 'grad' | 'decayMask' | 'gradScale' | 'finite' | 'scalars', tf.TensorInfo>;
  if (!i.scalars) throw new Error(`${ADAMW_KERNEL} on webgpu takes its per-step scalars as a tensor (scalars: [stepSize, epsHat, lrWd])`);
  const { beta1, beta2 } = args.attrs as unknown as FusedUpdateAttrs;
  const n = i.params.shape[0];
  const uniforms = [
    { type: 'float32', data: [beta1] },
    { type: 'float32', data: [beta2] },
  ];
  const m = b.runWebGPUProgram(
    updateProgram('XttsAdamWMomentProgram', ['M', 'grad', 'gradScale', 'finite'], n, 'uniforms.beta1 * M[index] + (1.0 - uniforms.beta1) * scale * grad[index]', 'M[index]'),
    [i.m, i.grad, i.gradScale, i.finite],
    'float32',
    uniforms,
  );
  const v = b.runWebGPUProgram(
    updateProgram('XttsAdamWSecondMomentProgram', ['V', 'grad', 'gradScale', 'finite'], n, 'uniforms.beta2 * V[index] + (1.0 - uniforms.beta2) * (scale * grad[index]) * (scale * grad[index])', 'V[index]'),
    [i.v, i.grad, i.gradScale, i.finite],
    'float32',
    uniforms,
  );
  // scalars: [lr·√(1−β2ᵗ)/(1−β1ᵗ), ε·√(1−β2ᵗ), lr·wd].
  const p = b.runWebGPUProgram(
    updateProgram(
      'XttsAdamWParamsProgram',
      ['P', 'M1', 'V1', 'decayMask', 'scalars', 'finite'],
      n,
      'P[index] * (1.0 - decayMask[index] * scalars[2]) - scalars[0] * M1[index] / (sqrt(V1[index]) + scalars[1])',
      'P[index]',
    ),
    [i.params, m, v, i.decayMask, i.scalars, i.finite],
    'float32',
    uniforms,
  );
  return [p, m, v];
}

if (!tf.getKernel(ADAMW_KERNEL, 'webgpu')) tf.registerKernel({ kernelName: ADAMW_KERNEL, backendName: 'webgpu', kernelFunc: webgpuUpdate as unknown as tf.KernelFunc });

export function fusedUpdateAvailable(): boolean {
  return tf.getKernel(ADAMW_KERNEL, tf.getBackend()) !== undefined;
}

/**
 * [params, m, v] after one update; all [P]. `finite` is a bool or float scalar; gradScale scales
 * `grad`; `scalars` [stepSize, epsHat, lrWd] as a device tensor (webgpu reads these, cpu the attrs).
 */
export function fusedUpdate(
  inputs: { params: tf.Tensor1D; m: tf.Tensor1D; v: tf.Tensor1D; grad: tf.Tensor1D; decayMask: tf.Tensor1D; gradScale: tf.Scalar; finite: tf.Scalar; scalars: tf.Tensor1D },
  attrs: FusedUpdateAttrs,
): tf.Tensor1D[] {
  return tf.engine().runKernel(ADAMW_KERNEL, inputs as unknown as tf.NamedTensorMap, attrs as unknown as tf.NamedAttrMap) as tf.Tensor1D[];
}
