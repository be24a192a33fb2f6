// HostTransfers on the software WebGPU device: ranges of a tensor fetched into host arrays (several slots
// under way at once) and host ranges, from shared memory too, written into a tensor at their offsets;
// the slots' buffers reused from round to round; int32 words moved bit for bit; ranges that do not fit refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { disposeBackend, HostTransfers, initBackend } from '../../src/core/backend/index.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';

describe('host transfers on a real WebGPU device', { skip: withoutLlvmpipe }, () => {
  test('fetch and take ranges, write ranges at offsets, slots reused; bad ranges refused', async () => {
    const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
    try {
      const t = new HostTransfers(tf, 4);
      for (let round = 0; round < 2; round++) {
        const values = Float32Array.from({ length: 10 }, (_, i) => i * 1.5 + round);
        // Made on the device (a program), as a gradient is.
        const x = tf.mul(tf.tensor1d(values), 1) as import('@tensorflow/tfjs-core').Tensor1D;
        const fetches = [0, 4, 8].map((offset, k) => t.fetch(x, offset, Math.min(4, 10 - offset), k));
        const back = new Float32Array(10);
        for (const [k, offset] of [0, 4, 8].entries()) {
          await fetches[k];
          t.take(k, back.subarray(offset, Math.min(offset + 4, 10)));
        }
        assert.deepEqual(Array.from(back), Array.from(values));

        const shared = new Float32Array(new SharedArrayBuffer(40));
        shared.set(values.map((v) => -v));
        const y = t.empty(10);
        await Promise.all([0, 4, 8].map((o, k) => t.write(y, o, shared.subarray(o, Math.min(o + 4, 10)), k)));
        // The source may be written again at once: the device copied it.
        shared.fill(7);
        assert.deepEqual(Array.from(await y.data()), Array.from(values.map((v) => -v)));
        tf.dispose([x, y]);
      }
      assert.equal(t.bytes, 6 * 4 * 4);
      const z = tf.zeros([10]);
      await assert.rejects(t.fetch(z, 8, 4, 0), /range \[8, 12\) of 10 values does not fit/);
      await assert.rejects(t.write(z, 0, new Float32Array(5), 0), /does not fit a slot of 4/);
      await assert.rejects(t.fetch(tf.zeros([4], 'bool'), 0, 4, 0), /4-byte values, not bool/);
      // int32 words (packed bfloat16 pairs) move bit for bit, NaN patterns through float32 views included.
      const words = Int32Array.from([0x7fc1ffff, -1, 0x7f800001, 12345]);
      const w = tf.add(tf.tensor1d(words, 'int32'), tf.zeros([4], 'int32')) as import('@tensorflow/tfjs-core').Tensor1D;
      await t.fetch(w, 0, 4, 0);
      const slot = new Float32Array(new SharedArrayBuffer(16));
      t.take(0, slot);
      assert.deepEqual(Array.from(new Int32Array(slot.buffer)), Array.from(words));
      const v = t.empty(4, 'int32');
      await t.write(v, 0, slot, 0);
      assert.deepEqual(Array.from(await v.data()), Array.from(words));
      tf.dispose([z, w, v]);
      t.dispose();
    } finally {
      disposeBackend(tf);
    }
  });
});
