// The autoregressive mel decoder (Tacotron 2 / Transformer-TTS style): a prenet over the previous
// frames, causal self-attention, cross-attention to [conditioning latents ; text], feed-forward, then
// one head for the r mel frames of each step; and the conv postnet. The alignment heads of the
// cross-attention read one text symbol per step, the one the alignment (model/align.ts) assigns.
import * as tf from '@tensorflow/tfjs-core';
import {
  type AttentionShape,
  attend,
  type BlockContext,
  CrossAttention,
  type MemoryKv,
  mergeHeads,
  Mlp,
  preNormResidual,
  SelfAttention,
  splitHeads,
} from './attention.js';
import type { DropoutPool } from './dropout.js';
import { Conv1d, type ConvImpl, LayerNorm, Linear } from './nn.js';
import type { ParamStore } from './params.js';
import { packedAttentionAvailable } from '../backend/programs/index.js';

/** Two ReLU layers with dropout that stays on at inference: Tacotron 2 (Shen et al. 2018, §2.3)
 * found that it is what lets the decoder vary its output rather than repeat itself. */
export class Prenet {
  readonly fc1: Linear;
  readonly fc2: Linear;
  constructor(store: ParamStore, inDim: number, dim: number) {
    // He-normal for ReLU layers (He et al. 2015): the input is a whole normalised mel frame group.
    this.fc1 = new Linear(store, 'dec.prenet.fc1', inDim, dim, { std: Math.sqrt(2 / inDim) });
    this.fc2 = new Linear(store, 'dec.prenet.fc2', dim, dim, { std: Math.sqrt(2 / dim) });
  }
  // [rows, r·nMels] -> [rows, prenet]
  apply(x: tf.Tensor2D, dropout: DropoutPool, rate: number): tf.Tensor2D {
    // Rate 1: no frame reaches the decoder (its input is the prenet of silence in normalised units, a constant).
    if (rate >= 1) return this.fc2.apply(this.fc1.apply(tf.zerosLike(x), 'relu'), 'relu');
    const h = dropout.apply(this.fc1.apply(x, 'relu'), rate);
    return dropout.apply(this.fc2.apply(h, 'relu'), rate);
  }
}

/** One decoding step's self-attention cache: keys then values of every step so far. */
export interface StepState {
  /** [B, 2H, S_max, dh]; rows of steps not yet decoded are zero and masked. */
  cache: tf.Tensor4D;
}

export class DecoderBlock {
  readonly ln1: LayerNorm;
  readonly self: SelfAttention;
  readonly ln2: LayerNorm;
  readonly cross: CrossAttention;
  readonly ln3: LayerNorm;
  readonly mlp: Mlp;
  constructor(
    store: ParamStore,
    name: string,
    readonly shape: AttentionShape,
    ffMult: number,
    layers: number,
  ) {
    const residualStd = 0.02 / Math.sqrt(3 * layers);
    this.ln1 = new LayerNorm(store, `${name}.ln1`, shape.dModel);
    this.self = new SelfAttention(store, `${name}.self`, shape, residualStd);
    this.ln2 = new LayerNorm(store, `${name}.ln2`, shape.dModel);
    this.cross = new CrossAttention(store, `${name}.cross`, shape, residualStd);
    this.ln3 = new LayerNorm(store, `${name}.ln3`, shape.dModel);
    this.mlp = new Mlp(store, `${name}.mlp`, shape.dModel, ffMult, residualStd);
  }

  // x [B·S, D]; selfBias [S, S] causal; crossBias [B, H, S, M] -> x [B·S, D]
  apply(x: tf.Tensor2D, selfBias: tf.Tensor, kv: MemoryKv, crossBias: tf.Tensor, c: BlockContext): tf.Tensor2D {
    const { batch, steps } = c;
    let h = preNormResidual(x, this.ln1, this.self.out, (n) => this.self.context(n, batch, steps, selfBias), c);
    h = preNormResidual(h, this.ln2, this.cross.out, (n) => this.cross.context(n, batch, steps, kv, crossBias), c);
    return preNormResidual(h, this.ln3, this.mlp.proj, (n) => this.mlp.hidden(n), c);
  }

