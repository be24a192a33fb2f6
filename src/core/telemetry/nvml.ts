// The optional NVML addon (native/nvml): where its built file is, loading it from the repository or
// from beside a bundle, and its typed surface. Loading never throws: a missing or broken addon is a
// reason string, and GPU telemetry then falls back to nvidia-smi.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** File name of the built addon, in native/nvml/build/Release and beside a bundle. */
export const NVML_ADDON_FILE = 'xtts_nvml.node';

/** Result of the addon's init(). */
export type NvmlInitResult =
  | { ok: true; library: string; driverVersion: string; nvmlVersion: string; deviceCount: number }
  | { ok: false; code: string; error: string };

/** One reading of one GPU. A field is null when the GPU does not report it (NVML_ERROR_NOT_SUPPORTED)
 * or when reading it failed; failures other than "not supported" are listed in `errors`. */
export interface NvmlRawSample {
  index: number;
  /** CLOCK_MONOTONIC in ms when the reading was taken (see NvmlAddon.monotonicMs). */
  monotonicMs: number;
  /** Share of the driver's last sample period (1/6 s to 1 s by product) in which any kernel ran. */
  utilizationPct: number | null;
  /** Share of that period in which device memory was read or written. */
  memoryUtilizationPct: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
  smClockMhz: number | null;
  /** Board power; Ampere (except GA100) and newer report a 1 s average, older GPUs an instant value. */
  powerW: number | null;
  temperatureC: number | null;
  /** nvmlClocksEventReasons bit mask; decode with decodeThrottleReasons(). */
  throttleReasonsMask: number | null;
  errors?: Record<string, string>;
}

/** GPM metrics (Hopper and newer) over the interval since the previous GPM read of the same GPU.
 * The first read only takes the reference sample: intervalMs and every value are null. */
export interface NvmlGpmMetrics {
  intervalMs: number | null;
  /** Resident warps / the SMs' theoretical maximum (NVML_GPM_METRIC_SM_OCCUPANCY). */
  smOccupancyPct: number | null;
  /** Share of SMs busy (NVML_GPM_METRIC_SM_UTIL, DCGM's SM_ACTIVE). */
  smActivityPct: number | null;
  /** Share of time any engine was busy (NVML_GPM_METRIC_GRAPHICS_UTIL). */
  graphicsActivityPct: number | null;
  tensorActivityPct: number | null;
  dramBandwidthPct: number | null;
  fp16ActivityPct: number | null;
  fp32ActivityPct: number | null;
  fp64ActivityPct: number | null;
  pcieTxMiBps: number | null;
  pcieRxMiBps: number | null;
  /** The whole read failed (values are null). */
  error?: string;
}

export interface NvmlDeviceInfo {
  index: number;
  name: string | null;
  uuid: string | null;
  memoryTotalBytes: number | null;
  migEnabled: boolean | null;
  gpmSupported: boolean;
  /** Why GPM metrics are not available on this GPU. */
  gpmReason?: string;
  /** Why this GPU cannot be read at all (e.g. no permission). */
  error?: string;
}

/** The addon's exports (native/nvml/src/nvml_addon.cc). */
export interface NvmlAddon {
  /** Opens libnvidia-ml.so.1 (or `libraryPath`) and initialises NVML; idempotent per thread. */
  init(libraryPath?: string): NvmlInitResult;
  shutdown(): void;
  deviceCount(): number;
  deviceInfo(index: number): NvmlDeviceInfo;
  /** Synchronous reading on the calling thread (each field is one driver call). */
  sample(index: number): NvmlRawSample;
  /** null when the GPU has no GPM counters (deviceInfo(index).gpmReason says why). */
  gpmSample(index: number): NvmlGpmMetrics | null;
  /** The same readings (and GPM when `gpm`) for several GPUs on a libuv worker thread. */
  sampleAsync(
    indices: readonly number[],
    gpm: boolean,
  ): Promise<{ sample: NvmlRawSample; gpm: NvmlGpmMetrics | null }[]>;
  /** CLOCK_MONOTONIC in ms, the clock of NvmlRawSample.monotonicMs. */
  monotonicMs(): number;
}

