// The GPUs as the diagnosis reports them: the telemetry source and inventory (NVML addon, else
// nvidia-smi, else the reason there is neither), what each GPU does before xtts starts any work
// (another process's load or memory shows here), the processes holding it, and the Vulkan pieces
// Dawn needs. Also `watchGpus`, the sampling behind `diagnose-gpu-utilization --watch`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ExitCode, XttsError } from '../errors.js';
import { findVulkanLoader, vulkanDriverManifests } from '../backend/index.js';
import { nvidiaSmiCsvRows } from '../env/index.js';
import { GpuSampler, type GpuTelemetryStatus } from '../telemetry/index.js';
import type { GpuSample } from '../telemetry/index.js';
import { summarizeGpuSamples, type GpuWindowSummary } from '../telemetry/index.js';

export interface GpuProcess {
  pid: number;
  name: string;
  usedMemoryBytes: number | null;
  gpuUuid: string;
}

export interface GpuSnapshot {
  telemetry: GpuTelemetryStatus;
  /** Per GPU, the samples taken over `windowMs` before any xtts work: a busy or full GPU here is someone else's. */
  idle: GpuWindowSummary[];
  windowMs: number;
  /** Compute processes on the GPUs (nvidia-smi); null with the reason when they cannot be listed. */
  processes: GpuProcess[] | null;
  processesNote?: string;
  /** /dev/nvidiactl exists: an NVIDIA driver is loaded, whatever the telemetry says. */
  nvidiaDevicePresent: boolean;
  vulkan: { loader: string | null; driverManifests: string[] };
}

export interface GpuSnapshotOptions {
  /** How long to sample before reporting (default 1000 ms). */
  windowMs?: number;
  rateHz?: number;
  nvidiaSmiCommand?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `nvidia-smi --query-compute-apps` lines: pid, process name, used memory (MiB), GPU UUID. */
export function parseComputeApps(csv: string): GpuProcess[] {
  return nvidiaSmiCsvRows(csv, 4).map((cells) => {
    const mib = Number(cells[2]);
    return {
      pid: Number(cells[0]),
      name: cells[1],
      usedMemoryBytes: Number.isFinite(mib) ? mib * 2 ** 20 : null,
      gpuUuid: cells[3],
    };
  });
}

function computeApps(command: string): Promise<{ processes: GpuProcess[] | null; note?: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      ['--query-compute-apps=pid,process_name,used_memory,gpu_uuid', '--format=csv,noheader,nounits'],
      { timeout: 15_000 },
      (err, stdout, stderr) => {
        if (!err) return resolve({ processes: parseComputeApps(stdout) });
        const e = err as NodeJS.ErrnoException;
        resolve({
          processes: null,
          note:
            e.code === 'ENOENT'
              ? 'nvidia-smi not found'
              : `nvidia-smi failed: ${(stderr || stdout || e.message).trim().split('\n')[0]}`,
        });
      },
    );
  });
}

export async function snapshotGpus(options: GpuSnapshotOptions = {}): Promise<GpuSnapshot> {
  const windowMs = options.windowMs ?? 1000;
  const command = options.nvidiaSmiCommand ?? 'nvidia-smi';
  const [sampler, apps] = await Promise.all([
    GpuSampler.start({ rateHz: options.rateHz ?? 10, nvidiaSmiCommand: command }),
    computeApps(command),
  ]);
  try {
    if (sampler.status.available) await sleep(windowMs);
  } finally {
    await sampler.stop();
  }
  return {
    telemetry: sampler.status,
    idle: sampler.summary(),
    windowMs: sampler.status.available ? windowMs : 0,
    processes: apps.processes,
    ...(apps.note ? { processesNote: apps.note } : {}),
    nvidiaDevicePresent: process.platform === 'linux' && existsSync('/dev/nvidiactl'),
    vulkan: { loader: findVulkanLoader() ?? null, driverManifests: vulkanDriverManifests() },
  };
}

export interface WatchOptions {
  rateHz?: number;
  /** Stop after this long (default: until `signal` aborts). */
  durationMs?: number;
  signal?: AbortSignal;
  devices?: readonly number[];
  nvidiaSmiCommand?: string;
  /** Called every `frameMs` with the samples so far (a live view redraws from it). */
  onFrame?: (frame: WatchFrame) => void;
  frameMs?: number;
}

export interface WatchFrame {
  status: Extract<GpuTelemetryStatus, { available: true }>;
  /** ms since watching began. */
  elapsedMs: number;
  samples: GpuSample[];
}

export interface WatchResult {
  telemetry: Extract<GpuTelemetryStatus, { available: true }>;
  durationMs: number;
  summary: GpuWindowSummary[];
  /** Every sample taken, oldest first (times in ms since watching began). */
  samples: GpuSample[];
}

/**
 * Sample every GPU until `durationMs` passes or `signal` aborts, calling onFrame every `frameMs`.
 * Throws GPU_UNAVAILABLE (exit code 3) when there is no NVIDIA GPU or driver to watch.
 */
export async function watchGpus(options: WatchOptions = {}): Promise<WatchResult> {
  const rateHz = options.rateHz ?? 4;
  const sampler = await GpuSampler.start({
    rateHz,
    devices: options.devices,
    nvidiaSmiCommand: options.nvidiaSmiCommand,
    ringCapacity: Math.ceil(rateHz * 3600),
  });
  const status = sampler.status;
  if (!status.available) {
    await sampler.stop();
    throw new XttsError('GPU_UNAVAILABLE', `there is no GPU to watch: ${status.reason}`, {
      exitCode: ExitCode.environment,
      suggestions: [
        'run `xtts diagnose-gpu-utilization` without --watch for what this machine has',
        'on an NVIDIA host, check that `nvidia-smi` works',
      ],
    });
  }
  const started = sampler.originMs;
  const frameMs = options.frameMs ?? 1000;
  const frame = () => options.onFrame?.({ status, elapsedMs: performance.now() - started, samples: sampler.samples() });
  const ticker = setInterval(frame, frameMs);
  try {
    await new Promise<void>((resolve) => {
      const timer = options.durationMs !== undefined ? setTimeout(resolve, options.durationMs) : undefined;
      if (options.signal?.aborted) return resolve();
      options.signal?.addEventListener('abort', () => {
        if (timer) clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    clearInterval(ticker);
    await sampler.stop();
  }
  frame();
  const samples = sampler.samples();
  return { telemetry: status, durationMs: performance.now() - started, summary: summarizeGpuSamples(samples), samples };
}
