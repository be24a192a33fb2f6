// The XTTS-style acoustic model: text encoder + conditioning encoder + autoregressive mel decoder +
// postnet. Reads top to bottom: dimensions, the model (construction, teacher-forced forward pass,
// free-running generation), then weights in and out.
//
// Parameter counts (vocabSize 160, nMels 80, 1 language; `countParameters`, checked by
// test/unit/model-shapes.test.ts):
//
//   preset | d_model heads text/cond/dec layers latents prenet postnet | parameters
//   tiny   |   128     2     2 / 1 / 2            4      128   2x128   |   1,648,113
//   small  |   256     4     4 / 2 / 4            8      256   3x256   |  10,785,009
//   normal |   512     8     6 / 3 / 6           16      256   5x512   |  62,002,417
//   big    |  1024    16    12 / 4 / 12          32      512   5x512   | 422,761,713
//
// (ff_mult 4, postnet kernel 5, r 2, max_text_tokens 256 throughout; max_mel_frames 1024, big 2048.)
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/schema.js';
import { XttsError } from '../errors.js';
import type { BlockContext } from './attention.js';
import type { ModelInputs } from './batch.js';
import { Decoder, type MemoryKv, Postnet, type StepState } from './decoder.js';
import { ConditioningEncoder, TextEncoder } from './encoders.js';
import { hashString, mixSeed } from './init.js';
import { cachedConstant, causalBias, type ConvImpl, DropoutPool, keyPaddingBias, lengthMask, MASK_BIAS, scalar } from './nn.js';
import { ParamStore } from './params.js';

/** Sizes that come from the data rather than the model config. */
export interface ModelSizes {
  vocabSize: number;
  nMels: number;
  numLanguages: number;
}

export interface ModelOptions {
  /** Initialisation and dropout seed (training.seed). */
  seed?: number;
  /** Prenet dropout, on in training and inference alike (Tacotron 2 uses 0.5). */
  prenetDropout?: number;
  /** 1-D conv implementation; 'auto' uses the native conv kernels where the backend has their gradients. */
  convImpl?: ConvImpl;
}

export interface ForwardOptions {
  /** Dropout in the transformer blocks on (the prenet's is always on). */
  training: boolean;
  /** Also return the decoder's cross-attention to the text (for the guided attention loss). */
  attention?: boolean;
}

export interface ModelOutputs {
  /** [B, T_mel, nMels] decoder frames, before the postnet */
  melPre: tf.Tensor3D;
  /** [B, T_mel, nMels] after the residual postnet; null when postnet_layers is 0 */
  melPost: tf.Tensor3D | null;
  /** [B, T_mel / r] stop logit per decoder step */
  stopLogits: tf.Tensor2D;
  /** [B, T_mel, 1] 1 on real frames */
  frameMask: tf.Tensor3D;
  /** Per decoder layer [B, T_mel / r, T_text]: head-averaged cross-attention weights on the text keys. */
  textAttention: tf.Tensor3D[] | null;
}

export interface GenerateOptions {
  /** Most mel frames to produce (default: max_mel_frames). */
  maxFrames?: number;
  /** Stop when sigmoid(stop logit) exceeds this (default 0.5). */
  stopThreshold?: number;
  /** Read the stop logits back every this many steps (default 8): one device sync per check. */
  checkEvery?: number;
  /** Seed of the prenet dropout masks (default: derived from the model seed), so synthesis repeats. */
  seed?: number;
}

export interface GenerateResult {
  /** [frames, nMels] row-major, after the postnet (normalised log-mel). */
  mel: Float32Array;
  /** [frames, nMels] before the postnet. */
  melPre: Float32Array;
  frames: number;
  nMels: number;
  /** False when maxFrames ran out before the stop token fired. */
  stopped: boolean;
}

