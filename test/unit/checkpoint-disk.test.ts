// Before training, the disk its checkpoints will take against what the run folder's disk has free: a big model's
// checkpoint is 5 GB (12 bytes a parameter), and one that does not fit ends the run at the last one written.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkCheckpointDisk } from '../../src/core/training/budget.js';

test('checkpoints that the disk cannot hold are a warning that names the sizes and what to change', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-disk-'));
  try {
    const said: string[] = [];
    const say = (m: string) => said.push(m);
    // The real disk: a small model fits, one whose three checkpoints are three times the free space does not.
    assert.equal(checkCheckpointDisk(run, 1_000_000, 2, say), null);
    const fs = statfsSync(run);
    const free = fs.bavail * fs.bsize;
    const huge = Math.ceil(free / 12);
    const warning = checkCheckpointDisk(run, huge, 1, say);
    assert.ok(warning, 'no warning for checkpoints three times the free space');
    assert.match(warning, /each checkpoint of this model takes [\d.]+ [KMGT]i?B \(the weights and AdamW's moments/);
    assert.match(warning, /training\.keep_checkpoints 1, the best and the one being written need/);
    assert.match(warning, /lower training\.keep_checkpoints, or train into a folder on a larger disk \(--output\)/);
    assert.deepEqual(said, [`warning: ${warning}`]);

    // Checkpoints already in the folder (a resumed run rotates them away) count towards what is needed:
    // 100,000 parameters are 1.2 MB a checkpoint, 3.6 MB for keep 1, less the 1 MB already there.
    const step = join(run, 'checkpoints', 'step-00000001');
    mkdirSync(step, { recursive: true });
    writeFileSync(join(step, 'weights.safetensors'), Buffer.alloc(1_000_000));
    assert.equal(checkCheckpointDisk(run, 100_000, 1, say, 2_700_000), null);
    assert.ok(checkCheckpointDisk(run, 100_000, 1, say, 2_500_000));
  } finally {
    rmSync(run, { recursive: true, force: true });
  }
});
