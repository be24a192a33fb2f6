// bench/precision.sh's verdict (bench/precision-summary.py): mixed_fp16 passes when its runs' mean loss lies within
// the float32 runs' spread of theirs, fails when it does not, and a run that failed is named (exit 1).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

const STEPS = 100;

/** `xtts train --json` of a run whose training loss ends at `train` and whose last validation loss is `val`. */
function run(dir: string, name: string, train: number, val: number): void {
  const lossCurve = Array.from({ length: 10 }, (_, i) => ({ step: (i + 1) * 10, loss: i === 9 ? train : 5 - i }));
  const result = {
    steps: STEPS,
    lossCurve,
    validation: [
      { step: 50, loss: 3 },
      { step: STEPS, loss: val },
    ],
  };
  writeFileSync(
    join(dir, `${name}.json`),
    JSON.stringify({ status: 'success', result: { ...result, nonFiniteSteps: 0 } }),
  );
}

function summary(dir: string) {
  const r = spawnSync('python3', [join(repoRoot, 'bench', 'precision-summary.py'), dir, String(STEPS)], {
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('mixed_fp16 within the float32 runs spread passes; outside it fails; a failed run is named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-precision-'));
  run(dir, 'fp32-1', 0.7, 0.76);
  run(dir, 'fp32-2', 0.72, 0.78);
  run(dir, 'fp32-3', 0.69, 0.75);
  run(dir, 'mixed_fp16-1', 0.71, 0.77);
  run(dir, 'mixed_fp16-2', 0.7, 0.76);
  let s = summary(dir);
  assert.equal(s.status, 0, s.out);
  // validation: fp32 mean 0.7633, spread 0.03; mixed mean 0.765 (+0.0017): within.
  assert.match(s.out, /validation loss: fp32 mean 0\.7633 \(range 0\.7500-0\.7800, spread 0\.0300\).*PASS; 2 of 2/);
  assert.match(s.out, /training loss \(last 10%\): fp32 mean 0\.7033 .*\+0\.0017 \(within the fp32 spread\) PASS/);
  assert.match(s.out, /same seed, mixed - fp32: \+0\.0100, -0\.0200/);

  run(dir, 'mixed_fp16-2', 0.9, 0.95); // diverged: the mean moves 0.095 past a spread of 0.03
  writeFileSync(
    join(dir, 'mixed_fp16-3.json'),
    JSON.stringify({ status: 'error', error: { message: 'out of memory' } }),
  );
  s = summary(dir);
  assert.equal(s.status, 1, s.out);
  assert.match(s.out, /mixed_fp16-3: failed: out of memory/);
  assert.match(s.out, /validation loss: .*\(outside the fp32 spread\) FAIL; 1 of 2 mixed runs inside/);
});
