// Training-step speed of the tiny and small presets on the CPU backends (cpu, and wasm when it
// loads), and the number of kernels one training step dispatches (forward + backward + optimizer):
// on a GPU, per-kernel host work is what bounds a small model's step (ARCHITECTURE.md: ~1,270
// kernels, GPU busy 11% of the time), so the count is the figure to keep down.
//
// Kernels are counted at the engine (every backend kernel call, as src/core/backend's KernelCounter
// does) and split into compute kernels and metadata-only ones (Reshape, and the Identity clones the
// autodiff tape makes of saved tensors: on every backend these move no data). The counts do not
// depend on the backend except where the code picks an implementation: 1-D convs (native kernels on
// GPU backends, a matmul composition on cpu/wasm), the AdamW update (one kernel on cpu, a
// composition elsewhere) and layer norm (single programs on webgpu, a composition elsewhere). Two
// variants are counted: this backend's defaults, and native convs + composed update (with layer
// norm as this backend runs it); on webgpu the two are the same.
//
// Timings: the median step with a read-back after every step (latency), and steps/s when the loss
// is read back every 10th step only, as the trainer does (throughput: on a GPU the host then queues
// the next step while the device works). On webgpu also the GPU's own time per step (tf.time).
//
//   node --import tsx bench/model.bench.ts
//   BENCH_BACKENDS=cpu,wasm,webgpu  BENCH_STEPS=3  BENCH_BATCH=utterances,tokens,frames,refFrames
//   BENCH_PRESETS=tiny,small  BENCH_TFJS_FLAGS=NAME=value,...  (e.g. WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE=64)
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../src/core/backend/index.js';
import '../src/core/model/gradients.js';
import type { ModelInputs } from '../src/core/model/batch.js';
import { computeLosses } from '../src/core/model/losses.js';
import { XttsModel } from '../src/core/model/model.js';
import type { ConvImpl } from '../src/core/model/nn.js';
import { LayerNorm } from '../src/core/model/nn.js';
import { ParamStore } from '../src/core/model/params.js';
import { fusedLayerNormAvailable } from '../src/core/backend/programs/layernorm.js';
import { AdamW } from '../src/core/training/optim/adamw.js';
import { disposeStepResult, trainStep } from '../src/core/training/optim/train-step.js';
import { PRESETS, shapeFor, SIZES, syntheticBatch, trainingConfig } from '../test/unit/model-fixtures.js';
import { median, report } from './lib.js';
import { switchGpuPrograms } from '../src/core/backend/index.js';

const backends = (process.env.BENCH_BACKENDS ?? 'cpu,wasm').split(',');
const timedSteps = Number(process.env.BENCH_STEPS ?? 3);
// One bucket shape for the timings: 2 utterances, 16 tokens, 32 mel frames (16 decoder steps), a
// 32-frame reference. Small on purpose: the cpu backend multiplies at ~3.5 GFLOP/s on this host
// (backend/cpu.ts; tfjs's own matmul ~1). Kernel counts do not depend on the shape (the graph is
// static), so they are taken on a smaller batch.
const [utterances, tokens, frames, refFrames] = (process.env.BENCH_BATCH ?? '2,16,32,32').split(',').map(Number);
const BATCH = { utterances, tokens, frames, refFrames };
const COUNT_BATCH = { utterances: 1, tokens: 4, frames: 8, refFrames: 8 };
const META = new Set(['Reshape', 'Identity']);

class Counter {
  byName = new Map<string, number>();
  /** webgpu: GPU programs actually dispatched (a Reshape dispatches none, a wide Concat several). */
  dispatches = 0;
  private restore: (() => void)[] = [];
  install(): void {
    const engine = tf.engine() as unknown as { runKernel: (...args: unknown[]) => unknown };
    const original = engine.runKernel;
    engine.runKernel = (...args: unknown[]) => {
      const name = args[0] as string;
      this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
      return original.apply(engine, args);
    };
    this.restore.push(() => (engine.runKernel = original));
    const backend = tf.backend() as unknown as { runWebGPUProgram?: (...args: unknown[]) => unknown };
    const run = backend.runWebGPUProgram;
    if (tf.getBackend() === 'webgpu' && typeof run === 'function') {
      backend.runWebGPUProgram = (...args: unknown[]) => {
        this.dispatches++;
        return run.apply(backend, args);
      };
      this.restore.push(() => (backend.runWebGPUProgram = run));
    }
  }
  uninstall(): void {
    for (const r of this.restore.reverse()) r();
    this.restore = [];
  }
  measure(fn: () => void): { total: number; compute: number; byName: Map<string, number> } {
    this.byName = new Map();
    this.dispatches = 0;
    fn();
    let total = 0;
    let compute = 0;
    for (const [name, n] of this.byName) {
      total += n;
      if (!META.has(name)) compute += n;
    }
    return { total, compute, byName: this.byName };
  }
}

