// The prefetch ring: a fixed set of preallocated slots in shared memory, filled by producer threads
// ahead of the trainer and handed to it without a copy. Slot s carries batches s, s+depth, s+2·depth…
// in order, so delivery is deterministic with any number of producers. Coordination is Atomics on
// a small control array: per slot a state and the sequence number it may hold next.

export const SLOT_EMPTY = 0;
export const SLOT_FILLING = 1;
export const SLOT_FULL = 2;
export const SLOT_IN_USE = 3;
/** Set in control[0] when a producer failed; the consumer then throws its message. */
export const RING_FAILED = 1;
/** Set in control[1] when the consumer closes the ring; producers stop at their next batch. */
export const RING_STOPPED = 1;

/** The largest batch any bucket produces: slots are sized for it once, up front. */
export interface SlotLayout {
  batchSize: number;
  maxTokens: number;
  maxFrames: number;
  refFrames: number;
  nMels: number;
}

/** One batch's arrays, views into a slot sized to this batch's bucket shape. */
export interface BatchViews {
  /** [B, T_text] token ids, 0-padded. */
  tokens: Int32Array;
  /** [B] real token counts. */
  textLengths: Int32Array;
  /** [B] language indices. */
  languages: Int32Array;
  /** [B] speaker indices. */
  speakers: Int32Array;
  /** [B, T_mel, nMels] normalised log-mel, 0-padded. */
  mel: Float32Array;
  /** [B] real frame counts; 0 for filler items (no loss). */
  melLengths: Int32Array;
  /** [B, T_ref, nMels] reference mel of another clip of the same speaker. */
  refMel: Float32Array;
  /** [B] real reference frames. */
  refLengths: Int32Array;
  /** [B] the reference's median log F0 (model.speaker_pitch; 0: unknown, or not asked for). */
  refPitch: Float32Array;
  /** [B] the speaker's log speaking rate (model.reference_rate; 0: unknown, or not asked for). */
  refRate: Float32Array;
  /** [B, T_mel] each target frame's log F0 (model.pitch_contour; 0: unvoiced, or not asked for). */
  melPitch: Float32Array;
}

export interface BatchShape {
  batchSize: number;
  tokens: number;
  frames: number;
  refFrames: number;
  nMels: number;
}

interface SlotBuffers {
  sab: SharedArrayBuffer;
  offsets: Record<keyof BatchViews, number>;
}

/** Byte layout of one slot for the largest shape; smaller batches use prefixes of each array. */
function slotBuffers(l: SlotLayout): SlotBuffers {
  const sizes: [keyof BatchViews, number][] = [
    ['tokens', l.batchSize * l.maxTokens],
    ['textLengths', l.batchSize],
    ['languages', l.batchSize],
    ['speakers', l.batchSize],
    ['melLengths', l.batchSize],
    ['refLengths', l.batchSize],
    ['refPitch', l.batchSize],
    ['refRate', l.batchSize],
    ['melPitch', l.batchSize * l.maxFrames],
    ['mel', l.batchSize * l.maxFrames * l.nMels],
    ['refMel', l.batchSize * l.refFrames * l.nMels],
  ];
  const offsets = {} as Record<keyof BatchViews, number>;
  let bytes = 0;
  for (const [name, n] of sizes) {
    offsets[name] = bytes;
    bytes += n * 4;
  }
  return { sab: new SharedArrayBuffer(bytes), offsets };
}

export function slotBytes(l: SlotLayout): number {
  return slotBuffers(l).sab.byteLength;
}

/** Views of a slot shaped for one batch. */
export function viewsFor(sab: SharedArrayBuffer, offsets: Record<keyof BatchViews, number>, s: BatchShape): BatchViews {
  const i32 = (name: keyof BatchViews, n: number) => new Int32Array(sab, offsets[name], n);
  const f32 = (name: keyof BatchViews, n: number) => new Float32Array(sab, offsets[name], n);
  return {
    tokens: i32('tokens', s.batchSize * s.tokens),
    textLengths: i32('textLengths', s.batchSize),
    languages: i32('languages', s.batchSize),
    speakers: i32('speakers', s.batchSize),
    melLengths: i32('melLengths', s.batchSize),
    refLengths: i32('refLengths', s.batchSize),
    refPitch: f32('refPitch', s.batchSize),
    refRate: f32('refRate', s.batchSize),
    melPitch: f32('melPitch', s.batchSize * s.frames),
    mel: f32('mel', s.batchSize * s.frames * s.nMels),
    refMel: f32('refMel', s.batchSize * s.refFrames * s.nMels),
  };
}

/** What producers and the consumer share: transferable to worker threads as is. */
export interface RingShared {
  depth: number;
  layout: SlotLayout;
  /** Int32 control: [failed, 0, 0, 0, then per slot: state, allowedSeq, bucket, fillers]. */
  control: SharedArrayBuffer;
  /** Error text of a failed producer (UTF-8, length-prefixed). */
  errorText: SharedArrayBuffer;
  slots: SharedArrayBuffer[];
  offsets: Record<keyof BatchViews, number>;
}

