// xtts writes only where it was told: `train`, a `--resume` of it and `synthesize` run under strace,
// which records every call that creates, opens for writing, renames, links or removes a file, from
// every thread and child process. Each path must lie in the run folder, the feature cache (the
// config's pipeline.cache.path, with SQLite's -wal/-shm/-journal and the .new-* file a new cache is
// built in), or beside the WAV synthesize was told to write (its temporary sibling). HOME and the
// working directory are empty folders of their own, so a stray write to either is seen too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { test } from 'node:test';
import { xttsBin } from '../helpers/cli.js';
import { microRun } from '../helpers/short-clips.js';
import { TempDir } from '../helpers/tmp.js';

const WRITE_CALL_NAMES = [
  'openat',
  'open',
  'creat',
  'rename',
  'renameat2?',
  'mkdir',
  'mkdirat',
  'rmdir',
  'unlink',
  'unlinkat',
  'link',
  'linkat',
  'symlink',
  'symlinkat',
  'truncate',
  'chmod',
  'fchmodat',
  'utimensat',
];
const WRITE_CALLS = new RegExp(`^(\\d+\\s+)?(${WRITE_CALL_NAMES.join('|')})\\(`);
const WRITE_FLAGS = /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND/;

/** The paths a traced process wrote, created, renamed or removed (relative ones resolved against `cwd`). */
function writtenPaths(log: string, cwd: string): string[] {
  const paths = new Set<string>();
  for (const line of log.split('\n')) {
    const m = WRITE_CALLS.exec(line);
    if (!m) continue;
    if (m[2].startsWith('open') && !WRITE_FLAGS.test(line)) continue;
    if (m[2] === 'utimensat' && !line.includes('"')) continue;
    for (const q of line.matchAll(/"((?:[^"\\]|\\.)*)"/g)) paths.add(isAbsolute(q[1]) ? q[1] : resolve(cwd, q[1]));
  }
  return [...paths].sort();
}

function traced(args: string[], tmp: TempDir, cwd: string, tag: string): string[] {
  const log = tmp.at(`${tag}.strace`);
  const r = spawnSync(
    'strace',
    ['-f', '-qq', '-s', '4096', '-o', log, '-e', 'trace=%file', process.execPath, xttsBin, ...args],
    {
      cwd,
      env: {
        ...process.env,
        HOME: tmp.mkdir(`${tag}-home`),
        NO_COLOR: '1',
        NODE_TEST_CONTEXT: undefined,
      } as NodeJS.ProcessEnv,
      encoding: 'utf8',
      timeout: 300_000,
    },
  );
  assert.equal(r.status, 0, `${args.join(' ')}: exit ${r.status}\n${r.stderr.slice(-2000)}`);
  return writtenPaths(readFileSync(log, 'utf8'), cwd);
}

test('train, resume and synthesize write nothing outside the run folder, the feature ' +
  'cache and the WAV they were told to write', {
  timeout: 600_000,
}, () => {
  const { dir, config } = microRun('xtts-writes-');
  const tmp = new TempDir('xtts-writes-trace-');
  const cwd = tmp.mkdir('cwd');
  const runDir = join(dir, 'runs', 'traced');
  const cache = join(dir, 'cache.sqlite');
  const wav = join(tmp.mkdir('spoken'), 'boy.wav');
  const inRun = (p: string) => p === runDir || p.startsWith(`${runDir}/`);
  const inCache = (p: string) =>
    /^(\.new-\d+-[a-z0-9]+)?(-wal|-shm|-journal)?$/.test(p.slice(cache.length)) && p.startsWith(cache);
  const besideWav = (p: string) =>
    p === wav || (dirname(p) === dirname(wav) && basename(p).startsWith(`.${basename(wav)}.`) && p.endsWith('.tmp'));
  // The run folder's parent is made on the way to it (mkdir -p): created, not written into.
  const runParents = (p: string) => runDir.startsWith(`${p}/`);
  const allowed = { train: (p: string) => inRun(p) || inCache(p) || runParents(p), synthesize: besideWav };
  const calls: [keyof typeof allowed, string[]][] = [
    ['train', ['train', '--config', config, '--backend', 'wasm', '--output', runDir, '--max-steps', '3']],
    ['train', ['train', '--config', config, '--backend', 'wasm', '--output', runDir, '--max-steps', '5', '--resume']],
    ['synthesize', ['synthesize', '--checkpoint', runDir, '--text', 'The boy.', '--out', wav, '--backend', 'wasm']],
  ];
  for (const [i, [kind, args]] of calls.entries()) {
    const written = traced(args, tmp, cwd, `call-${i}`);
    // Devices a process may open for writing: its own terminal and /dev/null (nothing is stored there).
    const stray = written.filter(
      (p) => !allowed[kind](p) && !/^\/dev\/(null|tty|pts\/\d+)$/.test(p) && !p.startsWith('/proc/self/'),
    );
    assert.deepEqual(stray, [], `${args.join(' ')} wrote outside the folders it was given:\n${stray.join('\n')}`);
    assert.ok(
      written.some(kind === 'train' ? inRun : besideWav),
      `the trace saw the writes it should (${written.length} paths): the watch works`,
    );
  }
});
