// WebGPU through Dawn, on what this machine has: no Vulkan loader (so the default path says why),
// Dawn's null backend (a real adapter that computes nothing: listing, features, selection), and,
// where Mesa's llvmpipe answers on OpenGL ES, a real device that runs TF.js's webgpu kernels.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  disposeBackend,
  findVulkanLoader,
  initBackend,
  KernelCounter,
  listAdapters,
  timeOnDevice,
} from '../../src/core/backend/index.js';
import { type AdapterDescription, subgroupMatrixConfigs, tensorCoreSupport } from '../../src/core/backend/webgpu.js';
import '../../src/core/model/gradients.js';
import { selectGpuPrograms, switchGpuPrograms } from '../../src/core/backend/index.js';

// Mesa picks its EGL platform from the environment when Dawn opens the display; without a window
// system there is only the surfaceless one.
process.env.EGL_PLATFORM ??= 'surfaceless';

test('the default (Vulkan) path lists no adapter here and says the loader is missing', {
  skip: findVulkanLoader() ? 'this machine has a Vulkan loader' : false,
}, async () => {
  const list = await listAdapters();
  assert.equal(list.dawnBackend, 'vulkan');
  assert.deepEqual(list.adapters, []);
  assert.match(list.note ?? '', /Dawn found no GPU adapter: the Vulkan loader \(libvulkan\.so\.1\) is not installed/);
});

test("Dawn's adapter list: name, backend, features and limits; unsafe APIs add subgroup matrices", async () => {
  const plain = await listAdapters({ dawnBackend: 'null' });
  assert.equal(plain.adapters.length, 1);
  const a = plain.adapters[0];
  assert.equal(a.index, 0);
  assert.equal(a.name, 'Null backend');
  assert.equal(a.dawnBackend, 'null');
  assert.equal(a.software, true);
  assert.equal(a.timestampQuery, a.features.includes('timestamp-query'));
  assert.equal(a.shaderF16, a.features.includes('shader-f16'));
  assert.equal(a.subgroupMatrix, false);
  assert.ok(a.limits.maxBufferSize >= 256 * 2 ** 20, `maxBufferSize ${a.limits.maxBufferSize}`);
  assert.ok(a.limits.maxStorageBufferBindingSize >= 128 * 2 ** 20);
  const unsafe = await listAdapters({ dawnBackend: 'null', unsafeApis: true });
  assert.equal(unsafe.adapters[0].subgroupMatrix, true);
  assert.ok(unsafe.adapters[0].features.includes('chromium-experimental-subgroup-matrix'));
});

test('a GPU is chosen by index or by a case-insensitive part of its name, else refused with the list', async () => {
  const opts = { dawnBackend: 'null' };
  await assert.rejects(
    initBackend('webgpu', { ...opts, device: 1 }),
    /there is no GPU 1: Dawn sees 1 adapter\(s\) \(0: Null backend\)/,
  );
  await assert.rejects(
    initBackend('webgpu', { ...opts, device: 'H100' }),
    /no GPU adapter's name contains "H100"; Dawn sees 0: Null backend/,
  );
  for (const device of ['NULL back', 0]) {
    const { tf, choice } = await initBackend('webgpu', { ...opts, device });
    assert.equal(choice.backend, 'webgpu');
    assert.equal(choice.adapter?.name, 'Null backend');
    assert.equal(choice.reason, "requested: Null backend on Dawn's null backend");
    assert.equal(tf.getBackend(), 'webgpu');
    disposeBackend(tf);
    assert.equal(tf.findBackend('webgpu'), null);
  }
});

test('auto passes over an adapter that is not a GPU', async () => {
  const { tf, choice } = await initBackend('auto', { dawnBackend: 'null' });
  assert.equal(choice.backend, 'wasm');
  assert.match(choice.fallbacks[0].reason, /^the WebGPU adapter Dawn offers, Null backend, computes nothing/);
  assert.equal(tf.getBackend(), 'wasm');
});

const gl = await listAdapters({ dawnBackend: 'opengles' });
const llvmpipe = gl.adapters.find((a) => /llvmpipe/.test(a.name));

test('webgpu on a real device (llvmpipe through OpenGL ES): matmul, gradient, programs dispatched', {
  skip: llvmpipe ? false : `no OpenGL ES adapter here (${gl.note ?? gl.adapters.map((a) => a.name).join(', ')})`,
}, async () => {
  assert.equal(llvmpipe?.software, true);
  const { tf, choice } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    assert.equal(choice.backend, 'webgpu');
    assert.equal(choice.adapter?.dawnBackend, 'opengles');
    // Big enough to run on the GPU (TF.js hands inputs under 1,000 elements that never left the CPU to its CPU
    // kernels).
    const n = 40;
    const x = tf.tidy(() =>
      tf.div(tf.reshape(tf.range(0, n * n), [n, n]), n * n),
    ) as import('@tensorflow/tfjs-core').Tensor2D;
    const counter = new KernelCounter().install(tf);
    const y = tf.add(tf.matMul(x, x), tf.relu(x));
    const counted = counter.takeAll();
    assert.deepEqual(counted, { kernels: 3, dispatches: 3 });
    const host = await x.array();
    const got = await y.array();
    let want = 0;
    for (let k = 0; k < n; k++) want += host[3][k] * host[k][5];
    assert.ok(Math.abs(got[3][5] - (want + host[3][5])) < 1e-4, `${got[3][5]} vs ${want + host[3][5]}`);
    const g = tf.grad((w: import('@tensorflow/tfjs-core').Tensor) =>
      tf.sum(tf.matMul(x, w as import('@tensorflow/tfjs-core').Tensor2D)),
    )(tf.ones([n, n]));
    // d/dW sum(x·W) = xᵀ·1: row k of the gradient is the sum of column k of x, in every column.
    const colSum = host.reduce((s, row) => s + row[7], 0);
    const grad = await g.array();
    assert.ok(Math.abs((grad as number[][])[7][2] - colSum) < 1e-3, `${(grad as number[][])[7][2]} vs ${colSum}`);
    assert.ok(counter.count > 0 && counter.dispatches > 0, `${counter.count} kernels, ${counter.dispatches} programs`);
    counter.uninstall();
    const timed = await timeOnDevice(tf, () => void tf.matMul(x, x));
    assert.equal(timed.available, false);
    assert.match((timed as { reason: string }).reason, /no timestamp-query feature/);
  } finally {
    disposeBackend(tf);
  }
});

test(
  'subgroup-matrix configurations are read by field: Dawn keeps them as prototype ' + 'getters, which a spread loses',
  () => {
    class Config {
      get componentType() {
        return 'f16';
      }
      get resultComponentType() {
        return 'f32';
      }
      get M() {
        return 16;
      }
      get N() {
        return 8;
      }
      get K() {
        return 16;
      }
    }
    assert.deepEqual({ ...new Config() }, {}, 'a spread of such an object is empty');
    assert.deepEqual(subgroupMatrixConfigs([new Config()]), [
      { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 16 },
    ]);
    assert.deepEqual(subgroupMatrixConfigs(undefined), []);
  },
);

