// The linter's rules on crafted configs written to disk: each rule fires where it should, with a
// position that points at the offending text, a fix that (applied) clears it, and a docs link that
// exists; and none fires on the quickstart preset.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { type Finding, severityRank, SEVERITIES } from '../../src/core/config/findings.js';
import { type LoadedConfig, loadConfig, presetPath, splitKeyPath } from '../../src/core/config/load.js';
import { effectiveWorkers, lintConfig, RULES } from '../../src/core/config/rules.js';
import { gradeInputWait, THRESHOLDS } from '../../src/core/config/thresholds.js';
import type { HostInventory } from '../../src/core/env/host.js';
import { repoRoot } from '../helpers/cli.js';
import { textAt } from '../helpers/positions.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-config-rules-');
after(() => tmp.remove());
const quickstartData = join(repoRoot, 'configs', 'quickstart');
const GiB = 1024 ** 3;

function load(file: string): LoadedConfig {
  const { loaded, findings } = loadConfig(file);
  assert.ok(loaded, `${file} should load: ${JSON.stringify(findings, null, 2)}`);
  return loaded;
}

/** A config extending `base` with the dataset at the bundled data; `body` starts on line 4. */
function child(name: string, body: string, base = 'quickstart'): string {
  return tmp.write(name, `extends: ${base}\ndataset:\n  path: ${quickstartData}\n${body}`);
}

/**
 * A dataset folder NAME with one clip of the bundled data as a1.wav and metadata.csv: a usable row a1 (unless
 * `withA1` is false) followed by `rows`; and a config reading it (dataset.metadata written out), its path returned.
 */
function rowsDataset(name: string, rows: string | Buffer, withA1 = true): string {
  const clip = readdirSync(join(quickstartData, 'wavs')).find((f) => f.endsWith('.wav'))!;
  tmp.write(`${name}/wavs/a1.wav`, readFileSync(join(quickstartData, 'wavs', clip)));
  const first = withA1 ? 'a1|Hello there.|Hello there.\n' : '';
  tmp.write(`${name}/metadata.csv`, Buffer.concat([Buffer.from(first), Buffer.from(rows)]));
  return tmp.write(`${name}.yaml`, `extends: quickstart\ndataset:\n  path: ./${name}\n  metadata: metadata.csv\n`);
}

function rule(id: string) {
  const r = RULES.find((x) => x.id === id);
  assert.ok(r, `no rule ${id}`);
  return r;
}

