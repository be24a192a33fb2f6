// Data-parallel `xtts train` as a process, with CPU replicas (worker threads, each its own engine):
// the same losses as one device with the same global batch over 12 steps, a resume that continues
// the same curve, gradient accumulation and uneven shares, every replica's part of every step in
// run.sqlite, clear refusals for what cannot run, and the bfloat16 exchange (replicas identical, losses near).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { runCli as run } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun, trainingLosses } from '../helpers/short-clips.js';
import { capturedMatchesEager, onGl, withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { joinedRegExp } from '../helpers/regexp.js';
import { latestCheckpoint, tensorsDiffer } from '../helpers/checkpoints.js';

const runCli = (args: string[]) => run(args, { timeoutMs: 600_000 });

// The 12 shortest quickstart clips keep each step cheap on a 2-core CPU.
// Replicas sum their rows' gradients in another order than one device sums the batch's (float32:
// about 1e-6 of the loss apart at step 1). With the quickstart's Adam ε 1e-9 and learning rate 3e-3,
// entries whose gradient is that small get a step of ±lr either way (Adam divides by √v) and a
// changed alignment path follows: measured, the runs agree within 1e-5 for 6 steps, then part (4e-2
// at step 20). ε 1e-6 and lr 1e-3 keep rounding from being amplified, so the steps compare the
// computation itself.
const { dir, config } = shortQuickstartRun(
  12,
  'xtts-parallel-',
  `  max_steps: 12
  learning_rate: 1e-3
  optimizer:
    epsilon: 1e-6
  log_every: 1
  validate_every: 1000
  checkpoint_every: 1000
  eval_every: 1000
  eval_sentences: []
`,
  MICRO_MODEL,
);

function sameLosses(a: Map<number, number>, b: Map<number, number>, steps: number[]): void {
  for (const s of steps) {
    assert.ok(a.has(s) && b.has(s), `step ${s} missing`);
    const x = a.get(s)!;
    const y = b.get(s)!;
    assert.ok(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(y)), `step ${s}: ${x} with replicas, ${y} on one device`);
  }
}

/**
 * A bfloat16 exchange's losses against the float32 exchange's: step 1's forward precedes any update (equal); the
 * rounded gradients move the weights a little otherwise (every step within 2e-2, and not all steps equal).
 */
