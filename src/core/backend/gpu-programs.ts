// Every xtts GPU program behind one registry keyed by kernel name, as tfjs-core's kernel registry is
// (and on top of it). The file that holds a program's WGSL defines its kernels once, each in a group
// that switches it; which groups run, and which program takes the large matmuls, is a selection
// passed to selectGpuPrograms: the webgpu backend's registration passes the run's (device.matmul,
// training.precision), tests and benches pass theirs to compare a program with tfjs's composition.
// A kernel is registered with tfjs exactly while its group is selected, built for the selection in
// force, so "does the fused softmax run here" is "is its kernel registered for the current backend".
// tfjs-core is passed in, never imported: commands that compute nothing load this file without it.
import type * as tfTypes from '@tensorflow/tfjs-core';

/** What the registry uses of tfjs-core (the module, however it was imported). */
type Tf = Pick<typeof tfTypes, 'getKernel' | 'registerKernel' | 'unregisterKernel' | 'getBackend'>;

/** The switches: a group's kernels run together or not at all. */
export const GPU_PROGRAM_GROUPS = [
  /** The attention's scaled softmax forward and backward (programs/softmax.ts). */
  'softmax',
  /** Attention products over all heads in one strided program (programs/attention.ts). */
  'packed-attention',
  /** A convolution's taps summed in one program (programs/conv.ts). */
  'tap-sum',
  /** A dense layer's dx, dW and db in one program (programs/dense.ts, programs/dense-layer.ts). */
  'dense-grads',
  /** The f16 tensor-core dx and dW of a dense layer as one paired program (programs/dense-layer.ts). */
  'paired-dense',
  /** Layer normalisation forward and backward (programs/layernorm.ts). */
  'layer-norm',
  /** The masked mel error and the duration loss with their gradients (programs/losses.ts). */
  'losses',
  /** Key-padding and cross-attention biases built on the device (programs/masks.ts). */
  'masks',
  /** ReLU's gradient, with its column sums (programs/relu.ts). */
  'relu-grads',
  /** Windows, dropout masks and segment sums (programs/slices.ts). */
  'slices',
  /** AdamW's update and its step scalars (programs/adamw.ts). */
  'adamw',
  /** Full and strided sums, the gradient norm's sum of squares (programs/sum.ts). */
  'device-sums',
  /** The bfloat16 gradient exchange's packing and sum (programs/exchange.ts). */
  'exchange',
  /** The ordered split-K, wide float32 and f16 tensor-core matmuls in front of tfjs's (programs/matmul.ts). */
  'matmul',
] as const;
export type GpuProgramGroup = (typeof GPU_PROGRAM_GROUPS)[number];

/** Which program runs the matmuls tfjs would run as its 32×32-tile MatMulPackedProgram. */
export type MatMulProgram = 'tfjs' | 'tiled' | 'f16';

export interface SubgroupMatrixShape {
  M: number;
  N: number;
  K: number;
}

export interface GpuProgramSelection {
  /** Groups left to tfjs's composition (or, for matmul and device-sums, to tfjs's own kernels). */
  readonly off: readonly GpuProgramGroup[];
  /**
   * 'tiled' (device.matmul: tiled): xtts's wide float32 program; 'f16' (training.precision: mixed_fp16): tensor cores.
   */
  readonly matmul: MatMulProgram;
  /** The subgroup-matrix shape the f16 program is built for (the adapter's f16→f32 configuration). */
  readonly subgroupShape: SubgroupMatrixShape;
  /** How the f16 program is built (programs/matmul-f16.ts): benches compare builds; runs keep the default. */
  readonly f16Tuning: F16Tuning;
}

/** How the f16 tensor-core program reads its operands and stores its sums (programs/matmul-f16.ts). */
export interface F16Tuning {
  /** An operand whose contiguous dimension is a multiple of 4 is read four values at a load (a vec4 binding). */
  readonly vector: boolean;
  /** The next slab of K is read into registers while this one is multiplied (its latency hidden). */
  readonly prefetch: boolean;
  /** Copies of the slabs in workgroup memory: with 2 (and prefetch) one barrier a slab suffices. */
  readonly buffers: 1 | 2;
  /** K per slab. */
  readonly slab: 32 | 64;
  /** Tiles inside the output of a product without bias or ReLU store their sums straight into it. */
  readonly direct: boolean;
  /** The most parts K is split into (1: never split); the program's own choice below that. */
  readonly maxParts: number;
  /** Subgroups of 32 a workgroup: 8 (each 32 × 64 of a 128 tile) or 4 (each 64 × 64: more sums, fewer loads). */
  readonly subgroups: 4 | 8;
  /** The attention's strided batched products on the tensor cores too (programs/matmul-f16-strided.ts). */
  readonly attention: boolean;
}

/**
 * vec4 loads, the rest as before: on an H200 it took a normal mixed_fp16 step from 72.5 to 62.7 ms (replayed, one
 * call) and was the fastest build on most of the step's large matmuls (docs/training.md, "Builds of the f16 program").
 */
export const DEFAULT_F16_TUNING: F16Tuning = {
  vector: true,
  prefetch: false,
  buffers: 1,
  slab: 32,
  direct: false,
  maxParts: 64,
  subgroups: 8,
  attention: true,
};

/**
 * A build of the f16 program from "KEY:VALUE+KEY:VALUE" over the default (booleans as 0 or 1): what
 * bench/matmul.bench.ts's --tunings and the XTTS_F16_TUNING benchmark switch take. Throws, naming the
 * bad part and the keys, on anything else.
 */
