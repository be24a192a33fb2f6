// The XTTS-style acoustic model: a text encoder, a conditioning encoder that pools a reference clip
// of the voice into a few latents, an autoregressive mel decoder that attends to both, and a conv
// postnet. Reads top to bottom: dimensions, the model (construction, alignment, teacher-forced
// forward pass, free-running generation), then weights in and out.
//
// How the decoder knows what to say (align.ts): every text symbol has a learnt mean mel frame
// (`text.mel_head`); monotonic alignment search assigns each decoder step of a training utterance
// to one symbol by how well those means explain its frames (Glow-TTS's MAS, Kim et al. 2020); the
// means are trained towards the frames they are aligned with (the aligned text loss), and a
// duration predictor learns how many steps each symbol took (FastSpeech's, Ren et al. 2019). The
// decoder's alignment heads read exactly the aligned symbol at each step, and every output frame is
// the aligned symbol's mean plus the decoder's own part. Synthesis aligns by predicted durations,
// so the text is said once, in order, and ends where it ends (DurIAN, Yu et al. 2019, pairs an
// autoregressive decoder with durations the same way). Soft attention alone was measured not to
// do this: after 2,400 steps on 1,200 clips the decoder predicted the same frames for any text.
//
// Parameter counts (vocabSize 160, nMels 80, 1 language; `countParameters`, checked by
// test/unit/model-shapes.test.ts):
//
//   preset | d_model heads text/cond/dec layers latents prenet postnet | parameters
//   tiny   |   128     2     2 / 1 / 2            4      128   2x128   |   1,757,249
//   small  |   256     4     4 / 2 / 4            8      256   3x256   |  11,199,809
//   normal |   512     8     6 / 3 / 6           16      256   5x512   |  63,618,369
//   big    |  1024    16    12 / 4 / 12          32      512   5x512   | 429,139,265
//
// (ff_mult 4, postnet kernel 5, r 2, max_text_tokens 256 throughout; max_mel_frames 1024, big 2048.)
import * as tf from '@tensorflow/tfjs-core';
import type { CallReplayer } from '../backend/index.js';
import type { ModelConfig } from '../config/index.js';
import { XttsError } from '../errors.js';
import { type AlignmentSearch, FIRST_SYMBOL, searchBatch } from './align.js';
import type { BlockContext, MemoryKv } from './attention.js';
import type { BatchAlignment, ModelInputs } from './batch.js';
import { Decoder, Postnet } from './decoder.js';
import { DropoutPool } from './dropout.js';
import { ConditioningEncoder, DurationPredictor, TextEncoder } from './encoders.js';
import {
  asReference,
  latentInputs,
  checkGenerateInputs,
  decodeSteps,
  type GenerateItem,
  type Voice,
  type GenerateOptions,
  type GenerateResult,
  planSteps,
  readUtterances,
  referenceInputs,
  type StepInputs,
} from './generate.js';
import { hashString, mixSeed } from './init.js';
import {
  cachedConstant,
  causalBias,
  type ConvImpl,
  keyPaddingBias,
  lengthMask,
  Linear,
  MASK_BIAS,
  scalar,
  stopGradient,
} from './nn.js';
import { checkDims, type ModelSizes } from './dims.js';
import { ParamStore } from './params.js';
import { PitchContour, type PitchTargets } from './pitch-contour.js';
import { VoicePitch } from './voice-pitch.js';
import { atRate } from './voice-rate.js';
import { crossAttentionBias, fusedMasksAvailable } from '../backend/programs/index.js';

export interface ModelOptions {
  /** Initialisation and dropout seed (training.seed). */
  seed?: number;
  /** Prenet dropout, on in training and inference alike (default: model.prenet_dropout). */
  prenetDropout?: number;
  /** 1-D conv implementation; 'auto' uses the native conv kernels where the backend has their gradients. */
  convImpl?: ConvImpl;
}

export type { ModelSizes } from './dims.js';
export type { GenerateItem, GenerateOptions, GenerateResult, Voice } from './generate.js';

