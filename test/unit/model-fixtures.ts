// Shared by the model-*.test.ts files and bench/model.bench.ts: model configs of the presets and a
// small synthetic dataset whose mel frames are a learnable function of the text and the speaker.
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig, TrainingConfig } from '../../src/core/config/schema.js';
import { Rng } from '../../src/core/model/init.js';
import { type BatchAlignment, type HostBatch, type ModelInputs, uploadBatch } from '../../src/core/model/batch.js';

const common = {
  alignment_heads: 1,
  ff_mult: 4,
  postnet_kernel: 5,
  reduction_factor: 2,
  dropout: 0.1,
  prenet_dropout: 1,
  max_text_tokens: 256,
  max_mel_frames: 1024,
};

/** The model sections of configs/{tiny,small,normal,big}.yaml (kept in step by hand). */
export const PRESETS: Record<'tiny' | 'small' | 'normal' | 'big', ModelConfig> = {
  tiny: {
    ...common,
    d_model: 128,
    heads: 2,
    text_layers: 2,
    cond_layers: 1,
    cond_latents: 4,
    decoder_layers: 2,
    prenet_dim: 128,
    postnet_layers: 2,
    postnet_channels: 128,
  },
  small: {
    ...common,
    d_model: 256,
    heads: 4,
    text_layers: 4,
    cond_layers: 2,
    cond_latents: 8,
    decoder_layers: 4,
    prenet_dim: 256,
    postnet_layers: 3,
    postnet_channels: 256,
  },
  normal: {
    ...common,
    d_model: 512,
    heads: 8,
    text_layers: 6,
    cond_layers: 3,
    cond_latents: 16,
    decoder_layers: 6,
    prenet_dim: 256,
    postnet_layers: 5,
    postnet_channels: 512,
  },
  big: {
    ...common,
    d_model: 1024,
    heads: 16,
    text_layers: 12,
    cond_layers: 4,
    cond_latents: 32,
    decoder_layers: 12,
    prenet_dim: 512,
    postnet_layers: 5,
    postnet_channels: 512,
    max_mel_frames: 2048,
  },
};

export const SIZES = { vocabSize: 40, nMels: 16, numLanguages: 2 };

export function trainingConfig(overrides: Partial<TrainingConfig> = {}): TrainingConfig {
  return {
    max_steps: 1000,
    learning_rate: 1e-3,
    optimizer: { name: 'adamw', beta1: 0.9, beta2: 0.98, epsilon: 1e-9, weight_decay: 0.01 },
    schedule: { name: 'constant', warmup_steps: 0, min_learning_rate: 1e-5 },
    alignment_prior: 0.3,
    grad_clip_norm: 1,
    grad_accumulation_steps: 1,
    precision: 'fp32',
    seed: 1234,
    loss: { mel: 'l1', aligned_text_weight: 1, duration_weight: 1 },
    log_every: 10,
    validate_every: 500,
    checkpoint_every: 1000,
    eval_every: 1000,
    keep_checkpoints: 3,
    early_stopping_patience: 0,
    max_nonfinite_steps: 10,
    eval_sentences: [],
    ...overrides,
  };
}

export interface SyntheticShape {
  batchSize: number;
  tokens: number;
  frames: number;
  refFrames: number;
  nMels: number;
  reductionFactor: number;
  vocabSize: number;
  numLanguages: number;
}

/**
 * One padded batch: utterance b has a random length; each token lasts 2 frames whose mel is the
 * token's fixed pattern plus a per-speaker offset, so text and reference together predict the mel.
 */
