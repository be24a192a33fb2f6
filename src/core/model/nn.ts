// The model's building blocks on tfjs-core ops, written for few kernels per step: every dense layer
// is one fused matmul (bias and activation inside), layer norm has a hand-written gradient, masks
// are built once per forward pass and shared by all layers, and nothing reads a tensor back.
// Activations between layers are kept 2-D ([rows, features]) so dense layers need no reshapes.
//
// Kernel availability (tfjs 4.22): wasm has no Conv2DBackpropFilter and no UnsortedSegmentSum
// (the gradient of gather). So embeddings are one-hot matmuls on every backend, and a 1-D conv
// uses the native conv kernels where the backend can differentiate them, else an equivalent
// matmul composition (`conv1dComposed`).
import * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from './params.js';
import {
  denseBackward,
  fusedLayerNormAvailable,
  fusedMasksAvailable,
  fusedNormalize,
  fusedNormalizeGrads,
  gradOp,
  lengthBias,
  LN_EPSILON,
  maskAdd,
  reluGrad,
  tapSum,
  tapSumAvailable,
} from '../backend/programs/index.js';

// Dropout (its device-resident mask pool) has a file of its own; importers of nn.js still find it here.
export { type DropoutCall, DropoutPool } from './dropout.js';

/** Added to the score of a key that must not be attended to. Finite, so a row whose keys are all
 * masked (a filler utterance) gives a uniform row instead of NaN; exp(-1e9 - max) is exactly 0 in
 * float32, so a masked key gets exactly zero weight. (float16 would need -6e4 instead.) */
export const MASK_BIAS = -1e9;

// ---------------------------------------------------------------------------------------------
// Constants kept on the device: an op with a JS number argument makes (and uploads) a new scalar
// tensor on every call; these are made once per backend — per backend instance, not name: a webgpu
// backend made again (another device, a test's next one) must not be handed the last one's tensors,
// whose data went with it.
const constants = new WeakMap<object, Map<string, tf.Tensor>>();

/** The cached tensor `key` of the current backend, made by `make` where there is none yet. */
function constant(key: string, make: () => tf.Tensor): tf.Tensor {
  const backend = tf.backend();
  let cache = constants.get(backend);
  if (!cache) {
    cache = new Map();
    constants.set(backend, cache);
  }
  let t = cache.get(key);
  if (!t || t.isDisposed) {
    t = tf.keep(tf.tidy(make));
    cache.set(key, t);
  }
  return t;
}

export function scalar(value: number): tf.Scalar {
  return constant(`scalar:${value}`, () => tf.scalar(value, 'float32')) as tf.Scalar;
}

/** A cached device tensor made from host values, keyed by a caller-chosen name. */
export function cachedConstant(name: string, make: () => tf.Tensor): tf.Tensor {
  return constant(`named:${name}`, make);
}

// ---------------------------------------------------------------------------------------------
// Masks

/** 1 for positions < length, else 0. Lengths int32 or float32. */
export function lengthMask(lengths: tf.Tensor1D, length: number): tf.Tensor2D {
  // [batch, length]
  const positions = tf.reshape(tf.range(0, length, 1, lengths.dtype === 'int32' ? 'int32' : 'float32'), [1, length]);
  return tf.cast(tf.less(positions, tf.reshape(lengths, [-1, 1])), 'float32') as tf.Tensor2D;
}

/**
 * Additive attention bias for key padding: [batch, 1, 1, keys], 0 for real keys, MASK_BIAS for padding.
 * `mask`: lengthMask(lengths, keys), where the caller has it already (the composition starts from it).
 */
export function keyPaddingBias(lengths: tf.Tensor1D, keys: number, mask?: tf.Tensor2D): tf.Tensor4D {
  // webgpu: one program (backend/programs/masks.ts), the same values.
  if (fusedMasksAvailable() && lengths.dtype === 'int32') return lengthBias(lengths, keys, MASK_BIAS);
  mask ??= lengthMask(lengths, keys);
  return tf.reshape(tf.mul(tf.sub(mask, scalar(1)), scalar(-MASK_BIAS)), [-1, 1, 1, keys]);
}