/** The voice: reference mels [B, T_ref, nMels] with lengths, or latents [B·L, D] from them; median log F0 [B]. */
type VoiceInput =
  | Pick<ModelInputs, 'refMel' | 'refLengths' | 'refPitch' | 'refRate'>
  | { voice: tf.Tensor2D; refPitch?: tf.Tensor1D; refRate?: tf.Tensor1D };

export interface ForwardOptions {
  /** Dropout in the transformer blocks on (the prenet's is always on). */
  training: boolean;
}

export interface ModelOutputs {
  /** [B, T_mel, nMels] decoder frames (the aligned symbols' means plus the decoder's part), before the postnet */
  melPre: tf.Tensor3D;
  /** [B, T_mel, nMels] after the residual postnet; null when postnet_layers is 0 */
  melPost: tf.Tensor3D | null;
  /** [B, T_mel, nMels] the aligned symbols' mean frames alone: what the text says without the decoder */
  textMel: tf.Tensor3D;
  /** [B, T_text] predicted log(1 + decoder steps) of every token */
  logDurations: tf.Tensor2D;
  /** [B, T_mel, 1] 1 on real frames */
  frameMask: tf.Tensor3D;
  /** model.pitch_contour: the predicted rise of every token [B, T_text] and what the target says. */
  pitch?: { predicted: tf.Tensor2D; targets: PitchTargets };
}

