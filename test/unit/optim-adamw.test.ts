// AdamW against a float64 re-implementation of PyTorch's torch.optim.AdamW, both update paths
// (the cpu one-pass kernel and the composition other backends run), clipping, accumulation,
// the on-device non-finite skip, schedules, and state export/import.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { AdamW, type OptimizerConfig } from '../../src/core/training/optim/adamw.js';
import { learningRateAt } from '../../src/core/training/optim/schedule.js';
import { trainingConfig } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

function config(overrides: Partial<OptimizerConfig> = {}): OptimizerConfig {
  const t = trainingConfig({
    learning_rate: 0.01,
    optimizer: { name: 'adamw', beta1: 0.9, beta2: 0.98, epsilon: 1e-8, weight_decay: 0.1 },
    grad_clip_norm: 0,
  });
  return { ...t, ...overrides };
}

/** torch.optim.AdamW, float64, for one parameter tensor. */
class ReferenceAdamW {
  m: number[];
  v: number[];
  t = 0;
  constructor(
    public p: number[],
    private readonly decay: boolean,
    private readonly c: OptimizerConfig,
  ) {
    this.m = p.map(() => 0);
    this.v = p.map(() => 0);
  }
  step(g: number[], lr: number): void {
    const { beta1, beta2, epsilon, weight_decay } = this.c.optimizer;
    this.t++;
    const bc1 = 1 - beta1 ** this.t;
    const bc2 = 1 - beta2 ** this.t;
    this.p = this.p.map((x, i) => {
      const decayed = this.decay ? x * (1 - lr * weight_decay) : x;
      this.m[i] = beta1 * this.m[i] + (1 - beta1) * g[i];
      this.v[i] = beta2 * this.v[i] + (1 - beta2) * g[i] * g[i];
      const denom = Math.sqrt(this.v[i]) / Math.sqrt(bc2) + epsilon;
      return decayed - (lr / bc1) * (this.m[i] / denom);
    });
  }
}

function setup(update: 'auto' | 'composed', c = config()) {
  const w = tf.variable(tf.tensor2d([0.5, -1.2, 2, 0.01, -0.3, 0.8], [2, 3]));
  const b = tf.variable(tf.tensor1d([0.1, -0.2, 0.3]));
  const params = new Map([
    ['layer.w', w],
    ['layer.b', b],
  ]);
  return { w, b, opt: new AdamW(params, c, { update }) };
}

function feed(opt: AdamW, grads: number[][], loss = 1): void {
  const [w, b] = opt.variables;
  opt.accumulate(
    opt.flatten({ [w.name]: tf.tensor(grads[0], w.shape), [b.name]: tf.tensor(grads[1], b.shape) }),
    tf.scalar(loss),
  );
}

const gradSeq = [
  [
    [0.3, -0.1, 0.05, 2, -0.7, 0.2],
    [0.01, -0.5, 0.25],
  ],
  [
    [-0.2, 0.4, 0.1, 1.5, 0.3, -0.6],
    [0.2, 0.1, -0.05],
  ],
  [
    [0.05, 0.05, -0.9, -1, 0.2, 0.1],
    [-0.3, 0.3, 0.6],
  ],
];