function checkDims(config: ModelConfig, sizes: ModelSizes): void {
  const bad = (field: string, message: string, suggestion: string) => {
    throw new XttsError('model_config_invalid', `model.${field}: ${message}`, { suggestions: [suggestion] });
  };
  if (config.d_model % config.heads !== 0) bad('heads', `${config.heads} heads do not divide d_model ${config.d_model}`, 'Choose heads that divide d_model (e.g. d_model / 64).');
  if (config.postnet_kernel % 2 !== 1) bad('postnet_kernel', `${config.postnet_kernel} is even; 'same' padding needs an odd width`, 'Use an odd kernel width such as 5.');
  for (const [k, v] of Object.entries(sizes)) if (!Number.isInteger(v) || v < 1) bad(k, `must be a positive integer, got ${v}`, 'Pass sizes taken from the prepared dataset.');
}

export class XttsModel {
  readonly store: ParamStore;
  readonly text: TextEncoder;
  readonly cond: ConditioningEncoder;
  readonly decoder: Decoder;
  readonly postnet: Postnet | null;
  /** Dropout masks of training; its `rngState` belongs in a checkpoint for a bit-identical resume. */
  readonly dropout: DropoutPool;
  readonly seed: number;
  readonly prenetDropout: number;
  readonly convImpl: ConvImpl;

  /** Builds the model; with `shapesOnly` it only records parameter names and shapes (see countParameters). */
  constructor(
    readonly config: ModelConfig,
    readonly sizes: ModelSizes,
    options: ModelOptions = {},
    shapesOnly = false,
  ) {
    checkDims(config, sizes);
    this.seed = options.seed ?? 1234;
    this.prenetDropout = options.prenetDropout ?? 0.5;
    this.convImpl = options.convImpl ?? 'auto';
    this.store = new ParamStore(shapesOnly ? null : this.seed);
    const d = { dModel: config.d_model, heads: config.heads, ffMult: config.ff_mult };
    this.text = new TextEncoder(this.store, d, config.text_layers, sizes.vocabSize, sizes.numLanguages, config.max_text_tokens);
    this.cond = new ConditioningEncoder(this.store, d, config.cond_layers, sizes.nMels, config.cond_latents);
    this.decoder = new Decoder(this.store, {
      ...d,
      layers: config.decoder_layers,
      prenetDim: config.prenet_dim,
      nMels: sizes.nMels,
      reductionFactor: config.reduction_factor,
      maxSteps: Math.ceil(config.max_mel_frames / config.reduction_factor),
    });
    this.postnet = config.postnet_layers > 0 ? new Postnet(this.store, config.postnet_layers, sizes.nMels, config.postnet_channels, config.postnet_kernel) : null;
    this.dropout = new DropoutPool(this.seed);
  }

  // -------------------------------------------------------------------------------------------
  // Encoding (shared by training and generation)

  /** Text and reference -> each decoder layer's memory keys/values and the memory's key bias. */
  private encode(inputs: Pick<ModelInputs, 'tokens' | 'textLengths' | 'languages' | 'refMel' | 'refLengths'>, c: Omit<BlockContext, 'batch' | 'steps'>) {
    const [batch, textSteps] = inputs.tokens.shape;
    const refFrames = inputs.refMel.shape[1];
    const { d_model: dModel, cond_latents: latents } = this.config;
    if (textSteps > this.config.max_text_tokens) {
      throw new XttsError('text_too_long_for_model', `${textSteps} text tokens exceed model.max_text_tokens ${this.config.max_text_tokens}`, {
        suggestions: ['Lower limits.max_text_chars or raise model.max_text_tokens (a new model).'],
      });
    }
    const textBias = keyPaddingBias(inputs.textLengths, textSteps);
    const refMask = lengthMask(inputs.refLengths, refFrames); // [B, T_ref]
    const refBias = tf.reshape(tf.mul(tf.sub(refMask, scalar(1)), scalar(-MASK_BIAS)), [batch, 1, 1, refFrames]) as tf.Tensor4D;

    const textOut = this.text.apply(inputs.tokens, inputs.languages, textBias, { ...c, batch, steps: textSteps });
    // Zero the padded reference frames so the input conv's window at the last real frames sees zeros.
    const ref = tf.mul(inputs.refMel, tf.reshape(refMask, [batch, refFrames, 1])) as tf.Tensor3D;
    const condOut = this.cond.apply(ref, refBias, { ...c, batch, steps: refFrames }, this.convImpl);

    const memorySteps = latents + textSteps;
    const memory = tf.reshape(tf.concat([tf.reshape(condOut, [batch, latents, dModel]), tf.reshape(textOut, [batch, textSteps, dModel])], 1), [batch * memorySteps, dModel]) as tf.Tensor2D;
    const latentBias = cachedConstant(`zeros:${batch},1,1,${latents}`, () => tf.zeros([batch, 1, 1, latents]));
    const crossBias = tf.concat([latentBias, textBias], 3) as tf.Tensor4D; // [B, 1, 1, L + T_text]
    return { kv: this.decoder.memoryKv(memory, batch, memorySteps), crossBias, latents, textSteps };
  }

