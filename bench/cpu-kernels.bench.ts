// The cpu backend's replaced layout kernels (src/core/backend/cpu.ts) against tfjs's stock ones, side
// by side in one process:
// 1. Each kernel at a shape the tiny preset's training step or eval synthesis meets (batch 8, 120
//    frames, d_model 128, 4 heads), matmuls among them: median wall time of 5 calls after one warm-up.
// 2. The tiny preset's training step (forward, backward, AdamW) on a synthetic batch, and one
//    autoregressive decode of it (eval synthesis), each with the stock kernels and with the
//    replacements, alternating, median of BENCH_REPEAT.
// 3. The wasm backend's Slice and SplitV (src/core/backend/wasm.ts) against tfjs's, which copy the whole input out
//    of the wasm heap for every slice: AdamW's split of its flat vector into the tiny preset's variables (every
//    update, twice a checkpoint), and the tiny preset's training step, alternating, median of BENCH_REPEAT.
//   node --import tsx bench/cpu-kernels.bench.ts     BENCH_REPEAT=5
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../src/core/backend/index.js';
import { fastCpuKernels, stockCpuKernels } from '../src/core/backend/cpu.js';
import { heapSlice, stockWasmSlices } from '../src/core/backend/wasm.js';
import '../src/core/model/gradients.js';
import { XttsModel } from '../src/core/model/model.js';
import { AdamW } from '../src/core/training/optim/adamw.js';
import { disposeStepResult, trainStep } from '../src/core/training/optim/train-step.js';
import { PRESETS, shapeFor, SIZES, syntheticBatch, trainingConfig } from '../test/unit/model-fixtures.js';
import { median, report } from './lib.js';

const repeat = Number(process.env.BENCH_REPEAT ?? 5);
type Variant = 'stock' | 'fast';
const use = (v: Variant) => (v === 'fast' ? fastCpuKernels(tf) : stockCpuKernels(tf));

