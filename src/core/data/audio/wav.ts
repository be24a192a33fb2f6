// RIFF/WAVE decoding and encoding. PCM 8-bit (unsigned), 16, 24, 32-bit (signed) and IEEE float
// 32/64, any channel count (downmixed to mono by averaging) and sample rate, WAVE_FORMAT_EXTENSIBLE,
// odd-sized chunks (padded to even, the RIFF rule) and unknown chunks (LIST, fact, cue, …) skipped.
// Every failure is an XttsError whose code becomes a dataset skip reason and whose message names the
// file and what to do about it.
import { XttsError } from '../../errors.js';

export interface DecodedWav {
  sampleRateHz: number;
  /** Channels in the file (the samples are their average). */
  channels: number;
  bitsPerSample: number;
  format: 'pcm' | 'float';
  /** Mono samples in [-1, 1] (float files may exceed it where they clip). */
  samples: Float32Array;
  durationS: number;
}

/** Error codes of decodeWav. */
export const WAV_ERROR_CODES = [
  'AUDIO_UNREADABLE',
  'AUDIO_TRUNCATED',
  'AUDIO_UNSUPPORTED_FORMAT',
  'AUDIO_TOO_LONG',
] as const;

const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_IEEE_FLOAT = 3;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
// Bytes 2..15 of every KSDATAFORMAT_SUBTYPE_* GUID built from a format tag (mmreg.h).
const KSDATAFORMAT_GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];
const CODEC_NAMES: Record<number, string> = {
  0x0002: 'MS ADPCM',
  0x0006: 'A-law',
  0x0007: 'mu-law',
  0x0011: 'IMA ADPCM',
  0x0031: 'GSM 6.10',
  0x0050: 'MPEG',
  0x0055: 'MP3',
  0x00ff: 'AAC',
  0x0161: 'WMA',
  0x566f: 'Vorbis',
  0xf1ac: 'FLAC',
};
// Lengths that writers which could not seek back put in the header (ffmpeg: 0xFFFFFFFF, some: 0;
// sox to a pipe: 0x7FFFF000 and up): the data runs to the end of the file.
const UNKNOWN_LENGTH_MIN = 0x7ffff000;

const CONVERT_HINT =
  'convert it to 16-bit PCM WAV, e.g. `sox IN -e signed-integer -b 16 OUT.wav` or ' +
  '`ffmpeg -i IN -c:a pcm_s16le OUT.wav`';

function unreadable(where: string, why: string): XttsError {
  return new XttsError('AUDIO_UNREADABLE', `${where}: ${why}; re-export or ${CONVERT_HINT.replace('IN', where)}`, {
    suggestions: [CONVERT_HINT.replace('IN', where)],
  });
}

function unsupported(where: string, what: string): XttsError {
  return new XttsError(
    'AUDIO_UNSUPPORTED_FORMAT',
    `${where}: ${what} is not supported (PCM or IEEE float WAV only); ${CONVERT_HINT.replace('IN', where)}`,
    {
      suggestions: [CONVERT_HINT.replace('IN', where)],
    },
  );
}

function fileKind(bytes: Uint8Array, tag: string): string {
  if (tag === 'RIFX') return 'a big-endian (RIFX) WAV file';
  if (tag === 'RF64' || tag === 'BW64') return 'an RF64 (64-bit) WAV file';
  if (tag === 'fLaC') return 'a FLAC file';
  if (tag === 'OggS') return 'an Ogg file';
  if (tag === 'FORM') return 'an AIFF file';
  if (tag.startsWith('ID3') || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)) return 'an MP3 file';
  if (tag.slice(0, 2) === '\u001aE') return 'a Matroska/WebM file';
  return 'not a RIFF/WAVE file';
}

export interface DecodeOptions {
  /** Refuse (AUDIO_TOO_LONG) a file longer than this, before its samples are decoded. */
  maxSeconds?: number;
}

/** Sample rates and channel counts a WAV header may declare; outside them it is refused before decoding. */
export const MIN_RATE_HZ = 1000;
export const MAX_RATE_HZ = 768_000;
export const MAX_CHANNELS = 64;

/** The four-character code at byte o (a RIFF chunk id). */
function fourCC(bytes: Uint8Array, o: number): string {
  return String.fromCharCode(bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]);
}

/** What a WAVE fmt chunk declares. */
interface WavFormat {
  code: number;
  channels: number;
  rateHz: number;
  blockAlign: number;
  bits: number;
}

