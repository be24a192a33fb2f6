// One optimizer step over data-parallel replicas (device.gpus): every micro-batch is split between
// the replicas, rank 0 (this thread) trains its rows, the others theirs on worker threads, and the
// last micro-batch's gradients are summed before the update each replica makes.
import * as tf from '@tensorflow/tfjs-core';
import type { KernelCounter } from '../../backend/index.js';
import type { XttsConfig } from '../../config/index.js';
import type { LoadedBatch } from '../../data/index.js';
import type { XttsModel } from '../../model/index.js';
import type { SpanTimer } from '../../telemetry/index.js';
import type { ReplicaGroup } from '../parallel/group.js';
import { REPLICA_SPANS, type ReplicaUpdate, STEP_SPANS, zeroSpans } from '../parallel/replica.js';
import { type BatchFeed, batchDims } from './batch-feed.js';
import type { StepIssuer } from './local-steps.js';
import { outOfMemory } from './out-of-memory.js';
import type { IssuedStep, StepRead } from './step-queue.js';

type ReplicaPart = IssuedStep['replicaParts'][number];

export class ReplicaSteps implements StepIssuer {
  private readonly accumulate: number;
  /**
   * Rank 0's model FLOPs of each captured shape's micro-batch, counted on its eager runs (a replay runs no kernel
   * through the engine).
   */
  private readonly flopsByShape = new Map<string, number>();

  constructor(
    private readonly o: {
      feed: BatchFeed;
      group: ReplicaGroup;
      model: XttsModel;
      config: XttsConfig;
      kernels: KernelCounter;
    },
  ) {
    this.accumulate = Math.max(1, o.config.training.grad_accumulation_steps);
  }

  async issue(step: number, timer: SpanTimer): Promise<IssuedStep | null> {
    const { feed, group, model, config, kernels } = this.o;
    const parts: ReplicaPart[] = [];
    const counts = { samples: 0, kernels: 0, flops: 0, programs: 0, replayed: true };
    const captured = group.replica.replayer.off === null;
    let batch: LoadedBatch | undefined;
    let update: ReplicaUpdate | undefined;
    for (let micro = 0; micro < this.accumulate; micro++) {
      batch = await feed.takeHost(timer);
      if (!batch) break;
      kernels.take();
      // The group copies each replica's rows before its first wait: the slot can go back at once.
      const pending = group.micro(
        step + 1,
        batch,
        batchDims(batch, config.model.reduction_factor),
        micro === this.accumulate - 1,
        model.dropout.rngState,
      );
      feed.release(batch);
      let out: Awaited<typeof pending>;
      try {
        out = await pending;
      } catch (e) {
        throw outOfMemory(e, config, batch);
      }
      const shape = group.replica.replayer.last?.shape ?? '';
      if (out.rank0.replayedPrograms === 0) {
        this.flopsByShape.set(shape, kernels.flops);
        counts.flops += kernels.flops;
      } else counts.flops += this.flopsByShape.get(shape) ?? kernels.flops;
      counts.programs += kernels.dispatches + out.rank0.replayedPrograms;
      counts.kernels += kernels.take() + out.rank0.replayedPrograms;
      const rank0 = out.rank0.spans;
      timer.markParts(Object.fromEntries(STEP_SPANS.map((k) => [k, rank0[k]])), 'otherMs');
      const held = tf.memory();
      [{ ...out.rank0, tensors: held.numTensors, tensorBytes: held.numBytes }, ...out.workers].forEach((r, rank) => {
        const acc = (parts[rank] ??= {
          ...zeroSpans(),
          samples: 0,
          replayed: captured ? true : null,
          tensors: 0,
          tensorBytes: 0,
        });
        acc.samples += r.samples;
        for (const k of REPLICA_SPANS) acc[k] += r.spans[k];
        if (acc.replayed !== null) acc.replayed &&= r.replayed;
        counts.replayed &&= r.replayed;
        acc.tensors = r.tensors;
        acc.tensorBytes = r.tensorBytes;
        counts.samples += r.samples;
      });
      update = out.rank0.update;
    }
    if (!batch || !update) {
      // The data ran out inside an accumulation: its gradients make no update.
      await group.discard();
      return null;
    }
    const u = update;
    return {
      batch,
      learningRate: u.learningRate,
      samples: counts.samples,
      kernels: counts.kernels,
      flops: counts.flops,
      // Capture off (or another backend): no step is a replay, as on one device.
      ...(captured ? { replayed: counts.replayed } : {}),
      programs: counts.programs,
      replicaParts: parts,
      read: async (withStats): Promise<StepRead> => {
        if (!withStats) return { stats: null, flag: (await u.finite.data())[0] };
        // The replicas' summed losses are on the host already.
        const [norm, finite] = await Promise.all([u.gradNorm.data(), u.finite.data()]);
        return { stats: [...u.losses, norm[0], finite[0]], flag: finite[0] };
      },
      held: () => [u.gradNorm, u.finite],
      dispose: () => tf.dispose([u.gradNorm, u.finite]),
    };
  }
}
