// Data-parallel scaling on this host's CPU: `xtts train` with one wasm replica at batch B, then
// `--gpus cpu:N` at batch N·B (weak scaling: the same batch per replica, the measure), and
// `--gpus cpu:N` at batch B (strong scaling: the same global batch). Samples/s are the medians of
// the steps after the warm-up, read from each run's run.sqlite; efficiency = samples/s with N
// replicas / (N × samples/s with one). On a GPU host, bench/parallel-gpu.sh measures the same with
// GPUs. Usage: node --import tsx bench/parallel.bench.ts [replicas (default: cores)] [steps (default 16)]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { median, report } from './lib.js';

const root = join(import.meta.dirname, '..');
const replicas = Number(process.argv[2] ?? availableParallelism());
const steps = Number(process.argv[3] ?? 16);
const warmup = 4;
const perReplica = 4;
const work = mkdtempSync(join(tmpdir(), 'xtts-parallel-bench-'));
const quiet = [
  '--set',
  'training.validate_every=1000000',
  '--set',
  'training.eval_every=1000000',
  '--set',
  'training.checkpoint_every=1000000',
  '--set',
  'training.log_every=4',
  '--set',
  'batching.buckets=1',
];

function run(
  name: string,
  gpus: string | null,
  batch: number,
): { samplesPerS: number; stepMs: number; allReduceShare: number } {
  const out = join(work, name);
  const args = [
    'src/cli/run.js',
    'train',
    '--max-steps',
    String(warmup + steps),
    '--output',
    out,
    '--set',
    `batching.batch_size=${batch}`,
    ...quiet,
    ...(gpus ? ['--gpus', gpus] : ['--backend', 'wasm']),
  ];
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${name}: xtts train exited ${r.status}: ${r.stderr.slice(-1500)}`);
  const db = new Database(join(out, 'run.sqlite'), { readonly: true });
  const rows = db
    .prepare('SELECT wall_ms, batch_size, all_reduce_ms FROM steps WHERE step > ? ORDER BY step')
    .all(warmup) as { wall_ms: number; batch_size: number; all_reduce_ms: number | null }[];
  db.close();
  const stepMs = median(rows.map((x) => x.wall_ms));
  const wall = rows.reduce((a, x) => a + x.wall_ms, 0);
  return {
    samplesPerS: median(rows.map((x) => x.batch_size / (x.wall_ms / 1000))),
    stepMs,
    allReduceShare: rows.reduce((a, x) => a + (x.all_reduce_ms ?? 0), 0) / wall,
  };
}

try {
  const one = run('one', null, perReplica);
  const weak = run('weak', `cpu:${replicas}`, perReplica * replicas);
  const strong = run('strong', `cpu:${replicas}`, perReplica);
  const line = (label: string, r: ReturnType<typeof run>) =>
    `${label}: ${r.samplesPerS.toFixed(2)} samples/s, median ` +
    `step ${r.stepMs.toFixed(0)} ms, ` +
    `all-reduce ${(r.allReduceShare * 100).toFixed(1)}% of the wall`;
  console.log(
    `quickstart data, tiny model, wasm, ${availableParallelism()} cores; medians ` +
      `of ${steps} steps after ${warmup} warm-up`,
  );
  console.log(line(`1 replica, batch ${perReplica}`, one));
  console.log(line(`${replicas} replicas, batch ${perReplica * replicas} (${perReplica} each)`, weak));
  console.log(line(`${replicas} replicas, batch ${perReplica} (the same global batch)`, strong));
  const weakSpeedup = weak.samplesPerS / one.samplesPerS;
  const strongSpeedup = strong.samplesPerS / one.samplesPerS;
  console.log(
    `weak scaling: ${weakSpeedup.toFixed(2)}× one replica ` +
      `(efficiency ${((weakSpeedup / replicas) * 100).toFixed(0)}%); strong ` +
      `scaling: ${strongSpeedup.toFixed(2)}× ` +
      `(efficiency ${((strongSpeedup / replicas) * 100).toFixed(0)}%)`,
  );
  report('parallel', {
    replicas,
    cores: availableParallelism(),
    samplesPerSOne: +one.samplesPerS.toFixed(3),
    samplesPerSWeak: +weak.samplesPerS.toFixed(3),
    samplesPerSStrong: +strong.samplesPerS.toFixed(3),
    weakSpeedup: +weakSpeedup.toFixed(3),
    strongSpeedup: +strongSpeedup.toFixed(3),
    allReduceShareWeak: +weak.allReduceShare.toFixed(4),
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
