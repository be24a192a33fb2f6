// gather (backend/programs/slices.ts): ranges of many tensors into one flat tensor, each value copied
// once, in programs of at most 15 pieces that each write their ranges of the one output. On the software
// WebGPU device: the values of the host's slices and concatenation, bit for bit, for float32 and int32,
// whole tensors and ranges, pieces longer than one program's threads; the program count; a step capture
// that replays it; and the optimizer's flat gradient and exchange buckets through it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as tfCore from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, KernelCounter } from '../../src/core/backend/index.js';
import { recordStep, StepCapture } from '../../src/core/backend/step-capture.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';
import '../../src/core/model/gradients.js';

type Tf = typeof tfCore;
type Piece = [tfCore.Tensor, number, number];

/** What gather must give: each range's values in row-major order, one after another (on the host). */
async function expected(pieces: Piece[]): Promise<number[]> {
  const out: number[] = [];
  for (const [x, start, count] of pieces) {
    const values = await x.data();
    for (let i = start; i < start + count; i++) out.push(values[i] as number);
  }
  return out;
}

/** a and b, value for value (the first difference named: deepEqual's diff of long arrays takes minutes). */
function same(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  assert.equal(a.length, b.length, `${what}: ${a.length} values, not ${b.length}`);
  for (let i = 0; i < a.length; i++)
    if (!Object.is(a[i], b[i])) assert.fail(`${what}: value ${i} is ${a[i]}, not ${b[i]}`);
}

/** 40 tensors of ranks 1 to 3 and sizes 1 to 70,000, as ranges: whole, a middle part, empty, the last value. */
function pieces(tf: Tf, dtype: 'float32' | 'int32', seed: number): Piece[] {
  const shapes = [[1], [7], [3, 5], [300, 7], [2, 3, 4], [70_000], [13], [64, 64], [1, 1]];
  return Array.from({ length: 40 }, (_, i) => {
    const shape = shapes[i % shapes.length];
    const x =
      dtype === 'int32'
        ? tf.randomUniformInt(shape, -1000, 1000, { seed: seed + i })
        : tf.randomNormal(shape, 0, 1, 'float32', seed + i);
    const size = x.size;
    const range: [number, number] =
      i % 4 === 1
        ? [Math.floor(size / 3), Math.ceil(size / 2)]
        : i % 9 === 4
          ? [0, 0]
          : i % 7 === 6
            ? [size - 1, 1]
            : [0, size];
    return [x, ...range];
  });
}

