// The step time a recorded run measured: the median wall time of its steps after the first few
// (which compile kernels), for analyses that should match what training really does.
import { RunDatabase } from '../telemetry/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { summarize } from '../util/index.js';

/**
 * The median step of `runDir` after its first `skipFirst`; refused where the run trained another task than `task` (a
 * vocoder's step is no pace for an acoustic model's pipeline, nor the other way round).
 */
export function stepMsFromRun(runDir: string, task: 'acoustic' | 'vocoder', skipFirst = 5): number {
  return RunDatabase.read(runDir, (db) => {
    const ran = db.getMeta<{ task?: string }>('config')?.task ?? 'acoustic';
    if (ran !== task)
      throw new XttsError(
        'RUN_OTHER_TASK',
        `${runDir} trained ${ran === 'vocoder' ? 'a vocoder' : 'an acoustic model'}, and this config trains ` +
          `${task === 'vocoder' ? 'a vocoder' : 'an acoustic model'}: its steps are no pace for this pipeline`,
        { exitCode: ExitCode.usage, suggestions: ['name a run of this config (--run), or pass --step-ms'] },
      );
    const steps = db.steps().slice(skipFirst);
    if (steps.length === 0)
      throw new XttsError('RUN_TOO_SHORT', `${runDir} has no steps after the first ${skipFirst} (compile) steps`, {
        exitCode: ExitCode.usage,
        suggestions: ['pass --step-ms instead, or name a longer run'],
      });
    return summarize(steps.map((s) => s.wallMs)).p50;
  });
}
