import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { patchConfigText } from '../../src/core/config/patch.js';

test('patching keeps comments and order, changes values, adds missing sections, explains why', () => {
  const text = '# my config\nextends: small\npipeline:\n  workers: 1 # few\ntraining:\n  max_steps: 10\n';
  const out = patchConfigText(text, [
    { key: 'pipeline.workers', value: 7, reason: 'input-bound' },
    { key: 'batching.batch_size', value: 32, reason: 'dispatch-bound' },
  ]);
  assert.deepEqual(parse(out), {
    extends: 'small',
    pipeline: { workers: 7 },
    training: { max_steps: 10 },
    batching: { batch_size: 32 },
  });
  assert.match(out, /^# my config\n/);
  assert.match(out, /# xtts: input-bound\n  workers: 7 # few/);
  assert.match(out, /# xtts: dispatch-bound\n  batch_size: 32/);
});
