// `xtts train` and `xtts synthesize` as processes on real espeak-ng speech: the loss falls clearly,
// a run killed after a checkpoint and resumed continues the same loss curve, Ctrl-C saves and exits
// 130, and synthesis writes a valid WAV.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { decodeWav } from '../../src/core/data/audio/wav.js';
import { repoRoot, runCli as run } from '../helpers/cli.js';

// Training runs take minutes on a 2-core CPU: longer than the helper's default timeout.
const runCli = (args: string[]) => run(args, { timeoutMs: 1_200_000 });

const quick = join(repoRoot, 'configs', 'quickstart');
const dir = mkdtempSync(join(tmpdir(), 'xtts-train-'));
mkdirSync(join(dir, 'data', 'wavs'), { recursive: true });
// The 12 shortest quickstart clips keep each step cheap on a 2-core CPU.
const rows = readFileSync(join(quick, 'metadata.csv'), 'utf8').trim().split('\n');
const byLength = rows.map((r) => ({ r, bytes: readFileSync(join(quick, 'wavs', `${r.split('|')[0]}.wav`)).length })).sort((a, b) => a.bytes - b.bytes).slice(0, 12);
for (const { r } of byLength) copyFileSync(join(quick, 'wavs', `${r.split('|')[0]}.wav`), join(dir, 'data', 'wavs', `${r.split('|')[0]}.wav`));
writeFileSync(join(dir, 'data', 'metadata.csv'), byLength.map((x) => x.r).join('\n') + '\n');
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
  max_steps: 120
  learning_rate: 3e-3
  log_every: 1
  validate_every: 60
  checkpoint_every: 15
  eval_every: 120
  eval_sentences:
    - text: The boy was there.
