import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import {
  announcePipes,
  ExitCode,
  plural,
  onStopSignals,
  positiveNumberFlag,
  readToEnd,
  requireRegularFile,
  SIGNAL_EXIT,
  type StopSignal,
  unreadableWhy,
  XttsCommand,
  XttsError,
} from '@xtts/core';
import { BACKENDS } from '@xtts/core/config';
import { splitLines, utf16Encoding } from '@xtts/core/data';
import { paint, ProgressLine } from '@xtts/core/render';
import type { SynthesisText, SynthesizedUtterance, SynthesizeResult } from '@xtts/core/training';

/** The shortest --max-seconds: a word takes longer (a mistaken 0.01, milliseconds meant, made 1-frame WAVs). */
const MIN_MAX_SECONDS = 0.1;

export default class Synthesize extends XttsCommand<SynthesizeResult> {
  /** The signal that stopped the synthesis early, if one did: its exit status. */
  private stopSignal: StopSignal | undefined;

  static override summary =
    'Turn text into WAVs with a trained checkpoint, in a trained voice or one cloned from clips.';
  static override description =
    'One text with --text and --out, or many with --texts FILE (one per line; blank ' +
    'lines are skipped) and --out-dir DIR, which gets line-0001.wav, line-0002.wav, ' +
    '… and synthesis.json. Texts are decoded in batches; a text the model cannot ' +
    'speak is reported with its line and skipped, and the others are spoken. Ctrl-C ' +
    '(SIGINT), SIGTERM or SIGHUP ends it after the WAV being written, with the summary of ' +
    'the texts spoken (exit 130, 143, 129); a second signal exits at once.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --checkpoint runs/quickstart --text "The quick brown fox." --out fox.wav',
    '<%= config.bin %> <%= command.id %> --checkpoint ' +
      'runs/small/checkpoints/step-00100000 --text "Guten Tag." --language de ' +
      '--reference speaker.wav --out out.wav',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/voices --speaker p225 --text "Hello." --out hello.wav',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/quickstart --texts sentences.txt --out-dir spoken/',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/quickstart --vocoder runs/vocoder-tiny ' +
      '--text "Hello." --out hello.wav',
  ];
  static override flags = {
    checkpoint: Flags.string({
      summary: 'A run folder (its latest checkpoint) or one checkpoint folder.',
      required: true,
      helpValue: 'DIR',
    }),
    text: Flags.string({ summary: 'What to say.', exactlyOne: ['text', 'texts'] }),
    out: Flags.string({ summary: 'Output WAV (with --text).', helpValue: 'WAV', dependsOn: ['text'] }),
    texts: Flags.string({
      summary: 'A UTF-8 file of texts, one per line (- reads standard input).',
      helpValue: 'FILE',
      exactlyOne: ['text', 'texts'],
    }),
    'out-dir': Flags.string({
      summary: 'Folder for the WAVs (with --texts); must exist.',
      helpValue: 'DIR',
      dependsOn: ['texts'],
    }),
    language: Flags.string({ summary: "Language code (default: the config's dataset.language)." }),
    reference: Flags.string({
      summary:
        'A clip of the voice to imitate (3–10 s is best); give it once per clip for several clips of one voice ' +
        '(default: the mean of the trained voices).',
      helpValue: 'WAV',
      multiple: true,
      exclusive: ['speaker', 'voice'],
    }),
    speaker: Flags.string({
      summary: "Speak in a trained speaker's voice, by the name the dataset gave them (`xtts voices` lists them).",
      helpValue: 'NAME',
      exclusive: ['reference', 'voice'],
    }),
    voice: Flags.string({
      summary: 'Speak in a voice saved by `xtts voices --out`.',
      helpValue: 'FILE',
      exclusive: ['reference', 'speaker'],
    }),
    backend: Flags.string({
      summary: 'TensorFlow.js backend.',
      options: [...BACKENDS],
      default: 'auto',
      env: 'XTTS_BACKEND',
    }),
    'max-seconds': positiveNumberFlag(
      '--max-seconds',
      'seconds',
      'Longest output per text, in seconds (default: limits.max_audio_s; model.max_mel_frames caps it).',
    ),
    overwrite: Flags.boolean({
      summary:
        'Replace output WAVs (and synthesis.json) that exist already; without it, an ' +
        'existing one is refused before any work.',
      default: false,
    }),
    pitch: Flags.string({
      summary:
        'Speak the voice at this median F0 instead of its own: Hz (180) or semitones (+3st, -2st); for a model ' +
        'trained with model.pitch_contour (or speaker_pitch, with --reference).',
      helpValue: 'HZ|±Nst',
    }),
    'batch-size': Flags.integer({ summary: 'Texts decoded together.', min: 1, max: 256, default: 16 }),
    vocoder: Flags.string({
      summary:
        'A vocoder run folder (`xtts train` with task: vocoder) or one of its checkpoints: it makes the WAVs ' +
        "(default: the checkpoint config's vocoder.checkpoint, else Griffin-Lim); griffin-lim: Griffin-Lim's WAVs.",
      helpValue: 'DIR',
    }),
  };

  protected async execute(): Promise<SynthesizeResult> {
    const { flags } = await this.parse(Synthesize);
    const usage = (message: string) =>
      new XttsError('USAGE', message, {
        exitCode: ExitCode.usage,
        suggestions: ['see --help for the flags this command takes'],
      });
    const maxSeconds = flags['max-seconds'];
    if (maxSeconds !== undefined && maxSeconds < MIN_MAX_SECONDS)
      throw usage(
        `--max-seconds ${maxSeconds} allows ${Math.round(maxSeconds * 1000)} ms a text, shorter than any word (it ` +
          `counts seconds): give the longest output you want, at least ${MIN_MAX_SECONDS} (e.g. --max-seconds 20)`,
      );
    let texts: SynthesisText[];
    // synthesize() checks every WAV's folder before it loads the model; an --out that names a folder
    // would pass that check and fail only after synthesis.
    if (flags.text !== undefined) {
      // An empty --text (an unset shell variable) was refused later as text that cleaning had emptied.
      if (flags.text.trim() === '')
        throw usage(`--text is ${flags.text === '' ? 'empty' : 'blank'}: give the words to say (--text "Hello.")`);
      if (!flags.out) throw usage('--text needs --out, the WAV to write');
      if (existsSync(flags.out) && statSync(flags.out).isDirectory())
        throw usage(`--out ${flags.out} is a folder: name the WAV file to write`);
      if (!/\.wav$/i.test(flags.out))
        throw usage(
          `--out ${flags.out}: xtts writes WAV; name the file .wav (sox or ffmpeg converts a WAV to other formats)`,
        );
      texts = [{ text: flags.text, out: flags.out }];
    } else {
      if (!flags['out-dir']) throw usage('--texts needs --out-dir, the folder for the WAVs');
      texts = readTexts(flags.texts!, flags['out-dir']);
    }
    const { synthesize } = await import('@xtts/core/training');
    announcePipes('--reference', flags.reference ?? []);
    const summaryFile = flags['out-dir'] ? join(flags['out-dir'], 'synthesis.json') : undefined;
    const earlier = summaryFile && flags.overwrite ? earlierWavs(summaryFile) : [];
    // Ctrl-C (or SIGTERM, SIGHUP) ends the synthesis after the WAV being written, and the summary tells the texts
    // spoken; a second signal, or one before the first WAV, exits at once.
    const control = { stop: false };
    let spoken = 0;
    const onSignal = (signal: StopSignal) => {
      if (control.stop || spoken === 0)
        this.exitForSignal(
          signal,
          control.stop ? 'second signal: exiting now, without the summary' : 'no WAV written yet: exiting now',
        );
      this.stopSignal = signal;
      control.stop = true;
      this.tellSignal(
        signal,
        `finishing this WAV; ${plural(spoken, 'text')} spoken so far (a second signal quits at once)`,
      );
    };
    const stopListening = onStopSignals(onSignal);
    // --texts: each WAV as it is written, on stderr (a bar on a terminal, a line each elsewhere); stdout lists them all
    // at the end, as for one text.
    const bar = new ProgressLine('speaking', 'texts');
    const started = performance.now();
    const progress = (u: SynthesizedUtterance) => {
      if (this.jsonEnabled() || texts.length < 2) return;
      if (bar.enabled) bar.update(spoken, texts.length, performance.now() - started);
      else process.stderr.write(`spoken ${spoken}/${texts.length}: ${u.out} (${u.durationS.toFixed(2)} s)\n`);
    };
    const result = await synthesize({
      checkpoint: flags.checkpoint,
      texts,
      language: flags.language,
      references: flags.reference,
      speaker: flags.speaker,
      voiceFile: flags.voice,
      backend: flags.backend as never,
      maxSeconds: flags['max-seconds'],
      batchSize: flags['batch-size'],
      summaryFile,
      overwrite: flags.overwrite,
      vocoder: flags.vocoder,
      pitch: flags.pitch,
      control,
      onUtterance: (u) => {
        spoken++;
        progress(u);
      },
    }).finally(() => {
      stopListening();
      bar.finish();
    });
    for (const w of result.warnings) this.addWarning(w);
    for (const s of result.skipped) this.addWarning(`${s.where ? `${s.where}: ` : ''}not spoken: ${s.reason}`);
    // The earlier synthesis's WAVs of the texts not reached are left: they are not this one's to judge.
    if (this.warnCutShort(result, summaryFile)) return result;
    // --overwrite replaces the earlier synthesis in --out-dir: its WAVs this one did not write again go too (a
    // folder of three lines' WAVs and a summary of one would be two syntheses mixed).
    const written = new Set(result.utterances.map((u) => resolve(u.out)));
    const stale = earlier.filter((f) => !written.has(f) && existsSync(f));
    for (const f of stale) rmSync(f, { force: true });
    if (stale.length)
      this.addWarning(
        `removed ${stale.length} WAV${stale.length === 1 ? '' : 's'} of the earlier synthesis in ${flags['out-dir']} ` +
          `that this one did not write again (${stale.map((f) => basename(f)).join(', ')})`,
      );
    return result;
  }

  /**
   * Warns of a synthesis that ended before its last text (a WAV that could not be written, a stop signal): how many
   * were spoken and where they are listed. True where it was cut short.
   */
  private warnCutShort(result: SynthesizeResult, summaryFile: string | undefined): boolean {
    const spoken = result.utterances.length;
    if (result.writeFailed) {
      // A WAV that could not be written (a full disk) ended the synthesis: what was written stays, and is listed.
      const f = result.writeFailed;
      this.addWarning(
        `${f.message}: the synthesis stopped there, ${spoken} of ${spoken + (result.unspoken ?? 0)} texts spoken` +
          (summaryFile && !result.summaryFailed ? ` (${summaryFile} lists them)` : '') +
          (result.summaryFailed ? `; the summary could not be written either: ${result.summaryFailed}` : '') +
          ` — ${f.suggestions.join('; ')}`,
      );
      return true;
    }
    if (result.unspoken === undefined || !this.stopSignal) return false;
    this.addWarning(
      `${this.stopSignal} stopped the synthesis: ${spoken} of ${spoken + result.unspoken} texts spoken, ` +
        `${result.unspoken} not${summaryFile ? ` (${summaryFile} lists those spoken)` : ''}`,
    );
    return true;
  }

  protected override exitCodeFor(r: SynthesizeResult): number {
    if (this.stopSignal) return SIGNAL_EXIT[this.stopSignal];
    if (r.writeFailed) return r.writeFailed.exitCode;
    return r.skipped.length > 0 ? ExitCode.findings : ExitCode.ok;
  }

  protected override errorFor(r: SynthesizeResult, code: number): XttsError {
    const f = r.writeFailed;
    if (!f) return super.errorFor(r, code);
    return new XttsError(
      f.code,
      `${f.message}: the synthesis stopped there, ${plural(r.utterances.length, 'text')} spoken (in the result)`,
      { exitCode: code as ExitCode, suggestions: f.suggestions },
    );
  }

  protected render(r: SynthesizeResult): void {
    const cut: Record<NonNullable<SynthesizedUtterance['cutBy']>['bound'], string> = {
      max_seconds: 'at --max-seconds: raise it',
      max_audio_s: 'at limits.max_audio_s, the default for --max-seconds: pass --max-seconds to allow more',
      max_mel_frames: "at the model's longest output (model.max_mel_frames): split the text into shorter ones",
    };
    for (const u of r.utterances)
      this.log(
        paint.ok(
          `wrote ${u.out}: ${u.durationS.toFixed(2)} s (${u.frames} mel frames` +
            `${u.pieces ? `; too long to read at once, spoken in ${u.pieces} pieces of whole sentences` : ''}` +
            `${u.cutBy ? `, cut ${cut[u.cutBy.bound]}` : ''})`,
        ),
      );
    this.log(
      paint.dim(
        `${r.utterances.length} text${r.utterances.length === 1 ? '' : 's'} ` +
          `in ${(r.synthesisMs / 1000).toFixed(1)} s on ${r.backend}; ` +
          `checkpoint ${r.checkpoint} (step ${r.step}); WAVs by ` +
          (r.vocoder.kind === 'neural'
            ? `the neural vocoder ${r.vocoder.checkpoint} (step ${r.vocoder.step})`
            : `Griffin-Lim (${r.vocoder.iterations} iterations)`) +
          `; voice: ${describeVoice(r.voice)}` +
          (r.pitch ? `, at ${r.pitch.hz} Hz${r.pitch.voiceHz ? ` (its own: ${r.pitch.voiceHz} Hz)` : ''}` : ''),
      ),
    );
    if (r.utterances.length === 1) this.log(paint.dim(`text as spoken: "${r.utterances[0].cleanedText}"`));
  }
}

