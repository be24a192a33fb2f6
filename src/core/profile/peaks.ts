// Dense peaks of GPUs, for model FLOPs utilisation (MFU): what a step's matmuls and convolutions
// achieve against what the device could do in the precision the run trains in. fp32 runs compute on
// the CUDA cores, so the FP32 figure is their ceiling; mixed_fp16 runs put their large matmuls on the
// tensor cores with f16 operands and f32 sums, whose FP16 figure (with FP32 accumulation) is theirs.
// NVIDIA datasheets, boost clock, no sparsity.
const FP32_PEAK_TFLOPS: [RegExp, number][] = [
  [/H100.*PCIe/i, 51.2],
  [/H100 NVL/i, 60],
  [/H100/i, 66.9], // SXM5 (the "80GB HBM3" part)
  [/H200/i, 66.9],
  [/GH200/i, 66.9],
  [/A100/i, 19.5],
  [/L40S/i, 91.6],
  [/\bL40\b/i, 90.5],
  [/\bL4\b/i, 30.3],
  [/\bA10G?\b/i, 31.2],
  [/RTX 4090/i, 82.6],
  [/V100/i, 15.7],
  [/\bT4\b/i, 8.1],
];

const FP16_TENSOR_PEAK_TFLOPS: [RegExp, number][] = [
  [/H100.*PCIe/i, 756.5],
  [/H100 NVL/i, 835.5],
  [/H100/i, 989.4],
  [/H200/i, 989.4],
  [/GH200/i, 989.4],
  [/A100/i, 312],
  [/L40S/i, 362.1],
  [/\bL40\b/i, 181],
  [/\bL4\b/i, 121],
  [/\bA10G?\b/i, 125],
  [/RTX 4090/i, 165.2],
  [/V100/i, 125],
  [/\bT4\b/i, 65],
];

/** The device's dense FP32 peak in TFLOP/s, or null when xtts does not know it (CPUs, other GPUs). */
export function fp32PeakTflops(device: string | null): number | null {
  return peakFrom(FP32_PEAK_TFLOPS, device);
}

/** The device's peak for a run's precision: FP32 for fp32, FP16 tensor (FP32 accumulation) for mixed_fp16. */
export function peakFor(device: string | null, precision: 'fp32' | 'mixed_fp16'): { tflops: number | null; label: 'FP32' | 'FP16 tensor' } {
  return precision === 'mixed_fp16' ? { tflops: peakFrom(FP16_TENSOR_PEAK_TFLOPS, device), label: 'FP16 tensor' } : { tflops: fp32PeakTflops(device), label: 'FP32' };
}

function peakFrom(table: [RegExp, number][], device: string | null): number | null {
  if (!device) return null;
  for (const [pattern, peak] of table) if (pattern.test(device)) return peak;
  return null;
}
