// The trainer's side of the input pipeline: start producers over a prefetch ring, hand out batches
// in order, and measure what the trainer waited. Position (epoch, batch) can be saved and restored.
import { Worker } from 'node:worker_threads';
import { effectiveWorkers } from '../config/index.js';
import type { XttsConfig } from '../config/index.js';
import type { BucketPlan } from './buckets.js';
import { batchSequence, type ProducerJob, type ProducerResult, runProducer } from './producer.js';
import {
  type BatchShape,
  type BatchViews,
  createRing,
  releaseSlot,
  type RingShared,
  type SlotLayout,
  stopRing,
  takeFilled,
  viewsFor,
} from './ring.js';
import { workerEntry } from '../util/index.js';

/** The producers' inputs, plus the ring's shape and where to start. */
export interface LoaderOptions
  extends Pick<
    ProducerJob,
    | 'cachePath'
    | 'items'
    | 'plan'
    | 'mean'
    | 'std'
    | 'seed'
    | 'shuffle'
    | 'recomputeAudio'
    | 'referenceJoin'
    | 'voiceWarp'
    | 'referencePitch'
    | 'framePitch'
    | 'referenceRate'
    | 'rateItems'
  > {
  depth: number;
  /** Producer threads; 0 fills each batch on the calling thread when it is asked for. */
  producers: number;
  refFrames: number;
  nMels: number;
  start?: { epoch: number; batch: number };
  /** Stop after this many batches (default: endless). */
  maxBatches?: number;
}

export interface LoadedBatch extends BatchViews {
  shape: BatchShape;
  bucket: number;
  fillers: number;
  /** Position of this batch: resume from (epoch, index + 1) to continue after it. */
  epoch: number;
  index: number;
  /** Milliseconds the caller waited for this batch. */
  waitMs: number;
  /** Slots already full when the batch was taken (how far ahead producers are). */
  readySlots: number;
  slot: number;
}

/** Producer threads for a config: the preprocessing workers, at most 4 (more only contend for the cache). */
export function producerThreads(config: XttsConfig, cpuCores: number): number {
  return Math.min(4, effectiveWorkers(config, cpuCores));
}

export class DataLoader {
  readonly ring: RingShared;
  private readonly options: LoaderOptions;
  private readonly workers: Worker[] = [];
  private readonly positions: Generator<{ epoch: number; index: number }>;
  private seq = 0;
  private closed = false;
  private readonly producerResults: ProducerResult[] = [];
  private workerError?: Error;

  /** The slot every batch of this plan fits in: the ring's slots are sized for the largest bucket, once. */
  static layoutFor(plan: BucketPlan, refFrames: number, nMels: number): SlotLayout {
    return {
      batchSize: Math.max(...plan.buckets.map((b) => b.batchSize)),
      maxTokens: Math.max(...plan.buckets.map((b) => b.maxTokens)),
      maxFrames: Math.max(...plan.buckets.map((b) => b.maxFrames)),
      refFrames,
      nMels,
    };
  }

  constructor(options: LoaderOptions) {
    this.options = options;
    this.ring = createRing(options.depth, DataLoader.layoutFor(options.plan, options.refFrames, options.nMels));
    const start = options.start ?? { epoch: 0, batch: 0 };
    this.positions = batchSequence({
      plan: options.plan,
      seed: options.seed,
      shuffle: options.shuffle,
      startEpoch: start.epoch,
      startBatch: start.batch,
    });
    for (let p = 0; p < options.producers; p++) {
      const job = this.job(p, options.producers);
      const w = new Worker(workerEntry(import.meta.url, 'data/producer-worker.js', 'producer worker'), {
        workerData: { xttsRole: 'producer', job },
      });
      w.on('message', (m: { type: string; result?: ProducerResult; message?: string }) => {
        if (m.type === 'done' && m.result) this.producerResults.push(m.result);
      });
      w.on('error', (e) => {
        this.workerError = e;
      });
      this.workers.push(w);
    }
  }

  private job(producerIndex: number, producers: number): ProducerJob {
    const o = this.options;
    const start = o.start ?? { epoch: 0, batch: 0 };
    return {
      ring: this.ring,
      cachePath: o.cachePath,
      items: o.items,
      plan: o.plan,
      mean: o.mean,
      std: o.std,
      seed: o.seed,
      shuffle: o.shuffle,
      startEpoch: start.epoch,
      startBatch: start.batch,
      maxBatches: o.maxBatches ?? Infinity,
      producerIndex,
      producers,
      recomputeAudio: o.recomputeAudio,
      referenceJoin: o.referenceJoin,
      voiceWarp: o.voiceWarp,
      referencePitch: o.referencePitch,
      framePitch: o.framePitch,
      referenceRate: o.referenceRate,
      rateItems: o.rateItems,
    };
  }

  /** The next batch in order; the caller must `release` it once its data has been copied/uploaded. */
  async next(): Promise<LoadedBatch | undefined> {
    if (this.closed) return undefined;
    if (this.options.maxBatches !== undefined && this.seq >= this.options.maxBatches) return undefined;
    const pos = this.positions.next();
    if (pos.done) return undefined;
    const t0 = performance.now();
    if (this.workers.length === 0) {
      // No producer threads: fill this one batch here (the wait is then the whole fill).
      runProducer({
        ...this.job(0, 1),
        startEpoch: pos.value.epoch,
        startBatch: pos.value.index,
        maxBatches: 1,
        ring: this.ring,
        producers: 1,
        producerIndex: 0,
      });
      // runProducer numbered it seq 0 for its slot; align the ring with our sequence.
    }
    if (this.workerError) throw this.workerError;
    const seq = this.workers.length === 0 ? 0 : this.seq;
    const taken = await takeFilled(this.ring, seq);
    const waitMs = performance.now() - t0;
    const bucket = this.options.plan.buckets[taken.bucket];
    const shape: BatchShape = {
      batchSize: bucket.batchSize,
      tokens: bucket.maxTokens,
      frames: bucket.maxFrames,
      refFrames: this.options.refFrames,
      nMels: this.options.nMels,
    };
    const views = viewsFor(this.ring.slots[taken.slot], this.ring.offsets, shape);
    this.seq++;
    return {
      ...views,
      shape,
      bucket: taken.bucket,
      fillers: taken.fillers,
      epoch: pos.value.epoch,
      index: pos.value.index,
      waitMs,
      readySlots: taken.fullSlots,
      slot: taken.slot,
    };
  }

  release(batch: LoadedBatch): void {
    if (this.workers.length === 0) {
      // Reset the single slot so the next in-thread fill may use it again as sequence 0.
      const c = new Int32Array(this.ring.control);
      releaseSlot(this.ring, batch.slot);
      Atomics.store(c, 4 + batch.slot * 4 + 1, batch.slot);
      return;
    }
    releaseSlot(this.ring, batch.slot);
  }

  /** Producer totals (fill and wait time), available after close(). */
  get producerStats(): ProducerResult[] {
    return this.producerResults;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    stopRing(this.ring);
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => void w.terminate().then(() => resolve()), 5000);
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
  }
}
