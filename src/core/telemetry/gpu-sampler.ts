// GpuSampler: samples every NVIDIA GPU at a fixed rate into a ring per GPU, for `train`'s live view,
// the run database and the profiler. Sources, best first: the NVML addon (readings on a libuv worker
// thread, plus GPM SM activity/occupancy on Hopper), a long-lived `nvidia-smi -lms` process, or
// nothing, with the reason. Neither the timer nor the child process keeps Node alive.
import { execFile } from 'node:child_process';
import { ExitCode, XttsError } from '../errors.js';
import { parseNvidiaSmiInventory } from '../env/index.js';
import { GpuSampleRing, gpuReadings, type GpuSample } from './gpu-sample.js';
import { NVIDIA_SMI_COLUMNS, NvidiaSmiStream, type NvidiaSmiRow } from './gpu-smi.js';
import { summarizeGpuSamples, type GpuWindowSummary } from './gpu-summary.js';
import { decodeThrottleReasons } from './gpu-throttle.js';
import { closeNvml, openNvml, type NvmlAddon, type NvmlGpmMetrics, type NvmlRawSample } from './nvml.js';

export type GpuSourceKind = 'nvml' | 'nvidia-smi';

export interface GpuSamplerOptions {
  /** Samples per second per GPU (default 10). */
  rateHz?: number;
  /** Samples kept per GPU (default: 10 minutes at rateHz). */
  ringCapacity?: number;
  /** 'auto' (default) tries NVML, then nvidia-smi. */
  source?: 'auto' | GpuSourceKind;
  /** Read GPM metrics where the GPU has them (default true). */
  gpm?: boolean;
  /** Shortest GPM interval: GPM values are ratios of counter deltas, noisy over a few ms; at rates
   * above 1000/gpmIntervalMs Hz a GPM value covers several samples (default 100 ms, our choice). */
  gpmIntervalMs?: number;
  /** GPU indices to sample (default: all). */
  devices?: readonly number[];
  /** performance.now() value that sample times count from (default: when the sampler starts). */
  originMs?: number;
  /** libnvidia-ml.so.1 to open instead of the loader's (default: $XTTS_NVML_LIBRARY). */
  nvmlLibraryPath?: string;
  /** nvidia-smi executable (default: nvidia-smi on PATH). */
  nvidiaSmiCommand?: string;
  /** How long nvidia-smi may take to print its first reading (default 15 s). */
  startTimeoutMs?: number;
}

export interface GpuDeviceDescription {
  index: number;
  name: string | null;
  uuid: string | null;
  memoryTotalBytes: number | null;
  /** Whether samples of this GPU carry GPM metrics (smActivityPct, smOccupancyPct, ...). */
  gpm: boolean;
  gpmReason?: string;
}

export type GpuTelemetryStatus =
  | {
      available: true;
      source: GpuSourceKind;
      rateHz: number;
      devices: GpuDeviceDescription[];
      driverVersion?: string;
      notes: string[];
    }
  | { available: false; reason: string; notes: string[] };

export interface GpuSamplerCounters {
  /** Timer ticks that read the GPUs (NVML) or rows received (nvidia-smi, one per GPU per tick). */
  ticks: number;
  /** Ticks skipped because the previous reading had not returned yet. */
  skippedTicks: number;
  errors: number;
  lastError?: string;
}

type GpmValues = Pick<GpuSample, 'smOccupancyPct' | 'smActivityPct' | 'tensorActivityPct' | 'dramBandwidthPct'>;

export class GpuSampler {
  readonly status: GpuTelemetryStatus;
  readonly originMs: number;
  readonly counters: GpuSamplerCounters = { ticks: 0, skippedTicks: 0, errors: 0 };
  private readonly rings = new Map<number, GpuSampleRing>();
  private readonly listeners = new Set<(s: GpuSample) => void>();
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private addon?: NvmlAddon;
  private smi?: NvidiaSmiStream;
  private stopped = false;

