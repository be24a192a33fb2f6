// Silence trimming against a frame-by-frame transcription of librosa.effects.trim written here, on
// crafted clips and espeak-ng speech; loudness against the values BS.1770-4 and EBU Tech 3341 state
// for sine tones, its two gates, and normalisation to a target.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { decodeWav, integratedLoudness, normaliseLoudness, trimSilence } from '../../src/core/data/audio/index.js';
import { concatSamples } from '../helpers/wav.js';

function tone(hz: number, seconds: number, rateHz: number, amplitude: number): Float32Array {
  return Float32Array.from(
    { length: Math.round(seconds * rateHz) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rateHz),
  );
}

const concat = concatSamples;

/**
 * librosa 0.10 effects.trim, one frame at a time: rms(center=True, pad_mode='constant') -> amplitude_to_db(ref=max,
 * amin=1e-5) > -top_db.
 */
function librosaTrim(y: Float32Array, topDb: number, frameLength = 2048, hop = 512): [number, number] {
  const padded = new Float64Array(y.length + frameLength);
  padded.set(y, frameLength / 2);
  const frames = 1 + Math.floor((padded.length - frameLength) / hop);
  const rms: number[] = [];
  for (let f = 0; f < frames; f++) {
    let s = 0;
    for (let i = 0; i < frameLength; i++) s += padded[f * hop + i] ** 2;
    rms.push(Math.sqrt(s / frameLength));
  }
  const ref = Math.max(...rms);
  const db = rms.map((r) => 20 * Math.log10(Math.max(1e-5, r)) - 20 * Math.log10(Math.max(1e-5, ref)));
  const loud = db.flatMap((d, f) => (d > -topDb ? [f] : []));
  if (loud.length === 0) return [0, 0];
  return [loud[0] * hop, Math.min(y.length, (loud[loud.length - 1] + 1) * hop)];
}

const RATE = 22050;
const dir = mkdtempSync(join(tmpdir(), 'xtts-audio-dynamics-'));

describe('trimSilence', () => {
  test('cuts the silence around a tone and keeps all of the tone', () => {
    const x = concat(new Float32Array(RATE / 2), tone(300, 1, RATE, 0.5), new Float32Array(RATE / 2));
    const { start, end } = trimSilence(x, 40);
    assert.ok(
      start <= RATE / 2 && end >= RATE * 1.5,
      `[${start}, ${end}) must contain the tone [${RATE / 2}, ${RATE * 1.5})`,
    );
    // librosa keeps at most about one frame (2048) of the quiet on each side.
    assert.ok(RATE / 2 - start < 2048 && end - RATE * 1.5 < 2048, `[${start}, ${end})`);
    assert.deepEqual([start, end], librosaTrim(x, 40));
  });

  const crafted: [string, () => Float32Array, number][] = [
    [
      'noise floor at -50 dB, top_db 40',
      () => concat(tone(50, 0.4, RATE, 0.001), tone(440, 0.7, RATE, 0.3), tone(50, 0.3, RATE, 0.001)),
      40,
    ],
    [
      'noise floor at -50 dB, top_db 60 keeps it',
      () => concat(tone(50, 0.4, RATE, 0.001), tone(440, 0.7, RATE, 0.3), tone(50, 0.3, RATE, 0.001)),
      60,
    ],
    [
      'a quiet word after a pause is kept',
      () =>
        concat(
          new Float32Array(5000),
          tone(440, 0.3, RATE, 0.5),
          new Float32Array(8000),
          tone(660, 0.2, RATE, 0.02),
          new Float32Array(9000),
        ),
      40,
    ],
    ['odd length, no silence at all', () => tone(440, 0.123, RATE, 0.4), 40],
    [
      'shorter than a frame',
      () => concat(new Float32Array(300), tone(440, 0.01, RATE, 0.4), new Float32Array(300)),
      30,
    ],
    ['digital silence is kept whole (librosa floors at 1e-5)', () => new Float32Array(7000), 40],
  ];
  for (const [name, make, topDb] of crafted) {
    test(`matches librosa's definition: ${name}`, () => {
      const x = make();
      const { start, end } = trimSilence(x, topDb);
      assert.deepEqual([start, end], librosaTrim(x, topDb));
    });
  }

  test("matches librosa's definition on espeak-ng speech with silence and a little noise around it", () => {
    const wav = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-w', wav, 'Silence is golden.']);
    const words = decodeWav(readFileSync(wav)).samples;
    let seed = 7;
    const noise = (n: number) =>
      Float32Array.from({ length: n }, () => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 2e-3);
    const x = concat(noise(9000), words, noise(12000));
    for (const topDb of [20, 40, 60]) {
      const { start, end } = trimSilence(x, topDb);
      assert.deepEqual([start, end], librosaTrim(x, topDb), `top_db ${topDb}`);
    }
    const { start, end } = trimSilence(x, 40);
    assert.ok(start >= 9000 - 2048 && end <= x.length - 12000 + 2048);
  });
});

