// Batches for the steps: the loader's prefetch ring, each batch uploaded and its alignment found.
// With the alignment lookahead (training.alignment_lookahead) the next batches are uploaded and
// their alignment forwards queued before the current step, so that their readbacks and searches on
// the host's worker threads overlap the steps' computing.
import { totalmem } from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import type { CallReplayer } from '../../backend/index.js';
import { formatBytes } from '../../config/index.js';
import type { XttsConfig } from '../../config/index.js';
import type { LoadedBatch } from '../../data/index.js';
import { ExitCode, XttsError } from '../../errors.js';
import type { AlignmentSearcher } from '../../model/index.js';
import {
  type BatchAlignment,
  batchFor,
  type BatchDims,
  disposeBatch,
  type TrainBatch,
  uploadBatch,
} from '../../model/index.js';
import type { XttsModel } from '../../model/index.js';
import type { SpanTimer } from '../../telemetry/index.js';

/**
 * The prefetch ring's depth within device.data_memory_budget_mb: pipeline.prefetch_depth slots, or as
 * many as the budget holds (said), or DATA_BUDGET_TOO_SMALL when it holds fewer than two (no overlap).
 */
export function ringDepthWithin(config: XttsConfig, perSlot: number, say: (m: string) => void): number {
  const depth = config.pipeline.prefetch_depth;
  const setting = config.device.data_memory_budget_mb;
  // null: an eighth of this host's memory, as the key's description says.
  const budgetBytes = setting !== null ? setting * 2 ** 20 : totalmem() / 8;
  const budget =
    setting !== null ? `${setting}` : `null (an eighth of this host's memory, ${formatBytes(budgetBytes)})`;
  const fits = Math.floor(budgetBytes / perSlot);
  if (fits < 2) {
    throw new XttsError(
      'DATA_BUDGET_TOO_SMALL',
      `device.data_memory_budget_mb ${budget} holds ${fits} prefetch ` +
        `slot${fits === 1 ? '' : 's'} of ${formatBytes(perSlot)} (the largest bucket's ` +
        `batch); the ring needs two to overlap loading with training`,
      {
        exitCode: ExitCode.usage,
        suggestions: [
          `raise device.data_memory_budget_mb to at least ${Math.ceil((2 * perSlot) / 2 ** 20)}`,
          'or lower batching.batch_size, limits.max_audio_s or batching.reference_frames',
        ],
      },
    );
  }
  if (fits < depth)
    say(
      `pipeline.prefetch_depth ${depth} × ${formatBytes(perSlot)} would exceed ` +
        `device.data_memory_budget_mb ${budget}: the prefetch ring holds ${fits} batches`,
    );
  return Math.min(depth, fits);
}

/** A batch's shape for the model. */
export function batchDims(b: LoadedBatch, reductionFactor: number): BatchDims {
  return {
    batchSize: b.shape.batchSize,
    tokens: b.shape.tokens,
    frames: b.shape.frames,
    refFrames: b.shape.refFrames,
    nMels: b.shape.nMels,
    reductionFactor,
  };
}

/** Where batches come from: the DataLoader's ring (or a test's list). */
export interface BatchSource {
  next(): Promise<LoadedBatch | undefined>;
  release(batch: LoadedBatch): void;
  close(): Promise<void>;
}

/** A batch on the device with its alignment search started. */
interface PreparedBatch {
  batch: LoadedBatch;
  tensors: TrainBatch;
  alignment: Promise<BatchAlignment>;
  /** The alignment's tensors, once its search has ended. */
  found?: BatchAlignment;
}

/** A batch ready for its step: on the device, with the alignment its step trains on. */
export interface FedBatch {
  batch: LoadedBatch;
  tensors: TrainBatch;
  alignment: BatchAlignment;
}

