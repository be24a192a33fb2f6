// Dawn on Mesa's llvmpipe (OpenGL ES): the software WebGPU device the GPU code paths are tested on
// (without a window system Mesa has only its surfaceless EGL platform). One probe per test file.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { listAdapters } from '../../src/core/backend/webgpu.js';
import { latestCheckpoint, tensorsDiffer } from './checkpoints.js';
import { runCli } from './cli.js';

process.env.EGL_PLATFORM ??= 'surfaceless';
const gl = await listAdapters({ dawnBackend: 'opengles' });

/** Whether llvmpipe answers here. */
export const llvmpipe = gl.adapters.some((a) => /llvmpipe/.test(a.name));
/** A test's `skip` option: false where llvmpipe answers, else why not. */
export const withoutLlvmpipe: string | false = llvmpipe ? false : `no OpenGL ES adapter here (${gl.note ?? 'none'})`;
/** The environment a CLI process needs to train on it. */
export const onGl = { DAWNNODE_BACKEND: 'opengles', EGL_PLATFORM: 'surfaceless' };

/**
 * The same vocoder or acoustic run trained `steps` steps on the software device with step capture on and
 * off (`dir`/webgpu-captured and webgpu-eager, a checkpoint at the last step; `extra`: more arguments to
 * both, such as replicas): asserts both succeed with the same losses and bit-identical weights and moments;
 * returns the captured run's result and which of its steps were replayed.
 */
export async function capturedMatchesEager(
  config: string,
  dir: string,
  steps: number,
  extra: string[] = [],
): Promise<{ result: { lossCurve: { step: number; loss: number }[] }; replayed: number[] }> {
  const train = (out: string, capture: string) =>
    runCli(
      ['train', '--config', config, '--output', out, '--backend', 'webgpu', '--max-steps', String(steps)].concat([
        '--set',
        `device.step_capture=${capture}`,
        '--set',
        `training.checkpoint_every=${steps}`,
        '--json',
        ...extra,
      ]),
      { timeoutMs: 600_000, env: onGl },
    );
  const [captured, eager] = [join(dir, 'webgpu-captured'), join(dir, 'webgpu-eager')];
  const [r, e] = [await train(captured, 'auto'), await train(eager, 'off')];
  for (const x of [r, e]) assert.equal(x.code, 0, x.stderr.slice(-2000));
  assert.deepEqual(r.json.result.lossCurve, e.json.result.lossCurve);
  assert.equal(tensorsDiffer(latestCheckpoint(captured), latestCheckpoint(eager), 'weights.safetensors'), null);
  assert.equal(tensorsDiffer(latestCheckpoint(captured), latestCheckpoint(eager), 'optimizer.safetensors'), null);
  const db = new Database(join(captured, 'run.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT replayed, programs FROM steps ORDER BY step').all() as {
    replayed: number;
    programs: number;
  }[];
  db.close();
  assert.ok(rows.at(-1)!.programs > 100, JSON.stringify(rows.at(-1)));
  return { result: r.json.result, replayed: rows.map((x) => x.replayed) };
}
