// `xtts cache stats|verify|clear` as processes on a real cache built from real WAVs; processes sharing
// one cache at once.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { FeatureCache, identifyCache } from '../../src/core/cache/cache.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { prepareFeatures } from '../../src/core/data/features.js';
import { repoRoot, runCli } from '../helpers/cli.js';
import { writeToneWav } from '../helpers/wav.js';

test('stats, verify (clean, corrupted, repaired) and clear', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-cachecli-'));
  mkdirSync(join(dir, 'wavs'));
  const rows = Array.from({ length: 5 }, (_, i) => {
    const audioPath = join(dir, 'wavs', `c${i}.wav`);
    writeToneWav(audioPath, 0.5, 22050, 300 + 50 * i);
    return { id: `c${i}`, file: 'm', line: i + 1, audioPath, text: 'x', speaker: 'default' };
  });
  const path = join(dir, 'cache.sqlite');
  const cache = FeatureCache.open(path);
  await prepareFeatures({ cache, rows, audio: loadConfig(presetPath('quickstart')).loaded!.config.audio, workers: 0 });
  await prepareFeatures({ cache, rows, audio: loadConfig(presetPath('quickstart')).loaded!.config.audio, workers: 0 });
  cache.close();

  const stats = await runCli(['cache', 'stats', '--cache', path, '--json']);
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(stats.json.result.features, 5);
  assert.equal(stats.json.result.lookups.feature.lookups, 10);
  assert.equal(stats.json.result.lookups.feature.hits, 5);
  assert.match(
    (await runCli(['cache', 'stats', '--cache', path])).stdout,
    /log-mel features\s+│\s+5\s+│\s+10\s+│\s+5\s+│\s+50\.0%/,
  );

  assert.equal((await runCli(['cache', 'verify', '--cache', path])).code, 0);
  // Truncate one mel blob behind the cache's back, and change one audio file.
  const db = new Database(path);
  db.prepare('UPDATE features SET mel = substr(mel, 1, 100) WHERE rowid = (SELECT MIN(rowid) FROM features)').run();
  db.close();
  writeToneWav(rows[2].audioPath, 0.7, 22050, 999);
  const bad = await runCli(['cache', 'verify', '--cache', path, '--json']);
  assert.equal(bad.code, 1);
  assert.equal(bad.json.result.badFeatures.length, 1);
  assert.deepEqual(bad.json.result.staleAudio, [rows[2].audioPath]);
  const fixed = await runCli(['cache', 'verify', '--cache', path, '--repair', '--json']);
  assert.equal(fixed.code, 0);
  assert.equal(fixed.json.result.repaired, true);
  assert.equal((await runCli(['cache', 'verify', '--cache', path])).code, 0);

  // Damaged files (a copy cut short, bytes overwritten in the middle): a clear error naming the file and what to
  // do, from stats, verify and --repair alike; never INTERNAL.
  const whole = readFileSync(path);
  const half = join(dir, 'half.sqlite');
  writeFileSync(half, whole.subarray(0, Math.floor(whole.length / 2)));
  const scribbled = join(dir, 'scribbled.sqlite');
  const bytes = Buffer.from(whole);
  bytes.fill(0xa5, 4096, bytes.length - 4096);
  writeFileSync(scribbled, bytes);
  for (const damaged of [half, scribbled]) {
    const st = await runCli(['cache', 'stats', '--cache', damaged, '--json']);
    assert.notEqual(st.json.error?.code, 'INTERNAL', st.stderr);
    if (st.code !== 0) {
      // A file that cannot be read is an input error (2), not the environment's (it was 3).
      assert.equal(st.code, 2, st.stderr);
      assert.equal(st.json.error.code, 'CACHE_CORRUPT', st.stderr);
      assert.ok(st.json.error.suggestions[0].includes(`xtts cache clear --cache ${damaged}`));
    }
    // verify reports the damage as what it found (exit 1, as its help says), however deep it lies.
    for (const repair of [[], ['--repair']]) {
      const v = await runCli(['cache', 'verify', '--cache', damaged, ...repair, '--json']);
      assert.equal(v.code, 1, `${damaged} ${repair}: ${v.stdout}${v.stderr}`);
      assert.equal(v.json.status, 'findings');
      assert.notEqual(v.json.result.integrity, 'ok');
      assert.equal(v.json.result.repaired, false);
    }
    const human = await runCli(['cache', 'verify', '--cache', damaged]);
    assert.match(human.stdout + human.stderr, /damaged.*xtts cache clear --cache/s);
    // A damaged file's entries are not said to be "all whole" (those read may be all it could reach).
    assert.doesNotMatch(human.stdout, /all whole/);
    // SQLite's report (a line a damaged page) is cut to its first lines for people.
    assert.ok(human.stdout.split('\n').length < 16, human.stdout);
  }

  // A part clear cannot remove (here its -wal is a folder, which even root cannot unlink as a file) is an error naming
  // it, never reported as removed.
  const stuck = join(dir, 'stuck.sqlite');
  writeFileSync(stuck, whole);
  mkdirSync(`${stuck}-wal`);
  writeFileSync(join(`${stuck}-wal`, 'x'), 'x');
  const refused = await runCli(['cache', 'clear', '--cache', stuck, '--json']);
  assert.equal(refused.json.error?.code, 'CACHE_CLEAR_FAILED', refused.stdout);
  assert.match(refused.json.error.message, /^cannot remove .*stuck\.sqlite-wal: /);
  assert.ok(existsSync(`${stuck}-wal`));

  const cleared = await runCli(['cache', 'clear', '--cache', path, '--json']);
  assert.equal(cleared.json.result.existed, true);
  assert.ok(cleared.json.result.removedBytes > 0);
  const gone = await runCli(['cache', 'stats', '--cache', path, '--json']);
  assert.equal(gone.code, 2);
  assert.equal(gone.json.error.code, 'CACHE_NOT_FOUND');
});

