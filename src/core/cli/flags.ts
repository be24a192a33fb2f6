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
    out[name as keyof typeof THRESHOLDS] = value;
  }
  return out;
}
