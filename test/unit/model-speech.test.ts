// Does a trained model say its text? A small model is trained here on a synthetic speaker whose every
// symbol sounds like its own fixed spectrum for a symbol-specific number of decoder steps, so the
// frames are a function of the text, and the previous frames cannot tell which symbol comes next
// or when. It is then asked what the bug "generation ignores the text" failed: the alignment search
// finds each symbol's frames, the decoder's prediction changes with the text, free-running
// generation says the text (the first frames match its target, another text gives other frames),
// and it ends where the text ends: durations within ±20%. It trains on the wasm backend: 300 steps take
// about 50 s there, 150 to 250 s on the cpu backend.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { initWasm } from '../../src/core/backend/wasm.js';
import type { ModelConfig } from '../../src/core/config/schema.js';
import {
  diagonalShare,
  FIRST_SYMBOL,
  framesPerSymbol,
  monotonicAlignment,
  scheduleFromDurations,
} from '../../src/core/model/align.js';
import { type BatchAlignment, type TrainBatch, uploadBatch } from '../../src/core/model/batch.js';
import { XttsModel } from '../../src/core/model/model.js';
import { Rng } from '../../src/core/model/init.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import { disposeStepResult, trainStep } from '../../src/core/training/optim/train-step.js';
import { SIZES, trainingConfig } from './model-fixtures.js';

const config: ModelConfig = {
  d_model: 64,
  heads: 2,
  alignment_heads: 1,
  ff_mult: 2,
  text_layers: 2,
  cond_layers: 1,
  cond_latents: 2,
  decoder_layers: 2,
  prenet_dim: 64,
  prenet_dropout: 0.5,
  postnet_layers: 0,
  postnet_channels: 16,
  postnet_kernel: 5,
  reduction_factor: 2,
  dropout: 0,
  max_text_tokens: 32,
  max_mel_frames: 128,
};
const R = 2;
const N_MELS = SIZES.nMels;
const TOKENS = 12;
const FRAMES = 64;
const REF = 8;
const FIRST_SYMBOL_ID = 4 + SIZES.numLanguages;
const training = trainingConfig({ learning_rate: 3e-3 });
const STEPS = 300;

// The synthetic speaker: each symbol id has a spectrum and a length of 1 to 3 decoder steps.
const voice = new Rng(7);
const spectrum = Array.from({ length: SIZES.vocabSize }, () =>
  Float32Array.from({ length: N_MELS }, () => 2 * voice.next() - 1),
);
const stepsOf = Array.from({ length: SIZES.vocabSize }, () => 1 + Math.floor(voice.next() * 3));

interface Utterance {
  ids: number[];
  mel: Float32Array;
  frames: number;
}

/** [<bos>, [lang 0], symbols…, <eos>] and its frames. */
function utterance(symbols: number[]): Utterance {
  const ids = [1, 4, ...symbols, 2];
  const rows: Float32Array[] = [];
  for (const s of symbols) for (let i = 0; i < stepsOf[s] * R; i++) rows.push(spectrum[s]);
  const mel = new Float32Array(rows.length * N_MELS);
  rows.forEach((row, f) => mel.set(row, f * N_MELS));
  return { ids, mel, frames: rows.length };
}

function randomUtterance(rng: Rng): Utterance {
  for (;;) {
    const n = 3 + Math.floor(rng.next() * (TOKENS - 6));
    const u = utterance(
      Array.from({ length: n }, () => FIRST_SYMBOL_ID + Math.floor(rng.next() * (SIZES.vocabSize - FIRST_SYMBOL_ID))),
    );
    if (u.frames <= FRAMES) return u;
  }
}

