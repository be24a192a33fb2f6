// Throttle-reason masks, the sample ring and window statistics.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuSampleRing, toDeviceSampleRecord, type GpuSample } from '../../src/core/telemetry/gpu-sample.js';
import { summarizeGpuSamples } from '../../src/core/telemetry/gpu-summary.js';
import { decodeThrottleReasons, THROTTLE_REASONS, throttleReasonLabel } from '../../src/core/telemetry/gpu-throttle.js';

function sample(tMs: number, index: number, over: Partial<GpuSample> = {}): GpuSample {
  return {
    tMs,
    index,
    utilizationPct: 50,
    memoryUsedBytes: 1000,
    memoryTotalBytes: 4000,
    smClockMhz: 1500,
    powerW: 100,
    temperatureC: 50,
    throttleReasons: [],
    ...over,
  };
}

describe('decodeThrottleReasons', () => {
  test('names each nvml.h bit, in bit order', () => {
    // nvmlClocksEventReason*: GpuIdle 0x1 ... DisplayClockSetting 0x100.
    assert.deepEqual(decodeThrottleReasons(0), []);
    assert.deepEqual(decodeThrottleReasons(0x1), ['gpu_idle']);
    assert.deepEqual(decodeThrottleReasons(0x4), ['sw_power_cap']);
    assert.deepEqual(decodeThrottleReasons(0x8 | 0x40 | 0x80), [
      'hw_slowdown',
      'hw_thermal_slowdown',
      'hw_power_brake_slowdown',
    ]);
    assert.deepEqual(
      decodeThrottleReasons(0x1ff),
      THROTTLE_REASONS.map((r) => r.name),
    );
    assert.deepEqual(
      THROTTLE_REASONS.map((r) => r.label),
      [
        'GPU idle',
        'applications clocks setting',
        'SW power cap',
        'HW slowdown',
        'sync boost',
        'SW thermal slowdown',
        'HW thermal slowdown',
        'HW power brake slowdown',
        'display clocks setting',
      ],
    );
  });

  test('reads nvidia-smi hex strings and bigints, and keeps bits it does not know', () => {
    assert.deepEqual(decodeThrottleReasons('0x0000000000000024'), ['sw_power_cap', 'sw_thermal_slowdown']);
    assert.deepEqual(decodeThrottleReasons(' 0x0000000000000000 '), []);
    assert.deepEqual(decodeThrottleReasons(0x10n), ['sync_boost']);
    assert.deepEqual(decodeThrottleReasons('0x0000000000000201'), ['gpu_idle', 'unknown_0x200']);
    assert.deepEqual(decodeThrottleReasons(2n ** 60n), ['unknown_0x1000000000000000']);
  });

  test('rejects what is not a mask', () => {
    assert.throws(() => decodeThrottleReasons('[N/A]'), /not a throttle reason mask: "\[N\/A\]"/);
    assert.throws(() => decodeThrottleReasons(-1), RangeError);
    assert.throws(() => decodeThrottleReasons(1.5), RangeError);
  });

  test('labels', () => {
    assert.equal(throttleReasonLabel('hw_power_brake_slowdown'), 'HW power brake slowdown');
    assert.equal(throttleReasonLabel('unknown_0x200'), 'unknown_0x200');
  });
});

describe('GpuSampleRing', () => {
  test('keeps the latest samples in order and counts what it overwrote', () => {
    const ring = new GpuSampleRing(3);
    assert.equal(ring.latest(), undefined);
    assert.deepEqual(ring.toArray(), []);
    for (let t = 0; t < 5; t++) ring.push(sample(t * 100, 0));
    assert.equal(ring.size, 3);
    assert.equal(ring.overwritten, 2);
    assert.deepEqual(
      ring.toArray().map((s) => s.tMs),
      [200, 300, 400],
    );
    assert.equal(ring.latest()!.tMs, 400);
    assert.deepEqual(
      ring.toArray(250, 400).map((s) => s.tMs),
      [300, 400],
    );
    ring.clear();
    assert.equal(ring.size, 0);
    assert.throws(() => new GpuSampleRing(0), RangeError);
  });
});

describe('summarizeGpuSamples', () => {
  test('mean, p50, p95 of utilisation and peak memory per GPU, inside the window', () => {
    const xs: GpuSample[] = [];
    // GPU 0: utilisation 1..100 over 100 samples; memory peaks at sample 70.
    for (let i = 1; i <= 100; i++)
      xs.push(
        sample(i * 10, 0, {
          utilizationPct: i,
          memoryUsedBytes: i === 70 ? 3900 : 1000 + i,
          throttleReasons: i % 4 === 0 ? ['sw_power_cap'] : [],
        }),
      );
    // GPU 1: half its samples report no utilisation.
    for (let i = 1; i <= 10; i++)
      xs.push(
        sample(i * 10, 1, {
          utilizationPct: i % 2 ? null : 80,
          powerW: null,
          smActivityPct: 40,
          smOccupancyPct: i * 2,
        }),
      );
    const [g0, g1] = summarizeGpuSamples(xs);
    assert.equal(g0.index, 0);
    assert.equal(g0.samples, 100);
    assert.equal(g0.utilizationPct!.mean, 50.5);
    assert.equal(g0.utilizationPct!.p50, 50);
    assert.equal(g0.utilizationPct!.p95, 95);
    assert.equal(g0.memoryPeakBytes, 3900);
    assert.equal(g0.memoryPeakShare, 3900 / 4000);
    assert.deepEqual(g0.throttleShares, { sw_power_cap: 0.25 });
    assert.equal(g0.smActivityPct, null);
    assert.equal(g1.utilizationPct!.n, 5);
    assert.equal(g1.utilizationPct!.mean, 80);
    assert.equal(g1.powerW, null);
    assert.equal(g1.smActivityPct!.mean, 40);
    assert.equal(g1.smOccupancyPct!.max, 20);

    const late = summarizeGpuSamples(xs, { fromMs: 905 });
    assert.deepEqual(
      late.map((s) => [s.index, s.samples, s.fromMs, s.toMs]),
      [[0, 10, 910, 1000]],
    );
    assert.equal(late[0].memoryPeakBytes, 1100);
    assert.deepEqual(summarizeGpuSamples([]), []);
  });
});

describe('toDeviceSampleRecord', () => {
  test('maps a sample onto the run database row', () => {
    assert.deepEqual(
      toDeviceSampleRecord(sample(12.5, 3, { throttleReasons: ['gpu_idle', 'sw_power_cap'], smActivityPct: 71 })),
      {
        tMs: 12.5,
        device: 3,
        utilizationPct: 50,
        memoryUsedBytes: 1000,
        memoryTotalBytes: 4000,
        smClockMhz: 1500,
        powerW: 100,
        temperatureC: 50,
        smActivityPct: 71,
        throttleReasons: 'gpu_idle,sw_power_cap',
      },
    );
    assert.equal(toDeviceSampleRecord(sample(0, 0)).smActivityPct, null);
  });
});