  /**
   * One step of free-running decoding with a fixed-size cache (static shapes: the same kernels
   * for every step). x [B, D]; writeMask [1, 1, S_max, 1] one-hot at this step; stepBias
   * [1, 1, 1, S_max] masks the steps after this one; crossBias [B, H, 1, M].
   */
  step(
    x: tf.Tensor2D,
    state: StepState,
    writeMask: tf.Tensor4D,
    stepBias: tf.Tensor4D,
    kv: MemoryKv,
    crossBias: tf.Tensor,
  ): { x: tf.Tensor2D; state: StepState } {
    const batch = x.shape[0];
    const heads = this.shape.heads;
    const [qkvT] = splitHeads(this.self.qkv.apply(this.ln1.apply(x)), batch, 1, 1, 3 * heads);
    const [q, newKv] = tf.split(qkvT, [heads, 2 * heads], 1) as tf.Tensor4D[];
    const cache = tf.add(state.cache, tf.mul(newKv, writeMask)) as tf.Tensor4D;
    const [k, v] = tf.split(cache, 2, 1) as tf.Tensor4D[];
    let h = tf.add(x, this.self.out.apply(mergeHeads(attend(q, k, v, stepBias, false).context))) as tf.Tensor2D;
    h = tf.add(h, this.cross.apply(this.ln2.apply(h), batch, 1, kv, crossBias));
    return { x: tf.add(h, this.mlp.apply(this.ln3.apply(h))), state: { cache } };
  }
}

export interface DecoderDims extends AttentionShape {
  ffMult: number;
  layers: number;
  prenetDim: number;
  nMels: number;
  reductionFactor: number;
  maxSteps: number;
}

export class Decoder {
  readonly prenet: Prenet;
  readonly inProj: Linear;
  readonly positions: tf.Variable;
  readonly crossKv: Linear;
  readonly blocks: DecoderBlock[] = [];
  readonly lnOut: LayerNorm;
  readonly head: Linear;
  readonly frameDim: number;

  constructor(
    store: ParamStore,
    readonly d: DecoderDims,
  ) {
    this.frameDim = d.reductionFactor * d.nMels;
    this.prenet = new Prenet(store, this.frameDim, d.prenetDim);
    this.inProj = new Linear(store, 'dec.in_proj', d.prenetDim, d.dModel);
    this.positions = store.param('dec.pos_embed', [d.maxSteps, d.dModel], { kind: 'normal', std: 0.02 });
    // Every layer's cross-attention keys and values in one weight [D, layers·2D]: layer l uses
    // columns [2lD, 2(l+1)D), keys first. One matmul, one transpose and one split serve all layers.
    this.crossKv = new Linear(store, 'dec.cross_kv', d.dModel, d.layers * 2 * d.dModel);
    for (let i = 0; i < d.layers; i++)
      this.blocks.push(new DecoderBlock(store, `dec.blocks.${i}`, d, d.ffMult, d.layers));
    this.lnOut = new LayerNorm(store, 'dec.ln_out', d.dModel);
    // The decoder's part of each step's r frames; the aligned text's part is added by the model.
    this.head = new Linear(store, 'dec.head', d.dModel, this.frameDim);
  }

  // memory [B·M, D] -> per layer {k, v} [B, H, M, dh]; in place in each layer's [B·M, 2D] where
  // attention reads its heads there (packedAttentionAvailable), unless for free-running `decoding`.
  memoryKv(memory: tf.Tensor2D, batch: number, memorySteps: number, decoding = false): MemoryKv[] {
    const all = this.crossKv.apply(memory);
    if (packedAttentionAvailable() && !decoding) {
      const D = this.d.dModel;
      const layers = this.d.layers === 1 ? [all] : (tf.split(all, this.d.layers, 1) as tf.Tensor2D[]);
      return layers.map((x) => ({ k: { x, column: 0, steps: memorySteps }, v: { x, column: D, steps: memorySteps } }));
    }
    const parts = splitHeads(all, batch, memorySteps, 2 * this.d.layers, this.d.heads);
    return this.blocks.map((_, l) => ({ k: parts[2 * l], v: parts[2 * l + 1] }));
  }

