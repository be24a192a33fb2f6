// The terminal view of GPUs: sparklines over time buckets and one --watch frame, from samples made here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sparkline, watchFrameLines } from '../../src/core/render/gpu.js';
import type { GpuSample } from '../../src/core/telemetry/gpu-sample.js';

test(
  'sparkline: one bar per bucket, scaled to max; gaps between samples hold the ' + 'last bar, none before or after',
  () => {
    const pts = [0, 12.5, 25, 37.5, 50, 62.5, 75, 87.5, 100].map((v, i) => ({ tMs: i * 100, value: v }));
    assert.equal(sparkline(pts, 0, 800, 9), '▁▂▃▄▅▆▇██');
    // Samples every 200 ms into 100 ms buckets: the buckets between hold the previous bar.
    assert.equal(
      sparkline(
        [
          { tMs: 0, value: 0 },
          { tMs: 200, value: 100 },
          { tMs: 400, value: 50 },
        ],
        0,
        500,
        5,
      ),
      '▁▁██▅',
    );
    assert.equal(sparkline([{ tMs: 300, value: 50 }], 0, 1000, 10), '   ▅      ');
    assert.equal(
      sparkline(
        [
          { tMs: 100, value: null },
          { tMs: 200, value: undefined },
        ],
        0,
        1000,
        4,
      ),
      '    ',
      'no readings: blank',
    );
    // The mean of a bucket, not its last value; values above max are clipped to the full bar.
    assert.equal(
      sparkline(
        [
          { tMs: 0, value: 0 },
          { tMs: 10, value: 100 },
          { tMs: 900, value: 500 },
        ],
        0,
        1000,
        2,
      ),
      '▅█',
    );
  },
);

test(
  'a watch frame: utilisation, SM activity when measured, memory against the ' + 'total, clocks and held-clock reasons',
  () => {
    const samples: GpuSample[] = Array.from({ length: 20 }, (_, i) => ({
      tMs: i * 250,
      index: 0,
      utilizationPct: i < 10 ? 20 : 90,
      memoryUsedBytes: 40 * 2 ** 30,
      memoryTotalBytes: 80 * 2 ** 30,
      smClockMhz: 1755,
      powerW: 640,
      temperatureC: 84,
      throttleReasons: ['sw_power_cap', 'sw_thermal_slowdown'],
      smActivityPct: i < 10 ? 10 : 60,
    }));
    const lines = watchFrameLines(samples, 5000, {
      source: 'nvml',
      rateHz: 4,
      devices: [
        { index: 0, name: 'NVIDIA H100 80GB HBM3' },
        { index: 1, name: 'NVIDIA H100 80GB HBM3' },
      ],
      width: 20,
    }).map((l) => l.replace(/\u001b\[[0-9;]*m/g, ''));
    assert.match(lines[0], /^GPUs — nvml at 4 Hz, 0:05 watched/);
    assert.equal(lines[1], 'GPU 0  NVIDIA H100 80GB HBM3');
    assert.match(lines[2], /^ {2}util +90% {2}▂{10}█{10} {2}mean 55\.0%$/);
    assert.match(lines[3], /^ {2}SM act +60% {2}▁{10}▅{10} {2}mean 35\.0%$/);
    assert.match(lines[4], /^ {2}memory +40\.0 GiB {2}▅{20} {2}of 80\.0 GiB \(50%\)$/);
    assert.equal(lines[5], '  1755 MHz  640 W  84 °C  clocks held by: SW power cap, SW thermal slowdown');
    assert.deepEqual(lines.slice(6), ['GPU 1  NVIDIA H100 80GB HBM3', '  no reading yet']);
  },
);