function batchOf(us: Utterance[]): { batch: TrainBatch; textLengths: Int32Array; melLengths: Int32Array } {
  const b = us.length;
  const h = {
    tokens: new Int32Array(b * TOKENS),
    textLengths: Int32Array.from(us.map((u) => u.ids.length)),
    languages: new Int32Array(b),
    mel: new Float32Array(b * FRAMES * N_MELS),
    melLengths: Int32Array.from(us.map((u) => u.frames)),
    refMel: new Float32Array(b * REF * N_MELS),
    refLengths: new Int32Array(b).fill(REF),
    refPitch: new Float32Array(b),
  };
  us.forEach((u, i) => {
    h.tokens.set(u.ids, i * TOKENS);
    h.mel.set(u.mel, i * FRAMES * N_MELS);
    h.refMel.set(spectrum[FIRST_SYMBOL_ID].subarray(0, N_MELS), i * REF * N_MELS);
  });
  return {
    batch: uploadBatch(h, {
      batchSize: b,
      tokens: TOKENS,
      frames: FRAMES,
      refFrames: REF,
      nMels: N_MELS,
      reductionFactor: R,
    }),
    textLengths: h.textLengths,
    melLengths: h.melLengths,
  };
}

let model: XttsModel;
const train: Utterance[][] = [];
const ref = new Float32Array(REF * N_MELS);

before(async () => {
  const wasm = await initWasm(tf);
  assert.ok(wasm.ok, JSON.stringify(wasm));
  const rng = new Rng(11);
  for (let i = 0; i < 6; i++) train.push(Array.from({ length: 8 }, () => randomUtterance(rng)));
  for (let f = 0; f < REF; f++) ref.set(spectrum[FIRST_SYMBOL_ID], f * N_MELS);
  model = new XttsModel(config, SIZES, { seed: 3 });
  const optimizer = new AdamW(model.trainableVariables(), training);
  for (let step = 0; step < STEPS; step++) {
    const { batch, textLengths, melLengths } = batchOf(train[step % train.length]);
    const alignment = await model.align(batch, textLengths, melLengths, training.alignment_prior);
    disposeStepResult(trainStep(model, optimizer, { ...batch, alignment }, training.loss));
    tf.dispose([...Object.values(batch), alignment.steps, alignment.durations]);
  }
  optimizer.dispose?.();
});
after(() => model.dispose());

