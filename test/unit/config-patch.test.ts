import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { patchConfigText } from '../../src/core/config/patch.js';

test('patching keeps comments and order, changes values, adds missing sections, explains why', () => {
  const text = '# my config\nextends: small\npipeline:\n  workers: 1 # few\ntraining:\n  max_steps: 10\n';
  const out = patchConfigText(text, [
    { key: 'pipeline.workers', value: 7, reason: 'input-bound' },
    { key: 'batching.batch_size', value: 32, reason: 'dispatch-bound' },
  ]);
  assert.deepEqual(parse(out), {
    extends: 'small',
    pipeline: { workers: 7 },
    training: { max_steps: 10 },
    batching: { batch_size: 32 },
  });
  assert.match(out, /^# my config\n/);
  assert.match(out, /# xtts: input-bound\n  workers: 7 # few/);
  assert.match(out, /# xtts: dispatch-bound\n  batch_size: 32/);
});

test(
  'a patched config written in another folder names the same dataset and parent config; ' + 'a preset stays a name',
  async () => {
    const { loadConfig } = await import('../../src/core/config/load.js');
    const { patchConfigFile } = await import('../../src/core/config/patch.js');
    const { TempDir } = await import('../helpers/tmp.js');
    const { dirname, resolve } = await import('node:path');
    const tmp = new TempDir('xtts-patch-');
    try {
      tmp.write('project/base.yaml', 'extends: quickstart\ntraining:\n  max_steps: 10\n');
      tmp.mkdir('project/data');
      const file = tmp.write('project/my.yaml', '# mine\nextends: base.yaml\ndataset:\n  path: data\n');
      const changes = [{ key: 'batching.batch_size', value: 8, reason: 'dispatch-bound' }];
      for (const out of [tmp.at('elsewhere/fixed.yaml'), tmp.at('fixed.yaml'), tmp.at('project/fixed.yaml')]) {
        mkdirSync(dirname(out), { recursive: true });
        patchConfigFile({ file, text: readFileSync(file, 'utf8') }, changes, out);
        const { loaded, findings } = loadConfig(out);
        assert.deepEqual(findings, [], out);
        assert.equal(loaded!.datasetDir, resolve(tmp.at('project/data')), out);
        assert.equal(loaded!.config.training.max_steps, 10, `${out}: base.yaml is still its parent`);
        assert.equal(loaded!.config.batching.batch_size, 8);
      }
      // Inside the new folder's reach the paths stay relative; beside it they become absolute.
      assert.match(readFileSync(tmp.at('fixed.yaml'), 'utf8'), /extends: project\/base\.yaml\n[^]*path: project\/data/);
      assert.match(readFileSync(tmp.at('elsewhere/fixed.yaml'), 'utf8'), new RegExp(`path: ${tmp.at('project/data')}`));
      assert.match(
        readFileSync(tmp.at('project/fixed.yaml'), 'utf8'),
        /^# mine\nextends: base\.yaml\n[^]*path: data\n/,
      );
      // A preset's name is not a path.
      const preset = tmp.write('project/p.yaml', 'extends: quickstart\n');
      patchConfigFile({ file: preset, text: readFileSync(preset, 'utf8') }, changes, tmp.at('elsewhere/p.yaml'));
      assert.match(readFileSync(tmp.at('elsewhere/p.yaml'), 'utf8'), /^extends: quickstart\n/);
    } finally {
      tmp.remove();
    }
  },
);
