#!/usr/bin/env node
// Regenerates the docs that are derived from code (config reference, rules, exit codes, JSON Schema).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedDocs } from '../core/dist/config/docs.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
for (const [rel, text] of Object.entries(generatedDocs())) {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}
