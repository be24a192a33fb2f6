// Checkpoints are whole or absent: a write killed mid-way (SIGKILL in a child process) leaves the
// previous checkpoint as `latest`; rotation keeps the last N and the best.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CheckpointStore,
  resolveCheckpoint,
  type CheckpointState,
  type NamedArray,
} from '../../src/core/training/checkpoint.js';
import type { XttsError } from '../../src/core/errors.js';

/** A state.json that the schema accepts (what train writes), at `step`. */
const state = (step: number): CheckpointState => ({
  step,
  position: { epoch: 0, batch: step },
  dropoutRng: 1,
  bestValidationLoss: null,
  validationsWithoutImprovement: 0,
  tokenizer: {},
  tokenizerIdentity: 'chars',
  stats: { mean: [0], std: [1] },
  speakers: [],
  languages: ['en'],
  sizes: { vocabSize: 10, nMels: 1, numLanguages: 1 },
  config: { model: {}, audio: {}, training: {} } as never,
});

const arrays = (v: number, n = 4): NamedArray[] => [
  { name: 'a.w', shape: [2, n / 2], dtype: 'float32', data: new Float32Array(n).fill(v) },
  { name: 'b', shape: [3], dtype: 'int32', data: Int32Array.from([1, 2, v]) },
];

test('save, load, latest, rotation keeps the last N and the best', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-'));
  const store = new CheckpointStore(run);
  for (const step of [100, 200, 300, 400])
    store.save(
      step,
      { weights: arrays(step), optimizer: arrays(-step), state: state(step) },
      { keep: 2, best: step === 200 },
    );
  assert.deepEqual(
    store.list().map((c) => c.step),
    [200, 300, 400],
  );
  assert.equal(store.best(), join(run, 'checkpoints', 'step-00000200'));
  const c = store.load<{ step: number }>(store.latest()!);
  assert.equal(c.state.step, 400);
  assert.deepEqual([...c.weights[0].data], [400, 400, 400, 400]);
  assert.deepEqual([...c.weights[1].data], [1, 2, 400]);
  assert.equal(c.weights[1].data instanceof Int32Array, true);
  assert.deepEqual([...c.optimizer[0].data], [-400, -400, -400, -400]);
  assert.equal(resolveCheckpoint(run), store.latest());
  assert.throws(() => resolveCheckpoint(mkdtempSync(join(tmpdir(), 'xtts-none-'))), /no checkpoint/);
  // The pointer files name the folders they point at (docs/training.md: `latest` and `best` point at folders).
  assert.equal(resolveCheckpoint(join(run, 'checkpoints', 'best')), join(run, 'checkpoints', 'step-00000200'));
  assert.equal(resolveCheckpoint(join(run, 'checkpoints', 'latest')), store.latest());
  // Named from inside checkpoints/ (a relative pointer): its run is found all the same.
  const cwd = process.cwd();
  process.chdir(join(run, 'checkpoints'));
  try {
    assert.equal(resolveCheckpoint('latest'), store.latest());
  } finally {
    process.chdir(cwd);
  }
  rmSync(join(run, 'checkpoints', 'step-00000200'), { recursive: true });
  assert.throws(
    () => resolveCheckpoint(join(run, 'checkpoints', 'best')),
    /checkpoints\/best points at no checkpoint that is still there/,
  );
});