describe('AdamW', () => {
  for (const update of ['auto', 'composed'] as const) {
    it(
      `${update === 'auto' ? 'one-pass cpu kernel' : 'composition'}: matches ` +
        `torch.optim.AdamW; decay on weights, not on biases`,
      () => {
        const c = config();
        const { w, b, opt } = setup(update, c);
        const refW = new ReferenceAdamW(Array.from(w.dataSync()), true, c);
        const refB = new ReferenceAdamW(Array.from(b.dataSync()), false, c);
        gradSeq.forEach((g, i) => {
          feed(opt, g);
          const r = opt.apply();
          assert.equal(r.learningRate, 0.01);
          assert.equal(r.finite.dataSync()[0], 1);
          refW.step(g[0], 0.01);
          refB.step(g[1], 0.01);
          Array.from(w.dataSync()).forEach((x, j) =>
            assert.ok(Math.abs(x - refW.p[j]) < 2e-6, `step ${i} w[${j}] ${x} vs ${refW.p[j]}`),
          );
          Array.from(b.dataSync()).forEach((x, j) =>
            assert.ok(Math.abs(x - refB.p[j]) < 2e-6, `step ${i} b[${j}] ${x} vs ${refB.p[j]}`),
          );
        });
        assert.equal(opt.step, 3);
        opt.dispose();
      },
    );
  }

  for (const update of ['auto', 'composed'] as const) {
    it(
      `${update === 'auto' ? 'one-pass cpu kernel' : 'composition'}, loss scaling: ` +
        `gradients of S·loss make the unscaled update; an overflow halves S, skips the ` +
        `update and is not counted; S doubles after growthInterval updates in a row`,
      () => {
        const c = config({ grad_clip_norm: 1 });
        const w = tf.variable(tf.tensor2d([0.5, -1.2, 2, 0.01, -0.3, 0.8], [2, 3]));
        const b = tf.variable(tf.tensor1d([0.1, -0.2, 0.3]));
        const params = new Map([
          ['layer.w', w],
          ['layer.b', b],
        ]);
        const opt = new AdamW(params, c, { update, lossScale: { initial: 1024, growthInterval: 2 } });
        const plain = setup(update, c);
        const scale = () => opt.lossScale!.dataSync()[0];
        const values = (o: AdamW) => o.variables.flatMap((x) => Array.from(x.dataSync()));
        // Step 1: S = 1024 times the gradient and the loss; the same update and reported norm as unscaled.
        const S = scale();
        assert.equal(S, 1024);
        feed(
          opt,
          gradSeq[0].map((g) => g.map((x) => x * S)),
          S,
        );
        feed(plain.opt, gradSeq[0]);
        const r = opt.apply();
        const p = plain.opt.apply();
        assert.equal(r.finite.dataSync()[0], 1);
        assert.ok(Math.abs(r.gradNorm.dataSync()[0] - p.gradNorm.dataSync()[0]) < 1e-5);
        values(opt).forEach((x, i) =>
          assert.ok(Math.abs(x - values(plain.opt)[i]) < 1e-6, `${x} vs ${values(plain.opt)[i]}`),
        );
        // Step 2: an overflow (Inf) while S > 1: flag −1, no update, S halves, not a non-finite step.
        const before = values(opt);
        feed(opt, [gradSeq[1][0].map((x, i) => (i === 0 ? Infinity : x)), gradSeq[1][1]], S);
        const o = opt.apply();
        assert.equal(o.finite.dataSync()[0], -1);
        assert.deepEqual(values(opt), before);
        assert.equal(scale(), 512);
        assert.equal(opt.nonFiniteSteps.dataSync()[0], 0);
        // Steps 3 and 4 make two updates in a row: S doubles back to 1024.
        for (const g of [gradSeq[1], gradSeq[2]]) {
          const s = scale();
          feed(
            opt,
            g.map((row) => row.map((x) => x * s)),
            s,
          );
          assert.equal(opt.apply().finite.dataSync()[0], 1);
        }
        assert.equal(scale(), 1024);
        // Its state: S and the updates in a row go into the checkpoint and come back.
        const state = opt.getState();
        assert.deepEqual(Array.from(state.get('adamw.loss_scale')!.dataSync()), [1024, 0]);
        const again = new AdamW(params, c, { update, lossScale: { initial: 4096, growthInterval: 2 } });
        again.setState(state);
        assert.equal(again.lossScale!.dataSync()[0], 1024);
        // At S = 1 a NaN is a non-finite step like any other (flag 0), and S stays 1.
        const one = new AdamW(params, c, { update, lossScale: { initial: 1, growthInterval: 2 } });
        feed(one, [gradSeq[0][0].map(() => Number.NaN), gradSeq[0][1]]);
        assert.equal(one.apply().finite.dataSync()[0], 0);
        assert.equal(one.nonFiniteSteps.dataSync()[0], 1);
        assert.equal(one.lossScale!.dataSync()[0], 1);
        tf.dispose([...state.values()]);
        for (const x of [opt, plain.opt, again, one]) x.dispose();
      },
    );
  }

  for (const update of ['auto', 'composed'] as const) {
    it(
      `${update === 'auto' ? 'one-pass cpu kernel' : 'composition'}: keeps the flat ` +
        `parameters between updates, and reads a variable again once something else ` +
        `assigns it (loaded weights)`,
      () => {
        const c = config();
        const { w, b, opt } = setup(update, c);
        const refW = new ReferenceAdamW(Array.from(w.dataSync()), true, c);
        const refB = new ReferenceAdamW(Array.from(b.dataSync()), false, c);
        const close = (x: tf.Variable, ref: ReferenceAdamW, what: string) =>
          Array.from(x.dataSync()).forEach((v, j) =>
            assert.ok(Math.abs(v - ref.p[j]) < 2e-6, `${what}[${j}] ${v} vs ${ref.p[j]}`),
          );
        feed(opt, gradSeq[0]);
        opt.apply();
        refW.step(gradSeq[0][0], 0.01);
        refB.step(gradSeq[0][1], 0.01);
        // The second update reads the kept flat vector; the third starts from weights assigned in between.
        feed(opt, gradSeq[1]);
        opt.apply();
        refW.step(gradSeq[1][0], 0.01);
        refB.step(gradSeq[1][1], 0.01);
        close(w, refW, 'w');
        const loaded = [0.3, -0.7, 1.1, 0.2, -0.05, 0.9];
        w.assign(tf.tensor2d(loaded, [2, 3]));
        refW.p = [...loaded];
        feed(opt, gradSeq[2]);
        opt.apply();
        refW.step(gradSeq[2][0], 0.01);
        refB.step(gradSeq[2][1], 0.01);
        close(w, refW, 'w');
        close(b, refB, 'b');
        opt.dispose();
      },
    );
  }

  it('applies weight decay to rank ≥ 2 tensors only', () => {
    const { w, b, opt } = setup('composed');
    const w0 = Array.from(w.dataSync());
    const b0 = Array.from(b.dataSync());
    feed(opt, [new Array(6).fill(0), new Array(3).fill(0)]);
    opt.apply();
    Array.from(w.dataSync()).forEach((x, j) => assert.ok(Math.abs(x - w0[j] * (1 - 0.01 * 0.1)) < 1e-7));
    assert.deepEqual(Array.from(b.dataSync()), b0);
  });

  it('clips the averaged gradient to grad_clip_norm and reports its norm before clipping', () => {
    const c = config({ grad_clip_norm: 0.5 });
    const { w, opt } = setup('composed', c);
    const ref = new ReferenceAdamW(Array.from(w.dataSync()), true, c);
    const g = gradSeq[0];
    const norm = Math.hypot(...g[0], ...g[1]);
    feed(opt, g);
    const r = opt.apply();
    assert.ok(Math.abs(r.gradNorm.dataSync()[0] - norm) < 1e-5);
    ref.step(
      g[0].map((x) => (x * 0.5) / (norm + 1e-6)),
      0.01,
    );
    Array.from(w.dataSync()).forEach((x, j) => assert.ok(Math.abs(x - ref.p[j]) < 2e-6));
  });

  for (const update of ['auto', 'composed'] as const) {
    it(`${update}: two accumulated micro-batches update exactly as their mean would`, () => {
      const a = setup(update);
      const b = setup(update);
      feed(a.opt, gradSeq[0], 1);
      feed(a.opt, gradSeq[1], 2);
      assert.equal(a.opt.pendingMicroBatches, 2);
      const ra = a.opt.apply();
      feed(
        b.opt,
        [0, 1].map((k) => gradSeq[0][k].map((x, j) => (x + gradSeq[1][k][j]) / 2)),
      );
      const rb = b.opt.apply();
      assert.ok(Math.abs(ra.gradNorm.dataSync()[0] - rb.gradNorm.dataSync()[0]) < 1e-6);
      Array.from(a.w.dataSync()).forEach((x, j) => assert.ok(Math.abs(x - b.w.dataSync()[j]) < 1e-6));
      assert.equal(a.opt.pendingMicroBatches, 0);
    });

    it(`${update}: skips a non-finite step on the device and counts it`, () => {
      const { w, b, opt } = setup(update);
      feed(opt, gradSeq[0]);
      opt.apply();
      const before = [Array.from(w.dataSync()), Array.from(b.dataSync())];
      const stateBefore = opt.getState();
      feed(opt, [
        [0.1, Number.NaN, 0, 0, 0, 0],
        [0, 0, 0],
      ]);
      const r = opt.apply();
      assert.equal(r.finite.dataSync()[0], 0);
      assert.deepEqual([Array.from(w.dataSync()), Array.from(b.dataSync())], before);
      const stateAfter = opt.getState();
      for (const [name, t] of stateBefore)
        if (name.includes('/'))
          assert.deepEqual(Array.from(stateAfter.get(name)!.dataSync()), Array.from(t.dataSync()), name);
      assert.equal(opt.nonFiniteSteps.dataSync()[0], 1);
      feed(opt, gradSeq[1], Number.POSITIVE_INFINITY); // a finite gradient with an infinite loss is skipped too
      assert.equal(opt.apply().finite.dataSync()[0], 0);
      feed(opt, gradSeq[2]);
      assert.equal(opt.apply().finite.dataSync()[0], 1);
      assert.notDeepEqual(Array.from(w.dataSync()), before[0]);
      assert.equal(opt.nonFiniteSteps.dataSync()[0], 2);
    });
  }

  it("exchange buckets: the accumulated gradient's ranges bit for bit, across variables, with carried sums", () => {
    // Variables of 5, 3 and 9 values (17): buckets of 4 split the first and the last, and one ends on a boundary.
    const vars = [
      tf.variable(tf.zeros([5]), true, 'bx0'),
      tf.variable(tf.zeros([3]), true, 'bx1'),
      tf.variable(tf.zeros([3, 3]), true, 'bx2'),
    ];
    const opt = new AdamW(new Map(vars.map((v) => [v.name, v])), config());
    const grads = (seed: number) =>
      Object.fromEntries(vars.map((v, i) => [v.name, tf.randomNormal(v.shape, 0, 1, 'float32', seed + i)]));
    for (const carried of [false, true]) {
      const g = grads(carried ? 20 : 10);
      const buckets = opt.exchangeBuckets(g, 4);
      assert.deepEqual(
        buckets.map((b) => b.size),
        [4, 4, 4, 4, 1],
      );
      opt.accumulate(opt.flatten(g), tf.scalar(1));
      const sum = opt.accumulated!.grad.dataSync();
      const joined = buckets.flatMap((b) => Array.from(b.dataSync()));
      assert.deepEqual(joined, Array.from(sum));
      // The second round adds the first round's carried sums: its buckets are not the bare gradient.
      if (carried) assert.notDeepEqual(joined, Array.from(opt.flatten(g).dataSync()));
      opt.carry();
      tf.dispose([...buckets, ...Object.values(g)]);
    }
    assert.throws(() => opt.exchangeBuckets({}, 0), /a bucket of 0 values/);
    opt.discardAccumulated();
    tf.dispose(vars);
  });

  it('exports and imports its state so that a resumed run continues bit for bit', () => {
    const a = setup('auto');
    feed(a.opt, gradSeq[0]);
    a.opt.apply();
    const state = a.opt.getState();
    assert.ok(state.has('adamw.m/layer.w') && state.has('adamw.v/layer.b') && state.has('adamw.step'));
    assert.equal(state.get('adamw.step')!.dtype, 'int32');
    const b = setup('auto');
    b.w.assign(a.w);
    b.b.assign(a.b);
    b.opt.setState(state);
    assert.equal(b.opt.step, 1);
    for (const g of gradSeq.slice(1)) {
      feed(a.opt, g);
      feed(b.opt, g);
      a.opt.apply();
      b.opt.apply();
    }
    assert.deepEqual(Array.from(a.w.dataSync()), Array.from(b.w.dataSync()));
    assert.deepEqual(Array.from(a.b.dataSync()), Array.from(b.b.dataSync()));
    const wrong = new AdamW(new Map([['other', tf.variable(tf.zeros([2]))]]), config());
    assert.throws(() => wrong.setState(state), /optimizer state does not fit/);
  });

  it(
    "applySums: a replica's update from sums over every replica is apply()'s from those sums, over its own count of " +
      'micro-batches; its carried sums are dropped',
    () => {
      for (const update of ['auto', 'composed'] as const) {
        const a = setup(update, config({ grad_clip_norm: 1 }));
        const b = setup(update, config({ grad_clip_norm: 1 }));
        for (const [i, g] of gradSeq.entries()) {
          // a: two micro-batches whose sum is 2g; b: its own micro-batches (carried), then the sums of "every replica".
          feed(a.opt, g, 0.5);
          a.opt.carry();
          feed(a.opt, g, 0.5);
          a.opt.apply();
          feed(
            b.opt,
            g.map((row) => row.map((x) => x * (i + 3))),
          );
          b.opt.carry();
          feed(b.opt, g);
          b.opt.carry();
          const [w, bias] = b.opt.variables;
          const sum = b.opt.flatten({
            [w.name]: tf.mul(tf.tensor(g[0], w.shape), 2),
            [bias.name]: tf.mul(tf.tensor(g[1]), 2),
          });
          const r = b.opt.applySums(sum, tf.scalar(1));
          assert.equal(r.finite.dataSync()[0], 1);
          assert.equal(b.opt.pendingMicroBatches, 0);
        }
        assert.deepEqual(Array.from(b.w.dataSync()), Array.from(a.w.dataSync()), update);
        assert.deepEqual(Array.from(b.b.dataSync()), Array.from(a.b.dataSync()), update);
        assert.equal(b.opt.step, 3);
        assert.throws(() => b.opt.applySums(tf.zeros([9]), tf.scalar(0)), /without accumulated gradients/);
        feed(b.opt, gradSeq[0]);
        assert.throws(() => b.opt.applySums(tf.zeros([8]), tf.scalar(0)), /gradient has 8 values, the optimizer 9/);
      }
    },
  );

  it('gives the composition and the one-pass kernel the same trajectory (float32 rounding apart)', () => {
    const a = setup('auto', config({ grad_clip_norm: 1 }));
    const b = setup('composed', config({ grad_clip_norm: 1 }));
    for (let i = 0; i < 20; i++) {
      const g = gradSeq[i % 3].map((row) => row.map((x, j) => x * Math.cos(i + j)));
      feed(a.opt, g);
      feed(b.opt, g);
      a.opt.apply();
      b.opt.apply();
    }
    Array.from(a.w.dataSync()).forEach((x, j) => assert.ok(Math.abs(x - b.w.dataSync()[j]) < 1e-5));
  });
});