function describeVoice(v: SynthesizeResult['voice']): string {
  switch (v.kind) {
    case 'reference':
      return v.clips.length === 1 ? v.clips[0] : `${v.clips.length} clips averaged`;
    case 'speaker':
      return `trained speaker ${v.speaker}`;
    case 'file':
      return `${v.file} (${v.source})`;
    case 'average':
      if (v.speakers === 1) return 'the one trained voice';
      return v.speakers > 0 ? `the mean of ${v.speakers} trained voices` : "the dataset's average spectrum";
  }
}

/**
 * The non-blank lines of a texts file, each with its WAV in `outDir` and its place for messages. A binary file (a NUL
 * byte) or a line that is not UTF-8 is refused naming the line, before any work.
 */
function readTexts(file: string, outDir: string): SynthesisText[] {
  let read: ReturnType<typeof splitLines>;
  try {
    // Standard input (`-`, /dev/stdin: read from its descriptor, which may be a socket no path opens) and pipes
    // (`<(…)`, a named pipe) are read once, and wait for their writer: said, not silent.
    const stdin = file === '-' || file === '/dev/stdin';
    if (stdin) process.stderr.write('reading --texts from standard input (until it ends)\n');
    else announcePipes('--texts', [file]);
    const bytes = readTextBytes(file, stdin);
    const utf16 = utf16Encoding(bytes);
    if (utf16) throw Object.assign(new Error(utf16), { code: 'UTF16' });
    if (bytes.includes(0)) throw Object.assign(new Error('binary'), { code: 'BINARY' });
    read = splitLines(bytes);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'UTF16'
        ? `it is ${(e as Error).message} text, not UTF-8: convert it, e.g. iconv -f UTF-16 -t UTF-8 ${file} > texts.txt`
        : code === 'BINARY'
          ? 'it is a binary file (it holds NUL bytes), not text'
          : code === 'TOO_LARGE'
            ? `it holds more than ${MAX_TEXTS_BYTES >> 20} MiB of text (it was not read further): split it`
            : unreadableWhy(e);
    throw new XttsError('SYNTH_TEXTS_UNREADABLE', `cannot read --texts ${file}: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['pass a UTF-8 text file with one sentence per line'],
    });
  }
  const [line, bad] = [...read.notUtf8][0] ?? [];
  if (bad)
    throw new XttsError(
      'SYNTH_TEXTS_NOT_UTF8',
      `${file}:${line + 1} is not UTF-8 (byte ${bad.at + 1} of the line; as Latin-1 it reads "${bad.asLatin1}")`,
      {
        exitCode: ExitCode.usage,
        position: { file, line: line + 1 },
        suggestions: [
          `save the file as UTF-8, e.g. iconv -f LATIN1 -t UTF-8 ${file} > ${file}.utf8 (if it is Latin-1)`,
        ],
      },
    );
  const texts: SynthesisText[] = [];
  // Numbered as wide as the last line's number needs (at least 4 digits), so that the names sort in line order.
  const width = Math.max(4, String(read.lines.length).length);
  read.lines.forEach((text, i) => {
    if (text.trim() !== '')
      texts.push({
        text: text.trim(),
        out: join(outDir, `line-${String(i + 1).padStart(width, '0')}.wav`),
        where: `${file}:${i + 1}`,
      });
  });
  if (texts.length === 0)
    throw new XttsError('SYNTH_NO_TEXT', `--texts ${file} has no text (every line is blank)`, {
      exitCode: ExitCode.usage,
      suggestions: ['write one sentence per line'],
    });
  return texts;
}

/** The most --texts reads: 64 MiB is about 600,000 sentences; a device (/dev/zero) would otherwise fill memory. */
const MAX_TEXTS_BYTES = 64 << 20;

/**
 * The bytes of --texts: a regular file, a named pipe or standard input, up to MAX_TEXTS_BYTES (past it, an error coded
 * TOO_LARGE); a device, socket or folder is refused unread (requireRegularFile's error). Standard input may be
 * non-blocking (a pipe from a program still writing): EAGAIN waits for more, not an error.
 */
function readTextBytes(file: string, stdin: boolean): Buffer {
  const tooLarge = () => Object.assign(new Error('too large'), { code: 'TOO_LARGE' });
  if (!stdin && !statSync(file).isFIFO()) {
    requireRegularFile(file);
    if (statSync(file).size > MAX_TEXTS_BYTES) throw tooLarge();
    return readFileSync(file);
  }
  const fd = stdin ? 0 : openSync(file, 'r');
  try {
    const bytes = readToEnd(fd, MAX_TEXTS_BYTES);
    if (!bytes) throw tooLarge();
    return bytes;
  } finally {
    if (!stdin) closeSync(fd);
  }
}

/**
 * The WAVs an earlier synthesis into the same folder wrote (its synthesis.json's utterances), as absolute paths: only
 * line-NNNN.wav files in that folder, whatever the summary says; none where there is no readable summary.
 */
function earlierWavs(summaryFile: string): string[] {
  try {
    const earlier = JSON.parse(readFileSync(summaryFile, 'utf8')) as { utterances?: { out?: unknown }[] };
    const folder = resolve(dirname(summaryFile));
    // Its paths are as given where it ran (relative to that folder, maybe another): its WAVs are named in this one.
    return (earlier.utterances ?? [])
      .map((u) => (typeof u.out === 'string' ? basename(u.out) : ''))
      .filter((name) => /^line-\d{4,}\.wav$/.test(name))
      .map((name) => join(folder, name));
  } catch {
    return [];
  }
}
