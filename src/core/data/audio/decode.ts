// Audio files of any format xtts reads, told apart by their bytes (never by their names): WAV (our
// own decoder, wav.ts), FLAC, MP3 and Ogg (Vorbis or Opus) through the wasm-audio-decoders family
// (maintained WebAssembly builds of libFLAC, mpg123, libvorbis and libopus; MIT). Each compressed
// file's frames are parsed first (codec-parser, their shared dependency): its rate, channels and
// length are checked against the same bounds as a WAV header's before anything is decoded.
import { ExitCode, XttsError } from '../../errors.js';
import { decodeWav, MAX_CHANNELS, MAX_RATE_HZ, MIN_RATE_HZ, type DecodedWav, type DecodeOptions } from './wav.js';

export type AudioContainer = 'wav' | 'flac' | 'mp3' | 'ogg-vorbis' | 'ogg-opus';

/** What the bytes are, or why they are none of the formats xtts reads. */
export function sniffAudio(bytes: Uint8Array): AudioContainer | { unknown: string } {
  const tag = (o: number, n: number) => String.fromCharCode(...bytes.subarray(o, o + n));
  // decodeWav names RF64/AIFF itself
  if (tag(0, 4) === 'RIFF' || tag(0, 4) === 'RF64' || tag(0, 4) === 'FORM') return 'wav';
  if (tag(0, 4) === 'fLaC') return 'flac';
  if (tag(0, 4) === 'OggS') {
    const head = tag(0, Math.min(bytes.length, 512));
    if (head.includes('OpusHead')) return 'ogg-opus';
    if (head.includes('\x01vorbis')) return 'ogg-vorbis';
    return { unknown: 'an Ogg file of a codec other than Vorbis or Opus (e.g. FLAC in Ogg or Speex)' };
  }
  if (tag(0, 3) === 'ID3' || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)) return 'mp3';
  if (bytes.length === 0) return { unknown: 'an empty file (0 bytes): export or copy it again' };
  return { unknown: 'not WAV, FLAC, MP3 or Ogg (Vorbis, Opus)' };
}

const MIME: Record<Exclude<AudioContainer, 'wav'>, string> = {
  flac: 'audio/flac',
  mp3: 'audio/mpeg',
  'ogg-vorbis': 'application/ogg',
  'ogg-opus': 'application/ogg',
};

interface Decoded {
  channelData: Float32Array[];
  samplesDecoded: number;
  sampleRate: number;
  errors?: { message: string }[];
}

interface Decoder {
  ready: Promise<void>;
  decode?(bytes: Uint8Array): Decoded | Promise<Decoded>;
  decodeFile?(bytes: Uint8Array): Promise<Decoded>;
  free(): void;
}

async function decoderFor(kind: Exclude<AudioContainer, 'wav'>): Promise<Decoder> {
  if (kind === 'flac') return new (await import('@wasm-audio-decoders/flac')).FLACDecoder() as unknown as Decoder;
  if (kind === 'mp3') return new (await import('mpg123-decoder')).MPEGDecoder() as unknown as Decoder;
  if (kind === 'ogg-vorbis')
    return new (await import('@wasm-audio-decoders/ogg-vorbis')).OggVorbisDecoder() as unknown as Decoder;
  return new (await import('ogg-opus-decoder')).OggOpusDecoder() as unknown as Decoder;
}

/**
 * Decode any audio file xtts reads to mono float samples (channels averaged). Errors are XttsErrors
 * whose codes become dataset skip reasons: AUDIO_UNSUPPORTED_FORMAT, AUDIO_UNREADABLE,
 * AUDIO_TOO_LONG (from the frames' headers, before decoding).
 */
