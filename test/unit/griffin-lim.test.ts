import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { griffinLim, MelExtractor } from '../../src/core/data/audio/index.js';
import { tone } from '../helpers/wav.js';

const audio = loadConfig(presetPath('quickstart')).loaded!.config.audio;

function energyAt(x: Float32Array, rate: number, freq: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < x.length; i++) {
    re += x[i] * Math.cos((2 * Math.PI * freq * i) / rate);
    im += x[i] * Math.sin((2 * Math.PI * freq * i) / rate);
  }
  return Math.hypot(re, im) / x.length;
}

test("a tone's log-mel vocoded back has its energy at the tone, not an octave away", () => {
  const x = tone(0.6, audio.sample_rate_hz, 1000, 0.5);
  const { frames, mel } = new MelExtractor(audio).compute(x);
  const y = griffinLim(mel, frames, audio, { iterations: 16 });
  assert.equal(y.length, (frames - 1) * audio.hop_length);
  const mid = y.subarray(2000, y.length - 2000);
  const at = energyAt(mid, audio.sample_rate_hz, 1000);
  for (const other of [500, 2000, 3000])
    assert.ok(at > 4 * energyAt(mid, audio.sample_rate_hz, other), `1 kHz ${at} vs ${other} Hz`);
  assert.ok(Math.max(...y.map(Math.abs)) <= 0.9);
});
