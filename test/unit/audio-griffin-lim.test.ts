// Griffin-Lim eval audio: tones come back at their frequency, the mel inversion is consistent with
// the filterbank, and speech vocoded from its own log-mel has (nearly) that log-mel again, better
// with more iterations.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { decodeWav, griffinLim, MelExtractor, melFilterbank, melToMagnitude } from '../../src/core/data/audio/index.js';
import { MEL_SETTINGS } from '../helpers/mel-settings.js';

/**
 * For espeak-ng's speech of `text`: the mean |log-mel difference| (where the log-mel is above 1e-3)
 * between its log-mel and that of Griffin-Lim's audio from it, under the given options (unscaled).
 */
function revocodedError(text: string): (options: { iterations?: number; power?: number }) => number {
  const extractor = new MelExtractor(MEL_SETTINGS);
  const target = extractor.compute(speech(text));
  return (options) => {
    const back = extractor.compute(griffinLim(target.mel, target.frames, MEL_SETTINGS, { peak: null, ...options }));
    let sum = 0;
    let n = 0;
    for (let i = 0; i < back.mel.length && i < target.mel.length; i++) {
      if (target.mel[i] < Math.log(1e-3)) continue;
      sum += Math.abs(back.mel[i] - target.mel[i]);
      n++;
    }
    return sum / n;
  };
}

function tone(hz: number, seconds: number, amplitude = 0.5): Float32Array {
  return Float32Array.from(
    { length: Math.round(seconds * 22050) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / 22050),
  );
}

/** Amplitude of the component at hz (a single-bin DFT with a Hann window). */
function amplitudeAt(x: Float32Array, hz: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < x.length; i++) {
    const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / x.length);
    re += w * x[i] * Math.cos((2 * Math.PI * hz * i) / 22050);
    im += w * x[i] * Math.sin((2 * Math.PI * hz * i) / 22050);
  }
  return (4 * Math.hypot(re, im)) / x.length;
}

function speech(text: string): Float32Array {
  const wav = join(mkdtempSync(join(tmpdir(), 'xtts-audio-gl-')), 'speech.wav');
  execFileSync('espeak-ng', ['-w', wav, text]);
  return decodeWav(readFileSync(wav)).samples;
}

describe('griffinLim', () => {
  test("a tone's log-mel vocodes back to that tone: the spectral peak is within half a mel band of it", () => {
    const extractor = new MelExtractor(MEL_SETTINGS);
    for (const hz of [220, 1000, 3150]) {
      const { frames, mel } = extractor.compute(tone(hz, 0.6));
      const y = griffinLim(mel, frames, MEL_SETTINGS, { iterations: 16 });
      assert.equal(y.length, (frames - 1) * 256);
      const middle = y.subarray(2048, y.length - 2048);
      let bestHz = 0;
      let best = 0;
      for (let f = 50; f <= 8000; f += 5) {
        const a = amplitudeAt(middle, f);
        if (a > best) [best, bestHz] = [a, f];
      }
      // The mel keeps frequency only to within a band: centres are 0.559 Slaney mel apart (45.3 mel
      // over 81 steps to 8 kHz), i.e. 37 Hz below 1 kHz and 3.8% of the frequency above.
      const halfBandHz = (hz < 1000 ? 37 : 0.038 * hz) / 2;
      assert.ok(Math.abs(bestHz - hz) <= halfBandHz, `${hz} Hz came back peaking at ${bestHz} Hz`);
      for (const other of [hz / 2, hz * 2, hz * 3])
        assert.ok(amplitudeAt(middle, other) < best / 10, `${hz} Hz: too much at ${other} Hz`);
    }
  });

  test('peak-normalised to -1 dBFS by default, raw scale with peak: null, deterministic per seed', () => {
    const { frames, mel } = new MelExtractor(MEL_SETTINGS).compute(tone(500, 0.3, 0.2));
    const y = griffinLim(mel, frames, MEL_SETTINGS, { iterations: 4 });
    assert.ok(Math.abs(Math.max(...y.map(Math.abs)) - 0.89) < 1e-6);
    assert.deepEqual(griffinLim(mel, frames, MEL_SETTINGS, { iterations: 4 }), y);
    assert.notDeepEqual(griffinLim(mel, frames, MEL_SETTINGS, { iterations: 4, seed: 2 }), y);
    // power 1, no normalisation: the output scales with the magnitudes, and keeps the tone's level
    // (RMS 0.2/√2) up to what the mel's frequency blur costs.
    const raw = griffinLim(mel, frames, MEL_SETTINGS, { iterations: 16, power: 1, peak: null });
    const louder = griffinLim(
      mel.map((v) => v + Math.log(2)),
      frames,
      MEL_SETTINGS,
      { iterations: 16, power: 1, peak: null },
    );
    let worst = 0;
    raw.forEach((v, i) => (worst = Math.max(worst, Math.abs(2 * v - louder[i]))));
    assert.ok(worst < 1e-4, `doubling the magnitudes changed the output by up to ${worst} more than 2x`);
    const middle = raw.subarray(1024, raw.length - 1024);
    const rms = Math.sqrt(middle.reduce((a, v) => a + v * v, 0) / middle.length);
    assert.ok(Math.abs(rms / (0.2 / Math.SQRT2) - 1) < 0.3, `RMS ${rms} for a tone of RMS ${0.2 / Math.SQRT2}`);
  });

  test('melToMagnitude is non-negative and maps back through the filterbank to the mel it came from', () => {
    const x = speech('Mel inversion.');
    const { frames, mel } = new MelExtractor(MEL_SETTINGS).compute(x);
    const mag = melToMagnitude(mel, frames, MEL_SETTINGS);
    const filters = melFilterbank(MEL_SETTINGS);
    let worst = 0;
    let checked = 0;
    for (let t = 0; t < frames; t++) {
      for (let m = 0; m < 80; m++) {
        const logValue = mel[t * 80 + m];
        if (logValue < Math.log(1e-2)) continue; // near the floor the log magnifies tiny absolute errors
        let s = 0;
        filters[m].weights.forEach((w, j) => (s += w * mag[t * 513 + filters[m].start + j]));
        worst = Math.max(worst, Math.abs(Math.log(s) - logValue));
        checked++;
      }
    }
    assert.ok(mag.every((v) => v >= 0));
    assert.ok(checked > 1000);
    assert.ok(worst < 0.01, `largest log-mel error of the inversion ${worst}`);
  });

  test('speech vocoded from its log-mel has close to that log-mel again, and more iterations get closer', () => {
    const error = revocodedError('Griffin and Lim, nineteen eighty four.');
    const few = error({ iterations: 1, power: 1 });
    const many = error({ iterations: 32, power: 1 });
    assert.ok(many < few, `32 iterations ${many} vs 1 iteration ${few}`);
    assert.ok(many < 0.2, `mean |log-mel error| after 32 iterations ${many}`);
  });

  test('the default exponent keeps the log-mel: sharpened magnitudes (power 1.5) come back further from it', () => {
    const error = revocodedError('The north wind and the sun were disputing which was the stronger.');
    const byDefault = error({});
    const sharpened = error({ power: 1.5 });
    assert.ok(byDefault < 0.2, `mean |log-mel error| by default ${byDefault}`);
    assert.ok(byDefault < sharpened / 2, `default ${byDefault} vs power 1.5 ${sharpened}`);
  });
});
