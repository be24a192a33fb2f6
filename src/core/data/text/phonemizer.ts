// IPA phonemes from long-lived espeak-ng processes: one per voice per phonemizer (a worker that
// phonemizes English only runs exactly one), never one per sentence.
//
// How requests are matched to outputs. Run without a text argument, espeak-ng reads stdin one line
// at a time and synthesizes each line on its own (espeak-ng.c, `flag_stdin == 2`: fgets into a
// 1000-byte buffer, one espeak_Synth per line), printing one IPA line per clause. Its stdout is a
// pipe, so stdio would hold the output back until 4 KiB had gathered; `stdbuf -oL` makes it
// line-buffered. After each piece of text we write a two-line sentinel: an empty line, which espeak-ng
// answers with an empty line at almost no cost, then the letter "q", whose IPA we learn when the
// process starts. Everything printed before that pair belongs to the piece. A piece could only fake
// the pair by printing an empty clause followed by a clause that is exactly "q" — it would need a
// clause boundary inside it, and pieces are cut at every mark espeak-ng ends a clause on. A single
// sentinel word would not do: a row that is that word shifts every later answer by one. Requests
// are pipelined: many can be in flight, answered in the order they were written.
//
// Punctuation. espeak-ng drops punctuation from its IPA, but pauses and question intonation are
// worth keeping for the model, so the text is split at punctuation runs, the words between them are
// phonemized, and the punctuation is put back: "Hello, world." -> "həlˈoʊ, wˈɜːld." (the approach of
// the `phonemizer` Python package's preserve_punctuation, which Coqui TTS uses).
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ExitCode, XttsError } from '../../errors.js';

/**
 * Bump when anything below changes what phonemize() returns for the same espeak-ng: the voice map,
 * the arguments, punctuation handling or post-processing. It is part of `identity`.
 */
const PHONEMIZER_VERSION = 'xtts-phonemes@2';

/**
 * espeak-ng voices for language codes (see `espeak-ng --voices`). Codes not listed are passed to
 * espeak-ng as they are: it knows most ISO 639-1 codes as voices, and falls back from a region it
 * has no voice for to the language ("de-at" is read with "de").
 */
const VOICES: Record<string, string> = {
  en: 'en-us',
  'en-us': 'en-us',
  'en-gb': 'en-gb',
  'en-uk': 'en-gb',
  fr: 'fr-fr',
  'fr-fr': 'fr-fr',
  'fr-be': 'fr-be',
  'fr-ch': 'fr-ch',
  // XTTS's "pt" data (Common Voice and most public corpora) is mostly Brazilian Portuguese.
  pt: 'pt-br',
  'pt-br': 'pt-br',
  'pt-pt': 'pt',
  es: 'es',
  'es-es': 'es',
  'es-419': 'es-419',
  'es-mx': 'es-419',
  zh: 'cmn',
  'zh-cn': 'cmn',
  'zh-tw': 'cmn',
  cmn: 'cmn',
  yue: 'yue',
  'zh-hk': 'yue',
  no: 'nb',
  nb: 'nb',
  nn: 'nb',
  fil: 'tl',
  tl: 'tl',
};

/**
 * Arguments for every process. `-q`: no audio. `-b 1`: the input is UTF-8. `--ipa`: IPA without tie
 * or separator characters, so each IPA code point is one token. `-s 449`: espeak-ng still
 * synthesizes the waveform it does not play, and a faster rate makes less of it — about twice the
 * throughput of the default 175 wpm on this machine with byte-identical IPA; above 450 wpm it
 * switches to the sonic speed-up, which costs more again.
 */
