// Device ↔ host copies of ranges of 4-byte values (float32, or bfloat16 pairs packed in int32 words) with one
// host copy each way (webgpu), for the data-parallel gradient exchange (training/parallel/replica.ts).
// tfjs's readback copies a buffer into a staging buffer it maps, copies the mapped range into a new array and
// then the caller copies that array where it wants it; its upload from shared memory copies into a scratch
// array, then Dawn copies into its own staging memory. Here a range is copied on the device into a mapped
// buffer kept per slot and from there once into the caller's array (a slot of host shared memory), and a host
// range once into a mapped buffer kept per slot, then on the device into the tensor's buffer at its offset.
// The buffers are made at a slot's first use and reused every step (bucket-sized: the collective's buckets
// bound them). deviceIdle waits for the device itself, apart from any transfer.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { BufferUsage, type GpuBuffer, type GpuDevice } from './gpu-types.js';
import { submitEncoded, type WebgpuBackend } from './webgpu-internals.js';

type Tf = typeof tfTypes;

interface Mappable extends GpuBuffer {
  mapAsync(mode: number, offset?: number, size?: number): Promise<void>;
  getMappedRange(offset?: number, size?: number): ArrayBuffer;
  unmap(): void;
}

const MAP_READ_MODE = 1;
const MAP_WRITE_MODE = 2;

export class HostTransfers {
  private readonly reads: Mappable[] = [];
  /** Read slots mapped and not yet taken. */
  private readonly mapped = new Set<number>();
  /** Per slot: its upload buffer, and the promise of its being mapped again after its last copy. */
  private readonly writes: { buffer: Mappable; mapped: Promise<void> }[] = [];

  constructor(
    private readonly tf: Tf,
    /** Floats a slot holds at most. */
    private readonly slotFloats: number,
  ) {
    if (tf.getBackend() !== 'webgpu') throw new Error('HostTransfers needs the webgpu backend');
  }

  private get backend(): WebgpuBackend {
    return this.tf.backend() as unknown as WebgpuBackend;
  }

  private get device(): GpuDevice & { queue: { submit(c: unknown[]): void } } {
    return this.backend.device as GpuDevice & { queue: { submit(c: unknown[]): void } };
  }

  private bufferOf(t: tfTypes.Tensor): GpuBuffer {
    const b = this.backend;
    b.uploadToGPU(t.dataId as object);
    const buffer = b.tensorMap.get(t.dataId as object)?.resource;
    if (!buffer) throw new Error('a tensor without a device buffer');
    return buffer;
  }

  private checkRange(t: tfTypes.Tensor, offset: number, count: number): void {
    if (t.dtype !== 'float32' && t.dtype !== 'int32')
      throw new Error(`host transfers move 4-byte values, not ${t.dtype}`);
    if (count > this.slotFloats || offset < 0 || offset + count > t.size)
      throw new Error(
        `range [${offset}, ${offset + count}) of ${t.size} values does not fit a slot of ${this.slotFloats}`,
      );
  }

  /**
   * Starts copying `count` values of `t` from `offset` into slot `slot`'s buffer and mapping it; resolves once take()
   * can copy them out. Fetches of several slots may be under way at once (their transfers overlap).
   */
  async fetch(t: tfTypes.Tensor, offset: number, count: number, slot: number): Promise<void> {
    this.checkRange(t, offset, count);
    return this.fetchBuffer(this.bufferOf(t), offset, count, slot);
  }

