// The --json envelope's status agrees with the exit code in every command: 0 success, 1 findings,
// 129/130/143 interrupted, anything else an error envelope. Each command of every core plugin (read
// from the plugins' manifests, so a new command is walked too) is run with arguments that fail and,
// where cheap, arguments that succeed or find something; plus the host with no command or a topic.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { statusForExitCode } from '../../src/core/cli/command.js';
import { assertNoStackTrace, cliPool, describeRun, repoRoot, type CliResult } from '../helpers/cli.js';
import { microRun } from '../helpers/short-clips.js';
import { TempDir } from '../helpers/tmp.js';

const run = cliPool(2);
const tmp = new TempDir('xtts-envelopes-');
const { config } = microRun('xtts-envelopes-run-');
const cache = tmp.at('cache.sqlite');

function commandIds(): string[] {
  const ids: string[] = [];
  for (const plugin of readdirSync(join(repoRoot, 'plugins'))) {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'plugins', plugin, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, unknown>;
    };
    ids.push(...Object.keys(manifest.commands));
  }
  return ids.sort();
}

/** Calls for a command: one that fails on its input, and where cheap ones that succeed or find something. */
const CALLS: Record<string, string[][]> = {
  train: [
    ['--config', tmp.at('missing.yaml')],
    ['--config', config, '--backend', 'wasm', '--max-steps', '2', '--output', tmp.at('run')],
  ],
  synthesize: [
    ['--checkpoint', tmp.at('no-run'), '--text', 'hi', '--out', tmp.at('hi.wav')],
    ['--checkpoint', tmp.at('run'), '--text', 'The boy.', '--out', tmp.at('boy.wav'), '--backend', 'wasm'],
  ],
  voices: [
    ['--checkpoint', tmp.at('no-run')],
    ['--checkpoint', tmp.at('run')],
  ],
  'validate-gpu-optimization': [
    ['--config', tmp.at('missing.yaml')],
    ['--config', 'configs/quickstart.yaml'],
    ['--config', config, '--set', 'model.heads=3'],
  ],
  'analyze-data-pipeline': [
    ['--config', tmp.at('missing.yaml')],
    ['--config', config],
  ],
  'profile-bottleneck': [
    ['--run', tmp.at('no-run')],
    ['--run', tmp.at('run')],
  ],
  'diagnose-gpu-utilization': [['--config', tmp.at('missing.yaml')]],
  'cache:stats': [
    ['--cache', cache],
    ['--cache', tmp.at('missing-folder/cache.sqlite')],
  ],
  'cache:verify': [['--cache', cache]],
  'cache:clear': [['--cache', tmp.write('not-a-cache.txt', 'mine')]],
  export: [['--checkpoint', tmp.at('no-run'), '--out', tmp.at('weights.safetensors')]],
  vocode: [
    ['--in', tmp.at('missing.wav'), '--out-dir', tmp.at('vocoded')],
    ['--in', 'configs/quickstart/wavs/QS-001.wav', '--out-dir', tmp.at('griffin-lim')],
  ],
};

function assertAgrees(r: CliResult, what: string): void {
  assertNoStackTrace(r, what);
  assert.ok(r.json, `${what}: stdout is one JSON envelope\n${describeRun(r)}`);
  assert.equal(
    r.json.status,
    statusForExitCode(r.code!),
    `${what}: status ${r.json.status} with exit ${r.code}\n${describeRun(r)}`,
  );
  if (r.json.status === 'error') assert.match(r.json.error.code, /^[A-Z][A-Z0-9_]*$/, what);
  else assert.ok('result' in r.json, what);
}

describe('the envelope status follows the exit code', () => {
  test('every command of every core plugin is walked (and has calls here)', () => {
    assert.deepEqual(commandIds(), Object.keys(CALLS).sort());
  });

  test('every command, failing and succeeding: status and exit code agree', async () => {
    const statuses = new Set<string>();
    for (const id of commandIds()) {
      // In order: a later call may read what an earlier one wrote (synthesize and profile read the run train made).
      for (const args of CALLS[id]) {
        const r = await run([...id.split(':'), ...args, '--json'], { cwd: repoRoot, timeoutMs: 300_000 });
        assertAgrees(r, `xtts ${id.replace(':', ' ')} ${args.join(' ')}`);
        statuses.add(r.json.status);
      }
    }
    // The walk saw each kind of outcome at least once.
    for (const s of ['success', 'findings', 'error'])
      assert.ok(statuses.has(s), `no call ended in ${s}: ${[...statuses]}`);
  });

  test('no command, or a topic alone, with --json: an error envelope and exit 2, not help text', async () => {
    for (const args of [['--json'], ['cache', '--json']]) {
      const r = await run(args);
      assert.equal(r.code, 2, describeRun(r));
      assert.equal(r.json.status, 'error');
      assert.equal(r.json.error.code, 'NO_COMMAND');
      assertAgrees(r, args.join(' '));
    }
  });
});
