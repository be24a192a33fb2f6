// A shape's capture from eager calls to replays: run once unrecorded, recorded, recorded again and
// compared, then replayed (or refused with the reason); what the run records of it; and CallReplayer,
// the capture and replay of a function of device tensors per shape key (the alignment's forward).
import type * as tfTypes from '@tensorflow/tfjs-core';
import { type DeviceSpans, SpanTimer } from './replay-spans.js';
import { CaptureRefused, StepCapture } from './step-capture.js';
import { compareRecordings, onDeviceOnly, type Recording, recordStep } from './step-recording.js';
import type { WebgpuBackend } from './webgpu-internals.js';

type Tf = typeof tfTypes;

/**
 * Destroys the buffers tfjs's pool holds free (what the eager steps used and gave back): once a step
 * replays from its own arena they would stay allocated beside it. Returns the bytes released.
 */
export function releasePooledBuffers(tf: Tf): number {
  const manager = (tf.backend() as unknown as WebgpuBackend).bufferManager;
  let bytes = 0;
  for (const list of manager.freeBuffers.values()) {
    for (const b of list) {
      bytes += b.size;
      b.destroy();
    }
    manager.numFreeBuffers -= list.length;
    list.length = 0;
  }
  manager.numBytesAllocated -= bytes;
  return bytes;
}

/**
 * Where one shape's capture stands: run once unrecorded (plan: what it makes once and keeps, such as
 * cached constants, is made there), recorded, recorded again to compare, then replayed (or refused).
 */
export interface CaptureState {
  phase: 'plan' | 'record' | 'verify' | 'replay' | 'refused';
  last?: Recording;
  capture?: StepCapture;
  reason?: string;
  /** Times this shape was recorded again because a replay found its tensors changed. */
  recaptures: number;
  /** Free buffers of tfjs's pool destroyed once the replay was built (bytes). */
  pooledBytesReleased?: number;
}

/**
 * Moves a shape's capture on after one of its eager calls was recorded: the first recording is kept;
 * the second is compared with it and, when they agree, built into a replay; anything else refuses the
 * shape with the reason. Returns true when the shape was captured or refused (worth telling).
 */
export function advanceCapture(tf: Tf, s: CaptureState, recording: Recording): boolean {
  const refuse = (reason: string) => {
    s.phase = 'refused';
    s.reason = reason;
    s.last = undefined;
    return true;
  };
  if (recording.refused) return refuse(recording.refused);
  if (s.phase === 'record') {
    s.last = recording;
    s.phase = 'verify';
    return false;
  }
  const differs = compareRecordings(s.last!, recording);
  s.last = undefined;
  if (differs) return refuse(`two calls of this shape dispatched different work: ${differs}`);
  try {
    // The eager calls' pooled buffers go first: the arena does not come on top of them.
    s.pooledBytesReleased = releasePooledBuffers(tf);
    s.capture = StepCapture.build(tf, recording);
    s.phase = 'replay';
  } catch (e) {
    if (!(e instanceof CaptureRefused)) throw e;
    return refuse(e.message);
  }
  return true;
}

/**
 * If a replayed shape's tensors changed (stale), drops its replay so that it is recorded again; the
 * reason stays on the state. Returns whether it did.
 */
export function dropStaleCapture(s: CaptureState): boolean {
  const stale = s.capture!.stale();
  if (stale === null) return false;
  s.capture!.dispose();
  s.capture = undefined;
  s.recaptures++;
  s.phase = 'record';
  s.reason = `recorded again: ${stale}`;
  return true;
}

/** A shape's capture as a run records it. */
export interface ShapeCaptureSummary {
  shape: string;
  state: CaptureState['phase'];
  programs: number | null;
  arenaBytes: number | null;
  replays: number;
  recaptures: number;
  reason: string | null;
}

/** The summary of each shape's capture. */
export function summarizeShapes(shapes: ReadonlyMap<string, CaptureState>): ShapeCaptureSummary[] {
  return [...shapes].map(([shape, s]) => ({
    shape,
    state: s.phase,
    programs: s.capture?.programs ?? null,
    arenaBytes: s.capture?.bytes ?? null,
    replays: s.capture?.replays ?? 0,
    recaptures: s.recaptures,
    reason: s.reason ?? null,
  }));
}

/** Bytes the shapes' replays hold on the device (their arenas and pinned buffers). */
export function arenaBytesOf(shapes: ReadonlyMap<string, CaptureState>): number {
  let n = 0;
  for (const s of shapes.values()) n += s.capture?.bytes ?? 0;
  return n;
}

/** One replayed function's shapes, as a run records them. */
export interface CallCaptureSummary {
  replayedCalls: number;
  eagerCalls: number;
  shapes: ShapeCaptureSummary[];
  /** The replays' device time (backend/replay-spans.ts); absent in runs recorded before xtts measured it. */
  deviceSpans?: DeviceSpans;
}

/**
 * Capture and replay of a function of device tensors whose programs depend only on the shape key (the
 * alignment's forward; a replica's update, whose variables' assignments replay as a step's do, and whose
 * host-side count the caller keeps when `fn` did not run): per shape key, its first call runs eagerly,
 * the next two are recorded, and once they agree every further call is a replay.
 */
export class CallReplayer {
  private readonly shapes = new Map<string, CaptureState>();
  private replayed = 0;
  private eager = 0;
  /** Programs of the last call, where it was a replay (else 0). */
  lastPrograms = 0;
  /** The replays' timestamps at their passes' edges. */
  private readonly spans = new SpanTimer();
  /** Told when a shape is captured, refused or recorded again. */
  onChange?: (shape: string, state: CaptureState) => void;

  constructor(private readonly tf: Tf) {}

  /** fn's outputs for these inputs (the tensors that change from call to call, in a fixed order). */
  run(key: string, inputs: readonly tfTypes.Tensor[], fn: () => tfTypes.Tensor[]): tfTypes.Tensor[] {
    let s = this.shapes.get(key);
    if (!s) {
      s = { phase: 'plan', recaptures: 0 };
      this.shapes.set(key, s);
    }
    this.lastPrograms = 0;
    if (s.phase === 'replay') {
      if (!dropStaleCapture(s)) {
        this.replayed++;
        this.lastPrograms = s.capture!.programs;
        this.spans.attach(s.capture!, (this.tf.backend() as unknown as WebgpuBackend).device);
        return s.capture!.replay(inputs);
      }
      this.onChange?.(key, s);
    }
    this.eager++;
    if (s.phase === 'refused') return fn();
    if (s.phase === 'plan') {
      s.phase = 'record';
      // As the recordings will run it: the constants it uploads are uploaded here, once.
      return onDeviceOnly(this.tf, fn);
    }
    const { outputs, recording } = recordStep(this.tf, inputs, fn);
    if (advanceCapture(this.tf, s, recording)) this.onChange?.(key, s);
    return outputs;
  }

  /** Calls replayed so far. */
  get replays(): number {
    return this.replayed;
  }

  /** Bytes the replays' buffers hold on the device. */
  get arenaBytes(): number {
    return arenaBytesOf(this.shapes);
  }

  async summary(): Promise<CallCaptureSummary> {
    return {
      replayedCalls: this.replayed,
      eagerCalls: this.eager,
      shapes: summarizeShapes(this.shapes),
      deviceSpans: await this.spans.summary(),
    };
  }

  dispose(): void {
    this.spans.dispose();
    for (const s of this.shapes.values()) s.capture?.dispose();
    this.shapes.clear();
  }
}