export interface BatchFeedOptions {
  source: BatchSource;
  model: Pick<XttsModel, 'align' | 'pitchContour' | 'config'>;
  reductionFactor: number;
  /** training.alignment_prior. */
  prior: number;
  /** Replays the alignment forward's programs (step capture). */
  replayer?: Pick<CallReplayer, 'run'>;
  /** Batches prepared ahead of their step (the lookahead): 0 for none. */
  ahead: number;
  /**
   * Searches alignments on worker threads (with the lookahead: the search then leaves this thread free to issue steps).
   */
  searcher?: Pick<AlignmentSearcher, 'search' | 'close'>;
}

export class BatchFeed {
  /** Batches uploaded with their alignment search started, in the loader's order. */
  private readonly ahead: PreparedBatch[] = [];

  constructor(private readonly o: BatchFeedOptions) {}

  /**
   * The next batch for a step (prepared ahead, or taken from the source now), its time charged to `timer`; undefined
   * when the data ran out.
   */
  async take(timer: SpanTimer): Promise<FedBatch | undefined> {
    const prepared = this.ahead.shift();
    const batch = prepared?.batch ?? (await this.o.source.next());
    timer.mark('dataWaitMs');
    if (!batch) return undefined;
    const { tensors, alignment } = prepared ?? this.prepare(batch);
    timer.mark('uploadMs');
    // Which symbol each step says (one readback and the alignment search on the host).
    const fed = { batch, tensors, alignment: await alignment };
    timer.mark('syncMs');
    return fed;
  }

  /** The next batch on the host, for replicas that upload and align their own rows; give it back with release(). */
  async takeHost(timer: SpanTimer): Promise<LoadedBatch | undefined> {
    const batch = await this.o.source.next();
    timer.mark('dataWaitMs');
    return batch;
  }

  release(batch: LoadedBatch): void {
    this.o.source.release(batch);
  }

  /**
   * With the lookahead, prepares batches until `ahead` wait (or `remaining`, the micro-batches the run
   * trains after the current one: none is prepared past the last). Their alignment forwards go to the
   * device before the current step.
   */
  async fillAhead(remaining: number, timer: SpanTimer): Promise<void> {
    while (this.ahead.length < Math.min(this.o.ahead, remaining)) {
      const next = await this.o.source.next();
      timer.mark('dataWaitMs');
      if (!next) break;
      this.ahead.push(this.prepare(next));
      timer.mark('uploadMs');
    }
  }

  /** The tensors of the batches prepared ahead (the lookahead's, fewer as a run nears its end). */
  aheadTensors(): tf.Tensor[] {
    return this.ahead.flatMap((p) => [
      ...(Object.values(p.tensors) as tf.Tensor[]),
      ...(p.found ? [p.found.steps, p.found.durations] : []),
    ]);
  }

  /** Frees a fed batch once its step is issued. */
  static dispose(fed: FedBatch): void {
    disposeBatch(fed.tensors);
    tf.dispose([fed.alignment.steps, fed.alignment.durations]);
  }

  /** Frees the batches prepared ahead that no step trained on, stops the search and the source. */
  async close(): Promise<void> {
    for (const p of this.ahead.splice(0)) {
      disposeBatch(p.tensors);
      const a = await p.alignment.catch(() => undefined);
      if (a) tf.dispose([a.steps, a.durations]);
    }
    await this.o.searcher?.close();
    await this.o.source.close();
  }

  private prepare(b: LoadedBatch): PreparedBatch {
    const tensors = uploadBatch(batchFor(this.o.model, b), batchDims(b, this.o.reductionFactor));
    const lengths = { text: b.textLengths.slice(0, b.shape.batchSize), mel: b.melLengths.slice(0, b.shape.batchSize) };
    this.o.source.release(b);
    const searcher = this.o.searcher;
    const alignment = this.o.model.align(tensors, lengths.text, lengths.mel, this.o.prior, {
      replayer: this.o.replayer,
      search: searcher && ((task) => searcher.search(task)),
    });
    const prepared: PreparedBatch = { batch: b, tensors, alignment };
    // Awaited by its step; a run that ends first frees it (close) instead.
    alignment.then(
      (a) => {
        prepared.found = a;
      },
      () => undefined,
    );
    return prepared;
  }
}
