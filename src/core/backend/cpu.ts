// The cpu backend's layout kernels without their per-element slow paths, and its matmul four times
// faster. tfjs-backend-cpu 4.22 slices along any axis but the first, transposes, and broadcasts a
// binary op over a size-1 axis (a mask [B, T, 1] times [B, T, C]) one element at a time, each element
// turned into a coordinate array and back (TensorBuffer.get, util.indexToLoc, an array spread per
// element); its matmul computes one output at a time. Profiling 12 fuzz configs trained 2 steps on
// cpu (test/e2e/config-fuzz.test.ts; 88 s) put Slice (mostly the decoder's SplitV) at 30% of the time,
// the broadcasting binary ops (Softmax's among them) at 13%, BatchMatMul at 21%; with the kernels
// below the same 12 take 26 s. Every result is bit-identical to the stock kernel's: the same values
// in the same places, the same float operations in the same order (test/unit/backend-cpu.test.ts
// compares them; bench/cpu-kernels.bench.ts times both).
//
// - Slice and SplitV: rows of the last axis copied with TypedArray.set.
// - Transpose: an odometer over the output, reading the input with the permuted strides.
// - Binary ops: the operand broadcast over a size-1 axis is first expanded to the output's shape (a
//   strided copy), then the stock kernel runs its own fast path (no broadcast dims), so the op's
//   arithmetic stays tfjs's own.
// - Softmax: the stock kernel's Max → Sub → Exp → Sum → RealDiv, row by row (its Sub and RealDiv
//   broadcast a [.., 1] row statistic, the slow path).
// - BatchMatMul and _FusedMatMul: 4 × 4 output tiles in registers, the stock blocking of k kept.
import type { KernelConfig, KernelFunc } from '@tensorflow/tfjs-core';

type Tf = typeof import('@tensorflow/tfjs-core');
type Values = Float32Array | Int32Array | Uint8Array;

interface Info {
  dataId: object;
  shape: number[];
  dtype: string;
}
interface CpuBackend {
  data: { get(id: object): { values: unknown } };
  makeTensorInfo(shape: number[], dtype: string, values: Values): Info;
  disposeIntermediateTensorInfo(info: Info): void;
}
type KernelArgs = { inputs: Record<string, Info>; backend: CpuBackend; attrs: Record<string, unknown> };

/** The binary kernels tfjs-backend-cpu builds on its broadcasting template (inputs a and b). */
export const CPU_BINARY_KERNELS = [
  'Add',
  'Sub',
  'Multiply',
  'RealDiv',
  'Maximum',
  'Minimum',
  'SquaredDifference',
  'Pow',
  'FloorDiv',
  'Mod',
  'Atan2',
  'Equal',
  'NotEqual',
  'Greater',
  'GreaterEqual',
  'Less',
  'LessEqual',
  'LogicalAnd',
  'LogicalOr',
] as const;

function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function newLike(values: Values, length: number): Values {
  return new (values.constructor as new (n: number) => Values)(length);
}

/**
 * Copy `src` into a new array of `outShape`, reading element (i0, …, i_{r-1}) at
 * `offset + Σ i_k · inStrides[k]` (a stride of 0 repeats along that axis). The last axis is copied as
 * one run where its input stride is 1.
 */
function stridedCopy(src: Values, offset: number, inStrides: readonly number[], outShape: readonly number[]): Values {
  const rank = outShape.length;
  const total = sizeOf(outShape);
  const out = newLike(src, total);
  if (total === 0) return out;
  if (rank === 0) {
    out[0] = src[offset];
    return out;
  }
  const inner = outShape[rank - 1];
  const innerStride = inStrides[rank - 1];
  const index = new Array<number>(rank - 1).fill(0);
  let base = offset;
  for (let o = 0; o < total; o += inner) {
    if (innerStride === 1) {
      if (inner > 16) out.set(src.subarray(base, base + inner), o);
      else for (let j = 0; j < inner; j++) out[o + j] = src[base + j];
    } else if (innerStride === 0) out.fill(src[base], o, o + inner);
    else for (let j = 0, p = base; j < inner; j++, p += innerStride) out[o + j] = src[p];
    // Advance the odometer over the outer axes.
    for (let k = rank - 2; k >= 0; k--) {
      base += inStrides[k];
      if (++index[k] < outShape[k]) break;
      base -= inStrides[k] * outShape[k];
      index[k] = 0;
    }
  }
  return out;
}