test(
  'mixed_fp16 takes an adapter with shader-f16, subgroups and an f16→f32 ' +
    'subgroup-matrix shape, the one with the most outputs; else says what is missing',
  () => {
    const h100 = {
      name: 'NVIDIA H100 80GB HBM3',
      dawnBackend: 'vulkan',
      shaderF16: true,
      subgroups: true,
      subgroupSizes: { min: 32, max: 32 },
      subgroupMatrix: true,
      // As Dawn listed them on an H100 with vulkan_enable_f16_on_nvidia (driver 580.159.04).
      subgroupMatrixConfigs: [
        { componentType: 'f16', resultComponentType: 'f16', M: 16, N: 16, K: 16 },
        { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 16 },
        { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 8 },
        { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
        { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 },
      ],
    } as unknown as AdapterDescription;
    assert.deepEqual(tensorCoreSupport(h100), { ok: true, shape: { M: 16, N: 16, K: 16 } });
    // Without the toggle Dawn offers no f16 on NVIDIA, and with it no f16 shapes.
    const noF16 = {
      ...h100,
      shaderF16: false,
      subgroupMatrixConfigs: h100.subgroupMatrixConfigs.filter((c) => c.componentType !== 'f16'),
    };
    const r = tensorCoreSupport(noF16);
    assert.equal(r.ok, false);
    assert.match(
      (r as { reason: string }).reason,
      /NVIDIA H100 80GB HBM3 \(Dawn vulkan\) lacks shader-f16 \(subgroup-matrix shapes offered: i8→i32 16×16×32\)/,
    );
    const intOnly = { ...h100, subgroupMatrixConfigs: noF16.subgroupMatrixConfigs };
    assert.match(
      (tensorCoreSupport(intOnly) as { reason: string }).reason,
      /offers no f16→f32 subgroup-matrix shape this program can tile/,
    );
    // Subgroups of another width (an AMD GPU's 64, or a range) would put the program's subgroups elsewhere.
    assert.match(
      (tensorCoreSupport({ ...h100, subgroupSizes: { min: 32, max: 64 } }) as { reason: string }).reason,
      /lacks subgroups of exactly 32 invocations \(it has 32 to 64\)/,
    );
  },
);

test(
  'the f16 matmul tiles 128×128 where there are enough tiles, and splits K only ' +
    'for a small output over a long K (a weight gradient)',
  async () => {
    const { f16Parts, f16Tile, matMulDims } = await import('../../src/core/backend/programs/matmul.js');
    // A normal step's decoder projection, 12,032 × 2,048 over K 512: 94 × 16 tiles of 128, no split.
    const projection = matMulDims([12032, 512], [512, 2048], false, false);
    assert.equal(f16Tile(projection), 128);
    assert.equal(f16Parts(projection), 1);
    // Its weight gradient, 512 × 2,048 over K 12,032: 16 × 4 tiles of 128 are too few, 8 × 32 of 64
    // still fill an H100 a quarter; K goes in 5 parts (1,056 workgroups), each over 16 slabs or more.
    const weightGrad = matMulDims([12032, 512], [12032, 2048], true, false);
    assert.equal(f16Tile(weightGrad), 64);
    assert.equal(f16Parts(weightGrad), 5);
    // A short K is never split below 512 per part; a batched matmul never.
    assert.equal(f16Parts(matMulDims([600, 64], [600, 64], true, false)), 1);
    assert.equal(f16Parts(matMulDims([2, 4096, 64], [2, 4096, 64], true, false)), 1);
  },
);

test(
  "with mixed_fp16 a dense layer's two backward matmuls share one tensor-core " +
    "dispatch: each product's tiles and parts as the f16 program alone, then only " +
    "the split one's parts added; taken only for float32 matrices the f16 program " +
    'would take',
  async () => {
    const { f16PairTakes, subgroupMatMulPair } = await import('../../src/core/backend/programs/matmul.js');
    const tf = await import('@tensorflow/tfjs-core');
    type Run = {
      program: {
        dispatch: number[];
        variableNames: string[];
        outputShape: number[];
        getUserCode(): string;
        constructor: { name: string };
      };
      inputs: { shape: number[] }[];
      uniforms: { data: number[] }[];
    };
    const runs: Run[] = [];
    const info = (shape: number[]) => ({ dataId: {}, shape, dtype: 'float32' as const });
    const backend = {
      thresholdToIncreaseWorkgroups: 8,
      runWebGPUProgram: (program: Run['program'], inputs: Run['inputs'], _dtype: string, uniforms: Run['uniforms']) => (
        runs.push({ program, inputs, uniforms }), info(program.outputShape)
      ),
      makeTensorInfo: (shape: number[]) => info(shape),
      uploadToGPU: () => {},
      disposeData: () => {},
    };
    // A tiny step's decoder layer: dz [3008, 512], W [128, 512], x [3008, 128].
    const [dz, w, x] = [info([3008, 512]), info([128, 512]), info([3008, 128])];
    const pair = [
      { a: 0, b: 1, transposeA: false, transposeB: true },
      { a: 2, b: 0, transposeA: true, transposeB: false },
    ] as const;
    const operands = [dz, w, x];
    const products = pair.map((q) => ({ ...q, a: operands[q.a], b: operands[q.b] }));
    selectGpuPrograms(tf, { matmul: 'tfjs' });
    assert.equal(f16PairTakes(backend, products), false, 'only with mixed_fp16');
    selectGpuPrograms(tf, { matmul: 'f16', subgroupShape: { M: 16, N: 16, K: 16 } });
    try {
      assert.equal(f16PairTakes(backend, products), true);
      assert.equal(
        f16PairTakes(backend, [products[0], { ...products[1], b: info([8, 4]) }]),
        false,
        'inner dimensions that differ',
      );
      assert.equal(
        f16PairTakes(backend, [products[0], { ...products[1], a: { ...x, dtype: 'int32' as never } }]),
        false,
      );
      // Few output tiles (tfjs's threshold): not the f16 program's, so not the pair's.
      assert.equal(
        f16PairTakes(backend, [
          products[0],
          { a: info([3008, 8]), b: info([3008, 8]), transposeA: true, transposeB: false },
        ]),
        false,
      );
      const [dx, dW] = subgroupMatMulPair(backend as never, operands as never, pair as never);
      assert.deepEqual(
        [dx.shape, dW.shape],
        [
          [3008, 128],
          [128, 512],
        ],
      );
      // dx: 47 × 2 tiles of 64 over K 512 (no split); dW: 2 × 8 tiles over K 3,008 in 5 parts of 608.
      assert.equal(runs.length, 2, "the pair, then the sum of dW's parts");
      const [paired, sum] = runs;
      assert.equal(paired.program.constructor.name, 'XttsSubgroupMatMulPairProgram');
      assert.deepEqual(paired.program.dispatch, [94 + 16 * 5, 1, 1]);
      assert.deepEqual(
        paired.uniforms.map((u) => u.data[0]),
        [3008, 128, 512, 1, 1, 512, 2, 94, 128, 512, 3008, 1, 1, 608, 8, 16, 94],
      );
      assert.deepEqual(
        paired.inputs.map((t) => t.shape),
        [
          [3008, 512],
          [128, 512],
          [3008, 128],
          [5, 128, 512],
        ],
      );
      assert.deepEqual(
        sum.inputs.map((t) => t.shape),
        [[5, 128, 512]],
      );
      // The workgroup index goes through a 16-byte workgroup variable: an i32 there moved the matrix
      // stores' staging area off its 16-byte alignment on an H100 (every value one place off).
      assert.match(paired.program.getUserCode(), /var<workgroup> wgIndex : vec4<i32>;/);
    } finally {
      selectGpuPrograms(tf, { matmul: 'tfjs' });
    }
  },
);

test("the fused layer norm and its gradients on a real device match the host's " +
  'arithmetic (llvmpipe once gave NaN: a stale shared total); two programs ' +
  'backward, the row moments passed from the first to the second as its second ' +
  'output', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { fusedNormalize, fusedNormalizeGrads, LN_EPSILON } = await import(
      '../../src/core/backend/programs/layernorm.js'
    );
    const [rows, cols] = [64, 80];
    const x = tf.randomNormal([rows, cols], 0, 1, 'float32', 1) as import('@tensorflow/tfjs-core').Tensor2D;
    const g = tf.randomNormal([cols], 1, 0.1, 'float32', 2) as import('@tensorflow/tfjs-core').Tensor1D;
    const dy = tf.randomNormal([rows, cols], 0, 1, 'float32', 3) as import('@tensorflow/tfjs-core').Tensor2D;
    const counter = new KernelCounter().install(tf);
    const [dxT, dgT] = fusedNormalizeGrads(x, g, dy);
    assert.equal(counter.takeAll().dispatches, 2, 'dx (and the row moments), then the gain gradient');
    counter.uninstall();
    const [y, dx, dg] = [await fusedNormalize(x, g).data(), await dxT.data(), await dgT.data()];
    const dgHost = new Float64Array(cols);
    const [X, G, D] = [await x.array(), await g.data(), await dy.array()];
    let worst = 0;
    for (let r = 0; r < rows; r++) {
      const mean = X[r].reduce((a, v) => a + v, 0) / cols;
      const inv = 1 / Math.sqrt(X[r].reduce((a, v) => a + (v - mean) ** 2, 0) / cols + LN_EPSILON);
      const xh = X[r].map((v) => (v - mean) * inv);
      const d = D[r].map((v, c) => v * G[c]);
      const a = d.reduce((s, v) => s + v, 0) / cols;
      const b = d.reduce((s, v, c) => s + v * xh[c], 0) / cols;
      for (let c = 0; c < cols; c++) {
        worst = Math.max(
          worst,
          Math.abs(xh[c] * G[c] - y[r * cols + c]),
          Math.abs(inv * (d[c] - a - xh[c] * b) - dx[r * cols + c]),
        );
        dgHost[c] += xh[c] * D[r][c];
      }
    }
    for (let c = 0; c < cols; c++) worst = Math.max(worst, Math.abs(dgHost[c] - dg[c]));
    assert.ok(worst < 1e-4, `largest difference ${worst}`);
    // A second gradient of x (the residual stream's) added in the same program.
    const plus = tf.randomNormal([rows, cols], 0, 1, 'float32', 4) as import('@tensorflow/tfjs-core').Tensor2D;
    const [withPlus, P] = [await fusedNormalizeGrads(x, g, dy, plus)[0].data(), await plus.data()];
    assert.ok(withPlus.every((v, i) => Math.abs(v - (dx[i] + P[i])) < 1e-6));
    // A pre-norm block's norm with the residual beside it: its backward adds the two gradients of x
    // (one program fewer than the norm and the tape's add), the same gradients.
    const { LayerNorm } = await import('../../src/core/model/nn.js');
    const { ParamStore } = await import('../../src/core/model/params.js');
    const ln = new LayerNorm(new ParamStore(1), 'ln', cols);
    const programsAndGrad = (fused: boolean) => {
      const counter = new KernelCounter().install(tf);
      const dxOf = tf.grad((v: import('@tensorflow/tfjs-core').Tensor) => {
        const [n, r] = fused ? Object.values(ln.applyWithResidual(v as never)) : [ln.apply(v as never), v];
        return tf.add(tf.sum(tf.mul(n, dy)), tf.sum(tf.mul(r, plus)));
      })(x);
      const programs = counter.takeAll().dispatches;
      counter.uninstall();
      return { programs, dx: dxOf };
    };
    const [plain, fused] = [programsAndGrad(false), programsAndGrad(true)];
    assert.equal(fused.programs, plain.programs - 1);
    const [a, b] = [await plain.dx.data(), await fused.dx.data()];
    assert.ok(a.every((v, i) => Math.abs(v - b[i]) < 1e-6));
  } finally {
    disposeBackend(tf);
  }
});