test('clear, stats, verify and train refuse any file that is not a feature cache, and leave it as it was', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-notcache-'));
  const csv = join(dir, 'metadata.csv');
  writeFileSync(csv, 'a|hello|hello\n');
  writeFileSync(csv + '-wal', 'not a wal');
  const empty = join(dir, 'empty.sqlite');
  writeFileSync(empty, '');
  const other = join(dir, 'run.sqlite');
  const odb = new Database(other);
  odb.exec(
    'CREATE TABLE steps (step INTEGER); CREATE TABLE meta (k TEXT PRIMARY KEY, v ' +
      "TEXT NOT NULL); INSERT INTO meta VALUES ('schema_version', '1')",
  );
  odb.close();
  const folder = join(dir, 'folder.sqlite');
  mkdirSync(folder);
  const before = (p: string) => (statSync(p).isFile() ? readFileSync(p) : Buffer.alloc(0));
  for (const [path, why] of [
    [csv, /not a SQLite database/],
    [empty, /an empty file/],
    [other, /a SQLite database with other tables \(steps, meta\)/],
    [folder, /a folder/],
  ] as const) {
    const kept = before(path);
    for (const verb of [['clear'], ['stats'], ['verify'], ['verify', '--repair']]) {
      const r = await runCli(['cache', ...verb, '--cache', path, '--json']);
      assert.equal(r.code, 2, `${verb} ${path}: ${r.stdout}${r.stderr}`);
      assert.equal(r.json.error.code, 'CACHE_NOT_A_CACHE');
      assert.match(r.json.error.message, why);
      assert.match(r.json.error.message, /left as it is/);
      assert.ok(existsSync(path));
      assert.deepEqual(before(path), kept, `${verb} ${path} changed the file`);
    }
  }
  assert.equal(readFileSync(csv + '-wal', 'utf8'), 'not a wal');
  // The trainer's cache path is checked the same way before anything is written.
  const r = await runCli([
    'train',
    '--max-steps',
    '1',
    '--output',
    join(dir, 'run'),
    '--set',
    `pipeline.cache.path=${csv}`,
    '--backend',
    'cpu',
    '--json',
  ]);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.json.error.code, 'CACHE_NOT_A_CACHE');
  assert.equal(readFileSync(csv, 'utf8'), 'a|hello|hello\n');
});

