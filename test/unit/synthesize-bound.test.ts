// Where a synthesis was cut, it names the setting that cut it: --max-seconds, its default limits.max_audio_s, or the
// model's longest output (model.max_mel_frames), which no --max-seconds raises.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { XttsConfig } from '../../src/core/config/index.js';
import { frameBound } from '../../src/core/training/evaluation.js';

const config = {
  audio: { sample_rate_hz: 22050, hop_length: 256 },
  model: { max_mel_frames: 1024 },
  limits: { max_audio_s: 10 },
} as XttsConfig;

test('the bound that cut a synthesis is the one that was the smallest', () => {
  const cut = (maxSeconds?: number) => {
    const { bound, seconds } = frameBound(config, maxSeconds);
    return { bound, seconds };
  };
  assert.equal(cut(5).bound, 'max_seconds');
  assert.ok(Math.abs(cut(5).seconds - 5) < 0.02);
  assert.equal(cut().bound, 'max_audio_s');
  // 60 s asked of a model whose longest output is 1024 frames (11.9 s): the model's bound, however high the flag.
  assert.deepEqual(cut(60), { bound: 'max_mel_frames', seconds: (1024 * 256) / 22050 });
  assert.equal(frameBound({ ...config, limits: { max_audio_s: 20 } } as XttsConfig).bound, 'max_mel_frames');
});
