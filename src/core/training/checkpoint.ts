// Checkpoints: a folder per step written whole or not at all. Everything goes into a temporary
// folder, every file is fsynced, and one rename makes it visible; `latest` and `best` are pointer
// files replaced the same way. A write killed at any point leaves the previous checkpoint intact.
// Rotation keeps the last N and the best. A checkpoint folder holds weights.safetensors (the model),
// optimizer.safetensors (AdamW's moments and step), state.json (the rest: step, data position,
// tokenizer, feature statistics, config) and voices.safetensors (each trained speaker's voice, for
// `synthesize --speaker`); checkpoints written before safetensors (weights.json + weights.bin) still load.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type TSchema, Type } from '@sinclair/typebox';
import * as tf from '@tensorflow/tfjs-core';
import { Ajv, type ValidateFunction } from 'ajv';
import type { XttsConfig } from '../config/index.js';
import { ExitCode, inFile, isXttsError, XttsError } from '../errors.js';
import { filesIn, makeFolders, type NamedFile, RUN_MARKER, writeDurable } from '../util/index.js';
import { readSafetensorsFile, safetensorsWriter } from './safetensors.js';

/** A named float32 (or int32) array with its shape: model weights and optimizer moments alike. */
export interface NamedArray {
  name: string;
  shape: number[];
  dtype: 'float32' | 'int32';
  data: Float32Array | Int32Array;
}

interface ArrayManifestEntry {
  name: string;
  shape: number[];
  dtype: 'float32' | 'int32';
  offset: number;
  length: number;
}

export const CHECKPOINT_FORMAT = 'xtts-checkpoint@1';

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Write a set of arrays as `<base>.safetensors` (readable by Python's safetensors, PyTorch, JAX), with `metadata`
 * (strings) in its header beside the format.
 */
function writeArrays(
  dir: string,
  base: string,
  arrays: readonly NamedArray[],
  metadata: Record<string, string> = {},
): void {
  writeDurable(
    join(dir, `${base}.safetensors`),
    safetensorsWriter(arrays, { format: CHECKPOINT_FORMAT, content: base, ...metadata }),
  );
}

/** The state keys a weights file carries in its header, as JSON: what another tool needs to use the weights alone. */
const SELF_DESCRIBING_KEYS = [
  'kind',
  'step',
  'config',
  'tokenizer',
  'speakers',
  'languages',
  'stats',
  'sizes',
] as const;

/**
 * The weights file's own description (safetensors `__metadata__`, string to string): the step, the resolved
 * config, the tokenizer, the speakers and languages (their indices are the embedding rows), the feature
 * statistics and sizes, each as JSON; a tool that reads only weights.safetensors knows what it holds.
 */
function weightsMetadata(state: object): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of SELF_DESCRIBING_KEYS)
    if (key in state) out[key] = JSON.stringify((state as Record<string, unknown>)[key]);
  return out;
}

/** A checkpoint's arrays: `<base>.safetensors`, or the `<base>.json` + `<base>.bin` pair checkpoints had before it. */
function readArrays(dir: string, base: string): NamedArray[] {
  const st = join(dir, `${base}.safetensors`);
  if (existsSync(st)) return readSafetensorsFile(st).arrays;
  const legacy = join(dir, `${base}.json`);
  if (!existsSync(legacy))
    throw new XttsError('CHECKPOINT_TRUNCATED', `${dir} has no ${base}.safetensors (nor an older ${base}.json)`, {
      exitCode: ExitCode.usage,
      suggestions: ['use another checkpoint of the run (checkpoints/step-*); --resume picks the latest whole one'],
    });
  let manifest: { format: string; arrays: ArrayManifestEntry[] };
  try {
    manifest = JSON.parse(readFileSync(legacy, 'utf8')) as typeof manifest;
  } catch (e) {
    throw new XttsError('CHECKPOINT_TRUNCATED', `${legacy}: not JSON (${(e as Error).message})`, {
      exitCode: ExitCode.usage,
      position: { file: legacy },
      suggestions: ['use another checkpoint of the run (checkpoints/step-*)'],
    });
  }
  if (manifest.format !== CHECKPOINT_FORMAT)
    throw new XttsError(
      'CHECKPOINT_FORMAT',
      `${dir}/${base}.json is ${manifest.format}, expected ${CHECKPOINT_FORMAT}`,
      { exitCode: ExitCode.usage },
    );
  const bin = readFileSync(join(dir, `${base}.bin`));
  return manifest.arrays.map((e) => {
    const bytes = bin.subarray(e.offset, e.offset + e.length * 4);
    if (bytes.length !== e.length * 4)
      throw new XttsError('CHECKPOINT_TRUNCATED', `${dir}/${base}.bin is shorter than its manifest says (${e.name})`, {
        exitCode: ExitCode.usage,
        suggestions: ['resume from another checkpoint: --resume picks the latest whole one'],
      });
    const copy = new Uint8Array(bytes); // aligned copy
    return {
      name: e.name,
      shape: e.shape,
      dtype: e.dtype,
      data: e.dtype === 'int32' ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer),
    };
  });
}

