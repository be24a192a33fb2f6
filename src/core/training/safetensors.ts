// safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the tensors' bytes back to back,
// little-endian. Python's `safetensors`, PyTorch, JAX and Hugging Face tools read it; xtts writes its
// checkpoints' weights and optimizer moments in it. The header is padded with spaces to 8 bytes so
// that every tensor starts aligned.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ExitCode, XttsError } from '../errors.js';
import { writeAllSync } from '../util/index.js';
import type { NamedArray } from './checkpoint.js';

const DTYPES = { float32: 'F32', int32: 'I32' } as const;
const FROM_DTYPE: Record<string, NamedArray['dtype']> = { F32: 'float32', I32: 'int32' };
/** The format's own limit on the header (100 MB), which also bounds what a broken file can make us allocate. */
const MAX_HEADER_BYTES = 100_000_000;

/** The header (its length first, padded with spaces so that the tensors start 8-byte aligned) and the body's size. */
function encodeHeader(arrays: readonly NamedArray[], metadata: Record<string, string>): { head: Buffer; body: number } {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  for (const a of arrays) {
    if (a.name in header) throw new Error(`safetensors: two tensors are named ${a.name}`);
    if (a.data.length !== a.shape.reduce((x, y) => x * y, 1))
      throw new Error(`safetensors: ${a.name} has ${a.data.length} values for shape [${a.shape}]`);
    header[a.name] = { dtype: DTYPES[a.dtype], shape: a.shape, data_offsets: [offset, offset + a.data.byteLength] };
    offset += a.data.byteLength;
  }
  const json = Buffer.from(JSON.stringify(header));
  const pad = (8 - ((8 + json.length) % 8)) % 8;
  const head = Buffer.alloc(8 + json.length + pad, 0x20);
  head.writeBigUInt64LE(BigInt(json.length + pad), 0);
  json.copy(head, 8);
  return { head, body: offset };
}

const bytesOf = (a: NamedArray) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);

/** One safetensors file of these arrays (names must be distinct), with string metadata, in memory. */
export function encodeSafetensors(arrays: readonly NamedArray[], metadata: Record<string, string> = {}): Uint8Array {
  const { head, body } = encodeHeader(arrays, metadata);
  const out = new Uint8Array(head.length + body);
  out.set(head, 0);
  let p = head.length;
  for (const a of arrays) {
    out.set(bytesOf(a), p);
    p += a.data.byteLength;
  }
  return out;
}

/**
 * The same file written to `fd` tensor by tensor (writeDurable's writer), never the whole in one buffer: a
 * checkpoint's weights or moments can pass the 2 GiB that one write, or 4 GiB that one buffer, can take.
 */
export function safetensorsWriter(
  arrays: readonly NamedArray[],
  metadata: Record<string, string> = {},
): (fd: number) => void {
  const { head } = encodeHeader(arrays, metadata);
  return (fd) => {
    writeAllSync(fd, head);
    for (const a of arrays) writeAllSync(fd, bytesOf(a));
  };
}

/** Where a safetensors file's bytes come from: its size, and a fresh (aligned) copy of a byte range. */
interface ByteSource {
  size: number;
  read(begin: number, end: number): Uint8Array;
}

function decode(source: ByteSource, where: string, headerOnly = false) {
  const broken = (why: string) =>
    new XttsError('CHECKPOINT_UNREADABLE', `${where} is not a readable safetensors file: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['use another checkpoint of the run (checkpoints/step-*)'],
    });
  if (source.size < 8) throw broken(`only ${source.size} bytes`);
  const prefix = source.read(0, 8);
  const n = Number(new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true));
  if (n > MAX_HEADER_BYTES || 8 + n > source.size) throw broken(`its header claims ${n} bytes`);
  let header: Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] } | Record<string, string>
  >;
  try {
    header = JSON.parse(Buffer.from(source.read(8, 8 + n)).toString('utf8'));
  } catch (e) {
    throw broken(`its header is not JSON (${(e as Error).message})`);
  }
  const metadata = (header.__metadata__ as Record<string, string> | undefined) ?? {};
  const arrays: NamedArray[] = [];
  if (headerOnly) return { arrays, metadata };
  const body = 8 + n;
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const {
      dtype,
      shape,
      data_offsets: [begin, end],
    } = entry as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const type = FROM_DTYPE[dtype];
    if (!type) throw broken(`${name} is ${dtype}; xtts stores F32 and I32`);
    const count = shape.reduce((x, y) => x * y, 1);
    if (!(begin >= 0 && body + end <= source.size && end - begin === count * 4))
      throw broken(`${name}'s bytes [${begin}, ${end}) do not hold ${count} values within the file`);
    const copy = source.read(body + begin, body + end);
    arrays.push({
      name,
      shape,
      dtype: type,
      data: type === 'int32' ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer),
    });
  }
  return { arrays, metadata };
}

/**
 * The arrays of a safetensors file in memory (F32 and I32 tensors), in header order, and its metadata; `where` names
 * the file in errors.
 */
export function decodeSafetensors(
  bytes: Uint8Array,
  where: string,
): { arrays: NamedArray[]; metadata: Record<string, string> } {
  return decode({ size: bytes.length, read: (begin, end) => new Uint8Array(bytes.subarray(begin, end)) }, where);
}

/** The metadata of bytes that are a safetensors file, or undefined for bytes that are not one (audio, text). */
export function safetensorsMetadata(bytes: Uint8Array): Record<string, string> | undefined {
  try {
    const read = (begin: number, end: number) => new Uint8Array(bytes.subarray(begin, end));
    return decode({ size: bytes.length, read }, 'bytes', true).metadata;
  } catch {
    return undefined;
  }
}

/** One read takes at most 2 GiB - 1 bytes, and readFileSync no file over 2 GiB: large weights are read in pieces. */
const READ_PIECE = 1 << 30;

/**
 * decodeSafetensors of the file at `path`, read tensor by tensor: no copy of the whole file, which for a large model's
 * weights or moments would pass what one read (2 GiB) or one buffer can hold. `headerOnly`: the metadata alone.
 */
export function readSafetensorsFile(
  path: string,
  options: { headerOnly?: boolean } = {},
): { arrays: NamedArray[]; metadata: Record<string, string> } {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const read = (begin: number, end: number) => {
      const out = new Uint8Array(end - begin);
      for (let off = 0; off < out.length; ) {
        const got = readSync(fd, out, off, Math.min(out.length - off, READ_PIECE), begin + off);
        if (got === 0) throw new Error(`${path} ended at byte ${begin + off} while it was read`);
        off += got;
      }
      return out;
    };
    return decode({ size, read }, path, options.headerOnly);
  } finally {
    closeSync(fd);
  }
}
