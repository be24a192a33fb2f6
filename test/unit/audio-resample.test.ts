// Resampler quality measured, not assumed: tones below the lower Nyquist come through with their
// amplitude and phase, tones above the new Nyquist are attenuated (the aliasing a naive resampler
// lets through), and sox agrees with us on speech.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { decodeWav, resample, Resampler } from '../../src/core/data/audio/index.js';

function tone(hz: number, seconds: number, rateHz: number, amplitude = 0.5, phase = 0): Float32Array {
  return Float32Array.from(
    { length: Math.round(seconds * rateHz) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rateHz + phase),
  );
}

/** Largest |y - expected| away from the ends (where the filter sees zeros beyond the clip). */
function errorAgainst(y: Float32Array, expected: Float32Array, margin: number): number {
  let worst = 0;
  for (let i = margin; i < Math.min(y.length, expected.length) - margin; i++)
    worst = Math.max(worst, Math.abs(y[i] - expected[i]));
  return worst;
}

/** RMS level in dB relative to a full-amplitude (0.5) sine, away from the ends. */
function levelDb(y: Float32Array, margin: number): number {
  let sum = 0;
  for (let i = margin; i < y.length - margin; i++) sum += y[i] * y[i];
  return 10 * Math.log10(sum / (y.length - 2 * margin) / 0.125);
}

const PAIRS: [number, number][] = [
  [44100, 22050],
  [48000, 22050],
  [16000, 22050],
  [22050, 16000],
  [8000, 22050],
  [44100, 22051], // L = 22051 > 2048: the interpolated-phase path
];

describe('resample', () => {
  for (const [from, to] of PAIRS) {
    test(`${from} -> ${to} Hz: tones up to 0.8 of the lower Nyquist survive with < 0.1% error`, () => {
      const nyquist = Math.min(from, to) / 2;
      for (const fraction of [0.05, 0.3, 0.6, 0.8]) {
        const hz = fraction * nyquist;
        const y = resample(tone(hz, 0.3, from, 0.5, 0.3), from, to);
        assert.equal(y.length, Math.ceil((Math.round(0.3 * from) * to) / from));
        const err = errorAgainst(y, tone(hz, 0.3, to, 0.5, 0.3), 300);
        assert.ok(err < 5e-4, `${hz.toFixed(0)} Hz: max error ${err} (of amplitude 0.5)`);
      }
    });

    if (from > to) {
      test(`${from} -> ${to} Hz: tones above the new Nyquist are attenuated by > 40 dB (measured > 90)`, () => {
        const nyquist = to / 2;
        for (const fraction of [1.02, 1.1, 1.3, 1.8]) {
          const hz = fraction * nyquist;
          if (hz >= from / 2) continue;
          const db = levelDb(resample(tone(hz, 0.3, from), from, to), 300);
          assert.ok(db < -40, `${hz.toFixed(0)} Hz leaks at ${db.toFixed(1)} dB`);
          assert.ok(db < -85, `${hz.toFixed(0)} Hz leaks at ${db.toFixed(1)} dB (design: ~90 dB stop-band)`);
        }
      });
    }
  }

  test('the wasm and js engines agree (exact phases); the interpolated case runs in js', () => {
    let seed = 3;
    const noise = Float32Array.from(
      { length: 30000 },
      () => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 1.6,
    );
    for (const [from, to] of PAIRS.slice(0, 5)) {
      const wasm = new Resampler(from, to);
      const js = new Resampler(from, to, undefined, 'js');
      assert.equal(wasm.engine, 'wasm');
      assert.equal(js.engine, 'js');
      for (const x of [noise, noise.subarray(0, 7), new Float32Array(0)]) {
        const a = wasm.process(x);
        const b = js.process(x);
        assert.equal(a.length, b.length);
        assert.ok(errorAgainst(a, b, 0) < 2e-6, `${from} -> ${to}: engines differ by ${errorAgainst(a, b, 0)}`);
      }
    }
    assert.equal(new Resampler(44100, 22051).engine, 'js');
    assert.throws(() => new Resampler(44100, 22051, undefined, 'wasm'), RangeError);
  });

  test('a naive resampler (every other sample) would alias: the check above can fail', () => {
    const x = tone(15000, 0.3, 44100);
    const decimated = Float32Array.from({ length: x.length >> 1 }, (_, i) => x[2 * i]);
    assert.ok(levelDb(decimated, 300) > -1);
  });

  test('same rate is the identity; lengths follow ceil(n · to / from); long clips stay in phase', () => {
    const x = tone(440, 0.1, 22050);
    assert.equal(resample(x, 22050, 22050), x);
    const r = new Resampler(44100, 16000);
    for (const n of [0, 1, 2, 3, 10, 441, 1000]) assert.equal(r.outputLength(n), Math.ceil((n * 16000) / 44100));
    assert.equal(r.process(new Float32Array(0)).length, 0);
    // Two minutes: the last second still lines up with the ideal tone (positions are exact integers).
    const long = tone(1000, 120, 16000, 0.5);
    const y = resample(long, 16000, 22050);
    const tail = y.subarray(y.length - 22050 - 300, y.length - 300);
    const ideal = tone(1000, 120, 22050, 0.5).subarray(y.length - 22050 - 300, y.length - 300);
    assert.ok(errorAgainst(tail, ideal, 0) < 1e-3);
  });

  test('agrees with sox (very high quality) on espeak-ng speech, 22.05 -> 16 kHz', () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-audio-resample-'));
    const src = join(dir, 'speech.wav');
    const out = join(dir, 'speech16.wav');
    execFileSync('espeak-ng', ['-w', src, 'Resampling speech should change nothing you can hear.']);
    execFileSync('sox', [src, '-e', 'floating-point', '-b', '32', out, 'rate', '-v', '-L', '16000']);
    const full = resample(decodeWav(readFileSync(src)).samples, 22050, 16000);
    const soxFull = decodeWav(readFileSync(out)).samples;
    assert.ok(Math.abs(full.length - soxFull.length) <= 1);
    // The two filters differ in their transition bands (ours rolls off from ~6.6 kHz, sox's from
    // ~7.6 kHz) where espeak's sibilants have energy, so compare below 5.4 kHz: both signals go
    // through the same further low-pass (to 12 kHz), which cannot make two different signals agree.
    const ours = resample(full, 16000, 12000);
    const theirs = resample(soxFull, 16000, 12000);
    let diff = 0;
    let energy = 0;
    for (let i = 1000; i < Math.min(ours.length, theirs.length) - 1000; i++) {
      diff += (ours[i] - theirs[i]) ** 2;
      energy += theirs[i] ** 2;
    }
    const snrDb = 10 * Math.log10(energy / diff);
    assert.ok(snrDb > 80, `ours vs sox below 5.4 kHz: ${snrDb.toFixed(1)} dB SNR`);
  });
});