const HEADER = 4;
const PER_SLOT = 4;
export const ctl = {
  state: (slot: number) => HEADER + slot * PER_SLOT,
  allowedSeq: (slot: number) => HEADER + slot * PER_SLOT + 1,
  bucket: (slot: number) => HEADER + slot * PER_SLOT + 2,
  fillers: (slot: number) => HEADER + slot * PER_SLOT + 3,
};

export function createRing(depth: number, layout: SlotLayout): RingShared {
  const first = slotBuffers(layout);
  const slots = [first.sab];
  for (let i = 1; i < depth; i++) slots.push(slotBuffers(layout).sab);
  const control = new SharedArrayBuffer((HEADER + depth * PER_SLOT) * 4);
  const c = new Int32Array(control);
  for (let s = 0; s < depth; s++) c[ctl.allowedSeq(s)] = s;
  return { depth, layout, control, errorText: new SharedArrayBuffer(4096), slots, offsets: first.offsets };
}

/** Producer side: block (in a worker thread) until slot seq % depth may take batch `seq`. */
export function acquireForFill(ring: RingShared, seq: number, timeoutMs = Infinity): number | undefined {
  const c = new Int32Array(ring.control);
  const slot = seq % ring.depth;
  for (;;) {
    if (Atomics.load(c, 0) === RING_FAILED || Atomics.load(c, 1) === RING_STOPPED) return undefined;
    if (
      Atomics.load(c, ctl.allowedSeq(slot)) === seq &&
      Atomics.compareExchange(c, ctl.state(slot), SLOT_EMPTY, SLOT_FILLING) === SLOT_EMPTY
    )
      return slot;
    const state = Atomics.load(c, ctl.state(slot));
    if (Atomics.wait(c, ctl.state(slot), state, Math.min(timeoutMs, 1000)) === 'timed-out' && timeoutMs !== Infinity)
      return undefined;
  }
}

export function publishFilled(ring: RingShared, slot: number, bucket: number, fillers: number): void {
  const c = new Int32Array(ring.control);
  c[ctl.bucket(slot)] = bucket;
  c[ctl.fillers(slot)] = fillers;
  Atomics.store(c, ctl.state(slot), SLOT_FULL);
  Atomics.notify(c, ctl.state(slot));
}

export function failRing(ring: RingShared, message: string): void {
  const bytes = new TextEncoder().encode(message.slice(0, 1000));
  const view = new Uint8Array(ring.errorText);
  new DataView(ring.errorText).setUint32(0, bytes.length, true);
  view.set(bytes, 4);
  const c = new Int32Array(ring.control);
  Atomics.store(c, 0, RING_FAILED);
  for (let s = 0; s < ring.depth; s++) Atomics.notify(c, ctl.state(s));
}

export function ringError(ring: RingShared): string | undefined {
  const c = new Int32Array(ring.control);
  if (Atomics.load(c, 0) !== RING_FAILED) return undefined;
  const n = new DataView(ring.errorText).getUint32(0, true);
  return new TextDecoder().decode(new Uint8Array(ring.errorText, 4, n));
}

/** Consumer side: wait (without blocking the event loop) until batch `seq` is in its slot. */
export async function takeFilled(
  ring: RingShared,
  seq: number,
): Promise<{ slot: number; bucket: number; fillers: number; fullSlots: number }> {
  const c = new Int32Array(ring.control);
  const slot = seq % ring.depth;
  for (;;) {
    const err = ringError(ring);
    if (err !== undefined) throw new Error(err);
    if (Atomics.load(c, ctl.allowedSeq(slot)) === seq && Atomics.load(c, ctl.state(slot)) === SLOT_FULL) break;
    const state = Atomics.load(c, ctl.state(slot));
    const w = Atomics.waitAsync(c, ctl.state(slot), state, 200);
    // waitAsync alone does not keep Node's event loop alive; a timer does, and bounds the re-check
    // of a failed or stopped ring.
    if (w.async) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([w.value, new Promise((r) => (timer = setTimeout(r, 250)))]);
      clearTimeout(timer);
    }
  }
  let fullSlots = 0;
  for (let s = 0; s < ring.depth; s++) if (Atomics.load(c, ctl.state(s)) === SLOT_FULL) fullSlots++;
  Atomics.store(c, ctl.state(slot), SLOT_IN_USE);
  return { slot, bucket: c[ctl.bucket(slot)], fillers: c[ctl.fillers(slot)], fullSlots };
}

/** Consumer side: tell producers to stop and wake any that wait for a slot. */
export function stopRing(ring: RingShared): void {
  const c = new Int32Array(ring.control);
  Atomics.store(c, 1, RING_STOPPED);
  for (let s = 0; s < ring.depth; s++) Atomics.notify(c, ctl.state(s));
}

export function ringStopped(ring: RingShared): boolean {
  return Atomics.load(new Int32Array(ring.control), 1) === RING_STOPPED;
}

/** Consumer side: the batch in `slot` has been uploaded; the slot may take batch seq + depth. */
export function releaseSlot(ring: RingShared, slot: number): void {
  const c = new Int32Array(ring.control);
  Atomics.add(c, ctl.allowedSeq(slot), ring.depth);
  Atomics.store(c, ctl.state(slot), SLOT_EMPTY);
  Atomics.notify(c, ctl.state(slot));
}