describe('learning-rate schedules', () => {
  const base = { learning_rate: 1e-3, max_steps: 1000 };
  it('warmup_cosine: linear to the peak at warmup_steps, cosine to min_learning_rate at max_steps', () => {
    const c = { ...base, schedule: { name: 'warmup_cosine' as const, warmup_steps: 100, min_learning_rate: 1e-5 } };
    assert.ok(Math.abs(learningRateAt(1, c) - 1e-5) < 1e-12);
    assert.ok(Math.abs(learningRateAt(50, c) - 5e-4) < 1e-12);
    assert.ok(Math.abs(learningRateAt(100, c) - 1e-3) < 1e-12);
    assert.ok(Math.abs(learningRateAt(550, c) - (1e-5 + 0.5 * (1e-3 - 1e-5))) < 1e-12);
    assert.ok(Math.abs(learningRateAt(1000, c) - 1e-5) < 1e-12);
    assert.ok(Math.abs(learningRateAt(5000, c) - 1e-5) < 1e-12);
    for (let s = 101; s < 1000; s += 37) assert.ok(learningRateAt(s, c) <= learningRateAt(s - 1, c));
  });

  it('noam: d_model^-0.5·min(step^-0.5, step·warmup^-1.5), scaled to peak at learning_rate', () => {
    const c = { ...base, schedule: { name: 'noam' as const, warmup_steps: 400, min_learning_rate: 0 } };
    const dModel = 256;
    const raw = (s: number) => dModel ** -0.5 * Math.min(s ** -0.5, s * 400 ** -1.5);
    const peak = raw(400);
    for (const s of [1, 10, 200, 400, 401, 1000, 20000])
      assert.ok(Math.abs(learningRateAt(s, c) - (1e-3 * raw(s)) / peak) < 1e-12, `step ${s}`);
    assert.ok(Math.abs(learningRateAt(400, c) - 1e-3) < 1e-15);
  });

  it('constant: the learning rate, after an optional warm-up', () => {
    assert.equal(
      learningRateAt(7, { ...base, schedule: { name: 'constant', warmup_steps: 0, min_learning_rate: 0 } }),
      1e-3,
    );
    assert.ok(
      Math.abs(
        learningRateAt(5, { ...base, schedule: { name: 'constant', warmup_steps: 10, min_learning_rate: 0 } }) - 5e-4,
      ) < 1e-15,
    );
  });
});