  private constructor(status: GpuTelemetryStatus, originMs: number, ringCapacity: number) {
    this.status = status;
    this.originMs = originMs;
    if (status.available) for (const d of status.devices) this.rings.set(d.index, new GpuSampleRing(ringCapacity));
  }

  /** Finds a source and starts sampling. Never throws for a missing GPU or driver: check `status`.
   * Throws XttsError when `devices` names a GPU that the source does not list. */
  static async start(options: GpuSamplerOptions = {}): Promise<GpuSampler> {
    const rateHz = options.rateHz ?? 10;
    if (!(rateHz > 0 && rateHz <= 1000)) throw new RangeError(`rateHz must be in (0, 1000], not ${rateHz}`);
    const periodMs = 1000 / rateHz;
    const ringCapacity = options.ringCapacity ?? Math.max(1, Math.ceil(rateHz * 600));
    const originMs = options.originMs ?? performance.now();
    const source = options.source ?? 'auto';
    const notes: string[] = [];
    const failures: string[] = [];

    if (source !== 'nvidia-smi') {
      const nv = openNvml(options.nvmlLibraryPath);
      if (nv.ok && nv.deviceCount > 0) {
        let indices: number[];
        try {
          indices = pickDevices(options.devices, nv.deviceCount, 'NVML');
        } catch (e) {
          closeNvml(nv.addon);
          throw e;
        }
        const devices = indices.map((i): GpuDeviceDescription => {
          const d = nv.addon.deviceInfo(i);
          const gpm = options.gpm !== false && d.gpmSupported;
          const gpmReason = options.gpm === false ? 'GPM reading is off' : d.gpmReason;
          if (d.error) notes.push(`GPU ${i}: ${d.error}`);
          return {
            index: i,
            name: d.name,
            uuid: d.uuid,
            memoryTotalBytes: d.memoryTotalBytes,
            gpm,
            ...(gpm ? {} : { gpmReason }),
          };
        });
        const status: GpuTelemetryStatus = {
          available: true,
          source: 'nvml',
          rateHz,
          devices,
          driverVersion: nv.driverVersion || undefined,
          notes,
        };
        const sampler = new GpuSampler(status, originMs, ringCapacity);
        sampler.startNvml(nv.addon, devices, periodMs, options.gpmIntervalMs ?? 100);
        return sampler;
      }
      const why = nv.ok ? 'NVML lists no GPU' : nv.reason;
      if (nv.ok) closeNvml(nv.addon);
      failures.push(`NVML: ${why}`);
    }

    if (source !== 'nvml') {
      const inventory = nvidiaSmiInventory(options.nvidiaSmiCommand ?? 'nvidia-smi');
      const inventoryPromise = inventory.result;
      let sampler: GpuSampler | undefined;
      const early: NvidiaSmiRow[] = [];
      const r = await NvidiaSmiStream.start({
        intervalMs: periodMs,
        devices: options.devices,
        command: options.nvidiaSmiCommand,
        startTimeoutMs: options.startTimeoutMs,
        onRow: (row, arrivalMs) => (sampler ? sampler.acceptSmiRow(row, arrivalMs) : early.push(row)),
        onExit: (reason) => {
          if (!sampler) return;
          sampler.counters.errors++;
          sampler.counters.lastError = reason;
        },
      });
      if (r.ok) {
        const inv = await inventoryPromise;
        if (failures.length) notes.push(`${failures[0]}; using nvidia-smi`);
        const dropped = defaultQueryDropped(r.stream);
        if (dropped.length) notes.push(`nvidia-smi on this driver does not report: ${dropped.join(', ')}`);
        const seen = [...new Set(early.map((row) => row.index))];
        const indices = options.devices?.length ? [...options.devices] : inv.length ? inv.map((g) => g.index) : seen;
        for (const i of indices) {
          if (inv.length && !inv.some((g) => g.index === i)) {
            await r.stream.stop();
            throw gpuNotFound(
              i,
              inv.map((g) => g.index),
              'nvidia-smi',
            );
          }
        }
        const devices = indices.map((i): GpuDeviceDescription => {
          const g = inv.find((x) => x.index === i);
          return {
            index: i,
            name: g?.name ?? null,
            uuid: g?.uuid ?? null,
            memoryTotalBytes: g?.memoryTotalBytes ?? null,
            gpm: false,
            gpmReason: 'nvidia-smi does not stream GPM metrics (the NVML addon does)',
          };
        });
        sampler = new GpuSampler(
          { available: true, source: 'nvidia-smi', rateHz, devices, notes },
          originMs,
          ringCapacity,
        );
        sampler.smi = r.stream;
        const now = performance.now();
        for (const row of early) sampler.acceptSmiRow(row, now);
        return sampler;
      }
      inventory.cancel();
      failures.push(`nvidia-smi: ${r.reason}`);
    }

    return new GpuSampler(
      { available: false, reason: `no NVIDIA GPU / no driver: ${failures.join('; ')}`, notes },
      originMs,
      ringCapacity,
    );
  }

