// Why a GPU's clocks are below their maximum: NVML's clocks-event ("throttle") reason bits, as
// defined in nvml.h (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*).

export interface ThrottleReason {
  bit: number;
  /** Stable identifier, used in records and JSON. */
  name: string;
  /** What a person reads. */
  label: string;
  /** Whether the reason slows work down against the user's wishes (thermal, power brake, slowdown)
   * rather than reflecting idleness or a setting. */
  harmful: boolean;
}

export const THROTTLE_REASONS: readonly ThrottleReason[] = [
  { bit: 0x1, name: 'gpu_idle', label: 'GPU idle', harmful: false },
  { bit: 0x2, name: 'applications_clocks_setting', label: 'applications clocks setting', harmful: false },
  { bit: 0x4, name: 'sw_power_cap', label: 'SW power cap', harmful: true },
  { bit: 0x8, name: 'hw_slowdown', label: 'HW slowdown', harmful: true },
  { bit: 0x10, name: 'sync_boost', label: 'sync boost', harmful: false },
  { bit: 0x20, name: 'sw_thermal_slowdown', label: 'SW thermal slowdown', harmful: true },
  { bit: 0x40, name: 'hw_thermal_slowdown', label: 'HW thermal slowdown', harmful: true },
  { bit: 0x80, name: 'hw_power_brake_slowdown', label: 'HW power brake slowdown', harmful: true },
  { bit: 0x100, name: 'display_clock_setting', label: 'display clocks setting', harmful: false },
];

const KNOWN_BITS = THROTTLE_REASONS.reduce((m, r) => m | r.bit, 0);

/** Names of the reasons set in `mask` (a number, a bigint, or nvidia-smi's "0x0000000000000004").
 * Bits NVML may add later come back as `unknown_0x...` rather than being dropped. */
export function decodeThrottleReasons(mask: number | bigint | string): string[] {
  let m: bigint;
  if (typeof mask === 'string') {
    const s = mask.trim();
    if (!/^(0x[0-9a-f]+|\d+)$/i.test(s)) throw new RangeError(`not a throttle reason mask: ${JSON.stringify(mask)}`);
    m = BigInt(s);
  } else if (typeof mask === 'number') {
    if (!Number.isInteger(mask) || mask < 0) throw new RangeError(`not a throttle reason mask: ${mask}`);
    m = BigInt(mask);
  } else {
    m = mask;
  }
  const out: string[] = [];
  for (const r of THROTTLE_REASONS) if (m & BigInt(r.bit)) out.push(r.name);
  const rest = m & ~BigInt(KNOWN_BITS);
  if (rest) out.push(`unknown_0x${rest.toString(16)}`);
  return out;
}

/** A person's label for a reason name (the name itself for unknown bits). */
export function throttleReasonLabel(name: string): string {
  return THROTTLE_REASONS.find((r) => r.name === name)?.label ?? name;
}
