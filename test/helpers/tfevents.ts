// Reads a TensorBoard event file with test/helpers/read_tfevents.py (no xtts code). XTTS_TEST_PYTHON
// names a Python with the `tensorboard` package to have TensorBoard's own reader check it as well.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './cli.js';

export function readEvents(path: string): any {
  const python = process.env.XTTS_TEST_PYTHON ?? 'python3';
  return JSON.parse(
    execFileSync(python, [join(repoRoot, 'test', 'helpers', 'read_tfevents.py'), path], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    }),
  );
}
