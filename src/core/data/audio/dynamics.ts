// Silence trimming (librosa.effects.trim semantics) and loudness normalisation (ITU-R BS.1770-4).

/** Samples [start, end) after cutting leading/trailing frames quieter than peak - topDb (RMS, 2048/512). */
export function trimSilence(samples: Float32Array, topDb: number, frameLength = 2048, hop = 512): { start: number; end: number } {
  if (samples.length === 0) return { start: 0, end: 0 };
  // librosa centres frames with padding; frame f covers [f*hop - frameLength/2, f*hop + frameLength/2).
  const frames = 1 + Math.floor(samples.length / hop);
  const rms = new Float64Array(frames);
  let peak = 0;
  for (let f = 0; f < frames; f++) {
    const a = Math.max(0, f * hop - frameLength / 2);
    const b = Math.min(samples.length, f * hop + frameLength / 2);
    let s = 0;
    for (let i = a; i < b; i++) s += samples[i] * samples[i];
    rms[f] = Math.sqrt(s / frameLength);
    if (rms[f] > peak) peak = rms[f];
  }
  if (peak === 0) return { start: 0, end: 0 };
  const threshold = peak * 10 ** (-topDb / 20);
  let first = 0;
  while (first < frames && rms[first] <= threshold) first++;
  let last = frames - 1;
  while (last > first && rms[last] <= threshold) last--;
  if (first >= frames) return { start: 0, end: 0 };
  return { start: Math.min(samples.length, first * hop), end: Math.min(samples.length, (last + 1) * hop) };
}

interface Biquad {
  b: [number, number, number];
  a: [number, number];
}

/**
 * K-weighting filters for any rate: the BS.1770 pre-filter (high shelf) and RLB high-pass, in Brecht
 * De Man's bilinear-transform parametrisation ("Evaluation of implementations of the EBU R128
 * loudness measurement", AES 2018), which reproduces the standard's 48 kHz coefficients exactly.
 */
function kWeighting(rateHz: number): Biquad[] {
  const shelfK = Math.tan((Math.PI * 1681.974450955533) / rateHz);
  const shelfQ = 0.7071752369554196;
  const vh = 10 ** (3.999843853973347 / 20);
  const vb = vh ** 0.4996667741545416;
  const s0 = 1 + shelfK / shelfQ + shelfK * shelfK;
  const shelf: Biquad = {
    b: [(vh + (vb * shelfK) / shelfQ + shelfK * shelfK) / s0, (2 * (shelfK * shelfK - vh)) / s0, (vh - (vb * shelfK) / shelfQ + shelfK * shelfK) / s0],
    a: [(2 * (shelfK * shelfK - 1)) / s0, (1 - shelfK / shelfQ + shelfK * shelfK) / s0],
  };
  const hpK = Math.tan((Math.PI * 38.13547087602444) / rateHz);
  const hpQ = 0.5003270373238773;
  const h0 = 1 + hpK / hpQ + hpK * hpK;
  const highpass: Biquad = { b: [1, -2, 1], a: [(2 * (hpK * hpK - 1)) / h0, (1 - hpK / hpQ + hpK * hpK) / h0] };
  return [shelf, highpass];
}

function filter(x: Float64Array, f: Biquad): Float64Array {
  const y = new Float64Array(x.length);
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const v = f.b[0] * x[i] + f.b[1] * x1 + f.b[2] * x2 - f.a[0] * y1 - f.a[1] * y2;
    x2 = x1;
    x1 = x[i];
    y2 = y1;
    y1 = v;
    y[i] = v;
  }
  return y;
}

/** Integrated loudness in LUFS (mono), with the absolute (-70 LUFS) and relative (-10 LU) gates. */
export function integratedLoudness(samples: Float32Array, rateHz: number): number {
  let x: Float64Array = Float64Array.from(samples);
  for (const f of kWeighting(rateHz)) x = filter(x, f);
  const block = Math.round(0.4 * rateHz);
  const hop = Math.round(0.1 * rateHz);
  const z: number[] = [];
  for (let s = 0; s + block <= x.length; s += hop) {
    let acc = 0;
    for (let i = s; i < s + block; i++) acc += x[i] * x[i];
    z.push(acc / block);
  }
  const lufs = (p: number) => -0.691 + 10 * Math.log10(p);
  const abs = z.filter((p) => p > 0 && lufs(p) > -70);
  if (abs.length === 0) return -Infinity;
  const rel = lufs(abs.reduce((a, b) => a + b, 0) / abs.length) - 10;
  const gated = abs.filter((p) => lufs(p) > rel);
  return lufs(gated.reduce((a, b) => a + b, 0) / gated.length);
}

/** Scale to the target loudness; silence (no gated block) is returned unchanged. */
export function normaliseLoudness(samples: Float32Array, rateHz: number, targetLufs: number): Float32Array {
  const current = integratedLoudness(samples, rateHz);
  if (!Number.isFinite(current)) return samples;
  const gain = 10 ** ((targetLufs - current) / 20);
  return samples.map((v) => v * gain);
}
