// The hand-written pieces checked against tfjs autodiff of the plain formulas: layer norm's and the
// fused linear layer's gradients, and the matmul composition of a 1-D conv against tf.conv1d.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { attend } from '../../src/core/model/attention.js';
import { Conv1d, conv1dComposed, DropoutPool, keyPaddingBias, LayerNorm, Linear } from '../../src/core/model/nn.js';
import { ParamStore } from '../../src/core/model/params.js';
import { maxAbsDiff } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

describe('layer norm', () => {
  it('matches the textbook formula and its autodiff gradient', () => {
    const store = new ParamStore(3);
    const ln = new LayerNorm(store, 'ln', 24);
    ln.g.assign(tf.randomUniform([24], 0.5, 1.5, 'float32', 4));
    const x = tf.randomNormal([10, 24], 1, 2, 'float32', 5) as tf.Tensor2D;
    const dy = tf.randomNormal([10, 24], 0, 1, 'float32', 6);
    const reference = (xv: tf.Tensor, g: tf.Tensor) => {
      const { mean, variance } = tf.moments(xv, -1, true);
      return tf.mul(tf.div(tf.sub(xv, mean), tf.sqrt(tf.add(variance, 1e-5))), g);
    };
    assert.ok(maxAbsDiff(ln.apply(x), reference(x, ln.g)) < 1e-5);
    const [dxRef, dgRef] = tf.grads((xv: tf.Tensor, g: tf.Tensor) => tf.sum(tf.mul(reference(xv, g), dy)))([x, ln.g]);
    const [dx, dg] = tf.grads((xv: tf.Tensor, g: tf.Tensor) => tf.sum(tf.mul(ln.apply(xv as tf.Tensor2D), dy)))([
      x,
      ln.g,
    ]);
    assert.ok(maxAbsDiff(dx, dxRef) < 1e-4, `dx differs by ${maxAbsDiff(dx, dxRef)}`);
    assert.ok(maxAbsDiff(dg, dgRef) < 1e-4, `dg differs by ${maxAbsDiff(dg, dgRef)}`);
    // The gain is a variable: variableGrads must reach it through the custom gradient.
    const { grads } = tf.variableGrads(() => tf.sum(tf.mul(ln.apply(x), dy)) as tf.Scalar, [ln.g]);
    assert.ok(maxAbsDiff(grads[ln.g.name], dgRef) < 1e-4);
  });

  it('applyWithResidual: the norm and x as two outputs, the same values and gradients as apply(x) beside x', () => {
    const store = new ParamStore(3);
    const ln = new LayerNorm(store, 'ln', 24);
    ln.g.assign(tf.randomUniform([24], 0.5, 1.5, 'float32', 4));
    const x = tf.randomNormal([10, 24], 1, 2, 'float32', 5) as tf.Tensor2D;
    const [dn, dr] = [tf.randomNormal([10, 24], 0, 1, 'float32', 6), tf.randomNormal([10, 24], 0, 1, 'float32', 7)];
    const { normed, residual } = ln.applyWithResidual(x);
    assert.equal(maxAbsDiff(normed, ln.apply(x)), 0);
    assert.equal(maxAbsDiff(residual, x), 0);
    // A pre-norm block: both outputs feed the loss, so x gets two gradients (summed by the tape for apply).
    const loss = (both: (v: tf.Tensor2D) => [tf.Tensor, tf.Tensor]) => () => {
      const [n, r] = both(x);
      return tf.add(tf.sum(tf.mul(tf.relu(n), dn)), tf.sum(tf.mul(tf.square(r), dr))) as tf.Scalar;
    };
    const plain = tf.variableGrads(
      loss((v) => [ln.apply(v), v]),
      [ln.g],
    );
    const fused = tf.variableGrads(
      loss((v) => {
        const o = ln.applyWithResidual(v);
        return [o.normed, o.residual];
      }),
      [ln.g],
    );
    assert.ok(maxAbsDiff(fused.grads[ln.g.name], plain.grads[ln.g.name]) < 1e-6);
    const dxPlain = tf.grad((v: tf.Tensor) => loss(() => [ln.apply(v as tf.Tensor2D), v])())(x);
    const dxFused = tf.grad((v: tf.Tensor) =>
      loss(() => {
        const o = ln.applyWithResidual(v as tf.Tensor2D);
        return [o.normed, o.residual];
      })(),
    )(x);
    assert.ok(maxAbsDiff(dxFused, dxPlain) < 1e-5, `dx differs by ${maxAbsDiff(dxFused, dxPlain)}`);
    assert.ok(maxAbsDiff(dxFused, tf.zerosLike(dxFused)) > 0.1);
  });
});

