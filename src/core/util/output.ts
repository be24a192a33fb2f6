// Writing a file the user named (a trace, a report, a patched config): a folder that does not exist
// or cannot be written is a usage error that says which file, not a stack trace.
import { writeFileSync } from 'node:fs';
import { ExitCode, XttsError } from '../errors.js';

/** Write `text` to `file`; `what` names it for the message, e.g. "the trace (--trace)". */
export function writeOutputFile(file: string, text: string, what: string): void {
  try {
    writeFileSync(file, text);
  } catch (e) {
    throw new XttsError('OUTPUT_UNWRITABLE', `cannot write ${what} to ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'its folder does not exist' : (e as Error).message}`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a file in a folder that exists and that you can write'],
    });
  }
}
