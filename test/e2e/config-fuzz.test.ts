// A config that validates trains, or is refused with a clear error: never INTERNAL, never a run that
// takes the machine's memory. Configs drawn from a seeded generator over the model, batching,
// training, audio and device keys (each kept only if `validate-gpu-optimization` finds no error in
// it), each trained 2 steps on the cpu backend by two worker processes; every worker's peak resident
// memory stays under 4 GB. Configs carry a device.model_memory_budget_mb between 64 and 3000: that
// is the user's bound, and the estimate must refuse what exceeds it before allocating.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';
import { fuzzJobs } from '../helpers/fuzz-configs.js';
import { microRun } from '../helpers/short-clips.js';

// 300, as issue 31 asks: a config takes ~1.7 s alone on a 2-core machine and 4.4 s (median) in CI beside
// the other test files, 14 of the CI's 22 minutes in parallel with them (5.6 s alone before the cpu
// backend's kernels were replaced, backend/cpu.ts). On a slower day of the same machine the median was
// 6.1–6.3 s and the sweep 1,195 s: the time limit is a safety net for a hung worker, not a speed check
// (bench/config-fuzz.ts measures that). The same sweep through the bundled CLI, one process a
// config, runs as a benchmark on a many-core host: bench/config-fuzz.ts writes it, bench/config-fuzz.py
// trains it. XTTS_FUZZ_CONFIGS=N trains the first N here.
const COUNT = Number(process.env.XTTS_FUZZ_CONFIGS ?? 300);
const WORKERS = 2;
const MAX_RSS_BYTES = 4e9;

interface Outcome {
  file: string;
  ok: boolean;
  code?: string;
  message?: string;
  ms: number;
  maxRssBytes: number;
  evalWavs?: number;
  longEvalWavs?: string[];
}

function runWorker(jobs: string[]): Promise<Outcome[]> {
  const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
  const child = spawn(process.execPath, [join(repoRoot, 'test', 'helpers', 'fuzz-worker.mjs')], {
    cwd: repoRoot,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const outcomes: Outcome[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  createInterface({ input: child.stdout }).on('line', (l) => {
    if (l.startsWith('{')) outcomes.push(JSON.parse(l) as Outcome);
  });
  child.stdin.end(`${jobs.join('\n')}\n`);
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0
        ? resolve(outcomes)
        : reject(new Error(`fuzz worker exited ${code} after ${outcomes.length} configs:\n${stderr}`)),
    ),
  );
}

test(`${COUNT} configs that validate, each trained 2 steps on cpu: none ends in INTERNAL, no worker over 4 GB`, {
  timeout: 2_400_000,
}, async (t) => {
  const { dir, config } = microRun('xtts-fuzz-');
  // 2.3 GB of runs and caches: removed whatever the outcome (test/run.js removes its whole scratch folder
  // only when every test passes).
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { jobs: drawnJobs, drawn } = fuzzJobs(dir, config, COUNT);
  const jobs = drawnJobs.map((j) => `${j.file}\t${j.output}`);
  const shares = Array.from({ length: WORKERS }, (_, w) => jobs.filter((_, i) => i % WORKERS === w));
  const outcomes = (await Promise.all(shares.map(runWorker))).flat();
  assert.equal(outcomes.length, COUNT);
  const internal = outcomes.filter((o) => !o.ok && o.code === 'INTERNAL');
  assert.deepEqual(
    internal.map((o) => `${o.file}: ${o.message}`),
    [],
  );
  const refused = new Map<string, number>();
  for (const o of outcomes) if (!o.ok) refused.set(o.code!, (refused.get(o.code!) ?? 0) + 1);
  for (const o of outcomes.filter((x) => !x.ok).slice(0, 5)) console.log(`refused: ${o.file}: ${o.code} ${o.message}`);
  // Eval synthesis of a model 2 steps old (durations anywhere) stops at the longest clip trained on.
  assert.deepEqual(
    outcomes.flatMap((o) => o.longEvalWavs ?? []),
    [],
  );
  const evalWavs = outcomes.reduce((n, o) => n + (o.evalWavs ?? 0), 0);
  const peak = Math.max(...outcomes.map((o) => o.maxRssBytes));
  const trained = outcomes.filter((o) => o.ok).length;
  console.log(
    `fuzz: ${COUNT} of ${drawn} drawn configs validate; ${trained} trained 2 steps, ` +
      `refused: ${JSON.stringify(Object.fromEntries(refused))}; ${evalWavs} eval WAVs; peak worker ` +
      `RSS ${(peak / 2 ** 20).toFixed(0)} MiB; ` +
      `median ${outcomes.map((o) => o.ms).sort((a, b) => a - b)[COUNT >> 1]} ms a ` +
      `config`,
  );
  assert.ok(peak < MAX_RSS_BYTES, `a worker reached ${(peak / 2 ** 20).toFixed(0)} MiB`);
  // Most configs train: the test is of training, not of refusals.
  assert.ok(trained > COUNT / 2, `only ${trained} of ${COUNT} trained`);
});
