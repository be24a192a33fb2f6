// Rules on devices: the backend is installed here, and the data device is a real one apart from those that train.
import { findGpu, packageInstalled } from '../env/index.js';
import { formatBytes } from './estimate.js';
import { at, type Draft, type Rule } from './rule-context.js';
import type { Backend } from './schema.js';

const BACKEND_PACKAGES: Record<Exclude<Backend, 'auto'>, string[]> = {
  webgpu: ['@tensorflow/tfjs-backend-webgpu', 'webgpu'],
  tensorflow: ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'],
  wasm: ['@tensorflow/tfjs-backend-wasm'],
  cpu: ['@tensorflow/tfjs-backend-cpu'],
};

export const deviceBackendRule: Rule = {
  id: 'device/backend',
  title: 'The backend exists here',
  severity: 'error',
  environment: true,
  rationale: 'A backend that is not installed falls over at start, after the data is prepared.',
  check(ctx) {
    const dev = ctx.config.device;
    if (dev.backend === 'auto') return [];
    const pkgs = BACKEND_PACKAGES[dev.backend];
    if (!pkgs.some((p) => packageInstalled(p))) {
      const why =
        dev.backend === 'tensorflow'
          ? 'neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node is installed (their ' +
            'install downloads libtensorflow; the GPU build wants CUDA 11.2 and cuDNN 8.1)'
          : `${pkgs.join(' and ')} not installed`;
      return [
        at(
          ctx,
          'device.backend',
          'error',
          `backend ${dev.backend}: ${why}`,
          dev.backend === 'tensorflow'
            ? 'backend: webgpu   # or: npm install @tensorflow/tfjs-node-gpu on a host with network'
            : 'backend: auto',
        ),
      ];
    }
    if (dev.backend === 'webgpu' && ctx.host && ctx.host.gpus.length === 0)
      return [
        at(
          ctx,
          'device.backend',
          'warn',
          `backend webgpu, but no NVIDIA GPU is visible here ` +
            `(${ctx.host.gpuNote ?? 'none'}); Dawn may still find another GPU — run \`xtts ` +
            `diagnose-gpu-utilization\` to see its adapters`,
          'backend: auto',
        ),
      ];
    return [];
  },
};

export const deviceDualGpuRule: Rule = {
  id: 'device/dual-gpu',
  tasks: ['acoustic'],
  title: 'The data device is one that exists, apart from the training devices',
  severity: 'error',
  rationale:
    'Validation and eval on the device that trains would contend with it; a device ' +
    'that does not exist fails at start; budgets larger than the device memory are ' +
    'never honoured. "cpu" (a CPU worker) needs none of this.',
  check(ctx) {
    const dev = ctx.config.device;
    if (dev.data_device === null) return [];
    if (typeof dev.data_device === 'string' && dev.data_device.toLowerCase() === 'cpu') return [];
    const out: Draft[] = [];
    const same = (a: number | string, b: number | string) => String(a).toLowerCase() === String(b).toLowerCase();
    if (dev.model_device === null && dev.gpus === null)
      out.push(
        at(
          ctx,
          'device.data_device',
          'error',
          'data_device names a GPU but model_device is not set: name both devices for ' +
            'dual-device mode (or validate on the CPU: data_device: cpu)',
          'model_device: 0\ndata_device: 1',
        ),
      );
    if (dev.model_device !== null && same(dev.model_device, dev.data_device))
      out.push(
        at(
          ctx,
          'device.data_device',
          'error',
          `data_device and model_device are both ${JSON.stringify(dev.data_device)}: ` +
            `dual-device mode needs two devices`,
          'data_device: null   # or another GPU, or cpu',
        ),
      );
    if (Array.isArray(dev.gpus) && dev.gpus.some((g) => same(g, dev.data_device!)))
      out.push(
        at(
          ctx,
          'device.data_device',
          'error',
          `data_device ${JSON.stringify(dev.data_device)} also trains ` +
            `(device.gpus ${JSON.stringify(dev.gpus)}): the data device must be another`,
          'data_device: cpu',
        ),
      );
    if (dev.backend !== 'webgpu' && dev.backend !== 'auto')
      out.push(
        at(
          ctx,
          'device.backend',
          'error',
          `a GPU data device runs on webgpu; backend is ${dev.backend}`,
          'backend: webgpu',
        ),
      );
    if (!ctx.host) return out;
    // data_memory_budget_mb bounds host memory (the prefetch ring), not the data device's.
    for (const [key, ref, budget] of [
      ['device.model_device', dev.model_device, dev.model_memory_budget_mb],
      ['device.data_device', dev.data_device, null],
    ] as const) {
      if (ref === null) continue;
      const gpu = findGpu(ctx.host.gpus, ref);
      if (!gpu) {
        out.push(
          at(
            ctx,
            key,
            ctx.host.gpus.length ? 'error' : 'warn',
            ctx.host.gpus.length
              ? `no GPU ${JSON.stringify(ref)} here; ` +
                  `GPUs: ${ctx.host.gpus.map((g) => `${g.index} ${g.name}`).join(', ')}`
              : `cannot check ${key} = ${JSON.stringify(ref)} on this machine: ${ctx.host.gpuNote ?? 'no GPU'}`,
            ctx.host.gpus.length
              ? `${key.split('.')[1]}: ${ctx.host.gpus[0].index}`
              : 'validate on the GPU host, or pass --no-environment to skip machine checks',
          ),
        );
        continue;
      }
      if (budget !== null && budget * 1024 * 1024 > gpu.memoryTotalBytes) {
        const budgetKey = 'device.model_memory_budget_mb';
        out.push(
          at(
            ctx,
            budgetKey,
            'error',
            `${budgetKey.split('.')[1]} ${budget} is more than GPU ${gpu.index} ` +
              `(${gpu.name}) has: ${formatBytes(gpu.memoryTotalBytes)}`,
            `${budgetKey.split('.')[1]}: ${Math.floor((gpu.memoryTotalBytes / 1024 / 1024) * 0.9)}`,
          ),
        );
      }
    }
    return out;
  },
};