function timeMs(fn: () => tf.Tensor | tf.Tensor[], n: number): number {
  tf.dispose(fn());
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    tf.dispose(fn());
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function main(): Promise<void> {
  await initBackend('cpu');
  const figures: Record<string, number> = {};
  const [b, t, d, h] = [8, 120, 128, 4];
  const x = tf.randomNormal([b, t, 3 * d]);
  const gates = tf.randomNormal([b, 4 * d]);
  const act = tf.randomNormal([b, t, d]);
  const mask = tf.randomUniform([b, t, 1]);
  const scores = tf.randomNormal([b * h, t, t]);
  const heads = tf.randomNormal([b, t, h, d / h]);
  const rows = tf.randomNormal([b * t, d]);
  const w = tf.randomNormal([d, 3 * d]);
  const bias = tf.randomNormal([d]);
  const kernels: [string, () => tf.Tensor | tf.Tensor[]][] = [
    [`split q,k,v [${b},${t},${3 * d}]`, () => tf.split(x, 3, 2)],
    [`split gates [${b},${4 * d}]`, () => tf.split(gates, 4, 1)],
    [`slice frames [${b},${t},${3 * d}]`, () => tf.slice(x, [0, 0, d], [b, t, d])],
    [`mask × act [${b},${t},1]·[${b},${t},${d}]`, () => tf.mul(act, mask)],
    [`residual add [${b},${t},${d}]`, () => tf.add(act, act)],
    [`bias add [${b},${t},${d}]+[${d}]`, () => tf.add(act, bias)],
    [`softmax [${b * h},${t},${t}]`, () => tf.softmax(scores)],
    [`heads transpose [${b},${t},${h},${d / h}]`, () => tf.transpose(heads, [0, 2, 1, 3])],
    [`q,k,v matmul [${b * t},${d}]·[${d},${3 * d}]`, () => tf.matMul(rows, w)],
    [
      `its weight gradient [${b * t},${d}]ᵀ·[${b * t},${3 * d}]`,
      () => tf.matMul(rows, tf.reshape(x, [b * t, 3 * d]), true),
    ],
  ];
  console.log(`cpu backend, one kernel: median of 5 (ms)`);
  console.log(`${'kernel'.padEnd(44)} ${'stock'.padStart(8)} ${'fast'.padStart(8)}  speed-up`);
  for (const [label, fn] of kernels) {
    const ms: Record<Variant, number> = { stock: 0, fast: 0 };
    for (const v of ['stock', 'fast'] as const) {
      use(v);
      ms[v] = timeMs(fn, 5);
    }
    figures[`${label} stock ms`] = ms.stock;
    figures[`${label} fast ms`] = ms.fast;
    console.log(
      `${label.padEnd(44)} ${ms.stock.toFixed(2).padStart(8)} ${ms.fast.toFixed(2).padStart(8)}  ` +
        `${(ms.stock / ms.fast).toFixed(1)}×`,
    );
  }
  tf.dispose([x, gates, act, mask, scores, heads, rows, w, bias]);

  // The tiny preset: a training step and a decode, both variants alternating.
  const config = PRESETS.tiny;
  const train = trainingConfig();
  const model = new XttsModel(config, SIZES, { seed: 1 });
  const opt = new AdamW(model.trainableVariables(), train);
  const batch = syntheticBatch(shapeFor(config, 4, 24, 64, 32), 3);
  const items = Array.from({ length: 4 }, (_, i) => ({
    ids: Array.from({ length: 24 }, (_, j) => 3 + ((i + j) % 30)),
    language: 0,
  }));
  const voice = new Float32Array(32 * SIZES.nMels).fill(-1);
  const times: Record<string, number[]> = { 'step stock': [], 'step fast': [], 'decode stock': [], 'decode fast': [] };
  const step = () => {
    const r = trainStep(model, opt, batch, train.loss);
    r.stats.dataSync();
    disposeStepResult(r);
  };
  const decode = () => model.generateBatch(items, voice, { maxFrames: 48, seed: 1 });
  for (const v of ['stock', 'fast'] as const) {
    use(v);
    step(); // warm-up: constants and dropout pools
    await decode();
  }
  for (let i = 0; i < repeat; i++)
    for (const v of ['stock', 'fast'] as const) {
      use(v);
      let t0 = performance.now();
      step();
      times[`step ${v}`].push(performance.now() - t0);
      t0 = performance.now();
      await decode();
      times[`decode ${v}`].push(performance.now() - t0);
    }
  model.dispose();
  opt.dispose();
  fastCpuKernels(tf);
  console.log(`\ntiny preset on cpu (4 utterances, 24 tokens, 64 frames), median of ${repeat} (ms)`);
  for (const what of ['step', 'decode']) {
    const stock = median(times[`${what} stock`]);
    const fast = median(times[`${what} fast`]);
    figures[`tiny ${what} stock ms`] = stock;
    figures[`tiny ${what} fast ms`] = fast;
    console.log(
      `${what.padEnd(8)} stock ${stock.toFixed(0)} ms, fast ${fast.toFixed(0)} ms: ${(stock / fast).toFixed(2)}×`,
    );
  }
  await wasmSlices(figures);
  report('cpu-kernels', figures);
}

/** Section 3: the wasm backend's slices, tfjs's (stock) against ours (heap views). */
async function wasmSlices(figures: Record<string, number>): Promise<void> {
  await initBackend('wasm');
  const use = (v: Variant) => (v === 'fast' ? heapSlice(tf) : stockWasmSlices(tf));
  const config = PRESETS.tiny;
  const train = trainingConfig();
  const model = new XttsModel(config, SIZES, { seed: 1 });
  const opt = new AdamW(model.trainableVariables(), train);
  const sizes = [...model.trainableVariables().values()].map((v) => v.size);
  const flat = tf.randomNormal([sizes.reduce((a, x) => a + x, 0)]);
  const batch = syntheticBatch(shapeFor(config, 4, 24, 64, 32), 3);
  const step = () => {
    const r = trainStep(model, opt, batch, train.loss);
    r.stats.dataSync();
    disposeStepResult(r);
  };
  const times: Record<string, number[]> = { 'split stock': [], 'split fast': [], 'step stock': [], 'step fast': [] };
  for (const v of ['stock', 'fast'] as const) {
    use(v);
    step();
  }
  for (let i = 0; i < repeat; i++)
    for (const v of ['stock', 'fast'] as const) {
      use(v);
      times[`split ${v}`].push(timeMs(() => tf.split(flat, sizes), 1));
      const t0 = performance.now();
      step();
      times[`step ${v}`].push(performance.now() - t0);
    }
  heapSlice(tf);
  model.dispose();
  opt.dispose();
  flat.dispose();
  console.log(
    `\nwasm backend, tiny preset (${sizes.length} variables, ${flat.size} values), median of ${repeat} (ms):`,
  );
  for (const what of ['split', 'step']) {
    const stock = median(times[`${what} stock`]);
    const fast = median(times[`${what} fast`]);
    figures[`wasm ${what} stock ms`] = stock;
    figures[`wasm ${what} fast ms`] = fast;
    const label = what === 'split' ? "AdamW's split of its flat vector" : 'training step (4 utterances)';
    console.log(
      `${label.padEnd(34)} stock ${stock.toFixed(1)} ms, heap views ${fast.toFixed(1)} ms: ` +
        `${(stock / fast).toFixed(2)}×`,
    );
  }
}

await main();