  /**
   * fetch() from a device buffer (a replay's, StepCapture's onReady): `count` 4-byte values from `offset`. The copy
   * follows the work submitted before it on the device's queue.
   */
  async fetchBuffer(buffer: GpuBuffer, offset: number, count: number, slot: number): Promise<void> {
    if (count > this.slotFloats || offset < 0 || 4 * (offset + count) > buffer.size)
      throw new Error(`${count} values at ${offset} of a buffer of ${buffer.size} bytes do not fit a slot`);
    const bytes = 4 * count;
    const staging = (this.reads[slot] ??= this.device.createBuffer({
      size: 4 * this.slotFloats,
      usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
    }) as Mappable);
    submitEncoded(this.backend);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 4 * offset, staging, 0, bytes);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(MAP_READ_MODE, 0, bytes);
    this.mapped.add(slot);
  }

  /** After fetch() resolved: copies slot `slot`'s `into.length` values into `into`, and frees the slot. */
  take(slot: number, into: Float32Array): void {
    const staging = this.reads[slot];
    if (!staging) throw new Error(`slot ${slot} has fetched nothing`);
    try {
      into.set(new Float32Array(staging.getMappedRange(0, 4 * into.length)));
    } finally {
      staging.unmap();
      this.mapped.delete(slot);
    }
  }

  /** Unmaps what was fetched and not taken. */
  unmapAll(): void {
    for (const slot of this.mapped) this.reads[slot].unmap();
    this.mapped.clear();
  }

  /**
   * Copies `from` into `t` at `offset`, through slot `slot`'s buffer: `from` may be written again once this resolves
   * (the device's copy out of the slot's buffer is ordered before the work submitted after it).
   */
  async write(t: tfTypes.Tensor, offset: number, from: Float32Array, slot: number): Promise<void> {
    this.checkRange(t, offset, from.length);
    const bytes = 4 * from.length;
    let w = this.writes[slot];
    if (!w) {
      const buffer = this.device.createBuffer({
        size: 4 * this.slotFloats,
        usage: BufferUsage.MAP_WRITE | BufferUsage.COPY_SRC,
        mappedAtCreation: true,
      } as { size: number; usage: number }) as Mappable;
      w = this.writes[slot] = { buffer, mapped: Promise.resolve() };
    }
    await w.mapped;
    new Float32Array(w.buffer.getMappedRange(0, bytes)).set(from);
    w.buffer.unmap();
    submitEncoded(this.backend);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(w.buffer, 0, this.bufferOf(t), 4 * offset, bytes);
    this.device.queue.submit([encoder.finish()]);
    // A buffer destroyed meanwhile (dispose) is never written again: its failed map is nobody's error.
    w.mapped = w.buffer.mapAsync(MAP_WRITE_MODE).catch(() => undefined);
  }

  /**
   * `from`'s values into `into` at `offset`, on the device (a buffer copy: exact bits, where tfjs's concat of int32
   * tensors goes through float32 and rounds words past 2^24).
   */
  copy(from: tfTypes.Tensor, into: tfTypes.Tensor, offset: number): void {
    if (from.dtype !== into.dtype || offset < 0 || offset + from.size > into.size)
      throw new Error(`${from.size} ${from.dtype} values do not fit ${into.size} ${into.dtype} values at ${offset}`);
    submitEncoded(this.backend);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.bufferOf(from), 0, this.bufferOf(into), 4 * offset, 4 * from.size);
    this.device.queue.submit([encoder.finish()]);
  }

  /** A tensor of `size` values on the device, its contents undefined until written. */
  empty(size: number, dtype: 'float32' | 'int32' = 'float32'): tfTypes.Tensor1D {
    const b = this.backend;
    const info = b.makeTensorInfo([size], dtype);
    b.uploadToGPU(info.dataId as object);
    return this.tf.engine().makeTensorFromTensorInfo(info) as tfTypes.Tensor1D;
  }

  /** Bytes of host-visible buffers the slots hold. */
  get bytes(): number {
    return (this.reads.filter(Boolean).length + this.writes.filter(Boolean).length) * 4 * this.slotFloats;
  }

  dispose(): void {
    for (const b of this.reads) b?.destroy();
    for (const w of this.writes) w?.buffer.destroy();
    this.reads.length = 0;
    this.writes.length = 0;
  }
}

/**
 * Resolves once the device has done the work issued so far (webgpu: what is encoded is submitted first); at once on
 * backends that compute inside each kernel call. Separates waiting for the device from a readback's own transfer.
 */
export async function deviceIdle(tf: Tf): Promise<void> {
  if (tf.getBackend() !== 'webgpu') return;
  const backend = tf.backend() as unknown as WebgpuBackend & {
    device: { queue: { onSubmittedWorkDone(): Promise<void> } };
  };
  submitEncoded(backend);
  await backend.device.queue.onSubmittedWorkDone();
}
