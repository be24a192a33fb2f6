// The host as a user meets it: --version, --help without TensorFlow.js, the generated docs in sync
// with the code, and a third-party plugin linked with `xtts plugins link` adding a working command.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { staleDocs } from '../../src/core/config/docs.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function xtts(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['src/cli/run.js', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('--version names xtts and its version', () => {
  const r = xtts(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^xtts\/0\.1\.0 /);
});

test('--help lists the core commands and does not load TensorFlow.js', () => {
  const r = spawnSync(process.execPath, ['src/cli/run.js', '--help'], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_DEBUG: 'module', NO_COLOR: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /validate-gpu-optimization/);
  assert.match(r.stderr, /@oclif/, 'NODE_DEBUG=module printed no module loads: the check would be vacuous');
  assert.doesNotMatch(r.stderr, /@tensorflow/, 'xtts --help loaded a TensorFlow.js module');
});

test('the validator does not load TensorFlow.js either', () => {
  const r = spawnSync(
    process.execPath,
    ['src/cli/run.js', 'validate-gpu-optimization', '--config', 'configs/quickstart.yaml'],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NODE_DEBUG: 'module', NO_COLOR: '1' },
    },
  );
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stderr, /@oclif/, 'NODE_DEBUG=module printed no module loads: the check would be vacuous');
  assert.doesNotMatch(r.stderr, /@tensorflow/);
});

test('the generated docs match the code (run `npm run build` and commit docs/)', () => {
  assert.deepEqual(staleDocs(root), []);
});

test('a third-party plugin links and its command uses the public config API', () => {
  const env = {
    XTTS_DATA_DIR: mkdtempSync(join(tmpdir(), 'xtts-data-')),
    XTTS_CACHE_DIR: mkdtempSync(join(tmpdir(), 'xtts-cache-')),
    XTTS_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'xtts-cfg-')),
  };
  assert.equal(
    xtts(['hello', 'config', '--config', 'configs/quickstart.yaml'], env).code,
    2,
    'the command exists before linking',
  );
  const link = xtts(['plugins', 'link', '--no-install', 'test/fixtures/plugin-hello'], env);
  assert.equal(link.code, 0, link.stderr);
  const r = xtts(['hello', 'config', '--config', 'configs/quickstart.yaml', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  const env1 = JSON.parse(r.stdout);
  assert.equal(env1.status, 'success');
  assert.equal(env1.result.dModel, 128);
  assert.deepEqual(env1.result.files, ['configs/quickstart.yaml', 'configs/tiny.yaml']);
  assert.ok(env1.result.parameters > 1e6 && env1.result.parameters < 3e6);
  const bad = xtts(['hello', 'config', '--config', 'missing.yaml', '--json'], env);
  assert.equal(bad.code, 2);
  assert.equal(JSON.parse(bad.stdout).error.code, 'CONFIG_INVALID');
  assert.equal(xtts(['plugins', 'unlink', 'xtts-plugin-hello'], env).code, 0);
  assert.equal(
    xtts(['hello', 'config', '--config', 'configs/quickstart.yaml'], env).code,
    2,
    'the command is gone after unlinking',
  );
});

test(
  'a mistyped command gets "did you mean", exit 2, in a pipe as in a terminal, and ' + 'the JSON envelope with --json',
  () => {
    const r = xtts(['trian', '--max-steps', '1']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Error \[UNKNOWN_COMMAND\] `trian` is not an xtts command; did you mean `xtts train`\?/);
    const j = xtts(['cache', 'stat', '--json']);
    assert.equal(j.code, 2);
    assert.equal(JSON.parse(j.stdout).error.code, 'UNKNOWN_COMMAND');
    assert.match(JSON.parse(j.stdout).error.message, /did you mean `xtts cache stats`/);
    const far = xtts(['zzzz']);
    assert.equal(far.code, 2);
    assert.doesNotMatch(far.stderr, /did you mean/);
    // The start of one command's name; a command given a config without --config.
    assert.match(xtts(['validate']).stderr, /did you mean `xtts validate-gpu-optimization`\?/);
    const bare = xtts(['train', 'configs/quickstart.yaml', '--max-steps', '1']);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /`xtts train` takes flags, not `configs\/quickstart\.yaml`; did you mean /);
    assert.match(bare.stderr, /did you mean `xtts train --config configs\/quickstart\.yaml`\?/);
    // Asking a mistyped command for its help is the same mistake, answered the same way.
    const help = xtts(['trian', '--help']);
    assert.equal(help.code, 2, help.stderr);
    assert.match(help.stderr, /Error \[UNKNOWN_COMMAND\] `trian` is not an xtts command; did you mean `xtts train`\?/);
    assert.doesNotMatch(help.stderr, /Command trian not found/);
    const helpJson = xtts(['cache', 'stat', '--help', '--json']);
    assert.equal(helpJson.code, 2);
    assert.match(JSON.parse(helpJson.stdout).error.message, /did you mean `xtts cache stats`/);
  },
);

