// The f16 tensor-core matmul's WGSL through Dawn's own shader compiler (Tint), on Dawn's null
// backend: it validates every shader as a GPU's device would, but computes nothing, and it offers
// shader-f16, subgroups and subgroup matrices while stating neither a subgroup width nor a matrix
// shape. The adapter's description here says 32-wide subgroups and 16×16×16 f16→f32 matrices (an
// H100's), so that the backend builds the f16 program; what runs it on a GPU is bench/matmul.bench.ts.
// The null device offers 16 KiB of workgroup memory, less than any tile of the program uses: Dawn then
// refuses the pipeline after the shader compiled, which is the one error these tests allow (and, for a
// program whose pipeline tfjs took from its cache, that pipeline's being invalid since).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as TfTypes from '@tensorflow/tfjs-core';
import {
  DEFAULT_F16_TUNING,
  disposeBackend,
  type F16Tuning,
  gpuProgramSelection,
  parseF16Tuning,
  selectGpuPrograms,
} from '../../src/core/backend/index.js';
import { denseBackward } from '../../src/core/backend/programs/dense-layer.js';
import { registerWebgpuBackend, selectAdapter, takeGpuError } from '../../src/core/backend/webgpu.js';
import '../../src/core/model/gradients.js';

const STORAGE_LIMIT = new RegExp(
  '^(The total use of workgroup storage \\(\\d+ bytes\\) is larger than the maximum allowed' +
    '|\\[Invalid ComputePipeline "Xtts(Strided)?SubgroupMatMul(Pair)?Program"\\] is invalid due to a previous error)',
);

/** Dawn's null device with the f16 program selected, the shader sources compiled collected in `sources`. */
async function nullTensorCores(sources: string[]): Promise<typeof TfTypes> {
  const { tf, refused } = await registerNull();
  assert.equal(refused, undefined);
  const device = (tf.backend() as unknown as { device: { createShaderModule(d: { code: string }): unknown } }).device;
  const create = device.createShaderModule.bind(device);
  device.createShaderModule = (d: { code: string }) => (sources.push(d.code), create(d));
  return tf;
}

/** The webgpu backend registered on Dawn's null device as one with tensor cores, for mixed_fp16. */
async function registerNull(): Promise<{ tf: typeof TfTypes; refused: string | undefined }> {
  const tf = await import('@tensorflow/tfjs-core');
  const selection = await selectAdapter(null, { dawnBackend: 'null', unsafeApis: true });
  assert.ok(selection.ok, 'Dawn offers its null adapter');
  const description = {
    ...selection.description,
    subgroupSizes: { min: 32, max: 32 },
    subgroupMatrixConfigs: [{ componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 }],
  };
  const refused = await registerWebgpuBackend(tf, { ...selection, description } as never, 'tfjs', 'mixed_fp16');
  return { tf, refused };
}

/** The first error the device reported since the last look, unless it is the null device's workgroup-memory limit. */
function shaderError(): string | undefined {
  const error = takeGpuError();
  return error === undefined || STORAGE_LIMIT.test(error) ? undefined : error;
}

const TUNINGS: Partial<F16Tuning>[] = [
  { vector: false, prefetch: false, buffers: 1, direct: false },
  { vector: true, prefetch: false, buffers: 1, direct: false },
  { vector: true, prefetch: true, buffers: 1, direct: true },
  { vector: true, prefetch: true, buffers: 2, direct: true },
  { vector: true, prefetch: true, buffers: 1, slab: 64, direct: true },
  { vector: true, prefetch: true, buffers: 2, direct: true, subgroups: 4 },
  { vector: false, prefetch: false, buffers: 1, direct: false, subgroups: 4 },
];

// m × n × k, A and B transposed: 64- and 128-wide tiles, every transpose, a K split into parts, sides
// that are and are not multiples of 4 (vec4 or scalar loads) and of the tile (edge tiles).
const SHAPES: [number, number, number, boolean, boolean][] = [
  [1024, 2048, 512, false, false],
  [4096, 1024, 512, true, false],
  [4100, 1020, 2044, false, true],
  [512, 2048, 4096, true, false],
  [1001, 998, 303, true, true],
  [1000, 999, 301, false, false],
];

