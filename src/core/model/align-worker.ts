// The alignment search of training batches on worker threads. Each step's batch is aligned on the
// host (align.ts: a Viterbi pass per utterance, about 2 ms for a tiny batch of 16 on one core): on
// the thread that issues the GPU's work, that time is time the GPU may wait. Here a batch's
// utterances are split among a few worker threads (each part's scores moved, not copied) and the
// paths and durations come back; the search is the same code, so the result is the same. A batch's
// scores arrive only once the thread that issues the GPU's work yields (their readback resolves in
// its event loop), so the search is usually on the step's critical path: splitting it shortens it.
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { endWorker, workerEntry } from '../util/index.js';
import { type AlignmentSearch, searchBatch } from './align.js';

type Result = { path: Int32Array; durations: Float32Array };
type Reply = { id: number; result: Result } | { id: number; error: string };

/** One worker thread: its searches in the order asked; it holds the process only while one is pending. */
class SearchThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Result) => void; reject: (e: Error) => void }>();
  private next = 0;
  failed: Error | null = null;

  constructor() {
    this.worker = new Worker(workerEntry(import.meta.url, 'model/align-worker.js', 'alignment worker'), {
      workerData: { xttsRole: 'align' },
    });
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
    this.worker.unref();
  }

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

/** A few worker threads that search batches' alignments, each batch's utterances split among them. */
export class AlignmentSearcher {
  private readonly threads: SearchThread[];

  constructor(threads: number) {
    this.threads = Array.from({ length: Math.max(1, Math.floor(threads)) }, () => new SearchThread());
  }

  /** Threads for a host of `cores` cores: one per spare core, at most 4 (a tiny batch's search is ~2 ms). */
  static threadsFor(cores: number): number {
    return Math.max(1, Math.min(4, cores - 1));
  }

  /**
   * The batch's paths [batch, steps] and durations [batch, textSteps]; with one part, task.scores moves to the worker.
   */
  async search(task: AlignmentSearch): Promise<Result> {
    const { batch, steps, textSteps } = task;
    const parts = Math.min(this.threads.length, batch);
    // One part: the task as it is, its scores' buffer moved (no copy on the step's path).
    if (parts === 1) return this.threads[0].search(task);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.round((i * batch) / parts));
    const results = await Promise.all(
      this.threads.slice(0, parts).map((thread, i) => {
        const [from, to] = [bounds[i], bounds[i + 1]];
        return thread.search({
          ...task,
          scores: task.scores.slice(from * steps * textSteps, to * steps * textSteps),
          batch: to - from,
          textLengths: Array.from(task.textLengths).slice(from, to),
          melLengths: Array.from(task.melLengths).slice(from, to),
        });
      }),
    );
    const path = new Int32Array(batch * steps);
    const durations = new Float32Array(batch * textSteps);
    results.forEach((r, i) => {
      path.set(r.path, bounds[i] * steps);
      durations.set(r.durations, bounds[i] * textSteps);
    });
    return { path, durations };
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
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
      parentPort!.postMessage({ id: m.id, result } satisfies Reply, [
        result.path.buffer as ArrayBuffer,
        result.durations.buffer as ArrayBuffer,
      ]);
    } catch (e) {
      parentPort!.postMessage({ id: m.id, error: (e as Error).message } satisfies Reply);
    }
  });
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'align') alignWorkerMain();
