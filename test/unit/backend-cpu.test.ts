// The cpu backend's replaced layout kernels (src/core/backend/cpu.ts) give the stock tfjs kernels'
// results to the bit: the same slices, splits, transposes, broadcast binary ops (float32 arithmetic in loops of
// their own) and softmaxes, drawn at random over ranks 1–5 and dtypes, with NaN, ±Infinity and -0 among the values.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initBackend } from '../../src/core/backend/index.js';
import { CPU_BINARY_KERNELS, stockCpuKernel } from '../../src/core/backend/cpu.js';
import { mulberry32 } from '../../src/core/data/buckets.js';

type Tf = Awaited<ReturnType<typeof initBackend>>['tf'];
type T = import('@tensorflow/tfjs-core').Tensor;

const random = mulberry32(20261202);
const int = (n: number) => Math.floor(random() * n);
const SPECIAL = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0, 1e30, -1e-30];

function values(n: number, dtype: string): number[] {
  return Array.from({ length: n }, () => {
    if (dtype === 'bool') return int(2);
    if (dtype === 'int32') return int(2001) - 1000;
    return random() < 0.05 ? SPECIAL[int(SPECIAL.length)] : (random() - 0.5) * 10 ** (int(7) - 3);
  });
}

function tensor(tf: Tf, shape: number[], dtype = 'float32'): T {
  const size = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(values(size, dtype), shape, dtype as 'float32');
}

/** Bytes of every output of kernel `name` run through the registry and through the stock function. */
function both(tf: Tf, name: string, inputs: Record<string, T>, attrs: Record<string, unknown>) {
  const stock = stockCpuKernel(tf, name)!;
  const mine = tf.getKernel(name, 'cpu')!.kernelFunc;
  assert.notEqual(mine, stock, `${name} is replaced`);
  const backend = tf.backend();
  const run = (f: typeof stock) => {
    const out = f({ inputs, backend, attrs } as never) as unknown as { dataId: object; shape: number[]; dtype: string };
    const outs = Array.isArray(out) ? out : [out];
    return outs.map((o) => {
      const t = tf.engine().makeTensorFromTensorInfo(o as never);
      const data = t.dataSync() as Float32Array;
      const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      const r = { shape: t.shape, dtype: t.dtype, hex: bytes.toString('hex') };
      t.dispose();
      return r;
    });
  };
  return { mine: run(mine), stock: run(stock) };
}

function check(tf: Tf, name: string, inputs: Record<string, T>, attrs: Record<string, unknown> = {}) {
  const { mine, stock } = both(tf, name, inputs, attrs);
  const shapes = Object.values(inputs).map((t) => [t.shape, t.dtype]);
  const what = `${name} ${JSON.stringify(shapes)} ${JSON.stringify(attrs)}`;
  assert.deepEqual(mine, stock, what);
}

const shapeOf = (rank: number) => Array.from({ length: rank }, () => 1 + int(5));

test('Slice: every begin and size over ranks 1–5, float32, int32 and bool, equals the stock kernel', async () => {
  const { tf } = await initBackend('cpu');
  for (let n = 0; n < 300; n++) {
    const shape = shapeOf(1 + int(5));
    const x = tensor(tf, shape, ['float32', 'int32', 'bool'][int(3)]);
    const begin = shape.map((d) => int(d));
    const size = shape.map((d, i) => 1 + int(d - begin[i]));
    check(tf, 'Slice', { x }, { begin, size });
    x.dispose();
  }
});

test('SplitV: along every axis, equals the stock kernel', async () => {
  const { tf } = await initBackend('cpu');
  for (let n = 0; n < 150; n++) {
    const shape = shapeOf(1 + int(5));
    const axis = int(shape.length);
    shape[axis] += 2;
    const x = tensor(tf, shape, ['float32', 'int32'][int(2)]);
    const first = 1 + int(shape[axis] - 1);
    check(tf, 'SplitV', { x }, { numOrSizeSplits: [first, shape[axis] - first], axis });
    x.dispose();
  }
});

