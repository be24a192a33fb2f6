// The NVML addon: it builds, loads, explains a missing driver, and reads a GPU through a stand-in
// libnvidia-ml that this test compiles (two GPUs: an "H100" with GPM counters, and a "T4" that lacks
// power readings, reports a lost temperature sensor and has no GPM).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GpuSampler } from '../../src/core/telemetry/gpu-sampler.js';
import { toDeviceSampleRecord, type GpuSample } from '../../src/core/telemetry/gpu-sample.js';
import {
  closeNvml,
  loadNvmlAddon,
  nvmlAddonPath,
  openNvml,
  NVML_ADDON_FILE,
  type NvmlAddon,
} from '../../src/core/telemetry/nvml.js';
import { RunDatabase } from '../../src/core/telemetry/run-db.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'xtts-nvml-test-'));
const fakeLib = join(dir, 'libfake-nvml.so');
const emptyLib = join(dir, 'libnot-nvml.so');

// A stand-in for libnvidia-ml.so.1 with the NVML entry points the addon binds. Layouts follow the
// NVML API reference; the GPM metric array is shorter than the addon's, as in CUDA 12.0's header.
const FAKE_NVML_C = String.raw`
#include <stdlib.h>
#include <string.h>
typedef int nvmlReturn_t;
struct dev { int index; };
typedef struct dev *nvmlDevice_t;
static struct dev devs[2] = {{0}, {1}};
static int inited = 0;
static long long gpm_fail_after = -1; /* GPM samples that succeed before nvmlGpmSampleGet fails */
nvmlReturn_t nvmlInit_v2(void) {
  const char *m = getenv("FAKE_NVML_MODE");
  if (m && !strcmp(m, "driver-not-loaded")) return 9;
  const char *f = getenv("FAKE_NVML_GPM_FAIL_AFTER");
  gpm_fail_after = f ? atoll(f) : -1;
  inited++;
  return 0;
}
nvmlReturn_t nvmlShutdown(void) { if (!inited) return 1; inited--; return 0; }
const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *b, unsigned n) { strncpy(b, "550.54.15", n); return 0; }
nvmlReturn_t nvmlSystemGetNVMLVersion(char *b, unsigned n) { strncpy(b, "12.550.54.15", n); return 0; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *c) { if (!inited) return 1; *c = 2; return 0; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
  if (!inited) return 1;
  if (i > 1) return 2;
  *d = &devs[i];
  return 0;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned n) {
  strncpy(b, d->index == 0 ? "NVIDIA H100 80GB HBM3" : "Tesla T4", n);
  return 0;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned n) {
  strncpy(b, d->index == 0 ? "GPU-aaaaaaaa-0000-0000-0000-000000000000"
                           : "GPU-bbbbbbbb-0000-0000-0000-000000000001", n);
  return 0;
}
typedef struct { unsigned gpu, memory; } util_t;
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, util_t *u) {
  if (!inited) return 1;
  u->gpu = d->index == 0 ? 97 : 3;
  u->memory = 41;
  return 0;
}
typedef struct { unsigned long long total, free, used; } mem_t;
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, mem_t *m) {
  m->total = d->index == 0 ? 85520809984ULL : 16106127360ULL;
  m->used = d->index == 0 ? 64209944576ULL : 1048576ULL;
  m->free = m->total - m->used;
  return 0;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *c) {
  if (type != 1) return 2;
  *c = d->index == 0 ? 1980 : 585;
  return 0;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) {
  if (d->index == 1) return 3;
  *mw = 512370;
  return 0;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *t) {
  if (sensor != 0) return 2;
  if (d->index == 1) return 15;
  *t = 63;
  return 0;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *m) {
  *m = d->index == 0 ? 0x4ULL : (0x1ULL | 0x40ULL);
  return 0;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *c, unsigned *p) {
  if (d->index == 1) return 3;
  *c = 0;
  *p = 0;
  return 0;
}
typedef struct { unsigned version, isSupportedDevice; } support_t;
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, support_t *s) {
  if (s->version != 1) return 25;
  s->isSupportedDevice = d->index == 0;
  return 0;
}
struct sample { int device; long long seq; };
static long long seq = 0;
nvmlReturn_t nvmlGpmSampleAlloc(struct sample **s) { *s = calloc(1, sizeof **s); (*s)->device = -1; return 0; }
nvmlReturn_t nvmlGpmSampleFree(struct sample *s) { free(s); return 0; }
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, struct sample *s) {
  if (gpm_fail_after >= 0 && seq >= gpm_fail_after) return 4;
  s->device = d->index; s->seq = ++seq; return 0;
}
typedef struct { unsigned metricId; nvmlReturn_t nvmlReturn; double value; struct { char *s, *l, *u; } info; } metric_t;
typedef struct { unsigned version, numMetrics; struct sample *s1, *s2; metric_t metrics[98]; } get_t;
nvmlReturn_t nvmlGpmMetricsGet(get_t *g) {
  if (g->version != 1) return 25;
  /* Real GPM needs two samples of one GPU, the second taken later. */
  if (!g->s1 || !g->s2 || g->s1->device < 0 || g->s1->device != g->s2->device || g->s2->seq <= g->s1->seq) return 2;
  if (g->numMetrics > 98) return 2;
  for (unsigned i = 0; i < g->numMetrics; i++) {
    metric_t *m = &g->metrics[i];
    if (m->metricId == 10) { m->nvmlReturn = 3; continue; } /* DRAM bandwidth: not supported here */
    m->nvmlReturn = 0;
    m->value = m->metricId * 10 + 0.5;
  }
  return 0;
}
`;

