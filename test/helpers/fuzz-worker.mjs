// A worker of the config fuzz test (test/e2e/config-fuzz.test.ts): trains each config named on stdin
// (one path a line) for 2 steps on the cpu backend, in this one process, and prints one JSON line per
// config: whether it trained, or the error's code; and the process's peak resident memory so far
// (a lifetime maximum: if it stays under a bound, every run did); and how many eval WAVs ran longer
// than the config's limits.max_audio_s (eval synthesis of a barely trained model must stop there).
// Plain JavaScript on the built package (@xtts/core, what `xtts train` runs), started without tsx: under
// tsx every thread a run starts (its data producer) loaded tsx as well, ~0.25 s of CPU a config.
import { readFileSync } from 'node:fs';
import { resourceUsage } from 'node:process';
import { createInterface } from 'node:readline';
import { toXttsError } from '@xtts/core';
import { loadConfigOrThrow } from '@xtts/core/config';
import { decodeWav } from '@xtts/core/data';
import { train } from '@xtts/core/training';

for await (const line of createInterface({ input: process.stdin })) {
  const [file, output] = line.split('\t');
  if (!file) continue;
  const started = performance.now();
  let outcome;
  try {
    const loaded = loadConfigOrThrow(file);
    const r = await train({ loaded, backend: 'cpu', maxSteps: 2, outputDir: output });
    const { audio, limits } = loaded.config;
    const wavs = r.evalFiles.filter((f) => f.endsWith('.wav'));
    const longEvalWavs = wavs.filter(
      (w) => decodeWav(readFileSync(w), w).durationS > limits.max_audio_s + audio.hop_length / audio.sample_rate_hz,
    );
    outcome = { ok: true, steps: r.steps, evalWavs: wavs.length, longEvalWavs };
  } catch (e) {
    const xe = toXttsError(e);
    outcome = { ok: false, code: xe.code, message: xe.message.split('\n')[0].slice(0, 300) };
  }
  process.stdout.write(
    JSON.stringify({
      file,
      ...outcome,
      ms: Math.round(performance.now() - started),
      maxRssBytes: resourceUsage().maxRSS * 1024,
    }) + `\n`,
  );
}
