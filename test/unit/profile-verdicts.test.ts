// Verdicts on recorded runs crafted to be input-bound, dispatch-bound, sync-bound and balanced;
// trace files in the structure Perfetto's JSON importer reads; the HTML report.
import assert from 'node:assert/strict';
import { joinedRegExp } from '../helpers/regexp.js';
import { test } from 'node:test';
import { matmulFlops } from '../../src/core/profile/top-kernels.js';
import { judge, type VerdictContext } from '../../src/core/profile/verdicts.js';
import { toTrace, traceProblems } from '../../src/core/profile/trace.js';
import { htmlReport, stepChartSvg, terminalTimeline } from '../../src/core/profile/report.js';
import type { StepRecord, StepSpans } from '../../src/core/telemetry/spans.js';
import type { DeviceSampleRecord } from '../../src/core/telemetry/run-db.js';

const ctx: VerdictContext = {
  batchSize: 16,
  logEvery: 10,
  workers: 1,
  prefetchDepth: 3,
  cacheEnabled: true,
  buckets: 4,
  cpuCores: 8,
  checkpointEvery: 1000,
};

function run(
  n: number,
  spans: (i: number) => Partial<StepSpans>,
  extra: (i: number) => Partial<StepRecord> = () => ({}),
): StepRecord[] {
  let t = 0;
  return Array.from({ length: n }, (_, i) => {
    const s: StepSpans = {
      dataWaitMs: 0,
      uploadMs: 1,
      forwardBackwardMs: 10,
      optimizerMs: 3,
      syncMs: 0.5,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0.5,
      ...spans(i),
    };
    const wallMs = Object.values(s).reduce((a, b) => a + b, 0);
    const r: StepRecord = {
      step: i + 1,
      startMs: t,
      wallMs,
      spans: s,
      epoch: 0,
      batchIndex: i,
      bucket: i % 2,
      batchSize: 16,
      tokens: 64,
      frames: 400,
      kernels: 1270,
      readySlots: 2,
      learningRate: 1e-3,
      ...extra(i),
    };
    t += wallMs;
    return r;
  });
}

function gpu(n: number, util: number): DeviceSampleRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    tMs: i * 100,
    device: 0,
    utilizationPct: util,
    memoryUsedBytes: 20e9,
    memoryTotalBytes: 80e9,
    smClockMhz: 1980,
    powerW: 200,
    temperatureC: 50,
    smActivityPct: null,
    throttleReasons: null,
  }));
}

const verdict = (v: ReturnType<typeof judge>, id: string) => v.verdicts.find((x) => x.id === id)!;

test('input-bound: 30% data wait is highly input-bound, with workers and prefetch actions', () => {
  const v = judge(
    run(50, () => ({ dataWaitMs: 7 })),
    gpu(20, 60),
    ctx,
  );
  const x = verdict(v, 'input-bound');
  assert.equal(x.grade, 'high');
  assert.equal(v.verdicts[0].id, 'input-bound', 'the worst verdict comes first');
  assert.deepEqual(
    x.actions.map((a) => a.key),
    ['pipeline.workers', 'pipeline.prefetch_depth'],
  );
  assert.equal(x.actions[0].value, 7);
  const moderate = judge(
    run(50, () => ({ dataWaitMs: 1.5 })),
    gpu(20, 60),
    ctx,
  );
  assert.equal(verdict(moderate, 'input-bound').grade, 'moderate');
});

test('dispatch-bound: low GPU busy with no input wait names kernels per step and host time per kernel', () => {
  const v = judge(
    run(50, () => ({ forwardBackwardMs: 700, optimizerMs: 100 })),
    gpu(30, 11),
    ctx,
  );
  const x = verdict(v, 'dispatch-bound');
  assert.equal(x.grade, 'high');
  assert.match(x.evidence, /GPU busy 11\.0%/);
  assert.match(x.evidence, /1270 kernels a step at 630 µs of host time each/);
  assert.equal(x.actions[0].key, 'batching.batch_size');
  assert.equal(x.actions[0].value, 32);
  assert.equal(verdict(v, 'input-bound').grade, 'ok');
  // With step capture off, turning it on comes first; a CPU backend has no GPU programs to replay.
  const off = verdict(
    judge(
      run(50, () => ({ forwardBackwardMs: 700, optimizerMs: 100 })),
      gpu(30, 11),
      { ...ctx, stepCapture: 'off' },
    ),
    'dispatch-bound',
  );
  assert.deepEqual(off.actions.map((a) => [a.key, a.value]).slice(0, 2), [
    ['device.step_capture', 'auto'],
    ['batching.batch_size', 32],
  ]);
});

