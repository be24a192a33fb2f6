// `xtts diagnose-gpu-utilization` as a process. On this machine (no GPU): it still runs, says plainly
// that there is no GPU, speed-tests on a CPU backend and ranks "no GPU" as a high action. With a
// stand-in nvidia-smi (an H100 host whose Vulkan loader is missing, someone else's job already on it):
// the inventory and idle readings, the processes, and a critical "the GPU is idle because the webgpu
// backend cannot reach it". --watch: live frames with sparklines and the samples as JSON; no GPU to
// watch is exit 3. The config audit becomes actions; bad input is exit 2 without a stack trace.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { assertNoStackTrace, describeRun, repoRoot, runCli, utilityBin } from '../helpers/cli.js';
import { fakeNvidiaSmi, noGpuEnv, nvidiaDriverLoaded } from '../helpers/fake-nvidia-smi.js';
import { assertJsonShape } from '../helpers/json-shape.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-diagnose-cli-');
after(() => tmp.remove());
const noGpu = noGpuEnv(tmp.path);
const H100 = {
  name: 'NVIDIA H100 80GB HBM3',
  memoryTotalMiB: 81559,
  smClockMhz: 1980,
  powerW: 311.5,
  temperatureC: 47,
};
// Someone else's job holds GPU 0 (58% busy, 20 GiB); GPU 1 is idle.
const stand = fakeNvidiaSmi(
  tmp.mkdir('smi'),
  [
    { ...H100, utilizationPct: 58, memoryUsedMiB: 20480, throttleMask: 0 },
    {
      ...H100,
      utilizationPct: 0,
      memoryUsedMiB: 1,
      smClockMhz: 345,
      powerW: 69.9,
      temperatureC: 30,
      throttleMask: 0x1,
    },
  ],
  [{ pid: 4242, name: 'python3', usedMemoryMiB: 20400, gpu: 0 }],
);
// The stand-in host has no Vulkan loader (this machine has none), like an NVIDIA container without
// the GPU runtime: the GPU is there, the webgpu backend cannot reach it.
const quickSpeedTest = ['--steps', '2', '--warmup', '1'];

test('no GPU: it runs, says so plainly, speed-tests on the CPU and ranks "no GPU" high; exit 0', {
  skip: nvidiaDriverLoaded && 'this host has an NVIDIA driver loaded',
  timeout: 300_000,
}, async () => {
  // Run from a folder of its own, which it must leave as it was: the preset's feature cache goes with its run.
  const cwd = tmp.mkdir('diagnose-cwd');
  const r = await runCli(['diagnose-gpu-utilization', ...quickSpeedTest, '--json'], {
    env: noGpu,
    timeoutMs: 280_000,
    cwd,
  });
  assert.equal(r.code, 0, describeRun(r));
  assert.deepEqual(readdirSync(cwd), [], 'nothing written into the current folder');
  const d = r.json.result;
  assert.equal(d.mode, 'report');
  assert.equal(d.schemaVersion, 1);
  assert.equal(d.gpus.telemetry.available, false);
  assert.match(
    d.gpus.telemetry.reason,
    /^no NVIDIA GPU \/ no driver: NVML: .*; nvidia-smi: no NVIDIA driver \(nvidia-smi not found\)/,
  );
  assert.equal(d.gpus.processes, null);
  assert.deepEqual(
    d.backends.map((b: { backend: string }) => b.backend),
    ['webgpu', 'tensorflow', 'wasm', 'cpu'],
  );
  assert.equal(d.backends.find((b: { backend: string }) => b.backend === 'wasm').available, true);
  assert.match(
    d.backends.find((b: { backend: string }) => b.backend === 'tensorflow').reason,
    /CUDA 11\.2 \+ cuDNN 8\.1/,
  );
  assert.equal(d.environment.node.version, process.version);
  assert.equal(d.environment.packages['@tensorflow/tfjs-core'], '4.22.0');
  assert.equal(d.environment.packages['@tensorflow/tfjs-node-gpu'], null);
  assert.equal(d.config, null);
  const st = d.speedTest;
  assert.equal(st.preset, 'quickstart');
  assert.ok(['wasm', 'cpu'].includes(st.profile.backend), st.profile.backend);
  assert.equal(st.profile.breakdown.steps, 2);
  assert.match(st.profile.gpuNote, /there is no GPU in this measurement/);
  assert.equal(
    st.pipeline.ring.stepMs,
    Math.round(st.profile.breakdown.wallMs.p50),
    'the pipeline is measured against the profiled step',
  );
  assert.equal(d.actions[0].priority, 'high');
  assert.equal(d.actions[0].title, 'no GPU: training runs on the CPU');
  assert.deepEqual(d.summary, {
    critical: d.actions.filter((a: { priority: string }) => a.priority === 'critical').length,
    high: d.actions.filter((a: { priority: string }) => a.priority === 'high').length,
    medium: d.actions.filter((a: { priority: string }) => a.priority === 'medium').length,
  });
  assertJsonShape('diagnose-no-gpu', d, ['environment.env', 'environment.packages', 'speedTest.profile.thresholds']);
});

