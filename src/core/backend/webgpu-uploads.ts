// Host-to-device uploads through queue.writeBuffer. tfjs-backend-webgpu uploads a tensor made from host
// values through a staging buffer created, mapped and destroyed for that one upload (measured on an
// H100 host, Dawn on Vulkan: 593 µs per upload); the batch, its alignment and every constant made on
// the host pay it. queue.writeBuffer copies the values into Dawn's own reused staging memory and
// orders the copy on the queue, before any work submitted after it: what tfjs's unsubmitted encoder
// holds cannot touch the buffer, because tfjs returns a buffer to its pool only once the commands
// that use it are submitted.
import { BufferUsage } from './gpu-types.js';

type DataId = object;
interface TensorData {
  dtype: string;
  shape: number[];
  values: ArrayLike<number> | null;
  resource: unknown;
  complexTensorInfos?: unknown;
}
interface WebgpuBackendInternals {
  tensorMap: { get(id: DataId): TensorData | undefined };
  bufferManager: { acquireBuffer(size: number, usage: number): unknown };
  queue: { writeBuffer(buffer: unknown, offset: number, data: ArrayBufferView): void };
  uploadToGPU(id: DataId): void;
}

const { STORAGE, COPY_SRC, COPY_DST } = BufferUsage;

/** Host values as the device holds them (float32, else int32: bool too), without a copy when they already are. */
export function deviceArray(dtype: string, values: ArrayLike<number>): Float32Array | Int32Array {
  if (dtype === 'float32') return values instanceof Float32Array ? values : Float32Array.from(values);
  return values instanceof Int32Array ? values : Int32Array.from(values);
}

const installed = new WeakMap<object, (id: DataId) => void>();

/** One host buffer reused for uploads from shared memory (grown as needed). */
let scratch = new ArrayBuffer(0);

/**
 * `values` as queue.writeBuffer takes them: Dawn's Node bindings refuse a view of a SharedArrayBuffer
 * (the data pipeline's ring, whose views a batch is uploaded from), so those are copied into a
 * reused host buffer first — writeBuffer copies them at once, so it is free again on return.
 */
function writable(values: Float32Array | Int32Array): Float32Array | Int32Array {
  if (!(values.buffer instanceof SharedArrayBuffer)) return values;
  if (scratch.byteLength < values.byteLength) scratch = new ArrayBuffer(Math.max(values.byteLength, 2 * scratch.byteLength));
  const copy = values instanceof Float32Array ? new Float32Array(scratch, 0, values.length) : new Int32Array(scratch, 0, values.length);
  copy.set(values);
  return copy;
}

/** Uploads of host values on this webgpu backend go through queue.writeBuffer (on: true) or tfjs's own staging path. */
export function setQueueUploads(backend: unknown, on: boolean): void {
  const b = backend as WebgpuBackendInternals;
  const original = installed.get(b);
  if (!on) {
    if (original) {
      b.uploadToGPU = original;
      installed.delete(b);
    }
    return;
  }
  if (original) return;
  const tfjsUpload = b.uploadToGPU;
  installed.set(b, tfjsUpload);
  b.uploadToGPU = function (this: WebgpuBackendInternals, id: DataId) {
    const d = this.tensorMap.get(id);
    if (!d || d.resource != null || d.values == null || d.complexTensorInfos || !['float32', 'int32', 'bool'].includes(d.dtype)) return tfjsUpload.call(this, id);
    const count = d.shape.reduce((a, x) => a * x, 1);
    const values = deviceArray(d.dtype, d.values);
    const buffer = this.bufferManager.acquireBuffer(4 * count, STORAGE | COPY_SRC | COPY_DST);
    this.queue.writeBuffer(buffer, 0, writable(values.length === count ? values : values.subarray(0, count)));
    d.resource = buffer;
    // As tfjs does once uploaded: the host copy is dropped.
    d.values = null;
  };
}