function cc(source: string, out: string): void {
  const src = `${out}.c`;
  writeFileSync(src, source);
  const r = spawnSync('cc', ['-shared', '-fPIC', '-O1', '-o', out, src], { encoding: 'utf8' });
  assert.equal(r.status, 0, `cc failed: ${r.stderr}`);
}

let addon: NvmlAddon;
// The stand-in library needs a C compiler; a GPU host may have none (the addon itself can be carried
// there prebuilt, and build.mjs then finds it up to date).
const noCompiler =
  spawnSync('sh', ['-c', 'command -v cc']).status === 0
    ? false
    : 'no C compiler (cc) to build the stand-in libnvidia-ml';

before(() => {
  // The addon must build here (g++ and Node's headers are installed); --strict makes a failure fatal.
  const b = spawnSync(process.execPath, [join(root, 'native/nvml/build.mjs'), '--strict'], { encoding: 'utf8' });
  assert.equal(b.status, 0, `the addon did not build: ${b.stdout}${b.stderr}`);
  if (!noCompiler) {
    cc(FAKE_NVML_C, fakeLib);
    cc('int not_nvml(void) { return 0; }\n', emptyLib);
  }
  const load = loadNvmlAddon();
  assert.ok(load.addon, `the addon did not load: ${'reason' in load ? load.reason : ''}`);
  addon = load.addon;
});

after(() => rmSync(dir, { recursive: true, force: true }));