test('device time from timestamp queries takes precedence over utilisation samples', () => {
  const v = judge(
    run(10, () => ({})),
    gpu(10, 99),
    ctx,
  );
  assert.equal(v.breakdown.gpuBusySource, 'nvml-utilization');
  const w = judge(
    run(
      10,
      () => ({}),
      () => ({ deviceMs: 3 }),
    ),
    gpu(10, 99),
    ctx,
  );
  assert.equal(w.breakdown.gpuBusySource, 'timestamp-queries');
  assert.ok(Math.abs(w.breakdown.gpuBusyShare! - 0.2) < 1e-9);
});

test('sync-bound and oscillating runs; thresholds can be overridden', () => {
  const v = judge(
    run(40, (i) => ({ syncMs: 8, forwardBackwardMs: i % 2 ? 10 : 40 })),
    gpu(10, 80),
    { ...ctx, logEvery: 1 },
  );
  assert.notEqual(verdict(v, 'sync-bound').grade, 'ok');
  assert.equal(verdict(v, 'sync-bound').actions[0].key, 'training.log_every');
  // A GPU run that waits for every step before issuing the next is told to pipeline them first.
  const waiting = verdict(
    judge(
      run(40, (i) => ({ syncMs: 8, forwardBackwardMs: i % 2 ? 10 : 40 })),
      gpu(10, 80),
      { ...ctx, logEvery: 1, pipelineSteps: 'off' },
    ),
    'sync-bound',
  );
  assert.deepEqual(
    waiting.actions.map((a) => a.key),
    ['device.pipeline_steps', 'training.log_every'],
  );
  assert.match(waiting.evidence, /whether each update was made; the losses every 1 step\)/);
  assert.equal(verdict(v, 'oscillating').grade, 'moderate');
  const relaxed = judge(
    run(40, (i) => ({ syncMs: 8, forwardBackwardMs: i % 2 ? 10 : 40 })),
    gpu(10, 80),
    { ...ctx, logEvery: 1 },
    { syncBoundShare: 0.9, oscillatingStepCv: 0.9 },
  );
  assert.equal(verdict(relaxed, 'sync-bound').grade, 'ok');
  assert.equal(verdict(relaxed, 'oscillating').grade, 'ok');
});

test('a balanced run gets no warnings; memory headroom is judged from samples', () => {
  const v = judge(
    run(40, () => ({})),
    gpu(10, 95),
    ctx,
  );
  assert.ok(
    v.verdicts.every((x) => x.grade === 'ok'),
    JSON.stringify(v.verdicts.map((x) => [x.id, x.grade])),
  );
  assert.equal(verdict(v, 'compute-bound').title.startsWith('compute-bound'), true);
  const tight = judge(
    run(10, () => ({})),
    gpu(10, 95).map((s) => ({ ...s, memoryUsedBytes: 78e9 })),
    ctx,
  );
  assert.equal(verdict(tight, 'memory-headroom').grade, 'high');
});

test('the trace has the structure Perfetto reads, one complete event per span', () => {
  const steps = run(5, () => ({ dataWaitMs: 2 }));
  const trace = toTrace(steps, gpu(3, 50));
  assert.deepEqual(traceProblems(trace), []);
  const spans = trace.traceEvents.filter((e) => e.cat === 'span');
  assert.equal(spans.length, 5 * 6, 'every non-empty span (checkpoint is 0 here)');
  const stepEvents = trace.traceEvents.filter((e) => e.cat === 'step');
  assert.equal(stepEvents[1].ts, steps[1].startMs * 1000);
  assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name.includes('utilisation')));
  assert.deepEqual(
    traceProblems(JSON.parse(JSON.stringify({ traceEvents: [{ name: 'x', ph: 'X', ts: -1, pid: 1, tid: 1 }] }))),
    ['event 0: ts', 'event 0: dur'],
  );
});