test('the report for a person: every section, "No GPU" said plainly, numbered actions', {
  skip: nvidiaDriverLoaded && 'this host has an NVIDIA driver loaded',
  timeout: 120_000,
}, async () => {
  const r = await runCli(['diagnose-gpu-utilization', '--no-speed-test'], { env: noGpu });
  assert.equal(r.code, 0, describeRun(r));
  for (const section of ['Environment', 'GPUs', 'Backends', 'Speed test', 'Actions — 0 critical, 1 high, 0 medium'])
    assert.match(r.stdout, new RegExp(`^${section}`, 'm'));
  assert.match(r.stdout, /^ {2}No GPU — no NVIDIA GPU \/ no driver/m);
  assert.match(r.stdout, /skipped \(--no-speed-test\)/);
  assert.match(r.stdout, /^ {2}1\. HIGH \[gpu\] no GPU: training runs on the CPU$/m);
  assertNoStackTrace(r);
});

test('an NVIDIA host the engine cannot reach: inventory, idle load, processes, and a critical action; exit 1', {
  timeout: 120_000,
}, async () => {
  const r = await runCli(['diagnose-gpu-utilization', '--no-speed-test', '--json'], {
    env: { ...stand, VK_DRIVER_FILES: undefined, LD_LIBRARY_PATH: '' },
  });
  assert.equal(r.code, 1, describeRun(r));
  const d = r.json.result;
  const t = d.gpus.telemetry;
  assert.equal(t.available, true);
  assert.equal(t.source, 'nvidia-smi');
  assert.deepEqual(
    t.devices.map((g: { index: number; name: string; memoryTotalBytes: number }) => [
      g.index,
      g.name,
      g.memoryTotalBytes,
    ]),
    [
      [0, H100.name, 81559 * 2 ** 20],
      [1, H100.name, 81559 * 2 ** 20],
    ],
  );
  const idle0 = d.gpus.idle.find((g: { index: number }) => g.index === 0);
  assert.ok(idle0.samples >= 3, `${idle0.samples} samples in the idle window`);
  assert.equal(idle0.utilizationPct.mean, 58);
  assert.equal(idle0.memoryPeakBytes, 20480 * 2 ** 20);
  assert.deepEqual(d.gpus.processes, [
    {
      pid: 4242,
      name: 'python3',
      usedMemoryBytes: 20400 * 2 ** 20,
      gpuUuid: 'GPU-00000000-0000-4000-8000-000000000000',
    },
  ]);
  const [first, ...rest] = d.actions;
  assert.equal(first.priority, 'critical');
  assert.equal(first.title, 'the GPU is idle because the webgpu backend cannot reach it');
  assert.match(first.evidence, /NVIDIA H100 80GB HBM3, NVIDIA H100 80GB HBM3 is present, but/);
  const busy = rest.find((a: { title: string }) => a.title === 'GPU 0 is already in use by another process');
  assert.equal(busy.priority, 'medium');
  assert.match(busy.evidence, /58% busy, 20\.0 GiB of memory held \(python3 pid 4242 19\.9 GiB\)/);
  assert.ok(!rest.some((a: { title: string }) => a.title.startsWith('GPU 1 ')), 'the idle GPU is not reported');
  assert.ok(
    rest.some(
      (a: { title: string; priority: string }) => a.priority === 'medium' && /nvidia-smi: no SM activity/.test(a.title),
    ),
  );
  assert.ok(!d.actions.some((a: { title: string }) => a.title === 'no GPU: training runs on the CPU'));
  assertJsonShape('diagnose-nvidia-smi', d, ['environment.env', 'environment.packages']);
});

test('--watch: live frames with sparklines, then every sample and its summary as JSON', {
  timeout: 120_000,
}, async () => {
  const human = await runCli(['diagnose-gpu-utilization', '--watch', '--duration', '2', '--rate', '10'], {
    env: stand,
  });
  assert.equal(human.code, 0, describeRun(human));
  assert.match(human.stdout, /GPUs — nvidia-smi at 10 Hz/);
  assert.match(human.stdout, /GPU 0 {2}NVIDIA H100 80GB HBM3/);
  assert.match(
    human.stdout,
    /util +58% {2}[▁▂▃▄▅▆▇█ ]*▅[▁▂▃▄▅▆▇█ ]* {2}mean 58\.0%/,
    'a sparkline at 58% is the fifth bar',
  );
  assert.match(human.stdout, /memory +20\.0 GiB/);
  assert.match(human.stdout, /watched \d+\.\d s/);
  const r = await runCli(
    ['diagnose-gpu-utilization', '--watch', '--duration', '2', '--rate', '10', '--gpu', '1', '--json'],
    { env: stand },
  );
  assert.equal(r.code, 0, describeRun(r));
  const w = r.json.result;
  assert.equal(w.mode, 'watch');
  assert.deepEqual(
    w.telemetry.devices.map((g: { index: number }) => g.index),
    [1],
  );
  assert.ok(
    w.samples.length >= 8 && w.samples.every((s: { index: number }) => s.index === 1),
    `${w.samples.length} samples`,
  );
  assert.ok(w.durationMs >= 1900 && w.durationMs < 4000, String(w.durationMs));
  assert.equal(w.summary[0].utilizationPct.mean, 0);
  assert.deepEqual(w.summary[0].throttleShares, { gpu_idle: 1 });
  assertJsonShape('diagnose-watch', w);
});