test('Transpose: every permutation of ranks 1–5 equals the stock kernel', async () => {
  const { tf } = await initBackend('cpu');
  for (let n = 0; n < 200; n++) {
    const shape = shapeOf(1 + int(5));
    const perm = shape.map((_, i) => i);
    for (let i = perm.length - 1; i > 0; i--) {
      const j = int(i + 1);
      [perm[i], perm[j]] = [perm[j], perm[i]];
    }
    const x = tensor(tf, shape, ['float32', 'int32', 'bool'][int(3)]);
    check(tf, 'Transpose', { x }, { perm });
    x.dispose();
  }
});

test('binary ops broadcast over size-1 axes and missing leading axes equal the stock kernels', async () => {
  const { tf } = await initBackend('cpu');
  const logical = new Set(['LogicalAnd', 'LogicalOr']);
  for (const name of CPU_BINARY_KERNELS) {
    for (let n = 0; n < 25; n++) {
      const out = shapeOf(1 + int(4));
      // Each operand: some leading axes dropped, some kept axes set to 1.
      const operand = () => out.slice(int(out.length + 1)).map((d) => (random() < 0.4 ? 1 : d));
      const dtype = logical.has(name) ? 'bool' : name === 'FloorDiv' || name === 'Mod' ? 'int32' : 'float32';
      const a = tensor(tf, operand(), dtype);
      const b = tensor(tf, operand(), dtype);
      check(tf, name, { a, b });
      tf.dispose([a, b]);
    }
  }
});

test('float32 Add, Sub, Multiply, RealDiv in own loops: full, suffix, suffix first, scalar operands', async () => {
  const { tf } = await initBackend('cpu');
  const pairs = [
    [
      [3, 4],
      [3, 4],
    ],
    [[2, 3, 4], [4]],
    [[4], [2, 3, 4]],
    [[3, 4], []],
    [[], [3, 4]],
    [
      [5, 1],
      [5, 6],
    ],
  ];
  for (const name of ['Add', 'Sub', 'Multiply', 'RealDiv'])
    for (const [sa, sb] of pairs) {
      const [a, b] = [tensor(tf, sa), tensor(tf, sb)];
      check(tf, name, { a, b });
      tf.dispose([a, b]);
    }
});

test('Softmax: rows with NaN, ±Infinity, one element, and large values equal the stock kernel', async () => {
  const { tf } = await initBackend('cpu');
  for (let n = 0; n < 100; n++) {
    const logits = tensor(tf, shapeOf(1 + int(4)));
    check(tf, 'Softmax', { logits }, { dim: -1 });
    logits.dispose();
  }
});

test('BatchMatMul and _FusedMatMul: every transpose, broadcast batches, edge tiles, several k blocks', async () => {
  const { tf } = await initBackend('cpu');
  const activations = [undefined, 'linear', 'relu', 'elu', 'relu6', 'leakyrelu', 'sigmoid', 'prelu'];
  for (let n = 0; n < 120; n++) {
    const [m, k, cols] = [1 + int(9), 1 + int(int(2) ? 9 : 130), 1 + int(9)];
    const [ta, tb] = [random() < 0.5, random() < 0.5];
    const batches = [[], [1], [3], [2, 2]][int(4)];
    const other = batches.length === 1 && random() < 0.5 ? [batches[0] === 1 ? 3 : 1] : batches;
    const a = tensor(tf, [...batches, ...(ta ? [k, m] : [m, k])]);
    const b = tensor(tf, [...other, ...(tb ? [cols, k] : [k, cols])]);
    check(tf, 'BatchMatMul', { a, b }, { transposeA: ta, transposeB: tb });
    const activation = activations[int(activations.length)];
    const bias = random() < 0.7 ? tensor(tf, [cols]) : undefined;
    const alpha = activation === 'prelu' ? tensor(tf, [cols]) : undefined;
    const attrs = { transposeA: ta, transposeB: tb, activation, leakyreluAlpha: 0.2 };
    check(
      tf,
      '_FusedMatMul',
      { a, b, ...(bias ? { bias } : {}), ...(alpha ? { preluActivationWeights: alpha } : {}) },
      attrs,
    );
    tf.dispose([a, b, ...(bias ? [bias] : []), ...(alpha ? [alpha] : [])]);
  }
});
