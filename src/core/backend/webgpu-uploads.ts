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
interface StagingBuffer {
  readonly size: number;
  getMappedRange(offset: number, size: number): ArrayBuffer;
  unmap(): void;
  mapAsync(mode: number): Promise<void>;
  destroy(): void;
}
interface WebgpuBackendInternals {
  tensorMap: { get(id: DataId): TensorData | undefined };
  bufferManager: { acquireBuffer(size: number, usage: number): unknown };
  queue: {
    writeBuffer(buffer: unknown, offset: number, data: ArrayBufferView): void;
    submit(buffers: unknown[]): void;
  };
  device: {
    createBuffer(d: { size: number; usage: number; mappedAtCreation: boolean }): StagingBuffer;
    createCommandEncoder(): {
      copyBufferToBuffer(src: unknown, srcOffset: number, dst: unknown, dstOffset: number, size: number): void;
      finish(): unknown;
    };
  };
  uploadToGPU(id: DataId): void;
}

const { STORAGE, COPY_SRC, COPY_DST, MAP_WRITE } = BufferUsage;

/** Host values as the device holds them (float32, else int32: bool too), without a copy when they already are. */
export function deviceArray(dtype: string, values: ArrayLike<number>): Float32Array | Int32Array {
  if (dtype === 'float32') return values instanceof Float32Array ? values : Float32Array.from(values);
  return values instanceof Int32Array ? values : Int32Array.from(values);
}

const installed = new WeakMap<object, (id: DataId) => void>();

const QUEUE_DTYPES = new Set(['float32', 'int32', 'bool']);

/**
 * The values a tensor made from host values uploads (as the device holds them, its own size), or null
 * where tfjs's own path takes it (on the device already, no host values, complex, another dtype).
 */
function uploadValues(d: TensorData | undefined): Float32Array | Int32Array | null {
  if (!d || d.resource != null || d.values == null || d.complexTensorInfos || !QUEUE_DTYPES.has(d.dtype)) return null;
  const count = d.shape.reduce((a, x) => a * x, 1);
  const values = deviceArray(d.dtype, d.values);
  return values.length === count ? values : values.subarray(0, count);
}

/** A buffer of tfjs's pool for the tensor, its host copy dropped (as tfjs does once uploaded). */
function attachBuffer(b: WebgpuBackendInternals, d: TensorData, bytes: number): unknown {
  const buffer = b.bufferManager.acquireBuffer(bytes, STORAGE | COPY_SRC | COPY_DST);
  d.resource = buffer;
  d.values = null;
  return buffer;
}

/** One host buffer reused for uploads from shared memory (grown as needed). */
let scratch = new ArrayBuffer(0);

/**
 * `values` as queue.writeBuffer takes them: Dawn's Node bindings refuse a view of a SharedArrayBuffer
 * (the data pipeline's ring, whose views a batch is uploaded from), so those are copied into a
 * reused host buffer first — writeBuffer copies them at once, so it is free again on return.
 */
function writable(values: Float32Array | Int32Array): Float32Array | Int32Array {
  if (!(values.buffer instanceof SharedArrayBuffer)) return values;
  if (scratch.byteLength < values.byteLength)
    scratch = new ArrayBuffer(Math.max(values.byteLength, 2 * scratch.byteLength));
  const copy =
    values instanceof Float32Array
      ? new Float32Array(scratch, 0, values.length)
      : new Int32Array(scratch, 0, values.length);
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
    rings.get(b)?.dispose();
    rings.delete(b);
    return;
  }
  if (original) return;
  const tfjsUpload = b.uploadToGPU;
  installed.set(b, tfjsUpload);
  b.uploadToGPU = function (this: WebgpuBackendInternals, id: DataId) {
    const d = this.tensorMap.get(id);
    const values = uploadValues(d);
    if (!values) return tfjsUpload.call(this, id);
    this.queue.writeBuffer(attachBuffer(this, d!, 4 * values.length), 0, writable(values));
  };
}

/**
 * Staged uploads of a batch: its arrays copied once, straight from the pipeline's shared memory into a
 * mapped staging buffer that is used again and again, then copied on the device into each tensor's
 * buffer. Through queue.writeBuffer a batch in shared memory is copied twice on the host (into the
 * scratch buffer, then into Dawn's staging memory): ~1 ms of a tiny step's 7.8 on a slower H100 host.
 * A staging buffer is mapped again (mapAsync) once its copies are submitted; it is taken again only
 * when that resolved, i.e. when the device has finished copying out of it. With none ready and
 * STAGING_BUFFERS in use the batch goes through writeBuffer: nothing waits.
 */
