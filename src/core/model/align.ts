// Hard monotonic alignment of text to speech, on the host: which text symbol each decoder step
// (r mel frames) says. Training finds it by monotonic alignment search (Glow-TTS, Kim et al. 2020,
// §3.2: the most likely path through a score matrix in which every symbol takes one or more
// consecutive steps, in order); synthesis builds it from predicted durations.
//
// Token layout (Tokenizer.encode): [<bos>, [lang], symbol 1 … symbol K, <eos>]. Only the symbols
// take steps: the three specials are read by every step through the free attention heads instead.

/** First token position that takes steps (after <bos> and the language token). */
export const FIRST_SYMBOL = 2;

/** Symbols of an encoded text of `tokens` tokens (at least 1 for any text the tokenizer accepts). */
export function symbolCount(tokens: number): number {
  return Math.max(1, tokens - FIRST_SYMBOL - 1);
}

/**
 * Viterbi search of the best monotonic path. scores: row-major [steps, textSteps] for one utterance
 * (log-likelihood of token position n at decoder step s); the path covers the symbols of a text of
 * `tokens` tokens over `steps` real steps, each symbol ≥ 1 step. With `priorSigma` > 0 a Gaussian
 * prior on the distance from the diagonal joins the scores (RAD-TTS's alignment prior, Badlani et
 * al. 2021, does the same with a beta-binomial): while the symbols' means are still poor, the best
 * path would otherwise hold one symbol for half a second and crush the rest, and the means learnt
 * from such paths stay poor. Writes the token position of every step into `out` (length ≥ steps).
 * With more symbols than steps no path exists: the text is then spread evenly over the steps.
 */
export function monotonicAlignment(
  scores: Float32Array,
  steps: number,
  textSteps: number,
  tokens: number,
  out: Int32Array,
  priorSigma = 0,
): void {
  const k = symbolCount(tokens);
  if (k > steps) {
    for (let s = 0; s < steps; s++) out[s] = FIRST_SYMBOL + Math.min(k - 1, Math.floor((s * k) / steps));
    return;
  }
  // The diagonal prior: log N(j/k − s/steps; 0, σ²) added to every cell (in the scores' units).
  const prior =
    priorSigma > 0
      ? (s: number, j: number) => -(((j + 0.5) / k - (s + 0.5) / steps) ** 2) / (2 * priorSigma * priorSigma)
      : () => 0;
  // best[s·k + j]: best score of a path over steps 0..s ending on symbol j; from[·]: whether it came
  // from symbol j − 1 (1) or stayed on j (0).
  const best = new Float64Array(steps * k).fill(Number.NEGATIVE_INFINITY);
  const from = new Uint8Array(steps * k);
  best[0] = scores[FIRST_SYMBOL] + prior(0, 0);
  for (let s = 1; s < steps; s++) {
    // Symbol j is reachable at step s only if j ≤ s, and the rest can still each get a step: j ≥ k − (steps − s).
    const lo = Math.max(0, k - (steps - s));
    const hi = Math.min(k - 1, s);
    for (let j = lo; j <= hi; j++) {
      const stay = best[(s - 1) * k + j];
      const advance = j > 0 ? best[(s - 1) * k + j - 1] : Number.NEGATIVE_INFINITY;
      const moved = advance > stay;
      best[s * k + j] = (moved ? advance : stay) + scores[s * textSteps + FIRST_SYMBOL + j] + prior(s, j);
      from[s * k + j] = moved ? 1 : 0;
    }
  }
  let j = k - 1;
  for (let s = steps - 1; s >= 0; s--) {
    out[s] = FIRST_SYMBOL + j;
    if (s > 0 && from[s * k + j]) j--;
  }
}

/** A batch's alignment search: scores [batch, steps, textSteps] (row-major) and each utterance's lengths. */
export interface AlignmentSearch {
  scores: Float32Array;
  batch: number;
  steps: number;
  textSteps: number;
  /** Tokens of each utterance's text; mel frames of each utterance (r per step). */
  textLengths: ArrayLike<number>;
  melLengths: ArrayLike<number>;
  r: number;
  priorSigma: number;
}