  // -------------------------------------------------------------------------------------------
  // Teacher-forced forward pass

  forward(inputs: ModelInputs, opts: ForwardOptions): ModelOutputs {
    const [batch, frames, nMels] = inputs.mel.shape;
    const r = this.config.reduction_factor;
    const steps = frames / r;
    if (!Number.isInteger(steps)) throw new XttsError('batch_frames_not_multiple', `${frames} mel frames are not a multiple of reduction_factor ${r}`, { suggestions: ['Pad buckets to a multiple of model.reduction_factor.'] });
    if (steps > this.decoder.d.maxSteps) {
      throw new XttsError('mel_too_long_for_model', `${frames} mel frames exceed model.max_mel_frames ${this.config.max_mel_frames}`, { suggestions: ['Lower limits.max_audio_s or raise model.max_mel_frames (a new model).'] });
    }
    const base = { dropout: this.dropout, dropoutRate: opts.training ? this.config.dropout : 0 };
    const { kv, crossBias, latents, textSteps } = this.encode(inputs, base);

    // Teacher forcing: step s reads frame group s−1; a zero "go" group at s = 0.
    const frameDim = r * nMels;
    const grouped = tf.reshape(inputs.mel, [batch, steps, frameDim]);
    const prev = tf.reshape(tf.pad(tf.slice(grouped, [0, 0, 0], [batch, steps - 1, frameDim]), [[0, 0], [1, 0], [0, 0]]), [batch * steps, frameDim]) as tf.Tensor2D;
    const dec = this.decoder.apply(prev, kv, crossBias, causalBias(steps), { ...base, batch, steps }, this.prenetDropout, opts.attention === true);

    const melPre = tf.reshape(dec.frames, [batch, frames, nMels]) as tf.Tensor3D;
    const frameMask = tf.reshape(lengthMask(inputs.melLengths, frames), [batch, frames, 1]) as tf.Tensor3D;
    const melPost = this.refine(melPre, frameMask);
    const textAttention = opts.attention
      ? dec.weights.map((w) => tf.mean(tf.slice(w, [0, 0, 0, latents], [batch, this.config.heads, steps, textSteps]), 1) as tf.Tensor3D)
      : null;
    return { melPre, melPost, stopLogits: tf.reshape(dec.stop, [batch, steps]), frameMask, textAttention };
  }

  /**
   * The postnet pass: melPre [B, T, nMels], frameMask [B, T, 1] -> refined mel, or null without a
   * postnet. Padded frames are zeroed first: the convs would otherwise carry them into the last real
   * frames, and their (meaningless) predictions would receive gradient.
   */
  refine(melPre: tf.Tensor3D, frameMask: tf.Tensor3D): tf.Tensor3D | null {
    return this.postnet ? this.postnet.apply(tf.mul(melPre, frameMask) as tf.Tensor3D, this.convImpl) : null;
  }

