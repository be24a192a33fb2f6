// The data-parallel gradient exchange in bfloat16 (device.gradient_exchange: bfloat16), as PyTorch DDP's
// bf16 compression hook does it: every replica rounds its gradient to bfloat16 (round to nearest, ties to
// even; NaN stays NaN, overflow becomes ±Inf) and packs two values a 32-bit word, so the exchange moves half
// the bytes; every replica then adds all the replicas' rounded gradients (its own too, so that every replica
// adds the same values) in float32, in rank order — the same bits on every replica. On webgpu: one program
// packs, one unpacks and adds; elsewhere (and with the group off) the same rounding runs on the host
// (roundBf16), and tfjs adds the rounded float32 values in the same order.
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, flatProgram, gpuKernelActive, webgpuKernel } from '../index.js';

export const BF16_PACK_KERNEL = 'XttsBf16Pack';
export const BF16_SUM_KERNEL = 'XttsBf16Sum';

/** WGSL: the bfloat16 bits (low 16) of a float32, rounded to nearest even; a NaN stays a (quiet) NaN. */
const ROUND = `
      fn bf16(v : f32) -> u32 {
        let bits = bitcast<u32>(v);
        if ((bits & 0x7fffffffu) > 0x7f800000u) {
          return (bits >> 16u) | 0x40u;
        }
        return (bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u;
      }`;

defineGpuKernel(tf, 'exchange', BF16_PACK_KERNEL, () =>
  webgpuKernel((inputs: { x: tf.TensorInfo }, backend) => {
    const n = inputs.x.shape[0];
    const words = Math.ceil(n / 2);
    const program = flatProgram(
      'XttsBf16PackProgram',
      'xtts_bf16_pack',
      ['x'],
      [words],
      'n : i32,',
      `
        let lo = bf16(x[2 * index]);
        var hi = 0u;
        if (2 * index + 1 < uniforms.n) {
          hi = bf16(x[2 * index + 1]);
        }
        setOutputAtIndexI32(index, bitcast<i32>(lo | (hi << 16u)));`,
      ROUND,
    );
    return backend.runWebGPUProgram(program, [inputs.x], 'int32', [{ type: 'int32', data: [n] }]);
  }),
);

defineGpuKernel(tf, 'exchange', BF16_SUM_KERNEL, () =>
  webgpuKernel((inputs: Record<string, tf.TensorInfo>, backend, attrs: { size: number }) => {
    const names = Object.keys(inputs)
      .filter((k) => /^p\d+$/.test(k))
      .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
    // In rank order, one float32 add at a time, as tfjs's adds of the rounded values make it.
    const terms = names.map((p) => `bitcast<f32>(select(w${p} << 16u, w${p} & 0xffff0000u, odd))`);
    const program = flatProgram(
      'XttsBf16SumProgram',
      `xtts_bf16_sum_${names.length}`,
      names,
      [attrs.size],
      '',
      `
        let j = index / 2;
        let odd = (index & 1) == 1;
        ${names.map((p) => `let w${p} = bitcast<u32>(${p}[j]);`).join('\n        ')}
        var s = ${terms[0]};
        ${terms
          .slice(1)
          .map((t) => `s = s + ${t};`)
          .join('\n        ')}
        setOutputAtIndex(index, s);`,
    );
    return backend.runWebGPUProgram(
      program,
      names.map((p) => inputs[p]),
      'float32',
    );
  }),
);

/** Whether the device packs and sums (webgpu with the exchange programs); else roundBf16 on the host. */
export function bf16ExchangeOnDevice(): boolean {
  return gpuKernelActive(tf, BF16_PACK_KERNEL) && gpuKernelActive(tf, BF16_SUM_KERNEL);
}

/** x rounded to bfloat16, two values a word (int32 [ceil(n/2)]: value 2j in the low half of word j). */
export function packBf16(x: tf.Tensor1D): tf.Tensor1D {
  return tf.engine().runKernel(BF16_PACK_KERNEL, { x }) as tf.Tensor1D;
}

/** The float32 sum, in the order given, of packed bfloat16 gradients of `size` values (packBf16's words). */
export function sumPackedBf16(packed: tf.Tensor1D[], size: number): tf.Tensor1D {
  const inputs = Object.fromEntries(packed.map((p, r) => [`p${r}`, p]));
  return tf.engine().runKernel(BF16_SUM_KERNEL, inputs, { size } as never) as tf.Tensor1D;
}

/** Every value of `x` rounded to bfloat16 in place (float32 values whose low 16 bits are 0), as the program does. */
export function roundBf16(x: Float32Array): Float32Array {
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    if ((b & 0x7fffffff) > 0x7f800000) bits[i] = ((b >>> 16) | 0x40) << 16;
    else bits[i] = (((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) << 16) >>> 0;
  }
  return x;
}
