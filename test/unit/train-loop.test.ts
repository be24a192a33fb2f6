// The training loop's parts, each on its own without training end to end: the queue of pipelined
// steps (fake steps whose readbacks the test settles), the run log (the real run.sqlite in a temporary
// folder), the batch feed and the one-device step issuer (the real tiny model on the cpu backend, a
// list of synthetic batches for the loader), the device probes' plan, resuming, and the precision policy.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import Database from 'better-sqlite3';
import { KernelCounter, precisionSupported } from '../../src/core/backend/index.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import type { LoadedBatch } from '../../src/core/data/loader.js';
import { XttsModel } from '../../src/core/model/model.js';
import { CheckpointStore } from '../../src/core/training/checkpoint.js';
import { BatchFeed, type BatchSource } from '../../src/core/training/loop/batch-feed.js';
import { DeviceProbes } from '../../src/core/training/loop/device-probes.js';
import { LocalSteps, meanStats } from '../../src/core/training/loop/local-steps.js';
import { RunLog } from '../../src/core/training/loop/run-log.js';
import { refuseOtherFeatures } from '../../src/core/training/loop/resume-checks.js';
import { resume } from '../../src/core/training/loop/run-setup.js';
import { type IssuedStep, type StepRead, StepQueue } from '../../src/core/training/loop/step-queue.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import { STEP_STATS } from '../../src/core/training/optim/train-step.js';
import type { StepRecord } from '../../src/core/telemetry/spans.js';
import { SpanTimer } from '../../src/core/telemetry/spans.js';
import { tempDir, type TempDir } from '../helpers/tmp.js';
import { PRESETS, shapeFor, SIZES, syntheticHostBatch } from './model-fixtures.js';

let tmp: TempDir;
before(async () => {
  await tf.setBackend('cpu');
  tmp = tempDir('xtts-loop-');
});
after(() => tmp.remove());

/** A step record as the loop writes it, of step `step`. */
function record(step: number): StepRecord {
  const spans = {
    dataWaitMs: 1,
    uploadMs: 0,
    forwardBackwardMs: 2,
    optimizerMs: 1,
    syncMs: 0,
    allReduceMs: 0,
    checkpointMs: 0,
    otherMs: 0,
  };
  return {
    step,
    startMs: step * 10,
    wallMs: 10,
    spans,
    epoch: 0,
    batchIndex: step - 1,
    bucket: 0,
    batchSize: 4,
    tokens: 8,
    frames: 16,
    kernels: 100,
    readySlots: 1,
    learningRate: 1e-3,
  };
}

/** A fake issued step whose readback the test resolves; it notes when it is read and freed. */
function fakeStep(events: string[], name: string, flag: number | Promise<never>): IssuedStep {
  return {
    batch: {} as LoadedBatch,
    learningRate: 1e-3,
    samples: 4,
    kernels: 1,
    flops: 1,
    programs: 1,
    replicaParts: [],
    read: (withStats) => {
      events.push(`read ${name}${withStats ? ' with stats' : ''}`);
      if (typeof flag !== 'number') return flag;
      return Promise.resolve<StepRead>({ stats: withStats ? [0.5, 0.1, 0.2, 0.1, 0.1, 3, flag] : null, flag });
    },
    held: () => [],
    dispose: () => events.push(`dispose ${name}`),
  };
}

