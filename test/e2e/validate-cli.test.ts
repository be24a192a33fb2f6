// `xtts validate-gpu-optimization` as a process on real files: positions, rules, exit codes,
// envelopes, SARIF, the utility binary, and every kind of bad input without a stack trace.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { hasStackTrace, repoRoot, runCli, type CliResult } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'xtts-validate-'));
const quickstartData = join(repoRoot, 'configs', 'quickstart');

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

/** A config extending quickstart with the dataset pointed at the bundled data. */
function config(name: string, body: string): string {
  return file(name, `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}\ndataset:\n  path: ${quickstartData}\n${body}`);
}

const validate = (args: string[]) => runCli(['validate-gpu-optimization', ...args]);
const findings = (r: CliResult) => r.json.result.findings as { ruleId: string; severity: string; keyPath: string; position?: { file: string; line?: number; col?: number }; fix?: string; docs: string; message: string }[];

describe('presets', () => {
  for (const preset of ['tiny', 'small', 'normal', 'big', 'quickstart', 'dual-gpu']) {
    test(`${preset} validates without errors`, async () => {
      const r = await validate(['--config', `configs/${preset}.yaml`, '--json', ...(preset === 'dual-gpu' ? ['--no-environment'] : [])]);
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.json.status, 'success');
      assert.equal(r.json.result.summary.error, 0);
    });
  }
});