const ESPEAK_ARGS = ['-q', '-b', '1', '--ipa', '-s', '449'];
const SENTINEL = '\nq\n';
/** espeak-ng reads lines with fgets into 1000 bytes; longer lines are split mid-word, so we split first. */
const MAX_LINE_BYTES = 900;
/** Language switches espeak-ng marks in its output, e.g. "(en)ɡˈuːɡəl(ru)" for "Google" in Russian. */
const LANGUAGE_SWITCH = /\([a-z]{2,3}(?:-[a-z0-9]+)*\)/g;
/**
 * Punctuation kept in the output: runs of sentence and clause marks, brackets and quotes, and dashes
 * that stand between spaces. Hyphens and apostrophes inside words stay with the word.
 */
const PUNCTUATION_RUN = /\s*(?:[.,;:!?¡¿…"«»“”„()[\]{}。、，：；！？،؛؟।॥]|(?<=^|\s)[-–—]+(?=\s|$))+\s*/gu;

export function espeakVoice(language: string): string {
  const code = language.toLowerCase();
  return VOICES[code] ?? VOICES[code.split('-')[0]] ?? code;
}

function missing(command: string, why: string): XttsError {
  return new XttsError('PHONEMIZER_MISSING', `text.tokenizer is phonemes but ${command} cannot be run (${why})`, {
    exitCode: ExitCode.environment,
    suggestions: [
      'install it: apt-get install espeak-ng',
      'or set text.phonemizer_command to the espeak-ng executable',
      'or use text.tokenizer: characters',
    ],
  });
}

/** espeak-ng's version ("1.51"); a clear XttsError when it cannot be run. */
export function espeakVersion(command = 'espeak-ng'): string {
  const r = spawnSync(command, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw missing(
      command,
      r.error
        ? ((r.error as NodeJS.ErrnoException).code ?? r.error.message)
        : `exit ${r.status}: ${(r.stderr ?? '').trim()}`,
    );
  }
  return (/\d+\.\d+(?:\.\d+)?(?:-[\w.]+)?/.exec(r.stdout)?.[0] ?? r.stdout.trim()).trim();
}

/**
 * The voices (language names such as "en-us", "de", "cmn") the espeak-ng at `command` speaks, from
 * `--voices`; undefined when it cannot be run (the caller says so: this is a question, not a check).
 */
export function espeakLanguages(command = 'espeak-ng'): Set<string> | undefined {
  const r = spawnSync(command, ['--voices'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status !== 0) return undefined;
  const out = new Set<string>();
  for (const line of r.stdout.split('\n').slice(1)) {
    const language = line.trim().split(/\s+/)[1];
    if (language) out.add(language.toLowerCase());
  }
  return out;
}

/** A run of words (phonemized) or of punctuation (kept as written) in a text to phonemize. */
export interface PhonemePiece {
  kind: 'words' | 'punctuation';
  text: string;
}

/** Split at punctuation runs; word pieces keep their inner hyphens and apostrophes. */
export function splitPunctuation(text: string): PhonemePiece[] {
  const pieces: PhonemePiece[] = [];
  let last = 0;
  for (const m of text.matchAll(PUNCTUATION_RUN)) {
    if (m[0].length === 0) continue;
    if (m.index! > last) pieces.push({ kind: 'words', text: text.slice(last, m.index) });
    pieces.push({ kind: 'punctuation', text: m[0] });
    last = m.index! + m[0].length;
  }
  if (last < text.length) pieces.push({ kind: 'words', text: text.slice(last) });
  return pieces;
}

/** Lines of at most MAX_LINE_BYTES UTF-8 bytes, cut at spaces where there are any. */
function lines(words: string): string[] {
  if (Buffer.byteLength(words) <= MAX_LINE_BYTES) return [words];
  const out: string[] = [];
  let line = '';
  let bytes = 0;
  const flush = () => {
    if (line.trim()) out.push(line.trim());
    line = '';
    bytes = 0;
  };
  for (const token of words.split(/(?<= )/)) {
    const tokenBytes = Buffer.byteLength(token);
    if (bytes + tokenBytes > MAX_LINE_BYTES) flush();
    if (tokenBytes <= MAX_LINE_BYTES) {
      line += token;
      bytes += tokenBytes;
      continue;
    }
    // One "word" longer than a line (scripts written without spaces): cut between code points.
    for (const ch of token) {
      const b = Buffer.byteLength(ch);
      if (bytes + b > MAX_LINE_BYTES) flush();
      line += ch;
      bytes += b;
    }
  }
  flush();
  return out;
}

interface Pending {
  lines: string[];
  resolve: (lines: string[]) => void;
  reject: (e: Error) => void;
}

/** One espeak-ng process for one voice, with the answers it still owes in order. */
class VoiceProcess {
  readonly proc: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private sentinelIpa: string | undefined;
  /** An empty line was read that may be the first half of the sentinel. */
  private heldBlank = false;
  private stderr = '';
  private failure: Error | undefined;
  readonly ready: Promise<void>;

  constructor(
    command: string,
    stdbuf: string,
    readonly voice: string,
  ) {
    this.proc = spawn(stdbuf, ['-oL', command, ...ESPEAK_ARGS, '-v', voice], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stdin.setDefaultEncoding('utf8');
    createInterface({ input: this.proc.stdout, crlfDelay: Infinity }).on('line', (line) => this.onLine(line));
    this.proc.stderr.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-2000)));
    this.proc.stdin.on('error', () => undefined); // reported through 'exit' with stderr
    this.proc.on('error', (e) => this.fail(e));
    this.proc.on('exit', (code, signal) => this.fail(new Error(`exited with ${signal ?? code}`)));
    // The first answer is the sentinel's own IPA, learned rather than hard-coded (it depends on the voice).
    this.ready = new Promise<void>((resolve, reject) => {
      this.pending.push({ lines: [], resolve: ([ipa]) => ((this.sentinelIpa = ipa.trim()), resolve()), reject });
      this.write(SENTINEL);
    });
  }

  private onLine(line: string): void {
    const head = this.pending[0];
    if (!head) return;
    if (this.sentinelIpa === undefined) {
      // Starting: the answer to the sentinel alone is the empty line, then the IPA of "q".
      if (head.lines.length === 0 && line === '') head.lines.push(line);
      else this.finish([line]);
      return;
    }
    if (this.heldBlank) {
      if (line.trim() === this.sentinelIpa) {
        this.heldBlank = false;
        this.finish(head.lines);
        return;
      }
      head.lines.push('');
      this.heldBlank = line === '';
      if (!this.heldBlank) head.lines.push(line);
    } else if (line === '') this.heldBlank = true;
    else head.lines.push(line);
  }

  private finish(lines: string[]): void {
    const head = this.pending.shift()!;
    head.resolve(lines);
    if (this.pending.length === 0) this.setRef(false);
  }

  private fail(e: Error): void {
    if (this.failure) return;
    const voice = this.voice;
    const detail = this.stderr.trim();
    this.failure = new XttsError(
      'PHONEMIZER_FAILED',
      `espeak-ng (voice ${voice}) ${e.message}${detail ? `: ${detail}` : ''}`,
      {
        exitCode: ExitCode.environment,
        suggestions: [
          `check that the voice exists: espeak-ng --voices | grep -i ${voice.split('-')[0]}`,
          'or remove the language from text.languages',
        ],
        cause: e,
      },
    );
    for (const p of this.pending.splice(0)) p.reject(this.failure);
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Keep Node alive only while answers are owed, so a phonemizer nobody closed cannot hang exit. */
  private setRef(on: boolean): void {
    const handles = [this.proc, this.proc.stdin, this.proc.stdout, this.proc.stderr] as unknown as {
      ref(): void;
      unref(): void;
    }[];
    for (const h of handles) on ? h.ref() : h.unref();
  }

  private write(text: string): void {
    this.setRef(true);
    this.proc.stdin.write(text);
  }

  /** Lines espeak-ng printed for `words` (one or more input lines), in request order. */
  request(words: string): Promise<string[]> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<string[]>((resolve, reject) => {
      this.pending.push({ lines: [], resolve, reject });
      this.write(`${lines(words).join('\n')}\n${SENTINEL}`);
    });
  }

  close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.proc.once('exit', () => resolve());
      // Held open until the exit is seen: an idle process is unref'd, and awaiting it must not let Node stop.
      this.setRef(true);
      this.proc.stdin.end();
    });
  }
}