describe('the step queue (pipelined steps)', () => {
  test(
    'readbacks start when a step is queued; settling reads the oldest first, keeps ' +
      '`keep` waiting, frees each step once',
    async () => {
      const events: string[] = [];
      const settled: [number, number][] = [];
      const queue = new StepQueue((rec, read) => {
        settled.push([rec.step, read.flag]);
        return false;
      });
      for (let s = 1; s <= 5; s++) queue.push(record(s), fakeStep(events, `s${s}`, 1), s === 4);
      assert.deepEqual(events, ['read s1', 'read s2', 'read s3', 'read s4 with stats', 'read s5']);
      assert.equal(await queue.settle(3), null);
      assert.deepEqual(settled, [
        [1, 1],
        [2, 1],
      ]);
      assert.equal(queue.length, 3);
      assert.equal(await queue.settle(0), null);
      assert.deepEqual(
        settled.map(([s]) => s),
        [1, 2, 3, 4, 5],
      );
      assert.deepEqual(
        events.filter((e) => e.startsWith('dispose')),
        ['dispose s1', 'dispose s2', 'dispose s3', 'dispose s4', 'dispose s5'],
      );
    },
  );

  test(
    'the step where the settle callback says stop is returned; those after it wait ' + 'until dropped, freed unread',
    async () => {
      const events: string[] = [];
      const queue = new StepQueue((rec, read) => read.flag === 0 && rec.step >= 2);
      queue.push(record(1), fakeStep(events, 's1', 0), false);
      queue.push(record(2), fakeStep(events, 's2', 0), false);
      queue.push(record(3), fakeStep(events, 's3', 1), false);
      assert.equal(await queue.settle(0), 2);
      assert.equal(queue.length, 1);
      queue.drop();
      assert.equal(queue.length, 0);
      assert.deepEqual(
        events.filter((e) => e.startsWith('dispose')),
        ['dispose s1', 'dispose s2', 'dispose s3'],
      );
    },
  );

  test(
    'a readback that fails frees its step and reaches the loop; an unsettled failure ' + 'is no unhandled rejection',
    async () => {
      const events: string[] = [];
      const queue = new StepQueue(() => false);
      queue.push(record(1), fakeStep(events, 's1', Promise.reject(new Error('device lost'))), false);
      await new Promise((resolve) => setImmediate(resolve));
      await assert.rejects(queue.settle(0), /device lost/);
      assert.deepEqual(events, ['read s1', 'dispose s1']);
    },
  );

  test("meanStats: losses averaged over micro-batches, gradient norm and finite flag the update's", () => {
    const micro = STEP_STATS.map((_, i) => i + 1);
    const update = STEP_STATS.map((_, i) => 10 * (i + 1));
    const mean = meanStats([micro, update]);
    for (const [i, name] of STEP_STATS.entries())
      assert.equal(mean[i], name === 'gradNorm' || name === 'finite' ? update[i] : (micro[i] + update[i]) / 2, name);
  });
});

describe('the run log', () => {
  test(
    'metrics, steps and meta land in run.sqlite; the progress line is the last log ' +
      "interval's figures; TensorBoard only when asked",
    () => {
      const dir = tmp.mkdir('log');
      const progress: unknown[] = [];
      const log = RunLog.open(dir, {
        tensorboard: true,
        maxSteps: 10,
        logEvery: 2,
        onProgress: (p) => progress.push(p),
      });
      for (let s = 1; s <= 4; s++) log.addStep(record(s));
      // STEP_STATS: loss, melPre, melPost, alignedText, duration, pitch, gradNorm, finite.
      const logged = log.logStats(4, [0.8, 0.3, 0.2, 0.2, 0.1, 0.04, 2.5, 1], 1e-3);
      assert.deepEqual(logged, { loss: 0.8, gradNorm: 2.5, flag: 1 });
      assert.equal(log.trainingDurationError, 0.1);
      assert.equal(log.countFlag(0), true);
      assert.equal(log.countFlag(-1), false);
      assert.equal(log.nonFiniteSteps, 1);
      log.reportProgress(4, logged.loss, 1e-3);
      // Two steps of 10 ms, 4 utterances each, 1 ms of each waiting for data; 6 steps to go.
      assert.deepEqual(progress, [
        {
          step: 4,
          maxSteps: 10,
          loss: 0.8,
          learningRate: 1e-3,
          samplesPerS: 400,
          dataWaitShare: 0.1,
          stepMs: 10,
          etaS: 0.06,
          nonFiniteSteps: 1,
          gpuUtilizationPct: undefined,
        },
      ]);
      // A model without model.pitch_contour has a pitch loss of exactly 0: no loss/pitch curve for it.
      log.logStats(6, [0.7, 0.3, 0.2, 0.2, 0.1, 0, 2.5, 1], 1e-3);
      log.writeLossCurve();
      log.db.setMeta('runId', 'abc');
      log.close();
      const db = new Database(join(dir, 'run.sqlite'), { readonly: true });
      const metrics = db.prepare('SELECT name, value FROM metrics WHERE step = 4 ORDER BY name').all() as {
        name: string;
        value: number;
      }[];
      assert.deepEqual(
        metrics.map((m) => m.name),
        [
          'grad_norm',
          'learning_rate',
          'loss/aligned_text',
          'loss/duration',
          'loss/mel_post',
          'loss/mel_pre',
          'loss/pitch',
          'loss/train',
          // The progress line's speed, as in TensorBoard (no GPU utilisation without a GPU sampler).
          'perf/data_wait_share',
          'perf/samples_per_s',
          'perf/step_ms',
        ],
      );
      const stepMs = db.prepare("SELECT value FROM metrics WHERE name = 'perf/step_ms' AND step = 4").get() as {
        value: number;
      };
      assert.equal(stepMs.value, 10);
      const pitchRows = db.prepare("SELECT step FROM metrics WHERE name = 'loss/pitch'").all();
      assert.deepEqual(pitchRows, [{ step: 4 }]);
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM steps').get() as { n: number }).n, 4);
      db.close();
      assert.ok(existsSync(join(dir, 'loss-curve.png')));
      assert.ok(readdirSync(dir).some((f) => f.startsWith('events.out.tfevents')));
      const quiet = tmp.mkdir('quiet');
      RunLog.open(quiet, { tensorboard: false, maxSteps: 1, logEvery: 1 }).close();
      assert.ok(!readdirSync(quiet).some((f) => f.startsWith('events.out.tfevents')));
    },
  );
});

