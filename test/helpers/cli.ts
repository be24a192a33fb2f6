// Runs the real xtts CLI (or a utility binary) as a process, the way a user or a CI job does.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON when it is JSON. */
  json?: any;
}

export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string>; bin?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [options.bin ?? `${repoRoot}/src/cli/run.js`, ...args], {
      cwd: options.cwd ?? repoRoot,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

/** No stack trace lines in what a user sees. */
export function hasStackTrace(s: string): boolean {
  return /\n\s+at .+:\d+:\d+\)?/.test(s);
}
