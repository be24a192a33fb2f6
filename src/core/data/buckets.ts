// Static shapes. Every batch is padded to one of a few (text length, frame count) buckets chosen
// from the dataset's length distribution, so each kernel/shader is compiled once per bucket instead
// of once per batch. Buckets are the optimal partition of the frame-sorted items into K contiguous
// groups that minimises padded area (dynamic programming over the distinct frame counts).

export interface LengthItem {
  /** Token count (text side). */
  tokens: number;
  /** Mel frames. */
  frames: number;
}

export interface Bucket {
  /** Padded token length of every batch in this bucket. */
  maxTokens: number;
  /** Padded frame count (a multiple of the reduction factor). */
  maxFrames: number;
  /** Indices of the items that fall in this bucket. */
  items: number[];
  /** Utterances per batch in this bucket (fixed: the batch dimension is static too). */
  batchSize: number;
}

export interface BucketPlan {
  buckets: Bucket[];
  /** Share of the padded area (frames) that is padding, over all items. */
  paddingShare: number;
}

export interface BucketOptions {
  buckets: number;
  batchSize: number;
  /** When set, a bucket's batch holds floor(frameBudget / maxFrames) items, at most batchSize. */
  frameBudget: number | null;
  /** Frames are rounded up to a multiple of this (the decoder's reduction factor). */
  frameMultiple: number;
  /** Token lengths are rounded up to a multiple of this (keeps shapes few and GPU-friendly). */
  tokenMultiple?: number;
}

function roundUp(x: number, m: number): number {
  return Math.ceil(x / m) * m;
}

/** Cost weights: one padded frame costs as much as n_mels floats; a token about one. */
const TOKEN_COST = 1;
const FRAME_COST = 80;

/**
 * The batch size a run trains with where it asks for `asked` and has `rows` training utterances: a batch larger than
 * the training set would repeat every clip in it many times over (memory and time for nothing), so it becomes the
 * training set; `note` says so where it does.
 */
export function batchSizeWithin(asked: number, rows: number): { size: number; note?: string } {
  if (asked <= rows) return { size: asked };
  return {
    size: rows,
    note:
      `batching.batch_size ${asked} is more than the ${rows} training utterances: batches are at most ${rows} ` +
      'utterances, and an epoch is one pass over them (a batch or more of each bucket)',
  };
}

/**
 * Choose up to `buckets` shapes. With buckets = 0 there is no plan: each batch is padded to its own
 * longest item (dynamic shapes; the validator warns), represented here by one bucket per distinct
 * (tokens, frames) rounded shape.
 */