test("the attention's fused softmax (one program forward, one backward) on a real " +
  "device gives the composition's context and q, k, v gradients, for key-padding, " +
  'causal and full biases; 8 programs instead of 14', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { attend } = await import('../../src/core/model/attention.js');
    const { broadcastStrides } = await import('../../src/core/backend/programs/softmax.js');
    type T = import('@tensorflow/tfjs-core').Tensor;
    const [B, H, Tq, Tk, dh] = [3, 2, 70, 90, 16];
    const q = tf.randomNormal([B, H, Tq, dh], 0, 1, 'float32', 1) as import('@tensorflow/tfjs-core').Tensor4D;
    const k = tf.randomNormal([B, H, Tk, dh], 0, 1, 'float32', 2) as import('@tensorflow/tfjs-core').Tensor4D;
    const v = tf.randomNormal([B, H, Tk, dh], 0, 1, 'float32', 3) as import('@tensorflow/tfjs-core').Tensor4D;
    const dy = tf.randomNormal([B, H, Tq, dh], 0, 1, 'float32', 4);
    // Key padding (the third utterance keeps only 7 keys), a causal-like [Tq, Tk] pattern, a full bias.
    const lengths = [90, 41, 7];
    const padding = tf.tensor4d(
      lengths.flatMap((n) => Array.from({ length: Tk }, (_, j) => (j < n ? 0 : -1e9))),
      [B, 1, 1, Tk],
    );
    const causal = tf.tensor2d(
      Array.from({ length: Tq * Tk }, (_, i) => (i % Tk <= Math.floor(i / Tk) + 20 ? 0 : -1e9)),
      [Tq, Tk],
    );
    const full = tf.randomNormal([B, H, Tq, Tk], 0, 2, 'float32', 5);
    for (const [name, bias] of [
      ['padding', padding],
      ['causal', causal],
      ['full', full],
    ] as const) {
      const run = (fused: boolean) => {
        switchGpuPrograms(tf, 'softmax', fused);
        const counter = new KernelCounter().install(tf);
        const { value, grads } = tf.valueAndGrads((qq: T, kk: T, vv: T) =>
          tf.sum(tf.mul(attend(qq as never, kk as never, vv as never, bias, false).context, dy)),
        )([q, k, v]);
        const programs = counter.takeAll().dispatches;
        counter.uninstall();
        return { outs: [value, ...grads], programs };
      };
      const fused = run(true);
      const composed = run(false);
      for (const [i, part] of ['loss', 'dq', 'dk', 'dv'].entries()) {
        const [a, b] = [await fused.outs[i].data(), await composed.outs[i].data()];
        let worst = 0;
        for (let j = 0; j < a.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]) / (1 + Math.abs(b[j])));
        assert.ok(worst < 1e-4, `${name} bias, ${part}: largest difference ${worst}`);
      }
      // Forward: the two matmuls and the softmax; backward: four matmuls and the softmax's gradient
      // (the same sum and multiply around them both ways).
      assert.equal(
        composed.programs - fused.programs,
        6,
        `${name}: ${fused.programs} programs fused, ${composed.programs} composed`,
      );
    }
    // More rows than WebGPU's 65,535 workgroups along one dimension: a second dimension of workgroups.
    // (The loop above ended on the composition: the program's kernel is registered only while selected.)
    switchGpuPrograms(tf, 'softmax', true);
    const { fusedScaledSoftmax } = await import('../../src/core/backend/programs/softmax.js');
    // (Against the host: tfjs's own softmax got the last value of such a tensor wrong.)
    const many = tf.randomNormal([2, 1, 40_000, 5], 0, 1, 'float32', 6) as import('@tensorflow/tfjs-core').Tensor4D;
    const [got, x] = [await fusedScaledSoftmax(many, tf.zeros([5]), 0.5).data(), await many.data()];
    let worstRow = 0;
    for (let r = 0; r < 80_000; r++) {
      const e = Array.from(x.subarray(r * 5, r * 5 + 5), (value) => Math.exp(value * 0.5));
      const total = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j < 5; j++) worstRow = Math.max(worstRow, Math.abs(e[j] / total - got[r * 5 + j]));
    }
    assert.ok(worstRow < 1e-6, `rows past the first 65,535: largest difference ${worstRow}`);
    assert.deepEqual(broadcastStrides([B, 1, 1, Tk], [B, H, Tq, Tk]), [Tk, 0, 0, 1]);
    assert.deepEqual(broadcastStrides([Tq, Tk], [B, H, Tq, Tk]), [0, 0, Tk, 1]);
    assert.throws(() => broadcastStrides([2, Tk], [B, H, Tq, Tk]), /does not broadcast/);
  } finally {
    switchGpuPrograms(tf, 'softmax', true);
    disposeBackend(tf);
  }
});

test('attention reading its heads in place (strided batched matmuls) gives the ' +
  "composition's context and projection gradients: self-attention over one packed " +
  'q·k·v projection, cross-attention over packed keys and values, queries shared ' +
  "by the batch; a projection's parts' gradients in one program; fewer programs", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });

  try {
    const { attend, mergeHeads, splitHeads } = await import('../../src/core/model/attention.js');
    const { attendPacked } = await import('../../src/core/backend/programs/attention.js');
    type T = import('@tensorflow/tfjs-core').Tensor;
    type T2 = import('@tensorflow/tfjs-core').Tensor2D;
    // Edges that are no multiple of a 64-wide tile, a head size that is no multiple of a slab.
    const [B, H, dh, Tq, Tk] = [3, 2, 12, 70, 37];
    const D = H * dh;
    const lengths = [37, 20, 5];
    const padding = tf.tensor4d(
      lengths.flatMap((n) => Array.from({ length: Tk }, (_, j) => (j < n ? 0 : -1e9))),
      [B, 1, 1, Tk],
    );
    const selfBias = tf.tensor4d(
      lengths.flatMap((n) => Array.from({ length: Tk }, (_, j) => (j < n ? 0 : -1e9))),
      [B, 1, 1, Tk],
    );
    const cases: {
      name: string;
      inputs: T[];
      dy: T;
      packed: (xs: T2[]) => T;
      composed: (xs: T2[]) => T;
      saved: number;
    }[] = [
      {
        name: 'self-attention, one [B·T, 3D] projection',
        inputs: [tf.randomNormal([B * Tk, 3 * D], 0, 1, 'float32', 1)],
        dy: tf.randomNormal([B * Tk, D], 0, 1, 'float32', 2),
        packed: ([qkv]) =>
          attendPacked(
            { x: qkv, column: 0, steps: Tk },
            { x: qkv, column: D, steps: Tk },
            { x: qkv, column: 2 * D, steps: Tk },
            B,
            H,
            dh,
            selfBias,
          ),
        composed: ([qkv]) => {
          const [q, k, v] = splitHeads(qkv, B, Tk, 3, H);
          return mergeHeads(attend(q, k, v, selfBias, false).context);
        },
        // Forward a transpose, three slices and the context's transpose; backward the context's
        // transpose, a concatenation and a transpose, and two of the three products (dq, dk and dv
        // in one program).
        saved: 10,
      },
      {
        name: 'cross-attention, queries [B·Tq, D], keys and values one [B·Tk, 2D]',
        inputs: [
          tf.randomNormal([B * Tq, D], 0, 1, 'float32', 3),
          tf.randomNormal([B * Tk, 2 * D], 0, 1, 'float32', 4),
        ],
        dy: tf.randomNormal([B * Tq, D], 0, 1, 'float32', 5),
        packed: ([q, kv]) =>
          attendPacked(
            { x: q, column: 0, steps: Tq },
            { x: kv, column: 0, steps: Tk },
            { x: kv, column: D, steps: Tk },
            B,
            H,
            dh,
            padding,
          ),
        composed: ([qx, kv]) => {
          const [q] = splitHeads(qx, B, Tq, 1, H);
          const [k, v] = splitHeads(kv, B, Tk, 2, H);
          return mergeHeads(attend(q, k, v, padding, false).context);
        },
        // Forward three transposes and two slices; backward three transposes, a concatenation and
        // one product (dk and dv in one program).
        saved: 10,
      },
      {
        name: 'learned queries [Tq, D] shared by the batch',
        inputs: [tf.randomNormal([Tq, D], 0, 1, 'float32', 6), tf.randomNormal([B * Tk, 2 * D], 0, 1, 'float32', 7)],
        dy: tf.randomNormal([B * Tq, D], 0, 1, 'float32', 8),
        packed: ([q, kv]) =>
          attendPacked(
            { x: q, column: 0, steps: Tq, shared: true },
            { x: kv, column: 0, steps: Tk },
            { x: kv, column: D, steps: Tk },
            B,
            H,
            dh,
            padding,
          ),
        composed: ([qx, kv]) => {
          const [k, v] = splitHeads(kv, B, Tk, 2, H);
          const q = tf.add(
            tf.transpose(tf.reshape(qx, [Tq, H, dh]), [1, 0, 2]),
            tf.zeros([B, 1, 1, 1]),
          ) as import('@tensorflow/tfjs-core').Tensor4D;
          return mergeHeads(attend(q, k, v, padding, false).context);
        },
        // As above, and the broadcast over the batch (an add forward; backward its sum stays).
        saved: 11,
      },
    ];
    for (const c of cases) {
      const run = (f: (xs: T2[]) => T) => {
        const counter = new KernelCounter().install(tf);
        const { value, grads } = tf.valueAndGrads((...xs: T[]) => tf.sum(tf.mul(f(xs as T2[]), c.dy)))(c.inputs);
        const programs = counter.takeAll().dispatches;
        counter.uninstall();
        return { outs: [value, ...grads], programs };
      };
      const packed = run(c.packed);
      const composed = run(c.composed);
      for (let i = 0; i < packed.outs.length; i++) {
        assert.deepEqual(packed.outs[i].shape, composed.outs[i].shape, `${c.name}, output ${i}`);
        const [a, b] = [await packed.outs[i].data(), await composed.outs[i].data()];
        let worst = 0;
        for (let j = 0; j < a.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]) / (1 + Math.abs(b[j])));
        assert.ok(worst < 1e-4, `${c.name}, ${i === 0 ? 'loss' : `gradient ${i}`}: largest difference ${worst}`);
      }
      assert.equal(
        composed.programs - packed.programs,
        c.saved,
        `${c.name}: ${packed.programs} programs in place, ${composed.programs} composed`,
      );
    }
    // A projection whose parts leave a gap is refused.
    const x = tf.zeros([B * Tk, 3 * D]) as T2;
    assert.throws(
      () =>
        attendPacked(
          { x, column: 0, steps: Tk },
          { x, column: 2 * D, steps: Tk },
          { x, column: 2 * D, steps: Tk },
          B,
          H,
          dh,
          selfBias,
        ),
      /do not cover its columns/,
    );
    switchGpuPrograms(tf, 'packed-attention', false);
    const { packedAttentionAvailable } = await import('../../src/core/backend/programs/attention.js');
    assert.equal(packedAttentionAvailable(), false);
  } finally {
    switchGpuPrograms(tf, 'packed-attention', true);
    disposeBackend(tf);
  }
});