describe('fused linear', () => {
  for (const activation of ['linear', 'relu'] as const) {
    it(`${activation}: value and gradients equal matMul + bias + activation`, () => {
      const store = new ParamStore(8);
      const lin = new Linear(store, 'fc', 12, 7, { std: 0.5 });
      lin.b.assign(tf.randomNormal([7], 0, 0.5, 'float32', 9));
      const x = tf.randomNormal([9, 12], 0, 1, 'float32', 10) as tf.Tensor2D;
      const dy = tf.randomNormal([9, 7], 0, 1, 'float32', 11);
      const reference = (xv: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => {
        const z = tf.add(tf.matMul(xv as tf.Tensor2D, w as tf.Tensor2D), b);
        return activation === 'relu' ? tf.relu(z) : z;
      };
      assert.ok(maxAbsDiff(lin.apply(x, activation), reference(x, lin.w, lin.b)) < 1e-5);
      const loss = (f: () => tf.Tensor) => () => tf.sum(tf.mul(f(), dy)) as tf.Scalar;
      const ours = tf.variableGrads(
        loss(() => lin.apply(x, activation)),
        [lin.w, lin.b],
      ).grads;
      const ref = tf.variableGrads(
        loss(() => reference(x, lin.w, lin.b)),
        [lin.w, lin.b],
      ).grads;
      assert.ok(maxAbsDiff(ours[lin.w.name], ref[lin.w.name]) < 1e-4);
      assert.ok(maxAbsDiff(ours[lin.b.name], ref[lin.b.name]) < 1e-4);
      const [dx] = tf.grads((xv: tf.Tensor) => tf.sum(tf.mul(lin.apply(xv as tf.Tensor2D, activation), dy)))([x]);
      const [dxRef] = tf.grads((xv: tf.Tensor) => tf.sum(tf.mul(reference(xv, lin.w, lin.b), dy)))([x]);
      assert.ok(maxAbsDiff(dx, dxRef) < 1e-4);
    });
  }
});

describe('1-D conv', () => {
  for (const kernel of [1, 3, 5]) {
    it(`kernel ${kernel}: the matmul composition equals tf.conv1d, value and gradients`, () => {
      const store = new ParamStore(12);
      const conv = new Conv1d(store, 'c', kernel, 6, 4, 1);
      const x = tf.randomNormal([2, 9, 6], 0, 1, 'float32', 13) as tf.Tensor3D;
      const dy = tf.randomNormal([2, 9, 4], 0, 1, 'float32', 14);
      const native = (xv: tf.Tensor, w: tf.Tensor, b: tf.Tensor) =>
        tf.add(tf.conv1d(xv as tf.Tensor3D, w as tf.Tensor3D, 1, 'same'), b);
      const composed = (xv: tf.Tensor, w: tf.Tensor, b: tf.Tensor) =>
        conv1dComposed(xv as tf.Tensor3D, w as tf.Tensor3D, b as tf.Tensor1D);
      assert.ok(maxAbsDiff(native(x, conv.w, conv.b), composed(x, conv.w, conv.b)) < 1e-5);
      assert.ok(maxAbsDiff(conv.apply(x, 'native'), conv.apply(x, 'composed')) < 1e-5);
      const g1 = tf.grads((xv: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(native(xv, w, b), dy)))([
        x,
        conv.w,
        conv.b,
      ]);
      const g2 = tf.grads((xv: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(composed(xv, w, b), dy)))([
        x,
        conv.w,
        conv.b,
      ]);
      g1.forEach((g, i) => assert.ok(maxAbsDiff(g, g2[i]) < 1e-4, `gradient ${i} differs by ${maxAbsDiff(g, g2[i])}`));
    });
  }
});

describe('attention', () => {
  it(
    'has a written-out gradient equal to autodiff of the plain formula (inside ' +
      'variableGrads, as training runs it)',
    () => {
      const bias = keyPaddingBias(tf.tensor1d([5, 3], 'int32'), 5);
      const dy = tf.randomNormal([2, 2, 4, 8], 0, 1, 'float32', 20);
      const store = new ParamStore(21);
      // Variables feed q, k, v through ops, so the inputs of the attention op are intermediates of
      // the forward pass (which tfjs disposes before backward: the op must have saved them).
      const wq = store.param('q', [2, 2, 4, 8], { kind: 'normal', std: 1 });
      const wk = store.param('k', [2, 2, 5, 8], { kind: 'normal', std: 1 });
      const wv = store.param('v', [2, 2, 5, 8], { kind: 'normal', std: 1 });
      const loss = (keep: boolean) => () => {
        const { context } = attend(
          tf.mul(wq, 2) as tf.Tensor4D,
          tf.add(wk, 1) as tf.Tensor4D,
          tf.neg(wv) as tf.Tensor4D,
          bias,
          keep,
        );
        return tf.sum(tf.mul(context, dy)) as tf.Scalar;
      };
      const ours = tf.variableGrads(loss(false), [wq, wk, wv]);
      const ref = tf.variableGrads(loss(true), [wq, wk, wv]);
      assert.ok(Math.abs(ours.value.dataSync()[0] - ref.value.dataSync()[0]) < 1e-4);
      for (const v of [wq, wk, wv])
        assert.ok(
          maxAbsDiff(ours.grads[v.name], ref.grads[v.name]) < 1e-4,
          `${v.name}: ${maxAbsDiff(ours.grads[v.name], ref.grads[v.name])}`,
        );
    },
  );
});

describe('dropout', () => {
  it('scales kept values by 1/(1-rate), drops about `rate` of them, and passes gradient through the same mask', () => {
    const pool = new DropoutPool(5);
    const store = new ParamStore(22);
    const w = store.param('w', [200, 50], { kind: 'normal', std: 1 });
    const { value, grads } = tf.variableGrads(() => {
      const y = pool.apply(tf.mul(w, 1), 0.3);
      return tf.sum(tf.div(y, tf.mul(w, 1))) as tf.Scalar; // Σ mask, mask ∈ {0, 1/0.7}
    }, [w]);
    const kept = value.dataSync()[0] * 0.7;
    assert.ok(Math.abs(kept / 10000 - 0.7) < 0.02, `kept ${kept} of 10000`);
    // d/dw Σ (w·mask)/w = 0 wherever the mask is applied consistently forward and backward.
    assert.ok(tf.max(tf.abs(grads[w.name])).dataSync()[0] < 1e-3);
    const state = pool.rngState;
    const a = pool.apply(tf.ones([10, 10]), 0.5);
    pool.rngState = state;
    assert.equal(maxAbsDiff(a, pool.apply(tf.ones([10, 10]), 0.5)), 0);
    assert.ok(maxAbsDiff(a, pool.apply(tf.ones([10, 10]), 0.5)) > 0);
  });
});

describe('weights', () => {
  it('assigning weights (a resume) leaves no tensor behind: the variables hold the values, nothing else', () => {
    const store = new ParamStore(3);
    const a = new Linear(store, 'a', 4, 3);
    const before = tf.memory().numTensors;
    const weights = new Map([
      ['a.w', tf.fill([4, 3], 0.5)],
      ['a.b', tf.fill([3], 0.25)],
    ]);
    store.assignWeights(weights);
    for (const w of weights.values()) w.dispose();
    assert.equal(tf.memory().numTensors, before);
    assert.deepEqual([...a.b.dataSync()], [0.25, 0.25, 0.25]);
  });
});
