// Flags several commands share, declared once so that they read and behave alike everywhere.
import { Flags } from '@oclif/core';
import { THRESHOLDS } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';

export const configFlag = Flags.string({
  char: 'c',
  summary: 'Training config (YAML); presets live in configs/.',
  helpValue: 'FILE',
  env: 'XTTS_CONFIG',
});
export const setFlag = Flags.string({
  summary: 'Override a config key, e.g. training.learning_rate=3e-4 (repeatable).',
  multiple: true,
  default: [],
  helpValue: 'KEY=VALUE',
});
export const datasetFlag = Flags.string({
  summary: 'Dataset folder (instead of dataset.path).',
  helpValue: 'DIR',
  env: 'XTTS_DATASET',
});
export const cacheFlag = Flags.string({
  summary: "The cache database (default: the config's pipeline.cache.path, or .xtts-cache/cache.sqlite).",
  helpValue: 'FILE',
  env: 'XTTS_CACHE',
});

/**
 * A flag of a positive number of `unit` (fractions allowed), refused by name otherwise (--max-minutes,
 * --max-seconds).
 */
export function positiveNumberFlag(flag: string, unit: string, summary: string) {
  return Flags.custom<number>({
    summary,
    helpValue: unit.toUpperCase(),
    parse: async (input) => {
      const value = Number(input);
      if (!(Number.isFinite(value) && value > 0))
        throw new Error(`${flag} must be a positive number of ${unit}, got "${input}"`);
      return value;
    },
  })();
}

export const thresholdFlag = Flags.string({
  summary: `Override a shared threshold for this run, e.g. inputBoundHigh=0.3 (names: docs/rules.md#thresholds).`,
  multiple: true,
  default: [],
  helpValue: 'NAME=VALUE',
});

/** `--threshold NAME=VALUE` values as overrides; a usage error names the flag value and the valid names. */
export function parseThresholds(values: readonly string[]): Partial<Record<keyof typeof THRESHOLDS, number>> {
  const out: Partial<Record<keyof typeof THRESHOLDS, number>> = {};
  for (const t of values) {
    const eq = t.indexOf('=');
    const name = eq > 0 ? t.slice(0, eq) : t;
    const value = eq > 0 ? Number(t.slice(eq + 1)) : Number.NaN;
    if (!(name in THRESHOLDS) || eq < 0 || t.slice(eq + 1).trim() === '' || !Number.isFinite(value)) {
      throw new XttsError(
        'USAGE',
        `--threshold ${t}: expected NAME=NUMBER with NAME one of ${Object.keys(THRESHOLDS).join(', ')}`,
        { exitCode: ExitCode.usage },
      );
    }
    const key = name as keyof typeof THRESHOLDS;
    const usage = (why: string) => new XttsError('USAGE', `--threshold ${t}: ${why}`, { exitCode: ExitCode.usage });
    if (key in out) throw usage(`${name} is given twice`);
    if (value < 0) throw usage('a threshold is never negative');
    // Shares of a step, of memory or of the peak (the defaults below 1 but a coefficient of variation and a rate per
    // step): a value over 1 is a percentage by mistake.
    if (THRESHOLDS[key] < 1 && !/Cv$|PerStep$/.test(name) && !(value > 0 && value <= 1))
      throw usage(`${name} is a share between 0 and 1 (default ${THRESHOLDS[key]}; 0.2 is 20%)`);
    out[key] = value;
  }
  const moderate = out.inputBoundModerate ?? THRESHOLDS.inputBoundModerate;
  const high = out.inputBoundHigh ?? THRESHOLDS.inputBoundHigh;
  if (moderate > high)
    throw new XttsError(
      'USAGE',
      `--threshold: inputBoundModerate ${moderate} is above inputBoundHigh ${high}; the moderate one is the lower`,
      { exitCode: ExitCode.usage },
    );
  return out;
}
