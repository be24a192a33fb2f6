// Log-mel features against references that share no code with them: a direct DFT and a filterbank
// from the formula written here, and (when python3 has numpy) librosa's definitions in numpy. Both
// engines (wasm SIMD, JS) are checked, on pure tones and on espeak-ng speech.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { AudioConfig } from '../../src/core/config/schema.js';
import type { XttsError } from '../../src/core/errors.js';
import {
  decodeWav,
  encodeWav,
  MelExtractor,
  processClip,
  type MelEngine,
  type MelSettings,
} from '../../src/core/data/audio/index.js';
import { KERNELS_SOURCES_SHA256 } from '../../src/core/data/audio/wasm/kernels.wasm.js';
import { MEL_SETTINGS } from '../helpers/mel-settings.js';

const AUDIO: AudioConfig = {
  ...MEL_SETTINGS,
  trim: { enabled: true, top_db: 40 },
  loudness: { enabled: false, target_lufs: -23 },
};
const ENGINES: MelEngine[] = ['wasm', 'js'];
const dir = mkdtempSync(join(tmpdir(), 'xtts-audio-mel-'));

function tone(hz: number, seconds: number, rateHz: number, amplitude = 0.5): Float32Array {
  return Float32Array.from(
    { length: Math.round(seconds * rateHz) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rateHz),
  );
}

/** A WAV file of espeak-ng speaking `text` (22,050 Hz, 16-bit mono). */
function speechFile(text: string): string {
  const wav = join(dir, `${createHash('sha1').update(text).digest('hex').slice(0, 8)}.wav`);
  execFileSync('espeak-ng', ['-w', wav, text]);
  return wav;
}

function speech(text: string): Float32Array {
  const wav = speechFile(text);
  return decodeWav(readFileSync(wav), wav).samples;
}

