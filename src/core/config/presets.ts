// The YAML presets shipped with xtts (configs/*.yaml): their names and where they are.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PRESETS = [
  'tiny',
  'small',
  'normal',
  'big',
  'quickstart',
  'dual-gpu',
  'vocoder-tiny',
  'vocoder-small',
] as const;

/**
 * The folder holding the YAML presets: $XTTS_CONFIGS_DIR, or the first `configs/` with the presets
 * above this module (the repository's, from src/core or src/core/dist), or beside a bundle.
 */
export function presetsDir(): string {
  if (process.env.XTTS_CONFIGS_DIR) return process.env.XTTS_CONFIGS_DIR;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'configs', 'tiny.yaml'))) return join(dir, 'configs');
    dir = dirname(dir);
  }
  return join(dirname(fileURLToPath(import.meta.url)), 'configs');
}

export function presetPath(name: string): string {
  return join(presetsDir(), `${name}.yaml`);
}