  /**
   * Teacher-forced pass. prev [B·S, r·nMels]: step s sees frame group s−1 (zeros at s = 0);
   * crossBias [B, H, S, M]. Returns the decoder's frames [B·S, r·nMels].
   */
  apply(
    prev: tf.Tensor2D,
    kv: MemoryKv[],
    crossBias: tf.Tensor,
    selfBias: tf.Tensor,
    c: BlockContext,
    prenetDropout: number,
  ): tf.Tensor2D {
    const { batch, steps } = c;
    const dModel = this.d.dModel;
    const pos = tf.slice(this.positions, [0, 0], [steps, dModel]);
    const inp = tf.reshape(this.inProj.apply(this.prenet.apply(prev, c.dropout, prenetDropout)), [
      batch,
      steps,
      dModel,
    ]);
    let x = c.dropout.apply(tf.reshape(tf.add(inp, pos), [batch * steps, dModel]) as tf.Tensor2D, c.dropoutRate);
    for (let l = 0; l < this.blocks.length; l++) x = this.blocks[l].apply(x, selfBias, kv[l], crossBias, c);
    return this.head.apply(this.lnOut.apply(x));
  }

  /** One free-running step at position `step`. prev [B, r·nMels]; crossBias [B, H, 1, M] -> frames [B, r·nMels]. */
  step(
    prev: tf.Tensor2D,
    step: number,
    states: StepState[],
    writeMask: tf.Tensor4D,
    stepBias: tf.Tensor4D,
    kv: MemoryKv[],
    crossBias: tf.Tensor,
    dropout: DropoutPool,
    prenetDropout: number,
  ) {
    const pos = tf.slice(this.positions, [step, 0], [1, this.d.dModel]);
    let x = tf.add(this.inProj.apply(this.prenet.apply(prev, dropout, prenetDropout)), pos) as tf.Tensor2D;
    const next: StepState[] = [];
    for (let l = 0; l < this.blocks.length; l++) {
      const out = this.blocks[l].step(x, states[l], writeMask, stepBias, kv[l], crossBias);
      x = out.x;
      next.push(out.state);
    }
    return { frames: this.head.apply(this.lnOut.apply(x)), states: next };
  }
}

/** Residual conv postnet (Tacotron 2 §2.2, without batch norm: its statistics would mix padded
 * frames into real ones): layers−1 tanh convs of `channels`, then a linear conv back to nMels. */
export class Postnet {
  readonly convs: Conv1d[] = [];
  constructor(store: ParamStore, layers: number, nMels: number, channels: number, kernel: number) {
    for (let i = 0; i < layers; i++) {
      const last = i === layers - 1;
      const inCh = i === 0 ? nMels : channels;
      const outCh = last ? nMels : channels;
      this.convs.push(new Conv1d(store, `postnet.${i}`, kernel, inCh, outCh, last ? 1 : 5 / 3));
    }
  }

  /**
   * mel [B, T, nMels] (padded frames zeroed), frameMask [B, T, 1] -> refined mel [B, T, nMels]. Every hidden
   * layer's padded frames are zeroed again (a conv gives them values from the real frames near the end), so
   * that an utterance's last frames read zeros after it whatever it is padded to: the same in any batch.
   */
  apply(mel: tf.Tensor3D, frameMask: tf.Tensor3D, impl: ConvImpl): tf.Tensor3D {
    let x = mel;
    this.convs.forEach((conv, i) => {
      x = conv.apply(x, impl);
      if (i < this.convs.length - 1) x = tf.mul(tf.tanh(x), frameMask);
    });
    return tf.add(mel, x);
  }
}
