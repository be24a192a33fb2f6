// The batch the trainer hands the model: the data pipeline's slot views (src/core/data/ring.ts,
// BatchViews) uploaded as tensors of one bucket's static shape. Producer conventions, relied on here:
//
//   tokens       Int32   [B, T_text]        token ids, padded with 0 after textLengths[b]
//   textLengths  Int32   [B]                real tokens
//   languages    Int32   [B]                index into config text.languages
//   mel          Float32 [B, T_mel, nMels]  normalised log-mel, padded with 0; T_mel % r == 0
//                                           (the bucket planner guarantees it)
//   melLengths   Int32   [B]                real frames; 0 marks a filler utterance (no loss at all)
//   refMel       Float32 [B, T_ref, nMels]  normalised log-mel of another clip of the same speaker
//   refLengths   Int32   [B]                real reference frames
//   refPitch     Float32 [B]                the reference's median log F0 (model.speaker_pitch), 0 where unknown
//   melPitch     Float32 [B, T_mel]         each target frame's log F0 (model.pitch_contour), 0 where unvoiced
//   refRate      Float32 [B]                the speaker's log speaking rate (model.reference_rate), 0 where unknown
import * as tf from '@tensorflow/tfjs-core';
import { uploadTensors } from '../backend/index.js';

export interface TrainBatch {
  /** [B, T_text] int32 */
  tokens: tf.Tensor2D;
  /** [B] int32 */
  textLengths: tf.Tensor1D;
  /** [B] int32 */
  languages: tf.Tensor1D;
  /** [B, T_mel, nMels] float32 */
  mel: tf.Tensor3D;
  /** [B] int32 */
  melLengths: tf.Tensor1D;
  /** [B, T_ref, nMels] float32 */
  refMel: tf.Tensor3D;
  /** [B] int32 */
  refLengths: tf.Tensor1D;
  /** [B] float32 */
  refPitch: tf.Tensor1D;
  /** [B, T_mel] float32; absent where the batch's maker had none (a model without pitch_contour reads none). */
  melPitch?: tf.Tensor2D;
  /** [B] float32; absent where the batch's maker had none (a model without reference_rate reads none). */
  refRate?: tf.Tensor1D;
}

/**
 * Which token each decoder step says (XttsModel.align: monotonic alignment search on the host).
 * steps [B, T_mel / r] int32 token positions; durations [B, T_text] float32 steps per token.
 */
export interface BatchAlignment {
  steps: tf.Tensor2D;
  durations: tf.Tensor2D;
  /** Tokens that take at least one step (durations > 0), counted on the host. */
  spokenTokens?: number;
}

/** What `XttsModel.forward` reads: a batch and its alignment. */
export type ModelInputs = TrainBatch & { alignment: BatchAlignment };

/** Host arrays of one batch, as the ring's BatchViews hold them (prefixes of a slot's arrays). */
export interface HostBatch {
  tokens: Int32Array;
  textLengths: Int32Array;
  languages: Int32Array;
  mel: Float32Array;
  melLengths: Int32Array;
  refMel: Float32Array;
  refLengths: Int32Array;
  refPitch: Float32Array;
  melPitch?: Float32Array;
  refRate?: Float32Array;
}

export interface BatchDims {
  batchSize: number;
  tokens: number;
  frames: number;
  refFrames: number;
  nMels: number;
  reductionFactor: number;
}

/**
 * Upload one batch (9 host-to-device copies, one more each with melPitch and refRate; no kernels). The caller
 * disposes it with disposeBatch.
 * On webgpu the tensors go to the device at once, from views of the ring's arrays: the upload copies
 * them (into a reused mapped staging buffer in one go: backend/webgpu-uploads.ts uploadTensors) and
 * drops the host values, so no host copy of the batch is made first (2.9 MB a tiny step: 0.75 ms of an
 * H100 host's step, and garbage). Other
 * backends get copies: the cpu backend keeps a tensor's array by reference, so tensors made from the
 * slot views would change when a producer refills the slot the trainer has handed back (seen: a step
 * trained on parts of the next batch).
 */
export function uploadBatch(h: HostBatch, d: BatchDims): TrainBatch {
  const b = d.batchSize;
  const steps = d.frames / d.reductionFactor;
  if (!Number.isInteger(steps))
    throw new Error(`batch frames ${d.frames} are not a multiple of the reduction factor ${d.reductionFactor}`);
  const backend = tf.getBackend() === 'webgpu' ? tf.backend() : null;
  // The first n values: the ring's views may be longer than this bucket's shape.
  const first = <T extends Int32Array | Float32Array>(a: T, n: number): T =>
    (backend ? a.subarray(0, n) : a.slice(0, n)) as T;
  const batch: TrainBatch = {
    tokens: tf.tensor2d(first(h.tokens, b * d.tokens), [b, d.tokens], 'int32'),
    textLengths: tf.tensor1d(first(h.textLengths, b), 'int32'),
    languages: tf.tensor1d(first(h.languages, b), 'int32'),
    mel: tf.tensor3d(first(h.mel, b * d.frames * d.nMels), [b, d.frames, d.nMels], 'float32'),
    melLengths: tf.tensor1d(first(h.melLengths, b), 'int32'),
    refMel: tf.tensor3d(first(h.refMel, b * d.refFrames * d.nMels), [b, d.refFrames, d.nMels], 'float32'),
    refLengths: tf.tensor1d(first(h.refLengths, b), 'int32'),
    refPitch: tf.tensor1d(first(h.refPitch, b), 'float32'),
    ...(h.melPitch ? { melPitch: tf.tensor2d(first(h.melPitch, b * d.frames), [b, d.frames], 'float32') } : {}),
    ...(h.refRate ? { refRate: tf.tensor1d(first(h.refRate, b), 'float32') } : {}),
  };
  if (backend)
    uploadTensors(
      backend,
      Object.values(batch).map((t) => (t as tf.Tensor).dataId),
    );
  return batch;
}

/**
 * A host batch as `model` reads it: its frames' pitch only for a model with model.pitch_contour, its speakers' rates
 * only with model.reference_rate (a copy fewer each).
 */
export function batchFor<H extends HostBatch>(
  model: { pitchContour: unknown; config: { reference_rate: boolean } },
  h: H,
): H {
  return {
    ...h,
    melPitch: model.pitchContour ? h.melPitch : undefined,
    refRate: model.config.reference_rate ? h.refRate : undefined,
  };
}

export function disposeBatch(batch: TrainBatch): void {
  for (const t of Object.values(batch)) (t as tf.Tensor).dispose();
}
