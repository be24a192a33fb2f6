// Where a worker thread's module is, and how one is ended. Its module: the bundle itself when bundled (its entry
// dispatches on
// workerData.xttsRole), else the compiled file beside the caller, else — for callers running from
// TypeScript sources (tests under tsx), whose worker threads cannot load .ts — its build under dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';

/**
 * `callerUrl` is the caller's import.meta.url; `file` the worker module's path relative to src/core
 * (e.g. "data/producer-worker.js").
 */
export function workerEntry(callerUrl: string, file: string, what: string): URL | string {
  const bundled = (globalThis as { __XTTS_WORKER_ENTRY__?: string }).__XTTS_WORKER_ENTRY__;
  if (bundled) return bundled;
  const name = file.split('/').pop()!;
  const beside = new URL(`./${name}`, callerUrl);
  if (existsSync(fileURLToPath(beside))) return beside;
  const depth = file.split('/').length - 1;
  const built = new URL(`${'../'.repeat(depth)}dist/${file}`, callerUrl);
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`the ${what} is not built (${fileURLToPath(built)}): run \`npm run build\``);
}

/** Ask a worker to end (`message`), wait for its exit, and terminate it if it has not gone in 5 s. */
export async function endWorker(worker: Worker, message: unknown): Promise<void> {
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage(message);
  const timer = setTimeout(() => void worker.terminate(), 5000);
  await exited;
  clearTimeout(timer);
}
