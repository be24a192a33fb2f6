// Voices as a user meets them, through the CLI as processes: a micro model trained on two speakers
// (the shortest quickstart clips, in the multi-speaker LJSpeech layout) has both voices in its
// checkpoint; `xtts voices` lists them and the languages; a voice saved to a file speaks exactly as
// `--speaker` does; several reference clips are one voice (the same as the file `voices --reference`
// saves); unknown speakers, two voices at once and another model's voice file are refused by name.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { decodeSafetensors } from '../../src/core/training/safetensors.js';
import { mulberry32 } from '../../src/core/data/buckets.js';
import { encodeVoiceFile } from '../../src/core/training/voices.js';
import { assertNoStackTrace, runCli as run } from '../helpers/cli.js';
import { MICRO_MODEL, shortQuickstartRun } from '../helpers/short-clips.js';
import { pcm16Wav, writeToneWav } from '../helpers/wav.js';

const runCli = (args: string[]) => run(args, { timeoutMs: 600_000 });

const { dir, config } = shortQuickstartRun(
  6,
  'xtts-voices-',
  `  max_steps: 4
  log_every: 1
  validate_every: 1000
  checkpoint_every: 4
  eval_every: 1000
`,
  MICRO_MODEL,
);
const metadata = join(dir, 'data', 'metadata.csv');
const rows = readFileSync(metadata, 'utf8').trim().split('\n');
// Two speakers, three clips each, in the multi-speaker layout (id|text|normalised|speaker).
writeFileSync(metadata, rows.map((r, i) => `${r}|${i % 2 ? 'bob' : 'alice'}`).join('\n') + '\n');
const clip = (i: number) => join(dir, 'data', 'wavs', `${rows[i].split('|')[0]}.wav`);
const runDir = join(dir, 'runs', 'voices');
const checkpoint = () =>
  join(runDir, 'checkpoints', readFileSync(join(runDir, 'checkpoints', 'latest'), 'utf8').trim());
const say = ['--text', 'The birch canoe.', '--backend', 'wasm', '--json'];
/** Another run of the config into runs/OUT, with more arguments. */
const train = (out: string, ...args: string[]) =>
  runCli(['train', '--config', config, '--output', join(dir, 'runs', out), '--backend', 'wasm', ...args]);