test("the attention's strided products run in the wide program: 64×64 tiles where " +
  '128×128 ones would cover far more than the output (188 × 64 per head), 128×128 ' +
  "where those fill the device and cover no more; the host's float64 products", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { STRIDED_MATMUL_KERNEL } = await import('../../src/core/backend/programs/attention.js');
    const { stridedSide } = await import('../../src/core/backend/programs/matmul.js');
    assert.equal(stridedSide({ batch: 32, heads: 8, m: 188, n: 64, k: 188 }, 1), 64);
    assert.equal(stridedSide({ batch: 32, heads: 8, m: 188, n: 188, k: 64 }, 1), 64);
    assert.equal(stridedSide({ batch: 32, heads: 8, m: 80, n: 80, k: 64 }, 1), 128);
    assert.equal(stridedSide({ batch: 1, heads: 8, m: 256, n: 256, k: 64 }, 1), 64, 'too few 128×128 tiles');
    // Scores q·kᵀ of heads in place in [B·T, H·dh] projections, into [B, H, Tq, Tk].
    const cases = [
      { B: 4, H: 16, Tq: 256, Tk: 256, dh: 9, side: 128 },
      { B: 2, H: 3, Tq: 188, Tk: 64, dh: 37, side: 64 },
    ];
    for (const { B, H, Tq, Tk, dh, side } of cases) {
      assert.equal(stridedSide({ batch: B, heads: H, m: Tq, n: Tk, k: dh }, 1), side);
      const q = tf.randomNormal([B * Tq, H * dh], 0, 1, 'float32', 31);
      const k = tf.randomNormal([B * Tk, H * dh], 0, 1, 'float32', 32);
      const D = H * dh;
      const products = [[0, [0, Tq * D, dh, D, 1], 1, [0, Tk * D, dh, 1, D], [0, H * Tq * Tk, Tq * Tk, Tk, 1]]];
      const out = tf.engine().runKernel(STRIDED_MATMUL_KERNEL, { x0: q, x1: k }, {
        products,
        outShape: [B, H, Tq, Tk],
        dims: [B, H, Tq, Tk, dh],
      } as never) as import('@tensorflow/tfjs-core').Tensor;
      const [Q, K, O] = [await q.data(), await k.data(), await out.data()];
      let worst = 0;
      for (let n = 0; n < 500; n++) {
        const [b, h, i, j] = [n % B, (n * 7) % H, (n * 13) % Tq, (n * 29) % Tk];
        let want = 0;
        for (let d = 0; d < dh; d++) want += Q[(b * Tq + i) * D + h * dh + d] * K[(b * Tk + j) * D + h * dh + d];
        worst = Math.max(worst, Math.abs(O[((b * H + h) * Tq + i) * Tk + j] - want) / (1 + Math.abs(want)));
      }
      assert.ok(worst < 1e-5, `${Tq} × ${Tk} over ${dh}: largest difference ${worst}`);
      const keys = Object.keys((tf.backend() as unknown as { pipelineCache: Record<string, unknown> }).pipelineCache);
      assert.ok(
        keys.some((key) => key.startsWith(`xtts_matmul_wide8_strided_2_0k1k_${side}`)),
        `the ${side}×${side} tiles ran`,
      );
    }
  } finally {
    disposeBackend(tf);
  }
});

test('the masked mel losses (l1, l2, l1_l2) in 2 programs forward and 1 backward give ' +
  "the composition's loss and prediction gradient; masked frames get none", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { maskedMelLoss } = await import('../../src/core/model/losses.js');

    type T3 = import('@tensorflow/tfjs-core').Tensor3D;
    const [B, T, M] = [3, 50, 20];
    const pred = tf.randomNormal([B, T, M], 0, 1, 'float32', 1) as T3;
    const target = tf.randomNormal([B, T, M], 0, 1, 'float32', 2) as T3;
    const lengths = [50, 31, 0];
    const mask = tf.tensor3d(
      lengths.flatMap((n) => Array.from({ length: T }, (_, t) => (t < n ? 1 : 0))),
      [B, T, 1],
    );
    const denominator = tf.scalar((50 + 31) * M);
    for (const kind of ['l1', 'l2', 'l1_l2'] as const) {
      const run = (fused: boolean) => {
        switchGpuPrograms(tf, 'losses', fused);
        const counter = new KernelCounter().install(tf);
        const loss = maskedMelLoss(pred, target, mask, kind, denominator);
        const forward = counter.takeAll().dispatches;
        const grad = tf.grad((p: import('@tensorflow/tfjs-core').Tensor) =>
          maskedMelLoss(p as T3, target, mask, kind, denominator),
        )(pred);
        const all = counter.takeAll().dispatches;
        counter.uninstall();
        return { loss, grad, forward, all };
      };
      const [plain, fused] = [run(false), run(true)];
      switchGpuPrograms(tf, 'losses', true);
      assert.equal(fused.forward, 2, kind);
      assert.equal(fused.all, 3, kind);
      assert.ok(plain.all >= 8, `${kind}: the composition ran ${plain.all} programs`);
      const [a, b] = [(await plain.loss.data())[0], (await fused.loss.data())[0]];
      assert.ok(Math.abs(a - b) <= 1e-6 * Math.abs(a), `${kind}: ${a} vs ${b}`);
      const [ga, gb] = [await plain.grad.data(), await fused.grad.data()];
      assert.ok(
        ga.every((v, i) => Math.abs(v - gb[i]) <= 1e-9),
        `${kind}: gradients differ`,
      );
      // The third utterance has no real frames, the second 31 of 50.
      assert.ok(gb.slice(2 * T * M).every((v) => v === 0));
      assert.ok(gb.slice(T * M + 31 * M, 2 * T * M).every((v) => v === 0));
      assert.ok(gb.slice(0, T * M).every((v) => v !== 0));
    }
  } finally {
    disposeBackend(tf);
  }
});

test("the duration loss in 1 program forward and 1 backward gives the composition's " +
  "loss and gradient, with this batch's spoken tokens or a given count; unspoken " +
  'tokens get none', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { durationLoss } = await import('../../src/core/model/losses.js');

    type T2 = import('@tensorflow/tfjs-core').Tensor2D;
    const [B, T] = [5, 300];
    const logDurations = tf.randomNormal([B, T], 1, 1, 'float32', 1) as T2;
    // Whole steps per token, 0 for the tokens past an utterance's text (and every token of a filler).
    const durations = tf.tensor2d(
      Array.from({ length: B * T }, (_, i) => (i % T < [300, 120, 7, 0, 250][Math.floor(i / T)] ? i % 9 : 0)),
      [B, T],
    ) as T2;
    for (const given of [undefined, tf.scalar(2000)]) {
      const run = (fused: boolean) => {
        switchGpuPrograms(tf, 'losses', fused);
        const counter = new KernelCounter().install(tf);
        const loss = durationLoss(logDurations, durations, given);
        const forward = counter.takeAll().dispatches;
        const grad = tf.grad((l: import('@tensorflow/tfjs-core').Tensor) => durationLoss(l as T2, durations, given))(
          logDurations,
        );
        const all = counter.takeAll().dispatches;
        counter.uninstall();
        return { loss, grad, forward, all };
      };
      const [plain, fused] = [run(false), run(true)];
      switchGpuPrograms(tf, 'losses', true);
      assert.equal(fused.forward, 1);
      assert.equal(fused.all, 2);
      assert.ok(plain.all >= 8, `the composition ran ${plain.all} programs`);
      const [a, b] = [(await plain.loss.data())[0], (await fused.loss.data())[0]];
      assert.ok(Math.abs(a - b) <= 1e-6 * Math.abs(a), `${a} vs ${b}`);
      const [ga, gb, d] = [await plain.grad.data(), await fused.grad.data(), await durations.data()];
      assert.ok(
        ga.every((v, i) => Math.abs(v - gb[i]) <= 1e-9),
        'gradients differ',
      );
      assert.ok(gb.every((v, i) => (d[i] > 0 ? v !== 0 : v === 0)));
    }
  } finally {
    disposeBackend(tf);
  }
});

test('the key-padding and cross-attention biases in one program each: the ' +
  "composition's values bit for bit (+0 where a key may be read), an alignment " +
  'past the text included', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { keyPaddingBias, MASK_BIAS } = await import('../../src/core/model/nn.js');
    const { crossAttentionBias } = await import('../../src/core/backend/programs/masks.js');
    const lengths = tf.tensor1d([7, 0, 12, 3], 'int32');
    const run = (fused: boolean) => {
      switchGpuPrograms(tf, 'masks', fused);
      const counter = new KernelCounter().install(tf);
      const bias = keyPaddingBias(lengths, 12);
      const programs = counter.takeAll().dispatches;
      counter.uninstall();
      return { bias, programs };
    };
    const [plain, fused] = [run(false), run(true)];
    assert.equal(fused.programs, 1);
    assert.deepEqual(fused.bias.shape, [4, 1, 1, 12]);
    const [a, b] = [await plain.bias.data(), await fused.bias.data()];
    assert.ok(
      b.every((v, i) => Object.is(v, a[i])),
      'bit for bit, signed zeros too',
    );
    assert.deepEqual(
      Array.from(b.slice(0, 12)),
      Array.from({ length: 12 }, (_, k) => (k < 7 ? 0 : MASK_BIAS)),
    );
    // The composition of model.ts crossBias: one-hot of the alignment for the first heads, the
    // latents and the text's bias for the others.
    const [B, S, latents, heads] = [4, 9, 5, 3];
    const alignment = tf.tensor2d(
      Array.from({ length: B * S }, (_, i) => (i % 11 === 0 ? 40 : i % 12)),
      [B, S],
      'int32',
    );
    for (const alignHeads of [1, 2, 3]) {
      const composed = tf.tidy(() => {
        const memory = latents + 12;
        const aligned = tf.oneHot(
          tf.add(alignment, tf.scalar(latents, 'int32')) as import('@tensorflow/tfjs-core').Tensor2D,
          memory,
        );
        const alignBias = tf.reshape(tf.mul(tf.sub(tf.cast(aligned, 'float32'), tf.scalar(1)), tf.scalar(-MASK_BIAS)), [
          B,
          1,
          S,
          memory,
        ]);
        const parts = [alignHeads === 1 ? alignBias : tf.tile(alignBias, [1, alignHeads, 1, 1])];
        if (heads > alignHeads)
          parts.push(
            tf.add(tf.concat([tf.zeros([B, 1, 1, latents]), plain.bias], 3), tf.zeros([1, heads - alignHeads, S, 1])),
          );
        return parts.length === 1 ? parts[0] : tf.concat(parts, 1);
      });
      const made = crossAttentionBias(alignment, fused.bias, heads, alignHeads, latents, MASK_BIAS);
      assert.deepEqual(made.shape, composed.shape);
      const [x, y] = [await composed.data(), await made.data()];
      assert.ok(
        y.every((v, i) => Object.is(v, x[i])),
        `alignHeads ${alignHeads}: bit for bit`,
      );
    }
    switchGpuPrograms(tf, 'masks', true);
  } finally {
    disposeBackend(tf);
  }
});

test('constants kept on the device are kept per backend: a webgpu backend made again ' +
  "gets its own, not the last one's (whose data went with it)", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { scalar, cachedConstant } = await import('../../src/core/model/nn.js');
  const first = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  const [a, c] = [scalar(3), cachedConstant('test:ones', () => first.tf.ones([4]))];
  assert.equal(scalar(3), a, 'one tensor per value and backend');
  disposeBackend(first.tf);
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const [b, d] = [scalar(3), cachedConstant('test:ones', () => tf.ones([4]))];
    assert.notEqual(b, a);
    assert.notEqual(d, c);
    assert.deepEqual(Array.from(await tf.add(b, d).data()), [4, 4, 4, 4]);
  } finally {
    disposeBackend(tf);
  }
});