export function decodeWav(bytes: Uint8Array, where = 'audio', options: DecodeOptions = {}): DecodedWav {
  if (bytes.length < 12) {
    throw unreadable(where, `only ${bytes.length} bytes, less than a RIFF header`);
  }
  if (fourCC(bytes, 0) !== 'RIFF' || fourCC(bytes, 8) !== 'WAVE') {
    const kind = fileKind(bytes, fourCC(bytes, 0));
    if (kind === 'not a RIFF/WAVE file') throw unsupported(where, `this file (${kind})`);
    throw unsupported(where, kind);
  }
  const { fmt, dataOffset, dataBytes } = readChunks(bytes, where);
  const { float, containerBytes, containerBits } = sampleLayout(fmt, where);
  const ch = fmt.channels;
  const frameBytes = containerBytes * ch;
  const frames = Math.floor(dataBytes / frameBytes);
  const maxSeconds = options.maxSeconds ?? Number.POSITIVE_INFINITY;
  if (frames / fmt.rateHz > maxSeconds) {
    throw new XttsError(
      'AUDIO_TOO_LONG',
      `${where}: ${(frames / fmt.rateHz).toFixed(1)} s of audio; a clip may be at ` +
        `most ${maxSeconds} s (it was not decoded): cut it into sentences`,
      { suggestions: ['split long recordings into sentence-length clips'] },
    );
  }
  return {
    sampleRateHz: fmt.rateHz,
    channels: ch,
    bitsPerSample: fmt.bits,
    format: float ? 'float' : 'pcm',
    samples: downmix(bytes, dataOffset, frames, ch, float, containerBits),
    durationS: frames / fmt.rateHz,
  };
}

/**
 * The fmt chunk and where the data chunk's samples are, walking the chunks after the RIFF header
 * (odd sizes padded to even, unknown chunks skipped) until both are found.
 */
function readChunks(bytes: Uint8Array, where: string): { fmt: WavFormat; dataOffset: number; dataBytes: number } {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fmt: WavFormat | undefined;
  let dataOffset = -1;
  let dataBytes = 0;
  for (let o = 12; o + 8 <= bytes.length; ) {
    const id = fourCC(bytes, o);
    const size = dv.getUint32(o + 4, true);
    const body = o + 8;
    if (id === 'fmt ') fmt = readFmtChunk(bytes, dv, body, size, where);
    else if (id === 'data') {
      dataOffset = body;
      dataBytes = dataChunkBytes(bytes.length - body, size, where);
      if (fmt) break;
    }
    o = body + size + (size & 1);
  }
  if (!fmt) throw unreadable(where, 'it has no fmt chunk');
  if (dataOffset < 0) throw unreadable(where, 'it has no data chunk');
  return { fmt, dataOffset, dataBytes };
}

/**
 * The seconds of audio a WAV file of `fileBytes` bytes holds, from `head` (its first bytes) alone: the data chunk's
 * declared size, or what the file holds past it where that is less. Undefined where `head` is not a RIFF/WAVE header
 * or does not reach both the fmt and the data chunk's headers; a header the decoder would refuse throws as it would.
 */
export function wavSecondsFromHead(head: Uint8Array, fileBytes: number, where: string): number | undefined {
  if (head.length < 12 || fourCC(head, 0) !== 'RIFF' || fourCC(head, 8) !== 'WAVE') return undefined;
  const dv = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let fmt: WavFormat | undefined;
  let data: { body: number; size: number } | undefined;
  for (let o = 12; o + 8 <= head.length && !(fmt && data); ) {
    const id = fourCC(head, o);
    const size = dv.getUint32(o + 4, true);
    if (id === 'fmt ') fmt = readFmtChunk(head, dv, o + 8, size, where);
    else if (id === 'data') data = { body: o + 8, size };
    o += 8 + size + (size & 1);
  }
  if (!fmt || !data) return undefined;
  const available = fileBytes - data.body;
  const bytes = data.size === 0 || data.size >= UNKNOWN_LENGTH_MIN ? available : Math.min(data.size, available);
  return Math.floor(bytes / (sampleLayout(fmt, where).containerBytes * fmt.channels)) / fmt.rateHz;
}

/** The format a fmt chunk of `size` bytes at `body` declares; WAVE_FORMAT_EXTENSIBLE gives its sub-format's tag. */
function readFmtChunk(bytes: Uint8Array, dv: DataView, body: number, size: number, where: string): WavFormat {
  if (size < 16) throw unreadable(where, `the fmt chunk is ${size} bytes, too short for a WAVE format`);
  if (body + 16 > bytes.length)
    throw new XttsError(
      'AUDIO_TRUNCATED',
      `${where}: the file ends inside its fmt chunk; it was cut short — copy or export it again`,
      { suggestions: ['copy or export the file again'] },
    );
  let code = dv.getUint16(body, true);
  if (code === WAVE_FORMAT_EXTENSIBLE) {
    if (size < 40 || body + 40 > bytes.length)
      throw unreadable(where, 'its WAVE_FORMAT_EXTENSIBLE fmt chunk is shorter than 40 bytes');
    // The sub-format GUID starts with the ordinary format tag (mmreg.h DEFINE_WAVEFORMATEX_GUID).
    code = dv.getUint16(body + 24, true);
    const tail = bytes.subarray(body + 26, body + 40);
    if (!KSDATAFORMAT_GUID_TAIL.every((b, i) => tail[i] === b))
      throw unsupported(
        where,
        'a WAVE_FORMAT_EXTENSIBLE sub-format that is not a plain format tag (e.g. ambisonic B-format)',
      );
  }
  return {
    code,
    channels: dv.getUint16(body + 2, true),
    rateHz: dv.getUint32(body + 4, true),
    blockAlign: dv.getUint16(body + 12, true),
    bits: dv.getUint16(body + 14, true),
  };
}

