// WAV decoding on files written by sox (an encoder that is not ours) in every sample format, channel
// layout and header variant we claim, hand-built chunk layouts, and each kind of bad file with the
// error code that becomes its dataset skip reason.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { decodeWav, encodeWav, MAX_CLIP_SECONDS, processClip } from '../../src/core/data/audio/index.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { featureTask } from '../../src/core/data/feature-worker.js';
import type { XttsError } from '../../src/core/errors.js';

const AUDIO = loadConfig(presetPath('quickstart')).loaded!.config.audio;

const dir = mkdtempSync(join(tmpdir(), 'xtts-audio-wav-'));
const RATE = 22050;

/** A two-tone test signal at 0.6 peak: distinct left/right channels for the downmix checks. */
function signal(n: number, hz: number, phase = 0): Float32Array {
  return Float32Array.from(
    { length: n },
    (_, i) => 0.3 * Math.sin((2 * Math.PI * hz * i) / RATE + phase) + 0.3 * Math.sin((2 * Math.PI * 3 * hz * i) / RATE),
  );
}

/** A 16-bit PCM mono WAV written byte by byte here (not by encodeWav), the source sox converts. */
function pcm16(samples: Float32Array, rateHz: number): Buffer {
  const b = Buffer.alloc(44 + 2 * samples.length);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + 2 * samples.length, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(rateHz, 24);
  b.writeUInt32LE(rateHz * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(2 * samples.length, 40);
  samples.forEach((v, i) => b.writeInt16LE(Math.round(v * 32767), 44 + 2 * i));
  return b;
}

const source = signal(2205, 440);
const sourceWav = join(dir, 'source.wav');
writeFileSync(sourceWav, pcm16(source, RATE));
const exact16 = Float32Array.from(source, (v) => Math.round(v * 32767) / 32768);

function maxError(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

function sox(args: string[], name: string): Buffer {
  const out = join(dir, name);
  execFileSync('sox', ['-D', sourceWav, ...args, out]); // -D: no dither, so conversions are exact where they can be
  return readFileSync(out);
}

describe('decodeWav on sox-written files', () => {
  const variants: [string, string[], Partial<{ bits: number; format: string; channels: number }>, number][] = [
    // 8-bit loses the low byte: error up to one 8-bit step.
    ['8-bit unsigned PCM', ['-b', '8', '-e', 'unsigned-integer'], { bits: 8, format: 'pcm' }, 1 / 128],
    ['16-bit PCM', ['-b', '16', '-e', 'signed-integer'], { bits: 16, format: 'pcm' }, 1e-7],
    ['24-bit PCM', ['-b', '24', '-e', 'signed-integer'], { bits: 24, format: 'pcm' }, 1e-7],
    ['32-bit PCM', ['-b', '32', '-e', 'signed-integer'], { bits: 32, format: 'pcm' }, 1e-7],
    ['32-bit float', ['-b', '32', '-e', 'floating-point'], { bits: 32, format: 'float' }, 1e-7],
    ['64-bit float', ['-b', '64', '-e', 'floating-point'], { bits: 64, format: 'float' }, 1e-7],
    ['stereo (two equal channels average to the same)', ['-c', '2'], { channels: 2 }, 1e-7],
    [
      '6 channels, 24-bit (sox writes WAVE_FORMAT_EXTENSIBLE)',
      ['-c', '6', '-b', '24'],
      { channels: 6, bits: 24 },
      1e-7,
    ],
    ['48 kHz header rate', ['-r', '48000'], {}, Infinity],
  ];
  for (const [name, args, expect, tolerance] of variants) {
    test(name, () => {
      const bytes = sox(args, `${name.replace(/\W+/g, '_')}.wav`);
      const w = decodeWav(bytes, name);
      if (expect.bits) assert.equal(w.bitsPerSample, expect.bits);
      if (expect.format) assert.equal(w.format, expect.format);
      assert.equal(w.channels, expect.channels ?? 1);
      if (tolerance === Infinity) {
        assert.equal(w.sampleRateHz, 48000);
        assert.equal(w.samples.length, Math.ceil((2205 * 48000) / RATE));
        assert.ok(Math.abs(w.durationS - 0.1) < 1e-3);
        return;
      }
      assert.equal(w.sampleRateHz, RATE);
      assert.ok(Math.abs(w.durationS - 0.1) < 1e-9);
      assert.ok(maxError(w.samples, exact16) <= tolerance, `max error ${maxError(w.samples, exact16)}`);
    });
  }

  test('6-channel files really use WAVE_FORMAT_EXTENSIBLE (so the test above covers it)', () => {
    const bytes = sox(['-c', '6', '-b', '24'], 'ext-check.wav');
    assert.equal(bytes.readUInt16LE(20), 0xfffe);
  });

  test('stereo with different channels is downmixed to their mean', () => {
    const left = signal(1000, 300);
    const right = signal(1000, 500, 1);
    const w = decodeWav(encodeWav(left, RATE, { channels: [left, right], bitsPerSample: 32, float: true }));
    assert.equal(w.channels, 2);
    assert.ok(
      maxError(
        w.samples,
        Float32Array.from(left, (v, i) => (v + right[i]) / 2),
      ) < 1e-7,
    );
  });
});

describe('encodeWav', () => {
  const x = signal(999, 220); // odd length: 8-bit data needs a pad byte
  const formats: [string, Parameters<typeof encodeWav>[2], number][] = [
    ['8-bit', { bitsPerSample: 8 }, 1 / 127],
    ['16-bit', {}, 1 / 32767],
    ['24-bit', { bitsPerSample: 24 }, 1e-6],
    ['32-bit', { bitsPerSample: 32 }, 1e-7],
    ['float32', { float: true }, 0],
    ['float64', { float: true, bitsPerSample: 64 }, 0],
    ['24-bit extensible, 3 channels', { bitsPerSample: 24, extensible: true, channels: [x, x, x] }, 1e-6],
  ];
  for (const [name, options, tolerance] of formats) {
    test(`${name}: sox reads what we write, and so do we`, () => {
      const path = join(dir, `enc-${name.replace(/\W+/g, '_')}.wav`);
      writeFileSync(path, encodeWav(x, RATE, options));
      const info = execFileSync('soxi', [path], { encoding: 'utf8' });
      assert.match(info, /Sample Rate\s*:\s*22050/);
      assert.match(info, new RegExp(`Channels\\s*:\\s*${options?.channels?.length ?? 1}`));
      const w = decodeWav(readFileSync(path), path);
      assert.ok(maxError(w.samples, x) <= tolerance + 1e-9, `max error ${maxError(w.samples, x)}`);
      // sox's own decoding of our file, back to float through a 32-bit float WAV.
      const viaSox = join(dir, `enc-${name.replace(/\W+/g, '_')}-sox.wav`);
      execFileSync('sox', ['-D', path, '-e', 'floating-point', '-b', '32', '-c', '1', viaSox]);
      const s = decodeWav(readFileSync(viaSox), viaSox);
      assert.ok(
        maxError(s.samples, w.samples) < 2e-6 + (name.includes('3 channels') ? 1e-6 : 0),
        `sox disagrees by ${maxError(s.samples, w.samples)}`,
      );
    });
  }
});

describe('chunk layouts', () => {
  const base = pcm16(signal(81, 440), 8000); // 162 data bytes
  const withChunks = (...chunks: Buffer[]) => {
    const b = Buffer.concat([base.subarray(0, 36), ...chunks, base.subarray(36)]);
    b.writeUInt32LE(b.length - 8, 4);
    return b;
  };
  const chunk = (id: string, body: Buffer) =>
    Buffer.concat([
      Buffer.from(id),
      Buffer.from(Uint32Array.of(body.length).buffer),
      body,
      body.length & 1 ? Buffer.from([0]) : Buffer.alloc(0),
    ]);

  test('an odd-sized chunk (with its pad byte) and a LIST/INFO chunk before the data are skipped', () => {
    const list = chunk('LIST', Buffer.concat([Buffer.from('INFO'), chunk('INAM', Buffer.from('odd\0'))]));
    const w = decodeWav(
      withChunks(chunk('junk', Buffer.from('abc')), list, chunk('fact', Buffer.from(Uint32Array.of(81).buffer))),
    );
    assert.equal(w.samples.length, 81);
    assert.ok(maxError(w.samples, decodeWav(base).samples) === 0);
  });

  test('chunks after the data, and an odd-length 8-bit data chunk with its pad byte', () => {
    const odd = encodeWav(signal(81, 440), 8000, { bitsPerSample: 8 });
    assert.equal(odd.length % 2, 0);
    const after = Buffer.concat([Buffer.from(odd), chunk('LIST', Buffer.from('INFOxxxx'))]);
    assert.equal(decodeWav(after).samples.length, 81);
  });

  test('a data length left unknown by a streaming writer (0xFFFFFFFF) reads to the end of the file', () => {
    const b = Buffer.from(base);
    b.writeUInt32LE(0xffffffff, 40);
    assert.equal(decodeWav(b).samples.length, 81);
  });
});

describe('bad files', () => {
  const tone16 = () => Buffer.from(pcm16(signal(400, 440), 8000));
  const withFormatTag = (tag: number) => {
    const b = tone16();
    b.writeUInt16LE(tag, 20);
    return b;
  };
  const cases: [string, () => Buffer, string][] = [
    ['empty file', () => Buffer.alloc(0), 'AUDIO_UNREADABLE'],
    ['truncated inside the RIFF header', () => Buffer.from('RIFF\x10\0\0\0WA'), 'AUDIO_UNREADABLE'],
    ['truncated inside the data', () => tone16().subarray(0, 300), 'AUDIO_TRUNCATED'],
    ['truncated inside the fmt chunk', () => tone16().subarray(0, 28), 'AUDIO_TRUNCATED'],
    ['not RIFF (text)', () => Buffer.from('id|text|normalized text\n'), 'AUDIO_UNSUPPORTED_FORMAT'],
    ['a FLAC file', () => Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(40)]), 'AUDIO_UNSUPPORTED_FORMAT'],
    [
      'an MP3 file',
      () => Buffer.concat([Buffer.from('ID3\x04\0\0\0\0\0\0'), Buffer.alloc(40)]),
      'AUDIO_UNSUPPORTED_FORMAT',
    ],
    [
      'RIFF but not WAVE (AVI)',
      () => Buffer.concat([Buffer.from('RIFF\x20\0\0\0AVI LIST'), Buffer.alloc(24)]),
      'AUDIO_UNSUPPORTED_FORMAT',
    ],
    ['mu-law (sox)', () => sox(['-e', 'u-law'], 'ulaw.wav'), 'AUDIO_UNSUPPORTED_FORMAT'],
    ['A-law (sox)', () => sox(['-e', 'a-law'], 'alaw.wav'), 'AUDIO_UNSUPPORTED_FORMAT'],
    ['MS ADPCM (sox)', () => sox(['-e', 'ms-adpcm'], 'msadpcm.wav'), 'AUDIO_UNSUPPORTED_FORMAT'],
    ['IMA ADPCM (sox)', () => sox(['-e', 'ima-adpcm'], 'imaadpcm.wav'), 'AUDIO_UNSUPPORTED_FORMAT'],
    ['MP3 in WAV (format tag 0x55)', () => withFormatTag(0x55), 'AUDIO_UNSUPPORTED_FORMAT'],
    [
      'a block align too small for the samples',
      () => {
        const b = tone16();
        b.writeUInt16LE(1, 32); // 1 byte per frame cannot hold a 16-bit sample
        return b;
      },
      'AUDIO_UNREADABLE',
    ],
    [
      '48-bit PCM',
      () => {
        const b = tone16();
        b.writeUInt16LE(48, 34);
        b.writeUInt16LE(6, 32);
        return b;
      },
      'AUDIO_UNSUPPORTED_FORMAT',
    ],
    [
      '16-bit float',
      () => {
        const b = withFormatTag(3);
        return b;
      },
      'AUDIO_UNSUPPORTED_FORMAT',
    ],
    [
      'zero channels',
      () => {
        const b = tone16();
        b.writeUInt16LE(0, 22);
        return b;
      },
      'AUDIO_UNREADABLE',
    ],
    [
      'zero sample rate',
      () => {
        const b = tone16();
        b.writeUInt32LE(0, 24);
        return b;
      },
      'AUDIO_UNREADABLE',
    ],
    ['no data chunk', () => tone16().subarray(0, 36), 'AUDIO_UNREADABLE'],
    [
      'no fmt chunk',
      () => {
        const b = tone16();
        b.write('junk', 12); // the fmt chunk becomes an unknown one
        return b;
      },
      'AUDIO_UNREADABLE',
    ],
  ];
  for (const [name, make, code] of cases) {
    test(`${name} -> ${code}, with the file and a fix in the message`, () => {
      assert.throws(
        () => decodeWav(make(), 'wavs/LJ001-0001.wav'),
        (e: Error & { code?: string; suggestions?: string[] }) => {
          assert.equal(e.name, 'XttsError');
          assert.equal(e.code, code, e.message);
          assert.ok(e.message.startsWith('wavs/LJ001-0001.wav: '), e.message);
          assert.match(e.message, /sox|ffmpeg|copy or export/);
          assert.ok((e.suggestions ?? []).length > 0);
          return true;
        },
      );
    });
  }
  test('12-bit PCM in 16-bit containers (left-justified) decodes', () => {
    const b = tone16();
    b.writeUInt16LE(12, 34);
    for (let p = 44; p < b.length; p += 2) b.writeInt16LE(b.readInt16LE(p) & ~0xf, p);
    const w = decodeWav(b);
    assert.equal(w.bitsPerSample, 12);
    assert.ok(maxError(w.samples, decodeWav(tone16()).samples) <= 16 / 32768);
  });

  test('the codec is named (mu-law, MP3)', () => {
    assert.throws(() => decodeWav(sox(['-e', 'u-law'], 'ulaw2.wav'), 'a.wav'), /mu-law/);
    assert.throws(() => decodeWav(withFormatTag(0x55), 'a.wav'), /MP3/);
  });
});