describe('gather on a real WebGPU device', { skip: withoutLlvmpipe }, () => {
  test(
    '40 ranges of float32 and of int32 tensors, bit for bit, in ceil(pieces / 15) programs; one whole ' +
      'tensor is itself, flat, with no program; a range outside its tensor is refused',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      const { gather } = await import('../../src/core/backend/programs/slices.js');
      try {
        for (const [dtype, seed] of [
          ['float32', 10],
          ['int32', 100],
        ] as const) {
          const ps = pieces(tf, dtype, seed);
          const counter = new KernelCounter().install(tf);
          const got = gather(ps);
          const { dispatches } = counter.takeAll();
          counter.uninstall();
          const nonEmpty = ps.filter(([, , n]) => n > 0).length;
          const limit = (tf.backend() as unknown as { device: GPUDevice }).device.limits
            .maxStorageBuffersPerShaderStage;
          assert.equal(dispatches, Math.ceil(nonEmpty / (limit - 1)), `${nonEmpty} pieces, ${limit} storage buffers`);
          assert.equal(got.dtype, dtype);
          same(await got.data(), await expected(ps), dtype);
          tf.dispose([got, ...ps.map(([x]) => x)]);
        }
        // A piece longer than its program's threads (1,024 workgroups of 256): they loop.
        const long = tf.randomNormal([600_000], 0, 1, 'float32', 3);
        const short = tf.randomNormal([5], 0, 1, 'float32', 4);
        const both: Piece[] = [
          [short, 1, 3],
          [long, 7, 599_990],
        ];
        const got = gather(both);
        same(await got.data(), await expected(both), 'a long piece');
        const counter = new KernelCounter().install(tf);
        const whole = gather([[long, 0, long.size]]);
        assert.equal(counter.takeAll().dispatches, 0);
        counter.uninstall();
        assert.equal(whole.dataId, long.dataId);
        assert.throws(() => gather([[short, 3, 3]]), /values 3 to 6 of a tensor of 5/);
        assert.equal(gather([[short, 2, 0]]).size, 0);
        tf.dispose([long, short, got, whole]);
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    "a captured step whose gather writes one output from several programs replays the eager step's " +
      'values bit for bit',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      const { gather } = await import('../../src/core/backend/programs/slices.js');
      try {
        // 20 gradients made inside the step from its input: two gather programs write the flat vector.
        const ws = Array.from({ length: 20 }, (_, i) =>
          tf.variable(tf.randomNormal([8 + i, 16], 0, 0.1, 'float32', i)),
        );
        const step = (x: tfCore.Tensor) => () =>
          tf.tidy(() => {
            const { grads } = tf.variableGrads(
              // (Added in a chain: tfjs's addN of 20 binds 21 storage buffers, past the device's 16.)
              () =>
                ws
                  .map((w) => tf.sum(tf.square(tf.matMul(w, x as tfCore.Tensor2D))))
                  .reduce((a, b) => tf.add(a, b)) as tfCore.Scalar,
              ws,
            );
            const flat = gather(ws.map((w, i): Piece => [grads[w.name], i % 3, w.size - (i % 3)]));
            return [tf.mul(flat, 2)];
          });
        const xs = [1, 2, 3].map((s) => tf.randomNormal([16, 4], 0, 1, 'float32', 50 + s));
        const eager = await Promise.all(xs.map(async (x) => Array.from(await step(x)()[0].data())));
        const first = recordStep(tf, [xs[0]], step(xs[0]));
        const second = recordStep(tf, [xs[1]], step(xs[1]));
        assert.equal(second.recording.refused, null);
        const gathers = second.recording.programs.filter((p) => p.shaderKey.startsWith('xtts_gather_'));
        assert.equal(gathers.length, 2, 'two programs write the flat gradient');
        assert.equal(gathers[0].roles[0], gathers[1].roles[0], 'both into the one output');
        const capture = StepCapture.build(tf, second.recording);
        for (const [i, x] of xs.entries()) {
          const [out] = capture.replay([x]);
          same(await out.data(), eager[i], `replay of step ${i}`);
        }
        capture.dispose();
        tf.dispose([...first.outputs, ...second.outputs]);
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    "AdamW's flat gradient and exchange buckets through gather: the concatenation's values, " + 'bit for bit',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const { AdamW } = await import('../../src/core/training/optim/adamw.js');
        const { trainingConfig } = await import('./model-fixtures.js');
        const params = new Map(
          Array.from({ length: 18 }, (_, i) => [
            `p${i}`,
            tf.variable(tf.randomNormal(i % 2 ? [30 + i] : [20, 10 + i], 0, 1, 'float32', i)),
          ]),
        );
        const opt = new AdamW(params, trainingConfig({}));
        const grads: tfCore.NamedTensorMap = {};
        // Variable 5's gradient is missing (the loss did not reach it): zeros.
        for (const [i, v] of opt.variables.entries())
          if (i !== 5) grads[v.name] = tf.randomNormal(v.shape, 0, 1, 'float32', 100 + i);
        const want = opt.variables.flatMap((v) =>
          grads[v.name] ? Array.from(grads[v.name].dataSync()) : new Array<number>(v.size).fill(0),
        );
        const flat = opt.flatten(grads);
        same(await flat.data(), want, 'the flat gradient');
        // Buckets of 1,000 values cut variables in two; together they are the flat gradient.
        const buckets = opt.exchangeBuckets(grads, 1000);
        assert.equal(buckets.length, Math.ceil(opt.parameterCount / 1000));
        const joined = (await Promise.all(buckets.map((b) => b.data()))).flatMap((d) => Array.from(d));
        same(joined, want, 'the buckets');
        tf.dispose([flat, ...buckets, ...Object.values(grads)]);
        opt.dispose();
      } finally {
        disposeBackend(tf);
      }
    },
  );
});