function typedValues(backend: CpuBackend, x: Info): Values | undefined {
  if (x.dtype === 'string' || x.dtype === 'complex64') return undefined;
  const v = backend.data.get(x.dataId).values;
  return v instanceof Float32Array || v instanceof Int32Array || v instanceof Uint8Array ? v : undefined;
}

/** Each replaced kernel's stock and replacement configs, by kernel name. */
const replaced = new Map<string, { stock: KernelConfig; fast: KernelConfig }>();

/** Register `make(stock)` as the cpu kernel `name`, keeping the stock kernel beside it. */
function replace(tf: Tf, name: string, make: (stock: KernelFunc) => (args: KernelArgs) => Info | Info[]): void {
  const current = tf.getKernel(name, 'cpu');
  if (!current) return;
  let entry = replaced.get(name);
  if (!entry) {
    entry = { stock: current, fast: { ...current, kernelFunc: make(current.kernelFunc) as unknown as KernelFunc } };
    replaced.set(name, entry);
  }
  if (current === entry.fast) return;
  tf.unregisterKernel(name, 'cpu');
  tf.registerKernel(entry.fast);
}

/** The stock tfjs kernel function behind cpu kernel `name` (for tests comparing the two). */
export function stockCpuKernel(tf: Tf, name: string): KernelFunc | undefined {
  return replaced.get(name)?.stock.kernelFunc ?? tf.getKernel(name, 'cpu')?.kernelFunc;
}

/** Put the stock kernels back (bench/cpu-kernels.bench.ts times both); fastCpuKernels replaces them again. */
export function stockCpuKernels(tf: Tf): void {
  for (const [name, { stock }] of replaced) {
    tf.unregisterKernel(name, 'cpu');
    tf.registerKernel(stock);
  }
}

function slice(tf: Tf, stock: KernelFunc) {
  return (args: KernelArgs): Info => {
    const { inputs, backend, attrs } = args;
    const x = inputs.x;
    const values = typedValues(backend, x);
    const [begin, size] = tf.slice_util.parseSliceParams(x as never, attrs.begin as number[], attrs.size as number[]);
    if (!values || tf.slice_util.isSliceContinous(x.shape, begin, size)) return stock(args as never) as Info;
    tf.slice_util.assertParamsValid(x as never, begin, size);
    const st = strides(x.shape);
    let offset = 0;
    for (let k = 0; k < begin.length; k++) offset += begin[k] * st[k];
    return backend.makeTensorInfo(size, x.dtype, stridedCopy(values, offset, st, size));
  };
}

function transpose(stock: KernelFunc) {
  return (args: KernelArgs): Info => {
    const { inputs, backend, attrs } = args;
    const x = inputs.x;
    const perm = attrs.perm as number[];
    const values = typedValues(backend, x);
    if (!values || perm.length !== x.shape.length) return stock(args as never) as Info;
    const st = strides(x.shape);
    const outShape = perm.map((p) => x.shape[p]);
    return backend.makeTensorInfo(
      outShape,
      x.dtype,
      stridedCopy(
        values,
        0,
        perm.map((p) => st[p]),
        outShape,
      ),
    );
  };
}

function splitV(tf: Tf, stock: KernelFunc) {
  return (args: KernelArgs): Info | Info[] => {
    const { inputs, backend, attrs } = args;
    const x = inputs.x;
    const values = typedValues(backend, x);
    if (!values) return stock(args as never) as Info[];
    const axis = tf.util.parseAxisParam(attrs.axis as number, x.shape)[0];
    const sizes = tf.backend_util.prepareSplitSize(x as never, attrs.numOrSizeSplits as number[], axis);
    const st = strides(x.shape);
    let offset = 0;
    return sizes.map((s) => {
      const size = x.shape.slice();
      size[axis] = s;
      const part = backend.makeTensorInfo(size, x.dtype, stridedCopy(values, offset, st, size));
      offset += s * st[axis];
      return part;
    });
  };
}

/**
 * a·b (either transposed, batch dimensions broadcast) with the stock kernel's arithmetic: the shared
 * axis cut into blocks of the backend's blockSize, each block's products summed in a double in the
 * order of k, each block's sum then added to the float32 result. The stock kernel computes one
 * output at a time, two loads per multiply-add; here a 4 × 4 tile of outputs is computed at once in
 * sixteen doubles (eight loads per sixteen multiply-adds), each (i, j) still summing its own products
 * in the same order, so the result is the same to the bit.
 */
