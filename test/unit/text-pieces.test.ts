// A text longer than the model reads at once is cut into pieces of whole sentences (then clauses), in order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIRST_SYMBOL, framesPerSymbol, scheduleFromDurations } from '../../src/core/model/align.js';
import {
  encodeInPieces,
  joinPieces,
  type PieceEncoding,
  round3,
  splitAt,
  symbolTimings,
} from '../../src/core/training/text-pieces.js';

/** An encoder that takes up to `limit` characters, refuses '☃' as a symbol without a token, and counts its calls. */
function encoderOf(limit: number) {
  const calls: string[] = [];
  const encode = async (piece: string): Promise<PieceEncoding> => {
    calls.push(piece);
    if (piece.includes('☃')) return { reason: 'the text has symbols the model has no token for: "☃"' };
    if (piece.length > limit)
      return { reason: `${piece.length} tokens; the model takes at most ${limit}`, tooLong: true };
    return { ids: Int32Array.from(piece, (c) => c.charCodeAt(0)), text: piece.toLowerCase() };
  };
  return { encode, calls };
}

const texts = async (r: Awaited<ReturnType<typeof encodeInPieces>>) =>
  'pieces' in r ? r.pieces.map((p) => p.text) : assert.fail(r.reason);

test('sentences end at . ! ? … ; : (closing quotes kept with them); punctuation alone joins the one before', () => {
  assert.deepEqual(splitAt('One. Two! "Three?" Four… Five; six: seven', /(?<=[.!?…;:]["'”’)\]]*)\s+/u), [
    'One.',
    'Two!',
    '"Three?"',
    'Four…',
    'Five;',
    'six:',
    'seven',
  ]);
  assert.deepEqual(splitAt('Hello. ... World.', /(?<=[.!?…;:])\s+/u), ['Hello. ...', 'World.']);
});

test('as many whole sentences a piece as fit, in order; a sentence too long alone is cut at its clauses', async () => {
  const { encode } = encoderOf(25);
  assert.deepEqual(await texts(await encodeInPieces('The boy ran. The dog sat. It rained all day.', encode)), [
    'the boy ran. the dog sat.',
    'it rained all day.',
  ]);
  assert.deepEqual(
    await texts(await encodeInPieces('Short one. A much longer sentence, with two clauses, in it.', encode)),
    ['short one.', 'a much longer sentence,', 'with two clauses, in it.'],
  );
});

test('a piece refused for another reason than its length, or a clause still too long, refuses the text', async () => {
  const { encode } = encoderOf(25);
  const snowman = await encodeInPieces('The boy ran home. The ☃ sat there.', encode);
  assert.ok('reason' in snowman && /no token for: "☃"/.test(snowman.reason));
  const unbroken = await encodeInPieces('Short. Averyveryverylongwordwithoutanybreakatall.', encode);
  assert.ok('reason' in unbroken);
  assert.match(unbroken.reason, /at most 25 \(one sentence or clause without a break to split it at\)/);
});

test('each symbol is placed where its predicted frames fall; a cut leaves the unspoken symbols out', () => {
  // Three symbols of 2, 1 and 3 decoder steps of 2 frames (log(1 + steps) durations), as generation lays them out.
  const tokens = 3 + FIRST_SYMBOL + 1;
  const { plan } = scheduleFromDurations(
    Float32Array.from([0, 0, Math.log(3), Math.log(2), Math.log(4), 0]),
    tokens,
    99,
  );
  assert.deepEqual([...plan], [2, 2, 3, 4, 4, 4]);
  const alignment = new Float32Array(plan.length * tokens);
  plan.forEach((t, s) => {
    alignment[s * tokens + t] = 1;
  });
  const frameS = 0.01;
  assert.deepEqual([...framesPerSymbol(alignment, tokens, 12, 2)], [4, 2, 6]);
  assert.deepEqual(symbolTimings(['ð', 'ə', ' '], framesPerSymbol(alignment, tokens, 12, 2), frameS, 0.12), [
    { symbol: 'ð', startS: 0, durationS: 0.04 },
    { symbol: 'ə', startS: 0.04, durationS: 0.02 },
    { symbol: ' ', startS: 0.06, durationS: 0.06 },
  ]);
  // Audio one frame shorter than the frames (Griffin-Lim's (frames - 1) · hop samples): the last symbol ends with it.
  assert.deepEqual(symbolTimings(['ð', 'ə', ' '], framesPerSymbol(alignment, tokens, 12, 2), frameS, 0.11)[2], {
    symbol: ' ',
    startS: 0.06,
    durationS: 0.05,
  });
  // Audio that ends where the last symbol begins leaves nothing of it: it is not listed.
  assert.deepEqual(
    symbolTimings(['ð', 'ə', ' '], framesPerSymbol(alignment, tokens, 12, 2), frameS, 0.06).map((t) => t.symbol),
    ['ð', 'ə'],
  );
  // Frames of 11.6 ms rounded to the millisecond still tile: each symbol starts where the one before ends.
  const tiled = symbolTimings(['a', 'b', 'c', 'd'], Int32Array.of(3, 1, 4, 1), 256 / 22050, 1);
  for (let j = 1; j < tiled.length; j++)
    assert.equal(round3(tiled[j - 1].startS + tiled[j - 1].durationS), tiled[j].startS, JSON.stringify(tiled));
  // Cut after 5 frames (the bound fell inside the second symbol's step): the third is not spoken.
  assert.deepEqual([...framesPerSymbol(alignment, tokens, 5, 2)], [4, 1, 0]);
  assert.deepEqual(
    symbolTimings(['ð', 'ə', ' '], framesPerSymbol(alignment, tokens, 5, 2), frameS, 0.05).map((t) => t.symbol),
    ['ð', 'ə'],
  );
});

test('pieces are joined in order with the gap between them, none after the last', () => {
  const joined = joinPieces([Float32Array.of(1, 2), Float32Array.of(3)], 2);
  assert.deepEqual([...joined], [1, 2, 0, 0, 3]);
  const one = Float32Array.of(4, 5);
  assert.equal(joinPieces([one], 2), one);
});
