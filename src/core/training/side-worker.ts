// Entry of the side worker (device.data_device): its own TensorFlow.js engine on the data device and
// its own copy of the model, into which each job loads the weights the trainer snapshotted at that
// step; it runs validation passes and eval synthesis there while the trainer keeps training.
import { parentPort, workerData } from 'node:worker_threads';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend } from '../backend/index.js';
import type { XttsConfig } from '../config/index.js';
import type { PreparedDataset, PreparedItem } from '../data/index.js';
import { Tokenizer, type TokenizerJSON } from '../data/index.js';
import { type SerializedError, serializeError } from '../errors.js';
import { XttsModel, type ModelSizes } from '../model/index.js';
import type { NamedArray } from './checkpoint.js';
import { type LoaderCommon, synthesizeEval, validate, type ValidationResult } from './evaluation.js';
import type { planBuckets } from '../data/index.js';
import { loaderItems } from '../data/index.js';

export interface SideWorkerData {
  xttsRole: 'side';
  backend: 'webgpu' | 'wasm';
  device: number | string | null;
  config: XttsConfig;
  sizes: ModelSizes;
  /** What validation and eval read of the prepared dataset. */
  data: {
    validation: PreparedItem[];
    train: PreparedItem[];
    tokenizer: TokenizerJSON;
    stats: { mean: Float32Array; std: Float32Array; frames: number };
    cachePath: string;
  };
  bucketOptions: Parameters<typeof planBuckets>[1];
  common: LoaderCommon;
}

export type ToSide =
  | { type: 'validate'; step: number; weights: NamedArray[] }
  | { type: 'eval'; step: number; weights: NamedArray[]; dir: string; logDurationVariance: number }
  | { type: 'close' };

export type FromSide =
  | { type: 'ready'; device: string }
  | { type: 'validated'; step: number; result: ValidationResult; ms: number }
  | {
      type: 'evaluated';
      step: number;
      files: string[];
      messages: string[];
      metrics: { name: string; value: number }[];
      ms: number;
    }
  | { type: 'error'; error: SerializedError };

export async function sideWorkerMain(d: SideWorkerData): Promise<void> {
  const port = parentPort!;
  const fail = (e: unknown) => {
    port.postMessage({ type: 'error', error: serializeError(e) } satisfies FromSide);
  };
  let model: XttsModel;
  let data: PreparedDataset;
  try {
    const { choice } = await initBackend(d.backend, {
      device: d.device,
      matmul: d.config.device.matmul,
      robustness: d.config.device.bounds_checks === 'on',
    });
    model = new XttsModel(d.config.model, d.sizes, {
      seed: d.config.training.seed,
      convImpl: d.config.device.conv_kernels,
    });
    data = { ...d.data, tokenizer: Tokenizer.fromJSON(d.data.tokenizer) } as unknown as PreparedDataset;
    port.postMessage({
      type: 'ready',
      device: choice.adapter ? `${choice.backend} ${choice.adapter.name}` : choice.backend,
    } satisfies FromSide);
  } catch (e) {
    fail(e);
    return;
  }
  const load = (weights: NamedArray[]) => {
    const tensors = new Map(weights.map((a) => [a.name, tf.tensor(a.data, a.shape, a.dtype)]));
    model.setWeights(tensors);
    tf.dispose([...tensors.values()]);
  };
  const handle = async (m: ToSide) => {
    const t0 = performance.now();
    if (m.type === 'validate') {
      load(m.weights);
      const result = await validate(model, data, d.config, d.bucketOptions, d.common, loaderItems);
      port.postMessage({ type: 'validated', step: m.step, result, ms: performance.now() - t0 } satisfies FromSide);
    } else if (m.type === 'eval') {
      load(m.weights);
      const messages: string[] = [];
      const metrics: { name: string; value: number }[] = [];
      const files = await synthesizeEval(
        model,
        data,
        d.config,
        m.dir,
        m.logDurationVariance,
        (x) => messages.push(x),
        (name, value) => metrics.push({ name, value }),
      );
      port.postMessage({
        type: 'evaluated',
        step: m.step,
        files,
        messages,
        metrics,
        ms: performance.now() - t0,
      } satisfies FromSide);
    } else if (m.type === 'close') {
      model.dispose();
      disposeBackend(tf as never);
      port.close();
    }
  };
  let queue = Promise.resolve();
  port.on('message', (m: ToSide) => {
    queue = queue.then(() => handle(m)).catch(fail);
  });
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'side')
  void sideWorkerMain(workerData as SideWorkerData);
