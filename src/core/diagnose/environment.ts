// The machine as a bug report needs it: OS, CPU, memory, Node.js, xtts and the packages that decide
// what runs where, the GPU-related environment variables, and the Vulkan pieces Dawn needs. Cheap:
// reads files and the os module, starts nothing.
import { existsSync, readFileSync } from 'node:fs';
import { arch, availableParallelism, cpus, freemem, loadavg, release, totalmem, type as osType } from 'node:os';
import { packageVersion } from '../env/index.js';

/** Packages whose versions decide behaviour: the engine, its backends, Dawn, SQLite, the CLI. */
export const REPORTED_PACKAGES = [
  '@tensorflow/tfjs-core',
  '@tensorflow/tfjs-backend-webgpu',
  '@tensorflow/tfjs-backend-wasm',
  '@tensorflow/tfjs-backend-cpu',
  '@tensorflow/tfjs-node-gpu',
  '@tensorflow/tfjs-node',
  'webgpu',
  'better-sqlite3',
  '@oclif/core',
  'yaml',
  'ajv',
] as const;

/** Environment variables that change which GPU or driver is used; values are reported as set. */
export const REPORTED_ENV = [
  'CUDA_VISIBLE_DEVICES',
  'NVIDIA_VISIBLE_DEVICES',
  'VK_DRIVER_FILES',
  'VK_ICD_FILENAMES',
  'DAWNNODE_BACKEND',
  'XTTS_NVML_LIBRARY',
  'XTTS_NODE',
  'LD_LIBRARY_PATH',
] as const;

export interface EnvironmentReport {
  os: { type: string; platform: string; release: string; distribution: string | null; arch: string };
  cpu: { model: string | null; cores: number; loadAverage1m: number };
  memory: { totalBytes: number; freeBytes: number };
  node: { version: string; execPath: string };
  xtts: { version: string | null; bundled: boolean };
  /** Installed version per package; null when not installed. */
  packages: Record<string, string | null>;
  /** The variables of REPORTED_ENV that are set. */
  env: Record<string, string>;
}

/** PRETTY_NAME from /etc/os-release (Linux), or null. */
function distribution(): string | null {
  for (const f of ['/etc/os-release', '/usr/lib/os-release']) {
    if (!existsSync(f)) continue;
    const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync(f, 'utf8'));
    if (m) return m[1];
  }
  return null;
}

export function collectEnvironment(xttsVersion: string | null): EnvironmentReport {
  const env: Record<string, string> = {};
  for (const k of REPORTED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  const bundled = Boolean((globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__);
  return {
    os: { type: osType(), platform: process.platform, release: release(), distribution: distribution(), arch: arch() },
    cpu: { model: cpus()[0]?.model?.trim() || null, cores: availableParallelism(), loadAverage1m: loadavg()[0] },
    memory: { totalBytes: totalmem(), freeBytes: freemem() },
    node: { version: process.version, execPath: process.execPath },
    xtts: { version: xttsVersion, bundled },
    packages: Object.fromEntries(REPORTED_PACKAGES.map((p) => [p, packageVersion(p)])),
    env,
  };
}
