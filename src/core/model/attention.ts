// Attention, feed-forward and the pre-LN transformer blocks. Heads are batched by reshape/transpose
// (never a loop over heads); Q, K and V come out of one matmul and are separated by one split. On
// webgpu the heads are read in place from the projections instead (backend/programs/attention.ts).
import * as tf from '@tensorflow/tfjs-core';
import type { DropoutPool } from './dropout.js';
import { LayerNorm, Linear, scalar } from './nn.js';
import type { ParamStore } from './params.js';
import {
  attendPacked,
  fusedScaledSoftmax,
  fusedScaledSoftmaxGrad,
  fusedSoftmaxAvailable,
  packedAttentionAvailable,
  type PackedHeads,
} from '../backend/programs/index.js';

export interface AttentionShape {
  dModel: number;
  heads: number;
}

/**
 * [B·T, n·D] -> n tensors [B, H, T, dh] with one transpose and one split. The groups go to the
 * leading axis so that each part is one contiguous block: a split along an inner axis takes the
 * cpu backend's element-by-element slice path (~50x slower), and costs the same elsewhere.
 */
export function splitHeads(x: tf.Tensor2D, batch: number, steps: number, groups: number, heads: number): tf.Tensor4D[] {
  const headDim = x.shape[1] / (groups * heads);
  const shape: [number, number, number, number] = [batch, heads, steps, headDim];
  if (groups === 1) return [tf.transpose(tf.reshape(x, [batch, steps, heads, headDim]), [0, 2, 1, 3]) as tf.Tensor4D];
  const t = tf.transpose(tf.reshape(x, [batch, steps, groups, heads, headDim]), [2, 0, 3, 1, 4]); // [n, B, H, T, dh]
  return tf.split(t, groups, 0).map((part) => tf.reshape(part, shape) as tf.Tensor4D);
}

/** [B, H, T, dh] -> [B·T, H·dh] */
export function mergeHeads(y: tf.Tensor4D): tf.Tensor2D {
  const [batch, heads, steps, headDim] = y.shape;
  return tf.reshape(tf.transpose(y, [0, 2, 1, 3]), [batch * steps, heads * headDim]);
}

/**
 * softmax(q·kᵀ/√dh + bias)·v. q [B, H, Tq, dh], k and v [B, H, Tk, dh], bias broadcastable to
 * [B, H, Tq, Tk]. Returns the context [B, H, Tq, dh] and the weights [B, H, Tq, Tk].
 *
 * When the weights are not needed downstream (`keepWeights` false) the gradient is written out:
 * the same 9 compute kernels autodiff would run, with 4 saved tensors instead of 7 and no casts or
 * reshapes; on webgpu, 3 forward and 5 backward (backend/programs/softmax.ts).
 * The weights then carry no gradient, so a loss on them needs `keepWeights`.
 */
