#!/usr/bin/env node
// xtts-analyze-data-pipeline: the input-pipeline analyzer as a binary of its own, for CI pipelines that
// want one tool. Same flags, output and exit codes as `xtts analyze-data-pipeline`.
import { execute } from '@oclif/core';

await execute({
  dir: new URL('../src/cli/run.js', import.meta.url).href,
  args: ['analyze-data-pipeline', ...process.argv.slice(2)],
});
