// Layer norm as single WebGPU programs: one workgroup per row reduces the row in shared memory
// (the pattern of tfjs-backend-webgpu's own softmax program). The composition in nn.ts costs 8
// kernels forward and 10 backward per norm, ~35% of a training step's kernels; these programs make
// it 1 forward and 2 backward (dx, which also writes each row's mean and 1/σ; the gain's gradient
// Σ x̂·dy over the rows, as one strided sum that makes x̂ from those moments). The dx program adds a
// second gradient of x where there is one (the residual stream's, which a pre-norm block also reads:
// nn.ts LayerNorm.applyWithResidual), which spares the tape's add of the two. Registered for the webgpu
// backend only; other backends keep the composition (wasm and cpu pay no per-kernel launch cost).
import * as tf from '@tensorflow/tfjs-core';
import {
  defineGpuKernel,
  gpuKernelActive,
  namedProgram,
  outputsProgram,
  runWithOutputs,
  webgpuKernel,
} from '../index.js';
import { stridedSum, type Summand } from '../index.js';

export const LN_EPSILON = 1e-5;
export const LN_KERNEL = 'XttsLayerNorm';
export const LN_GRAD_KERNEL = 'XttsLayerNormGrad';
export const LN_GAIN_GRAD_KERNEL = 'XttsLayerNormGainGrad';

const BLOCK = 64;

// The shared reductions over a row (one workgroup of BLOCK invocations per row): every invocation
// passes its partial sum (or maximum), all get the row's. Invocation 0 hands the total over through
// a variable of its own between two barriers: read by every invocation straight from buf[0] after the
// loop, Mesa's llvmpipe (Dawn on OpenGL ES) gave some of them a stale value — the gradient program's
// output was NaN there (the tests' software device). Shared with the softmax programs (backend/programs/softmax.ts).
export const ROW_REDUCE = `
  var<workgroup> buf : array<f32, ${BLOCK}>;
  var<workgroup> rowTotal : f32;
  const blockSize = ${BLOCK};
  fn rowReduce(tid : i32, value : f32, isMax : bool) -> f32 {
    buf[tid] = value;
    workgroupBarrier();
    for (var size = blockSize >> 1; size > 0; size = size >> 1) {
      if (tid < size) {
        buf[tid] = select(buf[tid] + buf[tid + size], max(buf[tid], buf[tid + size]), isMax);
      }
      workgroupBarrier();
    }
    if (tid == 0) {
      rowTotal = buf[0];
    }
    workgroupBarrier();
    let total = rowTotal;
    workgroupBarrier();
    return total;
  }
  fn rowSum(tid : i32, value : f32) -> f32 {
    return rowReduce(tid, value, false);
  }
  fn rowMax(tid : i32, value : f32) -> f32 {
    return rowReduce(tid, value, true);
  }
`;
/** Invocations per row of the row programs. */
export const ROW_BLOCK = BLOCK;

const ROW_SUM = `${ROW_REDUCE}
  fn rowStats(row : i32, tid : i32, cols : i32) -> vec2<f32> {
    var s = 0.0;
    for (var col = tid; col < cols; col += blockSize) {
      s += getX(row, col);
    }
    let mean = rowSum(tid, s) / f32(cols);
    var s2 = 0.0;
    for (var col = tid; col < cols; col += blockSize) {
      let d = getX(row, col) - mean;
      s2 += d * d;
    }
    return vec2<f32>(mean, inverseSqrt(rowSum(tid, s2) / f32(cols) + ${LN_EPSILON}));
  }
`;

/** The row programs' start: the row reductions, then main's row, invocation, columns and the row's (mean, 1/σ). */
const ROW_STATS_MAIN = `
      ${ROW_SUM}
      fn main(index : i32) {
        let row = index / blockSize;
        let tid = i32(localId.x);
        let cols = uniforms.outShape[1];
        let stats = rowStats(row, tid, cols);`;

/** The fields tfjs-backend-webgpu reads from a program (its WebGPUProgram interface). */
interface Program {
  variableNames: string[];
  outputShape: number[];
  shaderKey: string;
  dispatchLayout: { x: number[] };
  dispatch: [number, number, number];
  workgroupSize: [number, number, number];
  getUserCode(): string;
}

/** y = x̂·g, g a gain [cols]. */
function normalizeProgram(shape: number[]): Program {
  return namedProgram('XttsLayerNormGainProgram', {
    variableNames: ['x', 'w'],
    outputShape: shape,
    shaderKey: 'xtts_layernorm_gain',
    dispatchLayout: { x: [0, 1] },
    dispatch: [shape[0], 1, 1],
    workgroupSize: [BLOCK, 1, 1],
    getUserCode: () => `${ROW_STATS_MAIN}
        for (var col = tid; col < cols; col += blockSize) {
          setOutputAtCoords(row, col, (getX(row, col) - stats.x) * stats.y * getW(col));
        }
      }`,
  });
}

