// Which backend can train in which precision. Kept free of TensorFlow.js imports so that the config
// validator can use it without loading an engine.
//
// TensorFlow.js 4.22 has no float16 tensor (tfjs-core's DataType is float32 | int32 | bool | complex64
// | string), and tfjs-backend-webgpu 4.22's own WGSL uses f32 only. On webgpu, mixed_fp16 is xtts's:
// every tensor stays float32 and the large matmuls run xtts's tensor-core program (f16 operands through
// Dawn's subgroup matrices, f32 sums; backend/programs/matmul.ts) under a dynamic loss scale (optim/adamw.ts).
// Whether the adapter has what that program needs is known only once it is opened (initBackend).
// Elsewhere everything is float32:
//  - tfjs-node 4.22 maps only those five dtypes to TF_DataType; libtensorflow's half is not exposed.
//  - tfjs-backend-wasm (XNNPACK f32 operators) and tfjs-backend-cpu (Float32Array) are float32.
import type { Backend, TrainingConfig, XttsConfig } from '../config/index.js';

export type Precision = TrainingConfig['precision'];
export type ConcreteBackend = Exclude<Backend, 'auto'>;

export interface PrecisionSupport {
  /** Precisions this backend really trains in. */
  trains: readonly Precision[];
  /** Why float16 is not among them (or how it is used). */
  float16: string;
}

export const PRECISION_SUPPORT: Readonly<Record<ConcreteBackend, PrecisionSupport>> = {
  webgpu: {
    trains: ['fp32', 'mixed_fp16'],
    float16:
      'mixed_fp16 runs the large matmuls on tensor cores with f16 operands and f32 ' +
      'sums, under a dynamic loss scale; the adapter needs shader-f16, subgroups and ' +
      'an f16→f32 subgroup-matrix shape (Dawn offers them under allow_unsafe_apis; on ' +
      'NVIDIA with vulkan_enable_f16_on_nvidia, which xtts sets)',
  },
  tensorflow: {
    trains: ['fp32'],
    float16: 'tfjs-node 4.22 has no float16 dtype (tfjs-core tensors are float32, int32, bool, complex64 or string)',
  },
  wasm: { trains: ['fp32'], float16: 'tfjs-backend-wasm 4.22 computes in float32 (XNNPACK f32 operators)' },
  cpu: { trains: ['fp32'], float16: 'tfjs-backend-cpu computes in float32 (Float32Array)' },
};

/** Backends that can train with `precision: mixed_fp16` (webgpu, where the adapter has tensor cores). */
export const FP16_TRAINING_BACKENDS: readonly ConcreteBackend[] = (
  Object.keys(PRECISION_SUPPORT) as ConcreteBackend[]
).filter((b) => PRECISION_SUPPORT[b].trains.includes('mixed_fp16'));

/**
 * The precision policy, the one function the validator (rule training/precision) and `train` ask:
 * whether a run on `backend` trains in `precision`. For `auto`: fp32 everywhere; mixed_fp16 makes auto
 * take webgpu only (initBackend passes the others over with the reason), so it is allowed where webgpu
 * trains it. Data-parallel replicas (`gpus`, device.gpus, set) train in float32: their update sums no
 * loss-scaled gradients.
 */
export function precisionSupported(
  backend: Backend,
  precision: Precision,
  gpus: XttsConfig['device']['gpus'] = null,
): { ok: boolean; reason: string } {
  if (gpus !== null && precision !== 'fp32') {
    return {
      ok: false,
      reason:
        `data-parallel training (device.gpus: ${JSON.stringify(gpus)}) runs its replicas ` +
        `in float32: ${precision} trains on one GPU`,
    };
  }
  if (backend === 'auto' && precision === 'mixed_fp16') {
    return PRECISION_SUPPORT.webgpu.trains.includes(precision)
      ? { ok: true, reason: 'auto trains mixed_fp16 on webgpu only' }
      : { ok: false, reason: `webgpu: ${PRECISION_SUPPORT.webgpu.float16}` };
  }
  const backends: ConcreteBackend[] =
    backend === 'auto' ? (Object.keys(PRECISION_SUPPORT) as ConcreteBackend[]) : [backend];
  const missing = backends.filter((b) => !PRECISION_SUPPORT[b].trains.includes(precision));
  if (missing.length === 0) return { ok: true, reason: `${backend} trains in ${precision}` };
  return { ok: false, reason: missing.map((b) => `${b}: ${PRECISION_SUPPORT[b].float16}`).join('; ') };
}
