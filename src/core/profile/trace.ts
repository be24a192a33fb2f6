// Profiled steps as a Chrome/Perfetto trace (the Trace Event Format's JSON object form): one track
// per span kind, complete events ("ph": "X") in microseconds, GPU samples as counter tracks.
// Open it in ui.perfetto.dev or chrome://tracing.
import type { DeviceSampleRecord } from '../telemetry/index.js';
import { SPAN_NAMES, type StepRecord } from '../telemetry/index.js';

export interface TraceEvent {
  name: string;
  ph: 'X' | 'C' | 'M';
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown>;
  cat?: string;
}

const SPAN_TRACK: Record<string, number> = Object.fromEntries(SPAN_NAMES.map((s, i) => [s, i + 2]));

/** Track of the device-timed probe steps, after the span tracks. */
const PROBE_TRACK = SPAN_NAMES.length + 2;

export function toTrace(
  steps: readonly StepRecord[],
  samples: readonly DeviceSampleRecord[],
  meta: Record<string, unknown> = {},
  probes: readonly StepRecord[] = [],
): { traceEvents: TraceEvent[]; displayTimeUnit: 'ms'; otherData: Record<string, unknown> } {
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', ts: 0, pid: 1, tid: 0, args: { name: 'xtts trainer' } },
    { name: 'thread_name', ph: 'M', ts: 0, pid: 1, tid: 1, args: { name: 'steps' } },
    ...SPAN_NAMES.map((s) => ({
      name: 'thread_name',
      ph: 'M' as const,
      ts: 0,
      pid: 1,
      tid: SPAN_TRACK[s],
      args: { name: s.replace(/Ms$/, '') },
    })),
  ];
  for (const s of steps) {
    const t0 = s.startMs * 1000;
    events.push({
      name: `step ${s.step}`,
      cat: 'step',
      ph: 'X',
      ts: t0,
      dur: s.wallMs * 1000,
      pid: 1,
      tid: 1,
      args: {
        bucket: s.bucket,
        batchSize: s.batchSize,
        tokens: s.tokens,
        frames: s.frames,
        kernels: s.kernels,
        loss: s.loss ?? null,
        deviceMs: s.deviceMs ?? null,
      },
    });
    // Spans in the order they happen within a step.
    let t = t0;
    for (const name of SPAN_NAMES) {
      const dur = s.spans[name] * 1000;
      if (dur <= 0) continue;
      events.push({ name: name.replace(/Ms$/, ''), cat: 'span', ph: 'X', ts: t, dur, pid: 1, tid: SPAN_TRACK[name] });
      t += dur;
    }
  }
  if (probes.length)
    events.push({
      name: 'thread_name',
      ph: 'M',
      ts: 0,
      pid: 1,
      tid: PROBE_TRACK,
      args: { name: 'device-timed steps (device time summed)' },
    });
  for (const p of probes) {
    // A probe's device time is a sum over its kernels, not one interval: drawn from the step's start.
    events.push({
      name: `step ${p.step} (timed)`,
      cat: 'probe',
      ph: 'X',
      ts: p.startMs * 1000,
      dur: p.wallMs * 1000,
      pid: 1,
      tid: 1,
      args: { kernels: p.kernels, deviceMs: p.deviceMs ?? null },
    });
    events.push({
      name: 'device compute',
      cat: 'device',
      ph: 'X',
      ts: p.startMs * 1000,
      dur: (p.deviceMs ?? 0) * 1000,
      pid: 1,
      tid: PROBE_TRACK,
      args: { deviceMs: p.deviceMs ?? null, kernels: p.kernels },
    });
  }
  for (const s of steps)
    events.push({
      name: 'kernels per step',
      ph: 'C',
      ts: s.startMs * 1000,
      pid: 1,
      tid: 0,
      args: { kernels: s.kernels },
    });
  for (const g of samples) {
    events.push({
      name: `GPU ${g.device} utilisation %`,
      ph: 'C',
      ts: g.tMs * 1000,
      pid: 2,
      tid: 0,
      args: { value: g.utilizationPct ?? 0 },
    });
    if (g.memoryUsedBytes !== null)
      events.push({
        name: `GPU ${g.device} memory MiB`,
        ph: 'C',
        ts: g.tMs * 1000,
        pid: 2,
        tid: 0,
        args: { value: Math.round(g.memoryUsedBytes / 2 ** 20) },
      });
    if (g.smActivityPct !== null)
      events.push({
        name: `GPU ${g.device} SM activity %`,
        ph: 'C',
        ts: g.tMs * 1000,
        pid: 2,
        tid: 0,
        args: { value: g.smActivityPct },
      });
  }
  if (samples.length)
    events.push({ name: 'process_name', ph: 'M', ts: 0, pid: 2, tid: 0, args: { name: 'GPU samples' } });
  return { traceEvents: events, displayTimeUnit: 'ms', otherData: { tool: 'xtts profile-bottleneck', ...meta } };
}

/** Checks the structure Perfetto's JSON importer relies on; returns the problems found. */
export function traceProblems(trace: { traceEvents?: unknown }): string[] {
  const problems: string[] = [];
  if (!Array.isArray(trace.traceEvents)) return ['traceEvents is not an array'];
  trace.traceEvents.forEach((e: Partial<TraceEvent>, i) => {
    if (typeof e.name !== 'string') problems.push(`event ${i}: name`);
    if (!['X', 'C', 'M', 'B', 'E', 'i'].includes(e.ph as string)) problems.push(`event ${i}: ph ${e.ph}`);
    if (typeof e.ts !== 'number' || !Number.isFinite(e.ts) || e.ts < 0) problems.push(`event ${i}: ts`);
    if (e.ph === 'X' && (typeof e.dur !== 'number' || e.dur < 0)) problems.push(`event ${i}: dur`);
    if (typeof e.pid !== 'number' || typeof e.tid !== 'number') problems.push(`event ${i}: pid/tid`);
    if (
      e.ph === 'C' &&
      (typeof e.args !== 'object' || e.args === null || Object.values(e.args).some((v) => typeof v !== 'number'))
    )
      problems.push(`event ${i}: counter args must be numbers`);
  });
  // Complete events on one thread must nest (Perfetto builds one slice stack per track and reports
  // an event that starts inside another and ends after it as misplaced).
  const byTrack = new Map<string, { i: number; ts: number; end: number }[]>();
  trace.traceEvents.forEach((e: Partial<TraceEvent>, i) => {
    if (e.ph !== 'X' || typeof e.ts !== 'number' || typeof e.dur !== 'number') return;
    const k = `${e.pid}/${e.tid}`;
    if (!byTrack.has(k)) byTrack.set(k, []);
    byTrack.get(k)!.push({ i, ts: e.ts, end: e.ts + e.dur });
  });
  const slack = 1e-3; // µs: spans are sums of floating-point milliseconds
  for (const [track, events] of byTrack) {
    events.sort((a, b) => a.ts - b.ts || b.end - a.end);
    const open: { i: number; end: number }[] = [];
    for (const ev of events) {
      while (open.length && open[open.length - 1].end <= ev.ts + slack) open.pop();
      const parent = open[open.length - 1];
      if (parent && ev.end > parent.end + slack)
        problems.push(`event ${ev.i} overlaps event ${parent.i} on track ${track} without nesting in it`);
      open.push(ev);
    }
  }
  return problems;
}
