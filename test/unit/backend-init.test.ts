import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initBackend, KernelCounter } from '../../src/core/backend/index.js';

test('auto picks a working backend here and says why the faster ones were passed over', async () => {
  const { tf, choice } = await initBackend('auto');
  assert.ok(['wasm', 'cpu', 'webgpu', 'tensorflow'].includes(choice.backend));
  if (choice.backend !== 'webgpu') assert.match(choice.fallbacks.find((f) => f.backend === 'webgpu')?.reason ?? '', /adapter|Dawn|webgpu/);
  const tfNode = choice.fallbacks.find((f) => f.backend === 'tensorflow');
  if (tfNode) assert.match(tfNode.reason, /libtensorflow.*CUDA 11\.2.*cuDNN 8\.1/);
  // A small matmul runs on it.
  const x = tf.tensor2d([[1, 2], [3, 4]]);
  assert.deepEqual(Array.from(await tf.matMul(x, x).data()), [7, 10, 15, 22]);
});

test('tensorflow is explained, not crashed on, when tfjs-node is absent', async () => {
  await assert.rejects(initBackend('tensorflow'), (e: Error & { code?: string; exitCode?: number }) => e.code === 'BACKEND_UNAVAILABLE' && e.exitCode === 3 && /libtensorflow/.test(e.message));
});

test('the kernel counter counts a known op sequence exactly', async () => {
  const { tf } = await initBackend('cpu');
  const k = new KernelCounter().install(tf);
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  k.take();
  tf.add(tf.matMul(a, a), tf.relu(a));
  assert.equal(k.take(), 3);
  k.uninstall();
  tf.add(a, a);
  assert.equal(k.take(), 0);
});

test('wasm: transposed matmuls (every weight gradient) give the same result through the fast path', async () => {
  const { tf, choice } = await initBackend('wasm');
  assert.equal(choice.backend, 'wasm');
  const a = tf.tensor3d([[[1, 2, 3], [4, 5, 6]]]); // [1, 2, 3]
  const b = tf.tensor3d([[[1, 0], [0, 1], [1, 1]]]); // [1, 3, 2]
  const c = tf.tensor3d([[[1, 2, 3], [0, 1, 0]]]); // [1, 2, 3]
  assert.deepEqual(Array.from(await tf.matMul(a, c, true, false).data()), [1, 6, 3, 2, 9, 6, 3, 12, 9]); // aᵀ·c
  assert.deepEqual(Array.from(await tf.matMul(a, c, false, true).data()), [14, 2, 32, 5]); // a·cᵀ
  assert.deepEqual(Array.from(await tf.matMul(b, a, true, true).data()), [4, 10, 5, 11]); // bᵀ·aᵀ
  assert.deepEqual(Array.from(await tf.matMul(a, b).data()), [4, 5, 10, 11]);
});