/** Causal bias [steps, steps]: query t sees keys 0..t. Made once per shape and kept. */
export function causalBias(steps: number): tf.Tensor2D {
  return cachedConstant(`causal:${steps}`, () => {
    const v = new Float32Array(steps * steps);
    for (let q = 0; q < steps; q++) for (let k = q + 1; k < steps; k++) v[q * steps + k] = MASK_BIAS;
    return tf.tensor2d(v, [steps, steps]);
  }) as tf.Tensor2D;
}

/** x, with no gradient flowing back through it (PyTorch's detach). */
export const stopGradient = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => ({
  value: tf.clone(args[0] as tf.Tensor),
  gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy),
})) as (x: tf.Tensor) => tf.Tensor;

/** max(x, 0), its gradient (tfjs's: dy·step(x)) one program on webgpu (reluGrad) where tfjs's is two. */
export const relu = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const x = args[0] as tf.Tensor;
  (args[1] as tf.GradSaveFunc)([x]);
  return { value: tf.relu(x), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => reluGrad(dy, saved[0]) };
}) as <T extends tf.Tensor>(x: T) => T;

// ---------------------------------------------------------------------------------------------
// Dense layers

export type Activation = 'linear' | 'relu';

/**
 * act(x·W + b) as one _FusedMatMul kernel, with its gradient written out. tf.fused.matMul falls
 * back to matMul + add + relu (3 kernels, 6 in backward) whenever a gradient tape is recording
 * and the activation is not linear (tfjs-core fused_util shouldFuse); this op stays fused and its
 * backward (denseBackward) is one program on webgpu for a small layer (ReLU's gradient, the bias
 * gradient and both matmuls), else 3 kernels (the bias gradient a column sum; on webgpu dy·step(y) and
 * its column sum in one program; 4 elsewhere for relu). W is read from the closure, not saved, which
 * spares a clone per call.
 */
function fusedLinear(activation: Activation, w: tf.Tensor2D) {
  return tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [x, , b, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
    const [rows, inDim] = x.shape;
    const outDim = w.shape[1];
    const attrs = { transposeA: false, transposeB: false, activation, leakyreluAlpha: 0 };
    // The wasm kernel reads rank-3 shapes only (tf.fused.matMul always reshapes); cpu and webgpu
    // take rank 2, which spares three Reshape calls per layer.
    const y =
      tf.getBackend() === 'wasm'
        ? tf.reshape(
            tf
              .engine()
              .runKernel(
                '_FusedMatMul',
                { a: tf.reshape(x, [1, rows, inDim]), b: tf.reshape(w, [1, inDim, outDim]), bias: b },
                attrs,
              ) as tf.Tensor,
            [rows, outDim],
          )
        : (tf.engine().runKernel('_FusedMatMul', { a: x, b: w, bias: b }, attrs) as tf.Tensor);
    save(activation === 'relu' ? [x, y] : [x]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] =>
        denseBackward(
          dy as tf.Tensor2D,
          saved[0] as tf.Tensor2D,
          w,
          activation === 'relu' ? { kind: 'relu', y: saved[1] as tf.Tensor2D } : { kind: 'plain' },
        ),
    };
  });
}

