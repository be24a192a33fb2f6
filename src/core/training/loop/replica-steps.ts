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
import type { ReplicaUpdate } from '../parallel/replica.js';
import { type BatchFeed, batchDims } from './batch-feed.js';
import type { StepIssuer } from './local-steps.js';
import { outOfMemory } from './out-of-memory.js';
import type { IssuedStep, StepRead } from './step-queue.js';

type ReplicaPart = IssuedStep['replicaParts'][number];

export class ReplicaSteps implements StepIssuer {
  private readonly accumulate: number;

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
    const counts = { samples: 0, kernels: 0, flops: 0 };
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
      counts.flops += kernels.flops;
      counts.kernels += kernels.take();
      timer.markParts(out.rank0.spans, 'otherMs');
      const held = tf.memory();
      [{ ...out.rank0, tensors: held.numTensors, tensorBytes: held.numBytes }, ...out.workers].forEach((r, rank) => {
        const acc = (parts[rank] ??= {
          samples: 0,
          uploadMs: 0,
          syncMs: 0,
          forwardBackwardMs: 0,
          allReduceMs: 0,
          optimizerMs: 0,
          tensors: 0,
          tensorBytes: 0,
        });
        acc.samples += r.samples;
        for (const k of ['uploadMs', 'syncMs', 'forwardBackwardMs', 'allReduceMs', 'optimizerMs'] as const)
          acc[k] += r.spans[k];
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
      ...counts,
      programs: 0,
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