const STAGING_BUFFERS = 4;
/**
 * Batches smaller than this go through writeBuffer: the staging path's fixed cost (an encoder, a submit, a map)
 * outweighs one copy.
 */
export const STAGED_UPLOAD_MIN_BYTES = 64 << 10;

class StagingRing {
  private readonly ready: StagingBuffer[] = [];
  private inUse = 0;
  private disposed = false;
  /** Batches staged, and batches that went through writeBuffer because no staging buffer was ready. */
  staged = 0;
  missed = 0;

  constructor(private readonly b: WebgpuBackendInternals) {}

  get readyCount(): number {
    return this.ready.length;
  }

  /** A mapped staging buffer of at least `bytes`, or null when none is ready and the ring is full. */
  take(bytes: number): StagingBuffer | null {
    const i = this.ready.findIndex((x) => x.size >= bytes);
    if (i >= 0) {
      this.inUse++;
      return this.ready.splice(i, 1)[0];
    }
    // Ready ones too small for this batch (a larger bucket) make room for one that fits.
    if (this.ready.length > 0) this.ready.shift()!.destroy();
    else if (this.inUse >= STAGING_BUFFERS) return null;
    this.inUse++;
    // Rounded up to 1 MiB, so a few bucket shapes share buffers.
    return this.b.device.createBuffer({
      size: Math.ceil(bytes / (1 << 20)) * (1 << 20),
      usage: MAP_WRITE | COPY_SRC,
      mappedAtCreation: true,
    });
  }

  /** After the copies out of `buffer` are submitted: mapped again, it is ready once the device is done with it. */
  give(buffer: StagingBuffer): void {
    buffer.mapAsync(MAP_WRITE).then(
      () => {
        this.inUse--;
        if (this.disposed) buffer.destroy();
        else this.ready.push(buffer);
      },
      () => {
        this.inUse--;
        buffer.destroy();
      },
    );
  }

  dispose(): void {
    this.disposed = true;
    for (const x of this.ready) x.destroy();
    this.ready.length = 0;
  }
}

const rings = new WeakMap<object, StagingRing>();

/**
 * On this backend: batches staged, batches sent through writeBuffer for want of a ready staging buffer, staging buffers
 * ready now.
 */
export function stagedUploadStats(backend: unknown): { staged: number; missed: number; ready: number } {
  const r = rings.get(backend as object);
  return { staged: r?.staged ?? 0, missed: r?.missed ?? 0, ready: r?.readyCount ?? 0 };
}

/**
 * Uploads the tensors (made from host values, not yet on the device) in one staged copy where the
 * queue uploads are installed and they are at least STAGED_UPLOAD_MIN_BYTES together; otherwise, or
 * when no staging buffer is ready, each through uploadToGPU. Like uploadToGPU, it drops the host
 * values: the caller may reuse the arrays they were made from as soon as it returns.
 */
export function uploadTensors(backend: unknown, ids: readonly DataId[]): void {
  const b = backend as WebgpuBackendInternals;
  const each = () => {
    for (const id of ids) b.uploadToGPU(id);
  };
  if (!installed.has(b)) return each();
  const items: { d: TensorData; values: Float32Array | Int32Array; offset: number }[] = [];
  let bytes = 0;
  for (const id of ids) {
    const d = b.tensorMap.get(id);
    const values = uploadValues(d);
    if (!values) return each();
    items.push({ d: d!, values, offset: bytes });
    // copyBufferToBuffer needs offsets and sizes in multiples of 4: every element is 4 bytes.
    bytes += 4 * values.length;
  }
  if (bytes < STAGED_UPLOAD_MIN_BYTES) return each();
  let ring = rings.get(b);
  if (!ring) rings.set(b, (ring = new StagingRing(b)));
  const staging = ring.take(bytes);
  if (!staging) {
    ring.missed++;
    return each();
  }
  const mapped = staging.getMappedRange(0, bytes);
  for (const x of items)
    (x.values instanceof Float32Array
      ? new Float32Array(mapped, x.offset, x.values.length)
      : new Int32Array(mapped, x.offset, x.values.length)
    ).set(x.values);
  staging.unmap();
  const encoder = b.device.createCommandEncoder();
  for (const x of items) {
    const size = 4 * x.values.length;
    const buffer = attachBuffer(b, x.d, Math.max(4, size));
    if (size > 0) encoder.copyBufferToBuffer(staging, x.offset, buffer, 0, size);
  }
  // Submitted now, ahead of tfjs's encoder: as with writeBuffer, nothing it holds unsubmitted can use
  // these buffers (tfjs pools a buffer again only once the commands that used it are submitted).
  b.queue.submit([encoder.finish()]);
  ring.staged++;
  ring.give(staging);
}
