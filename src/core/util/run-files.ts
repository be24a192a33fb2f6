// A run's own files, which no output of xtts replaces, with --overwrite or without: what `xtts train` writes in a run
// folder (its marker, run.sqlite, metrics, checkpoints/, …) and every checkpoint folder's files. A WAV written over
// run.sqlite or a checkpoint's weights would lose the run (training/run-folder.ts keeps runs apart; this keeps them
// whole).
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';
import { type NamedFile, refuseOutputsOverInputs } from './output.js';

/** The file that makes a folder a run folder: its id and the command that began it. */
export const RUN_MARKER = 'xtts-run.json';

/** What a run folder may hold besides a run's marker: every name xtts train writes there. */
export const RUN_ENTRIES: readonly RegExp[] = [
  /^xtts-run\.json$/,
  /^\.xtts-run\.lock$/,
  /^\.xtts-run\.json\.\d+\.tmp$/,
  /^run\.sqlite(-wal|-shm|-journal)?$/,
  /^metrics\.jsonl$/,
  /^checkpoints$/,
  /^eval$/,
  /^loss-curve\.png$/,
  /^\.loss-curve\.png\.\d+\.tmp$/,
  /^events\.out\.tfevents\..+$/,
];

/**
 * The run folder whose own files `file` would replace, or undefined: an existing file of a checkpoint folder
 * (state.json beside weights.safetensors, wherever it is), anything under a run's checkpoints/ (rotation removes what
 * is there), or one of the entries xtts train writes in a run folder (run.sqlite, xtts-run.json, metrics.jsonl, …).
 * Folders as they resolve through links.
 */
function runOwning(file: string): string | undefined {
  const folder = dirname(resolve(file));
  const real = (() => {
    try {
      return realpathSync(folder);
    } catch {
      return folder;
    }
  })();
  const isRun = (d: string) =>
    existsSync(join(d, RUN_MARKER)) || (existsSync(join(d, 'run.sqlite')) && existsSync(join(d, 'checkpoints')));
  // A checkpoint folder's existing files are the checkpoint's (a new file beside one copied out of its run is not).
  const isCheckpoint = existsSync(join(real, 'state.json')) && existsSync(join(real, 'weights.safetensors'));
  if (isCheckpoint && existsSync(join(real, basename(file)))) return real;
  if (isRun(real) && RUN_ENTRIES.some((re) => re.test(basename(file)))) return real;
  for (let d = real; dirname(d) !== d; d = dirname(d))
    if (basename(d) === 'checkpoints' && isRun(dirname(d))) return dirname(d);
  return undefined;
}

/**
 * Refuses outputs that would replace a run's own files (runOwning), with --overwrite or without: a WAV written over
 * run.sqlite or a checkpoint's weights loses the run.
 */
function refuseRunFiles(outputs: readonly NamedFile[]): void {
  for (const out of outputs) {
    const run = runOwning(out.file);
    if (run)
      throw new XttsError(
        'OUTPUT_IS_RUN_FILE',
        `${out.what} ${out.file} is among the files of the run or checkpoint in ${run} (its records, or its ` +
          'checkpoints/, which rotation empties): xtts never writes there',
        { exitCode: ExitCode.usage, suggestions: ["name a file outside the checkpoints and the run's own files"] },
      );
  }
}

/** Refuses outputs over a run's own files (refuseRunFiles) or over the command's inputs (refuseOutputsOverInputs). */
export function refuseUnsafeOutputs(outputs: readonly NamedFile[], inputs: readonly NamedFile[]): void {
  refuseRunFiles(outputs);
  refuseOutputsOverInputs(outputs, inputs);
}