export function parseF16Tuning(spec: string, where = 'XTTS_F16_TUNING'): F16Tuning {
  const tuning: Record<string, number | boolean> = { ...DEFAULT_F16_TUNING };
  const allowed: Record<keyof F16Tuning, readonly number[]> = {
    vector: [0, 1],
    prefetch: [0, 1],
    buffers: [1, 2],
    slab: [32, 64],
    direct: [0, 1],
    maxParts: [],
    subgroups: [4, 8],
    attention: [0, 1],
  };
  for (const kv of spec.split('+').filter(Boolean)) {
    const [key, value] = kv.split(':');
    const n = Number(value);
    const ok =
      key in allowed &&
      /^\d+$/.test(value ?? '') &&
      (allowed[key as keyof F16Tuning].length === 0 ? n >= 1 : allowed[key as keyof F16Tuning].includes(n));
    if (!ok)
      throw new Error(
        `${where}: "${kv}" is not KEY:VALUE with KEY one of vector, prefetch, direct, attention (0 or 1), ` +
          'buffers (1 or 2), slab (32 or 64), subgroups (4 or 8), maxParts (1 or more)',
      );
    tuning[key] = typeof DEFAULT_F16_TUNING[key as keyof F16Tuning] === 'boolean' ? n === 1 : n;
  }
  return tuning as unknown as F16Tuning;
}

export const DEFAULT_GPU_PROGRAMS: GpuProgramSelection = {
  off: [],
  matmul: 'tfjs',
  subgroupShape: { M: 16, N: 16, K: 16 },
  f16Tuning: DEFAULT_F16_TUNING,
};

type KernelFunc = tfTypes.KernelFunc;

interface Definition {
  group: GpuProgramGroup;
  kernelName: string;
  backendName: string;
  /** An xtts kernel: its function for a selection. */
  make?: (selection: GpuProgramSelection) => KernelFunc;
  /** In front of tfjs's own kernel of this name: ours for a selection, given tfjs's. */
  wrap?: (original: tfTypes.KernelConfig, selection: GpuProgramSelection) => KernelFunc;
  /** tfjs's own kernel, while ours is in front of it. */
  original?: tfTypes.KernelConfig;
}

const definitions = new Map<string, Definition>();
let selection: GpuProgramSelection = DEFAULT_GPU_PROGRAMS;
const key = (backendName: string, kernelName: string) => `${backendName}/${kernelName}`;

function apply(tf: Tf, d: Definition): void {
  const on = !selection.off.includes(d.group);
  const current = tf.getKernel(d.kernelName, d.backendName);
  if (d.wrap) {
    if (!d.original) {
      if (!current) return;
      d.original = current;
    }
    if (current) tf.unregisterKernel(d.kernelName, d.backendName);
    const kernelFunc = on ? d.wrap(d.original, selection) : d.original.kernelFunc;
    tf.registerKernel({ ...d.original, kernelFunc });
    return;
  }
  if (current) tf.unregisterKernel(d.kernelName, d.backendName);
  if (on && d.make)
    tf.registerKernel({ kernelName: d.kernelName, backendName: d.backendName, kernelFunc: d.make(selection) });
}

/** An xtts kernel of `group`, registered for `backendName` while the group is selected. */
export function defineGpuKernel(
  tf: Tf,
  group: GpuProgramGroup,
  kernelName: string,
  make: (selection: GpuProgramSelection) => KernelFunc,
  backendName = 'webgpu',
): void {
  const d: Definition = { group, kernelName, backendName, make };
  definitions.set(key(backendName, kernelName), d);
  apply(tf, d);
}

/**
 * xtts's kernel in front of tfjs's own webgpu kernel `kernelName` while `group` is selected (tfjs's
 * is given back otherwise). Nothing happens before tfjs's webgpu backend has registered its kernels.
 */
export function defineGpuOverride(
  tf: Tf,
  group: GpuProgramGroup,
  kernelName: string,
  wrap: (original: tfTypes.KernelConfig, selection: GpuProgramSelection) => KernelFunc,
): void {
  const k = key('webgpu', kernelName);
  const d: Definition = { group, kernelName, backendName: 'webgpu', wrap, original: definitions.get(k)?.original };
  definitions.set(k, d);
  apply(tf, d);
}

/** Changes the selection (what `wanted` names; the rest stays); returns the one it replaced, to put back. */
export function selectGpuPrograms(tf: Tf, wanted: Partial<GpuProgramSelection>): GpuProgramSelection {
  const previous = selection;
  selection = { ...selection, ...wanted };
  for (const d of definitions.values()) apply(tf, d);
  return previous;
}

/** The selection in force. */
export function gpuProgramSelection(): GpuProgramSelection {
  return selection;
}

/** Whether xtts's kernel `kernelName` runs on the current backend (defined, and its group selected). */
export function gpuKernelActive(tf: Tf, kernelName: string): boolean {
  return tf.getKernel(kernelName, tf.getBackend()) !== undefined;
}

/** Turns one group on or off, the rest of the selection as it is (tests and benches compare the two paths). */
export function switchGpuPrograms(tf: Tf, group: GpuProgramGroup, on: boolean): void {
  const off = selection.off.filter((g) => g !== group);
  selectGpuPrograms(tf, { off: on ? off : [...off, group] });
}
