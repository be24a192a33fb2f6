// TensorBoard event files, written as TensorBoard's own writers do, so that `tensorboard --logdir runs`
// shows an xtts run beside Coqui's and ESPnet's: a TFRecord stream (length, masked CRC-32C of the
// length, an `Event` protocol buffer, its masked CRC-32C) of scalars, PNG images, WAV audio, Markdown text
// and the hparams plugin's settings (text and hparams are tensors whose metadata names their plugin).
// No maintained TensorBoard writer exists for Node without libtensorflow (tfjs-node's needs it), and
// the subset is small: the four messages below, encoded field by field.
//   Event          1 wall_time double, 2 step int64, 3 file_version string, 5 summary Summary
//   Summary        1 value repeated Value
//   Value          1 tag string, 2 simple_value float, 4 image Image, 6 audio Audio
//   Image          1 height int32, 2 width int32, 3 colorspace int32, 4 encoded_image_string bytes
//   Audio          1 sample_rate float, 2 num_channels int64, 3 length_frames int64,
//                  4 encoded_audio_string bytes, 5 content_type string
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli), the checksum TFRecord uses. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function maskedCrc(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A TFRecord: the framing every TensorFlow record file uses. */
export function tfrecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(16 + data.length);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, BigInt(data.length), true);
  dv.setUint32(8, maskedCrc(out.subarray(0, 8)), true);
  out.set(data, 12);
  dv.setUint32(12 + data.length, maskedCrc(data), true);
  return out;
}

// Protocol-buffer wire format: a key (field << 3 | wire type), then a varint, 8 or 4 bytes, or a length and bytes.
class Proto {
  private parts: Uint8Array[] = [];

  private varint(v: bigint | number): void {
    let x = BigInt(v);
    if (x < 0n) x += 1n << 64n;
    const b: number[] = [];
    do {
      let byte = Number(x & 0x7fn);
      x >>= 7n;
      if (x) byte |= 0x80;
      b.push(byte);
    } while (x);
    this.parts.push(Uint8Array.from(b));
  }

  int(field: number, v: number): this {
    this.varint((field << 3) | 0);
    this.varint(Math.trunc(v));
    return this;
  }

  double(field: number, v: number): this {
    return this.fixed(field, 1, 8, (d) => d.setFloat64(0, v, true));
  }

  float(field: number, v: number): this {
    return this.fixed(field, 5, 4, (d) => d.setFloat32(0, v, true));
  }

  /** A fixed-width field: wire type 1 (64-bit) or 5 (32-bit), `bytes` little-endian bytes that `write` sets. */
  private fixed(field: number, wireType: 1 | 5, bytes: 8 | 4, write: (d: DataView) => void): this {
    this.varint((field << 3) | wireType);
    const b = new Uint8Array(bytes);
    write(new DataView(b.buffer));
    this.parts.push(b);
    return this;
  }

  bytes(field: number, v: Uint8Array | string): this {
    const b = typeof v === 'string' ? new TextEncoder().encode(v) : v;
    this.varint((field << 3) | 2);
    this.varint(b.length);
    this.parts.push(b);
    return this;
  }

  message(field: number, m: Proto): this {
    return this.bytes(field, m.finish());
  }