  private startNvml(addon: NvmlAddon, devices: GpuDeviceDescription[], periodMs: number, gpmIntervalMs: number): void {
    this.addon = addon;
    const indices = devices.map((d) => d.index);
    const gpmOn = new Set(devices.filter((d) => d.gpm).map((d) => d.index));
    const gpmEvery = Math.max(1, Math.ceil(gpmIntervalMs / periodMs));
    const lastGpm = new Map<number, GpmValues>();
    // Both clocks are CLOCK_MONOTONIC-based; one offset maps the addon's times onto performance.now().
    const perfMinusMono = performance.now() - addon.monotonicMs();
    let tick = 0;
    const read = () => {
      if (this.stopped) return;
      if (this.inFlight) {
        this.counters.skippedTicks++;
        return;
      }
      const gpmDue = gpmOn.size > 0 && tick % gpmEvery === 0;
      tick++;
      this.counters.ticks++;
      this.inFlight = addon
        .sampleAsync(indices, gpmDue)
        .then(
          (results) => {
            for (const { sample, gpm } of results) {
              if (gpmOn.has(sample.index) && gpm) {
                if (gpm.error) {
                  // Stale GPM values would be read as current: a failed read clears them.
                  this.noteError(`GPU ${sample.index}: ${gpm.error}`);
                  lastGpm.delete(sample.index);
                } else if (gpm.intervalMs !== null) {
                  lastGpm.set(sample.index, gpmValues(gpm));
                }
              }
              if (sample.errors) this.noteError(`GPU ${sample.index}: ${Object.values(sample.errors)[0]}`);
              const s = fromNvml(sample, perfMinusMono - this.originMs);
              if (gpmOn.has(sample.index))
                Object.assign(
                  s,
                  lastGpm.get(sample.index) ?? {
                    smOccupancyPct: null,
                    smActivityPct: null,
                    tensorActivityPct: null,
                    dramBandwidthPct: null,
                  },
                );
              this.accept(s);
            }
          },
          (e: Error) => this.noteError(e.message),
        )
        .finally(() => {
          this.inFlight = undefined;
        });
    };
    read();
    this.timer = setInterval(read, periodMs);
    this.timer.unref();
  }

  private noteError(message: string): void {
    this.counters.errors++;
    this.counters.lastError = message;
  }

  private acceptSmiRow(row: NvidiaSmiRow, arrivalMs: number): void {
    if (this.stopped || !this.rings.has(row.index)) return;
    this.counters.ticks++;
    // nvidia-smi stamps each reading; trust the stamp unless the wall clock disagrees wildly with
    // the arrival (a clock step), since a pipe may deliver lines late in bursts.
    let tPerf = arrivalMs;
    if (row.timestampMs !== null) {
      const stamped = row.timestampMs - (Date.now() - performance.now());
      if (stamped <= arrivalMs + 1000 && stamped >= arrivalMs - 10_000) tPerf = stamped;
    }
    this.accept({
      tMs: tPerf - this.originMs,
      index: row.index,
      ...gpuReadings(row),
      throttleReasons: row.throttleReasons ?? [],
    });
  }