export function syntheticHostBatch(
  s: SyntheticShape,
  seed: number,
  lengths?: { text: number[]; frames?: number[] },
): HostBatch {
  const rng = new Rng(seed);
  const patterns = new Rng(99);
  const pattern = Array.from({ length: s.vocabSize }, () =>
    Float32Array.from({ length: s.nMels }, () => 2 * patterns.next() - 1),
  );
  const speakerOffset = Array.from({ length: 4 }, () =>
    Float32Array.from({ length: s.nMels }, () => patterns.next() - 0.5),
  );
  const h: HostBatch = {
    tokens: new Int32Array(s.batchSize * s.tokens),
    textLengths: new Int32Array(s.batchSize),
    languages: new Int32Array(s.batchSize),
    mel: new Float32Array(s.batchSize * s.frames * s.nMels),
    melLengths: new Int32Array(s.batchSize),
    refMel: new Float32Array(s.batchSize * s.refFrames * s.nMels),
    refLengths: new Int32Array(s.batchSize),
    refPitch: new Float32Array(s.batchSize),
  };
  for (let b = 0; b < s.batchSize; b++) {
    const textLen =
      lengths?.text[b] ??
      Math.max(2, Math.min(s.tokens, Math.floor(s.frames / 2) - 1, 2 + Math.floor(rng.next() * (s.tokens - 1))));
    const frames = lengths?.frames?.[b] ?? Math.min(s.frames, 2 * textLen);
    const speaker = Math.floor(rng.next() * speakerOffset.length);
    h.textLengths[b] = textLen;
    h.languages[b] = speaker % s.numLanguages;
    for (let i = 0; i < textLen; i++) h.tokens[b * s.tokens + i] = 1 + Math.floor(rng.next() * (s.vocabSize - 1));
    for (let f = 0; f < frames; f++) {
      const tok = h.tokens[b * s.tokens + Math.min(textLen - 1, Math.floor(f / 2))];
      for (let m = 0; m < s.nMels; m++)
        h.mel[(b * s.frames + f) * s.nMels + m] = pattern[tok][m] + speakerOffset[speaker][m];
    }
    h.melLengths[b] = frames;
    const refLen = Math.max(4, Math.floor(s.refFrames * (0.5 + 0.5 * rng.next())));
    h.refLengths[b] = refLen;
    for (let f = 0; f < refLen; f++) {
      for (let m = 0; m < s.nMels; m++)
        h.refMel[(b * s.refFrames + f) * s.nMels + m] = speakerOffset[speaker][m] + 0.3 * Math.sin(f + m);
    }
  }
  return h;
}

/**
 * A valid alignment without a model: each utterance's symbols (token positions 2..N−2, or all its
 * tokens when it has no more than 3) spread evenly over its real decoder steps; padded steps repeat
 * the last. Durations count the steps of each position.
 */
export function evenAlignment(
  textLengths: ArrayLike<number>,
  melLengths: ArrayLike<number>,
  tokens: number,
  frames: number,
  r: number,
): BatchAlignment {
  const batch = textLengths.length;
  const steps = frames / r;
  const path = new Int32Array(batch * steps);
  const durations = new Float32Array(batch * tokens);
  for (let b = 0; b < batch; b++) {
    const n = textLengths[b];
    const first = n > 3 ? 2 : 0;
    const count = n > 3 ? n - 3 : Math.max(1, n);
    const real = Math.max(1, Math.ceil(melLengths[b] / r));
    for (let st = 0; st < steps; st++) {
      const pos = first + Math.min(count - 1, Math.floor((Math.min(st, real - 1) * count) / real));
      path[b * steps + st] = pos;
      if (st < real && melLengths[b] > 0) durations[b * tokens + pos]++;
    }
  }
  return { steps: tf.tensor2d(path, [batch, steps], 'int32'), durations: tf.tensor2d(durations, [batch, tokens]) };
}

/** A synthetic batch with an even alignment: what XttsModel.forward and trainStep take. */
export function syntheticBatch(
  s: SyntheticShape,
  seed: number,
  lengths?: { text: number[]; frames?: number[] },
): ModelInputs {
  const h = syntheticHostBatch(s, seed, lengths);
  return {
    ...uploadBatch(h, s),
    alignment: evenAlignment(h.textLengths, h.melLengths, s.tokens, s.frames, s.reductionFactor),
  };
}

/** Free a batch and its alignment. */
export function disposeInputs(b: ModelInputs): void {
  const { alignment, ...rest } = b;
  tf.dispose([...Object.values(rest), alignment.steps, alignment.durations]);
}

export function shapeFor(
  config: ModelConfig,
  batchSize: number,
  tokens: number,
  frames: number,
  refFrames = 16,
): SyntheticShape {
  return {
    batchSize,
    tokens,
    frames,
    refFrames,
    nMels: SIZES.nMels,
    reductionFactor: config.reduction_factor,
    vocabSize: SIZES.vocabSize,
    numLanguages: SIZES.numLanguages,
  };
}

/** Kernels a function runs, by name, counted with tf.profile (registered kernels only, not the
 * customGrad wrapper entries). */
export async function countKernels(fn: () => unknown): Promise<{ total: number; byName: Map<string, number> }> {
  const backend = tf.getBackend();
  const info = await tf.profile(() => {
    fn();
    return [];
  });
  const byName = new Map<string, number>();
  let total = 0;
  for (const k of info.kernels) {
    if (!tf.getKernel(k.name, backend)) continue;
    byName.set(k.name, (byName.get(k.name) ?? 0) + 1);
    total++;
  }
  return { total, byName };
}

export function maxAbsDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

/** A copy of a batch with some tensors replaced (the others shared). */
export function withTensors(batch: ModelInputs, replace: Partial<ModelInputs>): ModelInputs {
  return { ...batch, ...replace };
}
