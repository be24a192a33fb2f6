// A config that validates trains, or is refused with a clear error: never INTERNAL, never a run that
// takes the machine's memory. Configs drawn from a seeded generator over the model, batching,
// training, audio and device keys (each kept only if `validate-gpu-optimization` finds no error in
// it), each trained 2 steps on the cpu backend by two worker processes; every worker's peak resident
// memory stays under 4 GB. Configs carry a device.model_memory_budget_mb between 64 and 3000: that
// is the user's bound, and the estimate must refuse what exceeds it before allocating.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { test } from 'node:test';
import { validateConfigFile } from '../../src/core/config/validate.js';
import { mulberry32 } from '../../src/core/data/buckets.js';
import { repoRoot } from '../helpers/cli.js';
import { microRun } from '../helpers/short-clips.js';

// CI trains 30 (a config takes ~3.5 s on a 2-core runner); XTTS_FUZZ_CONFIGS=300 is the full sweep.
const COUNT = Number(process.env.XTTS_FUZZ_CONFIGS ?? 30);
const WORKERS = 2;
const MAX_RSS_BYTES = 4e9;

function drawConfig(base: string, random: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const d = pick([16, 24, 32, 48, 64, 96, 128]);
  const heads = pick([1, 2, 4, 8].filter((h) => d % h === 0));
  const lines = [
    `extends: ${base}`,
    'model:',
    `  d_model: ${d}`,
    `  heads: ${heads}`,
    `  ff_mult: ${pick([1, 2, 3, 4])}`,
    `  text_layers: ${pick([0, 1, 2])}`,
    `  cond_layers: ${pick([0, 1, 2])}`,
    `  cond_latents: ${pick([1, 2, 4, 8])}`,
    `  decoder_layers: ${pick([1, 2])}`,
    `  prenet_dim: ${pick([16, 32, 64])}`,
    `  postnet_layers: ${pick([0, 1, 2, 3])}`,
    `  postnet_channels: ${pick([16, 32, 64])}`,
    `  postnet_kernel: ${pick([1, 3, 5, 7])}`,
    `  reduction_factor: ${pick([1, 2, 3, 4])}`,
    `  dropout: ${pick([0, 0.1, 0.3])}`,
    `  max_text_tokens: ${pick([64, 256, 1024])}`,
    `  max_mel_frames: ${pick([256, 1024, 2048])}`,
    'batching:',
    `  batch_size: ${pick([1, 2, 3, 4, 8, 64])}`,
    `  buckets: ${pick([0, 1, 2, 4])}`,
    `  reference_frames: ${pick([8, 16, 48, 96])}`,
    `  shuffle: ${pick([true, false])}`,
    'training:',
    `  learning_rate: ${pick([1e-5, 1e-3, 3e-3, 0.1, 1])}`,
    `  grad_clip_norm: ${pick([0, 0.5, 1, 100])}`,
    `  grad_accumulation_steps: ${pick([1, 1, 2, 3])}`,
    `  max_nonfinite_steps: ${pick([0, 1, 10])}`,
    `  keep_checkpoints: ${pick([1, 2, 5])}`,
    `  checkpoint_every: ${pick([1, 2, 1000])}`,
    `  eval_every: ${pick([1, 1000])}`,
    `  validate_every: ${pick([1, 1000])}`,
    `  log_every: ${pick([1, 2, 50])}`,
    `  seed: ${Math.floor(random() * 1e6)}`,
    '  schedule:',
    `    name: ${pick(['warmup_cosine', 'noam', 'constant'])}`,
    `    warmup_steps: ${pick([0, 1, 500])}`,
    '  loss:',
    `    mel: ${pick(['l1', 'l2', 'l1_l2'])}`,
    `    duration_weight: ${pick([0, 1, 10])}`,
    '  optimizer:',
    `    weight_decay: ${pick([0, 0.01, 0.5])}`,
    'limits:',
    `  max_audio_s: ${pick([2, 4, 8, 20])}`,
    'device:',
    `  model_memory_budget_mb: ${pick([64, 128, 256, 512, 1024, 3000])}`,
  ];
  return `${lines.join('\n')}\n`;
}

interface Outcome {
  file: string;
  ok: boolean;
  code?: string;
  message?: string;
  ms: number;
  maxRssBytes: number;
}

function runWorker(jobs: string[]): Promise<Outcome[]> {
  const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test', 'helpers', 'fuzz-worker.ts')], {
    cwd: repoRoot,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const outcomes: Outcome[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  createInterface({ input: child.stdout }).on('line', (l) => {
    if (l.startsWith('{')) outcomes.push(JSON.parse(l) as Outcome);
  });
  child.stdin.end(`${jobs.join('\n')}\n`);
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0
        ? resolve(outcomes)
        : reject(new Error(`fuzz worker exited ${code} after ${outcomes.length} configs:\n${stderr}`)),
    ),
  );
}

test(`${COUNT} configs that validate, each trained 2 steps on cpu: none ends in INTERNAL, no worker over 4 GB`, {
  timeout: 1_200_000,
}, async () => {
  const { dir, config } = microRun('xtts-fuzz-');
  const random = mulberry32(20261128);
  const jobs: string[] = [];
  let drawn = 0;
  while (jobs.length < COUNT) {
    const file = join(dir, `fuzz-${String(drawn).padStart(4, '0')}.yaml`);
    writeFileSync(file, drawConfig(config, random));
    drawn++;
    const report = validateConfigFile(file, { environment: false });
    if (report.summary.error === 0) jobs.push(`${file}\t${join(dir, 'runs', `fuzz-${drawn}`)}`);
    assert.ok(drawn < COUNT * 20, `only ${jobs.length} of ${drawn} drawn configs validate: the generator is off`);
  }
  const shares = Array.from({ length: WORKERS }, (_, w) => jobs.filter((_, i) => i % WORKERS === w));
  const outcomes = (await Promise.all(shares.map(runWorker))).flat();
  assert.equal(outcomes.length, COUNT);
  const internal = outcomes.filter((o) => !o.ok && o.code === 'INTERNAL');
  assert.deepEqual(
    internal.map((o) => `${o.file}: ${o.message}`),
    [],
  );
  const refused = new Map<string, number>();
  for (const o of outcomes) if (!o.ok) refused.set(o.code!, (refused.get(o.code!) ?? 0) + 1);
  for (const o of outcomes.filter((x) => !x.ok).slice(0, 5)) console.log(`refused: ${o.file}: ${o.code} ${o.message}`);
  const peak = Math.max(...outcomes.map((o) => o.maxRssBytes));
  const trained = outcomes.filter((o) => o.ok).length;
  console.log(
    `fuzz: ${COUNT} of ${drawn} drawn configs validate; ${trained} trained 2 steps, ` +
      `refused: ${JSON.stringify(Object.fromEntries(refused))}; peak worker ` +
      `RSS ${(peak / 2 ** 20).toFixed(0)} MiB; ` +
      `median ${outcomes.map((o) => o.ms).sort((a, b) => a - b)[COUNT >> 1]} ms a ` +
      `config`,
  );
  assert.ok(peak < MAX_RSS_BYTES, `a worker reached ${(peak / 2 ** 20).toFixed(0)} MiB`);
  // Most configs train: the test is of training, not of refusals.
  assert.ok(trained > COUNT / 2, `only ${trained} of ${COUNT} trained`);
});
