// A batch shape's first steps (recorded for replay, or compiling its programs) are a phase of their own: the
// verdicts judge the steady steps, so that a profile of a multi-bucket dataset grades the same at 40 steps as at
// 200, and the phase is reported with its cost.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shapeSteps, splitNewShapes } from '../../src/core/profile/shapes.js';
import { judge, type VerdictContext } from '../../src/core/profile/verdicts.js';
import type { StepRecord } from '../../src/core/telemetry/spans.js';

const ctx: VerdictContext = {
  batchSize: 16,
  logEvery: 1,
  workers: 2,
  prefetchDepth: 4,
  cacheEnabled: true,
  buckets: 8,
  cpuCores: 16,
  checkpointEvery: 1000,
  cpuBackend: false,
  stepCapture: 'auto',
};

/**
 * A multi-bucket run with step capture: batches come from 4 shapes in a shuffled order (the fourth first shows at
 * step 31, mid-run); a shape's first 3 steps run eagerly and record (150 ms), its later ones replay (7 ms).
 */
function run(n: number, capture = true, settleUntil = 0): StepRecord[] {
  const order = [0, 1, 2, 0, 1, 2, 1, 0, 2, 0, 2, 1, 0, 1, 2, 2, 1, 0, 0, 1, 2, 1, 0, 2, 1, 2, 0, 0, 1, 2];
  const seen = [0, 0, 0, 0];
  let t = 0;
  return Array.from({ length: n }, (_, i) => {
    const bucket = i === 30 || (i > 30 && i % 7 === 0) ? 3 : order[i % order.length];
    seen[bucket]++;
    const recording = capture ? seen[bucket] <= 3 : seen[bucket] === 1;
    // Until `settleUntil`, replays run at twice the steady time (caches and clocks warming, as seen on an H200).
    const forwardBackwardMs = recording ? 150 : i < settleUntil ? 12.5 : 6;
    const spans = {
      dataWaitMs: 0.05,
      uploadMs: 0.2,
      forwardBackwardMs,
      optimizerMs: 0.3,
      syncMs: 0.3,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0.15,
    };
    const wallMs = Object.values(spans).reduce((a, b) => a + b, 0);
    const r: StepRecord = {
      step: i + 1,
      startMs: t,
      wallMs,
      spans,
      epoch: 0,
      batchIndex: i,
      bucket,
      batchSize: 16,
      tokens: 40 + 20 * bucket,
      frames: 200 + 100 * bucket,
      kernels: recording ? 900 : 350,
      programs: recording ? 900 : 350,
      ...(capture ? { replayed: !recording } : {}),
      readySlots: 3,
      learningRate: 1e-3,
    };
    t += wallMs;
    return r;
  });
}

const warmup = 10;
function profile(steps: StepRecord[]) {
  const { steady, phase } = splitNewShapes(steps, steps.slice(warmup));
  return { v: judge(steady, [], { ...ctx, newShapes: phase }), phase };
}
const grades = (v: ReturnType<typeof judge>) =>
  Object.fromEntries(v.verdicts.filter((x) => x.id !== 'new-shapes').map((x) => [x.id, x.grade]));

test("a shape's steps before its first replay are its new-shape steps; without capture, its first step", () => {
  const steps = run(40);
  const first = shapeSteps(steps);
  const want = steps.filter((s) => s.replayed === false).map((s) => s.step);
  assert.deepEqual(
    [...first].sort((a, b) => a - b),
    want,
  );
  const plain = run(40, false);
  const firsts = shapeSteps(plain);
  assert.equal(firsts.size, 4);
  assert.deepEqual(
    [...firsts].sort((a, b) => a - b),
    [1, 2, 3, 31],
  );
  // Capture off on webgpu records every step as not replayed: the same first steps.
  const notReplayed = shapeSteps(plain.map((s) => ({ ...s, replayed: false })));
  assert.deepEqual(
    [...notReplayed].sort((a, b) => a - b),
    [1, 2, 3, 31],
  );
});

test('the verdicts do not change with --steps: 40 and 200 steps of a multi-bucket run grade alike', () => {
  const short = profile(run(40));
  const long = profile(run(200));
  assert.deepEqual(grades(short.v), grades(long.v));
  // Judged with the recording steps (what the profiler did), the short profile's steps look unsteady.
  const unsplit = judge(run(40).slice(warmup), [], ctx);
  assert.equal(unsplit.verdicts.find((x) => x.id === 'oscillating')?.grade, 'moderate');
  assert.equal(short.v.verdicts.find((x) => x.id === 'oscillating')?.grade, 'ok');
  assert.ok(short.v.breakdown.wallMs.p95 < 10, `steady p95 ${short.v.breakdown.wallMs.p95} ms`);
});

