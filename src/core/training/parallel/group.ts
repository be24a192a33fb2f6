// Data-parallel training over the devices of one host: which devices (device.gpus, --gpus), and the
// group the trainer drives — rank 0 in the trainer's own thread (its model is the one checkpoints,
// validation and eval read), ranks 1..N-1 in worker threads, each with its own TensorFlow.js engine
// on its own device (a Dawn device on its adapter, or the CPU), gradients summed through host shared
// memory (collective.ts) at every optimizer step.

import { Worker } from 'node:worker_threads';
import { listAdapters } from '../../backend/index.js';
import type { Backend, XttsConfig } from '../../config/index.js';
import { deserializeError, ExitCode, XttsError } from '../../errors.js';
import type { BatchDims, HostBatch } from '../../model/index.js';
import type { ModelSizes, XttsModel } from '../../model/index.js';
import type { NamedArray } from '../checkpoint.js';
import type { AdamW } from '../optim/adamw.js';
import type { StepCaptureSummary } from '../optim/step-replay.js';
import {
  abortCollective,
  Collective,
  createCollective,
  type CollectiveShared,
  DEFAULT_BUCKET_FLOATS,
} from './collective.js';
import { type MicroResult, Replica, type ReplicaSpans, shardOf, shardRows, weightsDigest } from './replica.js';
import type { FromReplica, ReplicaWorkerData, ToReplica } from './replica-worker.js';
import { endWorker, workerEntry } from '../../util/index.js';

/** Where each replica trains: rank r on devices[r]. */
export interface ReplicaPlan {
  backend: 'webgpu' | 'wasm' | 'cpu';
  /** Per rank: an adapter index or name (webgpu), null on the CPU. */
  devices: (number | string | null)[];
  /** How the plan was chosen, for the run's first lines. */
  reason: string;
}

const usage = (message: string, suggestions: string[]) =>
  new XttsError('GPUS_INVALID', message, { exitCode: ExitCode.usage, suggestions });

/**
 * device.gpus (or --gpus) -> the replicas, or null for one device (device.model_device). `cpu:N`
 * runs N replicas on the CPU (wasm, or the cpu backend when device.backend says so); `all` every GPU
 * adapter Dawn lists; a list names adapters by index or name. GPU replicas train on webgpu.
 */
export async function planReplicas(gpus: XttsConfig['device']['gpus'], backend: Backend): Promise<ReplicaPlan | null> {
  if (gpus === null) return null;
  if (typeof gpus === 'string' && gpus.startsWith('cpu:')) {
    const n = Number(gpus.slice(4));
    if (backend === 'webgpu' || backend === 'tensorflow')
      throw usage(`device.gpus ${gpus} asks for CPU replicas, but the backend is ${backend}`, [
        'use --backend cpu (or wasm), or name GPUs: --gpus all',
      ]);
    // auto takes wasm, as it does for one device on a host without a GPU (about 5× the cpu backend).
    const b = backend === 'cpu' ? 'cpu' : 'wasm';
    return {
      backend: b,
      devices: Array.from({ length: n }, () => null),
      reason: `${n} CPU replica${n === 1 ? '' : 's'} on the ${b} backend (device.gpus ${gpus})`,
    };
  }
  if (backend !== 'auto' && backend !== 'webgpu') {
    throw usage(
      `device.gpus names GPUs (${JSON.stringify(gpus)}), but the backend is ${backend}: GPU replicas train on webgpu`,
      [`use --backend webgpu (or auto), or CPU replicas: --gpus cpu:${Array.isArray(gpus) ? gpus.length : 2}`],
    );
  }
  if (gpus === 'all') {
    const list = await listAdapters();
    const hardware = list.adapters.filter((a) => !a.software);
    if (hardware.length === 0) {
      throw new XttsError(
        'NO_GPUS',
        `device.gpus all: Dawn lists no GPU adapter here${list.note ? ` (${list.note})` : ''}`,
        {
          exitCode: ExitCode.environment,
          suggestions: [
            'run `xtts diagnose-gpu-utilization` to see what Dawn finds',
            'or train with CPU replicas: --gpus cpu:2',
          ],
        },
      );
    }
    return {
      backend: 'webgpu',
      devices: hardware.map((a) => a.index),
      reason: `every GPU adapter Dawn lists: ${hardware.map((a) => `${a.index} ${a.name}`).join(', ')}`,
    };
  }
  const refs = gpus as (number | string)[];
  const seen = new Set(refs.map((r) => String(r).toLowerCase()));
  // Allowed (a way to try the group on one GPU), but said: replicas that share a GPU take turns on it.
  const shared = seen.size < refs.length ? '; some replicas share a GPU and take turns on it (no faster than one)' : '';
  return { backend: 'webgpu', devices: refs, reason: `device.gpus ${JSON.stringify(gpus)}${shared}` };
}

