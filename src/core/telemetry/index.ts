// @xtts/core telemetry: GPU device samples (NVML addon, nvidia-smi fallback) and their statistics.
// Step-span records and the run database are in spans.ts and run-db.ts.
export { EventFileWriter, crc32c, tfrecord } from './tensorboard.js';
export {
  GpuSampler,
  type GpuSamplerOptions,
  type GpuSamplerCounters,
  type GpuDeviceDescription,
  type GpuTelemetryStatus,
  type GpuSourceKind,
} from './gpu-sampler.js';
export { GpuSampleRing, toDeviceSampleRecord, fromDeviceSampleRecord, type GpuSample } from './gpu-sample.js';
export { summarizeGpuSamples, type GpuWindowSummary } from './gpu-summary.js';
export { THROTTLE_REASONS, decodeThrottleReasons, throttleReasonLabel, type ThrottleReason } from './gpu-throttle.js';
export {
  NVIDIA_SMI_COLUMNS,
  NvidiaSmiStream,
  defaultNvidiaSmiQuery,
  parseNvidiaSmiLine,
  parseNvidiaSmiTimestamp,
  type NvidiaSmiQuery,
  type NvidiaSmiRow,
  type NvidiaSmiStreamOptions,
} from './gpu-smi.js';
export {
  NVML_ADDON_FILE,
  closeNvml,
  loadNvmlAddon,
  nvmlAddonPath,
  openNvml,
  type NvmlAddon,
  type NvmlDeviceInfo,
  type NvmlGpmMetrics,
  type NvmlInitResult,
  type NvmlRawSample,
} from './nvml.js';
export { HostGcRecorder, type HostGcSummary } from './host-gc.js';
export { type DeviceSampleRecord, type ReplicaStepRecord, RunDatabase } from './run-db.js';
export { SPAN_NAMES, SpanTimer, type StepRecord, type StepSpans } from './spans.js';
