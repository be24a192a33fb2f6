// A dense layer's backward as one WebGPU program (backend/programs/dense.ts), on the software device:
// against the programs apart (the same backend), for the three kinds of dz, for shapes of one tile and
// of several (dx's 64 × 64 tiles, dW's 16 × 16 with the bias row in a tile of its own, K in several
// rounds of the 8 groups and a last one cut short); and through the layers (Linear.apply with and
// without ReLU, the residual branch under a dropout), whose gradients it makes in one program.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as tfCore from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, KernelCounter } from '../../src/core/backend/index.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';
import '../../src/core/model/gradients.js';
import { switchGpuPrograms } from '../../src/core/backend/index.js';

/** The largest |a − b| over the largest |b|. */
async function relative(a: tfCore.Tensor, b: tfCore.Tensor): Promise<number> {
  const [u, v] = [await a.data(), await b.data()];
  assert.equal(u.length, v.length);
  let [worst, scale] = [0, 0];
  for (let i = 0; i < u.length; i++) {
    worst = Math.max(worst, Math.abs(u[i] - v[i]));
    scale = Math.max(scale, Math.abs(v[i]));
  }
  return worst / scale;
}

describe("a dense layer's backward as one WebGPU program", { skip: withoutLlvmpipe }, () => {
  test(
    'dx, dW and db of dz = dy, dy·step(y) and dy times a dropout window: the ' +
      "programs apart's, dx bit for bit, dW and db within 3e-6; one program instead of " +
      'three',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      const { denseBackward } = await import('../../src/core/backend/programs/dense-layer.js');
      try {
        // One tile each way; several dx tiles and dW tiles with the bias row alone in the last; K over
        // several rounds of the groups, the last cut short; dx's columns across 8 tiles.
        for (const [rows, inDim, outDim] of [
          [30, 24, 40],
          [300, 70, 130],
          [1100, 128, 96],
          [700, 512, 20],
        ]) {
          const dy = tf.randomNormal([rows, outDim], 0, 1, 'float32', 1) as tfCore.Tensor2D;
          const x = tf.randomNormal([rows, inDim], 0, 1, 'float32', 2) as tfCore.Tensor2D;
          const w = tf.randomNormal([inDim, outDim], 0, 1, 'float32', 3) as tfCore.Tensor2D;
          // A ReLU's output: zeros where it cut (their gradient is 0), and a NaN, which passes on.
          const y = tf.relu(tf.randomNormal([rows, outDim], 0, 1, 'float32', 4)) as tfCore.Tensor2D;
          const pool = tf.randomUniform([rows * outDim + 50], 0, 2, 'float32', 5) as tfCore.Tensor1D;
          const offsets = tf.tensor1d([7, 13], 'int32') as tfCore.Tensor1D;
          for (const of of [
            { kind: 'plain' as const },
            { kind: 'relu' as const, y },
            { kind: 'mask' as const, pool, offsets, k: 1 },
          ]) {
            const where = `${rows}×${inDim}×${outDim} ${of.kind}`;
            const counter = new KernelCounter().install(tf);
            switchGpuPrograms(tf, 'dense-grads', true), switchGpuPrograms(tf, 'paired-dense', true);
            const one = denseBackward(dy, x, w, of);
            const onePrograms = counter.takeAll().dispatches;
            switchGpuPrograms(tf, 'dense-grads', false), switchGpuPrograms(tf, 'paired-dense', false);
            const apart = denseBackward(dy, x, w, of);
            const apartPrograms = counter.takeAll().dispatches;
            counter.uninstall();
            switchGpuPrograms(tf, 'dense-grads', true), switchGpuPrograms(tf, 'paired-dense', true);
            assert.equal(onePrograms, 1, where);
            assert.equal(apartPrograms, 3, where);
            assert.deepEqual(
              one.map((t) => t.shape),
              [[rows, inDim], [inDim, outDim], [outDim]],
              where,
            );
            assert.deepEqual(await one[0].data(), await apart[0].data(), `${where}: dx`);
            assert.ok(
              (await relative(one[1], apart[1])) < 3e-6,
              `${where}: dW off by ${await relative(one[1], apart[1])}`,
            );
            assert.ok(
              (await relative(one[2], apart[2])) < 3e-6,
              `${where}: db off by ${await relative(one[2], apart[2])}`,
            );
          }
        }
        // dz's NaN reaches dx, dW and db as the programs apart pass it on.
        const dy = tf.ones([20, 8]) as tfCore.Tensor2D;
        const x = tf.ones([20, 4]) as tfCore.Tensor2D;
        const w = tf.ones([4, 8]) as tfCore.Tensor2D;
        const y = tf.tensor2d(
          Array.from({ length: 160 }, (_, i) => (i === 9 ? Number.NaN : 1)),
          [20, 8],
        );
        const [dx, dW, db] = denseBackward(dy, x, w, { kind: 'relu', y });
        // Row 1 of dx, column 1 of dW and db.
        assert.ok(Number.isNaN((await dx.data())[4]));
        assert.equal((await dx.data())[0], 8);
        assert.ok(Number.isNaN((await dW.data())[1]));
        assert.ok(Number.isNaN((await db.data())[1]));
        assert.equal((await db.data())[0], 20);
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'through the layers: Linear.apply (linear and ReLU) and the residual branch ' +
      "under a dropout, the gradients of the programs apart, each layer's backward one " +
      'program',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });

      const { DropoutPool, Linear } = await import('../../src/core/model/nn.js');
      const { ParamStore } = await import('../../src/core/model/params.js');
      try {
        const linear = new Linear(new ParamStore(4), 'proj', 24, 40);
        linear.b.assign(tf.randomNormal([40], 0, 1, 'float32', 8));
        const h = tf.randomNormal([300, 24], 0, 1, 'float32', 2) as tfCore.Tensor2D;
        const base = tf.randomNormal([300, 40], 0, 1, 'float32', 1) as tfCore.Tensor2D;
        const up = tf.randomNormal([300, 40], 0, 1, 'float32', 3);
        const cases: Record<string, (x: tfCore.Tensor2D) => tfCore.Tensor> = {
          linear: (x) => linear.apply(x),
          relu: (x) => linear.apply(x, 'relu'),
          dropped: (x) => new DropoutPool(7).residualLinear(base, linear, x, 0.2),
        };
        for (const [name, layer] of Object.entries(cases)) {
          const run = (one: boolean) => {
            switchGpuPrograms(tf, 'dense-grads', one), switchGpuPrograms(tf, 'paired-dense', one);
            const counter = new KernelCounter().install(tf);
            // Every gradient the layer's backward returns is made, the input's only asked for.
            const grads = [tf.grad((x: tfCore.Tensor) => tf.sum(tf.mul(layer(x as tfCore.Tensor2D), up)))(h)];
            const programs = counter.takeAll().dispatches;
            counter.uninstall();
            return { grads, programs };
          };
          const [one, apart] = [run(true), run(false)];
          switchGpuPrograms(tf, 'dense-grads', true), switchGpuPrograms(tf, 'paired-dense', true);
          // Forward and the loss are the same programs; the backward has two fewer.
          assert.equal(one.programs, apart.programs - 2, name);
          assert.deepEqual(await one.grads[0].data(), await apart.grads[0].data(), `${name}: dx`);
        }
        // The weights' gradients through variableGrads (the trainer's path), within 3e-6.
        for (const [name, layer] of Object.entries(cases)) {
          const grads = (one: boolean) => {
            switchGpuPrograms(tf, 'dense-grads', one), switchGpuPrograms(tf, 'paired-dense', one);
            return tf.variableGrads(() => tf.sum(tf.mul(layer(h), up)) as tfCore.Scalar, [linear.w, linear.b]).grads;
          };
          const [one, apart] = [grads(true), grads(false)];
          switchGpuPrograms(tf, 'dense-grads', true), switchGpuPrograms(tf, 'paired-dense', true);
          for (const v of [linear.w, linear.b])
            assert.ok((await relative(one[v.name], apart[v.name])) < 3e-6, `${name}: ${v.name}`);
        }
      } finally {
        disposeBackend(tf);
      }
    },
  );
});
