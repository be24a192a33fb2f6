// Collective operations of data-parallel replicas (threads of one process) through one
// SharedArrayBuffer: a barrier, a bucketed all-reduce (sum) and a gather. All-reduce: every replica
// writes its bucket into its own slot; after a barrier each sums its 1/N of the bucket over all slots,
// in rank order (so the result is the same bits whoever sums it), into the shared result; after a
// second barrier every replica copies the result out. Gather: every replica writes its bucket into its
// slot and, after a barrier, reads every slot (a replica that sums them on its device, parallel/
// replica.ts) until a second barrier releases them. Buckets bound the shared memory whatever the
// model's size.
// Waiting is asynchronous (Atomics.waitAsync), so a replica's event loop — the trainer's, on rank 0 —
// keeps running; a failed replica aborts the group and every waiting replica throws its reason.

/** What one replica's side of a group needs; created by `createCollective`, sent to workers as is. */
export interface CollectiveShared {
  world: number;
  /** Floats per slot: the bucket size. */
  bucket: number;
  /** [arrived, generation, aborted: 0 no, 1 its reason being written, 2 yes] */
  control: SharedArrayBuffer;
  /** world slots then one result region, `bucket` floats each. */
  data: SharedArrayBuffer;
  /** The reason of an abort, UTF-8, zero-padded. */
  reason: SharedArrayBuffer;
  /** One float64 a replica: a time it publishes for the others (publishTime), in ms since the epoch. */
  times: SharedArrayBuffer;
}

const ARRIVED = 0;
const GENERATION = 1;
const ABORTED = 2;
const WRITING = 1;
const WRITTEN = 2;
/** How often a waiting replica looks at the abort flag besides being woken (ms). */
const POLL_MS = 1000;

/** Default bucket: 4 Mi floats (16 MiB a slot). */
export const DEFAULT_BUCKET_FLOATS = 1 << 22;

export function createCollective(world: number, bucket = DEFAULT_BUCKET_FLOATS): CollectiveShared {
  if (!Number.isInteger(world) || world < 1) throw new Error(`a group needs at least one replica, not ${world}`);
  return {
    world,
    bucket,
    control: new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT),
    data: new SharedArrayBuffer((world + 1) * bucket * Float32Array.BYTES_PER_ELEMENT),
    reason: new SharedArrayBuffer(1024),
    times: new SharedArrayBuffer(world * Float64Array.BYTES_PER_ELEMENT),
  };
}

export class CollectiveAborted extends Error {}

/** Ends every wait of the group with `reason` (from any thread; the first reason stays). */
export function abortCollective(shared: CollectiveShared, reason: string): void {
  const control = new Int32Array(shared.control);
  if (Atomics.compareExchange(control, ABORTED, 0, WRITING) === 0) {
    const bytes = new TextEncoder().encode(reason).subarray(0, shared.reason.byteLength);
    new Uint8Array(shared.reason).set(bytes);
    // Published only once written: a replica that saw the flag before read an empty reason.
    Atomics.store(control, ABORTED, WRITTEN);
  }
  Atomics.add(control, GENERATION, 1);
  Atomics.notify(control, GENERATION);
}

export function abortReason(shared: CollectiveShared): string | null {
  const control = new Int32Array(shared.control);
  let state = Atomics.load(control, ABORTED);
  if (state === 0) return null;
  // The aborting thread is copying at most a kilobyte: wait the moment it takes.
  while (state === WRITING) state = Atomics.load(control, ABORTED);
  const bytes = new Uint8Array(shared.reason);
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(bytes.slice(0, end < 0 ? bytes.length : end));
}

export class Collective {
  private readonly control: Int32Array;
  private readonly slots: Float32Array[];
  private readonly result: Float32Array;
  /**
   * The last allReduceSum's wait for every replica to arrive (its first barrier, ms): the time the slowest replica
   * took to get there, not the sum's own cost.
   */
  arrivalMs = 0;

  constructor(
    readonly shared: CollectiveShared,
    readonly rank: number,
  ) {
    if (!Number.isInteger(rank) || rank < 0 || rank >= shared.world)
      throw new Error(`rank ${rank} is not in a group of ${shared.world}`);
    this.control = new Int32Array(shared.control);
    this.slots = Array.from(
      { length: shared.world },
      (_, r) => new Float32Array(shared.data, r * shared.bucket * 4, shared.bucket),
    );
    this.result = new Float32Array(shared.data, shared.world * shared.bucket * 4, shared.bucket);
  }