describe('NVML addon', () => {
  test('is found at nvmlAddonPath() and exports its functions', () => {
    assert.equal(nvmlAddonPath(), join(root, 'native/nvml/build/Release', NVML_ADDON_FILE));
    assert.ok(existsSync(nvmlAddonPath()));
    for (const f of [
      'init',
      'shutdown',
      'deviceCount',
      'deviceInfo',
      'sample',
      'gpmSample',
      'sampleAsync',
      'monotonicMs',
    ])
      assert.equal(typeof (addon as unknown as Record<string, unknown>)[f], 'function', f);
  });

  test('init() without a driver says which library is missing and why', () => {
    const r = addon.init('/nonexistent/libnvidia-ml.so.1');
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.code === 'LIBRARY_NOT_FOUND');
    assert.match(
      !r.ok ? r.error : '',
      /cannot load \/nonexistent\/libnvidia-ml\.so\.1 \(no NVIDIA driver installed.*\): .*No such file or directory/,
    );
  });

  test('the machine default (libnvidia-ml.so.1) fails with the same clear reason when no driver is installed', {
    skip: hasNvidiaLibrary() ? 'an NVIDIA driver library is present here' : false,
  }, () => {
    const r = addon.init();
    assert.ok(!r.ok);
    assert.match(
      r.error,
      /^cannot load libnvidia-ml\.so\.1 \(no NVIDIA driver installed, or its library is not on the loader path\): /,
    );
    assert.match(r.error, /\): libnvidia-ml\.so\.1: cannot open shared object file/);
  });

  test('a library without NVML entry points and a driver that is not loaded are told apart', {
    skip: noCompiler,
  }, () => {
    const a = addon.init(emptyLib);
    assert.ok(!a.ok);
    assert.equal(a.code, 'FUNCTION_NOT_FOUND');
    assert.match(a.error, /has no nvmlInit_v2/);
    process.env.FAKE_NVML_MODE = 'driver-not-loaded';
    try {
      const b = addon.init(fakeLib);
      assert.ok(!b.ok);
      assert.equal(b.code, 'NVML_ERROR_DRIVER_NOT_LOADED');
      assert.match(
        b.error,
        /^nvmlInit_v2: Driver Not Loaded \(NVML_ERROR_DRIVER_NOT_LOADED\): the NVIDIA kernel driver is not loaded/,
      );
    } finally {
      delete process.env.FAKE_NVML_MODE;
    }
  });

  test('calls before init() throw a sentence, not a crash', () => {
    assert.throws(() => addon.deviceCount(), /NVML is not initialised: call init\(\) first/);
    assert.throws(() => addon.sample(0), /NVML is not initialised/);
    assert.throws(() => addon.sampleAsync([0], false), /NVML is not initialised/);
  });

  test('reads every field, leaves unsupported ones null and reports real failures', { skip: noCompiler }, async () => {
    const r = addon.init(fakeLib);
    assert.ok(r.ok, JSON.stringify(r));
    try {
      assert.equal(r.deviceCount, 2);
      assert.equal(r.driverVersion, '550.54.15');
      assert.equal(addon.deviceCount(), 2);
      assert.throws(() => addon.sample(2), /GPU index 2.* is out of range \(2 GPUs\)/);
      assert.deepEqual(addon.deviceInfo(0), {
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-aaaaaaaa-0000-0000-0000-000000000000',
        memoryTotalBytes: 85520809984,
        migEnabled: false,
        gpmSupported: true,
      });
      const t4 = addon.deviceInfo(1);
      assert.equal(t4.migEnabled, null);
      assert.equal(t4.gpmSupported, false);
      assert.match(t4.gpmReason ?? '', /no GPM counters \(they need Hopper or newer\)/);

      const before = addon.monotonicMs();
      const h100 = addon.sample(0);
      assert.ok(h100.monotonicMs >= before && h100.monotonicMs <= addon.monotonicMs());
      assert.deepEqual(
        { ...h100, monotonicMs: 0 },
        {
          index: 0,
          monotonicMs: 0,
          utilizationPct: 97,
          memoryUtilizationPct: 41,
          memoryUsedBytes: 64209944576,
          memoryTotalBytes: 85520809984,
          smClockMhz: 1980,
          powerW: 512.37,
          temperatureC: 63,
          throttleReasonsMask: 0x4,
        },
      );
      const t4s = addon.sample(1);
      assert.equal(t4s.powerW, null, 'NOT_SUPPORTED is a null field');
      assert.equal(t4s.temperatureC, null);
      assert.equal(t4s.throttleReasonsMask, 0x41);
      assert.deepEqual(
        t4s.errors,
        { temperatureC: 'nvmlDeviceGetTemperature(GPU): GPU is lost (NVML_ERROR_GPU_IS_LOST)' },
        'NOT_SUPPORTED is not an error; GPU_IS_LOST is',
      );

      assert.equal(addon.gpmSample(1), null, 'no GPM on the T4');
      const primed = addon.gpmSample(0);
      assert.ok(primed);
      assert.equal(primed.intervalMs, null, 'the first GPM read only takes the reference sample');
      assert.equal(primed.smOccupancyPct, null);
      await new Promise((r) => setTimeout(r, 20));
      const g = addon.gpmSample(0);
      assert.ok(g && g.intervalMs !== null && g.intervalMs >= 15, `interval ${g?.intervalMs}`);
      // NVML metric ids: SM_OCCUPANCY 3, SM_UTIL 2, GRAPHICS_UTIL 1, ANY_TENSOR 5, DRAM_BW 10, FP16 13, FP32 12, FP64
      // 11, PCIe TX 20, RX 21.
      assert.deepEqual(
        { ...g, intervalMs: 0 },
        {
          intervalMs: 0,
          smOccupancyPct: 30.5,
          smActivityPct: 20.5,
          graphicsActivityPct: 10.5,
          tensorActivityPct: 50.5,
          dramBandwidthPct: null,
          fp16ActivityPct: 130.5,
          fp32ActivityPct: 120.5,
          fp64ActivityPct: 110.5,
          pcieTxMiBps: 200.5,
          pcieRxMiBps: 210.5,
        },
      );

      const both = await addon.sampleAsync([0, 1], true);
      assert.deepEqual(
        both.map((x) => x.sample.index),
        [0, 1],
      );
      assert.equal(both[0].sample.utilizationPct, 97);
      assert.equal(both[0].gpm?.smActivityPct, 20.5, 'the worker thread continues the GPM intervals');
      assert.equal(both[1].gpm, null);
      await assert.rejects(addon.sampleAsync([5], false), /GPU index 5 is out of range/);
    } finally {
      addon.shutdown();
    }
    assert.throws(() => addon.deviceCount(), /not initialised/, 'shutdown() ends the session');
  });

  test('openNvml() sessions share one NVML session; the last close shuts it down', { skip: noCompiler }, () => {
    const a = openNvml(fakeLib);
    const b = openNvml(fakeLib);
    assert.ok(a.ok && b.ok);
    closeNvml(a.addon);
    assert.equal(addon.deviceCount(), 2, 'still open for the second session');
    closeNvml(b.addon);
    assert.throws(() => addon.deviceCount(), /not initialised/);
  });

  test('loads from beside a bundle when __XTTS_BUNDLE_DIR__ is set, and says so when it is not there', () => {
    const bundle = join(dir, 'bundle');
    const g = globalThis as { __XTTS_BUNDLE_DIR__?: string };
    g.__XTTS_BUNDLE_DIR__ = bundle;
    try {
      const missing = loadNvmlAddon();
      assert.equal(missing.addon, null);
      assert.match(
        'reason' in missing ? missing.reason : '',
        /not shipped beside the bundle \(.*bundle\/xtts_nvml\.node is missing\)/,
      );
      spawnSync('mkdir', ['-p', bundle]);
      copyFileSync(nvmlAddonPath(), join(bundle, NVML_ADDON_FILE));
      const shipped = loadNvmlAddon();
      assert.ok(shipped.addon);
      assert.equal(shipped.path, join(bundle, NVML_ADDON_FILE));
      assert.notEqual(shipped.addon, addon);
      const r = shipped.addon.init('/nonexistent/libnvidia-ml.so.1');
      assert.ok(!r.ok && r.code === 'LIBRARY_NOT_FOUND');
    } finally {
      delete g.__XTTS_BUNDLE_DIR__;
    }
  });
});

