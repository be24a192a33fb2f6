// Free-running generation (eval WAVs, synthesis), the steps of XttsModel.generateBatch after its
// encoding: the inputs checked, the predicted durations laid out as a plan of which symbol each
// decoder step says, the decoder run that many steps with a fixed-size self-attention cache (static
// shapes: every step runs the same kernels), and each utterance read back up to its own last frame.
import * as tf from '@tensorflow/tfjs-core';
import { type ErrorCode, XttsError } from '../errors.js';
import { scheduleFromDurations } from './align.js';
import type { MemoryKv } from './attention.js';
import type { StepState } from './decoder.js';
import { DropoutPool } from './dropout.js';
import { hashString, mixSeed } from './init.js';
import type { XttsModel } from './model.js';
import { lengthMask, MASK_BIAS, scalar } from './nn.js';

export interface GenerateItem {
  /** Token ids, as Tokenizer.encode gives them ([<bos>, [lang], …, <eos>]). */
  ids: ArrayLike<number>;
  /** Index into text.languages. */
  language: number;
}

export interface GenerateOptions {
  /** Most mel frames per utterance (default: max_mel_frames); a longer predicted reading is cut. */
  maxFrames?: number;
  /** Seed of the prenet dropout masks (default: derived from the model seed), so synthesis repeats. */
  seed?: number;
  /** Variance of the duration predictor's log errors (checkpoint state): durations are read as log-normal means. */
  logDurationVariance?: number;
}

export interface GenerateResult {
  /** [frames, nMels] row-major, after the postnet (normalised log-mel). */
  mel: Float32Array;
  /** [frames, nMels] before the postnet. */
  melPre: Float32Array;
  frames: number;
  nMels: number;
  /** 'end_of_text' when the whole predicted reading was decoded; 'max_frames' when maxFrames cut it. */
  stopReason: 'end_of_text' | 'max_frames';
  /** [⌈frames / r⌉, textTokens] row-major: 1 where a decoder step reads a token (the predicted alignment). */
  alignment: Float32Array;
  textTokens: number;
}

/**
 * A reference window: a clip's normalised log-mel ([frames, nMels] row-major) and the median log F0 of the clips it
 * was read from (data/audio/pitch.ts referenceLogF0), which a model with model.speaker_pitch reads; 0: unknown; and
 * their log speaking rate (data/audio/rate.ts referenceLogRate), which a model with model.reference_rate reads (0 or
 * none: unknown).
 */
export interface ReferenceMel {
  mel: Float32Array;
  logF0: number;
  logRate?: number;
}

/**
 * Whose voice generation speaks in: a reference window (a bare log-mel: its pitch unknown), or `latents` the model
 * computed from windows before (voiceLatents: [cond_latents, d_model]) with the windows' median log F0, which a model
 * with model.pitch_contour speaks at (0 or none: unknown).
 */
export type Voice = Float32Array | ReferenceMel | LatentVoice;
export interface LatentVoice {
  latents: Float32Array;
  logF0?: number;
  /** The windows' log speaking rate, which a model with model.reference_rate speaks at (0 or none: unknown). */
  logRate?: number;
}

/** One reference window as the model's reference inputs for `batch` texts that all take it. */
export function referenceInputs(ref: ReferenceMel, batch: number, nMels: number) {
  const frames = ref.mel.length / nMels;
  return {
    refMel: tf.tile(tf.tensor3d(ref.mel, [1, frames, nMels]), [batch, 1, 1]) as tf.Tensor3D,
    refLengths: tf.tensor1d(new Array<number>(batch).fill(frames), 'int32'),
    refPitch: tf.fill([batch], ref.logF0) as tf.Tensor1D,
    refRate: tf.fill([batch], ref.logRate ?? 0) as tf.Tensor1D,
  };
}

