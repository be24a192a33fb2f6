// `xtts train` and `xtts synthesize` as processes on real espeak-ng speech: the loss falls clearly,
// a run killed after a checkpoint and resumed continues the same loss curve, Ctrl-C saves and exits
// 130, and synthesis writes a valid WAV.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { decodeWav } from '../../src/core/data/audio/wav.js';
import { CheckpointStore, type CheckpointState } from '../../src/core/training/checkpoint.js';
import { decodeSafetensors, encodeSafetensors } from '../../src/core/training/safetensors.js';
import { assertNoStackTrace, type CliOptions, describeRun, repoRoot, runCli as run } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun, trainingLosses } from '../helpers/short-clips.js';
import { readEvents } from '../helpers/tfevents.js';
import { joinedRegExp } from '../helpers/regexp.js';

// Training runs take minutes on a 2-core CPU: longer than the helper's default timeout.
const runCli = (args: string[], options: CliOptions = {}) => run(args, { timeoutMs: 1_200_000, ...options });

// The 12 shortest quickstart clips keep each step cheap on a 2-core CPU.
const { dir, config } = shortQuickstartRun(
  12,
  'xtts-train-',
  `  max_steps: 60
  learning_rate: 3e-3
  log_every: 1
  validate_every: 30
  checkpoint_every: 15
  eval_every: 60
  eval_sentences:
    - text: The boy was there.
`,
);
// Tests of the trainer's mechanics (the lock, accumulation, divergence, a batch larger than the data, the
// progress bar) train the micro model on the same clips: its steps take tens of ms where the tiny model's take
// seconds, and none of them needs a model that learns.
const micro = join(dir, 'micro.yaml');
writeFileSync(micro, `extends: ./config.yaml\n${MICRO_MODEL}`);
// No validation, checkpoint or evaluation within a short run's steps (their own tests look at those).
const QUIET = [
  '--set',
  'training.validate_every=1000',
  '--set',
  'training.checkpoint_every=1000',
  '--set',
  'training.eval_every=1000',
];

