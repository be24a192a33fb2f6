// Choosing the TensorFlow.js backend: the one asked for, or with `auto` the fastest that works here
// (webgpu > tensorflow > wasm > cpu), saying why each faster one was passed over.
import type { Backend } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';
import type { ConcreteBackend } from './precision.js';
import {
  initTensorflow,
  installedTensorflowPackage,
  TENSORFLOW_INSTALL_HINT,
  tensorflowUnavailableReason,
} from './tensorflow.js';
import { fastCpuKernels } from './cpu.js';
import { initWasm } from './wasm.js';
import {
  type AdapterDescription,
  type DawnOptions,
  disposeWebgpu,
  listAdapters,
  registerWebgpuBackend,
  selectAdapter,
} from './webgpu.js';

type Tf = typeof import('@tensorflow/tfjs-core');

export const AUTO_ORDER: readonly ConcreteBackend[] = ['webgpu', 'tensorflow', 'wasm', 'cpu'];

export interface BackendOptions extends DawnOptions {
  /** GPU by index in Dawn's adapter order, or by a case-insensitive substring of its name; null: Dawn's first. */
  device?: number | string | null;
  /** device.matmul on webgpu: tfjs's matmul programs, or xtts's tiled one (backend/programs/matmul.ts). */
  matmul?: 'tfjs' | 'tiled';
  /**
   * training.precision: mixed_fp16 takes webgpu only, with the tensor-core matmul (f16 operands, f32
   * sums) in place of the float32 ones; an adapter without it is passed over with the reason.
   */
  precision?: 'fp32' | 'mixed_fp16';
}

export interface BackendChoice {
  backend: ConcreteBackend;
  /** Why this backend: "requested", or why auto took it. */
  reason: string;
  /** Backends tried before this one, and why they were not used. */
  fallbacks: { backend: ConcreteBackend; reason: string }[];
  /** The WebGPU adapter in use (webgpu). */
  adapter?: AdapterDescription;
  /** webgpu: whether its shaders keep Dawn's bounds checks (BackendOptions.robustness; device.bounds_checks). */
  boundsChecks?: boolean;
  /** The wasm build in use (wasm). */
  wasm?: { simd: boolean; threads: number };
  /** The package that provides libtensorflow (tensorflow). */
  tensorflowPackage?: string;
}

async function loadTf(): Promise<Tf> {
  const tf = await import('@tensorflow/tfjs-core');
  // PROD silences TF.js's console hints (e.g. "install tfjs-node") on our stdout.
  tf.env().set('PROD', true);
  return tf;
}

/** What a run's backend line adds where its webgpu device runs shaders without bounds checks (device.bounds_checks). */
export function boundsChecksNote(choice: BackendChoice): string {
  return choice.boundsChecks === false ? '; shaders without bounds checks' : '';
}

function adapterLabel(a: AdapterDescription): string {
  const kind = [a.vendor, a.architecture].filter(Boolean).join(' ');
  return `${a.name}${kind ? ` (${kind})` : ''} on Dawn's ${a.dawnBackend} backend`;
}

/**
 * Load TensorFlow.js with the requested backend, or with `auto` the fastest that works here; an
 * XttsError (BACKEND_UNAVAILABLE, exit code 3) when none does, carrying the reasons.
 */
export async function initBackend(
  requested: Backend,
  options: BackendOptions = {},
): Promise<{ tf: Tf; choice: BackendChoice }> {
  const tf = await loadTf();
  const auto = requested === 'auto';
  const fallbacks: BackendChoice['fallbacks'] = [];
  for (const backend of auto ? AUTO_ORDER : [requested]) {
    if (options.precision === 'mixed_fp16' && backend !== 'webgpu') {
      fallbacks.push({
        backend,
        reason:
          'training.precision mixed_fp16 needs webgpu: its f16 matmul is a WebGPU ' +
          'tensor-core program, and this backend computes in float32 only',
      });
      continue;
    }
    if (backend === 'webgpu') {
      const sel = await selectAdapter(options.device, options);
      if (!sel.ok) {
        fallbacks.push({ backend, reason: sel.reason });
        continue;
      }
      if (auto && sel.description.software) {
        fallbacks.push({
          backend,
          reason:
            `the WebGPU adapter Dawn ` +
            (`offers, ${sel.description.name}, ` +
              (sel.description.dawnBackend === 'null'
                ? "computes nothing (Dawn's null backend)"
                : 'is a CPU implementation, slower than the wasm backend')),
        });
        continue;
      }
      const failed = await registerWebgpuBackend(tf, sel, options.matmul ?? 'tfjs', options.precision ?? 'fp32');
      if (failed) {
        fallbacks.push({ backend, reason: failed });
        continue;
      }
      return {
        tf,
        choice: {
          backend,
          reason: `${auto ? 'a WebGPU adapter is available' : 'requested'}: ${adapterLabel(sel.description)}`,
          fallbacks,
          adapter: sel.description,
          boundsChecks: options.robustness !== false,
        },
      };
    }
    if (backend === 'tensorflow') {
      if (options.device !== null && options.device !== undefined) {
        // libtensorflow takes the first GPU CUDA_VISIBLE_DEVICES lists; it cannot be pointed at one here.
        fallbacks.push({
          backend,
          reason:
            `device.model_device (${JSON.stringify(options.device)}) picks a WebGPU adapter; ` +
            `the tensorflow backend trains on the first GPU CUDA_VISIBLE_DEVICES lists: set ` +
            `model_device: null and CUDA_VISIBLE_DEVICES instead`,
        });
        continue;
      }
      const r = await initTensorflow(tf);
      if (!r.ok) {
        fallbacks.push({ backend, reason: r.reason });
        continue;
      }
      return {
        tf,
        choice: {
          backend,
          reason: `${auto ? 'libtensorflow is installed' : 'requested'}: ${r.pkg}`,
          fallbacks,
          tensorflowPackage: r.pkg,
        },
      };
    }
    if (backend === 'wasm') {
      const r = await initWasm(tf);
      if (!r.ok) {
        fallbacks.push({ backend, reason: r.reason });
        continue;
      }
      const build =
        `${r.simd ? 'SIMD' : 'no SIMD'}, ${r.threads} ` +
        `thread${r.threads === 1 ? '' : 's'} (TF.js runs wasm single-threaded under Node)`;
      return {
        tf,
        choice: {
          backend,
          reason: auto ? `no GPU backend works here; wasm is the fastest CPU backend: ${build}` : `requested: ${build}`,
          fallbacks,
          wasm: { simd: r.simd, threads: r.threads },
        },
      };
    }
    await import('@tensorflow/tfjs-backend-cpu');
    fastCpuKernels(tf);
    if (await tf.setBackend('cpu'))
      return { tf, choice: { backend: 'cpu', reason: auto ? 'the only backend that loaded' : 'requested', fallbacks } };
    fallbacks.push({ backend: 'cpu', reason: 'the cpu backend did not initialise' });
  }
  const reasons = fallbacks.map((f) => (auto ? `${f.backend}: ${f.reason}` : f.reason)).join('; ');
  const suggestions =
    requested === 'tensorflow'
      ? [TENSORFLOW_INSTALL_HINT, 'or use --backend webgpu (GPU) or --backend auto']
      : requested === 'webgpu'
        ? [
            'run `xtts diagnose-gpu-utilization` to see the adapters Dawn finds',
            "on a GPU host without Vulkan libraries, source the GPU runtime folder's " +
              'setup.sh (`npm run gpu-runtime` builds it)',
            'or use --backend auto',
          ]
        : ['use --backend auto to take the fastest backend that works here'];
  throw new XttsError('BACKEND_UNAVAILABLE', `backend ${requested} is not available here: ${reasons}`, {
    exitCode: ExitCode.environment,
    suggestions,
  });
}