describe('headers that would make one clip cost without bound are refused before decoding', () => {
  const tone = signal(RATE, 220);
  test('a declared rate of 1 Hz or 4 GHz is an unsupported format, named with the rate', () => {
    for (const rate of [1, 999, 4_000_000_000]) {
      const b = pcm16(tone, RATE);
      b.writeUInt32LE(rate, 24);
      assert.throws(
        () => decodeWav(b, 'r.wav'),
        (e: XttsError) =>
          e.code === 'AUDIO_UNSUPPORTED_FORMAT' &&
          e.message.includes(`${rate.toLocaleString('en-US')} Hz`) &&
          e.message.startsWith('r.wav'),
      );
    }
  });
  test('65,535 channels is an unsupported format, not "silent"', () => {
    const b = pcm16(tone, RATE);
    b.writeUInt16LE(65535, 22);
    assert.throws(
      () => decodeWav(b, 'c.wav'),
      (e: XttsError) => e.code === 'AUDIO_UNSUPPORTED_FORMAT' && /65,535 channels/.test(e.message),
    );
  });
  test(
    'a clip longer than MAX_CLIP_SECONDS is AUDIO_TOO_LONG from its header (and its ' +
      'skip reason is audio_too_long)',
    async () => {
      // 8,000 Hz declared over 11 MB of samples: 700 s.
      const b = pcm16(new Float32Array(8000 * 700), 8000);
      assert.throws(
        () => processClip(b, AUDIO, 'long.wav'),
        (e: XttsError) =>
          e.code === 'AUDIO_TOO_LONG' && /700\.0 s/.test(e.message) && e.message.includes(`${MAX_CLIP_SECONDS} s`),
      );
      const path = join(dir, 'long.wav');
      writeFileSync(path, b);
      const r = await featureTask({ audioPath: path, audio: AUDIO });
      assert.equal(r.ok, false);
      assert.equal(!r.ok && r.reason, 'audio_too_long');
    },
  );
  test('a NaN sample is named with its position, not "too short"', () => {
    const s = signal(RATE, 220);
    s[11025] = Number.NaN;
    const b = Buffer.from(encodeWav(s, RATE, { float: true }));
    assert.throws(
      () => processClip(b, AUDIO, 'nan.wav'),
      (e: XttsError) => e.code === 'AUDIO_NOT_FINITE' && /sample 11,025 \(at 0\.500 s\) is NaN/.test(e.message),
    );
  });
});