describe('xtts train', () => {
  test(
    'the tiny model learns: the loss falls clearly over 60 steps; checkpoints, eval ' + 'audio and metrics are written',
    async () => {
      const out = join(dir, 'run-learn');
      const r = await runCli(['train', '--config', config, '--output', out, '--json']);
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      const res = r.json.result;
      assert.equal(res.steps, 60);
      assert.equal(res.stoppedBy, 'max_steps');
      const first = res.lossCurve.slice(0, 5).reduce((a: number, x: { loss: number }) => a + x.loss, 0) / 5;
      const last = res.lossCurve.slice(-5).reduce((a: number, x: { loss: number }) => a + x.loss, 0) / 5;
      // Measured on a 2-core CPU: the last 5 steps' mean is 0.38 of the first 5's at step 60 (0.29 at 120).
      assert.ok(last < 0.6 * first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
      assert.ok(res.validation.length >= 1 && Number.isFinite(res.validation[0].loss));
      assert.ok(existsSync(join(out, 'checkpoints', 'latest')));
      const wavs = res.evalFiles.filter((f: string) => f.endsWith('.wav'));
      assert.ok(
        wavs.some((f: string) => f.includes('sentence-1')),
        JSON.stringify(res.evalFiles),
      );
      for (const w of wavs) {
        const decoded = decodeWav(readFileSync(w), w);
        assert.equal(decoded.sampleRateHz, 22050);
        assert.ok(decoded.durationS > 0.1);
      }
      assert.ok(res.evalFiles.some((f: string) => f.endsWith('.png')));
      assert.equal(trainingLosses(out).size, 60);
      assert.ok(readFileSync(join(out, 'metrics.jsonl'), 'utf8').includes('"loss/val"'));
      assert.ok(res.timing.kernelsPerStep > 100);
      // The trainer's thread's garbage collection over the run: 60 steps make young-generation ones.
      assert.ok(
        res.hostGc.spanMs > 0 && res.hostGc.minor.count > 0 && res.hostGc.minor.ms > 0,
        JSON.stringify(res.hostGc),
      );
      assert.ok(
        res.hostGc.share > 0 && res.hostGc.share < 1 && res.hostGc.full.longestMs <= res.hostGc.full.ms,
        JSON.stringify(res.hostGc),
      );
      // TensorBoard: one event file with every curve, the eval pictures and audio.
      const events = readdirSync(out).filter((f) => f.startsWith('events.out.tfevents.'));
      assert.equal(events.length, 1, readdirSync(out).join(' '));
      const tb = readEvents(join(out, events[0]));
      for (const tag of [
        'loss/train',
        'loss/mel_post',
        'loss/duration',
        'learning_rate',
        'grad_norm',
        'perf/samples_per_s',
        'perf/data_wait_share',
        'loss/val',
        'align/diagonal',
      ])
        assert.ok(tb.scalars[tag]?.length > 0, `scalar ${tag}: ${Object.keys(tb.scalars)}`);
      assert.equal(tb.scalars['loss/train'].length, 60);
      // The HPARAMS tab: the config's settings at the start, how the run ended at its last step.
      assert.equal(tb.hparams.start.hparams['training.max_steps'], 60);
      assert.equal(typeof tb.hparams.start.hparams['text.cleaners'], 'string');
      assert.deepEqual([tb.hparams.end.step, tb.hparams.end.status], [60, 1]);
      // Each kind under its own tag (TensorBoard shows one kind per tag).
      assert.ok(
        tb.images['eval/mel/sentence-1']?.length && tb.images['eval/alignment/sentence-1']?.length,
        Object.keys(tb.images).join(' '),
      );
      assert.equal(tb.audio['eval/audio/sentence-1'][0][1], 22050);
      assert.deepEqual(
        Object.keys(tb.audio).filter((tag) => tag in tb.images),
        [],
      );
      // The resolved config in the Text tab, as YAML shown as code.
      assert.equal(tb.text.config.length, 1);
      assert.match(tb.text.config[0][1], /^ {4}model:$/m);
      assert.match(tb.text.config[0][1], /^ {6}d_model: 128$/m);
      // Speed in metrics.jsonl as in TensorBoard.
      const jsonl = readFileSync(join(out, 'metrics.jsonl'), 'utf8');
      for (const name of ['perf/samples_per_s', 'perf/step_ms', 'perf/data_wait_share'])
        assert.ok(jsonl.includes(`"${name}"`), `${name} is not in metrics.jsonl`);

      const wav = join(dir, 'synth.wav');
      const s = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'The boy was there.',
        '--out',
        wav,
        '--json',
      ]);
      assert.equal(s.code, 0, s.stderr);
      const d = decodeWav(readFileSync(wav), wav);
      assert.ok(d.durationS > 0.1 && d.samples.some((x) => Math.abs(x) > 0.01));
      // A checkpoint kept without its optimizer's moments (weights and state only) speaks the same.
      const latest = join(out, 'checkpoints', readFileSync(join(out, 'checkpoints', 'latest'), 'utf8').trim());
      const weightsOnly = join(dir, 'weights-only');
      cpSync(latest, weightsOnly, { recursive: true });
      rmSync(join(weightsOnly, 'optimizer.safetensors'));
      const slim = await runCli([
        'synthesize',
        '--checkpoint',
        weightsOnly,
        '--text',
        'The boy was there.',
        '--out',
        join(dir, 'slim.wav'),
        '--json',
      ]);
      assert.equal(slim.code, 0, slim.stderr);
      assert.deepEqual(readFileSync(join(dir, 'slim.wav')), readFileSync(wav));
      const bad = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'snowman ☃',
        '--out',
        wav,
        '--overwrite',
        '--json',
      ]);
      assert.equal(bad.code, 2);
      assert.equal(bad.json.error.code, 'SYNTH_UNSPEAKABLE');
      assert.match(bad.json.error.message, /"☃" at character 9/);

      // Nothing to say is not 8 s of a WAV (a blank --text is refused by name, below).
      const blank = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        '?! ...',
        '--out',
        join(dir, 'blank.wav'),
        '--json',
      ]);
      assert.equal(blank.code, 2, blank.stderr);
      assert.equal(blank.json.error.code, 'SYNTH_UNSPEAKABLE');
      assert.match(blank.json.error.message, /nothing to speak/);
      assert.equal(existsSync(join(dir, 'blank.wav')), false);
      assert.match(blank.json.error.suggestions[0], /give it words to say/);

      // Inputs that are not what they should be say so in words, naming the flag.
      const notVoice = join(dir, 'texts-as-voice.txt');
      writeFileSync(notVoice, 'hi\n');
      for (const [flag, value, message] of [
        ['--reference', join(dir, 'no-such.wav'), /cannot read --reference .*no-such\.wav: it does not exist/],
        ['--reference', dir, /cannot read --reference .*: it is a folder/],
        ['--voice', notVoice, /--voice .*texts-as-voice\.txt: is not an xtts voice file/],
      ] as const) {
        const r = await runCli([
          'synthesize',
          '--checkpoint',
          out,
          '--text',
          'The boy.',
          flag,
          value,
          '--out',
          join(dir, 'x.wav'),
          '--json',
        ]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.json.error.message, message);
        assert.ok(r.json.error.suggestions.length > 0, flag);
      }
      // xtts writes WAV: an --out named for another format would hold WAV bytes under a name that says otherwise.
      const mp3 = await runCli(['synthesize', '--checkpoint', out, '--text', 'The boy.', '--out', join(dir, 'x.mp3')]);
      assert.equal(mp3.code, 2, mp3.stderr);
      assert.match(mp3.stderr, /x\.mp3: xtts writes WAV; name the file \.wav/);
      assert.equal(existsSync(join(dir, 'x.mp3')), false);
      // The same for export: its file is safetensors, whatever the name asks (the sweep wrote one as x.wav).
      const asWav = await runCli(['export', '--checkpoint', out, '--out', join(dir, 'weights.wav'), '--json']);
      assert.equal(asWav.code, 2, asWav.stderr);
      assert.match(asWav.json.error.message, /the exported checkpoint is safetensors; name the file \.safetensors/);
      assert.equal(existsSync(join(dir, 'weights.wav')), false);
      // A language code in another case is the model's (EN is en), and --max-seconds takes fractions.
      const upper = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'The boy.',
        '--language',
        'EN',
        '--max-seconds',
        '0.25',
        '--out',
        join(dir, 'upper.wav'),
        '--json',
      ]);
      assert.equal(upper.code, 0, upper.stderr);
      // A regional tag of a trained language (the docs' en-GB) speaks that language, its text read as the region
      // writes it: "12/05/2024" is the twelfth of May, where en reads December fifth.
      const british = await runCli(
        ['synthesize', '--checkpoint', out, '--text', 'On 12/05/2024.', '--language', 'en-GB'].concat([
          '--max-seconds',
          '0.25',
          '--out',
          join(dir, 'british.wav'),
          '--json',
        ]),
      );
      assert.equal(british.code, 0, british.stderr);
      assert.equal(british.json.result.language, 'en');
      assert.match(british.json.result.utterances[0].cleanedText, /twelfth of may/i);
      const austrian = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'Hi.',
        '--language',
        'de-AT',
        '--json',
        '--out',
        join(dir, 'austrian.wav'),
      ]);
      assert.equal(austrian.code, 2, austrian.stderr);
      assert.match(austrian.json.error.message, /--language "de-AT" is not one the model was trained on: en/);
      // A text longer than the model reads at once (256 tokens) is spoken in pieces of whole sentences, one WAV.
      const paragraph = Array.from({ length: 12 }, (_, i) => `The boy was there ${i + 1} times, then went home.`);
      const long = await runCli(
        ['synthesize', '--checkpoint', out, '--text', paragraph.join(' '), '--out', join(dir, 'long.wav')].concat([
          '--json',
        ]),
      );
      assert.equal(long.code, 0, long.stdout.slice(0, 2000));
      const longUtterance = long.json.result.utterances[0];
      assert.ok(longUtterance.pieces >= 2, JSON.stringify(longUtterance));
      assert.match(
        longUtterance.cleanedText,
        /^the boy was there one times, then went home\..*twelve times, then went home\.$/,
      );
      const longWav = decodeWav(readFileSync(join(dir, 'long.wav')), 'long.wav');
      assert.ok(Math.abs(longWav.durationS - longUtterance.durationS) < 0.01, `${longWav.durationS}`);
      // Each symbol's place in the WAV, in order through the pieces (a piece's symbols follow the gap after the one
      // before), and within it.
      const symbols: { symbol: string; startS: number; durationS: number }[] = longUtterance.symbols;
      let end = 0;
      for (const t of symbols) {
        assert.ok(t.startS >= end - 0.001 && t.durationS > 0, JSON.stringify(t));
        end = t.startS + t.durationS;
      }
      assert.ok(end <= longUtterance.durationS + 0.001, `${end} s`);
      if (longUtterance.stopReason === 'end_of_text')
        assert.equal(
          symbols
            .map((t) => t.symbol)
            .join('')
            .replace(/ /g, ''),
          longUtterance.cleanedText.replace(/ /g, ''),
        );
      // An empty --text (an unset shell variable) is said to be empty, before the model is loaded.
      for (const [text, said] of [
        ['', 'empty'],
        ['  ', 'blank'],
      ]) {
        const none = await runCli(['synthesize', '--checkpoint', out, '--text', text, '--out', join(dir, 'e.wav')]);
        assert.equal(none.code, 2, none.stderr);
        assert.match(none.stderr, new RegExp(`--text is ${said}: give the words to say`));
      }
      const notSeconds = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'Hi.',
        '--max-seconds',
        '0',
        '--json',
      ]);
      assert.equal(notSeconds.code, 2);
      assert.match(notSeconds.json.error.message, /--max-seconds must be a positive number of seconds, got "0"/);
      // Milliseconds meant as seconds: refused before any work, not a WAV of one frame.
      const tooShort = await runCli(
        ['synthesize', '--checkpoint', out, '--text', 'Hi.', '--max-seconds', '0.01'].concat([
          '--out',
          join(dir, 'short.wav'),
          '--json',
        ]),
      );
      assert.equal(tooShort.code, 2, tooShort.stderr);
      assert.match(tooShort.json.error.message, /--max-seconds 0\.01 allows 10 ms a text, shorter than any word/);
      assert.equal(existsSync(join(dir, 'short.wav')), false);
      // A named pipe as the WAV (a player reading it), --overwrite or not: refused before any work, the pipe left as
      // it was (the write's rename into place replaced it with a file).
      const pipe = join(dir, 'player.wav');
      execFileSync('mkfifo', [pipe]);
      const toPipe = await runCli(
        ['synthesize', '--checkpoint', out, '--text', 'Hi.', '--out', pipe, '--overwrite'].concat(['--json']),
      );
      assert.equal(toPipe.code, 2, toPipe.stderr);
      assert.match(
        toPipe.json.error.message,
        /cannot write the WAV to .*player\.wav: it is a named pipe \(FIFO\), not a/,
      );
      assert.ok(statSync(pipe).isFIFO());
      rmSync(pipe);
      assert.ok(upper.json.result.utterances[0].frames <= Math.ceil((0.25 * 22050) / 256) + 1);
      const toFolder = await runCli(['export', '--checkpoint', out, '--out', dir, '--overwrite', '--json']);
      assert.equal(toFolder.json.error?.code, 'OUTPUT_UNWRITABLE', toFolder.stderr);
      assert.match(toFolder.json.error.message, /: it is a folder, not a file$/);

      // A place the WAV cannot go is a usage error before any synthesis.
      const missing = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'The boy.',
        '--out',
        join(dir, 'no', 'such', 'x.wav'),
        '--json',
      ]);
      assert.equal(missing.code, 2, missing.stderr);
      assert.equal(missing.json.error.code, 'OUTPUT_UNWRITABLE');
      assert.match(missing.json.error.message, /does not exist/);
      const folder = await runCli(['synthesize', '--checkpoint', out, '--text', 'The boy.', '--out', dir, '--json']);
      assert.equal(folder.code, 2, folder.stderr);
      assert.match(folder.json.error.message, /is a folder: name the WAV file/);
      // A path through a regular file: the same usage error, naming it (was INTERNAL: ENOTDIR from a stat).
      const file = join(dir, 'texts-as-voice.txt');
      for (const args of [
        ['synthesize', '--checkpoint', out, '--text', 'The boy.', '--out', join(file, 'x.wav')],
        ['synthesize', '--checkpoint', out, '--texts', file, '--out-dir', file],
        ['export', '--checkpoint', out, '--out', join(file, 'x.safetensors')],
        ['voices', '--checkpoint', out, '--reference', wav, '--out', join(file, 'v.safetensors')],
        ['vocode', '--in', wav, '--out-dir', join(file, 'wavs')],
      ]) {
        const through = await runCli([...args, '--json']);
        assert.equal(through.code, 2, `${args.join(' ')}: ${through.stderr}`);
        assert.equal(through.json.error.code, 'OUTPUT_UNWRITABLE', args.join(' '));
        assert.match(through.json.error.message, /texts-as-voice\.txt|not a folder/, args.join(' '));
      }

      // Many texts at once: every speakable line gets its WAV (q and z never occur in these 12 clips,
      // the alphabet still gives them tokens: a warning, not a failure); the unspeakable line is named and skipped.
      const texts = join(dir, 'texts.txt');
      writeFileSync(texts, 'The boy was there.\n\nA quiz, a zebra.\nsnow ☃ man\n');
      const spoken = join(dir, 'spoken');
      mkdirSync(spoken);
      const many = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--texts',
        texts,
        '--out-dir',
        spoken,
        '--batch-size',
        '2',
        '--json',
      ]);
      assert.equal(many.code, 1, many.stderr); // spoken, but not all: exit 1 (findings), as docs/exit-codes.md says
      assert.deepEqual(readdirSync(spoken).sort(), ['line-0001.wav', 'line-0003.wav', 'synthesis.json']);
      assert.equal(many.json.result.skipped.length, 1);
      assert.equal(many.json.result.skipped[0].where, `${texts}:4`);
      assert.match(many.json.result.skipped[0].reason, /"☃" at character 6/);
      assert.ok(
        many.json.warnings.some((w: string) => w.includes(`${texts}:3`) && w.includes('"q"') && w.includes('"z"')),
        JSON.stringify(many.json.warnings),
      );
      for (const f of ['line-0001.wav', 'line-0003.wav'])
        assert.ok(decodeWav(readFileSync(join(spoken, f)), f).durationS > 0.1);

      // Ctrl-C while 40 texts are spoken one at a time: the WAV under way is finished, the summary lists the texts
      // spoken, the exit status is SIGINT's; the rest are not spoken.
      const forty = join(dir, 'forty.txt');
      writeFileSync(forty, Array.from({ length: 40 }, (_, i) => `The boy was there ${i + 1} times.`).join('\n'));
      const cut = join(dir, 'spoken-cut');
      mkdirSync(cut);
      const stopped = await runCli(
        ['synthesize', '--checkpoint', out, '--texts', forty, '--out-dir', cut, '--batch-size', '1'],
        { interrupt: { signal: 'SIGINT', when: () => existsSync(join(cut, 'line-0002.wav')) } },
      );
      assert.equal(stopped.code, 130, describeRun(stopped));
      assert.match(stopped.stderr, /SIGINT: finishing this WAV; \d+ texts? spoken so far/);
      // Each WAV is told as it is written (stderr is a pipe here: a line each).
      assert.match(stopped.stderr, /^spoken 1\/40: .*line-0001\.wav \(\d+\.\d\d s\)$/m);
      assert.match(stopped.stderr, /^spoken 2\/40: .*line-0002\.wav/m);
      const summary = JSON.parse(readFileSync(join(cut, 'synthesis.json'), 'utf8'));
      const cutWavs = readdirSync(cut).filter((f) => f.endsWith('.wav'));
      assert.ok(cutWavs.length >= 2 && cutWavs.length < 40, cutWavs.join(' '));
      assert.equal(summary.utterances.length, cutWavs.length);
      assert.equal(summary.unspoken, 40 - cutWavs.length);
      assert.match(stopped.stderr, new RegExp(`SIGINT stopped the synthesis: ${cutWavs.length} of 40 texts spoken`));
      assertNoStackTrace(stopped, 'stopped synthesis');

      // --texts from a pipeline still writing (standard input non-blocking: EAGAIN was an error), numbered as wide as
      // the last line needs (line 10001: 5 digits, so that names sort in line order); a device is refused unread.
      const piped = join(dir, 'spoken-piped');
      mkdirSync(piped);
      const cli = [process.execPath, join(repoRoot, 'src/cli/run.js')].map((a) => JSON.stringify(a)).join(' ');
      const writer = '(sleep 1; echo "The boy."; for i in $(seq 9999); do echo; done; echo "A quiz.")';
      const shell =
        `${writer} | ${cli} synthesize --checkpoint ${JSON.stringify(out)} --texts - ` +
        `--out-dir ${JSON.stringify(piped)}`;
      execFileSync('bash', ['-c', shell], { stdio: 'pipe', env: { ...process.env, NO_COLOR: '1' } });
      assert.deepEqual(readdirSync(piped).sort(), ['line-00001.wav', 'line-10001.wav', 'synthesis.json']);
      const zero = await runCli(['synthesize', '--checkpoint', out, '--texts', '/dev/zero', '--out-dir', piped]);
      assert.equal(zero.code, 2, zero.stderr);
      assert.match(zero.stderr, /cannot read --texts \/dev\/zero: it is a device, not a file/);
      const huge = join(dir, 'huge.txt'); // 65 MiB, sparse: refused by its size, unread
      writeFileSync(huge, '');
      truncateSync(huge, 65 << 20);
      const tooMuch = await runCli(['synthesize', '--checkpoint', out, '--texts', huge, '--out-dir', piped]);
      assert.equal(tooMuch.code, 2, tooMuch.stderr);
      assert.match(tooMuch.stderr, /it holds more than 64 MiB of text \(it was not read further\): split it/);
      // A WAV the file system refuses after others were written (a full disk; here a file-size limit, EFBIG, on the
      // long second line): the synthesis stops there, the summary lists the WAV written, the exit status is 3, and
      // --json's envelope is the error with the result beside it.
      const limited = join(dir, 'spoken-limited');
      mkdirSync(limited);
      const lines = join(dir, 'limited.txt');
      writeFileSync(
        lines,
        `Hi.\n${'The boy was there many times, and then he went home for dinner. '.repeat(2)}\nA quiz.\n`,
      );
      const capped = spawnSync(
        'bash',
        [
          '-c',
          `ulimit -f 40; exec ${cli} synthesize --checkpoint ${JSON.stringify(out)} --texts ${lines} --json ` +
            `--out-dir ${JSON.stringify(limited)}`,
        ],
        { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
      );
      assert.equal(capped.status, 3, capped.stdout.slice(0, 3000));
      const envelope = JSON.parse(capped.stdout);
      assert.equal(envelope.status, 'error');
      assert.equal(envelope.error.code, 'NO_SPACE');
      assert.match(
        envelope.error.message,
        /line-0002\.wav: the file is larger than this process or file system allows/,
      );
      assert.equal(envelope.result.utterances.length, 1);
      assert.equal(envelope.result.unspoken, 2);
      assert.deepEqual(readdirSync(limited).sort(), ['line-0001.wav', 'synthesis.json']);
      const limitedSummary = JSON.parse(readFileSync(join(limited, 'synthesis.json'), 'utf8'));
      assert.equal(limitedSummary.writeFailed.out, join(limited, 'line-0002.wav'));
      assert.equal(limitedSummary.utterances.length, 1);

      // A model of one language that is not dataset.language (a German dataset read with language_source: metadata
      // keeps dataset.language's default, en): spoken in its language without --language. The checkpoint's state is
      // rewritten to say so.
      const german = join(dir, 'german');
      cpSync(out, german, { recursive: true });
      const stateFile = join(new CheckpointStore(german).latest()!, 'state.json');
      const state = JSON.parse(readFileSync(stateFile, 'utf8'));
      state.config.text.languages = ['de'];
      state.config.text.cleaners = 'multilingual';
      state.tokenizer.languages = ['de'];
      state.languages = ['de'];
      writeFileSync(stateFile, JSON.stringify(state));
      const guten = await runCli(
        ['synthesize', '--checkpoint', german, '--text', 'Guten Tag.', '--out'].concat([
          join(dir, 'guten.wav'),
          '--json',
        ]),
      );
      assert.equal(guten.code, 0, guten.stderr);
      assert.equal(guten.json.result.language, 'de');
      const english = await runCli(
        ['synthesize', '--checkpoint', german, '--text', 'Hello.', '--language', 'en'].concat([
          '--out',
          join(dir, 'hello-de.wav'),
          '--json',
        ]),
      );
      assert.equal(english.code, 2, english.stderr);
      assert.deepEqual(english.json.error.suggestions, ['pass one of them (de), or leave --language out for de']);

      // A texts file that is not text: a binary file (a checkpoint's weights), UTF-16 text and a Latin-1 line are
      // refused before any work, the line named; no WAV is written.
      const latin1 = join(dir, 'latin1.txt');
      writeFileSync(latin1, Buffer.concat([Buffer.from('The boy.\nCaf'), Buffer.from([0xe9]), Buffer.from('.\n')]));
      const weights = join(new CheckpointStore(out).latest()!, 'weights.safetensors');
      const utf16 = join(dir, 'utf16.txt');
      writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('The boy.\r\n', 'utf16le')]));
      const none = join(dir, 'spoken-not');
      mkdirSync(none);
      for (const [file, code, message] of [
        [weights, 'SYNTH_TEXTS_UNREADABLE', /it is a binary file \(it holds NUL bytes\), not text/],
        [utf16, 'SYNTH_TEXTS_UNREADABLE', /it is UTF-16LE text, not UTF-8: convert it, e\.g\. iconv -f UTF-16/],
        [
          latin1,
          'SYNTH_TEXTS_NOT_UTF8',
          /latin1\.txt:2 is not UTF-8 \(byte 4 of the line; as Latin-1 it reads "Café\."\)/,
        ],
      ] as const) {
        const r = await runCli(['synthesize', '--checkpoint', out, '--texts', file, '--out-dir', none, '--json']);
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.json.error.code, code);
        assert.match(r.json.error.message, message);
      }
      assert.deepEqual(readdirSync(none), []);
    },
  );

  test(
    'a second run into a folder in use stops at once naming the holder; the lock a ' + 'killed run left is taken over',
    async () => {
      const out = join(dir, 'run-locked');
      const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
      const first = spawn(
        process.execPath,
        [join(repoRoot, 'src/cli/run.js'), 'train', '--config', micro, '--output', out, '--max-steps', '500'],
        { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      const training = new Promise<void>((ok) =>
        first.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
          if (/step\s+2\//.test(stderr)) ok();
        }),
      );
      const exited = new Promise((r) => first.once('exit', (c, sig) => r(sig ?? c)));
      await training;
      const second = await runCli(['train', '--config', micro, '--output', out, '--max-steps', '1', '--json']);
      assert.equal(second.code, 2, second.stderr);
      assert.equal(second.json.error.code, 'RUN_FOLDER_IN_USE');
      assert.match(second.json.error.message, new RegExp(`in use by xtts \\(process ${first.pid} on `));
      first.kill('SIGKILL');
      assert.equal(await exited, 'SIGKILL');
      assert.ok(existsSync(join(out, '.xtts-run.lock')), 'a killed run leaves its lock');
      // Only the first run wrote there: its steps, none of the second's.
      const steps = new Database(join(out, 'run.sqlite'), { readonly: true })
        .prepare('SELECT COUNT(*) AS n FROM steps')
        .get() as { n: number };
      assert.ok(steps.n >= 2);
      // The killed run's folder is resumed (a new run there would be refused: RUN_FOLDER_USED).
      const third = await runCli([
        'train',
        '--config',
        micro,
        '--output',
        join(out),
        '--max-steps',
        '1',
        '--resume',
        '--set',
        'training.eval_every=1000',
        '--json',
      ]);
      assert.equal(third.code, 0, third.stderr);
      assert.equal(existsSync(join(out, '.xtts-run.lock')), false, 'the lock is released at the end');
    },
  );

  test("--json carries the run's warnings in the envelope, as a terminal shows them on stderr", async () => {
    const out = join(dir, 'run-json-warnings');
    const args = ['train', '--config', micro, '--output', out, '--max-steps', '1'];
    const r = await runCli([...args, '--set', 'dataset.validation_fraction=0', '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.ok(
      r.json.warnings.some((w: string) => /^no validation utterances: dataset\.validation_fraction 0/.test(w)),
      JSON.stringify(r.json.warnings),
    );
  });

  test(
    'steps count optimizer updates: with grad_accumulation_steps 2, --max-steps 4 ' +
      'makes 4 updates of two batches each',
    async () => {
      const out = join(dir, 'run-accum');
      const r = await runCli([
        'train',
        '--config',
        micro,
        '--output',
        out,
        '--max-steps',
        '4',
        '--set',
        'training.grad_accumulation_steps=2',
        ...QUIET,
        '--json',
      ]);
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.equal(r.json.result.steps, 4);
      const db = new Database(join(out, 'run.sqlite'), { readonly: true });
      const steps = db
        .prepare('SELECT step, batch_size AS samples, learning_rate AS lr FROM steps ORDER BY step')
        .all() as { step: number; samples: number; lr: number }[];
      const lrs = db.prepare("SELECT value FROM metrics WHERE name = 'learning_rate' ORDER BY step").all() as {
        value: number;
      }[];
      db.close();
      assert.deepEqual(
        steps.map((x) => x.step),
        [1, 2, 3, 4],
      );
      // Two batches of at most 4 (11 training clips: an epoch's last batch is short): more than one batch holds.
      assert.ok(
        steps.every((x) => x.samples > 4 && x.samples <= 8),
        JSON.stringify(steps),
      );
      assert.ok(
        steps.every((x) => Number.isFinite(x.lr) && x.lr > 0),
        JSON.stringify(steps),
      );
      assert.equal(lrs.length, 4);
      assert.ok(lrs.every((x) => Number.isFinite(x.value)));
      // The warm-up counts updates: the 4th update's rate is the schedule's 4th.
      assert.ok(steps[3].lr > steps[2].lr && steps[2].lr > steps[0].lr);
    },
  );

  test(
    'a diverged model stops at exactly max_nonfinite_steps with exit 1, a findings ' +
      'envelope and no checkpoint of its state; synthesize refuses NaN weights',
    async () => {
      const out = join(dir, 'run-nan');
      const first = await runCli(['train', '--config', micro, '--output', out, '--max-steps', '1', ...QUIET, '--json']);
      assert.equal(first.code, 0, first.stderr.slice(-2000));
      // Weights at the edge of float32 (finite, so the checkpoint is a legal one): every forward pass overflows, as a
      // blown-up run's would.
      const store = new CheckpointStore(out);
      const latest = store.latest()!;
      const ckpt = store.load<CheckpointState>(latest);
      for (const w of ckpt.weights) if (w.dtype === 'float32') w.data[0] = 3e38;
      store.save(1, ckpt, { keep: 3 });
      const before = readdirSync(join(out, 'checkpoints'))
        .filter((n) => n.startsWith('step-'))
        .sort();
      const stopped = await runCli([
        'train',
        '--config',
        micro,
        '--output',
        out,
        '--resume',
        '--max-steps',
        '40',
        '--set',
        'training.max_nonfinite_steps=3',
        ...QUIET,
        '--json',
      ]);
      assert.equal(stopped.code, 1, stopped.stderr.slice(-2000));
      assert.equal(stopped.json.status, 'findings');
      assert.equal(stopped.json.result.stoppedBy, 'non_finite');
      assert.equal(stopped.json.result.nonFiniteSteps, 3);
      assert.equal(stopped.json.result.steps, 4); // 1 + exactly 3 skipped updates
      assert.deepEqual(
        readdirSync(join(out, 'checkpoints'))
          .filter((n) => n.startsWith('step-'))
          .sort(),
        before,
      );
      const db = new Database(join(out, 'run.sqlite'), { readonly: true });
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM steps WHERE non_finite = 1').get() as { n: number }).n, 3);
      db.close();
      // Fewer steps than the limit, every one of them non-finite: still a failed run.
      const all = await runCli([
        'train',
        '--config',
        micro,
        '--output',
        out,
        '--resume',
        '--max-steps',
        '3',
        '--set',
        'training.max_nonfinite_steps=10',
        ...QUIET,
        '--json',
      ]);
      assert.equal(all.code, 1, all.stderr.slice(-2000));
      assert.equal(all.json.result.stoppedBy, 'non_finite');
      // NaN in the weights (written around the store, which refuses to): synthesis refuses them, naming the tensor.
      const file = join(latest, 'weights.safetensors');
      const { arrays, metadata } = decodeSafetensors(readFileSync(file), file);
      for (const a of arrays) if (a.dtype === 'float32') a.data[0] = Number.NaN;
      writeFileSync(file, encodeSafetensors(arrays, metadata));
      assert.throws(() => store.save(2, store.load(latest), { keep: 3 }), /CHECKPOINT_NOT_FINITE|holds NaN/);
      const spoken = await runCli([
        'synthesize',
        '--checkpoint',
        out,
        '--text',
        'The boy was there.',
        '--out',
        join(dir, 'nan.wav'),
        '--json',
      ]);
      assert.equal(spoken.code, 2, spoken.stderr);
      assert.equal(spoken.json.error.code, 'CHECKPOINT_NOT_FINITE');
      assert.match(spoken.json.error.message, /weight \S+ holds NaN/);
      assert.equal(existsSync(join(dir, 'nan.wav')), false);
    },
  );

  test(
    'a config that would fail later or train otherwise than asked is refused before ' + 'any work, with where and why',
    async () => {
      const out = join(dir, 'run-refused');
      for (const [sets, rule] of [
        [
          ['device.backend=wasm', 'training.precision=mixed_fp16'],
          /precision mixed_fp16: wasm: tfjs-backend-wasm 4.22 computes in float32/,
        ],
        [['training.optimizer.weight_decay=1e30'], /wipes them out/],
        [['batching.reference_frames=4096'], /reference_frames 4096 is longer than the longest clip/],
      ] as const) {
        const set = sets[sets.length - 1];
        const r = await runCli([
          'train',
          '--config',
          config,
          '--output',
          out,
          ...sets.flatMap((x) => ['--set', x]),
          '--json',
        ]);
        assert.equal(r.code, 2, `${set}: ${r.stderr}`);
        assert.equal(r.json.error.code, 'CONFIG_INVALID');
        assert.match(r.json.error.message, rule);
        assert.match(r.json.error.message, new RegExp(`--set ${set.replace(/[.]/g, '\\.')}`));
        assert.equal(existsSync(out), false, 'nothing was written');
      }
    },
  );

  test('a batch larger than the training set is the training set once, not many copies of every clip', async () => {
    const out = join(dir, 'run-bigbatch');
    const r = await runCli([
      'train',
      '--config',
      micro,
      '--output',
      out,
      '--max-steps',
      '1',
      '--set',
      'batching.batch_size=4096',
      '--set',
      'training.eval_every=1000',
      '--set',
      'training.validate_every=1000',
    ]);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const m =
      /batching\.batch_size 4096 is more than the (\d+) training utterances: batches are at most \1 utterances/.exec(
        r.stderr,
      );
    assert.ok(m, r.stderr.slice(-2000));
    const db = new Database(join(out, 'run.sqlite'), { readonly: true });
    const row = db.prepare('SELECT batch_size AS n FROM steps').get() as { n: number };
    db.close();
    assert.equal(row.n, Number(m[1]));
  });

  test('--strict refuses a dataset with an unusable row, naming it; without it the row is skipped', async () => {
    const data = join(dir, 'strict-data');
    mkdirSync(join(data, 'wavs'), { recursive: true });
    for (const f of readdirSync(join(dir, 'data', 'wavs')))
      copyFileSync(join(dir, 'data', 'wavs', f), join(data, 'wavs', f));
    writeFileSync(
      join(data, 'metadata.csv'),
      readFileSync(join(dir, 'data', 'metadata.csv'), 'utf8') +
        'GONE|This clip is not there.|This clip is not there.\n',
    );
    const lines = readFileSync(join(data, 'metadata.csv'), 'utf8').trim().split('\n').length;
    const r = await runCli([
      'train',
      '--config',
      config,
      '--dataset',
      data,
      '--output',
      join(dir, 'run-strict'),
      '--max-steps',
      '1',
      '--strict',
      '--json',
    ]);
    assert.equal(r.code, 2, r.stderr.slice(-1000));
    assert.equal(r.json.error.code, 'DATASET_ROWS_SKIPPED');
    assert.match(r.json.error.message, new RegExp(`metadata\\.csv:${lines} \\(GONE\\): missing_audio`));
  });

  test('on a terminal a progress bar with the ETA runs under the log lines; a pipe gets the lines alone', async () => {
    // script(1) (bsdutils) gives the CLI a pseudo-terminal, as a user's shell does.
    const out = join(dir, 'run-tty');
    const cmd = [
      process.execPath,
      join(repoRoot, 'src/cli/run.js'),
      'train',
      '--config',
      micro,
      '--output',
      out,
      '--max-steps',
      '6',
      '--set',
      'training.log_every=3',
      '--set',
      'training.eval_every=1000',
      '--set',
      'training.validate_every=1000',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
    const tty = execFileSync('script', ['-qefc', cmd, '/dev/null'], {
      encoding: 'utf8',
      env: { ...env, NO_COLOR: '1' },
      timeout: 600_000,
    });
    assert.match(tty, /train +\[#*\.*\] \d\/6 .*(steps\/s|s\/step), ETA \d+/);
    assert.match(tty, /step 3\/6 +loss/);
    // After the log line, the bar's rate is the line's own (its recent steps), whatever the speed: below one step a
    // second as seconds a step, never "0 steps/s".
    assert.doesNotMatch(tty, / 0 steps\/s/);
    const logged = Number(/step 3\/6 .* (\d+) ms\/step/.exec(tty)?.[1]);
    const after = tty.slice(tty.search(/step 3\/6 /));
    const bar = /\] [45]\/6 (?:([\d.]+) steps\/s|([\d.]+) s\/step), ETA/.exec(after);
    // NO_COLOR is honoured on a terminal: no escape but the bar's own line control.
    assert.doesNotMatch(tty, /\x1b\[\d+m/);
    assert.ok(logged > 0 && bar, tty.slice(-3000));
    const barStepMs = bar[1] ? 1000 / Number(bar[1]) : 1000 * Number(bar[2]);
    assert.ok(Math.abs(barStepMs - logged) <= 0.06 * logged + 50, `bar ${bar[0]}, log line ${logged} ms/step`);
    assert.match(tty, /\r\x1b\[K/); // the bar is taken off its line before a log line
    // The summary says how long the trainer's thread was stopped collecting garbage.
    assert.match(
      tty,
      joinedRegExp(
        /host garbage collection: \d+ full \([\d.]+ ms, longest [\d.]+ ms\), /,
        /\d+ young \([\d.]+ ms\): [\d.]+% of the run's wall/,
      ),
    );
  });

  test('a signal before the first step: --json still prints one envelope, interrupted, with no result', async () => {
    // The run folder's xtts-run.json is written as the run starts, seconds before the tiny model's first step here.
    const out = join(dir, 'run-early-signal');
    const r = await runCli(['train', '--config', config, '--output', out, '--json'], {
      interrupt: { signal: 'SIGTERM', when: () => existsSync(join(out, 'xtts-run.json')) },
    });
    assert.equal(r.code, 143, describeRun(r));
    assert.equal(r.json?.status, 'interrupted', r.stdout);
    assert.equal(r.json.result, null);
    assert.deepEqual(r.json.warnings, ['SIGTERM: no step has been trained yet: exiting now']);
    assert.match(r.stderr, /SIGTERM: no step has been trained yet: exiting now/);
  });

  test('a run folder that cannot be one fails at once, before the data is prepared', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    for (const [output, why] of [
      [join(file, 'run'), /cannot use .* as the run folder: a file of that name \(or above it\) is not a folder/],
      ['', /the run folder is empty/],
    ] as const) {
      const started = performance.now();
      const r = await runCli(['train', '--config', config, '--output', output, '--json']);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.json.error.code, 'OUTPUT_UNWRITABLE');
      assert.match(r.json.error.message, why);
      assert.ok(!/data:/.test(r.stderr));
      assert.ok(performance.now() - started < 60_000);
    }
  });

  test(
    'device.model_memory_budget_mb refuses a run whose estimate exceeds it before ' +
      'any work, naming the key and the batch that fits',
    async () => {
      const out = join(dir, 'run-budget');
      const r = await runCli([
        'train',
        '--config',
        config,
        '--output',
        out,
        '--max-steps',
        '3',
        '--set',
        'model.d_model=256',
        '--set',
        'device.model_memory_budget_mb=64',
        '--json',
      ]);
      assert.equal(r.code, 2, r.stderr.slice(-1000));
      assert.equal(r.json.error.code, 'CONFIG_INVALID');
      assert.match(r.json.error.message, /estimated .* exceeds device\.model_memory_budget_mb = 64\.0 MiB/);
      assert.equal(existsSync(join(out, 'run.sqlite')), false);
    },
  );

  test('a missing dataset is a clear error, not a stack trace', async () => {
    const r = await runCli(['train', '--config', config, '--dataset', join(dir, 'nope'), '--json']);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.code, 'DATASET_NOT_FOUND');
  });
});