/**
 * dx = inv·(dŷ − mean(dŷ) − x̂·mean(dŷ·x̂)) (+ plus), dŷ = dy·g; and, a second output, each row's
 * mean and 1/σ (moments [rows, 2]), from which the gain's gradient is summed (GAIN_GRAD).
 */
function gradProgram(shape: number[], plus: boolean) {
  return outputsProgram('XttsLayerNormGradProgram', ['moments'], {
    variableNames: plus ? ['x', 'g', 'dy', 'plus', 'moments'] : ['x', 'g', 'dy', 'moments'],
    outputShape: shape,
    shaderKey: plus ? 'xtts_layernorm_grad_plus' : 'xtts_layernorm_grad',
    dispatchLayout: { x: [0, 1] },
    dispatch: [shape[0], 1, 1] as [number, number, number],
    workgroupSize: [BLOCK, 1, 1] as [number, number, number],
    getUserCode: () => `${ROW_STATS_MAIN}
        if (tid == 0) {
          moments[2 * row] = stats.x;
          moments[2 * row + 1] = stats.y;
        }
        var sa = 0.0;
        var sb = 0.0;
        for (var col = tid; col < cols; col += blockSize) {
          let xh = (getX(row, col) - stats.x) * stats.y;
          let d = getDy(row, col) * getG(col);
          sa += d;
          sb += d * xh;
        }
        let a = rowSum(tid, sa) / f32(cols);
        let b = rowSum(tid, sb) / f32(cols);
        for (var col = tid; col < cols; col += blockSize) {
          let xh = (getX(row, col) - stats.x) * stats.y;
          let d = getDy(row, col) * getG(col);
          setOutputAtCoords(row, col, stats.y * (d - a - xh * b)${plus ? ' + getPlus(row, col)' : ''});
        }
      }`,
  });
}

/** The gain's gradient Σ_rows x̂·dy, x̂ from x and the row moments, in one strided sum (no x̂·dy written first). */
const GAIN_GRAD: Summand = {
  variableNames: ['x', 'moments', 'dy'],
  key: '_layernorm_gain',
  body: 'return (f32(x[at]) - moments[2 * r]) * moments[2 * r + 1] * f32(dy[at]);',
};
defineGpuKernel(tf, 'layer-norm', LN_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend) =>
    backend.runWebGPUProgram(normalizeProgram(inputs.x.shape), [inputs.x, inputs.w], 'float32'),
  ),
);
defineGpuKernel(tf, 'layer-norm', LN_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend) => {
    const { x, g, dy, plus } = inputs;
    return runWithOutputs(backend, gradProgram(x.shape, plus !== undefined), plus ? [x, g, dy, plus] : [x, g, dy], [
      [x.shape[0], 2],
    ]);
  }),
);
defineGpuKernel(tf, 'layer-norm', LN_GAIN_GRAD_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend) => {
    const { x, moments, dy } = inputs;
    const out = stridedSum([x, moments, dy], backend, { outer: 1, rows: x.shape[0], inner: x.shape[1] }, GAIN_GRAD);
    if (!out) throw new Error(`a layer norm of ${x.shape[1]} features: too wide for one strided sum`);
    return { ...out, shape: [x.shape[1]] };
  }),
);

/** Whether layer norms run as these programs on this backend (tests and the bench compare both paths). */
export function fusedLayerNormAvailable(): boolean {
  return gpuKernelActive(tf, LN_KERNEL);
}

// x [rows, cols], g [cols] -> x̂·g
export function fusedNormalize(x: tf.Tensor2D, g: tf.Tensor1D): tf.Tensor2D {
  return tf.engine().runKernel(LN_KERNEL, { x, w: g }) as tf.Tensor2D;
}

/**
 * x, dy [rows, cols], g [cols] -> [dx [rows, cols], dg [cols]], two programs; plus [rows, cols]: a
 * second gradient of x, added to dx in its program.
 */
export function fusedNormalizeGrads(
  x: tf.Tensor2D,
  g: tf.Tensor1D,
  dy: tf.Tensor2D,
  plus?: tf.Tensor2D,
): [tf.Tensor2D, tf.Tensor1D] {
  const [dx, moments] = tf.engine().runKernel(LN_GRAD_KERNEL, plus ? { x, g, dy, plus } : { x, g, dy }) as tf.Tensor[];
  const dg = tf.engine().runKernel(LN_GAIN_GRAD_KERNEL, { x, moments, dy }) as tf.Tensor1D;
  moments.dispose();
  return [dx as tf.Tensor2D, dg];
}
