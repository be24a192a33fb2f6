// The code's shape, measured from its syntax trees (test/helpers/structure.ts): each core subsystem is
// used through its index.ts only, the training loop fits on a screen, no function is over 120 lines and
// no file in src/ over 600.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEEP_IMPORT_ALLOWED, deepImports, fileLengths, functionSizes, sourceFiles } from '../helpers/structure.js';

test('each core subsystem is used through its index.ts (or a documented allow-list)', () => {
  const deep = deepImports(sourceFiles(['src/core'])).filter((d) => !(d.to in DEEP_IMPORT_ALLOWED));
  assert.deepEqual(
    deep.map((d) => `${d.from}:${d.line} imports ${d.to}`),
    [],
    "import from the subsystem's index.ts (export the name there), or add the file " +
      'to DEEP_IMPORT_ALLOWED with the reason',
  );
  assert.ok(Object.keys(DEEP_IMPORT_ALLOWED).length <= 10);
});

test('the training loop is at most 80 lines; no function in src/ or plugins/ over 120', () => {
  const sizes = functionSizes(sourceFiles(['src', 'plugins']));
  const loop = sizes.find((f) => f.file === 'src/core/training/trainer.ts' && f.name === 'trainSteps');
  assert.ok(loop, "the loop is trainer.ts's trainSteps");
  assert.ok(loop.lines <= 80, `trainSteps is ${loop.lines} lines`);
  assert.deepEqual(
    sizes.filter((f) => f.lines > 120).map((f) => `${f.file}:${f.line} ${f.name} is ${f.lines} lines`),
    [],
    'split these at what they do (at most 120 lines each)',
  );
});

test('no file in src/ over 600 lines', () => {
  assert.deepEqual(
    fileLengths(sourceFiles(['src']))
      .filter((f) => f.lines > 600)
      .map((f) => `${f.file} is ${f.lines} lines`),
    [],
    'move a concept of these into a file of its own (at most 600 lines each)',
  );
});
