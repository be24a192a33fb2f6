// TensorBoard event files read back by a reader outside xtts (test/helpers/read_tfevents.py: the
// TFRecord framing with its own CRC-32C, the protocol buffers decoded from the wire format; and
// TensorBoard's own EventAccumulator where the package is installed).
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { encodeWav } from '../../src/core/data/audio/wav.js';
import { melFigure } from '../../src/core/render/figures.js';
import { crc32c, EventFileWriter } from '../../src/core/telemetry/tensorboard.js';
import { hparamsOf } from '../../src/core/training/loop/run-log.js';
import { readEvents } from '../helpers/tfevents.js';

test('CRC-32C of the standard check string', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
});

test('scalars, a PNG and a WAV, read back with their steps, sizes and tags', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-tb-'));
  const w = new EventFileWriter(dir);
  w.scalar('loss/train', 1, 2.5);
  w.scalar('loss/train', 2, 1.25);
  w.scalar('learning_rate', 2, 3e-4);
  w.scalar('loss/train', 3, Number.NaN); // not a point on a curve: left out
  const mel = new Float32Array(20 * 8).map((_, i) => Math.sin(i));
  const png = melFigure({
    title: 'test',
    panels: [{ label: 'PREDICTED', mel, frames: 20, nMels: 8 }],
    secondsPerFrame: 0.01,
  });
  w.image('eval/sentence-1', 2, png);
  const wav = encodeWav(new Float32Array(2205).fill(0.1), 22050);
  w.audio('eval/sentence-1', 2, wav);
  w.close();
  const files = readdirSync(dir);
  assert.equal(files.length, 1);
  assert.match(files[0], /^events\.out\.tfevents\.\d+\..+\.\d+\.xtts$/);
  const r = readEvents(join(dir, files[0]));
  assert.equal(r.file_version, 'brain.Event:2');
  assert.deepEqual(r.scalars['loss/train'], [
    [1, 2.5],
    [2, 1.25],
  ]);
  assert.ok(Math.abs(r.scalars.learning_rate[0][1] - 3e-4) < 1e-9);
  const [step, width, height, bytes, magic] = r.images['eval/sentence-1'][0];
  assert.deepEqual([step, bytes, magic], [2, png.length, '89504e470d0a1a0a']);
  assert.ok(width > 20 && height > 8, `${width}×${height}`);
  assert.deepEqual(r.audio['eval/sentence-1'][0], [2, 22050, 2205, wav.length, 'audio/wav']);
  if (process.env.XTTS_TEST_PYTHON) assert.equal(r.tensorboard, true, 'TensorBoard itself read the file');
});

test('hyperparameters for the HPARAMS tab: numbers, strings and booleans, and how the run ended', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-tb-hp-'));
  const w = new EventFileWriter(dir);
  const values = { 'training.learning_rate': 0.001, 'model.d_model': 256, 'text.cleaners': 'english', 'x.on': true };
  w.hparams(0, values, 1_700_000_000.5);
  w.scalar('loss/train', 1, 2.5);
  w.hparamsEnd(7, 'success', 1_700_000_100.25);
  w.close();
  const r = readEvents(join(dir, readdirSync(dir)[0]));
  assert.deepEqual(r.hparams.start, { step: 0, hparams: values, start_time_secs: 1_700_000_000.5 });
  assert.deepEqual(r.hparams.end, { step: 7, status: 1, end_time_secs: 1_700_000_100.25 });
  assert.deepEqual(Object.keys(r.text), [], 'hparams are not text');
  if (process.env.XTTS_TEST_PYTHON) assert.equal(r.tensorboard, true, 'TensorBoard itself read the file');
});

test('a config as hyperparameters: every scalar by its dotted key, scalar lists as one string', () => {
  const config = {
    model: { d_model: 256, dropout: 0.1 },
    text: { languages: ['en', 'de'], cleaners: 'multilingual' },
    training: { eval_sentences: [{ text: 'Hi.' }], schedule: { name: 'noam' }, amp: false },
    vocoder: null,
  };
  assert.deepEqual(hparamsOf(config), {
    'model.d_model': 256,
    'model.dropout': 0.1,
    'text.languages': 'en, de',
    'text.cleaners': 'multilingual',
    'training.schedule.name': 'noam',
    'training.amp': false,
  });
});
