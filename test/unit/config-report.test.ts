// The validator's report as one core call (validateConfigFile), and its two renderings: the readable
// table grouped by severity and SARIF 2.1.0 for code-scanning systems.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { countBySeverity, type Finding, sortFindings } from '../../src/core/config/findings.js';
import { RULES } from '../../src/core/config/rules.js';
import { isInputFailure, validateConfigFile } from '../../src/core/config/validate.js';
import { renderValidationReport, toSarif } from '../../src/core/render/findings.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-config-report-');
after(() => tmp.remove());
const quickstartData = join(repoRoot, 'configs', 'quickstart');
const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');

function child(name: string, body: string): string {
  return tmp.write(name, `extends: quickstart\ndataset:\n  path: ${quickstartData}\n${body}`);
}

describe('validateConfigFile', () => {
  test('a clean config passes with an empty summary', () => {
    const r = validateConfigFile(join(repoRoot, 'configs', 'quickstart.yaml'), { failSeverity: 'info' });
    assert.deepEqual(r.findings, []);
    assert.deepEqual(r.summary, { error: 0, warn: 0, info: 0 });
    assert.equal(r.schemaValid, true);
    assert.equal(r.passed, true);
    assert.equal(isInputFailure(r), false);
  });

  test('fail severity decides `passed`: a warning fails at warn, not at error', () => {
    const file = child('warn.yaml', 'pipeline:\n  cache:\n    enabled: false\n');
    const atError = validateConfigFile(file);
    assert.deepEqual(atError.summary, { error: 0, warn: 1, info: 0 });
    assert.equal(atError.failSeverity, 'error');
    assert.equal(atError.passed, true);
    assert.equal(validateConfigFile(file, { failSeverity: 'warn' }).passed, false);
    assert.equal(validateConfigFile(file, { failSeverity: 'info' }).passed, false);
  });

  test('schema errors stop the rules; input failures are told apart from content errors', () => {
    const typo = validateConfigFile(
      child('typo.yaml', 'training:\n  lerning_rate: 1e-4\npipeline:\n  prefetch_depth: 1\n'),
    );
    assert.equal(typo.schemaValid, false);
    assert.deepEqual(
      typo.findings.map((f) => f.ruleId),
      ['schema/unknown-key'],
      'no rule findings on a config that failed the schema',
    );
    assert.equal(isInputFailure(typo), false);
    assert.equal(isInputFailure(validateConfigFile(tmp.write('broken.yaml', 'a: [\n'))), true);
    assert.equal(isInputFailure(validateConfigFile(tmp.at('missing.yaml'))), true);
    assert.equal(isInputFailure(validateConfigFile(tmp.write('list.yaml', '- a\n'))), false);
  });

  test('--set values reach the rules', () => {
    const r = validateConfigFile(join(repoRoot, 'configs', 'quickstart.yaml'), { set: ['batching.buckets=0'] });
    const f = r.findings.find((x) => x.ruleId === 'batching/static-shapes');
    assert.deepEqual(f?.position, { file: '--set batching.buckets=0' });
  });

  test('findings come errors first, then by file and position', () => {
    const file = child(
      'many.yaml',
      'pipeline:\n  prefetch_depth: 1\n  cache:\n    enabled: false\nmodel:\n  heads: 3\n' +
        'training:\n  log_every: 1\n  max_steps: 1000\n',
    );
    const r = validateConfigFile(file, { failSeverity: 'info' });
    assert.deepEqual(
      r.findings.map((f) => [f.severity, f.ruleId, f.position?.line]),
      [
        ['error', 'model/shape', 9],
        ['warn', 'pipeline/prefetch-depth', 5],
        ['warn', 'pipeline/cache', 7],
        ['warn', 'training/log-sync', 11],
      ],
    );
    assert.deepEqual(countBySeverity(r.findings), { error: 1, warn: 3, info: 0 });
  });

  test('sortFindings keeps findings without positions and does not change its input', () => {
    const mk = (severity: Finding['severity'], file?: string, line?: number): Finding => ({
      ruleId: 'x/y',
      severity,
      message: '',
      keyPath: '',
      docs: '',
      position: file ? { file, line } : undefined,
    });
    const input = [
      mk('info'),
      mk('warn', 'b.yaml', 1),
      mk('error', 'a.yaml', 9),
      mk('warn', 'a.yaml', 3),
      mk('error', 'a.yaml', 2),
    ];
    const copy = structuredClone(input);
    assert.deepEqual(
      sortFindings(input).map((f) => [f.severity, f.position?.file, f.position?.line]),
      [
        ['error', 'a.yaml', 2],
        ['error', 'a.yaml', 9],
        ['warn', 'a.yaml', 3],
        ['warn', 'b.yaml', 1],
        ['info', undefined, undefined],
      ],
    );
    assert.deepEqual(input, copy);
  });
});