interface KernelFigures {
  /** webgpu only: GPU programs dispatched by one training step. */
  dispatches?: number;
  forward: number;
  forwardBackward: number;
  optimizer: number;
  step: number;
  stepCompute: number;
  top: string;
}

function countKernels(
  preset: 'tiny' | 'small',
  convImpl: ConvImpl,
  update: 'auto' | 'composed',
  batch: ModelInputs,
): KernelFigures {
  const config = PRESETS[preset];
  const t = trainingConfig();
  const model = new XttsModel(config, SIZES, { seed: 1, convImpl });
  const opt = new AdamW(model.trainableVariables(), t, { update });
  const counter = new Counter();
  const vars = opt.variables;
  disposeStepResult(trainStep(model, opt, batch, t.loss)); // first call registers constants and pools
  counter.install();
  const fwd = counter.measure(() =>
    tf.tidy(() => void computeLosses(model.forward(batch, { training: true }), batch, t.loss)),
  );
  const fb = counter.measure(() =>
    tf.tidy(
      () =>
        void tf.variableGrads(() => computeLosses(model.forward(batch, { training: true }), batch, t.loss).total, vars),
    ),
  );
  const zeros = Object.fromEntries(vars.map((v) => [v.name, tf.zerosLike(v)]));
  const optimizer = counter.measure(() => {
    opt.accumulate(opt.flatten(zeros), tf.scalar(0));
    const r = opt.apply();
    tf.dispose([r.gradNorm, r.finite]);
  });
  const step = counter.measure(() => disposeStepResult(trainStep(model, opt, batch, t.loss)));
  const dispatches = counter.dispatches;
  counter.uninstall();
  tf.dispose(Object.values(zeros));
  model.dispose();
  opt.dispose();
  const top = [...step.byName]
    .filter(([n]) => !META.has(n))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([n, c]) => `${n} ${c}`)
    .join(', ');
  return {
    ...(dispatches > 0 ? { dispatches } : {}),
    forward: fwd.total,
    forwardBackward: fb.total,
    optimizer: optimizer.total,
    step: step.total,
    stepCompute: step.compute,
    top,
  };
}

interface Speed {
  /** Median step with a read-back after it. */
  stepMs: number;
  /** Steps per second with a read-back every 10th step. */
  stepsPerS: number;
  samplesPerS: number;
  /** webgpu: GPU time per step (tf.time's kernelMs) and its share of the step's wall time. */
  gpuMs?: number;
  gpuBusy?: number;
}

async function timeSteps(preset: 'tiny' | 'small', batch: ModelInputs, steps: number): Promise<Speed> {
  const config = PRESETS[preset];
  const t = trainingConfig();
  const model = new XttsModel(config, SIZES, { seed: 1 });
  const opt = new AdamW(model.trainableVariables(), t);
  const step = (read: boolean) => {
    const r = trainStep(model, opt, batch, t.loss);
    const done = read ? r.stats.data() : undefined;
    return done ? done.then(() => disposeStepResult(r)) : (disposeStepResult(r), undefined);
  };
  await step(true); // the first step makes constants, dropout pools and (on GPUs) compiles kernels
  const times: number[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    await step(true);
    times.push(performance.now() - t0);
  }
  // CPU backends compute synchronously, so read-backs cost nothing there: fewer steps suffice.
  const pipelined = tf.getBackend() === 'webgpu' ? Math.max(steps, 10) : steps;
  const t0 = performance.now();
  for (let i = 1; i <= pipelined; i++) await step(i % 10 === 0 || i === pipelined);
  const stepsPerS = pipelined / ((performance.now() - t0) / 1000);
  const speed: Speed = { stepMs: median(times), stepsPerS, samplesPerS: stepsPerS * BATCH.utterances };
  if (tf.getBackend() === 'webgpu') {
    // Timestamp queries around every program (they serialise the step, so its own wall time is not
    // representative): the GPU's work per step, set against the pipelined step time above.
    const info = await tf.time(() => void step(false));
    const kernelMs = info.kernelMs as number | { error: string };
    if (typeof kernelMs === 'number') {
      speed.gpuMs = kernelMs;
      speed.gpuBusy = kernelMs / (1000 / stepsPerS);
    }
  }
  model.dispose();
  opt.dispose();
  return speed;
}