/** Latents [L, D] and their pitch as the model's voice inputs for `batch` texts that all take them. */
export function latentInputs(voice: LatentVoice, batch: number, latents: number, dModel: number) {
  return {
    voice: tf.tile(tf.tensor2d(voice.latents, [latents, dModel]), [batch, 1]) as tf.Tensor2D,
    refPitch: tf.fill([batch], voice.logF0 ?? 0) as tf.Tensor1D,
    refRate: tf.fill([batch], voice.logRate ?? 0) as tf.Tensor1D,
  };
}

/** A reference given as a bare log-mel or with its pitch, as a ReferenceMel. */
export function asReference(ref: Float32Array | ReferenceMel): ReferenceMel {
  return ref instanceof Float32Array ? { mel: ref, logF0: 0 } : ref;
}

/** Throws GENERATE_REFERENCE_INVALID unless `refMel` is a [frames ≥ 1, nMels] log-mel. */
export function checkReference(refMel: Float32Array, nMels: number): void {
  const refFrames = refMel.length / nMels;
  if (!Number.isInteger(refFrames) || refFrames < 1)
    throw new XttsError(
      'GENERATE_REFERENCE_INVALID',
      `reference mel has ${refMel.length} values, not a positive multiple of ${nMels} mels`,
      { suggestions: ['Pass a [frames, nMels] log-mel of the reference clip.'] },
    );
}

/**
 * A voice from one or more reference clips (normalised log-mels, [frames, nMels] row-major each):
 * the conditioning latents [L, D] of every clip, averaged. Each latent answers the same learned
 * query, so the mean of clip latents is a latent of the voice that several clips agree on.
 */
export async function voiceLatents(
  model: XttsModel,
  windows: readonly (Float32Array | ReferenceMel)[],
  batchSize = 32,
) {
  const { nMels } = model.sizes;
  const { d_model: dModel, cond_latents: latents } = model.config;
  if (windows.length === 0) throw new XttsError('GENERATE_REFERENCE_INVALID', 'a voice needs at least one clip');
  const refs = windows.map(asReference);
  for (const r of refs) checkReference(r.mel, nMels);
  const sum = new Float64Array(latents * dModel);
  const dropout = new DropoutPool(mixSeed(model.seed, hashString('voice')));
  try {
    for (let at = 0; at < refs.length; at += batchSize) {
      const clips = refs.slice(at, at + batchSize);
      const frames = Math.max(...clips.map((r) => r.mel.length / nMels));
      const padded = new Float32Array(clips.length * frames * nMels);
      clips.forEach((r, b) => padded.set(r.mel, b * frames * nMels));
      const out = tf.tidy(() =>
        model.condition(
          tf.tensor3d(padded, [clips.length, frames, nMels]),
          tf.tensor1d(
            clips.map((r) => r.mel.length / nMels),
            'int32',
          ),
          { dropout, dropoutRate: 0 },
          tf.tensor1d(clips.map((r) => r.logF0)),
        ),
      );
      const values = (await out.data()) as Float32Array;
      out.dispose();
      for (let i = 0; i < values.length; i++) sum[i % sum.length] += values[i];
    }
  } finally {
    dropout.dispose();
  }
  return Float32Array.from(sum, (v) => v / refs.length);
}

