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
import {
  defineGpuKernel,
  gpuKernelActive,
  namedProgram,
  outputsProgram,
  runWithOutputs,
  type WebgpuProgramRunner,
  workgroupGrid,
} from '../index.js';

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

function cpuAdamW({
  inputs: named,
  backend,
  attrs,
}: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
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
  return [
    b.makeTensorInfo([n], 'float32', pOut),
    b.makeTensorInfo([n], 'float32', mOut),
    b.makeTensorInfo([n], 'float32', vOut),
  ];
}

defineGpuKernel(tf, 'adamw', ADAMW_KERNEL, () => cpuAdamW as unknown as tf.KernelFunc, 'cpu');

const WORKGROUP = 256;

/**
 * One elementwise program over the flat vector: `value` of index i from the named inputs, kept where the step is not
 * finite.
 */
function updateProgram(name: string, inputs: string[], size: number, value: string, kept: string) {
  const scaleLine = inputs.includes('gradScale') ? '\n          let scale = f32(gradScale[0]);' : '';
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
          let finite = f32(finite[0]) != 0.0;${scaleLine}
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
function webgpuUpdate(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const b = args.backend as WebgpuProgramRunner;
  const i = args.inputs as Record<
    'params' | 'm' | 'v' | 'grad' | 'decayMask' | 'gradScale' | 'finite' | 'scalars',
    tf.TensorInfo
  >;
  if (!i.scalars)
    throw new Error(
      `${ADAMW_KERNEL} on webgpu takes its per-step scalars as a tensor (scalars: [stepSize, epsHat, lrWd])`,
    );
  const { beta1, beta2 } = args.attrs as unknown as FusedUpdateAttrs;
  const n = i.params.shape[0];
  const uniforms = [
    { type: 'float32', data: [beta1] },
    { type: 'float32', data: [beta2] },
  ];
  // One pass of updateProgram over the inputs, by their names in its WGSL.
  const update = (name: string, inputs: Record<string, tf.TensorInfo>, value: string, kept: string) =>
    b.runWebGPUProgram(
      updateProgram(name, Object.keys(inputs), n, value, kept),
      Object.values(inputs),
      'float32',
      uniforms,
    );
  const m = update(
    'XttsAdamWMomentProgram',
    { M: i.m, grad: i.grad, gradScale: i.gradScale, finite: i.finite },
    'uniforms.beta1 * M[index] + (1.0 - uniforms.beta1) * scale * grad[index]',
    'M[index]',
  );
  const v = update(
    'XttsAdamWSecondMomentProgram',
    { V: i.v, grad: i.grad, gradScale: i.gradScale, finite: i.finite },
    'uniforms.beta2 * V[index] + (1.0 - uniforms.beta2) * (scale * grad[index]) * (scale * grad[index])',
    'V[index]',
  );
  // scalars: [lr·√(1−β2ᵗ)/(1−β1ᵗ), ε·√(1−β2ᵗ), lr·wd].
  const p = update(
    'XttsAdamWParamsProgram',
    { P: i.params, M1: m, V1: v, decayMask: i.decayMask, scalars: i.scalars, finite: i.finite },
    'P[index] * (1.0 - decayMask[index] * scalars[2]) - scalars[0] * M1[index] / (sqrt(V1[index]) + scalars[1])',
    'P[index]',
  );
  return [p, m, v];
}

defineGpuKernel(tf, 'adamw', ADAMW_KERNEL, () => webgpuUpdate as unknown as tf.KernelFunc);

export function fusedUpdateAvailable(): boolean {
  return gpuKernelActive(tf, ADAMW_KERNEL);
}

/**
 * [params, m, v] after one update; all [P]. `finite` is a bool or float scalar; gradScale scales
 * `grad`; `scalars` [stepSize, epsHat, lrWd] as a device tensor (webgpu reads these, cpu the attrs).
 */
export function fusedUpdate(
  inputs: {
    params: tf.Tensor1D;
    m: tf.Tensor1D;
    v: tf.Tensor1D;
    grad: tf.Tensor1D;
    decayMask: tf.Tensor1D;
    gradScale: tf.Scalar;
    finite: tf.Scalar;
    scalars: tf.Tensor1D;
  },
  attrs: FusedUpdateAttrs,
): tf.Tensor1D[] {
  return runKernel<tf.Tensor1D[]>(ADAMW_KERNEL, inputs, attrs);
}

/** One of the kernels here, run by tfjs's engine on tensors. */
function runKernel<T>(name: string, inputs: object, attrs: object): T {
  return tf.engine().runKernel(name, inputs as unknown as tf.NamedTensorMap, attrs as unknown as tf.NamedAttrMap) as T;
}

// ---------------------------------------------------------------------------------------------
// An update's scalars as one webgpu program. Around the passes over the flat vector, an update works
// out a handful of scalars: the gradient norm, whether the step is finite, the clipping and unscaling
// factor, and the bookkeeping of the skipped steps and of the loss scale. Composed, each is a tfjs
// program of one value (a tiny float32 step had 11 of them, a mixed_fp16 one 25), and on a GPU a
// tiny step is bound by its programs. Here they are one program, with the composition's arithmetic in
// its order and float32 (the scalars of the composition are float32 constants: their uniforms here).

export const ADAMW_SCALARS_KERNEL = 'XttsAdamWScalars';

export interface StepScalarsAttrs {
  /** 1 / micro-batches of the update. */
  invCount: number;
  /** grad_clip_norm (0: no clipping). */
  maxNorm: number;
  /** With loss scaling: updates in a row before the scale doubles, and its ceiling. */
  scaling: { growthInterval: number; maxScale: number } | null;
}

const STEP_SCALARS_PROGRAM = 'XttsAdamWScalarsProgram';
const STEP_SCALARS_OUTPUTS = ['finiteOut', 'gradScale', 'flag', 'skippedOut'];
const SCALING_OUTPUTS = ['scaleOut', 'goodOut'];

function stepScalarsProgram(scaling: boolean) {
  const outputs = [...STEP_SCALARS_OUTPUTS, ...(scaling ? SCALING_OUTPUTS : [])];
  const unscale = scaling
    ? 'let S = f32(scale[0]);\n        let unscale = uniforms.invCount / S;'
    : 'let unscale = uniforms.invCount;';
  return outputsProgram(STEP_SCALARS_PROGRAM + (scaling ? 'Scaled' : ''), outputs, {
    variableNames: ['sumSq', 'lossSum', 'skipped', ...(scaling ? ['scale', 'good'] : []), ...outputs],
    outputShape: [1],
    shaderKey: `xtts_adamw_scalars_${scaling}`,
    dispatchLayout: { x: [0] },
    dispatch: [1, 1, 1] as [number, number, number],
    workgroupSize: [1, 1, 1] as [number, number, number],
    uniforms: 'invCount : f32, maxNorm : f32, clipEps : f32, growthInterval : f32, maxScale : f32,',
    getUserCode: () => `
      fn notFinite(x : f32) -> bool {
        return (bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u;
      }
      // tfjs's minimum and maximum: NaN where either operand is NaN.
      fn nanMin(a : f32, b : f32) -> f32 {
        return select(min(a, b), a + b, isnan(a) || isnan(b));
      }
      fn nanMax(a : f32, b : f32) -> f32 {
        return select(max(a, b), a + b, isnan(a) || isnan(b));
      }
      fn main(index : i32) {
        ${unscale}
        let gradNorm = sqrt(f32(sumSq[0])) * unscale;
        let finite = !notFinite(gradNorm + f32(lossSum[0]));
        let applied = select(0.0, 1.0, finite);
        var clip = 1.0;
        if (uniforms.maxNorm > 0.0) {
          clip = nanMin(1.0, uniforms.maxNorm / (gradNorm + uniforms.clipEps));
        }
        setOutputAtIndex(0, gradNorm);
        gradScale[0] = clip * unscale;
        flag[0] = applied;
        ${
          scaling
            ? `// Skipped with S > 1: an overflow of the scaled gradient (−1); at S = 1 a real non-finite step (0).
        let verdict = select(select(0.0, -1.0, S > 1.0), 1.0, finite);
        let inARow = (f32(good[0]) + 1.0) * applied;
        let grow = inARow >= uniforms.growthInterval;
        scaleOut[0] = select(nanMax(S * 0.5, 1.0), select(S, nanMin(S * 2.0, uniforms.maxScale), grow), finite);
        goodOut[0] = select(inARow, 0.0, grow);`
            : 'let verdict = applied;'
        }
        finiteOut[0] = verdict;
        skippedOut[0] = f32(skipped[0]) + select(0.0, 1.0, verdict == 0.0);
      }`,
  });
}

function webgpuStepScalars(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const i = args.inputs as Record<'sumSq' | 'lossSum' | 'skipped' | 'scale' | 'good', tf.TensorInfo | undefined>;
  const { invCount, maxNorm, scaling } = args.attrs as unknown as StepScalarsAttrs;
  const inputs = [i.sumSq!, i.lossSum!, i.skipped!, ...(scaling ? [i.scale!, i.good!] : [])];
  const uniforms = [invCount, maxNorm, 1e-6, scaling?.growthInterval ?? 0, scaling?.maxScale ?? 0].map((v) => ({
    type: 'float32',
    data: [v],
  }));
  const outputs = STEP_SCALARS_OUTPUTS.length + (scaling ? SCALING_OUTPUTS.length : 0);
  const [gradNorm, ...rest] = runWithOutputs(
    args.backend as WebgpuProgramRunner,
    stepScalarsProgram(scaling !== null),
    inputs,
    Array.from({ length: outputs }, () => []),
    uniforms,
  );
  return [{ ...gradNorm, shape: [] }, ...rest];
}

defineGpuKernel(tf, 'adamw', ADAMW_SCALARS_KERNEL, () => webgpuStepScalars as unknown as tf.KernelFunc);

/** The update's scalars (stepScalars), each a scalar tensor. */
export interface StepScalars {
  gradNorm: tf.Scalar;
  /** 1 applied, 0 a non-finite step skipped, −1 (loss scaling) an overflow of the scaled gradient skipped. */
  finite: tf.Scalar;
  /** The factor of the summed gradient in the moments: clipping times 1/(count·S). */
  gradScale: tf.Scalar;
  /** 1 where the step is finite, else 0. */
  flag: tf.Scalar;
  skipped: tf.Scalar;
  scale?: tf.Scalar;
  good?: tf.Scalar;
}

/**
 * Whether stepScalars runs as one program here: webgpu, with storage buffers enough for its inputs and
 * outputs (8, or 12 with loss scaling; WebGPU guarantees 8 a stage, xtts asks for the adapter's).
 */
export function stepScalarsAvailable(scaling: boolean): boolean {
  if (!gpuKernelActive(tf, ADAMW_SCALARS_KERNEL)) return false;
  const device = (tf.backend() as unknown as { device?: { limits: { maxStorageBuffersPerShaderStage: number } } })
    .device;
  const needed = 1 + 3 + STEP_SCALARS_OUTPUTS.length + (scaling ? 2 + SCALING_OUTPUTS.length : 0);
  return (device?.limits.maxStorageBuffersPerShaderStage ?? 0) >= needed;
}

/**
 * One program's worth of an update's scalars from Σg² of the summed gradients (`sumSq`) and the summed
 * loss: see StepScalars; with `state.scale` and `state.good`, the loss scale's next values too.
 */
export function stepScalars(
  sumSq: tf.Scalar,
  lossSum: tf.Scalar,
  state: { skipped: tf.Scalar; scale?: tf.Scalar; good?: tf.Scalar },
  attrs: StepScalarsAttrs,
): StepScalars {
  const inputs = {
    sumSq,
    lossSum,
    skipped: state.skipped,
    ...(attrs.scaling ? { scale: state.scale!, good: state.good! } : {}),
  };
  const out = runKernel<tf.Scalar[]>(ADAMW_SCALARS_KERNEL, inputs, attrs);
  const [gradNorm, finite, gradScale, flag, skipped, scale, good] = out;
  return { gradNorm, finite, gradScale, flag, skipped, ...(attrs.scaling ? { scale, good } : {}) };
}
