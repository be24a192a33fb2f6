// The audio front end on real files: WAV variants written by sox (an independent encoder), bad
// files with reason codes, resampler quality, trimming, loudness, and log-mel against a pure tone
// and against an independent numpy implementation of librosa's definitions.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  decodeWav,
  encodeWav,
  integratedLoudness,
  MelExtractor,
  MelStats,
  normaliseLoudness,
  processClip,
  resample,
  trimSilence,
  hzToMel,
} from '../../src/core/data/audio/index.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { pcm16Wav, tone } from '../helpers/wav.js';

const dir = mkdtempSync(join(tmpdir(), 'xtts-audio-'));
const audio = loadConfig(presetPath('quickstart')).loaded!.config.audio;

function sine(freq: number, seconds: number, rate: number, amp = 0.5): Float32Array {
  return tone(seconds, rate, freq, amp);
}

function energyAt(x: Float32Array, rate: number, freq: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < x.length; i++) {
    re += x[i] * Math.cos((2 * Math.PI * freq * i) / rate);
    im += x[i] * Math.sin((2 * Math.PI * freq * i) / rate);
  }
  return Math.sqrt(re * re + im * im) / x.length;
}

describe('WAV decoding', () => {
  const src = join(dir, 'src.wav');
  writeFileSync(src, pcm16Wav(sine(440, 0.25, 22050), 22050));
  const reference = decodeWav(readFileSync(src)).samples;
  const variants: [string, string[], number][] = [
    ['8-bit unsigned', ['-b', '8', '-e', 'unsigned-integer'], 1 / 64],
    ['16-bit', ['-b', '16'], 1e-4],
    ['24-bit', ['-b', '24'], 1e-4],
    ['32-bit int', ['-b', '32', '-e', 'signed-integer'], 1e-4],
    ['float32', ['-b', '32', '-e', 'floating-point'], 1e-4],
    ['float64', ['-b', '64', '-e', 'floating-point'], 1e-4],
    ['stereo (downmixed)', ['-c', '2'], 1e-4],
    ['extensible header, 6 channels', ['-c', '6', '-b', '24'], 1e-4],
  ];
  for (const [name, args, tol] of variants) {
    test(name, () => {
      const out = join(dir, `${name.replace(/\W+/g, '_')}.wav`);
      execFileSync('sox', [src, ...args, out]);
      const w = decodeWav(readFileSync(out), out);
      assert.equal(w.sampleRateHz, 22050);
      assert.equal(w.samples.length, reference.length);
      let maxErr = 0;
      for (let i = 0; i < reference.length; i++) maxErr = Math.max(maxErr, Math.abs(w.samples[i] - reference[i]));
      assert.ok(maxErr <= tol, `${name}: max error ${maxErr}`);
    });
  }

  test('odd-sized and unknown chunks before data are skipped', () => {
    const base = Buffer.from(encodeWav(sine(440, 0.01, 8000), 8000));
    // odd size + pad byte
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc'), Buffer.from([0])]);
    const bytes = Buffer.concat([base.subarray(0, 36), list, base.subarray(36)]);
    bytes.writeUInt32LE(bytes.length - 8, 4);
    const w = decodeWav(bytes);
    assert.equal(w.samples.length, 80);
  });

  const bad: [string, () => Buffer, string][] = [
    ['truncated header', () => Buffer.from('RIFF'), 'AUDIO_UNREADABLE'],
    ['not RIFF', () => Buffer.from('fLaC\0\0\0\0\0\0\0\0\0\0'), 'AUDIO_UNSUPPORTED_FORMAT'],
    [
      'mu-law',
      () => {
        const out = join(dir, 'ulaw.wav');
        execFileSync('sox', [src, '-e', 'u-law', out]);
        return readFileSync(out);
      },
      'AUDIO_UNSUPPORTED_FORMAT',
    ],
    ['no data chunk', () => Buffer.from(encodeWav(sine(440, 0.01, 8000), 8000)).subarray(0, 36), 'AUDIO_UNREADABLE'],
    [
      'zero channels',
      () => {
        const b = Buffer.from(encodeWav(sine(440, 0.01, 8000), 8000));
        b.writeUInt16LE(0, 22);
        return b;
      },
      'AUDIO_UNREADABLE',
    ],
  ];
  for (const [name, make, code] of bad) {
    test(`bad file: ${name} -> ${code}`, () => {
      assert.throws(
        () => decodeWav(make(), 'x.wav'),
        (e: Error & { code?: string }) => e.code === code && e.message.startsWith('x.wav'),
      );
    });
  }
});

