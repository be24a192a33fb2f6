// Closed-form estimates of a config's parameter count and training memory, so that the linter can
// judge batch size against a memory budget without building the model (or loading TensorFlow.js).
import type { XttsConfig } from './schema.js';

/** model.speaker_pitch's features (model/voice-pitch.ts; model-shapes.test.ts checks the count against the model). */
const PITCH_FEATURES = 10;

const BYTES_PER_FLOAT = 4;
/** Vocabulary size assumed for estimates: specials + language tokens + the characters of a Latin-script corpus. */
const ESTIMATE_VOCAB = 160;

/** A feed-forward sublayer: d -> ffMult·d -> d, with biases. */
const feedForwardParams = (d: number, ffMult: number) => 2 * ffMult * d * d + ffMult * d + d;
/** Query, key, value and output projections, with biases (fused or not, the same count). */
const attentionParams = (d: number) => 4 * d * d + 4 * d;

/** A pre-norm transformer block (its layer norms a gain each); a decoder's adds cross-attention and its norm. */
function transformerBlockParams(d: number, ffMult: number, crossAttention: boolean): number {
  const norms = (crossAttention ? 3 : 2) * d;
  return attentionParams(d) * (crossAttention ? 2 : 1) + feedForwardParams(d, ffMult) + norms;
}

/** Parameters of the XTTS-style model a config describes: the built model's count (a test holds them equal). */
export function estimateParameters(config: XttsConfig, vocabSize = ESTIMATE_VOCAB): number {
  const m = config.model;
  const d = m.d_model;
  const nMels = config.audio.n_mels;
  const r = m.reduction_factor;
  const languages = config.text.languages.length;
  const text =
    vocabSize * d +
    languages * d +
    m.max_text_tokens * d +
    m.text_layers * transformerBlockParams(d, m.ff_mult, false) +
    d +
    (d * nMels + nMels); // text.mel_head: each token's mean frame
  // The duration predictor: two width-3 convolutions over the text encodings, each with a layer norm, then one output.
  const duration = 2 * (3 * d * d + d) + 2 * d + d + 1;
  const cond =
    3 * nMels * d + // cond.in_conv, width 3
    d +
    m.cond_layers * transformerBlockParams(d, m.ff_mult, false) +
    d + // its frames' layer norm
    m.cond_latents * d +
    // The latents' pooling: attention to the frames, its layer norm and feed-forward; the output's layer norm.
    attentionParams(d) +
    d +
    feedForwardParams(d, m.ff_mult) +
    d +
    (m.speaker_offset ? d * nMels + nMels : 0) +
    (m.speaker_rate ? d * d + d : 0) +
    (m.speaker_pitch ? PITCH_FEATURES * d + d : 0) +
    // model.pitch_contour: a pitch predictor shaped as the duration predictor, and the pitch embedding.
    (m.pitch_contour ? duration + PITCH_FEATURES * d + d : 0);
  const prenet =
    r * nMels * m.prenet_dim + m.prenet_dim + m.prenet_dim * m.prenet_dim + m.prenet_dim + m.prenet_dim * d + d;
  const decoder =
    prenet +
    Math.ceil(m.max_mel_frames / r) * d +
    m.decoder_layers * transformerBlockParams(d, m.ff_mult, true) +
    d +
    d * (r * nMels) +
    r * nMels;
  const c = m.postnet_channels;
  const k = m.postnet_kernel;
  const postnet =
    m.postnet_layers === 0
      ? 0
      : m.postnet_layers === 1
        ? nMels * nMels * k + nMels
        : nMels * c * k + c + (m.postnet_layers - 2) * (c * c * k + c) + c * nMels * k + nMels;
  return Math.round(text + duration + cond + decoder + postnet);
}

export interface MemoryEstimate {
  parameters: number;
  /** Weights, gradients and AdamW's two moments: 16 bytes a parameter in float32. */
  parameterBytes: number;
  /** Activations kept for the backward pass at the largest bucket shape. */
  activationBytes: number;
  /** One prefetch slot (a padded batch on the host). */
  slotBytes: number;
  totalBytes: number;
  /** The longest text and mel sequence the estimate assumed. */
  maxTextTokens: number;
  maxMelFrames: number;
}

/**
 * Training memory at the largest batch the config allows. Activations: per layer and position
 * roughly (2·ff_mult + 10)·d floats (inputs of each matmul, norms, residuals) plus heads·T² for the
 * attention probabilities, counted once for the forward pass that backward keeps.
 */
