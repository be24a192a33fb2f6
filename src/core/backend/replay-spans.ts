// Where a replayed step's device time goes, from timestamp queries at its compute passes' edges.
//
// NVML's busy share says how much of the wall the GPU ran a kernel, not why it ran none the rest of
// the time. A replayed step is one to a few compute passes (StepCapture.replayInParts submits it in
// parts); the device writes a timestamp where each pass begins and ends. From them, per step:
//   span     the first pass's beginning to the last pass's end;
//   inside   the passes' own time (the kernels, and the gaps between the pass's dependent dispatches);
//   between  the previous timed step's end to this one's beginning (the step's input and output copies,
//            the next batch's alignment forward, and whatever the device waited for from the host).
// With NVML's busy share over the same steps, inside minus the kernels' time is the idle time between
// a pass's dispatches; between is the time outside the passes (describeSpans, below, names its parts).
// The queries cost no readback per step: each step resolves its timestamps into a slot of one buffer
// on the device, and a full round of slots is read back at once, without waiting.
import { BufferUsage, type GpuBuffer, type GpuDevice, type GpuEncoder } from './gpu-types.js';

/** Steps resolved per readback. */
const SLOTS = 64;
/** Timestamps a slot holds: 256 bytes (resolveQuerySet's offset alignment), two per pass. */
const PER_SLOT = 32;
/**
 * Steps timed at most in a run (as the replays' encoding times: StepCapture.encodeMs): a long run's medians come from
 * its first ones, and the record stays bounded.
 */
const MAX_STEPS = 10_240;
const { QUERY_RESOLVE, COPY_SRC, COPY_DST, MAP_READ } = BufferUsage;

interface QueryDevice extends GpuDevice {
  readonly features: { has(name: string): boolean };
  createQuerySet(d: { type: 'timestamp'; count: number }): { destroy(): void };
}
interface QueryEncoder extends GpuEncoder {
  resolveQuerySet(set: unknown, first: number, count: number, destination: GpuBuffer, offset: number): void;
}
interface ReadBuffer extends GpuBuffer {
  mapAsync(mode: number): Promise<void>;
  getMappedRange(): ArrayBuffer;
  unmap(): void;
}

/** One timed step: its passes' edges in device nanoseconds. */
export interface StepSpan {
  /** The first pass's beginning and the last pass's end. */
  beginNs: bigint;
  endNs: bigint;
  /** The passes' own time. */
  insideNs: number;
  passes: number;
}

/** Medians over the timed replayed steps (ms); null where there were too few. */
export interface ReplaySpanSummary {
  /** Steps whose timestamps came back. */
  steps: number;
  spanMs: number | null;
  insideMs: number | null;
  /** Between consecutive timed steps only. */
  betweenMs: number | null;
  /** Steps not measured: both read buffers still mapping, more passes than a slot holds, or timestamps out of order. */
  dropped: number;
}

/**
 * A step's spans from the timestamps of its `passes` passes (begin, end, begin, end, …), or null when
 * the device gave one out of order (a pass ending before it began, a pass beginning before the one
 * before it ended): such a step is not counted.
 */
export function stepSpan(stamps: ArrayLike<bigint>, passes: number): StepSpan | null {
  if (passes < 1 || stamps.length < 2 * passes) return null;
  let inside = 0n;
  for (let p = 0; p < passes; p++) {
    const [b, e] = [stamps[2 * p], stamps[2 * p + 1]];
    if (e < b || (p > 0 && b < stamps[2 * p - 1])) return null;
    inside += e - b;
  }
  return { beginNs: stamps[0], endNs: stamps[2 * passes - 1], insideNs: Number(inside), passes };
}

/**
 * Medians over the steps' spans, in step order: a null is a step not measured (counted as dropped),
 * a hole one whose timestamps have not come back. between: only where step i + 1 followed step i.
 */
export function summarizeSpans(spans: readonly (StepSpan | null | undefined)[]): ReplaySpanSummary {
  // Medians of nanoseconds, then ms.
  const median = (xs: number[]) => {
    if (xs.length === 0) return null;
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return (s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2) / 1e6;
  };
  const kept: StepSpan[] = [];
  const between: number[] = [];
  let dropped = 0;
  for (let i = 0; i < spans.length; i++) {
    const s = spans[i];
    if (s === null) dropped++;
    if (!s) continue;
    kept.push(s);
    const before = i > 0 ? spans[i - 1] : null;
    if (before && s.beginNs >= before.endNs) between.push(Number(s.beginNs - before.endNs));
  }
  return {
    steps: kept.length,
    spanMs: median(kept.map((s) => Number(s.endNs - s.beginNs))),
    insideMs: median(kept.map((s) => s.insideNs)),
    betweenMs: median(between),
    dropped,
  };
}

