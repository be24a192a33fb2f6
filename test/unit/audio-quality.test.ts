// Vocoder-quality scores against values known in closed form: a gain of 2 is 20·log10(2) dB of LSD
// and no MCD (gain lives in c0 only), a semitone is 100 cents, YIN finds a tone's period; and DTW
// pays off only where the timing differs, and refuses what would not fit in memory.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compareAudio,
  f0Track,
  logSpectralDistance,
  MAX_DTW_CELLS,
  melCepstra,
  melCepstralDistortion,
} from '../../src/core/data/audio/index.js';
import type { XttsError } from '../../src/core/errors.js';
import { concatSamples } from '../helpers/wav.js';

const RATE_HZ = 22050;

/** A harmonic tone: harmonics 1..6 of f0 at 1/k amplitude (a sawtooth-like, voice-like spectrum). */
function harmonicTone(f0Hz: number, seconds: number, rateHz = RATE_HZ, tilt = 1): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * rateHz) }, (_, i) => {
    let v = 0;
    for (let k = 1; k <= 6 && k * f0Hz < rateHz / 2; k++)
      v += Math.sin((2 * Math.PI * f0Hz * k * i) / rateHz) / k ** tilt;
    return 0.2 * v;
  });
}

/** Uniform noise in ±amplitude from a fixed-seed LCG, so every run sees the same signal. */
function noise(seconds: number, amplitude: number, seed = 1, rateHz = RATE_HZ): Float32Array {
  let state = seed;
  return Float32Array.from({ length: Math.round(seconds * rateHz) }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return amplitude * (2 * (state / 2 ** 32) - 1);
  });
}

const concat = concatSamples;

/** A 1.2 s clip whose spectrum changes every 0.2 s, as speech's does from sound to sound. */
function utteranceLike(): Float32Array {
  const hiss = noise(0.2, 0.1, 7).map((x, i, a) => x - (i > 0 ? a[i - 1] : 0)); // differenced: a fricative-like tilt up
  return concat(
    harmonicTone(120, 0.2, RATE_HZ, 1),
    noise(0.2, 0.1, 3),
    harmonicTone(200, 0.2, RATE_HZ, 2),
    hiss,
    harmonicTone(160, 0.2, RATE_HZ, 0.5),
    harmonicTone(260, 0.2, RATE_HZ, 1.5),
  );
}

describe('logSpectralDistance', () => {
  test('is 0 for identical signals', () => {
    const x = concat(harmonicTone(220, 0.5), noise(0.5, 0.1));
    assert.equal(logSpectralDistance(x, x, RATE_HZ), 0);
  });

  test('is 20·log10(2) = 6.0206 dB for a signal against itself times 2', () => {
    const x = noise(1, 0.2);
    const lsd = logSpectralDistance(
      x,
      x.map((v) => 2 * v),
      RATE_HZ,
    );
    assert.ok(Math.abs(lsd - 20 * Math.log10(2)) < 1e-3, `LSD ${lsd}`);
  });

  test('with fmaxHz, scores only the band below it: a difference above it is not seen', () => {
    // Tones below 1.5 kHz, and the same tones plus a 9 kHz whistle: they differ only above 8 kHz.
    const x = concat(harmonicTone(220, 0.5), harmonicTone(180, 0.5));
    const whistle = x.map((v, i) => v + 0.05 * Math.sin((2 * Math.PI * 9000 * i) / RATE_HZ));
    const whole = logSpectralDistance(x, whistle, RATE_HZ);
    const below = logSpectralDistance(x, whistle, RATE_HZ, { fmaxHz: 8000 });
    assert.ok(whole > 1, `whole band ${whole} dB`);
    assert.ok(below < 0.05 * whole, `up to 8 kHz ${below} dB, whole band ${whole} dB`);
    const mcdWhole = melCepstralDistortion(x, whistle, RATE_HZ, { align: 'time' }).mcdDb;
    const mcdBelow = melCepstralDistortion(x, whistle, RATE_HZ, { align: 'time', fmaxHz: 8000 }).mcdDb;
    assert.ok(mcdBelow < 0.05 * mcdWhole, `MCD up to 8 kHz ${mcdBelow} dB, whole band ${mcdWhole} dB`);
    assert.equal(compareAudio(x, whistle, RATE_HZ, { fmaxHz: 8000 }).lsdDb, below);
  });

  test('compares the common length only', () => {
    const x = noise(1, 0.2);
    const longer = concat(x, noise(0.5, 0.5, 9));
    assert.equal(logSpectralDistance(x, longer, RATE_HZ), 0);
  });
});