const docsHeadings = new Set(
  readFileSync(join(repoRoot, 'docs', 'rules.md'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('### '))
    .map((l) => l.slice(4).trim()),
);

interface RuleCase {
  name: string;
  ruleId: string;
  /** The YAML file to lint (its path). */
  file: () => string;
  keyPath: string;
  severity: Finding['severity'];
  /** The text the finding's position must point at (from line:col to the end of that line). */
  at: string | RegExp;
  /** The file the position must be in (default: the crafted file). */
  inFile?: () => string;
  message: RegExp;
  /** false when the fix is a placeholder to fill in (a path), not YAML that fixes the config. */
  fixApplies?: boolean;
}

const cores = availableParallelism();

const CASES: RuleCase[] = [
  {
    name: 'a dataset folder that does not exist',
    ruleId: 'dataset/path',
    file: () => tmp.write('nodata.yaml', 'extends: quickstart\ndataset:\n  path: ./no-such-folder\n'),
    keyPath: 'dataset.path',
    severity: 'error',
    at: './no-such-folder',
    message: /dataset folder not found: .*no-such-folder/,
    fixApplies: false,
  },
  {
    name: 'a dataset folder without its metadata file',
    ruleId: 'dataset/path',
    file: () => (
      tmp.mkdir('empty-dataset'),
      tmp.write('nometa.yaml', 'extends: quickstart\ndataset:\n  path: ./empty-dataset\n  metadata: rows.csv\n')
    ),
    keyPath: 'dataset.metadata',
    severity: 'error',
    at: 'rows.csv',
    message: /metadata file not found: .*rows\.csv/,
    fixApplies: false,
  },
  {
    name: 'dataset.path naming a file',
    ruleId: 'dataset/path',
    file: () =>
      tmp.write('datafile.yaml', `extends: quickstart\ndataset:\n  path: ${join(quickstartData, 'metadata.csv')}\n`),
    keyPath: 'dataset.path',
    severity: 'error',
    at: join(quickstartData, 'metadata.csv'),
    message: /is a file, not a folder/,
    fixApplies: false,
  },
  {
    name: 'a metadata row whose clip is missing (the other row trains)',
    ruleId: 'dataset/rows',
    file: () => rowsDataset('rows-missing', 'a2|Missing clip.|Missing clip.\n'),
    keyPath: 'dataset.metadata',
    severity: 'warn',
    inFile: () => tmp.at('rows-missing/metadata.csv'),
    at: 'a2|Missing clip.|Missing clip.',
    message: /^1 of the 2 rows will train; 1 row skipped: .*metadata\.csv:2 \(a2\): .*a2\.wav does not exist/,
    fixApplies: false,
  },
  {
    name: 'a metadata file none of whose rows is usable (every clip missing)',
    ruleId: 'dataset/rows',
    file: () => rowsDataset('rows-none', 'b1|One.|One.\nb2|Two.|Two.\n', false),
    keyPath: 'dataset.metadata',
    severity: 'error',
    inFile: () => tmp.at('rows-none/metadata.csv'),
    at: 'b1|One.|One.',
    message: /^no usable training rows in .*rows-none \(2 skipped: 2 missing_audio\); first: .*metadata\.csv:1 \(b1\)/,
    fixApplies: false,
  },
  {
    name: 'a metadata file in Latin-1, not UTF-8',
    ruleId: 'dataset/rows',
    file: () => rowsDataset('rows-latin1', Buffer.from('b1|caf\xe9 au lait|caf\xe9 au lait\n', 'latin1'), false),
    keyPath: 'dataset.metadata',
    severity: 'error',
    at: 'metadata.csv',
    message: /rows-latin1\/metadata\.csv is not UTF-8: none of its lines is/,
    fixApplies: false,
  },
  {
    name: 'a metadata file in UTF-16',
    ruleId: 'dataset/rows',
    file: () => rowsDataset('rows-utf16', Buffer.from('\ufeffa1|Hello there.|Hello there.\n', 'utf16le'), false),
    keyPath: 'dataset.metadata',
    severity: 'error',
    at: 'metadata.csv',
    message: /metadata\.csv is UTF-16LE text, not UTF-8/,
    fixApplies: false,
  },
  {
    name: 'vocoder.checkpoint naming a folder with no checkpoint',
    ruleId: 'vocoder/checkpoints',
    file: () => child('no-vocoder.yaml', `vocoder:\n  checkpoint: ${tmp.mkdir('no-vocoder-run')}\n`),
    keyPath: 'vocoder.checkpoint',
    severity: 'error',
    at: tmp.at('no-vocoder-run'),
    message: /^vocoder\.checkpoint: .*no-vocoder-run holds no xtts checkpoint$/,
    fixApplies: false,
  },
  {
    name: "vocoder.init_from naming an acoustic run's latest checkpoint",
    ruleId: 'vocoder/checkpoints',
    file: () => {
      // A run folder as train leaves it: checkpoints/latest naming a step folder whose state.json has no kind.
      tmp.write('acoustic-run/checkpoints/step-00000002/state.json', '{"step": 2}');
      tmp.write('acoustic-run/checkpoints/latest', 'step-00000002\n');
      return child('init-acoustic.yaml', `vocoder:\n  init_from: ${tmp.at('acoustic-run')}\n`, 'vocoder-tiny');
    },
    keyPath: 'vocoder.init_from',
    severity: 'error',
    at: tmp.at('acoustic-run'),
    message: /^vocoder\.init_from: .*acoustic-run is a checkpoint of an acoustic model$/,
    fixApplies: false,
  },
  {
    name: 'fmax above Nyquist',
    ruleId: 'audio/consistency',
    file: () => child('fmax.yaml', 'audio:\n  sample_rate_hz: 16000\n  fmax_hz: 11025\n'),
    keyPath: 'audio.fmax_hz',
    severity: 'error',
    at: '11025',
    message: /above Nyquist \(8000 Hz for 16000 Hz audio\)/,
  },
  {
    name: 'a window longer than the FFT',
    ruleId: 'audio/consistency',
    file: () => child('win.yaml', 'audio:\n  n_fft: 512\n  win_length: 1024\n'),
    keyPath: 'audio.win_length',
    severity: 'error',
    at: '1024',
    message: /win_length 1024 is longer than n_fft 512/,
  },
  {
    name: 'heads not dividing d_model',
    ruleId: 'model/shape',
    file: () => child('heads.yaml', 'model:\n  heads: 3\n'),
    keyPath: 'model.heads',
    severity: 'error',
    at: '3',
    message: /heads 3 does not divide d_model 128/,
  },
  {
    name: "a d_model that the preset's heads do not divide (found in the preset)",
    ruleId: 'model/shape',
    file: () => child('dmodel.yaml', 'model:\n  d_model: 129\n', 'tiny'),
    keyPath: 'model.heads',
    severity: 'error',
    at: '2',
    inFile: () => presetPath('tiny'),
    message: /heads 2 does not divide d_model 129/,
  },
  {
    name: 'more workers than CPU cores',
    ruleId: 'pipeline/workers-vs-cores',
    file: () => child('workers.yaml', `pipeline:\n  workers: ${cores + 4}\n`),
    keyPath: 'pipeline.workers',
    severity: 'warn',
    at: String(cores + 4),
    message: new RegExp(`${cores + 4} workers on ${cores} CPU cores`),
  },
  {
    name: 'prefetch depth 1',
    ruleId: 'pipeline/prefetch-depth',
    file: () => child('prefetch.yaml', 'pipeline:\n  prefetch_depth: 1\n'),
    keyPath: 'pipeline.prefetch_depth',
    severity: 'warn',
    at: '1',
    message: /prefetch_depth 1/,
  },
  {
    name: 'a prefetch ring deeper than useful',
    ruleId: 'pipeline/prefetch-depth',
    file: () => child('prefetch-deep.yaml', 'pipeline:\n  prefetch_depth: 20\n'),
    keyPath: 'pipeline.prefetch_depth',
    severity: 'info',
    at: '20',
    message: /more than 8 rarely helps/,
  },
  {
    name: 'the cache off',
    ruleId: 'pipeline/cache',
    file: () => child('cache.yaml', 'pipeline:\n  cache:\n    enabled: false\n'),
    keyPath: 'pipeline.cache.enabled',
    severity: 'warn',
    at: 'false',
    message: /feature cache is off/,
  },
  {
    name: 'buckets 0 (dynamic shapes)',
    ruleId: 'batching/static-shapes',
    file: () => child('buckets0.yaml', 'batching:\n  buckets: 0\n'),
    keyPath: 'batching.buckets',
    severity: 'warn',
    at: '0',
    message: /recompiles kernels/,
  },
  {
    name: 'buckets 40',
    ruleId: 'batching/static-shapes',
    file: () => child('buckets40.yaml', 'batching:\n  buckets: 40\n'),
    keyPath: 'batching.buckets',
    severity: 'warn',
    at: '40',
    message: /40 buckets/,
  },
  {
    name: "the big preset's batch against a 16 GiB model budget (batch size found in big.yaml)",
    ruleId: 'batching/memory',
    file: () => child('memory.yaml', 'device:\n  model_memory_budget_mb: 16384\n', 'big'),
    keyPath: 'batching.batch_size',
    severity: 'error',
    at: '64',
    inFile: () => presetPath('big'),
    message: /exceeds device\.model_memory_budget_mb = 16\.0 GiB/,
  },
  {
    name: 'a small batch on a GPU backend',
    ruleId: 'batching/small-batch',
    file: () => child('smallbatch.yaml', 'batching:\n  batch_size: 4\ndevice:\n  backend: webgpu\n'),
    keyPath: 'batching.batch_size',
    severity: 'info',
    at: '4',
    message: /batch_size 4 on a GPU backend/,
  },
  {
    name: 'a prefetch ring above the data budget',
    ruleId: 'pipeline/prefetch-memory',
    file: () =>
      child(
        'ring.yaml',
        'batching:\n  batch_size: 16\npipeline:\n  prefetch_depth: 32\ndevice:\n  data_memory_budget_mb: 64\n',
      ),
    keyPath: 'pipeline.prefetch_depth',
    severity: 'error',
    at: '32',
    message: /above data_memory_budget_mb 64/,
  },
  {
    name: 'backend tensorflow (not installed here)',
    ruleId: 'device/backend',
    file: () => child('tf.yaml', 'device:\n  backend: tensorflow\n'),
    keyPath: 'device.backend',
    severity: 'error',
    at: 'tensorflow',
    message: /tfjs-node-gpu nor @tensorflow\/tfjs-node is installed/,
  },
  {
    name: 'precision mixed_fp16 on a backend that computes in float32 only',
    ruleId: 'training/precision',
    file: () => child('fp16.yaml', 'device:\n  backend: wasm\ntraining:\n  precision: mixed_fp16\n'),
    keyPath: 'training.precision',
    severity: 'error',
    at: 'mixed_fp16',
    message: /precision mixed_fp16: wasm: tfjs-backend-wasm 4.22 computes in float32/,
  },
  {
    name: 'weight decay that wipes the weights out',
    ruleId: 'training/optimizer',
    file: () => child('wd.yaml', 'training:\n  optimizer:\n    weight_decay: 1e30\n'),
    keyPath: 'training.optimizer.weight_decay',
    severity: 'error',
    at: '1e30',
    message: /each step scales the weights by .* which wipes them out/,
  },
  {
    name: 'a learning-rate floor above the peak',
    ruleId: 'training/optimizer',
    file: () => child('minlr.yaml', 'training:\n  schedule:\n    min_learning_rate: 0.5\n'),
    keyPath: 'training.schedule.min_learning_rate',
    severity: 'error',
    at: '0.5',
    message: /min_learning_rate 0.5 is above learning_rate/,
  },
  {
    name: 'an eval sentence in a language the model lacks',
    ruleId: 'training/eval-sentences',
    file: () => child('evallang.yaml', 'training:\n  eval_sentences:\n    - text: Guten Tag.\n      language: de\n'),
    keyPath: 'training.eval_sentences.0.language',
    severity: 'error',
    at: 'de',
    message: /eval sentence 1 is in de, which text.languages \(en\) does not list/,
    fixApplies: false, // the fix edits one item of a list
  },
  {
    name: 'a reference window longer than any clip',
    ruleId: 'batching/reference-frames',
    file: () => child('refframes.yaml', 'batching:\n  reference_frames: 4096\n'),
    keyPath: 'batching.reference_frames',
    severity: 'error',
    at: '4096',
    message: /reference_frames 4096 is longer than the longest clip/,
  },
  {
    name: 'dual GPU with the same device twice',
    ruleId: 'device/dual-gpu',
    file: () => child('samegpu.yaml', 'device:\n  model_device: 0\n  data_device: 0\n'),
    keyPath: 'device.data_device',
    severity: 'error',
    at: '0',
    message: /both 0: dual-device mode needs two devices/,
  },
  {
    name: 'a data device without a model device',
    ruleId: 'device/dual-gpu',
    file: () => child('halfgpu.yaml', 'device:\n  data_device: 1\n'),
    keyPath: 'device.data_device',
    severity: 'error',
    at: '1',
    message: /model_device is not/,
    fixApplies: false, // the fix names two keys; applying it is the dual-gpu preset's business
  },
  {
    name: 'validation interval longer than the run',
    ruleId: 'training/intervals',
    file: () => child('intervals.yaml', 'training:\n  max_steps: 1000\n  validate_every: 2000\n'),
    keyPath: 'training.validate_every',
    severity: 'warn',
    at: '2000',
    message: /validate_every 2000 is longer than max_steps 1000/,
  },
  {
    name: 'checkpoints every few steps',
    ruleId: 'training/intervals',
    file: () => child('ckpt.yaml', 'training:\n  max_steps: 1000\n  checkpoint_every: 10\n'),
    keyPath: 'training.checkpoint_every',
    severity: 'warn',
    at: '10',
    message: /a checkpoint every 10 steps/,
  },
  {
    name: 'warm-up longer than the run',
    ruleId: 'training/intervals',
    file: () => child('warmup.yaml', 'training:\n  schedule:\n    warmup_steps: 200\n'),
    keyPath: 'training.schedule.warmup_steps',
    severity: 'warn',
    at: '200',
    message: /warmup_steps 200 ≥ max_steps 100/,
  },
  {
    name: 'log_every 1',
    ruleId: 'training/log-sync',
    file: () => child('log.yaml', 'training:\n  log_every: 1\n  max_steps: 1000\n'),
    keyPath: 'training.log_every',
    severity: 'warn',
    at: '1',
    message: /waits for the device every step/,
  },
  {
    name: 'a language code nobody speaks',
    ruleId: 'text/languages',
    file: () => child('lang-xx.yaml', 'text:\n  cleaners: multilingual\n  languages: [en, xx]\n'),
    keyPath: 'text.languages.1',
    severity: 'error',
    at: 'xx]',
    message: /xx is not a language code xtts knows/,
  },
  {
    name: 'German text through the English cleaner',
    ruleId: 'text/languages',
    file: () => child('lang-de-english.yaml', 'text:\n  cleaners: english\n  languages: [en, de]\n'),
    keyPath: 'text.cleaners',
    severity: 'error',
    at: 'english',
    message: /the english cleaner does not read de \(text.languages\): it reads en, and would read German/,
  },
  {
    name: 'a language the multilingual cleaner does not read',
    ruleId: 'text/languages',
    file: () => child('lang-ja.yaml', 'text:\n  cleaners: multilingual\n  languages: [en, ja]\n'),
    keyPath: 'text.cleaners',
    severity: 'error',
    at: 'multilingual',
    message: /the multilingual cleaner does not read ja \(text.languages\): it reads .*\bde\b.*\ben\b.*\bes\b/,
  },
  {
    name: 'a phoneme model in a language espeak-ng has no voice for',
    ruleId: 'text/espeak-voices',
    file: () => child('lang-espeak.yaml', 'text:\n  cleaners: basic\n  tokenizer: phonemes\n  languages: [en, yo]\n'),
    keyPath: 'text.languages.1',
    severity: 'error',
    at: 'yo]',
    message: /espeak-ng \(espeak-ng\) has no voice for yo \(it looked for yo\)/,
    fixApplies: false,
  },
  {
    name: 'vocoder segments shorter than the largest loss window',
    ruleId: 'vocoder/shape',
    file: () => child('vocoder-short.yaml', 'vocoder:\n  segment_frames: 8\n', 'vocoder-tiny'),
    keyPath: 'vocoder.segment_frames',
    severity: 'error',
    at: '8',
    message: /2048 samples, fewer than 4 × n_fft = 4096/,
  },
  {
    name: 'vocoder hop that does not divide n_fft',
    ruleId: 'vocoder/shape',
    file: () => child('vocoder-hop.yaml', 'audio:\n  hop_length: 300\n', 'vocoder-tiny'),
    keyPath: 'audio.hop_length',
    severity: 'error',
    at: '300',
    message: /n_fft 1024 is not a multiple of hop_length 300/,
  },
  {
    name: 'a share of voices to warp with no warp',
    ruleId: 'batching/voice-augmentation',
    file: () => child('warp-share.yaml', 'batching:\n  voice_warp_share: 0.9\n'),
    keyPath: 'batching.voice_warp_share',
    severity: 'info',
    at: '0.9',
    message: /voice_warp_share 0\.9 does nothing while voice_warp is 0/,
    fixApplies: false, // the fix sets voice_warp, the other key of the pair
  },
  {
    name: 'a voice warp at a share of 0',
    ruleId: 'batching/voice-augmentation',
    file: () => child('warp-none.yaml', 'batching:\n  voice_warp: 0.2\n  voice_warp_share: 0\n'),
    keyPath: 'batching.voice_warp_share',
    severity: 'info',
    at: '0',
    message: /voice_warp 0\.2 warps nothing at share 0/,
  },
  {
    name: 'references read as recorded under a warp, with nothing to tell the model the warp',
    ruleId: 'batching/voice-augmentation',
    file: () => child('warp-unref.yaml', 'batching:\n  voice_warp: 0.2\n  voice_warp_reference: false\n'),
    keyPath: 'batching.voice_warp_reference',
    severity: 'warn',
    at: 'false',
    message: /without model\.speaker_pitch nothing tells the model how each utterance was warped/,
    fixApplies: false, // the fix is in another section (model.speaker_pitch), or undoes the setting
  },
  {
    name: 'references as recorded with no warp',
    ruleId: 'batching/voice-augmentation',
    file: () => child('unref.yaml', 'batching:\n  voice_warp_reference: false\n'),
    keyPath: 'batching.voice_warp_reference',
    severity: 'info',
    at: 'false',
    message: /voice_warp_reference false does nothing while voice_warp is 0/,
    fixApplies: false, // the fix sets voice_warp, the other key of the pair
  },
  {
    name: "an acoustic model's keys in a vocoder's config",
    ruleId: 'vocoder/acoustic-keys',
    file: () => child('vocoder-model.yaml', 'model:\n  d_model: 512\n  heads: 8\n', 'vocoder-tiny'),
    keyPath: 'model.d_model',
    severity: 'info',
    at: '512',
    message: /a vocoder run reads no model\.\* key, and the config sets d_model, heads$/,
    fixApplies: false, // the fix removes a section, which a one-key patch does not
  },
  {
    name: "voice warping in a vocoder's config",
    ruleId: 'batching/voice-augmentation',
    file: () => child('vocoder-warp.yaml', 'batching:\n  voice_warp: 0.2\n', 'vocoder-tiny'),
    keyPath: 'batching.voice_warp',
    severity: 'info',
    at: '0.2',
    message: /a vocoder run does not warp voices/,
  },
  {
    name: "reference joining in a vocoder's config",
    ruleId: 'batching/voice-augmentation',
    file: () => child('vocoder-join.yaml', 'batching:\n  reference_join: true\n', 'vocoder-tiny'),
    keyPath: 'batching.reference_join',
    severity: 'info',
    at: 'true',
    message: /a vocoder run reads no reference clips/,
  },
  {
    name: 'an even vocoder kernel',
    ruleId: 'vocoder/shape',
    file: () => child('vocoder-kernel.yaml', 'vocoder:\n  kernel: 4\n', 'vocoder-tiny'),
    keyPath: 'vocoder.kernel',
    severity: 'error',
    at: '4',
    message: /kernel 4 must be odd to keep frames aligned/,
  },
  {
    name: 'data-parallel vocoder training',
    ruleId: 'vocoder/shape',
    file: () => child('vocoder-gpus.yaml', 'device:\n  gpus: cpu:2\n', 'vocoder-tiny'),
    keyPath: 'device.gpus',
    severity: 'error',
    at: 'cpu:2',
    message: /a vocoder run trains on one device/,
  },
];

/** Apply a finding's fix (YAML for the key's section) on top of `file`; returns the new file. */
function applyFix(file: string, f: Finding, name: string): string {
  const fix = parse(f.fix!) as Record<string, unknown>;
  assert.ok(fix && typeof fix === 'object', `fix of ${f.ruleId} is YAML: ${f.fix}`);
  const top = Object.keys(fix)[0];
  const path = splitKeyPath(f.keyPath);
  const at = path.lastIndexOf(top);
  assert.ok(at >= 0, `fix ${JSON.stringify(f.fix)} writes \`${top}\`, which is not on the key path ${f.keyPath}`);
  let overlay: Record<string, unknown> = fix;
  for (const seg of path.slice(0, at).reverse()) overlay = { [seg]: overlay };
  return tmp.write(`fixed-${name}`, `extends: ${file}\n${stringify(overlay)}`);
}

describe('each rule fires on a crafted config', () => {
  for (const c of CASES) {
    test(`${c.ruleId}: ${c.name}`, () => {
      const file = c.file();
      const findings = lintConfig(load(file));
      const hits = findings.filter(
        (f) => f.ruleId === c.ruleId && f.keyPath === c.keyPath && f.severity === c.severity,
      );
      assert.equal(
        hits.length,
        1,
        `one ${c.severity} ${c.ruleId} at ${c.keyPath}: ${JSON.stringify(findings, null, 2)}`,
      );
      const f = hits[0];
      assert.match(f.message, c.message);
      assert.equal(resolve(f.position!.file), resolve(c.inFile?.() ?? file), `position ${JSON.stringify(f.position)}`);
      const text = textAt(f.position);
      if (typeof c.at === 'string') assert.equal(text, c.at, `text at ${JSON.stringify(f.position)}`);
      else assert.match(text ?? '', c.at);
      assert.ok(f.fix && f.fix.trim().length > 0, 'has a fix');
      assert.equal(f.docs, `docs/rules.md#${c.ruleId.replace('/', '-')}`);
      assert.ok(docsHeadings.has(c.ruleId.replace('/', '-')), `docs/rules.md has a heading for ${c.ruleId}`);
      assert.ok(severityRank(f.severity) <= severityRank(rule(c.ruleId).severity), 'no worse than the rule says');
      if (c.fixApplies === false) return;
      const fixed = lintConfig(
        load(applyFix(file, f, `${c.ruleId.replace('/', '-')}-${c.name.replace(/\W+/g, '-')}.yaml`)),
      );
      const still = fixed.filter(
        (g) => g.ruleId === c.ruleId && g.keyPath === c.keyPath && severityRank(g.severity) >= severityRank(f.severity),
      );
      assert.deepEqual(still, [], `applying the fix ${JSON.stringify(f.fix)} clears the finding`);
    });
  }

  test('every rule has at least one case here', () => {
    const covered = new Set(CASES.map((c) => c.ruleId));
    assert.deepEqual(
      RULES.map((r) => r.id).filter((id) => !covered.has(id)),
      [],
    );
  });

  test('no rule fires on the quickstart preset, with or without the machine checks', () => {
    const loaded = load(join(repoRoot, 'configs', 'quickstart.yaml'));
    assert.deepEqual(lintConfig(loaded), []);
    assert.deepEqual(lintConfig(loaded, { environment: false }), []);
    for (const r of RULES)
      assert.deepEqual(
        r.check({ loaded, config: loaded.config, host: fakeHost({ cpuCores: availableParallelism() }) }),
        [],
        r.id,
      );
  });

  test('every preset lints with no error here (dual-gpu: with the machine checks off)', () => {
    for (const p of ['tiny', 'small', 'normal', 'big', 'quickstart']) {
      assert.deepEqual(
        lintConfig(load(presetPath(p))).filter((f) => f.severity === 'error'),
        [],
        p,
      );
    }
    assert.deepEqual(lintConfig(load(presetPath('dual-gpu')), { environment: false }), []);
  });

  test("every benchmark's config loads and lints with no error (with the machine checks off)", () => {
    // They run on GPU hosts, where a mistake costs a device call: each is checked here, its dataset aside.
    const bench = join(repoRoot, 'bench');
    const configs = readdirSync(bench, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.yaml') && !f.split(sep).some((part) => part.startsWith('.') || part === 'data'),
    );
    assert.ok(configs.includes(join('voices', 'voices.yaml')), configs.join(', '));
    for (const name of configs) {
      const { loaded, findings } = loadConfig(join(bench, name));
      assert.deepEqual(findings, [], name);
      const errors = lintConfig(loaded!, { environment: false }).filter((f) => f.severity === 'error');
      assert.deepEqual(errors, [], name);
    }
  });

  test('--no-environment skips the rules that look at this machine', () => {
    const loaded = load(
      tmp.write(
        'env-off.yaml',
        `extends: quickstart\ndataset:\n  path: ./missing\npipeline:\n  ` +
          `workers: ${cores + 4}\ndevice:\n  backend: tensorflow\n`,
      ),
    );
    const on = new Set(lintConfig(loaded).map((f) => f.ruleId));
    assert.ok(
      on.has('dataset/path') && on.has('device/backend') && on.has('pipeline/workers-vs-cores'),
      [...on].join(', '),
    );
    const off = lintConfig(loaded, { environment: false }).filter(
      (f) => on.has(f.ruleId) && f.ruleId !== 'batching/small-batch',
    );
    assert.deepEqual(off, []);
  });

  test('every rule is documented: id, title, rationale, severity and a heading in docs/rules.md', () => {
    assert.equal(new Set(RULES.map((r) => r.id)).size, RULES.length, 'ids are unique');
    for (const r of RULES) {
      assert.match(r.id, /^[a-z]+\/[a-z0-9-]+$/);
      assert.ok(r.title.length > 5 && r.rationale.length > 20, r.id);
      assert.ok(SEVERITIES.includes(r.severity), r.id);
      assert.ok(docsHeadings.has(r.id.replace('/', '-')), `docs/rules.md lacks ${r.id}`);
    }
  });
});

function fakeHost(over: Partial<HostInventory> = {}): HostInventory {
  return { cpuCores: 16, memoryBytes: 64 * GiB, gpus: [], ...over };
}

describe('rules against other machines (a described host)', () => {
  const h100 = { index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalBytes: 80 * GiB };
  const l4 = { index: 1, name: 'NVIDIA L4', memoryTotalBytes: 24 * GiB };

  test('workers: one worker on 16 cores is info; no workers and no cache is a warning; auto is fine', () => {
    const one = load(child('w1.yaml', ''));
    assert.deepEqual(
      rule('pipeline/workers-vs-cores')
        .check({ loaded: one, config: one.config, host: fakeHost() })
        .map((f) => [f.severity, f.keyPath, f.fix]),
      [['info', 'pipeline.workers', 'workers: auto   # 15 here']],
    );
    const none = load(child('w0.yaml', 'pipeline:\n  workers: 0\n  cache:\n    enabled: false\n'));
    const f = rule('pipeline/workers-vs-cores').check({
      loaded: none,
      config: none.config,
      host: fakeHost({ cpuCores: 2 }),
    });
    assert.deepEqual(
      f.map((x) => [x.severity, x.fix]),
      [['warn', 'workers: 1']],
    );
    assert.equal(textAt(f[0].position), '0');
    const auto = load(child('wa.yaml', 'pipeline:\n  workers: auto\n'));
    assert.deepEqual(
      rule('pipeline/workers-vs-cores').check({ loaded: auto, config: auto.config, host: fakeHost({ cpuCores: 1 }) }),
      [],
    );
    assert.equal(effectiveWorkers(auto.config, 16), 15);
    assert.equal(effectiveWorkers(auto.config, 1), 1);
  });

  test('dual GPU: the preset passes on a two-GPU host; a missing GPU and a budget above its memory are errors', () => {
    const dual = load(presetPath('dual-gpu'));
    assert.deepEqual(
      rule('device/dual-gpu').check({
        loaded: dual,
        config: dual.config,
        host: fakeHost({ gpus: [h100, { ...h100, index: 1 }] }),
      }),
      [],
    );
    const onOne = rule('device/dual-gpu').check({
      loaded: dual,
      config: dual.config,
      host: fakeHost({ gpus: [h100] }),
    });
    assert.deepEqual(
      onOne.map((f) => [f.severity, f.keyPath, f.fix]),
      [['error', 'device.data_device', 'data_device: 0']],
    );
    assert.match(onOne[0].message, /no GPU 1 here; GPUs: 0 NVIDIA H100/);
    const small = rule('device/dual-gpu').check({
      loaded: dual,
      config: dual.config,
      host: fakeHost({ gpus: [{ ...l4, index: 0 }, l4] }),
    });
    assert.deepEqual(
      small.map((f) => [f.severity, f.keyPath]),
      [['error', 'device.model_memory_budget_mb']],
    );
    assert.match(small[0].message, /model_memory_budget_mb 60000 is more than GPU 0 \(NVIDIA L4\) has: 24\.0 GiB/);
    assert.equal(textAt(small[0].position), '60000');
    const byName = load(child('byname.yaml', 'device:\n  backend: webgpu\n  model_device: H100\n  data_device: l4\n'));
    assert.deepEqual(
      rule('device/dual-gpu').check({ loaded: byName, config: byName.config, host: fakeHost({ gpus: [h100, l4] }) }),
      [],
    );
  });

  test('dual GPU on the cpu backend is an error at device.backend', () => {
    const cpu = load(child('dualcpu.yaml', 'device:\n  backend: cpu\n  model_device: 0\n  data_device: 1\n'));
    const f = rule('device/dual-gpu').check({ loaded: cpu, config: cpu.config, host: undefined });
    assert.deepEqual(
      f.map((x) => [x.severity, x.keyPath]),
      [['error', 'device.backend']],
    );
    assert.equal(textAt(f[0].position), 'cpu');
  });

  test('a CPU data device needs no second GPU; a GPU data device must not also train as a replica', () => {
    const cpu = load(child('sidecpu.yaml', 'device:\n  backend: cpu\n  data_device: cpu\n'));
    assert.deepEqual(
      rule('device/dual-gpu').check({ loaded: cpu, config: cpu.config, host: fakeHost({ gpus: [] }) }),
      [],
    );
    const both = load(child('sidereplica.yaml', 'device:\n  backend: webgpu\n  gpus: [0, 1]\n  data_device: 1\n'));
    const f = rule('device/dual-gpu').check({ loaded: both, config: both.config, host: undefined });
    assert.deepEqual(
      f.map((x) => [x.severity, x.keyPath, x.fix]),
      [['error', 'device.data_device', 'data_device: cpu']],
    );
    assert.match(f[0].message, /data_device 1 also trains \(device\.gpus \[0,1\]\)/);
  });

  test("memory: without a budget, the model GPU's memory is the budget", () => {
    const big = load(child('bigongpu.yaml', 'device:\n  model_device: 0\n', 'big'));
    const f = rule('batching/memory').check({ loaded: big, config: big.config, host: fakeHost({ gpus: [l4] }) });
    assert.deepEqual(f, [], 'GPU 0 is not on this host: no budget to compare with');
    const g = rule('batching/memory').check({
      loaded: big,
      config: big.config,
      host: fakeHost({ gpus: [{ ...l4, index: 0 }] }),
    });
    assert.equal(g.length, 1);
    assert.equal(g[0].severity, 'error');
    assert.match(g[0].message, /exceeds GPU 0 \(NVIDIA L4\) = 24\.0 GiB/);
    const fits = load(child('tinyongpu.yaml', 'device:\n  model_device: 0\n', 'tiny'));
    assert.deepEqual(
      rule('batching/memory').check({ loaded: fits, config: fits.config, host: fakeHost({ gpus: [h100] }) }),
      [],
    );
  });

  test('backend webgpu: a warning without a visible GPU, nothing with one', () => {
    const w = load(child('webgpu.yaml', 'device:\n  backend: webgpu\n'));
    const none = rule('device/backend').check({
      loaded: w,
      config: w.config,
      host: fakeHost({ gpuNote: 'no NVIDIA driver' }),
    });
    assert.deepEqual(
      none.map((f) => [f.severity, f.keyPath]),
      [['warn', 'device.backend']],
    );
    assert.deepEqual(
      rule('device/backend').check({ loaded: w, config: w.config, host: fakeHost({ gpus: [h100] }) }),
      [],
    );
  });
});

describe('thresholds', () => {
  test('input-wait grades cut at 5% and 20%', () => {
    assert.equal(gradeInputWait(0), 'not');
    assert.equal(gradeInputWait(THRESHOLDS.inputBoundModerate - 1e-9), 'not');
    assert.equal(gradeInputWait(THRESHOLDS.inputBoundModerate), 'moderately');
    assert.equal(gradeInputWait(THRESHOLDS.inputBoundHigh - 1e-9), 'moderately');
    assert.equal(gradeInputWait(THRESHOLDS.inputBoundHigh), 'highly');
    assert.equal(gradeInputWait(1), 'highly');
  });
});