/** webgpu: the layer-norm programs against the composition, value and gradients. */
async function checkLayerNorm(): Promise<string> {
  const store = new ParamStore(1);
  const ln = new LayerNorm(store, 'ln', 256);
  ln.g.assign(tf.randomUniform([256], 0.5, 1.5, 'float32', 2));
  const x = tf.variable(tf.randomNormal([100, 256], 0.3, 2, 'float32', 3));
  const dy = tf.randomNormal([100, 256], 0, 1, 'float32', 4);
  const run = (fused: boolean) => {
    switchGpuPrograms(tf, 'layer-norm', fused);
    // x enters through an op, as activations do, so its gradient flows through the norm's backward.
    const { grads } = tf.variableGrads(
      () => tf.sum(tf.mul(ln.apply(tf.mul(x, 1) as tf.Tensor2D), dy)) as tf.Scalar,
      [x, ln.g],
    );
    const y = ln.apply(x as tf.Tensor2D);
    switchGpuPrograms(tf, 'layer-norm', true);
    return { y, dx: grads[x.name], dg: grads[ln.g.name] };
  };
  const a = run(true);
  const b = run(false);
  // Read back asynchronously: synchronous reads need OffscreenCanvas on webgpu, which Node lacks.
  const diff = async (p: tf.Tensor, q: tf.Tensor) => (await tf.max(tf.abs(tf.sub(p, q))).data())[0].toExponential(1);
  return (
    `max |fused − composed|: y ${await diff(a.y, b.y)}, ` +
    `dx ${await diff(a.dx, b.dx)}, dgain ${await diff(a.dg, b.dg)}`
  );
}

/** webgpu: one tiny-model training step with the programs and with the composition. */
async function checkStep(batch: ModelInputs): Promise<string> {
  const t = trainingConfig();
  const run = async (fused: boolean) => {
    switchGpuPrograms(tf, 'layer-norm', fused);
    const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 1, prenetDropout: 0 });
    const opt = new AdamW(model.trainableVariables(), t);
    const r = trainStep(model, opt, batch, t.loss);
    const stats = Array.from(await r.stats.data());
    disposeStepResult(r);
    model.dispose();
    opt.dispose();
    switchGpuPrograms(tf, 'layer-norm', true);
    return stats;
  };
  const a = await run(true);
  const b = await run(false);
  return `loss ${a[0].toFixed(5)} vs ${b[0].toFixed(5)}, grad norm ${a[5].toFixed(5)} vs ${b[5].toFixed(5)}`;
}

const presets = (process.env.BENCH_PRESETS ?? 'tiny,small').split(',') as ('tiny' | 'small')[];
const flags = (process.env.BENCH_TFJS_FLAGS ?? '')
  .split(',')
  .filter(Boolean)
  .map((kv) => kv.split('='));
