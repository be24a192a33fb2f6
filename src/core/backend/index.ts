// TensorFlow.js backends: webgpu (Dawn through the `webgpu` package), tensorflow (tfjs-node-gpu /
// tfjs-node, optional dependencies), wasm and cpu. `auto` takes the fastest that works here and says
// why each faster one was passed over. Imported only by commands that compute.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Backend } from '../config/schema.js';
import { ExitCode, XttsError } from '../errors.js';

export type ConcreteBackend = Exclude<Backend, 'auto'>;

export interface BackendChoice {
  backend: ConcreteBackend;
  reason: string;
  /** Backends tried before this one, and why they were not used. */
  fallbacks: { backend: ConcreteBackend; reason: string }[];
  /** The WebGPU adapter in use. */
  adapter?: { vendor: string; architecture: string; device: string; description: string; features: string[] };
}

export interface BackendOptions {
  /** GPU by name substring (Dawn's `adapter=` option); an index selects among Dawn's adapters in order. */
  device?: number | string | null;
  /** Dawn's allow_unsafe_apis (exposes subgroup matrices, i.e. tensor cores, on NVIDIA). */
  unsafeApis?: boolean;
}

const require_ = createRequire(import.meta.url);

export function tensorflowUnavailableReason(): string {
  return 'neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node is installed: they are optional dependencies whose install script downloads libtensorflow (network needed at install time; the GPU build wants CUDA 11.2 and cuDNN 8.1). Install one with `npm install @tensorflow/tfjs-node-gpu` on a host that can reach storage.googleapis.com, or use --backend webgpu';
}

/** Where the Vulkan loader Dawn needs would be found, or undefined (checked before Dawn prints its own warning). */
export function findVulkanLoader(): string | undefined {
  const dirs = [...(process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean), '/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/usr/local/lib', '/usr/lib/aarch64-linux-gnu'];
  if (process.platform !== 'linux') return 'system';
  for (const d of dirs) if (existsSync(join(d, 'libvulkan.so.1'))) return join(d, 'libvulkan.so.1');
  return undefined;
}

async function tryWebgpu(tf: typeof import('@tensorflow/tfjs-core'), options: BackendOptions): Promise<{ ok: true; adapter: BackendChoice['adapter'] } | { ok: false; reason: string }> {
  let webgpu: { create: (opts: string[]) => unknown; globals: Record<string, unknown> };
  try {
    webgpu = (await import('webgpu')) as never;
  } catch (e) {
    return { ok: false, reason: `the webgpu package (Dawn) cannot be loaded: ${(e as Error).message.split('\n')[0]}` };
  }
  if (!findVulkanLoader()) return { ok: false, reason: 'the Vulkan loader (libvulkan.so.1) is not installed, so Dawn cannot reach a GPU: apt-get install libvulkan1 (with the GPU driver\'s Vulkan ICD), or source the GPU runtime\'s setup.sh' };
  const flags: string[] = [];
  if (options.unsafeApis) flags.push('enable-dawn-features=allow_unsafe_apis');
  if (typeof options.device === 'string') flags.push(`adapter=${options.device}`);
  let gpu: { requestAdapter(o?: object): Promise<unknown> };
  try {
    Object.assign(globalThis, webgpu.globals);
    gpu = webgpu.create(flags) as typeof gpu;
  } catch (e) {
    return { ok: false, reason: `Dawn could not start: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}` };
  }
  const adapter = (await gpu.requestAdapter({ powerPreference: 'high-performance' }).catch(() => null)) as { info?: Record<string, string>; features: Set<string> } | null;
  if (!adapter) return { ok: false, reason: 'Dawn found no GPU adapter (no Vulkan driver, or no GPU): on NVIDIA hosts the Vulkan loader (libvulkan1) and the driver\'s ICD must be installed' };
  const g = globalThis as { navigator?: { gpu?: unknown } };
  if (!g.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
  (g.navigator as { gpu?: unknown }).gpu = gpu;
  await import('@tensorflow/tfjs-backend-webgpu');
  if (!(await tf.setBackend('webgpu'))) return { ok: false, reason: 'TensorFlow.js could not initialise its webgpu backend on the adapter' };
  const info = adapter.info ?? {};
  return {
    ok: true,
    adapter: { vendor: info.vendor ?? '', architecture: info.architecture ?? '', device: info.device ?? '', description: info.description ?? '', features: [...adapter.features].sort() },
  };
}

async function tryTensorflow(tf: typeof import('@tensorflow/tfjs-core')): Promise<string | undefined> {
  for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
    try {
      require_.resolve(pkg);
    } catch {
      continue;
    }
    try {
      await import(pkg);
      if (await tf.setBackend('tensorflow')) return undefined;
      return `${pkg} is installed but its backend did not initialise`;
    } catch (e) {
      return `${pkg} is installed but failed to load: ${(e as Error).message.split('\n')[0]}`;
    }
  }
  return tensorflowUnavailableReason();
}

/**
 * tfjs-backend-wasm 4.22 multiplies with XNNPACK only when neither operand is transposed; with
 * transposeA it falls back to a path ~20x slower (measured here: 245 ms against 12 ms for
 * [1536,512]ᵀ·[1536,128]), and every weight gradient of a dense layer is such a product. Wrapping
 * the kernel to transpose explicitly (one cheap Transpose) and then call the fast path fixes it for
 * every model, without touching the gradient definitions.
 */
