// A voice's speaking rate read from its log-mel (model.reference_rate), without its text: how often a second of its
// speech changes sound. The duration predictor learns a voice's pace as part of the voices it was trained on, and a
// new voice's clip takes the pace of the trained voice the conditioning encoder takes it for (bench/voices: milo,
// espeak-ng at 170 words a minute, spoken at its 145-word neighbour's pace in every run, 19–21% slow); told the rate
// as a number, as pitch is (pitch.ts), the model can speak a pace between two it knows.
//
// Per frame, the spectral change: the root mean square over the bands of the log-mel's difference between the frames
// CHANGE_SPAN_S either side, smoothed over three frames. Each sound a voice moves into (a phone's onset, a syllable's
// release) is a peak of it; peaks that stand out by CHANGE_PROMINENCE over the lower of the lowest points between them
// and a higher peak (within PROMINENCE_WINDOW_S either side) are counted on the frames within LOUD_WITHIN_DB of the
// clip's loudest, and the rate is the peaks a second of those frames. On espeak-ng renderings of held-out sentences
// in bench/voices' 15 voices (140–190 words a minute, 6 s clips of 3 sentences) it follows the voices' words a minute
// with a correlation of 0.79 clip by clip, each voice's clips 4% apart, and the voices' means 3% (one standard
// deviation) off the words a minute once scaled. It reads a change of pace short: one voice at 120 to 240 words a
// minute, whose speech lasts half as long at twice the words, gives peaks that grow as the words a minute to the power
// 0.6 (slow speech has more peaks to a phone, fast speech merges some); across bench/voices' voices, 0.8
// (test/unit/speaking-rate.test.ts: 200 words a minute read 1.38 times as fast as 120). A decorrelation time (how long
// the spectrum takes to move by a set distance) follows one voice's pace exactly but differs from voice to voice by
// 11%: the peaks tell voices apart better, which is what a new voice needs.
import type { MelSettings } from './mel.js';

/** Frames compared either side of a frame, in seconds (one hop at 22,050 Hz and hop 256). */
const CHANGE_SPAN_S = 0.0116;
/** How far a peak must stand out, in natural-log units of the log-mel's RMS change. */
const CHANGE_PROMINENCE = 0.2;
/** How far either side a peak's prominence is looked for (a bound on the work of a long clip). */
const PROMINENCE_WINDOW_S = 0.6;
const LOUD_WITHIN_DB = 35;
/** References with less speech than this have no rate (0: unknown to the model). */
export const RATE_MIN_SECONDS = 1;

/** A clip's change peaks and the seconds of speech they were counted on. */
export interface ClipRate {
  peaks: number;
  seconds: number;
}

/** The change peaks of a raw [frames, nMels] log-mel (the front end's, in its log base) and its seconds of speech. */
export function clipRate(mel: Float32Array, frames: number, s: MelSettings): ClipRate {
  const nMels = s.n_mels;
  const toNatural = s.log_base === '10' ? Math.LN10 : 1;
  const fps = s.sample_rate_hz / s.hop_length;
  const span = Math.max(1, Math.round(CHANGE_SPAN_S * fps));
  if (frames < 2 * span + 3) return { peaks: 0, seconds: 0 };
  const loud = new Float64Array(frames);
  let loudest = -Infinity;
  for (let f = 0; f < frames; f++) {
    let max = -Infinity;
    for (let m = 0; m < nMels; m++) max = Math.max(max, mel[f * nMels + m]);
    let sum = 0;
    for (let m = 0; m < nMels; m++) sum += Math.exp((mel[f * nMels + m] - max) * toNatural);
    // The frame's summed magnitude in dB.
    loud[f] = (20 / Math.LN10) * (max * toNatural + Math.log(sum));
    loudest = Math.max(loudest, loud[f]);
  }
  const change = new Float64Array(frames);
  for (let f = span; f < frames - span; f++) {
    let sq = 0;
    for (let m = 0; m < nMels; m++) {
      const d = (mel[(f + span) * nMels + m] - mel[(f - span) * nMels + m]) * toNatural;
      sq += d * d;
    }
    change[f] = Math.sqrt(sq / nMels);
  }
  const smooth = new Float64Array(frames);
  for (let f = 1; f < frames - 1; f++) smooth[f] = (change[f - 1] + 2 * change[f] + change[f + 1]) / 4;
  const speech = (f: number) => loud[f] > loudest - LOUD_WITHIN_DB;
  const window = Math.max(2, Math.round(PROMINENCE_WINDOW_S * fps));
  let peaks = 0;
  let speechFrames = 0;
  for (let f = 0; f < frames; f++) {
    if (!speech(f)) continue;
    speechFrames++;
    if (f < 1 || f >= frames - 1 || !(smooth[f] >= smooth[f - 1] && smooth[f] > smooth[f + 1])) continue;
    if (
      smooth[f] - Math.max(lowestBefore(smooth, f, -1, window), lowestBefore(smooth, f, 1, window)) >=
      CHANGE_PROMINENCE
    )
      peaks++;
  }
  return { peaks, seconds: speechFrames / fps };
}

/** The lowest value from frame `f` in direction `step` until a higher value, the clip's edge or `window` frames. */
function lowestBefore(x: Float64Array, f: number, step: 1 | -1, window: number): number {
  let low = x[f];
  for (let i = f + step, n = 0; i >= 0 && i < x.length && n < window && x[i] <= x[f]; i += step, n++)
    low = Math.min(low, x[i]);
  return low;
}

/**
 * The rate of several clips read as one voice: their peaks over their seconds of speech, as a log of peaks a second;
 * 0 (unknown to the model) with less than RATE_MIN_SECONDS of speech or less than a peak a second.
 */
export function pooledLogRate(clips: readonly ClipRate[]): number {
  let peaks = 0;
  let seconds = 0;
  for (const c of clips) {
    peaks += c.peaks;
    seconds += c.seconds;
  }
  return seconds >= RATE_MIN_SECONDS && peaks >= seconds ? Math.log(peaks / seconds) : 0;
}

/** The rate of clips read as one reference ([frames, nMels] raw log-mels): pooledLogRate of each clip's. */
export function referenceLogRate(clips: readonly { mel: Float32Array; frames: number }[], s: MelSettings): number {
  return pooledLogRate(clips.map((c) => clipRate(c.mel, c.frames, s)));
}
