// The GPU programs that took a device-timed step's time, and what their matmuls achieved: a matmul's
// model FLOPs from its shape (2·batch·M·N·K), its TFLOP/s and its share of the device's peak for the
// run's precision. profile-bottleneck's table shows them; its compute verdict names them when a busy
// GPU runs slow kernels.
import type { ProgramTime } from '../backend/index.js';

/** One (program, shape) of a timed step: device ms per step, share of the step's device time, rate. */
export interface TopKernel {
  name: string;
  /** "output ← inputs"; null where the run kept no shapes (the program's whole time). */
  shape: string | null;
  ms: number;
  /** Of the timed step's device time. */
  share: number;
  /** Dispatches per step. */
  count: number;
  /** Matmuls only (other programs' FLOPs are not counted): model FLOPs over device time. */
  tflops: number | null;
  /** tflops over the device's peak for the run's precision, where both are known. */
  peakShare: number | null;
}

const dimsOf = (s: string): number[] | null => {
  const d = s.split('×').map(Number);
  return d.every((x) => Number.isInteger(x) && x > 0) ? d : null;
};

/**
 * 2·batch·M·N·K of a matmul dispatch from its "out ← a, b[, …]" shape, either operand transposed (twice that
 * for a pair program), or the FLOPs its shape states; null when the shape is not one of a matmul (`name` must
 * be a matmul program: an element-wise program of square operands would pass the shape test).
 */
export function matmulFlops(name: string, shape: string): number | null {
  if (!/MatMul/.test(name)) return null;
  // What the program stated of itself (dispatchShape), where its shapes do not say.
  const stated = / \((\d+) FLOP\)$/.exec(shape);
  if (stated) return Number(stated[1]);
  // A pair program computes two products of one size in one dispatch (a dense layer's gradients dz·Wᵀ and xᵀ·dz):
  // its shape names the first product's output and operands.
  const products = /Pair/.test(name) ? 2 : 1;
  const m = /^([\d×]+) ← ([\d×]+), ([\d×]+)(?:, .*)?$/.exec(shape);
  if (!m) return null;
  const [out, a, b] = [dimsOf(m[1]), dimsOf(m[2]), dimsOf(m[3])];
  if (!out || !a || !b || out.length < 2 || a.length < 2 || b.length < 2) return null;
  const [rows, cols] = out.slice(-2);
  const [a1, a2] = a.slice(-2);
  const [b1, b2] = b.slice(-2);
  // The inputs' batch, not the output's: a split-K program writes one partial product per split (4×512×2560 ←
  // 20928×512, 20928×2560 is one product, K split four ways).
  const batchOf = (d: number[]) => d.slice(0, -2).reduce((x, y) => x * y, 1);
  const batch = Math.max(batchOf(a), batchOf(b));
  // K is a's dimension that is not M (a is [M, K], or [K, M] transposed); b must hold K and N.
  for (const k of [a1 === rows ? a2 : null, a2 === rows ? a1 : null])
    if (k !== null && ((b1 === k && b2 === cols) || (b2 === k && b1 === cols)))
      return 2 * products * batch * rows * cols * k;
  return null;
}

/**
 * The `n` largest (program, shape) pairs of a timed step by device time (a program without shapes
 * counts as one), each with its share of the step's device time and, for matmuls, its TFLOP/s and
 * share of `peakTflops`.
 */
export function topKernels(programs: readonly ProgramTime[], peakTflops: number | null, n: number): TopKernel[] {
  const total = programs.reduce((a, p) => a + p.ms, 0);
  if (!(total > 0)) return [];
  return programs
    .flatMap((p) =>
      p.shapes?.length
        ? p.shapes.map((s) => ({ name: p.name, shape: s.shape as string | null, ms: s.ms, count: s.count }))
        : [{ name: p.name, shape: null, ms: p.ms, count: p.count }],
    )
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((k) => {
      const flops = k.shape === null ? null : matmulFlops(k.name, k.shape);
      const tflops = flops !== null && k.ms > 0 ? (flops * k.count) / (k.ms * 1e9) : null;
      return {
        ...k,
        share: k.ms / total,
        tflops,
        peakShare: tflops !== null && peakTflops ? tflops / peakTflops : null,
      };
    });
}

/** "XttsWideMatMulProgram 12032×2560 ← 12032×512, 512×2560: 20.1 ms (35%), 8.2 TFLOP/s (12% of FP32 peak)". */
export function describeKernel(k: TopKernel, peakLabel: string): string {
  const rate =
    k.tflops === null
      ? ''
      : `, ${k.tflops.toFixed(k.tflops < 10 ? 2 : 1)} TFLOP/s` +
        (k.peakShare === null ? '' : ` (${(k.peakShare * 100).toFixed(0)}% of the ${peakLabel} peak)`);
  const ms = k.ms < 10 ? k.ms.toFixed(2) : k.ms.toFixed(1);
  return `${k.name}${k.shape ? ` ${k.shape}` : ''}: ${ms} ms (${(k.share * 100).toFixed(0)}%)${rate}`;
}
