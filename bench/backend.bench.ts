// One training step of a small transformer-like model (pre-norm self-attention + MLP blocks, a mel
// regression head, mean-squared loss, plain SGD update) on every backend that loads here: the median
// step time, the kernels one step dispatches, and the host time per kernel. On a GPU this engine is
// bound by the host's cost per kernel (ARCHITECTURE.md: ~1,270 kernels and ~100 ms of GPU work in an
// ~850 ms step on an H100), so host ms per kernel is the figure that says how far a backend is from
// keeping its device busy.
//
//   node --import tsx bench/backend.bench.ts [--backends cpu,wasm,webgpu,tensorflow] [--size tiny|small|medium]
//                                            [--steps 10] [--device 0|NAME] [--unsafe-apis] [--dawn-backend vulkan]
//   node bundle/backend-bench.cjs ...                    (the same, from the self-contained bundle: npm run bundle)
//
// Without --backends it runs every backend that loads here (webgpu only on a real GPU adapter).
// Timings: `stepMs` is dispatch + read-back of the loss (latency); `dispatchMs` the host time to
// issue the step (on cpu/wasm the kernels run inside it, on webgpu they are queued); `hostMsPerKernel`
// is dispatchMs / kernels. On webgpu one extra step is timed with timestamp queries (deviceMs).
import type * as TfTypes from '@tensorflow/tfjs-core';
import {
  type BackendChoice,
  disposeBackend,
  initBackend,
  KernelCounter,
  probeBackends,
  timeOnDevice,
} from '../src/core/backend/index.js';
import type { Backend } from '../src/core/config/schema.js';
import { median, report } from './lib.js';

type Tf = typeof TfTypes;
type ConcreteBackend = Exclude<Backend, 'auto'>;

interface Size {
  batch: number;
  frames: number;
  melBins: number;
  width: number;
  heads: number;
  layers: number;
}

// tiny fits this 2-core machine's CPU backends in seconds; small and medium are for GPUs.
const SIZES: Record<string, Size> = {
  tiny: { batch: 2, frames: 32, melBins: 80, width: 64, heads: 4, layers: 2 },
  small: { batch: 8, frames: 128, melBins: 80, width: 256, heads: 4, layers: 4 },
  medium: { batch: 16, frames: 256, melBins: 80, width: 512, heads: 8, layers: 6 },
};

function arg(name: string, env: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0) return process.argv[i + 1];
  return process.env[env] ?? fallback;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

/** Parameters of the model, as TF.js variables. */
function makeParams(tf: Tf, s: Size): Record<string, TfTypes.Variable> {
  let seed = 1;
  const init = (shape: number[], fanIn: number) =>
    tf.variable(tf.randomNormal(shape, 0, 1 / Math.sqrt(fanIn), 'float32', seed++));
  const p: Record<string, TfTypes.Variable> = {
    inProj: init([s.melBins, s.width], s.melBins),
    outProj: init([s.width, s.melBins], s.width),
  };
  for (let l = 0; l < s.layers; l++) {
    p[`l${l}.ln1g`] = tf.variable(tf.ones([s.width]));
    p[`l${l}.ln1b`] = tf.variable(tf.zeros([s.width]));
    p[`l${l}.qkv`] = init([s.width, 3 * s.width], s.width);
    p[`l${l}.o`] = init([s.width, s.width], s.width);
    p[`l${l}.ln2g`] = tf.variable(tf.ones([s.width]));
    p[`l${l}.ln2b`] = tf.variable(tf.zeros([s.width]));
    p[`l${l}.w1`] = init([s.width, 4 * s.width], s.width);
    p[`l${l}.b1`] = tf.variable(tf.zeros([4 * s.width]));
    p[`l${l}.w2`] = init([4 * s.width, s.width], 4 * s.width);
    p[`l${l}.b2`] = tf.variable(tf.zeros([s.width]));
  }
  return p;
}

