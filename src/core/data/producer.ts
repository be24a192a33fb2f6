// Filling prefetch slots: read tokens and log-mels of a planned batch from the feature cache,
// normalise with the dataset's per-bin statistics, pad into the slot's preallocated arrays, pick a
// reference clip of the same speaker, and publish. Runs in producer worker threads (producer-
// worker.ts) — or on the calling thread when pipeline.workers is 0.
import { readFileSync } from 'node:fs';
import { FeatureCache } from '../cache/index.js';
import { XttsError } from '../errors.js';
import type { AudioConfig } from '../config/index.js';
import { processClip, sniffAudio } from './audio/index.js';
import type { MelSettings } from './audio/mel.js';
import { type ClipPitch, clipPitch, pitchEstimatorFor, pooledLogF0 } from './audio/pitch.js';
import { clipRate, pooledLogRate } from './audio/rate.js';
import { type BucketPlan, epochBatches, mulberry32, type PlannedBatch } from './buckets.js';
import { acquireForFill, publishFilled, type RingShared, viewsFor } from './ring.js';
import { drawVoiceWarp, type VoiceWarp, type WarpTable, warpedBand } from './voice-warp.js';

/** What a producer needs to know about one utterance. */
export interface ProducerItem {
  featureKey: string;
  frames: number;
  tokens: Int32Array;
  language: number;
  speaker: number;
  /** The WAV file, for producers that recompute features (pipeline.cache.enabled: false). */
  audioPath?: string;
}

export interface ProducerJob {
  ring: RingShared;
  cachePath: string;
  items: ProducerItem[];
  plan: BucketPlan;
  /** Per-bin normalisation: (mel - mean) / std. */
  mean: Float32Array;
  std: Float32Array;
  seed: number;
  shuffle: boolean;
  /** Where to start: this epoch, skipping its first `startBatch` batches. */
  startEpoch: number;
  startBatch: number;
  /** Stop after this many batches (Infinity: until the ring is stopped). */
  maxBatches: number;
  /** This producer fills sequence numbers ≡ producerIndex (mod producers). */
  producerIndex: number;
  producers: number;
  /**
   * pipeline.cache.enabled: false — decode, resample, trim and compute the log-mel of every clip each
   * time a batch needs it, with these settings, instead of reading the cached feature. This is what an
   * uncached pipeline costs per epoch; the preparation pass still measures lengths and statistics.
   */
  recomputeAudio?: AudioConfig;
  /**
   * batching.reference_join: a reference clip shorter than the window is followed by further clips of the speaker
   * (at most REFERENCE_JOIN_CLIPS in all, never the utterance itself) until the window is full.
   */
  referenceJoin?: boolean;
  /** batching.voice_warp: each utterance and its reference read in a warped voice (training batches only). */
  voiceWarp?: VoiceWarp;
  /**
   * model.speaker_pitch: each reference's pitch (audio/pitch.ts) from the log-mels of the clips it is read from,
   * measured with these mel settings; without it refPitch stays 0.
   */
  referencePitch?: MelSettings;
  /** model.pitch_contour (with referencePitch): each target frame's log F0 into melPitch; without it, zeros. */
  framePitch?: boolean;
  /**
   * model.reference_rate: each utterance's speaker's speaking rate (audio/rate.ts), pooled over up to
   * RATE_CLIPS of its clips, measured with these mel settings; without it refRate stays 0.
   */
  referenceRate?: MelSettings;
  /**
   * The clips a speaker's rate is pooled over, where they are not `items` (the validation batches read the training
   * clips' rates, as the model was trained at); a speaker none of them holds is pooled over its clips in `items`.
   */
  rateItems?: ProducerItem[];
}

/** The batch sequence from (startEpoch, startBatch) on, across epochs; position of each batch. */
export function* batchSequence(
  job: Pick<ProducerJob, 'plan' | 'seed' | 'shuffle' | 'startEpoch' | 'startBatch'>,
): Generator<{ epoch: number; index: number; batch: PlannedBatch }> {
  for (let epoch = job.startEpoch; ; epoch++) {
    const batches = epochBatches(job.plan, job.seed, epoch, job.shuffle);
    if (batches.length === 0) return;
    for (let index = epoch === job.startEpoch ? job.startBatch : 0; index < batches.length; index++)
      yield { epoch, index, batch: batches[index] };
  }
}

/** The most clips batching.reference_join puts in one reference window. */
export const REFERENCE_JOIN_CLIPS = 4;

/**
 * Fill a reference window that holds `frames` frames with further clips of the speaker drawn from `peers`
 * (none of `used`, each once, from its first frame) until it is full or REFERENCE_JOIN_CLIPS clips are in it;
 * `copy(clip, at, frames)` writes one. Returns the frames the window then holds.
 */
