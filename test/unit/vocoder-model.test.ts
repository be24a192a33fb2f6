// The neural vocoder's generator and losses: parameter counts of the presets as documented, the
// output's length (hop samples per mel frame, as the features frame them), gradients that reach every
// parameter, seeded initialisation, weights by name, and an overfit: a few dozen AdamW steps on one
// batch of real speech bring the output's log-mel much closer to the real one's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '../../src/core/model/gradients.js';
import { initWasm } from '../../src/core/backend/wasm.js';
import { loadConfigOrThrow, presetPath } from '../../src/core/config/load.js';
import { processClip } from '../../src/core/data/audio/index.js';
import { isXttsError } from '../../src/core/errors.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import {
  countVocoderParameters,
  SegmentSampler,
  VocoderGenerator,
  vocoderLosses,
} from '../../src/core/vocoder/index.js';
import { repoRoot } from '../helpers/cli.js';

const tiny = loadConfigOrThrow(presetPath('vocoder-tiny')).config;
const micro = { channels: 32, layers: 2, kernel: 7, ff_mult: 2 };

// On wasm: its matmuls (XNNPACK) make the overfit's 40 steps seconds, where the cpu backend takes minutes.
before(async () => {
  const wasm = await initWasm(tf);
  assert.ok(wasm.ok, JSON.stringify(wasm));
});

describe('vocoder generator', () => {
  it('presets have the parameter counts in src/core/vocoder/model.ts', () => {
    assert.equal(countVocoderParameters(tiny.vocoder, tiny.audio), 1_649_346);
    const small = loadConfigOrThrow(presetPath('vocoder-small')).config;
    assert.equal(countVocoderParameters(small.vocoder, small.audio), 7_732_098);
  });

  it('T mel frames give T·hop samples; every parameter gets a finite, non-zero gradient', () => {
    const g = new VocoderGenerator(micro, tiny.audio, 1);
    try {
      const frames = 16;
      const mel = tf.randomNormal([2, frames, tiny.audio.n_mels], -4, 2, 'float32', 3) as tf.Tensor3D;
      const out = g.forward(mel);
      assert.deepEqual(out.shape, [2, frames * tiny.audio.hop_length]);
      const target = tf.randomNormal(out.shape, 0, 0.1, 'float32', 4) as tf.Tensor2D;
      const { grads } = tf.variableGrads(
        () => vocoderLosses(g.forward(mel), target, tiny.audio, tiny.vocoder).loss,
        [...g.params.values()],
      );
      const byVariable = new Map([...g.params].map(([name, v]) => [v.name, name]));
      for (const [id, grad] of Object.entries(grads)) {
        const norm = tf.norm(grad).dataSync()[0];
        assert.ok(Number.isFinite(norm) && norm > 0, `${byVariable.get(id)}: gradient norm ${norm}`);
      }
      assert.equal(Object.keys(grads).length, g.params.size);
      tf.dispose([mel, out, target, ...Object.values(grads)]);
    } finally {
      g.dispose();
    }
  });

  it('inference frees each block as it ends: the same wave, a fraction of the memory held at once', () => {
    const g = new VocoderGenerator(tiny.vocoder, tiny.audio, 1);
    const mel = tf.randomNormal([4, 64, tiny.audio.n_mels], -4, 2, 'float32', 5) as tf.Tensor3D;
    const engine = tf.engine() as unknown as { runKernel: (...a: unknown[]) => unknown };
    const run = engine.runKernel;
    const peakOf = (inference: boolean) => {
      const before = tf.memory().numBytes;
      let peak = 0;
      engine.runKernel = (...a: unknown[]) => {
        const out = run.apply(engine, a);
        peak = Math.max(peak, tf.memory().numBytes - before);
        return out;
      };
      try {
        const wave = tf.tidy(() => g.forward(mel, { inference }));
        return { peak, wave: wave.dataSync().slice(), dispose: () => wave.dispose() };
      } finally {
        engine.runKernel = run;
      }
    };
    try {
      const [held, freed] = [peakOf(false), peakOf(true)];
      assert.deepEqual(freed.wave, held.wave);
      // vocoder-tiny: six blocks' intermediates against about one's (and the head's and the inverse STFT's).
      assert.ok(freed.peak < held.peak / 2, `peak ${freed.peak} bytes with inference, ${held.peak} without`);
      held.dispose();
      freed.dispose();
    } finally {
      mel.dispose();
      g.dispose();
    }
  });

  it('the same seed gives the same weights; weights of another shape are refused by name', () => {
    const a = new VocoderGenerator(micro, tiny.audio, 5);
    const b = new VocoderGenerator(micro, tiny.audio, 5);
    const c = new VocoderGenerator({ ...micro, channels: 48 }, tiny.audio, 5);
    try {
      for (const [name, v] of a.params) assert.deepEqual(v.dataSync(), b.params.get(name)!.dataSync(), name);
      assert.throws(
        () => a.setWeights(c.getWeights()),
        (e) => isXttsError(e) && e.code === 'WEIGHTS_MISMATCH' && /vocoder\.embed\.w: shape/.test(e.message),
      );
    } finally {
      for (const g of [a, b, c]) g.dispose();
    }
  });

  it('overfits one batch of real speech: 40 steps take the log-mel loss below half its start', () => {
    const audio = tiny.audio;
    const clips = ['QS-001', 'QS-002'].map((id) => {
      const file = join(repoRoot, 'configs', 'quickstart', 'wavs', `${id}.wav`);
      const c = processClip(readFileSync(file), audio, file);
      return { id, samples: c.samples, mel: c.mel, frames: c.frames };
    });
    const frames = 16;
    const batch = new SegmentSampler(clips, frames, audio.hop_length, audio.n_mels, 1).next(2);
    const mel = tf.tensor3d(batch.mel, [2, frames, audio.n_mels]);
    const wave = tf.tensor2d(batch.wave, [2, frames * audio.hop_length]);
    const g = new VocoderGenerator(micro, audio, 1);
    const training = {
      ...tiny.training,
      learning_rate: 3e-3,
      schedule: { name: 'constant' as const, warmup_steps: 0 },
    };
    const optimizer = new AdamW(g.params, training as never);
    const melLoss: number[] = [];
    try {
      for (let step = 0; step < 40; step++) {
        let mel1 = 0;
        const { value, grads } = tf.variableGrads(() => {
          const parts = vocoderLosses(g.forward(mel), wave, audio, tiny.vocoder);
          mel1 = parts.mel.dataSync()[0];
          return parts.loss;
        }, [...g.params.values()]);
        melLoss.push(mel1);
        optimizer.accumulate(optimizer.flatten(grads), value);
        tf.dispose(Object.values(grads));
        const r = optimizer.apply();
        tf.dispose([r.gradNorm, r.finite]);
      }
      assert.ok(melLoss[39] < 0.5 * melLoss[0], `log-mel L1 ${melLoss[0].toFixed(3)} -> ${melLoss[39].toFixed(3)}`);
    } finally {
      optimizer.dispose?.();
      g.dispose();
      tf.dispose([mel, wave]);
    }
  });
});