  private accept(s: GpuSample): void {
    const ring = this.rings.get(s.index);
    if (!ring) return;
    ring.push(s);
    for (const l of this.listeners) l(s);
  }

  /** Calls `listener` with every new sample; returns the function that unsubscribes it. */
  onSample(listener: (s: GpuSample) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Samples held in the rings, oldest first (all GPUs, or `index`), within [fromMs, toMs]. */
  samples(window: { index?: number; fromMs?: number; toMs?: number } = {}): GpuSample[] {
    const rings =
      window.index === undefined
        ? [...this.rings.values()]
        : [this.rings.get(window.index)].filter((r) => r !== undefined);
    const out = rings.flatMap((r) => r.toArray(window.fromMs, window.toMs));
    return rings.length > 1 ? out.sort((a, b) => a.tMs - b.tMs || a.index - b.index) : out;
  }

  latest(index: number): GpuSample | undefined {
    return this.rings.get(index)?.latest();
  }

  /** Per-GPU statistics over the samples held, within [fromMs, toMs]. */
  summary(window: { fromMs?: number; toMs?: number } = {}): GpuWindowSummary[] {
    return summarizeGpuSamples(this.samples(window));
  }

  /** Stops sampling (waiting for a reading in flight) and releases NVML or nvidia-smi; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.inFlight;
    if (this.addon) closeNvml(this.addon);
    await this.smi?.stop();
  }
}

function fromNvml(s: NvmlRawSample, monoToOrigin: number): GpuSample {
  return {
    tMs: s.monotonicMs + monoToOrigin,
    index: s.index,
    ...gpuReadings(s),
    throttleReasons: s.throttleReasonsMask === null ? [] : decodeThrottleReasons(s.throttleReasonsMask),
  };
}

function gpmValues(g: NvmlGpmMetrics): GpmValues {
  return {
    smOccupancyPct: g.smOccupancyPct,
    smActivityPct: g.smActivityPct,
    tensorActivityPct: g.tensorActivityPct,
    dramBandwidthPct: g.dramBandwidthPct,
  };
}

function gpuNotFound(index: number, available: number[], source: string): XttsError {
  return new XttsError(
    'GPU_NOT_FOUND',
    `GPU ${index} does not exist: ${source} lists ${available.length ? `GPUs ${available.join(', ')}` : 'no GPU'}`,
    {
      exitCode: ExitCode.environment,
      suggestions: [
        'run `nvidia-smi -L` to list the GPUs and their indices',
        'CUDA_VISIBLE_DEVICES does not renumber NVML indices: use the index nvidia-smi shows',
      ],
    },
  );
}

function pickDevices(requested: readonly number[] | undefined, count: number, source: string): number[] {
  const all = [...Array(count).keys()];
  if (!requested?.length) return all;
  for (const i of requested) if (!all.includes(i)) throw gpuNotFound(i, all, source);
  return [...new Set(requested)];
}

/** Names, UUIDs and memory sizes from one asynchronous nvidia-smi call (empty if it fails); cancel()
 * ends the call when the stream could not start, so that no process outlives the answer. */
function nvidiaSmiInventory(command: string): {
  result: Promise<ReturnType<typeof parseNvidiaSmiInventory>>;
  cancel: () => void;
} {
  let child: ReturnType<typeof execFile> | undefined;
  const result = new Promise<ReturnType<typeof parseNvidiaSmiInventory>>((resolve) => {
    child = execFile(
      command,
      ['--query-gpu=index,name,memory.total,uuid', '--format=csv,noheader,nounits'],
      { timeout: 15_000 },
      (err, stdout) => {
        resolve(err ? [] : parseNvidiaSmiInventory(stdout));
      },
    );
  });
  return { result, cancel: () => child?.kill('SIGKILL') };
}

/** Columns of the default query that this driver's nvidia-smi rejected. */
function defaultQueryDropped(stream: NvidiaSmiStream): string[] {
  const keys = new Set<string>(stream.query.columns.map((c) => c.key));
  return NVIDIA_SMI_COLUMNS.map((c) => c.key).filter((k) => !keys.has(k));
}
