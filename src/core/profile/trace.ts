// Profiled steps as a Chrome/Perfetto trace (the Trace Event Format's JSON object form): one track
// per span kind, complete events ("ph": "X") in microseconds, GPU samples as counter tracks.
// Open it in ui.perfetto.dev or chrome://tracing.
import type { DeviceSampleRecord } from '../telemetry/run-db.js';
import { SPAN_NAMES, type StepRecord } from '../telemetry/spans.js';

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

export function toTrace(steps: readonly StepRecord[], samples: readonly DeviceSampleRecord[], meta: Record<string, unknown> = {}): { traceEvents: TraceEvent[]; displayTimeUnit: 'ms'; otherData: Record<string, unknown> } {
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', ts: 0, pid: 1, tid: 0, args: { name: 'xtts trainer' } },
    { name: 'thread_name', ph: 'M', ts: 0, pid: 1, tid: 1, args: { name: 'steps' } },
    ...SPAN_NAMES.map((s) => ({ name: 'thread_name', ph: 'M' as const, ts: 0, pid: 1, tid: SPAN_TRACK[s], args: { name: s.replace(/Ms$/, '') } })),
  ];
  for (const s of steps) {
    const t0 = s.startMs * 1000;
    events.push({ name: `step ${s.step}`, cat: 'step', ph: 'X', ts: t0, dur: s.wallMs * 1000, pid: 1, tid: 1, args: { bucket: s.bucket, batchSize: s.batchSize, tokens: s.tokens, frames: s.frames, kernels: s.kernels, loss: s.loss ?? null, deviceMs: s.deviceMs ?? null } });
    // Spans in the order they happen within a step.
    let t = t0;
    for (const name of SPAN_NAMES) {
      const dur = s.spans[name] * 1000;
      if (dur <= 0) continue;
      events.push({ name: name.replace(/Ms$/, ''), cat: 'span', ph: 'X', ts: t, dur, pid: 1, tid: SPAN_TRACK[name] });
      t += dur;
    }
  }
  for (const g of samples) {
    events.push({ name: `GPU ${g.device} utilisation %`, ph: 'C', ts: g.tMs * 1000, pid: 2, tid: 0, args: { value: g.utilizationPct ?? 0 } });
    if (g.memoryUsedBytes !== null) events.push({ name: `GPU ${g.device} memory MiB`, ph: 'C', ts: g.tMs * 1000, pid: 2, tid: 0, args: { value: Math.round(g.memoryUsedBytes / 2 ** 20) } });
  }
  if (samples.length) events.push({ name: 'process_name', ph: 'M', ts: 0, pid: 2, tid: 0, args: { name: 'GPU samples' } });
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
    if (e.ph === 'C' && (typeof e.args !== 'object' || e.args === null || Object.values(e.args).some((v) => typeof v !== 'number'))) problems.push(`event ${i}: counter args must be numbers`);
  });
  return problems;
}