describe('monotonic alignment search', () => {
  it('finds the best path through a score matrix, every symbol at least one step, in order', () => {
    // 3 symbols (token positions 2..4) over 6 steps; the scores favour 2,2,3,4,4,4.
    const tokens = 6;
    const want = [2, 2, 3, 4, 4, 4];
    const scores = new Float32Array(6 * tokens).fill(-1);
    want.forEach((n, s) => (scores[s * tokens + n] = 1));
    scores[1 * tokens + 4] = 5; // a tempting jump ahead that would leave symbol 3 no step
    const path = new Int32Array(6);
    monotonicAlignment(scores, 6, tokens, tokens, path);
    assert.deepEqual([...path], want);
  });

  it(
    "runs on worker threads, a batch's utterances split among them, with the same " +
      "paths and durations as on this one (the trainer's lookahead), several batches " +
      'in flight, fillers included',
    async () => {
      const { AlignmentSearcher } = await import('../../src/core/model/align-worker.js');
      const { searchBatch } = await import('../../src/core/model/align.js');
      const rng = new Rng(5);
      // Three threads for batches of 4: one takes two utterances; a batch of 1 uses one thread.
      const searcher = new AlignmentSearcher(3);
      try {
        const tasks = [0, 1, 2].map((k) => {
          const [batch, steps, textSteps] = [4, 30 + k, 12];
          return {
            scores: Float32Array.from({ length: batch * steps * textSteps }, () => rng.next() * 4 - 2),
            batch,
            steps,
            textSteps,
            textLengths: [12, 7, 0, 9],
            melLengths: [2 * steps, 40, 0, 2 * steps - 3],
            r: 2,
            priorSigma: 0.3,
          };
        });
        const here = tasks.map((t) => searchBatch({ ...t, scores: t.scores.slice() }));
        const there = await Promise.all(tasks.map((t) => searcher.search(t)));
        for (const [i, h] of here.entries()) {
          assert.deepEqual([...there[i].path], [...h.path]);
          assert.deepEqual([...there[i].durations], [...h.durations]);
        }
        const one = {
          ...tasks[1],
          scores: Float32Array.from({ length: 31 * 12 }, () => rng.next()),
          batch: 1,
          textLengths: [9],
          melLengths: [62],
        };
        assert.deepEqual(
          [...(await searcher.search({ ...one, scores: one.scores.slice() })).path],
          [...searchBatch(one).path],
        );
        // Every real step of an utterance says one of its symbols, and its durations count them.
        assert.equal(
          here[0].durations.slice(0, 12).reduce((a, b) => a + b, 0),
          30,
        );
      } finally {
        await searcher.close();
      }
      await assert.rejects(
        searcher.search({
          scores: new Float32Array(1),
          batch: 1,
          steps: 1,
          textSteps: 1,
          textLengths: [1],
          melLengths: [1],
          r: 1,
          priorSigma: 0,
        }),
        /closed/,
      );
    },
  );

  it('spreads a text over too few steps evenly instead of failing', () => {
    const path = new Int32Array(2);
    monotonicAlignment(new Float32Array(2 * 8), 2, 8, 8, path);
    assert.deepEqual([...path], [FIRST_SYMBOL, FIRST_SYMBOL + 2]);
  });

  it('plans at least one step per symbol from log durations, and says when the budget cut it', () => {
    const log = [0, 0, Math.log(3), Math.log(1.2), Math.log(5), 0]; // 2, 0.2 (-> 1), 4 steps
    assert.deepEqual([...scheduleFromDurations(log, 6, 100).plan], [2, 2, 3, 4, 4, 4]);
    const cut = scheduleFromDurations(log, 6, 4);
    assert.deepEqual([...cut.plan], [2, 2, 3, 4]);
    assert.equal(cut.cut, true);
    // Ten symbols of 1.4 steps each: 14 steps in all, not the 10 that rounding each would give.
    const even = [0, 0, ...new Array(10).fill(Math.log(2.4)), 0];
    assert.equal(scheduleFromDurations(even, 13, 100).plan.length, 14);
    assert.equal(diagonalShare([2, 2, 3, 3, 4, 4], 6, 6), 1);
    assert.ok(diagonalShare([2, 2, 2, 2, 3, 4], 6, 6) < 0.6);
  });
});

