#!/usr/bin/env node
// Regenerates the docs that are derived from code: the config reference, rules, exit codes and JSON
// Schema (from src/core), and the command reference docs/commands.md (oclif's own `oclif readme`, from
// the built commands' flags, descriptions and examples).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedDocs } from '../core/dist/config/docs.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
for (const [rel, text] of Object.entries(generatedDocs())) {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}

const commands = join(root, 'docs', 'commands.md');
writeFileSync(
  commands,
  '# Command reference\n\n<!-- Generated from the commands by `npm run build` ' +
    '(oclif readme); do not edit by hand. -->\n\n<!-- commands -->\n<!-- ' +
    'commandsstop -->\n',
);
const oclif = createRequire(join(root, 'package.json')).resolve('oclif/bin/run.js');
const r = spawnSync(
  process.execPath,
  [oclif, 'readme', '--readme-path', commands, '--no-source-links', '--no-aliases'],
  {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true', NO_COLOR: '1' },
  },
);
if (r.status !== 0) {
  process.stderr.write(`gen-docs: oclif readme failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  process.exit(1);
}