describe('voices', () => {
  test('a run on two speakers checkpoints both voices; xtts voices lists them and the languages', async () => {
    const r = await runCli(['train', '--config', config, '--output', runDir, '--backend', 'wasm', '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const voices = decodeSafetensors(readFileSync(join(checkpoint(), 'voices.safetensors')), 'voices').arrays;
    assert.deepEqual(voices.map((a) => a.name).sort(), ['voice/alice', 'voice/bob']);
    assert.deepEqual(voices[0].shape, [4, 32]); // quickstart's cond_latents × the micro d_model
    const list = await runCli(['voices', '--checkpoint', runDir, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const res = list.json.result;
    assert.deepEqual(res.speakers, [
      { name: 'alice', voice: true },
      { name: 'bob', voice: true },
    ]);
    assert.deepEqual(res.languages, [{ code: 'en', cleaner: 'english', normalised: true }]);
    const human = await runCli(['voices', '--checkpoint', runDir]);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /2 speakers[\s\S]*alice[\s\S]*bob[\s\S]*1 language[\s\S]*en {2}cleaner english/);
  });

  test('--speaker, and its voice saved to a file, speak the same WAV; the trained voices differ', async () => {
    const alice = join(dir, 'alice.wav');
    const a = await runCli(['synthesize', '--checkpoint', runDir, '--speaker', 'alice', '--out', alice, ...say]);
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual(a.json.result.voice, { kind: 'speaker', speaker: 'alice' });
    const file = join(dir, 'alice.voice.safetensors');
    const saved = await runCli(['voices', '--checkpoint', runDir, '--speaker', 'alice', '--out', file, '--json']);
    assert.equal(saved.code, 0, saved.stderr);
    assert.deepEqual(saved.json.result.saved, { file, source: 'speaker alice' });
    const fromFile = join(dir, 'alice-file.wav');
    const f = await runCli(['synthesize', '--checkpoint', runDir, '--voice', file, '--out', fromFile, ...say]);
    assert.equal(f.code, 0, f.stderr);
    assert.equal(f.json.result.voice.kind, 'file');
    assert.ok(readFileSync(fromFile).equals(readFileSync(alice)), 'the voice file speaks as --speaker does');
    const bob = join(dir, 'bob.wav');
    assert.equal(
      (await runCli(['synthesize', '--checkpoint', runDir, '--speaker', 'bob', '--out', bob, ...say])).code,
      0,
    );
    assert.ok(!readFileSync(bob).equals(readFileSync(alice)), 'two speakers, two voices');
    // No voice named: the mean of the trained voices.
    const mean = await runCli(['synthesize', '--checkpoint', runDir, '--out', join(dir, 'mean.wav'), ...say]);
    assert.equal(mean.code, 0, mean.stderr);
    assert.deepEqual(mean.json.result.voice, { kind: 'average', speakers: 2 });
  });

  test('several --reference clips are one voice: the same as the voice file `voices --reference` saves', async () => {
    const clips = ['--reference', clip(0), '--reference', clip(2)];
    const both = join(dir, 'both.wav');
    const r = await runCli(['synthesize', '--checkpoint', runDir, ...clips, '--out', both, ...say]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json.result.voice, { kind: 'reference', clips: [clip(0), clip(2)] });
    const file = join(dir, 'clips.voice.safetensors');
    const saved = await runCli(['voices', '--checkpoint', runDir, ...clips, '--out', file, '--backend', 'wasm']);
    assert.equal(saved.code, 0, saved.stderr);
    // What it wrote, not the listing `voices` gives without --out.
    assert.match(saved.stdout, /^wrote .*voice\.safetensors: the voice of clips .*\n$/);
    const again = join(dir, 'both-file.wav');
    const f = await runCli(['synthesize', '--checkpoint', runDir, '--voice', file, '--out', again, ...say]);
    assert.equal(f.code, 0, f.stderr);
    assert.ok(readFileSync(again).equals(readFileSync(both)));
    // Saving again over it needs --overwrite.
    const twice = await runCli(['voices', '--checkpoint', runDir, '--speaker', 'bob', '--out', file, '--json']);
    assert.equal(twice.code, 2);
    assertNoStackTrace(twice);
    // A voice file is named .safetensors, and one passed as a recording is named for what it is.
    const asWav = join(dir, 'bob-voice.wav');
    const named = await runCli(['voices', '--checkpoint', runDir, '--speaker', 'bob', '--out', asWav, '--json']);
    assert.equal(named.code, 2, named.stderr);
    assert.match(named.json.error.message, /a voice file is safetensors; name the file \.safetensors/);
    assert.ok(!existsSync(asWav));
    const fromVoice = join(dir, 'from-voice.wav');
    const asClip = await runCli([
      'synthesize',
      '--checkpoint',
      runDir,
      '--reference',
      file,
      '--out',
      fromVoice,
      ...say,
    ]);
    assert.equal(asClip.code, 2, asClip.stderr);
    assert.equal(asClip.json.error.code, 'SYNTH_REFERENCE');
    assert.match(asClip.json.error.message, /it is an xtts voice file \(written by `xtts voices --out`\)/);
    assert.match(asClip.json.error.suggestions[0], /synthesize --voice FILE/);
    assert.ok(!existsSync(fromVoice));
  });

  test("an unknown speaker, two voices at once and another model's voice file are refused by name", async () => {
    const out = join(dir, 'never.wav');
    const unknown = await runCli(['synthesize', '--checkpoint', runDir, '--speaker', 'carol', '--out', out, ...say]);
    assert.equal(unknown.code, 2);
    assert.equal(unknown.json.error.code, 'SYNTH_SPEAKER');
    assert.match(unknown.json.error.message, /"carol" is not a voice of .*; it has 2: alice, bob/);
    // A name in another case is the voice it nearly names (the list says how it is written).
    const cased = await runCli(['synthesize', '--checkpoint', runDir, '--speaker', 'ALICE', '--out', out, ...say]);
    assert.equal(cased.code, 2);
    assert.deepEqual(cased.json.error.suggestions[0], 'did you mean --speaker alice?');
    const missing = await runCli(['voices', '--checkpoint', join(dir, 'nowhere'), '--json']);
    assert.equal(missing.json.error.code, 'CHECKPOINT_NOT_FOUND');
    assert.match(missing.json.error.message, /nowhere does not exist$/);
    const aFile = await runCli(['voices', '--checkpoint', config, '--json']);
    assert.match(aFile.json.error.message, /is a file$/);
    const two = await runCli([
      'synthesize',
      '--checkpoint',
      runDir,
      '--speaker',
      'alice',
      '--reference',
      clip(0),
      '--out',
      out,
      ...say,
    ]);
    assert.equal(two.code, 2);
    assertNoStackTrace(two);
    const other = join(dir, 'other.voice.safetensors');
    writeFileSync(
      other,
      encodeVoiceFile(new Float32Array(8 * 64), {
        checkpoint: '/elsewhere/step-00000010',
        step: 10,
        source: 'speaker zed',
        latents: 8,
        dModel: 64,
      }),
    );
    const wrong = await runCli(['synthesize', '--checkpoint', runDir, '--voice', other, '--out', out, ...say]);
    assert.equal(wrong.code, 2);
    assert.equal(wrong.json.error.code, 'SYNTH_VOICE_FILE');
    assert.match(wrong.json.error.message, /8×64 latents \(\/elsewhere\/step-00000010\); this one takes 4×32/);
    // A voice file of this model's shape whose values are NaN: damaged, said as such (not a shape mismatch).
    const nan = join(dir, 'nan.voice.safetensors');
    const nanInfo = { checkpoint: '/elsewhere/step-00000010', step: 10, source: 'speaker zed', latents: 4, dModel: 32 };
    writeFileSync(nan, encodeVoiceFile(new Float32Array(4 * 32).fill(Number.NaN), nanInfo));
    const damaged = await runCli(['synthesize', '--checkpoint', runDir, '--voice', nan, '--out', out, ...say]);
    assert.equal(damaged.code, 2, damaged.stderr);
    assert.equal(damaged.json.error.code, 'SYNTH_VOICE_FILE');
    assert.match(damaged.json.error.message, /nan\.voice\.safetensors: 128 of its 128 values are not finite/);
    const notVoice = await runCli(['synthesize', '--checkpoint', runDir, '--voice', config, '--out', out, ...say]);
    assert.equal(notVoice.code, 2);
    assertNoStackTrace(notVoice);
    assert.ok(!existsSync(out), 'nothing spoken');
    // A named pipe as a voice file is refused as one (its open would wait for a writer for ever); as a clip it is
    // read to its end, as `--reference <(sox …)` gives one, said on stderr.
    const fifo = join(dir, 'a.pipe');
    execFileSync('mkfifo', [fifo]);
    const asVoice = await runCli(['synthesize', '--checkpoint', runDir, '--voice', fifo, '--out', out, ...say]);
    assert.equal(asVoice.code, 2, asVoice.stderr);
    assert.match(asVoice.json.error.message, /it is a named pipe \(FIFO\), not a file/);
    const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', clip(0), fifo], { stdio: 'ignore' });
    const written = new Promise((resolve) => writer.once('close', resolve));
    const fromPipe = await runCli(['synthesize', '--checkpoint', runDir, '--reference', fifo, '--out', out, ...say]);
    await written;
    assert.equal(fromPipe.code, 0, fromPipe.stdout + fromPipe.stderr);
    assert.match(fromPipe.stderr, /reading --reference from the pipe .*a\.pipe \(until its writer ends\)/);
    rmSync(out);
    // A clip too short to carry a voice speaks with a warning; a silent one is refused as a flag's input.
    const short = join(dir, 'short.wav');
    writeToneWav(short, 0.4);
    const brief = await runCli(['synthesize', '--checkpoint', runDir, '--reference', short, '--out', out, ...say]);
    assert.equal(brief.code, 0, brief.stdout + brief.stderr);
    assert.ok(
      brief.json.warnings.some((w: string) =>
        /short\.wav holds 0\.\d+ s of sound .*too little to carry a voice/.test(w),
      ),
      brief.json.warnings.join('\n'),
    );
    rmSync(out);
    // A click is no voice: refused as a flag's input.
    const click = join(dir, 'click.wav');
    writeToneWav(click, 0.1);
    const clicked = await runCli(['synthesize', '--checkpoint', runDir, '--reference', click, '--out', out, ...say]);
    assert.equal(clicked.code, 2, clicked.stdout + clicked.stderr);
    assert.equal(clicked.json.error.code, 'SYNTH_REFERENCE');
    assert.match(clicked.json.error.message, /click\.wav: it holds 0\.\d+ s of sound .*nothing to read a voice from/);
    assert.ok(!existsSync(out));
    // The same clip twice (here under another spelling of its path) is said: its windows count twice.
    const twice = ['--reference', clip(0), '--reference', clip(0).replace('/wavs/', '/./wavs/')];
    const doubled = await runCli(['synthesize', '--checkpoint', runDir, ...twice, '--out', out, ...say]);
    assert.equal(doubled.code, 0, doubled.stdout + doubled.stderr);
    assert.ok(
      doubled.json.warnings.some((w: string) => /is given twice \(as .* too\): its windows count twice/.test(w)),
      doubled.json.warnings.join('\n'),
    );
    rmSync(out);
    const silent = join(dir, 'silent.wav');
    writeFileSync(silent, pcm16Wav(new Float32Array(22050), 22050));
    const quiet = await runCli(['synthesize', '--checkpoint', runDir, '--reference', silent, '--out', out, ...say]);
    assert.equal(quiet.json.error.code, 'SYNTH_REFERENCE', quiet.stdout);
    assert.match(quiet.json.error.message, /silent\.wav: the clip is silent/);
    assert.doesNotMatch(quiet.json.error.suggestions.join(' '), /metadata/);
    // Dither alone (±1 step, as sox writes silence at 16 bits) is not a voice either: a warning that says so.
    const dither = join(dir, 'dither.wav');
    const rand = mulberry32(4);
    writeFileSync(
      dither,
      pcm16Wav(
        Float32Array.from({ length: 3 * 22050 }, () => Math.round(rand() * 2 - 1) / 32768),
        22050,
      ),
    );
    const dithered = await runCli(['synthesize', '--checkpoint', runDir, '--reference', dither, '--out', out, ...say]);
    assert.equal(dithered.code, 0, dithered.stderr);
    assert.ok(
      dithered.json.warnings.some((w: string) => /dither\.wav peaks at -90 dBFS: it is all but silent/.test(w)),
      dithered.json.warnings.join('\n'),
    );
    rmSync(out);
    // Texts through a pipe are read once: /dev/stdin speaks its line.
    mkdirSync(join(dir, 'piped'));
    const texts = await run(
      ['synthesize', '--checkpoint', runDir, '--texts', '/dev/stdin', '--out-dir', join(dir, 'piped')].concat(
        say.slice(2),
      ),
      { timeoutMs: 600_000, input: 'Read from a pipe.\n' },
    );
    assert.equal(texts.code, 0, texts.stdout + texts.stderr);
    assert.ok(existsSync(join(dir, 'piped', 'line-0001.wav')));
    const noOut = await runCli(['voices', '--checkpoint', runDir, '--speaker', 'alice']);
    assert.equal(noOut.code, 2);
    assert.match(noOut.stderr, /--out FILE/);
  });
});

describe('voice warp and reference join', () => {
  test('a run with batching.voice_warp says what it warps, trains on warped mels and keeps both voices', async () => {
    const plain = await train('unwarped', '--json');
    assert.equal(plain.code, 0, plain.stderr.slice(-2000));
    assert.doesNotMatch(plain.stdout + plain.stderr, /voice warp/);
    const warped = await train('warped', '--set', 'batching.voice_warp=0.2', '--set', 'batching.voice_warp_share=1');
    assert.equal(warped.code, 0, warped.stderr.slice(-2000));
    assert.match(
      warped.stdout + warped.stderr,
      new RegExp(
        'voice warp: 100% of the training utterances and their references are read with frequencies ' +
          'scaled by α in 0\\.83–1\\.20',
      ),
    );
    // The same seed, model, batches and references (warps draw from a stream of their own): only the warped mels
    // can move the first step's loss.
    const first = (out: string) =>
      (JSON.parse(readFileSync(join(dir, 'runs', out, 'metrics.jsonl'), 'utf8').split('\n')[0]) as { value: number })
        .value;
    // Without a warp a run repeats itself to the bit, so the difference is the warp's.
    assert.equal((await train('unwarped-again', '--json')).code, 0);
    assert.equal(first('unwarped-again'), first('unwarped'));
    assert.notEqual(first('warped'), first('unwarped'));
    const latest = join(dir, 'runs', 'warped', 'checkpoints');
    const voices = decodeSafetensors(
      readFileSync(join(latest, readFileSync(join(latest, 'latest'), 'utf8').trim(), 'voices.safetensors')),
      'voices',
    ).arrays;
    assert.deepEqual(voices.map((a) => a.name).sort(), ['voice/alice', 'voice/bob']);
  });

  test('pitch_contour, reference_rate: a voice keeps its pitch and rate; --speaker, its file, --pitch', async () => {
    const out = join(dir, 'runs', 'contour');
    const r = await train('contour', '--set', 'model.pitch_contour=true', '--set', 'model.reference_rate=true');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const metrics = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const pitchLoss = metrics.filter((m) => m.name === 'loss/pitch');
    assert.equal(pitchLoss.length, 4, "the pitch predictor's loss at every logged step");
    const latest = join(out, 'checkpoints');
    const ckpt = join(latest, readFileSync(join(latest, 'latest'), 'utf8').trim());
    const arrays = decodeSafetensors(readFileSync(join(ckpt, 'voices.safetensors')), 'voices').arrays;
    const pitch = new Map(arrays.filter((a) => a.name.startsWith('voice-pitch/')).map((a) => [a.name, a.data[0]]));
    assert.deepEqual([...pitch.keys()].sort(), ['voice-pitch/alice', 'voice-pitch/bob']);
    // The quickstart's voice: a median F0 of a speaking voice, read on the clips' log-mels.
    for (const [name, logF0] of pitch) assert.ok(logF0 > Math.log(80) && logF0 < Math.log(400), `${name} ${logF0}`);
    // And its speaking rate: spectral-change peaks a second of speech, 5 to 15 for a speaking voice.
    const rate = new Map(arrays.filter((a) => a.name.startsWith('voice-rate/')).map((a) => [a.name, a.data[0]]));
    assert.deepEqual([...rate.keys()].sort(), ['voice-rate/alice', 'voice-rate/bob']);
    for (const [name, logRate] of rate)
      assert.ok(logRate > Math.log(5) && logRate < Math.log(15), `${name} ${logRate}`);
    // The listing gives each voice's pitch and rate, as the model reads them.
    const list = await runCli(['voices', '--checkpoint', out, '--json']);
    const hz = Math.round(Math.exp(pitch.get('voice-pitch/alice')!) * 10) / 10;
    const perS = Math.round(Math.exp(rate.get('voice-rate/alice')!) * 100) / 100;
    assert.deepEqual(list.json.result.speakers[0], { name: 'alice', voice: true, pitchHz: hz, ratePerS: perS });
    const human = await runCli(['voices', '--checkpoint', out]);
    assert.match(human.stdout, new RegExp(`\\n {2}alice {2}${hz.toFixed(0)} Hz {2}${perS.toFixed(1)} changes/s\\n`));
    const file = join(dir, 'contour.voice.safetensors');
    const saved = await runCli(['voices', '--checkpoint', out, '--speaker', 'alice', '--out', file, '--json']);
    assert.equal(saved.code, 0, saved.stderr);
    const info = JSON.parse(decodeSafetensors(readFileSync(file), 'voice').metadata.info!);
    assert.equal(info.logF0, pitch.get('voice-pitch/alice'));
    assert.equal(info.logRate, rate.get('voice-rate/alice'));
    const wav = (name: string) => join(dir, `contour-${name}.wav`);
    for (const [name, voice] of [
      ['speaker', ['--speaker', 'alice']],
      ['file', ['--voice', file]],
    ] as const) {
      const s = await runCli(['synthesize', '--checkpoint', out, ...voice, '--out', wav(name), ...say]);
      assert.equal(s.code, 0, s.stderr);
    }
    assert.ok(
      readFileSync(wav('file')).equals(readFileSync(wav('speaker'))),
      'the file carries the voice, its pitch and its rate',
    );
    // A header whose rate is not one (damaged, edited) is refused by name, as a damaged pitch is.
    const edited = join(dir, 'contour-edited.voice.safetensors');
    const latents = decodeSafetensors(readFileSync(file), 'voice').arrays[0].data as Float32Array;
    writeFileSync(edited, encodeVoiceFile(latents, { ...info, logRate: 'fast' }));
    const damaged = await runCli(['synthesize', '--checkpoint', out, '--voice', edited, '--out', wav('no'), ...say]);
    assert.equal(damaged.code, 2, damaged.stderr);
    assert.equal(damaged.json.error.code, 'SYNTH_VOICE_FILE');
    assert.match(damaged.json.error.message, /its header's speaking rate \(logRate "fast"\) is damaged/);
    assertNoStackTrace(damaged);
    // --pitch speaks the voice at another median F0: the result says which, and its own.
    const up = ['--speaker', 'alice', '--pitch', '+5st', '--out', wav('higher')];
    const higher = await runCli(['synthesize', '--checkpoint', out, ...up, ...say]);
    assert.equal(higher.code, 0, higher.stderr);
    const raised = Math.round(Math.exp(pitch.get('voice-pitch/alice')! + (5 * Math.LN2) / 12) * 10) / 10;
    assert.deepEqual(higher.json.result.pitch, { hz: raised, voiceHz: hz });
    assert.ok(!readFileSync(wav('higher')).equals(readFileSync(wav('speaker'))), 'another pitch, another WAV');
    // A model that reads no pitch refuses it by name, before any work; a pitch that is not one is a usage error.
    for (const [checkpoint, value, code, why] of [
      [runDir, '200', 'SYNTH_PITCH', /this model reads no pitch/],
      [out, 'high', 'USAGE', /give a median F0 in Hz/],
    ] as const) {
      const args = ['--checkpoint', checkpoint, '--pitch', value, '--out', wav('no')];
      const refused = await runCli(['synthesize', ...args, ...say]);
      assert.equal(refused.code, 2, refused.stderr);
      assert.equal(refused.json.error.code, code);
      assert.match(refused.json.error.message, why);
      assertNoStackTrace(refused);
      assert.ok(!existsSync(wav('no')));
    }
  });

  test('batching.reference_join fills a window longer than the clips with more of the voice', async () => {
    // 400 frames (4.6 s) against clips of 1-2 s: padded, or joined from the speaker's other clips.
    const frames = ['--set', 'batching.reference_frames=400'];
    assert.equal((await train('padded', ...frames)).code, 0);
    const joined = await train('joined', ...frames, '--set', 'batching.reference_join=true');
    assert.equal(joined.code, 0, joined.stderr.slice(-2000));
    const first = (out: string) => readFileSync(join(dir, 'runs', out, 'metrics.jsonl'), 'utf8').split('\n')[0];
    assert.notEqual(first('joined'), first('padded'));
  });
});
