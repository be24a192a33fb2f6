// TensorFlow.js backends: webgpu (Dawn through the `webgpu` package), tensorflow (tfjs-node-gpu /
// tfjs-node, when someone installed one), wasm and cpu. Imported only by commands that compute;
// TensorFlow.js itself is loaded on the first initBackend/probeBackends call. precision.ts and
// native.ts import no engine and may be used anywhere.
export {
  AUTO_ORDER,
  type BackendChoice,
  type BackendOptions,
  type BackendProbe,
  disposeBackend,
  boundsChecksNote,
  initBackend,
  probeBackends,
} from './init.js';
export {
  type DeviceTime,
  KernelCounter,
  mergeProgramTimes,
  noDeviceTime,
  type ProgramTime,
  programTimes,
  programTimesPerStep,
  type ShapeTime,
  timeOnDevice,
} from './kernels.js';
export { bundleDir, ensureDawnBinary, nativeBindingPath } from './native.js';
export {
  type ConcreteBackend,
  FP16_TRAINING_BACKENDS,
  type Precision,
  PRECISION_SUPPORT,
  type PrecisionSupport,
  precisionSupported,
} from './precision.js';
export {
  installedTensorflowPackage,
  TENSORFLOW_INSTALL_HINT,
  TENSORFLOW_PACKAGES,
  tensorflowUnavailableReason,
} from './tensorflow.js';
export { WASM_FILES, wasmDir } from './wasm.js';
export {
  type AdapterDescription,
  type AdapterLimits,
  type AdapterList,
  dawnBackendName,
  type DawnOptions,
  findVulkanLoader,
  listAdapters,
  takeGpuError,
  tensorCoreSupport,
  vulkanDriverManifests,
} from './webgpu.js';
export { type GpuDevice } from './gpu-types.js';
export {
  DEFAULT_F16_TUNING,
  DEFAULT_GPU_PROGRAMS,
  defineGpuKernel,
  type F16Tuning,
  defineGpuOverride,
  GPU_PROGRAM_GROUPS,
  type GpuProgramGroup,
  type GpuProgramSelection,
  gpuKernelActive,
  gpuProgramSelection,
  type MatMulProgram,
  parseF16Tuning,
  selectGpuPrograms,
  type SubgroupMatrixShape,
  switchGpuPrograms,
} from './gpu-programs.js';
export {
  flatProgram,
  namedProgram,
  outputsProgram,
  runWithOutputs,
  type WebgpuProgramRunner,
  webgpuKernel,
  workgroupGrid,
} from './kernels.js';
export { describeSpans, type DeviceSpans, SpanTimer } from './replay-spans.js';
export { deviceIdle, HostTransfers } from './host-transfers.js';
export { advanceCapture, arenaBytesOf, CallReplayer, dropStaleCapture, summarizeShapes } from './shape-captures.js';
export type { CallCaptureSummary, CaptureState, ShapeCaptureSummary } from './shape-captures.js';
export { COPY_SHADER_KEY, onDeviceOnly, recordStep } from './step-recording.js';
export type { OnReady } from './step-capture.js';
export { type DenseGradKind, denseGrads, denseGradsMaxFlops, dzInputs } from './programs/dense.js';
export {
  f16PairTakes,
  type PairedMatMul,
  type StridedDims,
  stridedF16Takes,
  stridedMatMuls,
  type StridedMatrix,
  type StridedProduct,
  stridedSubgroupMatMuls,
  subgroupMatMulPair,
} from './programs/matmul.js';
export { spreadSum, stridedSum, stridedSumStoring, SUM_OF_SQUARES_KERNEL, type Summand } from './programs/sum.js';
export { stagedUploadStats, uploadTensors } from './webgpu-uploads.js';
