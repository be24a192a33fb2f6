// The code's shape against issue 32's targets, from the syntax trees (test/helpers/structure.ts): the
// longest function in src/ and plugins/ (target ≤ 120 lines), the training loop (≤ 80), files in src/
// over 600 lines (none), lines over 120 characters in src/, plugins/, test/ and bench/ (none), deep
// imports across core subsystems outside the allow-list (none).
import {
  DEEP_IMPORT_ALLOWED,
  deepImports,
  fileLengths,
  functionSizes,
  longLines,
  sourceFiles,
} from '../test/helpers/structure.js';
import { report } from './lib.js';

const functions = functionSizes(sourceFiles(['src', 'plugins']));
const loop = functions.find((f) => f.file === 'src/core/training/trainer.ts' && f.name === 'trainSteps');
const longFiles = fileLengths(sourceFiles(['src'])).filter((f) => f.lines > 600);
const wide = longLines(sourceFiles(['src', 'plugins', 'test', 'bench'], /\.([cm]?[jt]s)$/));
const wideBy: Record<string, number> = {};
for (const l of wide) wideBy[l.file.split('/')[0]] = (wideBy[l.file.split('/')[0]] ?? 0) + 1;
const deep = deepImports(sourceFiles(['src/core'])).filter((d) => !(d.to in DEEP_IMPORT_ALLOWED));
console.log(
  `longest functions: ${functions
    .slice(0, 3)
    .map((f) => `${f.file} ${f.name} ${f.lines}`)
    .join('; ')} (target ≤ 120)`,
);
console.log(`training loop (trainer.ts trainSteps): ${loop?.lines ?? 'missing'} lines (target ≤ 80)`);
console.log(`files over 600 lines: ${longFiles.map((f) => `${f.file} ${f.lines}`).join('; ') || 'none'}`);
const wideWhere = Object.entries(wideBy).map(([k, v]) => `${k} ${v}`);
console.log(`lines over 120 characters: ${wide.length} (${[...wideWhere, 'target 0'].join('; ')})`);
console.log(`deep imports across subsystems outside the allow-list: ${deep.length} (target 0)`);
report('structure', {
  longestFunction: functions[0].lines,
  loopLines: loop?.lines ?? null,
  filesOver600: longFiles.length,
  linesOver120: wide.length,
  deepImports: deep.length,
  pass:
    functions[0].lines <= 120 &&
    (loop?.lines ?? 999) <= 80 &&
    longFiles.length === 0 &&
    wide.length === 0 &&
    deep.length === 0,
});