export function attend(
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  bias: tf.Tensor,
  keepWeights = true,
): { context: tf.Tensor4D; weights: tf.Tensor4D | null } {
  const scale = scalar(1 / Math.sqrt(q.shape[3]));
  if (keepWeights) {
    // Scaling q (B·H·Tq·dh values) is cheaper than scaling the scores (B·H·Tq·Tk) when Tk > dh.
    const weights = tf.softmax(tf.add(tf.matMul(tf.mul(q, scale), k, false, true), bias)) as tf.Tensor4D;
    return { context: tf.matMul(weights, v) as tf.Tensor4D, weights };
  }
  const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [qi, ki, vi, save] = args as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D, tf.GradSaveFunc];
    if (fusedSoftmaxAvailable()) {
      // webgpu: the scale, the bias and the softmax in one program, its gradient (scale in it) in one.
      const factor = 1 / Math.sqrt(qi.shape[3]);
      const weights = fusedScaledSoftmax(tf.matMul(qi, ki, false, true), bias, factor);
      save([qi, ki, vi, weights]);
      return {
        value: tf.matMul(weights, vi),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
          const [qs, ks, vs, w] = saved as tf.Tensor4D[];
          const ds = fusedScaledSoftmaxGrad(w, tf.matMul(dy, vs, false, true), factor);
          return [tf.matMul(ds, ks), tf.matMul(ds, qs, true, false), tf.matMul(w, dy, true, false)];
        },
      };
    }
    const scaled = tf.mul(qi, scale);
    const weights = tf.softmax(tf.add(tf.matMul(scaled, ki, false, true), bias));
    // Everything backward reads is saved: tfjs disposes the forward pass's tensors (these inputs
    // included) before backward starts.
    save([scaled, ki, vi, weights]);
    return {
      value: tf.matMul(weights, vi),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
        const [qs, ks, vs, w] = saved;
        const dw = tf.matMul(dy, vs, false, true);
        const ds = tf.mul(w, tf.sub(dw, tf.sum(tf.mul(dw, w), -1, true))); // softmax backward
        return [tf.mul(tf.matMul(ds, ks), scale), tf.matMul(ds, qs, true, false), tf.matMul(w, dy, true, false)];
      },
    };
  });
  return { context: op(q, k, v) as tf.Tensor4D, weights: null };
}

export class SelfAttention {
  readonly qkv: Linear;
  readonly out: Linear;
  readonly shape: AttentionShape;
  constructor(store: ParamStore, name: string, shape: AttentionShape, residualStd: number) {
    this.qkv = new Linear(store, `${name}.qkv`, shape.dModel, 3 * shape.dModel);
    this.out = new Linear(store, `${name}.out`, shape.dModel, shape.dModel, { std: residualStd });
    this.shape = shape;
  }

  // x [B·T, D] (already normalised), bias broadcastable to [B, H, T, T] -> [B·T, D]
  apply(x: tf.Tensor2D, batch: number, steps: number, bias: tf.Tensor): tf.Tensor2D {
    return this.out.apply(this.context(x, batch, steps, bias));
  }

  /** apply before its output projection (`out`): the heads' context, [B·T, D]. */
  context(x: tf.Tensor2D, batch: number, steps: number, bias: tf.Tensor): tf.Tensor2D {
    const qkv = this.qkv.apply(x);
    const { dModel, heads } = this.shape;
    if (packedAttentionAvailable()) {
      const at = (column: number) => ({ x: qkv, column, steps });
      return attendPacked(at(0), at(dModel), at(2 * dModel), batch, heads, dModel / heads, bias);
    }
    const [q, k, v] = splitHeads(qkv, batch, steps, 3, heads);
    return mergeHeads(attend(q, k, v, bias, false).context);
  }
}

/**
 * Keys and values of the memory for one decoder layer: [B, H, M, dh] each, or (packedAttentionAvailable)
 * in place in the layer's [B·M, 2D] projection.
 */
export interface MemoryKv {
  k: tf.Tensor4D | PackedHeads;
  v: tf.Tensor4D | PackedHeads;
}

/** Cross-attention whose keys and values were projected outside (all layers in one matmul). */
export class CrossAttention {
  readonly q: Linear;
  readonly out: Linear;
  readonly shape: AttentionShape;
  constructor(store: ParamStore, name: string, shape: AttentionShape, residualStd: number) {
    this.q = new Linear(store, `${name}.q`, shape.dModel, shape.dModel);
    this.out = new Linear(store, `${name}.out`, shape.dModel, shape.dModel, { std: residualStd });
    this.shape = shape;
  }

  // x [B·Tq, D] normalised; kv: the memory's keys and values; bias broadcastable to [B, H, Tq, Tk]
  apply(x: tf.Tensor2D, batch: number, steps: number, kv: MemoryKv, bias: tf.Tensor): tf.Tensor2D {
    return this.out.apply(this.context(x, batch, steps, kv, bias));
  }

