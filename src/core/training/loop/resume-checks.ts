// What a resume checks before any clip is read, from the config its run's latest checkpoint records: the data it
// trained on, the mel settings its model learned (other ones would change its features from the next step on), and
// the settings that change what it trains on without breaking it (said, not refused).
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { XttsConfig } from '../../config/index.js';
import { MEL_SETTINGS_KEYS, melSettingsDiffer } from '../../data/index.js';
import { ExitCode, XttsError } from '../../errors.js';
import { shellQuote } from '../../util/index.js';
import { CheckpointStore } from '../checkpoint.js';
import { freeSibling } from '../run-folder.js';
import { hparamsOf } from './run-log.js';
import type { TrainOptions } from './types.js';

/**
 * A resume's checks before its data is prepared (hours, for a large dataset that is the wrong one): the data
 * (refuseOtherData), then the audio and batch settings (refuseOtherFeatures), against the config the run's latest
 * checkpoint records; none where it has none (it starts over) or its state.json cannot be read (named where the
 * checkpoint is loaded).
 */
export function checkResume(o: Pick<TrainOptions, 'loaded' | 'datasetDir'>, runDir: string, say: (m: string) => void) {
  const recorded = recordedConfig(runDir);
  refuseOtherData(runDir, recorded?.dataset?.path, o.loaded.datasetDir, o.datasetDir !== undefined, say);
  if (recorded) refuseOtherFeatures(runDir, recorded, o.loaded.config, say);
}

/** The config the run's latest checkpoint records (its flags written in), or undefined. */
function recordedConfig(runDir: string): Partial<XttsConfig> | undefined {
  const latest = new CheckpointStore(runDir).latest();
  if (!latest) return undefined;
  try {
    const state = JSON.parse(readFileSync(join(latest, 'state.json'), 'utf8')) as { config?: Partial<XttsConfig> };
    return state.config && typeof state.config === 'object' ? state.config : undefined;
  } catch {
    return undefined; // a damaged state.json is named where the checkpoint is loaded
  }
}

/**
 * Refuses to resume a run on other data than it trained on when the command did not name the data (a resume without
 * the --dataset the run began with reads the config's dataset); data named with --dataset (moved, or new on purpose)
 * is a warning. The recorded folder is compared where it is an absolute path (as runs record it since their flags are
 * written into their config).
 */
export function refuseOtherData(
  runDir: string,
  recorded: string | undefined,
  now: string,
  named: boolean,
  say: (m: string) => void,
): void {
  if (typeof recorded !== 'string' || !isAbsolute(recorded)) return;
  if (resolve(recorded) === resolve(now)) return;
  if (named) {
    say(`warning: --resume on ${now} (--dataset); ${runDir}'s run trained on ${recorded} until now`);
    return;
  }
  const gone = existsSync(recorded) ? '' : ' (which is no longer there: where the data moved, name it with --dataset)';
  throw new XttsError(
    'RESUME_OTHER_DATA',
    `${runDir}'s run trained on ${recorded}${gone}; this command would resume it on ${now}`,
    {
      exitCode: ExitCode.usage,
      suggestions: [
        `continue it on its data: --dataset ${shellQuote(recorded)} --output ${shellQuote(runDir)} --resume`,
        `or train on ${now} in a new run: --output ${shellQuote(freeSibling(runDir))} (without --resume)`,
      ],
    },
  );
}

/**
 * Refuses a resume whose mel settings are not the run's (its model, its mel statistics and a vocoder's targets are
 * those mels: resumed, it would go on learning other features as if they were the same); says where the other audio
 * settings (trimming, loudness: the same mels of other clips) or the batch size differ from the run's.
 */
export function refuseOtherFeatures(
  runDir: string,
  recorded: Partial<XttsConfig>,
  now: XttsConfig,
  say: (m: string) => void,
): void {
  const theirs = recorded.audio;
  if (theirs && typeof theirs === 'object') {
    // A key the run's version did not record is taken as this one's.
    const mel = melSettingsDiffer({ ...now.audio, ...theirs }, now.audio, 'the run');
    if (mel.length)
      throw new XttsError(
        'RESUME_AUDIO_CHANGED',
        `${runDir}'s run learned mels of other settings than this command's: ${mel.join('; ')}. Resumed, its ` +
          "model would go on from its next step on other features (and speak at the new settings' rate)",
        {
          exitCode: ExitCode.usage,
          suggestions: [
            `resume with the run's audio settings (the config it began with, without a --set of ${mel
              .map((d) => d.split(' ')[0])
              .join(', ')})`,
            `or train these settings in a new run: --output ${shellQuote(freeSibling(runDir))} (without --resume)`,
          ],
        },
      );
    // The other settings by their dotted keys (as TensorBoard's hyperparameters name them); keys the run's version
    // did not record are not compared.
    const [ours, had] = [hparamsOf(now.audio, 'audio.'), hparamsOf(theirs, 'audio.')];
    const mels = new Set<string>(MEL_SETTINGS_KEYS.map((k) => `audio.${k}`));
    const other = Object.keys(ours).filter((k) => !mels.has(k) && k in had && had[k] !== ours[k]);
    if (other.length)
      say(
        `warning: --resume with ${other.map((k) => `${k} ${ours[k]}`).join(', ')} where ${runDir}'s run had ` +
          `${other.map((k) => had[k]).join(', ')}: its clips' features are computed so from here on`,
      );
  }
  const batch = recorded.batching?.batch_size;
  if (typeof batch === 'number' && batch !== now.batching.batch_size)
    say(
      `warning: --resume at batching.batch_size ${now.batching.batch_size} where ${runDir}'s run trained at ` +
        `${batch}: its steps from here on average another number of clips (the learning rate and its schedule ` +
        'are the same)',
    );
}
