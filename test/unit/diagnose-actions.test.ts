// The diagnosis's prioritised actions from crafted parts of a report: what makes an action critical,
// high or medium, clock reasons under load, one action per config key across the validator, the
// analyzer and the profiler, and the nvidia-smi process list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BackendProbe } from '../../src/core/backend/init.js';
import type { Finding } from '../../src/core/config/findings.js';
import {
  diagnosisActions,
  parseComputeApps,
  prioritise,
  type DiagnosisAction,
  type GpuSnapshot,
} from '../../src/core/diagnose/index.js';
import type { ProfileResult } from '../../src/core/profile/index.js';
import { summarizeGpuSamples } from '../../src/core/telemetry/gpu-summary.js';
import type { GpuSample } from '../../src/core/telemetry/gpu-sample.js';

const h100 = { index: 0, name: 'NVIDIA H100 80GB HBM3', uuid: 'GPU-0', memoryTotalBytes: 80e9, gpm: true };
const adapter = { index: 0, name: h100.name, dawnBackend: 'vulkan', software: false } as never;
const webgpuOk: BackendProbe[] = [
  { backend: 'webgpu', available: true, reason: "NVIDIA H100 80GB HBM3 on Dawn's vulkan backend", adapters: [adapter] },
  { backend: 'wasm', available: true, reason: 'SIMD' },
];

function gpus(over: Partial<GpuSnapshot> = {}): GpuSnapshot {
  return {
    telemetry: { available: true, source: 'nvml', rateHz: 10, devices: [h100], notes: [] },
    idle: [],
    windowMs: 1000,
    processes: [],
    nvidiaDevicePresent: true,
    vulkan: { loader: '/usr/lib/x86_64-linux-gnu/libvulkan.so.1', driverManifests: [] },
    ...over,
  };
}

function load(reasons: string[], n = 20, withReasonEvery = 1): ReturnType<typeof summarizeGpuSamples> {
  const samples: GpuSample[] = Array.from({ length: n }, (_, i) => ({
    tMs: i * 100,
    index: 0,
    utilizationPct: 90,
    memoryUsedBytes: 1e9,
    memoryTotalBytes: 80e9,
    smClockMhz: 1600,
    powerW: 690,
    temperatureC: 88,
    throttleReasons: i % withReasonEvery === 0 ? reasons : [],
  }));
  return summarizeGpuSamples(samples);
}

test('a healthy GPU host with nothing measured yet has no actions', () => {
  assert.deepEqual(diagnosisActions({ gpus: gpus(), backends: webgpuOk }), []);
});

test(
  'clocks held down under load: thermal is high, the power cap medium, a reason ' +
    'seen in under 10% of samples is not reported',
  () => {
    const thermal = diagnosisActions({ gpus: gpus(), backends: webgpuOk, underLoad: load(['sw_thermal_slowdown']) });
    assert.equal(thermal.length, 1);
    assert.equal(thermal[0].priority, 'high');
    assert.equal(thermal[0].title, 'GPU 0 clocks are held down: SW thermal slowdown');
    assert.match(
      thermal[0].evidence,
      /active in 100\.0% of the samples during the speed test; peak 88 °C; SM clock median 1600 MHz/,
    );
    assert.match(thermal[0].fix!, /cooling/);
    assert.equal(
      diagnosisActions({ gpus: gpus(), backends: webgpuOk, underLoad: load(['sw_power_cap']) })[0].priority,
      'medium',
    );
    assert.deepEqual(
      diagnosisActions({ gpus: gpus(), backends: webgpuOk, underLoad: load(['hw_slowdown'], 20, 21) }),
      [],
      '1 of 20 samples',
    );
    assert.deepEqual(
      diagnosisActions({ gpus: gpus(), backends: webgpuOk, underLoad: load(['gpu_idle']) }),
      [],
      'idle is not harmful',
    );
    // The shared thresholds can be overridden.
    assert.equal(
      diagnosisActions({
        gpus: gpus(),
        backends: webgpuOk,
        underLoad: load(['hw_slowdown'], 20, 21),
        thresholds: { throttleShareReported: 0.05 },
      }).length,
      1,
    );
  },
);

