// TensorFlow.js backends: webgpu (Dawn through the `webgpu` package), tensorflow (tfjs-node-gpu /
// tfjs-node, when someone installed one), wasm and cpu. Imported only by commands that compute;
// TensorFlow.js itself is loaded on the first initBackend/probeBackends call. precision.ts and
// native.ts import no engine and may be used anywhere.
export { AUTO_ORDER, type BackendChoice, type BackendOptions, type BackendProbe, disposeBackend, initBackend, probeBackends } from './init.js';
export { type DeviceTime, KernelCounter, mergeProgramTimes, noDeviceTime, type ProgramTime, programTimes, programTimesPerStep, type ShapeTime, timeOnDevice } from './kernels.js';
export { bundleDir, ensureDawnBinary, nativeBindingPath } from './native.js';
export { type ConcreteBackend, FP16_TRAINING_BACKENDS, type Precision, PRECISION_SUPPORT, type PrecisionSupport, precisionSupported } from './precision.js';
export { installedTensorflowPackage, TENSORFLOW_INSTALL_HINT, TENSORFLOW_PACKAGES, tensorflowUnavailableReason } from './tensorflow.js';
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
