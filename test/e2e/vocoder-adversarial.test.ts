// `xtts train` with `vocoder.adversarial` as a process, on a micro vocoder and micro discriminators
// (periods 2 and 3, 32 channels; resolution discriminators 2 wide) and the shortest quickstart clips:
// the generator trains alone up to start_step and against the discriminators after it, whose losses
// reach metrics.jsonl and TensorBoard; the discriminators and their moments ride in the checkpoint's
// optimizer file (weights.safetensors stays the generator, and `xtts vocode` reads it as any other);
// a stopped run resumes to the uninterrupted run's weights and moments, discriminators included; on
// WebGPU the adversarial step is recorded afresh and replayed, training exactly as eager steps; and
// settings that cannot work are refused with the key to change.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { decodeSafetensors } from '../../src/core/training/safetensors.js';
import { latestCheckpoint, tensorsDiffer } from '../helpers/checkpoints.js';
import { runCli as run } from '../helpers/cli.js';
import { microVocoderRun } from '../helpers/short-clips.js';
import { capturedMatchesEager, withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { readEvents } from '../helpers/tfevents.js';

const runCli = (args: string[]) => run(args, { timeoutMs: 600_000 });

const { dir, config } = microVocoderRun(
  'xtts-vocoder-gan-',
  `  adversarial:
    enabled: true
    start_step: 2
    periods: [2, 3]
    period_channels: 32
    resolution_channels: 2
`,
  `  max_steps: 6
  log_every: 1
  validate_every: 3
  checkpoint_every: 3
  eval_every: 6
  schedule:
    warmup_steps: 2
`,
);

const arrayNames = (checkpoint: string, file: string) =>
  decodeSafetensors(readFileSync(join(checkpoint, file)), file).arrays.map((a) => a.name);

describe('xtts train: an adversarial vocoder', () => {
  const full = join(dir, 'full');

  test('the discriminators join after start_step; their losses are logged and checkpointed apart', async () => {
    const r = await runCli(['train', '--config', config, '--output', full, '--backend', 'wasm', '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const res = r.json.result;
    assert.equal(res.steps, 6);
    assert.deepEqual(res.adversarial.discriminators, [
      'period2',
      'period3',
      'resolution512',
      'resolution1024',
      'resolution2048',
    ]);
    assert.equal(res.adversarial.startStep, 2);
    assert.ok(res.adversarial.parameters > 10_000, JSON.stringify(res.adversarial));
    const db = new Database(join(full, 'run.sqlite'), { readonly: true });
    const steps = (name: string) =>
      (db.prepare('SELECT step FROM metrics WHERE name = ? ORDER BY step').all(name) as { step: number }[]).map(
        (x) => x.step,
      );
    // Steps 1-2 the generator alone; from step 3 every logged step has the adversarial figures.
    for (const name of ['loss/adversarial', 'loss/feature_matching', 'loss/discriminator', 'discriminator_grad_norm'])
      assert.deepEqual(steps(name), [3, 4, 5, 6], name);
    assert.deepEqual(steps('loss/train'), [1, 2, 3, 4, 5, 6]);
    const d = db.prepare("SELECT value FROM metrics WHERE name = 'loss/discriminator'").all() as { value: number }[];
    // LSGAN: two mean squares of scores near 0 at the start, about 1 in all.
    assert.ok(
      d.every((x) => Number.isFinite(x.value) && x.value > 0.2 && x.value < 5),
      JSON.stringify(d),
    );
    const meta = db.prepare("SELECT v FROM meta WHERE k = 'adversarial'").get() as { v: string };
    assert.equal(JSON.parse(meta.v).parameters, res.adversarial.parameters);
    db.close();
    const events = readdirSync(full).find((f) => f.startsWith('events.out.tfevents'));
    const tb = readEvents(join(full, events!));
    assert.equal(tb.scalars['loss/discriminator'].length, 4);
    // weights.safetensors: the generator only; the discriminators and both optimizers' moments beside it.
    const weights = arrayNames(latestCheckpoint(full), 'weights.safetensors');
    assert.ok(weights.length > 0 && weights.every((n) => n.startsWith('vocoder.')), weights.join());
    const optimizer = arrayNames(latestCheckpoint(full), 'optimizer.safetensors');
    assert.ok(optimizer.includes('disc.period2.conv0.w'), optimizer.slice(0, 8).join());
    assert.ok(optimizer.includes('disc_optimizer.adamw.step'));
    assert.ok(optimizer.some((n) => n.startsWith('disc_optimizer.adamw.m/disc.resolution1024.')));
    // The generator of an adversarial run vocodes as any other.
    const v = await runCli(
      ['vocode', '--vocoder', full, '--in', join(dir, 'data', 'wavs'), '--out-dir'].concat([
        join(dir, 'vocoded'),
        '--backend',
        'wasm',
        '--json',
      ]),
    );
    assert.equal(v.code, 0, v.stderr.slice(-2000));
    assert.equal(v.json.result.files.length, 6);
  });

  test('stopped at step 4 and resumed: the uninterrupted run, discriminators and their moments included', async () => {
    const split = join(dir, 'split');
    const args = ['train', '--config', config, '--output', split, '--backend', 'wasm'];
    const first = await runCli([...args, '--max-steps', '4']);
    assert.equal(first.code, 0, first.stderr.slice(-2000));
    const again = await runCli([...args, '--resume']);
    assert.equal(again.code, 0, again.stderr.slice(-2000));
    assert.match(again.stderr, /resumed from .*step-00000004 at step 4/);
    assert.match(first.stderr, /adversarial: 5 discriminators \(period2, .*; \d+ parameters\), after step 2/);
    assert.equal(tensorsDiffer(latestCheckpoint(full), latestCheckpoint(split), 'weights.safetensors'), null);
    assert.equal(tensorsDiffer(latestCheckpoint(full), latestCheckpoint(split), 'optimizer.safetensors'), null);
  });

  const webgpuTitle =
    'on WebGPU (software device): the step is recorded afresh when the discriminators join, then replayed, ' +
    'training exactly as eager steps';
  test(webgpuTitle, { skip: withoutLlvmpipe }, async () => {
    const { replayed } = await capturedMatchesEager(config, dir, 8);
    // Steps 1-2 plain (eager, recorded); 3-5 adversarial eager (the third records the second time), 6-8 replays.
    assert.deepEqual(replayed, [0, 0, 0, 0, 0, 1, 1, 1]);
  });

  test('no discriminator, or discriminators too large for wasm: refused, naming the key', async () => {
    const none = await runCli(
      ['train', '--config', config, '--output', join(dir, 'none'), '--backend', 'wasm'].concat([
        '--set',
        'vocoder.adversarial.periods=[]',
        '--set',
        'vocoder.adversarial.resolution_channels=0',
      ]),
    );
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /vocoder\.adversarial\.periods.*no discriminator/);
    const big = join(dir, 'big');
    const large = await runCli(
      ['train', '--config', config, '--output', big, '--backend', 'wasm'].concat([
        '--set',
        'vocoder.adversarial.resolution_channels=32',
        '--set',
        'batching.batch_size=16',
      ]),
    );
    assert.equal(large.code, 2, large.stderr);
    assert.match(large.stderr, /VOCODER_ADVERSARIAL_MEMORY.*about \d+\.\d GiB a step.*\(3\.0 GiB\)/);
    assert.match(large.stderr, /resolution_channels to \d+ or less/);
    // Nothing trained, nothing checkpointed: the refused run leaves no folder.
    assert.equal(existsSync(big), false);
  });
});