/**
 * What a checkpoint's state.json holds besides its format: the one description train writes and
 * resumes from, and synthesize reads. Fields added later are optional, so older checkpoints load.
 */
export interface CheckpointState {
  /** The run that wrote it (run-folder.ts); absent in checkpoints written before runs had ids. */
  runId?: string;
  step: number;
  /** Next batch to train on: resume continues exactly here. */
  position: { epoch: number; batch: number };
  dropoutRng: number;
  bestValidationLoss: number | null;
  validationsWithoutImprovement: number;
  tokenizer: unknown;
  tokenizerIdentity: string;
  stats: { mean: number[]; std: number[] };
  speakers: string[];
  languages: string[];
  sizes: { vocabSize: number; nMels: number; numLanguages: number };
  /** Vocabulary symbols the training texts never contain (their embeddings are untrained). */
  unseenSymbols?: string[];
  /**
   * Variance of the duration predictor's log errors (validation, else training): synthesis reads durations as
   * log-normal means.
   */
  logDurationVariance?: number;
  config: XttsConfig;
}

const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Finite = Type.Number({ minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE });
/**
 * What state.json must hold to be trained on or spoken from: JSON can say anything (a step of 1e300, a missing
 * position).
 */
const StateSchema = Type.Object({
  format: Type.Literal(CHECKPOINT_FORMAT),
  runId: Type.Optional(Type.String({ pattern: '^[0-9a-f]{16}$' })),
  step: Type.Integer({ minimum: 0, maximum: 1e12 }),
  position: Type.Object({ epoch: Count, batch: Count }),
  dropoutRng: Type.Integer({ minimum: 0, maximum: 2 ** 32 }),
  bestValidationLoss: Type.Union([Finite, Type.Null()]),
  validationsWithoutImprovement: Count,
  tokenizer: Type.Object({}),
  tokenizerIdentity: Type.String(),
  stats: Type.Object({
    mean: Type.Array(Finite, { minItems: 1 }),
    std: Type.Array(Type.Number({ exclusiveMinimum: 0, maximum: Number.MAX_VALUE }), { minItems: 1 }),
  }),
  speakers: Type.Array(Type.String()),
  languages: Type.Array(Type.String()),
  sizes: Type.Object({
    vocabSize: Type.Integer({ minimum: 1 }),
    nMels: Type.Integer({ minimum: 1 }),
    numLanguages: Type.Integer({ minimum: 0 }),
  }),
  unseenSymbols: Type.Optional(Type.Array(Type.String())),
  logDurationVariance: Type.Optional(Finite),
  config: Type.Object({ model: Type.Object({}), audio: Type.Object({}), training: Type.Object({}) }),
});
const validators = new WeakMap<TSchema, ValidateFunction>();

/** What a checkpoint holds: the acoustic model (no `kind` in its state) or the vocoder (`kind: 'vocoder'`). */
export type CheckpointKind = 'acoustic' | 'vocoder';