function fastTransposedMatMul(tf: typeof import('@tensorflow/tfjs-core')): void {
  const original = tf.getKernel('BatchMatMul', 'wasm');
  const transpose = tf.getKernel('Transpose', 'wasm');
  if (!original || !transpose) return;
  type Info = { dataId: object; shape: number[]; dtype: string };
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...original,
    kernelFunc: (args) => {
      const { inputs, backend, attrs } = args as unknown as { inputs: { a: Info; b: Info }; backend: { disposeData(id: object): void }; attrs: { transposeA: boolean; transposeB: boolean } };
      if (!attrs.transposeA && !attrs.transposeB) return original.kernelFunc(args);
      const flip = (x: Info) => {
        const r = x.shape.length;
        const perm = [...Array(r - 2).keys(), r - 1, r - 2];
        return transpose.kernelFunc({ inputs: { x } as never, backend: backend as never, attrs: { perm } as never }) as unknown as Info;
      };
      const a = attrs.transposeA ? flip(inputs.a) : inputs.a;
      const b = attrs.transposeB ? flip(inputs.b) : inputs.b;
      const out = original.kernelFunc({ ...args, inputs: { a, b } as never, attrs: { ...attrs, transposeA: false, transposeB: false } as never });
      if (a !== inputs.a) backend.disposeData(a.dataId);
      if (b !== inputs.b) backend.disposeData(b.dataId);
      return out;
    },
  });
}

async function tryWasm(tf: typeof import('@tensorflow/tfjs-core')): Promise<string | undefined> {
  try {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    const bundleDir = (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;
    const dir = bundleDir ?? dirname(require_.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
    wasm.setWasmPaths(`${join(dir, '/')}`);
    if (!(await tf.setBackend('wasm'))) return 'the wasm backend did not initialise';
    fastTransposedMatMul(tf);
    return undefined;
  } catch (e) {
    return `the wasm backend failed to load: ${(e as Error).message.split('\n')[0]}`;
  }
}

/** Load TensorFlow.js with the requested backend, or fall back (auto) with reasons. */
export async function initBackend(requested: Backend, options: BackendOptions = {}): Promise<{ tf: typeof import('@tensorflow/tfjs-core'); choice: BackendChoice }> {
  const tf = await import('@tensorflow/tfjs-core');
  // PROD silences TF.js's console hints (e.g. "install tfjs-node") on our stdout.
  tf.env().set('PROD', true);
  const fallbacks: BackendChoice['fallbacks'] = [];
  const order: ConcreteBackend[] = requested === 'auto' ? ['webgpu', 'tensorflow', 'wasm', 'cpu'] : [requested];
  for (const b of order) {
    if (b === 'webgpu') {
      const r = await tryWebgpu(tf, options);
      if (r.ok) return { tf, choice: { backend: 'webgpu', reason: requested === 'auto' ? 'a WebGPU adapter is available (fastest here)' : 'requested', fallbacks, adapter: r.adapter } };
      fallbacks.push({ backend: 'webgpu', reason: r.reason });
    } else if (b === 'tensorflow') {
      const why = await tryTensorflow(tf);
      if (!why) return { tf, choice: { backend: 'tensorflow', reason: requested === 'auto' ? 'libtensorflow is installed' : 'requested', fallbacks } };
      fallbacks.push({ backend: 'tensorflow', reason: why });
    } else if (b === 'wasm') {
      const why = await tryWasm(tf);
      if (!why) return { tf, choice: { backend: 'wasm', reason: requested === 'auto' ? 'no GPU backend works here; wasm (SIMD) is the fastest CPU backend' : 'requested', fallbacks } };
      fallbacks.push({ backend: 'wasm', reason: why });
    } else {
      await import('@tensorflow/tfjs-backend-cpu');
      if (await tf.setBackend('cpu')) return { tf, choice: { backend: 'cpu', reason: requested === 'auto' ? 'the only backend that loaded' : 'requested', fallbacks } };
      fallbacks.push({ backend: 'cpu', reason: 'the cpu backend did not initialise' });
    }
  }
  const last = fallbacks[fallbacks.length - 1];
  throw new XttsError('BACKEND_UNAVAILABLE', `backend ${requested} is not available here: ${last?.reason ?? 'unknown'}`, {
    exitCode: ExitCode.environment,
    suggestions: [requested === 'webgpu' ? 'run `xtts diagnose-gpu-utilization` to see the adapters Dawn finds, or use --backend auto' : 'use --backend auto to take the fastest that works here'],
  });
}

/**
 * Counts kernels (TF.js ops that reach a backend) by wrapping the engine's runKernel: the number a
 * training step dispatches is the main cost driver of this engine on a GPU.
 */
export class KernelCounter {
  count = 0;
  private restore?: () => void;

  install(tf: typeof import('@tensorflow/tfjs-core')): this {
    const engine = tf.engine() as unknown as { runKernel: (...args: unknown[]) => unknown };
    const original = engine.runKernel;
    engine.runKernel = (...args: unknown[]) => {
      this.count++;
      return original.apply(engine, args);
    };
    this.restore = () => {
      engine.runKernel = original;
    };
    return this;
  }

  /** Kernels since the last call. */
  take(): number {
    const n = this.count;
    this.count = 0;
    return n;
  }

  uninstall(): void {
    this.restore?.();
  }
}
