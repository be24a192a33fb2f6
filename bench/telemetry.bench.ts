// GPU telemetry cost: one reading through the NVML addon (on the calling thread, and through the
// libuv worker the sampler uses), one GPM read, the nvidia-smi stream (its CPU per reading and how
// late lines arrive), a one-shot nvidia-smi for comparison, the CSV parser, and what a 10 Hz
// GpuSampler adds to event-loop delay. Without a GPU it says so and measures only the parser.
// Targets (ours, so that telemetry at 10 Hz stays under ~1% of one core on an 8-GPU host):
//   addon sample() <= 1000 us per GPU; nvidia-smi stream <= 20 ms of CPU per second; parse <= 10 us
//   per line; sampler's added event-loop delay p99 <= 1 ms.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { GpuSampler } from '../src/core/telemetry/gpu-sampler.js';
import { NvidiaSmiStream, parseNvidiaSmiLine } from '../src/core/telemetry/gpu-smi.js';
import { closeNvml, openNvml } from '../src/core/telemetry/nvml.js';
import { median, percentile, report } from './lib.js';

const figures: Record<string, unknown> = {};
const us = (ms: number) => `${(ms * 1000).toFixed(1)} us`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Per-call ms of `f`, as the median over `runs` runs of `calls` calls each. */
function perCall(f: () => void, runs = 5, calls = 200): { medianMs: number; runsMs: number[] } {
  for (let i = 0; i < Math.min(20, calls); i++) f();
  const runsMs: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) f();
    runsMs.push((performance.now() - t0) / calls);
  }
  return { medianMs: median(runsMs), runsMs };
}

// ---- the nvidia-smi CSV parser (everywhere) ----
const LINES = [
  '2024/05/14 09:31:07.412, 0, 97, 61234, 81559, 1980, 512.37, 63, 0x0000000000000000',
  '2024/05/14 09:31:07.415, 1, [N/A], 10213, 81559, 1980, [Not Supported], 45, 0x0000000000000024',
];
let k = 0;
const parse = perCall(() => parseNvidiaSmiLine(LINES[k++ & 1]), 5, 20_000);
console.log(`nvidia-smi CSV parse: ${us(parse.medianMs)} per line (median of 5 runs of 20,000; target <= 10 us)`);
figures.parseUsPerLine = +(parse.medianMs * 1000).toFixed(2);

// ---- NVML addon ----
const nv = openNvml();
if (!nv.ok) {
  console.log(`NVML addon: unavailable here: ${nv.reason}`);
  figures.nvml = { available: false, reason: nv.reason };
} else {
  const { addon } = nv;
  const gpus = [...Array(nv.deviceCount).keys()];
  console.log(
    `NVML addon: driver ${nv.driverVersion}, ${gpus.length} ` +
      `GPU(s): ${gpus.map((i) => addon.deviceInfo(i).name).join(', ')}`,
  );
  const perGpu = gpus.map((i) => {
    const sync = perCall(() => addon.sample(i));
    const info = addon.deviceInfo(i);
    let gpmMs: number | null = null;
    if (info.gpmSupported) gpmMs = perCall(() => addon.gpmSample(i), 5, 50).medianMs;
    console.log(
      `  GPU ${i}: sample() ${us(sync.medianMs)} (median of 5 runs of 200; target <= ` +
        `1000 us)${gpmMs === null ? `; GPM: ${info.gpmReason}` : `; gpmSample() ${us(gpmMs)}`}`,
    );
    return {
      index: i,
      sampleUs: +(sync.medianMs * 1000).toFixed(1),
      gpmSampleUs: gpmMs === null ? null : +(gpmMs * 1000).toFixed(1),
    };
  });
  // The sampler's path: all GPUs (with GPM) in one worker-thread job, awaited.
  const roundTrips: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) await addon.sampleAsync(gpus, true);
    roundTrips.push((performance.now() - t0) / 50);
  }
  console.log(
    `  sampleAsync(all ${gpus.length} GPUs, with GPM): ${us(median(roundTrips))} per ` +
      `round trip (median of 5 runs of 50)`,
  );
  figures.nvml = {
    available: true,
    driverVersion: nv.driverVersion,
    gpus: perGpu,
    sampleAsyncAllUs: +(median(roundTrips) * 1000).toFixed(1),
  };
  closeNvml(addon);
}