const results: Record<string, unknown> = {};
let kernels: Record<string, { gpu: KernelFigures; cpu: KernelFigures }> | undefined;
for (const backend of backends) {
  try {
    await initBackend(backend as 'cpu' | 'wasm' | 'webgpu');
  } catch (e) {
    console.log(`${backend}: not available (${(e as Error).message.split('\n')[0]})`);
    continue;
  }
  for (const [name, value] of flags)
    tf.env().set(name, value === 'true' ? true : value === 'false' ? false : Number(value));
  console.log(
    `\n${backend} backend (tfjs ${tf.version_core}), batch ${BATCH.utterances} ` +
      `× ${BATCH.tokens} tokens × ${BATCH.frames} frames, ref ${BATCH.refFrames} frames`,
  );
  if (fusedLayerNormAvailable()) {
    console.log(`  layer-norm programs: ${await checkLayerNorm()}`);
    const b = syntheticBatch(shapeFor(PRESETS.tiny, BATCH.utterances, BATCH.tokens, BATCH.frames, BATCH.refFrames), 1);
    console.log(`  tiny step, programs vs composition: ${await checkStep(b)}`);
    tf.dispose(b as unknown as tf.TensorContainer);
  }
  for (const preset of presets) {
    const batch = syntheticBatch(
      shapeFor(PRESETS[preset], BATCH.utterances, BATCH.tokens, BATCH.frames, BATCH.refFrames),
      1,
    );
    // The native-conv variant's backward needs Conv2DBackpropFilter, which tfjs-backend-wasm lacks: the counts
    // wait for a backend that has it (with BENCH_BACKENDS=wasm alone there is none, and they are not printed).
    const canCount = tf.getKernel('Conv2DBackpropFilter', backend) !== undefined;
    if (!kernels?.[preset] && !canCount)
      console.log(`  ${preset}: kernel counts skipped (${backend} has no Conv2DBackpropFilter for native convs)`);
    if (!kernels?.[preset] && canCount) {
      kernels ??= {};
      const small = syntheticBatch(
        shapeFor(
          PRESETS[preset],
          COUNT_BATCH.utterances,
          COUNT_BATCH.tokens,
          COUNT_BATCH.frames,
          COUNT_BATCH.refFrames,
        ),
        2,
      );
      kernels[preset] = {
        gpu: countKernels(preset, 'native', 'composed', small),
        cpu: countKernels(preset, 'auto', 'auto', small),
      };
      tf.dispose(small as unknown as tf.TensorContainer);
      const k = kernels[preset];
      const params = new XttsModel(PRESETS[preset], SIZES, {}, true).parameterCount();
      console.log(`  ${preset} (${(params / 1e6).toFixed(2)} M parameters here) kernels per training step:`);
      console.log(
        `    native convs, composed update: ${k.gpu.step} (${k.gpu.stepCompute} compute, ` +
          `the rest Reshape/Identity) = forward ${k.gpu.forward} (no tape) | ` +
          `forward+backward ${k.gpu.forwardBackward} | optimizer ${k.gpu.optimizer}`,
      );
      if (k.gpu.dispatches) console.log(`    GPU programs dispatched per step (webgpu): ${k.gpu.dispatches}`);
      console.log(
        `    ${backend} defaults:             ${k.cpu.step} (${k.cpu.stepCompute} ` +
          `compute); optimizer ${k.cpu.optimizer}`,
      );
      console.log(`    most frequent compute kernels: ${k.gpu.top}`);
    }
    const speed = await timeSteps(
      preset,
      batch,
      preset === 'small' && backend !== 'webgpu' ? Math.max(2, Math.ceil(timedSteps / 2)) : timedSteps,
    );
    const gpu =
      speed.gpuMs === undefined
        ? ''
        : `; GPU time ${speed.gpuMs.toFixed(1)} ms per step = ` +
          `busy ${(100 * speed.gpuBusy!).toFixed(0)}% of the pipelined step`;
    console.log(
      `  ${preset}: median step ${speed.stepMs.toFixed(0)} ms with a read-back each ` +
        `step; ${speed.stepsPerS.toFixed(2)} steps/s, ${speed.samplesPerS.toFixed(1)} ` +
        `samples/s reading back every 10th${gpu}`,
    );
    results[`${backend}_${preset}`] = speed;
    // The alignment is an object of tensors and a count: tf.dispose walks it.
    tf.dispose(batch as unknown as tf.TensorContainer);
  }
}
console.log(
  '\ntarget: fewer kernels per step than the ~1,270 of the small transformer ' +
    'measured on the H100 (compute kernels are what cost a GPU launch)',
);
report('model', { batch: BATCH, kernels, ...results });
