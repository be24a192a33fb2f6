// Voices by name and from files: a trained speaker is found however its name is typed (as the dataset's names are
// read), and a voice file not known to come from this model's run speaks with a warning that says so.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfigOrThrow } from '../../src/core/config/index.js';
import { encodeVoiceFile, readVoiceFile, speakerVoice } from '../../src/core/training/voices.js';
import { repoRoot } from '../helpers/cli.js';

const config = loadConfigOrThrow(join(repoRoot, 'configs', 'quickstart.yaml')).config;
const [latents, dModel] = [config.model.cond_latents, config.model.d_model];

test('--speaker finds a trained voice composed or not, with invisible characters or doubled spaces', () => {
  const zoe = new Float32Array([1, 2]);
  const voices = new Map([
    ['Zo\u00eb Smith', zoe],
    ['bob', new Float32Array([3, 4])],
  ]);
  for (const typed of ['Zo\u00eb Smith', 'Zoe\u0308 Smith', 'Zo\u00eb\u200b  Smith', ' Zo\u00eb Smith\ufeff'])
    assert.equal(speakerVoice('run', voices, typed), zoe, JSON.stringify(typed));
  assert.throws(
    () => speakerVoice('run', voices, 'Zoe Smith'),
    (e: Error & { code?: string }) => e.code === 'SYNTH_SPEAKER' && /it has 2: Zoë Smith, bob/.test(e.message),
  );
});

test("a voice file speaks without a warning only where it is known to be this run's", () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-voice-file-'));
  const write = (name: string, runId?: string) => {
    const file = join(dir, name);
    const info = { checkpoint: `/runs/${name}/step-00000010`, step: 10, source: 'speaker a', latents, dModel };
    writeFileSync(file, encodeVoiceFile(new Float32Array(latents * dModel), runId ? { ...info, runId } : info));
    return file;
  };
  const mine = '0123456789abcdef';
  assert.equal(readVoiceFile(write('same.safetensors', mine), config, mine).warning, undefined);
  assert.match(
    readVoiceFile(write('other.safetensors', 'fedcba9876543210'), config, mine).warning ?? '',
    /was computed by another run \(\/runs\/other\.safetensors\/step-00000010\); its voice may not carry over/,
  );
  // A file (or a checkpoint) that does not say its run: the same warning, saying that it cannot be told.
  for (const [file, run] of [
    [write('unknown.safetensors'), mine],
    [write('known.safetensors', mine), undefined],
  ] as const)
    assert.match(readVoiceFile(file, config, run).warning ?? '', /cannot be told whether that is this model's run/);
});
