// What xtts uses of WebGPU's objects outside tfjs (step capture's replays and their copy programs),
// typed as far as it needs them: Dawn's objects have these methods and more.

export interface GpuBuffer {
  readonly size: number;
  destroy(): void;
}
export interface GpuPipeline {
  getBindGroupLayout(index: number): unknown;
}
export interface GpuPass {
  setPipeline(p: GpuPipeline): void;
  setBindGroup(index: number, group: unknown): void;
  dispatchWorkgroups(x: number, y: number, z: number): void;
  end(): void;
}
export interface GpuEncoder {
  beginComputePass(descriptor?: object): GpuPass;
  copyBufferToBuffer(src: GpuBuffer, srcOffset: number, dst: GpuBuffer, dstOffset: number, size: number): void;
  finish(): unknown;
}
export interface GpuDevice {
  createBuffer(d: { size: number; usage: number }): GpuBuffer;
  createBindGroup(d: {
    layout: unknown;
    entries: { binding: number; resource: { buffer: GpuBuffer; offset?: number; size?: number } }[];
  }): unknown;
  createCommandEncoder(): GpuEncoder;
  createShaderModule(d: { code: string }): unknown;
  createComputePipeline(d: { layout: 'auto'; compute: { module: unknown; entryPoint: string } }): GpuPipeline;
  readonly limits: { maxStorageBuffersPerShaderStage: number };
  readonly queue: {
    writeBuffer(b: GpuBuffer, offset: number, data: ArrayBufferView): void;
    submit(c: unknown[]): void;
  };
}

/** WebGPU's GPUBufferUsage flags (Node.js has no GPUBufferUsage global). */
export const BufferUsage = {
  MAP_READ: 0x1,
  MAP_WRITE: 0x2,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  UNIFORM: 0x40,
  STORAGE: 0x80,
  QUERY_RESOLVE: 0x200,
} as const;
