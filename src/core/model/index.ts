// What other subsystems use of the model: the model itself, its batch layout, losses and checkpoint
// files. Building blocks (nn.ts, attention.ts, …) stay internal.
export { diagonalShare, FIRST_SYMBOL, framesPerSymbol, monotonicAlignment, scheduleFromDurations } from './align.js';
export {
  type BatchAlignment,
  disposeBatch,
  type BatchDims,
  batchFor,
  type HostBatch,
  type ModelInputs,
  type TrainBatch,
  uploadBatch,
} from './batch.js';
export { computeLosses, durationLoss, type LossConfig, type LossParts, maskedMelLoss } from './losses.js';
export {
  countParameters,
  type ForwardOptions,
  type ModelOptions,
  type ModelOutputs,
  type ModelSizes,
  XttsModel,
} from './model.js';
export {
  type GenerateItem,
  type GenerateOptions,
  type GenerateResult,
  type LatentVoice,
  type ReferenceMel,
  type Voice,
  voiceLatents,
} from './generate.js';
export { cachedConstant, Conv1d, conv1dComposed, type ConvImpl, LayerNorm, Linear, MASK_BIAS } from './nn.js';
export { ParamStore } from './params.js';
export { mixSeed, Rng } from './init.js';
export {
  loadWeights,
  readWeightsManifest,
  saveWeights,
  type WeightEntry,
  type WeightsManifest,
} from './weights-file.js';
export { AlignmentSearcher } from './align-worker.js';
export { type LossDenominators, wholeDenominators } from './losses.js';
export { type DropoutCall } from './dropout.js';
export { scalar } from './nn.js';
export { gather, segments } from '../backend/programs/index.js';
