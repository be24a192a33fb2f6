// Log-mel extraction speed per core (one thread), against the target of 1,500x real time — what
// numpy does on one core here — and numpy itself measured side by side on the same 60 s of audio.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig, presetPath } from '../src/core/config/load.js';
import { decodeWav, MelExtractor, processClip, encodeWav, resample } from '../src/core/data/audio/index.js';
import { median, report } from './lib.js';

const audio = loadConfig(presetPath('quickstart')).loaded!.config.audio;
// 60 s of real (espeak-ng) speech: the quickstart clips concatenated.
const parts: Float32Array[] = [];
let total = 0;
for (let i = 1; total < 60 * audio.sample_rate_hz; i = (i % 36) + 1) {
  const s = decodeWav(readFileSync(fileURLToPath(new URL(`../configs/quickstart/wavs/QS-${String(i).padStart(3, '0')}.wav`, import.meta.url)))).samples;
  parts.push(s);
  total += s.length;
}
const x = new Float32Array(60 * audio.sample_rate_hz);
let o = 0;
for (const p of parts) {
  const n = Math.min(p.length, x.length - o);
  x.set(p.subarray(0, n), o);
  o += n;
  if (o >= x.length) break;
}
const seconds = x.length / audio.sample_rate_hz;
const m = new MelExtractor(audio);
m.compute(x.subarray(0, 22050)); // warm up the JIT
const times: number[] = [];
for (let r = 0; r < 7; r++) {
  const t = performance.now();
  m.compute(x);
  times.push(performance.now() - t);
}
const ms = median(times);
const rtf = seconds / (ms / 1000);
console.log(`log-mel (n_fft ${audio.n_fft}, hop ${audio.hop_length}, ${audio.n_mels} mels): ${ms.toFixed(1)} ms for ${seconds} s -> ${rtf.toFixed(0)}x real time on one core (target >= 1500x)`);

let numpyRtf: number | undefined;
const np = spawnSync('/usr/bin/python3', [fileURLToPath(new URL('../test/fixtures/mel_reference.py', import.meta.url)), JSON.stringify(audio), 'bench'], {
  input: Buffer.from(x.buffer),
  env: { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
  encoding: 'utf8',
});
if (np.status === 0) {
  numpyRtf = seconds / Number(np.stdout.trim());
  console.log(`numpy reference (one thread):               ${(Number(np.stdout.trim()) * 1000).toFixed(1)} ms -> ${numpyRtf.toFixed(0)}x real time; xtts/numpy = ${(rtf / numpyRtf).toFixed(2)}`);
} else console.log('numpy reference: python3-numpy not installed, skipped');

// The whole clip path: 44.1 kHz WAV bytes -> decode -> resample -> trim -> mel.
const wav44 = encodeWav(resample(x.subarray(0, 10 * audio.sample_rate_hz), audio.sample_rate_hz, 44100), 44100);
const clipTimes: number[] = [];
for (let r = 0; r < 5; r++) {
  const t = performance.now();
  processClip(wav44, audio, 'bench.wav');
  clipTimes.push(performance.now() - t);
}
const clipRtf = 10 / (median(clipTimes) / 1000);
console.log(`decode + resample 44.1->22.05 kHz + trim + mel: ${clipRtf.toFixed(0)}x real time on one core`);
report('mel', { seconds, melMs: ms, melRealtimeX: rtf, numpyRealtimeX: numpyRtf ?? null, clipRealtimeX: clipRtf, target: 1500, pass: rtf >= 1500 });
