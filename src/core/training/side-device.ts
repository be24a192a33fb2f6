// The data device (device.data_device): a worker thread with its own engine on a second GPU, or on
// the CPU ("cpu"), that runs validation passes and eval synthesis from a snapshot of the weights at
// their step while the trainer keeps training. Results come back in order and are applied when they
// arrive; the trainer waits only when two jobs are already queued (it never outruns the side by more)
// and at the end of the run.
import { Worker } from 'node:worker_threads';
import type { XttsConfig } from '../config/index.js';
import type { planBuckets } from '../data/index.js';
import type { PreparedDataset } from '../data/index.js';
import { deserializeError, ExitCode, XttsError } from '../errors.js';
import type { ModelSizes } from '../model/index.js';
import { endWorker, workerEntry } from '../util/index.js';
import type { LoaderCommon } from './evaluation.js';
import type { FromSide, SideWorkerData, ToSide } from './side-worker.js';

/** Jobs queued on the side before the trainer waits for the oldest. */
const MAX_QUEUED = 2;

export type SideResult = Extract<FromSide, { type: 'validated' | 'evaluated' }>;

export class SideDevice {
  private queued = 0;
  private failure: Error | null = null;
  private waiters: (() => void)[] = [];
  private closing = false;
  private exited = false;

  private constructor(
    private readonly worker: Worker,
    /** Backend and device the side runs on. */
    readonly device: string,
    private readonly onResult: (r: SideResult) => void,
  ) {
    worker.on('message', (m: FromSide) => {
      if (m.type === 'error') return this.fail(deserializeError(m.error, `the data device (${this.device})`));
      if (m.type !== 'validated' && m.type !== 'evaluated') return;
      this.queued--;
      try {
        this.onResult(m);
      } catch (e) {
        this.fail(e as Error);
      }
      this.wake();
    });
    worker.on('error', (e) => this.fail(new Error(`the data device (${this.device}) stopped: ${e.message}`)));
    worker.on('exit', (code) => {
      this.exited = true;
      if (!this.closing) this.fail(new Error(`the data device (${this.device}) exited (code ${code})`));
    });
  }

  /** device.data_device -> the side's backend and adapter: "cpu" a wasm engine, anything else a GPU on webgpu. */
  static placement(ref: number | string): { backend: 'webgpu' | 'wasm'; device: number | string | null } {
    return typeof ref === 'string' && ref.toLowerCase() === 'cpu'
      ? { backend: 'wasm', device: null }
      : { backend: 'webgpu', device: ref };
  }

  static async start(o: {
    ref: number | string;
    config: XttsConfig;
    sizes: ModelSizes;
    data: PreparedDataset;
    bucketOptions: Parameters<typeof planBuckets>[1];
    common: LoaderCommon;
    onResult: (r: SideResult) => void;
  }): Promise<SideDevice> {
    const workerData: SideWorkerData = {
      xttsRole: 'side',
      ...SideDevice.placement(o.ref),
      config: o.config,
      sizes: o.sizes,
      data: {
        validation: o.data.validation,
        train: o.data.train.slice(0, 1),
        tokenizer: o.data.tokenizer.toJSON(),
        stats: o.data.stats,
        cachePath: o.data.cachePath,
      },
      bucketOptions: o.bucketOptions,
      common: o.common,
    };
    const worker = new Worker(workerEntry(import.meta.url, 'training/side-worker.js', 'data-device worker'), {
      workerData,
    });
    const ready = await new Promise<FromSide>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (ready.type !== 'ready') {
      await worker.terminate();
      const e = ready.type === 'error' ? ready.error : { message: `expected ready, got ${ready.type}` };
      throw new XttsError(
        e.code ?? 'DATA_DEVICE_UNAVAILABLE',
        `device.data_device ${JSON.stringify(o.ref)}: ${e.message}`,
        {
          exitCode: ExitCode.environment,
          suggestions: e.suggestions?.length
            ? e.suggestions
            : ['set device.data_device: null to validate and evaluate on the training device'],
        },
      );
    }
    return new SideDevice(worker, ready.device, o.onResult);
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private async waitUntil(ok: () => boolean): Promise<void> {
    while (!ok() && !this.failure) await new Promise<void>((resolve) => this.waiters.push(resolve));
    if (this.failure) throw this.failure;
  }

  /** Queue a job (waits first while MAX_QUEUED are queued); its result comes to onResult. */
  async submit(job: Exclude<ToSide, { type: 'close' }>): Promise<void> {
    await this.waitUntil(() => this.queued < MAX_QUEUED);
    this.queued++;
    this.worker.postMessage(job);
  }

  /** Wait for every queued job's result. */
  async drain(): Promise<void> {
    await this.waitUntil(() => this.queued === 0);
  }

  async close(): Promise<void> {
    this.closing = true;
    if (!this.exited) await endWorker(this.worker, { type: 'close' } satisfies ToSide);
  }
}
