// Every stop leaves a checkpoint, and a resumed run is the unbroken run bit for bit. Four runs of a
// micro model are each stopped 20 times at random moments, by SIGTERM, SIGINT, SIGHUP and kill -9
// (while it prepares, mid-step, mid-checkpoint: wherever the moment falls), resumed after each
// stop, and at the end compared with a run nobody stopped: the same loss at every step, the same
// bytes of weights and optimizer state.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { CheckpointStore } from '../../src/core/training/checkpoint.js';
import { describeRun, repoRoot, runCli } from '../helpers/cli.js';
import { microRun, trainingLosses } from '../helpers/short-clips.js';

const { dir, config } = microRun('xtts-signals-');
const STEPS = 160;
const STOPS = 20;
const EXIT: Record<string, number | null> = { SIGTERM: 143, SIGINT: 130, SIGHUP: 129, SIGKILL: null };

interface Segment {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The last step the run printed (log_every 1), or 0. */
  lastStep: number;
  stepsHere: number;
}

/** One `xtts train` of the chain, stopped by `signal` at a random moment (or left to finish when signal is null). */
function segment(out: string, signal: NodeJS.Signals | null, resume: boolean): Promise<Segment> {
  const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
  const args = [
    join(repoRoot, 'src/cli/run.js'),
    'train',
    '--config',
    config,
    '--backend',
    'wasm',
    '--output',
    out,
    '--max-steps',
    String(STEPS),
    ...(resume ? ['--resume'] : []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...env, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let stepsHere = 0;
  // A fifth of the stops fall at a random time from the start (often while it prepares); the rest after a random number
  // of steps.
  const early = Math.random() < 0.2;
  const afterSteps = 1 + Math.floor(Math.random() * 6);
  const send = () => signal && child.exitCode === null && child.signalCode === null && child.kill(signal);
  if (signal && early) setTimeout(send, Math.random() * 1500);
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    const n = d.match(/^step\s+\d+\//gm)?.length ?? 0;
    if (n === 0) return;
    const before = stepsHere;
    stepsHere += n;
    if (signal && !early && before < afterSteps && stepsHere >= afterSteps) setTimeout(send, Math.random() * 80);
  });
  return new Promise((resolve) =>
    child.once('close', (code, sig) => {
      const printed = [...stderr.matchAll(/^step\s+(\d+)\//gm)].map((m) => Number(m[1]));
      resolve({ code, signal: sig, stderr, lastStep: printed.at(-1) ?? 0, stepsHere: printed.length });
    }),
  );
}

async function stopTwentyTimes(signal: NodeJS.Signals, out: string): Promise<void> {
  let delivered = 0;
  let started = false;
  while (delivered < STOPS) {
    // A user resumes a run that began; one stopped before it wrote anything is started again.
    const s = await segment(out, signal, started && existsSync(join(out, 'xtts-run.json')));
    started = true;
    const what = `${signal} #${delivered + 1}: exit ${s.code} ${s.signal ?? ''}\n${s.stderr.slice(-1500)}`;
    assert.notEqual(s.code, 0, `${what}\nthe run finished before its ${signal} came: raise STEPS`);
    delivered++;
    assert.doesNotMatch(s.stderr, /INTERNAL|^\s+at /m, what);
    if (signal === 'SIGKILL') {
      assert.equal(s.signal, 'SIGKILL', what);
      continue;
    }
    // Before the command has installed its handlers (node still loading) the signal's default action
    // ends the process: a shell sees the same status, 128 + the signal's number, and nothing was written yet.
    if (s.signal === signal) assert.equal(s.stepsHere, 0, what);
    else assert.equal(s.code, EXIT[signal], what);
    assert.equal(existsSync(join(out, '.xtts-run.lock')), false, `${what}\nthe lock was left behind`);
    // Every stop after a step leaves a checkpoint of the last step it trained.
    if (s.stepsHere > 0) {
      const latest = new CheckpointStore(out).latest();
      assert.ok(
        latest?.endsWith(`step-${String(s.lastStep).padStart(8, '0')}`),
        `${what}\nlatest checkpoint ${latest}, last step ${s.lastStep}`,
      );
    }
  }
  const last = await segment(out, null, existsSync(join(out, 'xtts-run.json')));
  assert.equal(last.code, 0, last.stderr.slice(-2000));
}

function finalBytes(runDir: string, file: string): Buffer {
  return readFileSync(join(runDir, 'checkpoints', `step-${String(STEPS).padStart(8, '0')}`, file));
}

test(`${STOPS} SIGTERM, SIGINT, SIGHUP and kill -9 each at random moments: every stop ` +
  `leaves a checkpoint, the lock is released, and the resumed runs end bit-exact ` +
  `with an unbroken one`, {
  timeout: 900_000,
}, async () => {
  const reference = join(dir, 'unbroken');
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL'];
  const [ref] = await Promise.all([
    runCli(
      ['train', '--config', config, '--backend', 'wasm', '--output', reference, '--max-steps', String(STEPS), '--json'],
      { timeoutMs: 600_000 },
    ),
    ...signals.map((s) => stopTwentyTimes(s, join(dir, s))),
  ]);
  assert.equal(ref.code, 0, describeRun(ref));
  const want = trainingLosses(reference);
  assert.equal(want.size, STEPS);
  for (const s of signals) {
    const out = join(dir, s);
    const got = trainingLosses(out);
    for (let step = 1; step <= STEPS; step++) assert.equal(got.get(step), want.get(step), `${s}: loss at step ${step}`);
    assert.ok(
      finalBytes(out, 'weights.safetensors').equals(finalBytes(reference, 'weights.safetensors')),
      `${s}: final weights differ from the unbroken run's`,
    );
    assert.ok(
      finalBytes(out, 'optimizer.safetensors').equals(finalBytes(reference, 'optimizer.safetensors')),
      `${s}: final optimizer state differs`,
    );
  }
});

for (const hangup of [false, true])
  test(`output that can no longer be written (its pipe's reader gone${hangup ? ', then SIGHUP' : ''}) stops the run ` +
    'with a checkpoint', { timeout: 300_000 }, async () => {
    const out = join(dir, hangup ? 'closed-terminal' : 'closed-pipe');
    const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
    const args = [join(repoRoot, 'src/cli/run.js'), 'train', '--config', config, '--backend', 'wasm', '--output', out];
    const child = spawn(process.execPath, [...args, '--max-steps', String(STEPS)], {
      cwd: repoRoot,
      env: { ...env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let seen = '';
    let printed = 0;
    // As `xtts train 2>&1 | head` does: the reader takes the first step lines and leaves; nothing else reads.
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      seen += d;
      printed = seen.match(/^step\s+\d+\//gm)?.length ?? 0;
      if (printed >= 3 && !child.stderr.destroyed) {
        child.stderr.destroy();
        child.stdout.destroy();
        // A closed terminal: the writes fail and SIGHUP comes too, in either order; one stop, with its checkpoint.
        if (hangup) setTimeout(() => child.kill('SIGHUP'), Math.random() * 50);
      }
    });
    const [code] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('close', (c, s) => resolve([c, s])),
    );
    assert.equal(code, EXIT.SIGHUP, seen.slice(-1500));
    const latest = new CheckpointStore(out).latest();
    assert.ok(latest, `no checkpoint after the output closed\n${seen.slice(-1500)}`);
    const step = Number(/step-(\d+)$/.exec(latest)![1]);
    assert.ok(step >= 3 && step < STEPS, `checkpoint at step ${step}`);
    assert.equal(existsSync(join(out, '.xtts-run.lock')), false, 'the lock was left behind');
  });

test('kill -9 after a checkpoint leaves run.sqlite with a record of every step the checkpoint covers', {
  timeout: 300_000,
}, async () => {
  const out = join(dir, 'killed-between-logs');
  const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
  // Records are written at each logged step (every 100th here); checkpoints at every step.
  const args = [join(repoRoot, 'src/cli/run.js'), 'train', '--config', config, '--backend', 'wasm', '--output', out];
  const sets = ['--set', 'training.log_every=100', '--set', 'training.checkpoint_every=1'];
  const child = spawn(process.execPath, [...args, '--max-steps', String(STEPS), ...sets], {
    cwd: repoRoot,
    env: { ...env, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const closed = new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_c, s) => resolve(s)));
  const store = new CheckpointStore(out);
  const deadline = Date.now() + 240_000;
  while (!/step-0000000[5-9]$/.test(store.latest() ?? '') && child.exitCode === null && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  child.kill('SIGKILL');
  assert.equal(await closed, 'SIGKILL', stderr.slice(-1500));
  const latest = store.latest();
  assert.ok(latest, stderr.slice(-1500));
  const covered = Number(/step-(\d+)$/.exec(latest)![1]);
  const db = new Database(join(out, 'run.sqlite'), { readonly: true });
  const steps = (db.prepare('SELECT step FROM steps ORDER BY step').all() as { step: number }[]).map((r) => r.step);
  db.close();
  // The checkpoint's own step is recorded milliseconds after it is written: a kill in between may lose that one.
  assert.deepEqual(
    steps.slice(0, covered - 1),
    Array.from({ length: covered - 1 }, (_, i) => i + 1),
    `the latest checkpoint is step ${covered}`,
  );
});
