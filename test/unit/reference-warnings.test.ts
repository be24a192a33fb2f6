// What a user is told of a reference clip that was read: all but silent, too short, longer than what makes the voice,
// recorded narrowband, without voiced speech for a model that reads the pitch. Each is a warning; the voice is still
// made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/index.js';
import { MelExtractor } from '../../src/core/data/audio/index.js';
import type { ProcessedClip } from '../../src/core/data/index.js';
import { clipWarnings } from '../../src/core/training/voices.js';

const config = loadConfig(presetPath('quickstart')).loaded!.config;
const { hop_length: hop, sample_rate_hz: rate } = config.audio;

function clip(seconds: number, o: Partial<ProcessedClip> = {}): ProcessedClip {
  const frames = 1 + Math.floor((seconds * rate) / hop);
  return {
    melFrames: frames,
    frames,
    nMels: config.audio.n_mels,
    mel: new Float32Array(0),
    samples: new Float32Array(0),
    durationS: seconds,
    originalSampleRateHz: 44100,
    channels: 1,
    sourcePeak: 0.5,
    ...o,
  };
}

test('a clip of a few seconds of speech, recorded wideband, warns of nothing', () => {
  assert.deepEqual(clipWarnings('a.wav', clip(6), config), []);
  assert.deepEqual(clipWarnings('a.wav', clip(6, { originalSampleRateHz: 16000 }), config), []);
});

test('quiet, short, long and narrowband clips each say so, with what to do', () => {
  assert.match(clipWarnings('q.wav', clip(6, { sourcePeak: 0.001 }), config).join(), /q\.wav peaks at -60 dBFS/);
  assert.match(clipWarnings('s.wav', clip(0.5), config).join(), /s\.wav holds 0\.50 s of sound .*too little/);
  const readS = (64 * config.batching.reference_frames * hop) / rate;
  const long = clipWarnings('l.wav', clip(readS + 30), config);
  assert.equal(long.length, 1);
  assert.match(long[0], new RegExp(`its first ${readS.toFixed(0)} s make the voice \\(the rest is not read\\)`));
  assert.deepEqual(clipWarnings('l.wav', clip(readS - 1), config), [], 'what is read in full');
  const narrow = clipWarnings('n.wav', clip(6, { originalSampleRateHz: 8000 }), config);
  assert.match(narrow.join(), /n\.wav was recorded at 8000 Hz: it holds no sound above 4000 Hz, which the model reads/);
});

test('a model that reads the pitch is told of a reference with no voiced speech in it', () => {
  const pitched = { ...config, model: { ...config.model, speaker_pitch: true } };
  const extractor = new MelExtractor(config.audio);
  const read = (samples: Float32Array) => {
    const { mel, frames } = extractor.compute(samples);
    return clip(samples.length / rate, { mel, frames, melFrames: frames });
  };
  let state = 11;
  const whisper = read(
    Float32Array.from({ length: 3 * rate }, () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return (state / 2 ** 32 - 0.5) * 0.2;
    }),
  );
  const warned = clipWarnings('w.wav', whisper, pitched);
  assert.equal(warned.length, 1);
  assert.match(warned[0], /w\.wav: no voiced speech found in it .* give a clip of the voice speaking aloud/);
  assert.deepEqual(clipWarnings('w.wav', whisper, config), [], 'a model without speaker_pitch reads no pitch');
  const hum = read(
    Float32Array.from({ length: 3 * rate }, (_, i) => {
      let v = 0;
      for (let k = 1; k < 30; k++) v += (0.3 / k) * Math.sin((2 * Math.PI * 140 * k * i) / rate);
      return v;
    }),
  );
  assert.deepEqual(clipWarnings('v.wav', hum, pitched), []);
});
