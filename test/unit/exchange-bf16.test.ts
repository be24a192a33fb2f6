// The bfloat16 gradient exchange (device.gradient_exchange: bfloat16): the host's rounding against
// values worked by hand (ties to even, NaN, infinities, overflow), and on the software WebGPU device the
// packing and sum programs against it: every replica's gradient rounded, packed two a word and added in
// rank order gives the bits of the host's rounded float32 values added in that order — odd lengths, and
// more than 4 Mi values (a dispatch grid past 65,535 workgroups) included.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { disposeBackend, initBackend, switchGpuPrograms } from '../../src/core/backend/index.js';
import { bf16ExchangeOnDevice, packBf16, roundBf16, sumPackedBf16 } from '../../src/core/backend/programs/index.js';
import { mulberry32 } from '../../src/core/data/buckets.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';

const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));
const fromBits = (b: number[]) => new Float32Array(Uint32Array.from(b).buffer);

test('roundBf16: to nearest, ties to even; NaN stays NaN, infinities stay, overflow becomes infinity', () => {
  const input = fromBits([
    0x3f800000, // 1: exact
    0x3f808000, // a tie, even below: stays 0x3f80
    0x3f818000, // a tie, odd below: up to 0x3f82
    0x3f808001, // above the tie: up
    0x3f807fff, // below the tie: down
    0xbf818000, // negative tie, odd: away from zero in magnitude
    0x7f800000, // +Inf
    0xff800000, // -Inf
    0x7f7fffff, // the largest float32: rounds to +Inf
    0x7f800001, // a signalling NaN: a quiet NaN
    0x00000000,
    0x80000000, // -0
  ]);
  assert.deepEqual(
    bits(roundBf16(input)).map((b) => b.toString(16)),
    [
      0x3f800000, 0x3f800000, 0x3f820000, 0x3f810000, 0x3f800000, 0xbf820000, 0x7f800000, 0xff800000, 0x7f800000,
      0x7fc00000, 0, 0x80000000,
    ].map((b) => b.toString(16)),
  );
  const x = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 10 ** ((i % 9) - 4));
  const r = roundBf16(x.slice());
  for (let i = 0; i < x.length; i++) {
    assert.equal(bits(r.subarray(i, i + 1))[0] & 0xffff, 0);
    assert.ok(Math.abs(r[i] - x[i]) <= Math.abs(x[i]) * 2 ** -8, `value ${i}: ${x[i]} -> ${r[i]}`);
  }
});

describe('bfloat16 exchange programs on a real WebGPU device', { skip: withoutLlvmpipe }, () => {
  test('pack and rank-order sum give the bits of the host rounding and float32 adds', async () => {
    const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
    try {
      assert.ok(bf16ExchangeOnDevice());
      const random = mulberry32(7);
      for (const [n, world] of [
        [7, 2],
        [1001, 3],
        [(1 << 22) + 4097, 2],
      ]) {
        const grads = Array.from({ length: world }, () =>
          Float32Array.from({ length: n }, (_, i) => (random() - 0.5) * 10 ** ((i % 7) - 3)),
        );
        grads[0][1] = Number.NaN;
        grads[world - 1][2] = Number.POSITIVE_INFINITY;
        const packed = grads.map((g) => packBf16(tf.tensor1d(g)));
        assert.equal(packed[0].size, Math.ceil(n / 2));
        assert.equal(packed[0].dtype, 'int32');
        // The packed words are the rounded values' high halves, two a word.
        const words = new Uint32Array(((await packed[0].data()) as Int32Array).buffer);
        const rounded = grads.map((g) => roundBf16(g.slice()));
        const own = new Uint32Array(rounded[0].buffer);
        for (const j of [0, 1, Math.floor(n / 4), words.length - 1]) {
          assert.equal(words[j] & 0xffff, own[2 * j] >>> 16, `word ${j} low`);
          assert.equal(words[j] >>> 16, 2 * j + 1 < n ? own[2 * j + 1] >>> 16 : 0, `word ${j} high`);
        }
        const sum = (await sumPackedBf16(packed, n).data()) as Float32Array;
        // The host's: the rounded values added in rank order, one float32 add at a time.
        const expected = rounded[0].slice();
        for (let r = 1; r < world; r++)
          for (let i = 0; i < n; i++) expected[i] = Math.fround(expected[i] + rounded[r][i]);
        assert.equal(sum.length, n);
        const differ = bits(sum).findIndex((b, i) => b !== bits(expected.subarray(i, i + 1))[0]);
        assert.equal(differ, -1, `n ${n}, value ${differ}: ${sum[differ]} against ${expected[differ]}`);
        tf.dispose(packed);
      }
      switchGpuPrograms(tf, 'exchange', false);
      assert.equal(bf16ExchangeOnDevice(), false);
      switchGpuPrograms(tf, 'exchange', true);
    } finally {
      disposeBackend(tf);
    }
  });
});
