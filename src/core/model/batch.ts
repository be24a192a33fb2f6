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
import * as tf from '@tensorflow/tfjs-core';

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
 * Upload one batch (7 host-to-device copies, no kernels). The caller disposes it with disposeBatch.
 * The cpu backend keeps a tensor's array by reference and tfjs's webgpu uploads it at first use, so
 * tensors made from the ring's slot views would change when a producer refills the slot the trainer
 * has handed back (seen: a step trained on parts of the next batch): the other backends get copies.
 * On webgpu each array goes through a scratch array kept per field and size (Dawn takes no view of a
 * SharedArrayBuffer, which the ring's slots are) and is uploaded at once (queue.writeBuffer copies it:
 * webgpu-uploads.ts), so the tensor keeps no host array and the scratch is free again. A fresh copy of
 * every array per step took 0.75 ms of a tiny step's host time on the H200 host (allocation and GC).
 */
/** uploadBatch's scratch arrays on webgpu, per field and size (a few MB in all for a normal batch). */
const scratches = new Map<string, Int32Array | Float32Array>();

export function uploadBatch(h: HostBatch, d: BatchDims): TrainBatch {
  const b = d.batchSize;
  const steps = d.frames / d.reductionFactor;
  if (!Number.isInteger(steps)) throw new Error(`batch frames ${d.frames} are not a multiple of the reduction factor ${d.reductionFactor}`);
  const backend = tf.backend() as unknown as { uploadToGPU?: (id: object) => void };
  const now = tf.getBackend() === 'webgpu' && typeof backend.uploadToGPU === 'function';
  // The ring's views may be longer than this bucket's shape: the bucket's prefix of each, as a tensor.
  const make = <T extends Int32Array | Float32Array>(field: keyof HostBatch, a: T, shape: number[]): tf.Tensor => {
    const n = shape.reduce((x, y) => x * y, 1);
    const dtype = a instanceof Int32Array ? 'int32' : 'float32';
    if (!now) return tf.tensor(a.slice(0, n), shape, dtype);
    const key = `${field}:${n}`;
    let scratch = scratches.get(key);
    if (!scratch) scratches.set(key, (scratch = dtype === 'int32' ? new Int32Array(n) : new Float32Array(n)));
    scratch.set(a.subarray(0, n));
    const t = tf.tensor(scratch, shape, dtype);
    backend.uploadToGPU!(t.dataId);
    return t;
  };
  return {
    tokens: make('tokens', h.tokens, [b, d.tokens]) as tf.Tensor2D,
    textLengths: make('textLengths', h.textLengths, [b]) as tf.Tensor1D,
    languages: make('languages', h.languages, [b]) as tf.Tensor1D,
    mel: make('mel', h.mel, [b, d.frames, d.nMels]) as tf.Tensor3D,
    melLengths: make('melLengths', h.melLengths, [b]) as tf.Tensor1D,
    refMel: make('refMel', h.refMel, [b, d.refFrames, d.nMels]) as tf.Tensor3D,
    refLengths: make('refLengths', h.refLengths, [b]) as tf.Tensor1D,
  };
}

export function disposeBatch(batch: TrainBatch): void {
  for (const t of Object.values(batch)) (t as tf.Tensor).dispose();
}
