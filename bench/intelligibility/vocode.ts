// The vocoder's ceiling: each WAV of a folder through xtts's own front end (log-mel, the run's audio
// settings) and back through Griffin-Lim, as the trained model's mels are. What the ASR loses on these
// is lost to the vocoder, not to the model.
//   node --import tsx bench/intelligibility/vocode.ts IN_DIR OUT_DIR [CONFIG]
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigOrThrow, presetPath } from '../../src/core/config/load.js';
import { griffinLim } from '../../src/core/data/audio/griffin-lim.js';
import { processClip } from '../../src/core/data/audio/index.js';
import { encodeWav } from '../../src/core/data/audio/wav.js';

const [inDir, outDir, configFile] = process.argv.slice(2);
if (!inDir || !outDir) {
  console.error('usage: vocode.ts IN_DIR OUT_DIR [CONFIG]');
  process.exit(2);
}
const audio = loadConfigOrThrow(configFile ?? presetPath('quickstart')).config.audio;
mkdirSync(outDir, { recursive: true });
for (const name of readdirSync(inDir)
  .filter((f) => f.endsWith('.wav'))
  .sort()) {
  const clip = processClip(readFileSync(join(inDir, name)), audio, name);
  // The same Griffin-Lim iterations as `xtts synthesize`.
  writeFileSync(
    join(outDir, name),
    encodeWav(griffinLim(clip.mel, clip.frames, audio, { iterations: 32 }), audio.sample_rate_hz),
  );
}
