// `xtts profile-bottleneck` as a process: verdicts on recorded runs crafted to be input-bound,
// dispatch-bound and balanced (run databases written with the trainer's own RunDatabase), the trace
// in the structure Perfetto reads, the HTML report, --fix-config that the validator accepts, a short
// live run on the CPU backend that says plainly there is no GPU, a stable --json shape, and bad input (planted
// problems in real runs on the software WebGPU device: profile-planted.test.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { parse } from 'yaml';
import { traceProblems } from '../../src/core/profile/trace.js';
import { processStartTime } from '../../src/core/training/run-lock.js';
import { loadConfig } from '../../src/core/config/load.js';
import { RunDatabase, type DeviceSampleRecord } from '../../src/core/telemetry/run-db.js';
import type { StepRecord, StepSpans } from '../../src/core/telemetry/spans.js';
import { assertNoStackTrace, describeRun, repoRoot, runCli, utilityBin } from '../helpers/cli.js';
import { assertJsonShape } from '../helpers/json-shape.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-profile-cli-');
after(() => tmp.remove());

const H100 = { index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalBytes: 85_520_809_984, gpm: true };
const TIMESTAMPS = 'GPU timestamp queries around each program, summed';

type Kind = 'input-bound' | 'dispatch-bound' | 'balanced';

/**
 * A recorded run as `xtts train` leaves it, shaped like measurements on an H100: 5 warm-up and 40
 * measured steps, 3 device-timed probes, NVML samples every 100 ms. input-bound: the trainer waits
 * 35 of 87 ms for data. dispatch-bound: 1,270 kernels at 60 µs each, the GPU busy 11%. balanced:
 * a large batch keeps the GPU 95% busy while the host queues ahead.
 */
function craftRun(kind: Kind): { runDir: string; config: string } {
  const dir = tmp.mkdir(kind);
  const config = tmp.write(
    `${kind}/config.yaml`,
    `# crafted for the ${kind} test\nextends: quickstart\ndataset:\n  ` +
      `path: ${join(repoRoot, 'configs', 'quickstart')}\nbatching:\n  batch_size: ` +
      `16\npipeline:\n  workers: 1\n  prefetch_depth: 2\n`,
  );
  const loaded = loadConfig(config).loaded!;
  const runDir = join(dir, 'run');
  const db = RunDatabase.create(runDir);
  db.setMeta('config', loaded.config);
  db.setMeta('configFile', config);
  db.setMeta('backend', 'webgpu');
  db.setMeta('device', H100.name);
  db.setMeta('startedAtEpochMs', Date.UTC(2026, 10, 23, 9, 0, 0));
  db.setMeta('cpuCores', 16);
  db.setMeta('gpuTelemetry', { available: true, source: 'nvml', rateHz: 10, devices: [H100], notes: [] });
  db.setMeta('deviceTiming', { available: true, source: TIMESTAMPS });
  const spans: Record<Kind, StepSpans> = {
    'input-bound': {
      dataWaitMs: 35,
      uploadMs: 1,
      forwardBackwardMs: 40,
      optimizerMs: 10,
      syncMs: 0.5,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0.5,
    },
    'dispatch-bound': {
      dataWaitMs: 0.1,
      uploadMs: 0.5,
      forwardBackwardMs: 64,
      optimizerMs: 12,
      syncMs: 0.8,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0.6,
    },
    balanced: {
      dataWaitMs: 0.2,
      uploadMs: 2,
      forwardBackwardMs: 60,
      optimizerMs: 14,
      syncMs: 3,
      allReduceMs: 0,
      checkpointMs: 0,
      otherMs: 0.8,
    },
  };
  const deviceMs: Record<Kind, number> = { 'input-bound': 30, 'dispatch-bound': 8.5, balanced: 76 };
  const util: Record<Kind, number> = { 'input-bound': 33, 'dispatch-bound': 11, balanced: 96 };
  let t = 0;
  for (let i = 1; i <= 48; i++) {
    const probe = i > 45;
    const s = {
      ...spans[kind],
      forwardBackwardMs: spans[kind].forwardBackwardMs * (probe ? 4 : 1 + 0.05 * Math.sin(i)),
    };
    const wallMs = Object.values(s).reduce((a, b) => a + b, 0);
    const rec: StepRecord = {
      step: i,
      startMs: t,
      wallMs,
      spans: s,
      epoch: 0,
      batchIndex: i,
      bucket: i % 4,
      batchSize: 16,
      tokens: 96,
      frames: 512,
      kernels: 1270,
      readySlots: kind === 'input-bound' ? 0 : 2,
      learningRate: 1e-3,
      ...(probe ? { deviceMs: deviceMs[kind] } : {}),
      ...(i % 10 === 0 ? { loss: 1.5 - i / 100 } : {}),
    };
    db.addStep(rec);
    t += wallMs;
  }
  for (let ms = 0; ms <= t; ms += 100) {
    const sample: DeviceSampleRecord = {
      tMs: ms,
      device: 0,
      utilizationPct: util[kind],
      memoryUsedBytes: 12e9,
      memoryTotalBytes: H100.memoryTotalBytes,
      smClockMhz: 1980,
      powerW: 310,
      temperatureC: 48,
      smActivityPct: util[kind] * 0.6,
      throttleReasons: '',
    };
    db.addDeviceSample(sample);
  }
  db.close();
  return { runDir, config };
}