  // -------------------------------------------------------------------------------------------
  // Free-running generation (eval WAVs, synthesis): one utterance, step by step, with a fixed-size
  // self-attention cache so every step runs the same kernels.

  async generate(textIds: ArrayLike<number>, language: number, refMel: Float32Array, opts: GenerateOptions = {}): Promise<GenerateResult> {
    const { nMels, vocabSize, numLanguages } = this.sizes;
    const r = this.config.reduction_factor;
    const maxFrames = opts.maxFrames ?? this.config.max_mel_frames;
    const stopThreshold = opts.stopThreshold ?? 0.5;
    const checkEvery = Math.max(1, Math.floor(opts.checkEvery ?? 8));
    const steps = Math.ceil(maxFrames / r);
    const refFrames = refMel.length / nMels;
    const fail = (code: string, message: string, suggestion: string) => {
      throw new XttsError(code, message, { suggestions: [suggestion] });
    };
    if (textIds.length < 1 || textIds.length > this.config.max_text_tokens) fail('generate_text_length', `text has ${textIds.length} tokens; the model takes 1..${this.config.max_text_tokens}`, 'Split long text into sentences.');
    for (let i = 0; i < textIds.length; i++) if (!(textIds[i] >= 0 && textIds[i] < vocabSize && Number.isInteger(textIds[i]))) fail('generate_token_invalid', `token ${textIds[i]} at ${i} is outside the vocabulary 0..${vocabSize - 1}`, 'Tokenize with the checkpoint\'s tokenizer.');
    if (!(Number.isInteger(language) && language >= 0 && language < numLanguages)) fail('generate_language_invalid', `language index ${language} is outside 0..${numLanguages - 1}`, 'Pass an index into text.languages.');
    if (!Number.isInteger(refFrames) || refFrames < 1) fail('generate_reference_invalid', `reference mel has ${refMel.length} values, not a positive multiple of ${nMels} mels`, 'Pass a [frames, nMels] log-mel of the reference clip.');
    if (steps < 1 || steps > this.decoder.d.maxSteps) fail('generate_max_frames', `maxFrames ${maxFrames} is outside 1..${this.config.max_mel_frames}`, 'Lower maxFrames.');

    const dropout = new DropoutPool(opts.seed ?? mixSeed(this.seed, hashString('generate')));
    const heads = this.config.heads;
    const headDim = this.config.d_model / heads;
    const stopLogit = Math.log(stopThreshold / (1 - stopThreshold));
    const [crossBias, ...kvFlat] = tf.tidy(() => {
      const inputs = {
        tokens: tf.tensor2d(Array.from(textIds), [1, textIds.length], 'int32'),
        textLengths: tf.tensor1d([textIds.length], 'int32'),
        languages: tf.tensor1d([language], 'int32'),
        refMel: tf.tensor3d(refMel, [1, refFrames, nMels]),
        refLengths: tf.tensor1d([refFrames], 'int32'),
      };
      const { kv, crossBias } = this.encode(inputs, { dropout, dropoutRate: 0 });
      return [crossBias, ...kv.flatMap((m) => [m.k, m.v])];
    });
    const kv: MemoryKv[] = this.decoder.blocks.map((_, l) => ({ k: kvFlat[2 * l] as tf.Tensor4D, v: kvFlat[2 * l + 1] as tf.Tensor4D }));
    const positions = tf.range(0, steps, 1, 'int32');
    let states: StepState[] = this.decoder.blocks.map(() => ({ cache: tf.zeros([1, 2 * heads, steps, headDim]) as tf.Tensor4D }));
    const frameGroups: tf.Tensor2D[] = [];
    const stops: tf.Tensor2D[] = [];
    let prev = tf.zeros([1, r * nMels]) as tf.Tensor2D;
    let stopStep = -1;
    let checked = 0;
    try {
      for (let s = 0; s < steps; s++) {
        const out = tf.tidy(() => {
          const at = tf.scalar(s, 'int32');
          const writeMask = tf.reshape(tf.cast(tf.equal(positions, at), 'float32'), [1, 1, steps, 1]) as tf.Tensor4D;
          const visible = tf.cast(tf.lessEqual(positions, at), 'float32');
          const stepBias = tf.reshape(tf.mul(tf.sub(visible, scalar(1)), scalar(-MASK_BIAS)), [1, 1, 1, steps]) as tf.Tensor4D;
          const o = this.decoder.step(prev, s, states, writeMask, stepBias, kv, crossBias, dropout, this.prenetDropout);
          return { frames: o.frames, stop: o.stop, caches: o.states.map((st) => st.cache) };
        });
        for (const st of states) st.cache.dispose();
        states = out.caches.map((cache) => ({ cache }));
        if (s === 0) prev.dispose();
        frameGroups.push(out.frames);
        stops.push(out.stop);
        prev = out.frames;
        if ((s + 1) % checkEvery === 0 || s === steps - 1) {
          const chunk = tf.concat(stops.slice(checked));
          const logits = await chunk.data();
          chunk.dispose();
          const hit = logits.findIndex((x) => x > stopLogit);
          if (hit >= 0) stopStep = checked + hit;
          checked = s + 1;
          if (stopStep >= 0) break;
        }
      }
      const used = stopStep >= 0 ? stopStep + 1 : frameGroups.length;
      const [pre, post] = tf.tidy(() => {
        const melPre = tf.reshape(tf.concat(frameGroups.slice(0, used)), [1, used * r, nMels]) as tf.Tensor3D;
        return [melPre, this.postnet ? this.postnet.apply(melPre, this.convImpl) : melPre];
      });
      const [preValues, postValues] = await Promise.all([pre.data(), post.data()]);
      pre.dispose();
      post.dispose();
      return { mel: postValues as Float32Array, melPre: preValues as Float32Array, frames: used * r, nMels, stopped: stopStep >= 0 };
    } finally {
      tf.dispose([...frameGroups, ...stops, ...states.map((st) => st.cache), positions, crossBias, ...kvFlat]);
      dropout.dispose();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Parameters and weights

  /** Trainable variables by stable name, in construction order (the optimizer's flat order). */
  trainableVariables(): Map<string, tf.Variable> {
    return this.store.variables;
  }

  /** The live weights by stable name (not copies: do not dispose them). */
  getWeights(): Map<string, tf.Tensor> {
    return new Map(this.store.variables);
  }

  /** Assign weights by name; every parameter must be present with its shape, and nothing else. */
  setWeights(weights: ReadonlyMap<string, tf.Tensor>): void {
    const problems: string[] = [];
    for (const [name, v] of this.store.variables) {
      const w = weights.get(name);
      if (!w) problems.push(`missing ${name}`);
      else if (w.shape.join(',') !== v.shape.join(',')) problems.push(`${name}: shape [${w.shape}] but the model has [${v.shape}]`);
    }
    for (const name of weights.keys()) if (!this.store.variables.has(name)) problems.push(`unexpected ${name}`);
    if (problems.length > 0) {
      throw new XttsError('weights_mismatch', `weights do not fit this model: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`, {
        suggestions: ['Load the checkpoint with the model config it was trained with.'],
      });
    }
    for (const [name, v] of this.store.variables) v.assign(tf.cast(weights.get(name)!, 'float32'));
  }

  parameterCount(): number {
    return this.store.count();
  }

  dispose(): void {
    for (const v of this.store.variables.values()) v.dispose();
    this.store.variables.clear();
    this.dropout.dispose();
  }
}

/** Parameters of a model config without allocating it. */
export function countParameters(config: ModelConfig, sizes: ModelSizes): number {
  return new XttsModel(config, sizes, {}, true).parameterCount();
}
