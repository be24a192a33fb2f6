// What other subsystems use of the model: the model itself, its batch layout, losses and checkpoint
// files. Building blocks (nn.ts, attention.ts, …) stay internal.
export { disposeBatch, type BatchDims, type HostBatch, type ModelInputs, type TrainBatch, uploadBatch } from './batch.js';
export { computeLosses, guidedAttentionLoss, type LossConfig, type LossParts, maskedMelLoss, stopTokenLoss } from './losses.js';
export {
  countParameters,
  type ForwardOptions,
  type GenerateOptions,
  type GenerateResult,
  type ModelOptions,
  type ModelOutputs,
  type ModelSizes,
  XttsModel,
} from './model.js';
export { type ConvImpl, MASK_BIAS } from './nn.js';
export { loadWeights, readWeightsManifest, saveWeights, type WeightEntry, type WeightsManifest } from './weights-file.js';