export function planBuckets(items: readonly LengthItem[], options: BucketOptions): BucketPlan {
  const tokenMultiple = options.tokenMultiple ?? 8;
  if (items.length === 0) return { buckets: [], paddingShare: 0 };
  const order = items
    .map((_, i) => i)
    .sort((a, b) => items[a].frames - items[b].frames || items[a].tokens - items[b].tokens);
  // Group by distinct rounded frame count: boundaries can only fall between groups.
  const groups: { frames: number; maxTokens: number; idx: number[] }[] = [];
  for (const i of order) {
    const f = roundUp(items[i].frames, options.frameMultiple);
    const last = groups[groups.length - 1];
    if (last && last.frames === f) {
      last.idx.push(i);
      last.maxTokens = Math.max(last.maxTokens, items[i].tokens);
    } else groups.push({ frames: f, maxTokens: items[i].tokens, idx: [i] });
  }
  const g = groups.length;
  const k = options.buckets === 0 ? g : Math.min(options.buckets, g);
  // prefix counts; cost(a..b) = count(a..b) * (frames[b]*FRAME_COST + maxTokens(a..b)*TOKEN_COST)
  const prefix = new Float64Array(g + 1);
  for (let i = 0; i < g; i++) prefix[i + 1] = prefix[i] + groups[i].idx.length;
  const cost = (a: number, b: number, maxTok: number) =>
    (prefix[b + 1] - prefix[a]) * (groups[b].frames * FRAME_COST + roundUp(maxTok, tokenMultiple) * TOKEN_COST);
  // dp[j][b] = best cost of covering groups 0..b with j buckets; O(k * g^2) over distinct frame counts.
  const INF = Number.POSITIVE_INFINITY;
  let dp = new Float64Array(g).fill(INF);
  const choice: Int32Array[] = [];
  {
    let maxTok = 0;
    const c0 = new Int32Array(g);
    for (let b = 0; b < g; b++) {
      maxTok = Math.max(maxTok, groups[b].maxTokens);
      dp[b] = cost(0, b, maxTok);
      c0[b] = -1;
    }
    choice.push(c0);
  }
  for (let j = 1; j < k; j++) {
    const next = new Float64Array(g).fill(INF);
    const cj = new Int32Array(g).fill(-1);
    for (let b = j; b < g; b++) {
      let maxTok = 0;
      for (let a = b; a >= j; a--) {
        maxTok = Math.max(maxTok, groups[a].maxTokens);
        const c = dp[a - 1] + cost(a, b, maxTok);
        if (c < next[b]) {
          next[b] = c;
          cj[b] = a - 1;
        }
      }
    }
    // Using fewer buckets is allowed when it is not worse.
    for (let b = 0; b < g; b++)
      if (dp[b] <= next[b]) {
        next[b] = dp[b];
        cj[b] = -2;
      }
    dp = next;
    choice.push(cj);
  }
  // Walk back the boundaries.
  const ranges: [number, number][] = [];
  let b = g - 1;
  let j = k - 1;
  while (b >= 0) {
    let prev = choice[j][b];
    while (prev === -2) {
      j--;
      prev = choice[j][b];
    }
    ranges.unshift([prev + 1, b]);
    b = prev;
    j--;
  }
  let real = 0;
  let padded = 0;
  const buckets: Bucket[] = ranges.map(([a, z]) => {
    const idx = groups.slice(a, z + 1).flatMap((gr) => gr.idx);
    const maxFrames = groups[z].frames;
    const maxTokens = roundUp(Math.max(...groups.slice(a, z + 1).map((gr) => gr.maxTokens)), tokenMultiple);
    for (const i of idx) {
      real += items[i].frames;
      padded += maxFrames;
    }
    const batchSize = options.frameBudget
      ? Math.max(1, Math.min(options.batchSize, Math.floor(options.frameBudget / maxFrames)))
      : options.batchSize;
    return { maxTokens, maxFrames, items: idx, batchSize };
  });
  return { buckets, paddingShare: padded ? 1 - real / padded : 0 };
}

/** mulberry32: a small, fast, seedable PRNG (Tommy Ettinger's constants); enough for shuffling. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffleInPlace<T>(xs: T[], rand: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

export interface PlannedBatch {
  bucket: number;
  /** Item indices; `fillers` of them (at the end) repeat earlier items to keep the batch size static. */
  items: number[];
  fillers: number;
}

/**
 * The batches of one epoch, in order. Deterministic in (seed, epoch): a run resumed at (epoch,
 * index) sees exactly the batches the uninterrupted run would have. A bucket's last partial batch
 * is topped up with items from the start of that bucket's shuffled order, marked as fillers (the
 * trainer gives them no loss weight), so the batch dimension stays static.
 */
export function epochBatches(plan: BucketPlan, seed: number, epoch: number, shuffle: boolean): PlannedBatch[] {
  const rand = mulberry32((seed * 1_000_003 + epoch * 7919) >>> 0);
  const batches: PlannedBatch[] = [];
  plan.buckets.forEach((bucket, bi) => {
    const order = shuffle ? shuffleInPlace([...bucket.items], rand) : [...bucket.items];
    for (let i = 0; i < order.length; i += bucket.batchSize) {
      const items = order.slice(i, i + bucket.batchSize);
      let fillers = 0;
      for (let f = 0; items.length < bucket.batchSize; f++, fillers++) items.push(order[f % order.length]);
      batches.push({ bucket: bi, items, fillers });
    }
  });
  return shuffle ? shuffleInPlace(batches, rand) : batches;
}
