// The vocoder's data: every usable clip of the dataset as processed samples and their log-mel (the
// same front end as the acoustic model's features: resampling, trimming, loudness, mel settings), and
// batches of random fixed-length segments of them, one static shape for the whole run.
//
// The clips are held in memory (a training step reads random places of random clips): at most
// MAX_HELD_SAMPLES samples (1 GiB of float32, 3.4 hours at 22.05 kHz). A larger dataset trains on a
// seeded random subset of that size, and says so; a vocoder learns the sound of a voice, not its
// words, so hours beyond that add little.
import { readFileSync } from 'node:fs';
import type { AudioConfig, LimitsConfig } from '../config/index.js';
import { type ManifestRow, noteSource, processAudioFile, type SkippedRow, type SourceNotes } from '../data/index.js';
import { XttsError } from '../errors.js';
import { Rng } from '../model/index.js';

export const MAX_HELD_SAMPLES = 2 ** 28;

export interface VocoderClip {
  id: string;
  /** Processed samples at audio.sample_rate_hz. */
  samples: Float32Array;
  /** [frames, nMels] log-mel of the samples (or, fine-tuning, an acoustic model's prediction of it). */
  mel: Float32Array;
  frames: number;
  /** The row's text and language (undefined: the dataset's), and where the row is ("metadata.csv:3 (id)"). */
  text: string;
  language?: string;
  where: string;
}

export interface LoadedClips {
  clips: VocoderClip[];
  skipped: SkippedRow[];
  /** Rows left out to stay within MAX_HELD_SAMPLES (estimated from the files' sizes). */
  leftOut: number;
}

/**
 * The rows' clips, in order; a clip that cannot be read, or is shorter than one segment, is skipped with
 * its reason. `budget` samples at most are kept: the rows are taken in a seeded random order until the
 * budget is spent.
 */
export async function loadClips(
  rows: readonly ManifestRow[],
  audio: AudioConfig,
  limits: Pick<LimitsConfig, 'max_audio_s'>,
  o: {
    segmentFrames: number;
    seed: number;
    budget?: number;
    onProgress?: (done: number, total: number) => void;
    /** Counts what the kept clips' recordings lack (below the model's rate, 8-bit PCM); shared across calls. */
    notes?: SourceNotes;
  },
): Promise<LoadedClips> {
  const budget = o.budget ?? MAX_HELD_SAMPLES;
  const order = rows.map((_, i) => i);
  const rng = new Rng(o.seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const kept = new Map<number, VocoderClip>();
  const skipped: SkippedRow[] = [];
  const skip = (row: ManifestRow, reason: SkippedRow['reason'], detail: string) =>
    skipped.push({ file: row.file, line: row.line, id: row.id, reason, detail });
  let held = 0;
  let leftOut = 0;
  for (const [n, index] of order.entries()) {
    o.onProgress?.(n, order.length);
    const row = rows[index];
    if (held >= budget) {
      leftOut++;
      continue;
    }
    let clip: Awaited<ReturnType<typeof processAudioFile>>;
    try {
      clip = await processAudioFile(readFileSync(row.audioPath), audio, `${row.file}:${row.line} (${row.id})`);
    } catch (e) {
      if (!(e instanceof XttsError) && (e as NodeJS.ErrnoException).code === undefined) throw e;
      skip(row, 'unreadable_audio', (e as Error).message);
      continue;
    }
    if (clip.durationS > limits.max_audio_s) {
      skip(row, 'audio_too_long', `${clip.durationS.toFixed(2)} s; limits.max_audio_s is ${limits.max_audio_s}`);
      continue;
    }
    if (Math.floor(clip.samples.length / audio.hop_length) < o.segmentFrames) {
      skip(
        row,
        'audio_too_short',
        `${clip.durationS.toFixed(2)} s after trimming: shorter than one vocoder segment ` +
          `(vocoder.segment_frames ${o.segmentFrames} × hop ${audio.hop_length} samples)`,
      );
      continue;
    }
    held += clip.samples.length;
    if (o.notes)
      noteSource(
        o.notes,
        { hz: clip.originalSampleRateHz, pcmBits: clip.pcmBits, peak: clip.sourcePeak },
        row.audioPath,
        audio.sample_rate_hz,
      );
    kept.set(index, {
      id: row.id,
      samples: clip.samples,
      mel: clip.mel,
      frames: clip.frames,
      text: row.text,
      ...(row.language ? { language: row.language } : {}),
      where: `${row.file}:${row.line} (${row.id})`,
    });
  }
  o.onProgress?.(order.length, order.length);
  return {
    clips: [...kept.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c),
    skipped: skipped.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line),
    leftOut,
  };
}

export interface SegmentBatch {
  /** [batch, segmentFrames, nMels] */
  mel: Float32Array;
  /** [batch, segmentFrames · hop] */
  wave: Float32Array;
}

/**
 * Random segments: each item a clip drawn in proportion to its length (every second of audio is as
 * likely), then a random start frame t0; its mel frames t0 … t0+T−1 and its samples t0·hop … (t0+T)·hop − 1
 * (what the generator's inverse STFT makes of those frames, spectral.ts). The generator is one seeded
 * stream whose state a checkpoint keeps, so a resumed run draws the same segments.
 */
export class SegmentSampler {
  private readonly rng: Rng;
  /** Cumulative usable start positions per clip, for drawing by length. */
  private readonly cumulative: Float64Array;

  constructor(
    private readonly clips: readonly VocoderClip[],
    private readonly segmentFrames: number,
    private readonly hop: number,
    private readonly nMels: number,
    seed: number,
  ) {
    if (clips.length === 0) throw new Error('SegmentSampler needs at least one clip');
    this.rng = new Rng(seed);
    this.cumulative = new Float64Array(clips.length);
    let total = 0;
    clips.forEach((c, i) => {
      total += this.starts(c);
      this.cumulative[i] = total;
    });
  }

  /** Start frames t0 with the whole segment inside the clip's samples. */
  private starts(c: VocoderClip): number {
    return Math.floor(c.samples.length / this.hop) - this.segmentFrames + 1;
  }

  get state(): number {
    return this.rng.state;
  }

  set state(s: number) {
    this.rng.state = s >>> 0;
  }

  next(batch: number): SegmentBatch {
    const T = this.segmentFrames;
    const n = T * this.hop;
    const mel = new Float32Array(batch * T * this.nMels);
    const wave = new Float32Array(batch * n);
    const total = this.cumulative[this.cumulative.length - 1];
    for (let b = 0; b < batch; b++) {
      const r = this.rng.next() * total;
      let lo = 0;
      let hi = this.cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.cumulative[mid] > r) hi = mid;
        else lo = mid + 1;
      }
      const clip = this.clips[lo];
      const t0 = Math.min(this.starts(clip) - 1, Math.floor(this.rng.next() * this.starts(clip)));
      mel.set(clip.mel.subarray(t0 * this.nMels, (t0 + T) * this.nMels), b * T * this.nMels);
      wave.set(clip.samples.subarray(t0 * this.hop, t0 * this.hop + n), b * n);
    }
    return { mel, wave };
  }
}