test('the HTML report and the terminal timeline show every span', () => {
  const steps = run(8, () => ({ dataWaitMs: 5 }));
  const v = judge(steps, gpu(5, 40), ctx);
  const html = htmlReport('profile', steps, gpu(5, 40), v, { device: 'test' });
  assert.match(html, /<svg/);
  assert.match(html, /dataWait/);
  assert.match(html, /input-bound/);
  const lines = terminalTimeline(steps);
  assert.equal(lines.length, 8);
  assert.match(lines[0], /D+U*F+O+/);
});

test(
  "device-timed probe steps: their device time against the measured steps' median, " + 'not their own perturbed wall',
  () => {
    const steps = run(20, () => ({ forwardBackwardMs: 60, optimizerMs: 20 }));
    // Probes ran serialised (slow) with 9 ms of summed kernel time each.
    const probes = run(
      3,
      () => ({ forwardBackwardMs: 400 }),
      () => ({ deviceMs: 9 }),
    ).map((p, i) => ({ ...p, step: 21 + i }));
    const v = judge(steps, gpu(10, 40), ctx, {}, probes);
    const b = v.breakdown;
    assert.equal(b.gpuBusySource, 'timestamp-queries');
    assert.equal(b.deviceTimedSteps, 3);
    assert.ok(Math.abs(b.gpuBusyShare! - 9 / 82) < 1e-9, String(b.gpuBusyShare));
    assert.equal(b.utilizationPct, 40, 'the utilisation samples are still reported beside it');
    assert.equal(b.steps, 20, 'probes are not measured steps');
    assert.equal(verdict(v, 'dispatch-bound').grade, 'high');
    assert.match(
      verdict(v, 'dispatch-bound').evidence,
      /timestamp queries: 9\.0 ms of device time per 82\.0 ms step; NVML utilisation 40\.0%/,
    );
  },
);

test('a CPU backend has no busy GPU, whatever a recorded run carries', () => {
  const steps = run(
    10,
    () => ({ forwardBackwardMs: 800, optimizerMs: 200 }),
    () => ({ deviceMs: 900 }),
  );
  const v = judge(steps, [], { ...ctx, cpuBackend: true });
  assert.equal(v.breakdown.gpuBusyShare, null);
  assert.equal(v.breakdown.gpuBusySource, null);
  const x = verdict(v, 'dispatch-bound');
  assert.equal(x.grade, 'ok');
  assert.match(x.title, /no GPU/);
  assert.match(x.evidence, /1270 kernels a step at 787 µs each, arithmetic included/);
  assert.ok(!v.verdicts.some((y) => y.id === 'compute-bound' || y.id === 'memory-headroom'));
});

test('trace: probe steps get their own device track, and overlapping events on one track are caught', () => {
  const steps = run(4, () => ({}));
  const probes = run(
    2,
    () => ({}),
    () => ({ deviceMs: 5 }),
  ).map((p, i) => ({ ...p, step: 5 + i, startMs: steps[3].startMs + steps[3].wallMs + i * 20 }));
  const trace = toTrace(steps, gpu(3, 50), {}, probes);
  assert.deepEqual(traceProblems(trace), []);
  assert.equal(trace.traceEvents.filter((e) => e.cat === 'device').length, 2);
  assert.equal(trace.traceEvents.filter((e) => e.name === 'kernels per step').length, 4);
  const bad = {
    traceEvents: [
      { name: 'a', ph: 'X', ts: 0, dur: 10, pid: 1, tid: 1 },
      { name: 'b', ph: 'X', ts: 5, dur: 10, pid: 1, tid: 1 },
      { name: 'c', ph: 'X', ts: 5, dur: 10, pid: 1, tid: 2 },
    ],
  };
  assert.deepEqual(traceProblems(bad), ['event 1 overlaps event 0 on track 1/1 without nesting in it']);
  const nested = {
    traceEvents: [
      { name: 'a', ph: 'X', ts: 0, dur: 10, pid: 1, tid: 1 },
      { name: 'b', ph: 'X', ts: 2, dur: 3, pid: 1, tid: 1 },
      { name: 'c', ph: 'X', ts: 10, dur: 1, pid: 1, tid: 1 },
    ],
  };
  assert.deepEqual(traceProblems(nested), []);
});

