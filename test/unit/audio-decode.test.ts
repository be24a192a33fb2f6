// FLAC, MP3, Ogg Vorbis and Ogg Opus files written by sox and opusenc (encoders that are not ours)
// decode to the speech they were made from: the same length and rate, and a waveform that matches
// the WAV's (lossless FLAC to the bit, the lossy codecs by the correlation of their envelopes). Their
// headers are bounded like a WAV's before decoding, and a file of another kind is named.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { decodeAudio, decodeWav, processAudioFile, sniffAudio } from '../../src/core/data/audio/index.js';
import type { XttsError } from '../../src/core/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'xtts-decode-'));
const wav = join(dir, 'speech.wav');
execFileSync('espeak-ng', ['-v', 'en-us', '-w', wav, 'The quick brown fox jumps over the lazy dog.']);
const reference = decodeWav(readFileSync(wav), wav);
const AUDIO = loadConfig(presetPath('quickstart')).loaded!.config.audio;

/** Short-time RMS envelope (10 ms hops) at `rate`. */
function envelope(x: Float32Array, rate: number): number[] {
  const hop = Math.round(rate / 100);
  const out: number[] = [];
  for (let i = 0; i + hop <= x.length; i += hop) {
    let e = 0;
    for (let k = i; k < i + hop; k++) e += x[k] * x[k];
    out.push(Math.sqrt(e / hop));
  }
  return out;
}

/** The best Pearson correlation of two envelopes over lags of up to ±`maxLag` hops (codec delays). */
function correlation(a: number[], b: number[], maxLag = 10): number {
  let best = -1;
  for (let lag = -maxLag; lag <= maxLag; lag++) {
    const n = Math.min(a.length, b.length) - Math.abs(lag);
    const x = a.slice(Math.max(0, lag), Math.max(0, lag) + n);
    const y = b.slice(Math.max(0, -lag), Math.max(0, -lag) + n);
    const mx = x.reduce((s, v) => s + v, 0) / n;
    const my = y.reduce((s, v) => s + v, 0) / n;
    let sxy = 0;
    let sxx = 0;
    let syy = 0;
    for (let i = 0; i < n; i++) {
      sxy += (x[i] - mx) * (y[i] - my);
      sxx += (x[i] - mx) ** 2;
      syy += (y[i] - my) ** 2;
    }
    best = Math.max(best, sxy / Math.sqrt(sxx * syy));
  }
  return best;
}

describe('compressed audio decodes to the speech it was made from', () => {
  const cases: [string, string[], 'flac' | 'mp3' | 'ogg-vorbis' | 'ogg-opus'][] = [
    ['speech.flac', ['sox', wav, join(dir, 'speech.flac')], 'flac'],
    ['speech.mp3', ['sox', wav, join(dir, 'speech.mp3')], 'mp3'],
    ['speech.ogg', ['sox', wav, join(dir, 'speech.ogg')], 'ogg-vorbis'],
    ['speech.opus', ['opusenc', '--quiet', wav, join(dir, 'speech.opus')], 'ogg-opus'],
  ];
  for (const [name, command, kind] of cases) {
    test(`${name} (${kind}, made by ${command[0]})`, async () => {
      execFileSync(command[0], command.slice(1));
      const bytes = readFileSync(join(dir, name));
      assert.equal(sniffAudio(bytes), kind);
      const d = await decodeAudio(bytes, name);
      const rate = kind === 'ogg-opus' ? 48000 : reference.sampleRateHz; // Opus always decodes at 48 kHz
      assert.equal(d.sampleRateHz, rate);
      assert.ok(
        Math.abs(d.durationS - reference.durationS) < 0.15,
        `${d.durationS} s against ${reference.durationS} s`,
      );
      if (kind === 'flac')
        assert.deepEqual(
          [...d.samples.subarray(0, 5000)].map((v) => Math.round(v * 32768)),
          [...reference.samples.subarray(0, 5000)].map((v) => Math.round(v * 32768)),
        );
      else {
        const r = correlation(envelope(reference.samples, reference.sampleRateHz), envelope(d.samples, rate));
        assert.ok(r > 0.9, `envelope correlation ${r.toFixed(3)}`);
      }
      const clip = await processAudioFile(bytes, AUDIO, name);
      assert.ok(clip.frames > 50 && clip.nMels === AUDIO.n_mels);
    });
  }
});

test(
  'a file of another kind is named; a compressed clip over 600 s is refused from ' + 'its frames, undecoded',
  async () => {
    await assert.rejects(
      decodeAudio(Buffer.from('just some text, not audio'), 'notes.txt'),
      (e: XttsError) =>
        e.code === 'AUDIO_UNSUPPORTED_FORMAT' && /notes\.txt: not WAV, FLAC, MP3 or Ogg/.test(e.message),
    );
    await assert.rejects(
      decodeAudio(Buffer.alloc(0), 'empty.wav'),
      (e: XttsError) => e.message === 'empty.wav: an empty file (0 bytes): export or copy it again',
    );
    const long = join(dir, 'long.mp3');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', long, 'synth', '610', 'sine', '300']);
    await assert.rejects(
      decodeAudio(readFileSync(long), 'long.mp3', { maxSeconds: 600 }),
      (e: XttsError) => e.code === 'AUDIO_TOO_LONG' && /61\d\.\d s of audio/.test(e.message),
    );
    writeFileSync(join(dir, 'cut.flac'), readFileSync(join(dir, 'speech.flac')).subarray(0, 30));
    await assert.rejects(
      decodeAudio(readFileSync(join(dir, 'cut.flac')), 'cut.flac'),
      (e: XttsError) => e.code === 'AUDIO_UNREADABLE',
    );
  },
);