/** Give back what the current backend holds outside the JS heap (the GPU device), so Node can exit. */
export function disposeBackend(tf?: Tf): void {
  disposeWebgpu(tf);
}

export interface BackendProbe {
  backend: ConcreteBackend;
  /** Whether it loads here. */
  available: boolean;
  /** Why it does not, or what it runs on. */
  reason: string;
  /** webgpu: the adapters Dawn sees. */
  adapters?: AdapterDescription[];
  /** tensorflow: the package found. */
  package?: string;
  /** wasm: its build. */
  wasm?: { simd: boolean; threads: number };
}

/**
 * Whether each backend loads here, and the exact reason when one does not (for
 * `diagnose-gpu-utilization`). wasm and cpu are really initialised; the webgpu probe lists Dawn's
 * adapters without opening a device; tensorflow is loaded only when installed. The backend that was
 * current is current again afterwards.
 */
export async function probeBackends(options: BackendOptions = {}): Promise<BackendProbe[]> {
  const tf = await loadTf();
  const previous = tf.getBackend() as string | null;
  const probes: BackendProbe[] = [];

  const list = await listAdapters(options);
  if (list.adapters.length === 0)
    probes.push({
      backend: 'webgpu',
      available: false,
      reason: list.note ?? 'Dawn found no GPU adapter',
      adapters: [],
    });
  else {
    const hardware = list.adapters.filter((a) => !a.software);
    const sel =
      options.device === null || options.device === undefined
        ? undefined
        : await selectAdapter(options.device, options);
    if (sel && !sel.ok)
      probes.push({ backend: 'webgpu', available: false, reason: sel.reason, adapters: list.adapters });
    else {
      const first = sel?.ok ? sel.description : (hardware[0] ?? list.adapters[0]);
      const software = first.software
        ? " — not a GPU (a CPU implementation, or Dawn's null backend), which auto passes over for wasm"
        : '';
      probes.push({
        backend: 'webgpu',
        available: true,
        reason: `${adapterLabel(first)}${software}`,
        adapters: list.adapters,
      });
    }
  }

  const pkg = installedTensorflowPackage();
  if (!pkg) probes.push({ backend: 'tensorflow', available: false, reason: tensorflowUnavailableReason() });
  else {
    const r = await initTensorflow(tf);
    probes.push(
      r.ok
        ? { backend: 'tensorflow', available: true, reason: `${r.pkg} loads`, package: r.pkg }
        : { backend: 'tensorflow', available: false, reason: r.reason, package: pkg },
    );
  }

  const w = await initWasm(tf);
  probes.push(
    w.ok
      ? {
          backend: 'wasm',
          available: true,
          reason: `${w.simd ? 'SIMD' : 'no SIMD'}, ${w.threads} thread${w.threads === 1 ? '' : 's'}`,
          wasm: { simd: w.simd, threads: w.threads },
        }
      : { backend: 'wasm', available: false, reason: w.reason },
  );

  try {
    await import('@tensorflow/tfjs-backend-cpu');
    fastCpuKernels(tf);
    const ok = await tf.setBackend('cpu');
    probes.push({
      backend: 'cpu',
      available: ok,
      reason: ok ? 'plain JavaScript, always there' : 'the cpu backend did not initialise',
    });
  } catch (e) {
    probes.push({
      backend: 'cpu',
      available: false,
      reason: `the cpu backend failed to load: ${(e as Error).message.split('\n')[0]}`,
    });
  }

  if (previous && previous !== tf.getBackend()) await tf.setBackend(previous);
  return probes;
}
