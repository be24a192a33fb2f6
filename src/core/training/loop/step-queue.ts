// Steps issued and not yet read back (device.pipeline_steps). After issuing step N the host reads
// step N − PIPELINE_DEPTH's flag (or its losses, where it logs), so the device holds the steps in
// between while the host prepares the next. The queue knows nothing of models: a step is whatever
// can read its figures back and free what it holds (IssuedStep).
import type * as tf from '@tensorflow/tfjs-core';
import type { LoadedBatch } from '../../data/index.js';
import type { ReplicaStepRecord } from '../../telemetry/index.js';
import type { StepRecord } from '../../telemetry/index.js';

/**
 * How many issued steps may wait unread. On an H100 host tiny's host stopped for 10–28 ms every few
 * dozen steps (full collections) and refilled the queue at only ~1 ms a step (its host work 5.8 ms of
 * a 6.7 ms device cycle): with two steps in hand the device ran dry after most stops. Four against
 * two, alternated in two calls: tiny busy 90.7–95.5% (8 runs, mean 93.1%) against 86.5–93.4% (mean
 * 90.6%), higher in every pair; small 95.4–98.4% against 92.1–96.8%; normal 98% either way. With one
 * step in hand, and every log step's losses read at once (the queue drained then: tiny's log steps
 * took 10.6–11.1 ms against 6.0–7.0 for the others), it was worse still. A host slower than the
 * device (tiny on slower CPUs) keeps it waiting either way.
 */
export const PIPELINE_DEPTH = 4;

/**
 * What a step's readback gives: its stats where it logs (STEP_STATS order, losses averaged over its micro-batches), and
 * its finite flag.
 */
export interface StepRead {
  stats: number[] | null;
  /** 1 the update was made, 0 a NaN/Inf loss or gradient (skipped), −1 a loss-scale overflow (skipped, not counted). */
  flag: number;
}

/** One optimizer step as issued to the device: what it trained on and what it did, and its readback. */
export interface IssuedStep {
  /** The last micro-batch's batch (position, bucket and shape of the step's record). */
  batch: LoadedBatch;
  learningRate: number;
  /** Utterances trained on (fillers not counted). */
  samples: number;
  kernels: number;
  flops: number;
  /** GPU programs dispatched (webgpu). */
  programs: number;
  /** Replayed from a capture; undefined where capture is off. */
  replayed?: boolean;
  /** Device time, on device-timed probe steps. */
  deviceMs?: number;
  /** Data-parallel: each replica's part of the step. */
  replicaParts: Omit<ReplicaStepRecord, 'step' | 'rank'>[];
  /** Starts the readback: the stats where `withStats`, else the finite flag alone. */
  read(withStats: boolean): Promise<StepRead>;
  /** The tensors the step holds until it is disposed (its losses, flag and outputs). */
  held(): readonly tf.Tensor[];
  /** Frees what the step holds on the device (after its read settled, or unread when the run stops). */
  dispose(): void;
}

interface Pending {
  rec: StepRecord;
  step: IssuedStep;
  read: Promise<StepRead>;
}

/** Decides what a settled step means: records it; whether the run must stop at it (training.max_nonfinite_steps). */
export type SettleStep = (rec: StepRecord, read: StepRead) => boolean;

export class StepQueue {
  private readonly pending: Pending[] = [];

  constructor(private readonly onSettled: SettleStep) {}

  get length(): number {
    return this.pending.length;
  }

  /**
   * Leaves `step` unread for now. Its readback is queued at once, ahead of the next step: queued after
   * it (read once that step is issued), the copy would wait for the next step too, and the host for
   * the device each step.
   */
  push(rec: StepRecord, step: IssuedStep, withStats: boolean): void {
    const read = step.read(withStats);
    read.catch(() => undefined);
    this.pending.push({ rec, step, read });
  }

  /** Settles pending steps, oldest first, until at most `keep` wait; where one stops the run, its step number. */
  async settle(keep: number): Promise<number | null> {
    while (this.pending.length > keep) {
      const d = this.pending.shift()!;
      let read: StepRead;
      try {
        read = await d.read;
      } finally {
        d.step.dispose();
      }
      if (this.onSettled(d.rec, read)) return d.rec.step;
    }
    return null;
  }

  /** The tensors the steps not yet read hold. */
  unreadTensors(): tf.Tensor[] {
    return this.pending.flatMap((d) => [...d.step.held()]);
  }

  /** Frees what the pending steps hold without reading them (a run that stops). */
  drop(): void {
    for (const d of this.pending.splice(0)) d.step.dispose();
  }
}
