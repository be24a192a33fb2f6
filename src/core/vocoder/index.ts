// The neural vocoder's public API: the generator, its losses, its data. Training it (and loading a
// trained one) is the training subsystem's (training/vocoder-trainer.ts, training/vocoder-run.ts).
export { countVocoderParameters, VocoderGenerator, type VocoderAudio, type VocoderShape } from './model.js';
export { lossResolutions, vocoderLosses, type VocoderLossParts } from './losses.js';
export {
  adversarialLoss,
  countDiscriminatorParameters,
  type DiscriminatorShape,
  discriminatorLoss,
  Discriminators,
  featureMatchingLoss,
  type Judgement,
  stridedConv1d,
} from './discriminators.js';
export {
  loadClips,
  MAX_HELD_SAMPLES,
  SegmentSampler,
  type LoadedClips,
  type SegmentBatch,
  type VocoderClip,
} from './data.js';
export {
  framesPerWindow,
  frameSignal,
  istft,
  logMel,
  stftFrames,
  stftMagnitude,
  type StftSize,
} from './spectral.js';