test("every build of the f16 program passes Dawn's shader compiler: tunings, transposes, tiles, loads", async () => {
  const sources: string[] = [];
  const tf = await nullTensorCores(sources);
  // Each shape's operands; B a float32 tensor whose buffer holds int32 values (tfjs casts int32 to float32
  // without a copy, and declares the binding by the buffer's type), as the training step's one-hot products have.
  const operands = SHAPES.map(([m, n, k, tA, tB]) => [
    tf.zeros(tA ? [k, m] : [m, k]),
    tf.tidy(() => tf.cast(tf.zeros(tB ? [n, k] : [k, n], 'int32'), 'float32')),
  ]);
  try {
    for (const tuning of TUNINGS) {
      selectGpuPrograms(tf, { f16Tuning: { ...DEFAULT_F16_TUNING, ...tuning } });
      for (const [i, [m, n, k, tA, tB]] of SHAPES.entries()) {
        const c = tf.matMul(operands[i][0], operands[i][1], tA, tB);
        await c.data();
        c.dispose();
        assert.equal(shaderError(), undefined, `${JSON.stringify(tuning)} on ${m}×${n}×${k} tA ${tA} tB ${tB}`);
      }
      // A dense layer's backward: dx and dW in one paired dispatch.
      const [x, w, dz] = [tf.zeros([4096, 512]), tf.zeros([512, 1024]), tf.zeros([4096, 1024])];
      const grads = denseBackward(dz, x, w, { kind: 'plain' });
      await Promise.all(grads.map((g) => g.data()));
      tf.dispose([x, w, dz, ...grads]);
      assert.equal(shaderError(), undefined, `${JSON.stringify(tuning)}: the paired dense backward`);
    }
    const f16 = sources.filter((s) => s.includes('subgroupMatrixMultiplyAccumulate'));
    // Vec4 bindings where the tuning asks and the contiguous side allows; stores straight into the output.
    assert.ok(f16.some((s) => /var<storage, read> A\s*: array<vec4<f32>>/.test(s)));
    assert.ok(f16.some((s) => /var<storage, read> A\s*: array<f32>/.test(s)));
    assert.ok(f16.some((s) => /var<storage, read> B\s*: array<vec4<i32>>/.test(s)));
    assert.ok(f16.some((s) => s.includes('subgroupMatrixStore<row_major>(&result')));
    assert.ok(f16.some((s) => s.includes('subgroupMatrixStore<row_major>(&second')));
  } finally {
    tf.dispose(operands.flat());
    selectGpuPrograms(tf, { f16Tuning: DEFAULT_F16_TUNING });
    disposeBackend(tf);
  }
});

test('a shader error is not mistaken for the null device’s workgroup-memory limit', async () => {
  const sources: string[] = [];
  const tf = await nullTensorCores(sources);
  try {
    const device = (tf.backend() as unknown as { device: { createShaderModule(d: { code: string }): unknown } }).device;
    device.createShaderModule({ code: '@compute @workgroup_size(1) fn main() { let x = undeclared; }' });
    assert.match(shaderError() ?? '', /unresolved value 'undeclared'/);
  } finally {
    disposeBackend(tf);
  }
});

test('a build of the f16 program from KEY:VALUE pairs over the default; anything else is refused by name', () => {
  assert.deepEqual(parseF16Tuning('vector:1+prefetch:1+buffers:2+subgroups:4+maxParts:3'), {
    ...DEFAULT_F16_TUNING,
    vector: true,
    prefetch: true,
    buffers: 2,
    subgroups: 4,
    maxParts: 3,
  });
  assert.deepEqual(parseF16Tuning(''), DEFAULT_F16_TUNING);
  for (const bad of ['vectr:1', 'slab:48', 'buffers:3', 'direct:yes', 'maxParts:0', 'subgroups'])
    assert.throws(
      () => parseF16Tuning(bad, '--tunings x'),
      new RegExp(`^Error: --tunings x: "${bad}" is not KEY:VALUE`),
    );
});

test('XTTS_F16_TUNING builds the f16 program of a whole run (bench switch); a bad one refuses webgpu', async () => {
  const saved = process.env.XTTS_F16_TUNING;
  try {
    process.env.XTTS_F16_TUNING = 'vector:1+direct:1';
    const { tf, refused } = await registerNull();
    assert.equal(refused, undefined);
    assert.deepEqual(gpuProgramSelection().f16Tuning, { ...DEFAULT_F16_TUNING, vector: true, direct: true });
    disposeBackend(tf);
    process.env.XTTS_F16_TUNING = 'prefetch:2';
    const bad = await registerNull();
    assert.match(bad.refused ?? '', /^XTTS_F16_TUNING: "prefetch:2" is not KEY:VALUE.*; unset XTTS_F16_TUNING/);
    disposeBackend(bad.tf);
  } finally {
    if (saved === undefined) delete process.env.XTTS_F16_TUNING;
    else process.env.XTTS_F16_TUNING = saved;
    selectGpuPrograms((await import('@tensorflow/tfjs-core')) as never, { f16Tuning: DEFAULT_F16_TUNING });
  }
});