describe('a trained model says its text', () => {
  it("the alignment search finds every symbol's own frames", async () => {
    const us = train[0];
    const { batch, textLengths, melLengths } = batchOf(us);
    const alignment = await model.align(batch, textLengths, melLengths);
    const path = (await alignment.steps.data()) as Int32Array;
    let right = 0;
    let total = 0;
    us.forEach((u, b) => {
      let s = 0;
      u.ids.slice(FIRST_SYMBOL, -1).forEach((id, j) => {
        for (let i = 0; i < stepsOf[id]; i++, s++, total++)
          if (path[b * (FRAMES / R) + s] === FIRST_SYMBOL + j) right++;
      });
    });
    tf.dispose([...Object.values(batch), alignment.steps, alignment.durations]);
    assert.ok(right / total > 0.95, `${((100 * right) / total).toFixed(0)}% of the steps aligned to their own symbol`);
  });

  it('predicts different frames for a different text (teacher-forced, same frames and voice)', async () => {
    const us = train[1];
    const { batch, textLengths, melLengths } = batchOf(us);
    const alignment = await model.align(batch, textLengths, melLengths);
    const other = batchOf([...us].reverse());
    // The other text, aligned to the frames as it would be: its own alignment search.
    const otherAlignment = await model.align(
      { ...batch, tokens: other.batch.tokens, textLengths: other.batch.textLengths },
      other.textLengths,
      melLengths,
    );
    const err = (a: BatchAlignment, tokens: tf.Tensor2D, lengths: tf.Tensor1D) =>
      tf.tidy(() => {
        const out = model.forward({ ...batch, tokens, textLengths: lengths, alignment: a }, { training: false });
        return tf
          .div(
            tf.sum(tf.mul(tf.abs(tf.sub(out.melPre, batch.mel)), out.frameMask)),
            tf.mul(tf.sum(out.frameMask), tf.scalar(N_MELS)),
          )
          .dataSync()[0];
      });
    const own = err(alignment, batch.tokens, batch.textLengths);
    const wrong = err(otherAlignment, other.batch.tokens, other.batch.textLengths);
    tf.dispose([
      ...Object.values(batch),
      ...Object.values(other.batch),
      alignment.steps,
      alignment.durations,
      otherAlignment.steps,
      otherAlignment.durations,
    ]);
    assert.ok(own < 0.2, `error with its own text ${own}`);
    assert.ok(
      wrong > 3 * own,
      `error with another text ${wrong} is not clearly worse than with its own ${own}: the text is ignored`,
    );
  });

  it('generates what the text says, differently for another text, and as long as it', async () => {
    const [a, b] = train[2];
    const [ga, gb] = await model.generateBatch(
      [
        { ids: a.ids, language: 0 },
        { ids: b.ids, language: 0 },
      ],
      ref,
      { seed: 5 },
    );
    for (const [g, u] of [
      [ga, a],
      [gb, b],
    ] as const) {
      assert.equal(g.stopReason, 'end_of_text');
      // The frames each symbol was read for, from the alignment generation followed: every symbol, every frame.
      const perSymbol = framesPerSymbol(g.alignment, g.textTokens, g.frames, R);
      assert.equal(perSymbol.length, u.ids.length - FIRST_SYMBOL - 1);
      assert.equal(
        perSymbol.reduce((n, f) => n + f, 0),
        g.frames,
      );
      assert.ok(
        perSymbol.every((f) => f > 0 && f % R === 0),
        `${perSymbol}`,
      );
      assert.ok(
        Math.abs(g.frames - u.frames) <= Math.max(R, 0.2 * u.frames),
        `${g.frames} frames for a ${u.frames}-frame target`,
      );
      const head = Math.min(g.frames, u.frames, 4) * N_MELS;
      let diff = 0;
      for (let i = 0; i < head; i++) diff += Math.abs(g.melPre[i] - u.mel[i]) / head;
      assert.ok(diff < 0.3, `the first frames are off their target by ${diff.toFixed(3)}`);
    }
    let apart = 0;
    const head = Math.min(ga.frames, gb.frames, 4) * N_MELS;
    for (let i = 0; i < head; i++) apart += Math.abs(ga.melPre[i] - gb.melPre[i]) / head;
    assert.ok(apart > 0.3, 'two texts start with the same frames');
  });

  it('decodes step by step exactly as the teacher-forced pass does on its own output', async () => {
    const u = train[3][0];
    const forced = new XttsModel(config, SIZES, { seed: 3, prenetDropout: 0 });
    forced.setWeights(model.getWeights());
    const g = await forced.generate(u.ids, 0, ref);
    const batch = {
      tokens: tf.tensor2d(u.ids, [1, u.ids.length], 'int32'),
      textLengths: tf.tensor1d([u.ids.length], 'int32'),
      languages: tf.tensor1d([0], 'int32'),
      mel: tf.tensor3d(g.melPre, [1, g.frames, N_MELS]),
      melLengths: tf.tensor1d([g.frames], 'int32'),
      refMel: tf.tensor3d(ref, [1, REF, N_MELS]),
      refLengths: tf.tensor1d([REF], 'int32'),
      refPitch: tf.zeros([1]) as tf.Tensor1D,
    };
    // The alignment generation followed: its plan, as token positions per step.
    const plan = Int32Array.from({ length: g.frames / R }, (_, s) =>
      g.alignment.subarray(s * u.ids.length, (s + 1) * u.ids.length).indexOf(1),
    );
    const alignment = {
      steps: tf.tensor2d(plan, [1, plan.length], 'int32'),
      durations: tf.zeros([1, u.ids.length]) as tf.Tensor2D,
    };
    const out = forced.forward({ ...batch, alignment }, { training: false });
    const drift = tf.max(tf.abs(tf.sub(out.melPre, batch.mel))).dataSync()[0];
    assert.ok(drift < 1e-4, `cached decoding drifts from the teacher-forced pass by ${drift}`);
    forced.dispose();
  });
});