describe('GpuSampler on NVML', () => {
  test('samples both GPUs on a timer, with GPM values where the GPU has them, into the run database', {
    skip: noCompiler,
  }, async () => {
    const origin = performance.now();
    const sampler = await GpuSampler.start({ nvmlLibraryPath: fakeLib, rateHz: 50, originMs: origin });
    const seen: GpuSample[] = [];
    const off = sampler.onSample((s) => seen.push(s));
    try {
      assert.ok(sampler.status.available, JSON.stringify(sampler.status));
      assert.equal(sampler.status.source, 'nvml');
      assert.deepEqual(
        sampler.status.devices.map((d) => [d.index, d.name, d.gpm]),
        [
          [0, 'NVIDIA H100 80GB HBM3', true],
          [1, 'Tesla T4', false],
        ],
      );
      // The GPM value needs two GPM reads (100 ms apart by default): wait for it, without a clock assertion.
      await waitFor(
        () =>
          sampler.samples({ index: 0 }).some((s) => s.smOccupancyPct !== null) &&
          sampler.samples({ index: 1 }).length >= 5,
        10_000,
      );
    } finally {
      await sampler.stop();
    }
    off();
    const h100 = sampler.samples({ index: 0 });
    const t4 = sampler.samples({ index: 1 });
    const last = h100[h100.length - 1];
    assert.equal(last.utilizationPct, 97);
    assert.equal(last.powerW, 512.37);
    assert.deepEqual(last.throttleReasons, ['sw_power_cap']);
    assert.equal(last.smOccupancyPct, 30.5);
    assert.equal(last.smActivityPct, 20.5);
    assert.equal(last.tensorActivityPct, 50.5);
    assert.equal(last.dramBandwidthPct, null);
    assert.equal(h100[0].smOccupancyPct, null, 'no GPM value before the first interval completes');
    const t = t4[t4.length - 1];
    assert.equal(t.powerW, null);
    assert.equal(t.temperatureC, null);
    assert.deepEqual(t.throttleReasons, ['gpu_idle', 'hw_thermal_slowdown']);
    assert.equal('smOccupancyPct' in t, false, 'GPUs without GPM carry no GPM fields');
    assert.match(sampler.counters.lastError ?? '', /GPU is lost/);
    // Times are on the caller's clock, increasing, and inside the sampling window.
    const stoppedAt = performance.now() - origin;
    for (const xs of [h100, t4]) {
      for (let i = 1; i < xs.length; i++) assert.ok(xs[i].tMs >= xs[i - 1].tMs);
      assert.ok(
        xs[0].tMs >= 0 && xs[xs.length - 1].tMs <= stoppedAt,
        `${xs[0].tMs}..${xs[xs.length - 1].tMs} outside 0..${stoppedAt}`,
      );
    }
    assert.equal(seen.length, h100.length + t4.length, 'listeners see every sample');
    const n = sampler.samples().length;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(sampler.samples().length, n, 'no samples after stop()');
    assert.throws(() => addon.deviceCount(), /not initialised/, 'stop() closes NVML');

    const summary = sampler.summary();
    assert.equal(summary.length, 2);
    assert.equal(summary[0].utilizationPct?.mean, 97);
    assert.equal(summary[0].memoryPeakBytes, 64209944576);
    assert.equal(summary[0].throttleShares.sw_power_cap, 1);
    assert.equal(summary[1].powerW, null);

    const runDir = join(dir, 'run');
    const db = RunDatabase.create(runDir);
    for (const s of sampler.samples()) db.addDeviceSample(toDeviceSampleRecord(s));
    db.flush();
    db.close();
    const back = RunDatabase.open(runDir);
    const rows = back.deviceSamples();
    back.close();
    assert.equal(rows.length, sampler.samples().length);
    const row = rows.filter((r) => r.device === 0).at(-1)!;
    assert.equal(row.smActivityPct, 20.5);
    assert.equal(row.throttleReasons, 'sw_power_cap');
  });

  test('GPM values that can no longer be read are cleared, not repeated', { skip: noCompiler }, async () => {
    process.env.FAKE_NVML_GPM_FAIL_AFTER = '4';
    let sampler: GpuSampler;
    try {
      sampler = await GpuSampler.start({ nvmlLibraryPath: fakeLib, rateHz: 50, gpmIntervalMs: 20, devices: [0] });
    } finally {
      delete process.env.FAKE_NVML_GPM_FAIL_AFTER;
    }
    try {
      await waitFor(() => {
        const xs = sampler.samples({ index: 0 });
        const firstValue = xs.findIndex((s) => s.smOccupancyPct === 30.5);
        return firstValue >= 0 && xs.slice(firstValue).some((s) => s.smOccupancyPct === null);
      }, 10_000);
    } finally {
      await sampler.stop();
    }
    assert.equal(sampler.latest(0)!.smOccupancyPct, null);
    assert.equal(sampler.latest(0)!.utilizationPct, 97, 'the other readings go on');
    assert.match(
      sampler.counters.lastError ?? '',
      /GPU 0: nvmlGpmSampleGet: Unknown Error \(NVML_ERROR_NO_PERMISSION\)/,
    );
  });

  test('a GPU index that does not exist is a user error naming the GPUs there are', { skip: noCompiler }, async () => {
    await assert.rejects(
      GpuSampler.start({ nvmlLibraryPath: fakeLib, devices: [0, 3] }),
      (e: Error & { code?: string }) =>
        e.code === 'GPU_NOT_FOUND' && /GPU 3 does not exist: NVML lists GPUs 0, 1/.test(e.message),
    );
    assert.throws(() => addon.deviceCount(), /not initialised/, 'the failed start released NVML');
  });
});

