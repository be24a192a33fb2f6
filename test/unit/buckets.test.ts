import assert from 'node:assert/strict';
import { test } from 'node:test';
import { epochBatches, mulberry32, planBuckets, type LengthItem } from '../../src/core/data/buckets.js';

function lengths(n: number, seed: number): LengthItem[] {
  const r = mulberry32(seed);
  return Array.from({ length: n }, () => {
    const frames = Math.round(80 + r() * 700);
    return { frames, tokens: Math.round(frames / 5 + r() * 20) };
  });
}

test('buckets cover every item once, with shapes that fit their items', () => {
  const items = lengths(1000, 1);
  const plan = planBuckets(items, { buckets: 4, batchSize: 16, frameBudget: null, frameMultiple: 2 });
  assert.equal(plan.buckets.length, 4);
  const all = plan.buckets.flatMap((b) => b.items).sort((a, b) => a - b);
  assert.deepEqual(
    all,
    items.map((_, i) => i),
  );
  for (const b of plan.buckets) {
    assert.equal(b.maxFrames % 2, 0);
    assert.equal(b.maxTokens % 8, 0);
    for (const i of b.items) assert.ok(items[i].frames <= b.maxFrames && items[i].tokens <= b.maxTokens);
  }
});

test('more buckets never pad more, and 4 buckets pad much less than 1', () => {
  const items = lengths(2000, 2);
  const shares = [1, 2, 4, 8].map(
    (k) => planBuckets(items, { buckets: k, batchSize: 16, frameBudget: null, frameMultiple: 1 }).paddingShare,
  );
  for (let i = 1; i < shares.length; i++) assert.ok(shares[i] <= shares[i - 1] + 1e-12, `${shares}`);
  assert.ok(shares[2] < shares[0] / 2.5, `1 bucket ${shares[0]}, 4 buckets ${shares[2]}`);
});

test('the DP is optimal: no other 2-way split of frame-sorted items pads less', () => {
  const items = lengths(60, 3);
  const plan = planBuckets(items, { buckets: 2, batchSize: 4, frameBudget: null, frameMultiple: 1, tokenMultiple: 1 });
  const cost = (groups: number[][]) =>
    groups.reduce(
      (s, g) =>
        s + g.length * (Math.max(...g.map((i) => items[i].frames)) * 80 + Math.max(...g.map((i) => items[i].tokens))),
      0,
    );
  const best = cost(plan.buckets.map((b) => b.items));
  const order = items
    .map((_, i) => i)
    .sort((a, b) => items[a].frames - items[b].frames || items[a].tokens - items[b].tokens);
  for (let cut = 1; cut < order.length; cut++) assert.ok(best <= cost([order.slice(0, cut), order.slice(cut)]) + 1e-9);
});

test('frame budget sets a per-bucket static batch size', () => {
  const items = lengths(500, 4);
  const plan = planBuckets(items, { buckets: 3, batchSize: 64, frameBudget: 4000, frameMultiple: 2 });
  for (const b of plan.buckets) assert.equal(b.batchSize, Math.max(1, Math.min(64, Math.floor(4000 / b.maxFrames))));
});

test('epoch batches: static sizes, every item each epoch, fillers marked, deterministic in (seed, epoch)', () => {
  const items = lengths(203, 5);
  const plan = planBuckets(items, { buckets: 3, batchSize: 16, frameBudget: null, frameMultiple: 2 });
  const e0 = epochBatches(plan, 42, 0, true);
  for (const b of e0) assert.equal(b.items.length, plan.buckets[b.bucket].batchSize);
  const real = e0.flatMap((b) => b.items.slice(0, b.items.length - b.fillers)).sort((a, b) => a - b);
  assert.deepEqual(
    real,
    items.map((_, i) => i),
  );
  assert.deepEqual(epochBatches(plan, 42, 0, true), e0);
  assert.notDeepEqual(epochBatches(plan, 42, 1, true), e0);
});
