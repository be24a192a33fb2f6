// The audio kernels' WebAssembly module (logmel.c, resample.c), compiled once per thread and
// instantiated once per user (a MelExtractor, a Resampler), each instance with its own memory.
import { KERNELS_WASM_BASE64 } from './kernels.wasm.js';

// The few WebAssembly JS API members used here (the project's TypeScript libs do not declare them).
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}

export interface KernelInstance {
  memory: WasmMemory;
  /** First free byte above the module's own data and stack. */
  heapBase: number;
  logmel: (...args: number[]) => void;
  fir_polyphase: (
    padded: number,
    outLength: number,
    up: number,
    down: number,
    rowTaps: number,
    table: number,
    out: number,
  ) => void;
}

const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
let compiled: object | undefined;

export function wasmAvailable(): boolean {
  return api !== undefined;
}

export function instantiateKernels(): KernelInstance {
  if (!api) throw new Error('WebAssembly is not available in this runtime');
  compiled ??= new api.Module(Buffer.from(KERNELS_WASM_BASE64, 'base64'));
  const e = new api.Instance(compiled, {}).exports as Omit<KernelInstance, 'heapBase'> & {
    __heap_base: { value: number };
  };
  return { memory: e.memory, heapBase: Number(e.__heap_base.value), logmel: e.logmel, fir_polyphase: e.fir_polyphase };
}

/** Grows `memory` so that it holds at least `bytes`. */
export function ensureMemory(memory: WasmMemory, bytes: number): void {
  const have = memory.buffer.byteLength;
  if (bytes > have) memory.grow(Math.ceil((bytes - have) / 65536));
}
