// Reference windows: a clip is read as training reads references, windows of reference_frames. Voices by name and
// from files: a trained speaker is found however its name is typed (as the dataset's names are read), and a voice
// file not known to come from this model's run speaks with a warning that says so.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfigOrThrow, type XttsConfig } from '../../src/core/config/index.js';
import {
  encodeVoiceFile,
  readVoiceFile,
  referenceWindows,
  speakerVoice,
  voiceWindows,
} from '../../src/core/training/voices.js';
import { repoRoot } from '../helpers/cli.js';

const nMels = 2;
const config = {
  audio: { n_mels: nMels },
  batching: { reference_frames: 4 },
  model: { speaker_pitch: false },
} as XttsConfig;
const stats = { mean: [1, 2], std: [2, 4] };
/** Frame f's mels are (f, 10 f): normalised (f - 1) / 2 and (10 f - 2) / 4. */
const clip = (frames: number) => Float32Array.from({ length: frames * nMels }, (_, i) => (i % 2 ? 10 : 1) * (i >> 1));
const firstFrames = (windows: Float32Array[]) => windows.map((w) => w[0] * 2 + 1);

test('a long clip is consecutive windows, the last ending at the clip when half a window is left', () => {
  assert.deepEqual(firstFrames(referenceWindows(clip(10), 10, stats, config)), [0, 4, 6]);
  assert.deepEqual(firstFrames(referenceWindows(clip(9), 9, stats, config)), [0, 4]);
  assert.deepEqual(firstFrames(referenceWindows(clip(8), 8, stats, config)), [0, 4]);
  const [w] = referenceWindows(clip(10), 10, stats, config);
  assert.deepEqual([...w], [-0.5, -0.5, 0, 2, 0.5, 4.5, 1, 7]);
});

test('a clip shorter than a window is one window of its own length; no frames, no window', () => {
  const windows = referenceWindows(clip(3), 3, stats, config);
  assert.equal(windows.length, 1);
  assert.equal(windows[0].length, 3 * nMels);
  assert.deepEqual(referenceWindows(new Float32Array(0), 0, stats, config), []);
});

test('a very long clip gives at most 64 windows', () => {
  assert.equal(referenceWindows(clip(1000), 1000, stats, config).length, 64);
});

test('clips of one voice are windowed each on its own, or joined first for a model trained with reference_join', () => {
  const clips = [
    { mel: clip(3), frames: 3 },
    { mel: clip(3).map((v) => v + 100), frames: 3 },
  ];
  assert.deepEqual(
    voiceWindows(clips, stats, config).map((w) => w.mel.length / nMels),
    [3, 3],
  );
  const joinConfig = { ...config, batching: { reference_frames: 4, reference_join: true } } as XttsConfig;
  const joined = voiceWindows(clips, stats, joinConfig).map((w) => w.mel);
  // Without model.speaker_pitch no pitch is measured: 0, unknown to the model.
  assert.ok(voiceWindows(clips, stats, joinConfig).every((w) => w.logF0 === 0));
  // 6 frames: a window of 4 (the first clip's 3 and the second's first), then the last 4, ending at the end.
  assert.deepEqual(
    joined.map((w) => w.length / nMels),
    [4, 4],
  );
  assert.deepEqual(firstFrames(joined), [0, 2]);
  assert.equal(joined[0][6] * 2 + 1, 100, "the first window's last frame is the second clip's first");
  assert.deepEqual(
    voiceWindows(clips.slice(0, 1), stats, joinConfig).map((w) => w.mel),
    referenceWindows(clip(3), 3, stats, config),
  );
  // Joined, two long clips give the windows they would apart (64 each), not 64 in all.
  const long = [
    { mel: clip(1000), frames: 1000 },
    { mel: clip(1000), frames: 1000 },
  ];
  assert.equal(voiceWindows(long, stats, joinConfig).length, 128);
  assert.equal(voiceWindows(long, stats, config).length, 128);
});

const quickstart = loadConfigOrThrow(join(repoRoot, 'configs', 'quickstart.yaml')).config;
const [latents, dModel] = [quickstart.model.cond_latents, quickstart.model.d_model];

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
  assert.equal(readVoiceFile(write('same.safetensors', mine), quickstart, mine).warning, undefined);
  assert.match(
    readVoiceFile(write('other.safetensors', 'fedcba9876543210'), quickstart, mine).warning ?? '',
    /was computed by another run \(\/runs\/other\.safetensors\/step-00000010\); its voice may not carry over/,
  );
  // A file (or a checkpoint) that does not say its run: the same warning, saying that it cannot be told.
  for (const [file, run] of [
    [write('unknown.safetensors'), mine],
    [write('known.safetensors', mine), undefined],
  ] as const)
    assert.match(readVoiceFile(file, quickstart, run).warning ?? '', /cannot be told whether that is this model's run/);
});

test("a voice file's pitch is read back, and one that is not a pitch is refused as damaged", () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-voice-pitch-'));
  const write = (name: string, logF0: unknown) => {
    const file = join(dir, name);
    const info = { checkpoint: '/runs/a/step-00000010', step: 10, source: 'speaker a', latents, dModel, logF0 };
    writeFileSync(file, encodeVoiceFile(new Float32Array(latents * dModel), info as never));
    return file;
  };
  assert.equal(
    readVoiceFile(write('pitched.safetensors', Math.log(150)), quickstart, undefined).info.logF0,
    Math.log(150),
  );
  for (const logF0 of ['high', 150, -1])
    assert.throws(
      () => readVoiceFile(write('bad.safetensors', logF0), quickstart, undefined),
      (e: Error & { code?: string }) => e.code === 'SYNTH_VOICE_FILE' && /header's pitch .* is damaged/.test(e.message),
      String(logF0),
    );
});
