// The alignment search of training batches on a worker thread. Each step's batch is aligned on the
// host (align.ts: a Viterbi pass per utterance, about 2 ms for a tiny batch of 16 on one core): on
// the thread that issues the GPU's work, that time is time the GPU may wait. Here the scores go to
// one worker thread (their buffer moved, not copied) and the paths and durations come back; the
// search is the same code, so the result is the same.
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { endWorker, workerEntry } from '../util/worker-entry.js';
import { type AlignmentSearch, searchBatch } from './align.js';

type Result = { path: Int32Array; durations: Float32Array };
type Reply = { id: number; result: Result } | { id: number; error: string };

/** One worker thread that searches batches' alignments, in the order they are asked for. */
export class AlignmentSearcher {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Result) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failed: Error | null = null;

  constructor() {
    this.worker = new Worker(workerEntry(import.meta.url, 'model/align-worker.js', 'alignment worker'), { workerData: { xttsRole: 'align' } });
    this.worker.on('message', (m: Reply) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if ('error' in m) p?.reject(new Error(`the alignment search failed: ${m.error}`));
      else p?.resolve(m.result);
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the alignment worker exited (code ${code})`)));
    // It keeps the process alive only while a search is pending.
    this.worker.unref();
  }

  /** The batch's paths and durations; the scores' buffer moves to the worker (unusable here after). */
  search(task: AlignmentSearch): Promise<Result> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.next++;
    return new Promise<Result>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, task }, [task.scores.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    if (this.failed) return;
    this.failed = new Error('the alignment worker was closed');
    await endWorker(this.worker, { close: true });
  }
}

/** The worker's side: answers {id, task} with {id, result}, the result's buffers moved. */
function alignWorkerMain(): void {
  parentPort!.on('message', (m: { id: number; task: AlignmentSearch } | { close: true }) => {
    if ('close' in m) {
      parentPort!.close();
      return;
    }
    try {
      const result = searchBatch(m.task);
      parentPort!.postMessage({ id: m.id, result } satisfies Reply, [result.path.buffer as ArrayBuffer, result.durations.buffer as ArrayBuffer]);
    } catch (e) {
      parentPort!.postMessage({ id: m.id, error: (e as Error).message } satisfies Reply);
    }
  });
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'align') alignWorkerMain();
