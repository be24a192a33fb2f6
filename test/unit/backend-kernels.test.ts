// The kernel counter counts exactly what reaches the backend, and nothing once removed; device
// timing reports what it can on each backend.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  initBackend,
  KernelCounter,
  mergeProgramTimes,
  type ProgramTime,
  programTimes,
  timeOnDevice,
} from '../../src/core/backend/index.js';
import { topKernels } from '../../src/core/profile/index.js';
import { namedProgram } from '../../src/core/backend/kernels.js';
import '../../src/core/model/gradients.js';

test('counts a known op sequence exactly, by name on request, and stops when uninstalled', async () => {
  const { tf } = await initBackend('cpu');
  const counter = new KernelCounter({ byName: true }).install(tf);
  const a = tf.tensor2d([
    [1, 2],
    [3, 4],
  ]); // creating a tensor runs no kernel
  assert.equal(counter.count, 0);
  const out = tf.tidy(() => tf.add(tf.matMul(a, a), tf.relu(a))); // BatchMatMul, Relu, Add
  await out.data(); // reading back runs none
  tf.dispose(out);
  tf.mul(a, a);
  tf.mul(a, a);
  assert.deepEqual(counter.takeAll(), {
    kernels: 5,
    dispatches: 0,
    byName: { Multiply: 2, BatchMatMul: 1, Relu: 1, Add: 1 },
  });
  assert.equal(counter.take(), 0);
  counter.uninstall();
  tf.add(a, a);
  assert.equal(counter.take(), 0);
});

test('installing twice does not count twice; a second counter counts alongside the first', async () => {
  const { tf } = await initBackend('cpu');
  const first = new KernelCounter().install(tf);
  first.install(tf);
  const second = new KernelCounter().install(tf);
  const a = tf.scalar(2);
  tf.square(a);
  tf.exp(a);
  assert.equal(first.take(), 2);
  assert.equal(second.take(), 2);
  second.uninstall();
  first.uninstall();
  tf.exp(a);
  assert.equal(first.take() + second.take(), 0);
});

test('the count of a dense-layer training step, on cpu and wasm alike', async () => {
  // One step of y = relu(x·W + b), loss = mean(y²), and its gradients: the number must not depend on the backend.
  await import('../../src/core/model/gradients.js');
  const counts: number[] = [];
  for (const backend of ['cpu', 'wasm'] as const) {
    const { tf } = await initBackend(backend);
    const x = tf.ones([4, 8]);
    const w = tf.variable(tf.fill([8, 3], 0.1));
    const b = tf.variable(tf.zeros([3]));
    const counter = new KernelCounter().install(tf);
    const { value, grads } = tf.variableGrads(
      () => tf.mean(tf.square(tf.relu(tf.add(tf.matMul(x, w), b)))) as import('@tensorflow/tfjs-core').Scalar,
    );
    counts.push(counter.take());
    counter.uninstall();
    assert.ok(Math.abs((await value.data())[0] - 0.64) < 1e-6); // (8 * 0.1)²
    assert.deepEqual(Object.keys(grads).length, 2);
    tf.dispose([x, w, b, value, ...Object.values(grads)]);
  }
  assert.equal(counts[0], counts[1]);
  assert.ok(counts[0] > 5, `forward alone is 5 kernels; with the backward pass it was ${counts[0]}`);
});

test('CPU backends have no device time: timeOnDevice says so, and still runs the step', async () => {
  for (const backend of ['cpu', 'wasm'] as const) {
    const { tf } = await initBackend(backend);
    const a = tf.ones([64, 64]);
    let c: ReturnType<typeof tf.matMul> | undefined;
    const t = await timeOnDevice(tf, () => void (c = tf.matMul(a, a)));
    assert.equal(t.available, false);
    if (!t.available) assert.match(t.reason, new RegExp(`the ${backend} backend computes inside each kernel call`));
    assert.equal((await c!.data())[0], 64, 'the step ran');
    tf.dispose([a, c!]);
  }
});