test('a config named by XTTS_CONFIG that fails says it came from the environment; one given by flag does not', () => {
  const missing = join(tmpdir(), 'xtts-env-config-missing.yaml');
  const output = join(tmpdir(), 'never-made');
  const fromEnv = xtts(['train', '--output', output, '--json'], { XTTS_CONFIG: missing });
  assert.equal(fromEnv.code, 2, fromEnv.stderr);
  const error = JSON.parse(fromEnv.stdout).error;
  assert.equal(error.code, 'CONFIG_INVALID');
  assert.match(error.suggestions[0], /is named by the environment \(XTTS_CONFIG\), not by --config/);
  const human = xtts(['analyze-data-pipeline', '--files', '2'], { XTTS_CONFIG: missing });
  assert.match(human.stderr, /→ the config .*xtts-env-config-missing\.yaml is named by the environment/);
  for (const flag of [['--config', missing], [`--config=${missing}`], ['-c', missing]]) {
    const typed = xtts(['train', ...flag, '--output', output, '--json'], { XTTS_CONFIG: missing });
    assert.equal(typed.code, 2);
    assert.doesNotMatch(typed.stdout, /named by the environment/, flag.join(' '));
  }
});

test('a mistyped flag names the flag it is likely a typo of; an unrelated one gets none', () => {
  const r = xtts(['train', '--max-step', '3', '--output', join(tmpdir(), 'never-made'), '--json']);
  assert.equal(r.code, 2, r.stderr);
  const error = JSON.parse(r.stdout).error;
  assert.equal(error.code, 'USAGE');
  assert.match(error.message, /Nonexistent flag: --max-step \(--max-step: did you mean --max-steps\?\)/);
  const two = xtts(['validate-gpu-optimization', '--confg', 'x.yaml', '--formatt', 'sarif']);
  assert.equal(two.code, 2);
  assert.match(two.stderr, /--confg: did you mean --config\?; --formatt: did you mean --format\?/);
  const far = xtts(['validate-gpu-optimization', '--config', 'x.yaml', '--zzzzzz']);
  assert.equal(far.code, 2);
  assert.match(far.stderr, /Nonexistent flag: --zzzzzz/);
  assert.doesNotMatch(far.stderr, /did you mean/);
});

test('shell completion: `xtts autocomplete bash` explains the setup and builds the completion script', () => {
  const home = mkdtempSync(join(tmpdir(), 'xtts-home-'));
  const env = { HOME: home, XDG_CACHE_HOME: join(home, '.cache') };
  const r = xtts(['autocomplete', 'bash'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /xtts autocomplete/);
  const refresh = xtts(['autocomplete', '--refresh-cache'], env);
  assert.equal(refresh.code, 0, refresh.stderr);
  const script = spawnSync('bash', ['-c', `find ${home} -name '*.bash' -o -name 'bash_setup' | head -5`], {
    encoding: 'utf8',
  }).stdout;
  assert.ok(script.trim().length > 0, `no completion script under ${home}`);
  const body = spawnSync('bash', ['-c', `cat $(find ${home} -path '*functions/bash/xtts.bash')`], {
    encoding: 'utf8',
  }).stdout;
  assert.match(body, /train/);
  assert.match(body, /synthesize/);
});