test("two copies of the slabs only where they fit the device's workgroup memory (its tile index counted)", async () => {
  const tf = await import('@tensorflow/tfjs-core');
  const { matMulDims } = await import('../../src/core/backend/programs/matmul.js');
  const { subgroupMatMul } = await import('../../src/core/backend/programs/matmul-f16.js');
  const info = (shape: number[]) => ({ dataId: {}, shape, dtype: 'float32' as const });
  const declared = (limit: number) => {
    const codes: string[] = [];
    const backend = {
      device: { limits: { maxComputeWorkgroupStorageSize: limit } },
      runWebGPUProgram: (program: { outputShape: number[]; getUserCode(): string }) => (
        codes.push(program.getUserCode()), info(program.outputShape)
      ),
      disposeData: () => {},
    };
    // 12,032 × 512 over K 2,048, B transposed: 128-wide tiles, A's and B's slabs 128 × 40 f16 each.
    const [a, b] = [info([12032, 2048]), info([512, 2048])];
    const d = matMulDims(a.shape, b.shape, false, true);
    subgroupMatMul({ a, b, d, transposeA: false, transposeB: true } as never, backend as never);
    return codes[0].match(/var<workgroup> As : array<f16, (\d+)>/)?.[1];
  };
  const previous = selectGpuPrograms(tf, {
    matmul: 'f16',
    subgroupShape: { M: 16, N: 16, K: 16 },
    f16Tuning: { ...DEFAULT_F16_TUNING, vector: true, prefetch: true, buffers: 2 },
  });
  try {
    // Two copies: 2 · 2 · (5,120 + 5,120) bytes of slabs, 8,192 of staging and 16 of the index = 49,168.
    assert.equal(declared(49168), '10240');
    assert.equal(declared(49152), '5120', 'one copy where 49,168 bytes would not fit');
  } finally {
    selectGpuPrograms(tf, previous);
  }
});

interface ScopedDevice {
  pushErrorScope(filter: string): void;
  popErrorScope(): Promise<{ message: string } | null>;
  createShaderModule(d: { code: string; label?: string }): unknown;
}

test(
  "the attention's strided products on the tensor cores pass Dawn's shader compiler; attention:0 keeps them " + 'out',
  async () => {
    const sources: string[] = [];
    const tf = await nullTensorCores(sources);
    const { attendPacked } = await import('../../src/core/backend/programs/attention.js');
    type PackedHeads = Parameters<typeof attendPacked>[0];
    const [batch, heads, dh] = [2, 2, 16];
    const width = heads * dh;
    // A self-attention's packed projection, a cross-attention's queries and packed keys and values, learned queries
    // shared by the batch; lengths a multiple of 4 (vec4 loads) and not (scalar loads, edge tiles).
    const attend = (tq: number, tk: number) => {
      const bias = tf.zeros([batch, 1, 1, tk]);
      const self = tf.zeros([batch * tq, 3 * width]);
      const [q, kv, learned] = [
        tf.zeros([batch * tq, width]),
        tf.zeros([batch * tk, 2 * width]),
        tf.zeros([tq, width]),
      ];
      // The gradients of the projections `xs` of an attention whose q, k and v `parts` picks from them.
      const grads = (xs: TfTypes.Tensor[], parts: (x: TfTypes.Tensor2D[]) => PackedHeads[], keyBias: TfTypes.Tensor) =>
        tf.grads((...ys: TfTypes.Tensor[]) => {
          const [qh, kh, vh] = parts(ys as TfTypes.Tensor2D[]);
          return tf.sum(attendPacked(qh, kh, vh, batch, heads, dh, keyBias));
        })(xs);
      const keysValues = (x: TfTypes.Tensor2D) => [
        { x, column: 0, steps: tk },
        { x, column: width, steps: tk },
      ];
      const run = () =>
        tf.tidy(() => [
          ...grads(
            [self],
            ([x]) => [0, width, 2 * width].map((column) => ({ x, column, steps: tq })),
            tf.zeros([batch, 1, 1, tq]),
          ),
          ...grads([q, kv], ([a, b]) => [{ x: a, column: 0, steps: tq }, ...keysValues(b)], bias),
          ...grads([learned, kv], ([a, b]) => [{ x: a, column: 0, steps: tq, shared: true }, ...keysValues(b)], bias),
        ]);
      return { run, inputs: [bias, self, q, kv, learned] };
    };
    const strided = () =>
      sources.filter((s) => s.includes('aOrigin') && s.includes('subgroupMatrixMultiplyAccumulate'));
    try {
      for (const [tq, tk] of [
        [40, 24],
        [37, 19],
      ]) {
        const { run, inputs } = attend(tq, tk);
        const grads = run();
        await Promise.all(grads.map((g) => g.data()));
        tf.dispose([...grads, ...inputs]);
        assert.equal(shaderError(), undefined, `attention over ${tq} queries and ${tk} keys`);
      }
      const f16 = strided();
      // Each compiled again in an error scope of its own: a compile error cannot hide behind a pipeline that the
      // null device refused for its workgroup memory.
      const device = (tf.backend() as unknown as { device: ScopedDevice }).device;
      for (const code of new Set(f16)) {
        device.pushErrorScope('validation');
        device.createShaderModule({ code, label: 'XttsStridedSubgroupMatMulProgram' });
        assert.equal((await device.popErrorScope())?.message, undefined);
      }
      // Forward (scores, context) and backward (the weights' gradient, each projection's parts) programs.
      assert.ok(f16.length >= 6, `${f16.length} strided f16 programs`);
      assert.ok(f16.some((s) => /var<storage, read> x0\s*: array<vec4<f32>>/.test(s)));
      assert.ok(f16.some((s) => /var<storage, read> x0\s*: array<f32>/.test(s)));
      // Three products of one dispatch: a self-attention's dq, dk and dv.
      assert.ok(f16.some((s) => s.includes('fn product2(')));
      selectGpuPrograms(tf, { f16Tuning: { ...DEFAULT_F16_TUNING, attention: false } });
      sources.length = 0;
      const { run, inputs } = attend(36, 20);
      const grads = run();
      await Promise.all(grads.map((g) => g.data()));
      tf.dispose([...grads, ...inputs]);
      assert.equal(shaderError(), undefined);
      assert.equal(strided().length, 0, 'attention:0 keeps the strided products in the wide float32 program');
      assert.ok(sources.length > 0);
    } finally {
      selectGpuPrograms(tf, { f16Tuning: DEFAULT_F16_TUNING });
      disposeBackend(tf);
    }
  },
);