describe('positions and schema findings', () => {
  test('an unknown key gets file:line:col and a did-you-mean', async () => {
    const p = config('typo.yaml', 'training:\n  lerning_rate: 1e-4\n');
    const r = await validate(['--config', p, '--json']);
    assert.equal(r.code, 1);
    const f = findings(r).find((x) => x.ruleId === 'schema/unknown-key');
    assert.ok(f, r.stdout);
    assert.deepEqual(f.position, { file: p, line: 5, col: 3 });
    assert.match(f.message, /did you mean `learning_rate`/);
    assert.equal(f.keyPath, 'training.lerning_rate');
    assert.match(f.docs, /docs\/rules\.md#schema-unknown-key/);
  });

  test('a misspelt section is suggested too', async () => {
    const r = await validate(['--config', config('section.yaml', 'trainig:\n  max_steps: 5\n'), '--json']);
    assert.match(findings(r)[0].message, /did you mean `training`/);
  });

  test('duplicate keys point at the second occurrence', async () => {
    const p = file('dup.yaml', 'dataset:\n  path: x\ntraining:\n  max_steps: 10\n  max_steps: 20\n');
    const r = await validate(['--config', p, '--json']);
    assert.equal(r.code, 1);
    const f = findings(r)[0];
    assert.equal(f.ruleId, 'schema/duplicate-key');
    assert.equal(f.position?.line, 5);
    assert.match(f.message, /max_steps/);
  });

  test('1e-4 is a number; a string where a number belongs is a typed error at the value', async () => {
    const ok = await validate(['--config', config('sci.yaml', 'training:\n  learning_rate: 1e-4\n'), '--json']);
    assert.equal(ok.json.result.summary.error, 0, ok.stdout);
    const p = config('type.yaml', 'batching:\n  batch_size: lots\n');
    const bad = await validate(['--config', p, '--json']);
    const f = findings(bad)[0];
    assert.equal(f.ruleId, 'schema/type');
    assert.deepEqual(f.position, { file: p, line: 5, col: 15 });
    assert.match(f.message, /whole number/);
  });

  test('an enum typo is suggested', async () => {
    const r = await validate(['--config', config('enum.yaml', 'device:\n  backend: webgup\n'), '--json']);
    const f = findings(r)[0];
    assert.equal(f.ruleId, 'schema/enum');
    assert.match(f.message, /did you mean "webgpu"/);
  });

  test('a value inherited from a preset is reported in the preset file', async () => {
    const p = file('inherit.yaml', `extends: ${join(repoRoot, 'configs', 'tiny.yaml')}\ndataset:\n  path: ${quickstartData}\nmodel:\n  heads: 3\n`);
    const r = await validate(['--config', p, '--json']);
    const f = findings(r).find((x) => x.ruleId === 'model/shape');
    assert.ok(f);
    assert.equal(f.position?.file, p, 'heads was set in the child file');
    const q = file('inherit2.yaml', `extends: ${join(repoRoot, 'configs', 'tiny.yaml')}\ndataset:\n  path: ${quickstartData}\nmodel:\n  d_model: 129\n`);
    const r2 = await validate(['--config', q, '--json']);
    const f2 = findings(r2).find((x) => x.ruleId === 'model/shape');
    assert.ok(f2?.position?.file.endsWith('configs/tiny.yaml'), 'heads comes from the preset');
  });

  test('--set overrides, and a bad --set is reported at the flag', async () => {
    const r = await validate(['--config', 'configs/quickstart.yaml', '--set', 'batching.buckets=0', '--json']);
    const f = findings(r).find((x) => x.ruleId === 'batching/static-shapes');
    assert.equal(f?.position?.file, '--set batching.buckets=0');
    const bad = await validate(['--config', 'configs/quickstart.yaml', '--set', 'training.nope=1', '--json']);
    assert.equal(bad.code, 1);
    assert.equal(findings(bad)[0].position?.file, '--set training.nope=1');
  });
});

describe('bad input never ends in a stack trace', () => {
  const cases: [string, () => string, number, RegExp][] = [
    ['malformed YAML', () => file('broken.yaml', 'dataset:\n  path: [unclosed\n'), 2, /yaml\/syntax/],
    ['a missing file', () => join(dir, 'nope.yaml'), 2, /input\/missing-file/],
    ['a folder', () => (mkdirSync(join(dir, 'folder.yaml'), { recursive: true }), join(dir, 'folder.yaml')), 2, /input\/not-a-file/],
    ['a binary file', () => file('bin.yaml', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01])), 2, /input\/binary/],
    ['a Latin-1 file', () => file('latin1.yaml', Buffer.from('dataset:\n  path: caf\xe9\n', 'latin1')), 2, /input\/not-utf8/],
    ['an empty file', () => file('empty.yaml', ''), 2, /input\/empty/],
    ['a comments-only file', () => file('comments.yaml', '# nothing\n'), 2, /input\/empty/],
    ['a top-level list', () => file('list.yaml', '- a\n- b\n'), 1, /schema\/type/],
    ['an extends cycle', () => (file('a.yaml', 'extends: ./b.yaml\n'), file('b.yaml', 'extends: ./a.yaml\n')), 1, /config\/extends-cycle/],
    ['extends of a missing file', () => file('ext.yaml', 'extends: ./missing.yaml\n'), 2, /input\/missing-file/],
  ];
  for (const [name, make, code, rule] of cases) {
    test(name, async () => {
      const path = make();
      const human = await validate(['--config', path]);
      assert.equal(human.code, code, human.stdout + human.stderr);
      assert.ok(!hasStackTrace(human.stdout + human.stderr), human.stdout + human.stderr);
      const r = await validate(['--config', path, '--json']);
      assert.equal(r.code, code);
      assert.match(JSON.stringify(r.json.result.findings), rule);
    });
  }

  test('an unknown flag is a usage error with an error envelope', async () => {
    const r = await validate(['--config', 'configs/quickstart.yaml', '--bogus', '--json']);
    assert.equal(r.code, 2);
    assert.equal(r.json.status, 'error');
    assert.equal(r.json.error.code, 'USAGE');
    assert.ok(Array.isArray(r.json.error.suggestions));
    assert.ok(!hasStackTrace(r.stdout + r.stderr));
  });
});

