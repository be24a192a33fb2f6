// Reading configs: bytes to text, YAML with positions, `extends` chains, `--set` overrides, and the
// schema's findings — each on real files written here, each position checked against the file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { ExitCode, XttsError } from '../../src/core/errors.js';
import type { Finding } from '../../src/core/config/findings.js';
import {
  joinKeyPath,
  loadConfig,
  loadConfigOrThrow,
  mergeConfig,
  parseConfigSource,
  parseOverrides,
  PRESETS,
  presetPath,
  presetsDir,
  readConfigText,
  splitKeyPath,
} from '../../src/core/config/load.js';
import { lintConfig } from '../../src/core/config/rules.js';
import { didYouMean, editDistance } from '../../src/core/util/strings.js';
import { repoRoot } from '../helpers/cli.js';
import { textAt } from '../helpers/positions.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-config-load-');
after(() => tmp.remove());
const quickstartData = join(repoRoot, 'configs', 'quickstart');

/** A config extending quickstart with the dataset at the bundled data; `body` starts on line 4. */
function child(name: string, body: string): string {
  return tmp.write(name, `extends: quickstart\ndataset:\n  path: ${quickstartData}\n${body}`);
}

function only(findings: Finding[], ruleId: string): Finding {
  const hits = findings.filter((f) => f.ruleId === ruleId);
  assert.equal(hits.length, 1, `expected one ${ruleId}, got ${JSON.stringify(findings, null, 2)}`);
  return hits[0];
}

describe('reading the bytes', () => {
  test('a missing file, a folder, a pipe, an empty and a blank file are input findings naming the file', () => {
    const cases: [string, string][] = [
      [tmp.at('nope.yaml'), 'input/missing-file'],
      [tmp.mkdir('folder.yaml'), 'input/not-a-file'],
      // A named pipe: reading it would wait for a writer for ever.
      ...(process.platform === 'win32'
        ? []
        : [
            [(execFileSync('mkfifo', [tmp.at('pipe.yaml')]), tmp.at('pipe.yaml')), 'input/not-a-file'] as [
              string,
              string,
            ],
          ]),
      [tmp.write('empty.yaml', ''), 'input/empty'],
      [tmp.write('blank.yaml', '\n  \n\t\n'), 'input/empty'],
    ];
    for (const [file, ruleId] of cases) {
      const r = readConfigText(file);
      assert.equal(r.text, undefined, file);
      const f = only(r.findings, ruleId);
      assert.equal(f.severity, 'error');
      assert.equal(f.position?.file, file);
      assert.ok(f.fix, `${ruleId} has a fix`);
      assert.match(f.docs, new RegExp(`^docs/rules\\.md#${ruleId.replace('/', '-')}$`));
    }
  });

  test('a preset name given as a file is pointed at the preset', () => {
    const f = only(readConfigText('quickstart').findings, 'input/missing-file');
    assert.match(f.fix ?? '', /configs[\\/]quickstart\.yaml/);
  });

  test('a binary file is reported at its first NUL byte', () => {
    const file = tmp.write('model.bin', Buffer.from([0x64, 0x0a, 0x41, 0x42, 0x00, 0x01, 0x02]));
    const f = only(readConfigText(file).findings, 'input/binary');
    assert.deepEqual(f.position, { file, line: 2, col: 3 });
    assert.match(f.message, /offset 4/);
  });

  test('a Latin-1 file is reported at the first byte that is not UTF-8', () => {
    // "dataset:\n  path: caf\xe9\n": the é is byte 20, on line 2, column 12.
    const file = tmp.write('latin1.yaml', Buffer.from('dataset:\n  path: caf\xe9\n', 'latin1'));
    const f = only(readConfigText(file).findings, 'input/not-utf8');
    assert.match(f.message, /0xe9 at offset 20/);
    assert.deepEqual(f.position, { file, line: 2, col: 12 });
    // Followed by a letter instead of the newline: still the é, not the byte after it.
    const file2 = tmp.write('latin1b.yaml', Buffer.from('dataset:\n  path: caf\xe9s\n', 'latin1'));
    const f2 = only(readConfigText(file2).findings, 'input/not-utf8');
    assert.deepEqual(f2.position, { file: file2, line: 2, col: 12 });
  });

  test('UTF-8 (with or without a BOM, with multi-byte characters) is read as text', () => {
    const plain = readConfigText(tmp.write('utf8.yaml', 'dataset:\n  path: café/日本\n'));
    assert.deepEqual(plain.findings, []);
    assert.equal(plain.text, 'dataset:\n  path: café/日本\n');
    const bom = readConfigText(tmp.write('bom.yaml', '\ufeffdataset:\n  path: x\n'));
    assert.equal(bom.text, 'dataset:\n  path: x\n');
  });
});

