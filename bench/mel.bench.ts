// Audio front-end speed on one thread: log-mel real-time factor (60 s of espeak-ng speech, default
// settings: 22,050 Hz, n_fft 1024, hop 256, 80 mels) for both engines against the 1,500x target,
// numpy's single-threaded speed for scale, and the whole clip path from 44.1 kHz WAV bytes
// (decode + resample to 22.05 kHz + trim + log-mel) with its stages. Figures are medians of 7 runs,
// wall clock and process CPU time (the machine is shared: CPU time is the steadier of the two).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioConfig } from '../src/core/config/schema.js';
import {
  decodeWav,
  griffinLim,
  MelExtractor,
  melToMagnitude,
  processClip,
  resample,
  trimSilence,
  type MelEngine,
} from '../src/core/data/audio/index.js';
import { MEL_SETTINGS } from '../test/helpers/mel-settings.js';
import { median, report } from './lib.js';

const TARGET_X = 1500;
const RUNS = 7;
const AUDIO: AudioConfig = {
  ...MEL_SETTINGS,
  trim: { enabled: true, top_db: 40 },
  loudness: { enabled: false, target_lufs: -23 },
};

const dir = mkdtempSync(join(tmpdir(), 'xtts-mel-bench-'));
const TEXT =
  'The audio front end decodes every clip, resamples it to the model rate, trims ' +
  'the silence around it and computes its log-mel features. ' +
  'It runs in worker threads while the trainer waits for nothing. Speed matters ' +
  'because a large dataset holds hundreds of hours of speech, ' +
  'and every change to a feature setting computes all of them again. ';
const speechWav = join(dir, 'speech.wav');
execFileSync('espeak-ng', ['-w', speechWav, TEXT.repeat(3)]);
const spoken = decodeWav(readFileSync(speechWav)).samples;
const seconds = 60;
const x = new Float32Array(seconds * AUDIO.sample_rate_hz);
for (let o = 0; o < x.length; o += spoken.length) x.set(spoken.subarray(0, Math.min(spoken.length, x.length - o)), o);

/** Median wall and CPU milliseconds of `runs` calls after two warm-up calls. */
function time(fn: () => void, runs = RUNS): { wallMs: number; cpuMs: number } {
  fn();
  fn();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < runs; r++) {
    const c = process.cpuUsage();
    const t = performance.now();
    fn();
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  return { wallMs: median(wall), cpuMs: median(cpu) };
}

const x1 = (audioS: number, ms: number) => audioS / (ms / 1000);
console.log(`load average ${loadavg()[0].toFixed(2)} on this 2-core machine (other work inflates wall times)`);
const mel: Record<MelEngine, { wallMs: number; cpuMs: number }> = {} as never;
for (const engine of ['wasm', 'js'] as MelEngine[]) {
  const m = new MelExtractor(AUDIO, { engine });
  mel[engine] = time(() => m.compute(x));
  const { wallMs, cpuMs } = mel[engine];
  console.log(
    `log-mel ${engine.padEnd(4)} (n_fft 1024, hop 256, 80 mels), ${seconds} s of ` +
      `speech: ${wallMs.toFixed(1)} ms wall -> ${x1(seconds, wallMs).toFixed(0)}x real ` +
      `time; ` +
      `${cpuMs.toFixed(1)} ms CPU -> ${x1(seconds, cpuMs).toFixed(0)}x  (target >= ${TARGET_X}x per core)`,
  );
}

