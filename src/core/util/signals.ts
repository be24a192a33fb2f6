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