function findStdbuf(): string {
  for (const candidate of ['stdbuf', 'gstdbuf']) {
    const r = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (!r.error && r.status === 0) return candidate;
  }
  throw new XttsError(
    'PHONEMIZER_MISSING',
    'text.tokenizer is phonemes but stdbuf (GNU coreutils) is not on PATH; it keeps espeak-ng answering line by line',
    {
      exitCode: ExitCode.environment,
      suggestions: [
        'install coreutils (apt-get install coreutils; on macOS brew install coreutils)',
        'or use text.tokenizer: characters',
      ],
    },
  );
}

export class Phonemizer {
  /** Cache-key identity: espeak-ng's version and how we drive it, e.g. "espeak-ng@1.51/xtts-phonemes@2". */
  readonly identity: string;
  readonly espeakVersion: string;
  /** Processes started so far (one per voice used; a restarted voice counts again). */
  spawned = 0;
  private readonly voices = new Map<string, VoiceProcess>();
  private readonly stdbuf: string;
  private closed = false;

  /** Throws XttsError PHONEMIZER_MISSING when espeak-ng (or stdbuf) cannot be run. */
  constructor(readonly command = 'espeak-ng') {
    this.espeakVersion = espeakVersion(command);
    this.stdbuf = findStdbuf();
    this.identity = `espeak-ng@${this.espeakVersion}/${PHONEMIZER_VERSION}`;
  }

