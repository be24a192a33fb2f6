// Which backend can train in which precision. Kept free of TensorFlow.js imports so that the config
// validator can use it without loading an engine.
//
// TensorFlow.js 4.22 trains in float32 on every backend here:
//  - tfjs-core's DataType is float32 | int32 | bool | complex64 | string: there is no float16 tensor.
//  - tfjs-backend-webgpu 4.22 emits WGSL with f32 storage only; no program enables `f16`, so an
//    adapter's `shader-f16` feature is never used (checked in its dist/: no `enable f16` anywhere).
//  - tfjs-node 4.22 maps only those five dtypes to TF_DataType; libtensorflow's half is not exposed.
//  - tfjs-backend-wasm (XNNPACK f32 operators) and tfjs-backend-cpu (Float32Array) are float32.
import type { Backend, TrainingConfig } from '../config/schema.js';

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
    trains: ['fp32'],
    float16: 'tfjs-backend-webgpu 4.22 has no float16 path: its shaders use f32 storage even where the adapter offers shader-f16',
  },
  tensorflow: {
    trains: ['fp32'],
    float16: 'tfjs-node 4.22 has no float16 dtype (tfjs-core tensors are float32, int32, bool, complex64 or string)',
  },
  wasm: { trains: ['fp32'], float16: 'tfjs-backend-wasm 4.22 computes in float32 (XNNPACK f32 operators)' },
  cpu: { trains: ['fp32'], float16: 'tfjs-backend-cpu computes in float32 (Float32Array)' },
};

/** Backends that can train with `precision: mixed_fp16` (none, with TensorFlow.js 4.22). */
export const FP16_TRAINING_BACKENDS: readonly ConcreteBackend[] = (Object.keys(PRECISION_SUPPORT) as ConcreteBackend[]).filter((b) =>
  PRECISION_SUPPORT[b].trains.includes('mixed_fp16'),
);

/**
 * Whether `backend` trains in `precision`; for `auto`, whether every backend auto may pick does
 * (auto's pick depends on the machine, so a precision is only safe if all of them support it).
 */
export function precisionSupported(backend: Backend, precision: Precision): { ok: boolean; reason: string } {
  const backends: ConcreteBackend[] = backend === 'auto' ? (Object.keys(PRECISION_SUPPORT) as ConcreteBackend[]) : [backend];
  const missing = backends.filter((b) => !PRECISION_SUPPORT[b].trains.includes(precision));
  if (missing.length === 0) return { ok: true, reason: `${backend} trains in ${precision}` };
  return { ok: false, reason: missing.map((b) => `${b}: ${PRECISION_SUPPORT[b].float16}`).join('; ') };
}
