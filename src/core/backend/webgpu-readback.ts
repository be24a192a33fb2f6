// Readbacks into memory the caller keeps. tfjs's read of a tensor on the webgpu backend returns a new
// ArrayBuffer each time (the mapped range sliced). Per training step the alignment reads its scores
// (a tiny batch: 1 MB) and the search copied them once more into its worker threads' parts: 2 MB of
// fresh array buffers a step. V8 runs a full garbage collection whenever such memory outside its heap
// has grown by about 64 MB, so every ~33 tiny steps the host stopped for 10–30 ms (seen on an H100
// host: the step's median 6.6 ms, its mean 7.0–8.3 ms, the difference mostly those stops). Read into
// a reused shared array instead, the scores cost no allocation and go to the worker threads as views.
type DataId = object;
interface MapReadBuffer {
  mapAsync(mode: number): Promise<void>;
  getMappedRange(offset?: number, size?: number): ArrayBuffer;
  unmap(): void;
}
interface Backend {
  tensorMap: { get(id: DataId): { dtype: string; values: ArrayLike<number> | null; resource: unknown } | undefined };
  bufferManager: { acquireBuffer(size: number, usage: number): MapReadBuffer; releaseBuffer(b: MapReadBuffer): void };
  commandEncoder: { copyBufferToBuffer(src: unknown, srcOffset: number, dst: unknown, dstOffset: number, size: number): void } | null;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

const MAP_READ = 0x1;
const COPY_DST = 0x8;

/**
 * Copies a float32 tensor's values on the webgpu backend into `into` (length: the tensor's size). The
 * copy to a staging buffer is submitted at once, so the tensor may be disposed when this returns its
 * promise; tfjs's pool keeps the staging buffer for the next read of this size.
 */
export async function readFloat32Into(backend: unknown, dataId: DataId, into: Float32Array): Promise<void> {
  const b = backend as Backend;
  const d = b.tensorMap.get(dataId);
  if (!d || d.dtype !== 'float32') throw new Error(`readFloat32Into: a float32 tensor on the webgpu backend is needed, not ${d ? d.dtype : 'a disposed one'}`);
  if (d.values != null) {
    into.set(d.values);
    return;
  }
  const bytes = 4 * into.length;
  const staging = b.bufferManager.acquireBuffer(bytes, COPY_DST | MAP_READ);
  b.ensureCommandEncoderReady();
  b.endComputePassEncoder();
  b.commandEncoder!.copyBufferToBuffer(d.resource, 0, staging, 0, bytes);
  b.submitQueue();
  await staging.mapAsync(MAP_READ);
  into.set(new Float32Array(staging.getMappedRange(0, bytes)));
  staging.unmap();
  b.bufferManager.releaseBuffer(staging);
}

/** Float32 arrays in shared memory, reused: worker threads read them without a copy. */
export class SharedFloatPool {
  private readonly free: Float32Array[] = [];

  /** An array of `length` values (a view of a pooled one at least that long) and the call that gives it back. */
  take(length: number): { array: Float32Array; give: () => void } {
    const i = this.free.findIndex((a) => a.length >= length);
    const whole = i >= 0 ? this.free.splice(i, 1)[0] : new Float32Array(new SharedArrayBuffer(4 * length));
    let given = false;
    return {
      array: whole.subarray(0, length),
      give: () => {
        if (given) return;
        given = true;
        this.free.push(whole);
      },
    };
  }

  /** Arrays waiting to be taken again. */
  get size(): number {
    return this.free.length;
  }
}