test(
  "the attention's strided programs state their FLOPs, which their shapes do not tell, for the " + 'profiler',
  async () => {
    const tf = await import('@tensorflow/tfjs-core');
    const { stridedMatMuls, stridedSubgroupMatMuls } = await import('../../src/core/backend/programs/matmul.js');
    const { dispatchShape } = await import('../../src/core/backend/kernels.js');
    const { topKernels } = await import('../../src/core/profile/top-kernels.js');
    const info = (shape: number[]) => ({ dataId: {}, shape, dtype: 'float32' as const });
    const flops: number[] = [];
    const backend = {
      device: { limits: { maxComputeWorkgroupStorageSize: 49152 } },
      runWebGPUProgram: (program: { outputShape: number[]; flops?: number }) => (
        flops.push(program.flops ?? 0), info(program.outputShape)
      ),
    };
    // A self-attention's scores, 32 × 8 heads of 188 × 188 over 64, from its packed [6016, 1536] projection.
    const x = info([6016, 1536]);
    const d = { batch: 32, heads: 8, m: 188, n: 188, k: 64 };
    const product = {
      a: 0,
      av: { offset: 0, sb: 188 * 1536, sh: 64, si: 1536, sj: 1 },
      b: 0,
      bv: { offset: 512, sb: 188 * 1536, sh: 64, si: 1, sj: 1536 },
      ov: { offset: 0, sb: 8 * 188 * 188, sh: 188 * 188, si: 188, sj: 1 },
    };
    const previous = selectGpuPrograms(tf, {
      matmul: 'f16',
      subgroupShape: { M: 16, N: 16, K: 16 },
      f16Tuning: DEFAULT_F16_TUNING,
    });
    try {
      stridedMatMuls(backend as never, [x] as never, [product], [32, 8, 188, 188], d);
      stridedSubgroupMatMuls(backend as never, [x] as never, [product], [32, 8, 188, 188], d);
    } finally {
      selectGpuPrograms(tf, previous);
    }
    assert.deepEqual(flops, [2 * 188 * 188 * 64 * 256, 2 * 188 * 188 * 64 * 256]);
    const shape = dispatchShape([32, 8, 188, 188], [x, x], flops[1]);
    assert.equal(shape, '32×8×188×188 ← 6016×1536, 6016×1536 (1158152192 FLOP)');
    // 0.05 ms a dispatch: 23.2 TFLOP/s in the profile's table.
    const [top] = topKernels(
      [{ name: 'XttsStridedSubgroupMatMulProgram', ms: 0.05, count: 1, shapes: [{ shape, ms: 0.05, count: 1 }] }],
      989,
      1,
    );
    assert.equal(top.tflops?.toFixed(1), '23.2');
  },
);
