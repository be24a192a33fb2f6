// training.alignment_lookahead on the CPU backend (where `auto` leaves it off; `on` forces it, to test
// what it does): each batch is uploaded and its alignment search started before the step ahead of it,
// every batch is still trained once, in the loader's order, with its own alignment; a run resumed from
// a checkpoint trains the batches the unbroken run trained; the first step is the same as without it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun, trainingLosses } from '../helpers/short-clips.js';
import { joinedRegExp } from '../helpers/regexp.js';

/** Each step's batch (epoch, index in it, shape) from run.sqlite. */
function batches(run: string): string[] {
  const db = new Database(join(run, 'run.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT step, epoch, batch_index, tokens, frames FROM steps ORDER BY step').all() as {
    step: number;
    epoch: number;
    batch_index: number;
    tokens: number;
    frames: number;
  }[];
  db.close();
  return rows.map((r) => `${r.step}:${r.epoch}/${r.batch_index} ${r.tokens}×${r.frames}`);
}

describe('training.alignment_lookahead', () => {
  const training = `  log_every: 1
  validate_every: 1000
  checkpoint_every: 4
  eval_every: 1000
  eval_sentences: []
`;

  test(
    'with weights that do not move, the lookahead run trains the same batches with ' +
      'the same alignments: the same loss at every step',
    async () => {
      // A learning rate of 1e-12 moves no float32 weight, so a search one step behind sees the same model.
      const { dir, config } = shortQuickstartRun(
        10,
        'xtts-lookahead-still-',
        `  max_steps: 6\n  learning_rate: 1e-12\n  schedule:\n    name: constant\n    ` +
          `min_learning_rate: 0\n${training}`,
        MICRO_MODEL,
      );
      const runs: Record<string, string> = {};
      // 'pipelined': pipelined steps (device.pipeline_steps), where the lookahead keeps four batches prepared.
      for (const mode of ['off', 'on', 'pipelined']) {
        runs[mode] = join(dir, mode);
        const set =
          mode === 'pipelined'
            ? ['training.alignment_lookahead=on', 'device.pipeline_steps=on']
            : [`training.alignment_lookahead=${mode}`, 'device.pipeline_steps=off'];
        const r = await runCli(
          ['train', '--config', config, '--output', runs[mode], ...set.flatMap((x) => ['--set', x])],
          { timeoutMs: 300_000 },
        );
        assert.equal(r.code, 0, r.stderr.slice(-2000));
        if (mode === 'on')
          assert.match(
            r.stderr,
            joinedRegExp(
              /alignment lookahead: each batch's alignment is searched on /,
              /(a worker thread|\d worker threads) while the step before it computes /,
              /\(/,
            ),
          );
        else if (mode === 'pipelined')
          assert.match(
            r.stderr,
            joinedRegExp(
              /alignment lookahead: each batch's alignment is searched on /,
              /(a worker thread|\d worker threads) while the 4 steps before it /,
              /compute \(its weights are 4 updates old\)/,
            ),
          );
        else assert.doesNotMatch(r.stderr, /alignment lookahead/);
      }
      const off = trainingLosses(runs.off);
      assert.equal(off.size, 6);
      for (const mode of ['on', 'pipelined']) {
        assert.deepEqual([...trainingLosses(runs[mode])], [...off], mode);
        assert.deepEqual(batches(runs[mode]), batches(runs.off), mode);
      }
    },
  );

  test(
    'a lookahead run stopped at a checkpoint and resumed trains the batches of the ' +
      "unbroken run; its first step is the plain run's",
    async () => {
      const { dir, config } = shortQuickstartRun(
        10,
        'xtts-lookahead-resume-',
        `  max_steps: 8\n${training}`,
        MICRO_MODEL,
      );
      const on = ['--set', 'training.alignment_lookahead=on'];
      const whole = join(dir, 'whole');
      const r1 = await runCli(['train', '--config', config, '--output', whole, ...on], { timeoutMs: 300_000 });
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const plain = join(dir, 'plain');
      const r2 = await runCli(
        [
          'train',
          '--config',
          config,
          '--output',
          plain,
          '--max-steps',
          '2',
          '--set',
          'training.alignment_lookahead=off',
        ],
        { timeoutMs: 300_000 },
      );
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      assert.equal(trainingLosses(whole).get(1), trainingLosses(plain).get(1));

      const parted = join(dir, 'parted');
      const r3 = await runCli(['train', '--config', config, '--output', parted, '--max-steps', '4', ...on], {
        timeoutMs: 300_000,
      });
      assert.equal(r3.code, 0, r3.stderr.slice(-2000));
      const r4 = await runCli(['train', '--config', config, '--output', parted, '--resume', ...on], {
        timeoutMs: 300_000,
      });
      assert.equal(r4.code, 0, r4.stderr.slice(-2000));
      assert.deepEqual(batches(parted), batches(whole));
      const losses = trainingLosses(parted);
      assert.equal(losses.size, 8);
      for (const [step, loss] of losses) assert.ok(Number.isFinite(loss), `step ${step}: ${loss}`);
      // Up to the checkpoint the two runs are one run.
      for (const step of [1, 2, 3, 4]) assert.equal(losses.get(step), trainingLosses(whole).get(step));
    },
  );
});