describe('integratedLoudness (BS.1770-4)', () => {
  test('a full-scale 1 kHz sine reads -3.01 LUFS at every common rate', () => {
    for (const rate of [48000, 44100, 32000, 24000, 22050, 16000]) {
      const lufs = integratedLoudness(tone(1000, 3, rate, 1), rate);
      assert.ok(Math.abs(lufs + 3.01) < 0.05, `${rate} Hz: ${lufs.toFixed(3)} LUFS`);
    }
  });

  test('EBU Tech 3341 style: a 1 kHz sine at -20 dBFS reads -23 LUFS; -40 dBFS reads -43', () => {
    assert.ok(Math.abs(integratedLoudness(tone(1000, 20, 48000, 0.1), 48000) + 23.01) < 0.05);
    assert.ok(Math.abs(integratedLoudness(tone(1000, 20, 48000, 0.01), 48000) + 43.01) < 0.05);
  });

  test('K-weighting: 100 Hz reads lower and 5 kHz higher than 1 kHz at the same level', () => {
    const at = (hz: number) => integratedLoudness(tone(hz, 2, 48000, 0.5), 48000);
    assert.ok(at(100) < at(1000) - 0.5, `${at(100)} vs ${at(1000)}`);
    assert.ok(at(5000) > at(1000) + 3, `${at(5000)} vs ${at(1000)}`);
    assert.ok(at(20) < at(1000) - 10, `${at(20)} vs ${at(1000)}`);
  });

  test('gating: silence and a tone 40 dB down do not pull the loudness of the loud part', () => {
    const loud = tone(1000, 4, 48000, 0.1);
    const quiet = tone(1000, 4, 48000, 0.001); // -63 LUFS: passes the absolute gate, not the relative one
    const alone = integratedLoudness(loud, 48000);
    const gatedSilence = integratedLoudness(concat(loud, new Float32Array(48000 * 4)), 48000);
    const gatedQuiet = integratedLoudness(concat(quiet, loud, quiet), 48000);
    // Blocks are 400 ms every 100 ms and the tone starts on a block boundary: 37 blocks are all tone,
    // and each edge has three blocks that are 3/4, 1/2 and 1/4 tone, which pass both gates. So the
    // gated mean power is (37 + 1.5) / 40 of the tone's with silence after it, and (37 + 3) / 43
    // with the quiet tone on both sides (whose own blocks fail the relative gate).
    const expectSilence = alone + 10 * Math.log10(38.5 / 40);
    const expectQuiet = alone + 10 * Math.log10(40 / 43);
    assert.ok(Math.abs(gatedSilence - expectSilence) < 0.01, `with silence ${gatedSilence}, expected ${expectSilence}`);
    assert.ok(Math.abs(gatedQuiet - expectQuiet) < 0.01, `with a quiet tone ${gatedQuiet}, expected ${expectQuiet}`);
    // Without the relative gate the quiet blocks would count: about 4.8 LU lower.
    let sum = 0;
    const both = concat(quiet, loud, quiet);
    for (let i = 0; i < both.length; i++) sum += both[i] ** 2;
    assert.ok(-0.691 + 10 * Math.log10(sum / both.length) < alone - 4);
  });

  test('silence is -Infinity; a clip shorter than one 400 ms block is measured whole', () => {
    assert.equal(integratedLoudness(new Float32Array(48000), 48000), -Infinity);
    assert.equal(integratedLoudness(new Float32Array(0), 48000), -Infinity);
    const short = integratedLoudness(tone(1000, 0.3, 48000, 1), 48000);
    assert.ok(Math.abs(short + 3.01) < 0.3, `${short}`);
  });
});

describe('normaliseLoudness', () => {
  test('espeak-ng speech reaches -23 and -16 LUFS within 0.5 LU (measured ~0.01)', () => {
    const wav = join(dir, 'loud.wav');
    execFileSync('espeak-ng', ['-w', wav, 'Loudness normalisation brings every clip to the same level.']);
    const x = decodeWav(readFileSync(wav)).samples;
    for (const target of [-23, -16, -30]) {
      const y = normaliseLoudness(x, RATE, target);
      const got = integratedLoudness(y, RATE);
      assert.ok(Math.abs(got - target) < 0.5, `target ${target}: ${got}`);
      assert.ok(Math.abs(got - target) < 0.05, `target ${target}: ${got} (a pure gain should land almost exactly)`);
    }
  });

  test('silence comes back unchanged; the input is not modified', () => {
    const silent = new Float32Array(1000);
    assert.equal(normaliseLoudness(silent, RATE, -23), silent);
    const x = tone(440, 1, RATE, 0.2);
    const copy = Float32Array.from(x);
    normaliseLoudness(x, RATE, -10);
    assert.deepEqual(x, copy);
  });
});