describe('parsing the YAML', () => {
  test('numbers written as 1e-4 are numbers (YAML 1.2), quoted ones are strings', () => {
    const { source, findings } = parseConfigSource(
      'x.yaml',
      'training:\n  learning_rate: 1e-4\n  a: 3E-4\n  b: 1.5e+3\n  c: "1e-4"\n',
    );
    assert.deepEqual(findings, []);
    assert.deepEqual(source?.value, { training: { learning_rate: 1e-4, a: 3e-4, b: 1500, c: '1e-4' } });
  });

  test('a duplicate key is reported at the second occurrence, with its key path', () => {
    const text = 'dataset:\n  path: x\ntraining:\n  max_steps: 10\n  log_every: 5\n  max_steps: 20\n';
    const f = only(parseConfigSource('dup.yaml', text).findings, 'schema/duplicate-key');
    assert.deepEqual(f.position, { file: 'dup.yaml', line: 6, col: 3 });
    assert.match(f.message, /`max_steps`/);
    assert.equal(f.keyPath, 'training.max_steps');
  });

  test('a duplicate key in a flow mapping is reported at the second key', () => {
    const f = only(
      parseConfigSource('dup.yaml', 'training: {max_steps: 1, max_steps: 2}\n').findings,
      'schema/duplicate-key',
    );
    assert.deepEqual(f.position, { file: 'dup.yaml', line: 1, col: 26 });
    assert.equal(f.keyPath, 'training.max_steps');
  });

  test('a syntax error has a position and a one-line message', () => {
    const f = only(parseConfigSource('broken.yaml', 'dataset:\n  path: [unclosed\n').findings, 'yaml/syntax');
    assert.equal(f.position?.file, 'broken.yaml');
    assert.equal(typeof f.position?.line, 'number');
    assert.equal(typeof f.position?.col, 'number');
    assert.ok(!f.message.includes('\n'), f.message);
    const tab = only(parseConfigSource('tab.yaml', 'dataset:\n  path: x\n\tbad: 1\n').findings, 'yaml/syntax');
    assert.deepEqual(tab.position, { file: 'tab.yaml', line: 3, col: 1 });
    // The message does not end in the parser's own "at line L, column C:" (whose code frame a one-line message
    // cuts); the fix quotes the last line with text at or above the error (past the end: the file's last one).
    assert.doesNotMatch(f.message, /at line \d+, column \d+:?$/);
    assert.equal(tab.fix, 'check the brackets, quotes and indentation up to line 3: "bad: 1"');
    const end = only(parseConfigSource('end.yaml', 'a: 1\nb: [2,\n\n').findings, 'yaml/syntax');
    assert.match(end.fix ?? '', /up to line 2: "b: \[2,"$/);
  });

  test("two documents, a merge key and nesting past reading are said in a config's terms, not the parser's", () => {
    const two = only(parseConfigSource('two.yaml', 'a: 1\n---\nb: 2\n').findings, 'yaml/syntax');
    assert.equal(two.message, 'a second YAML document (after `---`): a config is one document');
    assert.match(two.fix ?? '', /^remove the `---` and what follows it/);
    // Not "unknown key `<<`": the merge is what is not read.
    const merge = only(
      parseConfigSource('merge.yaml', 'extends: quickstart\nbatching:\n  <<: {batch_size: 4}\n').findings,
      'yaml/syntax',
    );
    assert.deepEqual(merge.position, { file: 'merge.yaml', line: 3, col: 3 });
    assert.match(merge.message, /^a YAML merge key \(`<<:`\)/);
    const depth = 3000;
    const keys = [...Array(depth).keys()].map((i) => `${'  '.repeat(i + 1)}k:\n`).join('');
    const deep = parseConfigSource('deep.yaml', `a:\n${keys}${'  '.repeat(depth + 1)}v: 1\n`).findings;
    const nested = deep.find((f) => f.ruleId === 'yaml/syntax')!;
    assert.match(nested.message, /^the YAML is nested too deeply/);
  });

  test('only comments is empty; a list or a scalar at the top is a type error at line 1', () => {
    only(parseConfigSource('c.yaml', '# nothing here\n\n# still nothing\n').findings, 'input/empty');
    const list = only(parseConfigSource('list.yaml', '- a\n- b\n').findings, 'schema/type');
    assert.deepEqual(list.position, { file: 'list.yaml', line: 1, col: 1 });
    assert.match(list.message, /not a list/);
    const scalar = only(parseConfigSource('s.yaml', '\nhello\n').findings, 'schema/type');
    assert.deepEqual(scalar.position, { file: 's.yaml', line: 2, col: 1 });
  });

  test('an alias bomb is a finding, not an exception', () => {
    const text = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]',
      '',
    ].join('\n');
    let result: ReturnType<typeof parseConfigSource> | undefined;
    assert.doesNotThrow(() => {
      result = parseConfigSource('bomb.yaml', text);
    });
    assert.equal(result?.source, undefined);
    assert.ok(
      result?.findings.some((f) => f.severity === 'error' && f.position?.file === 'bomb.yaml'),
      JSON.stringify(result?.findings),
    );
  });
});

