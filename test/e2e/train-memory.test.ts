// train() frees what it made: a second run in the same process (as diagnose-gpu-utilization and the
// config fuzz train) ends holding exactly the tensors the first left, and within a run that writes a
// checkpoint every step the tensors held after each step stay the same (a checkpoint's copy of the
// optimizer state once leaked 8 bytes a parameter per checkpoint, and each run 12 more).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import Database from 'better-sqlite3';
import { loadConfigOrThrow } from '../../src/core/config/index.js';
import { train } from '../../src/core/training/index.js';
import { microRun } from '../helpers/short-clips.js';

test(
  'two runs in one process hold no more tensors than one; a checkpoint every step ' + 'holds nothing more after it',
  async () => {
    const { dir, config } = microRun('xtts-memory-');
    const loaded = loadConfigOrThrow(config, { set: ['training.checkpoint_every=1'] });
    const held: number[] = [];
    for (const run of ['a', 'b']) {
      await train({ loaded, backend: 'cpu', maxSteps: 5, outputDir: join(dir, run) });
      held.push(tf.memory().numTensors);
    }
    assert.equal(held[1], held[0], `tensors held after each run: ${held}`);
    const db = new Database(join(dir, 'b', 'run.sqlite'), { readonly: true });
    const perStep = (db.prepare('SELECT tensors FROM steps ORDER BY step').all() as { tensors: number }[]).map(
      (r) => r.tensors,
    );
    db.close();
    assert.equal(perStep.length, 5);
    assert.deepEqual(perStep.slice(2), Array(3).fill(perStep[2]), `tensors held after each step: ${perStep}`);
  },
);
