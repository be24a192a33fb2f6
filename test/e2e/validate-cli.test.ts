// `xtts validate-gpu-optimization` as a process on real files: the --json envelope and exit codes,
// positions checked against the files, every kind of bad input without a stack trace, each rule on a
// crafted config, --set, --fail-severity, SARIF, and the separate utility binary.
// Runs go through a small process pool and the tests run concurrently: ~60 CLI runs stay well
// under a minute on 2 cores.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  assertNoStackTrace,
  type CliOptions,
  cliPool,
  type CliResult,
  describeRun,
  repoRoot,
  utilityBin,
} from '../helpers/cli.js';
import { textAt } from '../helpers/positions.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-validate-e2e-');
after(() => tmp.remove());
const run = cliPool();
const quickstartData = join(repoRoot, 'configs', 'quickstart');
const presetFile = (name: string) => join(repoRoot, 'configs', `${name}.yaml`);
// Identical runs (same arguments, same options) are made once and shared between tests.
const runs = new Map<string, Promise<CliResult>>();
function validate(args: string[], options?: CliOptions): Promise<CliResult> {
  const key = JSON.stringify([args, options ?? {}]);
  let p = runs.get(key);
  if (!p) runs.set(key, (p = run(['validate-gpu-optimization', ...args], options)));
  return p;
}

interface JsonFinding {
  ruleId: string;
  severity: 'error' | 'warn' | 'info';
  message: string;
  keyPath: string;
  position?: { file: string; line?: number; col?: number };
  fix?: string;
  docs: string;
}

/** The findings of a --json run, after checking that stdout is one success envelope. */
function findings(r: CliResult): JsonFinding[] {
  assert.ok(r.json, `stdout is one JSON document: ${describeRun(r)}`);
  // The status follows the exit code: findings (1) or success (0); a config that could not be read
  // (2) is an error envelope naming the first input finding, with the report beside it.
  const status = { 0: 'success', 1: 'findings', 2: 'error' }[r.code as 0 | 1 | 2];
  assert.equal(r.json.status, status, describeRun(r));
  if (status === 'error') {
    assert.equal(r.json.error.code, 'CONFIG_UNREADABLE');
    assert.ok(r.json.error.position?.file, JSON.stringify(r.json.error));
  }
  return r.json.result.findings;
}

function one(r: CliResult, ruleId: string, keyPath?: string): JsonFinding {
  const hits = findings(r).filter((f) => f.ruleId === ruleId && (keyPath === undefined || f.keyPath === keyPath));
  assert.equal(hits.length, 1, `one ${ruleId}${keyPath ? ` at ${keyPath}` : ''}: ${describeRun(r)}`);
  return hits[0];
}

/** A config extending quickstart with the dataset at the bundled data; `body` starts on line 4. */
function child(name: string, body: string, base = 'quickstart'): string {
  return tmp.write(name, `extends: ${base}\ndataset:\n  path: ${quickstartData}\n${body}`);
}

/** A column of the readable report's tables (0 = where, 1 = rule), its wrapped pieces joined back together. */
function column(report: string, index: number): string {
  return report
    .split('\n')
    .filter((l) => l.startsWith('│'))
    .map((l) => l.split('│')[index + 1].trim())
    .join('');
}

// Files several tests use (written once).
let typo = '';
/** Unknown keys at 5:3 (`lerning_rate`) and 6:1 (`trainig`). */
const typoFile = () => (typo ||= child('typo.yaml', 'training:\n  lerning_rate: 1e-4\ntrainig:\n  max_steps: 5\n'));
let dup = '';
/** `max_steps` twice in `training`, the second at 5:3. */
const dupFile = () =>
  (dup ||= tmp.write('dup.yaml', 'dataset:\n  path: x\ntraining:\n  max_steps: 10\n  max_steps: 20\n'));
let types = '';
/** A string for a whole number (5:15), a range (6:12), an enum typo (8:12), a quoted number (10:18). */
const typesFile = () =>
  (types ||= child(
    'types.yaml',
    'batching:\n  batch_size: lots\n  buckets: 99\ndevice:\n  backend: webgup\ntraining:\n  learning_rate: "1e-4"\n',
  ));

