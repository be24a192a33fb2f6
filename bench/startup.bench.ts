// Start-up cost of the CLI: `xtts --help` and the validator against bare `node -e 0`, interleaved so
// that machine noise hits both alike. Target (issue 2): median `xtts --help` within 4x of `node -e 0`.
import { fileURLToPath } from 'node:url';
import { median, report, timeProcess } from './lib.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 15);
const node: number[] = [];
const help: number[] = [];
const validate: number[] = [];
timeProcess(process.execPath, ['src/cli/run.js', '--help'], root); // warm the file cache
for (let i = 0; i < runs; i++) {
  node.push(timeProcess(process.execPath, ['-e', '0'], root));
  help.push(timeProcess(process.execPath, ['src/cli/run.js', '--help'], root));
  validate.push(
    timeProcess(
      process.execPath,
      ['src/cli/run.js', 'validate-gpu-optimization', '--config', 'configs/quickstart.yaml'],
      root,
    ),
  );
}
const ratio = median(help) / median(node);
console.log(`node -e 0                      median ${median(node).toFixed(0)} ms`);
console.log(
  `xtts --help                    median ${median(help).toFixed(0)} ms  (${ratio.toFixed(2)}x node; target <= 4x)`,
);
console.log(
  `xtts validate-gpu-optimization median ${median(validate).toFixed(0)} ms  ` +
    `(${(median(validate) / median(node)).toFixed(2)}x node)`,
);
report('startup', {
  runs,
  nodeMs: median(node),
  helpMs: median(help),
  validateMs: median(validate),
  helpRatio: ratio,
  target: 4,
  pass: ratio <= 4,
});