/** What to do with a checkpoint of the `found` kind where one of `kind` was asked for by `from` (a flag or key). */
function kindAdvice(kind: CheckpointKind, found: CheckpointKind, from: string | undefined): string {
  const roles = 'an acoustic run makes mels, a vocoder makes audio';
  if (from)
    return `${from} takes ${kind === 'vocoder' ? 'a vocoder run (task: vocoder)' : 'an acoustic run'}: ${roles}`;
  return found === 'vocoder'
    ? 'pass a vocoder run (task: vocoder) with --vocoder, and an acoustic run where an acoustic model is meant'
    : `pass a vocoder run (task: vocoder) with --vocoder: ${roles}`;
}

/** Whether a checkpoint's state says it holds voices (voiceArrays, written by save() since checkpoints count them). */
function recordsVoices(state: unknown): boolean {
  const n = (state as { voiceArrays?: unknown }).voiceArrays;
  return typeof n === 'number' && n > 0;
}

/** state.json of `dir`, checked against `schema` (the acoustic model's by default); every problem names the file. */
function readState(dir: string, kind: CheckpointKind, schema: TSchema, from?: string): unknown {
  const file = join(dir, 'state.json');
  const bad = (why: string) =>
    new XttsError('CHECKPOINT_STATE_INVALID', `${file}: ${why}`, {
      exitCode: ExitCode.usage,
      position: { file },
      suggestions: [
        'use another checkpoint of the run (checkpoints/step-*): a state.json is written ' +
          'whole or not at all, so this one was changed or damaged after it was written',
      ],
    });
  let state: unknown;
  try {
    state = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw bad(`not JSON (${(e as Error).message})`);
  }
  const format = (state as { format?: unknown } | null)?.format;
  if (format !== CHECKPOINT_FORMAT)
    throw new XttsError(
      'CHECKPOINT_FORMAT',
      `${file} is ${typeof format === 'string' ? format : 'of no known format'}, expected ${CHECKPOINT_FORMAT}`,
      { exitCode: ExitCode.usage, position: { file } },
    );
  const found: CheckpointKind = (state as { kind?: unknown }).kind === 'vocoder' ? 'vocoder' : 'acoustic';
  if (found !== kind) {
    throw new XttsError(
      'CHECKPOINT_KIND',
      `${dir} is a checkpoint of ${found === 'vocoder' ? 'a vocoder' : 'an acoustic model'}, not of ${
        kind === 'vocoder' ? 'a vocoder' : 'an acoustic model'
      }`,
      {
        exitCode: ExitCode.usage,
        position: { file },
        suggestions: [kindAdvice(kind, found, from)],
      },
    );
  }
  let validate = validators.get(schema);
  if (!validate) {
    validate = new Ajv({ allErrors: false, strict: false }).compile(schema);
    validators.set(schema, validate);
  }
  if (!validate(state)) {
    const e = validate.errors![0];
    throw bad(`${e.instancePath || '(top)'} ${e.message}`);
  }
  return state;
}

/** The first float array holding NaN or ±Inf, or undefined. */
export function firstNonFinite(arrays: readonly NamedArray[]): NamedArray | undefined {
  return arrays.find((a) => a.dtype === 'float32' && !a.data.every(Number.isFinite));
}

/** CHECKPOINT_NOT_FINITE for a checkpoint whose `tensor` holds NaN or ±Inf (`what` says whose). */
function notFinite(dir: string, tensor: string, what: 'weight' | 'optimizer state'): XttsError {
  return new XttsError(
    'CHECKPOINT_NOT_FINITE',
    `${dir}: ${what} ${tensor} holds NaN or infinite values: the run had diverged when this checkpoint was written`,
    {
      exitCode: ExitCode.usage,
      suggestions: [
        'resume or synthesize from an earlier checkpoint of the run (checkpoints/step-*)',
        'retrain with a lower training.learning_rate or training.optimizer.weight_decay',
      ],
    },
  );
}

/**
 * Refuses (CHECKPOINT_NOT_FINITE, naming the tensor) a checkpoint whose weights or optimizer state hold NaN or ±Inf.
 */
export function refuseNonFinite(
  dir: string,
  contents: { weights: readonly NamedArray[]; optimizer: readonly NamedArray[] },
): void {
  const weight = firstNonFinite(contents.weights);
  if (weight) throw notFinite(dir, weight.name, 'weight');
  const moment = firstNonFinite(contents.optimizer);
  if (moment) throw notFinite(dir, moment.name, 'optimizer state');
}