const runs = Object.fromEntries(
  (['input-bound', 'dispatch-bound', 'balanced'] as Kind[]).map((k) => [k, craftRun(k)]),
) as Record<Kind, { runDir: string; config: string }>;
const verdict = (r: any, id: string) => r.verdicts.find((v: { id: string }) => v.id === id);

test('an input-bound run: graded high first, with the pipeline keys to change; exit 1', async () => {
  const r = await runCli(['profile-bottleneck', '--run', runs['input-bound'].runDir, '--json']);
  assert.equal(r.code, 1, describeRun(r));
  const p = r.json.result;
  assert.equal(p.verdicts[0].id, 'input-bound');
  assert.equal(p.verdicts[0].grade, 'high');
  assert.ok(Math.abs(p.breakdown.shares.dataWaitMs - 35 / 87) < 0.01, String(p.breakdown.shares.dataWaitMs));
  // More producer threads, for the 16 cores of the host that recorded the run (not this one's).
  assert.deepEqual(
    verdict(p, 'input-bound').actions.map((a: { key: string; value: number }) => [a.key, a.value]),
    [
      ['pipeline.workers', 15],
      ['pipeline.prefetch_depth', 4],
    ],
  );
  assert.ok(
    verdict(p, 'input-bound').actions.some(
      (a: { key: string; value: number }) => a.key === 'pipeline.prefetch_depth' && a.value === 4,
    ),
  );
  assert.equal(verdict(p, 'dispatch-bound').grade, 'ok', 'a starved trainer is not called dispatch-bound');
  assert.match(verdict(p, 'dispatch-bound').title, /the GPU idles, but waiting for input comes first/);
  assert.equal(p.breakdown.steps, 40);
  assert.equal(p.breakdown.deviceTimedSteps, 3);
  assert.equal(p.gpuTelemetry.devices[0].name, H100.name);
});

