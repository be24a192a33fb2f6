// --fix-config: the config file a run trained from, with the verdicts' changes, where the file is still the one the
// run read and each change was judged for the value the file gives (not one a --set or a flag gave the run).
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { sha256Hex } from '../cache/index.js';
import { type ConfigChange, loadConfigOrThrow, patchConfigFile, type XttsConfig } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';

/** What the run recorded of its config (run.sqlite's meta) and the patched file's place. */
export interface FixConfigRequest {
  /** The config file the run read (absolute since runs record it so; a relative one is an older run's). */
  configFile: string | null;
  /** Its SHA-256 when the run began (runs recorded before it: null). */
  configSha256: string | null;
  /** The config the run trained with, its --set and flags applied. */
  runConfig: XttsConfig;
  changes: readonly ConfigChange[];
  out: string;
  overwrite: boolean;
}

/**
 * Writes the patched config; returns a note for each change not applied because the run's value was not the file's
 * (the advice, four times the run's checkpoint_every say, would be wrong for the file's own value). Refuses a file the
 * run did not record whole, or one that changed since the run began.
 */
export function writeFixedConfig(r: FixConfigRequest): string[] {
  const file = r.configFile;
  if (!file)
    throw new XttsError(
      'RUN_NO_CONFIG_FILE',
      'the run does not record which config file it used, so there is nothing to patch',
      { exitCode: ExitCode.usage },
    );
  const byHand =
    "apply the verdicts' changes by hand (each names its key and value), or profile a new run of the config: " +
    `xtts profile-bottleneck --config FILE --fix-config ${r.out}`;
  if (!isAbsolute(file))
    throw new XttsError(
      'RUN_CONFIG_RELATIVE',
      `the run recorded its config as ${file}, relative to the folder xtts train ran in, which it does not record ` +
        '(runs of this version record the whole path): which file that is cannot be told from here',
      { exitCode: ExitCode.usage, suggestions: [byHand] },
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new XttsError(
      'CONFIG_UNREADABLE',
      `cannot read ${file}, the config the run trained from, to patch it: ${(e as NodeJS.ErrnoException).code ?? e}`,
      { exitCode: ExitCode.usage, suggestions: [byHand] },
    );
  }
  if (r.configSha256 !== null && sha256Hex(text) !== r.configSha256)
    throw new XttsError(
      'RUN_CONFIG_CHANGED',
      `${file} changed since the run began: the verdicts were judged for the config it trained with`,
      { exitCode: ExitCode.usage, position: { file }, suggestions: [byHand] },
    );
  const own = loadConfigOrThrow(file).config;
  const notes: string[] = [];
  const applied = r.changes.filter((c) => {
    const [ran, says] = [valueAt(r.runConfig, c.key), valueAt(own, c.key)];
    if (JSON.stringify(ran) === JSON.stringify(says)) return true;
    notes.push(
      `--fix-config: ${c.key}: ${JSON.stringify(c.value)} not written: it was judged for the run's ` +
        `${JSON.stringify(ran)} (a --set or a flag), and ${file} says ${JSON.stringify(says)}`,
    );
    return false;
  });
  patchConfigFile({ file, text }, applied, r.out, { overwrite: r.overwrite });
  return notes;
}

/** The value at a dotted key of a config (undefined where there is none). */
function valueAt(config: object, key: string): unknown {
  return key
    .split('.')
    .reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as never)[k] : undefined), config);
}