/** y = act(x W + b). Weight [in, out]. */
export class Linear {
  readonly w: tf.Variable;
  readonly b: tf.Variable;
  private readonly ops: Record<Activation, (x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.Tensor>;
  constructor(
    store: ParamStore,
    name: string,
    readonly inDim: number,
    readonly outDim: number,
    opts: { std?: number } = {},
  ) {
    this.w = store.param(`${name}.w`, [inDim, outDim], { kind: 'normal', std: opts.std ?? 0.02 });
    this.b = store.param(`${name}.b`, [outDim], { kind: 'zeros' });
    this.ops = {
      linear: fusedLinear('linear', this.w as tf.Tensor2D),
      relu: fusedLinear('relu', this.w as tf.Tensor2D),
    };
  }

  // [rows, in] -> [rows, out]
  apply(x: tf.Tensor2D, activation: Activation = 'linear'): tf.Tensor2D {
    return this.ops[activation](x, this.w, this.b) as tf.Tensor2D;
  }

  /**
   * base + (x·W + b)·pool[offsets[k] ..]: the layer under a residual connection's dropout, on webgpu
   * (DropoutPool.residualLinear). Forward as apply and maskAdd; backward the dropout's gradient, the
   * bias gradient and the two matmuls in one program for a small layer (backend/programs/dense-layer.ts), else
   * the dropout's gradient with its column sums in one program, then the two matmuls.
   */
  applyDroppedResidual(
    x: tf.Tensor2D,
    base: tf.Tensor2D,
    pool: tf.Tensor1D,
    offsets: tf.Tensor1D,
    k: number,
  ): tf.Tensor2D {
    const w = this.w as tf.Tensor2D;
    const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [h, , b, residual, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.Tensor2D, tf.GradSaveFunc];
      const y = tf
        .engine()
        .runKernel(
          '_FusedMatMul',
          { a: h, b: w, bias: b },
          { transposeA: false, transposeB: false, activation: 'linear', leakyreluAlpha: 0 },
        ) as tf.Tensor2D;
      save([h, offsets]);
      return {
        value: maskAdd(residual, y, pool, offsets, k),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => [
          ...denseBackward(dy as tf.Tensor2D, saved[0] as tf.Tensor2D, w, {
            kind: 'mask',
            pool,
            offsets: saved[1] as tf.Tensor1D,
            k,
          }),
          dy,
        ],
      };
    });
    return op(x, this.w, this.b, base) as tf.Tensor2D;
  }
}

// ---------------------------------------------------------------------------------------------
// Layer norm (Ba et al. 2016) with a gain and no bias, its gradient written out: autodiff of the
// forward formula costs about 25 kernels, this one 10 (dx = inv·(dŷ − mean(dŷ) − x̂·mean(dŷ·x̂)),
// dŷ = dy·g), and 8 forward; on webgpu, 1 and 2 (backend/programs/layernorm.ts). No bias because every norm here feeds
// a linear
// layer that has one:
// (x̂g + b)W + c = x̂gW + (bW + c), so a norm bias adds parameters and kernels but no function
// (PaLM drops it too, Chowdhery et al. 2022).

/** The norm's forward: its value, and what its backward (normGrad) reads. */
function normForward(x: tf.Tensor2D, g: tf.Tensor1D): { value: tf.Tensor2D; saved: tf.Tensor[] } {
  // One program forward; backward recomputes the row statistics from x (backend/programs/layernorm.ts).
  if (fusedLayerNormAvailable()) return { value: fusedNormalize(x, g), saved: [x] };
  // x: [rows, features]
  const centred = tf.sub(x, tf.mean(x, -1, true));
  const inv = tf.rsqrt(tf.add(tf.mean(tf.square(centred), -1, true), scalar(LN_EPSILON)));
  const xhat = tf.mul(centred, inv);
  return { value: tf.mul(xhat, g), saved: [xhat, inv] };
}

/** [dx (+ plus, a second gradient of x), dg] from what normForward saved. */
function normGrad(
  saved: tf.Tensor[],
  g: tf.Tensor1D,
  dy: tf.Tensor2D,
  plus: tf.Tensor2D | null,
): [tf.Tensor2D, tf.Tensor1D] {
  if (fusedLayerNormAvailable()) return fusedNormalizeGrads(saved[0] as tf.Tensor2D, g, dy, plus ?? undefined);
  const [xh, iv] = saved;
  const dxhat = tf.mul(dy, g);
  const meanD = tf.mean(dxhat, -1, true);
  const meanDX = tf.mean(tf.mul(dxhat, xh), -1, true);
  const dx = tf.mul(tf.sub(tf.sub(dxhat, meanD), tf.mul(xh, meanDX)), iv) as tf.Tensor2D;
  return [plus ? tf.add(dx, plus) : dx, tf.sum(tf.mul(dy, xh), 0)];
}