test("a compute-bound run that waits in every 10th step's readback is neither sync-bound nor oscillating", () => {
  // Nine steps dispatch in 10 ms and queue work; the tenth waits 810 ms for the GPU to finish it.
  const steps = run(
    60,
    (i) => ((i + 1) % 10 === 0 ? { syncMs: 810 } : { syncMs: 0 }),
    () => ({}),
  );
  const probes = run(
    2,
    () => ({}),
    () => ({ deviceMs: 93 }),
  );
  const v = judge(steps, gpu(30, 97), ctx, {}, probes);
  assert.ok(v.breakdown.wallMs.cv > 1, 'single steps alternate short and long');
  assert.equal(verdict(v, 'oscillating').grade, 'ok');
  assert.match(verdict(v, 'oscillating').evidence, /6 intervals of 10 steps/);
  assert.equal(verdict(v, 'sync-bound').grade, 'ok');
  assert.match(verdict(v, 'sync-bound').title, /busy GPU/);
  // The same readback pattern with the GPU mostly idle is sync-bound.
  const idle = judge(steps, gpu(30, 20), ctx);
  assert.notEqual(verdict(idle, 'sync-bound').grade, 'ok');
  // Intervals that really differ (every other interval twice as slow) oscillate.
  const uneven = judge(
    run(60, (i) => ({ forwardBackwardMs: Math.floor(i / 10) % 2 ? 40 : 10 })),
    gpu(30, 97),
    ctx,
  );
  assert.equal(verdict(uneven, 'oscillating').grade, 'moderate');
});

test("the report's step chart draws long runs as means over consecutive steps, at most 400 bars", () => {
  const few = stepChartSvg(run(30, () => ({})));
  assert.equal((few.match(/<title>step \d+ forwardBackward/g) ?? []).length, 30);
  const many = run(10_000, (i) => ({ dataWaitMs: i < 5000 ? 0 : 4 }));
  const svg = stepChartSvg(many);
  const bars = svg.match(/<title>steps \d+–\d+ \(mean\) forwardBackward/g) ?? [];
  assert.equal(bars.length, 400);
  assert.match(svg, /<title>steps 1–25 \(mean\) forwardBackward 10\.00 ms<\/title>/);
  assert.match(svg, /<title>steps 9976–10000 \(mean\) dataWait 4\.00 ms<\/title>/);
  assert.match(svg, /each bar: the mean of 25 steps/);
  assert.ok(svg.length < 400_000, `${svg.length} bytes`);
});

test("memory leak: live tensors that grow from step to step are reported, the first steps' allocations are not", () => {
  // The first steps allocate the optimizer's state once; then +3 tensors a step.
  const leaking = judge(
    run(
      40,
      () => ({}),
      (i) => ({ tensors: i < 4 ? 100 + 200 * i : 900 + 3 * i, tensorBytes: 1e6 + 4e3 * i }),
    ),
    gpu(20, 60),
    ctx,
  );
  const x = verdict(leaking, 'memory-leak');
  assert.equal(x.grade, 'high');
  assert.match(x.evidence, /\+3\.00 a step/);
  assert.equal(leaking.verdicts[0].id, 'memory-leak');
  // Steady after the same start, with the ±1 jitter of a cache: no leak.
  const steady = judge(
    run(
      40,
      () => ({}),
      (i) => ({ tensors: i < 4 ? 100 + 200 * i : 900 + (i % 2) }),
    ),
    gpu(20, 60),
    ctx,
  );
  assert.equal(verdict(steady, 'memory-leak').grade, 'ok');
  // A resumed run: the second process's clock starts again and it holds more tensors from its start (each process its
  // own level), steady in each: no trend across the two.
  const resumed = run(
    40,
    () => ({}),
    (i) => ({ tensors: i < 20 ? 900 : 1006 }),
  ).map((r, i) => (i < 20 ? r : { ...r, startMs: r.startMs - 1e6 }));
  assert.equal(verdict(judge(resumed, gpu(20, 60), ctx), 'memory-leak').grade, 'ok');
  // A resumed process whose clock did not restart below where the previous one ended: the clock cannot tell the two
  // apart, the first step the last process trained (run meta processFirstStep) does.
  const unclocked = run(
    40,
    () => ({}),
    (i) => ({ tensors: i < 20 ? 900 : 1006 }),
  );
  assert.equal(verdict(judge(unclocked, gpu(20, 60), ctx), 'memory-leak').grade, 'high');
  const firstStep = { ...ctx, processFirstStep: unclocked[20].step };
  assert.equal(verdict(judge(unclocked, gpu(20, 60), firstStep), 'memory-leak').grade, 'ok');
  // A short resumed process (its first step allocates, then steady): too few steps to judge, so no verdict.
  const short = run(
    24,
    () => ({}),
    (i) => ({ tensors: i < 20 ? 900 : i === 20 ? 129 : 132 }),
  );
  const shortCtx = { ...ctx, processFirstStep: short[20].step };
  assert.equal(judge(short, gpu(20, 60), shortCtx).verdicts.filter((v) => v.id === 'memory-leak').length, 0);
  // The threshold can be overridden like every other.
  assert.equal(
    verdict(
      judge(
        run(
          40,
          () => ({}),
          (i) => ({ tensors: 900 + 3 * i }),
        ),
        gpu(20, 60),
        ctx,
        { leakTensorsPerStep: 5 },
      ),
      'memory-leak',
    ).grade,
    'ok',
  );
});