test(
  'a dispatch-bound run: kernels per step, host time per kernel, GPU busy by ' + 'timestamps and by NVML; exit 1',
  async () => {
    const r = await runCli(['profile-bottleneck', '--run', runs['dispatch-bound'].runDir, '--json']);
    assert.equal(r.code, 1, describeRun(r));
    const p = r.json.result;
    const d = verdict(p, 'dispatch-bound');
    assert.equal(d.grade, 'high');
    assert.equal(p.breakdown.gpuBusySource, 'timestamp-queries');
    assert.ok(Math.abs(p.breakdown.gpuBusyShare - 8.5 / p.breakdown.wallMs.mean) < 1e-9);
    assert.equal(p.breakdown.utilizationPct, 11);
    assert.match(d.evidence, /1270 kernels a step at 60 µs of host time each/);
    assert.match(d.evidence, /NVML utilisation 11\.0%; SM activity 6\.6%/);
    assert.deepEqual(d.actions[0], {
      key: 'batching.batch_size',
      value: 32,
      effect: d.actions[0].effect,
      rule: 'batching/memory',
    });
    assert.equal(verdict(p, 'input-bound').grade, 'ok');
    // People get the same verdicts as a table, a timeline and numbered lines.
    const human = await runCli(['profile-bottleneck', '--run', runs['dispatch-bound'].runDir]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /forwardBackward/);
    assert.match(human.stdout, /device compute\*/);
    assert.match(human.stdout, /^ +\d+ F+O+/m, 'the timeline shows dispatch');
    assert.match(human.stdout, /1\. host\/dispatch-bound: the GPU idles while the host issues kernels \[high\]/);
    assert.match(human.stdout, /batching\.batch_size: 32 — .*docs\/rules\.md#batching-memory/);
    assertNoStackTrace(human);
  },
);

test('a balanced run: nothing graded above ok, compute-bound, exit 0; thresholds can make it fail', async () => {
  const r = await runCli(['profile-bottleneck', '--run', runs.balanced.runDir, '--json']);
  assert.equal(r.code, 0, describeRun(r));
  const p = r.json.result;
  assert.ok(
    p.verdicts.every((v: { grade: string }) => v.grade === 'ok'),
    JSON.stringify(p.verdicts.map((v: { id: string; grade: string }) => [v.id, v.grade])),
  );
  assert.match(verdict(p, 'compute-bound').title, /^compute-bound/);
  // Stricter thresholds: 96% busy is "moderately dispatch-bound" below 99%, and 14% of the memory is
  // too much when only 10% may be used; a verdict graded high makes the exit code 1.
  const strict = await runCli([
    'profile-bottleneck',
    '--run',
    runs.balanced.runDir,
    '--threshold',
    'dispatchBoundGpuBusy=0.99',
    '--threshold',
    'computeBoundGpuBusy=1',
    '--threshold',
    'memoryHeadroomShare=0.1',
    '--json',
  ]);
  assert.equal(strict.code, 1, describeRun(strict));
  assert.equal(strict.json.result.thresholds.dispatchBoundGpuBusy, 0.99);
  assert.equal(verdict(strict.json.result, 'dispatch-bound').grade, 'moderate');
  assert.equal(verdict(strict.json.result, 'memory-headroom').grade, 'high');
});

test(
  '--trace, --report and --fix-config: a trace Perfetto reads, a self-contained ' +
    'report, a config the validator accepts; existing files replaced only with --overwrite, never the config',
  async () => {
    const { runDir, config } = runs['dispatch-bound'];
    const trace = tmp.at('dispatch.trace.json');
    const report = tmp.at('dispatch.html');
    const fixed = tmp.at('dispatch-fixed.yaml');
    const r = await runCli([
      'profile-bottleneck',
      '--run',
      runDir,
      '--trace',
      trace,
      '--report',
      report,
      '--fix-config',
      fixed,
      '--json',
    ]);
    assert.equal(r.code, 1, describeRun(r));
    assert.deepEqual(r.json.result.files, { trace, report, fixConfig: fixed });
    const t = JSON.parse(readFileSync(trace, 'utf8'));
    assert.deepEqual(traceProblems(t), []);
    assert.equal(t.traceEvents.filter((e: { cat?: string }) => e.cat === 'step').length, 40);
    assert.equal(t.traceEvents.filter((e: { cat?: string }) => e.cat === 'device').length, 3);
    assert.ok(
      t.traceEvents.some((e: { ph: string; name: string }) => e.ph === 'C' && e.name === 'GPU 0 SM activity %'),
    );
    const html = readFileSync(report, 'utf8');
    assert.match(html, /^<!doctype html>/);
    assert.doesNotMatch(html, /<script|\b(src|href)=/i, 'no scripts, nothing fetched or linked');
    assert.equal((html.match(/<svg/g) ?? []).length, 2, 'the step breakdown and the GPU utilisation charts');
    assert.match(html, /device time per step<\/td><td>8\.5 ms/);
    const patched = readFileSync(fixed, 'utf8');
    assert.match(patched, /^# crafted for the dispatch-bound test/, 'comments are kept');
    assert.match(patched, /# xtts: host\/dispatch-bound.*\n {2}batch_size: 32/);
    assert.equal(parse(patched).batching.batch_size, 32);
    const v = await runCli(['validate-gpu-optimization', '--config', fixed, '--json']);
    assert.equal(v.json.result.schemaValid, true, describeRun(v));
    assert.notEqual(config, fixed);

    // Again: the files exist, so each is refused without --overwrite, before any work, and left as it is.
    const files = [trace, report, fixed].map((f) => readFileSync(f, 'utf8'));
    for (const [flag, file] of [
      ['--trace', trace],
      ['--report', report],
      ['--fix-config', fixed],
    ]) {
      const again = await runCli(['profile-bottleneck', '--run', runDir, flag, file, '--json']);
      assert.equal(again.code, 2, describeRun(again));
      assert.equal(again.json.error.code, 'OUTPUT_EXISTS', flag);
    }
    assert.deepEqual(
      [trace, report, fixed].map((f) => readFileSync(f, 'utf8')),
      files,
    );
    const replaced = await runCli(['profile-bottleneck', '--run', runDir, '--report', report, '--overwrite', '--json']);
    assert.equal(replaced.code, 1, describeRun(replaced));
    // Not even --overwrite writes the patched config over the config it patches.
    const own = await runCli(['profile-bottleneck', '--run', runDir, '--fix-config', config, '--overwrite', '--json']);
    assert.equal(own.json.error?.code, 'OUTPUT_IS_INPUT', describeRun(own));
  },
);

test(
  '--fix-config writes only the changes judged for the values its file gives, and only to the file as the run ' +
    'read it, named whole',
  async () => {
    const { runDir, config } = runs['dispatch-bound'];
    /** The run copied to NAME, its meta rewritten (values as the trainer writes them: JSON). */
    const variant = (name: string, meta: Record<string, unknown>) => {
      const dir = tmp.mkdir(name);
      cpSync(runDir, dir, { recursive: true });
      const db = new Database(join(dir, 'run.sqlite'));
      for (const [k, v] of Object.entries(meta))
        db.prepare('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)').run(k, JSON.stringify(v));
      db.close();
      return dir;
    };
    const sha = createHash('sha256').update(readFileSync(config)).digest('hex');
    const fix = (dir: string, out: string) =>
      runCli(['profile-bottleneck', '--run', dir, '--fix-config', out, '--json']);
    // The run trained at batch 8 (a --set), the file says 16: the advice (16, twice the run's) is not written.
    const runConfig = { ...loadConfig(config).loaded!.config };
    runConfig.batching = { ...runConfig.batching, batch_size: 8 };
    const kept = tmp.at('fixed-kept.yaml');
    const r = await fix(variant('run-set', { config: runConfig, configSha256: sha }), kept);
    assert.equal(r.code, 1, describeRun(r));
    assert.ok(
      r.json.warnings.some((w: string) =>
        /batching\.batch_size: 16 not written: it was judged for the run's 8 .* says 16/.test(w),
      ),
      r.json.warnings.join('\n'),
    );
    assert.deepEqual(r.json.result.fixConfigNotes, r.json.warnings);
    assert.equal(parse(readFileSync(kept, 'utf8')).batching.batch_size, 16);
    // The file changed since the run began: refused, nothing written.
    const changed = variant('run-changed', { configSha256: 'a'.repeat(64) });
    const c = await fix(changed, tmp.at('fixed-changed.yaml'));
    assert.equal(c.code, 2, describeRun(c));
    assert.equal(c.json.error.code, 'RUN_CONFIG_CHANGED');
    // An older run that recorded its config relative to a folder it did not record: refused, whatever the cwd holds.
    const relative = variant('run-relative', { configFile: 'configs/quickstart.yaml' });
    const rel = await runCli(
      ['profile-bottleneck', '--run', relative, '--fix-config', tmp.at('fixed-rel.yaml'), '--json'],
      {
        cwd: repoRoot,
      },
    );
    assert.equal(rel.code, 2, describeRun(rel));
    assert.equal(rel.json.error.code, 'RUN_CONFIG_RELATIVE');
    assert.match(rel.json.error.suggestions[0], /apply the verdicts' changes by hand/);
    assert.deepEqual(
      readdirSync(tmp.path).filter((f) => /^fixed-(changed|rel)/.test(f)),
      [],
    );
  },
);

test('a run still training (its lock held by a live process) is judged with a warning that says so', async () => {
  const dir = tmp.mkdir('run-live');
  cpSync(runs.balanced.runDir, dir, { recursive: true });
  // This test's own process holds the lock, as a training process would.
  const holder = {
    pid: process.pid,
    processStart: processStartTime(process.pid),
    host: hostname(),
    startedAt: new Date().toISOString(),
    command: 'train',
  };
  writeFileSync(join(dir, '.xtts-run.lock'), JSON.stringify(holder));
  const r = await runCli(['profile-bottleneck', '--run', dir, '--json']);
  assert.equal(r.code, 0, describeRun(r));
  assert.deepEqual(r.json.warnings, [
    `${dir} is still training (process ${process.pid} on ${hostname()}, started ${holder.startedAt}): this judges ` +
      'its steps so far',
  ]);
  // Its process gone (a killed run's lock): nothing to say.
  writeFileSync(join(dir, '.xtts-run.lock'), JSON.stringify({ ...holder, pid: 2 ** 22 + 7, processStart: null }));
  const after = await runCli(['profile-bottleneck', '--run', dir, '--json']);
  assert.deepEqual(after.json.warnings, [], describeRun(after));
});

test('--json keeps its shape (fields renamed or removed fail here)', async () => {
  const r = await runCli(['profile-bottleneck', '--run', runs['dispatch-bound'].runDir, '--json']);
  // A dispatch-bound run is graded high: exit 1, and the envelope says findings.
  assert.equal(r.code, 1);
  assert.equal(r.json.status, 'findings');
  assert.equal(r.json.result.schemaVersion, 1);
  assertJsonShape('profile-bottleneck-recorded', r.json.result);
});

test('a live run on a CPU backend: real steps, no device-timed probes, and it says there is no GPU', {
  timeout: 300_000,
}, async () => {
  const out = tmp.at('live');
  const cache = tmp.at('live-cache.sqlite');
  const r = await runCli(
    [
      'profile-bottleneck',
      '--config',
      'configs/quickstart.yaml',
      '--set',
      `pipeline.cache.path=${cache}`,
      '--backend',
      'wasm',
      '--steps',
      '3',
      '--warmup',
      '1',
      '--output',
      out,
      '--json',
    ],
    { timeoutMs: 280_000 },
  );
  assert.ok(r.code === 0 || r.code === 1, describeRun(r));
  const p = r.json.result;
  assert.equal(p.backend, 'wasm');
  assert.equal(p.breakdown.steps, 3, 'probes are skipped on a CPU backend, so exactly warm-up + steps ran');
  assert.equal(p.deviceTiming.available, false);
  assert.match(p.deviceTiming.reason, /the wasm backend computes inside each kernel call/);
  assert.equal(p.breakdown.gpuBusyShare, null);
  assert.match(p.gpuNote, /there is no GPU in this measurement/);
  assert.ok(p.breakdown.kernels.p50 > 500, `${p.breakdown.kernels.p50} kernels a step`);
  assert.ok(
    p.breakdown.shares.forwardBackwardMs > 0.3 && p.breakdown.shares.optimizerMs > 0,
    JSON.stringify(p.breakdown.shares),
  );
  assert.equal(p.gpuTelemetry.available, false);
  assertJsonShape('profile-bottleneck-cpu', p);
  // The recorded run reads back the same way.
  const again = await runCli(['profile-bottleneck', '--run', out, '--warmup', '1', '--json']);
  assert.deepEqual(again.json.result.breakdown.wallMs, p.breakdown.wallMs);
});

test('without --output the profiled run goes to a temporary folder that is removed once judged', {
  timeout: 300_000,
}, async () => {
  const { microRun } = await import('../helpers/short-clips.js');
  const micro = microRun('xtts-profile-micro-');
  const scratch = tmp.mkdir('profile-tmpdir');
  const r = await runCli(
    ['profile-bottleneck', '--config', micro.config, '--backend', 'wasm', '--steps', '2'].concat(['--warmup', '1']),
    { env: { TMPDIR: scratch }, timeoutMs: 280_000 },
  );
  assert.ok(r.code === 0 || r.code === 1, describeRun(r));
  assert.match(r.stdout, /a temporary run, removed \(--output DIR keeps it\)/);
  assert.deepEqual(readdirSync(scratch), [], 'the temporary run folder is left behind');
  // stderr is a pipe here, not a terminal: a progress line of its own each time, none rewritten with \r.
  assert.match(r.stderr, /^profiling step \d+\/\d+$/m);
  assert.doesNotMatch(r.stderr, /\r/);
});

test('Ctrl-C while profiling: the steps so far are judged, the signal is the exit status; too few, it says so', {
  timeout: 600_000,
}, async () => {
  const { microRun } = await import('../helpers/short-clips.js');
  const micro = microRun('xtts-profile-sigint-');
  const profile = (out: string, warmup: number, afterSteps: number, signal: NodeJS.Signals = 'SIGINT') =>
    runCli(
      [
        'profile-bottleneck',
        '--config',
        micro.config,
        '--backend',
        'wasm',
        '--steps',
        '200',
        '--warmup',
        String(warmup),
      ].concat(['--output', out]),
      {
        timeoutMs: 280_000,
        interrupt: { signal, when: (e) => (e.match(/^profiling step \d+\//gm)?.length ?? 0) >= afterSteps },
      },
    );
  // Past the warm-up: the report of the steps that ran, and a warning that says how many of the asked-for ones.
  const judged = await profile(tmp.at('sigint-judged'), 1, 4);
  assert.equal(judged.code, 130, describeRun(judged));
  assert.match(judged.stderr, /SIGINT: finishing this step, then judging the \d+ steps so far/);
  const m = judged.stderr.match(/SIGINT stopped the profile after (\d+) of 204 steps: (\d+) of them past the warm-up/);
  assert.ok(m, judged.stderr);
  assert.equal(Number(m[2]), Number(m[1]) - 1);
  assert.match(judged.stderr, /where --steps asked for 200/);
  assert.match(judged.stdout, /timeline/);
  assertNoStackTrace(judged, 'judged');
  // SIGTERM the same, with its own status.
  const term = await profile(tmp.at('sigterm-judged'), 1, 4, 'SIGTERM');
  assert.equal(term.code, 143, describeRun(term));
  assert.match(term.stderr, /SIGTERM stopped the profile after \d+ of 204 steps/);
  // Within the warm-up: nothing to judge, said as such (not as a usage error), and where the steps are.
  const early = tmp.at('sigint-early');
  const short = await profile(early, 50, 2);
  assert.equal(short.code, 130, describeRun(short));
  assert.match(short.stderr, /INTERRUPTED/);
  assert.match(short.stderr, /SIGINT stopped the profile before 2 steps past the 50 warm-up steps were measured/);
  assert.ok(short.stderr.includes(`xtts profile-bottleneck --run ${early} --warmup 0`), short.stderr);
  assertNoStackTrace(short, 'early');
  // The steps that ran are judged when asked so.
  const again = await runCli(['profile-bottleneck', '--run', early, '--warmup', '0', '--json']);
  assert.ok(again.code === 0 || again.code === 1, describeRun(again));
  assert.ok(again.json.result.breakdown.steps >= 2, JSON.stringify(again.json.result.breakdown.steps));
});

test('--json and a signal before the first step: one interrupted envelope without a result', {
  timeout: 300_000,
}, async () => {
  // The tiny model's first step on wasm takes seconds after the run folder's xtts-run.json is written.
  const { shortQuickstartRun } = await import('../helpers/short-clips.js');
  const run = shortQuickstartRun(12, 'xtts-profile-early-', '  max_steps: 60\n');
  const out = tmp.at('early-json');
  const r = await runCli(
    ['profile-bottleneck', '--config', run.config, '--backend', 'wasm', '--steps', '20', '--warmup', '1'].concat([
      '--output',
      out,
      '--json',
    ]),
    { timeoutMs: 280_000, interrupt: { signal: 'SIGINT', when: () => existsSync(join(out, 'xtts-run.json')) } },
  );
  assert.equal(r.code, 130, describeRun(r));
  assert.equal(r.json?.status, 'interrupted', r.stdout);
  assert.equal(r.json.result, null);
  assert.deepEqual(r.json.warnings, ['SIGINT: no step has run yet: exiting now']);
});

/** A folder whose run.sqlite holds `bytes`. */
function runWithDb(name: string, bytes: Buffer): string {
  const dir = tmp.mkdir(`db-${name}`);
  writeFileSync(join(dir, 'run.sqlite'), bytes);
  return dir;
}

/** The bytes of a SQLite database that is not a run's. */
function otherDatabase(): Buffer {
  const file = join(tmp.mkdir('other-db'), 'other.sqlite');
  const db = new Database(file);
  db.exec('CREATE TABLE notes (k TEXT)');
  db.close();
  return readFileSync(file);
}

test(
  'bad input: a folder without a run, an unknown or impossible threshold, an unwritable trace ' +
    'path, too few steps; exit 2 and no stack trace',
  async () => {
    const cases: [string[], RegExp, string][] = [
      [['--run', tmp.mkdir('empty')], /RUN_NOT_FOUND/, 'run.sqlite is missing'],
      // A run.sqlite that is text, another SQLite database, or a copy cut short: named, never INTERNAL.
      [['--run', runWithDb('garbage', Buffer.from('garbage\n'))], /RUN_DB_DAMAGED/, 'file is not a database'],
      [['--run', runWithDb('foreign', otherDatabase())], /RUN_DB_DAMAGED/, 'it is another database'],
      [
        ['--run', runWithDb('cut', readFileSync(join(runs.balanced.runDir, 'run.sqlite')).subarray(0, 20_000))],
        /RUN_DB_DAMAGED/,
        "cannot be read as a run's database",
      ],
      [['--run', runs.balanced.runDir, '--threshold', 'inputBound=0.3'], /USAGE/, 'NAME one of inputBoundModerate'],
      [['--run', runs.balanced.runDir, '--threshold', 'inputBoundHigh=lots'], /USAGE/, 'expected NAME=NUMBER'],
      [['--run', runs.balanced.runDir, '--threshold', 'inputBoundHigh=5'], /USAGE/, 'a share between 0 and 1'],
      [['--run', runs.balanced.runDir, '--threshold', 'inputBoundHigh=-1'], /USAGE/, 'never negative'],
      [
        ['--run', runs.balanced.runDir, '--threshold', 'inputBoundModerate=0.3', '--threshold', 'inputBoundHigh=0.2'],
        /USAGE/,
        'inputBoundModerate 0.3 is above inputBoundHigh 0.2',
      ],
      [
        ['--run', runs.balanced.runDir, '--threshold', 'lowMfu=0.1', '--threshold', 'lowMfu=0.3'],
        /USAGE/,
        'lowMfu is given twice',
      ],
      [
        ['--run', runs.balanced.runDir, '--trace', join(tmp.path, 'no', 'such', 'dir', 't.json')],
        /OUTPUT_UNWRITABLE/,
        `its folder ${join(tmp.path, 'no', 'such', 'dir')} does not exist`,
      ],
      [
        // A path through a file (ENOTDIR) is the same usage error, not INTERNAL.
        ['--run', runs.balanced.runDir, '--trace', join(runs.balanced.runDir, 'run.sqlite', 't.json')],
        /OUTPUT_UNWRITABLE/,
        'run.sqlite is not a folder',
      ],
      [
        ['--run', runs.balanced.runDir, '--fix-config', join(tmp.path, 'no', 'such', 'dir', 'f.yaml')],
        /OUTPUT_UNWRITABLE/,
        `its folder ${join(tmp.path, 'no', 'such', 'dir')} does not exist`,
      ],
      [['--run', runs.balanced.runDir, '--warmup', '47'], /RUN_TOO_SHORT/, 'fewer than 2 to judge'],
      [['--config', 'configs/quickstart.yaml', '--run', runs.balanced.runDir], /USAGE/, '--config'],
    ];
    for (const [args, code, text] of cases) {
      const r = await runCli(['profile-bottleneck', ...args, '--json']);
      assert.equal(r.code, 2, `${args.join(' ')}: ${describeRun(r)}`);
      assert.match(r.json.error.code, code);
      assert.ok(r.json.error.message.includes(text), `${args.join(' ')}: ${r.json.error.message}`);
      const human = await runCli(['profile-bottleneck', ...args]);
      assert.equal(human.code, 2);
      assertNoStackTrace(human, args.join(' '));
    }
    // A used --output: the advice is another folder or --run, not train's --resume (profiling has no such flag).
    const used = await runCli([
      'profile-bottleneck',
      '--config',
      'configs/quickstart.yaml',
      '--output',
      runs.balanced.runDir,
      '--backend',
      'cpu',
      '--json',
    ]);
    assert.equal(used.code, 2, describeRun(used));
    assert.equal(used.json.error.code, 'RUN_FOLDER_USED');
    assert.deepEqual(
      used.json.error.suggestions.map((x: string) => x.replace(/--output \S+/, '--output NEW')),
      [
        'profile into a new folder: --output NEW',
        `or judge the run already there: xtts profile-bottleneck --run ${runs.balanced.runDir}`,
      ],
    );
  },
);

test('the utility binary gives the same result as the host command', async () => {
  const bin = utilityBin('profile-bottleneck')!;
  const [a, b] = await Promise.all([
    runCli(['--run', runs.balanced.runDir, '--json'], { bin }),
    runCli(['profile-bottleneck', '--run', runs.balanced.runDir, '--json']),
  ]);
  assert.equal(a.code, 0, describeRun(a));
  assert.deepEqual(a.json.result.verdicts, b.json.result.verdicts);
});
