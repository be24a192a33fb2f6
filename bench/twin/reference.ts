// What bench/twin/xtts_twin.py's `check` compares the PyTorch twin against: xtts's model on the cpu backend,
// one fixed batch (four utterances of different lengths, one of them a filler), its alignment by monotonic
// alignment search, the teacher-forced losses and every parameter's gradient of the total loss (dropout off).
// Weights and gradients are written under the names and layouts `xtts export` gives them.
//
//   node --import tsx bench/twin/reference.ts OUT [--config configs/tiny.yaml] [--set key=value]... [--seed N]
//
// Writes OUT/weights.safetensors (metadata: the resolved config and the sizes, as an exported checkpoint
// has them), OUT/batch.safetensors, OUT/grads.safetensors and OUT/expected.json (the losses).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { loadConfigOrThrow } from '../../src/core/config/index.js';
import { Rng } from '../../src/core/model/init.js';
import { computeLosses } from '../../src/core/model/losses.js';
import { XttsModel } from '../../src/core/model/model.js';
import type { NamedArray } from '../../src/core/training/checkpoint.js';
import { pytorchArrays } from '../../src/core/training/export.js';
import { encodeSafetensors } from '../../src/core/training/safetensors.js';

const args = process.argv.slice(2);
const out = args[0];
if (!out || out.startsWith('--')) {
  console.error('usage: node --import tsx bench/twin/reference.ts OUT [--config F] [--set key=value]... [--seed N]');
  process.exit(2);
}
const option = (name: string) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const sets = args.flatMap((a, i) => (args[i - 1] === '--set' ? [a] : []));
const loaded = loadConfigOrThrow(option('--config') ?? 'configs/tiny.yaml', { set: sets });
const seed = Number(option('--seed') ?? 7);
const sizes = { vocabSize: 160, nMels: 80, numLanguages: 2 };

// Four utterances padded to one bucket: the longest fills it; the last is a filler (no text, no frames).
const textLengths = [14, 11, 8, 0];
const melLengths = [48, 37, 26, 0];
const refLengths = [30, 22, 17, 0];
const [batchSize, textSteps, frames, refFrames] = [4, 14, 48, 30];
const rng = new Rng(seed);
const normal = () => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
const tokens = new Int32Array(batchSize * textSteps);
const mel = new Float32Array(batchSize * frames * sizes.nMels);
const refMel = new Float32Array(batchSize * refFrames * sizes.nMels);
for (let b = 0; b < batchSize; b++) {
  for (let t = 0; t < textLengths[b]; t++)
    tokens[b * textSteps + t] = 3 + Math.floor(rng.next() * (sizes.vocabSize - 3));
  for (let f = 0; f < melLengths[b] * sizes.nMels; f++) mel[b * frames * sizes.nMels + f] = normal();
  for (let f = 0; f < refLengths[b] * sizes.nMels; f++) refMel[b * refFrames * sizes.nMels + f] = normal();
}

await tf.setBackend('cpu');
const model = new XttsModel(loaded.config.model, sizes, { seed });
const batch = {
  tokens: tf.tensor2d(tokens, [batchSize, textSteps], 'int32'),
  textLengths: tf.tensor1d(textLengths, 'int32'),
  languages: tf.tensor1d([0, 1, 0, 1], 'int32'),
  mel: tf.tensor3d(mel, [batchSize, frames, sizes.nMels]),
  melLengths: tf.tensor1d(melLengths, 'int32'),
  refMel: tf.tensor3d(refMel, [batchSize, refFrames, sizes.nMels]),
  refLengths: tf.tensor1d(refLengths, 'int32'),
  refPitch: tf.zeros([batchSize]) as tf.Tensor1D,
};
const prior = loaded.config.training.alignment_prior;
const alignment = await model.align(batch, textLengths, melLengths, prior);
const inputs = { ...batch, alignment };
const names = new Map([...model.trainableVariables()].map(([name, v]) => [v.name, name]));
const parts = computeLosses(model.forward(inputs, { training: false }), inputs, loaded.config.training.loss);
const { grads } = tf.variableGrads(
  () => computeLosses(model.forward(inputs, { training: false }), inputs, loaded.config.training.loss).total,
);

const named = (entries: Iterable<[string, tf.Tensor]>): NamedArray[] =>
  [...entries].map(([name, t]) => ({ name, shape: t.shape, dtype: 'float32', data: t.dataSync() as Float32Array }));
const variables = [...model.trainableVariables()];
const gradients = variables.map(([name, v]) => [name, grads[v.name] ?? tf.zerosLike(v)] as [string, tf.Tensor]);
if (names.size !== variables.length) throw new Error('two parameters share a tfjs variable name');
const array = (name: string, t: tf.Tensor): NamedArray => ({
  name,
  shape: t.shape,
  dtype: t.dtype === 'int32' ? 'int32' : 'float32',
  data: t.dtype === 'int32' ? (t.dataSync() as Int32Array) : (t.dataSync() as Float32Array),
});
mkdirSync(out, { recursive: true });
const metadata = { config: JSON.stringify(loaded.config), sizes: JSON.stringify(sizes) };
writeFileSync(join(out, 'weights.safetensors'), encodeSafetensors(pytorchArrays(named(variables)), metadata));
writeFileSync(join(out, 'grads.safetensors'), encodeSafetensors(pytorchArrays(named(gradients))));
writeFileSync(
  join(out, 'batch.safetensors'),
  encodeSafetensors([
    array('tokens', batch.tokens),
    array('text_lengths', batch.textLengths),
    array('languages', batch.languages),
    array('mel', batch.mel),
    array('mel_lengths', batch.melLengths),
    array('ref_mel', batch.refMel),
    array('ref_lengths', batch.refLengths),
    array('alignment_steps', alignment.steps),
    array('durations', alignment.durations),
  ]),
);
// The twin has no pitch predictor (model.pitch_contour): its loss is null here and not compared.
const losses = Object.fromEntries(
  Object.entries(parts)
    .filter(([, t]) => t !== null)
    .map(([k, t]) => [k, (t as tf.Tensor).dataSync()[0]]),
);
writeFileSync(join(out, 'expected.json'), `${JSON.stringify({ losses, alignmentPrior: prior, seed }, null, 2)}\n`);
console.log(JSON.stringify({ out, parameters: model.parameterCount(), losses }));
