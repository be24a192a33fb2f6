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
    return {
      ok: true,
      simd: Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')),
      threads: wasm.getThreadsCount(),
    };
  } catch (e) {
    return { ok: false, reason: `the wasm backend failed to load: ${(e as Error).message.split('\n')[0]}` };
  }
}
