// Temporary folders (util/temporary.ts) are gone however the process ends: done with, Ctrl-C with no handler of the
// command's (the folder first, then the signal's own exit), a command's handler that saves and exits (the folder
// kept until then), SIGTERM. Each case is a real process, its temporary folder under a test folder (TMPDIR).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir('xtts-temporary-');
after(() => tmp.remove());

/** Runs `body` (ES module code, `t` the util) in a process; `poke` is called with it once it printed "ready <dir>". */
function run(
  name: string,
  body: string,
  poke: (child: ReturnType<typeof spawn>) => void,
): Promise<{ code: number | null; signal: string | null; out: string; dir: string; tmpdir: string }> {
  const tmpdir = tmp.mkdir(name);
  const script = tmp.write(
    `${name}.mts`,
    `const t = await import(${JSON.stringify(join(repoRoot, 'src/core/util/temporary.ts'))});\n${body}\n`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: repoRoot,
    env: { ...process.env, TMPDIR: tmpdir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let dir = '';
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
    const ready = /^ready (.+)$/m.exec(out);
    if (ready && !dir) {
      dir = ready[1];
      poke(child);
    }
  });
  return new Promise((done) => child.on('exit', (code, signal) => done({ code, signal, out, dir, tmpdir })));
}

const WAIT = 'setInterval(() => {}, 1000);';
/** The folders the util made (tsx keeps a cache of its own in TMPDIR). */
const ours = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('xtts-'));

test('a folder removed when done with is gone, and a later Ctrl-C still ends the process by SIGINT', async () => {
  const r = await run(
    'done',
    `const d = t.makeTemporaryFolder('xtts-x-'); t.removeTemporaryFolder(d);
     console.log('gone ' + !(await import('node:fs')).existsSync(d)); console.log('ready ' + d); ${WAIT}`,
    (c) => c.kill('SIGINT'),
  );
  assert.equal(r.signal, 'SIGINT');
  assert.match(r.out, /gone true/);
  assert.deepEqual(ours(r.tmpdir), []);
});

test('Ctrl-C with no handler of its own: the folder goes, and the process ends by SIGINT as before', async () => {
  const r = await run('sigint', `const d = t.makeTemporaryFolder('xtts-x-'); console.log('ready ' + d); ${WAIT}`, (c) =>
    c.kill('SIGINT'),
  );
  assert.equal(r.signal, 'SIGINT');
  assert.ok(r.dir.startsWith(r.tmpdir), r.dir);
  assert.equal(existsSync(r.dir), false);
  assert.deepEqual(ours(r.tmpdir), []);
});

test('SIGTERM likewise, and every folder goes (two made)', async () => {
  const r = await run(
    'sigterm',
    `t.makeTemporaryFolder('xtts-a-'); const d = t.makeTemporaryFolder('xtts-b-'); console.log('ready ' + d); ${WAIT}`,
    (c) => c.kill('SIGTERM'),
  );
  assert.equal(r.signal, 'SIGTERM');
  assert.deepEqual(ours(r.tmpdir), []);
});

test("a command's own handler (saving into the folder, then exiting) finds it; it goes at the exit", async () => {
  const r = await run(
    'handled',
    `const d = t.makeTemporaryFolder('xtts-x-');
     const fs = await import('node:fs');
     process.on('SIGINT', () => {
       fs.writeFileSync(d + '/saved', 'x');
       setTimeout(() => { console.log('saved ' + fs.existsSync(d + '/saved')); process.exit(130); }, 50);
     });
     console.log('ready ' + d); ${WAIT}`,
    (c) => c.kill('SIGINT'),
  );
  assert.equal(r.code, 130);
  assert.match(r.out, /saved true/);
  assert.deepEqual(ours(r.tmpdir), []);
});
