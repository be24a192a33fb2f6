// Reference windows: a clip is read as training reads references, windows of reference_frames.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { XttsConfig } from '../../src/core/config/index.js';
import { referenceWindows } from '../../src/core/training/voices.js';

const nMels = 2;
const config = { audio: { n_mels: nMels }, batching: { reference_frames: 4 } } as XttsConfig;
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
