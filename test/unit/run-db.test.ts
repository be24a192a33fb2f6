import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { stepMsFromRun } from '../../src/core/data/step-time.js';
import { RunDatabase } from '../../src/core/telemetry/run-db.js';
import { SpanTimer, type StepRecord } from '../../src/core/telemetry/spans.js';

test('spans account for the whole step; the run database round-trips steps, metrics and samples', async () => {
  const t = new SpanTimer();
  t.add('dataWaitMs', 2);
  await new Promise((r) => setTimeout(r, 15));
  t.mark('forwardBackwardMs');
  const { wallMs, spans } = t.finish();
  const sum = Object.values(spans).reduce((a, b) => a + b, 0);
  assert.ok(spans.forwardBackwardMs >= 10, `${spans.forwardBackwardMs}`);
  assert.ok(Math.abs(sum - wallMs - 2) < 1e-6 || Math.abs(sum - wallMs) < 2.5, `spans ${sum} vs wall ${wallMs}`);

  const dir = join(mkdtempSync(join(tmpdir(), 'xtts-run-')), 'run');
  const db = RunDatabase.create(dir);
  db.setMeta('config', { a: 1 });
  const step: StepRecord = {
    step: 1,
    startMs: 0,
    wallMs,
    spans,
    epoch: 0,
    batchIndex: 0,
    bucket: 1,
    batchSize: 8,
    tokens: 64,
    frames: 400,
    kernels: 1234,
    readySlots: 2,
    learningRate: 1e-3,
    loss: 1.5,
    gradNorm: 0.7,
  };
  db.addStep(step);
  db.addStep({ ...step, step: 2, loss: undefined, gradNorm: undefined, nonFinite: true });
  db.addMetric(1, 'loss/train', 1.5);
  db.addMetric(1, 'loss/mel', 1.2);
  db.addDeviceSample({
    tMs: 5,
    device: 0,
    utilizationPct: 40,
    memoryUsedBytes: 1e9,
    memoryTotalBytes: 8e10,
    smClockMhz: 1980,
    powerW: 300,
    temperatureC: 50,
    smActivityPct: null,
    throttleReasons: null,
  });
  db.close();
  const ro = RunDatabase.open(dir);
  assert.deepEqual(ro.getMeta('config'), { a: 1 });
  const steps = ro.steps();
  assert.equal(steps.length, 2);
  assert.deepEqual(steps[0], { ...step, deviceMs: undefined, nonFinite: false });
  assert.equal(steps[1].nonFinite, true);
  assert.equal(steps[1].loss, undefined);
  assert.deepEqual(ro.metrics('loss/train'), [{ step: 1, name: 'loss/train', value: 1.5 }]);
  assert.equal(ro.deviceSamples()[0].smClockMhz, 1980);
  ro.close();
  const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 2);
  assert.throws(() => RunDatabase.open(join(dir, 'nope')), /no run database/);
});

test(
  'the tensors a step leaves behind round-trip; a run folder from before they were ' + 'recorded takes them on resume',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-rundb-old-'));
    // The steps table as xtts wrote it before: no tensors or tensor_bytes columns.
    const Database = (await import('better-sqlite3')).default;
    const old = new Database(join(dir, 'run.sqlite'));
    old.exec(`CREATE TABLE steps (step INTEGER PRIMARY KEY, start_ms REAL, wall_ms REAL, data_wait_ms REAL,
      upload_ms REAL, forward_backward_ms REAL, optimizer_ms REAL, sync_ms REAL, checkpoint_ms REAL, other_ms REAL,
    epoch INTEGER, batch_index INTEGER, bucket INTEGER, batch_size INTEGER, tokens INTEGER, frames INTEGER,
      kernels INTEGER, device_ms REAL, ready_slots INTEGER, learning_rate REAL, loss REAL, grad_norm REAL,
      non_finite INTEGER)`);
    old.exec('INSERT INTO steps (step, start_ms, wall_ms, kernels) VALUES (1, 0, 10, 5)');
    old.close();
    const db = RunDatabase.create(dir);
    const spans = {
      dataWaitMs: 0,
      uploadMs: 0,
      forwardBackwardMs: 1,
      optimizerMs: 1,
      syncMs: 0,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0,
    };
    db.addStep({
      step: 2,
      startMs: 10,
      wallMs: 10,
      spans,
      epoch: 0,
      batchIndex: 1,
      bucket: 0,
      batchSize: 4,
      tokens: 8,
      frames: 16,
      kernels: 5,
      readySlots: 1,
      learningRate: 1e-3,
      tensors: 321,
      tensorBytes: 4096,
    });
    db.close();
    const steps = RunDatabase.open(dir).steps();
    assert.equal(steps[0].tensors, undefined);
    assert.deepEqual([steps[1].tensors, steps[1].tensorBytes], [321, 4096]);
  },
);

