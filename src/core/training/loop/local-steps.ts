// One optimizer step of the speech model on this thread's device: grad_accumulation_steps
// micro-batches, each forward and backward, the last one also clipping and updating. Replayed from
// its capture where step capture recorded its shape; timed on the device on probe steps.
import * as tf from '@tensorflow/tfjs-core';
import type { KernelCounter } from '../../backend/index.js';
import type { XttsConfig } from '../../config/index.js';
import type { XttsModel } from '../../model/index.js';
import type { SpanTimer } from '../../telemetry/index.js';
import type { AdamW } from '../optim/adamw.js';
import type { StepReplayer } from '../optim/step-replay.js';
import { disposeStepResult, stepResultTensors, STEP_STATS, type StepResult, trainStep } from '../optim/train-step.js';
import { BatchFeed, type FedBatch } from './batch-feed.js';
import type { DeviceProbes } from './device-probes.js';
import { outOfMemory } from './out-of-memory.js';
import type { IssuedStep, StepRead } from './step-queue.js';

/** Command buffers a replayed step is submitted in with the alignment lookahead (StepReplayer.stepInParts). */
const REPLAY_PARTS = 4;

/** Issues optimizer steps: one model kind's step, on one device or over replicas. */
export interface StepIssuer {
  /**
   * Issues step `step + 1`, its host time charged to `timer`; null when the data ran out inside it (its gradients make
   * no update).
   */
  issue(step: number, timer: SpanTimer): Promise<IssuedStep | null>;
}

/**
 * A step's stats from its micro-batches' (the update's last): losses averaged, the gradient norm and finite flag the
 * update's.
 */
export function meanStats(all: readonly ArrayLike<number>[]): number[] {
  const update = all[all.length - 1];
  return STEP_STATS.map((name, i) =>
    name === 'gradNorm' || name === 'finite' ? update[i] : all.reduce((a, x) => a + x[i], 0) / all.length,
  );
}

export interface LocalStepsOptions {
  feed: BatchFeed;
  model: XttsModel;
  optimizer: AdamW;
  config: XttsConfig;
  /** Capture and replay of each bucket shape's step (webgpu). */
  replayer?: StepReplayer;
  kernels: KernelCounter;
  probes: DeviceProbes;
  /** Steps the run makes (no batch is prepared ahead past the last). */
  maxSteps: number;
  /**
   * The alignment lookahead is on: a replayed step is submitted in parts so that the search's scores reach it
   * meanwhile.
   */
  lookahead: boolean;
}

/** What a step counted of its micro-batches. */
interface Counts {
  samples: number;
  kernels: number;
  flops: number;
  programs: number;
  replayed: boolean;
  deviceMs?: number;
}

export class LocalSteps implements StepIssuer {
  private readonly accumulate: number;
  /**
   * Model FLOPs of each captured shape's step, counted on its eager runs (a replay runs no kernel through the engine).
   */
  private readonly flopsByShape = new Map<string, number>();

  constructor(private readonly o: LocalStepsOptions) {
    this.accumulate = Math.max(1, o.config.training.grad_accumulation_steps);
  }

  async issue(step: number, timer: SpanTimer): Promise<IssuedStep | null> {
    const counts: Counts = { samples: 0, kernels: 0, flops: 0, programs: 0, replayed: false };
    const microStats: tf.Tensor[] = [];
    let fed: FedBatch | undefined;
    let result: StepResult | undefined;
    for (let micro = 0; micro < this.accumulate; micro++) {
      fed = await this.o.feed.take(timer);
      if (!fed) break;
      // The micro-batches this run still trains after this one.
      await this.o.feed.fillAhead(
        (this.o.maxSteps - step - 1) * this.accumulate + (this.accumulate - 1 - micro),
        timer,
      );
      this.o.kernels.take();
      result = await this.run(step, fed, timer, counts);
      this.count(counts);
      timer.mark('optimizerMs');
      counts.samples += fed.batch.shape.batchSize - fed.batch.fillers;
      BatchFeed.dispose(fed);
      if (!result.applied) {
        microStats.push(tf.clone(result.stats));
        disposeStepResult(result);
      }
    }
    if (!fed || !result?.applied) {
      this.o.optimizer.discardAccumulated();
      tf.dispose(microStats);
      return null;
    }
    return this.issued(fed, result, microStats, counts);
  }

  private async run(step: number, fed: FedBatch, timer: SpanTimer, counts: Counts): Promise<StepResult> {
    const { model, optimizer, replayer, config } = this.o;
    const inputs = { ...fed.tensors, alignment: fed.alignment };
    const onGradients = () => timer.mark('forwardBackwardMs');
    const eager = (timed: boolean) =>
      replayer
        ? replayer.step(inputs, { onGradients, timed })
        : trainStep(model, optimizer, inputs, config.training.loss, { accumulate: this.accumulate, onGradients });
    try {
      if (step >= this.o.probes.from) {
        let result: StepResult | undefined;
        const ms = await this.o.probes.run(() => {
          result = eager(true);
        });
        if (ms !== undefined) counts.deviceMs = (counts.deviceMs ?? 0) + ms;
        if (!result) throw new Error('the training step returned nothing');
        return result;
      }
      // In parts, the event loop let run between them: the next batch's alignment scores reach the
      // search's worker threads while the rest of this step is encoded.
      if (replayer && this.o.lookahead) return await replayer.stepInParts(inputs, REPLAY_PARTS, { onGradients });
      return eager(false);
    } catch (e) {
      throw outOfMemory(e, config, fed.batch);
    }
  }

  /** The micro-batch's kernels, programs and FLOPs: its recording's where it was replayed. */
  private count(counts: Counts): void {
    const { kernels, replayer } = this.o;
    const last = replayer?.last;
    if (last?.replayed) {
      counts.replayed = true;
      counts.flops += this.flopsByShape.get(last.shape) ?? 0;
      counts.kernels += last.programs;
      counts.programs += last.programs;
      kernels.take();
      return;
    }
    if (last) this.flopsByShape.set(last.shape, kernels.flops);
    counts.flops += kernels.flops;
    counts.programs += kernels.dispatches;
    counts.kernels += kernels.take();
  }

  private issued(fed: FedBatch, result: StepResult, microStats: tf.Tensor[], counts: Counts): IssuedStep {
    return {
      batch: fed.batch,
      learningRate: result.learningRate,
      samples: counts.samples,
      kernels: counts.kernels,
      flops: counts.flops,
      programs: counts.programs,
      ...(this.o.replayer ? { replayed: counts.replayed } : {}),
      ...(counts.deviceMs !== undefined ? { deviceMs: counts.deviceMs } : {}),
      replicaParts: [],
      read: async (withStats): Promise<StepRead> => {
        if (!withStats) return { stats: null, flag: (await result.finite.data())[0] };
        // Losses are the mean over the step's micro-batches; the gradient norm is the update's.
        const stats = meanStats(await Promise.all([...microStats.map((x) => x.data()), result.stats.data()]));
        return { stats, flag: stats[STEP_STATS.indexOf('finite')] };
      },
      held: () => [...stepResultTensors(result), ...microStats],
      dispose: () => {
        disposeStepResult(result);
        tf.dispose(microStats);
      },
    };
  }
}
