// A run is never lost and xtts writes only where it was told: the real CLI as a process on a micro
// model (four of the shortest quickstart clips, d_model 32, wasm: a step takes tens of ms), each
// refusal checked against a byte-for-byte snapshot of the folder it refused.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import { before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CheckpointStore } from '../../src/core/training/checkpoint.js';
import { processStartTime } from '../../src/core/training/run-lock.js';
import { decodeSafetensors, encodeSafetensors } from '../../src/core/training/safetensors.js';
import { assertNoStackTrace, describeRun, repoRoot, runCli, xttsBin } from '../helpers/cli.js';
import { microRun } from '../helpers/short-clips.js';

const { dir, config } = microRun('xtts-safety-');
const train = (args: string[]) =>
  runCli(['train', '--config', config, '--backend', 'wasm', ...args, '--json'], { timeoutMs: 300_000 });

/** Every file under `root` with its SHA-256 (folders as entries): what a refusal must leave exactly as it was. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) {
        out[`${relative(root, p)}/`] = '';
        walk(p);
      } else out[relative(root, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(root);
  return out;
}

function steps(runDir: string): number[] {
  return new CheckpointStore(runDir).list().map((c) => c.step);
}

/**
 * Rewrites one checkpoint's weights with `value` at the first element of every float tensor (as a diverged run would
 * leave it).
 */
function poisonWeights(ckptDir: string, value: number): void {
  const file = join(ckptDir, 'weights.safetensors');
  const { arrays, metadata } = decodeSafetensors(readFileSync(file), file);
  for (const a of arrays) if (a.dtype === 'float32') a.data[0] = value;
  writeFileSync(file, encodeSafetensors(arrays, metadata));
}