function bfloat16Losses(bf16: Map<number, number>, f32: Map<number, number>, steps: number): void {
  assert.equal(bf16.size, steps);
  assert.equal(bf16.get(1), f32.get(1));
  for (const [step, loss] of bf16) {
    const ref = f32.get(step)!;
    assert.ok(Number.isFinite(loss) && Math.abs(loss - ref) <= 2e-2 * Math.abs(ref), `step ${step}: ${loss}, ${ref}`);
  }
  assert.ok(
    [...bf16].some(([step, loss]) => loss !== f32.get(step)),
    'the rounding changed nothing',
  );
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('xtts train --gpus (CPU replicas)', () => {
  test(
    '2 replicas: the losses of one device with the same global batch over 12 steps; ' +
      "each replica's part of every step recorded; a resume continues the same curve",
    async () => {
      const one = join(dir, 'one');
      const r1 = await runCli(['train', '--config', config, '--backend', 'wasm', '--output', one, '--json']);
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const two = join(dir, 'two');
      const r2 = await runCli(['train', '--config', config, '--gpus', 'cpu:2', '--output', two]);
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      assert.match(
        r2.stderr,
        joinedRegExp(
          /data-parallel: 2 replicas, 2 CPU replicas on the wasm backend /,
          /\(device\.gpus cpu:2\); each trains on 2 of every batch of 4/,
        ),
      );
      assert.match(r2.stderr, /replicas: 0 wasm, 1 wasm/);
      // One progress line per log interval, not one per replica.
      assert.equal((r2.stderr.match(/^step +7\/12 /gm) ?? []).length, 1, r2.stderr);
      sameLosses(trainingLosses(two), trainingLosses(one), range(1, 12));

      const db = new Database(join(two, 'run.sqlite'), { readonly: true });
      const parts = db
        .prepare(
          'SELECT step, rank, samples, all_reduce_ms, forward_backward_ms FROM replica_steps ORDER BY step, rank',
        )
        .all() as { step: number; rank: number; samples: number; all_reduce_ms: number; forward_backward_ms: number }[];
      const steps = db.prepare('SELECT step, batch_size, all_reduce_ms FROM steps ORDER BY step').all() as {
        step: number;
        batch_size: number;
        all_reduce_ms: number;
      }[];
      const replicas = JSON.parse((db.prepare("SELECT v FROM meta WHERE k = 'replicas'").get() as { v: string }).v);
      db.close();
      assert.deepEqual(replicas, ['wasm', 'wasm']);
      assert.equal(parts.length, 24);
      for (const s of steps) {
        const mine = parts.filter((p) => p.step === s.step);
        assert.deepEqual(
          mine.map((p) => p.rank),
          [0, 1],
        );
        assert.equal(
          mine[0].samples + mine[1].samples,
          s.batch_size,
          `step ${s.step}: the replicas' utterances make the batch`,
        );
        assert.ok(mine.every((p) => p.forward_backward_ms > 0 && p.all_reduce_ms > 0));
        assert.ok(s.all_reduce_ms > 0);
      }

      // The profiler reads the replicas: each one's spans, and the all-reduce's share graded.
      const prof = await runCli(['profile-bottleneck', '--run', two, '--warmup', '2', '--json']);
      assert.ok(prof.code === 0 || prof.code === 1, prof.stderr);
      const p = prof.json.result;
      assert.deepEqual(
        p.replicas.map((x: { rank: number; device: string }) => [x.rank, x.device]),
        [
          [0, 'wasm'],
          [1, 'wasm'],
        ],
      );
      assert.ok(
        p.replicas.every(
          (x: { forwardBackwardMs: number; samplesPerStep: number }) =>
            x.forwardBackwardMs > 0 && x.samplesPerStep > 1 && x.samplesPerStep <= 2,
        ),
        JSON.stringify(p.replicas),
      );
      const verdict = p.verdicts.find((v: { id: string }) => v.id === 'all-reduce-bound');
      assert.match(
        verdict.evidence,
        joinedRegExp(
          /rank 0 spent [0-9.]+% of the wall time in the all-reduce .* /,
          /forward\/backward per replica 0: [0-9.]+ ms, 1: [0-9.]+ ms/,
        ),
      );
      const human = await runCli(['profile-bottleneck', '--run', two, '--warmup', '2']);
      assert.match(human.stdout, /2 data-parallel replicas/);

      // Stopped at step 6 and resumed, every replica starts from the checkpoint's weights and
      // optimizer state: the same curve as the run that never stopped.
      const three = join(dir, 'three');
      const r3 = await runCli(['train', '--config', config, '--gpus', 'cpu:2', '--max-steps', '6', '--output', three]);
      assert.equal(r3.code, 0, r3.stderr.slice(-2000));
      const r4 = await runCli(['train', '--config', config, '--gpus', 'cpu:2', '--output', three, '--resume']);
      assert.equal(r4.code, 0, r4.stderr.slice(-2000));
      assert.match(r4.stderr, /resumed from .* at step 6/);
      const [a, b] = [trainingLosses(three), trainingLosses(two)];
      for (const s of range(7, 12)) assert.equal(a.get(s), b.get(s), `step ${s} after the resume`);
    },
  );

  test('3 replicas on uneven shares (2, 1, 1) with gradient accumulation: the losses of one device', async () => {
    const args = ['--config', config, '--max-steps', '4', '--set', 'training.grad_accumulation_steps=2'];
    const one = join(dir, 'acc-one');
    const r1 = await runCli(['train', ...args, '--backend', 'wasm', '--output', one]);
    assert.equal(r1.code, 0, r1.stderr.slice(-2000));
    const three = join(dir, 'acc-three');
    const r3 = await runCli(['train', ...args, '--gpus', 'cpu:3', '--output', three]);
    assert.equal(r3.code, 0, r3.stderr.slice(-2000));
    assert.match(r3.stderr, /each trains on 1–2 of every batch of 4/);
    sameLosses(trainingLosses(three), trainingLosses(one), range(1, 4));
  });

  test(
    'the bfloat16 exchange: the replicas stay identical (checked at every checkpoint); step 1 is the float32 ' +
      "exchange's loss, later steps within a rounding's reach of it",
    async () => {
      const args = ['--config', config, '--max-steps', '4', '--gpus', 'cpu:2'];
      const f32 = join(dir, 'x-f32');
      const r1 = await runCli(['train', ...args, '--output', f32]);
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const bf16 = join(dir, 'x-bf16');
      const r2 = await runCli(['train', ...args, '--set', 'device.gradient_exchange=bfloat16', '--output', bf16]);
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      bfloat16Losses(trainingLosses(bf16), trainingLosses(f32), 4);
    },
  );

  test(
    'what cannot run is refused with what to do: more replicas than a batch has ' +
      'utterances, GPUs that are not here, a malformed --gpus',
    async () => {
      const many = await runCli([
        'train',
        '--config',
        config,
        '--gpus',
        'cpu:5',
        '--max-steps',
        '1',
        '--output',
        join(dir, 'many'),
        '--json',
      ]);
      assert.equal(many.code, 2, many.stderr);
      assert.equal(many.json.error.code, 'GPUS_EXCEED_BATCH');
      assert.match(many.json.error.suggestions.join(' '), /raise batching\.batch_size to at least 5/);
      const gpus = await runCli([
        'train',
        '--config',
        config,
        '--gpus',
        '0,1',
        '--max-steps',
        '1',
        '--output',
        join(dir, 'gpus'),
        '--json',
      ]);
      assert.equal(gpus.code, 3, gpus.stderr);
      assert.equal(gpus.json.error.code, 'BACKEND_UNAVAILABLE');
      const bad = await runCli([
        'train',
        '--config',
        config,
        '--gpus',
        '0,,1',
        '--max-steps',
        '1',
        '--output',
        join(dir, 'bad'),
        '--json',
      ]);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.json.error.message, /--gpus "0,,1": an empty device in the list/);
      const cpuOnWebgpu = await runCli([
        'train',
        '--config',
        config,
        '--gpus',
        'cpu:2',
        '--backend',
        'webgpu',
        '--max-steps',
        '1',
        '--output',
        join(dir, 'mix'),
        '--json',
      ]);
      assert.equal(cpuOnWebgpu.code, 2, cpuOnWebgpu.stderr);
      assert.equal(cpuOnWebgpu.json.error.code, 'GPUS_INVALID');
    },
  );
});