/**
 * Uploads a checkpoint file's arrays as tensors, hands them to `assign` (model.setWeights,
 * optimizer.setState, which copy them) and frees them; an error (arrays that do not fit) names the file.
 */
export function assignArrays(
  arrays: readonly NamedArray[],
  file: string,
  assign: (tensors: Map<string, tf.Tensor>) => void,
): void {
  const tensors = new Map(arrays.map((a) => [a.name, tf.tensor(a.data, a.shape, a.dtype)]));
  try {
    assign(tensors);
  } catch (e) {
    throw inFile(e, file);
  } finally {
    tf.dispose([...tensors.values()]);
  }
}

export interface CheckpointContents<State> {
  weights: NamedArray[];
  optimizer: NamedArray[];
  /** Everything else a resume needs (JSON): step, data position, schedule, RNG, tokenizer, stats, config. */
  state: State;
  /** The trained speakers' voices (voices.ts), `voices.safetensors`; absent in checkpoints older than voices. */
  voices?: NamedArray[];
}

export interface CheckpointInfo {
  dir: string;
  step: number;
}

const STEP_DIR = /^step-(\d{8})$/;
/** What --resume cannot load from a checkpoint but can from an earlier one (loadForResume). */
const RESUME_BLOCKERS = new Set([
  'CHECKPOINT_TRUNCATED',
  'CHECKPOINT_UNREADABLE',
  'CHECKPOINT_STATE_INVALID',
  'CHECKPOINT_NOT_FINITE',
]);

export class CheckpointStore {
  readonly root: string;

  constructor(runDir: string) {
    this.root = join(runDir, 'checkpoints');
  }

  list(): CheckpointInfo[] {
    if (!existsSync(this.root)) return [];
    return readdirSync(this.root)
      .map((name) => STEP_DIR.exec(name))
      .filter((m): m is RegExpExecArray => m !== null && existsSync(join(this.root, m[0], 'state.json')))
      .map((m) => ({ dir: join(this.root, m[0]), step: Number(m[1]) }))
      .sort((a, b) => a.step - b.step);
  }

  private pointer(name: 'latest' | 'best'): string | undefined {
    const p = join(this.root, name);
    if (!existsSync(p)) return undefined;
    const target = readFileSync(p, 'utf8').trim();
    return existsSync(join(this.root, target, 'state.json')) ? join(this.root, target) : undefined;
  }

  private setPointer(name: 'latest' | 'best', dirName: string): void {
    const tmp = join(this.root, `.${name}.${process.pid}.tmp`);
    writeDurable(tmp, `${dirName}\n`);
    renameSync(tmp, join(this.root, name));
    fsyncDir(this.root);
  }

  /** The checkpoint to resume from: `latest` if whole, else the newest whole step folder. */
  latest(): string | undefined {
    return this.pointer('latest') ?? this.list().at(-1)?.dir;
  }

  best(): string | undefined {
    return this.pointer('best');
  }

  /**
   * --resume's load of `dir` (the latest): a checkpoint damaged since it was written (a file cut short, removed or
   * overwritten; CHECKPOINT_TRUNCATED, _UNREADABLE, _STATE_INVALID) or written by a diverged run (_NOT_FINITE) is
   * refused, the error saying how to resume from the whole one before it: move the damaged one aside (nothing of a
   * run is deleted for the user). `check` runs on the loaded contents (refuseNonFinite).
   */
  loadForResume<State extends { step: number }>(
    dir: string,
    options: { kind?: CheckpointKind; schema?: TSchema },
    check: (c: CheckpointContents<State>) => void,
  ): CheckpointContents<State> {
    try {
      const contents = this.load<State>(dir, options);
      check(contents);
      return contents;
    } catch (e) {
      if (!(isXttsError(e) && RESUME_BLOCKERS.has(e.code))) throw e;
      const all = this.list();
      const mine = all.find((c) => c.dir === dir)?.step ?? Number.POSITIVE_INFINITY;
      const previous = all.filter((c) => c.step < mine).at(-1);
      const aside = `${dir}.${e.code === 'CHECKPOINT_NOT_FINITE' ? 'diverged' : 'damaged'}`;
      throw new XttsError(e.code, e.message, {
        exitCode: e.exitCode,
        ...(e.position ? { position: e.position } : {}),
        suggestions: previous
          ? [
              `move it aside (mv ${dir} ${aside}) and --resume again: it resumes from step ${previous.step} ` +
                `(${previous.dir})`,
            ]
          : ['the run has no earlier checkpoint: train it again into a new folder (--output NEW_DIR)'],
      });
    }
  }

