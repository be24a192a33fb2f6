// One GPU reading as the rest of xtts sees it, whichever source took it (NVML addon or nvidia-smi),
// a fixed-size ring that keeps the latest of them, and the run database's row shape.
import type { DeviceSampleRecord } from './run-db.js';

/** The readings every GPU source gives (NVML addon, nvidia-smi, a run database row), in this order;
 * each null when the GPU does not report it. */
export interface GpuReadings {
  /** Share of the driver's sample period in which any kernel ran: "busy", not "how much of the GPU". */
  utilizationPct: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
  smClockMhz: number | null;
  powerW: number | null;
  temperatureC: number | null;
}

/** The readings of `r` alone, in GpuReadings' order (the order of a sample's and a row's keys). */
export function gpuReadings(r: GpuReadings): GpuReadings {
  return {
    utilizationPct: r.utilizationPct,
    memoryUsedBytes: r.memoryUsedBytes,
    memoryTotalBytes: r.memoryTotalBytes,
    smClockMhz: r.smClockMhz,
    powerW: r.powerW,
    temperatureC: r.temperatureC,
  };
}

export interface GpuSample extends GpuReadings {
  /** ms since the sampler's origin (by default the moment it started; the trainer passes its run start). */
  tMs: number;
  /** NVML / nvidia-smi index. */
  index: number;
  /** Active clocks-event reasons (names from THROTTLE_REASONS); empty when none or not reported. */
  throttleReasons: string[];
  /** GPM (Hopper and newer, NVML source only): resident warps / theoretical maximum, over the last
   * GPM interval. Absent when GPM is not read on this GPU. */
  smOccupancyPct?: number | null;
  /** GPM: share of SMs busy over the last GPM interval; what "utilisation" should mean. */
  smActivityPct?: number | null;
  /** GPM: share of time tensor cores were busy. */
  tensorActivityPct?: number | null;
  /** GPM: share of peak DRAM bandwidth used. */
  dramBandwidthPct?: number | null;
}

/** The latest `capacity` samples of one GPU, oldest first; pushing never allocates once full. */
export class GpuSampleRing {
  readonly capacity: number;
  private readonly items: (GpuSample | undefined)[];
  private next = 0;
  private count = 0;
  /** Samples dropped because the ring was full. */
  overwritten = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`ring capacity must be a positive integer, not ${capacity}`);
    this.capacity = capacity;
    this.items = new Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(s: GpuSample): void {
    if (this.count === this.capacity) this.overwritten++;
    else this.count++;
    this.items[this.next] = s;
    this.next = (this.next + 1) % this.capacity;
  }

  latest(): GpuSample | undefined {
    return this.count ? this.items[(this.next - 1 + this.capacity) % this.capacity] : undefined;
  }

  /** Samples with fromMs <= tMs <= toMs, oldest first. */
  toArray(fromMs = -Infinity, toMs = Infinity): GpuSample[] {
    const out: GpuSample[] = [];
    const start = (this.next - this.count + this.capacity) % this.capacity;
    for (let i = 0; i < this.count; i++) {
      const s = this.items[(start + i) % this.capacity]!;
      if (s.tMs >= fromMs && s.tMs <= toMs) out.push(s);
    }
    return out;
  }

  clear(): void {
    this.items.fill(undefined);
    this.next = 0;
    this.count = 0;
  }
}

/** The run database's row for a sample (RunDatabase.addDeviceSample). */
export function toDeviceSampleRecord(s: GpuSample): DeviceSampleRecord {
  return {
    tMs: s.tMs,
    device: s.index,
    ...gpuReadings(s),
    smActivityPct: s.smActivityPct ?? null,
    throttleReasons: s.throttleReasons.join(','),
  };
}

/** A run database row back as a sample (for statistics over a recorded run's samples). */
export function fromDeviceSampleRecord(r: DeviceSampleRecord): GpuSample {
  return {
    tMs: r.tMs,
    index: r.device,
    ...gpuReadings(r),
    throttleReasons: r.throttleReasons ? r.throttleReasons.split(',').filter(Boolean) : [],
    ...(r.smActivityPct !== null ? { smActivityPct: r.smActivityPct } : {}),
  };
}
