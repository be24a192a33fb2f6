// Counting what a training step dispatches, and how long the device spends on it. On a GPU this
// engine is bound by the host's cost per kernel (about 1,270 kernels per step measured on an H100),
// so "kernels per step" is the first number to watch and to bring down.
type Tf = typeof import('@tensorflow/tfjs-core');

interface Engine {
  runKernel: (...args: unknown[]) => unknown;
}
interface WebgpuBackendInternals {
  runWebGPUProgram: (...args: unknown[]) => unknown;
}

/**
 * Counts kernels (TF.js ops that reach a backend) by wrapping the engine's runKernel, which every
 * op, gradient and optimizer update goes through; the cost is one increment per kernel. On the
 * webgpu backend it also counts the GPU programs dispatched (a kernel may dispatch none, when it
 * only reshapes or runs a tiny input on the CPU, or several).
 */
export class KernelCounter {
  /** Kernels since the last take(). */
  count = 0;
  /** GPU programs since the last take() (webgpu only; 0 elsewhere). */
  dispatches = 0;
  private readonly names?: Map<string, number>;
  private restore: (() => void)[] = [];

  /** `byName` also tallies kernels by name (a map update per kernel: for diagnosis, not every step). */
  constructor(options: { byName?: boolean } = {}) {
    if (options.byName) this.names = new Map();
  }

  install(tf: Tf): this {
    this.uninstall();
    const engine = tf.engine() as unknown as Engine;
    const runKernel = engine.runKernel;
    const names = this.names;
    engine.runKernel = names
      ? (...args: unknown[]) => {
          this.count++;
          const name = args[0] as string;
          names.set(name, (names.get(name) ?? 0) + 1);
          return runKernel.apply(engine, args);
        }
      : (...args: unknown[]) => {
          this.count++;
          return runKernel.apply(engine, args);
        };
    this.restore.push(() => {
      engine.runKernel = runKernel;
    });
    if (tf.getBackend() === 'webgpu') {
      const backend = tf.backend() as unknown as WebgpuBackendInternals;
      const run = backend.runWebGPUProgram;
      if (typeof run === 'function') {
        backend.runWebGPUProgram = (...args: unknown[]) => {
          this.dispatches++;
          return run.apply(backend, args);
        };
        this.restore.push(() => {
          backend.runWebGPUProgram = run;
        });
      }
    }
    return this;
  }

  /** Kernels since the last call (and resets the program count and the tally too). */
  take(): number {
    const n = this.count;
    this.count = 0;
    this.dispatches = 0;
    this.names?.clear();
    return n;
  }

  /** Everything since the last take(), then reset. */
  takeAll(): { kernels: number; dispatches: number; byName?: Record<string, number> } {
    const byName = this.names ? Object.fromEntries([...this.names.entries()].sort((a, b) => b[1] - a[1])) : undefined;
    const out = { kernels: this.count, dispatches: this.dispatches, ...(byName ? { byName } : {}) };
    this.take();
    return out;
  }

  uninstall(): void {
    for (const r of this.restore.reverse()) r();
    this.restore = [];
  }
}

export type DeviceTime =
  | {
      available: true;
      /** Device time of the kernels, summed (webgpu: timestamp queries around each program). */
      kernelMs: number;
      /** Host time from the call to the last timing read back. */
      wallMs: number;
      /** What kernelMs means on this backend. */
      source: string;
    }
  | { available: false; reason: string; wallMs: number };

/**
 * Why a backend has no device time at all, or undefined. The CPU backends' backend.time() is the
 * wall time of the whole call (tfjs-backend-cpu/-wasm 4.22): their arithmetic happens inside each
 * kernel call, so there is nothing beside the host to time.
 */
export function noDeviceTime(backend: string): string | undefined {
  if (backend !== 'cpu' && backend !== 'wasm') return undefined;
  return `the ${backend} backend computes inside each kernel call on this CPU: there is no device working beside the host, and the time it reports is the call's own wall time`;
}

/**
 * Run `step` once under tf.time and report the device time its kernels took. On webgpu this is the
 * backend's own timestamp-query profiling: each program gets its own compute pass with begin/end
 * timestamps and its own read-back, which serialises dispatch and makes the step itself slower, so
 * time a sampled step (one in N), never every step. Without the timestamp-query feature (Dawn
 * offers it on Vulkan; not on OpenGL ES), there is no device time to report.
 */
export async function timeOnDevice(tf: Tf, step: () => void): Promise<DeviceTime> {
  const backendName = tf.getBackend();
  const none = noDeviceTime(backendName);
  if (none) {
    const t0 = performance.now();
    step();
    return { available: false, reason: none, wallMs: performance.now() - t0 };
  }
  if (backendName === 'webgpu') {
    const backend = tf.backend() as unknown as { supportTimestampQuery?: boolean; hasTimestampQueryWarned?: boolean };
    if (!backend.supportTimestampQuery) {
      const t0 = performance.now();
      step();
      return { available: false, reason: 'the WebGPU device has no timestamp-query feature (Dawn offers it on Vulkan, not on OpenGL ES)', wallMs: performance.now() - t0 };
    }
  }
  const timing = await tf.time(step);
  if (typeof timing.kernelMs !== 'number') return { available: false, reason: `the ${backendName} backend reported no kernel time: ${timing.kernelMs.error}`, wallMs: timing.wallMs };
  // Dawn's null backend (and a broken driver) return timestamps that are not monotonic.
  if (timing.kernelMs < 0) return { available: false, reason: `the device's timestamps are not monotonic (summed kernel time ${timing.kernelMs.toFixed(1)} ms)`, wallMs: timing.wallMs };
  const source = backendName === 'webgpu' ? 'GPU timestamp queries around each program, summed' : 'kernel times as libtensorflow reports them';
  return { available: true, kernelMs: timing.kernelMs, wallMs: timing.wallMs, source };
}