describe('melCepstra and melCepstralDistortion', () => {
  test('24 coefficients per frame on a hop of n_fft / 4 (256 at 22.05 kHz, 512 at 44.1 kHz)', () => {
    const c = melCepstra(noise(1, 0.2), RATE_HZ);
    assert.equal(c.coefficients, 24);
    assert.equal(c.hopLength, 256);
    assert.equal(c.frames, 1 + Math.floor(RATE_HZ / 256));
    assert.equal(c.values.length, c.frames * 24);
    assert.equal(melCepstra(noise(1, 0.2, 1, 44100), 44100).hopLength, 512);
  });

  test('MCD is 0 for identical signals, and for a gain of 2 (which changes c0 only)', () => {
    const x = noise(1, 0.2);
    for (const align of ['time', 'dtw'] as const) {
      assert.equal(melCepstralDistortion(x, x, RATE_HZ, { align }).mcdDb, 0);
      const doubled = melCepstralDistortion(
        x,
        x.map((v) => 2 * v),
        RATE_HZ,
        { align },
      );
      assert.ok(doubled.mcdDb < 1e-9, `${align}: MCD ${doubled.mcdDb}`);
      // A gain must not bend the DTW path either: it stays the diagonal.
      assert.equal(doubled.frames, melCepstra(x, RATE_HZ).frames);
    }
  });

  test('MCD grows with a real spectral difference', () => {
    const a = harmonicTone(150, 1, RATE_HZ, 1);
    const b = harmonicTone(150, 1, RATE_HZ, 2);
    assert.ok(melCepstralDistortion(a, b, RATE_HZ, { align: 'time' }).mcdDb > 1);
  });

  test("0.2 s of silence inserted mid-clip: 'dtw' scores a small fraction of what 'time' does", () => {
    const clip = utteranceLike();
    const middle = Math.round(0.6 * RATE_HZ);
    const paused = concat(clip.subarray(0, middle), new Float32Array(Math.round(0.2 * RATE_HZ)), clip.subarray(middle));
    const byTime = melCepstralDistortion(clip, paused, RATE_HZ, { align: 'time' });
    const byDtw = melCepstralDistortion(clip, paused, RATE_HZ, { align: 'dtw' });
    assert.ok(byDtw.mcdDb < byTime.mcdDb / 3, `dtw ${byDtw.mcdDb.toFixed(2)} dB, time ${byTime.mcdDb.toFixed(2)} dB`);
    // The path covers every frame of both clips, so it is longer than the longer one.
    assert.ok(byDtw.frames >= melCepstra(paused, RATE_HZ).frames);
  });

  test('DTW refuses inputs over MAX_DTW_CELLS frame pairs, with an XttsError and a way out', () => {
    const long = new Float32Array(2_000_000); // 7,813 frames each: 6.1e7 cells
    assert.ok((1 + Math.floor(long.length / 256)) ** 2 > MAX_DTW_CELLS);
    assert.throws(
      () => melCepstralDistortion(long, long, RATE_HZ, { align: 'dtw' }),
      (e: XttsError) => {
        assert.equal(e.name, 'XttsError');
        assert.equal(e.code, 'AUDIO_DTW_TOO_LONG');
        assert.match(e.message, /7,813 × 7,813 frames/);
        assert.ok(e.suggestions.some((s) => s.includes("'time'")));
        return true;
      },
    );
    // Time alignment has no such limit.
    assert.equal(melCepstralDistortion(long, long, RATE_HZ, { align: 'time' }).mcdDb, 0);
  });
});

