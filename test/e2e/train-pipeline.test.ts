// device.pipeline_steps on the CPU backend (where `auto` leaves it off; `on` forces it, to test what it
// does): the next step is issued before the one before it is read back, and nothing the run computes
// or records changes — the same losses, step rows, validation and checkpoints as a run that waits for
// every step; a diverging run still stops at exactly training.max_nonfinite_steps.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CheckpointStore } from '../../src/core/training/checkpoint.js';
import { runCli } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun, trainingLosses } from '../helpers/short-clips.js';
import { tensorsDiffer } from '../helpers/checkpoints.js';

/** Each step's row without its timings. */
function stepRows(run: string): unknown[] {
  const db = new Database(join(run, 'run.sqlite'), { readonly: true });
  const rows = db
    .prepare(
      'SELECT step, epoch, batch_index, batch_size, tokens, frames, learning_rate, ' +
        'loss, grad_norm, non_finite FROM steps ORDER BY step',
    )
    .all();
  db.close();
  return rows;
}

function validation(run: string): unknown[] {
  const db = new Database(join(run, 'run.sqlite'), { readonly: true });
  const rows = db.prepare("SELECT step, value FROM metrics WHERE name = 'loss/val' ORDER BY step").all();
  db.close();
  return rows;
}

describe('device.pipeline_steps', () => {
  test(
    'a pipelined run computes and records what a waiting run does: losses, step ' + 'rows, validation, checkpoints',
    async () => {
      const { dir, config } = shortQuickstartRun(
        10,
        'xtts-pipeline-',
        `  max_steps: 9
  log_every: 3
  validate_every: 4
  checkpoint_every: 4
  eval_every: 1000
  eval_sentences: []
`,
        MICRO_MODEL,
      );
      const runs: Record<string, string> = {};
      for (const mode of ['off', 'on']) {
        runs[mode] = join(dir, mode);
        const r = await runCli(
          ['train', '--config', config, '--output', runs[mode], '--set', `device.pipeline_steps=${mode}`],
          { timeoutMs: 300_000 },
        );
        assert.equal(r.code, 0, r.stderr.slice(-2000));
        if (mode === 'on')
          assert.match(r.stderr, /pipelined steps: each step is issued before the one before it is waited for/);
        else assert.doesNotMatch(r.stderr, /pipelined steps/);
      }
      assert.deepEqual([...trainingLosses(runs.on)], [...trainingLosses(runs.off)]);
      assert.equal(trainingLosses(runs.on).size, 3);
      const rows = stepRows(runs.off);
      assert.equal(rows.length, 9);
      assert.deepEqual(stepRows(runs.on), rows);
      assert.equal(validation(runs.off).length, 2);
      assert.deepEqual(validation(runs.on), validation(runs.off));
      const kept = readdirSync(join(runs.off, 'checkpoints'))
        .filter((n) => n.startsWith('step-'))
        .sort();
      assert.ok(kept.length >= 2, kept.join(', '));
      assert.deepEqual(
        readdirSync(join(runs.on, 'checkpoints'))
          .filter((n) => n.startsWith('step-'))
          .sort(),
        kept,
      );
      for (const step of kept) {
        for (const file of ['weights.safetensors', 'optimizer.safetensors']) {
          const differ = tensorsDiffer(join(runs.on, 'checkpoints', step), join(runs.off, 'checkpoints', step), file);
          assert.equal(differ, null, `${step}/${file}: ${differ}`);
        }
      }
    },
  );

  test(
    'a step issued without waiting for it has its finite flag (or, where it logs, ' +
      'its losses) read back before the next step is issued (queued after it, the copy ' +
      'would wait for that step too)',
    async () => {
      const tf = await import('@tensorflow/tfjs-core');
      const { train } = await import('../../src/core/training/trainer.js');
      const { STEP_STATS } = await import('../../src/core/training/optim/train-step.js');
      const { loadConfig } = await import('../../src/core/config/load.js');
      const { dir, config } = shortQuickstartRun(
        10,
        'xtts-pipeline-order-',
        `  log_every: 4
  validate_every: 1000
  checkpoint_every: 1000
  eval_every: 1000
  eval_sentences: []
`,
        MICRO_MODEL,
      );
      // Flags (scalars) and stats (a vector of STEP_STATS) read back between two steps' ends, and a
      // tensor id made at each step's end: the readback of a step's own flag or stats reads a tensor
      // newer than the step before it.
      const events: ({ step: number; mark: number } | { read: number } | { logged: number })[] = [];
      const proto = tf.Tensor.prototype as unknown as {
        data: (this: import('@tensorflow/tfjs-core').Tensor) => Promise<unknown>;
      };
      const data = proto.data;
      proto.data = function (this: import('@tensorflow/tfjs-core').Tensor) {
        if (this.rank === 0 || (this.rank === 1 && this.size === STEP_STATS.length)) events.push({ read: this.id });
        return data.call(this);
      };
      try {
        const loaded = loadConfig(config).loaded!;
        loaded.config.device.pipeline_steps = 'on';
        await train({
          loaded,
          backend: 'wasm',
          maxSteps: 9,
          outputDir: join(dir, 'run'),
          onProgress: ({ step }) => events.push({ logged: step }),
          onStep: ({ step }) => {
            const t = tf.scalar(0);
            events.push({ step, mark: t.id });
            t.dispose();
          },
        });
      } finally {
        proto.data = data;
      }
      const steps = events.filter((e): e is { step: number; mark: number } => 'step' in e);
      assert.deepEqual(
        steps.map((e) => e.step),
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
      );
      // Steps 1-8 are issued without waiting (9 is the last); 4 and 8 read their losses instead of
      // their flags, and their progress lines come once those are read, after later steps are issued.
      for (const step of [2, 3, 4, 5, 6, 7, 8]) {
        const from = events.indexOf(steps[step - 2]);
        const to = events.indexOf(steps[step - 1]);
        const reads = events
          .slice(from + 1, to)
          .filter((e): e is { read: number } => 'read' in e && e.read > steps[step - 2].mark);
        assert.ok(
          reads.length > 0,
          `step ${step}: no flag or stats of its own read back before it ` +
            `ended: ${JSON.stringify(events.slice(from, to + 1))}`,
        );
      }
      const logged = events.filter((e): e is { logged: number } => 'logged' in e).map((e) => e.logged);
      assert.deepEqual(logged, [4, 8, 9]);
      // Four steps in flight: step 4's line once step 8 was issued, after step 7's record and before
      // step 8's (step 8's comes while step 9, the last, is waited for: before step 9's record).
      const at = events.findIndex((e) => 'logged' in e && e.logged === 4);
      assert.ok(
        at > events.indexOf(steps[6]) && at < events.indexOf(steps[7]),
        `step 4's progress line did not come while step 8 was issued: ${JSON.stringify(events)}`,
      );
    },
  );

  test(
    'a pipelined run whose updates are all non-finite stops at exactly ' +
      'max_nonfinite_steps, without a checkpoint of its state',
    async () => {
      const { dir, config } = shortQuickstartRun(
        10,
        'xtts-pipeline-nan-',
        `  log_every: 50
  validate_every: 1000
  checkpoint_every: 1000
  eval_every: 1000
  eval_sentences: []
`,
        MICRO_MODEL,
      );
      const out = join(dir, 'run');
      const on = ['--set', 'device.pipeline_steps=on'];
      const first = await runCli(['train', '--config', config, '--output', out, '--max-steps', '1', ...on, '--json'], {
        timeoutMs: 300_000,
      });
      assert.equal(first.code, 0, first.stderr.slice(-2000));
      const store = new CheckpointStore(out);
      const ckpt = store.load<Record<string, unknown>>(store.latest()!);
      // At the edge of float32: a legal (finite) checkpoint whose every forward pass overflows.
      for (const w of ckpt.weights) if (w.dtype === 'float32') w.data[0] = 3e38;
      store.save(1, ckpt, { keep: 3 });
      const before = readdirSync(join(out, 'checkpoints'))
        .filter((n) => n.startsWith('step-'))
        .sort();
      const stopped = await runCli(
        [
          'train',
          '--config',
          config,
          '--output',
          out,
          '--resume',
          '--max-steps',
          '40',
          '--set',
          'training.max_nonfinite_steps=3',
          ...on,
          '--json',
        ],
        { timeoutMs: 300_000 },
      );
      assert.equal(stopped.code, 1, stopped.stderr.slice(-2000));
      assert.equal(stopped.json.result.stoppedBy, 'non_finite');
      assert.equal(stopped.json.result.nonFiniteSteps, 3);
      // 1 + exactly 3 skipped updates; the 5th to 8th, issued already, are dropped
      assert.equal(stopped.json.result.steps, 4);
      assert.deepEqual(
        readdirSync(join(out, 'checkpoints'))
          .filter((n) => n.startsWith('step-'))
          .sort(),
        before,
      );
      const db = new Database(join(out, 'run.sqlite'), { readonly: true });
      assert.deepEqual(db.prepare('SELECT step, non_finite FROM steps WHERE step > 1 ORDER BY step').all(), [
        { step: 2, non_finite: 1 },
        { step: 3, non_finite: 1 },
        { step: 4, non_finite: 1 },
      ]);
      db.close();
    },
  );
});
