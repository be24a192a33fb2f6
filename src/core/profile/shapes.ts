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
  /** The shapes they met, batch×tokens×frames. */
  shapes: string[];
  /** Their wall time, and its share of all measured steps' wall time. */
  ms: number;
  wallShare: number;
  /** Their median, and the steady steps' median. */
  medianMs: number;
  steadyMedianMs: number;
  steadySteps: number;
}

const shapeOf = (s: StepRecord) => `${s.batchSize}×${s.tokens}×${s.frames}`;

/** Eager steps of a new shape under step capture before it replays: the plan and two recordings that must agree. */
const CAPTURE_STEPS = 3;

/**
 * The steps before each shape's steady state, over the whole run (a shape first met in the warm-up is not met
 * again later): where a shape replays, its steps before its first replay; under capture, a shape that has not
 * replayed yet, its first 3 (it was still recording, or its capture was refused and the rest run eagerly); without
 * capture, its first step.
 */
export function shapeSteps(steps: readonly StepRecord[]): Set<number> {
  const capture = steps.some((s) => s.replayed !== undefined);
  const byShape = new Map<string, StepRecord[]>();
  for (const s of steps) byShape.set(shapeOf(s), [...(byShape.get(shapeOf(s)) ?? []), s]);
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
  const first = shapeSteps(run);
  const shaping = measured.filter((s) => first.has(s.step));
  if (shaping.length === 0) return { steady: [...measured], phase: null };
  const steady = measured.filter((s) => !first.has(s.step));
  const ms = shaping.reduce((a, s) => a + s.wallMs, 0);
  const phase: ShapePhase = {
    steps: shaping.map((s) => s.step),
    shapes: [...new Set(shaping.map(shapeOf))],
    ms,
    wallShare: ms / measured.reduce((a, s) => a + s.wallMs, 0),
    medianMs: summarize(shaping.map((s) => s.wallMs)).p50,
    steadyMedianMs: steady.length ? summarize(steady.map((s) => s.wallMs)).p50 : 0,
    steadySteps: steady.length,
  };
  return { steady: steady.length >= 2 ? steady : [...measured], phase };
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
        `${(phase.wallShare * 100).toFixed(0)}% of the profiled wall; paid once per shape in a run; ${judged}. ` +
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