describe('resampling, trimming, loudness', () => {
  test('44.1 kHz -> 22.05 kHz keeps a 1 kHz tone and removes a 15 kHz one by > 40 dB', () => {
    const keep = resample(sine(1000, 0.5, 44100), 44100, 22050);
    assert.equal(keep.length, 11025);
    const kept = energyAt(keep.subarray(1000, 10000), 22050, 1000);
    assert.ok(Math.abs(kept - 0.25) < 0.01, `1 kHz amplitude ${kept * 2}`);
    const alias = resample(sine(15000, 0.5, 44100), 44100, 22050);
    let rms = 0;
    for (let i = 1000; i < 10000; i++) rms += alias[i] * alias[i];
    rms = Math.sqrt(rms / 9000);
    assert.ok(20 * Math.log10(rms / (0.5 / Math.SQRT2)) < -40, `15 kHz leaked at ${20 * Math.log10(rms / 0.354)} dB`);
  });

  test('16 kHz -> 22.05 kHz (non-integer ratio) keeps a tone', () => {
    const up = resample(sine(500, 0.5, 16000), 16000, 22050);
    assert.equal(up.length, 11025);
    assert.ok(Math.abs(energyAt(up.subarray(1000, 10000), 22050, 500) - 0.25) < 0.01);
  });

  test('trim cuts leading and trailing silence and keeps the tone', () => {
    const rate = 22050;
    const x = new Float32Array(rate * 2);
    x.set(sine(300, 1, rate), rate / 2);
    const { start, end } = trimSilence(x, 40);
    assert.ok(Math.abs(start - rate / 2) <= 1536, `start ${start}`);
    assert.ok(Math.abs(end - rate * 1.5) <= 1536, `end ${end}`);
  });

  test('loudness normalisation reaches the target within 0.5 LU', () => {
    const x = sine(1000, 3, 48000, 0.1);
    // BS.1770: a 0 dBFS 1 kHz sine reads -3.01 LUFS; at 0.1 amplitude, -23.01.
    assert.ok(Math.abs(integratedLoudness(x, 48000) + 23.01) < 0.1, `${integratedLoudness(x, 48000)}`);
    const y = normaliseLoudness(sine(440, 3, 22050, 0.3), 22050, -23);
    assert.ok(Math.abs(integratedLoudness(y, 22050) + 23) < 0.5);
  });
});

