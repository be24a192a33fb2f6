// Peak memory while preparing 13,100 LJSpeech-length rows (text, tokens, log-mels into the cache,
// statistics), measured as the preparing process's peak RSS (all its threads). Target (issue 3):
// <= 1 GiB. BENCH_CLIP_SCALE shortens every clip (e.g. 0.3) to make the run quicker; 1 is LJSpeech.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ljspeechRows } from './ljspeech-like.js';
import { report } from './lib.js';

const scale = Number(process.env.BENCH_CLIP_SCALE ?? 1);
const rows = ljspeechRows();
const dir = mkdtempSync(join(tmpdir(), 'xtts-membench-'));
mkdirSync(join(dir, 'wavs'));
let audioS = 0;
for (const [i, r] of rows.entries()) {
  const seconds = r.durationS * scale;
  audioS += seconds;
  const n = Math.round(seconds * 22050);
  const data = Buffer.alloc(44 + n * 2);
  data.write('RIFF', 0);
  data.writeUInt32LE(36 + n * 2, 4);
  data.write('WAVEfmt ', 8);
  data.writeUInt32LE(16, 16);
  data.writeUInt16LE(1, 20);
  data.writeUInt16LE(1, 22);
  data.writeUInt32LE(22050, 24);
  data.writeUInt32LE(44100, 28);
  data.writeUInt16LE(2, 32);
  data.writeUInt16LE(16, 34);
  data.write('data', 36);
  data.writeUInt32LE(n * 2, 40);
  for (let k = 0; k < n; k++)
    data.writeInt16LE(
      Math.round(8000 * Math.sin((2 * Math.PI * (150 + (i % 200)) * k) / 22050) + ((k * 7919) % 2000) - 1000),
      44 + 2 * k,
    );
  writeFileSync(join(dir, 'wavs', `${r.id}.wav`), data);
}
writeFileSync(join(dir, 'metadata.csv'), rows.map((r) => `${r.id}|${r.text}|${r.text}`).join('\n') + '\n');
writeFileSync(
  join(dir, 'config.yaml'),
  `extends: ${fileURLToPath(new URL('../configs/quickstart.yaml', import.meta.url))}\ndataset:\n  ` +
    `path: ${dir}\nlimits:\n  max_text_chars: 250\n  min_audio_s: 0.1\n  ` +
    `max_audio_s: 11\npipeline:\n  workers: auto\n  cache:\n    ` +
    `path: ${join(dir, 'cache.sqlite')}\n`,
);
const script = join(dir, 'prepare.mts');
writeFileSync(
  script,
  `import { loadConfigOrThrow } from '${new URL('../src/core/config/load.ts', import.meta.url).href}';
   import { prepareDataset } from '${new URL('../src/core/data/prepare.ts', import.meta.url).href}';
   const t = performance.now();
   const p = await prepareDataset(loadConfigOrThrow(process.argv[2]));
   const maxRssBytes = process.resourceUsage().maxRSS * 1024;
   const counts = { train: p.train.length, validation: p.validation.length, skipped: p.skipped.length };
   console.log(JSON.stringify({ ms: performance.now() - t, ...counts, maxRssBytes }));`,
);
const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
const r = spawnSync(process.execPath, ['--import', 'tsx', script, join(dir, 'config.yaml')], {
  cwd: fileURLToPath(new URL('..', import.meta.url)),
  encoding: 'utf8',
  env,
  maxBuffer: 1 << 24,
});
rmSync(dir, { recursive: true, force: true });
if (r.status !== 0) throw new Error(r.stderr);
const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
const gib = out.maxRssBytes / 2 ** 30;
console.log(
  `prepared ${rows.length} rows (${(audioS / 3600).toFixed(1)} h of audio, clip ` +
    `scale ${scale}) in ${(out.ms / 1000).toFixed(1)} s: ${out.train} ` +
    `train, ${out.validation} validation, ${out.skipped} skipped`,
);
console.log(`peak RSS ${(gib * 1024).toFixed(0)} MiB (target <= 1024 MiB)`);
report('prepare-memory', {
  rows: rows.length,
  clipScale: scale,
  audioHours: audioS / 3600,
  ms: out.ms,
  peakRssBytes: out.maxRssBytes,
  target: 2 ** 30,
  pass: out.maxRssBytes <= 2 ** 30,
});