function matMul(
  tf: Tf,
  backend: CpuBackend & { blockSize: number },
  a: Info,
  b: Info,
  transposeA: boolean,
  transposeB: boolean,
): Info | undefined {
  const av = typedValues(backend, a);
  const bv = typedValues(backend, b);
  const ra = a.shape.length;
  const rb = b.shape.length;
  if (!(av instanceof Float32Array) || !(bv instanceof Float32Array) || ra < 2 || rb < 2) return undefined;
  const k = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  if (k !== (transposeB ? b.shape[rb - 1] : b.shape[rb - 2])) return undefined;
  const m = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  const n = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  const batchA = sizeOf(a.shape.slice(0, -2));
  const batchB = sizeOf(b.shape.slice(0, -2));
  const outer = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
  const batch = Math.max(batchA, batchB);
  const out = new Float32Array(batch * m * n);
  // Element (i, k) of a at i·ai + k·ak; element (k, j) of b at k·bk + j·bj.
  const [ai, ak] = transposeA ? [1, m] : [k, 1];
  const [bk, bj] = transposeB ? [1, k] : [n, 1];
  const block = backend.blockSize;
  for (let bi = 0; bi < batch; bi++) {
    const aBase = (bi % batchA) * m * k;
    const bBase = (bi % batchB) * k * n;
    const oBase = bi * m * n;
    for (let i0 = 0; i0 < m; i0 += 4) {
      const a0 = aBase + i0 * ai;
      for (let j0 = 0; j0 < n; j0 += 4) {
        const b0 = bBase + j0 * bj;
        const o = oBase + i0 * n + j0;
        if (i0 + 4 <= m && j0 + 4 <= n) {
          for (let k0 = 0; k0 < k; k0 += block) {
            const k1 = Math.min(k0 + block, k);
            let s00 = 0,
              s01 = 0,
              s02 = 0,
              s03 = 0,
              s10 = 0,
              s11 = 0,
              s12 = 0,
              s13 = 0,
              s20 = 0,
              s21 = 0,
              s22 = 0,
              s23 = 0,
              s30 = 0,
              s31 = 0,
              s32 = 0,
              s33 = 0;
            for (let kk = k0; kk < k1; kk++) {
              const pa = a0 + kk * ak;
              const x0 = av[pa],
                x1 = av[pa + ai],
                x2 = av[pa + 2 * ai],
                x3 = av[pa + 3 * ai];
              const pb = b0 + kk * bk;
              const y0 = bv[pb],
                y1 = bv[pb + bj],
                y2 = bv[pb + 2 * bj],
                y3 = bv[pb + 3 * bj];
              s00 += x0 * y0;
              s01 += x0 * y1;
              s02 += x0 * y2;
              s03 += x0 * y3;
              s10 += x1 * y0;
              s11 += x1 * y1;
              s12 += x1 * y2;
              s13 += x1 * y3;
              s20 += x2 * y0;
              s21 += x2 * y1;
              s22 += x2 * y2;
              s23 += x2 * y3;
              s30 += x3 * y0;
              s31 += x3 * y1;
              s32 += x3 * y2;
              s33 += x3 * y3;
            }
            out[o] += s00;
            out[o + 1] += s01;
            out[o + 2] += s02;
            out[o + 3] += s03;
            out[o + n] += s10;
            out[o + n + 1] += s11;
            out[o + n + 2] += s12;
            out[o + n + 3] += s13;
            const o2 = o + 2 * n;
            out[o2] += s20;
            out[o2 + 1] += s21;
            out[o2 + 2] += s22;
            out[o2 + 3] += s23;
            const o3 = o + 3 * n;
            out[o3] += s30;
            out[o3 + 1] += s31;
            out[o3 + 2] += s32;
            out[o3 + 3] += s33;
          }
          continue;
        }
        // An edge tile: one output at a time.
        for (let i = 0; i < Math.min(4, m - i0); i++)
          for (let j = 0; j < Math.min(4, n - j0); j++)
            for (let k0 = 0; k0 < k; k0 += block) {
              const k1 = Math.min(k0 + block, k);
              let sum = 0;
              for (let kk = k0; kk < k1; kk++) sum += av[a0 + i * ai + kk * ak] * bv[b0 + j * bj + kk * bk];
              out[o + i * n + j] += sum;
            }
      }
    }
  }
  return backend.makeTensorInfo([...outer, m, n], 'float32', out);
}