`,
);

function losses(runDir: string): Map<number, number> {
  const db = new Database(join(runDir, 'run.sqlite'), { readonly: true });
  const rows = db.prepare("SELECT step, value FROM metrics WHERE name = 'loss/train' ORDER BY step").all() as { step: number; value: number }[];
  db.close();
  return new Map(rows.map((r) => [r.step, r.value]));
}

describe('xtts train', () => {
  test('the tiny model learns: the loss falls clearly over 120 steps; checkpoints, eval audio and metrics are written', async () => {
    const out = join(dir, 'run-learn');
    const r = await runCli(['train', '--config', config, '--output', out, '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const res = r.json.result;
    assert.equal(res.steps, 120);
    assert.equal(res.stoppedBy, 'max_steps');
    const first = res.lossCurve.slice(0, 5).reduce((a: number, x: { loss: number }) => a + x.loss, 0) / 5;
    const last = res.lossCurve.slice(-5).reduce((a: number, x: { loss: number }) => a + x.loss, 0) / 5;
    assert.ok(last < 0.6 * first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
    assert.ok(res.validation.length >= 1 && Number.isFinite(res.validation[0].loss));
    assert.ok(existsSync(join(out, 'checkpoints', 'latest')));
    const wavs = res.evalFiles.filter((f: string) => f.endsWith('.wav'));
    assert.ok(wavs.some((f: string) => f.includes('sentence-1')), JSON.stringify(res.evalFiles));
    for (const w of wavs) {
      const decoded = decodeWav(readFileSync(w), w);
      assert.equal(decoded.sampleRateHz, 22050);
      assert.ok(decoded.durationS > 0.1);
    }
    assert.ok(res.evalFiles.some((f: string) => f.endsWith('.png')));
    assert.equal(losses(out).size, 120);
    assert.ok(readFileSync(join(out, 'metrics.jsonl'), 'utf8').includes('"loss/val"'));
    assert.ok(res.timing.kernelsPerStep > 100);

    const wav = join(dir, 'synth.wav');
    const s = await runCli(['synthesize', '--checkpoint', out, '--text', 'The boy was there.', '--out', wav, '--json']);
    assert.equal(s.code, 0, s.stderr);
    const d = decodeWav(readFileSync(wav), wav);
    assert.ok(d.durationS > 0.1 && d.samples.some((x) => Math.abs(x) > 0.01));
    const bad = await runCli(['synthesize', '--checkpoint', out, '--text', 'snowman ☃', '--out', wav, '--json']);
    assert.equal(bad.code, 2);
    assert.equal(bad.json.error.code, 'SYNTH_UNSPEAKABLE');
    assert.match(bad.json.error.message, /"☃" at character 9/);

    // Many texts at once: every speakable line gets its WAV (q and z never occur in these 12 clips,
    // the alphabet still gives them tokens: a warning, not a failure); the unspeakable line is named and skipped.
    const texts = join(dir, 'texts.txt');
    writeFileSync(texts, 'The boy was there.\n\nA quiz, a zebra.\nsnow ☃ man\n');
    const spoken = join(dir, 'spoken');
    mkdirSync(spoken);
    const many = await runCli(['synthesize', '--checkpoint', out, '--texts', texts, '--out-dir', spoken, '--batch-size', '2', '--json']);
    assert.equal(many.code, 1, many.stderr); // spoken, but not all: exit 1 (findings), as docs/exit-codes.md says
    assert.deepEqual(readdirSync(spoken).sort(), ['line-0001.wav', 'line-0003.wav', 'synthesis.json']);
    assert.equal(many.json.result.skipped.length, 1);
    assert.equal(many.json.result.skipped[0].where, `${texts}:4`);
    assert.match(many.json.result.skipped[0].reason, /"☃" at character 6/);
    assert.ok(many.json.warnings.some((w: string) => w.includes(`${texts}:3`) && w.includes('"q"') && w.includes('"z"')), JSON.stringify(many.json.warnings));
    for (const f of ['line-0001.wav', 'line-0003.wav']) assert.ok(decodeWav(readFileSync(join(spoken, f)), f).durationS > 0.1);
  });

  test('a run killed after a checkpoint and resumed continues the same loss curve', async () => {
    const a = join(dir, 'run-a');
    const full = await runCli(['train', '--config', config, '--output', a, '--max-steps', '30', '--set', 'training.eval_every=1000', '--json']);
    assert.equal(full.code, 0, full.stderr.slice(-2000));
    const b = join(dir, 'run-b');
    // Kill with SIGKILL once the checkpoint at step 15 exists (it is written atomically).
    const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
    const child = spawn(process.execPath, [join(repoRoot, 'src/cli/run.js'), 'train', '--config', config, '--output', b, '--max-steps', '30', '--set', 'training.eval_every=1000'], { cwd: repoRoot, env, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (existsSync(join(b, 'checkpoints', 'step-00000015', 'state.json'))) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 50);
      child.once('exit', () => {
        clearInterval(timer);
        resolve();
      });
    });
    await exited;
    const resumed = await runCli(['train', '--config', config, '--output', b, '--max-steps', '30', '--resume', '--set', 'training.eval_every=1000', '--json']);
    assert.equal(resumed.code, 0, resumed.stderr.slice(-2000));
    assert.ok(resumed.json.result.startStep >= 15 && resumed.json.result.startStep < 30, `resumed at ${resumed.json.result.startStep}`);
    const la = losses(a);
    const lb = losses(b);
    for (let step = resumed.json.result.startStep + 1; step <= 30; step++) {
      assert.ok(Math.abs(la.get(step)! - lb.get(step)!) < 1e-5, `step ${step}: ${la.get(step)} vs ${lb.get(step)}`);
    }
  });

  test('Ctrl-C finishes the step, writes a checkpoint and exits 130', async () => {
    const out = join(dir, 'run-int');
    const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
    const child = spawn(process.execPath, [join(repoRoot, 'src/cli/run.js'), 'train', '--config', config, '--output', out, '--max-steps', '500', '--set', 'training.checkpoint_every=1000', '--set', 'training.validate_every=1000'], { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/step\s+3\//.test(stderr) && !child.killed) child.kill('SIGINT');
    });
    const code = await new Promise((r) => child.once('exit', (c) => r(c)));
    assert.equal(code, 130, stderr.slice(-1000));
    const ckpts = readdirSync(join(out, 'checkpoints')).filter((n) => n.startsWith('step-'));
    assert.equal(ckpts.length, 1);
    assert.match(stderr, /writing a checkpoint/);
  });

  test('a missing dataset is a clear error, not a stack trace', async () => {
    const r = await runCli(['train', '--config', config, '--dataset', join(dir, 'nope'), '--json']);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.code, 'DATASET_NOT_FOUND');
  });
});