/** Bytes of audio in a data chunk that declares `size` and has `available` bytes left in the file. */
function dataChunkBytes(available: number, size: number, where: string): number {
  if (size === 0 || size >= UNKNOWN_LENGTH_MIN) return available;
  if (size > available) {
    throw new XttsError(
      'AUDIO_TRUNCATED',
      `${where}: the data chunk declares ${size} bytes of audio but the file holds ` +
        `only ${available}; it was cut short — copy or export it again`,
      {
        suggestions: [
          'copy or export the file again',
          'if the file is complete and only its header is wrong, rewrite it: `sox IN OUT.wav`'.replace('IN', where),
        ],
      },
    );
  }
  return size;
}

/**
 * The header's format checked before any sample is decoded (a header is what a broken or hostile file
 * lies in, and the resampler's output grows with target / declared rate), and the sample containers it implies.
 */
function sampleLayout(
  fmt: WavFormat,
  where: string,
): { float: boolean; containerBytes: number; containerBits: number } {
  if (fmt.channels === 0) throw unreadable(where, 'its fmt chunk says 0 channels');
  if (fmt.rateHz === 0) throw unreadable(where, 'its fmt chunk says 0 Hz');
  if (fmt.rateHz < MIN_RATE_HZ || fmt.rateHz > MAX_RATE_HZ)
    throw unsupported(
      where,
      `a sample rate of ${fmt.rateHz.toLocaleString('en-US')} Hz (xtts ` +
        `reads ${MIN_RATE_HZ.toLocaleString('en-US')} ` +
        `to ${MAX_RATE_HZ.toLocaleString('en-US')} Hz; the header may be broken)`,
    );
  if (fmt.channels > MAX_CHANNELS)
    throw unsupported(
      where,
      `${fmt.channels.toLocaleString('en-US')} channels (xtts reads up to ${MAX_CHANNELS}; the header may be broken)`,
    );
  const float = fmt.code === WAVE_FORMAT_IEEE_FLOAT;
  if (fmt.code !== WAVE_FORMAT_PCM && !float)
    throw unsupported(
      where,
      `${CODEC_NAMES[fmt.code] ?? `codec 0x${fmt.code.toString(16).padStart(4, '0')}`} audio in a WAV file`,
    );
  // Samples sit left-justified in containers of blockAlign / channels bytes (e.g. 20-bit in 24);
  // a block align of 0 (some writers) says nothing, one too small for the samples is a broken header.
  if (fmt.blockAlign !== 0 && fmt.blockAlign < Math.ceil(fmt.bits / 8) * fmt.channels) {
    throw unreadable(
      where,
      `its fmt chunk says ${fmt.channels} channel(s) of ${fmt.bits} bits in blocks ` +
        `of ${fmt.blockAlign} byte(s), which cannot hold them`,
    );
  }
  const fromAlign = fmt.blockAlign / fmt.channels;
  const containerBytes = Number.isInteger(fromAlign) && fromAlign * 8 >= fmt.bits ? fromAlign : Math.ceil(fmt.bits / 8);
  const containerBits = containerBytes * 8;
  if (!(float ? [32, 64] : [8, 16, 24, 32]).includes(containerBits) || fmt.bits === 0 || fmt.bits > containerBits) {
    throw unsupported(where, `${fmt.bits}-bit ${float ? 'float' : 'PCM'} audio (in ${containerBits}-bit containers)`);
  }
  return { float, containerBytes, containerBits };
}

/**
 * `frames` frames of `ch` interleaved samples from byte `dataOffset` on, averaged to mono in [-1, 1].
 * One loop per container type, written out: the branch stays out of the per-sample path (one shared
 * loop that calls a reader per sample measured 3-4x slower).
 */