  finish(): Uint8Array {
    const n = this.parts.reduce((a, p) => a + p.length, 0);
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

/** Width, height and TensorBoard colorspace (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) of a PNG, from its IHDR chunk. */
function pngSize(png: Uint8Array): { width: number; height: number; colorspace: number } {
  const dv = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const colorspace = ({ 0: 1, 4: 2, 2: 3, 3: 3, 6: 4 } as Record<number, number>)[png[25]] ?? 3;
  return { width: dv.getUint32(16), height: dv.getUint32(20), colorspace };
}

/** Sample rate, channels and frames of a PCM WAV as encodeWav writes it (44-byte header). */
function wavInfo(wav: Uint8Array): { rate: number; channels: number; frames: number } {
  const dv = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  const channels = dv.getUint16(22, true);
  const bits = dv.getUint16(34, true);
  return {
    rate: dv.getUint32(24, true),
    channels,
    frames: Math.floor(dv.getUint32(40, true) / ((bits / 8) * channels)),
  };
}

/**
 * One run's event file. Every record is written at once (a crash loses nothing already added) and
 * fsynced on flush(); the file is named as TensorFlow names its own, so TensorBoard finds it.
 */
export class EventFileWriter {
  readonly path: string;
  private fd: number | undefined;

  constructor(dir: string) {
    this.path = join(dir, `events.out.tfevents.${Math.floor(Date.now() / 1000)}.${hostname()}.${process.pid}.xtts`);
    this.fd = openSync(this.path, 'a');
    this.write(new Proto().double(1, Date.now() / 1000).bytes(3, 'brain.Event:2'));
  }

  private write(event: Proto): void {
    if (this.fd === undefined) return;
    const rec = tfrecord(event.finish());
    let o = 0;
    while (o < rec.length) o += writeSync(this.fd, rec, o, rec.length - o);
  }

  private summary(step: number, value: Proto): void {
    this.write(
      new Proto()
        .double(1, Date.now() / 1000)
        .int(2, step)
        .message(5, new Proto().message(1, value)),
    );
  }

  scalar(tag: string, step: number, value: number): void {
    if (Number.isFinite(value)) this.summary(step, new Proto().bytes(1, tag).float(2, value));
  }

  /** A PNG image. */
  image(tag: string, step: number, png: Uint8Array): void {
    const { width, height, colorspace } = pngSize(png);
    this.summary(
      step,
      new Proto().bytes(1, tag).message(4, new Proto().int(1, height).int(2, width).int(3, colorspace).bytes(4, png)),
    );
  }

  /** A 16-bit PCM WAV. */
  audio(tag: string, step: number, wav: Uint8Array): void {
    const { rate, channels, frames } = wavInfo(wav);
    this.summary(
      step,
      new Proto()
        .bytes(1, tag)
        .message(6, new Proto().float(1, rate).int(2, channels).int(3, frames).bytes(4, wav).bytes(5, 'audio/wav')),
    );
  }

  /**
   * Markdown text for TensorBoard's Text tab: a string tensor (DT_STRING, a scalar shape) whose metadata names the
   * `text` plugin, as tf.summary.text writes it.
   */
  text(tag: string, step: number, markdown: string): void {
    const DT_STRING = 7;
    const tensor = new Proto().int(1, DT_STRING).message(2, new Proto()).bytes(8, markdown);
    const metadata = new Proto().message(1, new Proto().bytes(1, 'text'));
    this.summary(step, new Proto().bytes(1, tag).message(8, tensor).message(9, metadata));
  }

  /**
   * The run's hyperparameters for TensorBoard's HPARAMS tab, as `hp.hparams` writes them: tag
   * `_hparams_/session_start_info`, an empty float tensor, and in the metadata the `hparams` plugin's
   * HParamsPluginData (version 0) holding a SessionStartInfo: a map of google.protobuf.Value (number,
   * string or bool) and the start time. TensorBoard infers the experiment (columns, metrics) from the runs.
   */
  hparams(step: number, values: Readonly<Record<string, string | number | boolean>>, startTimeS: number): void {
    const info = new Proto();
    for (const [key, v] of Object.entries(values)) {
      const value =
        typeof v === 'number'
          ? new Proto().double(2, v)
          : typeof v === 'boolean'
            ? new Proto().int(4, v ? 1 : 0)
            : new Proto().bytes(3, v);
      info.message(1, new Proto().bytes(1, key).message(2, value));
    }
    info.double(5, startTimeS);
    this.hparamsSummary(step, 'session_start_info', new Proto().int(1, 0).message(3, info));
  }

  /** How the run ended, for the HPARAMS tab: SessionEndInfo (status 1 success, 2 failure; the end time). */
  hparamsEnd(step: number, status: 'success' | 'failure', endTimeS: number): void {
    const info = new Proto().int(1, status === 'success' ? 1 : 2).double(2, endTimeS);
    this.hparamsSummary(step, 'session_end_info', new Proto().int(1, 0).message(4, info));
  }

  private hparamsSummary(step: number, what: string, pluginData: Proto): void {
    // TensorBoard's NULL_TENSOR: DT_FLOAT, shape [0].
    const tensor = new Proto().int(1, 1).message(2, new Proto().message(2, new Proto()));
    const metadata = new Proto().message(1, new Proto().bytes(1, 'hparams').bytes(2, pluginData.finish()));
    this.summary(step, new Proto().bytes(1, `_hparams_/${what}`).message(8, tensor).message(9, metadata));
  }

  flush(): void {
    if (this.fd !== undefined) fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd === undefined) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = undefined;
  }
}
