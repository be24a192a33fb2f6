// `xtts train` with `task: vocoder` and `xtts synthesize --vocoder` as processes, on a micro vocoder
// (32 channels, 2 blocks) and the shortest quickstart clips on wasm: the run writes what an acoustic
// run writes (checkpoints of its own kind, run.sqlite, metrics.jsonl, TensorBoard with its eval audio),
// resumes bit-exact, and an acoustic run speaks through it, its JSON saying which vocoder made the WAV;
// mixed-up checkpoints and vocoders of other mels are refused, naming what differs; a fine-tuning run
// starts from another vocoder's weights and trains on the acoustic run's teacher-forced mels.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { decodeWav } from '../../src/core/data/audio/wav.js';
import { decodeSafetensors } from '../../src/core/training/safetensors.js';
import { latestCheckpoint, tensorsDiffer } from '../helpers/checkpoints.js';
import { runCli as run, xttsBin } from '../helpers/cli.js';
import { microRun, microVocoderRun, trainingLosses } from '../helpers/short-clips.js';
import { capturedMatchesEager, withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { readEvents } from '../helpers/tfevents.js';

const runCli = (args: string[]) => run(args, { timeoutMs: 600_000 });

const { dir, config } = microVocoderRun(
  'xtts-vocoder-',
  '',
  `  max_steps: 8
  log_every: 1
  validate_every: 4
  checkpoint_every: 4
  eval_every: 8
  keep_checkpoints: 3
  schedule:
    warmup_steps: 2
`,
);

describe('xtts train (task: vocoder) and synthesize --vocoder', () => {
  const full = join(dir, 'full');
  /** The wasm run's losses by step, for the WebGPU run to match. */
  let wasmLosses: { step: number; loss: number }[] = [];
  /** The micro acoustic model's run folder (the synthesize test trains it). */
  let acousticRun = '';

  test('a vocoder run writes checkpoints of its kind, metrics, TensorBoard eval audio and eval WAVs', async () => {
    const r = await runCli(['train', '--config', config, '--output', full, '--backend', 'wasm', '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const res = r.json.result;
    wasmLosses = res.lossCurve;
    assert.equal(res.task, 'vocoder');
    assert.equal(res.steps, 8);
    assert.equal(res.stoppedBy, 'max_steps');
    assert.equal(res.lossCurve.length, 8);
    assert.ok(res.lossCurve.every((x: { loss: number }) => Number.isFinite(x.loss)));
    assert.deepEqual(
      res.validation.map((v: { step: number }) => v.step),
      [4, 8],
    );
    const state = JSON.parse(readFileSync(join(latestCheckpoint(full), 'state.json'), 'utf8'));
    assert.equal(state.kind, 'vocoder');
    assert.equal(state.step, 8);
    const weights = decodeSafetensors(readFileSync(join(latestCheckpoint(full), 'weights.safetensors')), 'weights');
    assert.equal(JSON.parse(weights.metadata.kind), 'vocoder');
    assert.ok(weights.arrays.some((a) => a.name === 'vocoder.head.w'));
    assert.equal(trainingLosses(full).size, 8);
    // A resume on other data than the run's (the config's dataset changed, no --dataset) is refused, naming its data.
    const other = join(dir, 'other-data');
    cpSync(join(dir, 'data'), other, { recursive: true });
    const moved = await runCli(
      ['train', '--config', config, '--output', full, '--backend', 'wasm', '--resume', '--json'].concat([
        '--set',
        `dataset.path=${other}`,
      ]),
    );
    assert.equal(moved.json.error?.code, 'RESUME_OTHER_DATA', moved.stderr);
    assert.match(moved.json.error.suggestions[0], new RegExp(`--dataset .*${dir}/data --output `));
    // Every step says what it dispatched: kernels and its matmuls' model FLOPs (the profiler reads them).
    const db = new Database(join(full, 'run.sqlite'), { readonly: true });
    const steps = db.prepare('SELECT kernels, flops FROM steps').all() as { kernels: number; flops: number }[];
    db.close();
    assert.equal(steps.length, 8);
    assert.ok(
      steps.every((x) => x.kernels > 100 && x.flops > 1e8),
      JSON.stringify(steps[0]),
    );
    const jsonl = readFileSync(join(full, 'metrics.jsonl'), 'utf8');
    for (const name of ['loss/mel', 'loss/spectral_convergence', 'loss/validation', 'perf/step_ms'])
      assert.ok(jsonl.includes(`"${name}"`), `${name} is not in metrics.jsonl`);
    const wavs = res.evalFiles.filter((f: string) => f.endsWith('.wav'));
    assert.equal(wavs.length, 2);
    for (const w of wavs) {
      const d = decodeWav(readFileSync(w), w);
      assert.equal(d.sampleRateHz, 22050);
      assert.ok(d.durationS > 0.3, `${w}: ${d.durationS} s`);
    }
    const events = readdirEvents(full);
    const tb = readEvents(events);
    assert.ok(
      Object.keys(tb.audio).some((tag) => tag.startsWith('eval/audio/')),
      Object.keys(tb.audio).join(),
    );
    assert.ok(tb.scalars['loss/train'].length === 8);
    assert.deepEqual([tb.hparams.start.hparams.task, tb.hparams.start.hparams['vocoder.channels']], ['vocoder', 32]);
    assert.deepEqual([tb.hparams.end.step, tb.hparams.end.status], [8, 1]);
  });

  test('a run stopped at step 4 and resumed ends with the weights and moments of the uninterrupted run', async () => {
    const split = join(dir, 'split');
    const first = await runCli([
      'train',
      '--config',
      config,
      '--output',
      split,
      '--backend',
      'wasm',
      '--max-steps',
      '4',
    ]);
    assert.equal(first.code, 0, first.stderr.slice(-2000));
    const again = await runCli(['train', '--config', config, '--output', split, '--backend', 'wasm', '--resume']);
    assert.equal(again.code, 0, again.stderr.slice(-2000));
    assert.match(again.stderr, /resumed from .*step-00000004 at step 4/);
    // Its closing hint is a command that runs as written (it lacked --out).
    assert.match(
      again.stdout,
      /use it: xtts synthesize --checkpoint ACOUSTIC_RUN --vocoder .* --text "\.\.\." --out \S+\.wav/,
    );
    assert.equal(tensorsDiffer(latestCheckpoint(full), latestCheckpoint(split), 'weights.safetensors'), null);
    assert.equal(tensorsDiffer(latestCheckpoint(full), latestCheckpoint(split), 'optimizer.safetensors'), null);
  });

  test(
    'grad_accumulation_steps 2: each optimizer step draws two micro-batches of segments; checkpoints the ' +
      "disk cannot hold are a warning in --json's envelope, and the run trains on",
    async () => {
      const acc = join(dir, 'accumulated');
      const r = await runCli(
        ['train', '--config', config, '--output', acc, '--backend', 'wasm', '--max-steps', '2'].concat([
          '--set',
          'training.grad_accumulation_steps=2',
          // A billion kept checkpoints of even this micro vocoder: hundreds of terabytes, past any disk.
          '--set',
          'training.keep_checkpoints=1000000000',
          '--json',
        ]),
      );
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.equal(r.json.result.steps, 2);
      assert.ok(
        r.json.warnings.some((w: string) =>
          /^each checkpoint of this model takes .*training\.keep_checkpoints 1000000000,/.test(w),
        ),
        JSON.stringify(r.json.warnings),
      );
      // Two steps of two micro-batches draw what four plain steps draw: the same sampler state.
      const state = (run: string) => JSON.parse(readFileSync(join(run, 'state.json'), 'utf8'));
      const plainStep4 = join(full, 'checkpoints', 'step-00000004');
      assert.equal(state(latestCheckpoint(acc)).samplerRng, state(plainStep4).samplerRng);
    },
  );

  test(
    "the data's warnings as an acoustic run gives them: where skipped rows are, clips recorded below the " +
      "model's rate or in 8-bit PCM, nothing drawn for validation",
    async () => {
      const noted = join(dir, 'noted-data');
      cpSync(join(dir, 'data'), noted, { recursive: true });
      const rows = readFileSync(join(noted, 'metadata.csv'), 'utf8').trim().split('\n');
      const first = rows[0].split('|')[0];
      const source = join(noted, 'wavs', `${first}.wav`);
      execFileSync('sox', [source, '-r', '8000', join(noted, 'wavs', 'phone.wav')]);
      execFileSync('sox', [source, '-b', '8', '-e', 'unsigned-integer', join(noted, 'wavs', 'old.wav')]);
      appendFileSync(join(noted, 'metadata.csv'), 'phone|A call.|A call.\nold|A tape.|A tape.\ngone|Lost.|Lost.\n');
      const r = await runCli(
        ['train', '--config', config, '--dataset', noted, '--output', join(dir, 'noted'), '--backend', 'wasm'].concat([
          '--max-steps',
          '1',
          '--set',
          'dataset.validation_fraction=0',
          '--json',
        ]),
      );
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      const warnings: string[] = r.json.warnings;
      const has = (re: RegExp) =>
        assert.ok(
          warnings.some((w) => re.test(w)),
          `${re} in ${JSON.stringify(warnings)}`,
        );
      has(
        new RegExp(`^1 row skipped: \\S*metadata\\.csv:${rows.length + 3} \\(gone\\): \\S*gone\\.wav does not exist`),
      );
      has(/^1 clip was recorded below the model's 22050 Hz \(the lowest at 8000 Hz: .*phone\.wav\).* Leave it out/);
      has(/^1 clip is 8-bit PCM \(e\.g\. .*old\.wav\)/);
      has(
        new RegExp(
          `^no validation clips: dataset\\.validation_fraction 0 drew none of the ${rows.length + 2} usable rows; ` +
            'the validation loss and the best checkpoint have nothing to measure',
        ),
      );
    },
  );

  const webgpuTitle =
    "on WebGPU (software device): wasm's losses, and from step 4 replayed steps (step capture) that train " +
    'exactly as eager ones';
  test(webgpuTitle, { skip: withoutLlvmpipe }, async () => {
    const { result, replayed } = await capturedMatchesEager(config, dir, 6);
    // The generator's programs (the depthwise taps in tapSum) compute what wasm's kernels do.
    for (const [i, x] of result.lossCurve.entries()) {
      const want = wasmLosses[i].loss;
      assert.ok(Math.abs(x.loss - want) < 2e-3 * want, `step ${x.step}: webgpu ${x.loss}, wasm ${want}`);
    }
    // Steps 1-3 eager (one run, two recorded), then replays: the same losses and weights, bit for bit.
    assert.deepEqual(replayed, [0, 0, 0, 1, 1, 1]);
  });

  test('xtts vocode: recordings through the log-mel and back, by the vocoder and by Griffin-Lim', async () => {
    const wavs = join(dir, 'data', 'wavs');
    const neural = join(dir, 'copy', 'neural');
    const real = join(dir, 'copy', 'real');
    const v = await runCli(
      [
        'vocode',
        '--vocoder',
        full,
        '--in',
        wavs,
        '--out-dir',
        neural,
        '--reference-dir',
        real,
        '--backend',
        'wasm',
      ].concat(['--batch-size', '4', '--json']),
    );
    assert.equal(v.code, 0, v.stderr.slice(-2000));
    const res = v.json.result;
    assert.equal(res.vocoder.kind, 'neural');
    assert.equal(res.files.length, 6);
    assert.ok(res.realTimeFactor > 0 && res.audioS > 1, JSON.stringify(res).slice(0, 400));
    for (const f of res.files) {
      const [a, b] = [f.out, f.reference].map((p: string) => decodeWav(readFileSync(p), p));
      assert.equal(a.samples.length, b.samples.length, f.out);
      assert.ok(a.samples.every(Number.isFinite));
    }
    const gl = await runCli(['vocode', '--in', wavs, '--out-dir', join(dir, 'copy', 'gl'), '--json']);
    assert.equal(gl.code, 0, gl.stderr.slice(-2000));
    assert.deepEqual(gl.json.result.vocoder, { kind: 'griffin-lim', iterations: 32 });
    // What exists is not replaced without --overwrite, and nothing is written then.
    const again = await runCli(['vocode', '--vocoder', full, '--in', wavs, '--out-dir', neural, '--backend', 'wasm']);
    assert.equal(again.code, 2, again.stderr);
    assert.match(again.stderr, /exists/);
    // An input that cannot be vocoded is skipped with a warning naming it; the others are: exit 1 (work done in part).
    const mixed = join(dir, 'mixed');
    mkdirSync(mixed);
    copyFileSync(join(wavs, readdirSync(wavs).find((f) => f.endsWith('.wav'))!), join(mixed, 'good.wav'));
    writeFileSync(join(mixed, 'junk.wav'), 'not audio\n');
    const partial = await runCli(['vocode', '--in', mixed, '--out-dir', join(dir, 'copy', 'partial'), '--json']);
    assert.equal(partial.code, 1, partial.stderr);
    assert.equal(partial.json.status, 'findings');
    assert.ok(
      partial.json.warnings.some((w: string) => /junk\.wav: not vocoded/.test(w)),
      partial.json.warnings,
    );
    assert.ok(existsSync(join(dir, 'copy', 'partial', 'good.wav')));
    // Two inputs to one WAV name both inputs; a folder inside --in is named as not read.
    copyFileSync(join(mixed, 'good.wav'), join(mixed, 'good.flac'));
    mkdirSync(join(mixed, 'more'));
    const collide = await runCli(['vocode', '--in', mixed, '--out-dir', join(dir, 'copy', 'collide'), '--json']);
    assert.equal(collide.json.error.code, 'OUTPUTS_COLLIDE');
    assert.match(collide.json.error.message, /good\.flac's WAV .* and .*good\.wav's WAV .* are one file/);
    rmSync(join(mixed, 'good.flac'));
    const nested = await runCli(['vocode', '--in', mixed, '--out-dir', join(dir, 'copy', 'nested'), '--json']);
    assert.ok(
      nested.json.warnings.some((w: string) =>
        /mixed\/more: not read \(vocode reads the files directly in --in/.test(w),
      ),
      nested.json.warnings,
    );
    const missing = await runCli(['vocode', '--in', join(dir, 'nothing-here'), '--out-dir', neural]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /VOCODE_INPUT.*does not exist/);
  });

  test('an acoustic run speaks through the vocoder; mixed-up checkpoints and other mels are refused', async () => {
    const acoustic = microRun('xtts-vocoder-acoustic-');
    const ac = join(acoustic.dir, 'run');
    acousticRun = ac;
    const t = await runCli([
      'train',
      '--config',
      acoustic.config,
      '--output',
      ac,
      '--backend',
      'wasm',
      '--max-steps',
      '2',
    ]);
    assert.equal(t.code, 0, t.stderr.slice(-2000));
    const wav = join(dir, 'hello.wav');
    const s = await runCli(
      [
        'synthesize',
        '--checkpoint',
        ac,
        '--vocoder',
        full,
        '--text',
        'Hello.',
        '--out',
        wav,
        '--backend',
        'wasm',
      ].concat(['--max-seconds', '1', '--json']),
    );
    assert.equal(s.code, 0, s.stderr.slice(-2000));
    const res = s.json.result;
    assert.equal(res.vocoder.kind, 'neural');
    assert.equal(res.vocoder.step, 8);
    assert.equal(res.utterances[0].vocoder, 'neural');
    const d = decodeWav(readFileSync(wav), wav);
    assert.equal(d.samples.length, res.utterances[0].frames * 256);

    const swapped = await runCli(['synthesize', '--checkpoint', full, '--text', 'Hi.', '--out', join(dir, 'x.wav')]);
    assert.equal(swapped.code, 2);
    assert.match(swapped.stderr, /CHECKPOINT_KIND.*is a checkpoint of a vocoder, not of an acoustic model/);
    assert.ok(!existsSync(join(dir, 'x.wav')));

    const other = join(dir, 'vocoder-64.yaml');
    writeFileSync(other, readFileSync(config, 'utf8'));
    appendFileSync(other, 'audio:\n  n_mels: 64\n');
    const o = join(dir, 'other-mels');
    const t64 = await runCli(['train', '--config', other, '--output', o, '--backend', 'wasm', '--max-steps', '1']);
    assert.equal(t64.code, 0, t64.stderr.slice(-2000));
    const bad = await runCli([
      'synthesize',
      '--checkpoint',
      ac,
      '--vocoder',
      o,
      '--text',
      'Hi.',
      '--out',
      wav.replace(/\.wav$/, '-2.wav'),
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /VOCODER_AUDIO_MISMATCH.*audio\.n_mels 64 \(vocoder\) vs 80/);

    // vocoder.checkpoint is checked before the first step (it was read at the first eval, which stopped the run
    // there): nothing, or a vocoder of other mels, is refused naming the key, and no run folder is left.
    const trainWith = (vocoder: string, out: string, more: string[] = []) =>
      runCli(
        ['train', '--config', acoustic.config, '--output', out, '--backend', 'wasm', '--max-steps', '4', '--json']
          .concat(['--set', `vocoder.checkpoint=${vocoder}`])
          .concat(more),
      );
    for (const [vocoder, code] of [
      [join(dir, 'nowhere'), 'CHECKPOINT_NOT_FOUND'],
      [o, 'VOCODER_AUDIO_MISMATCH'],
    ]) {
      const refused = await trainWith(vocoder, join(acoustic.dir, 'refused'));
      assert.equal(refused.code, 2, refused.stderr.slice(-2000));
      assert.equal(refused.json.error.code, code);
      assert.match(refused.json.error.message, /^vocoder\.checkpoint: /);
      assert.ok(!existsSync(join(acoustic.dir, 'refused')), 'a refused run leaves no folder');
    }
  });

  test('a vocoder gone from under a run (after its check) costs the eval its neural WAVs, not the run', async () => {
    assert.ok(acousticRun, 'the test before trains the acoustic model');
    const acoustic = microRun('xtts-vocoder-gone-');
    const copy = join(dir, 'full-copy');
    cpSync(full, copy, { recursive: true });
    const out = join(acoustic.dir, 'run');
    const args = ['train', '--config', acoustic.config, '--output', out, '--backend', 'wasm', '--max-steps', '4'];
    // Named relative to the folder the run starts in (dir): the run records it absolute.
    const sets = ['vocoder.checkpoint=full-copy', 'training.eval_every=2', 'training.log_every=1'];
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [xttsBin, ...args, ...sets.flatMap((x) => ['--set', x])], {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: dir,
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      // After the first step (the check passed before it), before the first eval (step 2).
      if (/^step\s+1\//m.test(stderr) && existsSync(copy)) rmSync(copy, { recursive: true });
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    assert.equal(code, 0, stderr.slice(-2000));
    assert.match(stderr, /warning: vocoder\.checkpoint: .*full-copy.*; this eval's WAVs are Griffin-Lim's/);
    assert.ok(latestCheckpoint(out)?.endsWith('step-00000004'), stderr.slice(-1500));
    const state = JSON.parse(readFileSync(join(latestCheckpoint(out)!, 'state.json'), 'utf8'));
    assert.equal(state.config.vocoder.checkpoint, copy);
    // Synthesis without --vocoder names the model's record of the vocoder that is gone and offers --vocoder;
    // --vocoder griffin-lim speaks with Griffin-Lim whatever the model names.
    const speak = (more: string[]) =>
      runCli(
        ['synthesize', '--checkpoint', out, '--text', 'The boy.', '--backend', 'wasm', '--max-seconds', '0.3']
          .concat(['--out', join(acoustic.dir, 'gone.wav'), '--json'])
          .concat(more),
      );
    const gone = await speak([]);
    assert.equal(gone.code, 2, gone.stderr);
    assert.equal(gone.json.error.code, 'CHECKPOINT_NOT_FOUND');
    assert.ok(
      gone.json.error.message.startsWith(
        `the model's vocoder, vocoder.checkpoint "${copy}" in ${latestCheckpoint(out)}`,
      ),
      gone.json.error.message,
    );
    assert.match(gone.json.error.suggestions[0], /--vocoder griffin-lim/);
    const griffin = await speak(['--vocoder', 'griffin-lim']);
    assert.equal(griffin.code, 0, griffin.stderr);
    assert.equal(griffin.json.result.vocoder.kind, 'griffin-lim');
  });
  test("fine-tuning: another vocoder's weights to start from, an acoustic model's mels to learn", async () => {
    assert.ok(acousticRun, 'the test before trained the acoustic run');
    const ft = join(dir, 'finetuned');
    const args = (out: string, ...sets: string[]) =>
      ['train', '--config', config, '--output', out, '--backend', 'wasm', '--json'].concat(
        sets.flatMap((s) => ['--set', s]),
      );
    // A learning rate of 1e-12: one step leaves the weights init_from gave (to float32 precision).
    const r = await runCli(
      args(
        ft,
        `vocoder.init_from=${full}`,
        `vocoder.finetune_acoustic=${acousticRun}`,
        'training.max_steps=1',
        'training.learning_rate=1e-12',
        'training.schedule.name=constant',
      ),
    );
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const res = r.json.result;
    assert.deepEqual(res.initFrom, { checkpoint: latestCheckpoint(full), step: 8 });
    assert.equal(res.finetune.checkpoint, latestCheckpoint(acousticRun));
    assert.equal(res.finetune.step, 2);
    assert.equal(res.finetune.predicted + res.finetune.kept, res.trainClips + res.validationClips);
    assert.ok(res.finetune.predicted > 0, JSON.stringify(res.finetune));
    // A model 2 steps old predicts nothing like the recording.
    assert.ok(res.finetune.meanAbsError > 0.1 && Number.isFinite(res.finetune.meanAbsError));
    const read = (d: string) => decodeSafetensors(readFileSync(join(d, 'weights.safetensors')), d).arrays;
    const before = new Map(read(latestCheckpoint(full)).map((a) => [a.name, a.data as Float32Array]));
    let maxDiff = 0;
    for (const a of read(latestCheckpoint(ft)))
      for (const [i, v] of (a.data as Float32Array).entries())
        maxDiff = Math.max(maxDiff, Math.abs(v - before.get(a.name)![i]));
    assert.ok(maxDiff < 1e-5, `weights moved ${maxDiff} from init_from's`);
    const db = new Database(join(ft, 'run.sqlite'), { readonly: true });
    const meta = (k: string) => JSON.parse((db.prepare('SELECT v FROM meta WHERE k = ?').get(k) as { v: string }).v);
    assert.equal(meta('finetune').predicted, res.finetune.predicted);
    assert.equal(meta('initFrom').step, 8);
    db.close();

    // A clip whose text the acoustic model has no token for keeps its recorded mel, named with its row.
    const odd = join(dir, 'odd-text');
    cpSync(join(dir, 'data'), odd, { recursive: true });
    const rows = readFileSync(join(odd, 'metadata.csv'), 'utf8').split('\n');
    const id = rows[1].split('|')[0];
    rows[1] = `${id}|Two fish swam ☃ in the tank.|Two fish swam ☃ in the tank.`;
    writeFileSync(join(odd, 'metadata.csv'), rows.join('\n'));
    const o = await runCli(
      args(join(dir, 'finetuned-odd'), `vocoder.finetune_acoustic=${acousticRun}`, 'training.max_steps=1').concat([
        '--dataset',
        odd,
      ]),
    );
    assert.equal(o.code, 0, o.stderr.slice(-2000));
    const f = o.json.result.finetune;
    assert.equal(f.kept, 1);
    assert.equal(f.predicted, res.finetune.predicted - 1);
    assert.match(f.keptReasons[0].where, new RegExp(`metadata\\.csv:2 \\(${id}\\)$`));
    assert.match(f.keptReasons[0].reason, /no token for: "☃"/);

    // None readable: refused, naming the first clip and why.
    const ids = rows.filter((l) => l.includes('|')).map((l) => l.split('|')[0]);
    writeFileSync(join(odd, 'metadata.csv'), ids.map((i) => `${i}|☃|☃`).join('\n'));
    const none = await runCli(
      args(join(dir, 'finetuned-none'), `vocoder.finetune_acoustic=${acousticRun}`).concat(['--dataset', odd]),
    );
    assert.equal(none.code, 2);
    assert.equal(none.json.error.code, 'VOCODER_FINETUNE_NOTHING');
    assert.match(none.json.error.message, /can read none of the 6 clips' texts, .*metadata\.csv:\d+ \(/);

    // Refused before any step, naming what differs; the folder then trains as asked.
    const bad = join(dir, 'finetune-refused');
    const plain = (...sets: string[]) => args(bad, ...sets).filter((a) => a !== '--json');
    const wide = await runCli(plain(`vocoder.init_from=${full}`, 'vocoder.channels=48'));
    assert.equal(wide.code, 2);
    assert.match(wide.stderr, /VOCODER_INIT_MISMATCH.*vocoder\.channels 32 \(init_from\) vs 48/);
    const mels = await runCli(plain(`vocoder.init_from=${join(dir, 'other-mels')}`));
    assert.equal(mels.code, 2);
    assert.match(mels.stderr, /VOCODER_INIT_MISMATCH.*audio\.n_mels 64 \(init_from\) vs 80/);
    const kind = await runCli(plain(`vocoder.finetune_acoustic=${full}`));
    assert.equal(kind.code, 2);
    assert.match(kind.stderr, /CHECKPOINT_KIND.*is a checkpoint of a vocoder, not of an acoustic model/);
    assert.match(kind.stderr, /vocoder\.finetune_acoustic takes an acoustic run/);
    const swapped = await runCli(plain(`vocoder.init_from=${acousticRun}`));
    assert.equal(swapped.code, 2);
    assert.match(swapped.stderr, /CHECKPOINT_KIND/);
    // The advice names the key that named it (it said to pass --vocoder, which train has not).
    assert.match(swapped.stderr, /vocoder\.init_from takes a vocoder run \(task: vocoder\)/);
    assert.doesNotMatch(swapped.stderr, /--vocoder/);
    const missing = await runCli(plain(`vocoder.finetune_acoustic=${join(dir, 'nowhere')}`));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /CHECKPOINT_NOT_FOUND.*vocoder\.finetune_acoustic: .*nowhere does not exist/);
    const ok = await runCli(args(bad, 'training.max_steps=1'));
    assert.equal(ok.code, 0, ok.stderr.slice(-2000));
  });
  test("xtts export: PyTorch names and layouts, each tensor a documented transform of the checkpoint's", async () => {
    const read = (file: string) => {
      const f = decodeSafetensors(readFileSync(file), file);
      return { metadata: f.metadata, arrays: new Map(f.arrays.map((a) => [a.name, a])) };
    };
    const at = (a: { shape: number[]; data: ArrayLike<number> }, ...index: number[]) =>
      a.data[index.reduce((o, i, k) => o * a.shape[k] + i, 0)];
    for (const [run, kind] of [
      [acousticRun, 'acoustic'],
      [full, 'vocoder'],
    ] as const) {
      const out = join(dir, `${kind}.safetensors`);
      const r = await runCli(['export', '--checkpoint', run, '--out', out, '--json']);
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.equal(r.json.result.kind, kind);
      const src = read(join(latestCheckpoint(run), 'weights.safetensors')).arrays;
      const exp = read(out);
      assert.equal(exp.metadata.naming, 'pytorch');
      assert.equal(exp.metadata.step, read(join(latestCheckpoint(run), 'weights.safetensors')).metadata.step);
      const count = (m: Map<string, { data: ArrayLike<number> }>) =>
        [...m.values()].reduce((a, x) => a + x.data.length, 0);
      assert.equal(count(exp.arrays), count(src));
      assert.ok(
        [...exp.arrays.keys()].every((n) => !/\.(w|b|g)$/.test(n)),
        [...exp.arrays.keys()].join(),
      );
      if (kind === 'acoustic') {
        const qkv = src.get('text.blocks.0.attn.qkv.w')!;
        const d = qkv.shape[0];
        const k = exp.arrays.get('text.blocks.0.attn.k_proj.weight')!;
        assert.deepEqual(k.shape, [d, d]);
        assert.equal(at(k, 3, 5), at(qkv, 5, d + 3)); // k_proj[out 3, in 5] = qkv.w[in 5, column d + 3]
        const fc = src.get('text.blocks.0.mlp.fc.w')!;
        assert.equal(at(exp.arrays.get('text.blocks.0.mlp.fc.weight')!, 7, 2), at(fc, 2, 7));
        const conv = src.get('dur.conv1.w')!; // [kernel, in, out] -> [out, in, kernel]
        assert.equal(at(exp.arrays.get('dur.conv1.weight')!, 4, 6, 2), at(conv, 2, 6, 4));
        const cross = src.get('dec.cross_kv.w')!; // layer 0: keys at columns [0, d), values at [d, 2d)
        assert.equal(at(exp.arrays.get('dec.blocks.0.cross.v_proj.weight')!, 1, 9), at(cross, 9, d + 1));
        assert.deepEqual(exp.arrays.get('text.blocks.0.ln1.weight')!.data, src.get('text.blocks.0.ln1.g')!.data);
      } else {
        const dw = src.get('vocoder.block0.dw.w')!; // [kernel, C] -> [C, 1, kernel]
        assert.equal(at(exp.arrays.get('vocoder.block0.dw.weight')!, 5, 0, 3), at(dw, 3, 5));
        const head = src.get('vocoder.head.w')!;
        assert.equal(at(exp.arrays.get('vocoder.head.weight')!, 11, 4), at(head, 4, 11));
      }
    }
    const again = await runCli(['export', '--checkpoint', full, '--out', join(dir, 'vocoder.safetensors')]);
    assert.equal(again.code, 2, again.stderr);
  });
});

function readdirEvents(runDir: string): string {
  const name = readdirSync(runDir).find((f) => f.startsWith('events.out.tfevents.'));
  assert.ok(name, `no event file in ${runDir}`);
  return join(runDir, name);
}