describe('rules', () => {
  const cases: [string, string, string, string[]][] = [
    ['workers vs cores', `pipeline:\n  workers: ${availableParallelism() + 4}\n`, 'pipeline/workers-vs-cores', []],
    ['prefetch depth 1', 'pipeline:\n  prefetch_depth: 1\n', 'pipeline/prefetch-depth', []],
    ['cache off', 'pipeline:\n  cache:\n    enabled: false\n', 'pipeline/cache', []],
    ['dynamic shapes', 'batching:\n  buckets: 0\n', 'batching/static-shapes', []],
    ['too many buckets', 'batching:\n  buckets: 40\n', 'batching/static-shapes', []],
    ['batch vs memory budget', 'batching:\n  batch_size: 512\ndevice:\n  model_memory_budget_mb: 256\n', 'batching/memory', []],
    ['tensorflow not installed', 'device:\n  backend: tensorflow\n', 'device/backend', []],
    ['mixed precision', 'training:\n  precision: mixed_fp16\n', 'device/backend', []],
    ['dual GPU, same device', 'device:\n  model_device: 0\n  data_device: 0\n', 'device/dual-gpu', []],
    ['intervals past the run', 'training:\n  max_steps: 50\n  validate_every: 100\n', 'training/intervals', []],
    ['loss read every step', 'training:\n  max_steps: 1000\n  log_every: 1\n', 'training/log-sync', []],
    ['fmax above Nyquist', 'audio:\n  sample_rate_hz: 16000\n  fmax_hz: 11025\n', 'audio/consistency', []],
    ['heads not dividing d_model', 'model:\n  heads: 3\n', 'model/shape', []],
    ['prefetch ring over the data budget', 'pipeline:\n  prefetch_depth: 32\ndevice:\n  data_memory_budget_mb: 64\n', 'pipeline/prefetch-memory', []],
  ];
  for (const [name, body, ruleId] of cases) {
    test(`${name} → ${ruleId}`, async () => {
      const r = await validate(['--config', config(`${ruleId.replace('/', '-')}-${name.replace(/\W+/g, '-')}.yaml`, body), '--json', '--fail-severity', 'info']);
      const f = findings(r).find((x) => x.ruleId === ruleId);
      assert.ok(f, `${ruleId} did not fire: ${r.stdout}`);
      assert.ok(f.fix && f.fix.length > 0, 'has a fix');
      assert.ok(f.position?.line, 'has a position');
      assert.match(f.docs, new RegExp(`#${ruleId.replace('/', '-')}$`));
      assert.equal(r.code, 1);
    });
  }

  test('a missing dataset folder is an error at dataset.path', async () => {
    const p = file('nodata.yaml', `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}\ndataset:\n  path: ./no-such-folder\n`);
    const r = await validate(['--config', p, '--json']);
    const f = findings(r).find((x) => x.ruleId === 'dataset/path');
    assert.deepEqual(f?.position, { file: p, line: 3, col: 9 });
    assert.equal(r.code, 1);
    const skipped = await validate(['--config', p, '--json', '--no-environment']);
    assert.equal(findings(skipped).find((x) => x.ruleId === 'dataset/path'), undefined);
  });
});

describe('output formats and exit codes', () => {
  test('--fail-severity warn turns a warning into exit 1', async () => {
    const p = config('warn.yaml', 'pipeline:\n  cache:\n    enabled: false\n');
    assert.equal((await validate(['--config', p])).code, 0);
    assert.equal((await validate(['--config', p, '--fail-severity', 'warn'])).code, 1);
  });

  test('--json prints exactly one envelope', async () => {
    const r = await validate(['--config', 'configs/quickstart.yaml', '--json']);
    assert.deepEqual(Object.keys(r.json).sort(), ['result', 'status', 'warnings']);
    assert.equal(r.stdout.trim(), JSON.stringify(r.json, null, 2));
  });

  test('--format sarif is SARIF 2.1.0 with rules and located results', async () => {
    const p = config('sarif.yaml', 'training:\n  lerning_rate: 1\n');
    const r = await validate(['--config', p, '--format', 'sarif']);
    assert.equal(r.code, 1);
    const sarif = JSON.parse(r.stdout);
    assert.equal(sarif.version, '2.1.0');
    const run = sarif.runs[0];
    assert.ok(run.tool.driver.rules.some((x: { id: string }) => x.id === 'schema/unknown-key'));
    const res = run.results.find((x: { ruleId: string }) => x.ruleId === 'schema/unknown-key');
    assert.equal(res.level, 'error');
    assert.equal(res.locations[0].physicalLocation.region.startLine, 5);
  });

  test('the readable report groups by severity and ends with a summary', async () => {
    const r = await validate(['--config', config('human.yaml', 'pipeline:\n  prefetch_depth: 1\n  cache:\n    enabled: false\n')]);
    assert.match(r.stdout, /WARN \(2\)/);
    assert.match(r.stdout, /0 errors, 2 warnings, 0 info/);
  });

  test('the utility binary behaves the same', async () => {
    const p = config('util.yaml', 'training:\n  lerning_rate: 1\n');
    const a = await runCli(['--config', p, '--json'], { bin: join(repoRoot, 'utilities', 'validate-gpu-optimization.js') });
    const b = await validate(['--config', p, '--json']);
    assert.equal(a.code, b.code);
    assert.deepEqual(a.json, b.json);
  });
});
