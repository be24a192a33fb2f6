// The figures of a bench/gpu-diagnose.sh run, from its files: per profiled preset the step time, its
// split, kernels, device time, GPU busy (by each measurement) and the verdicts; the independent
// nvidia-smi log beside the NVML sampler; the diagnosis's actions; the watch's summary.
// Plain Node.js, no dependencies (it runs on the GPU host). Usage: node bench/gpu-diagnose-summary.mjs OUT
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node bench/gpu-diagnose-summary.mjs OUT');
  process.exit(2);
}
const read = (f) => (existsSync(join(out, f)) ? readFileSync(join(out, f), 'utf8') : null);
const json = (f) => {
  const t = read(f);
  try {
    return t ? JSON.parse(t) : null;
  } catch {
    return null;
  }
};
const pct = (x) => (x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(1)}%`);
const ms = (x) => (x === null || x === undefined ? 'n/a' : `${x.toFixed(1)} ms`);
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

console.log((read('host.txt') ?? '').trim());
console.log((read('rc.txt') ?? '').trim());

for (const name of ['tiny', 'small', 'starved']) {
  const env = json(`profile-${name}.json`);
  console.log('');
  if (!env || env.status !== 'success') {
    console.log(
      `profile ${name}: no result ` +
        `(${env?.error ? `${env.error.code}: ${env.error.message}` : 'see profile-' + name + '.txt'})`,
    );
    continue;
  }
  const r = env.result;
  const b = r.breakdown;
  // nvidia-smi's own log (local time stamps), cut to the measured steps' window when the run says when it started.
  const rows = (read(`smi-${name}.csv`) ?? '')
    .trim()
    .split('\n')
    .map((l) => l.split(',').map((c) => c.trim()))
    .filter((c) => c.length > 1);
  const epoch = (stamp) => {
    const m = /^(\d+)\/(\d+)\/(\d+) (\d+):(\d+):(\d+)\.(\d+)$/.exec(stamp);
    return m
      ? new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7].padEnd(3, '0').slice(0, 3)).getTime()
      : Number.NaN;
  };
  const from = r.startedAtEpochMs === null ? -Infinity : r.startedAtEpochMs + r.measuredWindowMs.fromMs;
  const to = r.startedAtEpochMs === null ? Infinity : r.startedAtEpochMs + r.measuredWindowMs.toMs;
  const smiAll = rows.map((c) => Number(c[1])).filter(Number.isFinite);
  const smi = rows
    .filter((c) => epoch(c[0]) >= from && epoch(c[0]) <= to)
    .map((c) => Number(c[1]))
    .filter(Number.isFinite);
  console.log(`profile ${name}: ${r.backend} on ${r.device ?? '?'}; ${b.steps} steps after ${r.warmupSteps} warm-up`);
  console.log(
    `  median step ${ms(b.wallMs.p50)} (p95 ${ms(b.wallMs.p95)}, ` +
      `cv ${b.wallMs.cv.toFixed(2)}), ${b.samplesPerS.toFixed(1)} ` +
      `samples/s, ${b.kernels.p50} ` +
      `kernels/step, ${b.hostMsPerKernel === null ? 'n/a' : (b.hostMsPerKernel * 1000).toFixed(0)} ` +
      `µs host time per kernel`,
  );
  console.log(
    `  shares: data wait ${pct(b.shares.dataWaitMs)}, ` +
      `upload ${pct(b.shares.uploadMs)}, ` +
      `forward/backward ${pct(b.shares.forwardBackwardMs)}, ` +
      `optimizer ${pct(b.shares.optimizerMs)}, sync ${pct(b.shares.syncMs)}, ` +
      `other ${pct(b.shares.otherMs)}`,
  );
  console.log(
    `  device time per ` +
      (`step ` +
        (b.deviceMs
          ? `${ms(b.deviceMs.p50)} over ${b.deviceTimedSteps} timed steps ` + `(${r.deviceTiming.source})`
          : `not measured (${r.deviceTiming.reason})`)),
  );
  console.log(
    `  GPU busy ${pct(b.gpuBusyShare)} (${b.gpuBusySource}); NVML ` +
      `utilisation ${b.utilizationPct === null ? 'n/a' : `${b.utilizationPct.toFixed(1)}%`} ` +
      `(${r.gpuTelemetry.source ?? r.gpuTelemetry.reason}); SM ` +
      `activity ${b.smActivityPct === null ? 'n/a' : `${b.smActivityPct.toFixed(1)}%`}; ` +
      `peak memory ${pct(b.peakMemoryShare)}`,
  );
  console.log(
    `  independent nvidia-smi -lms 100: over the measured steps ${smi.length} ` +
      `samples, mean ${mean(smi)?.toFixed(1) ?? 'n/a'}% ` +
      `(xtts's ${r.gpuTelemetry.source ?? 'sampler'}: ${b.utilizationPct?.toFixed(1) ?? 'n/a'}%); ` +
      `whole process ${smiAll.length} samples, ` +
      `mean ${mean(smiAll)?.toFixed(1) ?? 'n/a'}%`,
  );
  for (const v of r.verdicts)
    console.log(
      `  ${v.n}. [${v.grade}] ${v.title} ` +
        `— ${v.evidence}${v.actions.length ? ` → ${v.actions.map((a) => `${a.key}: ${a.value}`).join(', ')}` : ''}`,
    );
  for (const f of ['trace', 'report', 'fixed']) {
    const file = `${f === 'fixed' ? 'fixed' : f}-${name}.${f === 'trace' ? 'json' : f === 'report' ? 'html' : 'yaml'}`;
    if (existsSync(join(out, file))) console.log(`  ${file}: ${statSync(join(out, file)).size} bytes`);
  }
  const trace = json(`trace-${name}.json`);
  if (trace)
    console.log(
      `  trace: ${trace.traceEvents.length} events ` +
        `(${trace.traceEvents.filter((e) => e.cat === 'span').length} ` +
        `spans, ${trace.traceEvents.filter((e) => e.ph === 'C').length} counter samples)`,
    );
}

