// Runs the real xtts CLI (or a utility binary) as a process, the way a user or a CI job does:
// `node src/cli/run.js ...` with colours off, and returns its exit code, stdout, stderr and, when
// stdout is exactly one JSON document, that document.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The host CLI, as `bin` in package.json names it. */
export const xttsBin = join(repoRoot, 'src', 'cli', 'run.js');

/** A utility binary under utilities/ (e.g. `validate-gpu-optimization`), or undefined when it is not there. */
export function utilityBin(name: string): string | undefined {
  const p = join(repoRoot, 'utilities', `${name}.js`);
  return existsSync(p) ? p : undefined;
}

export interface CliResult {
  /** Exit code; null when the process was killed by a signal (see `signal`). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON when the whole of stdout is one JSON document. */
  json?: any;
}

export interface CliOptions {
  /** Working directory (default: the repository root). */
  cwd?: string;
  /** Extra environment; a value of undefined removes that variable. */
  env?: Record<string, string | undefined>;
  /** Script to run instead of the host CLI, e.g. utilityBin('validate-gpu-optimization'). */
  bin?: string;
  /** Written to stdin, which is then closed (stdin is closed at once when absent). */
  input?: string;
  /** Kill the process (SIGKILL) after this long; default 120 s. */
  timeoutMs?: number;
  /**
   * Send `signal` once, the first time `when` holds of the stderr so far (a user's Ctrl-C at some point of a run):
   * asked at each output and every 50 ms (for a point that a file shows).
   */
  interrupt?: { signal: NodeJS.Signals; when: (stderr: string) => boolean };
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', ...options.env };
  // A user's shell may force colours or ask for stack traces; the tests see what a plain user sees.
  delete env.FORCE_COLOR;
  if (!options.env || !('XTTS_DEBUG' in options.env)) delete env.XTTS_DEBUG;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.bin ?? xttsBin, ...args], {
      cwd: options.cwd ?? repoRoot,
      env: env as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    let interrupted = false;
    const interrupt = () => {
      if (options.interrupt && !interrupted && child.exitCode === null && options.interrupt.when(stderr)) {
        interrupted = true;
        child.kill(options.interrupt.signal);
      }
    };
    const poll = options.interrupt ? setInterval(interrupt, 50) : undefined;
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      interrupt();
    });
    child.stdin.on('error', () => {}); // a child that exits before reading its input
    child.stdin.end(options.input ?? '');
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, signal, stdout, stderr, json });
    });
  });
}

/**
 * A runCli that starts at most `limit` processes at a time, so that a test file can start all its
 * runs at once (tests with `{ concurrency: true }`) without swamping a small machine.
 */
export function cliPool(
  limit = Math.max(2, availableParallelism() + 1),
): (args: string[], options?: CliOptions) => Promise<CliResult> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (args, options) => {
    if (running >= limit) await new Promise<void>((go) => waiting.push(go));
    running++;
    try {
      return await runCli(args, options);
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** Whether text holds a JavaScript stack trace (`    at fn (file:1:2)` or `    at file:1:2`). */
export function hasStackTrace(s: string): boolean {
  return /^\s+at .+:\d+:\d+\)?$/m.test(s) || /^ {4}at \S/m.test(s);
}

/** Fails with both streams when a user-facing run printed a stack trace. */
export function assertNoStackTrace(r: CliResult, what = 'output'): void {
  assert.ok(
    !hasStackTrace(r.stdout) && !hasStackTrace(r.stderr),
    `${what} holds a stack trace:\n${r.stdout}\n${r.stderr}`,
  );
}

/** A short description of a run for assertion messages. */
export function describeRun(r: CliResult): string {
  return (
    `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\n--- ` +
    `stdout\n${r.stdout.slice(0, 4000)}\n--- stderr\n${r.stderr.slice(0, 2000)}`
  );
}
