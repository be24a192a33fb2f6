// What a data device (device.data_device) takes off the training device: `xtts train` on the
// quickstart data (tiny model, wasm) with frequent validation and eval, once with both run between
// steps on the training engine and once with `data_device: cpu` (a worker of its own). Per run: the
// wall time from the first step to the end, the time the trainer spent in the validation/eval/
// checkpoint span, and the steps' median. On a GPU host the data device is a second GPU and the two
// do not share cores; here they share this machine's CPU cores, which the figures include.
// Usage: node --import tsx bench/data-device.bench.ts [steps (default 60)]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { median, report } from './lib.js';

const root = join(import.meta.dirname, '..');
const steps = Number(process.argv[2] ?? 60);
const work = mkdtempSync(join(tmpdir(), 'xtts-data-device-bench-'));
const common = [
  '--max-steps',
  String(steps),
  '--set',
  'training.validate_every=10',
  '--set',
  'training.eval_every=20',
  '--set',
  'training.checkpoint_every=1000000',
  '--set',
  'training.log_every=10',
  '--set',
  'batching.buckets=1',
  '--set',
  'training.eval_sentences=[{text: "The boy was there."}]',
];

function run(name: string, extra: string[]) {
  const out = join(work, name);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['src/cli/run.js', 'train', '--output', out, ...common, ...extra], {
    cwd: root,
    encoding: 'utf8',
  });
  const totalMs = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${name}: xtts train exited ${r.status}: ${r.stderr.slice(-1500)}`);
  const db = new Database(join(out, 'run.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT start_ms, wall_ms, checkpoint_ms FROM steps ORDER BY step').all() as {
    start_ms: number;
    wall_ms: number;
    checkpoint_ms: number;
  }[];
  const validations = (db.prepare("SELECT COUNT(*) AS n FROM metrics WHERE name = 'loss/val'").get() as { n: number })
    .n;
  db.close();
  const last = rows[rows.length - 1];
  return {
    trainingMs: last.start_ms + last.wall_ms - rows[0].start_ms,
    pausedMs: rows.reduce((a, x) => a + x.checkpoint_ms, 0),
    stepMs: median(rows.map((x) => x.wall_ms)),
    totalMs,
    validations,
  };
}

try {
  const here = run('here', []);
  const side = run('side', ['--set', 'device.data_device=cpu']);
  const line = (label: string, r: ReturnType<typeof run>) =>
    `${label}: steps 1–${steps} took ${(r.trainingMs / 1000).toFixed(1)} s, of ` +
    `which ${(r.pausedMs / 1000).toFixed(1)} s in validation/eval/checkpoints; ` +
    `median step ${r.stepMs.toFixed(0)} ms; ${r.validations} validations; the whole ` +
    `command ${(r.totalMs / 1000).toFixed(1)} s`;
  console.log(
    `quickstart data, tiny model, wasm, ${availableParallelism()} cores; validation every 10 steps, eval every 20`,
  );
  console.log(line('on the training engine', here));
  console.log(line('data_device: cpu', side));
  console.log(
    `the trainer paused ${((here.pausedMs - side.pausedMs) / 1000).toFixed(1)} s ` +
      `less; steps 1–${steps} ${(here.trainingMs / side.trainingMs).toFixed(2)}× as ` +
      `fast with the data device`,
  );
  report('data-device', {
    steps,
    cores: availableParallelism(),
    trainingMsHere: Math.round(here.trainingMs),
    trainingMsSide: Math.round(side.trainingMs),
    pausedMsHere: Math.round(here.pausedMs),
    pausedMsSide: Math.round(side.pausedMs),
    stepMsHere: Math.round(here.stepMs),
    stepMsSide: Math.round(side.stepMs),
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