test(
  'model FLOPs: 2·M·N·K per matmul (transposed and batched too), ' +
    '2·outputs·kernel·channels per convolution and each of its gradients; nothing ' +
    'for elementwise work',
  async () => {
    const { tf } = await initBackend('cpu');
    const counter = new KernelCounter({ flops: true }).install(tf);
    try {
      const run = (f: () => unknown) => {
        counter.take();
        tf.dispose(tf.tidy(f as () => import('@tensorflow/tfjs-core').Tensor));
        return counter.flops;
      };
      assert.equal(
        run(() => tf.matMul(tf.ones([3, 4]), tf.ones([4, 5]))),
        2 * 3 * 5 * 4,
      );
      assert.equal(
        run(() => tf.matMul(tf.ones([4, 3]), tf.ones([5, 4]), true, true)),
        2 * 3 * 5 * 4,
      );
      assert.equal(
        run(() => tf.matMul(tf.ones([2, 3, 4]), tf.ones([2, 4, 5]))),
        2 * 2 * 3 * 5 * 4,
      );
      assert.equal(
        run(() => tf.relu(tf.add(tf.ones([100, 100]), tf.ones([100, 100])))),
        0,
      );
      // conv1d [1, 10, 3] with a [3, 3, 4] filter, 'same': 10 outputs × 4 channels × 3 taps × 3 inputs, ×2.
      const conv = 2 * 10 * 4 * 3 * 3;
      assert.equal(
        run(() =>
          tf.conv1d(
            tf.ones([1, 10, 3]) as import('@tensorflow/tfjs-core').Tensor3D,
            tf.ones([3, 3, 4]) as import('@tensorflow/tfjs-core').Tensor3D,
            1,
            'same',
          ),
        ),
        conv,
      );
      const x = tf.ones([1, 10, 3]) as import('@tensorflow/tfjs-core').Tensor3D;
      const w = tf.ones([3, 3, 4]) as import('@tensorflow/tfjs-core').Tensor3D;
      // Forward, then the gradients for the input and for the filter: three times the forward.
      assert.equal(
        run(() => tf.grads((a, b) => tf.sum(tf.conv1d(a as typeof x, b as typeof w, 1, 'same')))([x, w])),
        3 * conv,
      );
      tf.dispose([x, w]);
    } finally {
      counter.uninstall();
    }
  },
);

