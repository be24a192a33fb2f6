// A text longer than the model reads at once is cut into pieces of whole sentences (then clauses), in order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeInPieces, type PieceEncoding, splitAt } from '../../src/core/training/text-pieces.js';

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
