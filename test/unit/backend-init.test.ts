// Backend selection on this machine (no GPU, no libtensorflow): cpu and wasm train (a matmul and its
// gradient), webgpu and tensorflow fail with reasons a user can act on, and auto falls back saying why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findVulkanLoader, initBackend } from '../../src/core/backend/index.js';
// TF.js registers its gradient functions through tfjs-layers (see src/core/model/gradients.ts).
import '../../src/core/model/gradients.js';
import { joinedRegExp } from '../helpers/regexp.js';

type Tf = typeof import('@tensorflow/tfjs-core');

/** sum(relu(x·W)) and its gradients, worked by hand: x·W = [[5,-3],[5,-4]], so relu passes column 0 only. */
async function checkMatmulAndGradient(tf: Tf): Promise<void> {
  const x = tf.tensor2d([
    [1, 2],
    [3, 1],
  ]);
  const w = tf.tensor2d([
    [1, -1],
    [2, -1],
  ]);
  const f = (a: import('@tensorflow/tfjs-core').Tensor, b: import('@tensorflow/tfjs-core').Tensor) =>
    tf.sum(tf.relu(tf.matMul(a as never, b as never)));
  assert.deepEqual(Array.from(await tf.matMul(x, w).data()), [5, -3, 5, -4]);
  const { value, grads } = tf.valueAndGrads(f as never)([x, w]);
  assert.equal((await value.data())[0], 10);
  // d/dx = mask·Wᵀ = [[1,0],[1,0]]·[[1,2],[-1,-1]]; d/dW = xᵀ·mask = [[1,3],[2,1]]·[[1,0],[1,0]].
  assert.deepEqual(Array.from(await grads[0].data()), [1, 2, 1, 2]);
  assert.deepEqual(Array.from(await grads[1].data()), [4, 0, 3, 0]);
}

test('cpu: a matmul and its gradient', async () => {
  const { tf, choice } = await initBackend('cpu');
  assert.equal(choice.backend, 'cpu');
  assert.equal(choice.reason, 'requested');
  assert.equal(tf.getBackend(), 'cpu');
  await checkMatmulAndGradient(tf);
});

test("wasm: a matmul and its gradient, with SIMD, from the package's .wasm files", async () => {
  const { tf, choice } = await initBackend('wasm');
  assert.equal(choice.backend, 'wasm');
  assert.equal(tf.getBackend(), 'wasm');
  assert.deepEqual(choice.wasm, { simd: true, threads: 1 });
  assert.match(choice.reason, /SIMD, 1 thread/);
  await checkMatmulAndGradient(tf);
});

