// IPA phonemes from one long-lived espeak-ng process per phonemizer (per worker), never a process
// per sentence. espeak-ng reads stdin line by line when its stdout is line-buffered (stdbuf -oL);
// after each request a sentinel line is written, so the output of a request is exactly the lines
// read before the sentinel's known IPA — robust to espeak splitting a sentence into clauses.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { ExitCode, XttsError } from '../../errors.js';

/** espeak-ng voices for language codes (espeak-ng --voices). */
const VOICES: Record<string, string> = { en: 'en-us', 'en-gb': 'en-gb', pt: 'pt', 'pt-br': 'pt-br', fr: 'fr-fr', es: 'es', de: 'de', it: 'it', nl: 'nl', pl: 'pl', tr: 'tr', cs: 'cs', ru: 'ru', uk: 'uk', ar: 'ar', zh: 'cmn', ja: 'ja', ko: 'ko', hu: 'hu', hi: 'hi', el: 'el', he: 'he' };
const SENTINEL = 'zyzzyva';

export function espeakVoice(language: string): string {
  return VOICES[language] ?? language;
}

export function espeakVersion(command = 'espeak-ng'): string {
  const r = spawnSync(command, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new XttsError('PHONEMIZER_MISSING', `text.tokenizer is phonemes but ${command} cannot be run (${r.error ? (r.error as NodeJS.ErrnoException).code : `exit ${r.status}`})`, {
      exitCode: ExitCode.environment,
      suggestions: ['install it: apt-get install espeak-ng', 'or set text.phonemizer_command to its path, or text.tokenizer: characters'],
    });
  }
  return (/\d+\.\d+(\.\d+)?/.exec(r.stdout)?.[0] ?? r.stdout.trim()).trim();
}

interface Voice {
  proc: ChildProcessWithoutNullStreams;
  lines: Interface;
  queue: ((line: string) => void)[];
  sentinel: string;
}

export class Phonemizer {
  readonly identity: string;
  /** Processes started so far (one per language voice). */
  spawned = 0;
  private readonly voices = new Map<string, Promise<Voice>>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(readonly command = 'espeak-ng') {
    this.identity = `espeak-ng@${espeakVersion(command)}`;
  }

  private start(language: string): Promise<Voice> {
    let v = this.voices.get(language);
    if (v) return v;
    v = (async () => {
      const proc = spawn('stdbuf', ['-oL', this.command, '-q', '--ipa=3', '-v', espeakVoice(language)], { stdio: ['pipe', 'pipe', 'pipe'] });
      this.spawned++;
      const voice: Voice = { proc, lines: createInterface({ input: proc.stdout }), queue: [], sentinel: '' };
      voice.lines.on('line', (line) => voice.queue.shift()?.(line));
      let stderr = '';
      proc.stderr.on('data', (d) => (stderr += d));
      proc.on('error', () => undefined);
      const first = await new Promise<string>((resolve, reject) => {
        voice.queue.push(resolve);
        proc.once('exit', (code) => reject(new XttsError('PHONEMIZER_FAILED', `espeak-ng (voice ${espeakVoice(language)}) exited with ${code}: ${stderr.trim()}`, { exitCode: ExitCode.environment, suggestions: ['check that the voice exists: espeak-ng --voices'] })));
        proc.stdin.write(`${SENTINEL}\n`);
      });
      voice.sentinel = first.trim();
      return voice;
    })();
    this.voices.set(language, v);
    return v;
  }

  /** IPA for one text (one line; newlines become spaces). Calls are serialised per phonemizer. */
  phonemize(text: string, language: string): Promise<string> {
    const run = this.chain.then(async () => {
      const voice = await this.start(language);
      const out: string[] = [];
      return new Promise<string>((resolve) => {
        const onLine = (line: string) => {
          if (line.trim() === voice.sentinel) resolve(out.join(' ').replace(/\s+/g, ' ').trim());
          else {
            out.push(line.trim());
            voice.queue.unshift(onLine);
          }
        };
        voice.queue.push(onLine);
        voice.proc.stdin.write(`${text.replace(/\s+/g, ' ')}\n${SENTINEL}\n`);
      });
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  close(): void {
    for (const v of this.voices.values()) void v.then((voice) => voice.proc.stdin.end()).catch(() => undefined);
    this.voices.clear();
  }
}
