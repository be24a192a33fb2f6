// The two encoders whose outputs the decoder attends to: the text encoder (what to say) and the
// conditioning encoder (whose voice), which pools a reference clip into a few latents.
import * as tf from '@tensorflow/tfjs-core';
import { attend, type BlockContext, EncoderBlock, mergeHeads, Mlp, splitHeads } from './attention.js';
import { cachedConstant, Conv1d, type ConvImpl, Embedding, LayerNorm, lengthMask, Linear, relu } from './nn.js';
import type { ParamStore } from './params.js';
import { attendPacked, packedAttentionAvailable } from '../backend/programs/index.js';

export interface EncoderDims {
  dModel: number;
  heads: number;
  ffMult: number;
}

/** Tokens + language (one per utterance) + learned positions, then pre-LN blocks with key padding. */
export class TextEncoder {
  readonly tokens: Embedding;
  readonly languages: Embedding;
  readonly positions: tf.Variable;
  readonly blocks: EncoderBlock[] = [];
  readonly lnOut: LayerNorm;
  private readonly dModel: number;

  constructor(
    store: ParamStore,
    d: EncoderDims,
    layers: number,
    vocabSize: number,
    numLanguages: number,
    readonly maxTokens: number,
  ) {
    this.dModel = d.dModel;
    this.tokens = new Embedding(store, 'text.tok_embed', vocabSize, d.dModel);
    this.languages = new Embedding(store, 'text.lang_embed', numLanguages, d.dModel);
    this.positions = store.param('text.pos_embed', [maxTokens, d.dModel], { kind: 'normal', std: 0.02 });
    for (let i = 0; i < layers; i++) this.blocks.push(new EncoderBlock(store, `text.blocks.${i}`, d, d.ffMult, layers));
    this.lnOut = new LayerNorm(store, 'text.ln_out', d.dModel);
  }

  // tokens [B, T] int32, languages [B] int32, bias [B, 1, 1, T] -> [B·T, D]
  apply(tokens: tf.Tensor2D, languages: tf.Tensor1D, bias: tf.Tensor4D, c: BlockContext): tf.Tensor2D {
    const [batch, steps] = tokens.shape;
    const dModel = this.dModel;
    const tok = tf.reshape(this.tokens.lookup(tf.reshape(tokens, [batch * steps])), [batch, steps, dModel]);
    const lang = tf.reshape(this.languages.lookup(languages), [batch, 1, dModel]);
    const pos = tf.slice(this.positions, [0, 0], [steps, dModel]);
    let x = c.dropout.apply(
      tf.reshape(tf.add(tok, tf.add(lang, pos)), [batch * steps, dModel]) as tf.Tensor2D,
      c.dropoutRate,
    );
    for (const block of this.blocks) x = block.apply(x, bias, c);
    return this.lnOut.apply(x);
  }
}

/**
 * Reference mel -> `latents` vectors. A width-3 conv gives each frame its neighbours (the blocks
 * have no positions: a voice is a property of the clip, not of where in it a frame sits), pre-LN
 * blocks with key padding, then Perceiver-style pooling (Jaegle et al. 2021): learned queries
 * cross-attend to the frames, followed by a feed-forward layer.
 */
export class ConditioningEncoder {
  readonly input: Conv1d;
  readonly blocks: EncoderBlock[] = [];
  readonly lnFrames: LayerNorm;
  readonly queries: tf.Variable;
  readonly poolQ: Linear;
  readonly poolKv: Linear;
  readonly poolOut: Linear;
  readonly lnPool: LayerNorm;
  readonly poolMlp: Mlp;
  readonly lnOut: LayerNorm;

  constructor(
    store: ParamStore,
    readonly d: EncoderDims,
    layers: number,
    nMels: number,
    readonly latents: number,
  ) {
    this.input = new Conv1d(store, 'cond.in_conv', 3, nMels, d.dModel, 1);
    for (let i = 0; i < layers; i++) this.blocks.push(new EncoderBlock(store, `cond.blocks.${i}`, d, d.ffMult, layers));
    this.lnFrames = new LayerNorm(store, 'cond.ln_frames', d.dModel);
    this.queries = store.param('cond.latents', [latents, d.dModel], { kind: 'normal', std: 0.02 });
    const residualStd = 0.02 / Math.sqrt(2);
    this.poolQ = new Linear(store, 'cond.pool.q', d.dModel, d.dModel);
    this.poolKv = new Linear(store, 'cond.pool.kv', d.dModel, 2 * d.dModel);
    this.poolOut = new Linear(store, 'cond.pool.out', d.dModel, d.dModel, { std: residualStd });
    this.lnPool = new LayerNorm(store, 'cond.pool.ln', d.dModel);
    this.poolMlp = new Mlp(store, 'cond.pool.mlp', d.dModel, d.ffMult, residualStd);
    this.lnOut = new LayerNorm(store, 'cond.ln_out', d.dModel);
  }