describe('xtts train --gpus (WebGPU replicas)', { skip: withoutLlvmpipe }, () => {
  test(
    '2 WebGPU replicas, each its own Dawn device in its own thread: the losses of ' + 'one WebGPU device, finite',
    async () => {
      const args = ['--config', config, '--max-steps', '3'];
      const one = join(dir, 'gl-one');
      // Replicas align each batch after the step before it; one webgpu device would look ahead
      // (training.alignment_lookahead).
      const r1 = await run(
        [
          'train',
          ...args,
          '--backend',
          'webgpu',
          '--set',
          'device.model_device=llvmpipe',
          '--set',
          'training.alignment_lookahead=off',
          '--output',
          one,
        ],
        { timeoutMs: 600_000, env: onGl },
      );
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const two = join(dir, 'gl-two');
      const r2 = await run(['train', ...args, '--gpus', 'llvmpipe,llvmpipe', '--output', two], {
        timeoutMs: 600_000,
        env: onGl,
      });
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      assert.match(r2.stderr, /replicas: 0 webgpu llvmpipe.*, 1 webgpu llvmpipe/);
      assert.match(r2.stderr, /some replicas share a GPU and take turns on it/);
      const [a, b] = [trainingLosses(one), trainingLosses(two)];
      assert.equal(a.size, 3);
      for (const [step, loss] of a) assert.ok(Number.isFinite(loss), `step ${step}: ${loss}`);
      sameLosses(b, a, range(1, 3));
      // The bfloat16 exchange through the device's packing and sum programs: in sync at the last checkpoint.
      const bf16 = join(dir, 'gl-bf16');
      const r3 = await run(
        [
          'train',
          ...args,
          '--gpus',
          'llvmpipe,llvmpipe',
          '--set',
          'device.gradient_exchange=bfloat16',
          '--output',
          bf16,
        ],
        { timeoutMs: 600_000, env: onGl },
      );
      assert.equal(r3.code, 0, r3.stderr.slice(-2000));
      bfloat16Losses(trainingLosses(bf16), b, 3);
    },
  );

  test(
    '2 WebGPU replicas with step capture and 2 micro-batches a step: from step 4 every replica replays both ' +
      'micro-batches, their alignment forwards and the update, with the losses, weights and moments of eager ' +
      'replicas bit for bit',
    async () => {
      const steps = 5;
      const { replayed } = await capturedMatchesEager(config, join(dir, 'gl-capture'), steps, [
        '--gpus',
        'llvmpipe,llvmpipe',
        '--set',
        'batching.buckets=1',
        '--set',
        'training.grad_accumulation_steps=2',
      ]);
      // Each micro-batch's phase (first, accumulate) and the update: planned at step 1, recorded at 2 and 3 (they
      // agree), replayed from 4 on.
      assert.deepEqual(replayed, [0, 0, 0, 1, 1]);
      const db = new Database(join(dir, 'gl-capture', 'webgpu-captured', 'run.sqlite'), { readonly: true });
      const rows = db
        .prepare('SELECT step, rank, replayed, peer_wait_ms, sync_ms, overlap_ms FROM replica_steps')
        .all() as {
        step: number;
        rank: number;
        replayed: number;
        peer_wait_ms: number;
        sync_ms: number;
        overlap_ms: number;
      }[];
      const capture = JSON.parse(
        (db.prepare("SELECT v FROM meta WHERE k = 'replicaStepCapture'").get() as { v: string }).v,
      ) as {
        rank: number;
        replayedSteps: number;
        updates: { replayedCalls: number };
        alignment: { replayedCalls: number };
        shapes: { shape: string; state: string; replays: number }[];
      }[];
      db.close();
      assert.equal(rows.length, 2 * steps);
      for (const r of rows) {
        assert.equal(r.replayed, r.step >= 4 ? 1 : 0, JSON.stringify(r));
        assert.ok(r.peer_wait_ms >= 0 && r.peer_wait_ms <= r.sync_ms, JSON.stringify(r));
        assert.ok(r.overlap_ms >= 0, JSON.stringify(r));
      }
      // The last micro-batch makes its exchange buckets (read back as the replay makes them): captured apart.
      for (const c of capture) {
        const exchanged = c.shapes.filter((x) => x.shape.endsWith(' exchanged'));
        assert.deepEqual(
          exchanged.map((x) => [x.state, x.replays]),
          [['replay', 2]],
          JSON.stringify(c.shapes),
        );
      }
      // 2 micro-batches of steps 4 and 5; the alignment forward (one shape: 10 calls) from its 4th call on.
      assert.deepEqual(
        capture.map((c) => [c.rank, c.replayedSteps, c.alignment.replayedCalls, c.updates.replayedCalls]),
        [
          [0, 4, 7, 2],
          [1, 4, 7, 2],
        ],
      );
    },
  );

  test(
    'bfloat16 exchange in many buckets, replayed: the all-reduce overlapped with the backward pass gives the ' +
      'losses, weights and moments of the one after it bit for bit, the replicas in sync',
    async () => {
      const steps = 6;
      const train = (out: string, overlap: string) =>
        run(
          [
            'train',
            '--config',
            config,
            '--output',
            out,
            '--max-steps',
            String(steps),
            '--gpus',
            'llvmpipe,llvmpipe',
            '--set',
            'batching.buckets=1',
            '--set',
            'device.gradient_exchange=bfloat16',
            '--set',
            `training.checkpoint_every=${steps}`,
            '--json',
          ],
          // Buckets of 1,000 floats: the micro model's gradient in dozens of them, as a large model's is in 4 Mi.
          { timeoutMs: 600_000, env: { ...onGl, XTTS_ALLREDUCE_BUCKET: '1000', XTTS_EXCHANGE_OVERLAP: overlap } },
        );
      const [on, off] = [join(dir, 'gl-overlap-on'), join(dir, 'gl-overlap-off')];
      const [a, b] = [await train(on, 'on'), await train(off, 'off')];
      // A replica whose weights differ from rank 0's stops the run before its checkpoint (REPLICAS_DIVERGED).
      for (const r of [a, b]) assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.deepEqual(a.json.result.lossCurve, b.json.result.lossCurve);
      for (const file of ['weights.safetensors', 'optimizer.safetensors'])
        assert.equal(tensorsDiffer(latestCheckpoint(on), latestCheckpoint(off), file), null, file);
      const db = new Database(join(on, 'run.sqlite'), { readonly: true });
      const replayed = db.prepare('SELECT COUNT(*) AS n FROM replica_steps WHERE replayed = 1').get() as { n: number };
      db.close();
      // Steps 4 to 6 of both replicas replayed (planned at 1, recorded at 2 and 3).
      assert.equal(replayed.n, 6);
    },
  );
});