test(
  "a replica's part of a step round-trips with its peer wait, readback, exchange and replays; a run folder " +
    'from before takes them on resume',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-rundb-replicas-'));
    // replica_steps as xtts wrote it before: no peer_wait_ms, replayed, readback_ms or exchange_ms.
    const Database = (await import('better-sqlite3')).default;
    const old = new Database(join(dir, 'run.sqlite'));
    old.exec(`CREATE TABLE replica_steps (step INTEGER, rank INTEGER, samples INTEGER, upload_ms REAL,
    sync_ms REAL, forward_backward_ms REAL, all_reduce_ms REAL, optimizer_ms REAL, tensors INTEGER,
    tensor_bytes REAL, PRIMARY KEY (step, rank))`);
    old.exec('INSERT INTO replica_steps VALUES (1, 0, 4, 1, 2, 3, 4, 5, 6, 7)');
    old.close();
    const db = RunDatabase.create(dir);
    const part = {
      samples: 4,
      uploadMs: 1,
      syncMs: 9,
      forwardBackwardMs: 3,
      allReduceMs: 20,
      optimizerMs: 2,
      peerWaitMs: 6,
      readbackMs: 8,
      exchangeMs: 5,
      tensors: 10,
      tensorBytes: 100,
    };
    db.addReplicaStep({ step: 2, rank: 0, ...part, replayed: true });
    db.addReplicaStep({ step: 2, rank: 1, ...part, replayed: false });
    db.addReplicaStep({ step: 3, rank: 0, ...part, replayed: null });
    db.close();
    const rows = RunDatabase.open(dir).replicaSteps();
    assert.deepEqual(
      rows.map((r) => [r.step, r.rank, r.peerWaitMs, r.readbackMs, r.exchangeMs, r.replayed]),
      [
        [1, 0, null, null, null, null],
        [2, 0, 6, 8, 5, true],
        [2, 1, 6, 8, 5, false],
        [3, 0, 6, 8, 5, null],
      ],
    );
  },
);

test("a run's step time is read for a pipeline of its own task only (a vocoder's steps are no acoustic pace)", () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'xtts-run-')), 'run');
  const db = RunDatabase.create(dir);
  db.setMeta('config', { task: 'vocoder' });
  const spans = new SpanTimer().finish().spans;
  for (let i = 1; i <= 9; i++)
    db.addStep({
      ...{ step: i, startMs: i * 100, wallMs: i < 6 ? 500 : 40, spans, epoch: 0, batchIndex: i, bucket: 0 },
      ...{ batchSize: 8, tokens: 0, frames: 32, kernels: 10, readySlots: 1, learningRate: 1e-3 },
    });
  db.close();
  assert.equal(stepMsFromRun(dir, 'vocoder'), 40);
  assert.throws(
    () => stepMsFromRun(dir, 'acoustic'),
    (e: Error & { code?: string }) =>
      e.code === 'RUN_OTHER_TASK' && /trained a vocoder, and this config trains an acoustic/.test(e.message),
  );
});
