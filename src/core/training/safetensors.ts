// safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the tensors' bytes back to back,
// little-endian. Python's `safetensors`, PyTorch, JAX and Hugging Face tools read it; xtts writes its
// checkpoints' weights and optimizer moments in it. The header is padded with spaces to 8 bytes so
// that every tensor starts aligned.
import { ExitCode, XttsError } from '../errors.js';
import type { NamedArray } from './checkpoint.js';

const DTYPES = { float32: 'F32', int32: 'I32' } as const;
const FROM_DTYPE: Record<string, NamedArray['dtype']> = { F32: 'float32', I32: 'int32' };
/** The format's own limit on the header (100 MB), which also bounds what a broken file can make us allocate. */
const MAX_HEADER_BYTES = 100_000_000;

/** One safetensors file of these arrays (names must be distinct), with string metadata. */
export function encodeSafetensors(arrays: readonly NamedArray[], metadata: Record<string, string> = {}): Uint8Array {
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
  let json = Buffer.from(JSON.stringify(header));
  const pad = (8 - ((8 + json.length) % 8)) % 8;
  json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let p = 8 + json.length;
  for (const a of arrays) {
    out.set(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength), p);
    p += a.data.byteLength;
  }
  return out;
}

/**
 * The arrays of a safetensors file (F32 and I32 tensors), in header order, and its metadata; `where` names the file in
 * errors.
 */
export function decodeSafetensors(
  bytes: Uint8Array,
  where: string,
): { arrays: NamedArray[]; metadata: Record<string, string> } {
  const broken = (why: string) =>
    new XttsError('CHECKPOINT_UNREADABLE', `${where} is not a readable safetensors file: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['use another checkpoint of the run (checkpoints/step-*)'],
    });
  if (bytes.length < 8) throw broken(`only ${bytes.length} bytes`);
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > MAX_HEADER_BYTES || 8 + n > bytes.length) throw broken(`its header claims ${n} bytes`);
  let header: Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] } | Record<string, string>
  >;
  try {
    header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8'));
  } catch (e) {
    throw broken(`its header is not JSON (${(e as Error).message})`);
  }
  const body = bytes.subarray(8 + n);
  const arrays: NamedArray[] = [];
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
    if (!(begin >= 0 && end <= body.length && end - begin === count * 4))
      throw broken(`${name}'s bytes [${begin}, ${end}) do not hold ${count} values within the file`);
    const copy = new Uint8Array(body.subarray(begin, end)); // aligned
    arrays.push({
      name,
      shape,
      dtype: type,
      data: type === 'int32' ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer),
    });
  }
  return { arrays, metadata: (header.__metadata__ as Record<string, string> | undefined) ?? {} };
}