  get world(): number {
    return this.shared.world;
  }

  private check(): void {
    const reason = abortReason(this.shared);
    if (reason !== null) throw new CollectiveAborted(reason);
  }

  /** Resolves once every replica of the group has called it (the same number of times). */
  async barrier(): Promise<void> {
    this.check();
    if (this.world === 1) return;
    const generation = Atomics.load(this.control, GENERATION);
    if (Atomics.add(this.control, ARRIVED, 1) === this.world - 1) {
      Atomics.store(this.control, ARRIVED, 0);
      Atomics.add(this.control, GENERATION, 1);
      Atomics.notify(this.control, GENERATION);
      return;
    }
    // A pending Atomics.waitAsync does not keep Node's event loop alive: a thread with nothing else
    // to do would exit mid-wait. This timer keeps it alive until the barrier opens.
    const alive = setInterval(() => undefined, 1 << 30);
    try {
      while (Atomics.load(this.control, GENERATION) === generation) {
        const w = Atomics.waitAsync(this.control, GENERATION, generation, POLL_MS);
        if (w.async) await w.value;
        this.check();
      }
    } finally {
      clearInterval(alive);
    }
    this.check();
  }

  /**
   * Every replica's `values` (each passes the same length, at most a bucket), as views of the shared slots in rank
   * order: valid until release(), which every replica calls once it has used them. arrivalMs is its wait. `values`
   * may be a count of values this replica wrote into ownSlot itself.
   */
  async gather(values: Float32Array | number): Promise<Float32Array[]> {
    const n = typeof values === 'number' ? values : values.length;
    if (n > this.shared.bucket) throw new Error(`gather of ${n} values, more than a bucket (${this.shared.bucket})`);
    // A count: this replica's values are in its slot already (written there straight from its device).
    if (typeof values !== 'number') this.slots[this.rank].set(values);
    const t0 = performance.now();
    await this.barrier();
    this.arrivalMs = performance.now() - t0;
    return this.slots.map((slot) => slot.subarray(0, n));
  }

  /**
   * Publishes this replica's time `at` (performance.now() of its thread) for the others, as ms since the epoch (every
   * thread's clock has its own origin); readable by every replica after the next barrier that all pass after it.
   */
  publishTime(at: number): void {
    new Float64Array(this.shared.times)[this.rank] = performance.timeOrigin + at;
  }

  /** The latest time the replicas published, on this thread's clock (performance.now()). */
  latestTime(): number {
    return Math.max(...new Float64Array(this.shared.times)) - performance.timeOrigin;
  }

  /** This replica's slot: what it gathers next may be written here directly (then gather(count)). */
  get ownSlot(): Float32Array {
    return this.slots[this.rank];
  }

  /** After a gather: resolves once every replica is done with the slots (they may be written again). */
  release(): Promise<void> {
    return this.barrier();
  }

  /** The element-wise sum of `values` over every replica (each passes the same length); a new array. */
  async allReduceSum(values: Float32Array): Promise<Float32Array> {
    const out = new Float32Array(values.length);
    this.arrivalMs = 0;
    if (this.world === 1) {
      this.check();
      out.set(values);
      return out;
    }
    const { bucket } = this.shared;
    for (let offset = 0; offset < values.length; offset += bucket) {
      const n = Math.min(bucket, values.length - offset);
      this.slots[this.rank].set(values.subarray(offset, offset + n));
      const t0 = performance.now();
      await this.barrier();
      if (offset === 0) this.arrivalMs = performance.now() - t0;
      // This replica's share of the bucket, summed over the slots in rank order.
      const share = Math.ceil(n / this.world);
      const from = Math.min(n, this.rank * share);
      const to = Math.min(n, from + share);
      const first = this.slots[0];
      this.result.set(first.subarray(from, to), from);
      for (let r = 1; r < this.world; r++) {
        const slot = this.slots[r];
        for (let i = from; i < to; i++) this.result[i] += slot[i];
      }
      await this.barrier();
      out.set(this.result.subarray(0, n), offset);
      // The next bucket's first barrier keeps the result intact until every replica has copied it.
    }
    return out;
  }
}
