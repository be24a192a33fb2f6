// RIFF/WAVE decoding and encoding. PCM 8 (unsigned), 16, 24, 32-bit and IEEE float 32/64, any
// channel count (downmixed to mono by averaging) and sample rate, WAVE_FORMAT_EXTENSIBLE, odd-sized
// chunks (padded to even, RIFF rule) and unknown chunks (LIST, fact, cue…) skipped.
import { XttsError } from '../../errors.js';

export interface DecodedWav {
  sampleRateHz: number;
  channels: number;
  bitsPerSample: number;
  format: 'pcm' | 'float';
  /** Mono samples in [-1, 1]. */
  samples: Float32Array;
  durationS: number;
}

const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_IEEE_FLOAT = 3;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
const CODEC_NAMES: Record<number, string> = { 2: 'MS ADPCM', 6: 'A-law', 7: 'mu-law', 0x11: 'IMA ADPCM', 0x55: 'MP3', 0x50: 'MPEG' };

function unreadable(where: string, why: string): XttsError {
  return new XttsError('AUDIO_UNREADABLE', `${where}: ${why}`, { suggestions: ['re-export the file as PCM WAV, e.g. `sox in.wav -b 16 out.wav`'] });
}

export function decodeWav(bytes: Uint8Array, where = 'audio'): DecodedWav {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (o: number) => String.fromCharCode(bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]);
  if (bytes.length < 12) throw unreadable(where, `only ${bytes.length} bytes: not a WAV file`);
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') {
    const what = tag(0) === 'RIFX' ? 'a big-endian RIFX file' : tag(0) === 'fLaC' ? 'a FLAC file' : tag(0) === 'OggS' ? 'an Ogg file' : 'not a RIFF/WAVE file';
    throw new XttsError('AUDIO_UNSUPPORTED_FORMAT', `${where}: ${what}`, { suggestions: ['convert it to PCM WAV, e.g. `sox in.flac -b 16 out.wav`'] });
  }
  let fmt: { code: number; channels: number; rate: number; blockAlign: number; bits: number } | undefined;
  let dataOffset = -1;
  let dataBytes = 0;
  for (let o = 12; o + 8 <= bytes.length; ) {
    const id = tag(o);
    const size = dv.getUint32(o + 4, true);
    const body = o + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw unreadable(where, 'the fmt chunk is truncated');
      let code = dv.getUint16(body, true);
      const bits = dv.getUint16(body + 14, true);
      if (code === WAVE_FORMAT_EXTENSIBLE) {
        if (size < 40) throw unreadable(where, 'WAVE_FORMAT_EXTENSIBLE fmt chunk is too short');
        code = dv.getUint16(body + 24, true); // first two bytes of the SubFormat GUID
      }
      fmt = { code, channels: dv.getUint16(body + 2, true), rate: dv.getUint32(body + 4, true), blockAlign: dv.getUint16(body + 12, true), bits };
    } else if (id === 'data') {
      dataOffset = body;
      // Streams written before their length was known put 0 or 0xFFFFFFFF here: take the rest.
      dataBytes = size === 0 || size === 0xffffffff || body + size > bytes.length ? bytes.length - body : size;
      if (fmt) break;
    }
    o = body + size + (size & 1);
  }
  if (!fmt) throw unreadable(where, 'no fmt chunk');
  if (dataOffset < 0) throw unreadable(where, 'no data chunk');
  if (fmt.channels === 0) throw unreadable(where, 'the fmt chunk says 0 channels');
  if (fmt.rate === 0) throw unreadable(where, 'the fmt chunk says 0 Hz');
  const float = fmt.code === WAVE_FORMAT_IEEE_FLOAT;
  if (fmt.code !== WAVE_FORMAT_PCM && !float) {
    throw new XttsError('AUDIO_UNSUPPORTED_FORMAT', `${where}: ${CODEC_NAMES[fmt.code] ?? `codec 0x${fmt.code.toString(16)}`} in WAV is not supported (PCM or IEEE float only)`, {
      suggestions: ['convert it: `sox in.wav -e signed-integer -b 16 out.wav`'],
    });
  }
  const bytesPerSample = fmt.bits / 8;
  if (!(float ? [32, 64] : [8, 16, 24, 32]).includes(fmt.bits)) {
    throw new XttsError('AUDIO_UNSUPPORTED_FORMAT', `${where}: ${fmt.bits}-bit ${float ? 'float' : 'PCM'} is not supported`, { suggestions: ['convert it to 16-bit PCM: `sox in.wav -b 16 out.wav`'] });
  }
  const frameBytes = bytesPerSample * fmt.channels;
  const frames = Math.floor(dataBytes / frameBytes);
  const samples = new Float32Array(frames);
  const ch = fmt.channels;
  const inv = 1 / ch;
  for (let f = 0; f < frames; f++) {
    let acc = 0;
    const base = dataOffset + f * frameBytes;
    for (let c = 0; c < ch; c++) {
      const p = base + c * bytesPerSample;
      let v: number;
      if (float) v = fmt.bits === 32 ? dv.getFloat32(p, true) : dv.getFloat64(p, true);
      else if (fmt.bits === 16) v = dv.getInt16(p, true) / 32768;
      else if (fmt.bits === 8) v = (bytes[p] - 128) / 128;
      else if (fmt.bits === 24) v = (((bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16)) << 8) >> 8) / 8388608;
      else v = dv.getInt32(p, true) / 2147483648;
      acc += v;
    }
    samples[f] = acc * inv;
  }
  return { sampleRateHz: fmt.rate, channels: ch, bitsPerSample: fmt.bits, format: float ? 'float' : 'pcm', samples, durationS: frames / fmt.rate };
}

export interface EncodeOptions {
  bitsPerSample?: 16 | 24 | 32;
  float?: boolean;
}

/** Mono WAV bytes (16-bit PCM by default), samples clipped to [-1, 1]. */
export function encodeWav(samples: Float32Array, sampleRateHz: number, options: EncodeOptions = {}): Uint8Array {
  const float = options.float ?? false;
  const bits = float ? 32 : options.bitsPerSample ?? 16;
  const bps = bits / 8;
  const out = new Uint8Array(44 + samples.length * bps);
  const dv = new DataView(out.buffer);
  const w = (o: number, s: string) => [...s].forEach((c, i) => (out[o + i] = c.charCodeAt(0)));
  w(0, 'RIFF');
  dv.setUint32(4, 36 + samples.length * bps, true);
  w(8, 'WAVE');
  w(12, 'fmt ');
  dv.setUint32(16, 16, true);
  dv.setUint16(20, float ? WAVE_FORMAT_IEEE_FLOAT : WAVE_FORMAT_PCM, true);
  dv.setUint16(22, 1, true);
  dv.setUint32(24, sampleRateHz, true);
  dv.setUint32(28, sampleRateHz * bps, true);
  dv.setUint16(32, bps, true);
  dv.setUint16(34, bits, true);
  w(36, 'data');
  dv.setUint32(40, samples.length * bps, true);
  for (let i = 0; i < samples.length; i++) {
    const x = Math.max(-1, Math.min(1, samples[i]));
    const p = 44 + i * bps;
    if (float) dv.setFloat32(p, x, true);
    else if (bits === 16) dv.setInt16(p, Math.round(x * 32767), true);
    else if (bits === 24) {
      const v = Math.round(x * 8388607);
      out[p] = v & 0xff;
      out[p + 1] = (v >> 8) & 0xff;
      out[p + 2] = (v >> 16) & 0xff;
    } else dv.setInt32(p, Math.round(x * 2147483647), true);
  }
  return out;
}