test('backends made and disposed 80 times in one process, collected between, never abort it: Dawn instances are ' +
  'made once and kept, never collected under a pending event or a display in use', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  // When each backend had an instance of its own, dawn.node polled a collected instance for the device's pending
  // loss: about one such process in three aborted ("terminate called after throwing an instance of
  // 'std::system_error'", "The futex facility returned an unexpected error code") or crashed, in CI too.
  const dir = mkdtempSync(join(tmpdir(), 'xtts-dawn-'));
  try {
    const script = join(dir, 'churn.mts');
    const backend = new URL('../../src/core/backend/index.ts', import.meta.url).href;
    writeFileSync(
      script,
      `import { initBackend, disposeBackend } from '${backend}';
      for (let i = 0; i < 80; i++) {
        const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
        await tf.add(tf.ones([4]), tf.ones([4])).data();
        disposeBackend(tf);
        if (i % 3 === 0) globalThis.gc();
      }
      process.stdout.write('done\\n');`,
    );
    const { NODE_TEST_CONTEXT: _ignored, ...env } = process.env;
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
      encoding: 'utf8',
      env,
      timeout: 240_000,
    });
    assert.equal(r.signal, null, `the process was killed by ${r.signal}: ${r.stderr.slice(-400)}`);
    assert.equal(r.status, 0, r.stderr.slice(-400));
    assert.equal(r.stdout, 'done\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("AdamW's webgpu update (three programs, its scalars one more) makes the composed " +
  "update's parameters, moments, norms, verdicts, skipped count and loss scale: an " +
  'overflow halves the scale, two updates in a row double it, a non-finite step at ' +
  'a scale of 1 is counted', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { AdamW } = await import('../../src/core/training/optim/adamw.js');
    const { trainingConfig } = await import('./model-fixtures.js');
    const c = {
      ...trainingConfig({
        learning_rate: 0.01,
        optimizer: { name: 'adamw', beta1: 0.9, beta2: 0.98, epsilon: 1e-8, weight_decay: 0.1 },
        grad_clip_norm: 1,
      }),
    };
    const make = (update: 'auto' | 'composed') => {
      const params = new Map([
        ['w', tf.variable(tf.randomNormal([300, 7], 0, 1, 'float32', 5))],
        ['b', tf.variable(tf.randomNormal([7], 0, 1, 'float32', 6))],
      ]);
      return new AdamW(params, c, { update, lossScale: { initial: 8, growthInterval: 2 } });
    };
    const [fused, composed] = [make('auto'), make('composed')];
    const before = tf.getKernel('XttsAdamWUpdate', 'webgpu');
    assert.ok(before, 'the webgpu kernel is registered');
    // S: 8 → 8 (one update in a row) → 16 (two) → 8 (an overflow) → 8.
    const scales = [8, 16, 8, 8];
    for (let step = 0; step < 4; step++) {
      const norms: number[] = [];
      const programs: number[] = [];
      for (const opt of [fused, composed]) {
        const S = (await opt.lossScale!.data())[0];
        const g = tf.mul(
          tf.randomNormal([opt.parameterCount], 0, 1, 'float32', 10 + step),
          S,
        ) as import('@tensorflow/tfjs-core').Tensor1D;
        // Step 2 overflows: no update, the scale halves.
        opt.accumulate(
          step === 2 ? (tf.div(g, tf.zerosLike(g)) as import('@tensorflow/tfjs-core').Tensor1D) : g,
          tf.scalar(S),
        );
        if (step === 2) g.dispose();
        const counter = new KernelCounter().install(tf);
        const r = opt.apply();
        programs.push(counter.takeAll().dispatches);
        counter.uninstall();
        assert.equal((await r.finite.data())[0], step === 2 ? -1 : 1);
        assert.equal((await opt.lossScale!.data())[0], scales[step], `step ${step}: the loss scale`);
        norms.push((await r.gradNorm.data())[0]);
        tf.dispose([r.gradNorm, r.finite]);
      }
      // The composition sums the squares in another order: the norms agree to float32 rounding.
      if (step !== 2)
        assert.ok(Math.abs(norms[0] - norms[1]) <= 1e-6 * norms[1], `step ${step}: norm ${norms[0]} vs ${norms[1]}`);
      else
        assert.ok(
          norms.every((n) => !Number.isFinite(n)),
          `the overflow's norms ${norms}`,
        );
      // The scalars' ~20 programs are one.
      assert.ok(
        programs[1] - programs[0] >= 15,
        `step ${step}: ${programs[0]} programs against the composition's ${programs[1]}`,
      );
      const [a, b] = await Promise.all(
        [fused, composed].map(async (o) =>
          [...(await Promise.all(o.variables.map((v) => v.data())))].flatMap((x) => [...x]),
        ),
      );
      let worst = 0;
      a.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - b[i]))));
      assert.ok(worst < 1e-6, `step ${step}: parameters differ by ${worst}`);
      const [sa, sb] = [fused.getState(), composed.getState()];
      for (const k of ['adamw.m/w', 'adamw.v/w', 'adamw.loss_scale']) {
        const [x, y] = [await sa.get(k)!.data(), await sb.get(k)!.data()];
        x.forEach((v, i) =>
          assert.ok(
            Math.abs(v - y[i]) <= 1e-6 * Math.max(1, Math.abs(y[i])),
            `step ${step} ${k}[${i}] ${v} vs ${y[i]}`,
          ),
        );
      }
      tf.dispose([...sa.values(), ...sb.values()]);
    }
    for (const opt of [fused, composed])
      assert.equal((await opt.nonFiniteSteps.data())[0], 0, 'an overflow at S > 1 is not counted as non-finite');
    // At a scale of 1 a non-finite step is a real one: verdict 0, counted, the scale stays 1.
    const ones = [fused, composed].map(
      (o) =>
        new AdamW(new Map(o.variables.map((v, i) => [`p${i}`, tf.variable(tf.clone(v))])), c, {
          update: o === fused ? 'auto' : 'composed',
          lossScale: { initial: 1, growthInterval: 2 },
        }),
    );
    for (const opt of ones) {
      const g = tf.fill([opt.parameterCount], Number.NaN) as import('@tensorflow/tfjs-core').Tensor1D;
      opt.accumulate(g, tf.scalar(1));
      const r = opt.apply();
      // (The composition's where() gives −0.)
      assert.ok((await r.finite.data())[0] === 0, `${opt === ones[0] ? 'fused' : 'composed'}: verdict 0`);
      assert.equal((await opt.nonFiniteSteps.data())[0], 1);
      assert.equal((await opt.lossScale!.data())[0], 1);
      tf.dispose([r.gradNorm, r.finite]);
      opt.dispose();
    }
  } finally {
    disposeBackend(tf);
  }
});

test('a composed 1-D convolution on webgpu sums its taps and adds the bias in one ' +
  'program each way, and matches the pad-slice-AddN composition: values and ' +
  'gradients, kernels 1, 3 and 5', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  const { conv1dComposed } = await import('../../src/core/model/nn.js');
  const { tapSumAvailable } = await import('../../src/core/backend/programs/conv.js');
  type T = import('@tensorflow/tfjs-core').Tensor;
  try {
    assert.equal(tapSumAvailable(), true);
    let seed = 40;
    for (const kernel of [1, 3, 5]) {
      const [batch, frames, inCh, outCh] = [3, 37, 20, 24];
      const x = tf.randomNormal(
        [batch, frames, inCh],
        0,
        1,
        'float32',
        seed++,
      ) as import('@tensorflow/tfjs-core').Tensor3D;
      const w = tf.randomNormal(
        [kernel, inCh, outCh],
        0,
        0.3,
        'float32',
        seed++,
      ) as import('@tensorflow/tfjs-core').Tensor3D;
      const b = tf.randomNormal([outCh], 0, 1, 'float32', seed++) as import('@tensorflow/tfjs-core').Tensor1D;
      const up = tf.randomNormal([batch, frames, outCh], 0, 1, 'float32', seed++);
      // A loss that weights every output differently, so that each gradient value is checked.
      const run = () => {
        const counter = new KernelCounter().install(tf);
        const { value, grads } = tf.valueAndGrads((xv: T, wv: T, bv: T) =>
          tf.sum(tf.mul(conv1dComposed(xv as never, wv as never, bv as never), up)),
        )([x, w, b]);
        const programs = counter.takeAll().dispatches;
        counter.uninstall();
        return { value, grads, programs };
      };
      const fused = run();
      switchGpuPrograms(tf, 'tap-sum', false);
      const composed = run();
      switchGpuPrograms(tf, 'tap-sum', true);
      const close = async (a: T, c: T, what: string) => {
        const [av, cv] = [await a.data(), await c.data()];
        assert.equal(av.length, cv.length);
        for (let i = 0; i < av.length; i++)
          assert.ok(
            Math.abs(av[i] - cv[i]) <= 1e-4 * (1 + Math.abs(cv[i])),
            `kernel ${kernel}, ${what}[${i}]: ${av[i]} vs ${cv[i]}`,
          );
      };
      await close(fused.value, composed.value, 'loss');
      for (const [i, name] of ['dx', 'dw', 'db'].entries()) await close(fused.grads[i], composed.grads[i], name);
      // The forward's convolution itself, beside the composition's.
      await close(conv1dComposed(x, w, b), (switchGpuPrograms(tf, 'tap-sum', false), conv1dComposed(x, w, b)), 'y');
      switchGpuPrograms(tf, 'tap-sum', true);
      if (kernel > 1)
        assert.ok(
          fused.programs + 2 * kernel <= composed.programs,
          `kernel ${kernel}: ${fused.programs} programs against ${composed.programs}`,
        );
    }
  } finally {
    switchGpuPrograms(tf, 'tap-sum', true);
    disposeBackend(tf);
  }
});

