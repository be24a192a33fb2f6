// Rules on the text front end: every language the model learns must be one its cleaner reads
// (numbers and abbreviations in that language) and, for phoneme models, one espeak-ng speaks.
import { CLEANER_LANGUAGES, cleanerClaims, espeakLanguages, espeakVoice, isKnownLanguage } from '../data/index.js';
import { at, type Draft, type Rule } from './rule-context.js';

const primary = (code: string) => code.split('-')[0].toLowerCase();

export const textLanguagesRule: Rule = {
  id: 'text/languages',
  tasks: ['acoustic'],
  title: 'Every language is one xtts knows and the cleaner reads',
  severity: 'error',
  rationale:
    'A cleaner reads numbers, dates and abbreviations in the languages it knows; any other text is read ' +
    'wrongly ("3 Hunde" as "three hunde") or keeps its digits, and the model learns that. A language ' +
    'code nobody speaks is a typo that would skip every row of the language.',
  check(ctx) {
    const { cleaners, languages } = ctx.config.text;
    const claimed = CLEANER_LANGUAGES[cleaners];
    const out: Draft[] = [];
    const known = languages.filter((code) => isKnownLanguage(code));
    for (const [i, code] of languages.entries()) {
      if (isKnownLanguage(code)) continue;
      out.push(
        at(
          ctx,
          `text.languages.${i}`,
          'error',
          `text.languages: ${code} is not a language code xtts knows (ISO 639-1, or cmn, yue, fil, haw)`,
          `languages: [${(known.length ? known : ['en']).join(', ')}]   # each language's ISO code`,
        ),
      );
    }
    const unread = known.filter((code) => !cleanerClaims(cleaners, code));
    if (unread.length === 0) return out;
    const fix =
      cleaners === 'english' && unread.every((l) => cleanerClaims('multilingual', l))
        ? 'cleaners: multilingual   # reads each row in its own language'
        : 'cleaners: basic   # keeps the text as written, digits included; or drop those languages';
    out.push(
      at(
        ctx,
        'text.cleaners',
        'error',
        `the ${cleaners} cleaner does not read ${unread.join(', ')} (text.languages): it reads ` +
          `${(claimed as readonly string[]).join(', ')}` +
          (cleaners === 'english' ? ', and would read German "3 Hunde" as "three hunde"' : ''),
        fix,
      ),
    );
    return out;
  },
};

export const textEspeakRule: Rule = {
  id: 'text/espeak-voices',
  tasks: ['acoustic'],
  title: 'espeak-ng speaks every language of a phoneme model',
  severity: 'error',
  environment: true,
  rationale:
    'Phonemes come from espeak-ng; a language it has no voice for fails at the first row, after the ' +
    'model and the device were set up.',
  check(ctx) {
    const { tokenizer, languages, phonemizer_command: command } = ctx.config.text;
    if (tokenizer !== 'phonemes') return [];
    const voices = espeakLanguages(command);
    if (!voices)
      return [
        at(
          ctx,
          'text.phonemizer_command',
          'error',
          `text.tokenizer is phonemes but \`${command} --voices\` cannot be run`,
          'apt-get install espeak-ng   # or set text.phonemizer_command, or use tokenizer: characters',
        ),
      ];
    return languages.flatMap((code, i) => {
      const voice = espeakVoice(code);
      if (voices.has(voice.toLowerCase())) return [];
      const near = [...voices].filter((v) => v.split('-')[0] === primary(code)).slice(0, 8);
      return [
        at(
          ctx,
          `text.languages.${i}`,
          'error',
          `espeak-ng (${command}) has no voice for ${code} (it looked for ${voice})` +
            (near.length
              ? `; it has ${near.join(', ')}`
              : `; it speaks ${voices.size} languages, none of them ${code}`),
          near.length ? `languages: [${near[0]}]` : 'tokenizer: characters   # or drop the language',
        ),
      ];
    });
  },
};