function joinReferences(
  job: Pick<ProducerJob, 'items' | 'ring'>,
  peers: readonly number[],
  used: number[],
  frames: number,
  rand: () => number,
  copy: (clip: number, at: number, frames: number) => void,
): number {
  const window = job.ring.layout.refFrames;
  const next = distinctDraws(peers, used, rand);
  let filled = frames;
  // The window holds one clip so far (the reference drawn first).
  for (let clips = 1; clips < REFERENCE_JOIN_CLIPS && filled < window; clips++) {
    const clip = next();
    if (clip === undefined) break;
    const n = Math.min(job.items[clip].frames, window - filled);
    copy(clip, filled, n);
    filled += n;
  }
  return filled;
}

/**
 * Draws of distinct members of `peers` that are not in `used`, one a call (undefined when none is left). A speaker's
 * clips can number tens of thousands (one-speaker datasets): among many, a draw is retried until it is new, so that
 * an utterance costs a few draws, not a copy of the list; among few, the list of those left is kept.
 */
function distinctDraws(
  peers: readonly number[],
  used: readonly number[],
  rand: () => number,
): () => number | undefined {
  if (peers.length > 64) {
    const taken = new Set(used);
    return () => {
      for (let tries = 0; tries < 64; tries++) {
        const clip = peers[Math.floor(rand() * peers.length)];
        if (!taken.has(clip)) {
          taken.add(clip);
          return clip;
        }
      }
      return undefined;
    };
  }
  const left = peers.filter((p) => !used.includes(p));
  return () => (left.length > 0 ? left.splice(Math.floor(rand() * left.length), 1)[0] : undefined);
}

/** Items of each speaker, for picking references. */
function bySpeaker(items: readonly ProducerItem[]): Map<number, number[]> {
  const m = new Map<number, number[]>();
  items.forEach((it, i) => {
    const list = m.get(it.speaker) ?? [];
    list.push(i);
    m.set(it.speaker, list);
  });
  return m;
}

export interface ProducerResult {
  batches: number;
  fillMs: number;
  waitMs: number;
}