describe('GpuSampler on this machine', () => {
  test('without a driver it reports unavailable with both reasons, and neither throws nor hangs', {
    skip: hasNvidiaLibrary() || onPath('nvidia-smi') ? 'an NVIDIA driver is present here' : false,
    timeout: 30_000,
  }, async () => {
    const sampler = await GpuSampler.start({ rateHz: 10 });
    assert.equal(sampler.status.available, false);
    const reason = !sampler.status.available ? sampler.status.reason : '';
    assert.match(
      reason,
      /^no NVIDIA GPU \/ no driver: NVML: cannot load libnvidia-ml\.so\.1 \(no NVIDIA driver installed, or its /,
    );
    assert.match(reason, /library is not on the loader path\): .*; /);
    assert.match(reason, /; nvidia-smi: no NVIDIA driver \(nvidia-smi not found\)$/);
    assert.deepEqual(sampler.samples(), []);
    assert.deepEqual(sampler.summary(), []);
    assert.equal(sampler.latest(0), undefined);
    await sampler.stop();
    await sampler.stop();
  });

  test('on a GPU host it samples the real GPUs', {
    skip: hasNvidiaLibrary() || onPath('nvidia-smi') ? false : 'no NVIDIA driver here',
    timeout: 60_000,
  }, async () => {
    const sampler = await GpuSampler.start({ rateHz: 10 });
    try {
      assert.ok(sampler.status.available, JSON.stringify(sampler.status));
      const first = sampler.status.devices[0].index;
      await waitFor(() => sampler.samples({ index: first }).length >= 5, 20_000);
      const s = sampler.latest(first)!;
      assert.ok(s.memoryTotalBytes !== null && s.memoryTotalBytes > 2 ** 30, `memory total ${s.memoryTotalBytes}`);
      assert.ok(s.utilizationPct !== null && s.utilizationPct >= 0 && s.utilizationPct <= 100);
      assert.ok(s.smClockMhz !== null && s.smClockMhz > 0);
      console.log(
        `# GPU telemetry: ${JSON.stringify({ status: sampler.status, latest: s, counters: sampler.counters })}`,
      );
    } finally {
      await sampler.stop();
    }
  });
});

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
}

function hasNvidiaLibrary(): boolean {
  const r = spawnSync('sh', ['-c', 'ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1']);
  return r.status === 0;
}

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
