// The step time a recorded run measured: the median wall time of its steps after the first few
// (which compile kernels), for analyses that should match what training really does.
import { RunDatabase } from '../telemetry/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { summarize } from '../util/index.js';

export function stepMsFromRun(runDir: string, skipFirst = 5): number {
  return RunDatabase.read(runDir, (db) => {
    const steps = db.steps().slice(skipFirst);
    if (steps.length === 0)
      throw new XttsError('RUN_TOO_SHORT', `${runDir} has no steps after the first ${skipFirst} (compile) steps`, {
        exitCode: ExitCode.usage,
        suggestions: ['pass --step-ms instead, or name a longer run'],
      });
    return summarize(steps.map((s) => s.wallMs)).p50;
  });
}