/** Fill this producer's share of the sequence until done or stopped. */
export function runProducer(job: ProducerJob): ProducerResult {
  const cache = FeatureCache.openReadonly(job.cachePath);
  const { layout } = job.ring;
  const nMels = layout.nMels;
  const speakers = bySpeaker(job.items);
  const result: ProducerResult = { batches: 0, fillMs: 0, waitMs: 0 };
  const missingFeature = (item: ProducerItem): never => {
    throw new Error(`feature ${item.featureKey} is missing from the cache ${job.cachePath}; run the preparation again`);
  };
  const melOf = (item: ProducerItem): Buffer | undefined => {
    if (!job.recomputeAudio) return cache.getMelBlob(item.featureKey);
    if (!item.audioPath)
      throw new Error(
        `pipeline.cache.enabled is false but utterance ${item.featureKey} has no audio ` +
          `path to recompute its features from`,
      );
    const bytes = readFileSync(item.audioPath);
    // Producers compute synchronously between batches: they decode WAV themselves; the compressed
    // formats' decoders are asynchronous and run in the cached feature stage instead.
    if (sniffAudio(bytes) !== 'wav')
      throw new XttsError(
        'AUDIO_NEEDS_CACHE',
        `${item.audioPath} is not a WAV file: with pipeline.cache.enabled: false the ` +
          `batch producers recompute features from WAV only`,
        {
          suggestions: [
            'set pipeline.cache.enabled: true (FLAC, MP3 and Ogg are decoded once, into the cache)',
            'or convert the dataset to WAV',
          ],
        },
      );
    const { mel } = processClip(bytes, job.recomputeAudio, item.audioPath);
    return Buffer.from(mel.buffer, mel.byteOffset, mel.byteLength);
  };
  const pitches = clipPitches(job, (item) => melOf(item) ?? missingFeature(item));
  const rates = speakerRates(job, speakers, (item) => melOf(item) ?? missingFeature(item));
  try {
    let seq = 0;
    for (const { epoch, index, batch } of batchSequence(job)) {
      if (seq >= job.maxBatches) break;
      if (seq % job.producers !== job.producerIndex) {
        seq++;
        continue;
      }
      const t0 = performance.now();
      const slot = acquireForFill(job.ring, seq);
      const t1 = performance.now();
      result.waitMs += t1 - t0;
      if (slot === undefined) break;
      const bucket = job.plan.buckets[batch.bucket];
      const shape = {
        batchSize: bucket.batchSize,
        tokens: bucket.maxTokens,
        frames: bucket.maxFrames,
        refFrames: layout.refFrames,
        nMels,
      };
      const v = viewsFor(job.ring.slots[slot], job.ring.offsets, shape);
      for (const a of [v.tokens, v.mel, v.refMel, v.refPitch, v.refRate, v.melPitch]) a.fill(0);
      const batchSeed = (job.seed ^ Math.imul(epoch + 1, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
      const rand = mulberry32(batchSeed);
      // The warps and the joined clips draw from streams of their own: turning either on changes what it does and
      // nothing else (the same references, from the same frames).
      const warpRand = mulberry32((batchSeed ^ 0x27d4eb2f) >>> 0);
      const joinRand = mulberry32((batchSeed ^ 0x5bd1e995) >>> 0);
      batch.items.forEach((itemIndex, b) => {
        const item = job.items[itemIndex];
        const filler = b >= batch.items.length - batch.fillers;
        const n = Math.min(item.tokens.length, shape.tokens);
        v.tokens.set(item.tokens.subarray(0, n), b * shape.tokens);
        v.textLengths[b] = n;
        v.languages[b] = item.language;
        v.speakers[b] = item.speaker;
        if (rates) v.refRate[b] = rates(item.speaker);
        const blob = melOf(item) ?? missingFeature(item);
        const frames = Math.min(item.frames, shape.frames);
        const warped = drawVoiceWarp(job.voiceWarp, warpRand);
        const warp = warped?.table;
        copyNormalised(blob, 0, frames, nMels, job, v.mel, b * shape.frames * nMels, warp);
        v.melLengths[b] = filler ? 0 : frames;
        // Reference: another clip of the same speaker (the clip itself when it is the only one).
        const peers = speakers.get(item.speaker) ?? [itemIndex];
        let refIndex = peers[Math.floor(rand() * peers.length)];
        if (refIndex === itemIndex && peers.length > 1) refIndex = peers[(peers.indexOf(itemIndex) + 1) % peers.length];
        const ref = job.items[refIndex];
        const refBlob = refIndex === itemIndex ? blob : (melOf(ref) ?? missingFeature(ref));
        const refLen = Math.min(ref.frames, layout.refFrames);
        const start = ref.frames > refLen ? Math.floor(rand() * (ref.frames - refLen + 1)) : 0;
        const refAt = b * layout.refFrames * nMels;
        // batching.voice_warp_reference false: the reference as recorded; its pitch (below) still tells the warp.
        const refWarp = job.voiceWarp?.reference === false ? undefined : warp;
        copyNormalised(refBlob, start, refLen, nMels, job, v.refMel, refAt, refWarp);
        v.refLengths[b] = refLen;
        const clips = [refIndex];
        if (job.referenceJoin && refLen < layout.refFrames)
          v.refLengths[b] = joinReferences(job, peers, [itemIndex, refIndex], refLen, joinRand, (clip, at, frames) => {
            const joined = melOf(job.items[clip]) ?? missingFeature(job.items[clip]);
            copyNormalised(joined, 0, frames, nMels, job, v.refMel, refAt + at * nMels, refWarp);
            clips.push(clip);
          });
        if (pitches) {
          const logF0 = pooledLogF0(
            clips.map((c) => pitches.pitch(c, c === itemIndex ? blob : c === refIndex ? refBlob : undefined)),
          );
          // A warp scales every frequency by α, F0 with them.
          const shift = warped ? Math.log(warped.alpha) : 0;
          v.refPitch[b] = logF0 !== 0 ? logF0 + shift : logF0;
          if (pitches.frames) pitches.frames(itemIndex, blob, shift, v.melPitch.subarray(b * shape.frames), frames);
        }
      });
      publishFilled(job.ring, slot, batch.bucket, batch.fillers);
      result.fillMs += performance.now() - t1;
      result.batches++;
      seq++;
    }
  } finally {
    cache.close();
  }
  return result;
}

/**
 * model.speaker_pitch: each clip's pitch (audio/pitch.ts) from its raw log-mel, measured once a producer and kept (two
 * numbers a clip); `blob` saves reading a clip the batch has read already. Undefined when no pitch is asked for.
 * With job.framePitch (model.pitch_contour) each clip's frame track is kept instead (a byte a frame: 13,100
 * LJSpeech clips, 10 MB), and `frames` writes a target's first `count` frames' log F0, moved by `shift` (a warp's
 * log α), 0 where unvoiced.
 */
function clipPitches(
  job: Pick<ProducerJob, 'referencePitch' | 'items' | 'framePitch'>,
  melOf: (item: ProducerItem) => Buffer,
):
  | {
      pitch: (clip: number, blob?: Buffer) => ClipPitch;
      frames?: (clip: number, blob: Buffer, shift: number, out: Float32Array, count: number) => void;
    }
  | undefined {
  if (!job.referencePitch) return undefined;
  const estimator = pitchEstimatorFor(job.referencePitch);
  const nMels = job.referencePitch.n_mels;
  const logF0 = new Float32Array(job.items.length).fill(Number.NaN);
  const voiced = new Int32Array(job.items.length);
  const tracks: (Uint8Array | undefined)[] = [];
  const melOfClip = (clip: number, blob?: Buffer) => {
    const item = job.items[clip];
    return blobFrames(blob ?? melOf(item), 0, item.frames, nMels);
  };
  const track = (clip: number, blob?: Buffer) => {
    tracks[clip] ??= estimator.frameTrack(melOfClip(clip, blob), job.items[clip].frames);
    return tracks[clip];
  };
  const pitch = (clip: number, blob?: Buffer): ClipPitch => {
    if (Number.isNaN(logF0[clip])) {
      const p = job.framePitch
        ? clipPitch(estimator.voicedOf(track(clip, blob)))
        : clipPitch(estimator.voicedLogF0(melOfClip(clip, blob), job.items[clip].frames));
      logF0[clip] = p.logF0;
      voiced[clip] = p.voiced;
    }
    return { logF0: logF0[clip], voiced: voiced[clip] };
  };
  if (!job.framePitch) return { pitch };
  return {
    pitch,
    frames: (clip, blob, shift, out, count) => estimator.trackLogF0(track(clip, blob), out, shift, count),
  };
}

/** The most clips a speaker's rate is pooled over: 16 clips of 2–3 s are 30–50 s of speech. */
export const RATE_CLIPS = 16;

/** The clips of one speaker (in dataset order) its rate is pooled over: up to RATE_CLIPS, spread evenly. */
export function rateClips<T>(clips: readonly T[]): T[] {
  const step = Math.max(1, clips.length / RATE_CLIPS);
  const chosen: T[] = [];
  for (let at = 0; Math.floor(at) < clips.length && chosen.length < RATE_CLIPS; at += step)
    chosen.push(clips[Math.floor(at)]);
  return chosen;
}

/**
 * model.reference_rate: each speaker's log speaking rate (audio/rate.ts), pooled over up to RATE_CLIPS of its clips
 * spread evenly through its list (rateClips; a trained voice keeps the same, training/voices.ts), measured the first
 * time a batch holds the speaker and kept. One clip of 2–3 s reads 6–17% off its voice's rate (bench/voices'
 * espeak-ng voices), a reference window of one clip as much; the speaker's pooled rate is the voice's pace, which a
 * synthesis reference of several seconds reads closer (one ~6 s clip: 6% off, root mean square; 17% at worst).
 * Undefined when no rate is asked for.
 */
function speakerRates(
  job: Pick<ProducerJob, 'referenceRate' | 'items' | 'rateItems'>,
  speakers: Map<number, number[]>,
  melOf: (item: ProducerItem) => Buffer,
): ((speaker: number) => number) | undefined {
  const settings = job.referenceRate;
  if (!settings) return undefined;
  const pools = [
    ...(job.rateItems ? [{ items: job.rateItems, speakers: bySpeaker(job.rateItems) }] : []),
    { items: job.items, speakers },
  ];
  const known = new Map<number, number>();
  return (speaker) => {
    let rate = known.get(speaker);
    if (rate === undefined) {
      const pool = pools.find((p) => p.speakers.has(speaker))!;
      rate = pooledLogRate(
        rateClips(pool.speakers.get(speaker)!).map((clip) => {
          const item = pool.items[clip];
          return clipRate(blobFrames(melOf(item), 0, item.frames, settings.n_mels), item.frames, settings);
        }),
      );
      known.set(speaker, rate);
    }
    return rate;
  };
}

/** `frames` frames from `startFrame` on of a cached float32 log-mel blob, as an aligned copy. */
function blobFrames(blob: Buffer, startFrame: number, frames: number, nMels: number): Float32Array {
  const out = new Float32Array(frames * nMels);
  new Uint8Array(out.buffer).set(blob.subarray(startFrame * nMels * 4, (startFrame + frames) * nMels * 4));
  return out;
}

/**
 * Copy `frames` frames starting at `startFrame` from a float32 blob into `out`, normalised per bin, each bin
 * read through the warp's table (voice-warp.ts) when one is given.
 */
function copyNormalised(
  blob: Buffer,
  startFrame: number,
  frames: number,
  nMels: number,
  { mean, std }: Pick<ProducerJob, 'mean' | 'std'>,
  out: Float32Array,
  outOffset: number,
  warp?: WarpTable,
): void {
  const src = blobFrames(blob, startFrame, frames, nMels);
  for (let f = 0; f < frames; f++) {
    const o = outOffset + f * nMels;
    const i = f * nMels;
    if (warp) for (let m = 0; m < nMels; m++) out[o + m] = (warpedBand(src, i, warp, m) - mean[m]) / std[m];
    else for (let m = 0; m < nMels; m++) out[o + m] = (src[i + m] - mean[m]) / std[m];
  }
}
