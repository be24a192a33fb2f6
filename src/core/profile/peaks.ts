// Dense FP32 peaks of GPUs, for model FLOPs utilisation (MFU): what a step's matmuls and convolutions
// achieve against what the device could do. xtts's WebGPU kernels compute in f32 on the CUDA cores
// (no tensor cores: those need f16 operands), so the FP32 figure is the ceiling. NVIDIA datasheets,
// boost clock, no sparsity.
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

/** The device's dense FP32 peak in TFLOP/s, or null when xtts does not know it (CPUs, other GPUs). */
export function fp32PeakTflops(device: string | null): number | null {
  if (!device) return null;
  for (const [pattern, peak] of FP32_PEAK_TFLOPS) if (pattern.test(device)) return peak;
  return null;
}
