// Where a worker thread's module is: the bundle itself when bundled (its entry dispatches on
// workerData.xttsRole), else the compiled file beside the caller, else — for callers running from
// TypeScript sources (tests under tsx), whose worker threads cannot load .ts — its build under dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
