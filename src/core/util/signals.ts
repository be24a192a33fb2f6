// The signals a long command stops on (Ctrl-C, `docker stop`, a closed terminal) and the exit status each gives.
import { ExitCode } from '../errors.js';

export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** 128 + the signal's number, as a shell reports a process the signal ended. */
export const SIGNAL_EXIT: Record<StopSignal, ExitCode> = {
  SIGINT: ExitCode.interrupted,
  SIGTERM: ExitCode.terminated,
  SIGHUP: ExitCode.hangup,
};

/** Calls `onSignal` on each stop signal until the function returned is called (which removes the listeners). */
export function onStopSignals(onSignal: (signal: StopSignal) => void): () => void {
  const handlers = STOP_SIGNALS.map((signal) => [signal, () => onSignal(signal)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}