describe('log-mel', () => {
  test('a pure tone peaks at the mel band that contains it', () => {
    const m = new MelExtractor(audio);
    for (const f of [300, 1000, 2500, 6000]) {
      const { frames, nMels, mel } = m.compute(sine(f, 0.5, 22050));
      const mid = Math.floor(frames / 2);
      let best = 0;
      for (let k = 1; k < nMels; k++) if (mel[mid * nMels + k] > mel[mid * nMels + best]) best = k;
      // Band k is centred at the (k+1)-th of n_mels+2 points evenly spaced in mel between fmin and fmax.
      const expected =
        Math.round(
          ((hzToMel(f, false) - hzToMel(audio.fmin_hz, false)) /
            (hzToMel(audio.fmax_hz, false) - hzToMel(audio.fmin_hz, false))) *
            (nMels + 1),
        ) - 1;
      assert.ok(Math.abs(best - expected) <= 1, `${f} Hz peaked at ${best}, expected ${expected}`);
    }
  });

  test('frames = 1 + floor(samples / hop); real lengths kept', () => {
    const m = new MelExtractor(audio);
    assert.equal(m.compute(new Float32Array(22050)).frames, 1 + Math.floor(22050 / 256));
    assert.equal(m.compute(new Float32Array(1000)).frames, 4);
  });

  const numpy = spawnSync('/usr/bin/python3', ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0;
  test('matches an independent numpy implementation within 1e-3 (log domain)', {
    skip: numpy ? false : 'python3-numpy is not installed (apt-get install python3-numpy)',
  }, () => {
    const speech = readFileSync(fileURLToPath(new URL('../../configs/quickstart/wavs/QS-001.wav', import.meta.url)));
    const x = decodeWav(speech).samples;
    const script = fileURLToPath(new URL('../fixtures/mel_reference.py', import.meta.url));
    const r = spawnSync('/usr/bin/python3', [script, JSON.stringify(audio)], {
      input: Buffer.from(x.buffer, x.byteOffset, x.byteLength),
      maxBuffer: 1 << 26,
    });
    assert.equal(r.status, 0, r.stderr?.toString());
    const ref = new Float32Array(new Uint8Array(r.stdout).buffer);
    const ours = new MelExtractor(audio).compute(x);
    assert.equal(ours.mel.length, ref.length);
    let maxErr = 0;
    for (let i = 0; i < ref.length; i++) maxErr = Math.max(maxErr, Math.abs(ours.mel[i] - ref[i]));
    assert.ok(maxErr < 1e-3, `max |log-mel difference| ${maxErr}`);
  });

  test('processClip resamples, trims and featurises an espeak-ng clip', () => {
    const wav = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-w', wav, 'Testing the audio front end.']);
    const c = processClip(readFileSync(wav), { ...audio, sample_rate_hz: 16000, fmax_hz: 8000 }, wav);
    assert.equal(c.originalSampleRateHz, 22050);
    assert.equal(c.frames, 1 + Math.floor(c.samples.length / 256));
    assert.ok(c.durationS > 0.8 && c.durationS < 3, `${c.durationS}`);
  });

  test('stats merged from parts equal stats over the whole', () => {
    const a = Float32Array.from({ length: 30 * 4 }, (_, i) => Math.sin(i) * 3 + 1);
    const b = Float32Array.from({ length: 50 * 4 }, (_, i) => Math.cos(i * 0.7) - 2);
    const whole = new MelStats(4);
    const ab = new Float32Array(a.length + b.length);
    ab.set(a);
    ab.set(b, a.length);
    whole.add(ab, 80);
    const p1 = new MelStats(4);
    p1.add(a, 30);
    const p2 = new MelStats(4);
    p2.add(b, 50);
    p1.merge(p2);
    const w = whole.finalize();
    const m = p1.finalize();
    for (let k = 0; k < 4; k++) {
      assert.ok(Math.abs(w.mean[k] - m.mean[k]) < 1e-5 && Math.abs(w.std[k] - m.std[k]) < 1e-5);
    }
  });
});

test("a clip's sourcePeak is its loudest sample as recorded, before loudness normalisation raises it", () => {
  const quiet = pcm16Wav(tone(1, 22050, 220, 0.001), 22050); // -60 dBFS
  const loud = { ...audio, loudness: { enabled: true, target_lufs: -23 } };
  const normalised = processClip(quiet, loud, 'quiet.wav');
  assert.ok(Math.abs(normalised.sourcePeak - 0.001) < 1e-4, `${normalised.sourcePeak}`);
  assert.ok(Math.max(...normalised.samples.map(Math.abs)) > 0.01, 'the samples were raised');
  assert.equal(processClip(quiet, audio, 'quiet.wav').sourcePeak, normalised.sourcePeak);
});
