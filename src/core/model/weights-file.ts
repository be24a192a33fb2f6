// Weights on disk: `<name>.json`, a manifest of tensor names, shapes, dtypes and byte ranges, and one
// binary file of little-endian 4-byte values (float32 or int32) named by its content hash,
// `<name>.<sha256-prefix>.bin`. The manifest is the commit point: both files are written to temp
// names, fsynced, and renamed, binary first, so a write killed at any moment leaves the previous
// manifest pointing at its previous, intact binary. Superseded binaries and stale temp files are
// removed only after the new manifest is in place.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { ExitCode, XttsError } from '../errors.js';

export const WEIGHTS_FORMAT = 'xtts-weights';
export const WEIGHTS_VERSION = 1;

export interface WeightEntry {
  name: string;
  shape: number[];
  dtype: 'float32' | 'int32';
  /** Byte offset in the binary file. */
  offset: number;
  bytes: number;
}

export interface WeightsManifest {
  format: typeof WEIGHTS_FORMAT;
  version: number;
  /** File name of the binary, in the manifest's folder. */
  bin: string;
  bytes: number;
  sha256: string;
  tensors: WeightEntry[];
  /** Free-form JSON the caller stores alongside (config, step, RNG states, …). */
  meta: Record<string, unknown>;
}

function fsyncDir(dir: string): void {
  // Makes the renames durable; some filesystems refuse to fsync a directory, which is harmless.
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* not supported here */
  }
}

function writeDurably(path: string, data: Uint8Array): void {
  const fd = openSync(path, 'w');
  try {
    let written = 0;
    while (written < data.length) written += writeSync(fd, data, written, data.length - written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Write `tensors` as checkpoint `name` in `dir`, atomically replacing an earlier one. Reads each tensor back once. */
export async function saveWeights(
  dir: string,
  name: string,
  tensors: ReadonlyMap<string, tf.Tensor>,
  meta: Record<string, unknown> = {},
): Promise<{ manifestPath: string; binPath: string; bytes: number }> {
  if (!/^[A-Za-z0-9._-]+$/.test(name))
    throw new XttsError(
      'WEIGHTS_NAME_INVALID',
      `checkpoint name "${name}" may only hold letters, digits, '.', '_' and '-'`,
    );
  const entries: WeightEntry[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [tensorName, t] of tensors) {
    if (t.dtype !== 'float32' && t.dtype !== 'int32')
      throw new XttsError(
        'WEIGHTS_DTYPE_UNSUPPORTED',
        `${tensorName} is ${t.dtype}; checkpoints hold float32 and int32 tensors`,
      );
    const values = await t.data();
    const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    entries.push({ name: tensorName, shape: [...t.shape], dtype: t.dtype, offset, bytes: bytes.length });
    chunks.push(bytes);
    offset += bytes.length;
  }
  const body = Buffer.concat(chunks, offset);
  const sha256 = createHash('sha256').update(body).digest('hex');
  const binName = `${name}.${sha256.slice(0, 16)}.bin`;
  const manifest: WeightsManifest = {
    format: WEIGHTS_FORMAT,
    version: WEIGHTS_VERSION,
    bin: binName,
    bytes: offset,
    sha256,
    tensors: entries,
    meta,
  };

  await mkdir(dir, { recursive: true });
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const binPath = join(dir, binName);
  const manifestPath = join(dir, `${name}.json`);
  const binTmp = `${binPath}.tmp-${tag}`;
  const manifestTmp = `${manifestPath}.tmp-${tag}`;
  writeDurably(binTmp, body);
  await rename(binTmp, binPath);
  writeDurably(manifestTmp, Buffer.from(JSON.stringify(manifest, null, 1)));
  fsyncDir(dir);
  await rename(manifestTmp, manifestPath);
  fsyncDir(dir);

  // Only now may the previous binary and leftovers of killed writes go (exact patterns, so that a
  // checkpoint "ckpt.best" beside "ckpt" is never touched).
  const escaped = name.replace(/[.]/g, '\\.');
  const ours = new RegExp(`^${escaped}\\.(?:[0-9a-f]{16}\\.bin|(?:json|[0-9a-f]{16}\\.bin)\\.tmp-[0-9]+-[0-9a-f]{8})$`);
  for (const f of await readdir(dir)) {
    if (f !== binName && ours.test(f)) await unlink(join(dir, f)).catch(() => undefined);
  }
  return { manifestPath, binPath, bytes: offset };
}

function corrupt(path: string, why: string): XttsError {
  return new XttsError('CHECKPOINT_CORRUPT', `${path}: ${why}`, {
    position: { file: path },
    suggestions: ['Resume from an earlier checkpoint (the run folder keeps several), or delete this one.'],
    exitCode: ExitCode.usage,
  });
}

/** Read the manifest of checkpoint `name` in `dir`. */
export async function readWeightsManifest(dir: string, name: string): Promise<WeightsManifest> {
  const path = join(dir, `${name}.json`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new XttsError('CHECKPOINT_MISSING', `${path} cannot be read: ${(e as Error).message}`, {
      position: { file: path },
      suggestions: ['Check the path and name of the checkpoint.'],
      cause: e,
    });
  }
  let m: WeightsManifest;
  try {
    m = JSON.parse(text) as WeightsManifest;
  } catch (e) {
    throw corrupt(path, `not JSON (${(e as Error).message})`);
  }
  if (m.format !== WEIGHTS_FORMAT || !Array.isArray(m.tensors) || typeof m.bin !== 'string')
    throw corrupt(path, `not an ${WEIGHTS_FORMAT} manifest`);
  if (m.version > WEIGHTS_VERSION)
    throw corrupt(path, `format version ${m.version} is newer than this xtts reads (${WEIGHTS_VERSION})`);
  return m;
}

/**
 * Load checkpoint `name` from `dir`: tensors by name (the caller disposes them) and the stored meta. Verifies size and
 * hash.
 */
export async function loadWeights(
  dir: string,
  name: string,
): Promise<{ tensors: Map<string, tf.Tensor>; meta: Record<string, unknown> }> {
  const manifest = await readWeightsManifest(dir, name);
  const binPath = join(dir, manifest.bin);
  let body: Buffer;
  try {
    body = await readFile(binPath);
  } catch (e) {
    throw corrupt(binPath, `binary named by ${name}.json cannot be read: ${(e as Error).message}`);
  }
  if (body.length !== manifest.bytes)
    throw corrupt(binPath, `${body.length} bytes, the manifest says ${manifest.bytes}`);
  if (createHash('sha256').update(body).digest('hex') !== manifest.sha256)
    throw corrupt(binPath, "content does not match the manifest's sha256");
  // Copy into an aligned buffer: typed arrays need 4-byte alignment, a Buffer's offset may not have it.
  const aligned = new ArrayBuffer(body.length);
  new Uint8Array(aligned).set(body);
  const tensors = new Map<string, tf.Tensor>();
  for (const e of manifest.tensors) {
    const count = e.bytes / 4;
    const size = e.shape.reduce((a, b) => a * b, 1);
    if (count !== size || e.offset + e.bytes > body.length)
      throw corrupt(binPath, `tensor ${e.name} does not fit its byte range`);
    const values =
      e.dtype === 'int32' ? new Int32Array(aligned, e.offset, count) : new Float32Array(aligned, e.offset, count);
    tensors.set(e.name, tf.tensor(values, e.shape, e.dtype));
  }
  return { tensors, meta: manifest.meta ?? {} };
}