export class XttsModel {
  readonly store: ParamStore;
  readonly text: TextEncoder;
  /** Every text symbol's mean mel frame, from its encoding. */
  readonly textMel: Linear;
  /** model.speaker_offset: the voice's own log-mel offset, from its mean latent, added to every token's mean. */
  readonly voiceMel: Linear | null;
  readonly durations: DurationPredictor;
  /** model.speaker_rate: the voice's vector, from its mean latent, added to what the duration predictor reads. */
  readonly voiceRate: Linear | null;
  /** model.speaker_pitch: the reference's pitch as a vector on every conditioning latent. */
  readonly voicePitch: VoicePitch | null;
  /** model.pitch_contour: every token's pitch in the decoder's memory, and its predictor. */
  readonly pitchContour: PitchContour | null;
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
    this.prenetDropout = options.prenetDropout ?? config.prenet_dropout;
    this.convImpl = options.convImpl ?? 'auto';
    this.store = new ParamStore(shapesOnly ? null : this.seed);
    const d = { dModel: config.d_model, heads: config.heads, ffMult: config.ff_mult };
    this.text = new TextEncoder(
      this.store,
      d,
      config.text_layers,
      sizes.vocabSize,
      sizes.numLanguages,
      config.max_text_tokens,
    );
    this.textMel = new Linear(this.store, 'text.mel_head', config.d_model, sizes.nMels);
    this.voiceMel = config.speaker_offset
      ? new Linear(this.store, 'cond.mel_offset', config.d_model, sizes.nMels)
      : null;
    this.durations = new DurationPredictor(this.store, config.d_model);
    this.voiceRate = config.speaker_rate ? new Linear(this.store, 'dur.voice', config.d_model, config.d_model) : null;
    this.cond = new ConditioningEncoder(this.store, d, config.cond_layers, sizes.nMels, config.cond_latents);
    this.voicePitch = config.speaker_pitch ? new VoicePitch(this.store, config.d_model) : null;
    this.pitchContour = config.pitch_contour ? new PitchContour(this.store, config.d_model) : null;
    this.decoder = new Decoder(this.store, {
      ...d,
      layers: config.decoder_layers,
      prenetDim: config.prenet_dim,
      nMels: sizes.nMels,
      reductionFactor: config.reduction_factor,
      maxSteps: Math.ceil(config.max_mel_frames / config.reduction_factor),
    });
    this.postnet =
      config.postnet_layers > 0
        ? new Postnet(this.store, config.postnet_layers, sizes.nMels, config.postnet_channels, config.postnet_kernel)
        : null;
    this.dropout = new DropoutPool(this.seed);
  }

  // -------------------------------------------------------------------------------------------
  // Encoding (shared by alignment, training and generation)

  private checkText(textSteps: number): void {
    if (textSteps > this.config.max_text_tokens) {
      throw new XttsError(
        'TEXT_TOO_LONG_FOR_MODEL',
        `${textSteps} text tokens exceed model.max_text_tokens ${this.config.max_text_tokens}`,
        {
          suggestions: ['Lower limits.max_text_chars or raise model.max_text_tokens (a new model).'],
        },
      );
    }
  }

  /**
   * Text and reference -> each decoder layer's memory keys/values, the text encodings [B, T_text, D] and the text's key
   * bias. `decoding`: the keys and values as [B, H, M, dh] tensors, for free-running decoding. `tokenPitch`
   * (model.pitch_contour): each token's log F0 [B, T_text] in training; synthesis predicts it.
   */
  private encode(
    inputs: Pick<ModelInputs, 'tokens' | 'textLengths' | 'languages'> & VoiceInput,
    c: Omit<BlockContext, 'batch' | 'steps'>,
    decoding = false,
    tokenPitch?: tf.Tensor2D,
  ) {
    const [batch, textSteps] = inputs.tokens.shape;
    const { d_model: dModel, cond_latents: latents } = this.config;
    this.checkText(textSteps);
    const textBias = keyPaddingBias(inputs.textLengths, textSteps);
    const textOut = this.text.apply(inputs.tokens, inputs.languages, textBias, { ...c, batch, steps: textSteps });
    const condOut =
      'voice' in inputs ? inputs.voice : this.condition(inputs.refMel, inputs.refLengths, c, inputs.refPitch);

    const memorySteps = latents + textSteps;
    const text = tf.reshape(textOut, [batch, textSteps, dModel]) as tf.Tensor3D;
    const read = this.pitchContour?.memory(text, tokenPitch, inputs, c, this.convImpl) ?? text;
    const memory = tf.reshape(tf.concat([tf.reshape(condOut, [batch, latents, dModel]), read], 1), [
      batch * memorySteps,
      dModel,
    ]) as tf.Tensor2D;
    const kv = this.decoder.memoryKv(memory, batch, memorySteps, decoding);
    const pooled =
      this.voiceMel || this.voiceRate
        ? (tf.mean(tf.reshape(condOut, [batch, latents, dModel]), 1) as tf.Tensor2D)
        : null;
    // model.speaker_offset: the mean latent as a log-mel offset [B, 1, nMels]; model.speaker_rate: as a vector [B, D].
    const voiceOffset =
      this.voiceMel && pooled
        ? (tf.reshape(this.voiceMel.apply(pooled), [batch, 1, this.sizes.nMels]) as tf.Tensor3D)
        : null;
    const voiceRate = this.voiceRate && pooled ? this.voiceRate.apply(pooled) : null;
    return { kv, text, textBias, latents, textSteps, voiceOffset, voiceRate };
  }

  /** Log durations [B, T_text] of the text encodings, at the voice's pace (speaker_rate) and rate (reference_rate). */
  private logDurations(
    text: tf.Tensor3D,
    voiceRate: tf.Tensor2D | null,
    inputs: { textLengths: tf.Tensor1D; refRate?: tf.Tensor1D },
    c: Omit<BlockContext, 'batch' | 'steps'>,
  ): tf.Tensor2D {
    const [batch, , dModel] = text.shape;
    const input = voiceRate ? (tf.add(text, tf.reshape(voiceRate, [batch, 1, dModel])) as tf.Tensor3D) : text;
    const logDurations = this.durations.apply(input, inputs.textLengths, c, this.convImpl);
    return this.config.reference_rate && inputs.refRate ? atRate(logDurations, inputs.refRate) : logDurations;
  }

  /** Every token's mean mel frame [B, T_text, nMels], in the voice where the model has a voice offset. */
  private voicedMeans(text: tf.Tensor3D, offset: tf.Tensor3D | null): tf.Tensor3D {
    const means = this.means(text);
    return offset ? (tf.add(means, offset) as tf.Tensor3D) : means;
  }

  /**
   * Reference mels [B, T_ref, nMels] (lengths [B]; median log F0 [B], 0 where unknown, read by model.speaker_pitch)
   * -> the voice latents [B·L, D] the decoder reads.
   */
  condition(
    refMel: tf.Tensor3D,
    refLengths: tf.Tensor1D,
    c: Omit<BlockContext, 'batch' | 'steps'>,
    refPitch?: tf.Tensor1D,
  ): tf.Tensor2D {
    const [batch, refFrames] = refMel.shape;
    const refMask = lengthMask(refLengths, refFrames); // [B, T_ref]
    const refBias = keyPaddingBias(refLengths, refFrames, refMask);
    // Zero the padded reference frames so the input conv's window at the last real frames sees zeros.
    const ref = tf.mul(refMel, tf.reshape(refMask, [batch, refFrames, 1])) as tf.Tensor3D;
    const latents = this.cond.apply(ref, refBias, { ...c, batch, steps: refFrames }, this.convImpl);
    return this.voicePitch ? this.voicePitch.apply(latents, refPitch ?? tf.zeros([batch])) : latents;
  }

  /** Text encodings [B, T_text, D] -> every token's mean mel frame [B, T_text, nMels]. */
  private means(text: tf.Tensor3D): tf.Tensor3D {
    const [batch, textSteps, dModel] = text.shape;
    return tf.reshape(this.textMel.apply(tf.reshape(text, [batch * textSteps, dModel])), [
      batch,
      textSteps,
      this.sizes.nMels,
    ]) as tf.Tensor3D;
  }

  /**
   * The decoder's cross-attention bias [B, H, S, L + T_text] for an alignment [B, S] (token position
   * per step). The alignment heads (the first `alignment_heads`) may read only the aligned token;
   * the others read the voice latents and the whole text (no padding).
   */
  private crossBias(alignment: tf.Tensor2D, textBias: tf.Tensor4D, latents: number): tf.Tensor4D {
    const [batch, steps] = alignment.shape;
    const textSteps = textBias.shape[3];
    const { heads, alignment_heads: alignHeads } = this.config;
    // webgpu: one program (backend/programs/masks.ts), the same values.
    if (fusedMasksAvailable() && alignment.dtype === 'int32')
      return crossAttentionBias(alignment, textBias, heads, alignHeads, latents, MASK_BIAS);
    const memorySteps = latents + textSteps;
    // [B, S, M] int32
    const aligned = tf.oneHot(tf.add(alignment, tf.scalar(latents, 'int32')) as tf.Tensor2D, memorySteps);
    const alignBias = tf.reshape(tf.mul(tf.sub(tf.cast(aligned, 'float32'), scalar(1)), scalar(-MASK_BIAS)), [
      batch,
      1,
      steps,
      memorySteps,
    ]);
    const parts = [alignHeads === 1 ? alignBias : tf.tile(alignBias, [1, alignHeads, 1, 1])];
    if (heads > alignHeads) {
      const free = tf.concat(
        [cachedConstant(`zeros:${batch},1,1,${latents}`, () => tf.zeros([batch, 1, 1, latents])), textBias],
        3,
      ); // [B, 1, 1, M]
      parts.push(
        tf.add(
          free,
          cachedConstant(`zeros:1,${heads - alignHeads},${steps},1`, () => tf.zeros([1, heads - alignHeads, steps, 1])),
        ),
      );
    }
    return (parts.length === 1 ? parts[0] : tf.concat(parts, 1)) as tf.Tensor4D;
  }

  /**
   * [B, S] token positions, [B, T_text, nMels] means -> the aligned means [B, S·r, nMels] (each step's r
   * frames alike).
   */
  private alignedMeans(alignment: tf.Tensor2D, means: tf.Tensor3D): tf.Tensor3D {
    const [batch, steps] = alignment.shape;
    const [, textSteps, nMels] = means.shape;
    const r = this.config.reduction_factor;
    const perStep = tf.matMul(tf.cast(tf.oneHot(alignment, textSteps), 'float32'), means); // [B, S, nMels]
    return tf.reshape(tf.tile(tf.reshape(perStep, [batch, steps, 1, nMels]), [1, 1, r, 1]), [
      batch,
      steps * r,
      nMels,
    ]) as tf.Tensor3D;
  }

  // -------------------------------------------------------------------------------------------
  // Alignment of a training batch (monotonic alignment search, align.ts)

  /**
   * Which token each decoder step of each utterance says: the symbols' current means scored against
   * the target frames (no dropout), then the best monotonic path on the host (align.ts; priorSigma:
   * its diagonal prior, 0 for none). One readback. textLengths and melLengths: the batch's, on the host.
   * run.replayer replays the scores' programs (step capture); run.search searches elsewhere (a worker
   * thread: align-worker.ts) instead of on this thread.
   */
  async align(
    inputs: Pick<ModelInputs, 'tokens' | 'textLengths' | 'languages' | 'mel'>,
    textLengths: ArrayLike<number>,
    melLengths: ArrayLike<number>,
    priorSigma = 0,
    run: {
      replayer?: Pick<CallReplayer, 'run'>;
      search?: (task: AlignmentSearch) => Promise<{ path: Int32Array; durations: Float32Array }>;
    } = {},
  ): Promise<BatchAlignment> {
    const [batch, frames, nMels] = inputs.mel.shape;
    const textSteps = inputs.tokens.shape[1];
    const r = this.config.reduction_factor;
    const steps = frames / r;
    this.checkText(textSteps);
    const forward = () =>
      tf.tidy(() => {
        const textBias = keyPaddingBias(inputs.textLengths, textSteps);
        const text = this.text.apply(inputs.tokens, inputs.languages, textBias, {
          dropout: this.dropout,
          dropoutRate: 0,
          batch,
          steps: textSteps,
        });
        const means = this.means(tf.reshape(text, [batch, textSteps, this.config.d_model]) as tf.Tensor3D);
        // Unit-variance Gaussian log-likelihood per mel value, up to terms equal for every path:
        // Σ_frames (x·μ − |μ|²/2) / (r·nMels), so that the diagonal prior's units do not depend on r or nMels.
        const stepSums = tf.sum(tf.reshape(inputs.mel, [batch, steps, r, nMels]), 2); // [B, S, nMels]
        const cross = tf.matMul(stepSums, means, false, true); // [B, S, T_text]
        const norms = tf.reshape(tf.sum(tf.square(means), 2), [batch, 1, textSteps]);
        return tf.mul(tf.sub(cross, tf.mul(norms, scalar(r / 2))), scalar(1 / (r * nMels)));
      });
    // The same programs for every batch of a shape: a replayer records them once and replays them.
    const { tokens, textLengths: lengths, languages, mel } = inputs;
    const scores = run.replayer
      ? run.replayer.run(`${batch}×${textSteps}×${frames}`, [tokens, lengths, languages, mel], () => [forward()])[0]
      : forward();
    const values = (await scores.data()) as Float32Array;
    scores.dispose();
    const task: AlignmentSearch = {
      scores: values,
      batch,
      steps,
      textSteps,
      textLengths: Array.from(textLengths),
      melLengths: Array.from(melLengths),
      r,
      priorSigma,
    };
    const { path, durations } = run.search ? await run.search(task) : searchBatch(task);
    let spokenTokens = 0;
    for (const d of durations) if (d > 0) spokenTokens++;
    return {
      steps: tf.tensor2d(path, [batch, steps], 'int32'),
      durations: tf.tensor2d(durations, [batch, textSteps], 'float32'),
      spokenTokens,
    };
  }

  // -------------------------------------------------------------------------------------------
  // Teacher-forced forward pass

  forward(inputs: ModelInputs, opts: ForwardOptions): ModelOutputs {
    const [batch, frames, nMels] = inputs.mel.shape;
    const r = this.config.reduction_factor;
    const steps = frames / r;
    if (!Number.isInteger(steps))
      throw new XttsError(
        'BATCH_FRAMES_NOT_MULTIPLE',
        `${frames} mel frames are not a multiple of reduction_factor ${r}`,
        { suggestions: ['Pad buckets to a multiple of model.reduction_factor.'] },
      );
    if (steps > this.decoder.d.maxSteps) {
      throw new XttsError(
        'MEL_TOO_LONG_FOR_MODEL',
        `${frames} mel frames exceed model.max_mel_frames ${this.config.max_mel_frames}`,
        { suggestions: ['Lower limits.max_audio_s or raise model.max_mel_frames (a new model).'] },
      );
    }
    const base = { dropout: this.dropout, dropoutRate: opts.training ? this.config.dropout : 0 };
    const targets = this.pitchContour ? PitchContour.targetsOf(inputs, r) : undefined;
    const { kv, text, textBias, latents, voiceOffset, voiceRate } = this.encode(inputs, base, false, targets?.logF0);
    const means = this.voicedMeans(text, voiceOffset);
    const textMel = this.alignedMeans(inputs.alignment.steps, means);

    // Teacher forcing: step s reads frame group s−1; a zero "go" group at s = 0.
    const frameDim = r * nMels;
    const grouped = tf.reshape(inputs.mel, [batch, steps, frameDim]);
    const prev = tf.reshape(
      tf.pad(tf.slice(grouped, [0, 0, 0], [batch, steps - 1, frameDim]), [
        [0, 0],
        [1, 0],
        [0, 0],
      ]),
      [batch * steps, frameDim],
    ) as tf.Tensor2D;
    const own = this.decoder.apply(
      prev,
      kv,
      this.crossBias(inputs.alignment.steps, textBias, latents),
      causalBias(steps),
      { ...base, batch, steps },
      this.prenetDropout,
    );

    const melPre = tf.add(tf.reshape(own, [batch, frames, nMels]), textMel) as tf.Tensor3D;
    const frameMask = tf.reshape(lengthMask(inputs.melLengths, frames), [batch, frames, 1]) as tf.Tensor3D;
    const melPost = this.refine(melPre, frameMask);
    // The duration predictor reads the text encodings without changing them (Glow-TTS §3.3); its loss does train
    // the voice's pace (model.speaker_rate), through the conditioning encoder.
    const logDurations = this.logDurations(stopGradient(text) as tf.Tensor3D, voiceRate, inputs, base);
    // The pitch predictor reads them the same way.
    const pitch = targets && {
      predicted: this.pitchContour!.predict(stopGradient(text) as tf.Tensor3D, inputs.textLengths, base, this.convImpl),
      targets,
    };
    return { melPre, melPost, textMel, logDurations, frameMask, ...(pitch ? { pitch } : {}) };
  }

  /**
   * The postnet pass: melPre [B, T, nMels], frameMask [B, T, 1] -> refined mel, or null without a
   * postnet. Padded frames are zeroed first and after every layer: the convs would otherwise carry them into
   * the last real frames, and their (meaningless) predictions would receive gradient.
   */
  refine(melPre: tf.Tensor3D, frameMask: tf.Tensor3D): tf.Tensor3D | null {
    return this.postnet ? this.postnet.apply(tf.mul(melPre, frameMask) as tf.Tensor3D, frameMask, this.convImpl) : null;
  }

  // -------------------------------------------------------------------------------------------
  // Free-running generation (eval WAVs, synthesis): a batch of utterances decoded step by step with
  // a fixed-size self-attention cache, so every step runs the same kernels. The predicted durations
  // (one readback) lay out which symbol each step says; the decoder then runs that many steps, its
  // alignment heads on the scheduled symbol, each frame the symbol's mean plus the decoder's part.
  // The model encodes; generate.ts checks the inputs, plans the steps, decodes and reads back.

  async generate(
    textIds: ArrayLike<number>,
    language: number,
    voice: Voice,
    opts: GenerateOptions = {},
  ): Promise<GenerateResult> {
    return (await this.generateBatch([{ ids: textIds, language }], voice, opts))[0];
  }

  async generateBatch(
    items: readonly GenerateItem[],
    voice: Voice,
    opts: GenerateOptions = {},
  ): Promise<GenerateResult[]> {
    const maxFrames = opts.maxFrames ?? this.config.max_mel_frames;
    checkGenerateInputs(this, items, voice, maxFrames);
    const { nMels } = this.sizes;
    const r = this.config.reduction_factor;
    const batch = items.length;
    const textLengths = items.map((i) => i.ids.length);
    const dropout = new DropoutPool(opts.seed ?? mixSeed(this.seed, hashString('generate')));
    // Each utterance's prenet masks from its own text: the same text speaks the same in any batch.
    dropout.perRow(items.map((i) => hashString(`${i.language}:${Array.from(i.ids).join(',')}`)));
    const encoded = this.encodeForGeneration(items, voice, dropout);
    const tensors: tf.Tensor[] = encoded.tensors; // and what the steps below add: all disposed at the end
    try {
      // The plan: which token each step says, per utterance, from the predicted durations.
      const logDurations = (await encoded.logDurations.data()) as Float32Array;
      const plan = planSteps(logDurations, textLengths, Math.ceil(maxFrames / r), opts.logDurationVariance ?? 0);
      const schedule = tf.tensor2d(plan.tokens, [batch, plan.steps], 'int32');
      tensors.push(schedule);
      const perStep: StepInputs = tf.tidy(() => ({
        bias: tf
          .unstack(this.crossBias(schedule, encoded.textBias, this.config.cond_latents), 2)
          .map((b) => tf.expandDims(b, 2) as tf.Tensor4D), // steps × [B, H, 1, M]
        means: tf.unstack(
          tf.reshape(this.alignedMeans(schedule, encoded.means), [batch, plan.steps, r * nMels]),
          1,
        ) as tf.Tensor2D[], // steps × [B, r·nMels]
      }));
      tensors.push(...perStep.bias, ...perStep.means);
      const melPre = decodeSteps(this, encoded.kv, perStep, plan, dropout);
      tensors.push(melPre);
      return await readUtterances(this, melPre, plan, textLengths, maxFrames);
    } finally {
      tf.dispose(tensors);
      dropout.dispose();
    }
  }

  /**
   * Generation's encoding of texts that all take one voice (a reference clip or latents): each decoder
   * layer's memory keys and values, the text's key bias, every token's mean frame and its predicted
   * log duration, and `tensors`, all of them (the caller disposes them).
   */
  private encodeForGeneration(items: readonly GenerateItem[], voice: Voice, dropout: DropoutPool) {
    const { nMels } = this.sizes;
    const { cond_latents: latents, d_model: dModel } = this.config;
    const batch = items.length;
    const textSteps = Math.max(...items.map((i) => i.ids.length));
    const tokens = new Int32Array(batch * textSteps);
    items.forEach((item, b) => tokens.set(Array.from(item.ids), b * textSteps));
    const encoded = tf.tidy(() => {
      const inputs = {
        tokens: tf.tensor2d(tokens, [batch, textSteps], 'int32'),
        textLengths: tf.tensor1d(
          items.map((i) => i.ids.length),
          'int32',
        ),
        languages: tf.tensor1d(
          items.map((i) => i.language),
          'int32',
        ),
        ...('latents' in voice
          ? latentInputs(voice, batch, latents, dModel)
          : referenceInputs(asReference(voice), batch, nMels)),
      };
      const { kv, text, textBias, voiceOffset, voiceRate } = this.encode(inputs, { dropout, dropoutRate: 0 }, true);
      return {
        kv: kv.flatMap((m) => [m.k as tf.Tensor4D, m.v as tf.Tensor4D]),
        textBias,
        means: this.voicedMeans(text, voiceOffset),
        logDurations: this.logDurations(text, voiceRate, inputs, { dropout, dropoutRate: 0 }),
      };
    });
    const kv: MemoryKv[] = this.decoder.blocks.map((_, l) => ({
      k: encoded.kv[2 * l] as tf.Tensor4D,
      v: encoded.kv[2 * l + 1] as tf.Tensor4D,
    }));
    return { ...encoded, kv, tensors: [...encoded.kv, encoded.textBias, encoded.means, encoded.logDurations] };
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
    this.store.assignWeights(weights);
  }

  parameterCount(): number {
    return this.store.count();
  }

  dispose(): void {
    this.store.dispose();
    this.dropout.dispose();
  }
}

/** Parameters of a model config without allocating it. */
export function countParameters(config: ModelConfig, sizes: ModelSizes): number {
  return new XttsModel(config, sizes, {}, true).parameterCount();
}
