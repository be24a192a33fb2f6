// Text front end over 13,100 LJSpeech-length rows (characters mode): cold into a fresh cache, and
// warm from it. Targets (issue 3, this 2-core machine): cold <= 3 s, warm <= 0.3 s. The system this
// replaces took 10-30 s and 1-2 s. Also phonemes mode (one espeak-ng process) on 500 rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FeatureCache } from '../src/core/cache/cache.js';
import { loadConfig, presetPath } from '../src/core/config/load.js';
import { prepareTexts, type TextRow } from '../src/core/data/prepare.js';
import { Phonemizer } from '../src/core/data/text/phonemizer.js';
import { ljspeechRows } from './ljspeech-like.js';
import { median, report } from './lib.js';

const config = loadConfig(presetPath('quickstart')).loaded!.config;
const rows: TextRow[] = ljspeechRows().map((r, i) => ({ row: { id: r.id, file: 'metadata.csv', line: i + 1, audioPath: '', text: r.text, speaker: 'LJ' }, language: 'en' }));
const cold: number[] = [];
const warm: number[] = [];
for (let run = 0; run < 5; run++) {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-textbench-'));
  const cache = FeatureCache.open(join(dir, 'c.sqlite'));
  let t = performance.now();
  await prepareTexts(rows, config, cache, undefined);
  cold.push(performance.now() - t);
  t = performance.now();
  await prepareTexts(rows, config, cache, undefined);
  warm.push(performance.now() - t);
  cache.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`text front end, ${rows.length} rows (characters): cold median ${(median(cold) / 1000).toFixed(2)} s (target <= 3 s), warm median ${(median(warm) / 1000).toFixed(3)} s (target <= 0.3 s)`);

const p = new Phonemizer();
const sample = rows.slice(0, 500);
const dir = mkdtempSync(join(tmpdir(), 'xtts-textbench-'));
const cache = FeatureCache.open(join(dir, 'c.sqlite'));
const t = performance.now();
await prepareTexts(sample, { ...config, text: { ...config.text, tokenizer: 'phonemes' } }, cache, p);
const phonemesMs = performance.now() - t;
cache.close();
p.close();
rmSync(dir, { recursive: true, force: true });
console.log(`phonemes (one espeak-ng process): 500 rows in ${(phonemesMs / 1000).toFixed(2)} s = ${(500 / (phonemesMs / 1000)).toFixed(0)} rows/s, ${p.spawned} process`);
report('text', { rows: rows.length, coldMs: median(cold), warmMs: median(warm), targetColdMs: 3000, targetWarmMs: 300, pass: median(cold) <= 3000 && median(warm) <= 300, phonemeRowsPerS: 500 / (phonemesMs / 1000) });
