// Folders a command makes for itself under the system's temporary folder (the analyzer's scratch cache, a profiled run
// nobody asked to keep): removed when the command is done with them, and whenever the process ends before that (an
// error, process.exit, Ctrl-C, SIGTERM, a closed terminal), so that a command leaves nothing outside the folders the
// user named.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STOP_SIGNALS } from './signals.js';

const live = new Set<string>();

function removeAll(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}

/**
 * A signal that nothing else handles would end the process at once, with no 'exit' event: the folders go first, and
 * the signal is raised again with its default action (the same exit status). Where the command handles it (train
 * saves a checkpoint into its run folder and then exits), the folders are left for the 'exit' event.
 */
function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  uninstall();
  removeAll();
  process.kill(process.pid, signal);
}

const handlers = new Map(STOP_SIGNALS.map((s) => [s, () => onSignal(s)] as const));

let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', removeAll);
  for (const [signal, handler] of handlers) process.on(signal, handler);
}

function uninstall(): void {
  installed = false;
  process.off('exit', removeAll);
  for (const [signal, handler] of handlers) process.off(signal, handler);
}

/** A new folder under the system's temporary folder, named from `prefix`, removed however the process ends. */
export function makeTemporaryFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  install();
  live.add(dir);
  return dir;
}

/**
 * Removes a folder of makeTemporaryFolder's now. The handlers stay for the process's life: a Ctrl-C that came while the
 * command was busy waits for the event loop, and a listener removed before the loop reads it would lose it (the
 * process would go on); with no folder left, the handler ends the process by the signal as before.
 */
export function removeTemporaryFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  live.delete(dir);
}