test('an NVIDIA GPU that Dawn only offers as a software adapter is critical; no GPU at all is high', () => {
  const software: BackendProbe[] = [
    {
      backend: 'webgpu',
      available: true,
      reason: 'llvmpipe',
      adapters: [{ ...(adapter as object), name: 'llvmpipe (LLVM 15.0.6, 256 bits)', software: true } as never],
    },
  ];
  const a = diagnosisActions({ gpus: gpus(), backends: software });
  assert.equal(a[0].priority, 'critical');
  assert.match(a[0].fix!, /VK_DRIVER_FILES/);
  const none = diagnosisActions({
    gpus: gpus({
      telemetry: { available: false, reason: 'no NVIDIA GPU / no driver', notes: [] },
      nvidiaDevicePresent: false,
    }),
    backends: software,
  });
  assert.deepEqual(
    none.map((x) => [x.priority, x.title]),
    [['high', 'no GPU: training runs on the CPU']],
  );
});

test('input-bound at or above inputBoundHigh is critical; verdict and finding on the same key are one action', () => {
  const finding: Finding = {
    ruleId: 'pipeline/prefetch-depth',
    severity: 'info',
    message: 'prefetch_depth 2 gives little overlap',
    keyPath: 'pipeline.prefetch_depth',
    position: { file: 'my.yaml', line: 9, col: 19 },
    fix: 'prefetch_depth: 3',
    docs: 'docs/rules.md#pipeline-prefetch-depth',
  };
  const profile = {
    backend: 'webgpu',
    breakdown: { shares: { dataWaitMs: 0.31 } },
    verdicts: [
      {
        n: 1,
        id: 'input-bound',
        grade: 'high',
        title: 'highly input-bound',
        evidence: 'the trainer waited for data 31.0% of the wall time',
        actions: [
          {
            key: 'pipeline.prefetch_depth',
            value: 4,
            effect: 'deeper buffering absorbs slow batches',
            rule: 'pipeline/prefetch-depth',
          },
        ],
      },
      { n: 2, id: 'oscillating', grade: 'moderate', title: 'step time oscillates', evidence: 'CV 0.4', actions: [] },
    ],
  } as unknown as ProfileResult;
  const a = diagnosisActions({ gpus: gpus(), backends: webgpuOk, findings: [finding], profile });
  assert.deepEqual(
    a.map((x) => [x.priority, x.area, x.key ?? null]),
    [
      ['critical', 'training', 'pipeline.prefetch_depth'],
      ['medium', 'training', null],
    ],
  );
  assert.equal(a[0].value, 4, "the more important action's value");
  assert.match(
    a[0].evidence,
    /31\.0% of the wall time — deeper buffering.*; my\.yaml:9:19 \(pipeline\/prefetch-depth\)$/,
  );
  assert.equal(a[0].docs, 'docs/rules.md#pipeline-prefetch-depth');
});

test('prioritise: critical, high, medium, in the order found within each', () => {
  const mk = (priority: DiagnosisAction['priority'], title: string, key?: string): DiagnosisAction => ({
    priority,
    area: 'config',
    title,
    evidence: title,
    ...(key ? { key } : {}),
  });
  const out = prioritise([
    mk('medium', 'm1'),
    mk('high', 'h1'),
    mk('critical', 'c1'),
    mk('medium', 'm2'),
    mk('high', 'h2', 'k'),
    mk('medium', 'm3', 'k'),
  ]);
  assert.deepEqual(
    out.map((a) => a.title),
    ['c1', 'h1', 'h2', 'm1', 'm2'],
  );
  assert.equal(out[2].evidence, 'h2; m3');
});

test('nvidia-smi compute processes: pid, name, memory in bytes, GPU; [N/A] memory is null', () => {
  const csv = '4242, python3, 20400, GPU-aaaa\n77, /usr/bin/node, [N/A], GPU-bbbb\nNo running processes found\n';
  assert.deepEqual(parseComputeApps(csv), [
    { pid: 4242, name: 'python3', usedMemoryBytes: 20400 * 2 ** 20, gpuUuid: 'GPU-aaaa' },
    { pid: 77, name: '/usr/bin/node', usedMemoryBytes: null, gpuUuid: 'GPU-bbbb' },
  ]);
});
