// `xtts train` on the tests' real WebGPU device (Dawn on Mesa's llvmpipe through OpenGL ES) with step
// capture (device.step_capture): steps 1–3 run eagerly (plan, two recordings that must agree), the rest
// are replays — and the run's losses, validation and weights are those of a run that never replays,
// bit for bit. The eager run keeps Dawn's bounds checks (device.bounds_checks: on) and the replayed one
// runs without them (the default): the same bits also say that no program of a step reads or writes
// outside its buffers (unclamped, such a read would take whatever lies there). Validation and checkpoints
// between replays read the weights the replays write; steps between log intervals read only whether
// their update was made.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun, trainingLosses } from '../helpers/short-clips.js';
import { onGl, withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { joinedRegExp } from '../helpers/regexp.js';
import { tensorsDiffer } from '../helpers/checkpoints.js';

describe('xtts train with step capture (WebGPU)', { skip: withoutLlvmpipe }, () => {
  test(
    'replayed steps train exactly as eager ones, and shaders without bounds checks as with them: ' +
      'the same losses, validation and weights; run.sqlite says which steps replayed (with the pitch inputs)',
    async () => {
      const { dir, config } = shortQuickstartRun(
        12,
        'xtts-capture-',
        `  max_steps: 8
  log_every: 2
  validate_every: 4
  checkpoint_every: 4
  eval_every: 1000
  eval_sentences: []
`,
        MICRO_MODEL,
      );
      // model.speaker_pitch, pitch_contour and reference_rate: the reference's pitch, the target frames' and the
      // speaker's rate (batch inputs of their own) and their ops go through the recording too.
      const args = ['train', '--config', config, '--backend', 'webgpu', '--set', 'device.model_device=llvmpipe'].concat(
        [
          '--set',
          'model.speaker_pitch=true',
          '--set',
          'model.pitch_contour=true',
          '--set',
          'model.reference_rate=true',
        ],
      );
      const eager = join(dir, 'eager');
      const checked = ['--set', 'device.bounds_checks=on'];
      const r1 = await runCli([...args, ...checked, '--set', 'device.step_capture=off', '--output', eager], {
        timeoutMs: 600_000,
        env: onGl,
      });
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      assert.doesNotMatch(r1.stderr, /step capture/);
      assert.doesNotMatch(r1.stderr, /without bounds checks/);
      const replayed = join(dir, 'replayed');
      const r2 = await runCli([...args, '--output', replayed], { timeoutMs: 600_000, env: onGl });
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      assert.match(r2.stderr, /backend: webgpu — .*; shaders without bounds checks\n/);
      assert.match(
        r2.stderr,
        joinedRegExp(
          /step capture: bucket 4×\d+×\d+×48 replayed from here on \(\d+ /,
          /programs, [\d.]+ MiB of buffers; [\d.]+ [KMG]iB of the eager runs. /,
          /pooled buffers released\)/,
        ),
      );
      assert.match(r2.stdout, /programs\/step replayed/);
      // Each batch's alignment forward too: the first batch of the shape eager, two recorded, the rest replayed.
      assert.match(
        r2.stderr,
        /step capture: the alignment forward of batches 4×\d+×\d+ replayed from here on \(\d+ programs/,
      );
      // Both runs search each batch's alignment while the four steps before it compute (webgpu's default, with the
      // steps pipelined).
      for (const r of [r1, r2]) {
        assert.match(
          r.stderr,
          joinedRegExp(
            /alignment lookahead: each batch's alignment is searched on /,
            /(a worker thread|\d worker threads) while the 4 steps before it /,
            /compute \(its weights are 4 updates old\)/,
          ),
        );
        assert.match(r.stderr, /pipelined steps: each step is issued before the one before it is waited for/);
      }

      assert.deepEqual([...trainingLosses(replayed)], [...trainingLosses(eager)]);
      const read = (run: string) => {
        const db = new Database(join(run, 'run.sqlite'), { readonly: true });
        const out = {
          val: db.prepare("SELECT step, value FROM metrics WHERE name = 'loss/val' ORDER BY step").all(),
          pitch: db.prepare("SELECT step, value FROM metrics WHERE name = 'loss/pitch' ORDER BY step").all() as {
            value: number;
          }[],
          replayed: (db.prepare('SELECT replayed FROM steps ORDER BY step').all() as { replayed: number | null }[]).map(
            (r) => r.replayed,
          ),
          // Steps between log intervals read only their finite flag: every update must have been made.
          nonFinite: (db.prepare('SELECT COUNT(*) AS n FROM steps WHERE non_finite = 1').get() as { n: number }).n,
          capture: JSON.parse((db.prepare("SELECT v FROM meta WHERE k = 'stepCapture'").get() as { v: string }).v),
          uploads: JSON.parse((db.prepare("SELECT v FROM meta WHERE k = 'batchUploads'").get() as { v: string }).v),
        };
        db.close();
        return out;
      };
      const [a, b] = [read(eager), read(replayed)];
      assert.deepEqual(b.val, a.val);
      // The pitch predictor's loss, logged at every interval, the same in both.
      assert.deepEqual(b.pitch, a.pitch);
      assert.ok(a.pitch.length === 4 && a.pitch.every((p) => p.value > 0), JSON.stringify(a.pitch));
      assert.deepEqual([a.nonFinite, b.nonFinite], [0, 0]);
      assert.equal(a.val.length, 2);
      assert.deepEqual(a.replayed, [0, 0, 0, 0, 0, 0, 0, 0]);
      assert.deepEqual(b.replayed, [0, 0, 0, 1, 1, 1, 1, 1]);
      // Every training batch (4 rows of mel and reference frames: over 64 KiB) was uploaded through a
      // staging buffer or, none being free, through writeBuffer; the summary says how many of each.
      for (const [run, r] of [
        [a, r1],
        [b, r2],
      ] as const) {
        assert.ok(run.uploads.staged > 0 && run.uploads.staged + run.uploads.missed >= 8, JSON.stringify(run.uploads));
        assert.match(
          r.stdout,
          new RegExp(
            `batch uploads: ${run.uploads.staged} through reused staging ` +
              `buffers, ${run.uploads.missed} through writeBuffer`,
          ),
        );
      }
      assert.equal(a.capture.off, 'device.step_capture is off');
      assert.equal(b.capture.replayedSteps, 5);
      assert.equal(b.capture.shapes[0].state, 'replay');
      assert.equal(b.capture.shapes[0].replays, 5);
      // Host time per program, encoding and submitting apart (Dawn records the driver's commands at submit).
      for (const k of ['encodeUsPerProgram', 'submitUsPerProgram'])
        assert.ok(b.capture.shapes[0][k] > 0, `${k} ${b.capture.shapes[0][k]}`);
      assert.equal(a.capture.alignment, null);
      assert.deepEqual(
        [
          b.capture.alignment.shapes.length,
          b.capture.alignment.shapes[0].state,
          b.capture.alignment.eagerCalls,
          b.capture.alignment.replayedCalls,
        ],
        [1, 'replay', 3, 5],
      );
      // Device spans need timestamp queries, which Dawn does not offer on OpenGL ES: the run says so.
      for (const spans of [b.capture.deviceSpans, b.capture.alignment.deviceSpans])
        assert.deepEqual(spans, { available: false, reason: 'the WebGPU device has no timestamp-query feature' });
      assert.equal(a.capture.deviceSpans, undefined);
      // The profiler says how many of the steps it judges were replays, and what a replay costs the host.
      const profile = await runCli(['profile-bottleneck', '--run', replayed, '--warmup', '2'], { timeoutMs: 120_000 });
      assert.match(
        profile.stdout,
        joinedRegExp(
          /step capture: 5 of 6 measured steps replayed; bucket 4×\d+×\d+×48 /,
          /replayed \(\d+ programs, [\d.]+ µs of host time encoding each and /,
          /[\d.]+ µs submitting it\); alignment forward 4×\d+×\d+ replayed \(\d+ /,
          /programs\)/,
        ),
      );
      assert.match(
        profile.stdout,
        /device time of the replays not measured: the WebGPU device has no timestamp-query feature/,
      );
      for (const step of ['step-00000004', 'step-00000008']) {
        for (const file of ['weights.safetensors', 'optimizer.safetensors']) {
          const differ = tensorsDiffer(join(replayed, 'checkpoints', step), join(eager, 'checkpoints', step), file);
          assert.equal(differ, null, `${step}/${file}: ${differ}`);
        }
      }
    },
  );

  test(
    'gradient accumulation: the first, the in-between and the updating micro-batches ' +
      'are captured apart and replay the eager run exactly',
    async () => {
      const { dir, config } = shortQuickstartRun(
        12,
        'xtts-capture-acc-',
        `  max_steps: 6
  grad_accumulation_steps: 3
  log_every: 2
  validate_every: 1000
  checkpoint_every: 1000
  eval_every: 1000
  eval_sentences: []
`,
        MICRO_MODEL,
      );
      const args = [
        'train',
        '--config',
        config,
        '--backend',
        'webgpu',
        '--set',
        'device.model_device=llvmpipe',
        '--set',
        'batching.batch_size=2',
      ];
      const eager = join(dir, 'eager');
      const r1 = await runCli([...args, '--set', 'device.step_capture=off', '--output', eager], {
        timeoutMs: 600_000,
        env: onGl,
      });
      assert.equal(r1.code, 0, r1.stderr.slice(-2000));
      const replayed = join(dir, 'replayed');
      const r2 = await runCli([...args, '--output', replayed], { timeoutMs: 600_000, env: onGl });
      assert.equal(r2.code, 0, r2.stderr.slice(-2000));
      for (const phase of ['first of 3', 'accumulate', 'update'])
        assert.match(r2.stderr, new RegExp(`step capture: bucket 2×\\d+×\\d+×48 \\(${phase}\\) replayed from here on`));
      assert.deepEqual([...trainingLosses(replayed)], [...trainingLosses(eager)]);
      const db = new Database(join(replayed, 'run.sqlite'), { readonly: true });
      const flags = db.prepare('SELECT replayed, non_finite FROM steps ORDER BY step').all() as {
        replayed: number;
        non_finite: number;
      }[];
      db.close();
      assert.deepEqual(
        flags.map((f) => f.replayed),
        [0, 0, 0, 1, 1, 1],
      );
      assert.deepEqual(
        flags.map((f) => f.non_finite),
        [0, 0, 0, 0, 0, 0],
      );
      for (const file of ['weights.safetensors', 'optimizer.safetensors']) {
        const differ = tensorsDiffer(
          join(replayed, 'checkpoints', 'step-00000006'),
          join(eager, 'checkpoints', 'step-00000006'),
          file,
        );
        assert.equal(differ, null, `${file}: ${differ}`);
      }
    },
  );

  test("device.matmul tiled trains as tfjs's matmul does, within float32 rounding, eagerly and replayed", async () => {
    const { dir, config } = shortQuickstartRun(
      12,
      'xtts-capture-tiled-',
      `  max_steps: 5
  log_every: 1
  validate_every: 1000
  checkpoint_every: 1000
  eval_every: 1000
  eval_sentences: []
`,
      MICRO_MODEL,
    );
    const args = ['train', '--config', config, '--backend', 'webgpu', '--set', 'device.model_device=llvmpipe'];
    const runs: Record<string, string> = {};
    for (const matmul of ['tfjs', 'tiled']) {
      runs[matmul] = join(dir, matmul);
      const r = await runCli([...args, '--set', `device.matmul=${matmul}`, '--output', runs[matmul]], {
        timeoutMs: 600_000,
        env: onGl,
      });
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.match(r.stderr, /replayed from here on/);
    }
    const [a, b] = [trainingLosses(runs.tfjs), trainingLosses(runs.tiled)];
    assert.equal(a.size, 5);
    for (const [step, loss] of a)
      assert.ok(
        Math.abs(b.get(step)! - loss) <= 1e-3 * Math.abs(loss),
        `step ${step}: ${b.get(step)} tiled, ${loss} tfjs`,
      );
  });

  test(
    'training.precision mixed_fp16 on an adapter without f16 subgroup matrices is ' +
      'refused before any work, saying what the adapter lacks',
    async () => {
      const { dir, config } = shortQuickstartRun(
        4,
        'xtts-capture-fp16-',
        `  max_steps: 2
`,
        MICRO_MODEL,
      );
      const out = join(dir, 'run');
      const r = await runCli(
        [
          'train',
          '--config',
          config,
          '--backend',
          'webgpu',
          '--set',
          'device.model_device=llvmpipe',
          '--set',
          'training.precision=mixed_fp16',
          '--output',
          out,
          '--json',
        ],
        { timeoutMs: 120_000, env: onGl },
      );
      assert.equal(r.code, 3, r.stderr.slice(-2000));
      assert.equal(r.json.error.code, 'BACKEND_UNAVAILABLE');
      assert.match(
        r.json.error.message,
        joinedRegExp(
          /training\.precision mixed_fp16 runs its matmuls on tensor cores .* /,
          /llvmpipe .* lacks [^(]*chromium-experimental-subgroup-matrix/,
        ),
      );
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    },
  );
});
