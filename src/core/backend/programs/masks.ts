// Attention biases made from the batch's lengths and alignment as single WebGPU programs. Composed, a
// key-padding bias is a comparison with the positions, a subtraction and a multiply (3 programs), and
// the decoder's cross-attention bias a one-hot of the alignment, the same arithmetic on it, and the
// text's bias concatenated and broadcast for the other heads (about 6). Here each is one program with
// the composition's values bit for bit: 0 where a key may be read (+0, as 0·1e9 is), MASK_BIAS where
// not. Registered for the webgpu backend only; other backends keep the composition (nn.ts, model.ts).
import * as tf from '@tensorflow/tfjs-core';
import { defineGpuKernel, flatProgram, gpuKernelActive, type WebgpuProgramRunner } from '../index.js';

export const LENGTH_BIAS_KERNEL = 'XttsLengthBias';
export const CROSS_BIAS_KERNEL = 'XttsCrossBias';
defineGpuKernel(
  tf,
  'masks',
  LENGTH_BIAS_KERNEL,
  () =>
    (({
      inputs,
      backend,
      attrs,
    }: {
      inputs: { lengths: tf.TensorInfo };
      backend: WebgpuProgramRunner;
      attrs: { keys: number; bias: number };
    }) => {
      const batch = inputs.lengths.shape[0];
      const program = flatProgram(
        'XttsLengthBiasProgram',
        'xtts_length_bias',
        ['lengths'],
        [batch * attrs.keys],
        'keys : i32, bias : f32,',
        `
        let b = index / uniforms.keys;
        setOutputAtIndex(index, select(uniforms.bias, 0.0, index % uniforms.keys < lengths[b]));`,
      );
      const out = backend.runWebGPUProgram(program, [inputs.lengths], 'float32', [
        { type: 'int32', data: [attrs.keys] },
        { type: 'float32', data: [attrs.bias] },
      ]);
      return { ...out, shape: [batch, 1, 1, attrs.keys] };
    }) as unknown as tf.KernelFunc,
);
defineGpuKernel(
  tf,
  'masks',
  CROSS_BIAS_KERNEL,
  () =>
    (({
      inputs,
      backend,
      attrs,
    }: {
      inputs: { alignment: tf.TensorInfo; textBias: tf.TensorInfo };
      backend: WebgpuProgramRunner;
      attrs: { heads: number; alignHeads: number; latents: number; bias: number };
    }) => {
      const [batch, steps] = inputs.alignment.shape;
      const text = inputs.textBias.shape[3];
      const memory = attrs.latents + text;
      // out[b, h, s, m]: the alignment heads read the aligned token only; the others the latents and
      // the text's own bias.
      const program = flatProgram(
        'XttsCrossBiasProgram',
        'xtts_cross_bias',
        ['alignment', 'textBias'],
        [batch * attrs.heads * steps * memory],
        'heads : i32, steps : i32, memory : i32, latents : i32, alignHeads : i32, bias : f32,',
        `
        let m = index % uniforms.memory;
        let s = (index / uniforms.memory) % uniforms.steps;
        let h = (index / (uniforms.memory * uniforms.steps)) % uniforms.heads;
        let b = index / (uniforms.memory * uniforms.steps * uniforms.heads);
        var v = 0.0;
        if (h < uniforms.alignHeads) {
          v = select(uniforms.bias, 0.0, m == uniforms.latents + alignment[b * uniforms.steps + s]);
        } else if (m >= uniforms.latents) {
          v = textBias[b * (uniforms.memory - uniforms.latents) + m - uniforms.latents];
        }
        setOutputAtIndex(index, v);`,
      );
      const out = backend.runWebGPUProgram(program, [inputs.alignment, inputs.textBias], 'float32', [
        ...[attrs.heads, steps, memory, attrs.latents, attrs.alignHeads].map((v) => ({ type: 'int32', data: [v] })),
        { type: 'float32', data: [attrs.bias] },
      ]);
      return { ...out, shape: [batch, attrs.heads, steps, memory] };
    }) as unknown as tf.KernelFunc,
);

/** Whether the biases are made by these programs on this backend (tests compare both paths). */
export function fusedMasksAvailable(): boolean {
  return gpuKernelActive(tf, LENGTH_BIAS_KERNEL);
}

/** [batch, 1, 1, keys]: 0 for keys < lengths[b], `bias` for the rest; lengths int32. One program. */
export function lengthBias(lengths: tf.Tensor1D, keys: number, bias: number): tf.Tensor4D {
  return tf.engine().runKernel(LENGTH_BIAS_KERNEL, { lengths }, { keys, bias } as never) as tf.Tensor4D;
}

/**
 * [B, heads, S, latents + T_text]: for the first `alignHeads` heads 0 at the aligned token (latents +
 * alignment[b, s]) and `bias` elsewhere; for the others 0 over the latents and textBias [B, 1, 1,
 * T_text] over the text. alignment int32 [B, S]. One program.
 */
export function crossAttentionBias(
  alignment: tf.Tensor2D,
  textBias: tf.Tensor4D,
  heads: number,
  alignHeads: number,
  latents: number,
  bias: number,
): tf.Tensor4D {
  return tf.engine().runKernel(CROSS_BIAS_KERNEL, { alignment, textBias }, {
    heads,
    alignHeads,
    latents,
    bias,
  } as never) as tf.Tensor4D;
}
