// The trainer's public API. Importing it loads TensorFlow.js.
export { train, trainTask, type TrainOptions, type TrainProgress, type TrainResult } from './trainer.js';
export { type VocoderTrainResult } from './vocoder-trainer.js';
export { describeVocoder, type VocoderUsed } from './vocoder-run.js';
export { type VocodedFile, vocodeFiles, type VocodeOptions, type VocodeResult } from './vocode.js';
export { CheckpointStore, resolveCheckpoint, type NamedArray } from './checkpoint.js';
export { freeSibling } from './run-folder.js';
export { runInProgress } from './run-lock.js';
export {
  synthesize,
  type SynthesisText,
  type SynthesizedUtterance,
  type SynthesizeOptions,
  type SynthesizeResult,
} from './synthesize.js';
export { parseGpusFlag, planReplicas, type ReplicaPlan } from './parallel/group.js';
export { type StepCaptureSummary } from './optim/step-replay.js';
export { exportCheckpoint, type ExportResult } from './export.js';
export { voices, type VoicesOptions, type VoicesResult } from './voice-catalog.js';
