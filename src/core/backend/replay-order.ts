// The order a replay runs a recording's programs in (step-capture.ts). As recorded, a data-parallel replica's
// exchange buckets (its gradient in pieces, each from its own variables' gradients) are made after the whole
// backward pass, because tfjs hands out the gradients only once it is done. Nothing but their inputs ties them
// there: this moves every program that only serves the early outputs (Recording.early) to the first place where
// what it reads has been written — a bucket of the last layers' gradients is then made while the first layers'
// are still being computed, and can be read back meanwhile. Same programs, same inputs, same bits.
import type { Recording } from './step-recording.js';

/** A recording in replay order, and after which program (in that order) each early output is made. */
export interface ReplayOrder {
  rec: Recording;
  /** Program index → the early outputs (0 = the first early one) made by it. */
  readyAfter: Map<number, number[]>;
}

/** The roles program `p` writes: its output and its further outputs (the last `further` roles). */
function writesOf(p: Recording['programs'][number]): number[] {
  return [p.roles[0], ...p.roles.slice(p.roles.length - p.further)];
}

/**
 * For every program, the programs that must run before it: the last writer of each role it binds, and for each
 * role it writes, the programs that read that role since its last writer.
 */
function dependencies(rec: Recording): number[][] {
  const writer = new Map<number, number>();
  const readers = new Map<number, number[]>();
  return rec.programs.map((p, i) => {
    const deps = new Set<number>();
    const writes = writesOf(p);
    for (const r of p.roles) {
      const w = writer.get(r);
      if (w !== undefined) deps.add(w);
    }
    for (const r of writes) for (const x of readers.get(r) ?? []) deps.add(x);
    for (const r of p.roles.slice(1, p.roles.length - p.further)) {
      const list = readers.get(r) ?? [];
      list.push(i);
      readers.set(r, list);
    }
    for (const r of writes) {
      writer.set(r, i);
      readers.set(r, []);
    }
    return [...deps];
  });
}

/** Every program `from` depends on, `from` included. */
function ancestors(from: number[], deps: number[][]): Set<number> {
  const seen = new Set<number>();
  const stack = [...from];
  while (stack.length) {
    const i = stack.pop()!;
    if (seen.has(i)) continue;
    seen.add(i);
    stack.push(...deps[i]);
  }
  return seen;
}

/**
 * The recording with the programs that only serve its early outputs (a bucket's slices, concatenation, sum with
 * the carried one, packing: nothing else reads what they make) each run as soon as what it reads has been made, the
 * others in their recorded order; its roles' first and last programs renumbered. Itself when it has none.
 */
export function earlyFirst(rec: Recording): ReplayOrder {
  const readyAfter = new Map<number, number[]>();
  if (rec.early === 0) return { rec, readyAfter };
  const n = rec.programs.length;
  const deps = dependencies(rec);
  const lastWriter = new Map<number, number>();
  rec.programs.forEach((p, i) => {
    for (const r of writesOf(p)) lastWriter.set(r, i);
  });
  const earlyRoles = rec.outputs.slice(rec.outputs.length - rec.early).map((o) => o.role);
  const forEarly = ancestors(
    earlyRoles.map((r) => lastWriter.get(r)!),
    deps,
  );
  // What the rest of the step needs (the backward pass itself, whose gradients other programs read too) stays put.
  const elsewhere = ancestors(
    rec.programs.map((_, i) => i).filter((i) => !forEarly.has(i)),
    deps,
  );
  const pending = [...forEarly].filter((i) => !elsewhere.has(i)).sort((a, b) => a - b);
  const order: number[] = [];
  const done = new Array<boolean>(n).fill(false);
  const emit = (i: number) => {
    done[i] = true;
    order.push(i);
  };
  // Every hoisted program whose dependencies have run, in recorded order (one pass: its hoisted dependencies come
  // first).
  const pull = () => {
    let kept = 0;
    for (const i of pending) {
      if (deps[i].every((d) => done[d])) emit(i);
      else pending[kept++] = i;
    }
    pending.length = kept;
  };
  for (let i = 0; i < n; i++) {
    pull();
    if (!done[i]) emit(i);
  }
  pull();
  const position = new Array<number>(n);
  order.forEach((old, at) => (position[old] = at));
  const roles = rec.roles.map((r) => ({ ...r, def: Number.POSITIVE_INFINITY, last: r.last === n ? n : -1 }));
  order.forEach((old, at) => {
    for (const r of rec.programs[old].roles) {
      roles[r].def = Math.min(roles[r].def, at);
      roles[r].last = Math.max(roles[r].last, at);
    }
  });
  roles.forEach((r, k) => {
    if (r.def === Number.POSITIVE_INFINITY) [r.def, r.last] = [rec.roles[k].def, rec.roles[k].last];
  });
  earlyRoles.forEach((role, k) => {
    const at = position[lastWriter.get(role)!];
    readyAfter.set(at, [...(readyAfter.get(at) ?? []), k]);
  });
  return { rec: { ...rec, programs: order.map((i) => rec.programs[i]), roles }, readyAfter };
}