// numpy on one thread, the same 60 s, for scale (skipped without python3-numpy).
let numpyX: number | null = null;
const np = spawnSync(
  '/usr/bin/python3',
  [
    '-c',
    `import sys, time, numpy as np
x = np.frombuffer(sys.stdin.buffer.read(), dtype=np.float32).astype(np.float64)
w = np.hanning(1025)[:-1]
def mel():
    y = np.pad(x, 512, mode='reflect'); n = 1 + len(x) // 256
    idx = np.arange(1024)[None, :] + 256 * np.arange(n)[:, None]
    return np.log(np.maximum(np.abs(np.fft.rfft(y[idx] * w, axis=1)) @ np.ones((513, 80)) * 0.01, 1e-5))
t = []
for _ in range(5):
    s = time.perf_counter(); mel(); t.append(time.perf_counter() - s)
print(sorted(t)[2])`,
  ],
  {
    input: Buffer.from(x.buffer),
    env: { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  },
);
if (np.status === 0) {
  numpyX = seconds / Number(np.stdout.trim());
  console.log(
    `numpy (one thread, dense filterbank), same ` +
      `audio:             ${(Number(np.stdout.trim()) * 1000).toFixed(1)} ms wall ` +
      `-> ${numpyX.toFixed(0)}x real time`,
  );
} else console.log('numpy: python3-numpy not installed, skipped');

// The whole clip path from 44.1 kHz 16-bit WAV bytes (sox made them from the speech).
const wav44 = join(dir, 'speech44.wav');
execFileSync('sox', [speechWav, '-r', '44100', '-b', '16', wav44, 'trim', '0', '20']);
const bytes = readFileSync(wav44);
const clipS = decodeWav(bytes).durationS;
const clip = time(() => processClip(bytes, AUDIO, wav44), 5);
const decoded = decodeWav(bytes).samples;
const resampled = resample(decoded, 44100, 22050);
const extractor = new MelExtractor(AUDIO);
const stages = {
  decode: time(() => decodeWav(bytes), 5),
  resample: time(() => resample(decoded, 44100, 22050), 5),
  trim: time(() => trimSilence(resampled, 40), 5),
  mel: time(() => extractor.compute(resampled), 5),
};
console.log(
  `decode + resample 44.1->22.05 kHz + trim + log-mel ` +
    `(processClip), ${clipS.toFixed(1)} s clip: ${clip.wallMs.toFixed(1)} ms wall ` +
    `-> ${x1(clipS, clip.wallMs).toFixed(0)}x real time; ` +
    `${clip.cpuMs.toFixed(1)} ms CPU -> ${x1(clipS, clip.cpuMs).toFixed(0)}x`,
);
console.log(
  `  stages (wall ms): ${Object.entries(stages)
    .map(([k, v]) => `${k} ${v.wallMs.toFixed(1)} (${x1(clipS, v.wallMs).toFixed(0)}x)`)
    .join(', ')}`,
);

// The way back, eval audio's and synthesis's vocoder without a neural one: log-mel -> magnitude (NNLS)
// -> 32 iterations of fast Griffin-Lim, 20 s of the speech.
const invS = 20;
const { mel: invMel, frames: invFrames } = extractor.compute(x.subarray(0, invS * AUDIO.sample_rate_hz));
const nnls = time(() => melToMagnitude(invMel, invFrames, AUDIO), 3);
const gl = time(() => griffinLim(invMel, invFrames, AUDIO), 3);
console.log(
  `log-mel -> magnitude (NNLS) + Griffin-Lim (32 iterations), ${invS} s: ${gl.wallMs.toFixed(0)} ms wall ` +
    `-> ${x1(invS, gl.wallMs).toFixed(1)}x real time (NNLS alone ${nnls.wallMs.toFixed(0)} ms)`,
);
rmSync(dir, { recursive: true, force: true });

const wasmX = x1(seconds, mel.wasm.wallMs);
console.log(
  `verdict: log-mel ${wasmX >= TARGET_X ? 'meets' : 'misses'} the ${TARGET_X}x ` +
    `target (${wasmX.toFixed(0)}x wall, ${x1(seconds, mel.wasm.cpuMs).toFixed(0)}x ` +
    `CPU, wasm engine)`,
);
report('mel', {
  audioS: seconds,
  targetRealtimeX: TARGET_X,
  melWasmMs: mel.wasm.wallMs,
  melWasmRealtimeX: wasmX,
  melWasmCpuRealtimeX: x1(seconds, mel.wasm.cpuMs),
  melJsRealtimeX: x1(seconds, mel.js.wallMs),
  melJsCpuRealtimeX: x1(seconds, mel.js.cpuMs),
  numpyRealtimeX: numpyX,
  clipS,
  clipRealtimeX: x1(clipS, clip.wallMs),
  clipCpuRealtimeX: x1(clipS, clip.cpuMs),
  griffinLimMs: gl.wallMs,
  griffinLimRealtimeX: x1(invS, gl.wallMs),
  nnlsMs: nnls.wallMs,
  stageMs: Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, v.wallMs])),
  loadAverage: loadavg()[0],
  pass: wasmX >= TARGET_X,
});
