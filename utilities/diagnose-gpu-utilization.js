#!/usr/bin/env node
// xtts-diagnose-gpu-utilization: the diagnosis as a binary of its own, for CI pipelines that
// want one tool. Same flags, output and exit codes as `xtts diagnose-gpu-utilization`.
import { execute } from '@oclif/core';

await execute({
  dir: new URL('../src/cli/run.js', import.meta.url).href,
  args: ['diagnose-gpu-utilization', ...process.argv.slice(2)],
});
