// A batch shape's first steps are not the steady state: with step capture a new bucket shape runs eagerly and is
// recorded twice before it replays, and without capture its first step compiles and uploads its programs. Judged
// with the rest, a profile of a multi-bucket dataset calls a fast trainer dispatch-bound (seen on an H200: steps
// 11–15 recorded new shapes at 126–172 ms, the rest took 7–16 ms), and its verdict changes with --steps. So those
// steps are a phase of their own, with their cost and what removes it, and the verdicts judge the rest.
import type { StepRecord } from '../telemetry/index.js';
import { summarize } from '../util/index.js';
import type { Verdict } from './verdicts.js';

/** The measured steps that met a batch shape for the first time(s), apart from the steady ones. */
export interface ShapePhase {
  /** Steps that recorded (or first ran) a shape, after the warm-up. */
  steps: number[];
  /** The shapes they met: tokens×frames under step capture, batch×tokens×frames without. */
  shapes: string[];
  /** Their wall time, and its share of all measured steps' wall time. */
  ms: number;
  wallShare: number;
  /** Their median, and the steady steps' median. */
  medianMs: number;
  steadyMedianMs: number;
  steadySteps: number;
  /**
   * Steps after them that still ran slower than the steady state (settling: the first replays, caches and clocks
   * warming), left out of the verdicts too.
   */
  settlingSteps: number[];
  /**
   * Steps after them that ran ahead of a device that was behind (pipelined steps refilling the queue a recording
   * drained: the host waited for none of them, and the device's backlog was paid inside the next recording), left out
   * too.
   */
  fillingSteps: number[];
}

/**
 * A step's shape as its programs see it: under step capture the bucket's (a short last batch replays its bucket's
 * capture, padded), without it the batch's own (another batch size compiles other programs).
 */
const shapeOf = (s: StepRecord, capture: boolean) =>
  capture ? `${s.tokens}×${s.frames}` : `${s.batchSize}×${s.tokens}×${s.frames}`;

/** Runs with capture off record every step as not replayed: capture was on where some step replayed. */
const capturedRun = (steps: readonly StepRecord[]) => steps.some((s) => s.replayed === true);

/** Eager steps of a new shape under step capture before it replays: the plan and two recordings that must agree. */
const CAPTURE_STEPS = 3;

/**
 * The steps before each shape's steady state, over the whole run (a shape first met in the warm-up is not met
 * again later): where a shape replays, its steps before its first replay; under capture (some step replayed), a
 * shape that has not replayed yet, its first 3 (it was still recording, or its capture was refused and the rest run
 * eagerly); without capture, its first step.
 */
export function shapeSteps(steps: readonly StepRecord[], capture = capturedRun(steps)): Set<number> {
  const byShape = new Map<string, StepRecord[]>();
  for (const s of steps) {
    const key = shapeOf(s, capture);
    const list = byShape.get(key);
    if (list) list.push(s);
    else byShape.set(key, [s]);
  }
  const out = new Set<number>();
  for (const list of byShape.values()) {
    const firstReplay = list.findIndex((s) => s.replayed === true);
    const before = firstReplay >= 0 ? firstReplay : capture ? CAPTURE_STEPS : 1;
    for (const s of list.slice(0, before)) out.add(s.step);
  }
  return out;
}

/**
 * `measured` split into the steady steps the verdicts judge and the phase of new shapes (null where there is none).
 * Where fewer than 2 steady steps would be left, all are judged (the phase is still reported).
 */