  /**
   * Make a checkpoint written earlier the best (its validation finished after it was written: the
   * data device). False when rotation has removed it since.
   */
  markBest(dir: string): boolean {
    if (!existsSync(join(dir, 'state.json'))) return false;
    this.setPointer('best', basename(dir));
    return true;
  }

  /**
   * Writes a checkpoint; weights or optimizer state holding NaN/Inf are refused (CHECKPOINT_NOT_FINITE), nothing is
   * written.
   */
  save<State extends { runId?: string }>(
    step: number,
    contents: CheckpointContents<State>,
    options: { keep: number; best?: boolean },
  ): string {
    const name = `step-${String(step).padStart(8, '0')}`;
    refuseNonFinite(join(this.root, name), contents);
    makeFolders(this.root);
    const tmp = join(this.root, `.tmp-${name}-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    try {
      mkdirSync(tmp);
      writeArrays(tmp, 'weights', contents.weights, weightsMetadata(contents.state));
      writeArrays(tmp, 'optimizer', contents.optimizer);
      if (contents.voices?.length) writeArrays(tmp, 'voices', contents.voices);
      // How many voice arrays it holds: a checkpoint that says so and lacks the file is damaged, not one written
      // before voices (or where they could not be computed). A state read from another checkpoint keeps no count.
      const { voiceArrays: _, ...state } = contents.state as { voiceArrays?: number };
      const voices = contents.voices?.length ? { voiceArrays: contents.voices.length } : {};
      writeDurable(
        join(tmp, 'state.json'),
        JSON.stringify({ format: CHECKPOINT_FORMAT, ...state, ...voices }, null, 1),
      );
      fsyncDir(tmp);
    } catch (e) {
      // A write that failed (a full disk) leaves nothing half-written; the previous checkpoints stand.
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
    const final = join(this.root, name);
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    fsyncDir(this.root);
    this.setPointer('latest', name);
    if (options.best) this.setPointer('best', name);
    this.rotate(options.keep, contents.state.runId);
    this.sweepTemporaries();
    return final;
  }

  /**
   * A checkpoint's contents, its state checked against the schema; optimizer: false skips the
   * optimizer's moments (synthesis needs only the weights: they may be all that was kept).
   */
  load<State = CheckpointState>(
    dir: string,
    options: {
      optimizer?: boolean;
      kind?: CheckpointKind;
      schema?: TSchema;
      /** The flag or key that named it, for the advice when it is of the other kind. */
      from?: string;
    } = {},
  ): CheckpointContents<State> {
    if (!existsSync(join(dir, 'state.json'))) {
      // Its arrays without its state: a checkpoint cut short or copied in part, not a folder named by mistake.
      const arrays = ['weights', 'optimizer'].filter((b) => existsSync(join(dir, `${b}.safetensors`)));
      if (arrays.length)
        throw new XttsError(
          'CHECKPOINT_TRUNCATED',
          `${dir} has its ${arrays.join(' and ')} but no state.json (its step, config and tokenizer): the ` +
            'checkpoint was cut short or copied in part',
          {
            exitCode: ExitCode.usage,
            suggestions: ['copy the checkpoint again whole, or use another checkpoint of the run (checkpoints/step-*)'],
          },
        );
      throw new XttsError('CHECKPOINT_NOT_FOUND', `${dir} is not an xtts checkpoint (no state.json)`, {
        exitCode: ExitCode.usage,
        suggestions: ['name a run folder (its latest checkpoint is used) or one of its checkpoints/step-* folders'],
      });
    }
    const state = readState(dir, options.kind ?? 'acoustic', options.schema ?? StateSchema, options.from) as State;
    return {
      weights: readArrays(dir, 'weights'),
      optimizer: options.optimizer === false ? [] : readArrays(dir, 'optimizer'),
      state,
      ...(existsSync(join(dir, 'voices.safetensors')) || recordsVoices(state)
        ? { voices: readArrays(dir, 'voices') }
        : {}),
    };
  }

  /** Which run wrote a checkpoint (undefined: before runs had ids, or unreadable). */
  private runOf(dir: string): string | undefined {
    try {
      return (JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { runId?: string }).runId;
    } catch {
      return undefined;
    }
  }

  /**
   * Keep this run's newest `keep` checkpoints (the newest among them: save() refuses non-finite
   * weights, so the last finite one is never removed) and the best. Another run's checkpoints, and
   * those written before runs had ids, are never touched.
   */
  private rotate(keep: number, runId: string | undefined): void {
    const best = this.best();
    const mine = this.list().filter((c) => this.runOf(c.dir) === runId);
    for (const c of mine.slice(0, Math.max(0, mine.length - Math.max(1, keep))))
      if (c.dir !== best) rmSync(c.dir, { recursive: true, force: true });
  }

  /** Temporary folders of writes that were killed (never visible as checkpoints). */
  private sweepTemporaries(): void {
    for (const name of readdirSync(this.root))
      if (name.startsWith('.tmp-') && !name.endsWith(`-${process.pid}`))
        rmSync(join(this.root, name), { recursive: true, force: true });
  }
}

/** A run folder, a checkpoints folder or one checkpoint: the checkpoint folder it means. */
export function resolveCheckpoint(path: string): string {
  if (existsSync(join(path, 'state.json'))) return path;
  // checkpoints/latest or checkpoints/best: the pointer file names the step folder it points at.
  const name = basename(path);
  if ((name === 'latest' || name === 'best') && statSync(path, { throwIfNoEntry: false })?.isFile()) {
    const store = new CheckpointStore(dirname(dirname(resolve(path))));
    const target = name === 'best' ? store.best() : store.latest();
    if (target) return target;
    throw new XttsError('CHECKPOINT_NOT_FOUND', `${path} points at no checkpoint that is still there`, {
      exitCode: ExitCode.usage,
      suggestions: [`name a step folder of ${dirname(path)}, or the run folder for its latest checkpoint`],
    });
  }
  const asRun = new CheckpointStore(path).latest();
  if (asRun) return asRun;
  const asRoot = existsSync(join(path, 'latest')) ? new CheckpointStore(join(path, '..')).latest() : undefined;
  if (asRoot) return asRoot;
  throw notACheckpoint(path);
}

/** Why `path` names no checkpoint, and what to name: a run stopped before its first, a file inside one, or nothing. */
function notACheckpoint(path: string): XttsError {
  const st = statSync(path, { throwIfNoEntry: false });
  const fail = (what: string, suggestion: string) =>
    new XttsError('CHECKPOINT_NOT_FOUND', what, { exitCode: ExitCode.usage, suggestions: [suggestion] });
  const runFolder = 'name the run folder of `xtts train` (it holds checkpoints/)';
  if (!st) return fail(`${path} does not exist`, runFolder);
  if (st.isFile()) {
    const parent = dirname(resolve(path));
    return existsSync(join(parent, 'state.json'))
      ? fail(`${path} is a file of the checkpoint ${parent}`, `name the checkpoint folder: ${parent}`)
      : fail(`${path} is a file`, runFolder);
  }
  if (existsSync(join(path, RUN_MARKER)) || existsSync(join(path, 'run.sqlite')))
    return fail(
      `${path} is a run of xtts train that has no checkpoint yet (stopped, or still training, before its first)`,
      `wait for its first, or train it further: xtts train ... --output ${path} --resume (a checkpoint is written ` +
        'every training.checkpoint_every steps, and when a run is stopped)',
    );
  return fail(`no checkpoint in ${path}`, runFolder);
}

/**
 * The files of the checkpoint `path` names (a run folder's latest, or a checkpoint) as inputs named `what`, for
 * refuseOutputsOverInputs; none where it names none (the command's loading of it says why).
 */
export function checkpointInputs(path: string, what: string): NamedFile[] {
  try {
    return filesIn(resolveCheckpoint(path), what);
  } catch {
    return [];
  }
}
