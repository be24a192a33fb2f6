// The wasm backend: XNNPACK compiled to WebAssembly, with SIMD. Its binaries are read from
// node_modules, or from beside the bundle.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bundleDir } from './native.js';

type Tf = typeof import('@tensorflow/tfjs-core');

/** The .wasm files the backend may load; the threaded one is never used under Node (see initWasm). */
export const WASM_FILES = ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm'] as const;

/** Folder holding the .wasm binaries. */
export function wasmDir(): string {
  return (
    bundleDir() ??
    dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))
  );
}

const WRAPPED = Symbol.for('xtts.wasm.fastTransposedMatMul');

/**
 * tfjs-backend-wasm 4.22 multiplies with XNNPACK only when neither operand is transposed; with
 * transposeA it falls back to a path ~20x slower (measured here: 245 ms against 12 ms for
 * [1536,512]ᵀ·[1536,128]), and every weight gradient of a dense layer is such a product. Wrapping
 * the kernel to transpose explicitly (one cheap Transpose) and then call the fast path fixes it for
 * every model, without touching the gradient definitions.
 */
function fastTransposedMatMul(tf: Tf): void {
  const original = tf.getKernel('BatchMatMul', 'wasm');
  const transpose = tf.getKernel('Transpose', 'wasm');
  if (!original || !transpose || (original as unknown as Record<symbol, boolean>)[WRAPPED]) return;
  type Info = { dataId: object; shape: number[]; dtype: string };
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...original,
    [WRAPPED]: true,
    kernelFunc: (args: Parameters<typeof original.kernelFunc>[0]) => {
      const { inputs, backend, attrs } = args as unknown as {
        inputs: { a: Info; b: Info };
        backend: { disposeData(id: object): void };
        attrs: { transposeA: boolean; transposeB: boolean };
      };
      if (!attrs.transposeA && !attrs.transposeB) return original.kernelFunc(args);
      const flip = (x: Info) => {
        const r = x.shape.length;
        const perm = [...Array(r - 2).keys(), r - 1, r - 2];
        return transpose.kernelFunc({
          inputs: { x } as never,
          backend: backend as never,
          attrs: { perm } as never,
        }) as unknown as Info;
      };
      const a = attrs.transposeA ? flip(inputs.a) : inputs.a;
      const b = attrs.transposeB ? flip(inputs.b) : inputs.b;
      const out = original.kernelFunc({
        ...args,
        inputs: { a, b } as never,
        attrs: { ...attrs, transposeA: false, transposeB: false } as never,
      });
      if (a !== inputs.a) backend.disposeData(a.dataId);
      if (b !== inputs.b) backend.disposeData(b.dataId);
      return out;
    },
  } as never);
}

const SLICED = Symbol.for('xtts.wasm.heapSlice');

interface WasmBackend {
  makeOutput(shape: number[], dtype: string): WasmInfo;
  typedArrayFromHeap(info: WasmInfo): Float32Array | Int32Array | Uint8Array;
}
type WasmInfo = { dataId: object; shape: number[]; dtype: string };

let stockSlices: { slice: KernelConfig; split: KernelConfig } | null = null;
type KernelConfig = NonNullable<ReturnType<Tf['getKernel']>>;

/** tfjs's own Slice and SplitV on wasm again (bench/cpu-kernels.bench.ts compares them); heapSlice puts ours back. */
export function stockWasmSlices(tf: Tf): void {
  if (!stockSlices) return;
  for (const k of [stockSlices.slice, stockSlices.split]) {
    tf.unregisterKernel(k.kernelName, 'wasm');
    tf.registerKernel(k);
  }
}

/**
 * tfjs-backend-wasm 4.22's Slice (and SplitV, a Slice per piece) reads its input through readSync, which copies
 * the whole input out of the wasm heap for every slice: splitting AdamW's flat 1.6 M-value vector into the tiny
 * preset's variables copied it once per variable, ~200 ms a training step and twice that a checkpoint. Here a
 * slice copies its own values, from a view of the heap, made after the output is allocated (an allocation may
 * grow the heap and detach older views). Strings stay with tfjs's kernel.
 */