  // refMel [B, Tr, nMels] with padded frames already zeroed, bias [B, 1, 1, Tr] -> [B·L, D]
  apply(refMel: tf.Tensor3D, bias: tf.Tensor4D, c: BlockContext, convImpl: ConvImpl): tf.Tensor2D {
    const [batch, frames] = refMel.shape;
    const { dModel, heads } = this.d;
    let x = tf.reshape(this.input.apply(refMel, convImpl), [batch * frames, dModel]) as tf.Tensor2D;
    const frameCtx = { ...c, batch, steps: frames };
    for (const block of this.blocks) x = block.apply(x, bias, frameCtx);
    const kv = this.poolKv.apply(this.lnFrames.apply(x));
    // The queries do not depend on the utterance: projected once, and read by every batch entry.
    const queries = this.poolQ.apply(this.queries as tf.Tensor2D);
    let context: tf.Tensor2D;
    if (packedAttentionAvailable()) {
      const at = (column: number) => ({ x: kv, column, steps: frames });
      context = attendPacked(
        { x: queries, column: 0, steps: this.latents, shared: true },
        at(0),
        at(dModel),
        batch,
        heads,
        dModel / heads,
        bias,
      );
    } else {
      const [k, v] = splitHeads(kv, batch, frames, 2, heads);
      // Broadcast over the batch by adding zeros (Add's gradient is one sum; tile's would be a slice per utterance).
      const zeros = cachedConstant(`zeros:${batch},1,1,1`, () => tf.zeros([batch, 1, 1, 1]));
      const q = tf.add(
        tf.transpose(tf.reshape(queries, [this.latents, heads, dModel / heads]), [1, 0, 2]),
        zeros,
      ) as tf.Tensor4D;
      context = mergeHeads(attend(q, k, v, bias, false).context);
    }
    const pooled = this.poolOut.apply(context);
    const lat = tf.reshape(tf.add(tf.reshape(pooled, [batch, this.latents, dModel]), this.queries), [
      batch * this.latents,
      dModel,
    ]) as tf.Tensor2D;
    const p = this.lnPool.applyWithResidual(lat);
    const out = c.dropout.residualLinear(p.residual, this.poolMlp.proj, this.poolMlp.hidden(p.normed), c.dropoutRate);
    return this.lnOut.apply(out);
  }
}

/**
 * How long each token is said: FastSpeech's duration predictor (Ren et al. 2019, §3.3), two width-3
 * convs over the text encodings with ReLU, layer norm and dropout, then log(1 + decoder steps) per
 * token. Trained towards the durations monotonic alignment search finds (losses.ts).
 */
export class DurationPredictor {
  readonly conv1: Conv1d;
  readonly ln1: LayerNorm;
  readonly conv2: Conv1d;
  readonly ln2: LayerNorm;
  readonly out: Linear;

  /** `name`: the parameters' prefix (model.pitch_contour's pitch predictor has this shape too, as `pitch`). */
  constructor(
    store: ParamStore,
    readonly dModel: number,
    name = 'dur',
  ) {
    this.conv1 = new Conv1d(store, `${name}.conv1`, 3, dModel, dModel, Math.SQRT2);
    this.ln1 = new LayerNorm(store, `${name}.ln1`, dModel);
    this.conv2 = new Conv1d(store, `${name}.conv2`, 3, dModel, dModel, Math.SQRT2);
    this.ln2 = new LayerNorm(store, `${name}.ln2`, dModel);
    this.out = new Linear(store, `${name}.out`, dModel, 1);
  }

  // text [B, T, D], textLengths [B] -> log(1 + steps) [B, T]
  apply(
    text: tf.Tensor3D,
    textLengths: tf.Tensor1D,
    c: Omit<BlockContext, 'batch' | 'steps'>,
    convImpl: ConvImpl,
  ): tf.Tensor2D {
    const [batch, steps, dModel] = text.shape;
    // Zero the padding so the convs' windows at the last real tokens see nothing of it.
    const mask = tf.reshape(lengthMask(textLengths, steps), [batch, steps, 1]);
    const layer = (x: tf.Tensor3D, conv: Conv1d, ln: LayerNorm) =>
      tf.reshape(
        c.dropout.apply(
          ln.apply(
            tf.reshape(relu(conv.apply(tf.mul(x, mask) as tf.Tensor3D, convImpl)), [
              batch * steps,
              dModel,
            ]) as tf.Tensor2D,
          ),
          c.dropoutRate,
        ),
        [batch, steps, dModel],
      ) as tf.Tensor3D;
    const h = layer(layer(text, this.conv1, this.ln1), this.conv2, this.ln2);
    return tf.reshape(this.out.apply(tf.reshape(h, [batch * steps, dModel]) as tf.Tensor2D), [
      batch,
      steps,
    ]) as tf.Tensor2D;
  }
}
