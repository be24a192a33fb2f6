// The quickstart's shortest clips as a dataset of their own (for trainer tests: each step stays cheap
// on a 2-core CPU): a new temporary folder with data/wavs and data/metadata.csv, and a config that
// trains the quickstart model on them in batches of 4 with its own cache.
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { repoRoot } from './cli.js';

/** A folder holding data/ with the `count` shortest quickstart clips; returns the folder. */
export function shortQuickstartClips(count: number, prefix: string): string {
  const quick = join(repoRoot, 'configs', 'quickstart');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(dir, 'data', 'wavs'), { recursive: true });
  const wav = (row: string) => join(quick, 'wavs', `${row.split('|')[0]}.wav`);
  const rows = readFileSync(join(quick, 'metadata.csv'), 'utf8').trim().split('\n');
  const shortest = rows
    .map((r) => ({ r, bytes: readFileSync(wav(r)).length }))
    .sort((a, b) => a.bytes - b.bytes)
    .slice(0, count);
  for (const { r } of shortest) copyFileSync(wav(r), join(dir, 'data', 'wavs', `${r.split('|')[0]}.wav`));
  writeFileSync(join(dir, 'data', 'metadata.csv'), shortest.map((x) => x.r).join('\n') + '\n');
  return dir;
}

/**
 * shortQuickstartClips(count) and config.yaml beside it: the quickstart config on those clips (10%
 * validation, batches of 4, one bucket, 48 reference frames, a cache in the folder) with `training`
 * (YAML lines under `training:`, indented two spaces) and `more` (top-level YAML, such as MICRO_MODEL).
 */
export function shortQuickstartRun(
  count: number,
  prefix: string,
  training: string,
  more = '',
): { dir: string; config: string } {
  const dir = shortQuickstartClips(count, prefix);
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}
dataset:
  path: ./data
  validation_fraction: 0.1
batching:
  batch_size: 4
  buckets: 1
  reference_frames: 48
pipeline:
  cache:
    path: ${join(dir, 'cache.sqlite')}
training:
${training}${more}`,
  );
  return { dir, config };
}

/**
 * The micro model (d_model 32, one layer each): a step on a few short clips takes tens of ms on wasm, where the
 * quickstart's tiny model takes seconds. For tests of the trainer's mechanics (replicas, lookahead, pipelined steps,
 * step capture, signals), which compare runs with each other and do not need a model that learns.
 */
export const MICRO_MODEL = `model:
  d_model: 32
  text_layers: 1
  decoder_layers: 1
  prenet_dim: 32
  postnet_layers: 1
  postnet_channels: 32
`;

/**
 * The micro model on the 4 shortest quickstart clips: a test can start many runs. Logs every step,
 * checkpoints every 4 (keeps 2), no validation or eval until the end; output.dir is `<dir>/runs/micro`.
 */
export function microRun(prefix: string): { dir: string; config: string } {
  const run = shortQuickstartRun(
    4,
    prefix,
    `  max_steps: 40
  log_every: 1
  validate_every: 1000
  checkpoint_every: 4
  eval_every: 1000
  keep_checkpoints: 2
`,
    MICRO_MODEL,
  );
  appendFileSync(run.config, `output:\n  dir: ${join(run.dir, 'runs', 'micro')}\n`);
  return run;
}

/** A run folder's training loss by step (loss/train in run.sqlite). */
export function trainingLosses(runDir: string): Map<number, number> {
  const db = new Database(join(runDir, 'run.sqlite'), { readonly: true });
  const rows = db.prepare("SELECT step, value FROM metrics WHERE name = 'loss/train' ORDER BY step").all() as {
    step: number;
    value: number;
  }[];
  db.close();
  return new Map(rows.map((r) => [r.step, r.value]));
}

/**
 * shortQuickstartClips(6) and vocoder.yaml beside it: a micro vocoder (32 channels, 2 blocks, 16-frame
 * segments, batches of 2; 20% validation) with `vocoder` (YAML lines under `vocoder:`, indented two
 * spaces, after the micro shape) and `training` (lines under `training:`).
 */
export function microVocoderRun(prefix: string, vocoder: string, training: string): { dir: string; config: string } {
  const dir = shortQuickstartClips(6, prefix);
  const config = join(dir, 'vocoder.yaml');
  writeFileSync(
    config,
    `extends: ${join(repoRoot, 'configs', 'vocoder-tiny.yaml')}
dataset:
  path: ./data
  validation_fraction: 0.2
vocoder:
  channels: 32
  layers: 2
  ff_mult: 2
  segment_frames: 16
${vocoder}batching:
  batch_size: 2
training:
${training}`,
  );
  return { dir, config };
}