export async function decodeAudio(bytes: Uint8Array, where: string, options: DecodeOptions = {}): Promise<DecodedWav> {
  const kind = sniffAudio(bytes);
  if (typeof kind === 'object') {
    throw new XttsError('AUDIO_UNSUPPORTED_FORMAT', `${where}: ${kind.unknown}`, {
      exitCode: ExitCode.usage,
      suggestions: ['convert it to WAV, FLAC, MP3 or Ogg, e.g. `sox IN -e signed-integer -b 16 OUT.wav`'],
    });
  }
  if (kind === 'wav') return decodeWav(bytes, where, options);
  const unreadable = (why: string) =>
    new XttsError('AUDIO_UNREADABLE', `${where}: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['copy or export the file again'],
    });
  // The frames' headers: rate, channels and length, before a sample is decoded.
  const { default: CodecParser } = await import('codec-parser');
  let samples = 0;
  let rate = 0;
  let channels = 0;
  try {
    const parser = new CodecParser(MIME[kind] as ConstructorParameters<typeof CodecParser>[0], {
      enableLogging: false,
    });
    for (const frame of parser.parseAll(bytes) as { codecFrames?: unknown[] }[]) {
      for (const f of (frame.codecFrames ?? [frame]) as {
        samples: number;
        header: { sampleRate: number; channels: number };
      }[]) {
        samples += f.samples;
        rate ||= f.header.sampleRate;
        channels = Math.max(channels, f.header.channels);
      }
    }
  } catch (e) {
    throw unreadable(`its ${kind} frames cannot be parsed (${(e as Error).message})`);
  }
  if (samples === 0 || rate === 0)
    throw unreadable(`no ${kind} audio frame was found in it; it may be cut short or not ${kind} at all`);
  if (rate < MIN_RATE_HZ || rate > MAX_RATE_HZ)
    throw new XttsError(
      'AUDIO_UNSUPPORTED_FORMAT',
      `${where}: a sample rate of ${rate.toLocaleString('en-US')} Hz (xtts ` +
        `reads ${MIN_RATE_HZ.toLocaleString('en-US')} ` +
        `to ${MAX_RATE_HZ.toLocaleString('en-US')} Hz)`,
      { exitCode: ExitCode.usage },
    );
  if (channels > MAX_CHANNELS)
    throw new XttsError(
      'AUDIO_UNSUPPORTED_FORMAT',
      `${where}: ${channels} channels (xtts reads up to ${MAX_CHANNELS})`,
      { exitCode: ExitCode.usage },
    );
  const maxSeconds = options.maxSeconds ?? Number.POSITIVE_INFINITY;
  if (samples / rate > maxSeconds) {
    throw new XttsError(
      'AUDIO_TOO_LONG',
      `${where}: ${(samples / rate).toFixed(1)} s of audio; a clip may be at ` +
        `most ${maxSeconds} s (it was not decoded): cut it into sentences`,
      { exitCode: ExitCode.usage },
    );
  }
  const decoder = await decoderFor(kind);
  let out: Decoded;
  try {
    await decoder.ready;
    // decodeFile (FLAC, Ogg) takes a whole file; mpg123's decode does, synchronously.
    out = decoder.decodeFile ? await decoder.decodeFile(bytes) : await decoder.decode!(bytes);
  } catch (e) {
    throw unreadable(`the ${kind} decoder failed (${(e as Error).message})`);
  } finally {
    decoder.free();
  }
  if (out.samplesDecoded === 0 || out.channelData.length === 0)
    throw unreadable(
      `the ${kind} decoder found no audio in it${out.errors?.length ? ` (${out.errors[0].message})` : ''}`,
    );
  const n = out.samplesDecoded;
  const mono = new Float32Array(n);
  const inv = 1 / out.channelData.length;
  for (const ch of out.channelData) for (let i = 0; i < n; i++) mono[i] += ch[i] * inv;
  return {
    sampleRateHz: out.sampleRate,
    channels: out.channelData.length,
    bitsPerSample: 32,
    format: 'float',
    samples: mono,
    durationS: n / out.sampleRate,
  };
}
