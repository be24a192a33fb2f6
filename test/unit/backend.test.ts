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