function layerNormOp(g: tf.Tensor1D) {
  return tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [x, , save] = args as [tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
    const { value, saved } = normForward(x, g);
    save(saved);
    return { value, gradFunc: (dy: tf.Tensor, s: tf.Tensor[]): tf.Tensor[] => normGrad(s, g, dy as tf.Tensor2D, null) };
  });
}

/**
 * [the norm of x, x itself] as one op of two outputs: a pre-norm block reads x twice (the norm, and
 * the residual connection around the block), so the tape would add the two gradients of x in a
 * program of their own; here the norm's backward adds the residual's gradient while it computes its
 * own (one program on webgpu). tf.customGrad takes one output only: this is a gradOp.
 */
function layerNormWithResidualOp(g: tf.Tensor1D) {
  return (x: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D] => {
    const [normed, residual] = gradOp(
      { x, g },
      (save) => {
        const { value, saved } = normForward(x, g);
        save(saved);
        // The same data under a new tensor (no program): the tape tells the two outputs apart.
        return [value, tf.clone(x)];
      },
      ([dNormed, dResidual], saved) => {
        const [dx, dg] = normGrad(saved, g, dNormed as tf.Tensor2D, dResidual as tf.Tensor2D);
        return { x: () => dx, g: () => dg };
      },
    );
    return [normed as tf.Tensor2D, residual as tf.Tensor2D];
  };
}

export class LayerNorm {
  readonly g: tf.Variable;
  private readonly op: (x: tf.Tensor, g: tf.Tensor) => tf.Tensor;
  private readonly withResidual: (x: tf.Tensor2D) => [tf.Tensor2D, tf.Tensor2D];
  constructor(store: ParamStore, name: string, dim: number) {
    this.g = store.param(`${name}.g`, [dim], { kind: 'ones' });
    this.op = layerNormOp(this.g as tf.Tensor1D);
    this.withResidual = layerNormWithResidualOp(this.g as tf.Tensor1D);
  }
  // [rows, dim] -> [rows, dim]
  apply(x: tf.Tensor2D): tf.Tensor2D {
    return this.op(x, this.g) as tf.Tensor2D;
  }
  /**
   * The norm of x, and x to add around the block that reads the norm (a pre-norm residual block):
   * the same values as [apply(x), x], with the two gradients of x added inside the norm's backward.
   */
  applyWithResidual(x: tf.Tensor2D): { normed: tf.Tensor2D; residual: tf.Tensor2D } {
    const [normed, residual] = this.withResidual(x);
    return { normed, residual };
  }
}

// ---------------------------------------------------------------------------------------------
// Embeddings as one-hot matmuls (see the header: gather's gradient is missing on wasm).

export class Embedding {
  readonly table: tf.Variable;
  constructor(
    store: ParamStore,
    name: string,
    readonly count: number,
    dim: number,
  ) {
    this.table = store.param(name, [count, dim], { kind: 'normal', std: 0.02 });
  }
  // [n] int32 -> [n, dim]
  lookup(ids: tf.Tensor1D): tf.Tensor2D {
    // tf.oneHot needs depth >= 2: a one-entry table (a single language) is broadcast instead.
    if (this.count === 1) return tf.matMul(tf.ones([ids.shape[0], 1]), this.table) as tf.Tensor2D;
    // int32 one-hot, then a cast: tfjs-backend-wasm 4.22's OneHot ignores its dtype attribute and
    // writes int32 bit patterns into a float32 output (1 reads as 1.4e-45).
    return tf.matMul(tf.cast(tf.oneHot(ids, this.count), 'float32'), this.table) as tf.Tensor2D;
  }
}

// ---------------------------------------------------------------------------------------------
// 1-D convolution over time, 'same' padding, odd kernel. Filter [kernel, in, out] (tf.conv1d's
// layout) whichever path runs, so checkpoints do not depend on the backend.

export type ConvImpl = 'auto' | 'native' | 'composed';

