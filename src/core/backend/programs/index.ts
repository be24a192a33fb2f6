// The GPU programs' ops (each a tfjs kernel of its own, defined in the registry, gpu-programs.ts, and
// chosen by the model where the registry says it runs) and their helpers. These files import
// tfjs-core: the model and trainer import them from here, while backend/index.ts, which commands that
// compute nothing load, does not (docs/architecture.md, "Subsystems and their public API").
export { attendPacked, packedAttentionAvailable, type PackedHeads } from './attention.js';
export {
  fusedUpdate,
  fusedUpdateAvailable,
  stepScalars,
  stepScalarsAvailable,
} from './adamw.js';
export { tapSum, tapSumAvailable } from './conv.js';
export { bf16ExchangeOnDevice, packBf16, roundBf16, sumPackedBf16 } from './exchange.js';
export { denseBackward } from './dense-layer.js';
export { gradOp } from './grad-op.js';
export { fusedLayerNormAvailable, fusedNormalize, fusedNormalizeGrads, LN_EPSILON } from './layernorm.js';
export { fusedDurationLoss, fusedLossesAvailable, fusedMaskedError } from './losses.js';
export { crossAttentionBias, fusedMasksAvailable, lengthBias } from './masks.js';
export { reluGrad } from './relu.js';
export { gather, maskAdd, maskAt, maskAtAvailable, segments, WINDOW_KERNEL } from './slices.js';
export { fusedScaledSoftmax, fusedScaledSoftmaxGrad, fusedSoftmaxAvailable } from './softmax.js';