/**
 * The timestamps of the replayed steps on one device. A replay asks `pass(i)` for each pass's
 * timestampWrites, calls `close` after its last pass (in the same encoder) and `afterSubmit` once
 * that encoder's work is submitted. Kept in order of the steps; a step whose round's readback could
 * not start (the one before still pending) is dropped and counted.
 */
export class ReplaySpans {
  private readonly querySet: { destroy(): void };
  private readonly resolved: GpuBuffer;
  private readonly reads: ReadBuffer[];
  /** The read buffers' mappings in flight. */
  private readonly pending: (Promise<void> | null)[] = [null, null];
  private slot = 0;
  private passesOf: number[] = [];
  private toRead: { buffer: number; passes: number[]; first: number } | null = null;
  /** Spans in step order (null: not measured; a hole: not back yet). */
  private readonly spans: (StepSpan | null)[] = [];
  /** Steps closed so far: the index of the current round's first step. */
  private order = 0;
  private disposed = false;

  private constructor(private readonly device: QueryDevice) {
    this.querySet = device.createQuerySet({ type: 'timestamp', count: SLOTS * PER_SLOT });
    this.resolved = device.createBuffer({ size: SLOTS * PER_SLOT * 8, usage: QUERY_RESOLVE | COPY_SRC });
    this.reads = [0, 1].map(
      () => device.createBuffer({ size: SLOTS * PER_SLOT * 8, usage: MAP_READ | COPY_DST }) as ReadBuffer,
    );
  }

  /** MAX_STEPS steps are closed: later replays write no timestamps. */
  private get full(): boolean {
    return this.order + this.slot >= MAX_STEPS;
  }

  /** The spans of a device with timestamp queries, or null. */
  static create(device: GpuDevice): ReplaySpans | null {
    const d = device as QueryDevice;
    return d.features?.has('timestamp-query') && typeof d.createQuerySet === 'function' ? new ReplaySpans(d) : null;
  }

  /**
   * Pass i's descriptor for the step being encoded; past the slot's room the pass is untimed (and the step not
   * measured).
   */
  pass(i: number): object | undefined {
    if (2 * i + 2 > PER_SLOT || this.full) return undefined;
    const base = this.slot * PER_SLOT;
    return {
      timestampWrites: {
        querySet: this.querySet,
        beginningOfPassWriteIndex: base + 2 * i,
        endOfPassWriteIndex: base + 2 * i + 1,
      },
    };
  }

  /** After the step's last pass (`passes` of them): its timestamps into their slot; a full round to a read buffer. */
  close(encoder: GpuEncoder, passes: number): void {
    if (this.full) return;
    const timed = Math.min(passes, PER_SLOT / 2);
    (encoder as QueryEncoder).resolveQuerySet(
      this.querySet,
      this.slot * PER_SLOT,
      2 * timed,
      this.resolved,
      this.slot * PER_SLOT * 8,
    );
    this.passesOf.push(passes > timed ? 0 : passes);
    this.slot++;
    if (this.slot === SLOTS) this.copyOut(encoder);
  }

  /** The round's slots to a free read buffer in `encoder` (none free: the round is not measured). */
  private copyOut(encoder: GpuEncoder): void {
    const first = this.order;
    this.order += this.passesOf.length;
    const free = this.pending.findIndex((p) => p === null);
    if (free < 0) this.passesOf.forEach((_, i) => (this.spans[first + i] = null));
    else {
      encoder.copyBufferToBuffer(this.resolved, 0, this.reads[free], 0, this.slot * PER_SLOT * 8);
      this.toRead = { buffer: free, passes: this.passesOf, first };
    }
    this.slot = 0;
    this.passesOf = [];
  }