/**
 * 'auto' (device.conv_kernels): the composition, on every backend with no native filter gradient
 * worth using — wasm has no Conv2DBackpropFilter, cpu's is a scalar loop (a tiny-model step 10% faster
 * composed), webgpu's loops over the batch and frames per filter element (36% of a normal step's device
 * time on an H100, profile-bottleneck's top programs). Only tensorflow (libtensorflow's cuDNN/oneDNN
 * kernels) keeps the native convolution.
 */
export function nativeConvAvailable(): boolean {
  const backend = tf.getBackend();
  return backend === 'tensorflow' && tf.getKernel('Conv2DBackpropFilter', backend) !== undefined;
}

export class Conv1d {
  readonly w: tf.Variable;
  readonly b: tf.Variable;
  constructor(
    store: ParamStore,
    name: string,
    readonly kernel: number,
    readonly inCh: number,
    readonly outCh: number,
    gain: number,
  ) {
    // Xavier/Glorot uniform with a gain, as NVIDIA's Tacotron 2 (ConvNorm, w_init_gain 'tanh' = 5/3).
    const limit = gain * Math.sqrt(6 / (kernel * inCh + kernel * outCh));
    this.w = store.param(`${name}.w`, [kernel, inCh, outCh], { kind: 'uniform', limit });
    this.b = store.param(`${name}.b`, [outCh], { kind: 'zeros' });
  }

  // [batch, frames, in] -> [batch, frames, out]
  apply(x: tf.Tensor3D, impl: ConvImpl): tf.Tensor3D {
    const useNative = impl === 'native' || (impl === 'auto' && nativeConvAvailable());
    return useNative ? this.native(x) : conv1dComposed(x, this.w as tf.Tensor3D, this.b as tf.Tensor1D);
  }

  private native(x: tf.Tensor3D): tf.Tensor3D {
    const [batch, frames] = x.shape;
    const y = tf.fused.conv2d({
      x: tf.reshape(x, [batch, 1, frames, this.inCh]) as tf.Tensor4D,
      filter: tf.reshape(this.w, [1, this.kernel, this.inCh, this.outCh]) as tf.Tensor4D,
      strides: 1,
      pad: 'same',
      bias: this.b,
    });
    return tf.reshape(y, [batch, frames, this.outCh]);
  }
}

/**
 * The same convolution as one matmul: every input frame is multiplied by all K filter taps at once
 * ([B·(T+K−1), in] × [in, K·out]), then output frame t sums tap k of padded frame t+k (K slices, one
 * AddN). Forward K+3 kernels, backward about 2K+2, all present on every backend; on webgpu the slices,
 * the sum and the bias are one program each way (backend/programs/conv.ts).
 */
export function conv1dComposed(x: tf.Tensor3D, w: tf.Tensor3D, b: tf.Tensor1D): tf.Tensor3D {
  const [batch, frames, inCh] = x.shape;
  const [kernel, , outCh] = w.shape;
  const half = (kernel - 1) / 2;
  if (tapSumAvailable()) {
    // webgpu: the frames unpadded, the taps' shifted sum and the bias one program (backend/programs/conv.ts):
    // forward 3 programs, backward 5.
    const taps = tf.matMul(
      tf.reshape(x, [batch * frames, inCh]),
      tf.reshape(tf.transpose(w, [1, 0, 2]), [inCh, kernel * outCh]),
    );
    return tapSum(tf.reshape(taps, [batch, frames, kernel, outCh]), b);
  }
  const padded = tf.pad(x, [
    [0, 0],
    [half, half],
    [0, 0],
  ]);
  const span = frames + kernel - 1;
  const taps = tf.reshape(
    tf.matMul(tf.reshape(padded, [batch * span, inCh]), tf.reshape(tf.transpose(w, [1, 0, 2]), [inCh, kernel * outCh])),
    [batch, span, kernel, outCh],
  );
  const parts: tf.Tensor[] = [];
  for (let k = 0; k < kernel; k++) parts.push(tf.slice(taps, [0, k, k, 0], [batch, frames, 1, outCh]));
  const summed = kernel === 1 ? parts[0] : tf.addN(parts);
  return tf.add(tf.reshape(summed, [batch, frames, outCh]), b);
}
