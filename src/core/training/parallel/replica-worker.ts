// Entry of a replica worker thread (ranks 1..N-1 of data-parallel training): its own TensorFlow.js
// engine on its own device, its own copy of the model and optimizer, driven by the trainer's messages.
// A failure aborts the group's collectives first (so no replica waits forever), then is reported.
import { parentPort, workerData } from 'node:worker_threads';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend } from '../../backend/index.js';
import type { ModelConfig, TrainingConfig } from '../../config/index.js';
import { type SerializedError, serializeError } from '../../errors.js';
import { XttsModel, type ModelSizes } from '../../model/index.js';
import type { ConvImpl } from '../../model/index.js';
import { checkModelBudget } from '../budget.js';
import type { NamedArray } from '../checkpoint.js';
import { AdamW } from '../optim/adamw.js';
import type { StepCaptureMode, StepCaptureSummary } from '../optim/step-replay.js';
import { abortCollective, Collective, type CollectiveShared } from './collective.js';
import { type GradientExchange, Replica, type ShardJob, weightsDigest } from './replica.js';

export interface ReplicaWorkerData {
  xttsRole: 'replica';
  rank: number;
  shared: CollectiveShared;
  backend: 'webgpu' | 'wasm' | 'cpu';
  device: number | string | null;
  model: ModelConfig;
  sizes: ModelSizes;
  seed: number;
  /** device.conv_kernels, as rank 0 runs them. */
  convImpl: ConvImpl;
  /** device.matmul, as rank 0 runs them. */
  matmul: 'tfjs' | 'tiled';
  /** device.bounds_checks, as rank 0 runs them. */
  boundsChecks: 'on' | 'off';
  /** device.step_capture. */
  capture: StepCaptureMode;
  /** device.gradient_exchange. */
  exchange: GradientExchange;
  training: TrainingConfig;
  modelBudgetMb: number | null;
  /** batching.batch_size, for the budget's advice. */
  batchSize: number;
}

/** Messages to a replica worker. */
export type ToReplica =
  | { type: 'state'; weights: NamedArray[]; optimizer: NamedArray[] }
  | { type: 'micro'; step: number; job: ShardJob }
  | { type: 'discard' }
  | { type: 'digest' }
  | { type: 'capture' }
  | { type: 'close' };

/** Messages from a replica worker. */
export type FromReplica =
  | { type: 'ready'; device: string }
  | { type: 'loaded' }
  | {
      type: 'micro';
      spans: import('./replica.js').ReplicaSpans;
      samples: number;
      replayed: boolean;
      tensors: number;
      tensorBytes: number;
    }
  | { type: 'capture'; summary: StepCaptureSummary }
  | { type: 'discarded' }
  | { type: 'digest'; digest: string }
  | { type: 'error'; error: SerializedError };

const tensorsOf = (arrays: NamedArray[]) => new Map(arrays.map((a) => [a.name, tf.tensor(a.data, a.shape, a.dtype)]));

export async function replicaWorkerMain(d: ReplicaWorkerData): Promise<void> {
  const port = parentPort!;
  const fail = (e: unknown) => {
    const error = serializeError(e);
    abortCollective(d.shared, `replica ${d.rank} failed: ${error.message}`);
    port.postMessage({ type: 'error', error } satisfies FromReplica);
  };
  let replica: Replica;
  try {
    const { choice } = await initBackend(d.backend, {
      device: d.device,
      unsafeApis: true,
      matmul: d.matmul,
      robustness: d.boundsChecks === 'on',
    });
    await import('../../model/gradients.js');
    const model = new XttsModel(d.model, d.sizes, { seed: d.seed, convImpl: d.convImpl });
    const optimizer = new AdamW(model.trainableVariables(), d.training);
    replica = new Replica(model, optimizer, new Collective(d.shared, d.rank), {
      loss: d.training.loss,
      alignmentPrior: d.training.alignment_prior,
      accumulate: Math.max(1, d.training.grad_accumulation_steps),
      capture: d.capture,
      exchange: d.exchange,
    });
    const device = choice.adapter ? `${choice.backend} ${choice.adapter.name}` : choice.backend;
    port.postMessage({ type: 'ready', device } satisfies FromReplica);
  } catch (e) {
    fail(e);
    return;
  }
  const handle = async (m: ToReplica): Promise<void> => {
    if (m.type === 'state') {
      const weights = tensorsOf(m.weights);
      replica.model.setWeights(weights);
      tf.dispose([...weights.values()]);
      const state = tensorsOf(m.optimizer);
      replica.optimizer.setState(state);
      tf.dispose([...state.values()]);
      port.postMessage({ type: 'loaded' } satisfies FromReplica);
    } else if (m.type === 'micro') {
      const r = await replica.micro(m.job);
      if (r.update) tf.dispose([r.update.gradNorm, r.update.finite]);
      const held = tf.memory();
      checkModelBudget(d.modelBudgetMb, m.step, held.numBytes, d.batchSize, `replica ${d.rank}`);
      port.postMessage({
        type: 'micro',
        spans: r.spans,
        samples: r.samples,
        replayed: r.replayed,
        tensors: held.numTensors,
        tensorBytes: held.numBytes,
      } satisfies FromReplica);
    } else if (m.type === 'discard') {
      replica.discard();
      port.postMessage({ type: 'discarded' } satisfies FromReplica);
    } else if (m.type === 'digest') {
      port.postMessage({ type: 'digest', digest: await weightsDigest(replica.model) } satisfies FromReplica);
    } else if (m.type === 'capture') {
      port.postMessage({ type: 'capture', summary: await replica.captureSummary() } satisfies FromReplica);
    } else if (m.type === 'close') {
      replica.dispose();
      disposeBackend(tf as never);
      port.close();
    }
  };
  // One message at a time, in order: a micro-batch's collectives must not interleave with the next's.
  let queue = Promise.resolve();
  let failed = false;
  port.on('message', (m: ToReplica) => {
    queue = queue
      .then(() => (failed ? undefined : handle(m)))
      .catch((e) => {
        failed = true;
        fail(e);
      });
  });
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'replica')
  void replicaWorkerMain(workerData as ReplicaWorkerData);