// ---- the naive reference: formulas straight from librosa's documentation, no FFT, no sparsity ----
function naiveLogMel(x: Float32Array, s: MelSettings, maxFrames = Infinity): { frames: number; mel: Float64Array } {
  const htk = s.mel_scale === 'htk';
  const toMel = (hz: number) =>
    htk
      ? 2595 * Math.log10(1 + hz / 700)
      : hz < 1000
        ? (3 * hz) / 200
        : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4);
  const toHz = (mel: number) =>
    htk
      ? 700 * (10 ** (mel / 2595) - 1)
      : mel < 15
        ? (200 * mel) / 3
        : 1000 * Math.exp(((mel - 15) * Math.log(6.4)) / 27);
  const bins = s.n_fft / 2 + 1;
  const edges = Array.from({ length: s.n_mels + 2 }, (_, i) =>
    toHz(toMel(s.fmin_hz) + (i * (toMel(s.fmax_hz) - toMel(s.fmin_hz))) / (s.n_mels + 1)),
  );
  const fb = Array.from({ length: s.n_mels }, (_, m) =>
    Array.from({ length: bins }, (_, k) => {
      const hz = (k * s.sample_rate_hz) / s.n_fft;
      const tri = Math.max(
        0,
        Math.min((hz - edges[m]) / (edges[m + 1] - edges[m]), (edges[m + 2] - hz) / (edges[m + 2] - edges[m + 1])),
      );
      return s.mel_norm === 'slaney' ? (tri * 2) / (edges[m + 2] - edges[m]) : tri;
    }),
  );
  const win = new Float64Array(s.n_fft);
  const off = Math.floor((s.n_fft - s.win_length) / 2);
  for (let i = 0; i < s.win_length; i++)
    win[off + i] =
      (s.window === 'hann' ? 0.5 : 0.54) -
      (s.window === 'hann' ? 0.5 : 0.46) * Math.cos((2 * Math.PI * i) / s.win_length);
  const pad = s.n_fft / 2;
  const at = (i: number) => x[i < 0 ? -i : i >= x.length ? 2 * (x.length - 1) - i : i]; // one reflection suffices here
  const frames = Math.min(1 + Math.floor(x.length / s.hop_length), maxFrames);
  const mel = new Float64Array(frames * s.n_mels);
  for (let t = 0; t < frames; t++) {
    const mag = new Float64Array(bins);
    for (let k = 0; k < bins; k++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < s.n_fft; n++) {
        const v = at(t * s.hop_length - pad + n) * win[n];
        re += v * Math.cos((2 * Math.PI * k * n) / s.n_fft);
        im -= v * Math.sin((2 * Math.PI * k * n) / s.n_fft);
      }
      mag[k] = Math.hypot(re, im);
    }
    for (let m = 0; m < s.n_mels; m++) {
      let acc = 0;
      for (let k = 0; k < bins; k++) acc += fb[m][k] * mag[k];
      const v = Math.max(acc, s.log_floor);
      mel[t * s.n_mels + m] = s.log_base === '10' ? Math.log10(v) : Math.log(v);
    }
  }
  return { frames, mel };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, n = Math.min(a.length, b.length)): number {
  let worst = 0;
  for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe('log-mel', () => {
  test(
    'the committed wasm module was built from the committed logmel.c and resample.c ' +
      '(else rerun src/core/data/audio/wasm/build.sh)',
    () => {
      const hash = createHash('sha256');
      for (const file of ['logmel.c', 'resample.c'])
        hash.update(readFileSync(fileURLToPath(new URL(`../../src/core/data/audio/wasm/${file}`, import.meta.url))));
      assert.equal(KERNELS_SOURCES_SHA256, hash.digest('hex'));
    },
  );

  for (const engine of ENGINES) {
    test(`${engine}: a pure tone peaks in the mel band whose centre is nearest to it`, () => {
      const m = new MelExtractor(MEL_SETTINGS, { engine });
      assert.equal(m.engine, engine);
      for (const hz of [150, 300, 1000, 2500, 6000, 7500]) {
        const { frames, nMels, mel } = m.compute(tone(hz, 0.5, 22050));
        const row = mel.subarray(Math.floor(frames / 2) * nMels, Math.floor(frames / 2 + 1) * nMels);
        const best = row.indexOf(Math.max(...row));
        // Band b is centred at edge b + 1 of n_mels + 2 points evenly spaced in (Slaney) mel.
        const slaney = (f: number) => (f < 1000 ? (3 * f) / 200 : 15 + (27 * Math.log(f / 1000)) / Math.log(6.4));
        const expected = (slaney(hz) / slaney(8000)) * (nMels + 1) - 1;
        assert.ok(
          Math.abs(best - expected) <= 1,
          `${hz} Hz peaked in band ${best}, its centre is nearest band ${expected.toFixed(2)}`,
        );
      }
    });

    test(
      `${engine}: frames = 1 + floor(samples / hop) with real lengths, including clips ` + `shorter than n_fft / 2`,
      () => {
        const m = new MelExtractor(MEL_SETTINGS, { engine });
        for (const n of [0, 1, 2, 100, 511, 512, 513, 1000, 22050]) {
          const r = m.compute(tone(440, n / 22050, 22050));
          assert.equal(r.frames, 1 + Math.floor(n / 256), `n = ${n}`);
          assert.equal(r.mel.length, r.frames * 80);
          assert.ok(r.mel.every(Number.isFinite), `n = ${n}: non-finite values`);
        }
        const silent = m.compute(new Float32Array(0));
        assert.ok(
          silent.mel.every((v) => Math.abs(v - Math.log(1e-5)) < 1e-4),
          'an empty clip is one frame at the floor',
        );
      },
    );

    const variants: [string, Partial<MelSettings>][] = [
      ['defaults', {}],
      ['htk scale, no norm, log10', { mel_scale: 'htk', mel_norm: 'none', log_base: '10' }],
      [
        'hamming, win_length 800 < n_fft, hop 200, fmin 60',
        { window: 'hamming', win_length: 800, hop_length: 200, fmin_hz: 60 },
      ],
      [
        '16 kHz, n_fft 512, 40 mels up to Nyquist',
        { sample_rate_hz: 16000, n_fft: 512, win_length: 400, hop_length: 160, n_mels: 40, fmax_hz: 8000 },
      ],
    ];
    for (const [name, change] of variants) {
      test(`${engine}: matches a direct-DFT reference (${name})`, () => {
        const s = { ...MEL_SETTINGS, ...change };
        const x = speech('Seven slender swans.').subarray(4000, 4000 + 6 * s.hop_length);
        const ours = new MelExtractor(s, { engine }).compute(x);
        const ref = naiveLogMel(x, s);
        assert.equal(ours.frames, ref.frames);
        // Seen: js ~5e-7 (the float32 output's rounding), wasm ~1e-5 (single-precision FFT).
        const err = maxAbsDiff(ours.mel, ref.mel);
        assert.ok(err < (engine === 'js' ? 3e-6 : 1e-4), `max |difference| ${err}`);
      });
    }
  }

  test('the two engines agree on a minute of speech-like audio', () => {
    const x = new Float32Array(22050 * 20);
    const words = speech('The quick brown fox jumps over the lazy dog, and the five boxing wizards jump quickly.');
    for (let o = 0; o < x.length; o += words.length) x.set(words.subarray(0, Math.min(words.length, x.length - o)), o);
    const a = new MelExtractor(MEL_SETTINGS, { engine: 'wasm' }).compute(x);
    const b = new MelExtractor(MEL_SETTINGS, { engine: 'js' }).compute(x);
    let sum = 0;
    for (let i = 0; i < a.mel.length; i++) sum += Math.abs(a.mel[i] - b.mel[i]);
    assert.ok(maxAbsDiff(a.mel, b.mel) < 2e-3, `max ${maxAbsDiff(a.mel, b.mel)}`);
    assert.ok(sum / a.mel.length < 2e-5, `mean ${sum / a.mel.length}`);
  });

  // numpy (Debian: python3-numpy) implementing librosa 0.10's definitions; librosa itself is not packaged for Debian
  // 12.
  const NUMPY_REFERENCE = `
import json, sys
import numpy as np
s = json.loads(sys.argv[1])
x = np.frombuffer(sys.stdin.buffer.read(), dtype=np.float32).astype(np.float64)
htk = s['mel_scale'] == 'htk'
def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    if htk: return 2595.0 * np.log10(1.0 + f / 700.0)
    lin = f / (200.0 / 3)
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), lin)
def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    if htk: return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    return np.where(m >= 15.0, 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0)), (200.0 / 3) * m)
sr, n_fft, hop, win, n_mels = s['sample_rate_hz'], s['n_fft'], s['hop_length'], s['win_length'], s['n_mels']
fftfreqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
mel_f = mel_to_hz(np.linspace(hz_to_mel(s['fmin_hz']), hz_to_mel(s['fmax_hz']), n_mels + 2))
fdiff = np.diff(mel_f)
ramps = np.subtract.outer(mel_f, fftfreqs)
weights = np.maximum(0, np.minimum(-ramps[:-2] / fdiff[:-1, None], ramps[2:] / fdiff[1:, None]))
if s['mel_norm'] == 'slaney': weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
n = np.arange(win)
w = 0.5 - 0.5 * np.cos(2 * np.pi * n / win) if s['window'] == 'hann' else 0.54 - 0.46 * np.cos(2 * np.pi * n / win)
lpad = (n_fft - win) // 2
w = np.pad(w, (lpad, n_fft - win - lpad))
y = np.pad(x, n_fft // 2, mode='reflect')
frames = 1 + len(x) // hop
idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
mag = np.abs(np.fft.rfft(y[idx] * w, axis=1))
mel = np.maximum(mag @ weights.T, s['log_floor'])
out = np.log10(mel) if s['log_base'] == '10' else np.log(mel)
sys.stdout.buffer.write(out.astype(np.float32).tobytes())
`;
  const python = '/usr/bin/python3';
  const hasNumpy = spawnSync(python, ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0;
  const skip = hasNumpy
    ? false
    : 'python3 has no numpy: `apt-get install python3-numpy` to compare with the numpy reference';
  for (const [name, change] of [
    ['defaults', {}],
    [
      'htk, no norm, log10, hamming, win 800',
      { mel_scale: 'htk', mel_norm: 'none', log_base: '10', window: 'hamming', win_length: 800 },
    ],
  ] as [string, Partial<MelSettings>][]) {
    test(`matches librosa's definitions in numpy on 10 s of espeak-ng speech (${name})`, { skip }, () => {
      const s = { ...MEL_SETTINGS, ...change };
      const words = speech('A numpy reference: every frame, every band, in double precision.');
      const x = new Float32Array(22050 * 10);
      for (let o = 0; o < x.length; o += words.length)
        x.set(words.subarray(0, Math.min(words.length, x.length - o)), o);
      const r = spawnSync(python, ['-c', NUMPY_REFERENCE, JSON.stringify(s)], {
        input: Buffer.from(x.buffer),
        maxBuffer: 1 << 28,
      });
      assert.equal(r.status, 0, r.stderr?.toString());
      const ref = new Float32Array(new Uint8Array(r.stdout).slice().buffer);
      for (const engine of ENGINES) {
        const ours = new MelExtractor(s, { engine }).compute(x);
        assert.equal(ours.mel.length, ref.length);
        const err = maxAbsDiff(ours.mel, ref);
        // Seen: js ~1e-6 (float32 rounding of both outputs), wasm ~2e-4 (single precision in quiet frames).
        assert.ok(err < (engine === 'js' ? 5e-6 : 1e-3), `${engine}: max |log-mel difference| ${err}`);
      }
    });
  }
});

describe('processClip', () => {
  test('a 44.1 kHz stereo WAV of espeak-ng speech: decoded, downmixed, resampled, trimmed, featurised', () => {
    const spoken = speechFile('Testing the audio front end.');
    const words = decodeWav(readFileSync(spoken)).samples;
    const rate = 44100;
    const resampledBySox = join(dir, 'speech44.wav');
    // sox (an independent resampler) brings espeak's 22,050 Hz to 44.1 kHz, with 0.5 s of silence each side.
    execFileSync('sox', [spoken, '-r', String(rate), '-c', '2', resampledBySox, 'pad', '0.5', '0.5']);
    const bytes = readFileSync(resampledBySox);
    const clip = processClip(bytes, AUDIO, resampledBySox);
    assert.equal(clip.originalSampleRateHz, rate);
    assert.equal(clip.channels, 2);
    assert.equal(clip.nMels, 80);
    assert.equal(clip.melFrames, 1 + Math.floor(clip.samples.length / 256));
    assert.equal(clip.frames, clip.melFrames);
    assert.equal(clip.mel.length, clip.melFrames * 80);
    // Trimmed: shorter than espeak's own output (which has its own leading/trailing quiet) plus the padding.
    assert.ok(clip.durationS < words.length / 22050 + 1 - 0.8, `${clip.durationS} s after trimming`);
    assert.ok(clip.durationS > 0.8, `${clip.durationS} s after trimming`);
  });

  test('loudness normalisation inside processClip reaches the target', async () => {
    const { integratedLoudness } = await import('../../src/core/data/audio/index.js');
    const bytes = encodeWav(tone(440, 2, 16000, 0.05), 16000);
    const clip = processClip(bytes, { ...AUDIO, loudness: { enabled: true, target_lufs: -20 } }, 'tone.wav');
    assert.ok(Math.abs(integratedLoudness(clip.samples, 22050) + 20) < 0.5);
  });

  test('digital silence is AUDIO_SILENT, naming the file', () => {
    assert.throws(
      () => processClip(encodeWav(new Float32Array(22050), 22050), AUDIO, 'quiet.wav'),
      (e: Error & { code?: string }) => e.code === 'AUDIO_SILENT' && e.message.startsWith('quiet.wav:'),
    );
    // Two loud channels, one the other inverted, average to silence: said, with the channel to take.
    const left = tone(440, 0.5, 22050, 0.5);
    const cancelling = encodeWav(left, 22050, { channels: [left, left.map((x) => -x)] });
    assert.throws(
      () => processClip(cancelling, AUDIO, 'stereo.wav'),
      (e: XttsError) =>
        e.code === 'AUDIO_SILENT' &&
        e.message.startsWith('stereo.wav: the audio is silent once its 2 channels are averaged to mono') &&
        e.suggestions.some((s) => s.includes('sox IN OUT.wav remix 1')),
    );
  });

  test('settings the extractor cannot honour are AUDIO_BAD_SETTINGS', () => {
    for (const change of [{ n_fft: 1000 }, { fmax_hz: 12000 }, { win_length: 2048 }] as Partial<AudioConfig>[]) {
      assert.throws(
        () => processClip(encodeWav(tone(440, 0.2, 22050), 22050), { ...AUDIO, ...change }, 'x.wav'),
        (e: Error & { code?: string }) => e.code === 'AUDIO_BAD_SETTINGS',
      );
    }
  });
});
