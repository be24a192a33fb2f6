// The vocoder's own rule: the settings its inverse STFT and its losses need (src/core/vocoder).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar } from 'yaml';
import { at, fired, type Rule, type RuleContext } from './rule-context.js';
import type { XttsConfig } from './schema.js';

type VocoderConfig = XttsConfig['vocoder'];

export const vocoderShapeRule: Rule = {
  id: 'vocoder/shape',
  title: 'The vocoder can invert the features and measure its segments',
  severity: 'error',
  tasks: ['vocoder'],
  rationale:
    "The vocoder's inverse STFT overlap-adds whole hops, so n_fft must be a multiple of hop_length; its " +
    'multi-resolution STFT loss looks at windows up to 2·n_fft, so a training segment must hold at least ' +
    '4·n_fft samples, or the largest resolution has too few frames to say anything. Vocoder runs train on ' +
    'one device for now: device.gpus and device.data_device would not be honoured, so they are refused. ' +
    'An adversarial run needs at least one discriminator. Its convolutions pad both sides alike, which needs an ' +
    'odd kernel.',
  check(ctx) {
    const { audio: a, vocoder: v, device } = ctx.config;
    const samples = v.segment_frames * a.hop_length;
    const needed = 4 * a.n_fft;
    const gan = v.adversarial;
    return fired([
      gan.enabled &&
        gan.periods.length === 0 &&
        gan.resolution_channels === 0 &&
        at(
          ctx,
          'vocoder.adversarial.periods',
          'error',
          'adversarial training with no discriminator: periods is [] and resolution_channels is 0',
          'periods: [2, 3, 5, 7, 11]',
        ),
      a.n_fft % a.hop_length !== 0 &&
        at(
          ctx,
          'audio.hop_length',
          'error',
          `n_fft ${a.n_fft} is not a multiple of hop_length ${a.hop_length}`,
          `hop_length: ${a.n_fft / 4}`,
        ),
      samples < needed &&
        at(
          ctx,
          'vocoder.segment_frames',
          'error',
          `segment_frames ${v.segment_frames} × hop ${a.hop_length} = ${samples} samples, ` +
            `fewer than 4 × n_fft = ${needed}`,
          `segment_frames: ${Math.ceil(needed / a.hop_length)}`,
        ),
      v.kernel % 2 === 0 &&
        at(
          ctx,
          'vocoder.kernel',
          'error',
          `kernel ${v.kernel} must be odd to keep frames aligned (an even width shifts them by half a frame)`,
          `kernel: ${v.kernel + 1}`,
        ),
      device.gpus !== null &&
        at(
          ctx,
          'device.gpus',
          'error',
          'a vocoder run trains on one device: data-parallel replicas are not built for it yet',
          'gpus: null',
        ),
      device.data_device !== null &&
        at(
          ctx,
          'device.data_device',
          'error',
          'a vocoder run validates on its training device: a data device is not built for it yet',
          'data_device: null',
        ),
    ]);
  },
};

/** The kinds of run a vocoder key names: a vocoder for its eval audio or to start from, an acoustic model's mels. */
const CHECKPOINT_KEYS = [
  { key: 'vocoder.checkpoint', task: 'acoustic', kind: 'vocoder', path: (v: VocoderConfig) => v.checkpoint },
  { key: 'vocoder.init_from', task: 'vocoder', kind: 'vocoder', path: (v: VocoderConfig) => v.init_from },
  {
    key: 'vocoder.finetune_acoustic',
    task: 'vocoder',
    kind: 'acoustic',
    path: (v: VocoderConfig) => v.finetune_acoustic,
  },
] as const;

export const vocoderCheckpointsRule: Rule = {
  id: 'vocoder/checkpoints',
  title: 'The runs the vocoder keys name are there, and of their kind',
  severity: 'error',
  environment: true,
  rationale:
    "vocoder.checkpoint (an acoustic run's eval audio), vocoder.init_from and vocoder.finetune_acoustic name " +
    'run folders (or checkpoints) that train reads before its first step and refuses if missing or of the ' +
    'other kind: an acoustic model where a vocoder is meant, or the reverse. Found here, before the data is ' +
    'prepared. (Paths are relative to the working directory, as train reads them.)',
  check(ctx) {
    return CHECKPOINT_KEYS.flatMap(({ key, task, kind, path: named }) => {
      const path = named(ctx.config.vocoder);
      if (typeof path !== 'string' || ctx.config.task !== task) return [];
      const found = checkpointKindAt(path);
      const want = kind === 'vocoder' ? 'a vocoder run (task: vocoder)' : 'an acoustic run';
      if (found === undefined)
        return [at(ctx, key, 'error', `${key}: ${path} holds no xtts checkpoint`, `name ${want}'s folder`)];
      return found === kind
        ? []
        : [
            at(
              ctx,
              key,
              'error',
              `${key}: ${path} is a checkpoint of ${found === 'vocoder' ? 'a vocoder' : 'an acoustic model'}`,
              `name ${want}'s folder`,
            ),
          ];
    });
  },
};

/**
 * The kind of the checkpoint `path` names (a checkpoint folder, a run folder's latest, or its checkpoints/ folder's),
 * as its state.json says; undefined where there is none to read.
 */
function checkpointKindAt(path: string): 'vocoder' | 'acoustic' | undefined {
  const latest = (checkpoints: string) => {
    try {
      return join(checkpoints, readFileSync(join(checkpoints, 'latest'), 'utf8').trim());
    } catch {
      return undefined;
    }
  };
  for (const dir of [path, latest(join(path, 'checkpoints')), latest(path)]) {
    if (dir === undefined) continue;
    try {
      const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { kind?: unknown };
      return state.kind === 'vocoder' ? 'vocoder' : 'acoustic';
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** The model.* keys a config's own files and --set overrides write (not the schema's defaults). */
function writtenModelKeys(ctx: RuleContext): string[] {
  const keys = new Set<string>();
  for (const src of ctx.loaded.sources) {
    if (src.overrides) {
      for (const k of src.overrides.keys())
        if (k.startsWith('model.')) keys.add(k.slice('model.'.length).split('.')[0]);
      continue;
    }
    // The file as written (a source's value is filled with defaults once the config is built).
    const model = src.doc?.get('model');
    if (isMap(model)) for (const pair of model.items) keys.add(String(isScalar(pair.key) ? pair.key.value : pair.key));
  }
  return [...keys];
}

export const vocoderAcousticKeysRule: Rule = {
  id: 'vocoder/acoustic-keys',
  title: "A vocoder config sets no acoustic model's keys",
  severity: 'info',
  tasks: ['vocoder'],
  rationale:
    'model.* shapes the acoustic model (its width, layers, voice options); a vocoder run builds the vocoder from ' +
    'vocoder.* and reads none of them. A model section in a vocoder config is most often an acoustic config ' +
    'copied or extended, or a size meant for the vocoder written in the wrong section: a setting that does nothing ' +
    'is worth hearing about before a run.',
  check(ctx) {
    if (ctx.config.task !== 'vocoder') return [];
    const written = writtenModelKeys(ctx);
    if (written.length === 0) return [];
    const shown = written.slice(0, 4).join(', ') + (written.length > 4 ? `, … (${written.length} in all)` : '');
    return [
      at(
        ctx,
        `model.${written[0]}`,
        'info',
        `a vocoder run reads no model.* key, and the config sets ${shown}`,
        "remove the model section; the vocoder's own size is under vocoder.* (configs/vocoder-small.yaml)",
      ),
    ];
  },
};