/** Mean-squared error of the model's mel prediction: x [batch, frames, melBins] -> same shape. */
function loss(
  tf: Tf,
  s: Size,
  p: Record<string, TfTypes.Variable>,
  x: TfTypes.Tensor3D,
  target: TfTypes.Tensor3D,
  causal: TfTypes.Tensor2D,
): TfTypes.Scalar {
  const { batch: B, frames: T, width: D, heads: H } = s;
  const dh = D / H;
  const dense = (h: TfTypes.Tensor, w: TfTypes.Tensor, b?: TfTypes.Tensor) => {
    const y = tf.matMul(tf.reshape(h, [-1, w.shape[0]]) as TfTypes.Tensor2D, w as TfTypes.Tensor2D);
    return tf.reshape(b ? tf.add(y, b) : y, [B, T, w.shape[1] as number]);
  };
  const norm = (h: TfTypes.Tensor, g: TfTypes.Tensor, b: TfTypes.Tensor) => {
    const { mean, variance } = tf.moments(h, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(h, mean), tf.sqrt(tf.add(variance, 1e-5))), g), b);
  };
  const heads = (t: TfTypes.Tensor) => tf.transpose(tf.reshape(t, [B, T, H, dh]), [0, 2, 1, 3]); // [B, H, T, dh]
  let h = dense(x, p.inProj); // [B, T, D]
  for (let l = 0; l < s.layers; l++) {
    const a = norm(h, p[`l${l}.ln1g`], p[`l${l}.ln1b`]);
    const [q, k, v] = tf.split(dense(a, p[`l${l}.qkv`]), 3, -1).map(heads);
    const scores = tf.add(
      tf.mul(tf.matMul(q as TfTypes.Tensor4D, k as TfTypes.Tensor4D, false, true), 1 / Math.sqrt(dh)),
      causal,
    ); // [B, H, T, T]
    const attended = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), v as TfTypes.Tensor4D), [0, 2, 1, 3]), [
      B,
      T,
      D,
    ]);
    h = tf.add(h, dense(attended, p[`l${l}.o`]));
    const m = norm(h, p[`l${l}.ln2g`], p[`l${l}.ln2b`]);
    h = tf.add(h, dense(tf.relu(dense(m, p[`l${l}.w1`], p[`l${l}.b1`])), p[`l${l}.w2`], p[`l${l}.b2`]));
  }
  return tf.mean(tf.square(tf.sub(dense(h, p.outProj), target)));
}

interface BackendFigures {
  backend: ConcreteBackend;
  device: string;
  stepMs: number;
  dispatchMs: number;
  kernels: number;
  dispatches: number;
  hostMsPerKernel: number;
  deviceMs: number | null;
  deviceNote?: string;
  tensorsLeakedPerStep: number;
  loss: number;
}

async function benchBackend(
  backend: ConcreteBackend,
  s: Size,
  steps: number,
  options: { device?: string | number | null; unsafeApis: boolean; dawnBackend?: string },
): Promise<BackendFigures> {
  const { tf, choice } = await initBackend(backend, options);
  await import('../src/core/model/gradients.js');
  const p = makeParams(tf, s);
  const vars = Object.values(p);
  const x = tf.randomNormal([s.batch, s.frames, s.melBins], 0, 1, 'float32', 7) as TfTypes.Tensor3D;
  const target = tf.randomNormal([s.batch, s.frames, s.melBins], 0, 1, 'float32', 8) as TfTypes.Tensor3D;
  // -1e9 above the diagonal: each frame attends to itself and earlier frames only.
  const causal = tf.tidy(() =>
    tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([s.frames, s.frames]), -1, 0)), -1e9),
  ) as TfTypes.Tensor2D;
  const learningRate = 1e-3;
  const step = () =>
    tf.tidy(() => {
      const { value, grads } = tf.variableGrads(() => loss(tf, s, p, x, target, causal), vars);
      for (const v of vars) v.assign(tf.sub(v, tf.mul(grads[v.name], learningRate)));
      return value;
    });
  const counter = new KernelCounter().install(tf);
  for (let i = 0; i < 2; i++) {
    const warm = step(); // compiles shaders / warms XNNPACK caches
    await warm.data();
    warm.dispose();
  }
  counter.take();
  const tensorsBefore = tf.memory().numTensors;
  const stepMs: number[] = [];
  const dispatchMs: number[] = [];
  let kernels = 0;
  let dispatches = 0;
  let last = 0;
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    const value = step();
    dispatchMs.push(performance.now() - t0);
    last = (await value.data())[0];
    stepMs.push(performance.now() - t0);
    value.dispose();
    const c = counter.takeAll();
    kernels = c.kernels;
    dispatches = c.dispatches;
  }
  const tensorsLeakedPerStep = (tf.memory().numTensors - tensorsBefore) / steps;
  counter.uninstall();
  let deviceMs: number | null = null;
  let deviceNote: string | undefined;
  if (backend === 'webgpu') {
    let value: TfTypes.Scalar | undefined;
    const t = await timeOnDevice(tf, () => {
      value = step();
    });
    value?.dispose();
    if (t.available) deviceMs = t.kernelMs;
    else deviceNote = t.reason;
  }
  tf.dispose([...vars, x, target, causal]);
  disposeBackend(tf);
  const dispatch = median(dispatchMs);
  return {
    backend,
    device: describeDevice(choice),
    stepMs: median(stepMs),
    dispatchMs: dispatch,
    kernels,
    dispatches,
    hostMsPerKernel: dispatch / kernels,
    deviceMs,
    deviceNote,
    tensorsLeakedPerStep,
    loss: last,
  };
}