test("a batch goes to the device as it is made, from views of the ring's shared " +
  'arrays: refilling them right after changes nothing', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { uploadBatch } = await import('../../src/core/model/batch.js');
    const [b, tokens, frames, refFrames, nMels] = [2, 5, 8, 4, 3];
    // In shared memory and longer than the bucket, as a ring slot's arrays are.
    const shared = <T extends Int32Array | Float32Array>(
      kind: { new (b: SharedArrayBuffer): T },
      values: number[],
    ): T => {
      const a = new kind(new SharedArrayBuffer(4 * values.length));
      a.set(values);
      return a;
    };
    const host = {
      tokens: shared(
        Int32Array,
        Array.from({ length: 3 * tokens }, (_, i) => i + 1),
      ),
      textLengths: shared(Int32Array, [5, 3, 9]),
      languages: shared(Int32Array, [0, 1, 2]),
      mel: shared(
        Float32Array,
        Array.from({ length: 3 * frames * nMels }, (_, i) => i / 7),
      ),
      melLengths: shared(Int32Array, [8, 6, 1]),
      refMel: shared(
        Float32Array,
        Array.from({ length: 3 * refFrames * nMels }, (_, i) => -i / 3),
      ),
      refLengths: shared(Int32Array, [4, 2, 1]),
      refPitch: shared(Float32Array, [4.6, 0, 5.1]),
    };
    const expected = Object.fromEntries(
      Object.entries(host).map(([k, v]) => [k, Array.from(v.subarray(0, (v.length / 3) * b))]),
    );
    const t = uploadBatch(host, { batchSize: b, tokens, frames, refFrames, nMels, reductionFactor: 2 });
    for (const v of Object.values(host)) v.fill(-7);
    for (const [k, x] of Object.entries(t))
      assert.deepEqual(Array.from(await (x as import('@tensorflow/tfjs-core').Tensor).data()), expected[k], k);
    assert.deepEqual(t.mel.shape, [b, frames, nMels]);
  } finally {
    disposeBackend(tf);
  }
});

test('batches of 64 KiB or more are copied once into reused mapped staging buffers; ' +
  'with none ready they go through writeBuffer; every value arrives', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { uploadBatch } = await import('../../src/core/model/batch.js');
    const { stagedUploadStats, STAGED_UPLOAD_MIN_BYTES } = await import('../../src/core/backend/webgpu-uploads.js');
    const dims = (frames: number) => ({
      batchSize: 2,
      tokens: 7,
      frames,
      refFrames: 40,
      nMels: 80,
      reductionFactor: 2,
    });
    const slot = (d: ReturnType<typeof dims>) => {
      const n = {
        tokens: 3 * d.tokens,
        textLengths: 3,
        languages: 3,
        mel: 3 * d.frames * d.nMels,
        melLengths: 3,
        refMel: 3 * d.refFrames * d.nMels,
        refLengths: 3,
        refPitch: 3,
      };
      return Object.fromEntries(
        Object.entries(n).map(([k, len]) => [
          k,
          new (k.endsWith('Mel') || k === 'mel' || k === 'refPitch' ? Float32Array : Int32Array)(
            new SharedArrayBuffer(4 * len),
          ),
        ]),
      ) as never as import('../../src/core/model/batch.js').HostBatch;
    };
    const batches: { t: ReturnType<typeof uploadBatch>; expected: Record<string, number[]> }[] = [];
    const upload = (k: number, frames: number) => {
      const d = dims(frames);
      const host = slot(d);
      for (const [name, a] of Object.entries(host))
        (a as Float32Array).set(
          Array.from({ length: (a as Float32Array).length }, (_, i) =>
            name.includes('el') && !name.includes('Length') ? (i % 97) / 13 - k : (i + k) % 50,
          ),
        );
      const counts: Record<string, number> = {
        tokens: 2 * d.tokens,
        textLengths: 2,
        languages: 2,
        mel: 2 * frames * d.nMels,
        melLengths: 2,
        refMel: 2 * d.refFrames * d.nMels,
        refLengths: 2,
        refPitch: 2,
      };
      const expected = Object.fromEntries(
        Object.entries(host).map(([name, a]) => [name, Array.from((a as Float32Array).subarray(0, counts[name]))]),
      );
      batches.push({ t: uploadBatch(host, d), expected });
      // The slot is refilled by a producer as soon as the batch is made.
      for (const a of Object.values(host)) (a as Float32Array).fill(-7);
    };
    const bytes = (frames: number) => 4 * (2 * 7 + 6 * 2 + 2 * frames * 80 + 2 * 40 * 80);
    assert.ok(
      bytes(200) >= STAGED_UPLOAD_MIN_BYTES &&
        bytes(8) < STAGED_UPLOAD_MIN_BYTES &&
        bytes(200) <= 1 << 20 &&
        bytes(4000) > 1 << 20,
    );
    // Six at once: four staging buffers, then none is ready (their copies are not done) and two go through writeBuffer.
    for (let k = 0; k < 6; k++) upload(k, 200);
    assert.deepEqual(stagedUploadStats(tf.backend()), { staged: 4, missed: 2, ready: 0 });
    // Once the device is done with them they are mapped again and taken again, also by a larger bucket's batch.
    await batches[5].t.mel.data();
    for (let i = 0; i < 100 && stagedUploadStats(tf.backend()).ready < 4; i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(stagedUploadStats(tf.backend()).ready, 4);
    upload(6, 200);
    upload(7, 8);
    upload(8, 4000);
    assert.deepEqual(
      stagedUploadStats(tf.backend()),
      { staged: 6, missed: 2, ready: 2 },
      'the small batch went through writeBuffer, the larger one replaced a staging buffer',
    );
    for (const [k, { t, expected }] of batches.entries()) {
      for (const [name, x] of Object.entries(t))
        assert.deepEqual(
          Array.from(await tf.add(x as import('@tensorflow/tfjs-core').Tensor, 0).data()),
          expected[name],
          `batch ${k} ${name}`,
        );
    }
  } finally {
    disposeBackend(tf);
  }
});

test('uploads of host values go through queue.writeBuffer and arrive intact: float32, ' +
  'int32, bool, a 4 MiB tensor, and after tfjs work it has not submitted', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { setQueueUploads } = await import('../../src/core/backend/webgpu-uploads.js');
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const backend = tf.backend() as unknown as {
      uploadToGPU: unknown;
      tensorMap: { get(id: object): { values: unknown; resource: unknown } };
    };
    const viaQueue = backend.uploadToGPU;
    const big = Float32Array.from({ length: 1 << 20 }, (_, i) => Math.sin(i));
    const run = async () => {
      // Work encoded before the uploads and not yet submitted must not see them out of order.
      const before = tf.add(tf.fill([1000], 2), tf.fill([1000], 3));
      const f = tf.tensor1d(big);
      const i = tf.tensor1d([1, -2, 4096, 0], 'int32');
      const b = tf.tensor1d([true, false, true, true], 'bool');
      // Every one through a program (an upload happens at first use).
      const out = [tf.mul(f, 2), tf.add(i, 1), tf.logicalNot(b), tf.add(before, 1)];
      assert.equal(backend.tensorMap.get(f.dataId).values, null, 'the host copy is dropped once uploaded');
      return Promise.all(out.map((t) => t.data()));
    };
    const [f, i, b, before] = await run();
    assert.deepEqual(
      Array.from(f.slice(0, 5)),
      Array.from(big.slice(0, 5), (x) => Math.fround(x * 2)),
    );
    assert.equal(f[big.length - 1], Math.fround(big[big.length - 1] * 2));
    assert.deepEqual(Array.from(i), [2, -1, 4097, 1]);
    assert.deepEqual(Array.from(b), [0, 1, 0, 0]);
    assert.deepEqual(Array.from(before.slice(0, 3)), [6, 6, 6]);
    setQueueUploads(tf.backend(), false);
    assert.notEqual(backend.uploadToGPU, viaQueue, "off: tfjs's own staging path");
    const staged = await run();
    assert.deepEqual(staged, [f, i, b, before]);
  } finally {
    disposeBackend(tf);
  }
});

test('a full float32 sum of many values runs over many workgroups (two programs) and ' +
  "matches the host's float64 sum; other sums are tfjs's", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { SPREAD_FROM } = await import('../../src/core/backend/programs/sum.js');
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const n = 3_000_017; // not a multiple of any chunk
    const host = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) + 0.25);
    let want = 0;
    for (const v of host) want += v;
    const x = tf.tensor1d(host);
    const counter = new KernelCounter().install(tf);
    const s = tf.sum(x);
    const programs = counter.takeAll().dispatches;
    counter.uninstall();
    assert.equal(programs, 2, 'partials, then their sum');
    assert.deepEqual(s.shape, []);
    const got = (await s.data())[0];
    assert.ok(Math.abs(got - want) <= 1e-6 * Math.abs(want), `${got} vs ${want}`);
    // The same value every time (a fixed order), through a 3-D tensor and keepDims.
    const cube = tf.reshape(tf.slice(x, 0, 2_999_997), [3, 999_999, 1]);
    const kept = tf.sum(cube, [0, 1, 2], true);
    assert.deepEqual(kept.shape, [1, 1, 1]);
    let head = 0;
    for (let i = 0; i < 2_999_997; i++) head += host[i];
    assert.ok(Math.abs((await kept.data())[0] - head) <= 1e-6 * Math.abs(head));
    assert.equal((await tf.sum(x).data())[0], got);
    // Below SPREAD_FROM, over some axes, or of integers: tfjs's kernel.
    const small = tf.sum(tf.ones([SPREAD_FROM - 1]));
    assert.equal((await small.data())[0], SPREAD_FROM - 1);
    const rows = await tf.sum(tf.ones([300, 200]), 0).data();
    assert.equal(rows.length, 200);
    assert.equal(rows[7], 300);
    assert.equal((await tf.sum(tf.ones([SPREAD_FROM * 2], 'int32')).data())[0], SPREAD_FROM * 2);
    // Gradients of a spread sum are the same as ever (ones).
    const g = await tf
      .grad((v: import('@tensorflow/tfjs-core').Tensor) => tf.sum(tf.mul(v, v)))(tf.slice(x, 0, SPREAD_FROM * 2))
      .data();
    assert.equal(g[5], 2 * host[5]);
    // The gradient norm's Σ x²: the same two programs, the square in the first; and of a few values.
    const { sumOfSquares } = await import('../../src/core/training/optim/clip.js');
    let squares = 0;
    for (const v of host) squares += v * v;
    counter.install(tf);
    const q = sumOfSquares(x);
    assert.equal(counter.takeAll().dispatches, 2);
    counter.uninstall();
    assert.deepEqual(q.shape, []);
    assert.ok(Math.abs((await q.data())[0] - squares) <= 1e-6 * squares, `${(await q.data())[0]} vs ${squares}`);
    assert.equal((await sumOfSquares(tf.tensor1d([3, -4])).data())[0], 25);
  } finally {
    disposeBackend(tf);
  }
});