// ---- nvidia-smi: one process per reading vs the stream ----
const query = [
  '--query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,clocks.sm,power.draw,temperature.gpu',
  '--format=csv,noheader,nounits',
];
const probe = spawnSync('nvidia-smi', query, { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  const why = probe.error
    ? (probe.error as NodeJS.ErrnoException).code === 'ENOENT'
      ? 'no NVIDIA driver (nvidia-smi not found)'
      : probe.error.message
    : `nvidia-smi exited ${probe.status}: ${(probe.stdout || probe.stderr).trim().split('\n')[0]}`;
  console.log(`nvidia-smi: unavailable here: ${why}`);
  figures.nvidiaSmi = { available: false, reason: why };
} else {
  const oneShot: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    spawnSync('nvidia-smi', query, { stdio: 'ignore' });
    oneShot.push(performance.now() - t0);
  }
  console.log(
    `nvidia-smi one-shot query: ${median(oneShot).toFixed(1)} ms wall per reading ` +
      `(median of 5) -- why the fallback streams`,
  );
  const lags: number[] = [];
  let rows = 0;
  const r = await NvidiaSmiStream.start({
    intervalMs: 100,
    onRow: (row, arrivalMs) => {
      rows++;
      if (row.timestampMs !== null) lags.push(arrivalMs - (row.timestampMs - (Date.now() - performance.now())));
    },
  });
  if (!r.ok) {
    console.log(`nvidia-smi stream: did not start: ${r.reason}`);
    figures.nvidiaSmi = { available: false, reason: r.reason };
  } else {
    const ticks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    const cpuMs = () => {
      const stat = `/proc/${r.stream.pid}/stat`;
      if (!existsSync(stat)) return NaN;
      const f = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
      return ((Number(f[11]) + Number(f[12])) / ticks) * 1000; // utime + stime
    };
    await sleep(1000);
    const cpu0 = cpuMs();
    const rows0 = rows;
    const t0 = performance.now();
    await sleep(10_000);
    const cpu = cpuMs() - cpu0;
    const seconds = (performance.now() - t0) / 1000;
    const n = rows - rows0;
    await r.stream.stop();
    const perS = cpu / seconds;
    console.log(
      `nvidia-smi stream at 10 Hz: ${(n / seconds).toFixed(1)} ` +
        `rows/s, ${perS.toFixed(1)} ms CPU per second ` +
        `(${(cpu / Math.max(1, n)).toFixed(2)} ms per row; target <= 20 ms/s), ` +
        `line arrives ${median(lags).toFixed(1)} ms (p95 ${percentile(lags, 95).toFixed(1)} ms) after its stamp`,
    );
    figures.nvidiaSmi = {
      available: true,
      oneShotMs: +median(oneShot).toFixed(1),
      rowsPerS: +(n / seconds).toFixed(1),
      cpuMsPerS: +perS.toFixed(2),
      cpuMsPerRow: +(cpu / Math.max(1, n)).toFixed(3),
      lagMsP50: +median(lags).toFixed(1),
      lagMsP95: +percentile(lags, 95).toFixed(1),
    };
  }
}

// ---- what a 10 Hz sampler adds to event-loop delay ----
async function loopDelayP99Ms(seconds: number): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await sleep(seconds * 1000);
  h.disable();
  return h.percentile(99) / 1e6;
}
const sampler = await GpuSampler.start({ rateHz: 10 });
if (!sampler.status.available) {
  console.log(`GpuSampler: ${sampler.status.reason}`);
  figures.sampler = { available: false, reason: sampler.status.reason };
} else {
  const withSampler = await loopDelayP99Ms(5);
  const counters = { ...sampler.counters };
  await sampler.stop();
  const without = await loopDelayP99Ms(5);
  console.log(
    `GpuSampler (${sampler.status.source}, 10 Hz, ${sampler.status.devices.length} ` +
      `GPU(s)): event-loop delay p99 ${withSampler.toFixed(2)} ms ` +
      `with, ${without.toFixed(2)} ms without (target: <= 1 ms ` +
      `added); ${counters.ticks} ticks, ${counters.skippedTicks} ` +
      `skipped, ${counters.errors} errors`,
  );
  figures.sampler = {
    available: true,
    source: sampler.status.source,
    loopDelayP99MsWith: +withSampler.toFixed(3),
    loopDelayP99MsWithout: +without.toFixed(3),
    ...counters,
  };
}

report('telemetry', figures);