/** Throws the GENERATE_* error of the first input generateBatch cannot take. */
export function checkGenerateInputs(
  model: XttsModel,
  items: readonly GenerateItem[],
  voice: Voice,
  maxFrames: number,
): void {
  const { nMels, vocabSize, numLanguages } = model.sizes;
  const fail = (code: ErrorCode, message: string, suggestion: string) => {
    throw new XttsError(code, message, { suggestions: [suggestion] });
  };
  if (items.length < 1) fail('GENERATE_NO_ITEMS', 'nothing to generate', 'Pass at least one text.');
  for (const [n, item] of items.entries()) {
    const ids = item.ids;
    const which = items.length > 1 ? `text ${n + 1}: ` : '';
    if (ids.length < 1 || ids.length > model.config.max_text_tokens)
      fail(
        'GENERATE_TEXT_LENGTH',
        `${which}text has ${ids.length} tokens; the model takes 1..${model.config.max_text_tokens}`,
        'Split long text into sentences.',
      );
    for (let i = 0; i < ids.length; i++)
      if (!(ids[i] >= 0 && ids[i] < vocabSize && Number.isInteger(ids[i])))
        fail(
          'GENERATE_TOKEN_INVALID',
          `${which}token ${ids[i]} at ${i} is outside the vocabulary 0..${vocabSize - 1}`,
          "Tokenize with the checkpoint's tokenizer.",
        );
    if (!(Number.isInteger(item.language) && item.language >= 0 && item.language < numLanguages))
      fail(
        'GENERATE_LANGUAGE_INVALID',
        `${which}language index ${item.language} is outside 0..${numLanguages - 1}`,
        'Pass an index into text.languages.',
      );
  }
  if (!('latents' in voice)) checkReference(asReference(voice).mel, nMels);
  else {
    const { cond_latents: latents, d_model: dModel } = model.config;
    if (voice.latents.length !== latents * dModel || !voice.latents.every(Number.isFinite))
      fail(
        'GENERATE_REFERENCE_INVALID',
        `voice latents have ${voice.latents.length} values; this model takes ${latents}×${dModel} finite ones`,
        'Compute the voice with this checkpoint (xtts voices --out), or pass --reference clips.',
      );
  }
  const stepBudget = Math.ceil(maxFrames / model.config.reduction_factor);
  if (maxFrames < 1 || stepBudget > model.decoder.d.maxSteps)
    fail(
      'GENERATE_MAX_FRAMES',
      `maxFrames ${maxFrames} is outside 1..${model.config.max_mel_frames}`,
      'Lower maxFrames.',
    );
}

/** Which token each decoder step says, per utterance: the batch decodes `steps` steps in all. */
export interface StepPlan {
  /** Per utterance: the token position of each of its own steps, and whether the step budget cut its reading. */
  schedules: { plan: Int32Array; cut: boolean }[];
  /** The longest utterance's steps. */
  steps: number;
  /** [B, steps] row-major: every utterance's plan, finished ones idling on their last symbol. */
  tokens: Int32Array;
}

/**
 * The plan from the predicted durations: logDurations [B, T_text] row-major (T_text the longest
 * text), at most `stepBudget` steps an utterance (align.ts scheduleFromDurations).
 */
export function planSteps(
  logDurations: Float32Array,
  textLengths: readonly number[],
  stepBudget: number,
  logDurationVariance: number,
): StepPlan {
  const textSteps = Math.max(...textLengths);
  const schedules = textLengths.map((length, b) =>
    scheduleFromDurations(
      logDurations.subarray(b * textSteps, (b + 1) * textSteps),
      length,
      stepBudget,
      logDurationVariance,
    ),
  );
  const plans = schedules.map((x) => x.plan);
  const steps = Math.max(...plans.map((p) => p.length));
  const tokens = new Int32Array(textLengths.length * steps);
  plans.forEach((p, b) => {
    tokens.set(p, b * steps);
    // finished utterances idle on their last symbol
    tokens.fill(p[p.length - 1], b * steps + p.length, (b + 1) * steps);
  });
  return { schedules, steps, tokens };
}

/** Each decoder step's inputs from the plan: steps × [B, H, 1, M] cross-attention bias and [B, r·nMels] means. */
export interface StepInputs {
  bias: tf.Tensor4D[];
  means: tf.Tensor2D[];
}

/**
 * Step s of a self-attention cache of `steps` rows: writeMask [1, 1, steps, 1], one-hot at s (where
 * the step's keys and values go), and stepBias [1, 1, 1, steps], which masks the steps after s.
 */
function stepMasks(positions: tf.Tensor1D, s: number, steps: number) {
  const at = tf.scalar(s, 'int32');
  const writeMask = tf.reshape(tf.cast(tf.equal(positions, at), 'float32'), [1, 1, steps, 1]) as tf.Tensor4D;
  const visible = tf.cast(tf.lessEqual(positions, at), 'float32');
  const stepBias = tf.reshape(tf.mul(tf.sub(visible, scalar(1)), scalar(-MASK_BIAS)), [1, 1, 1, steps]) as tf.Tensor4D;
  return { writeMask, stepBias };
}