  /** Once the encoder that `close` filled is submitted: a round copied out is mapped (never waited for here). */
  afterSubmit(): void {
    const r = this.toRead;
    if (!r) return;
    this.toRead = null;
    const buffer = this.reads[r.buffer];
    this.pending[r.buffer] = buffer.mapAsync(MAP_READ).then(
      () => {
        if (this.disposed) return;
        const stamps = new BigUint64Array(buffer.getMappedRange().slice(0));
        buffer.unmap();
        this.pending[r.buffer] = null;
        r.passes.forEach(
          (p, s) =>
            (this.spans[r.first + s] =
              p === 0 ? null : stepSpan(stamps.subarray(s * PER_SLOT, s * PER_SLOT + 2 * p), p)),
        );
      },
      () => {
        // A destroyed buffer or a lost device: the round is not measured.
        this.pending[r.buffer] = null;
        r.passes.forEach((_, s) => (this.spans[r.first + s] = null));
      },
    );
  }

  /** Every step closed so far read back (the partial last round too), then their medians (of the first MAX_STEPS). */
  async summary(): Promise<ReplaySpanSummary> {
    if (this.slot > 0 && !this.disposed) {
      await Promise.all(this.pending);
      const encoder = this.device.createCommandEncoder();
      this.copyOut(encoder);
      this.device.queue.submit([encoder.finish()]);
      this.afterSubmit();
    }
    await Promise.all(this.pending);
    return summarizeSpans(Array.from({ length: this.order }, (_, i) => this.spans[i]));
  }

  dispose(): void {
    this.disposed = true;
    this.querySet.destroy();
    this.resolved.destroy();
    for (const b of this.reads) b.destroy();
  }
}

/** A replayer's spans as a run records them, or why there are none. */
export type DeviceSpans = (ReplaySpanSummary & { available: true }) | { available: false; reason: string };

/** One replayer's timer, made at its first replay (all its captures share it: their order is the calls'). */
export class SpanTimer {
  private spans: ReplaySpans | null | undefined;

  /** The capture's replays write their passes' timestamps (a device without timestamp queries: none). */
  attach(capture: { spans: ReplaySpans | null }, device: GpuDevice): void {
    if (capture.spans || this.spans === null) return;
    if (this.spans === undefined) this.spans = ReplaySpans.create(device);
    capture.spans = this.spans;
  }

  /** The medians, waiting at most 5 s for the last timestamps (a lost device may never answer). */
  async summary(): Promise<DeviceSpans> {
    if (this.spans === null) return { available: false, reason: 'the WebGPU device has no timestamp-query feature' };
    if (this.spans === undefined) return { available: false, reason: 'nothing was replayed' };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(resolve, 5000, null)));
    try {
      const r = await Promise.race([this.spans.summary(), timeout]);
      return r
        ? { available: true, ...r }
        : { available: false, reason: 'the timestamps did not come back from the device within 5 s' };
    } finally {
      clearTimeout(timer);
    }
  }

  dispose(): void {
    this.spans?.dispose();
  }
}

/**
 * One line on where a replayed step's device time goes, or null when not measured: the step's passes
 * (waits for the host's next part apart), the alignment forward's, and the rest of the device's cycle
 * between steps (uploads, copies, command-buffer boundaries, waiting for the host). `stepMs`: the
 * host's median step, beside which the device's cycle is read.
 */
export function describeSpans(
  step: DeviceSpans | undefined,
  alignment: DeviceSpans | undefined,
  stepMs: number,
): string | null {
  if (!step?.available || step.insideMs === null || step.spanMs === null) return null;
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const parts = [`its passes ${ms(step.insideMs)} (their kernels and the gaps between dependent dispatches)`];
  if (step.spanMs - step.insideMs >= 0.005)
    parts.push(`${ms(step.spanMs - step.insideMs)} between its parts (the device waiting for the host's next part)`);
  const aligned = alignment?.available && alignment.insideMs !== null ? alignment.insideMs : null;
  if (aligned !== null) parts.push(`the alignment forward ${ms(aligned)}`);
  if (step.betweenMs !== null) {
    const rest = Math.max(0, step.betweenMs - (aligned ?? 0));
    parts.push(`${ms(rest)} else between steps (uploads, copies, command-buffer boundaries, waiting for the host)`);
  }
  const cycle =
    step.betweenMs !== null
      ? `; the device's cycle ${ms(step.spanMs + step.betweenMs)} against a ${ms(stepMs)} median step`
      : '';
  return (
    `device time of a replayed step (timestamps at its passes' edges, ${step.steps} ` +
    `steps): ${parts.join(', ')}${cycle}`
  );
}