/** The activations _FusedMatMul applies, as the cpu kernels the stock kernel calls for them. */
const ACTIVATION_KERNELS: Record<string, string> = {
  linear: 'Identity',
  relu: 'Relu',
  elu: 'Elu',
  relu6: 'Relu6',
  prelu: 'Prelu',
  leakyrelu: 'LeakyRelu',
  sigmoid: 'Sigmoid',
};

function batchMatMul(tf: Tf, stock: KernelFunc) {
  return (args: KernelArgs): Info => {
    const { inputs, backend, attrs } = args;
    const cpu = backend as CpuBackend & { blockSize: number };
    return (
      matMul(tf, cpu, inputs.a, inputs.b, !!attrs.transposeA, !!attrs.transposeB) ?? (stock(args as never) as Info)
    );
  };
}

/** _FusedMatMul: the product above, then the kernels the stock one applies for its bias and activation. */
function fusedMatMul(tf: Tf, stock: KernelFunc) {
  return (args: KernelArgs): Info => {
    const { inputs, backend, attrs } = args;
    const activation = attrs.activation as string | undefined;
    const activationKernel = activation ? ACTIVATION_KERNELS[activation] : undefined;
    if (activation && !activationKernel) return stock(args as never) as Info;
    const cpu = backend as CpuBackend & { blockSize: number };
    const product = matMul(tf, cpu, inputs.a, inputs.b, !!attrs.transposeA, !!attrs.transposeB);
    if (!product) return stock(args as never) as Info;
    const run = (name: string, kernelInputs: Record<string, Info>, kernelAttrs: Record<string, unknown> = {}) =>
      tf.getKernel(name, 'cpu')!.kernelFunc({ inputs: kernelInputs, backend, attrs: kernelAttrs } as never) as Info;
    let current = product;
    if (inputs.bias) {
      const sum = run('Add', { a: current, b: inputs.bias });
      backend.disposeIntermediateTensorInfo(current);
      current = sum;
    }
    if (activationKernel) {
      const activated = run(
        activationKernel,
        activation === 'prelu' ? { x: current, alpha: inputs.preluActivationWeights } : { x: current },
        activation === 'leakyrelu' ? { alpha: attrs.leakyreluAlpha } : {},
      );
      backend.disposeIntermediateTensorInfo(current);
      current = activated;
    }
    return current;
  };
}

/**
 * Softmax over the last axis, row by row, with the stock kernel's arithmetic step for step (its
 * Max, Sub, Exp, Sum and RealDiv kernels, each result rounded to float32 where theirs is stored; the
 * row sum accumulated in a double as Sum's loop does), without its two broadcasting binary ops.
 */
function softmax(stock: KernelFunc) {
  return (args: KernelArgs): Info => {
    const { inputs, backend, attrs } = args;
    const logits = inputs.logits;
    const values = typedValues(backend, logits);
    const rank = logits.shape.length;
    const dim = attrs.dim as number;
    if (!(values instanceof Float32Array) || rank === 0 || (dim !== -1 && dim !== rank - 1))
      return stock(args as never) as Info;
    const width = logits.shape[rank - 1];
    const out = new Float32Array(values.length);
    for (let row = 0; row < values.length; row += width) {
      let max = values[row];
      for (let j = 0; j < width; j++) {
        const v = values[row + j];
        if (Number.isNaN(v) || v > max) max = v;
      }
      let sum = 0;
      for (let j = 0; j < width; j++) {
        const e = Math.fround(Math.exp(Math.fround(values[row + j] - max)));
        out[row + j] = e;
        sum += e;
      }
      const total = Math.fround(sum);
      for (let j = 0; j < width; j++) out[row + j] = out[row + j] / total;
    }
    return backend.makeTensorInfo(logits.shape, 'float32', out);
  };
}

/**
 * Float32 loops of the arithmetic binary kernels: the stock kernels' arithmetic (in doubles, stored as float32)
 * without their per-element index arithmetic and call of the op. `y` repeats every y.length values of the
 * full-size `x` (y.length divides x.length); `swap`: y is the first operand. One function per op, so that each
 * loop's arithmetic is inlined.
 */