function downmix(
  bytes: Uint8Array,
  dataOffset: number,
  frames: number,
  ch: number,
  float: boolean,
  containerBits: number,
): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(frames);
  const inv = 1 / ch;
  let p = dataOffset;
  if (float && containerBits === 32) {
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 4) acc += dv.getFloat32(p, true);
      samples[f] = acc * inv;
    }
  } else if (float) {
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 8) acc += dv.getFloat64(p, true);
      samples[f] = acc * inv;
    }
  } else if (containerBits === 16) {
    const s = inv / 32768;
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 2) acc += dv.getInt16(p, true);
      samples[f] = acc * s;
    }
  } else if (containerBits === 8) {
    const s = inv / 128;
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 1) acc += bytes[p] - 128;
      samples[f] = acc * s;
    }
  } else if (containerBits === 24) {
    const s = inv / 8388608;
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 3) acc += ((bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16)) << 8) >> 8;
      samples[f] = acc * s;
    }
  } else {
    const s = inv / 2147483648;
    for (let f = 0; f < frames; f++) {
      let acc = 0;
      for (let c = 0; c < ch; c++, p += 4) acc += dv.getInt32(p, true);
      samples[f] = acc * s;
    }
  }
  return samples;
}

export interface EncodeOptions {
  /** 16 by default; 8 is unsigned PCM; 64 only with `float`. */
  bitsPerSample?: 8 | 16 | 24 | 32 | 64;
  /** IEEE float samples (32-bit unless bitsPerSample is 64). */
  float?: boolean;
  /** Write these channels (equal lengths) instead of `samples`, interleaved. */
  channels?: Float32Array[];
  /**
   * A WAVE_FORMAT_EXTENSIBLE header (the default for more than 2 channels or more than 16 bits would be fine too;
   * players accept both).
   */
  extensible?: boolean;
}

/**
 * WAV bytes of mono `samples` (or of options.channels): 16-bit PCM by default. Integer formats clip
 * to [-1, 1] and round to the nearest step (full scale 2^(bits-1) - 1); float formats store as given.
 */
export function encodeWav(samples: Float32Array, sampleRateHz: number, options: EncodeOptions = {}): Uint8Array {
  const float = options.float ?? false;
  const bits = options.bitsPerSample ?? (float ? 32 : 16);
  if (float ? bits !== 32 && bits !== 64 : bits === 64)
    throw new RangeError(`encodeWav: ${bits}-bit ${float ? 'float' : 'PCM'} is not a WAV sample format`);
  const channels = options.channels ?? [samples];
  if (channels.length === 0) throw new RangeError('encodeWav: no channels');
  const frames = channels[0].length;
  if (channels.some((c) => c.length !== frames)) throw new RangeError('encodeWav: channels differ in length');
  const ch = channels.length;
  const bps = bits / 8;
  const extensible = options.extensible ?? false;
  const fmtBytes = extensible ? 40 : 16;
  const dataBytes = frames * ch * bps;
  const header = 12 + 8 + fmtBytes + 8;
  const out = new Uint8Array(header + dataBytes + (dataBytes & 1));
  const dv = new DataView(out.buffer);
  const w = (o: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[o + i] = s.charCodeAt(i);
  };
  const tagCode = float ? WAVE_FORMAT_IEEE_FLOAT : WAVE_FORMAT_PCM;
  w(0, 'RIFF');
  dv.setUint32(4, out.length - 8, true);
  w(8, 'WAVE');
  w(12, 'fmt ');
  dv.setUint32(16, fmtBytes, true);
  dv.setUint16(20, extensible ? WAVE_FORMAT_EXTENSIBLE : tagCode, true);
  dv.setUint16(22, ch, true);
  dv.setUint32(24, sampleRateHz, true);
  dv.setUint32(28, sampleRateHz * ch * bps, true);
  dv.setUint16(32, ch * bps, true);
  dv.setUint16(34, bits, true);
  if (extensible) {
    dv.setUint16(36, 22, true); // cbSize
    dv.setUint16(38, bits, true); // wValidBitsPerSample
    dv.setUint32(40, ch <= 32 ? 2 ** ch - 1 : 0, true); // dwChannelMask: the first ch speaker positions
    dv.setUint16(44, tagCode, true);
    out.set(KSDATAFORMAT_GUID_TAIL, 46);
  }
  w(header - 8, 'data');
  dv.setUint32(header - 4, dataBytes, true);
  let p = header;
  const full = 2 ** (bits - 1) - 1;
  for (let f = 0; f < frames; f++) {
    for (let c = 0; c < ch; c++, p += bps) {
      const v = channels[c][f];
      if (float) {
        if (bits === 32) dv.setFloat32(p, v, true);
        else dv.setFloat64(p, v, true);
        continue;
      }
      const q = Math.round(Math.max(-1, Math.min(1, v)) * full);
      if (bits === 8) out[p] = q + 128;
      else if (bits === 16) dv.setInt16(p, q, true);
      else if (bits === 24) {
        out[p] = q & 0xff;
        out[p + 1] = (q >> 8) & 0xff;
        out[p + 2] = (q >> 16) & 0xff;
      } else dv.setInt32(p, q, true);
    }
  }
  return out;
}