describe('a run is never lost', () => {
  const used = join(dir, 'runs', 'used');
  before(async () => {
    const first = await train(['--output', used, '--max-steps', '6']);
    assert.equal(first.code, 0, describeRun(first));
  });

  test(
    'train into a folder that holds a run is refused (exit 2) naming --resume and a ' +
      'free folder, and changes no byte there; --resume continues it',
    async () => {
      const before = snapshot(used);
      const again = await train(['--output', used, '--max-steps', '3']);
      assert.equal(again.code, 2, describeRun(again));
      assert.equal(again.json.status, 'error');
      assert.equal(again.json.error.code, 'RUN_FOLDER_USED');
      const runId = JSON.parse(readFileSync(join(used, 'xtts-run.json'), 'utf8')).runId;
      assert.match(again.json.error.message, new RegExp(`run ${runId}`));
      assert.ok(again.json.error.suggestions.some((s: string) => s.includes('--resume')));
      assert.ok(
        again.json.error.suggestions.some((s: string) => s.includes(`--output ${used}-2`)),
        again.json.error.suggestions.join('\n'),
      );
      assert.deepEqual(snapshot(used), before);
      // The run's id is in its database and in every checkpoint.
      const db = new Database(join(used, 'run.sqlite'), { readonly: true });
      assert.equal(JSON.parse((db.prepare("SELECT v FROM meta WHERE k = 'runId'").get() as { v: string }).v), runId);
      db.close();
      for (const c of new CheckpointStore(used).list())
        assert.equal(JSON.parse(readFileSync(join(c.dir, 'state.json'), 'utf8')).runId, runId);
      const resumed = await train(['--output', used, '--max-steps', '10', '--resume']);
      assert.equal(resumed.code, 0, describeRun(resumed));
      assert.equal(resumed.json.result.startStep, 6);
      assert.deepEqual(steps(used), [8, 10]); // keep_checkpoints: 2, of this run
      // The database holds both processes' steps, and says where the last one's begin (the profiler's trends).
      const meta = new Database(join(used, 'run.sqlite'), { readonly: true });
      const first = meta.prepare("SELECT v FROM meta WHERE k = 'processFirstStep'").get() as { v: string };
      const recorded = (meta.prepare('SELECT COUNT(*) AS n FROM steps').get() as { n: number }).n;
      meta.close();
      assert.equal(JSON.parse(first.v), 7);
      assert.equal(recorded, 10);
    },
  );

  test(
    "rotation removes only the current run's checkpoints: an older run's (no id) is " +
      'never touched, and --resume adopts that folder',
    async () => {
      const legacy = join(dir, 'runs', 'legacy');
      const first = await train(['--output', legacy, '--max-steps', '4']);
      assert.equal(first.code, 0, describeRun(first));
      // As xtts wrote run folders before runs had ids: no marker, no runId in the checkpoints.
      for (const c of new CheckpointStore(legacy).list()) {
        const p = join(c.dir, 'state.json');
        const { runId: _drop, ...state } = JSON.parse(readFileSync(p, 'utf8'));
        writeFileSync(p, JSON.stringify(state));
      }
      rmSync(join(legacy, 'xtts-run.json'));
      const oldest = new CheckpointStore(legacy).list()[0];
      const refused = await train(['--output', legacy, '--max-steps', '3']);
      assert.equal(refused.json.error.code, 'RUN_FOLDER_USED', describeRun(refused));
      const resumed = await train(['--output', legacy, '--max-steps', '14', '--resume']);
      assert.equal(resumed.code, 0, describeRun(resumed));
      assert.ok(existsSync(oldest.dir), "the older run's checkpoint was rotated away");
      assert.ok(existsSync(join(legacy, 'xtts-run.json')));
      assert.deepEqual(
        steps(legacy).filter((s) => s > 4),
        [12, 14],
      );
    },
  );

  test(
    '--dataset without --output trains into <output.dir>-<dataset folder>, never ' + "into the config's own run",
    async () => {
      const r = await train(['--dataset', join(dir, 'data'), '--max-steps', '2']);
      assert.equal(r.code, 0, describeRun(r));
      assert.equal(r.json.result.runDir, join(dir, 'runs', 'micro-data'));
      assert.ok(existsSync(join(dir, 'runs', 'micro-data', 'xtts-run.json')));
      assert.equal(existsSync(join(dir, 'runs', 'micro')), false);
    },
  );

  test('a feature cache removed under a running run: its checkpoints keep the steps (without the voices)', async () => {
    const run = join(dir, 'runs', 'cache-gone');
    const cache = join(dir, 'gone.sqlite');
    const child = spawn(
      process.execPath,
      [xttsBin, 'train', '--config', config, '--backend', 'wasm', '--output', run, '--max-steps', '40'].concat([
        '--set',
        `pipeline.cache.path=${cache}`,
      ]),
      { cwd: repoRoot, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    let removed = false;
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      // As `rm cache.sqlite` by hand while it trains: the producers keep reading the file they opened.
      if (!removed && /^step\s+2\//m.test(stderr)) {
        removed = true;
        for (const f of [cache, `${cache}-wal`, `${cache}-shm`]) rmSync(f, { force: true });
      }
    });
    await new Promise((resolve) => child.once('close', resolve));
    assert.ok(removed, stderr.slice(-1500));
    assert.match(stderr, /the trained voices were not computed .*the checkpoint holds the weights without them/);
    assert.ok(new CheckpointStore(run).latest()?.endsWith('step-00000040'), stderr.slice(-1500));
  });

  test('a resume with another model than its run names the command that began the run', async () => {
    const run = join(dir, 'runs', 'reshaped');
    const first = await train(['--output', run, '--max-steps', '2']);
    assert.equal(first.code, 0, describeRun(first));
    const other = await train(['--output', run, '--max-steps', '4', '--resume', '--set', 'model.d_model=48']);
    assert.equal(other.code, 2, describeRun(other));
    assert.match(
      other.json.error.suggestions[0],
      /^this run began with `xtts train --config .* --output .*reshaped --max-steps 2 --json`: resume it with the same/,
    );
    // Other mels: refused before any clip is read, with the same advice first.
    const mels = await train(['--output', run, '--max-steps', '4', '--resume', '--set', 'audio.sample_rate_hz=16000']);
    assert.equal(mels.code, 2, describeRun(mels));
    assert.equal(mels.json.error.code, 'RESUME_AUDIO_CHANGED');
    assert.match(mels.json.error.message, /audio\.sample_rate_hz 22050 \(the run\) vs 16000/);
    assert.match(mels.json.error.suggestions[0], /^this run began with `xtts train/);
    assert.match(mels.json.error.suggestions[1], /without a --set of audio\.sample_rate_hz/);
  });

  test('a resume reads the data its run trained on (no --dataset: refused); a run records its flags', async () => {
    const other = join(dir, 'other-data');
    cpSync(join(dir, 'data'), other, { recursive: true });
    const run = join(dir, 'runs', 'on-other');
    const first = await train(['--dataset', other, '--output', run, '--max-steps', '2']);
    assert.equal(first.code, 0, describeRun(first));
    const db = new Database(join(run, 'run.sqlite'), { readonly: true });
    const recorded = JSON.parse((db.prepare("SELECT v FROM meta WHERE k = 'config'").get() as { v: string }).v);
    db.close();
    assert.deepEqual([recorded.dataset.path, recorded.device.backend], [other, 'wasm']);
    // The documented resume without the --dataset the run began with would read the config's data.
    const plain = await train(['--output', run, '--max-steps', '4', '--resume']);
    assert.equal(plain.code, 2, describeRun(plain));
    assert.equal(plain.json.error.code, 'RESUME_OTHER_DATA');
    // A command that works as given (--output included).
    assert.ok(
      plain.json.error.suggestions[0].includes(`--dataset ${other} --output ${run} --resume`),
      plain.json.error.suggestions[0],
    );
    const resumed = await train(['--dataset', other, '--output', run, '--max-steps', '4', '--resume']);
    assert.equal(resumed.code, 0, describeRun(resumed));
    assert.equal(resumed.json.result.startStep, 2);
    // Named on purpose (the data moved): a warning, and the run goes on.
    const moved = join(dir, 'moved-data');
    renameSync(other, moved);
    const again = await train(['--dataset', moved, '--output', run, '--max-steps', '6', '--resume']);
    assert.equal(again.code, 0, describeRun(again));
    assert.ok(
      again.json.warnings.some((w: string) => w.includes(`trained on ${other} until now`)),
      again.json.warnings.join('\n'),
    );
  });

  test("no output replaces a run's own files, even with --overwrite; the user's files beside a run stay", async () => {
    const run = join(dir, 'runs', 'kept');
    const first = await train(['--output', run, '--max-steps', '4']);
    assert.equal(first.code, 0, describeRun(first));
    const oldest = new CheckpointStore(run).list()[0].dir;
    const before = snapshot(run);
    const say = ['--checkpoint', run, '--text', 'Hello there.', '--backend', 'wasm', '--overwrite', '--json'];
    // A WAV into a checkpoint (rotation would delete it, a checkpoint holds only its own files).
    const inCheckpoint = await runCli(['synthesize', ...say, '--out', join(oldest, 'sample.wav')]);
    assert.equal(inCheckpoint.json.error.code, 'OUTPUT_IS_RUN_FILE', describeRun(inCheckpoint));
    const exportTo = (out: string) => runCli(['export', '--checkpoint', run, '--out', out, '--overwrite', '--json']);
    for (const out of ['run.sqlite', 'xtts-run.json', 'checkpoints/latest'].map((f) => join(run, f)))
      assert.equal((await exportTo(out)).json.error.code, 'OUTPUT_IS_RUN_FILE', out);
    for (const f of ['weights.safetensors', 'optimizer.safetensors'])
      assert.equal((await exportTo(join(oldest, f))).json.error.code, 'OUTPUT_IS_RUN_FILE', f);
    assert.deepEqual(snapshot(run), before);
    // A WAV the user keeps beside the checkpoints: the run still resumes there, and the WAV stays.
    const wav = await runCli(['synthesize', ...say.slice(0, -2), '--out', join(run, 'sample.wav')]);
    assert.equal(wav.code, 0, describeRun(wav));
    const resumed = await train(['--output', run, '--max-steps', '6', '--resume']);
    assert.equal(resumed.code, 0, describeRun(resumed));
    assert.ok(existsSync(join(run, 'sample.wav')));
    // A run.sqlite damaged beside its checkpoints: moved aside as the refusal says, the run resumes from them.
    writeFileSync(join(run, 'run.sqlite'), readFileSync(join(run, 'run.sqlite')).subarray(0, 100));
    const damaged = await train(['--output', run, '--max-steps', '8', '--resume']);
    assert.equal(damaged.json.error.code, 'OUTPUT_NOT_RUN_FOLDER', describeRun(damaged));
    assert.match(damaged.json.error.message, /its run\.sqlite is damaged/);
    assert.doesNotMatch(damaged.json.error.suggestions.join('\n'), /empty that folder/);
    assert.match(damaged.json.error.suggestions[0], /^move it aside \(mv /);
    renameSync(join(run, 'run.sqlite'), join(run, 'run.sqlite.damaged'));
    const again = await train(['--output', run, '--max-steps', '8', '--resume']);
    assert.equal(again.code, 0, describeRun(again));
    assert.equal(again.json.result.startStep, 6);
  });

  test('a run refused over its data leaves no folder behind, nor the folders made for it', async () => {
    const empty = join(dir, 'no-rows');
    mkdirSync(empty, { recursive: true });
    writeFileSync(join(empty, 'metadata.csv'), 'a|missing audio|missing audio\n');
    const out = join(dir, 'refused', 'deep', 'run');
    const r = await train(['--dataset', empty, '--output', out, '--max-steps', '2']);
    assert.equal(r.code, 2, describeRun(r));
    assert.equal(r.json.error.code, 'DATASET_EMPTY');
    assert.equal(existsSync(join(dir, 'refused')), false, 'the folders made for the refused run were left');
    // A folder the user made stays, empty as it was.
    mkdirSync(out, { recursive: true });
    const again = await train(['--dataset', empty, '--output', out, '--max-steps', '2']);
    assert.equal(again.json.error.code, 'DATASET_EMPTY', describeRun(again));
    assert.deepEqual(readdirSync(out), []);
  });

  test(
    'a run stopped by its time limit prints its last checkpoint and the command to continue; a resume past ' +
      '--max-steps says it has nothing to train',
    async () => {
      const run = join(dir, 'runs', 'summary');
      const human = (args: string[]) =>
        runCli(['train', '--config', config, '--backend', 'wasm', '--output', run, ...args], { timeoutMs: 300_000 });
      const limited = await human(['--max-steps', '1000', '--max-minutes', '0.05']);
      assert.equal(limited.code, 0, describeRun(limited));
      assert.match(limited.stdout, /; stopped at the time limit \(--max-minutes\)/);
      // (On a loaded machine the limit may come before the first step: then it says no checkpoint was written.)
      const last = new CheckpointStore(run).latest();
      const continued =
        `${last ? `last checkpoint: ${last}; ` : 'no checkpoint was written; '}continue: xtts train --config ` +
        `${config} --backend wasm --output ${run} --max-steps 1000 --max-minutes 0.05 --resume`;
      assert.ok(limited.stdout.includes(continued), limited.stdout);
      const past = await human(['--max-steps', '1', '--resume']);
      assert.equal(past.code, 0, describeRun(past));
      assert.match(past.stdout, /the run was at step \d+ already: nothing to train up to --max-steps/);
      // A value the flag's own parser refuses is a usage error, not INTERNAL.
      for (const bad of ['-1', '0', 'abc']) {
        const r = await train(['--output', run, '--max-minutes', bad]);
        assert.equal(r.code, 2, describeRun(r));
        assert.equal(r.json.error.code, 'USAGE');
        assert.equal(r.json.error.message, `--max-minutes must be a positive number of minutes, got "${bad}"`);
      }
    },
  );

  test('a checkpoint whose weights hold NaN is refused on resume, naming the tensor; nothing is written', async () => {
    const nan = join(dir, 'runs', 'nan');
    const first = await train(['--output', nan, '--max-steps', '2']);
    assert.equal(first.code, 0, describeRun(first));
    poisonWeights(new CheckpointStore(nan).latest()!, Number.NaN);
    const before = snapshot(nan);
    const r = await train(['--output', nan, '--max-steps', '6', '--resume']);
    assert.equal(r.code, 2, describeRun(r));
    assert.equal(r.json.status, 'error');
    assert.equal(r.json.error.code, 'CHECKPOINT_NOT_FINITE');
    assert.match(r.json.error.message, /step-00000002: weight \S+ holds NaN/);
    assert.deepEqual(snapshot(nan), before);
  });

  test(
    'a checkpoint damaged since it was written is refused on resume, saying to move it aside; moved, the run ' +
      'resumes from the one before',
    async () => {
      const run = join(dir, 'runs', 'damaged-latest');
      const first = await train(['--output', run, '--max-steps', '8']);
      assert.equal(first.code, 0, describeRun(first));
      assert.deepEqual(steps(run), [4, 8]);
      const latest = new CheckpointStore(run).latest()!;
      rmSync(join(latest, 'optimizer.safetensors'));
      const before = snapshot(run);
      const r = await train(['--output', run, '--max-steps', '10', '--resume']);
      assert.equal(r.code, 2, describeRun(r));
      assert.equal(r.json.error.code, 'CHECKPOINT_TRUNCATED');
      const aside = `${latest}.damaged`;
      assert.equal(
        r.json.error.suggestions[0],
        `move it aside (mv ${latest} ${aside}) and --resume again: it resumes from step 4 ` +
          `(${join(run, 'checkpoints', 'step-00000004')})`,
      );
      assert.deepEqual(snapshot(run), before, 'the refusal changed the run folder');
      renameSync(latest, aside);
      const resumed = await train(['--output', run, '--max-steps', '10', '--resume']);
      assert.equal(resumed.code, 0, describeRun(resumed));
      assert.equal(resumed.json.result.startStep, 4);
      assert.ok(existsSync(join(aside, 'weights.safetensors')), 'the damaged checkpoint is still there');
    },
  );

  test('a damaged state.json is refused naming the file: truncated, and with a step of 1e300', async () => {
    const damaged = join(dir, 'runs', 'damaged');
    const first = await train(['--output', damaged, '--max-steps', '2']);
    assert.equal(first.code, 0, describeRun(first));
    const state = join(new CheckpointStore(damaged).latest()!, 'state.json');
    const text = readFileSync(state, 'utf8');
    writeFileSync(state, text.slice(0, text.length / 2));
    const truncated = await train(['--output', damaged, '--max-steps', '4', '--resume']);
    assert.equal(truncated.code, 2, describeRun(truncated));
    assert.equal(truncated.json.error.code, 'CHECKPOINT_STATE_INVALID');
    assert.ok(truncated.json.error.message.startsWith(`${state}: not JSON`), truncated.json.error.message);
    writeFileSync(state, text.replace(/"step": 2,/, '"step": 1e300,'));
    const huge = await train(['--output', damaged, '--max-steps', '4', '--resume']);
    assert.equal(huge.json.error.code, 'CHECKPOINT_STATE_INVALID', describeRun(huge));
    assert.match(huge.json.error.message, /state\.json: \/step must be <= 1000000000000/);
    assertNoStackTrace(huge);
  });

  test(
    'a lock whose pid now belongs to another process (its start time differs) is ' + 'stale; one that matches is not',
    async () => {
      const locked = join(dir, 'runs', 'locked');
      mkdirSync(locked, { recursive: true });
      // This test's own process: alive, and not an xtts run of this folder.
      const lock = (processStart: string | null) =>
        writeFileSync(
          join(locked, '.xtts-run.lock'),
          JSON.stringify({
            pid: process.pid,
            processStart,
            host: hostname(),
            startedAt: new Date().toISOString(),
            command: 'train',
          }),
        );
      lock(processStartTime(process.pid));
      const held = await train(['--output', locked, '--max-steps', '1']);
      assert.equal(held.json.error.code, 'RUN_FOLDER_IN_USE', describeRun(held));
      lock('1');
      const taken = await train(['--output', locked, '--max-steps', '1']);
      assert.equal(taken.code, 0, describeRun(taken));
      assert.equal(existsSync(join(locked, '.xtts-run.lock')), false);
    },
  );

  test(
    "a config whose memory estimate exceeds the backend's is refused before the " +
      'model is allocated, naming the keys',
    async () => {
      const r = await train([
        '--output',
        join(dir, 'runs', 'huge'),
        '--max-steps',
        '1',
        '--set',
        'model.d_model=4096',
        '--set',
        'model.ff_mult=8',
        '--set',
        'model.heads=32',
        '--set',
        'model.text_layers=48',
        '--set',
        'model.decoder_layers=48',
      ]);
      assert.equal(r.code, 2, describeRun(r));
      assert.equal(r.json.error.code, 'MEMORY_ESTIMATE_EXCEEDS');
      assert.match(r.json.error.message, /more than the wasm backend's 4 GiB heap/);
      assert.ok(r.json.error.suggestions[0].includes('model.d_model'));
      const budget = await train([
        '--output',
        join(dir, 'runs', 'budget'),
        '--max-steps',
        '1',
        '--set',
        'device.model_memory_budget_mb=64',
        '--set',
        'batching.batch_size=64',
      ]);
      assert.equal(budget.code, 2, describeRun(budget));
      assert.equal(budget.json.error.code, 'CONFIG_INVALID');
      assert.match(budget.json.error.message, /exceeds device\.model_memory_budget_mb = 64\.0 MiB/);
    },
  );
});

describe('xtts writes only where it was told', () => {
  test(
    'an output folder that is not empty, new or an xtts run is refused before ' +
      'anything is written, naming what is there',
    async () => {
      const cases: [string, () => string, RegExp][] = [
        // Names in readdir's order: the first of / (whatever the machine keeps there) is named.
        [
          '/',
          () => '/',
          new RegExp(
            `it holds \\d+ entries xtts did not write \\(${readdirSync('/')[0].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
          ),
        ],
        [
          "a folder of the user's files",
          () => {
            const p = join(dir, 'mine');
            mkdirSync(p, { recursive: true });
            writeFileSync(join(p, 'thesis.tex'), 'my work');
            return p;
          },
          /thesis\.tex/,
        ],
        [
          'a foreign run.sqlite',
          () => {
            const p = join(dir, 'theirs');
            mkdirSync(p, { recursive: true });
            const db = new Database(join(p, 'run.sqlite'));
            db.exec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')");
            db.close();
            return p;
          },
          /run\.sqlite is not an xtts run database/,
        ],
        [
          'a foreign metrics.jsonl beside notes',
          () => {
            const p = join(dir, 'metrics');
            mkdirSync(p, { recursive: true });
            writeFileSync(join(p, 'metrics.jsonl'), '{"mine": 1}\n');
            writeFileSync(join(p, 'notes.md'), '# notes\n');
            return p;
          },
          /notes\.md/,
        ],
      ];
      for (const [what, make, found] of cases) {
        const out = make();
        const before = out === '/' ? readdirSync('/').sort() : snapshot(out);
        for (const resume of [[], ['--resume']]) {
          const r = await train(['--output', out, '--max-steps', '1', ...resume]);
          assert.equal(r.code, 2, `${what}: ${describeRun(r)}`);
          assert.equal(r.json.error.code, 'OUTPUT_NOT_RUN_FOLDER', what);
          assert.match(r.json.error.message, found, what);
        }
        assert.deepEqual(out === '/' ? readdirSync('/').sort() : snapshot(out), before, `${what}: changed`);
      }
    },
  );

  test('an output folder under one that takes no new folders (/proc) is refused at once, not a hang at full CPU', {
    skip: existsSync('/proc/self') ? false : 'no /proc here',
  }, async () => {
    const r = await train(['--output', '/proc/xtts-nowhere/run', '--max-steps', '1']);
    assert.equal(r.code, 2, describeRun(r));
    assert.equal(r.json.error.code, 'OUTPUT_UNWRITABLE');
    assert.match(
      r.json.error.message,
      /cannot use \/proc\/xtts-nowhere\/run as the run folder: .*takes no new folders/,
    );
  });

  test(
    'synthesize refuses to replace an existing file without --overwrite (before ' +
      'loading the model); with it the file becomes a WAV; with it no command replaces a file it reads',
    async () => {
      const runDir = join(dir, 'runs', 'speak');
      const first = await train(['--output', runDir, '--max-steps', '2']);
      assert.equal(first.code, 0, describeRun(first));
      const precious = join(dir, 'precious.wav');
      writeFileSync(precious, 'do not lose me');
      const r = await runCli([
        'synthesize',
        '--checkpoint',
        runDir,
        '--text',
        'The boy.',
        '--out',
        precious,
        '--backend',
        'wasm',
        '--json',
      ]);
      assert.equal(r.code, 2, describeRun(r));
      assert.equal(r.json.error.code, 'OUTPUT_EXISTS');
      assert.match(r.json.error.suggestions[0], /--overwrite/);
      assert.equal(readFileSync(precious, 'utf8'), 'do not lose me');
      const texts = join(dir, 'texts.txt');
      writeFileSync(texts, 'The boy.\nThe girl.\n');
      const outDir = join(dir, 'spoken');
      mkdirSync(outDir, { recursive: true });
      writeFileSync(join(outDir, 'line-0002.wav'), 'mine');
      const many = await runCli([
        'synthesize',
        '--checkpoint',
        runDir,
        '--texts',
        texts,
        '--out-dir',
        outDir,
        '--backend',
        'wasm',
        '--json',
      ]);
      assert.equal(many.json.error.code, 'OUTPUT_EXISTS', describeRun(many));
      assert.deepEqual(readdirSync(outDir), ['line-0002.wav']);
      // With --overwrite the folder holds this synthesis: the two lines, then one line and no WAV of the line gone
      // (xtts's own, listed in the earlier synthesis.json; a file it did not write stays).
      const speak = (file: string) =>
        runCli(
          ['synthesize', '--checkpoint', runDir, '--texts', file, '--out-dir', outDir, '--backend', 'wasm'].concat([
            '--overwrite',
            '--json',
          ]),
        );
      // The first from the folder above, with relative paths (its synthesis.json names them so); the next from
      // elsewhere still finds its WAVs.
      const two = await runCli(
        [
          'synthesize',
          '--checkpoint',
          runDir,
          '--texts',
          'texts.txt',
          '--out-dir',
          'spoken',
          '--backend',
          'wasm',
        ].concat(['--overwrite', '--json']),
        { cwd: dir },
      );
      assert.equal(two.code, 0, describeRun(two));
      assert.equal(two.json.result.utterances[1].out, join('spoken', 'line-0002.wav'));
      writeFileSync(join(outDir, 'notes.txt'), 'mine');
      const one = join(dir, 'one.txt');
      writeFileSync(one, 'The boy.\n');
      const again = await speak(one);
      assert.equal(again.code, 0, describeRun(again));
      assert.deepEqual(readdirSync(outDir).sort(), ['line-0001.wav', 'notes.txt', 'synthesis.json']);
      assert.match(again.json.warnings.join('\n'), /removed 1 WAV of the earlier synthesis in .* \(line-0002\.wav\)/);
      const replaced = await runCli([
        'synthesize',
        '--checkpoint',
        runDir,
        '--text',
        'The boy.',
        '--out',
        precious,
        '--backend',
        'wasm',
        '--overwrite',
        '--json',
      ]);
      assert.equal(replaced.code, 0, describeRun(replaced));
      assert.equal(readFileSync(precious).subarray(0, 4).toString(), 'RIFF');
      // Written through a temporary file and a rename: none is left beside it.
      assert.deepEqual(
        readdirSync(dir).filter((n) => n.endsWith('.tmp')),
        [],
      );

      // --overwrite never reaches what a command reads: a reference clip, a checkpoint's own file, vocode's input
      // folder (the error that names an existing output suggests --overwrite, so that must not be a trap).
      const clip = join(dir, 'data', 'wavs', readdirSync(join(dir, 'data', 'wavs')).sort()[0]);
      const weights = join(new CheckpointStore(runDir).latest()!, 'weights.safetensors');
      const before = snapshot(dir);
      const refused: [string[], string, RegExp][] = [
        [
          [
            'synthesize',
            '--checkpoint',
            runDir,
            '--text',
            'The boy.',
            '--reference',
            clip,
            '--out',
            clip,
            '--backend',
            'wasm',
          ],
          'OUTPUT_IS_INPUT',
          /the WAV .* is the reference clip \(--reference\) .*: xtts never writes over a file it reads/,
        ],
        [
          ['export', '--checkpoint', runDir, '--out', weights],
          'OUTPUT_IS_RUN_FILE',
          /is among the files of the run or checkpoint in /,
        ],
        [
          ['vocode', '--in', join(dir, 'data', 'wavs'), '--out-dir', join(dir, 'data', 'wavs')],
          'OUTPUT_IS_INPUT',
          /is the input \(--in\)/,
        ],
        [
          ['vocode', '--in', join(dir, 'data', 'wavs'), '--out-dir', join(dir, 'v'), '--reference-dir', join(dir, 'v')],
          'OUTPUTS_COLLIDE',
          /\.wav's WAV .* and .*\.wav's reference WAV .* are one file/,
        ],
      ];
      for (const [args, code, message] of refused) {
        const r = await runCli([...args, '--overwrite', '--json']);
        assert.equal(r.code, 2, describeRun(r));
        assert.equal(r.json.error.code, code, args.join(' '));
        assert.match(r.json.error.message, message);
      }
      assert.deepEqual(snapshot(dir), before, 'a refused command changed a file');
    },
  );
});
