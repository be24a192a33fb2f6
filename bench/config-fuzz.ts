// The config fuzzer's full sweep, part 1 (here): writes OUT/ with the micro dataset, its config and
// COUNT configs that validate (test/helpers/fuzz-configs.ts: the CI test's generator and seed, so the
// CI test trains the same 300 in two processes), and OUT/jobs.txt (config, run folder) with paths
// relative to OUT. Part 2, bench/config-fuzz.py, trains each through the bundled CLI, one process a
// config, on a many-core host.
//
//   node --import tsx bench/config-fuzz.ts OUT [COUNT=300]
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { repoRoot } from '../test/helpers/cli.js';
import { fuzzJobs } from '../test/helpers/fuzz-configs.js';
import { microRun } from '../test/helpers/short-clips.js';

const out = resolve(process.argv[2] ?? '');
const count = Number(process.argv[3] ?? 300);
if (!process.argv[2] || !Number.isInteger(count) || count < 1) {
  console.error('usage: node --import tsx bench/config-fuzz.ts OUT [COUNT]');
  process.exit(2);
}
const { dir, config } = microRun('xtts-fuzz-sweep-');
const { jobs, drawn } = fuzzJobs(dir, config, count);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
cpSync(dir, out, { recursive: true });
rmSync(join(out, 'runs'), { recursive: true, force: true });
// Paths the configs name: the repository's presets ({{REPO}}) and the sweep's folder ({{OUT}}), for
// the host to fill in.
for (const f of readdirSync(out).filter((n) => n.endsWith('.yaml')))
  writeFileSync(
    join(out, f),
    readFileSync(join(out, f), 'utf8').replaceAll(dir, '{{OUT}}').replaceAll(repoRoot.replace(/\/$/, ''), '{{REPO}}'),
  );
writeFileSync(
  join(out, 'jobs.txt'),
  jobs.map((j) => `${relative(dir, j.file)}\t${relative(dir, j.output)}`).join('\n') + '\n',
);
console.log(`config-fuzz: ${count} of ${drawn} drawn configs validate; written to ${out}`);