describe('f0Track (YIN)', () => {
  const median = (xs: Float64Array) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

  test('tracks a 150 Hz tone to within 1%, at 22.05 and 16 kHz', () => {
    for (const rateHz of [22050, 16000]) {
      const f0 = f0Track(harmonicTone(150, 1, rateHz), rateHz);
      const voiced = f0.filter((x) => x > 0);
      assert.ok(voiced.length > 0.9 * f0.length, `${rateHz} Hz: ${voiced.length} of ${f0.length} voiced`);
      for (const hz of voiced) assert.ok(Math.abs(hz - 150) < 1.5, `${rateHz} Hz: f0 ${hz}`);
    }
  });

  test('tracks a pure sine as well (no harmonics to lean on)', () => {
    const sine = Float32Array.from({ length: RATE_HZ }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 95 * i) / RATE_HZ));
    assert.ok(Math.abs(median(f0Track(sine, RATE_HZ)) - 95) < 0.95);
  });

  test('silence and near-silence are unvoiced', () => {
    assert.ok(f0Track(new Float32Array(RATE_HZ), RATE_HZ).every((x) => x === 0));
    // A tone, then the same tone 60 dB down: the quiet half falls under the 40 dB floor.
    const f0 = f0Track(
      concat(
        harmonicTone(150, 0.5),
        harmonicTone(150, 0.5).map((x) => x / 1000),
      ),
      RATE_HZ,
    );
    const frames = f0.length;
    assert.ok(f0.subarray(Math.ceil(frames / 2) + 4).every((x) => x === 0));
    assert.ok(f0.subarray(4, Math.floor(frames / 2) - 4).every((x) => Math.abs(x - 150) < 1.5));
  });

  test('white noise is (almost all) unvoiced', () => {
    const f0 = f0Track(noise(1, 0.3), RATE_HZ);
    assert.ok(f0.filter((x) => x > 0).length < 0.05 * f0.length);
  });
});

describe('compareAudio', () => {
  test('a 220 Hz tone against 233.08 Hz (a semitone up): F0 RMSE 13.08 Hz and 100 cents', () => {
    const result = compareAudio(harmonicTone(220, 1), harmonicTone(233.08, 1), RATE_HZ);
    assert.equal(result.align, 'time');
    assert.ok(result.f0RmseHz !== null && Math.abs(result.f0RmseHz - 13.08) < 0.02 * 13.08, `${result.f0RmseHz} Hz`);
    assert.ok(result.f0RmseCents !== null && Math.abs(result.f0RmseCents - 100) < 2, `${result.f0RmseCents} cents`);
    assert.equal(result.vuvError, 0);
    assert.ok(result.voicedFrames > 0.9 * result.frames);
  });

  test('identical clips score 0 everywhere', () => {
    const x = utteranceLike();
    for (const align of ['time', 'dtw'] as const) {
      const r = compareAudio(x, x, RATE_HZ, { align });
      assert.deepEqual([r.lsdDb, r.mcdDb, r.f0RmseHz, r.f0RmseCents, r.vuvError, r.align], [0, 0, 0, 0, 0, align]);
      assert.equal(r.frames, melCepstra(x, RATE_HZ).frames);
    }
  });

  test('voicing flips are counted; F0 is null when no frame is voiced in both', () => {
    const tone = harmonicTone(150, 1);
    const silence = new Float32Array(tone.length);
    const r = compareAudio(tone, silence, RATE_HZ);
    assert.equal(r.f0RmseHz, null);
    assert.equal(r.f0RmseCents, null);
    assert.equal(r.voicedFrames, 0);
    const voicedInTone = f0Track(tone, RATE_HZ).filter((x) => x > 0).length;
    assert.equal(r.vuvError, voicedInTone / r.frames);
  });
});
