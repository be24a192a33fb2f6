// A run's setup, before its first step: the prepared data, the backend (and replicas), the model and
// its optimizer, and where the run resumes from its last checkpoint.
import { join } from 'node:path';
import { type BackendChoice, boundsChecksNote, initBackend } from '../../backend/index.js';
import type { XttsConfig } from '../../config/index.js';
import { describeDataset, prepareDataset, type PreparedDataset } from '../../data/index.js';
import { ExitCode, XttsError } from '../../errors.js';
import { XttsModel } from '../../model/index.js';
import { checkCheckpointDisk, checkMemoryEstimate } from '../budget.js';
import { assignArrays, type CheckpointState, CheckpointStore, refuseNonFinite } from '../checkpoint.js';
import { AdamW } from '../optim/adamw.js';
import { planReplicas, type ReplicaPlan } from '../parallel/group.js';
import { checkVocoderCheckpoint } from '../vocoder-run.js';
import { checkResume } from './resume-checks.js';
import type { TrainOptions } from './types.js';

/** mixed_fp16's first loss scale (2¹²) and the updates in a row after which it doubles. */
export const MIXED_FP16_LOSS_SCALE = 4096;
export const MIXED_FP16_GROWTH_INTERVAL = 1000;

/** training.optimizer.name -> the optimizer it builds (AdamW over one flat buffer; others plug in here). */
const OPTIMIZERS: Record<XttsConfig['training']['optimizer']['name'], typeof AdamW> = { adamw: AdamW };

/** Where a run goes on from: step 0, or its last checkpoint's. */
export interface ResumePoint {
  step: number;
  position: { epoch: number; batch: number };
  bestValidationLoss: number | null;
  validationsWithoutImprovement: number;
}

export interface RunSetup {
  config: XttsConfig;
  data: PreparedDataset;
  /** Data-parallel replicas (device.gpus): rank 0 trains here, on the plan's first device. */
  replicas: ReplicaPlan | null;
  choice: BackendChoice;
  model: XttsModel;
  optimizer: AdamW;
  sizes: CheckpointState['sizes'];
  store: CheckpointStore;
  resumed: ResumePoint;
}

export async function setUpRun(
  o: TrainOptions,
  runDir: string,
  runId: string,
  say: (m: string) => void,
): Promise<RunSetup> {
  const config = o.loaded.config;
  const t = config.training;
  // Before the data is prepared (hours, for a large dataset that is the wrong one).
  if (o.resume) checkResume(o, runDir, say);
  if (config.vocoder?.checkpoint) checkVocoderCheckpoint(config.vocoder.checkpoint, config.audio, 'vocoder.checkpoint');
  const data = await prepareDataset(o.loaded, {
    datasetDir: o.datasetDir,
    onProgress: o.onPrepareProgress,
    strict: o.strict,
  });
  const found = describeDataset(data);
  say(found.line);
  for (const w of found.warnings) say(`warning: ${w}`);
  const replicas = await planReplicas(config.device.gpus, o.backend ?? config.device.backend);
  const { choice } = await initBackend(replicas ? replicas.backend : (o.backend ?? config.device.backend), {
    device: replicas ? replicas.devices[0] : config.device.model_device,
    unsafeApis: true,
    robustness: config.device.bounds_checks === 'on',
    matmul: config.device.matmul,
    precision: t.precision,
  });
  await import('../../model/gradients.js');
  const adapter = choice.adapter
    ? ` (${choice.adapter.description || choice.adapter.device || choice.adapter.vendor})`
    : '';
  say(`backend: ${choice.backend} — ${choice.reason}${adapter}${boundsChecksNote(choice)}`);
  // At the batch the run will train: a batch_size above the training set is the training set (see batchSizeFor).
  checkMemoryEstimate(
    {
      ...config,
      batching: { ...config.batching, batch_size: Math.min(config.batching.batch_size, data.train.length) },
    },
    choice.backend,
    say,
  );
  const sizes = {
    vocabSize: data.tokenizer.vocabSize,
    nMels: config.audio.n_mels,
    numLanguages: config.text.languages.length,
  };
  const model = new XttsModel(config.model, sizes, { seed: t.seed, convImpl: config.device.conv_kernels });
  // mixed_fp16: the matmuls round their operands to f16, so small gradients need the loss scale.
  const lossScale =
    t.precision === 'mixed_fp16'
      ? { lossScale: { initial: MIXED_FP16_LOSS_SCALE, growthInterval: MIXED_FP16_GROWTH_INTERVAL } }
      : {};
  const optimizer = new OPTIMIZERS[t.optimizer.name](model.trainableVariables(), t, lossScale);
  if (t.precision === 'mixed_fp16') {
    say(
      `mixed_fp16: matmuls on tensor cores (f16 operands, f32 sums); dynamic loss ` +
        `scale from ${MIXED_FP16_LOSS_SCALE}, doubled ` +
        `after ${MIXED_FP16_GROWTH_INTERVAL} updates in a row, halved on an overflow ` +
        `(that step makes no update)`,
    );
  }
  const store = new CheckpointStore(runDir);
  checkCheckpointDisk(runDir, model.parameterCount(), t.keep_checkpoints, say);
  const resumed = o.resume ? resume(store, runDir, runId, data, config.text, model, optimizer, say) : undefined;
  return {
    config,
    data,
    replicas,
    choice,
    model,
    optimizer,
    sizes,
    store,
    resumed: resumed ?? {
      step: 0,
      position: { epoch: 0, batch: 0 },
      bestValidationLoss: null,
      validationsWithoutImprovement: 0,
    },
  };
}