const bundleDir = () => (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;

/** The repository root: the nearest folder above this module that holds native/nvml/binding.gyp
 * (this file runs from src/core/telemetry under tsx and from src/core/dist/telemetry when built). */
function repoNativeDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'native', 'nvml');
    if (existsSync(join(candidate, 'binding.gyp'))) return candidate;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** The built addon in the repository (native/nvml/build/Release/xtts_nvml.node), for the bundler to
 * copy beside the bundle as NVML_ADDON_FILE. The file may not exist: the build is optional. */
export function nvmlAddonPath(): string {
  const native = repoNativeDir();
  return native
    ? join(native, 'build', 'Release', NVML_ADDON_FILE)
    : join(process.cwd(), 'native', 'nvml', 'build', 'Release', NVML_ADDON_FILE);
}

export type NvmlAddonLoad = { addon: NvmlAddon; path: string } | { addon: null; path: string; reason: string };

const loads = new Map<string, NvmlAddonLoad>();

/** Loads the addon (once per path and thread): from beside the bundle when bundled, else from the
 * repository. */
export function loadNvmlAddon(): NvmlAddonLoad {
  const dir = bundleDir();
  const path = dir ? join(dir, NVML_ADDON_FILE) : nvmlAddonPath();
  const cached = loads.get(path);
  if (cached) return cached;
  const loaded = loadFrom(path, dir);
  // A missing file is not remembered: a build may produce it while this process runs.
  if (loaded.addon) loads.set(path, loaded);
  return loaded;
}

function loadFrom(path: string, dir: string | undefined): NvmlAddonLoad {
  if (!existsSync(path)) {
    let reason = dir
      ? `the NVML addon was not shipped beside the bundle (${path} is missing)`
      : `the optional NVML addon is not built (${path} is missing)`;
    const log = dir ? undefined : join(dirname(dirname(dirname(path))), 'build-error.log');
    if (log && existsSync(log))
      reason += `; its last build failed: ${readFileSync(log, 'utf8').split('\n')[0].replace(/^\S+ /, '')}`;
    else if (!dir) reason += '; build it with `npm run build:native`';
    return { addon: null, path, reason };
  }
  try {
    const mod = { exports: {} as unknown };
    // process.dlopen rather than require: it works the same from ESM, CommonJS and a bundle.
    process.dlopen(mod as { exports: object }, path);
    return { addon: mod.exports as NvmlAddon, path };
  } catch (e) {
    return {
      addon: null,
      path,
      reason: `the NVML addon at ${path} failed to load: ${(e as Error).message.split('\n')[0]}`,
    };
  }
}

export type NvmlOpenResult =
  | { ok: true; addon: NvmlAddon; library: string; driverVersion: string; nvmlVersion: string; deviceCount: number }
  | { ok: false; reason: string };

// NVML sessions opened through openNvml() on this thread and not yet closed, per addon instance: the
// addon's init() and shutdown() are per thread, so the last closeNvml() shuts NVML down.
const sessions = new Map<NvmlAddon, number>();

/** Loads the addon and initialises NVML, or says in one sentence why not. `libraryPath` overrides
 * libnvidia-ml.so.1 (also settable with XTTS_NVML_LIBRARY); it is used by the first session only,
 * while NVML is open the others share it. Pair each success with closeNvml(addon). */
export function openNvml(libraryPath = process.env.XTTS_NVML_LIBRARY || undefined): NvmlOpenResult {
  const load = loadNvmlAddon();
  if (!load.addon) return { ok: false, reason: load.reason };
  const r = load.addon.init(libraryPath);
  if (!r.ok) return { ok: false, reason: r.error };
  sessions.set(load.addon, (sessions.get(load.addon) ?? 0) + 1);
  return {
    ok: true,
    addon: load.addon,
    library: r.library,
    driverVersion: r.driverVersion,
    nvmlVersion: r.nvmlVersion,
    deviceCount: r.deviceCount,
  };
}

/** Ends one openNvml() session of `addon`; NVML is shut down when none is left. */
export function closeNvml(addon: NvmlAddon): void {
  const n = sessions.get(addon) ?? 0;
  if (n === 0) return;
  if (n > 1) {
    sessions.set(addon, n - 1);
    return;
  }
  sessions.delete(addon);
  addon.shutdown();
}