test("arrays past 2 GiB (the big preset's optimizer moments are 3.4 GB) are saved and loaded whole", () => {
  // One write or read takes at most 2 GiB - 1 bytes and readFileSync no larger file: the big preset's first
  // checkpoint failed with "The value of "length" is out of range" before arrays were written piece by piece.
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-2g-'));
  try {
    const n = 2 ** 29 + 1024; // 2 GiB + 4 KiB of float32
    const big = new Float32Array(n);
    for (let i = 0; i < n; i++) big[i] = i % 65521; // a prime period: a piece read to the wrong place shows
    const store = new CheckpointStore(run);
    const weights: NamedArray[] = [{ name: 'big', shape: [n], dtype: 'float32', data: big }, ...arrays(5)];
    store.save(1, { weights, optimizer: arrays(-1), state: state(1) }, { keep: 1 });
    assert.ok(statSync(join(store.latest()!, 'weights.safetensors')).size > 2 ** 31);
    const c = store.load<{ step: number }>(store.latest()!);
    const back = c.weights[0].data;
    assert.equal(back.length, n);
    let wrong = -1;
    for (let i = 0; i < n && wrong < 0; i++) if (back[i] !== big[i]) wrong = i;
    assert.equal(wrong, -1, `value ${wrong} read back as ${back[wrong]}, written as ${big[wrong]}`);
    assert.deepEqual([...c.weights[1].data], [5, 5, 5, 5]);
    assert.deepEqual([...c.weights[2].data], [1, 2, 5]);
    assert.deepEqual([...c.optimizer[0].data], [-1, -1, -1, -1]);
  } finally {
    rmSync(run, { recursive: true, force: true });
  }
});

test('a checkpoint write killed mid-way leaves the previous one intact and latest', async () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-kill-'));
  const store = new CheckpointStore(run);
  store.save(100, { weights: arrays(1), optimizer: arrays(2), state: state(100) }, { keep: 3 });
  // A child writes a large checkpoint and is killed while writing it.
  const script = join(run, 'writer.mts');
  writeFileSync(
    script,
    `
    import { CheckpointStore } from '${new URL('../../src/core/training/checkpoint.ts', import.meta.url).href}';
    const big = [{ name: 'w', shape: [1 << 26], dtype: 'float32', data: new Float32Array(1 << 26) }];
    process.stdout.write('writing\\n');
    new CheckpointStore(process.argv[2]).save(200, { weights: big, optimizer: big, state: { step: 200 } }, { keep: 3 });
    process.stdout.write('done\\n');`,
  );
  const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', script, run], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((r) => child.once('exit', r));
  let out = '';
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('writing'))
        setTimeout(() => {
          child.kill('SIGKILL');
          resolve();
        }, 150);
    });
    child.on('exit', () => resolve());
  });
  await exited;
  assert.ok(!out.includes('done'), 'the child was killed before it finished');
  const again = new CheckpointStore(run);
  assert.equal(again.latest(), join(run, 'checkpoints', 'step-00000100'));
  assert.equal(again.load<{ step: number }>(again.latest()!).state.step, 100);
  assert.deepEqual(
    again.list().map((c) => c.step),
    [100],
  );
  // The next save sweeps the killed write's temporary folder.
  again.save(300, { weights: arrays(3), optimizer: arrays(4), state: state(300) }, { keep: 3 });
  assert.ok(!existsSync(join(run, 'checkpoints', `.tmp-step-00000200-${child.pid}`)));
});

// An independent reader of the safetensors layout (numpy, no xtts code): Python's `safetensors.safe_open`
// is used as well where it is installed.
const READER = String.raw`
import json, struct, sys
import numpy as np
path = sys.argv[1]
raw = open(path, 'rb').read()
(n,) = struct.unpack('<Q', raw[:8])
assert (8 + n) % 8 == 0, n  # tensors start 8-byte aligned
header = json.loads(raw[8:8 + n])
meta = header.pop('__metadata__', {})
body = raw[8 + n:]
out = {'metadata': meta, 'tensors': {}}
for name, e in header.items():
    b, end = e['data_offsets']
    a = np.frombuffer(body[b:end], dtype={'F32': '<f4', 'I32': '<i4'}[e['dtype']]).reshape(e['shape'])
    out['tensors'][name] = {'shape': list(a.shape), 'sum': float(a.sum()), 'dtype': e['dtype']}
try:
    from safetensors import safe_open
    with safe_open(path, framework='numpy') as f:
        out['safe_open'] = {k: list(f.get_tensor(k).shape) for k in f.keys()}
except ImportError:
    pass
print(json.dumps(out))
`;

