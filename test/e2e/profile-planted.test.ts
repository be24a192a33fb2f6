// profile-bottleneck on real runs on the software WebGPU device (Dawn on llvmpipe), each with one problem
// planted, graded as it is: bucket shapes met mid-run (their recording steps a phase of their own, the
// verdicts judged on the steady steps), step capture off (the host issues every kernel), a starved input
// (unsegmented 96 kHz recordings, no feature cache, one loader thread), and a leak (a callback that keeps
// three tensors a step). The same scenarios on a GPU host: bench/gpu-profile.sh.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { describeRun, repoRoot, runCli } from '../helpers/cli.js';
import { MICRO_MODEL } from '../helpers/short-clips.js';
import { onGl, withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-profile-planted-');
after(() => tmp.remove());

const config = tmp.write(
  'micro.yaml',
  `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}
dataset:
  path: ${join(repoRoot, 'configs', 'quickstart')}
  validation_fraction: 0.1
batching:
  batch_size: 4
  buckets: 3
  reference_frames: 48
pipeline:
  cache:
    path: ${join(tmp.path, 'cache.sqlite')}
training:
  log_every: 1
${MICRO_MODEL}`,
);

type Verdict = {
  id: string;
  grade: string;
  title: string;
  evidence: string;
  actions: { key: string; value: unknown }[];
};
const grades = (r: { verdicts: Verdict[] }) => Object.fromEntries(r.verdicts.map((v) => [v.id, v.grade]));
const verdict = (r: { verdicts: Verdict[] }, id: string) => r.verdicts.find((v) => v.id === id)!;

/** `xtts profile-bottleneck` on webgpu (llvmpipe): its JSON result. */
async function profile(name: string, steps: number, ...more: string[]) {
  const r = await runCli(
    [
      'profile-bottleneck',
      '--config',
      config,
      '--backend',
      'webgpu',
      '--steps',
      String(steps),
      '--warmup',
      '0',
      '--device-timed-steps',
      '0',
      '--output',
      join(tmp.path, name),
      ...more,
      '--json',
    ],
    { env: onGl, timeoutMs: 600_000 },
  );
  assert.ok(r.code === 0 || r.code === 1, describeRun(r));
  return r.json.result;
}

// The capture-on run with three buckets: the baseline of the others.
let baseline: Promise<any> | undefined;
const capturedRun = () => (baseline ??= profile('captured', 14));

test('bucket shapes met mid-run: their recording steps are a phase of their own, named with its cost and action; ' +
  'the verdicts judge the steady steps', { skip: withoutLlvmpipe, timeout: 600_000 }, async () => {
  const r = await capturedRun();
  const phase = r.newShapes;
  assert.ok(phase, JSON.stringify(r.verdicts));
  assert.equal(phase.shapes.length, 3, JSON.stringify(phase));
  // A shape first met after the first step is met mid-run; its steps before it replays are in the phase.
  assert.ok(Math.max(...phase.steps) > 1, JSON.stringify(phase));
  assert.equal(r.breakdown.steps + phase.steps.length, 14, JSON.stringify(phase));
  const v = verdict(r, 'new-shapes');
  assert.match(v.title, /^3 batch shapes met for the first time/);
  assert.match(v.evidence, /before their steady state \(recorded for replay, or programs compiled\)/);
  assert.deepEqual(
    v.actions.map((a) => a.key),
    v.grade === 'ok' ? [] : ['batching.buckets'],
  );
  // Every steady step replayed (the phase holds the eager and recording ones).
  assert.equal(r.stepCapture.replayedSteps, r.breakdown.steps, JSON.stringify(r.stepCapture));
  // Nothing else planted: no leak, no waiting for input, no eager dispatch to grade.
  const g = grades(r);
  assert.deepEqual([g['memory-leak'], g['input-bound'], g['dispatch-bound']], ['ok', 'ok', 'ok'], JSON.stringify(g));
});

test('step capture off: the host issues every kernel of every step, graded with step capture as the action', {
  skip: withoutLlvmpipe,
  timeout: 600_000,
}, async () => {
  const [off, on] = await Promise.all([profile('capture-off', 8, '--set', 'device.step_capture=off'), capturedRun()]);
  const v = verdict(off, 'dispatch-bound');
  assert.equal(v.grade, 'moderate', JSON.stringify(v));
  assert.match(v.title, /with step capture off the host issues every kernel of every step/);
  assert.deepEqual(
    v.actions.map((a) => [a.key, a.value]),
    [['device.step_capture', 'auto']],
  );
  assert.equal(off.stepCapture?.replayedSteps ?? 0, 0);
  // Eager steps dispatch the engine's kernels one by one: more of them than a replay's programs.
  assert.ok(off.breakdown.kernels.mean > on.breakdown.kernels.mean, `${off.breakdown.kernels.mean} kernels`);
});

test('a starved input (unsegmented 96 kHz recordings, no feature cache, one loader thread) is graded highly ' +
  'input-bound, with the cache, more workers and a deeper ring as the actions', {
  skip: withoutLlvmpipe,
  timeout: 600_000,
}, async () => {
  // Eight espeak-ng sentences, each at the start of a minute of silence at 96 kHz: trimming leaves short clips
  // (cheap steps), but every batch decodes, resamples and trims four minutes of audio again.
  const data = join(tmp.path, 'long');
  mkdirSync(join(data, 'wavs'), { recursive: true });
  const rows = [
    'The small boy sold the rare blue fish.',
    'A cold wind blew over the hill.',
    'She read the old letter twice.',
    'We walked to the market at noon.',
    'The red car stopped by the gate.',
    'He painted the fence on Sunday.',
    'Birds sang in the tall green trees.',
    'The clock struck nine in the hall.',
  ].map((text, i) => {
    const id = `L${i}`;
    const spoken = join(data, `${id}.spoken.wav`);
    execFileSync('espeak-ng', ['-v', 'en-us', '-w', spoken, text]);
    execFileSync('sox', [
      spoken,
      '-r',
      '96000',
      '-c',
      '1',
      '-b',
      '16',
      join(data, 'wavs', `${id}.wav`),
      'pad',
      '0',
      '60',
    ]);
    return `${id}|${text}|${text}`;
  });
  writeFileSync(join(data, 'metadata.csv'), `${rows.join('\n')}\n`);
  // The recording steps (about 2 s on llvmpipe) let the loader run ahead; the steady steps after them drain it.
  const r = await profile(
    'starved',
    10,
    '--dataset',
    data,
    '--set',
    'dataset.validation_fraction=0',
    '--set',
    'batching.buckets=1',
    '--set',
    'pipeline.workers=1',
    '--set',
    'pipeline.prefetch_depth=1',
    '--set',
    'pipeline.cache.enabled=false',
  );
  const v = verdict(r, 'input-bound');
  assert.equal(v.grade, 'high', JSON.stringify(r.verdicts));
  assert.equal(r.verdicts[0].id, 'input-bound');
  assert.match(v.evidence, /the trainer waited for data \d+\.\d% of the wall time/);
  const keys = v.actions.map((a) => a.key);
  assert.ok(keys.includes('pipeline.cache.enabled'), JSON.stringify(v.actions));
  // More loader threads where the host has cores to spare (a 2-core host has none beside the trainer's).
  assert.equal(keys.includes('pipeline.workers'), availableParallelism() > 2, JSON.stringify(v.actions));
  assert.ok(keys.includes('pipeline.prefetch_depth'), JSON.stringify(v.actions));
});

test('a leak planted in a run on webgpu (a callback that keeps 3 tensors a step) is reported by profile-bottleneck ' +
  '--run; the same run without it holds a steady count', { skip: withoutLlvmpipe, timeout: 600_000 }, async () => {
  Object.assign(process.env, onGl);
  const tf = await import('@tensorflow/tfjs-core');
  const { train } = await import('../../src/core/training/trainer.js');
  const { loadConfig } = await import('../../src/core/config/load.js');
  const runDir = join(tmp.path, 'leak');
  const kept: unknown[] = [];
  await train({
    loaded: loadConfig(config, { set: ['batching.buckets=1', 'training.eval_every=1000'] }).loaded!,
    backend: 'webgpu',
    maxSteps: 10,
    outputDir: runDir,
    stepsOnly: true,
    onStep: () => kept.push(tf.keep(tf.zeros([3])), tf.keep(tf.ones([2])), tf.keep(tf.scalar(1))),
  });
  const r = await runCli(['profile-bottleneck', '--run', runDir, '--json']);
  assert.equal(r.code, 1, describeRun(r)); // a verdict graded high
  const leak = verdict(r.json.result, 'memory-leak');
  assert.equal(leak.grade, 'high', JSON.stringify(leak));
  assert.match(leak.evidence, /\+3\.00 a step/);
  assert.equal(r.json.result.backend, 'webgpu');
  // The baseline run trained the same model on the same device without the callback.
  assert.equal(grades(await capturedRun())['memory-leak'], 'ok');
});