/**
 * The run's last checkpoint into the model and optimizer, refused where another run wrote it, where it
 * holds NaN or Inf, or where the dataset's characters changed since; undefined where the run has none
 * (stopped before its first checkpoint, it starts over as the same run).
 */
export function resume(
  store: CheckpointStore,
  runDir: string,
  runId: string,
  data: Pick<PreparedDataset, 'tokenizer'>,
  text: XttsConfig['text'],
  model: Pick<XttsModel, 'setWeights' | 'dropout'>,
  optimizer: Pick<AdamW, 'setState'>,
  say: (m: string) => void,
): ResumePoint | undefined {
  const dir = store.latest();
  if (!dir) {
    say(`--resume: ${runDir}'s run has no checkpoint yet: it starts over from step 0`);
    return undefined;
  }
  // A diverged or damaged checkpoint is refused, naming what is broken and the one to resume from instead.
  const ckpt = store.loadForResume<CheckpointState>(dir, {}, (c) => refuseNonFinite(dir, c));
  if (ckpt.state.runId !== undefined && ckpt.state.runId !== runId) {
    throw new XttsError('RUN_MIXED', `${dir} was written by run ${ckpt.state.runId}, not by ${runDir}'s run ${runId}`, {
      exitCode: ExitCode.usage,
      position: { file: join(dir, 'state.json') },
      suggestions: ['resume with --output naming the folder that run was trained in'],
    });
  }
  if (ckpt.state.tokenizerIdentity !== data.tokenizer.identity()) {
    // The text settings that decide the symbols, where the command changed them; else the data did.
    const theirs = ckpt.state.config?.text ?? text;
    const changed = (['cleaners', 'tokenizer', 'languages', 'phonemizer_command'] as const)
      .filter((k) => theirs[k] !== undefined && JSON.stringify(theirs[k]) !== JSON.stringify(text[k]))
      .map((k) => `text.${k} ${JSON.stringify(text[k])} where the run had ${JSON.stringify(theirs[k])}`);
    throw new XttsError(
      'RESUME_TOKENIZER_CHANGED',
      changed.length
        ? `this command reads the texts with ${changed.join(', ')}: the symbols of ${dir}'s tokenizer no longer match`
        : `the dataset's characters changed since ${dir} was written: its tokenizer no longer matches`,
      {
        suggestions: [
          changed.length
            ? "resume with the run's text settings, or train these in a new run (--output NEW_DIR, without --resume)"
            : 'resume with the dataset the run was trained on, or start a new run (--output NEW_DIR)',
        ],
      },
    );
  }
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => model.setWeights(w));
  assignArrays(ckpt.optimizer, join(dir, 'optimizer.safetensors'), (s) => optimizer.setState(s));
  model.dropout.rngState = ckpt.state.dropoutRng;
  say(`resumed from ${dir} at step ${ckpt.state.step}`);
  const { step, position, bestValidationLoss, validationsWithoutImprovement } = ckpt.state;
  return { step, position, bestValidationLoss, validationsWithoutImprovement };
}