test('clear refuses a cache another process holds open (a run reads from it), and a link to a cache', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-heldcache-'));
  const path = join(dir, 'cache.sqlite');
  FeatureCache.open(path).close();
  // A reader as a run's producer threads are: the cache open for as long as it trains.
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(path)}); db.prepare('SELECT 1').get(); ` +
        "process.stdout.write('open\\n'); setInterval(() => {}, 1000);",
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    const held = await runCli(['cache', 'clear', '--cache', path, '--json']);
    assert.equal(held.code, 2, held.stderr);
    assert.equal(held.json.error.code, 'CACHE_IN_USE');
    assert.match(held.json.error.message, new RegExp(`in use by process ${holder.pid} \\(`));
    assert.ok(existsSync(path), 'the held cache was removed');
  } finally {
    holder.kill();
    await new Promise((resolve) => holder.once('close', resolve));
  }
  const link = join(dir, 'link.sqlite');
  symlinkSync(path, link);
  const linked = await runCli(['cache', 'clear', '--cache', link, '--json']);
  assert.equal(linked.json.error.code, 'CACHE_IS_LINK', linked.stderr);
  assert.ok(existsSync(link) && existsSync(path));
  const cleared = await runCli(['cache', 'clear', '--cache', path, '--json']);
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.equal(existsSync(path), false);
});

test('audio rewritten in place (size kept, mtime set back) is hashed again; an old cache gains a column', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-stalecache-'));
  const audioPath = join(dir, 'a.wav');
  writeToneWav(audioPath, 0.5, 22050, 300);
  const path = join(dir, 'cache.sqlite');
  // A cache whose hash memo has no change time (as before it had one): the column is added, the memo hashed again.
  FeatureCache.open(path).close();
  const old = new Database(path);
  old.exec('ALTER TABLE audio_hashes DROP COLUMN ctime_ns');
  old
    .prepare('INSERT INTO audio_hashes (path, size, mtime_ns, ino, sha256) VALUES (?, ?, ?, ?, ?)')
    .run(
      audioPath,
      statSync(audioPath).size,
      statSync(audioPath, { bigint: true }).mtimeNs.toString(),
      statSync(audioPath).ino,
      'f'.repeat(64),
    );
  old.close();
  const cache = FeatureCache.open(path);
  try {
    const first = cache.audioHash(audioPath);
    assert.notEqual(first, 'f'.repeat(64), 'a memo without a change time is not trusted');
    assert.equal(cache.audioHash(audioPath), first);
    // Another tone of the same length written into the same file, and its times set back with `touch -r` (to the
    // nanosecond: only the change time tells).
    const mtimeNs = statSync(audioPath, { bigint: true }).mtimeNs;
    const saved = join(dir, 'times');
    writeFileSync(saved, '');
    execFileSync('touch', ['-r', audioPath, saved]);
    const other = join(dir, 'b.wav');
    writeToneWav(other, 0.5, 22050, 900);
    writeFileSync(audioPath, readFileSync(other), { flag: 'r+' });
    execFileSync('touch', ['-r', saved, audioPath]);
    assert.equal(statSync(audioPath, { bigint: true }).mtimeNs, mtimeNs);
    const second = cache.audioHash(audioPath);
    assert.notEqual(second, first);
    assert.equal(second, cache.audioHash(other));
  } finally {
    cache.close();
  }
});

test('a cache made before caches carried their application id is still recognised, and clear removes it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-oldcache-'));
  const path = join(dir, 'cache.sqlite');
  FeatureCache.open(path).close();
  const db = new Database(path);
  db.pragma('application_id = 0');
  db.close();
  assert.equal(identifyCache(path).kind, 'cache');
  const stats = await runCli(['cache', 'stats', '--cache', path, '--json']);
  assert.equal(stats.code, 0, stats.stderr);
  const cleared = await runCli(['cache', 'clear', '--cache', path, '--json']);
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.equal(existsSync(path), false);
});

test(
  'six writers and six readers share a new cache at once: every open, write, read ' + 'and counter flush succeeds',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-sharedcache-'));
    const path = join(dir, 'cache.sqlite');
    const { NODE_TEST_CONTEXT: _n, ...env } = process.env;
    const worker = (mode: 'w' | 'r', name: string) =>
      new Promise<string>((resolve) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', join(repoRoot, 'test', 'helpers', 'cache-worker.ts'), path, mode, name],
          { cwd: repoRoot, env },
          (err, stdout, stderr) => resolve(err ? `exit ${err.code}: ${stderr.slice(-800)}` : stdout.trim()),
        ),
      );
    // The writers start together on a cache that does not exist yet; the readers once it does.
    const writers = Array.from({ length: 6 }, (_, i) => worker('w', `w${i}`));
    while (!existsSync(path)) await new Promise((r) => setTimeout(r, 20));
    const readers = Array.from({ length: 6 }, (_, i) => worker('r', `r${i}`));
    const outcomes = await Promise.all([...writers, ...readers]);
    assert.deepEqual(
      outcomes.filter((o) => o !== 'ok'),
      [],
    );
    const db = new Database(path, { readonly: true });
    const texts = (db.prepare('SELECT count(*) AS n FROM texts').get() as { n: number }).n;
    const lookups = Number((db.prepare("SELECT v FROM meta WHERE k = 'lookups_text'").get() as { v: string }).v);
    db.close();
    // 6 writers × 20 rounds × 40 entries, each written once; every writer's lookups counted.
    assert.equal(texts, 6 * 20 * 40);
    assert.equal(lookups, 6 * 20 * 40);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.includes('.new-')),
      [],
      'a temporary cache was left behind',
    );
  },
);