test('wasm: transposed matmuls (every weight gradient) give the same result through the fast path', async () => {
  const { tf } = await initBackend('wasm');
  const a = tf.tensor3d([
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
  ]); // [1, 2, 3]
  const b = tf.tensor3d([
    [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
  ]); // [1, 3, 2]
  const c = tf.tensor3d([
    [
      [1, 2, 3],
      [0, 1, 0],
    ],
  ]); // [1, 2, 3]
  assert.deepEqual(Array.from(await tf.matMul(a, c, true, false).data()), [1, 6, 3, 2, 9, 6, 3, 12, 9]); // aᵀ·c
  assert.deepEqual(Array.from(await tf.matMul(a, c, false, true).data()), [14, 2, 32, 5]); // a·cᵀ
  assert.deepEqual(Array.from(await tf.matMul(b, a, true, true).data()), [4, 10, 5, 11]); // bᵀ·aᵀ
  assert.deepEqual(Array.from(await tf.matMul(a, b).data()), [4, 5, 10, 11]);
  // Initialising twice does not wrap the kernel twice (it would still be right, but slower).
  await initBackend('wasm');
  assert.deepEqual(Array.from(await tf.matMul(a, c, true, false).data()), [1, 6, 3, 2, 9, 6, 3, 12, 9]);
});

test("wasm: slices and splits read the heap, not a copy of the input per slice: the cpu backend's values", async () => {
  const cases: { shape: number[]; begin: number[]; size: number[]; dtype: 'float32' | 'int32' | 'bool' }[] = [
    { shape: [10], begin: [3], size: [4], dtype: 'float32' },
    { shape: [4, 5], begin: [1, 2], size: [2, 3], dtype: 'float32' },
    { shape: [3, 4, 5], begin: [0, 1, 0], size: [3, 2, 5], dtype: 'int32' },
    { shape: [2, 3, 4, 5], begin: [1, 0, 2, 1], size: [1, 3, 2, 4], dtype: 'float32' },
    { shape: [2, 2, 3, 2, 3], begin: [0, 1, 1, 0, 2], size: [2, 1, 2, 2, 1], dtype: 'bool' },
    { shape: [4, 3], begin: [0, 0], size: [0, 3], dtype: 'float32' },
  ];
  const run = async (backend: 'cpu' | 'wasm') => {
    const { tf } = await initBackend(backend);
    const out: unknown[] = [];
    for (const c of cases) {
      const n = c.shape.reduce((a, b) => a * b, 1);
      const x = tf.tensor(
        Array.from({ length: n }, (_, i) => (c.dtype === 'bool' ? i % 3 === 0 : i * 1.5 - 7)),
        c.shape,
        c.dtype,
      );
      out.push(Array.from(await tf.slice(x, c.begin, c.size).data()), tf.slice(x, c.begin, c.size).shape);
      if (c.shape.length > 0 && n > 0) {
        const axis = c.shape.length - 1;
        const last = c.shape[axis];
        const pieces = tf.split(x, [1, last - 1], axis);
        for (const p of pieces) out.push(Array.from(await p.data()), p.shape);
      }
    }
    // Allocations between the slices of a split grow the heap (64 MiB of pieces): each is read from a fresh view.
    const big = tf.range(0, 1 << 24, 1, 'float32');
    const pieces = tf.split(big, 8);
    const sums = await Promise.all(pieces.map(async (p) => Array.from((await p.data()).subarray(0, 3))));
    tf.dispose([big, ...pieces]);
    out.push(sums);
    out.push(Array.from(await tf.slice(tf.tensor1d(['a', 'b', 'c'], 'string'), [1], [2]).data()));
    return out;
  };
  assert.deepEqual(await run('wasm'), await run('cpu'));
});

const noVulkan = findVulkanLoader()
  ? 'this machine has a Vulkan loader; the no-loader message is not what it would print'
  : false;

test('webgpu here: refused with the no-adapter reason, naming the Vulkan loader and what to install', {
  skip: noVulkan,
}, async () => {
  await assert.rejects(
    initBackend('webgpu'),
    (e: Error & { code?: string; exitCode?: number; suggestions?: string[] }) => {
      assert.equal(e.code, 'BACKEND_UNAVAILABLE');
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /^backend webgpu is not available here: Dawn found no GPU adapter/);
      assert.match(e.message, /Vulkan loader \(libvulkan\.so\.1\) is not installed/);
      assert.match(e.message, /apt-get install libvulkan1/);
      assert.match(e.message, /setup\.sh/);
      assert.ok(e.suggestions?.some((s) => s.includes('diagnose-gpu-utilization')));
      return true;
    },
  );
});

test('tensorflow: explained, not crashed on, when tfjs-node is absent', async () => {
  await assert.rejects(
    initBackend('tensorflow'),
    (e: Error & { code?: string; exitCode?: number; suggestions?: string[] }) => {
      assert.equal(e.code, 'BACKEND_UNAVAILABLE');
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /neither @tensorflow\/tfjs-node-gpu nor @tensorflow\/tfjs-node is installed/);
      assert.match(e.message, /downloads libtensorflow/);
      assert.match(e.message, /npm install @tensorflow\/tfjs-node-gpu@4\.22\.0.*CUDA 11\.2 \+ cuDNN 8\.1/);
      assert.ok(e.suggestions?.some((s) => s.includes('npm install @tensorflow/tfjs-node-gpu')));
      return true;
    },
  );
});

test(
  'tensorflow with device.model_device set is refused with how to pick its GPU, ' + 'not run on another one',
  async () => {
    await assert.rejects(initBackend('tensorflow', { device: 1 }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'BACKEND_UNAVAILABLE');
      assert.match(
        e.message,
        joinedRegExp(
          /device\.model_device \(1\) picks a WebGPU adapter; the tensorflow /,
          /backend trains on the first GPU CUDA_VISIBLE_DEVICES lists/,
        ),
      );
      return true;
    });
  },
);

test('auto falls back to wasm here and says why webgpu and tensorflow were passed over', {
  skip: noVulkan,
}, async () => {
  const { tf, choice } = await initBackend('auto');
  assert.equal(choice.backend, 'wasm');
  assert.match(choice.reason, /^no GPU backend works here; wasm is the fastest CPU backend/);
  assert.deepEqual(
    choice.fallbacks.map((f) => f.backend),
    ['webgpu', 'tensorflow'],
  );
  assert.match(choice.fallbacks[0].reason, /Dawn found no GPU adapter.*Vulkan/);
  assert.match(choice.fallbacks[1].reason, /libtensorflow/);
  await checkMatmulAndGradient(tf);
});