export function heapSlice(tf: Tf): void {
  if ((tf.getKernel('Slice', 'wasm') as unknown as Record<symbol, boolean> | undefined)?.[SLICED]) return;
  const original = stockSlices?.slice ?? tf.getKernel('Slice', 'wasm');
  const split = stockSlices?.split ?? tf.getKernel('SplitV', 'wasm');
  if (!original || !split) return;
  stockSlices = { slice: original, split };
  const sliceOf = (backend: WasmBackend, x: WasmInfo, begin: number[], size: number[]): WasmInfo => {
    const out = backend.makeOutput(size, x.dtype);
    const from = backend.typedArrayFromHeap(x);
    const into = backend.typedArrayFromHeap(out);
    const rank = x.shape.length;
    if (rank === 0) {
      into.set(from);
      return out;
    }
    const strides = tf.util.computeStrides(x.shape);
    const run = size[rank - 1];
    const rows = into.length / Math.max(1, run);
    const at = new Array<number>(rank - 1).fill(0);
    for (let row = 0; row < rows; row++) {
      let offset = begin[rank - 1];
      for (let d = 0; d < rank - 1; d++) offset += (begin[d] + at[d]) * strides[d];
      into.set(from.subarray(offset, offset + run), row * run);
      for (let d = rank - 2; d >= 0 && ++at[d] === size[d]; d--) at[d] = 0;
    }
    return out;
  };
  type Args = { inputs: { x: WasmInfo }; backend: WasmBackend; attrs: Record<string, unknown> };
  tf.unregisterKernel('Slice', 'wasm');
  tf.registerKernel({
    ...original,
    [SLICED]: true,
    kernelFunc: (args: Parameters<typeof original.kernelFunc>[0]) => {
      const { inputs, backend, attrs } = args as unknown as Args;
      const { x } = inputs;
      if (x.dtype === 'string') return original.kernelFunc(args);
      const [begin, size] = tf.slice_util.parseSliceParams(x as never, attrs.begin as number[], attrs.size as number[]);
      return sliceOf(backend, x, begin, size) as never;
    },
  } as never);
  tf.unregisterKernel('SplitV', 'wasm');
  tf.registerKernel({
    ...split,
    kernelFunc: (args: Parameters<typeof split.kernelFunc>[0]) => {
      const { inputs, backend, attrs } = args as unknown as Args;
      const { x } = inputs;
      if (x.dtype === 'string') return split.kernelFunc(args);
      const axis = tf.util.parseAxisParam(attrs.axis as number, x.shape)[0];
      const sizes = tf.backend_util.prepareSplitSize(x as never, attrs.numOrSizeSplits as number[], axis);
      const begin = new Array<number>(x.shape.length).fill(0);
      return sizes.map((s) => {
        const size = [...x.shape];
        size[axis] = s;
        const out = sliceOf(backend, x, begin, size);
        begin[axis] += s;
        return out;
      }) as never;
    },
  } as never);
}

/**
 * Make `wasm` current. Under Node it runs on one thread: tfjs-backend-wasm 4.22 reports no
 * multithread support when IS_NODE (tfjs issue #3830), and forcing it fails, since its pthread
 * workers start from blob: URLs that Node's Worker refuses (ERR_WORKER_PATH, tried here).
 */
export async function initWasm(
  tf: Tf,
): Promise<{ ok: true; simd: boolean; threads: number } | { ok: false; reason: string }> {
  try {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    wasm.setWasmPaths(join(wasmDir(), '/'));
    if (!(await tf.setBackend('wasm'))) return { ok: false, reason: 'the wasm backend did not initialise' };
    fastTransposedMatMul(tf);
    heapSlice(tf);
    return {
      ok: true,
      simd: Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')),
      threads: wasm.getThreadsCount(),
    };
  } catch (e) {
    return { ok: false, reason: `the wasm backend failed to load: ${(e as Error).message.split('\n')[0]}` };
  }
}
