// The config fuzzer's configs (test/e2e/config-fuzz.test.ts; bench/config-fuzz.ts for the full sweep):
// drawn by a seeded generator over the model, batching, training, audio and device keys, each kept
// only if `validate-gpu-optimization`'s checks find no error in it. Configs carry a
// device.model_memory_budget_mb between 64 and 3000: that is the user's bound, and the estimate must
// refuse what exceeds it before allocating.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateConfigFile } from '../../src/core/config/validate.js';
import { mulberry32 } from '../../src/core/data/buckets.js';

export const FUZZ_SEED = 20261128;

export function drawConfig(base: string, random: () => number): string {
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
    // Eval WAVs run to limits.max_audio_s (the model is 2 steps old) and Griffin-Lim was a third of a worker's
    // CPU; 1-3 iterations instead of 24 took ~10% off the sweep. The WAVs' lengths, which the test checks, do
    // not depend on the iterations.
    `  eval_griffin_lim_iterations: ${pick([1, 2, 3])}`,
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

/**
 * `count` configs that validate, extending `config`, written into `dir` as fuzz-NNNN.yaml (every one
 * drawn, so that a refused one can be read too); each with its run folder under dir/runs.
 */
export function fuzzJobs(dir: string, config: string, count: number, seed = FUZZ_SEED) {
  const random = mulberry32(seed);
  const jobs: { file: string; output: string }[] = [];
  let drawn = 0;
  while (jobs.length < count) {
    const file = join(dir, `fuzz-${String(drawn).padStart(4, '0')}.yaml`);
    writeFileSync(file, drawConfig(config, random));
    drawn++;
    const report = validateConfigFile(file, { environment: false });
    if (report.summary.error === 0) jobs.push({ file, output: join(dir, 'runs', `fuzz-${drawn}`) });
    if (drawn >= count * 20)
      throw new Error(`only ${jobs.length} of ${drawn} drawn configs validate: the generator is off`);
  }
  return { jobs, drawn };
}
