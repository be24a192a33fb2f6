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

interface ShapeLike {
  shape: readonly number[];
}

/**
 * Floating-point operations of one kernel call, counted for the kernels that carry a model's
 * arithmetic (a multiply-add is 2): BatchMatMul and _FusedMatMul (2·batch·M·N·K), a dense layer's backward
 * (XttsDenseGrads: its two matmuls), Conv2D and its two
 * gradients (2·outputs·kernel area·input channels, the same count each way; our 1-D convs run as
 * Conv2D). 0 for everything else — elementwise ops, reductions and layout changes are memory-bound
 * work the "model FLOPs" convention (PaLM's MFU, Chowdhery et al. 2022) leaves out.
 */
export function kernelFlops(
  name: string,
  inputs: Record<string, ShapeLike | undefined>,
  attrs: Record<string, unknown> = {},
): number {
  if (name === 'BatchMatMul' || name === '_FusedMatMul') {
    const a = inputs.a?.shape;
    const b = inputs.b?.shape;
    if (!a || !b || a.length < 2 || b.length < 2) return 0;
    const m = attrs.transposeA ? a[a.length - 1] : a[a.length - 2];
    const k = attrs.transposeA ? a[a.length - 2] : a[a.length - 1];
    const n = attrs.transposeB ? b[b.length - 2] : b[b.length - 1];
    const batch = Math.max(
      a.slice(0, -2).reduce((x, y) => x * y, 1),
      b.slice(0, -2).reduce((x, y) => x * y, 1),
    );
    return 2 * batch * m * n * k;
  }
  if (name === 'XttsDenseGrads') {
    // A dense layer's backward (backend/programs/dense-layer.ts): dz [rows, out], x [rows, in]; dx and dW,
    // 2·rows·in·out each.
    const dz = inputs.dz?.shape;
    const x = inputs.x?.shape;
    return dz && x && dz.length === 2 && x.length === 2 ? 4 * dz[0] * dz[1] * x[1] : 0;
  }
  if (name === 'Conv2D' || name === 'Conv2DBackpropInput' || name === 'Conv2DBackpropFilter') {
    // Conv2D {x, filter}; BackpropInput {dy, filter}; BackpropFilter {x, dy}: dy has the forward's output shape.
    const filter = name === 'Conv2DBackpropFilter' ? (attrs.filterShape as number[] | undefined) : inputs.filter?.shape;
    const out = name === 'Conv2D' ? undefined : inputs.dy?.shape;
    if (!filter || filter.length !== 4) return 0;
    const [kh, kw, cin, cout] = filter;
    if (out) return 2 * out[0] * out[1] * out[2] * kh * kw * cin * cout;
    const x = inputs.x?.shape;
    if (!x || x.length !== 4) return 0;
    const stride = (attrs.strides as number[] | number | undefined) ?? 1;
    const [sh, sw] = Array.isArray(stride) ? stride : [stride, stride];
    const same = attrs.pad === 'same';
    const oh = same ? Math.ceil(x[1] / sh) : Math.floor((x[1] - kh) / sh) + 1;
    const ow = same ? Math.ceil(x[2] / sw) : Math.floor((x[2] - kw) / sw) + 1;
    return 2 * x[0] * Math.max(0, oh) * Math.max(0, ow) * kh * kw * cin * cout;
  }
  return 0;
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
  /** Model FLOPs (kernelFlops) since the last take(), when counted. */
  flops = 0;
  private readonly names?: Map<string, number>;
  private readonly countFlops: boolean;
  private restore: (() => void)[] = [];

  /**
   * `byName` also tallies kernels by name (a map update per kernel: for diagnosis, not every step);
   * `flops` adds up the model FLOPs of the matmuls and convolutions (a name check per kernel).
   */
  constructor(options: { byName?: boolean; flops?: boolean } = {}) {
    if (options.byName) this.names = new Map();
    this.countFlops = options.flops ?? false;
  }

  install(tf: Tf): this {
    this.uninstall();
    const engine = tf.engine() as unknown as Engine;
    const runKernel = engine.runKernel;
    const names = this.names;
    const flops = this.countFlops;
    engine.runKernel =
      names || flops
        ? (...args: unknown[]) => {
            this.count++;
            const name = args[0] as string;
            if (names) names.set(name, (names.get(name) ?? 0) + 1);
            if (flops && (name.charCodeAt(0) === 66 || name.charCodeAt(0) === 95 || name.charCodeAt(0) === 67))
              this.flops += kernelFlops(name, args[1] as Record<string, ShapeLike>, args[2] as Record<string, unknown>);
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
    this.flops = 0;
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
      /**
       * webgpu: device time and count per program kind (tfjs's program class, or xtts's program name) and per shape,
       * largest first.
       */
      programs: ProgramTime[];
    }
  | { available: false; reason: string; wallMs: number };

/** One kind of GPU program's share of a device-timed step; `shapes`, its share per shape, largest first. */
export interface ProgramTime {
  name: string;
  ms: number;
  count: number;
  shapes?: ShapeTime[];
}

/** A program's dispatches of one shape: "output ← inputs" (12032×2560 ← 12032×512, 512×2560). */
export interface ShapeTime {
  shape: string;
  ms: number;
  count: number;
}

/** Adds `ms` over `count` dispatches to the entry of `key` in `by`, made by `make` where there is none. */
function addTime<T extends { ms: number; count: number }>(
  by: Map<string, T>,
  key: string,
  ms: number,
  count: number,
  make: () => T,
): T {
  const t = by.get(key) ?? make();
  t.ms += ms;
  t.count += count;
  by.set(key, t);
  return t;
}

/**
 * tfjs-backend-webgpu's timing names each program by its constructor (`getExtraProfileInfo`: "name: ms,
 * name: ms, …" in dispatch order); this sums them per name, largest first. `shapes`: each timed
 * dispatch's shape, in the same order (timeOnDevice); where there are as many as timed programs, each
 * program's time is also split by shape.
 */
export function programTimes(extra: string | undefined, shapes?: readonly string[]): ProgramTime[] {
  const timed: [string, number][] = [];
  for (const part of (extra ?? '').split(', ')) {
    const at = part.lastIndexOf(': ');
    if (at <= 0) continue;
    const ms = Number(part.slice(at + 2));
    if (Number.isFinite(ms)) timed.push([part.slice(0, at), ms]);
  }
  const byShape = shapes?.length === timed.length ? new Map<string, Map<string, ShapeTime>>() : null;
  const by = new Map<string, ProgramTime>();
  timed.forEach(([name, ms], i) => {
    addTime(by, name, ms, 1, () => ({ name, ms: 0, count: 0 }));
    if (byShape) {
      const mine = byShape.get(name) ?? new Map<string, ShapeTime>();
      byShape.set(name, mine);
      addTime(mine, shapes![i], ms, 1, () => ({ shape: shapes![i], ms: 0, count: 0 }));
    }
  });
  return largest(by.values()).map((p) => (byShape ? { ...p, shapes: largest(byShape.get(p.name)!.values()) } : p));
}

/** Largest device time first. */
function largest<T extends { ms: number }>(xs: Iterable<T>): T[] {
  return [...xs].sort((a, b) => b.ms - a.ms);
}

/** The programs' times merged over `steps` timed steps (mergeProgramTimes), per step, largest first (per shape too). */
export function programTimesPerStep(merged: Map<string, ProgramTime>, steps: number): ProgramTime[] {
  const perStep = <T extends { ms: number; count: number }>(x: T): T => ({
    ...x,
    ms: x.ms / steps,
    count: x.count / steps,
  });
  return largest(
    [...merged.values()].map((p) => ({
      ...perStep(p),
      ...(p.shapes ? { shapes: largest(p.shapes.map(perStep)) } : {}),
    })),
  );
}

/**
 * `into` plus `more` (another timed step's programTimes), per program and per shape; a program's
 * shapes only while every step has them (else they would not add up to its time).
 */
export function mergeProgramTimes(into: Map<string, ProgramTime>, more: readonly ProgramTime[]): void {
  for (const p of more) {
    const sum = addTime(into, p.name, p.ms, p.count, () => ({
      name: p.name,
      ms: 0,
      count: 0,
      ...(p.shapes ? { shapes: [] } : {}),
    }));
    if (!p.shapes) delete sum.shapes;
    if (!p.shapes || !sum.shapes) continue;
    const shapes = new Map(sum.shapes.map((x) => [x.shape, x]));
    for (const x of p.shapes) addTime(shapes, x.shape, x.ms, x.count, () => ({ shape: x.shape, ms: 0, count: 0 }));
    sum.shapes = [...shapes.values()];
  }
}

/**
 * How a timed dispatch is named by shape: its output's, then its inputs' (the first 3); then the FLOPs a program
 * states of itself where its shapes do not tell them (the attention's strided products read heads inside their
 * projections: "32×8×188×188 ← 6016×512, 6016×1536 (1158152192 FLOP)").
 */
export function dispatchShape(
  outputShape: readonly number[],
  inputs: readonly { shape: readonly number[] }[],
  flops?: number,
): string {
  const dims = (shape: readonly number[]) => (shape.length ? shape.join('×') : 'scalar');
  const read = inputs.slice(0, 3).map((x) => dims(x.shape));
  const more = inputs.length > 3 ? `, … (${inputs.length} inputs)` : '';
  return `${dims(outputShape)} ← ${read.join(', ')}${more}${flops ? ` (${flops} FLOP)` : ''}`;
}

/** WebGPU's most workgroups along one dimension of a dispatch. */
const MAX_WORKGROUPS_PER_DIMENSION = 65535;

/**
 * A dispatch of at least `count` workgroups: along x, and past 65,535 along y as well (x·y ≥ count).
 * A program reads its workgroup's number as workgroupId.y · numWorkgroups.x + workgroupId.x (tfjs's
 * global index flattens the grid the same way) and leaves numbers past `count` idle.
 */
export function workgroupGrid(count: number): [number, number, number] {
  const y = Math.ceil(count / MAX_WORKGROUPS_PER_DIMENSION);
  return [Math.ceil(count / y), y, 1];
}

/**
 * A WebGPU program object whose constructor carries `name`, so that the device timing above names it
 * (tfjs reads program.constructor.name; an object literal would be timed as "Object").
 */
export function namedProgram<T extends object>(name: string, fields: T): T {
  const Named = { [name]: class {} }[name];
  return Object.assign(new Named(), fields);
}

/**
 * A program of one invocation per output value: `body` (WGSL) runs for every flat `index` below the
 * output's size, 64 invocations a workgroup (past 4 Mi values, a grid: workgroupGrid); `uniforms` are
 * its own (WGSL declarations); `helpers`, WGSL functions the body calls.
 */
export function flatProgram(
  name: string,
  shaderKey: string,
  variableNames: string[],
  outputShape: number[],
  uniforms: string,
  body: string,
  helpers = '',
) {
  const size = outputShape.reduce((a, x) => a * x, 1);
  return namedProgram(name, {
    variableNames,
    outputShape,
    shaderKey,
    dispatchLayout: { x: outputShape.map((_, i) => i) },
    dispatch: workgroupGrid(Math.ceil(size / 64)),
    workgroupSize: [64, 1, 1] as [number, number, number],
    size: true,
    uniforms,
    getUserCode: () => `${helpers}
      fn main(index : i32) {
        if (index < uniforms.size) {${body}
        }
      }`,
  });
}

/**
 * What xtts's WebGPU kernels call on tfjs-backend-webgpu's backend: run a program of their own, free a tensor's data.
 */
export interface WebgpuProgramRunner {
  runWebGPUProgram(
    program: object,
    inputs: import('@tensorflow/tfjs-core').TensorInfo[],
    dtype: import('@tensorflow/tfjs-core').DataType,
    uniforms?: { type: string; data: number[] }[],
  ): import('@tensorflow/tfjs-core').TensorInfo;
  disposeData(dataId: object): void;
}

type KernelOutput = import('@tensorflow/tfjs-core').TensorInfo | import('@tensorflow/tfjs-core').TensorInfo[];

/** A webgpu kernel function written as (inputs, backend, attrs): tfjs passes them as one object. */
export function webgpuKernel<I, A = undefined>(
  run: (inputs: I, backend: WebgpuProgramRunner, attrs: A) => KernelOutput,
): import('@tensorflow/tfjs-core').KernelFunc {
  const kernel = (args: { inputs: I; backend: WebgpuProgramRunner; attrs: A }) =>
    run(args.inputs, args.backend, args.attrs);
  return kernel as unknown as import('@tensorflow/tfjs-core').KernelFunc;
}

// Programs with more than one output. tfjs-backend-webgpu writes a program's declarations itself:
// its one output read_write, every input read-only. A program made by outputsProgram takes its
// further outputs as its last inputs — tensors made for it just before (runWithOutputs), which no
// other program has written — and shaderSource, which the device's createShaderModule applies (see
// webgpu.ts), declares those read_write. Step capture records them as made by that program
// (`extraOutputs`), so their buffers come from the replay's arena as any intermediate's.

/** Further outputs (the last inputs' names) of the programs that have them, by program name. */
const furtherOutputs = new Map<string, string[]>();

/**
 * A named program whose last `outputs.length` inputs, named `outputs`, are outputs it writes (with setOutput* for the
 * first).
 */
export function outputsProgram<T extends { variableNames: string[] }>(
  name: string,
  outputs: string[],
  fields: T,
): T & { extraOutputs: number } {
  if (fields.variableNames.slice(-outputs.length).join() !== outputs.join())
    throw new Error(`program ${name}: its further outputs ${outputs} are not its last inputs`);
  furtherOutputs.set(name, outputs);
  return namedProgram(name, { ...fields, extraOutputs: outputs.length });
}

/** A shader's source as the device compiles it: a program's further outputs declared read_write. */
export function shaderSource(label: string | undefined, code: string): string {
  const names = label === undefined ? undefined : furtherOutputs.get(label);
  if (!names) return code;
  let out = code;
  for (const name of names) {
    const declared = new RegExp(`var<storage, read> ${name}\\s*:`);
    if (!declared.test(out)) throw new Error(`program ${label}: no read-only declaration of ${name} to make writable`);
    out = out.replace(declared, `var<storage, read_write> ${name} :`);
  }
  return out;
}

interface OutputsRunner extends WebgpuProgramRunner {
  makeTensorInfo(shape: number[], dtype: import('@tensorflow/tfjs-core').DataType): TensorInfo;
  uploadToGPU(dataId: object): void;
}

/**
 * Runs an outputsProgram: its further outputs (float32, of `shapes`) made on the device first; returns [output,
 * ...further outputs].
 */
export function runWithOutputs(
  backend: WebgpuProgramRunner,
  program: { variableNames: string[]; extraOutputs: number },
  inputs: TensorInfo[],
  shapes: number[][],
  uniforms?: { type: string; data: number[] }[],
): TensorInfo[] {
  if (shapes.length !== program.extraOutputs)
    throw new Error(`a program of ${program.extraOutputs} further outputs run with ${shapes.length}`);
  const runner = backend as OutputsRunner;
  const further = shapes.map((shape) => runner.makeTensorInfo(shape, 'float32'));
  for (const t of further) runner.uploadToGPU(t.dataId);
  return [runner.runWebGPUProgram(program, [...inputs, ...further], 'float32', uniforms), ...further];
}

type KernelConfig = import('@tensorflow/tfjs-core').KernelConfig;
type TensorInfo = import('@tensorflow/tfjs-core').TensorInfo;
/** What tfjs passes a kernel function. */
export interface KernelArgs {
  inputs: import('@tensorflow/tfjs-core').NamedTensorInfoMap;
  backend: unknown;
  attrs?: import('@tensorflow/tfjs-core').NamedAttrMap;
}
/**
 * Why a backend has no device time at all, or undefined. The CPU backends' backend.time() is the
 * wall time of the whole call (tfjs-backend-cpu/-wasm 4.22): their arithmetic happens inside each
 * kernel call, so there is nothing beside the host to time.
 */
export function noDeviceTime(backend: string): string | undefined {
  if (backend !== 'cpu' && backend !== 'wasm') return undefined;
  return (
    `the ${backend} backend computes inside each kernel call on this CPU: there is ` +
    `no device working beside the host, and the time it reports is the call's own ` +
    `wall time`
  );
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
      return {
        available: false,
        reason: 'the WebGPU device has no timestamp-query feature (Dawn offers it on Vulkan, not on OpenGL ES)',
        wallMs: performance.now() - t0,
      };
    }
  }
  // Each dispatch's shape, in the order tfjs times them (the programs it runs, but those of an empty output).
  const shapes: string[] = [];
  const backend = tf.backend() as unknown as Partial<WebgpuBackendInternals>;
  const run = backendName === 'webgpu' ? backend.runWebGPUProgram : undefined;
  let timing: Awaited<ReturnType<Tf['time']>>;
  if (run) {
    backend.runWebGPUProgram = (...args: unknown[]) => {
      const [program, inputs, , , output] = args as [
        { outputShape: number[]; flops?: number },
        { shape: number[] }[],
        unknown,
        unknown,
        { shape: number[] } | undefined,
      ];
      const shape = output?.shape ?? program.outputShape;
      if (shape.every((d) => d > 0)) shapes.push(dispatchShape(shape, inputs, program.flops));
      return run.apply(backend, args);
    };
  }
  try {
    timing = await tf.time(step);
  } finally {
    if (run) backend.runWebGPUProgram = run;
  }
  if (typeof timing.kernelMs !== 'number')
    return {
      available: false,
      reason: `the ${backendName} backend reported no kernel time: ${timing.kernelMs.error}`,
      wallMs: timing.wallMs,
    };
  // Dawn's null backend (and a broken driver) return timestamps that are not monotonic.
  if (timing.kernelMs < 0)
    return {
      available: false,
      reason: `the device's timestamps are not monotonic (summed kernel time ${timing.kernelMs.toFixed(1)} ms)`,
      wallMs: timing.wallMs,
    };
  const source =
    backendName === 'webgpu'
      ? 'GPU timestamp queries around each program, summed'
      : 'kernel times as libtensorflow reports them';
  const extra = (timing as { getExtraProfileInfo?: () => string }).getExtraProfileInfo;
  return {
    available: true,
    kernelMs: timing.kernelMs,
    wallMs: timing.wallMs,
    source,
    programs: backendName === 'webgpu' && extra ? programTimes(extra(), shapes) : [],
  };
}
