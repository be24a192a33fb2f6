// Eval WAVs without a neural vocoder: Griffin-Lim with training.eval_griffin_lim_iterations. Its iterations
// change the waveform's phase, not what the model said: the same mels, so the same lengths.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadConfigOrThrow } from '../../src/core/config/index.js';
import { decodeWav } from '../../src/core/data/index.js';
import { train } from '../../src/core/training/index.js';
import { MICRO_MODEL, shortQuickstartRun } from '../helpers/short-clips.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function evalRun(iterations: number): Promise<{ messages: string; wavs: Float32Array[] }> {
  const run = shortQuickstartRun(
    4,
    'xtts-eval-audio-',
    `  max_steps: 1
  eval_every: 1
  validate_every: 1000
  checkpoint_every: 1000
  eval_griffin_lim_iterations: ${iterations}
  eval_sentences:
    - text: Two words.
`,
    MICRO_MODEL,
  );
  dirs.push(run.dir);
  const messages: string[] = [];
  const r = await train({
    loaded: loadConfigOrThrow(run.config),
    backend: 'cpu',
    outputDir: join(run.dir, 'out'),
    onMessage: (m) => messages.push(m),
  });
  const wavs = r.evalFiles
    .filter((f) => f.endsWith('.wav'))
    .sort()
    .map((f) => decodeWav(readFileSync(f), f).samples);
  return { messages: messages.join('\n'), wavs };
}

test('eval WAVs are vocoded with training.eval_griffin_lim_iterations: the same lengths, other samples', async () => {
  const one = await evalRun(1);
  const three = await evalRun(3);
  assert.match(one.messages, /WAVs by Griffin-Lim \(1 iteration\)/);
  assert.match(three.messages, /WAVs by Griffin-Lim \(3 iterations\)/);
  assert.equal(one.wavs.length, 2, 'the eval sentence and the first validation clip');
  assert.deepEqual(
    one.wavs.map((w) => w.length),
    three.wavs.map((w) => w.length),
  );
  assert.ok(one.wavs.every((w, i) => w.some((v, j) => v !== three.wavs[i][j])));
});