type Loop = (x: Float32Array, y: Float32Array, out: Float32Array, swap: boolean) => void;
const FLOAT_LOOPS: Partial<Record<string, Loop>> = {
  Add: (x, y, out) => {
    for (let base = 0, m = y.length; base < x.length; base += m)
      for (let j = 0; j < m; j++) out[base + j] = x[base + j] + y[j];
  },
  Multiply: (x, y, out) => {
    for (let base = 0, m = y.length; base < x.length; base += m)
      for (let j = 0; j < m; j++) out[base + j] = x[base + j] * y[j];
  },
  Sub: (x, y, out, swap) => {
    for (let base = 0, m = y.length; base < x.length; base += m)
      if (swap) for (let j = 0; j < m; j++) out[base + j] = y[j] - x[base + j];
      else for (let j = 0; j < m; j++) out[base + j] = x[base + j] - y[j];
  },
  RealDiv: (x, y, out, swap) => {
    for (let base = 0, m = y.length; base < x.length; base += m)
      if (swap) for (let j = 0; j < m; j++) out[base + j] = y[j] / x[base + j];
      else for (let j = 0; j < m; j++) out[base + j] = x[base + j] / y[j];
  },
};

function binary(tf: Tf, stock: KernelFunc, name: string) {
  const floatLoop = FLOAT_LOOPS[name];
  return (args: KernelArgs): Info => {
    const { inputs, backend } = args;
    const { a, b } = inputs;
    if (!a || !b) return stock(args as never) as Info;
    const out = tf.backend_util.assertAndGetBroadcastShape(a.shape, b.shape);
    // Expand an operand that is broadcast over a size-1 axis to the output's shape; one whose shape is
    // a suffix of the output's repeats (the float loops, or the stock kernel's index modulo its size).
    const expand = (x: Info): Info | undefined => {
      if (tf.backend_util.getBroadcastDims(x.shape, out).length === 0) return undefined;
      const values = typedValues(backend, x);
      if (!values) return undefined;
      const st = strides(x.shape);
      const lead = out.length - x.shape.length;
      const inStrides = out.map((d, k) => (k < lead || x.shape[k - lead] === 1 ? 0 : st[k - lead]));
      return backend.makeTensorInfo(out, x.dtype, stridedCopy(values, 0, inStrides, out));
    };
    const ea = expand(a);
    const eb = expand(b);
    try {
      const [x, y] = [ea ?? a, eb ?? b];
      const size = sizeOf(out);
      const xv = floatLoop && typedValues(backend, x);
      const yv = floatLoop && typedValues(backend, y);
      if (floatLoop && size > 0 && xv instanceof Float32Array && yv instanceof Float32Array) {
        const values = new Float32Array(size);
        if (xv.length === size) floatLoop(xv, yv, values, false);
        else if (yv.length === size) floatLoop(yv, xv, values, true);
        if (xv.length === size || yv.length === size) return backend.makeTensorInfo(out, 'float32', values);
      }
      if (!ea && !eb) return stock(args as never) as Info;
      return stock({ ...args, inputs: { a: x, b: y } } as never) as Info;
    } finally {
      if (ea) backend.disposeIntermediateTensorInfo(ea);
      if (eb) backend.disposeIntermediateTensorInfo(eb);
    }
  };
}

/**
 * Replace the cpu backend's Slice, Transpose and broadcasting binary kernels with the copies above
 * (idempotent; the stock kernels stay reachable through stockCpuKernel and stockCpuKernels). Call once tfjs-backend-cpu
 * has registered its kernels.
 */
export function fastCpuKernels(tf: Tf): void {
  replace(tf, 'Slice', (stock) => slice(tf, stock));
  replace(tf, 'SplitV', (stock) => splitV(tf, stock));
  replace(tf, 'Transpose', (stock) => transpose(stock));
  replace(tf, 'Softmax', (stock) => softmax(stock));
  replace(tf, 'BatchMatMul', (stock) => batchMatMul(tf, stock));
  replace(tf, '_FusedMatMul', (stock) => fusedMatMul(tf, stock));
  for (const name of CPU_BINARY_KERNELS) replace(tf, name, (stock) => binary(tf, stock, name));
}