  /** apply before its output projection (`out`): the heads' context, [B·Tq, D]. */
  context(x: tf.Tensor2D, batch: number, steps: number, { k, v }: MemoryKv, bias: tf.Tensor): tf.Tensor2D {
    const { dModel, heads } = this.shape;
    if (!(k instanceof tf.Tensor) && !(v instanceof tf.Tensor)) {
      return attendPacked({ x: this.q.apply(x), column: 0, steps }, k, v, batch, heads, dModel / heads, bias);
    }
    const [q] = splitHeads(this.q.apply(x), batch, steps, 1, heads);
    return mergeHeads(attend(q, k as tf.Tensor4D, v as tf.Tensor4D, bias, false).context);
  }
}

export class Mlp {
  readonly fc: Linear;
  readonly proj: Linear;
  constructor(store: ParamStore, name: string, dModel: number, ffMult: number, residualStd: number) {
    this.fc = new Linear(store, `${name}.fc`, dModel, ffMult * dModel);
    this.proj = new Linear(store, `${name}.proj`, ffMult * dModel, dModel, { std: residualStd });
  }
  // [rows, D] -> [rows, D]; ReLU because tfjs fuses it into the matmul (tfjs-core has no GELU).
  apply(x: tf.Tensor2D): tf.Tensor2D {
    return this.proj.apply(this.hidden(x));
  }

  /** apply before its last layer (`proj`): [rows, ffMult·D]. */
  hidden(x: tf.Tensor2D): tf.Tensor2D {
    return this.fc.apply(x, 'relu');
  }
}

export interface BlockContext {
  batch: number;
  steps: number;
  dropout: DropoutPool;
  dropoutRate: number;
}

/**
 * x + dropout(out(branch(ln(x)))): a pre-LN residual sublayer whose branch (`beforeOut`, then `out`) ends
 * in a linear layer (an attention's output projection, an MLP's last layer). The norm's backward adds
 * the residual's gradient (LayerNorm.applyWithResidual); the dropout sits in out's (DropoutPool.residualLinear).
 */
export function preNormResidual(
  x: tf.Tensor2D,
  ln: LayerNorm,
  out: Linear,
  beforeOut: (normed: tf.Tensor2D) => tf.Tensor2D,
  c: BlockContext,
): tf.Tensor2D {
  const { normed, residual } = ln.applyWithResidual(x);
  return c.dropout.residualLinear(residual, out, beforeOut(normed), c.dropoutRate);
}

/** Pre-LN encoder block: x + attn(ln(x)), then x + mlp(ln(x)). */
export class EncoderBlock {
  readonly ln1: LayerNorm;
  readonly attn: SelfAttention;
  readonly ln2: LayerNorm;
  readonly mlp: Mlp;
  constructor(store: ParamStore, name: string, shape: AttentionShape, ffMult: number, layers: number) {
    // GPT-2: residual projections start at 0.02/√(2·layers) so the residual stream's variance does
    // not grow with depth (Radford et al. 2019).
    const residualStd = 0.02 / Math.sqrt(2 * layers);
    this.ln1 = new LayerNorm(store, `${name}.ln1`, shape.dModel);
    this.attn = new SelfAttention(store, `${name}.attn`, shape, residualStd);
    this.ln2 = new LayerNorm(store, `${name}.ln2`, shape.dModel);
    this.mlp = new Mlp(store, `${name}.mlp`, shape.dModel, ffMult, residualStd);
  }

  // x [B·T, D], bias [B, 1, 1, T] -> [B·T, D]
  apply(x: tf.Tensor2D, bias: tf.Tensor, c: BlockContext): tf.Tensor2D {
    const h = preNormResidual(x, this.ln1, this.attn.out, (n) => this.attn.context(n, c.batch, c.steps, bias), c);
    return preNormResidual(h, this.ln2, this.mlp.proj, (n) => this.mlp.hidden(n), c);
  }
}