test(
  'busy but slow: a GPU busy all the time whose matmuls reach a small share of its ' +
    'FP32 peak is graded, a fast one is the healthy state',
  () => {
    const h100 = { ...ctx, device: 'NVIDIA H100 80GB HBM3' };
    // 15 ms steps, 100 GFLOP each: 6.7 TFLOP/s, 10% of the H100's 66.9.
    const slow = judge(
      run(
        20,
        () => ({}),
        () => ({ flops: 100e9 }),
      ),
      gpu(10, 99),
      h100,
    );
    assert.ok(Math.abs(slow.breakdown.achievedTflops! - 100e9 / 15 / 1e9) < 1e-9);
    assert.equal(slow.breakdown.peakTflops, 66.9);
    assert.ok(Math.abs(slow.breakdown.mfu! - 100 / 15 / 66.9) < 1e-9);
    const x = verdict(slow, 'compute-bound');
    assert.equal(x.grade, 'moderate');
    assert.match(x.title, /^busy but slow/);
    assert.match(
      x.evidence,
      /ran at 6\.67 TFLOP\/s, 10\.0% of the device's FP32 peak \(66\.9 TFLOP\/s\): under 20\.0% of peak/,
    );
    // What to do about it: the tensor cores (this device has them), and xtts's matmuls where tfjs's were chosen.
    assert.deepEqual(
      x.actions.map((a) => [a.key, a.value]),
      [['training.precision', 'mixed_fp16']],
    );
    assert.match(x.actions[0].effect, /989\.4 TFLOP\/s peak instead of 66\.9/);
    // The same slow run in other settings: its compute verdict.
    const slowIn = (more: Partial<VerdictContext>) =>
      verdict(
        judge(
          run(
            20,
            () => ({}),
            () => ({ flops: 100e9 }),
          ),
          gpu(10, 99),
          { ...h100, ...more },
        ),
        'compute-bound',
      );
    assert.deepEqual(
      slowIn({ matmul: 'tfjs', precision: 'mixed_fp16' }).actions.map((a) => [a.key, a.value]),
      [['device.matmul', 'tiled']],
    );
    // Shaders with Dawn's bounds checks (device.bounds_checks on, or a run recorded before the key): turn them off.
    const checked = slowIn({ matmul: 'tiled', precision: 'mixed_fp16', boundsChecks: 'on' });
    assert.deepEqual(
      checked.actions.map((a) => [a.key, a.value]),
      [['device.bounds_checks', 'off']],
    );
    assert.match(checked.actions[0].effect, /44\.6 ms instead of 62\.8/);
    assert.deepEqual(slowIn({ matmul: 'tiled', precision: 'mixed_fp16', boundsChecks: 'off' }).actions, []);
    // With the device-timed step's programs, the top kernels are named: their time, share and a matmul's rate.
    const programs = [
      {
        name: 'XttsWideMatMulProgram',
        ms: 9,
        count: 3,
        shapes: [
          // 2·4096·1024·512 FLOPs twice in 6 ms: 1.43 TFLOP/s, 2% of 66.9.
          { shape: '4096×1024 ← 4096×512, 512×1024', ms: 6, count: 2 },
          // b transposed: [N, K].
          { shape: '2×64×64 ← 2×64×32, 64×32', ms: 3, count: 1 },
        ],
      },
      {
        name: 'XttsLayerNormGradProgram',
        ms: 4,
        count: 10,
        shapes: [{ shape: '4096×512 ← 4096×512', ms: 4, count: 10 }],
      },
      { name: 'BinaryOpProgram', ms: 1, count: 40 },
    ];
    const withPrograms = (ps: typeof programs) => slowIn({ programs: ps });
    // Matmuls take 64% of the device time: the tensor cores are the action.
    assert.deepEqual(
      withPrograms(programs).actions.map((a) => [a.key, a.value]),
      [['training.precision', 'mixed_fp16']],
    );
    // Matmuls a quarter of the device time (40 kernels): the tensor cores would not be where the time goes.
    const small = Array.from({ length: 40 }, (_, i) => ({
      name: i % 4 === 0 ? `MatMul${i}` : `Op${i}`,
      ms: 0.25,
      count: 1,
    }));
    const few = withPrograms(small);
    assert.deepEqual(few.actions, []);
    assert.match(few.evidence, /; matmuls take 25\.0% of the device time$/);
    assert.match(
      withPrograms(programs).evidence,
      joinedRegExp(
        /the top kernels by device time: XttsWideMatMulProgram 4096×1024 ← 4096×512, 512×1024: 6\.00 ms \(43%\), /,
        /1\.43 TFLOP\/s \(2% of the FP32 peak\); XttsLayerNormGradProgram 4096×512 ← 4096×512: 4\.00 ms \(29%\); /,
        /XttsWideMatMulProgram 2×64×64 ← 2×64×32, 64×32: 3\.00 ms \(21%\), 0\.00 TFLOP\/s/,
      ),
    );
    const fast = judge(
      run(
        20,
        () => ({}),
        () => ({ flops: 600e9 }),
      ),
      gpu(10, 99),
      h100,
    );
    assert.equal(verdict(fast, 'compute-bound').grade, 'ok');
    assert.match(verdict(fast, 'compute-bound').title, /^compute-bound: the GPU is the bottleneck/);
    // An unknown device: the rate, no MFU, no grade from it.
    const other = judge(
      run(
        20,
        () => ({}),
        () => ({ flops: 100e9 }),
      ),
      gpu(10, 99),
      { ...ctx, device: 'Some GPU' },
    );
    assert.equal(other.breakdown.mfu, null);
    assert.match(verdict(other, 'compute-bound').evidence, /the device's peak is not known to xtts/);
    // Runs recorded before FLOPs were counted.
    assert.equal(
      judge(
        run(20, () => ({})),
        gpu(10, 99),
        h100,
      ).breakdown.flopsPerStep,
      null,
    );
    // A mixed_fp16 run is measured against the tensor cores' FP16 peak: 600 GFLOP in 15 ms is 40 TFLOP/s,
    // healthy against FP32's 66.9 but 4% of the H100's 989.4 with f16 operands: busy but slow.
    const mixed = judge(
      run(
        20,
        () => ({}),
        () => ({ flops: 600e9 }),
      ),
      gpu(10, 99),
      { ...h100, precision: 'mixed_fp16' },
    );
    assert.equal(mixed.breakdown.peakTflops, 989.4);
    assert.equal(mixed.breakdown.peakPrecision, 'FP16 tensor');
    assert.equal(verdict(mixed, 'compute-bound').grade, 'moderate');
    assert.match(
      verdict(mixed, 'compute-bound').evidence,
      /ran at 40\.00 TFLOP\/s, 4\.0% of the device's FP16 tensor peak \(989\.4 TFLOP\/s\)/,
    );
  },
);

test("a matmul's FLOPs from its shape: either operand transposed, batches, a fused bias; other programs none", () => {
  const mm = 'XttsWideMatMulProgram';
  assert.equal(matmulFlops(mm, '128×256 ← 128×64, 64×256'), 2 * 128 * 256 * 64);
  assert.equal(matmulFlops(mm, '128×256 ← 64×128, 64×256'), 2 * 128 * 256 * 64); // a transposed
  assert.equal(matmulFlops(mm, '128×256 ← 128×64, 256×64'), 2 * 128 * 256 * 64); // b transposed
  assert.equal(matmulFlops('MatMulPackedProgram', '8×10×20 ← 8×10×30, 8×30×20, 20'), 2 * 8 * 10 * 20 * 30);
  assert.equal(matmulFlops(mm, '128×256 ← 128×64, 32×256'), null); // no K both operands share
  // Split K: one partial product per split in the output's batch, one product in all.
  assert.equal(matmulFlops(mm, '4×512×2560 ← 20928×512, 20928×2560'), 2 * 512 * 2560 * 20928);
  assert.equal(matmulFlops('BinaryOpProgram', '64×64 ← 64×64, 64×64'), null);
  // A dense layer's two gradients in one dispatch: dx = dz·Wᵀ (the shape's output) and dW = xᵀ·dz, of one size.
  assert.equal(
    matmulFlops('XttsSubgroupMatMulPairProgram', '1×7072×2048 ← 7072×512, 2048×512, 7072×2048, … (4 inputs)'),
    2 * 2 * 7072 * 2048 * 512,
  );
  // The attention's strided products read heads inside their projections: their FLOPs as the program stated them.
  const scores = '32×8×188×188 ← 6016×512, 6016×1536 (1158152192 FLOP)';
  assert.equal(matmulFlops('XttsStridedSubgroupMatMulProgram', scores), 1158152192);
  assert.equal(matmulFlops('XttsStridedSumProgram', scores), null);
  assert.equal(matmulFlops(mm, 'scalar ← 4, 4'), null);
  assert.equal(matmulFlops(mm, '64×32 ← 64×16, 16×32, 4, … (5 inputs)'), 2 * 64 * 32 * 16);
});

test("capture off where GPU busy is not measured: the host's dispatch is graded, with step capture as the fix", () => {
  // No device samples and no timestamps (Dawn on OpenGL ES has none): 13 of 15 ms a step go to issuing kernels.
  const steps = run(20, () => ({}));
  const off = verdict(judge(steps, [], { ...ctx, stepCapture: 'off' }), 'dispatch-bound');
  assert.equal(off.grade, 'moderate');
  assert.match(off.title, /with step capture off the host issues every kernel of every step/);
  assert.match(off.evidence, /host dispatch is 86\.7% of the step, 1270 kernels a step .*busy share is not measured/);
  assert.deepEqual(
    off.actions.map((a) => [a.key, a.value]),
    [['device.step_capture', 'auto']],
  );
  // Capture on, a host that dispatches little, or a CPU backend: nothing to grade.
  assert.equal(verdict(judge(steps, [], { ...ctx, stepCapture: 'auto' }), 'dispatch-bound').grade, 'ok');
  const light = run(20, () => ({ forwardBackwardMs: 2, optimizerMs: 1, syncMs: 10 }));
  assert.equal(verdict(judge(light, [], { ...ctx, stepCapture: 'off' }), 'dispatch-bound').grade, 'ok');
  const cpu = verdict(judge(steps, [], { ...ctx, stepCapture: 'off', cpuBackend: true }), 'dispatch-bound');
  assert.deepEqual([cpu.grade, cpu.title], ['ok', 'no GPU: the CPU backend computes while it dispatches']);
});

test('all-reduce-bound replicas: the bfloat16 exchange offered while they exchange float32, not once they do', () => {
  const steps = run(20, () => ({ allReduceMs: 10 }));
  const replicaSteps = steps.flatMap((s) =>
    [0, 1].map((rank) => ({
      step: s.step,
      rank,
      samples: 8,
      uploadMs: 1,
      syncMs: 0.5,
      forwardBackwardMs: 10,
      allReduceMs: 10,
      optimizerMs: 3,
      peerWaitMs: 0.2,
      readbackMs: 4,
      exchangeMs: 1,
      replayed: true,
      tensors: 900,
      tensorBytes: 1e6,
    })),
  );
  const replicas = { devices: ['webgpu A', 'webgpu B'], steps: replicaSteps };
  const keys = (exchange?: 'float32' | 'bfloat16') => {
    const v = verdict(judge(steps, gpu(20, 60), { ...ctx, replicas, gradientExchange: exchange }), 'all-reduce-bound');
    assert.equal(v.grade, 'high');
    return v.actions.map((a) => `${a.key}=${a.value}`);
  };
  assert.deepEqual(keys('float32'), [
    'batching.batch_size=32',
    'training.grad_accumulation_steps=2',
    'device.gradient_exchange=bfloat16',
  ]);
  assert.deepEqual(keys(undefined), keys('float32'));
  assert.deepEqual(keys('bfloat16'), ['batching.batch_size=32', 'training.grad_accumulation_steps=2']);
});