test('--watch with no GPU, or a GPU index that does not exist: exit 3 with what to do', {
  skip: nvidiaDriverLoaded && 'this host has an NVIDIA driver loaded',
}, async () => {
  const none = await runCli(['diagnose-gpu-utilization', '--watch', '--duration', '1', '--json'], { env: noGpu });
  assert.equal(none.code, 3, describeRun(none));
  assert.equal(none.json.error.code, 'GPU_UNAVAILABLE');
  assert.match(none.json.error.message, /^there is no GPU to watch: no NVIDIA GPU \/ no driver/);
  const missing = await runCli(['diagnose-gpu-utilization', '--watch', '--duration', '1', '--gpu', '7'], {
    env: stand,
  });
  assert.equal(missing.code, 3, describeRun(missing));
  assert.match(missing.stderr, /GPU 7 does not exist: nvidia-smi lists GPUs 0, 1/);
  assertNoStackTrace(missing);
});

test('the config audit becomes actions: errors critical, warnings high, notes medium', {
  timeout: 120_000,
}, async () => {
  const config = tmp.write(
    'audit.yaml',
    `extends: quickstart\ndataset:\n  ` +
      `path: ${join(tmp.path, 'no-such-dataset')}\npipeline:\n  cache:\n    enabled: ` +
      `false\n`,
  );
  const r = await runCli(['diagnose-gpu-utilization', '--config', config, '--no-speed-test', '--json'], { env: noGpu });
  assert.equal(r.code, 1, describeRun(r));
  const d = r.json.result;
  assert.equal(d.config.file, config);
  const missing = d.actions.find((a: { rule?: string }) => a.rule === 'dataset/path');
  assert.equal(missing.priority, 'critical');
  assert.match(
    missing.evidence,
    new RegExp(`^${config.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:3:\\d+ \\(dataset/path\\)$`),
  );
  const cacheOff = d.actions.find((a: { rule?: string }) => a.rule === 'pipeline/cache');
  assert.equal(cacheOff.priority, 'high');
  assert.equal(cacheOff.key, 'pipeline.cache.enabled');
  assert.equal(cacheOff.docs, 'docs/rules.md#pipeline-cache');
  assert.deepEqual(d.summary.critical, d.actions.filter((a: { priority: string }) => a.priority === 'critical').length);
  // Critical first, then high, then medium.
  const order = d.actions.map((a: { priority: string }) => ['critical', 'high', 'medium'].indexOf(a.priority));
  assert.deepEqual(
    order,
    [...order].sort((a: number, b: number) => a - b),
  );
});

test(
  'bad input: a missing config, a YAML error, a bad threshold, --duration without ' + '--watch; exit 2, no stack trace',
  async () => {
    const broken = tmp.write('broken.yaml', 'model:\n  d_model: [1, 2\n');
    const cases: [string[], string, RegExp][] = [
      [['--config', tmp.at('nope.yaml')], 'CONFIG_UNREADABLE', /nope\.yaml/],
      [['--config', broken], 'CONFIG_UNREADABLE', /broken\.yaml:\d+:\d+/],
      [['--threshold', 'idleGpuBusyPct=much', '--no-speed-test'], 'USAGE', /expected NAME=NUMBER/],
      [['--duration', '5'], 'USAGE', /--watch/],
    ];
    for (const [args, code, message] of cases) {
      const r = await runCli(['diagnose-gpu-utilization', ...args, '--json'], { env: noGpu });
      assert.equal(r.code, 2, `${args.join(' ')}: ${describeRun(r)}`);
      assert.equal(r.json.error.code, code);
      assert.match(r.json.error.message, message);
      const human = await runCli(['diagnose-gpu-utilization', ...args], { env: noGpu });
      assert.equal(human.code, 2);
      assertNoStackTrace(human, args.join(' '));
    }
  },
);

test("a vocoder's config is audited; the speed test, which runs acoustic steps, is skipped saying why", {
  timeout: 120_000,
}, async () => {
  const r = await runCli(['diagnose-gpu-utilization', '--config', 'configs/vocoder-tiny.yaml', '--json'], {
    env: noGpu,
  });
  assert.ok(r.code === 0 || r.code === 1, describeRun(r));
  assert.match(r.json.result.speedTest.skipped, /trains the vocoder \(task: vocoder\)/);
  assert.equal(r.json.result.config.file, 'configs/vocoder-tiny.yaml');
});

test('the utility binary runs the same diagnosis', { timeout: 120_000 }, async () => {
  const r = await runCli(['--no-speed-test', '--json'], {
    bin: utilityBin('diagnose-gpu-utilization'),
    env: stand,
    cwd: repoRoot,
  });
  assert.equal(r.code, 1, describeRun(r));
  assert.equal(r.json.result.mode, 'report');
  assert.equal(r.json.result.gpus.telemetry.source, 'nvidia-smi');
});