test(
  "device time per program and shape: each timed dispatch's shape (output ← " +
    "inputs) in tfjs's order; merged over timed steps; the largest pairs first; none " +
    'where the counts disagree',
  async () => {
    // A webgpu backend as tfjs-backend-webgpu 4.22 behaves for timeOnDevice: tf.time runs the step,
    // whose programs go through backend.runWebGPUProgram (an empty output short-circuits, untimed),
    // and names each timed program with its time in dispatch order.
    const timedNames: string[] = [];
    const backend = {
      supportTimestampQuery: true,
      runWebGPUProgram(program: { name: string; outputShape: number[] }) {
        if (program.outputShape.includes(0)) return null;
        timedNames.push(program.name);
        return null;
      },
    };
    const times: Record<string, number> = { Wide: 2, Sum: 0.5 };
    const fake = {
      getBackend: () => 'webgpu',
      backend: () => backend,
      time: async (f: () => void) => {
        timedNames.length = 0;
        f();
        return {
          kernelMs: timedNames.reduce((a, n) => a + times[n], 0),
          wallMs: 1,
          getExtraProfileInfo: () => timedNames.map((n) => `${n}: ${times[n]}`).join(', '),
        };
      },
    };
    const run = (b: typeof backend) => {
      b.runWebGPUProgram({ name: 'Wide', outputShape: [64, 32] }, [{ shape: [64, 16] }, { shape: [16, 32] }] as never);
      b.runWebGPUProgram({ name: 'Wide', outputShape: [8, 32] }, [{ shape: [8, 16] }, { shape: [16, 32] }] as never);
      b.runWebGPUProgram({ name: 'Sum', outputShape: [0] }, [{ shape: [0, 4] }] as never);
      b.runWebGPUProgram({ name: 'Wide', outputShape: [64, 32] }, [{ shape: [64, 16] }, { shape: [16, 32] }] as never);
      b.runWebGPUProgram({ name: 'Sum', outputShape: [] }, [
        { shape: [4] },
        { shape: [4] },
        { shape: [4] },
        { shape: [4] },
      ] as never);
    };
    const original = backend.runWebGPUProgram;
    const t = await timeOnDevice(fake as never, () => run(backend));
    assert.ok(t.available);
    assert.equal(backend.runWebGPUProgram, original, "the backend's own method is back");
    const programs = (t as { programs: ProgramTime[] }).programs;
    assert.deepEqual(programs, [
      {
        name: 'Wide',
        ms: 6,
        count: 3,
        shapes: [
          { shape: '64×32 ← 64×16, 16×32', ms: 4, count: 2 },
          { shape: '8×32 ← 8×16, 16×32', ms: 2, count: 1 },
        ],
      },
      { name: 'Sum', ms: 0.5, count: 1, shapes: [{ shape: 'scalar ← 4, 4, 4, … (4 inputs)', ms: 0.5, count: 1 }] },
    ]);
    // A second timed step merges in, per program and per shape.
    const merged = new Map<string, ProgramTime>();
    mergeProgramTimes(merged, programs);
    mergeProgramTimes(merged, programs);
    assert.deepEqual(merged.get('Wide'), {
      name: 'Wide',
      ms: 12,
      count: 6,
      shapes: [
        { shape: '64×32 ← 64×16, 16×32', ms: 8, count: 4 },
        { shape: '8×32 ← 8×16, 16×32', ms: 4, count: 2 },
      ],
    });
    // A step without shapes (its labels did not match) leaves the program's time without them.
    const partly = new Map<string, ProgramTime>();
    mergeProgramTimes(partly, programs);
    mergeProgramTimes(partly, programTimes('Wide: 1'));
    mergeProgramTimes(partly, programs);
    assert.deepEqual(partly.get('Wide'), { name: 'Wide', ms: 13, count: 7 });
    assert.deepEqual(
      topKernels([...merged.values()], null, 2).map((x) => [x.name, x.shape, x.ms]),
      [
        ['Wide', '64×32 ← 64×16, 16×32', 8],
        ['Wide', '8×32 ← 8×16, 16×32', 4],
      ],
    );
    // Labels that do not match the timed programs one for one are not guessed at: names only.
    assert.deepEqual(programTimes('Wide: 1, Sum: 2', ['a ← b']), [
      { name: 'Sum', ms: 2, count: 1 },
      { name: 'Wide', ms: 1, count: 1 },
    ]);
    // Without shapes a program counts whole.
    assert.deepEqual(
      topKernels(programTimes('Wide: 1'), null, 5).map((x) => [x.name, x.shape, x.ms]),
      [['Wide', null, 1]],
    );
  },
);

test(
  'device time per program kind: tfjs-backend-webgpu\'s "name: ms, …" summed by ' +
    'name, largest first; xtts programs carry their own names',
  () => {
    assert.deepEqual(
      programTimes(
        'MatMulPackedProgram: 1.5, BinaryOpProgram: 0.25, MatMulPackedProgram: 2, ' +
          'XttsSpreadSumProgram: 0.5, UnaryOpProgram: 0.25',
      ),
      [
        { name: 'MatMulPackedProgram', ms: 3.5, count: 2 },
        { name: 'XttsSpreadSumProgram', ms: 0.5, count: 1 },
        { name: 'BinaryOpProgram', ms: 0.25, count: 1 },
        { name: 'UnaryOpProgram', ms: 0.25, count: 1 },
      ],
    );
    assert.deepEqual(programTimes(''), []);
    assert.deepEqual(programTimes(undefined), []);
    // A malformed entry is skipped, not counted as NaN.
    assert.deepEqual(programTimes('A: x, B: 1'), [{ name: 'B', ms: 1, count: 1 }]);
    const p = namedProgram('XttsExampleProgram', { shaderKey: 'k', dispatch: [1, 1, 1] });
    assert.equal(p.constructor.name, 'XttsExampleProgram');
    assert.deepEqual({ ...p }, { shaderKey: 'k', dispatch: [1, 1, 1] });
  },
);
