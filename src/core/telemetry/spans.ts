// One record format for what a training step did with its time. The trainer writes it, `train`
// shows it live, and profile-bottleneck / analyze-data-pipeline / diagnose read it back.

/** Where a step's wall time went, in milliseconds. Spans do not overlap; `otherMs` is the rest. */
export interface StepSpans {
  /** Waiting for the prefetch ring to hand over the batch. */
  dataWaitMs: number;
  /** Creating device tensors from the batch (host -> device copies). */
  uploadMs: number;
  /** Issuing forward and backward (with an asynchronous backend, dispatch only). */
  forwardBackwardMs: number;
  /** Issuing the optimizer update. */
  optimizerMs: number;
  /** Waiting for the device (a readback of loss values, or an explicit fence). */
  syncMs: number;
  /** Data-parallel training: summing the replicas' gradients (and waiting in it for the slowest replica). */
  allReduceMs: number;
  /** Writing checkpoints, eval audio, logs. */
  checkpointMs: number;
  otherMs: number;
}

export const SPAN_NAMES = [
  'dataWaitMs',
  'uploadMs',
  'forwardBackwardMs',
  'optimizerMs',
  'syncMs',
  'allReduceMs',
  'checkpointMs',
  'otherMs',
] as const satisfies readonly (keyof StepSpans)[];

export interface StepRecord {
  step: number;
  /** Wall-clock time the step started, ms since the run started. */
  startMs: number;
  wallMs: number;
  spans: StepSpans;
  epoch: number;
  batchIndex: number;
  bucket: number;
  batchSize: number;
  /** Padded shape of the batch. */
  tokens: number;
  frames: number;
  /** Kernels (backend ops) the step dispatched; a replayed step: the GPU programs it replayed. */
  kernels: number;
  /** GPU programs the step dispatched (webgpu). */
  programs?: number;
  /** The step was a replay of a captured one (device.step_capture); absent where capture is off. */
  replayed?: boolean;
  /** Model FLOPs of the step's matmuls and convolutions (forward, backward; rank 0's share when data-parallel). */
  flops?: number;
  /** Device time of the step's kernels when the backend measures it (WebGPU timestamp queries). */
  deviceMs?: number;
  /** Prefetch slots already full when the batch was taken. */
  readySlots: number;
  learningRate: number;
  /** Present on steps whose values were read back (every log interval). */
  loss?: number;
  gradNorm?: number;
  /** A NaN/Inf loss: the update was skipped. */
  nonFinite?: boolean;
  /**
   * Tensors the engine holds after the step, and their bytes (host and device), beyond what the pipeline holds for
   * other steps (the batches the alignment lookahead prepared, the steps not yet read back): they must not grow from
   * step to step.
   */
  tensors?: number;
  tensorBytes?: number;
}

/** Measures consecutive spans of one step with one clock. */
export class SpanTimer {
  private last: number;
  readonly spans: StepSpans = {
    dataWaitMs: 0,
    uploadMs: 0,
    forwardBackwardMs: 0,
    optimizerMs: 0,
    syncMs: 0,
    allReduceMs: 0,
    checkpointMs: 0,
    otherMs: 0,
  };
  readonly startedAt: number;

  constructor(now = performance.now()) {
    this.startedAt = now;
    this.last = now;
  }

  /** Close the current span and charge its time to `span`. */
  mark(span: keyof StepSpans): number {
    const now = performance.now();
    const ms = now - this.last;
    this.spans[span] += ms;
    this.last = now;
    return ms;
  }

  /** Charge an externally measured duration (e.g. the ring's wait) without moving the clock. */
  add(span: keyof StepSpans, ms: number): void {
    this.spans[span] += ms;
  }

  /** Charge measured parts of the time since the last mark to their spans, the rest to `rest`, and move the clock. */
  markParts(parts: Partial<Record<keyof StepSpans, number>>, rest: keyof StepSpans): void {
    const now = performance.now();
    let left = now - this.last;
    for (const [span, ms] of Object.entries(parts) as [keyof StepSpans, number][]) {
      this.spans[span] += ms;
      left -= ms;
    }
    this.spans[rest] += Math.max(0, left);
    this.last = now;
  }

  /** Total wall time so far; unaccounted time goes to `otherMs`. */
  finish(): { wallMs: number; spans: StepSpans } {
    const now = performance.now();
    const wallMs = now - this.startedAt;
    const accounted = SPAN_NAMES.filter((s) => s !== 'otherMs').reduce((a, s) => a + this.spans[s], 0);
    this.spans.otherMs = Math.max(0, wallMs - accounted);
    return { wallMs, spans: { ...this.spans } };
  }
}