const d = json('diagnose.json');
console.log('');
if (!d || d.status !== 'success')
  console.log(`diagnose: no result (${d?.error ? `${d.error.code}: ${d.error.message}` : 'see diagnose.err'})`);
else {
  const r = d.result;
  const t = r.gpus.telemetry;
  console.log(
    `diagnose: ` +
      (t.available
        ? `${t.source}, ` +
          (`driver ${t.driverVersion ?? '?'}: ` +
            t.devices.map((g) => `${g.index} ${g.name} (GPM ${g.gpm ? 'yes' : `no: ${g.gpmReason}`})`).join('; '))
        : t.reason),
  );
  console.log(
    `  backends: ${r.backends.map((b) => `${b.backend} ${b.available ? 'yes' : 'no'}`).join(', ')}; ` +
      (`adapters: ` +
        (r.backends.find((b) => b.backend === 'webgpu')?.adapters ?? [])
          .map(
            (a) =>
              `${a.name} (${[a.dawnBackend, a.timestampQuery && 'timestamps', a.subgroupMatrix && 'subgroup matrix']
                .filter(Boolean)
                .join(', ')})`,
          )
          .join('; ')),
  );
  if (r.speedTest.profile) {
    const b = r.speedTest.profile.breakdown;
    console.log(
      `  speed test ` +
        `(${r.speedTest.preset ?? r.speedTest.configFile}, ${r.speedTest.profile.backend}): ` +
        `median step ${ms(b.wallMs.p50)}, ${b.kernels.p50} kernels/step, ` +
        `device ${b.deviceMs ? ms(b.deviceMs.p50) : 'n/a'}, GPU ` +
        `busy ${pct(b.gpuBusyShare)}, NVML ${b.utilizationPct?.toFixed(1) ?? 'n/a'}%, SM ` +
        `activity ${b.smActivityPct?.toFixed(1) ?? 'n/a'}%; pipeline ` +
        `wait ${pct(r.speedTest.pipeline.ring.waitShare)} ` +
        `at ${r.speedTest.pipeline.ring.stepMs} ms`,
    );
  } else console.log(`  speed test: ${r.speedTest.skipped}`);
  console.log(`  actions: ${r.summary.critical} critical, ${r.summary.high} high, ${r.summary.medium} medium`);
  for (const a of r.actions)
    console.log(
      `    ${a.priority} ` +
        `[${a.area}] ${a.title}${a.key ? ` → ${a.key}${a.value !== undefined ? `: ${a.value}` : ''}` : ''}`,
    );
}

const w = json('watch.json');
if (w?.status === 'success') {
  const r = w.result;
  console.log(
    `watch: ${(r.durationMs / 1000).toFixed(1)} s, ${r.samples.length} samples ` +
      `(${r.telemetry.source} at ${r.telemetry.rateHz} Hz)`,
  );
  for (const s of r.summary)
    console.log(
      `  GPU ${s.index}: utilisation ` +
        `mean ${s.utilizationPct?.mean.toFixed(1) ?? 'n/a'}% ` +
        `(p95 ${s.utilizationPct?.p95 ?? 'n/a'}%), SM ` +
        `activity ${s.smActivityPct?.mean.toFixed(1) ?? 'n/a'}%, memory ` +
        `peak ${s.memoryPeakBytes === null ? 'n/a' : `${(s.memoryPeakBytes / 2 ** 30).toFixed(2)} GiB`}, ` +
        `power p50 ${s.powerW?.p50.toFixed(0) ?? 'n/a'} W, clock ` +
        `reasons ${JSON.stringify(s.throttleShares)}`,
    );
} else console.log(`watch: no result (${w?.error?.message ?? 'see watch.err'})`);
