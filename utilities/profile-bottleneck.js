#!/usr/bin/env node
// xtts-profile-bottleneck: the step profiler as a binary of its own, for CI pipelines that
// want one tool. Same flags, output and exit codes as `xtts profile-bottleneck`.
import { execute } from '@oclif/core';

await execute({
  dir: new URL('../src/cli/run.js', import.meta.url).href,
  args: ['profile-bottleneck', ...process.argv.slice(2)],
});
