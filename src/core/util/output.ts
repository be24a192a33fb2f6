// Writing a file the user named (a trace, a report, a patched config): a folder that does not exist
// or cannot be written is a usage error that says which file, not a stack trace.
import { accessSync, constants, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';

/** Write `text` to `file`; `what` names it for the message, e.g. "the trace (--trace)". */
export function writeOutputFile(file: string, text: string | Uint8Array, what: string): void {
  try {
    writeFileSync(file, text);
  } catch (e) {
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'its folder does not exist' : (e as Error).message}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a file in a folder that exists and that you can write'],
    });
  }
}

/** Before long work: the folder `file` goes into exists and can be written, or a usage error naming it. */
export function checkOutputFolder(file: string, what: string): void {
  const folder = dirname(file);
  let problem: string | undefined;
  try {
    if (!statSync(folder).isDirectory()) problem = `${folder} is not a folder`;
    else accessSync(folder, constants.W_OK);
  } catch (e) {
    problem = (e as NodeJS.ErrnoException).code === 'ENOENT' ? `its folder ${folder} does not exist` : `its folder ${folder} cannot be written`;
  }
  if (problem) throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${problem}`, { exitCode: ExitCode.usage, suggestions: ['name a file in a folder that exists and that you can write'] });
}