/** Paths [batch, steps] and durations [batch, textSteps] of a batch (monotonicAlignment per utterance). */
export function searchBatch(a: AlignmentSearch): { path: Int32Array; durations: Float32Array } {
  const { scores, batch, steps, textSteps, textLengths, melLengths, r } = a;
  const path = new Int32Array(batch * steps).fill(FIRST_SYMBOL);
  const durations = new Float32Array(batch * textSteps);
  for (let b = 0; b < batch; b++) {
    const real = Math.ceil(melLengths[b] / r);
    if (real === 0 || textLengths[b] === 0) continue; // a filler utterance: no loss reads it
    const own = path.subarray(b * steps, (b + 1) * steps);
    monotonicAlignment(
      scores.subarray(b * steps * textSteps, (b + 1) * steps * textSteps),
      real,
      textSteps,
      textLengths[b],
      own,
      a.priorSigma,
    );
    own.fill(own[real - 1], real); // padded steps repeat the last symbol (their frames carry no loss)
    durationsOf(own, real, textSteps, durations.subarray(b * textSteps, (b + 1) * textSteps));
  }
  return { path, durations };
}

/** Steps per token position of an alignment's first `steps` entries ([textSteps], zero for the specials). */
export function durationsOf(path: Int32Array, steps: number, textSteps: number, out: Float32Array): void {
  out.fill(0, 0, textSteps);
  for (let s = 0; s < steps; s++) out[path[s]]++;
}

/**
 * Synthesis: the alignment that predicted durations describe. logDurations: [textSteps] predicted
 * log(1 + steps) per token position; at most `maxSteps` steps are planned in all (`cut` says the
 * reading was longer). A regression of log durations predicts their median; with `logVariance`, the
 * variance of its errors (measured in training), each duration is the log-normal mean
 * exp(p + σ²/2) − 1 instead (measured: without it, readings 11% too fast at σ ≈ 0.46). Symbol j
 * ends at step round(Σ_{i≤j} d_i) and takes at least one step: rounding the running total instead
 * of each duration keeps the length unbiased — each symbol's 1.4 steps rounded down alone would read
 * a text 30% too fast. The token position of every step.
 */
export function scheduleFromDurations(
  logDurations: ArrayLike<number>,
  tokens: number,
  maxSteps: number,
  logVariance = 0,
): { plan: Int32Array; cut: boolean } {
  const k = symbolCount(tokens);
  const plan: number[] = [];
  let total = 0;
  for (let j = 0; j < k; j++) {
    total += Math.max(0, Math.exp(logDurations[FIRST_SYMBOL + j] + logVariance / 2) - 1);
    const end = Math.max(plan.length + 1, Math.round(total));
    while (plan.length < end) {
      if (plan.length === maxSteps) return { plan: Int32Array.from(plan), cut: true };
      plan.push(FIRST_SYMBOL + j);
    }
  }
  return { plan: Int32Array.from(plan), cut: false };
}

/**
 * Share of a path's steps whose symbol lies within ±`band` of the diagonal (symbol index over
 * symbols against step over steps): 1 for a reading that moves through the text at an even pace,
 * low for a path that stalls on a few symbols or rushes through others.
 */
export function diagonalShare(path: ArrayLike<number>, steps: number, tokens: number, band = 0.1): number {
  const k = symbolCount(tokens);
  if (steps < 1) return 0;
  let near = 0;
  for (let s = 0; s < steps; s++) if (Math.abs((path[s] - FIRST_SYMBOL + 0.5) / k - (s + 0.5) / steps) <= band) near++;
  return near / steps;
}

/**
 * The frames each symbol of a generated utterance was spoken for, from its predicted alignment ([steps, tokens]
 * row-major, 1 where a decoder step reads a token): a step is `r` frames, the last one cut to `frames`.
 */
export function framesPerSymbol(alignment: ArrayLike<number>, tokens: number, frames: number, r: number): Int32Array {
  const k = symbolCount(tokens);
  const out = new Int32Array(k);
  for (let s = 0; s * r < frames; s++)
    for (let j = 0; j < k; j++)
      if (alignment[s * tokens + FIRST_SYMBOL + j] > 0.5) {
        out[j] += Math.min(r, frames - s * r);
        break;
      }
  return out;
}