describe('device probes', () => {
  test(
    'the last N steps run timed; where the backend has no device time the run is N ' + 'steps shorter and says why',
    () => {
      const timed = DeviceProbes.plan(3, 20, undefined);
      assert.equal(timed.maxSteps, 20);
      assert.equal(timed.probes.from, 17);
      assert.equal(timed.probes.summary(), undefined);
      const none = DeviceProbes.plan(3, 20, 'the cpu backend computes inside each kernel call');
      assert.equal(none.maxSteps, 17);
      assert.equal(none.probes.from, 17);
      assert.deepEqual(none.probes.summary(), {
        available: false,
        reason: 'the cpu backend computes inside each kernel call',
      });
      assert.equal(DeviceProbes.plan(0, 20, 'x').maxSteps, 20);
    },
  );
});

/** Synthetic loader batches of the tiny model's shape. */
function batches(n: number): LoadedBatch[] {
  const shape = shapeFor(PRESETS.tiny, 2, 6, 16);
  return Array.from({ length: n }, (_, i) => {
    const h = syntheticHostBatch(shape, 10 + i);
    return {
      ...h,
      speakers: new Int32Array(shape.batchSize),
      shape: {
        batchSize: shape.batchSize,
        tokens: shape.tokens,
        frames: shape.frames,
        refFrames: shape.refFrames,
        nMels: shape.nMels,
      },
      bucket: 0,
      fillers: 0,
      epoch: 0,
      index: i,
      waitMs: 0,
      readySlots: 1,
      slot: i,
    } as LoadedBatch;
  });
}

/** A loader over a list; it notes what is taken, given back and closed. */
function listSource(list: LoadedBatch[], events: string[]): BatchSource {
  let i = 0;
  return {
    next: async () => {
      if (i >= list.length) return undefined;
      events.push(`next ${i}`);
      return list[i++];
    },
    release: (b) => events.push(`release ${b.index}`),
    close: async () => {
      events.push('close');
    },
  };
}

describe('the batch feed', () => {
  test(
    'with the lookahead, the next batches are uploaded and aligned before the ' +
      "current step; none past the run's last; close frees them",
    async () => {
      const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 3 });
      const events: string[] = [];
      const aligned: number[] = [];
      const aligner = {
        align: (...args: Parameters<XttsModel['align']>) => (
          aligned.push(args[0].tokens.shape[0]), model.align(...args)
        ),
        pitchContour: model.pitchContour,
        config: model.config,
      };
      // The model's first alignment makes its cached constants: made before counting.
      const warm = new BatchFeed({
        source: listSource(batches(1), []),
        model,
        reductionFactor: PRESETS.tiny.reduction_factor,
        prior: 0,
        ahead: 0,
      });
      BatchFeed.dispose((await warm.take(new SpanTimer()))!);
      const before = tf.memory().numTensors;
      const feed = new BatchFeed({
        source: listSource(batches(5), events),
        model: aligner,
        reductionFactor: PRESETS.tiny.reduction_factor,
        prior: 0,
        ahead: 2,
      });
      const timer = new SpanTimer();
      const first = await feed.take(timer);
      assert.equal(first!.batch.index, 0);
      await feed.fillAhead(10, timer);
      assert.deepEqual(events, ['next 0', 'release 0', 'next 1', 'release 1', 'next 2', 'release 2']);
      assert.equal(aligned.length, 3, 'the two batches ahead were aligned before their steps');
      BatchFeed.dispose(first!);
      const second = await feed.take(timer);
      assert.equal(second!.batch.index, 1);
      await feed.fillAhead(1, timer);
      assert.equal(
        events.filter((e) => e.startsWith('next')).length,
        3,
        'one batch ahead already covers the one step left',
      );
      BatchFeed.dispose(second!);
      await feed.close();
      assert.equal(events.at(-1), 'close');
      assert.equal(tf.memory().numTensors, before, 'the batch prepared ahead and never trained on is freed');
      assert.ok(timer.spans.dataWaitMs >= 0 && timer.spans.uploadMs > 0);
      model.dispose();
    },
  );

  test('without the lookahead nothing is prepared ahead', async () => {
    const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 3 });
    const events: string[] = [];
    const feed = new BatchFeed({
      source: listSource(batches(3), events),
      model,
      reductionFactor: PRESETS.tiny.reduction_factor,
      prior: 0,
      ahead: 0,
    });
    const fed = await feed.take(new SpanTimer());
    await feed.fillAhead(5, new SpanTimer());
    assert.deepEqual(events, ['next 0', 'release 0']);
    BatchFeed.dispose(fed!);
    await feed.close();
    model.dispose();
  });
});