/** Parses --gpus: `all`, `cpu:N`, or a comma-separated list of adapter indices or names. */
export function parseGpusFlag(value: string): XttsConfig['device']['gpus'] {
  const v = value.trim();
  if (v === 'all') return v;
  if (/^cpu\b/i.test(v)) {
    const n = /^cpu:(\d+)$/.exec(v);
    if (!n || Number(n[1]) < 1 || Number(n[1]) > 64)
      throw usage(`--gpus ${JSON.stringify(value)}: cpu:N takes a whole number of CPU replicas from 1 to 64`, [
        'e.g. --gpus cpu:2',
      ]);
    return `cpu:${Number(n[1])}` as XttsConfig['device']['gpus'];
  }
  const refs = v.split(',').map((s) => s.trim());
  if (refs.some((s) => s === ''))
    throw usage(`--gpus ${JSON.stringify(value)}: an empty device in the list`, [
      'e.g. --gpus 0,1, --gpus all or --gpus cpu:2',
    ]);
  return refs.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** What a replica worker reports for one micro-batch. */
export interface WorkerMicro {
  spans: ReplicaSpans;
  samples: number;
  replayed: boolean;
  tensors: number;
  tensorBytes: number;
}

interface Pending {
  resolve: (m: FromReplica) => void;
  reject: (e: Error) => void;
}

class ReplicaWorker {
  private readonly pending: Pending[] = [];
  /** Messages that came before anyone asked for them (a worker's 'ready' while another is awaited). */
  private readonly inbox: FromReplica[] = [];
  failure: Error | null = null;
  device = '';
  private closing = false;
  private exited = false;

  constructor(
    readonly rank: number,
    readonly worker: Worker,
    private readonly shared: CollectiveShared,
  ) {
    worker.on('message', (m: FromReplica) => {
      if (m.type === 'error') this.fail(deserializeError(m.error, this.label));
      else {
        const waiting = this.pending.shift();
        if (waiting) waiting.resolve(m);
        else this.inbox.push(m);
      }
    });
    worker.on('error', (e) => this.fail(new Error(`${this.label} stopped: ${e.message}`)));
    worker.on('exit', (code) => {
      this.exited = true;
      if (!this.closing) this.fail(new Error(`${this.label} exited (code ${code})`));
    });
    // The 'ready' message answers the start.
  }

  get label(): string {
    return `replica ${this.rank}${this.device ? ` (${this.device})` : ''}`;
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    abortCollective(this.shared, e.message);
    for (const p of this.pending.splice(0)) p.reject(e);
  }

  /** The next message from the worker (they answer in order). */
  next(): Promise<FromReplica> {
    if (this.failure) return Promise.reject(this.failure);
    const early = this.inbox.shift();
    if (early) return Promise.resolve(early);
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  ask(m: ToReplica, transfer: ArrayBuffer[] = []): Promise<FromReplica> {
    const answer = this.next();
    if (!this.failure) this.worker.postMessage(m, transfer);
    return answer;
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const p of this.pending.splice(0)) p.reject(new Error(`${this.label} closed`));
    if (!this.exited) await endWorker(this.worker, { type: 'close' } satisfies ToReplica);
  }
}

export class ReplicaGroup {
  /** Rank 0's replica (the trainer's model and optimizer). */
  readonly replica: Replica;
  private readonly shared: CollectiveShared;

  private constructor(
    readonly plan: ReplicaPlan,
    private readonly workers: ReplicaWorker[],
    shared: CollectiveShared,
    model: XttsModel,
    optimizer: AdamW,
    config: XttsConfig,
    /** Per rank: backend and device. */
    readonly devices: string[],
  ) {
    this.shared = shared;
    const training = config.training;
    this.replica = new Replica(model, optimizer, new Collective(shared, 0), {
      loss: training.loss,
      alignmentPrior: training.alignment_prior,
      accumulate: Math.max(1, training.grad_accumulation_steps),
      capture: config.device.step_capture,
      exchange: config.device.gradient_exchange,
    });
  }

  get world(): number {
    return this.plan.devices.length;
  }

  /**
   * Starts ranks 1..N-1 (rank 0 is the caller's model and optimizer, on the device the trainer
   * initialised) and gives them rank 0's weights and optimizer state.
   */
  static async start(o: {
    plan: ReplicaPlan;
    config: XttsConfig;
    sizes: ModelSizes;
    model: XttsModel;
    optimizer: AdamW;
    rank0Device: string;
    state: () => Promise<{ weights: NamedArray[]; optimizer: NamedArray[] }>;
  }): Promise<ReplicaGroup> {
    const shared = createCollective(o.plan.devices.length, bucketFloats());
    const workers: ReplicaWorker[] = [];
    const entry = workerEntry(import.meta.url, 'training/parallel/replica-worker.js', 'replica worker');
    for (let rank = 1; rank < o.plan.devices.length; rank++) {
      const workerData: ReplicaWorkerData = {
        xttsRole: 'replica',
        rank,
        shared,
        backend: o.plan.backend,
        device: o.plan.devices[rank],
        model: o.config.model,
        sizes: o.sizes,
        seed: o.config.training.seed,
        convImpl: o.config.device.conv_kernels,
        matmul: o.config.device.matmul,
        boundsChecks: o.config.device.bounds_checks,
        capture: o.config.device.step_capture,
        exchange: o.config.device.gradient_exchange,
        training: o.config.training,
        modelBudgetMb: o.config.device.model_memory_budget_mb,
        batchSize: o.config.batching.batch_size,
      };
      workers.push(new ReplicaWorker(rank, new Worker(entry, { workerData }), shared));
    }
    const group = new ReplicaGroup(o.plan, workers, shared, o.model, o.optimizer, o.config, [o.rank0Device]);
    try {
      for (const w of workers) {
        const ready = await w.next();
        if (ready.type !== 'ready') throw new Error(`${w.label}: expected ready, got ${ready.type}`);
        w.device = ready.device;
        group.devices.push(ready.device);
      }
      const state = await o.state();
      await Promise.all(workers.map((w) => w.ask({ type: 'state', ...state })));
    } catch (e) {
      await group.close();
      throw e;
    }
    return group;
  }

  /**
   * One micro-batch over the group: rank r trains on its rows of the batch. Resolves when every
   * replica is done with it (at the last micro-batch of a step, after the update everywhere).
   */
  async micro(
    step: number,
    host: HostBatch,
    dims: BatchDims,
    last: boolean,
    dropoutRng: number,
  ): Promise<{ rank0: MicroResult; workers: WorkerMicro[] }> {
    const rows = shardRows(dims.batchSize, this.world);
    const answers = this.workers.map((w) => {
      const s = shardOf(host, dims, rows[w.rank]);
      const job = { host: s.host, dims: s.dims, rows: rows[w.rank], last, dropoutRng };
      return w.ask(
        { type: 'micro', step, job },
        Object.values(s.host).map((a) => (a as Int32Array | Float32Array).buffer as ArrayBuffer),
      );
    });
    const s0 = shardOf(host, dims, rows[0]);
    const own = this.replica
      .micro({ host: s0.host, dims: s0.dims, rows: rows[0], last, dropoutRng })
      .catch((e: Error) => {
        abortCollective(this.shared, `rank 0 failed: ${e.message}`);
        throw e;
      });
    const settled = await Promise.allSettled([own, ...answers]);
    this.throwFailure(settled);
    const rank0 = (settled[0] as PromiseFulfilledResult<MicroResult>).value;
    const workers = settled.slice(1).map((x) => {
      const m = (x as PromiseFulfilledResult<FromReplica>).value;
      if (m.type !== 'micro') throw new Error(`a replica answered ${m.type} to a micro-batch`);
      return {
        spans: m.spans,
        samples: m.samples,
        replayed: m.replayed,
        tensors: m.tensors,
        tensorBytes: m.tensorBytes,
      };
    });
    return { rank0, workers };
  }

  /** The first failure: a replica's own error before rank 0's "aborted" echo of it. */
  private throwFailure(settled: PromiseSettledResult<unknown>[]): void {
    const worker = this.workers.find((w) => w.failure)?.failure;
    if (worker) throw worker;
    const failed = settled.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Drops every replica's partial accumulation (the data ran out inside a step). */
  async discard(): Promise<void> {
    this.replica.discard();
    const settled = await Promise.allSettled(this.workers.map((w) => w.ask({ type: 'discard' })));
    this.throwFailure(settled);
  }

  /**
   * REPLICAS_DIVERGED when a replica's weights differ from rank 0's (they are updated from the same
   * sums and must stay identical); reads every replica's weights back.
   */
  async checkInSync(step: number): Promise<void> {
    const settled = await Promise.allSettled([
      weightsDigest(this.replica.model),
      ...this.workers.map((w) => w.ask({ type: 'digest' })),
    ]);
    this.throwFailure(settled);
    const digests = settled.map((x, i) =>
      i === 0
        ? (x as PromiseFulfilledResult<string>).value
        : ((x as PromiseFulfilledResult<FromReplica>).value as { digest: string }).digest,
    );
    const off = digests.map((d, r) => (d === digests[0] ? -1 : r)).filter((r) => r >= 0);
    if (off.length) {
      throw new XttsError(
        'REPLICAS_DIVERGED',
        `at step ${step} the weights ` +
          `of ${off.map((r) => `replica ${r} (${this.devices[r]})`).join(', ')} differ ` +
          `from rank 0's (${this.devices[0]}): the devices do not compute the same update ` +
          `from the same gradients`,
        {
          exitCode: ExitCode.environment,
          suggestions: [
            'train on devices of one model and driver (device.gpus), or on one device',
            'resume from the last checkpoint: every replica starts from its weights',
          ],
        },
      );
    }
  }

  /** What step capture did on each replica, by rank (a replica that failed is left out). */
  async captureSummaries(): Promise<(StepCaptureSummary & { rank: number; device: string })[]> {
    const settled = await Promise.allSettled([
      this.replica.captureSummary(),
      ...this.workers.map(async (w) => {
        const m = await w.ask({ type: 'capture' });
        if (m.type !== 'capture') throw new Error(`${w.label} answered ${m.type} to a capture summary`);
        return m.summary;
      }),
    ]);
    return settled.flatMap((x, rank) =>
      x.status === 'fulfilled' ? [{ ...x.value, rank, device: this.devices[rank] ?? '?' }] : [],
    );
  }

  async close(): Promise<void> {
    this.replica.dispose();
    await Promise.all(this.workers.map((w) => w.close()));
  }
}

/**
 * Floats of the all-reduce's buckets: DEFAULT_BUCKET_FLOATS, or XTTS_ALLREDUCE_BUCKET (a test and benchmark switch:
 * many buckets on a small model, as a large model has them).
 */
function bucketFloats(): number {
  const v = process.env.XTTS_ALLREDUCE_BUCKET;
  if (v === undefined || v === '') return DEFAULT_BUCKET_FLOATS;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 2 || n % 2 !== 0 || n > DEFAULT_BUCKET_FLOATS)
    throw usage(`XTTS_ALLREDUCE_BUCKET=${v} is not an even number of floats from 2 to ${DEFAULT_BUCKET_FLOATS}`, [
      'unset XTTS_ALLREDUCE_BUCKET (a test and benchmark switch) or give it an even whole number',
    ]);
  return n;
}
