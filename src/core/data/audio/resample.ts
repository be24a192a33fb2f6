// Band-limited resampling: a Kaiser-windowed sinc interpolator with a finely sampled kernel table
// (the design of Julius O. Smith's "Digital Audio Resampling" and libresample). Cut-off at 0.95 of
// the lower Nyquist, 16 zero crossings each side, Kaiser beta 8.6 (about 80 dB stop-band).
const ZERO_CROSSINGS = 16;
const TABLE_PER_CROSSING = 512;
const KAISER_BETA = 8.6;
const ROLLOFF = 0.95;

function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

let kernelTable: Float64Array | undefined;
/** sinc(x)·kaiser(x) for x in [0, ZERO_CROSSINGS], TABLE_PER_CROSSING points per crossing. */
function kernel(): Float64Array {
  if (kernelTable) return kernelTable;
  const n = ZERO_CROSSINGS * TABLE_PER_CROSSING + 2;
  const t = new Float64Array(n);
  const i0b = besselI0(KAISER_BETA);
  for (let i = 0; i < n; i++) {
    const x = i / TABLE_PER_CROSSING;
    const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    const r = x / ZERO_CROSSINGS;
    t[i] = r >= 1 ? 0 : sinc * (besselI0(KAISER_BETA * Math.sqrt(1 - r * r)) / i0b);
  }
  kernelTable = t;
  return t;
}

export function resample(input: Float32Array, fromHz: number, toHz: number): Float32Array {
  if (fromHz === toHz) return input;
  const table = kernel();
  const ratio = toHz / fromHz;
  const scale = Math.min(1, ratio) * ROLLOFF; // kernel stretch for downsampling (anti-aliasing)
  const outLength = Math.floor(input.length * ratio);
  const out = new Float32Array(outLength);
  const halfWidth = ZERO_CROSSINGS / scale; // in input samples
  const step = TABLE_PER_CROSSING * scale;
  for (let n = 0; n < outLength; n++) {
    const t = n / ratio; // position in input samples
    const left = Math.max(0, Math.ceil(t - halfWidth));
    const right = Math.min(input.length - 1, Math.floor(t + halfWidth));
    let acc = 0;
    for (let k = left; k <= right; k++) {
      const pos = Math.abs(t - k) * step;
      const i = pos | 0;
      const frac = pos - i;
      acc += input[k] * (table[i] + frac * (table[i + 1] - table[i]));
    }
    out[n] = acc * scale;
  }
  return out;
}