describe('one-device steps', () => {
  test(
    'a step of two accumulated micro-batches reads back finite stats; data running ' +
      'out inside a step makes no update and frees its gradients',
    async () => {
      const config = loadConfig(presetPath('quickstart'), { set: ['training.grad_accumulation_steps=2'] }).loaded!
        .config;
      const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 5 });
      const optimizer = new AdamW(model.trainableVariables(), config.training);
      const events: string[] = [];
      const feed = new BatchFeed({
        source: listSource(batches(3), events),
        model,
        reductionFactor: PRESETS.tiny.reduction_factor,
        prior: 0,
        ahead: 0,
      });
      const kernels = new KernelCounter({ flops: true }).install(tf as never);
      const { probes } = DeviceProbes.plan(0, 2, undefined);
      const steps = new LocalSteps({ feed, model, optimizer, config, kernels, probes, maxSteps: 2, lookahead: false });
      try {
        const timer = new SpanTimer();
        const first = await steps.issue(0, timer);
        assert.ok(first);
        assert.equal(first.samples, 4, 'two micro-batches of two');
        assert.equal(first.batch.index, 1, "the last micro-batch names the step's place");
        assert.ok(first.kernels > 100 && first.flops > 0);
        assert.equal(first.replayed, undefined, 'no capture without a replayer');
        const read = await first.read(true);
        assert.equal(read.flag, 1);
        assert.ok(read.stats!.every(Number.isFinite));
        first.dispose();
        assert.ok(timer.spans.forwardBackwardMs > 0 && timer.spans.optimizerMs > 0);
        const held = tf.memory().numTensors;
        assert.equal(await steps.issue(1, new SpanTimer()), null, 'one batch left of a step of two');
        assert.equal(tf.memory().numTensors, held, "the half step's gradients and stats are freed");
      } finally {
        kernels.uninstall();
        await feed.close();
        optimizer.dispose?.();
        model.dispose();
      }
    },
  );
});

/** The text settings a resume compares with its run's where the tokenizers differ. */
const TEXT = {
  cleaners: 'english',
  tokenizer: 'characters',
  languages: ['en'],
  phonemizer_command: 'espeak-ng',
} as never;

/** A checkpoint's state.json as train writes it at step 3, of run `runId`, its tokenizer `identity`. */
function checkpointState(runId: string, identity: string, config: object = {}) {
  return {
    runId,
    step: 3,
    position: { epoch: 0, batch: 3 },
    dropoutRng: 1,
    bestValidationLoss: null,
    validationsWithoutImprovement: 0,
    tokenizer: {},
    tokenizerIdentity: identity,
    stats: { mean: [0], std: [1] },
    speakers: [],
    languages: [],
    sizes: { vocabSize: 1, nMels: 1, numLanguages: 1 },
    config: { model: {}, audio: {}, training: {}, ...config },
  };
}