export function splitNewShapes(
  run: readonly StepRecord[],
  measured: readonly StepRecord[],
): { steady: StepRecord[]; phase: ShapePhase | null } {
  const capture = capturedRun(run);
  const first = shapeSteps(run, capture);
  const shaping = measured.filter((s) => first.has(s.step));
  if (shaping.length === 0) return { steady: [...measured], phase: null };
  const { full: rest, filling } = pastFilling(
    measured.filter((s) => !first.has(s.step)),
    run[run.length - 1].step,
  );
  const settled = settledFrom(rest);
  const settling = rest.slice(0, settled);
  const steady = rest.slice(settled);
  const ms = shaping.reduce((a, s) => a + s.wallMs, 0);
  const phase: ShapePhase = {
    steps: shaping.map((s) => s.step),
    shapes: [...new Set(shaping.map((s) => shapeOf(s, capture)))],
    ms,
    wallShare: ms / measured.reduce((a, s) => a + s.wallMs, 0),
    medianMs: summarize(shaping.map((s) => s.wallMs)).p50,
    steadyMedianMs: steady.length ? summarize(steady.map((s) => s.wallMs)).p50 : 0,
    steadySteps: steady.length,
    settlingSteps: settling.map((s) => s.step),
    fillingSteps: filling.map((s) => s.step),
  };
  return { steady: steady.length >= 2 ? steady : [...measured], phase };
}

/** A step whose host waited for the device for at least this share of it ... */
const WAITED_SHARE = 0.5;
/** ... in this many steps in a row: the pipelined queue was full. */
const SUSTAINED = 3;
/**
 * Steps a queue takes to fill at most, to be called filling. The trainer leaves at most 3 steps unread
 * (training/loop/step-queue.ts, PIPELINE_DEPTH 4), so a device clearly slower than the host is behind within a few
 * steps (4–6 in the H200 profiles); a stretch whose host first waits later ran about as fast as its device, and the
 * backlog is small beside its length.
 */
const FILL_MAX = 8;

/**
 * `steps` (the steady candidates, in order) without those that ran ahead of the device. Pipelined, the host issues
 * steps without waiting until its queue is full; after a recording drained it, the next steps take the host's time
 * alone while a slower device falls behind, and the backlog is paid inside the next recording (an H200 profile of the
 * normal preset: steps of 11–42 ms after each recording, 72 ms once the host waited, and a wall-time MFU of 82%). In
 * each run of consecutive steps, those before the first of three in a row whose host waited for the device most of
 * its time are filling the queue (when there are at most FILL_MAX of them); a run with no such step is filling too
 * when it is no longer than the longest filling seen in this run (the device was behind then), and host-paced (kept)
 * when it is longer. Where no step waited, every step counts.
 */
function pastFilling(steps: readonly StepRecord[], lastStep: number): { full: StepRecord[]; filling: StepRecord[] } {
  // A run's last step is read at once (it waits by design), and a step may wait by chance where host and device
  // take about as long: the queue is full where SUSTAINED steps in a row waited.
  const waited = (s: StepRecord) => s.step !== lastStep && s.spans.syncMs >= WAITED_SHARE * s.wallMs;
  const fullFrom = (st: readonly StepRecord[]) =>
    st.findIndex((_, i) => i + SUSTAINED <= st.length && st.slice(i, i + SUSTAINED).every(waited));
  const stretches: StepRecord[][] = [];
  for (const s of steps) {
    const last = stretches[stretches.length - 1];
    if (last && last[last.length - 1].step + 1 === s.step) last.push(s);
    else stretches.push([s]);
  }
  const firstWait = stretches.map((st) => {
    const i = fullFrom(st);
    return i > FILL_MAX ? 0 : i;
  });
  const longestFill = Math.max(-1, ...firstWait);
  if (longestFill < 0) return { full: [...steps], filling: [] };
  const full: StepRecord[] = [];
  const filling: StepRecord[] = [];
  stretches.forEach((stretch, i) => {
    const cut = firstWait[i] >= 0 ? firstWait[i] : stretch.length <= longestFill ? stretch.length : 0;
    filling.push(...stretch.slice(0, cut));
    full.push(...stretch.slice(cut));
  });
  return full.length >= 2 ? { full, filling } : { full: [...steps], filling: [] };
}

