// Dense peaks of GPUs, for model FLOPs utilisation (MFU): what a step's matmuls and convolutions
// achieve against what the device could do in the precision the run trains in. fp32 runs compute on
// the CUDA cores, so the FP32 figure is their ceiling; mixed_fp16 runs put their large matmuls on the
// tensor cores with f16 operands and f32 sums, whose FP16 figure (with FP32 accumulation) is theirs.
// NVIDIA datasheets, boost clock, no sparsity.
/** Per device: its dense FP32 peak and its dense FP16 tensor peak (FP32 accumulation), TFLOP/s. */
const PEAK_TFLOPS: [RegExp, { fp32: number; fp16Tensor: number }][] = [
  [/H100.*PCIe/i, { fp32: 51.2, fp16Tensor: 756.5 }],
  [/H100 NVL/i, { fp32: 60, fp16Tensor: 835.5 }],
  [/H100/i, { fp32: 66.9, fp16Tensor: 989.4 }], // SXM5 (the "80GB HBM3" part)
  [/H200/i, { fp32: 66.9, fp16Tensor: 989.4 }],
  [/GH200/i, { fp32: 66.9, fp16Tensor: 989.4 }],
  [/A100/i, { fp32: 19.5, fp16Tensor: 312 }],
  [/L40S/i, { fp32: 91.6, fp16Tensor: 362.1 }],
  [/\bL40\b/i, { fp32: 90.5, fp16Tensor: 181 }],
  [/\bL4\b/i, { fp32: 30.3, fp16Tensor: 121 }],
  [/\bA10G?\b/i, { fp32: 31.2, fp16Tensor: 125 }],
  [/RTX 4090/i, { fp32: 82.6, fp16Tensor: 165.2 }],
  [/V100/i, { fp32: 15.7, fp16Tensor: 125 }],
  [/\bT4\b/i, { fp32: 8.1, fp16Tensor: 65 }],
];

/** The device's peaks, or null when xtts does not know them (CPUs, other GPUs). */
function peaksOf(device: string | null): { fp32: number; fp16Tensor: number } | null {
  if (!device) return null;
  return PEAK_TFLOPS.find(([pattern]) => pattern.test(device))?.[1] ?? null;
}

/** The device's peak for a run's precision: FP32 for fp32, FP16 tensor (FP32 accumulation) for mixed_fp16. */
export function peakFor(
  device: string | null,
  precision: 'fp32' | 'mixed_fp16',
): { tflops: number | null; label: 'FP32' | 'FP16 tensor' } {
  const peaks = peaksOf(device);
  return precision === 'mixed_fp16'
    ? { tflops: peaks?.fp16Tensor ?? null, label: 'FP16 tensor' }
    : { tflops: peaks?.fp32 ?? null, label: 'FP32' };
}