test('steps that have not settled after the new shapes are left out too, and said', () => {
  const short = profile(run(40, true, 24));
  const long = profile(run(200, true, 24));
  assert.deepEqual(grades(short.v), grades(long.v));
  assert.ok(short.phase && short.phase.settlingSteps.length >= 5, JSON.stringify(short.phase));
  assert.ok(short.phase.settlingSteps.every((step) => step <= 24));
  assert.match(
    short.v.verdicts.find((x) => x.id === 'new-shapes')?.evidence ?? '',
    /steps [\d–, ]+ after them had not settled yet/,
  );
  // Without the settling split the short profile would call these steps unsteady.
  const rest = run(40, true, 24).filter((s) => s.step > 10 && s.replayed);
  assert.equal(judge(rest, [], ctx).verdicts.find((x) => x.id === 'oscillating')?.grade, 'moderate');
  // A run that is slow throughout (nothing settles) keeps all its steps.
  const slow = profile(run(40, true, 1000));
  assert.deepEqual(slow.phase?.settlingSteps, []);
});

test('the new-shape phase is a verdict with its steps, cost and the bucket action, moderate when it is costly', () => {
  const { v, phase } = profile(run(40));
  assert.ok(phase);
  // Steps 11+ that recorded: the third bucket's third step and the mid-run shape's first three.
  assert.ok(phase.steps.includes(31) && phase.shapes.includes('100×500'), JSON.stringify(phase));
  const shapes = v.verdicts.find((x) => x.id === 'new-shapes');
  assert.ok(shapes);
  assert.equal(shapes.grade, 'moderate');
  assert.match(shapes.title, /batch shapes? met for the first time/);
  assert.match(shapes.evidence, /steps? [\d–, ]+ ran shapes .*median 151\.0 ms.*% of the profiled wall/);
  assert.match(shapes.evidence, /the verdicts judge the other \d+ steps \(median 7\.0 ms\)/);
  assert.deepEqual(
    shapes.actions.map((a) => [a.key, a.value]),
    [['batching.buckets', 4]],
  );
  // A long profile pays the same shapes once: a small share of its wall, graded ok, no action.
  const long = profile(run(2000)).v.verdicts.find((x) => x.id === 'new-shapes');
  assert.equal(long?.grade, 'ok');
  assert.deepEqual(long?.actions, []);
  // No new shape after the warm-up: no such phase, no such verdict.
  const late = run(40).slice(38);
  const none = splitNewShapes(run(40), late);
  assert.equal(none.phase, null);
  assert.equal(none.steady.length, 2);
  assert.ok(!judge(none.steady, [], { ...ctx, newShapes: none.phase }).verdicts.some((x) => x.id === 'new-shapes'));
});

test(
  'pipelined steps that ran ahead of a slower device after a recording drained the queue are left out: the ' +
    'steady steps are those the host waited for (an H200 profile of the normal preset, as recorded)',
  () => {
    // Steps 1–2 record shape A, 3–7 replay A ahead of the device (the host waits for none), 8–9 record
    // shape B, 10–15 replay ahead again, 16–22 wait for the device (60 of 72 ms each): the steady state.
    // Steps 3–7 are fewer than the 6 that filled the queue after the second recording: they were filling it too.
    const steps = run(22).map((s, i) => {
      const n = i + 1;
      const recording = n <= 2 || n === 8 || n === 9;
      const waiting = n >= 16;
      const spans = {
        ...s.spans,
        forwardBackwardMs: recording ? 600 : waiting ? 8 : 25,
        syncMs: waiting ? 60 : 0.2,
      };
      return {
        ...s,
        spans,
        wallMs: Object.values(spans).reduce((a, b) => a + b, 0),
        replayed: !recording,
        tokens: n <= 7 ? 40 : 60,
        frames: n <= 7 ? 200 : 300,
      };
    });
    const { steady, phase } = splitNewShapes(steps, steps);
    assert.deepEqual(phase?.steps, [1, 2, 8, 9]);
    assert.deepEqual(phase?.fillingSteps, [3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15]);
    assert.deepEqual(
      steady.map((s) => s.step),
      [16, 17, 18, 19, 20, 21, 22],
    );
    const v = judge(steady, [], { ...ctx, newShapes: phase });
    const shapes = v.verdicts.find((x) => x.id === 'new-shapes')!;
    assert.match(shapes.evidence, /steps 3–7, 10–15 after them ran ahead of the device \(the host waited for none/);
    // A host-paced run (no step waits for the device) keeps every step after the recordings.
    const hostPaced = steps.map((s) => ({ ...s, spans: { ...s.spans, syncMs: 0.2 } }));
    const h = splitNewShapes(hostPaced, hostPaced);
    assert.deepEqual(h.phase?.fillingSteps, []);
    assert.equal(h.steady.length, 18);
    // A step that waited alone (by chance, or the run's last, which is read at once) does not make the queue full.
    const once = hostPaced.map((s) =>
      s.step === 12 || s.step === 22 ? { ...s, spans: { ...s.spans, syncMs: 60 } } : s,
    );
    assert.deepEqual(splitNewShapes(once, once).phase?.fillingSteps, []);
  },
);