/** Steps whose median, five at a time, must come within this factor of the steady median to have settled. */
const SETTLED_WITHIN = 1.25;

/**
 * Index of the first of `steps` from which the time per step has settled: that step, and the median of each window
 * of 5 steps from there, are within 25% of the median of the last half's steps. At most half of the steps are
 * dropped; a run that alternates or drifts slower keeps them all (its last half is not faster than its start).
 */
function settledFrom(steps: readonly StepRecord[]): number {
  const window = 5;
  if (steps.length < 4 * window) return 0;
  const tail = summarize(steps.slice(Math.floor(steps.length / 2)).map((s) => s.wallMs)).p50;
  const windowMedian = (i: number) => summarize(steps.slice(i, i + window).map((s) => s.wallMs)).p50;
  const half = Math.floor(steps.length / 2);
  for (let i = 0; i < half; i++) {
    let ok = steps[i].wallMs <= SETTLED_WITHIN * tail;
    for (let j = i; j + window <= half + window && ok; j += window) ok = windowMedian(j) <= SETTLED_WITHIN * tail;
    if (ok) return i;
  }
  return half;
}

/** Steps as ranges: [11, 12, 13, 20] -> "11–13, 20". */
function stepRanges(steps: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < steps.length; ) {
    let j = i;
    while (j + 1 < steps.length && steps[j + 1] === steps[j] + 1) j++;
    out.push(j > i ? `${steps[i]}–${steps[j]}` : `${steps[i]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/**
 * The new-shape phase as a verdict: moderate when it took at least a tenth of the profiled wall (a profile that short
 * would have been misread without the split), ok otherwise. Its cost is paid once per shape in a run; fewer buckets
 * make fewer shapes.
 */
export function newShapeVerdict(phase: ShapePhase | null | undefined, buckets: number): Omit<Verdict, 'n'>[] {
  if (!phase) return [];
  const costly = phase.wallShare >= 0.1;
  const settling = phase.settlingSteps.length
    ? `; step${phase.settlingSteps.length === 1 ? '' : 's'} ${stepRanges(phase.settlingSteps)} after them had not ` +
      'settled yet (slower than the steady median by more than a quarter)'
    : '';
  const filling = phase.fillingSteps.length
    ? `; step${phase.fillingSteps.length === 1 ? '' : 's'} ${stepRanges(phase.fillingSteps)} after them ran ahead ` +
      'of the device (the host waited for none of them; the backlog was paid in the next recording)'
    : '';
  const judged =
    phase.steadySteps >= 2
      ? `the verdicts judge the other ${phase.steadySteps} steps (median ${phase.steadyMedianMs.toFixed(1)} ms)`
      : 'fewer than 2 other steps are left, so the verdicts judge all of them: profile more steps (--steps)';
  return [
    {
      id: 'new-shapes',
      grade: costly ? 'moderate' : 'ok',
      title: `${phase.shapes.length} batch shape${phase.shapes.length === 1 ? '' : 's'} met for the first time`,
      evidence:
        `step${phase.steps.length === 1 ? '' : 's'} ${stepRanges(phase.steps)} ran shapes ${phase.shapes.join(', ')} ` +
        `before their steady state (recorded for replay, or programs compiled): median ` +
        `${phase.medianMs.toFixed(1)} ms, ${(phase.ms / 1000).toFixed(2)} s in all, ` +
        `${(phase.wallShare * 100).toFixed(0)}% of the profiled wall; paid once per shape in a run` +
        `${settling}${filling}; ` +
        `${judged}. ` +
        'A --warmup past them leaves them out of the profile.',
      actions:
        costly && buckets > 2
          ? [
              {
                key: 'batching.buckets',
                value: Math.max(2, Math.floor(buckets / 2)),
                effect: 'fewer batch shapes to record and compile, at more padding per batch',
                rule: 'batching/static-shapes',
              },
            ]
          : [],
    },
  ];
}