/**
 * The decoder run free for the plan's steps: step 0 reads a zero "go" frame group, every later step
 * the frames of the one before; each step's frames are its aligned means plus the decoder's part.
 * Returns the frames before the postnet, [B, steps·r, nMels].
 */
export function decodeSteps(
  model: XttsModel,
  kv: MemoryKv[],
  perStep: StepInputs,
  plan: StepPlan,
  dropout: DropoutPool,
): tf.Tensor3D {
  const { decoder, prenetDropout } = model;
  const { heads, d_model: dModel, reduction_factor: r } = model.config;
  const { nMels } = model.sizes;
  const { steps } = plan;
  const batch = plan.schedules.length;
  const positions = tf.range(0, steps, 1, 'int32');
  let states: StepState[] = decoder.blocks.map(() => ({
    cache: tf.zeros([batch, 2 * heads, steps, dModel / heads]) as tf.Tensor4D,
  }));
  const frameGroups: tf.Tensor2D[] = [];
  const go = tf.zeros([batch, r * nMels]) as tf.Tensor2D;
  let prev = go;
  try {
    for (let s = 0; s < steps; s++) {
      const out = tf.tidy(() => {
        const { writeMask, stepBias } = stepMasks(positions, s, steps);
        const o = decoder.step(prev, s, states, writeMask, stepBias, kv, perStep.bias[s], dropout, prenetDropout);
        return {
          frames: tf.add(o.frames, perStep.means[s]) as tf.Tensor2D,
          caches: o.states.map((st) => st.cache),
        };
      });
      for (const st of states) st.cache.dispose();
      states = out.caches.map((cache) => ({ cache }));
      frameGroups.push(out.frames);
      prev = out.frames;
    }
    return tf.tidy(() => tf.reshape(tf.stack(frameGroups, 1), [batch, steps * r, nMels]) as tf.Tensor3D);
  } finally {
    tf.dispose([positions, go, ...frameGroups, ...states.map((st) => st.cache)]);
  }
}

/**
 * The postnet over the decoded frames melPre [B, steps·r, nMels], then each utterance read back up
 * to its own last frame, with its stop reason and its alignment. An utterance the step budget cut
 * ends at `maxFrames`: its last step's r frames may run past it (maxFrames not a multiple of r).
 */
export async function readUtterances(
  model: XttsModel,
  melPre: tf.Tensor3D,
  plan: StepPlan,
  textLengths: readonly number[],
  maxFrames: number,
): Promise<GenerateResult[]> {
  const { nMels } = model.sizes;
  const r = model.config.reduction_factor;
  const [batch, paddedFrames] = melPre.shape;
  const used = plan.schedules.map((x) => x.plan.length);
  const post = tf.tidy(() => {
    // Each utterance ends at its own frame; the postnet sees zeros after it, as in training.
    const frameMask = tf.reshape(
      lengthMask(
        tf.tensor1d(
          used.map((u) => u * r),
          'int32',
        ),
        paddedFrames,
      ),
      [batch, paddedFrames, 1],
    ) as tf.Tensor3D;
    return model.refine(melPre, frameMask) ?? melPre;
  });
  const [preValues, postValues] = (await Promise.all([melPre.data(), post.data()])) as Float32Array[];
  if (post !== melPre) post.dispose();
  return plan.schedules.map(({ plan: tokens, cut }, b) => {
    const frames = Math.min(used[b] * r, maxFrames);
    const rows = (values: Float32Array) => values.slice(b * paddedFrames * nMels, (b * paddedFrames + frames) * nMels);
    const alignment = new Float32Array(used[b] * textLengths[b]);
    tokens.forEach((token, st) => (alignment[st * textLengths[b] + token] = 1));
    return {
      mel: rows(postValues),
      melPre: rows(preValues),
      frames,
      nMels,
      stopReason: cut ? 'max_frames' : 'end_of_text',
      alignment,
      textTokens: textLengths[b],
    };
  });
}
