// The run folder a --dataset run goes to when no --output is named: the config's output folder with the dataset
// folder's own name appended, however the dataset path is written.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runFolderForDataset } from '../../src/core/training/run-folder.js';

test('--dataset without --output: <output.dir>-<the dataset folder name>, whatever the path ends with', () => {
  const runs = join('/work', 'runs', 'quickstart');
  for (const dataset of ['/data/ds6', '/data/ds6/', '/data/ds6/.', '/data/x/../ds6'])
    assert.equal(runFolderForDataset(runs, dataset), join('/work', 'runs', 'quickstart-ds6'), dataset);
  assert.equal(
    runFolderForDataset(runs, '/data/My Voice (take 2)'),
    join('/work', 'runs', 'quickstart-My_Voice_take_2_'),
  );
});
