// Silence trimming (librosa.effects.trim semantics) and loudness (ITU-R BS.1770-4 integrated loudness
// with K-weighting and gating; mono, as the front end downmixes first).

/** librosa.amplitude_to_db's default amin: amplitudes below it count as it. */
const TRIM_AMIN = 1e-5;

/**
 * Samples [start, end) that remain after librosa.effects.trim (librosa 0.10): the RMS of centred
 * frames (frameLength with zero padding, every `hop` samples) in dB relative to the loudest frame;
 * leading and trailing frames at or below -topDb are cut, start = first kept frame · hop,
 * end = min(n, (last kept frame + 1) · hop). As in librosa, amplitudes are floored at 1e-5 first, so
 * digital silence is "all at the peak" and kept whole; callers that must reject silence check it.
 */
export function trimSilence(
  samples: Float32Array,
  topDb: number,
  frameLength = 2048,
  hop = 512,
): { start: number; end: number } {
  const n = samples.length;
  if (n === 0) return { start: 0, end: 0 };
  // Prefix sums of squares make each frame's energy O(1).
  const cum = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) cum[i + 1] = cum[i] + samples[i] * samples[i];
  const frames = 1 + Math.floor(n / hop);
  const half = frameLength >> 1;
  const rms = new Float64Array(frames);
  let peak = 0;
  for (let f = 0; f < frames; f++) {
    const a = Math.max(0, f * hop - half);
    const b = Math.min(n, f * hop - half + frameLength);
    rms[f] = Math.sqrt(Math.max(0, cum[b] - cum[a]) / frameLength);
    if (rms[f] > peak) peak = rms[f];
  }
  const refDb = 20 * Math.log10(Math.max(TRIM_AMIN, peak));
  const loud = (f: number) => 20 * Math.log10(Math.max(TRIM_AMIN, rms[f])) - refDb > -topDb;
  let first = 0;
  while (first < frames && !loud(first)) first++;
  if (first === frames) return { start: 0, end: 0 };
  let last = frames - 1;
  while (last > first && !loud(last)) last--;
  return { start: Math.min(n, first * hop), end: Math.min(n, (last + 1) * hop) };
}

/** Largest absolute sample. */
export function peakAmplitude(samples: Float32Array): number {
  let peak = 0;
  for (let i = 0; i < samples.length; i++) {
    const a = Math.abs(samples[i]);
    if (a > peak) peak = a;
  }
  return peak;
}

interface Biquad {
  b0: number;
  b1: number;
  b2: number;
  a1: number;
  a2: number;
}

/**
 * The two K-weighting stages for any rate: the pre-filter (a high shelf, +4 dB above ~1.7 kHz) and
 * the RLB high-pass, in the bilinear-transform parametrisation of libebur128 (ebur128.c,
 * ebur128_init_filter; Brecht De Man, AES 2018), which reproduces the standard's 48 kHz
 * coefficients and keeps the same response at other rates.
 */
function kWeighting(rateHz: number): [Biquad, Biquad] {
  let k = Math.tan((Math.PI * 1681.974450955533) / rateHz);
  let q = 0.7071752369554196;
  const vh = 10 ** (3.999843853973347 / 20);
  const vb = vh ** 0.4996667741545416;
  let a0 = 1 + k / q + k * k;
  const shelf: Biquad = {
    b0: (vh + (vb * k) / q + k * k) / a0,
    b1: (2 * (k * k - vh)) / a0,
    b2: (vh - (vb * k) / q + k * k) / a0,
    a1: (2 * (k * k - 1)) / a0,
    a2: (1 - k / q + k * k) / a0,
  };
  k = Math.tan((Math.PI * 38.13547087602444) / rateHz);
  q = 0.5003270373238773;
  a0 = 1 + k / q + k * k;
  const highpass: Biquad = { b0: 1, b1: -2, b2: 1, a1: (2 * (k * k - 1)) / a0, a2: (1 - k / q + k * k) / a0 };
  return [shelf, highpass];
}

/** Loudness of a mean square z of the K-weighted signal: BS.1770-4 eq. 2 (mono, G = 1). */
function lufsOf(meanSquare: number): number {
  return -0.691 + 10 * Math.log10(meanSquare);
}

/**
 * Integrated loudness in LUFS of a mono clip (BS.1770-4): K-weighting, 400 ms blocks every 100 ms,
 * an absolute gate at -70 LUFS, then a relative gate 10 LU under the loudness of the blocks that
 * passed it. A clip shorter than one block is measured as a single block of its own length (the
 * standard leaves it undefined). Silence (no block above -70 LUFS) is -Infinity.
 */
export function integratedLoudness(samples: Float32Array, rateHz: number): number {
  const n = samples.length;
  if (n === 0) return -Infinity;
  const [s, h] = kWeighting(rateHz);
  // Both biquads in one pass (direct form I), keeping a running sum of the squared output.
  const cum = new Float64Array(n + 1);
  let x1 = 0,
    x2 = 0,
    y1 = 0,
    y2 = 0,
    z1 = 0,
    z2 = 0;
  for (let i = 0; i < n; i++) {
    const x = samples[i];
    const y = s.b0 * x + s.b1 * x1 + s.b2 * x2 - s.a1 * y1 - s.a2 * y2;
    x2 = x1;
    x1 = x;
    const z = h.b0 * y + h.b1 * y1 + h.b2 * y2 - h.a1 * z1 - h.a2 * z2;
    y2 = y1;
    y1 = y;
    z2 = z1;
    z1 = z;
    cum[i + 1] = cum[i] + z * z;
  }
  const block = Math.round(0.4 * rateHz);
  const step = Math.round(0.1 * rateHz);
  const powers: number[] = [];
  if (n < block) powers.push(cum[n] / n);
  else for (let a = 0; a + block <= n; a += step) powers.push((cum[a + block] - cum[a]) / block);
  const absolute = powers.filter((p) => p > 0 && lufsOf(p) > -70);
  if (absolute.length === 0) return -Infinity;
  const relativeGate = lufsOf(absolute.reduce((a, b) => a + b, 0) / absolute.length) - 10;
  const gated = absolute.filter((p) => lufsOf(p) > relativeGate);
  return lufsOf(gated.reduce((a, b) => a + b, 0) / gated.length);
}

/**
 * A copy scaled to the target integrated loudness; silence (no gated block) comes back unchanged.
 * No limiter: a quiet clip pushed up may exceed ±1, which features tolerate; clip before writing PCM.
 */
export function normaliseLoudness(samples: Float32Array, rateHz: number, targetLufs: number): Float32Array {
  const current = integratedLoudness(samples, rateHz);
  if (!Number.isFinite(current)) return samples;
  const gain = 10 ** ((targetLufs - current) / 20);
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i] * gain;
  return out;
}
