#!/usr/bin/env node
// xtts-validate-gpu-optimization: the config linter as a binary of its own, for CI pipelines that
// want one tool. Same flags, output and exit codes as `xtts validate-gpu-optimization`.
import { execute } from '@oclif/core';

await execute({
  dir: new URL('../src/cli/run.js', import.meta.url).href,
  args: ['validate-gpu-optimization', ...process.argv.slice(2)],
});