  private voiceFor(language: string): VoiceProcess {
    if (this.closed)
      throw new XttsError('PHONEMIZER_CLOSED', 'the phonemizer was closed', { exitCode: ExitCode.environment });
    const voice = espeakVoice(language);
    let v = this.voices.get(voice);
    if (!v || v.failed) {
      v = new VoiceProcess(this.command, this.stdbuf, voice);
      this.spawned++;
      this.voices.set(voice, v);
    }
    return v;
  }

  /** Process ids of the running espeak-ng processes (one per voice). */
  pids(): number[] {
    return [...this.voices.values()].filter((v) => !v.failed).map((v) => v.proc.pid!);
  }

  /**
   * IPA for one text, with its punctuation kept. Calls may overlap: they are written to the
   * voice's process at once and answered in order.
   */
  async phonemize(text: string, language: string): Promise<string> {
    const v = this.voiceFor(language);
    const pieces = splitPunctuation(text.replace(/\s+/g, ' ').trim());
    // Write every piece before awaiting any, so one request is one burst of lines.
    const answers = pieces.map((p) => (p.kind === 'words' && p.text.trim() ? v.request(p.text.trim()) : undefined));
    // Every answer is awaited below; until then, a failure of one must not count as unhandled.
    for (const a of answers) a?.catch(() => undefined);
    await v.ready;
    let out = '';
    for (let i = 0; i < pieces.length; i++) {
      const answer = answers[i];
      const piece = pieces[i].text;
      if (!answer) out += piece;
      else
        out +=
          `${/^\s*/.exec(piece)![0]}` +
          (await answer).join(' ').replace(LANGUAGE_SWITCH, '').trim() +
          `${/\s*$/.exec(piece)![0]}`;
    }
    return out.replace(/\s+/g, ' ').trim();
  }

  /** IPA for many texts of one language, in order: pipelined through the voice's one process. */
  phonemizeBatch(texts: readonly string[], language: string): Promise<string[]> {
    return Promise.all(texts.map((t) => this.phonemize(t, language)));
  }

  /** Ends every process and waits for them to exit. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.voices.values()];
    this.voices.clear();
    await Promise.all(all.map((v) => v.close()));
  }
}
