#!/usr/bin/env node
// Writes oclif.manifest.json for every core plugin so that `xtts --help` and command lookup read one
// JSON file per plugin instead of importing every command module at start-up.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const oclif = join(root, 'node_modules', 'oclif', 'bin', 'run.js');
for (const name of readdirSync(join(root, 'plugins'))) {
  const dir = join(root, 'plugins', name);
  if (!existsSync(join(dir, 'package.json'))) continue;
  const r = spawnSync(process.execPath, [oclif, 'manifest', dir], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`oclif manifest failed for plugins/${name}:\n${r.stderr || r.stdout}`);
    process.exit(1);
  }
}