test('a float32 sum over leading or middle axes is one program (no transpose before ' +
  "it) and matches the host's float64 sums; sums over the innermost or split axes " +
  "are tfjs's", {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { stridedSumDims } = await import('../../src/core/backend/programs/sum.js');
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const shape = [3, 7, 5, 131];
    const n = shape.reduce((a, b) => a * b, 1);
    const host = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.61) * 3 + 0.5);
    const x = tf.tensor4d(host, shape as [number, number, number, number]);
    const strides = [7 * 5 * 131, 5 * 131, 131, 1];
    /** The host's float64 sum over `axes`, in the order of the kept axes. */
    const exact = (axes: number[]) => {
      const kept = shape.map((_, i) => i).filter((i) => !axes.includes(i));
      const out = new Float64Array(kept.reduce((a, i) => a * shape[i], 1));
      for (let i = 0; i < n; i++) {
        let o = 0;
        for (const k of kept) o = o * shape[k] + (Math.floor(i / strides[k]) % shape[k]);
        out[o] += host[i];
      }
      return out;
    };
    // Leading and middle blocks: one program; the innermost: tfjs's reduce, one; split axes: tfjs's transpose and
    // reduce.
    for (const [axes, programs] of [
      [[0], 1],
      [[0, 1], 1],
      [[1], 1],
      [[1, 2], 1],
      [[0, 1, 2], 1],
      [[3], 1],
      [[2, 3], 1],
      [[0, 2], 2],
    ] as const) {
      const counter = new KernelCounter().install(tf);
      const s = tf.sum(x, [...axes]);
      const dispatched = counter.takeAll().dispatches;
      counter.uninstall();
      assert.equal(dispatched, programs, `sum over [${axes}]: ${dispatched} programs`);
      assert.deepEqual(
        s.shape,
        shape.filter((_, i) => !(axes as readonly number[]).includes(i)),
      );
      const got = await s.data();
      const want = exact([...axes]);
      for (let i = 0; i < want.length; i++)
        assert.ok(
          Math.abs(got[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])) + 1e-4,
          `sum over [${axes}] at ${i}: ${got[i]} vs ${want[i]}`,
        );
    }
    assert.deepEqual(tf.sum(x, [1, 2], true).shape, [3, 1, 1, 131]);
    // A bias gradient: Σ over rows of [rows, out], through its gradient too (ones broadcast back).
    const rows = tf.reshape(x, [105, 131]);
    assert.deepEqual(
      Array.from(await tf.sum(rows, 0).data()),
      Array.from(await tf.sum(rows, 0).data()),
      'the same bits every time',
    );
    const g = await tf
      .grad((v: import('@tensorflow/tfjs-core').Tensor) => tf.sum(tf.mul(tf.sum(v, 0), tf.range(0, 131))))(rows)
      .data();
    assert.equal(g[131 + 9], 9);
    // Integers are tfjs's.
    assert.deepEqual(Array.from(await tf.sum(tf.ones([4, 3], 'int32'), 0).data()), [4, 4, 4]);
  } finally {
    disposeBackend(tf);
  }
  assert.deepEqual(stridedSumDims([32, 376, 512], [0, 1]), { outer: 1, rows: 32 * 376, inner: 512 });
  assert.deepEqual(stridedSumDims([4, 6, 8], [1]), { outer: 4, rows: 6, inner: 8 });
  assert.equal(stridedSumDims([4, 6, 8], [2]), null, 'innermost: tfjs reduces it without a transpose');
  assert.equal(stridedSumDims([4, 6, 8], [0, 2]), null, 'not one block');
});

test('matmuls tfjs would split over K with atomics run in a fixed order instead: the ' +
  "host's float64 product within 1e-4, the same bits every time, transposes and " +
  'the cases left to tfjs', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  try {
    const { matMulDims, tfjsSplitsK } = await import('../../src/core/backend/programs/matmul.js');
    // A weight gradient's shape: xᵀ·dy over batch × frames = 3,000 rows, a [40, 72] output (6 tiles of 32×32).
    const [k, m, n] = [3000, 40, 72];
    const x = tf.randomNormal([k, m], 0, 1, 'float32', 4);
    const dy = tf.randomNormal([k, n], 0, 1, 'float32', 5);
    assert.ok(tfjsSplitsK(matMulDims(x.shape, dy.shape, true, false), 8), 'tfjs would split this one over K');
    const [X, D] = [await x.data(), await dy.data()];
    const want = (i: number, j: number) => {
      let s = 0;
      for (let r = 0; r < k; r++) s += X[r * m + i] * D[r * n + j];
      return s;
    };
    const counter = new KernelCounter().install(tf);
    const out = tf.matMul(x, dy, true, false);
    const programs = counter.takeAll().dispatches;
    counter.uninstall();
    assert.equal(programs, 2, 'the partials, then their ordered sum');
    assert.deepEqual(out.shape, [m, n]);
    const got = await out.data();
    let worst = 0;
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++)
        worst = Math.max(worst, Math.abs(got[i * n + j] - want(i, j)) / (1 + Math.abs(want(i, j))));
    // float32 sums of 3,000 products of unit normals: the float64 product within 1e-4 (a wrong index is off by ~1).
    assert.ok(worst < 1e-4, `largest difference ${worst}`);
    for (let run = 0; run < 3; run++)
      assert.deepEqual(await tf.matMul(x, dy, true, false).data(), got, 'the same bits every time');
    // B transposed, A not: dyᵀ·x = (xᵀ·dy)ᵀ; and a batch dimension of 1.
    const t = await tf.matMul(tf.transpose(dy), tf.reshape(x, [1, k, m]), false, false).data();
    const tt = await tf.matMul(tf.reshape(tf.transpose(dy), [1, n, k]), tf.transpose(x), false, true).data();
    for (let i = 0; i < n; i++)
      for (let j = 0; j < m; j++) {
        assert.ok(Math.abs(t[i * m + j] - want(j, i)) <= 1e-4 * (1 + Math.abs(want(j, i))));
        assert.ok(Math.abs(tt[i * m + j] - want(j, i)) <= 1e-4 * (1 + Math.abs(want(j, i))));
      }
    // Many output tiles, a short K, or a batch: tfjs's own programs (one each).
    for (const [a, b] of [
      [
        [k, 256],
        [k, 256],
      ],
      [
        [100, m],
        [100, n],
      ],
      [
        [2, k, m],
        [2, k, n],
      ],
    ] as const) {
      assert.equal(tfjsSplitsK(matMulDims(a, b, true, false), 8), false);
      const c = new KernelCounter().install(tf);
      tf.matMul(tf.ones([...a]), tf.ones([...b]), true, false);
      assert.equal(c.takeAll().dispatches, 1, `${a} · ${b}`);
      c.uninstall();
    }
    // An operand stored as booleans under a float32 dtype (a cast mask) is read as numbers.
    const mask = tf.cast(tf.greater(x, 0), 'float32');
    const counts = await tf.matMul(mask, tf.ones([k, n]), true, false).data();
    let positive = 0;
    for (let r = 0; r < k; r++) if (X[r * m] > 0) positive++;
    assert.equal(counts[0], positive);
    // Gradients through it are the same as ever.
    const g = await tf
      .grad((v: import('@tensorflow/tfjs-core').Tensor) => tf.sum(tf.matMul(v, dy, true, false)))(x)
      .data();
    let row0 = 0;
    for (let j = 0; j < n; j++) row0 += D[j];
    assert.ok(Math.abs(g[0] - row0) <= 1e-4 * (1 + Math.abs(row0)));
  } finally {
    disposeBackend(tf);
  }
});

