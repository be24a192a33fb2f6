// What this machine has, read cheaply and without loading TensorFlow.js: CPU cores, memory, NVIDIA
// GPUs (through nvidia-smi's inventory query), and which backend packages are installed.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, totalmem } from 'node:os';

export interface GpuInventoryEntry {
  index: number;
  name: string;
  memoryTotalBytes: number;
  uuid?: string;
}

export interface HostInventory {
  cpuCores: number;
  memoryBytes: number;
  /** NVIDIA GPUs seen by nvidia-smi; empty when there is none or no driver. */
  gpus: GpuInventoryEntry[];
  /** Why `gpus` is empty, when it is. */
  gpuNote?: string;
}

let cached: HostInventory | undefined;

/** The rows of an nvidia-smi `--format=csv,noheader,nounits` answer whose first cell is an integer
 * (an index or a pid), as trimmed cells; messages such as "No running processes found" are skipped. */
export function nvidiaSmiCsvRows(csv: string, minCells: number): string[][] {
  return csv
    .split('\n')
    .map((line) => line.split(',').map((s) => s.trim()))
    .filter((cells) => cells.length >= minCells && /^\d+$/.test(cells[0]));
}

export function parseNvidiaSmiInventory(csv: string): GpuInventoryEntry[] {
  return nvidiaSmiCsvRows(csv, 3).map((cells) => {
    const mib = Number(cells[2]);
    return {
      index: Number(cells[0]),
      name: cells[1],
      memoryTotalBytes: Number.isFinite(mib) ? mib * 1024 * 1024 : 0,
      uuid: cells[3] || undefined,
    };
  });
}

/** The memory limit of this process's cgroup (v2 memory.max, else v1), or undefined where there is none. */
function cgroupMemoryLimit(): number | undefined {
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const v = readFileSync(file, 'utf8').trim();
      if (/^\d+$/.test(v) && Number(v) < 2 ** 60) return Number(v);
    } catch {
      // not this cgroup version
    }
  }
  return undefined;
}

/** The machine's inventory; nvidia-smi is asked once per process (it takes ~50-200 ms). */
export function hostInventory(): HostInventory {
  if (cached) return cached;
  // A container's limit, where lower than the machine's memory, is what a run may use.
  const memoryBytes = Math.min(totalmem(), cgroupMemoryLimit() ?? Number.POSITIVE_INFINITY);
  const inv: HostInventory = { cpuCores: availableParallelism(), memoryBytes, gpus: [] };
  const r = spawnSync('nvidia-smi', ['--query-gpu=index,name,memory.total,uuid', '--format=csv,noheader,nounits'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.error)
    inv.gpuNote =
      (r.error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'no NVIDIA driver (nvidia-smi not found)'
        : `nvidia-smi failed: ${r.error.message}`;
  else if (r.status !== 0) inv.gpuNote = `nvidia-smi failed: ${(r.stderr || r.stdout).trim().split('\n')[0]}`;
  else {
    inv.gpus = parseNvidiaSmiInventory(r.stdout);
    if (inv.gpus.length === 0) inv.gpuNote = 'nvidia-smi lists no GPU';
  }
  cached = inv;
  return inv;
}

/** Whether a package can be loaded here, without loading it. A bundle carries its packages inside. */
export function packageInstalled(name: string): boolean {
  if ((globalThis as { __XTTS_BUNDLED_PACKAGES__?: string[] }).__XTTS_BUNDLED_PACKAGES__?.includes(name)) return true;
  try {
    createRequire(import.meta.url).resolve(`${name}/package.json`);
    return true;
  } catch {
    try {
      createRequire(import.meta.url).resolve(name);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * The installed version of a package, or null when it is not installed. A bundle records the
 * versions it was built with (globalThis.__XTTS_BUNDLED_VERSIONS__), since it has no node_modules.
 */
export function packageVersion(name: string): string | null {
  const bundled = (globalThis as { __XTTS_BUNDLED_VERSIONS__?: Record<string, string> }).__XTTS_BUNDLED_VERSIONS__;
  if (bundled && name in bundled) return bundled[name];
  try {
    const path = createRequire(import.meta.url).resolve(`${name}/package.json`);
    return (JSON.parse(readFileSync(path, 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

/** Find a GPU by index or by a case-insensitive substring of its name. */
export function findGpu(gpus: readonly GpuInventoryEntry[], ref: number | string): GpuInventoryEntry | undefined {
  if (typeof ref === 'number') return gpus.find((g) => g.index === ref);
  const needle = ref.toLowerCase();
  return gpus.find((g) => g.name.toLowerCase().includes(needle) || g.uuid?.toLowerCase() === needle);
}