export function estimateTrainingMemory(config: XttsConfig): MemoryEstimate {
  const m = config.model;
  const d = m.d_model;
  const parameters = estimateParameters(config);
  const melFrames = Math.min(
    m.max_mel_frames,
    Math.ceil((config.limits.max_audio_s * config.audio.sample_rate_hz) / config.audio.hop_length) + 1,
  );
  // Characters per second of speech is ~15 (LJSpeech averages 14.6); cap by the text limits.
  const textTokens = Math.min(m.max_text_tokens, config.limits.max_text_chars + 3);
  const decSteps = Math.ceil(melFrames / m.reduction_factor);
  // The reference window is its own length (batching.reference_frames), however long the clips.
  const refFrames = config.batching.reference_frames;
  const perPos = (2 * m.ff_mult + 10) * d;
  const batch = config.batching.frame_budget
    ? Math.max(1, Math.min(config.batching.batch_size, Math.floor(config.batching.frame_budget / melFrames)))
    : config.batching.batch_size;
  const perUtterance =
    m.text_layers * (textTokens * perPos + m.heads * textTokens * textTokens) +
    m.cond_layers * (refFrames * perPos + m.heads * refFrames * refFrames) +
    m.decoder_layers *
      (decSteps * (perPos + 4 * d) +
        m.heads * decSteps * decSteps +
        m.heads * decSteps * (textTokens + m.cond_latents)) +
    m.postnet_layers * melFrames * m.postnet_channels * 3 +
    melFrames * config.audio.n_mels * 6;
  const activationBytes = batch * perUtterance * BYTES_PER_FLOAT;
  const slotBytes = batch * (textTokens * 4 + (melFrames + refFrames) * config.audio.n_mels * 4 + decSteps * 4 + 16);
  const parameterBytes = parameters * 16;
  return {
    parameters,
    parameterBytes,
    activationBytes,
    slotBytes,
    totalBytes: parameterBytes + activationBytes,
    maxTextTokens: textTokens,
    maxMelFrames: melFrames,
  };
}

/** The wasm backend's heap: 32-bit addresses (tfjs-backend-wasm aborts its module past it). */
export const WASM_HEAP_BYTES = 4 * 2 ** 30;

/** What a backend can hold for training, and what that limit is, for messages. */
export interface MemoryLimit {
  bytes: number;
  what: string;
  /** Why this limit is a guess (the backend auto picks is not known before it runs), when it is. */
  assumed?: string;
}

/**
 * The memory a run on `backend` trains within: device.model_memory_budget_mb where set; else the
 * GPU's memory (webgpu, tensorflow; unknown without nvidia-smi: undefined); wasm's 4 GiB heap (or the
 * host's memory, where lower); the host's memory for cpu (its cgroup limit where lower).
 */
export function trainingMemoryLimit(
  config: XttsConfig,
  backend: string,
  host: { memoryBytes: number; gpu?: { name: string; index: number; memoryTotalBytes: number } },
): MemoryLimit | undefined {
  const budget = config.device.model_memory_budget_mb;
  if (budget !== null)
    return { bytes: budget * 2 ** 20, what: `device.model_memory_budget_mb = ${formatBytes(budget * 2 ** 20)}` };
  if (backend === 'webgpu' || backend === 'tensorflow')
    return host.gpu
      ? {
          bytes: host.gpu.memoryTotalBytes,
          what: `GPU ${host.gpu.index} (${host.gpu.name}) = ${formatBytes(host.gpu.memoryTotalBytes)}`,
        }
      : undefined;
  if (backend === 'wasm')
    return host.memoryBytes < WASM_HEAP_BYTES
      ? { bytes: host.memoryBytes, what: `this host's memory, ${formatBytes(host.memoryBytes)}` }
      : { bytes: WASM_HEAP_BYTES, what: "the wasm backend's 4 GiB heap" };
  return { bytes: host.memoryBytes, what: `this host's memory, ${formatBytes(host.memoryBytes)}` };
}

/** The estimate in words: total, parameters with their optimizer state, activations at the largest batch. */
export function describeEstimate(config: XttsConfig, est: MemoryEstimate): string {
  return (
    `${formatBytes(est.totalBytes)} estimated (${(est.parameters / 1e6).toFixed(1)} ` +
    `M parameters: ${formatBytes(est.parameterBytes)} with gradients and AdamW ` +
    `moments; activations ${formatBytes(est.activationBytes)} at ` +
    `batch ${config.batching.batch_size} × ${est.maxMelFrames} frames)`
  );
}

/** The largest batch_size whose estimate stays within `share` of `bytes` (at least 1). */
export function batchSizeWithin(config: XttsConfig, est: MemoryEstimate, bytes: number, share: number): number {
  const perUtterance = est.activationBytes / Math.max(1, config.batching.batch_size);
  return Math.max(1, Math.floor((bytes * share - est.parameterBytes) / perUtterance));
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 || u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}
