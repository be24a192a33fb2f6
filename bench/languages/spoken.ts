// What espeak-ng should speak for each sentence: the text as xtts's cleaner reads it in the row's
// language (numbers, dates, times, prices and ordinals spelled out), so that each clip says exactly
// what the model reads. espeak-ng's own reading of "14:30", "3.10.2024" or "12,50 €" differs from the
// cleaner's (and differs by language), which would teach the model clips that do not match their text
// and bias each language's score by how often the two disagree.
//   node --import tsx bench/languages/spoken.ts LANGUAGE IN.tsv OUT.tsv [CONFIG]
// IN and OUT: id<TAB>text, one row a line; CONFIG (default languages.yaml) gives the cleaner settings.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigOrThrow } from '../../src/core/config/load.js';
import { cleanText } from '../../src/core/data/text/cleaners.js';

const [language, inFile, outFile, configFile] = process.argv.slice(2);
if (!language || !inFile || !outFile) {
  console.error('usage: spoken.ts LANGUAGE IN.tsv OUT.tsv [CONFIG]');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const text = loadConfigOrThrow(configFile ?? join(here, 'languages.yaml')).config.text;
const rows = readFileSync(inFile, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => {
    const tab = line.indexOf('\t');
    if (tab <= 0) throw new Error(`${inFile}: "${line}" is not id<TAB>text`);
    return `${line.slice(0, tab)}\t${cleanText(line.slice(tab + 1), text, language)}`;
  });
writeFileSync(outFile, `${rows.join('\n')}\n`);
