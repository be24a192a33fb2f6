// renderTable (render/style.ts): an unbroken word longer than 240 characters (a runaway row id or path) is cut with
// an ellipsis, so one cell cannot make lines thousands of characters wide; prose in a cell is kept whole.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTable } from '../../src/core/render/index.js';

test('a 6,000-character id is cut to 240 characters; a long sentence is kept', () => {
  const id = 'x'.repeat(6000);
  const prose = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
  const out = renderTable(['id', 'reason'], [[id, prose]], { widths: { 1: 60 } });
  const widest = Math.max(...out.split('\n').map((l) => l.length));
  assert.ok(widest < 400, `a line of ${widest} characters`);
  assert.ok(out.includes(`${'x'.repeat(239)}…`));
  for (const w of ['word0', 'word40', 'word79']) assert.ok(out.includes(w), w);
});