function describeDevice(choice: BackendChoice): string {
  if (choice.adapter) return `${choice.adapter.name} (${choice.adapter.dawnBackend})`;
  if (choice.wasm) return `wasm ${choice.wasm.simd ? 'SIMD' : 'scalar'}, ${choice.wasm.threads} thread(s)`;
  return choice.tensorflowPackage ?? 'JavaScript';
}

async function main(): Promise<void> {
  const sizeName = arg('size', 'BENCH_SIZE', 'tiny') as string;
  const s = SIZES[sizeName];
  if (!s) throw new Error(`--size ${sizeName}: one of ${Object.keys(SIZES).join(', ')}`);
  const steps = Number(arg('steps', 'BENCH_STEPS', '10'));
  const deviceArg = arg('device', 'BENCH_DEVICE');
  const options = {
    device: deviceArg === undefined ? null : /^\d+$/.test(deviceArg) ? Number(deviceArg) : deviceArg,
    unsafeApis: flag('unsafe-apis'),
    dawnBackend: arg('dawn-backend', 'BENCH_DAWN_BACKEND'),
  };
  let backends = arg('backends', 'BENCH_BACKENDS')?.split(',') as ConcreteBackend[] | undefined;
  if (!backends) {
    const probes = await probeBackends(options);
    for (const pr of probes)
      if (!pr.available || (pr.backend === 'webgpu' && pr.adapters?.every((a) => a.software)))
        console.log(`skip ${pr.backend}: ${pr.available ? 'no GPU adapter, only a CPU implementation' : pr.reason}`);
    backends = probes
      .filter((pr) => pr.available && !(pr.backend === 'webgpu' && pr.adapters?.every((a) => a.software)))
      .map((pr) => pr.backend);
  }
  const params = s.melBins * s.width * 2 + s.layers * (12 * s.width * s.width + 9 * s.width);
  console.log(
    `model: ${s.layers} blocks, width ${s.width}, ${s.heads} ` +
      `heads, ${(params / 1e6).toFixed(2)} M parameters; batch ${s.batch} ` +
      `x ${s.frames} frames x ${s.melBins} mel bins (--size ${sizeName}); median ` +
      `of ${steps} steps after 2 warm-up steps`,
  );
  const results: BackendFigures[] = [];
  for (const backend of backends) {
    const r = await benchBackend(backend, s, steps, options);
    results.push(r);
    console.log(
      `${backend.padEnd(10)} ${r.device}: step ${r.stepMs.toFixed(1)} ms ` +
        `(dispatch ${r.dispatchMs.toFixed(1)} ms), ${r.kernels} kernels/step` +
        `${backend === 'webgpu' ? ` (${r.dispatches} GPU programs)` : ''}, ${(r.hostMsPerKernel * 1000).toFixed(1)} ` +
        `µs host/kernel` +
        ('' +
          (backend === 'webgpu'
            ? `, device ` +
              (r.deviceMs === null
                ? `n/a (${r.deviceNote})`
                : `${r.deviceMs.toFixed(1)} ms/step ` + `(busy ${((100 * r.deviceMs) / r.stepMs).toFixed(0)}%)`)
            : '')) +
        `${r.tensorsLeakedPerStep ? `, LEAK ${r.tensorsLeakedPerStep} tensors/step` : ''}`,
    );
  }
  // Targets: on a GPU, host work per step should not exceed the device's (≤ 100 µs/kernel keeps
  // ~1,270 kernels within ~130 ms, about the H100's ~100 ms of work); here, wasm beats cpu.
  const wasm = results.find((r) => r.backend === 'wasm');
  const cpu = results.find((r) => r.backend === 'cpu');
  if (wasm && cpu)
    console.log(
      `target: wasm faster than cpu — ${(cpu.stepMs / wasm.stepMs).toFixed(1)}x ` +
        `(${wasm.stepMs < cpu.stepMs ? 'met' : 'NOT met'})`,
    );
  const gpu = results.find((r) => r.backend === 'webgpu');
  if (gpu)
    console.log(
      `target: webgpu host time ≤ 100 µs/kernel ` +
        `— ${(gpu.hostMsPerKernel * 1000).toFixed(1)} µs ` +
        `(${gpu.hostMsPerKernel <= 0.1 ? 'met' : 'NOT met'})`,
    );
  report('backend', { size: sizeName, steps, results });
}

main().catch((e) => {
  console.error(
    e instanceof Error
      ? `${e.message}` +
          ((e as { suggestions?: string[] }).suggestions
            ? `\n  ${(e as { suggestions: string[] }).suggestions.join('\n  ')}`
            : '')
      : e,
  );
  process.exitCode = 1;
});