const docsAnchors = new Set(
  readFileSync(join(repoRoot, 'docs', 'rules.md'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('### '))
    .map((l) => `docs/rules.md#${l.slice(4).trim()}`),
);

describe('xtts validate-gpu-optimization', { concurrency: true }, () => {
  describe('presets', { concurrency: true }, () => {
    for (const preset of ['tiny', 'small', 'normal', 'big', 'quickstart']) {
      test(`${preset} validates with no errors`, async () => {
        const r = await validate(['--config', `configs/${preset}.yaml`, '--json']);
        assert.equal(r.code, 0, describeRun(r));
        assert.deepEqual(
          findings(r).filter((f) => f.severity === 'error'),
          [],
        );
        assert.equal(r.json.result.summary.error, 0);
        if (preset === 'quickstart') assert.deepEqual(findings(r), [], 'quickstart has no finding at all');
      });
    }

    test('dual-gpu validates with --no-environment, with no finding at all', async () => {
      const r = await validate([
        '--config',
        'configs/dual-gpu.yaml',
        '--json',
        '--no-environment',
        '--fail-severity',
        'info',
      ]);
      assert.equal(r.code, 0, describeRun(r));
      assert.deepEqual(findings(r), []);
    });

    test("a vocoder's config gets no memory line (the estimate is the acoustic model's); tiny's has one", async () => {
      const vocoder = await validate(['--config', 'configs/vocoder-tiny.yaml', '--json', '--no-environment']);
      assert.equal(vocoder.code, 0, describeRun(vocoder));
      assert.equal(vocoder.json.result.memory, undefined);
      const human = await validate(['--config', 'configs/vocoder-tiny.yaml', '--no-environment']);
      assert.doesNotMatch(human.stdout, /training memory/);
      const tiny = await validate(['--config', 'configs/tiny.yaml', '--json', '--no-environment']);
      assert.match(tiny.json.result.memory.description, /estimated \(1\.8 M parameters/);
    });

    test('a config extending a preset validates from any working directory', async () => {
      const cwd = tmp.mkdir('elsewhere-presets');
      const file = tmp.write('anywhere/uses-small.yaml', 'extends: small\n');
      const r = await validate(['--config', file, '--json', '--no-environment'], { cwd });
      assert.equal(r.code, 0, `no-environment: ${describeRun(r)}`);
      const withEnv = await validate(['--config', file, '--json'], { cwd });
      assert.deepEqual(
        findings(withEnv).filter((f) => f.severity === 'error'),
        [],
        "the preset's `dataset.path: quickstart` is relative to the preset file, not to the working directory",
      );
      assert.equal(withEnv.code, 0);
    });
  });

  describe('the --json envelope and exit codes', { concurrency: true }, () => {
    test('a clean config: one success envelope and nothing else, exit 0', async () => {
      const r = await validate(['--config', 'configs/quickstart.yaml', '--json']);
      assert.equal(r.code, 0, describeRun(r));
      assert.deepEqual(Object.keys(r.json).sort(), ['result', 'status', 'warnings']);
      assert.equal(r.json.status, 'success');
      assert.deepEqual(r.json.warnings, []);
      assert.equal(r.stdout.trim(), JSON.stringify(r.json, null, 2));
      assert.equal(r.stderr, '');
      assert.deepEqual(Object.keys(r.json.result).sort(), [
        'failSeverity',
        'file',
        'findings',
        'memory',
        'passed',
        'schemaValid',
        'summary',
      ]);
      // The training memory estimate, and what it must fit in on this machine (no GPU here: wasm's heap or the host).
      assert.ok(
        r.json.result.memory.estimateBytes > 0 && r.json.result.memory.parameters > 1e6,
        JSON.stringify(r.json.result.memory),
      );
      assert.ok(r.json.result.memory.estimateBytes < r.json.result.memory.limitBytes);
    });

    test('content errors: a findings envelope with the report, exit 1', async () => {
      const r = await validate(['--config', child('content.yaml', 'model:\n  heads: 3\n'), '--json']);
      assert.equal(r.code, 1, describeRun(r));
      assert.equal(r.json.status, 'findings');
      assert.equal(r.json.result.passed, false);
      assert.deepEqual(r.json.result.summary, { error: 1, warn: 0, info: 0 });
    });

    const usage: [string, string[], RegExp][] = [
      ['an unknown flag', ['--config', 'configs/quickstart.yaml', '--bogus'], /--bogus/],
      ['no --config', [], /config/],
      ['a --format that does not exist', ['--config', 'configs/quickstart.yaml', '--format', 'xml'], /text, sarif/],
      // Two outputs asked for: neither is chosen silently.
      ['--format sarif with --json', ['--config', 'configs/quickstart.yaml', '--format', 'sarif'], /--json and --fo/],
    ];
    for (const [name, args, message] of usage) {
      test(`${name}: an error envelope with code, message and suggestions, exit 2`, async () => {
        const r = await validate([...args, '--json']);
        assert.equal(r.code, 2, describeRun(r));
        assert.deepEqual(Object.keys(r.json).sort(), ['error', 'status', 'warnings']);
        assert.equal(r.json.status, 'error');
        assert.equal(r.json.error.code, 'USAGE');
        assert.match(r.json.error.message, message);
        assert.ok(Array.isArray(r.json.error.suggestions) && r.json.error.suggestions.length > 0);
        assert.deepEqual(r.json.warnings, []);
        assertNoStackTrace(r);
      });
    }

    test('a usage error for a person: one line on stderr, nothing on stdout, exit 2', async () => {
      const r = await validate(['--config', 'configs/quickstart.yaml', '--bogus']);
      assert.equal(r.code, 2, describeRun(r));
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /Error \[USAGE\].*--bogus/);
      assertNoStackTrace(r);
    });
  });

  describe('positions, keys and values', { concurrency: true }, () => {
    test('unknown keys: file:line:col, the key path, and a did-you-mean (key and section)', async () => {
      const file = typoFile();
      const r = await validate(['--config', file, '--json']);
      assert.equal(r.code, 1, describeRun(r));
      const key = one(r, 'schema/unknown-key', 'training.lerning_rate');
      assert.deepEqual(key.position, { file, line: 5, col: 3 });
      assert.equal(key.severity, 'error');
      assert.match(key.message, /did you mean `learning_rate`\?/);
      assert.match(key.fix ?? '', /learning_rate/);
      const section = one(r, 'schema/unknown-key', 'trainig');
      assert.deepEqual(section.position, { file, line: 6, col: 1 });
      assert.match(section.message, /did you mean `training`\?/);
      for (const f of findings(r)) assert.ok(docsAnchors.has(f.docs), f.docs);
    });

    test('a duplicate key is an error at the second key, with its key path', async () => {
      const file = dupFile();
      const r = await validate(['--config', file, '--json']);
      assert.equal(r.code, 1, describeRun(r));
      const f = one(r, 'schema/duplicate-key');
      assert.equal(f.severity, 'error');
      assert.deepEqual(f.position, { file, line: 5, col: 3 });
      assert.match(f.message, /`max_steps`/);
      assert.equal(f.keyPath, 'training.max_steps');
    });

    test('learning_rate: 1e-4 is a number and validates', async () => {
      const r = await validate([
        '--config',
        child('sci.yaml', 'training:\n  learning_rate: 1e-4\n  schedule:\n    min_learning_rate: 1E-6\n'),
        '--json',
        '--fail-severity',
        'info',
      ]);
      assert.equal(r.code, 0, describeRun(r));
      assert.deepEqual(findings(r), []);
    });

    test('wrong types, ranges and enum typos are reported at the value', async () => {
      const file = typesFile();
      const r = await validate(['--config', file, '--json']);
      assert.equal(r.code, 1, describeRun(r));
      const type = one(r, 'schema/type', 'batching.batch_size');
      assert.deepEqual(type.position, { file, line: 5, col: 15 });
      assert.match(type.message, /whole number/);
      assert.deepEqual(one(r, 'schema/range', 'batching.buckets').position, { file, line: 6, col: 12 });
      const en = one(r, 'schema/enum', 'device.backend');
      assert.deepEqual(en.position, { file, line: 8, col: 12 });
      assert.match(en.message, /did you mean "webgpu"/);
      const quoted = one(r, 'schema/type', 'training.learning_rate');
      assert.deepEqual(quoted.position, { file, line: 10, col: 18 });
    });

    test('extends takes a relative path; the dataset path is relative to the file that sets it', async () => {
      tmp.mkdir('proj/data');
      tmp.write('proj/base/base.yaml', 'extends: quickstart\ndataset:\n  path: ../data\n');
      const file = tmp.write('proj/exp/run.yaml', 'extends: ../base/base.yaml\nmodel:\n  heads: 3\n');
      const r = await validate(['--config', file, '--json'], { cwd: tmp.mkdir('proj/cwd') });
      const heads = one(r, 'model/shape');
      assert.deepEqual(heads.position, { file, line: 3, col: 10 });
      // proj/data exists but has no metadata.csv: found relative to base.yaml, not to the cwd.
      const meta = one(r, 'dataset/path');
      assert.equal(meta.keyPath, 'dataset.metadata');
      assert.match(
        meta.message,
        new RegExp(`${tmp.at('proj/data').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\\\/]metadata\\.csv`),
      );
    });

    test('a finding about a value inherited from a preset points into the preset file', async () => {
      const file = child('inherit.yaml', 'model:\n  d_model: 129\n', 'tiny');
      const r = await validate(['--config', file, '--json']);
      const f = one(r, 'model/shape');
      assert.equal(resolve(repoRoot, f.position!.file), presetFile('tiny'));
      assert.deepEqual([f.position?.line, f.position?.col], [6, 10]);
      assert.equal(textAt(f.position, repoRoot), '2');
    });

    test('from another working directory, a preset position still names the preset file', async () => {
      const cwd = tmp.mkdir('elsewhere-positions');
      const file = child('inherit-cwd.yaml', 'device:\n  model_memory_budget_mb: 16384\n', 'big');
      const r = await validate(['--config', file, '--json'], { cwd });
      const f = one(r, 'batching/memory');
      assert.deepEqual([f.position?.line, f.position?.col], [15, 15]);
      assert.equal(textAt(f.position, cwd), '64', `${JSON.stringify(f.position)} must be readable from ${cwd}`);
    });
  });

  describe('--set', { concurrency: true }, () => {
    test('overrides the files (a bad file value fixed with --set training.learning_rate=3e-4)', async () => {
      const file = child('badlr.yaml', 'training:\n  learning_rate: 5\n');
      const bad = await validate(['--config', file, '--json']);
      assert.equal(bad.code, 1);
      assert.deepEqual(one(bad, 'schema/range').position, { file, line: 5, col: 18 });
      const fixed = await validate(['--config', file, '--set', 'training.learning_rate=3e-4', '--json']);
      assert.equal(fixed.code, 0, describeRun(fixed));
      assert.deepEqual(findings(fixed), []);
    });

    test('a bad value and an unknown key are reported at the flag, exit 1', async () => {
      const r = await validate([
        '--config',
        'configs/quickstart.yaml',
        '--set',
        'training.learning_rate=abc',
        '--set',
        'training.lerning_rate=1',
        '--json',
      ]);
      assert.equal(r.code, 1, describeRun(r));
      assert.deepEqual(one(r, 'schema/type').position, { file: '--set training.learning_rate=abc' });
      const unknown = one(r, 'schema/unknown-key');
      assert.deepEqual(unknown.position, { file: '--set training.lerning_rate=1' });
      assert.match(unknown.message, /did you mean `learning_rate`/);
    });

    test('a rule finding caused by --set is reported at the flag', async () => {
      const r = await validate(['--config', 'configs/quickstart.yaml', '--set', 'batching.buckets=0', '--json']);
      assert.equal(r.code, 0, describeRun(r));
      assert.deepEqual(one(r, 'batching/static-shapes').position, { file: '--set batching.buckets=0' });
    });

    test('a --set that is not key=value, or not YAML, is a usage error (exit 2)', async () => {
      const [a, b] = await Promise.all([
        validate(['--config', 'configs/quickstart.yaml', '--set', 'training.learning_rate', '--json']),
        validate(['--config', 'configs/quickstart.yaml', '--set', 'training.max_steps=[1', '--json']),
      ]);
      for (const r of [a, b]) {
        assert.equal(r.code, 2, describeRun(r));
        assert.equal(one(r, 'input/bad-override').severity, 'error');
      }
      assert.deepEqual(one(a, 'input/bad-override').position, { file: '--set training.learning_rate' });
      // The position names the flag; the message does not repeat it (it read "--set X: --set X: expected …").
      assert.equal(one(a, 'input/bad-override').message, 'expected key.path=value');
    });

    test('a --set below a leaf (batching.voice_warp.x=1) is reported at the flag, not at the config file', async () => {
      const r = await validate(['--config', 'configs/quickstart.yaml', '--set', 'batching.voice_warp.x=1', '--json']);
      assert.equal(r.code, 1, describeRun(r));
      assert.deepEqual(one(r, 'schema/type').position, { file: '--set batching.voice_warp.x=1' });
    });

    test('a finding about a default value is not placed at a file called "--set"', async () => {
      const r = await validate(['--config', 'configs/quickstart.yaml', '--set', 'audio.sample_rate_hz=8000', '--json']);
      const f = one(r, 'audio/consistency', 'audio.fmax_hz');
      assert.notEqual(f.position?.file, '--set', JSON.stringify(f.position));
    });
  });

  describe('bad input: findings, positions, exit codes, never a stack trace', { concurrency: true }, () => {
    interface BadCase {
      name: string;
      make: () => string;
      code: number;
      ruleId: string;
      /** Expected position (file defaults to the config). */
      pos?: { file?: string; line?: number; col?: number };
      /** Also run without --json and check the readable report. */
      human?: boolean;
    }
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]',
      '',
    ].join('\n');
    const cases: BadCase[] = [
      {
        name: 'malformed YAML',
        make: () => tmp.write('bad/broken.yaml', 'dataset:\n  path: x\n  list: [unclosed\nmodel: {\n'),
        code: 2,
        ruleId: 'yaml/syntax',
        human: true,
      },
      {
        name: 'a tab as indentation',
        make: () => tmp.write('bad/tab.yaml', 'dataset:\n  path: x\n\tbad: 1\n'),
        code: 2,
        ruleId: 'yaml/syntax',
        pos: { line: 3, col: 1 },
      },
      { name: 'a wrong type', make: typesFile, code: 1, ruleId: 'schema/type', pos: { line: 5, col: 15 } },
      { name: 'an unknown key', make: typoFile, code: 1, ruleId: 'schema/unknown-key', pos: { line: 5, col: 3 } },
      { name: 'a duplicate key', make: dupFile, code: 1, ruleId: 'schema/duplicate-key', pos: { line: 5, col: 3 } },
      { name: 'a missing file', make: () => tmp.at('bad/nope.yaml'), code: 2, ruleId: 'input/missing-file', pos: {} },
      { name: 'a folder', make: () => tmp.mkdir('bad/folder.yaml'), code: 2, ruleId: 'input/not-a-file', pos: {} },
      {
        name: 'a binary file',
        make: () =>
          tmp.write('bad/model.yaml', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00])),
        code: 2,
        ruleId: 'input/binary',
        pos: { line: 3, col: 1 },
      },
      {
        name: 'a Latin-1 file',
        make: () => tmp.write('bad/latin1.yaml', Buffer.from('dataset:\n  path: caf\xe9\n', 'latin1')),
        code: 2,
        ruleId: 'input/not-utf8',
        pos: { line: 2, col: 12 },
        human: true,
      },
      { name: 'an empty file', make: () => tmp.write('bad/empty.yaml', ''), code: 2, ruleId: 'input/empty', pos: {} },
      {
        name: 'a comments-only file',
        make: () => tmp.write('bad/comments.yaml', '# nothing yet\n\n# still nothing\n'),
        code: 2,
        ruleId: 'input/empty',
        pos: {},
      },
      {
        name: 'a top-level list',
        make: () => tmp.write('bad/list.yaml', '- a\n- b\n'),
        code: 1,
        ruleId: 'schema/type',
        pos: { line: 1, col: 1 },
      },
      {
        name: 'an extends cycle',
        make: () => (
          tmp.write('bad/cycle-b.yaml', '# b\nextends: ./cycle-a.yaml\n'),
          tmp.write('bad/cycle-a.yaml', 'extends: ./cycle-b.yaml\ndataset:\n  path: x\n')
        ),
        code: 1,
        ruleId: 'config/extends-cycle',
        human: true,
        pos: { file: tmp.at('bad/cycle-b.yaml'), line: 2, col: 10 },
      },
      {
        name: 'extends of a missing file',
        make: () => tmp.write('bad/ext.yaml', '# c\nextends: ./missing.yaml\n'),
        code: 2,
        ruleId: 'input/missing-file',
        pos: { line: 2, col: 10 },
      },
      { name: 'an alias bomb', make: () => tmp.write('bad/bomb.yaml', bomb), code: 2, ruleId: '', human: true },
    ];
    for (const c of cases) {
      test(`${c.name} → ${c.ruleId || 'a finding'}, exit ${c.code}`, async () => {
        const file = c.make();
        const [human, json] = await Promise.all([
          c.human ? validate(['--config', file]) : undefined,
          validate(['--config', file, '--json']),
        ]);
        assertNoStackTrace(json, 'the --json run');
        assert.equal(json.code, c.code, describeRun(json));
        if (human) {
          assertNoStackTrace(human, 'the readable report');
          assert.equal(human.code, c.code, describeRun(human));
        }
        const all = findings(json);
        assert.ok(all.length > 0);
        for (const f of all) {
          assert.ok(f.message && f.docs, JSON.stringify(f));
          assert.ok(f.position?.file, `every finding has a position: ${JSON.stringify(f)}`);
        }
        if (!c.ruleId) return;
        const f = all.find((x) => x.ruleId === c.ruleId);
        assert.ok(f, `${c.ruleId} in ${describeRun(json)}`);
        assert.equal(f.severity, 'error');
        if (c.pos) {
          const expected = {
            file: c.pos.file ?? file,
            ...(c.pos.line !== undefined ? { line: c.pos.line, col: c.pos.col } : {}),
          };
          assert.deepEqual(f.position, expected);
        } else {
          assert.equal(typeof f.position?.line, 'number', 'a syntax error has a line');
        }
        if (!human) return;
        // The readable report names the rule and the place.
        assert.ok(column(human.stdout, 1).includes(c.ruleId), `the report shows ${c.ruleId}:\n${human.stdout}`);
        const where = `${f.position!.file}${f.position?.line ? `:${f.position.line}:${f.position.col}` : ''}`;
        assert.ok(column(human.stdout, 0).includes(where), `the report shows ${where}:\n${human.stdout}`);
      });
    }
  });

  describe('rules on crafted configs', { concurrency: true }, () => {
    const cores = availableParallelism();
    // One config that trips most rules at once; lines are numbered for the expectations below.
    const manyBody = [
      'pipeline:', //                                   4
      `  workers: ${cores + 4}`, //                     5
      '  prefetch_depth: 1', //                         6
      '  cache:', //                                    7
      '    enabled: false', //                          8
      'batching:', //                                   9
      '  buckets: 0', //                               10
      'device:', //                                    11
      '  backend: tensorflow', //                      12
      '  model_device: 0', //                          13
      '  data_device: 0', //                           14
      'training:', //                                  15
      '  precision: mixed_fp16', //                    16
      '  max_steps: 1000', //                          17
      '  validate_every: 2000', //                     18
      '  log_every: 1', //                             19
      'audio:', //                                     20
      '  sample_rate_hz: 16000', //                    21
      '  fmax_hz: 11025', //                           22
      'model:', //                                     23
      '  heads: 3', //                                 24
      '',
    ].join('\n');
    const expected: [string, string, 'error' | 'warn' | 'info', number, number][] = [
      ['pipeline/workers-vs-cores', 'pipeline.workers', 'warn', 5, 12],
      ['pipeline/prefetch-depth', 'pipeline.prefetch_depth', 'warn', 6, 19],
      ['pipeline/cache', 'pipeline.cache.enabled', 'warn', 8, 14],
      ['batching/static-shapes', 'batching.buckets', 'warn', 10, 12],
      ['device/backend', 'device.backend', 'error', 12, 12],
      ['training/precision', 'training.precision', 'error', 16, 14],
      ['device/dual-gpu', 'device.data_device', 'error', 14, 16],
      ['training/intervals', 'training.validate_every', 'warn', 18, 19],
      ['training/log-sync', 'training.log_every', 'warn', 19, 14],
      ['audio/consistency', 'audio.fmax_hz', 'error', 22, 12],
      ['model/shape', 'model.heads', 'error', 24, 10],
    ];
    let manyFile = '';
    const many = () => {
      manyFile ||= child('many.yaml', manyBody);
      return manyFile;
    };
    const manyJson = (() => {
      let p: Promise<CliResult> | undefined;
      return () => (p ??= validate(['--config', many(), '--json', '--fail-severity', 'info']));
    })();

    for (const [ruleId, keyPath, severity, line, col] of expected) {
      test(`${ruleId} at ${keyPath} (${line}:${col})`, async () => {
        const r = await manyJson();
        assert.equal(r.code, 1);
        const f = findings(r).find((x) => x.ruleId === ruleId && x.keyPath === keyPath && x.severity === severity);
        assert.ok(f, `${severity} ${ruleId} at ${keyPath}: ${describeRun(r)}`);
        assert.deepEqual(f.position, { file: many(), line, col });
        assert.ok(f.fix && f.fix.length > 0, 'has a fix');
        assert.equal(f.docs, `docs/rules.md#${ruleId.replace('/', '-')}`);
        assert.ok(docsAnchors.has(f.docs), `${f.docs} is a heading in docs/rules.md`);
      });
    }

    test('every finding has a position with line and col, a fix and a docs link that exists', async () => {
      const r = await manyJson();
      for (const f of findings(r)) {
        assert.ok(f.position?.line && f.position.col, JSON.stringify(f));
        assert.ok(f.fix, JSON.stringify(f));
        assert.ok(docsAnchors.has(f.docs), f.docs);
      }
    });

    test('buckets 40, and a prefetch ring above the data budget', async () => {
      const file = child(
        'ring.yaml',
        'batching:\n  buckets: 40\n  batch_size: 16\npipeline:\n  prefetch_depth: 32\n' +
          'device:\n  data_memory_budget_mb: 64\n',
      );
      const r = await validate(['--config', file, '--json']);
      assert.equal(r.code, 1, describeRun(r));
      const buckets = one(r, 'batching/static-shapes');
      assert.deepEqual([buckets.severity, buckets.position], ['warn', { file, line: 5, col: 12 }]);
      const ring = one(r, 'pipeline/prefetch-memory');
      assert.deepEqual([ring.severity, ring.position], ['error', { file, line: 8, col: 19 }]);
      assert.match(ring.fix ?? '', /^prefetch_depth: \d+$/);
    });

    test("the big preset's batch against a small model_memory_budget_mb, found in big.yaml", async () => {
      // 16 GiB holds the big model's parameters and optimizer state (6.2 GiB), not its batch of 64: the batch is what
      // to change.
      const file = child('memory.yaml', 'device:\n  model_memory_budget_mb: 16384\n', 'big');
      const r = await validate(['--config', file, '--json']);
      assert.equal(r.code, 1, describeRun(r));
      const f = one(r, 'batching/memory');
      assert.equal(f.severity, 'error');
      assert.equal(resolve(repoRoot, f.position!.file), presetFile('big'));
      assert.deepEqual([f.position?.line, f.position?.col], [15, 15]);
      assert.match(f.message, /exceeds device\.model_memory_budget_mb = 16\.0 GiB/);
      assert.match(f.fix ?? '', /^batch_size: \d+/);
    });

    test('a batch_size above the training rows is estimated at the rows, as train trains it', async () => {
      // quickstart's 30 training utterances at batch_size 2048: train batches them 30 at a time (634 MiB, within a
      // 1 GiB budget); at 2048 the estimate would be about 41 GiB. Without the dataset read, the asked batch stands.
      const args = ['--config', 'configs/quickstart.yaml', '--set', 'batching.batch_size=2048'];
      const budget = ['--set', 'device.model_memory_budget_mb=1024', '--json'];
      const [read, unread] = await Promise.all([
        validate([...args, ...budget]),
        validate([...args, ...budget, '--no-environment']),
      ]);
      assert.equal(read.code, 0, describeRun(read));
      assert.equal(findings(read).filter((f) => f.ruleId === 'batching/memory').length, 0);
      const memory = read.json.result.memory;
      assert.match(memory.description, /at batch 30 × \d+ frames\); batch_size 2048 is more than the 30 training/);
      assert.ok(memory.estimateBytes < memory.limitBytes, JSON.stringify(memory));
      assert.equal(unread.code, 1, describeRun(unread));
      assert.match(one(unread, 'batching/memory').message, /at batch 2048 × \d+ frames\) exceeds/);
    });

    test('a missing dataset folder is an error at dataset.path; --no-environment skips it', async () => {
      const file = tmp.write('nodata.yaml', 'extends: quickstart\ndataset:\n  path: ./no-such-folder\n');
      const [withEnv, without] = await Promise.all([
        validate(['--config', file, '--json']),
        validate(['--config', file, '--json', '--no-environment']),
      ]);
      assert.equal(withEnv.code, 1, describeRun(withEnv));
      assert.deepEqual(one(withEnv, 'dataset/path').position, { file, line: 3, col: 9 });
      assert.equal(without.code, 0, describeRun(without));
      assert.deepEqual(findings(without), []);
    });
  });

  describe('--fail-severity and SARIF', { concurrency: true }, () => {
    test('--fail-severity warn turns a warning into exit 1; the default (error) leaves it at 0', async () => {
      const file = child('warn.yaml', 'pipeline:\n  cache:\n    enabled: false\n');
      const [atError, atWarn] = await Promise.all(
        ['error', 'warn'].map((s) => validate(['--config', file, '--fail-severity', s])),
      );
      assert.equal(atError.code, 0, describeRun(atError));
      assert.equal(atWarn.code, 1, describeRun(atWarn));
      assert.match(atWarn.stdout, /WARN \(1\)/);
      assert.match(atWarn.stdout, /✗ 0 errors, 1 warning, 0 info \(fail level: warn\)/);
      assert.match(atError.stdout, /✓ 0 errors, 1 warning, 0 info \(fail level: error\)/);
    });

    test('--format sarif is SARIF 2.1.0 whose results match the --json findings', async () => {
      const file = child('sarif.yaml', 'pipeline:\n  prefetch_depth: 1\ntraining:\n  lerning_rate: 1\n');
      const typo = await validate(['--config', file, '--format', 'sarif']);
      assert.equal(typo.code, 1, describeRun(typo));
      const sarif = JSON.parse(typo.stdout);
      assert.equal(sarif.version, '2.1.0');
      assert.match(sarif.$schema, /sarif-2\.1\.0/);
      const driver = sarif.runs[0].tool.driver;
      assert.equal(typeof driver.name, 'string');
      assert.deepEqual(
        driver.rules.map((r: { id: string }) => r.id),
        ['schema/unknown-key'],
      );
      const res = sarif.runs[0].results[0];
      assert.equal(res.ruleId, 'schema/unknown-key');
      assert.equal(res.level, 'error');
      assert.equal(resolve(repoRoot, decodeURIComponent(res.locations[0].physicalLocation.artifactLocation.uri)), file);
      assert.deepEqual(res.locations[0].physicalLocation.region, { startLine: 7, startColumn: 3 });

      const [s, j] = await Promise.all([
        validate(['--config', many2(), '--format', 'sarif', '--fail-severity', 'info']),
        validate(['--config', many2(), '--json', '--fail-severity', 'info']),
      ]);
      const log = JSON.parse(s.stdout);
      assert.equal(s.code, j.code);
      const results = log.runs[0].results as {
        ruleId: string;
        level: string;
        message: { text: string };
        locations?: { physicalLocation: { region: { startLine: number; startColumn: number } } }[];
      }[];
      const ruleIds = new Set(log.runs[0].tool.driver.rules.map((r: { id: string }) => r.id));
      const levels = { error: 'error', warn: 'warning', info: 'note' } as const;
      assert.equal(results.length, findings(j).length);
      findings(j).forEach((f, i) => {
        const r = results[i];
        assert.equal(r.ruleId, f.ruleId);
        assert.ok(ruleIds.has(r.ruleId), `${r.ruleId} is in driver.rules`);
        assert.equal(r.level, levels[f.severity]);
        assert.ok(r.message.text.startsWith(f.message));
        assert.deepEqual(r.locations?.[0].physicalLocation.region, {
          startLine: f.position!.line,
          startColumn: f.position!.col,
        });
      });
    });
    function many2(): string {
      return child(
        'sarif-many.yaml',
        'pipeline:\n  prefetch_depth: 20\n  cache:\n    enabled: false\nmodel:\n  heads: 3\n',
      );
    }
  });

  describe('the utility binary utilities/validate-gpu-optimization.js', { concurrency: true }, () => {
    const bin = utilityBin('validate-gpu-optimization');
    const skip = bin ? false : 'utilities/validate-gpu-optimization.js does not exist yet';
    const cases: [string, () => string[]][] = [
      ['a content error', () => ['--config', typoFile(), '--json']],
      [
        'unreadable input',
        () => ['--config', tmp.write('util-latin1.yaml', Buffer.from('a: \xe9\n', 'latin1')), '--json'],
      ],
      ['a bad flag', () => ['--config', 'configs/quickstart.yaml', '--bogus', '--json']],
      ['a clean preset', () => ['--config', 'configs/quickstart.yaml', '--json']],
    ];
    for (const [name, args] of cases) {
      test(`behaves as the xtts command: ${name}`, { skip }, async () => {
        const a = args();
        const [util, host] = await Promise.all([run(a, { bin }), validate(a)]);
        assert.equal(util.code, host.code, `${describeRun(util)}\n${describeRun(host)}`);
        assert.deepEqual(util.json, host.json);
        assert.ok(util.json, 'prints the JSON envelope');
        assertNoStackTrace(util);
      });
    }

    test('behaves as the xtts command: the readable report', { skip }, async () => {
      const file = typoFile();
      const [util, host] = await Promise.all([run(['--config', file], { bin }), validate(['--config', file])]);
      assert.equal(util.code, 1);
      assert.equal(util.code, host.code);
      assert.equal(util.stdout, host.stdout);
    });
  });
});

test('flags can come from XTTS_* environment variables (XTTS_CONFIG here); a flag on the line wins', async () => {
  const env = { XTTS_CONFIG: join(repoRoot, 'configs', 'quickstart.yaml') };
  const r = await run(['validate-gpu-optimization', '--no-environment', '--json'], { env });
  assert.equal(r.code, 0, describeRun(r));
  assert.equal(r.json.result.file, env.XTTS_CONFIG);
  const missing = await run(['validate-gpu-optimization', '--no-environment', '--json'], {
    env: { XTTS_CONFIG: join(repoRoot, 'nope.yaml') },
  });
  assert.equal(missing.code, 2, describeRun(missing));
  const line = await run(['validate-gpu-optimization', '--no-environment', '--config', env.XTTS_CONFIG, '--json'], {
    env: { XTTS_CONFIG: join(repoRoot, 'nope.yaml') },
  });
  assert.equal(line.code, 0, describeRun(line));
});