test('device.matmul tiled: the wide program where 128×128 tiles fill the device, ' +
  "tfjs's elsewhere; batches broadcast, either operand transposed, edges that are " +
  'no multiple of a tile, K that is no multiple of a slab; gradients', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  const { matMulDims, tfjsPacks, wideDenseShape, wideShape } = await import(
    '../../src/core/backend/programs/matmul.js'
  );
  type T = import('@tensorflow/tfjs-core').Tensor;
  try {
    selectGpuPrograms(tf, { matmul: 'tiled' });
    // Host float64 product of logical A [batch?, m, k] and B [batch?, k, n].
    const host = async (a: T, b: T, ta: boolean, tb: boolean) => {
      const A = (await (ta
        ? tf.transpose(
            a,
            [...a.shape.keys()].map((i, _, all) =>
              i < all.length - 2 ? i : i === all.length - 2 ? all.length - 1 : all.length - 2,
            ),
          )
        : a
      ).array()) as number[][] | number[][][];
      const B = (await (tb
        ? tf.transpose(
            b,
            [...b.shape.keys()].map((i, _, all) =>
              i < all.length - 2 ? i : i === all.length - 2 ? all.length - 1 : all.length - 2,
            ),
          )
        : b
      ).array()) as number[][] | number[][][];
      const as3 = (x: number[][] | number[][][]) => (Array.isArray(x[0][0]) ? (x as number[][][]) : [x as number[][]]);
      const [A3, B3] = [as3(A), as3(B)];
      const batch = Math.max(A3.length, B3.length);
      const out: number[][][] = [];
      for (let z = 0; z < batch; z++) {
        const [a2, b2] = [A3[A3.length === 1 ? 0 : z], B3[B3.length === 1 ? 0 : z]];
        out.push(a2.map((row) => b2[0].map((_, c) => row.reduce((s, v, k) => s + v * b2[k][c], 0))));
      }
      return out.flat(2);
    };
    let seed = 10;
    const cases: [number[], number[], boolean, boolean][] = [
      [[70, 37], [37, 130], false, false],
      [[37, 70], [37, 130], true, false],
      [[70, 37], [130, 37], false, true],
      [[37, 70], [130, 37], true, true],
      [[3, 65, 50], [3, 50, 66], false, false],
      [[1, 65, 50], [3, 50, 66], false, false],
      [[3, 50, 65], [66, 50], true, true],
      // Enough 128×128 tiles for the wide program (45 × 2 × 3), each pair of transposes, a batch of 1
      // broadcast, K no multiple of its slab of 8.
      [[45, 130, 20], [45, 20, 260], false, false],
      [[45, 20, 130], [45, 260, 20], true, true],
      [[45, 20, 130], [45, 20, 260], true, false],
      [[1, 130, 21], [45, 260, 21], false, true],
      // A weight gradient's shape: unbatched, 5 × 9 tiles, K long enough for 3 parts of the wide
      // program, 512 deep each; and one whose K no number of parts divides into whole slabs (tfjs's).
      [[1536, 520], [1536, 1040], true, false],
      [[1540, 520], [1540, 1040], true, false],
      // Too few 128×128 tiles and too short a K to split, enough 64×64 ones (20 × 17 = 340), Bᵀ.
      [[1270, 33], [1050, 33], false, true],
    ];
    const large = new Set<string>();
    let split = 0;
    let small64 = 0;
    for (const [sa, sb, ta, tb] of cases) {
      const a = tf.randomNormal(sa, 0, 1, 'float32', seed++);
      const b = tf.randomNormal(sb, 0, 1, 'float32', seed++);
      const dims = matMulDims(a.shape, b.shape, ta, tb);
      assert.ok(tfjsPacks(dims, 8), `${sa}·${sb}: a case tfjs packs`);
      const shape = wideShape(dims);
      if (shape?.side === 128 && shape.parts === 1) large.add(`${ta}_${tb}`);
      if (shape && shape.parts > 1) split = shape.parts;
      if (shape?.side === 64) small64++;
      const got = await tf.matMul(a, b, ta, tb).data();
      const want = await host(a, b, ta, tb);
      assert.equal(got.length, want.length);
      let worst = 0;
      for (let i = 0; i < got.length; i++)
        worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
      // float32 rounding grows with K (1e-5 up to K = 32).
      const tolerance = 1e-5 * Math.max(1, dims.k / 32);
      assert.ok(worst < tolerance, `${sa}${ta ? 'ᵀ' : ''}·${sb}${tb ? 'ᵀ' : ''}: largest difference ${worst}`);
      // tfjs's packed program would have given the same within float32 rounding.
      selectGpuPrograms(tf, { matmul: 'tfjs' });
      const tfjs = await tf.matMul(a, b, ta, tb).data();
      selectGpuPrograms(tf, { matmul: 'tiled' });
      for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i] - tfjs[i]) <= tolerance * (1 + Math.abs(tfjs[i])));
    }
    // A dense layer's fused matmul (x·W + b, then ReLU) as the model's dense layers run it (nn.ts
    // Linear: the kernel on 2-D operands), through the program whose pipeline key starts with `key`,
    // as tfjs's fused program computes it within `tolerance`; the ReLU clips about half of it.
    const denseAgainstTfjs = async (x: T, w: T, bias: T, key: string, tolerance: number) => {
      const dense = () =>
        (
          tf.engine().runKernel('_FusedMatMul', { a: x, b: w, bias }, {
            transposeA: false,
            transposeB: false,
            activation: 'relu',
            leakyreluAlpha: 0,
          } as never) as T
        ).data();
      const ours = await dense();
      assert.ok(
        Object.keys((tf.backend() as unknown as { pipelineCache: Record<string, unknown> }).pipelineCache).some((k) =>
          k.startsWith(key),
        ),
        `${key} ran`,
      );
      selectGpuPrograms(tf, { matmul: 'tfjs' });
      const tfjs = await dense();
      selectGpuPrograms(tf, { matmul: 'tiled' });
      let clipped = 0;
      for (let i = 0; i < ours.length; i++) {
        assert.ok(
          Math.abs(ours[i] - tfjs[i]) <= tolerance * (1 + Math.abs(tfjs[i])),
          `${key}, output ${i}: ${ours[i]} vs tfjs ${tfjs[i]}`,
        );
        if (tfjs[i] === 0) clipped++;
      }
      assert.ok(clipped > ours.length / 4, 'the ReLU clipped about half of them');
      return ours;
    };
    // One whose tiles fill the device: the wide program with its epilogue.
    const fx = tf.randomNormal([2100, 40], 0, 1, 'float32', 91);
    const fw = tf.randomNormal([40, 2100], 0, 1, 'float32', 92);
    const fb = tf.randomNormal([2100], 0, 1, 'float32', 93);
    const fused = await denseAgainstTfjs(fx, fw, fb, 'xtts_matmul_wide8_false_false_whole_true_true_128', 2e-5);
    const [X1, W1, B1] = [
      (await fx.array()) as number[][],
      (await fw.array()) as number[][],
      (await fb.array()) as number[],
    ];
    for (const [r, c] of [
      [0, 0],
      [2099, 2099],
      [1234, 77],
      [5, 2050],
    ]) {
      const want = Math.max(0, X1[r].reduce((sum, v, k) => sum + v * W1[k][c], 0) + B1[c]);
      assert.ok(
        Math.abs(fused[r * 2100 + c] - want) <= 1e-5 * (1 + Math.abs(want)),
        `fused (${r}, ${c}): ${fused[r * 2100 + c]} vs ${want}`,
      );
    }
    // One whose tiles are too few (9 × 9) and K long enough for 4 parts, 324 workgroups: the bias and
    // ReLU come in the sum of the parts. One whose parts would be too few workgroups (5 × 9 tiles in
    // 3 parts) stays with tfjs's fused program.
    const sx = tf.randomNormal([1040, 2048], 0, 1, 'float32', 94);
    const sw = tf.randomNormal([2048, 1040], 0, 1, 'float32', 95);
    const sbias = tf.randomNormal([1040], 0, 1, 'float32', 90);
    assert.equal(wideDenseShape(matMulDims(sx.shape, sw.shape, false, false))?.parts, 4);
    assert.equal(wideShape(matMulDims([520, 1536], [1536, 1040], false, false))?.parts, 3);
    assert.equal(wideDenseShape(matMulDims([520, 1536], [1536, 1040], false, false)), null);
    await denseAgainstTfjs(sx, sw, sbias, 'xtts_splitk_sum_true_true', 1e-5 * (2048 / 32));
    // An operand tfjs stores as booleans under a float32 dtype (a cast mask): read as numbers, not a
    // shader that fails to compile and leaves garbage.
    // The wide program's 64×64 tiles (20 × 17 of them) take it.
    const mask = tf.cast(tf.greater(tf.randomNormal([1270, 37], 0, 1, 'float32', 97), 0), 'float32');
    const wm = tf.randomNormal([37, 1050], 0, 1, 'float32', 96);
    assert.equal(wideShape(matMulDims(mask.shape, wm.shape, false, false))?.side, 64);
    const masked = await tf.matMul(mask, wm).data();
    const maskWant = await host(mask, wm, false, false);
    for (let i = 0; i < masked.length; i++)
      assert.ok(
        Math.abs(masked[i] - maskWant[i]) <= 1e-5 * (1 + Math.abs(maskWant[i])),
        `masked ${i}: ${masked[i]} vs ${maskWant[i]}`,
      );
    // The large ones ran as the wide program (its pipelines are in the backend's cache), one per
    // transpose pair; the others as tfjs's own.
    const keys = Object.keys((tf.backend() as unknown as { pipelineCache: Record<string, unknown> }).pipelineCache);
    const pairs = (prefix: string) =>
      new Set(
        keys.filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length).split('_').slice(0, 2).join('_')),
      );
    assert.deepEqual(large, new Set(['false_false', 'true_true', 'true_false', 'false_true']));
    assert.deepEqual(
      new Set(
        keys
          .filter((k) => k.startsWith('xtts_matmul_wide8_') && k.includes('_whole_false_false_128'))
          .map((k) => k.slice('xtts_matmul_wide8_'.length).split('_').slice(0, 2).join('_')),
      ),
      large,
    );
    // The weight gradient's shape in 3 parts of K, summed in order; the 64×64 tiles once.
    assert.equal(split, 3);
    assert.ok(keys.some((k) => k.startsWith('xtts_matmul_wide8_true_false_parts_false_false_128')));
    assert.equal(small64, 1);
    assert.ok(keys.some((k) => k.startsWith('xtts_matmul_wide8_false_true_whole_false_false_64')));
    assert.deepEqual(pairs('xtts_matmul_tiled'), new Set());
    // Gradients flow through it (BatchMatMul's gradient is two more matmuls).
    const x = tf.randomNormal([70, 37], 0, 1, 'float32', 99);
    const w = tf.randomNormal([37, 130], 0, 1, 'float32', 98);
    const gw = await tf
      .grad((v: T) => tf.sum(tf.matMul(x, v)))(w)
      .data();
    const X = await x.array();
    const colSum = (k: number) => (X as number[][]).reduce((s, row) => s + row[k], 0);
    assert.ok(Math.abs(gw[0] - colSum(0)) <= 1e-4 * (1 + Math.abs(colSum(0))));
    assert.ok(Math.abs(gw[5 * 130 + 7] - colSum(5)) <= 1e-4 * (1 + Math.abs(colSum(5))));
  } finally {
    selectGpuPrograms(tf, { matmul: 'tfjs' });
    disposeBackend(tf);
  }
});

test('an error the WebGPU device reports and nothing catches (a shader that does not ' +
  'compile) is kept for the trainer, which stops with it; it is taken once', {
  skip: llvmpipe ? false : 'no OpenGL ES adapter here',
}, async () => {
  const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
  const { takeGpuError } = await import('../../src/core/backend/index.js');
  try {
    assert.equal(takeGpuError(), undefined);
    await tf.add(tf.ones([8]), 1).data();
    assert.equal(takeGpuError(), undefined, 'good work reports nothing');
    const backend = tf.backend() as unknown as {
      runWebGPUProgram(p: object, i: unknown[], d: string): { dataId: object };
      read(id: object): Promise<unknown>;
    };
    const bad = {
      variableNames: ['x'],
      outputShape: [8],
      shaderKey: 'xtts_test_bad',
      dispatchLayout: { x: [0] },
      dispatch: [1, 1, 1],
      workgroupSize: [64, 1, 1],
      getUserCode: () => 'fn main(index : i32) { let q : f32 = 1i; setOutputAtIndex(index, q); }',
    };
    const out = backend.runWebGPUProgram(bad, [tf.ones([8])], 'float32');
    await backend.read(out.dataId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(takeGpuError() ?? '', /WGSL|Invalid|invalid/);
    assert.equal(takeGpuError(), undefined, 'taken once');
  } finally {
    disposeBackend(tf);
  }
});
