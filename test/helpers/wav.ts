// Writes real 16-bit PCM WAV files for tests (a sine tone or silence), independent of xtts's own
// WAV code so that tests of the decoder do not grade its own homework.
import { writeFileSync } from 'node:fs';

export function pcm16Wav(samples: Float32Array, sampleRateHz: number): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    data.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32767))), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(sampleRateHz, 24);
  h.writeUInt32LE(sampleRateHz * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

export function tone(seconds: number, sampleRateHz: number, freqHz = 220, amplitude = 0.5): Float32Array {
  const out = new Float32Array(Math.round(seconds * sampleRateHz));
  for (let i = 0; i < out.length; i++) out[i] = amplitude * Math.sin((2 * Math.PI * freqHz * i) / sampleRateHz);
  return out;
}

export function writeToneWav(path: string, seconds: number, sampleRateHz = 22050, freqHz = 220): void {
  writeFileSync(path, pcm16Wav(tone(seconds, sampleRateHz, freqHz), sampleRateHz));
}

/** The clips one after the other. */
export function concatSamples(...parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A voiced vowel at `rate` Hz: harmonics of f0 under a two-formant envelope (500 and 1,500 Hz), seconds long. */
export function vowel(rate: number, f0: number, seconds: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * rate));
  for (let k = 1; k * f0 < 7000; k++) {
    const hz = k * f0;
    const envelope = 1 / (1 + ((hz - 500) / 150) ** 2) + 0.5 / (1 + ((hz - 1500) / 200) ** 2) + 0.02;
    const w = (2 * Math.PI * hz) / rate;
    for (let i = 0; i < out.length; i++) out[i] += 0.1 * envelope * Math.cos(w * i + k * k * 0.7);
  }
  return out;
}
