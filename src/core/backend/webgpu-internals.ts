// What step capture (step-recording.ts, step-capture.ts, shape-captures.ts) uses of
// tfjs-backend-webgpu's internals (4.22) and of tfjs-core's engine, typed as far as it needs them.
import type * as tfTypes from '@tensorflow/tfjs-core';
import type { GpuBuffer, GpuDevice, GpuEncoder, GpuPipeline } from './gpu-types.js';

export type DataId = object;
export interface TensorData {
  dtype: tfTypes.DataType;
  shape: number[];
  values: ArrayLike<number> | null;
  resource: GpuBuffer | null;
  refCount: number;
}
export interface Uniform {
  type: string;
  data: number[];
}
export interface Program {
  pipeline: GpuPipeline | Promise<GpuPipeline>;
  dispatch: [number, number, number];
  shaderKey: string;
  /** A program of several outputs (kernels.ts outputsProgram): its last inputs are outputs it writes. */
  extraOutputs?: number;
}
export interface WebgpuBackend {
  device: GpuDevice;
  tensorMap: { get(id: DataId): TensorData | undefined; has(id: DataId): boolean };
  commandEncoder: GpuEncoder | null;
  activeTimers: unknown;
  uniformPendingDisposal: GpuBuffer[];
  bufferManager: {
    releaseBuffer(b: GpuBuffer, reuse?: boolean): void;
    freeBuffers: Map<string, GpuBuffer[]>;
    numFreeBuffers: number;
    numBytesAllocated: number;
  };
  recordAndSubmit(
    program: Program,
    output: tfTypes.TensorInfo,
    inputs: tfTypes.TensorInfo[],
    programDefinedUniform?: Uniform[],
  ): void;
  makeUniforms(u: Uniform[]): { offset: number; size: number; buffer: GpuBuffer };
  uploadToGPU(id: DataId): void;
  write(...args: unknown[]): DataId;
  read(id: DataId): Promise<unknown>;
  readSync(id: DataId): unknown;
  readToGPU(id: DataId): unknown;
  makeTensorInfo(shape: number[], dtype: tfTypes.DataType): tfTypes.TensorInfo;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}
export interface Engine {
  state: { registeredVariables: Record<string, tfTypes.Variable> };
  makeTensorFromTensorInfo(info: tfTypes.TensorInfo, backend?: unknown): tfTypes.Tensor;
}

/** Submits what tfjs has encoded and not yet submitted: work encoded outside tfjs then comes after it on the queue. */
export function submitEncoded(backend: WebgpuBackend): void {
  if (backend.commandEncoder) {
    backend.endComputePassEncoder();
    backend.submitQueue();
  }
}