describe('resuming', () => {
  test(
    "a run without a checkpoint starts over (said); another run's checkpoint is " + 'refused, naming its state.json',
    () => {
      const dir = tmp.mkdir('resume');
      const said: string[] = [];
      const noop = { setWeights: () => undefined, dropout: { rngState: 0 } } as never;
      assert.equal(
        resume(
          new CheckpointStore(dir),
          dir,
          'aaaaaaaaaaaaaaaa',
          { tokenizer: { identity: () => 'x' } } as never,
          TEXT,
          noop,
          { setState: () => undefined } as never,
          (m) => said.push(m),
        ),
        undefined,
      );
      assert.match(said[0], /has no checkpoint yet: it starts over from step 0/);
      const store = new CheckpointStore(dir);
      const weights = [{ name: 'w', shape: [2], dtype: 'float32' as const, data: new Float32Array([1, 2]) }];
      const state = checkpointState('bbbbbbbbbbbbbbbb', 'x');
      store.save(3, { weights, optimizer: weights, state }, { keep: 2, best: false });
      assert.throws(
        () =>
          resume(
            store,
            dir,
            'aaaaaaaaaaaaaaaa',
            { tokenizer: { identity: () => 'x' } } as never,
            TEXT,
            noop,
            { setState: () => undefined } as never,
            () => undefined,
          ),
        (e: Error & { code?: string; position?: { file: string } }) =>
          e.code === 'RUN_MIXED' &&
          /written by run bbbbbbbbbbbbbbbb/.test(e.message) &&
          e.position!.file.endsWith('state.json'),
      );
    },
  );

  test('a resume at other mel settings is refused; other audio settings and another batch size are said', () => {
    const now = loadConfig(presetPath('quickstart')).loaded!.config;
    const said: string[] = [];
    const check = (recorded: object) => () => refuseOtherFeatures('/runs/r', recorded, now, (m) => said.push(m));
    assert.throws(
      check({ audio: { ...now.audio, sample_rate_hz: 16000 } }),
      (e: Error & { code?: string; suggestions: string[] }) =>
        e.code === 'RESUME_AUDIO_CHANGED' &&
        e.message.includes(`audio.sample_rate_hz 16000 (the run) vs ${now.audio.sample_rate_hz}`) &&
        /without a --set of audio\.sample_rate_hz\)/.test(e.suggestions[0]) &&
        /--output .* \(without --resume\)/.test(e.suggestions[1]),
    );
    // A run whose version recorded fewer keys is compared on those it has.
    const { n_mels: _, ...older } = now.audio;
    check({ audio: older })();
    check({ audio: now.audio, batching: now.batching })();
    assert.deepEqual(said, []);
    const trim = { ...now.audio.trim, top_db: now.audio.trim.top_db + 10 };
    check({ audio: { ...now.audio, trim }, batching: { batch_size: 99 } })();
    assert.equal(said.length, 2, said.join('\n'));
    assert.match(
      said[0],
      new RegExp(`audio\\.trim\\.top_db ${now.audio.trim.top_db} where /runs/r's run had ${trim.top_db}:`),
    );
    assert.match(said[1], new RegExp(`batching\\.batch_size ${now.batching.batch_size} where .* trained at 99`));
  });

  test("a tokenizer changed by the command's text settings is said so (not blamed on the data)", () => {
    const dir = tmp.mkdir('resume-text');
    const store = new CheckpointStore(dir);
    const weights = [{ name: 'w', shape: [2], dtype: 'float32' as const, data: new Float32Array([1, 2]) }];
    const text = { cleaners: 'basic', tokenizer: 'characters', languages: ['en'], phonemizer_command: 'espeak-ng' };
    const state = checkpointState('aaaaaaaaaaaaaaaa', 'y', { text });
    store.save(3, { weights, optimizer: weights, state }, { keep: 2, best: false });
    const attempt = (now: unknown) => () =>
      resume(
        store,
        dir,
        'aaaaaaaaaaaaaaaa',
        { tokenizer: { identity: () => 'x' } } as never,
        now as never,
        { setWeights: () => undefined, dropout: { rngState: 0 } } as never,
        { setState: () => undefined } as never,
        () => undefined,
      );
    assert.throws(
      attempt(TEXT),
      (e: Error & { code?: string; suggestions: string[] }) =>
        e.code === 'RESUME_TOKENIZER_CHANGED' &&
        /reads the texts with text\.cleaners "english" where the run had "basic": the symbols of /.test(e.message) &&
        /resume with the run's text settings/.test(e.suggestions[0]),
    );
    // The same settings: the data's characters changed.
    assert.throws(attempt(text), (e: Error) => /the dataset's characters changed since/.test(e.message));
  });
});

describe('the precision policy', () => {
  test(
    'one answer for the validator and train: mixed_fp16 on webgpu or auto, never ' + 'over data-parallel replicas',
    () => {
      assert.equal(precisionSupported('webgpu', 'mixed_fp16').ok, true);
      assert.equal(precisionSupported('auto', 'mixed_fp16').ok, true);
      assert.equal(precisionSupported('wasm', 'mixed_fp16').ok, false);
      const replicas = precisionSupported('webgpu', 'mixed_fp16', [0, 1]);
      assert.equal(replicas.ok, false);
      assert.match(replicas.reason, /data-parallel training \(device\.gpus: \[0,1\]\) runs its replicas in float32/);
      assert.equal(precisionSupported('webgpu', 'fp32', 'all').ok, true);
    },
  );
});