describe('schema findings', () => {
  test('an unknown key gets its line:col, key path and a did-you-mean', () => {
    const file = child('typo.yaml', 'training:\n  lerning_rate: 1e-4\ntrainig:\n  max_steps: 5\n');
    const { loaded, findings } = loadConfig(file);
    assert.equal(loaded, undefined);
    const [inner, top] = findings
      .filter((f) => f.ruleId === 'schema/unknown-key')
      .sort((a, b) => (a.position?.line ?? 0) - (b.position?.line ?? 0));
    assert.deepEqual(inner.position, { file, line: 5, col: 3 });
    assert.equal(inner.keyPath, 'training.lerning_rate');
    assert.match(inner.message, /did you mean `learning_rate`/);
    assert.match(inner.fix ?? '', /learning_rate/);
    assert.deepEqual(top.position, { file, line: 6, col: 1 });
    assert.equal(top.keyPath, 'trainig');
    assert.match(top.message, /did you mean `training`/);
  });

  test('deeper unknown keys, list items and flow mappings are located exactly', () => {
    const file = child(
      'deep.yaml',
      'training:\n  optimizer:\n    betaa1: 0.9\n  eval_sentences:\n    - text: ' +
        'hi\n      langauge: en\nbatching: {batch_size: 8, bukets: 3}\ntext:\n  ' +
        'languages: [en, EN]\n',
    );
    const { findings } = loadConfig(file);
    const byKey = new Map(findings.map((f) => [f.keyPath, f]));
    assert.deepEqual(byKey.get('training.optimizer.betaa1')?.position, { file, line: 6, col: 5 });
    assert.match(byKey.get('training.optimizer.betaa1')?.message ?? '', /did you mean `beta1`/);
    assert.deepEqual(byKey.get('training.eval_sentences.0.langauge')?.position, { file, line: 9, col: 7 });
    assert.match(byKey.get('training.eval_sentences.0.langauge')?.message ?? '', /did you mean `language`/);
    assert.deepEqual(byKey.get('batching.bukets')?.position, { file, line: 10, col: 27 });
    assert.equal(textAt(byKey.get('batching.bukets')?.position), 'bukets: 3}');
    assert.deepEqual(byKey.get('text.languages.1')?.position, { file, line: 12, col: 19 });
    assert.equal(findings.length, 4, JSON.stringify(findings, null, 2));
  });

  test('a wrong type, a range and an enum typo are reported at the value', () => {
    const file = child('types.yaml', 'batching:\n  batch_size: lots\n  buckets: 99\ndevice:\n  backend: webgup\n');
    const { findings } = loadConfig(file);
    const type = only(findings, 'schema/type');
    assert.deepEqual(type.position, { file, line: 5, col: 15 });
    assert.match(type.message, /`batching\.batch_size` must be a whole number/);
    assert.match(type.message, /"lots"/);
    const range = only(findings, 'schema/range');
    assert.deepEqual(range.position, { file, line: 6, col: 12 });
    assert.match(range.message, /≤ 64, got 99/);
    const en = only(findings, 'schema/enum');
    assert.deepEqual(en.position, { file, line: 8, col: 12 });
    assert.match(en.message, /did you mean "webgpu"/);
    assert.equal(en.fix, 'backend: webgpu');
  });

  test('CRLF line ends and a BOM do not shift positions', () => {
    const crlf = tmp.write(
      'crlf.yaml',
      `extends: quickstart\r\ndataset:\r\n  path: ${quickstartData}\r\ntraining:\r\n  lerning_rate: 1e-4\r\n`,
    );
    assert.deepEqual(only(loadConfig(crlf).findings, 'schema/unknown-key').position, { file: crlf, line: 5, col: 3 });
    const bom = tmp.write(
      'bom2.yaml',
      `\ufeffextends: quickstart\ndataset:\n  path: ${quickstartData}\ntraining:\n  lerning_rate: 1e-4\n`,
    );
    assert.deepEqual(only(loadConfig(bom).findings, 'schema/unknown-key').position, { file: bom, line: 5, col: 3 });
  });

  test('a missing dataset section is reported as dataset.path, with a fix that writes the section', () => {
    const file = tmp.write('nodata.yaml', 'training:\n  max_steps: 5\n');
    const f = only(loadConfig(file).findings, 'schema/missing-key');
    // The schema's default fills `dataset: {}`, so what is missing is dataset.path.
    assert.equal(f.keyPath, 'dataset.path');
    assert.equal(f.position?.file, file);
    // With no `dataset:` in the file, `path: ...` alone would be written at the top level: wrong.
    assert.match(f.fix ?? '', /dataset:\s*\n\s+path:/, `fix: ${JSON.stringify(f.fix)}`);
  });

  test('an empty section (`training:` with nothing under it) is a type error at that key', () => {
    const file = child('emptysec.yaml', 'training:\n');
    const f = only(loadConfig(file).findings, 'schema/type');
    assert.equal(f.keyPath, 'training');
    assert.equal(f.position?.line, 4);
  });

  test('.inf and .nan are not accepted as numbers, and are named as what they are', () => {
    const file = child('nonfinite.yaml', 'training:\n  max_steps: .inf\n  learning_rate: .nan\n');
    const { loaded, findings } = loadConfig(file);
    assert.equal(loaded, undefined, 'max_steps: .inf must not validate');
    const steps = findings.filter((f) => f.keyPath === 'training.max_steps');
    assert.equal(steps.length, 1, JSON.stringify(findings, null, 2));
    assert.deepEqual(steps[0].position, { file, line: 5, col: 14 });
    const lr = findings.filter((f) => f.keyPath === 'training.learning_rate');
    assert.equal(lr.length, 1, `one finding for learning_rate, got ${JSON.stringify(lr, null, 2)}`);
    assert.doesNotMatch(lr[0].message, /got null/, 'NaN is not null');
    assert.match(lr[0].message, /nan/i);
  });

  test('a `__proto__` key is an unknown key, not a silent prototype change', () => {
    const inner = child('proto.yaml', 'training:\n  __proto__:\n    max_steps: 0\n');
    const { loaded, findings } = loadConfig(inner);
    assert.equal(loaded, undefined, 'a config with an unknown key must not validate');
    const f = only(findings, 'schema/unknown-key');
    assert.equal(f.keyPath, 'training.__proto__');
    assert.deepEqual(f.position, { file: inner, line: 5, col: 3 });
    const top = child('proto-top.yaml', '__proto__:\n  polluted: 1\n');
    const g = only(loadConfig(top).findings, 'schema/unknown-key');
    assert.equal(g.keyPath, '__proto__');
    assert.deepEqual(g.position, { file: top, line: 4, col: 1 });
  });

  test('loadConfigOrThrow turns errors into one XttsError with exit code 2 and the first position', () => {
    const file = child('throw.yaml', 'training:\n  lerning_rate: 1e-4\n');
    assert.throws(
      () => loadConfigOrThrow(file),
      (e: unknown) => {
        assert.ok(e instanceof XttsError);
        assert.equal(e.code, 'CONFIG_INVALID');
        assert.equal(e.exitCode, ExitCode.usage);
        assert.deepEqual(e.position, { file, line: 5, col: 3 });
        assert.match(e.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5:3`));
        assert.ok(e.suggestions.some((s) => s.includes('validate-gpu-optimization')));
        return true;
      },
    );
    assert.equal(loadConfigOrThrow(join(repoRoot, 'configs', 'quickstart.yaml')).config.training.max_steps > 0, true);
    // The command it suggests repeats the --set overrides (quoted for a shell) that made the config.
    assert.throws(
      () => loadConfigOrThrow(file, { set: ['model.heads=3', 'text.languages=[en, xx]'] }),
      (e: XttsError) =>
        e.suggestions[0] ===
        `run \`xtts validate-gpu-optimization --config ${file} --set model.heads=3 --set 'text.languages=[en, xx]'\` ` +
          'for every finding with its fix',
    );
  });
});

describe('presets and extends', () => {
  test('every preset loads with no findings and inherits down the chain', () => {
    assert.deepEqual([...PRESETS].sort(), [
      'big',
      'dual-gpu',
      'normal',
      'quickstart',
      'small',
      'tiny',
      'vocoder-small',
      'vocoder-tiny',
    ]);
    for (const p of PRESETS) {
      const { loaded, findings } = loadConfig(presetPath(p));
      assert.deepEqual(findings, [], p);
      assert.ok(loaded, p);
    }
    const big = loadConfig(presetPath('big')).loaded!.config;
    assert.equal(big.model.d_model, 1024); // big
    assert.equal(big.training.checkpoint_every, 5000); // normal
    assert.equal(big.model.postnet_kernel, 5); // tiny
    assert.equal(big.training.learning_rate, 3e-4); // written 3e-4
    assert.equal(big.training.optimizer.beta2, 0.98); // schema default
    assert.equal(big.dataset.path, 'quickstart');
    const dual = loadConfig(presetPath('dual-gpu')).loaded!.config;
    assert.deepEqual([dual.device.model_device, dual.device.data_device], [0, 1]);
    assert.equal(dual.model.d_model, 256); // small
  });

  test("a preset's relative dataset path resolves against the presets folder, whatever the working directory", () => {
    const file = tmp.write('cwd/uses-small.yaml', 'extends: small\n');
    const before = process.cwd();
    process.chdir(tmp.mkdir('elsewhere'));
    try {
      const { loaded, findings } = loadConfig(file);
      assert.deepEqual(findings, []);
      assert.equal(loaded?.datasetDir, join(presetsDir(), 'quickstart'));
      const lint = lintConfig(loaded!, { environment: true }).filter((f) => f.severity === 'error');
      assert.deepEqual(lint, [], 'no dataset/path error for the bundled data');
    } finally {
      process.chdir(before);
    }
  });

  test('a value inherited from a preset is located in the preset file, at that key', () => {
    const file = child('inherit.yaml', 'model:\n  heads: 3\n');
    const { loaded } = loadConfig(file);
    assert.ok(loaded);
    // Written in the child: the child's line.
    assert.deepEqual(loaded.locate('model.heads'), { file, line: 5, col: 10 });
    // Not written in the child (only its section is): the preset that wrote it.
    const dm = loaded.locate('model.d_model');
    assert.ok(dm?.file && existsSync(resolve(dm.file)), `a real file: ${JSON.stringify(dm)}`);
    assert.equal(resolve(dm.file), presetPath('tiny'));
    assert.equal(textAt(dm), '128');
    const lr = loaded.locate('training.learning_rate');
    assert.equal(resolve(lr!.file), presetPath('quickstart'));
    assert.equal(textAt(lr), '3e-3');
    // Keys: the key node, not the value.
    assert.equal(textAt(loaded.locate('training.max_steps', 'key')), 'max_steps: 100');
  });

  test('inherited positions point at real files when run from another working directory', () => {
    const file = child('inherit2.yaml', 'model:\n  heads: 3\n');
    const before = process.cwd();
    const elsewhere = tmp.mkdir('elsewhere2');
    process.chdir(elsewhere);
    try {
      const pos = loadConfig(file).loaded!.locate('model.d_model');
      assert.equal(
        textAt(pos, elsewhere),
        '128',
        `position ${JSON.stringify(pos)} must name a file that exists from ${elsewhere}`,
      );
    } finally {
      process.chdir(before);
    }
  });

  test(
    'extends takes a path relative to the extending file; dataset paths resolve ' + 'against the file that sets them',
    () => {
      tmp.mkdir('proj/data');
      tmp.write('proj/base/base.yaml', 'extends: quickstart\ndataset:\n  path: ../data\nbatching:\n  batch_size: 3\n');
      const file = tmp.write('proj/exp/run.yaml', 'extends: ../base/base.yaml\ntraining:\n  max_steps: 400\n');
      const { loaded, findings } = loadConfig(file);
      assert.deepEqual(findings, []);
      assert.equal(loaded?.datasetDir, tmp.at('proj/data'));
      assert.equal(loaded?.config.batching.batch_size, 3);
      assert.equal(loaded?.config.training.max_steps, 400);
      assert.equal(loaded?.config.training.learning_rate, 3e-3);
      assert.equal(loaded?.sources.length, 4); // run, base, quickstart, tiny
    },
  );

  test('extends of a missing file is reported at the extends line', () => {
    const file = tmp.write('ext-missing.yaml', '# a comment\nextends: ./missing.yaml\n');
    const f = only(loadConfig(file).findings, 'input/missing-file');
    assert.deepEqual(f.position, { file, line: 2, col: 10 });
    assert.equal(f.keyPath, 'extends');
    assert.match(f.message, /missing\.yaml/);
  });

  test("extends of a broken file reports the broken file's own position", () => {
    const broken = tmp.write('ext-target-latin1.yaml', Buffer.from('dataset:\n  path: caf\xe9s\n', 'latin1'));
    const file = tmp.write('ext-broken.yaml', `extends: ${broken}\n`);
    const f = only(loadConfig(file).findings, 'input/not-utf8');
    assert.equal(f.position?.file, broken);
    assert.equal(f.position?.line, 2);
  });

  test('an extends cycle is reported at the extends that closes it', () => {
    const a = tmp.write('cyc/a.yaml', 'extends: ./b.yaml\ndataset:\n  path: x\n');
    const b = tmp.write('cyc/b.yaml', '# b\nextends: ./a.yaml\n');
    const f = only(loadConfig(a).findings, 'config/extends-cycle');
    assert.equal(resolve(f.position!.file), b);
    assert.equal(f.position?.line, 2);
    assert.equal(f.position?.col, 10);
    const self = tmp.write('cyc/self.yaml', 'extends: ./self.yaml\n');
    only(loadConfig(self).findings, 'config/extends-cycle');
  });

  test('an extends chain deeper than 8 files stops with a finding', () => {
    for (let i = 0; i < 12; i++)
      tmp.write(`chain/c${i}.yaml`, i === 11 ? 'extends: quickstart\n' : `extends: ./c${i + 1}.yaml\n`);
    const f = only(loadConfig(tmp.at('chain/c0.yaml')).findings, 'config/extends-depth');
    assert.equal(f.keyPath, 'extends');
    assert.equal(f.position?.line, 1);
  });

  test('extends that is not a non-empty string is a type error at its value', () => {
    for (const [name, text] of [
      ['ext-num.yaml', 'extends: 5\n'],
      ['ext-empty.yaml', 'extends: ""\n'],
      ['ext-list.yaml', 'extends: [tiny]\n'],
    ]) {
      const file = tmp.write(name, text);
      const f = only(loadConfig(file).findings, 'schema/type');
      assert.equal(f.keyPath, 'extends');
      assert.deepEqual(f.position, { file, line: 1, col: 10 });
    }
  });
});

describe('--set overrides', () => {
  const quickstart = join(repoRoot, 'configs', 'quickstart.yaml');

  test('a value YAML would cut at a comment or fold at a newline is refused, saying how to quote it', () => {
    for (const [item, why] of [
      ['pipeline.cache.path=/data/take #2/c.sqlite', '` #` starts a comment'],
      ['training.max_steps=100 # a note', '` #` starts a comment'],
      ['pipeline.cache.path=/data/new\nline/c.sqlite', 'a newline folds into a space'],
    ]) {
      const { loaded, findings } = loadConfig(quickstart, { set: [item] });
      assert.equal(loaded, undefined, item);
      assert.equal(findings[0].ruleId, 'input/bad-override');
      assert.ok(findings[0].message.includes(why), findings[0].message);
      assert.match(findings[0].fix ?? '', /^quote the value inside the argument, e.g. --set '/);
    }
    // Quoted, the same path is a string with its # (and a # with no space before it is no comment).
    const quoted = loadConfig(quickstart, { set: ['pipeline.cache.path="/data/take #2/c.sqlite"'] });
    assert.equal(quoted.loaded?.config.pipeline.cache.path, '/data/take #2/c.sqlite');
    assert.equal(
      loadConfig(quickstart, { set: ['pipeline.cache.path=/data/take#2.sqlite'] }).loaded?.config.pipeline.cache.path,
      '/data/take#2.sqlite',
    );
  });

  test('a value set on the command line wins over the files, as YAML (3e-4 is a number)', () => {
    const { loaded, findings } = loadConfig(quickstart, {
      set: ['training.learning_rate=3e-4', 'batching.buckets=6', 'text.languages=[en, de]', 'device.model_device=H100'],
    });
    assert.deepEqual(findings, []);
    assert.equal(loaded?.config.training.learning_rate, 3e-4);
    assert.equal(loaded?.config.batching.buckets, 6);
    assert.deepEqual(loaded?.config.text.languages, ['en', 'de']);
    assert.equal(loaded?.config.device.model_device, 'H100');
    assert.deepEqual(loaded?.locate('training.learning_rate'), { file: '--set training.learning_rate=3e-4' });
    // Keys not overridden are still found in the files.
    assert.equal(textAt(loaded?.locate('training.max_steps')), '100');
  });

  test('a --set that fixes a bad file value makes the config valid', () => {
    const file = child('badlr.yaml', 'training:\n  learning_rate: 5\n');
    assert.equal(loadConfig(file).loaded, undefined);
    assert.ok(loadConfig(file, { set: ['training.learning_rate=3e-4'] }).loaded);
  });

  test('a bad --set value or unknown key is reported at the flag', () => {
    const bad = only(loadConfig(quickstart, { set: ['training.learning_rate=abc'] }).findings, 'schema/type');
    assert.deepEqual(bad.position, { file: '--set training.learning_rate=abc' });
    const unknown = only(
      loadConfig(quickstart, { set: ['training.lerning_rate=1e-4'] }).findings,
      'schema/unknown-key',
    );
    assert.deepEqual(unknown.position, { file: '--set training.lerning_rate=1e-4' });
    assert.match(unknown.message, /did you mean `learning_rate`/);
  });

  test('a --set without `=`, with a bad key or with invalid YAML is input/bad-override', () => {
    for (const item of ['training.learning_rate', '=3', '.a=1', 'training..x=1', 'training.max_steps=[1']) {
      const r = parseOverrides([item]);
      assert.equal(r.source, undefined, item);
      const f = only(r.findings, 'input/bad-override');
      assert.deepEqual(f.position, { file: `--set ${item}` });
      assert.ok(f.fix, item);
    }
  });

  test('a --set that would reach a prototype is refused at the flag, and pollutes nothing', () => {
    for (const item of [
      '__proto__.polluted=1',
      'constructor.prototype.x=1',
      'training.__proto__.max_steps=0',
      'training={__proto__: {polluted: 1}}',
      'training.schedule={a: {constructor: 1}}',
    ]) {
      const r = loadConfig(quickstart, { set: [item] });
      assert.equal(r.loaded, undefined, item);
      const f = only(r.findings, 'schema/unknown-key');
      assert.deepEqual(f.position, { file: `--set ${item}` });
      assert.match(f.message, /is not a setting/);
      assert.equal(({} as Record<string, unknown>).polluted, undefined, item);
      assert.equal(({} as Record<string, unknown>).x, undefined, item);
    }
  });

  test('a finding about a default value, with --set given, points at the config file, not at "--set"', () => {
    // fmax_hz keeps its default 8000, above Nyquist once the rate is 8000 Hz; no file writes audio.*.
    const { loaded } = loadConfig(quickstart, { set: ['audio.sample_rate_hz=8000'] });
    assert.ok(loaded);
    const f = lintConfig(loaded, { environment: false }).find(
      (x) => x.ruleId === 'audio/consistency' && x.keyPath === 'audio.fmax_hz',
    );
    assert.ok(f, 'fmax above Nyquist fires');
    assert.notEqual(f.position?.file, '--set');
    assert.ok(
      f.position?.file === quickstart || f.position?.file.startsWith('--set audio.sample_rate_hz'),
      JSON.stringify(f.position),
    );
  });
});

describe('small helpers', () => {
  test('mergeConfig merges mappings key by key and replaces lists and scalars', () => {
    const base = { a: { x: 1, y: [1, 2] }, b: 2 };
    assert.deepEqual(mergeConfig(base, { a: { y: [3] }, c: null }), { a: { x: 1, y: [3] }, b: 2, c: null });
    assert.deepEqual(base, { a: { x: 1, y: [1, 2] }, b: 2 }, 'inputs are not changed');
  });

  test('key paths split and join, list indexes as numbers', () => {
    assert.deepEqual(splitKeyPath('training.eval_sentences.0.text'), ['training', 'eval_sentences', 0, 'text']);
    assert.deepEqual(splitKeyPath(''), []);
    assert.equal(joinKeyPath(['a', 0, 'b']), 'a.0.b');
  });

  test('didYouMean suggests near typos and stays quiet on unrelated words', () => {
    assert.equal(didYouMean('lerning_rate', ['max_steps', 'learning_rate', 'log_every']), 'learning_rate');
    assert.equal(didYouMean('trainig', ['dataset', 'training', 'device']), 'training');
    assert.equal(didYouMean('batchSize', ['batch_size', 'buckets']), 'batch_size');
    assert.equal(didYouMean('colour', ['dataset', 'training']), undefined);
    // Two neighbouring letters swapped is one edit (a plain Levenshtein distance counts two).
    assert.equal(didYouMean('trian', ['validate', 'train', 'synthesize']), 'train');
    assert.equal(editDistance('trian', 'train'), 1);
    assert.equal(editDistance('abcd', 'badc'), 2);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('kitten', 'sitting'), 3);
  });

  test("presets live in the repository's configs/ folder", () => {
    assert.equal(presetsDir(), join(repoRoot, 'configs'));
    assert.match(readFileSync(presetPath('tiny'), 'utf8'), /d_model: 128/);
  });
});