test(
  'weights and optimizer state are safetensors files that a reader outside xtts ' + 'opens with the names and shapes',
  () => {
    const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-st-'));
    const dir = new CheckpointStore(run).save(
      7,
      { weights: arrays(3, 6), optimizer: arrays(-1), state: state(7) },
      { keep: 1 },
    );
    const got = JSON.parse(
      execFileSync(process.env.XTTS_TEST_PYTHON ?? 'python3', ['-c', READER, join(dir, 'weights.safetensors')], {
        encoding: 'utf8',
      }),
    );
    if (process.env.XTTS_TEST_PYTHON)
      assert.ok(got.safe_open, 'the safetensors package is not installed in XTTS_TEST_PYTHON');
    // The weights describe themselves: step, config, tokenizer, speakers, languages, statistics, sizes (JSON).
    const { format, content, ...described } = got.metadata;
    assert.deepEqual([format, content], ['xtts-checkpoint@1', 'weights']);
    const s = state(7);
    assert.deepEqual(Object.fromEntries(Object.entries(described).map(([k, v]) => [k, JSON.parse(v as string)])), {
      step: 7,
      config: s.config,
      tokenizer: s.tokenizer,
      speakers: [],
      languages: ['en'],
      stats: s.stats,
      sizes: s.sizes,
    });
    assert.deepEqual(got.tensors, {
      'a.w': { shape: [2, 3], sum: 18, dtype: 'F32' },
      b: { shape: [3], sum: 6, dtype: 'I32' },
    });
    if (got.safe_open) assert.deepEqual(got.safe_open, { 'a.w': [2, 3], b: [3] });
    assert.ok(existsSync(join(dir, 'optimizer.safetensors')));
  },
);

test('a checkpoint written before safetensors (weights.json + weights.bin) still loads', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-old-'));
  const dir = join(run, 'checkpoints', 'step-00000005');
  mkdirSync(dir, { recursive: true });
  const w = new Float32Array([1.5, -2, 3, 4]);
  const i = Int32Array.from([9, 8, 7]);
  writeFileSync(join(dir, 'weights.bin'), Buffer.concat([Buffer.from(w.buffer), Buffer.from(i.buffer)]));
  writeFileSync(
    join(dir, 'weights.json'),
    JSON.stringify({
      format: 'xtts-checkpoint@1',
      arrays: [
        { name: 'a.w', shape: [2, 2], dtype: 'float32', offset: 0, length: 4 },
        { name: 'b', shape: [3], dtype: 'int32', offset: 16, length: 3 },
      ],
    }),
  );
  writeFileSync(join(dir, 'optimizer.bin'), Buffer.alloc(0));
  writeFileSync(join(dir, 'optimizer.json'), JSON.stringify({ format: 'xtts-checkpoint@1', arrays: [] }));
  writeFileSync(join(dir, 'state.json'), JSON.stringify({ format: 'xtts-checkpoint@1', ...state(5) }));
  const c = new CheckpointStore(run).load<{ step: number }>(dir);
  assert.equal(c.state.step, 5);
  assert.deepEqual([...c.weights[0].data], [1.5, -2, 3, 4]);
  assert.deepEqual([...c.weights[1].data], [9, 8, 7]);
});

test(
  'a checkpoint whose weights or optimizer state hold NaN or Inf is refused, ' +
    'naming the tensor; nothing is written',
  () => {
    const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-nan-'));
    const store = new CheckpointStore(run);
    store.save(1, { weights: arrays(1), optimizer: arrays(2), state: state(1) }, { keep: 3 });
    const nan = arrays(1);
    nan[0].data[1] = Number.NaN;
    assert.throws(
      () => store.save(2, { weights: nan, optimizer: arrays(2), state: state(2) }, { keep: 3 }),
      (e: Error & { code?: string }) => e.code === 'CHECKPOINT_NOT_FINITE' && /weight a\.w holds NaN/.test(e.message),
    );
    const inf = arrays(2);
    inf[0].data[0] = Number.POSITIVE_INFINITY;
    assert.throws(
      () => store.save(3, { weights: arrays(1), optimizer: inf, state: state(3) }, { keep: 3 }),
      /optimizer state a\.w holds NaN or infinite/,
    );
    assert.deepEqual(
      store.list().map((c) => c.step),
      [1],
    );
    assert.ok(store.latest()!.endsWith('step-00000001'));
  },
);