describe('the readable report', () => {
  test('groups by severity with counts, shows where/rule/finding/fix, and ends with the summary', () => {
    const file = child(
      'human.yaml',
      'pipeline:\n  prefetch_depth: 1\n  cache:\n    enabled: false\nmodel:\n  heads: 3\n',
    );
    const text = stripAnsi(renderValidationReport(validateConfigFile(file)));
    assert.match(text, /ERROR \(1\)/);
    assert.match(text, /WARN \(2\)/);
    assert.doesNotMatch(text, /INFO \(/);
    assert.match(text, /model\/shape/);
    assert.match(text, /heads: 2/, 'the fix is shown');
    assert.match(text, /✗ 1 error, 2 warnings, 0 info \(fail level: error\)/);
    assert.ok(text.indexOf('ERROR (1)') < text.indexOf('WARN (2)'));
  });

  test('a clean config says so', () => {
    const text = stripAnsi(renderValidationReport(validateConfigFile(join(repoRoot, 'configs', 'quickstart.yaml'))));
    assert.match(text, /✓ no findings/);
  });
});

describe('SARIF 2.1.0', () => {
  test('one run, a driver with the rules used, results with levels and 1-based regions', () => {
    const file = child('sarif.yaml', 'pipeline:\n  prefetch_depth: 1\nmodel:\n  heads: 3\n');
    const report = validateConfigFile(file, { failSeverity: 'info' });
    const sarif = toSarif(report, '9.9.9') as any;
    assert.equal(sarif.version, '2.1.0');
    assert.match(sarif.$schema, /sarif-2\.1\.0/);
    assert.equal(sarif.runs.length, 1);
    const driver = sarif.runs[0].tool.driver;
    assert.equal(typeof driver.name, 'string');
    assert.equal(driver.version, '9.9.9');
    assert.deepEqual(driver.rules.map((r: any) => r.id).sort(), ['model/shape', 'pipeline/prefetch-depth']);
    for (const r of driver.rules) {
      const known = RULES.find((x) => x.id === r.id)!;
      assert.equal(r.shortDescription.text, known.title);
      assert.equal(r.fullDescription.text, known.rationale);
      assert.equal(r.helpUri, `docs/rules.md#${r.id.replace('/', '-')}`);
    }
    const results = sarif.runs[0].results;
    assert.equal(results.length, 2);
    const heads = results.find((r: any) => r.ruleId === 'model/shape');
    assert.equal(heads.level, 'error');
    assert.match(heads.message.text, /heads 3 does not divide d_model 128\nFix: heads: 2/);
    const loc = heads.locations[0].physicalLocation;
    assert.match(loc.artifactLocation.uri, /sarif\.yaml$/);
    assert.deepEqual(loc.region, { startLine: 7, startColumn: 10 });
    assert.equal(heads.properties.keyPath, 'model.heads');
    assert.equal(results.find((r: any) => r.ruleId === 'pipeline/prefetch-depth').level, 'warning');
  });

  test('info is a note; a finding at a --set flag has no file location', () => {
    const report = validateConfigFile(join(repoRoot, 'configs', 'quickstart.yaml'), {
      set: ['pipeline.prefetch_depth=20'],
      failSeverity: 'info',
    });
    const sarif = toSarif(report, '0') as any;
    const r = sarif.runs[0].results[0];
    assert.equal(r.level, 'note');
    assert.equal(r.locations, undefined);
  });

  test('schema findings carry their rule too', () => {
    const sarif = toSarif(validateConfigFile(child('sarif-typo.yaml', 'training:\n  lerning_rate: 1\n')), '0') as any;
    assert.deepEqual(
      sarif.runs[0].tool.driver.rules.map((r: any) => r.id),
      ['schema/unknown-key'],
    );
    assert.equal(sarif.runs[0].results[0].locations[0].physicalLocation.region.startLine, 5);
  });
});