describe('xtts train with a data device', () => {
  test(
    'device.data_device cpu: validation and eval run there from snapshots, with the ' +
      'figures the training device gives; the best checkpoint follows them',
    async () => {
      const args = [
        '--config',
        config,
        '--max-steps',
        '8',
        '--set',
        'training.validate_every=4',
        '--set',
        'training.eval_every=4',
        '--set',
        'training.eval_sentences=[{text: "The boy was there."}]',
      ];
      const here = join(dir, 'here');
      const r1 = await runCli(['train', ...args, '--output', here]);
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const side = join(dir, 'side');
      const r2 = await runCli(['train', ...args, '--set', 'device.data_device=cpu', '--output', side]);
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      assert.match(
        r2.stderr,
        /data device: wasm runs the validation passes and eval synthesis from weight snapshots while training goes on/,
      );
      assert.match(r2.stderr, /step 4: validation loss [0-9.]+ \(best\).* \(on wasm, \d+ steps later\)/);
      assert.match(r2.stderr, /eval: sentence-1 .* \(step 8, on wasm, [0-9.]+ s\)/);
      const metrics = (run: string, name: string) => {
        const db = new Database(join(run, 'run.sqlite'), { readonly: true });
        const rows = db.prepare('SELECT step, value FROM metrics WHERE name = ? ORDER BY step').all(name) as {
          step: number;
          value: number;
        }[];
        db.close();
        return rows;
      };
      // The same weights at the same steps, the same validation: only where it ran differs.
      const val = metrics(side, 'loss/val');
      assert.deepEqual(
        val.map((v) => v.step),
        [4, 8],
      );
      assert.deepEqual(val, metrics(here, 'loss/val'));
      assert.deepEqual(metrics(side, 'align/duration_error'), metrics(here, 'align/duration_error'));
      assert.deepEqual(
        metrics(side, 'eval/duration_ratio').map((r) => r.step),
        [4, 8],
      );
      const files = (run: string) => readdirSync(join(run, 'eval'), { recursive: true }).map(String).sort();
      assert.deepEqual(files(side), files(here));
      assert.ok(files(side).includes(join('step-00000008', 'sentence-1.wav')), files(side).join(', '));
      const best = val.reduce((x, y) => (y.value < x.value ? y : x)).step;
      assert.equal(
        readFileSync(join(side, 'checkpoints', 'best'), 'utf8').trim(),
        `step-${String(best).padStart(8, '0')}`,
      );
      assert.equal(
        readFileSync(join(here, 'checkpoints', 'best'), 'utf8').trim(),
        `step-${String(best).padStart(8, '0')}`,
      );
    },
  );
});