test("rotation removes only checkpoints of the run that saves: another run's are never touched", () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-runs-'));
  const store = new CheckpointStore(run);
  const of = (runId: string, step: number) => ({
    weights: arrays(step),
    optimizer: arrays(-step),
    state: { ...state(step), runId },
  });
  for (const step of [10, 20, 30]) store.save(step, of('aaaaaaaaaaaaaaaa', step), { keep: 1 });
  for (const step of [1, 2, 3]) store.save(step, of('bbbbbbbbbbbbbbbb', step), { keep: 1 });
  assert.deepEqual(
    store.list().map((c) => c.step),
    [3, 30],
  );
});

test('a checkpoint that says it holds voices but lacks their file is refused as damaged; one without loads', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-voices-'));
  const store = new CheckpointStore(run);
  const voices = [{ name: 'voice/ada', shape: [2], dtype: 'float32' as const, data: Float32Array.from([1, 2]) }];
  const withVoices = store.save(
    1,
    { weights: arrays(1), optimizer: arrays(-1), state: state(1), voices },
    { keep: 3, best: false },
  );
  assert.deepEqual(
    store.load(withVoices).voices?.map((v) => v.name),
    ['voice/ada'],
  );
  rmSync(join(withVoices, 'voices.safetensors'));
  assert.throws(
    () => store.load(withVoices),
    (e: Error & { code?: string }) => e.code === 'CHECKPOINT_TRUNCATED' && /has no voices\.safetensors/.test(e.message),
  );
  // Saved without voices (they could not be computed), from a state read back from a checkpoint that had them.
  const readBack = { ...state(2), voiceArrays: 1 } as CheckpointState;
  const without = store.save(
    2,
    { weights: arrays(2), optimizer: arrays(-2), state: readBack },
    { keep: 3, best: false },
  );
  assert.equal(store.load(without).voices, undefined);
});

test('a path that names no checkpoint says what it is: a run stopped before its first, a file inside one', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-what-'));
  writeFileSync(join(run, 'xtts-run.json'), '{}');
  assert.throws(
    () => resolveCheckpoint(run),
    (e: Error & { suggestions: string[] }) =>
      /is a run of xtts train that has no checkpoint yet/.test(e.message) &&
      e.suggestions[0].includes(`--output ${run} --resume`),
  );
  const dir = new CheckpointStore(run).save(
    1,
    { weights: arrays(1), optimizer: arrays(-1), state: state(1) },
    {
      keep: 2,
      best: false,
    },
  );
  assert.throws(
    () => resolveCheckpoint(join(dir, 'weights.safetensors')),
    (e: Error & { suggestions: string[] }) =>
      e.message.endsWith(`is a file of the checkpoint ${dir}`) &&
      e.suggestions[0] === `name the checkpoint folder: ${dir}`,
  );
});

test('a checkpoint with its arrays but no state.json is refused as cut short, not as a folder named by mistake', () => {
  const run = mkdtempSync(join(tmpdir(), 'xtts-ckpt-nostate-'));
  const store = new CheckpointStore(run);
  const dir = store.save(1, { weights: arrays(1), optimizer: arrays(-1), state: state(1) }, { keep: 3 });
  rmSync(join(dir, 'state.json'));
  assert.throws(
    () => store.load(dir),
    (e: XttsError) =>
      e.code === 'CHECKPOINT_TRUNCATED' &&
      e.message ===
        `${dir} has its weights and optimizer but no state.json (its step, config and tokenizer): the ` +
          'checkpoint was cut short or copied in part' &&
      /copy the checkpoint again whole/.test(e.suggestions[0]),
  );
  // A folder with nothing of a checkpoint is still not one.
  const empty = join(run, 'empty');
  mkdirSync(empty);
  assert.throws(() => store.load(empty), { code: 'CHECKPOINT_NOT_FOUND' });
  rmSync(run, { recursive: true });
});
