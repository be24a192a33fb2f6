// The run folder's pictures decoded back (zlib, PNG's own layout) and looked at by pixel: the title
// and labels are drawn, the axes carry ticks, the colour scale runs from the map's low to its high
// colour, curves are drawn in their legend's colour.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inflateSync } from 'node:zlib';
import { textWidth, tickLabel, ticks } from '../../src/core/render/canvas.js';
import { alignmentFigure, curveFigure, melFigure } from '../../src/core/render/figures.js';
import { colour } from '../../src/core/render/png.js';

function decode(png: Buffer): { width: number; height: number; at: (x: number, y: number) => number[] } {
  assert.equal(png.subarray(0, 8).toString('hex'), '89504e470d0a1a0a');
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  assert.equal(png[25], 2, 'RGB');
  const idat: Buffer[] = [];
  for (let o = 8; o < png.length; ) {
    const n = png.readUInt32BE(o);
    if (png.toString('ascii', o + 4, o + 8) === 'IDAT') idat.push(png.subarray(o + 8, o + 8 + n));
    o += 12 + n;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const row = 1 + width * 3;
  return { width, height, at: (x, y) => [...raw.subarray(y * row + 1 + x * 3, y * row + 4 + x * 3)] };
}

const dark = (p: number[]) => p.every((v) => v < 60);

test('ticks fall on round values and their labels carry the decimals the step needs', () => {
  assert.deepEqual(ticks(0, 2.2, 5), [0, 0.5, 1, 1.5, 2]);
  assert.deepEqual(ticks(0, 80, 4), [0, 20, 40, 60, 80]);
  assert.deepEqual(ticks(1.4, 4.1, 3), [2, 3, 4]);
  assert.equal(tickLabel(0.5, 0.5), '0.5');
  assert.equal(tickLabel(20, 20), '20');
  assert.equal(textWidth('ABC'), 17);
});

test('a mel figure: title, panel labels, mel-bin and seconds ticks, a colour scale from low to high', () => {
  const frames = 100;
  const nMels = 40;
  const mel = new Float32Array(frames * nMels).map((_, i) => (i % nMels) / nMels);
  const f = decode(
    melFigure({
      title: 'SENTENCE-1',
      panels: [
        { label: 'PREDICTED', mel, frames, nMels },
        { label: 'TARGET', mel, frames: 80, nMels },
      ],
      secondsPerFrame: 0.02,
    }),
  );
  const left = textWidth('MEL BIN') + 8; // the y axis title fits left of the plot
  assert.equal(f.width, left + frames * 2 + 60);
  // The title's first letter (S) at the top left: dark pixels in its box.
  let ink = 0;
  for (let y = 4; y < 11; y++) for (let x = left; x < left + 5; x++) ink += dark(f.at(x, y)) ? 1 : 0;
  assert.ok(ink >= 10, `title ink ${ink}`);
  // The first panel's lowest bin is the map's low colour, its highest bin near the high colour.
  const top = 16 + 11;
  assert.deepEqual(f.at(left + 10, top + nMels * 2 - 1), colour(0));
  assert.ok(f.at(left + 10, top)[0] > 200, `high end ${f.at(left + 10, top)}`);
  // The colour scale beside the plot: high at its top, low at its bottom.
  const barX = left + frames * 2 + 10 + 5;
  assert.deepEqual(f.at(barX, top), colour(1));
  // A y tick mark left of the axis at bin 0 of the first panel.
  assert.ok(dark(f.at(left - 3, top + nMels * 2 - 1)));
});

test('an alignment figure on an absolute 0..1 scale; a curve figure with both series in their colours', () => {
  const steps = 30;
  const tokens = 10;
  const a = new Float32Array(steps * tokens);
  for (let s = 0; s < steps; s++) a[s * tokens + Math.floor((s * tokens) / steps)] = 1;
  const al = decode(
    alignmentFigure({
      title: 'A',
      panels: [{ label: 'GENERATED', alignment: a, steps, tokens }],
      secondsPerStep: 0.02,
    }),
  );
  const left = textWidth('TEXT TOKEN') + 8;
  const top = 16 + 11;
  assert.deepEqual(al.at(left + 1, top + tokens * 3 - 1), colour(1)); // step 0 says symbol 0: bottom left is lit
  assert.deepEqual(al.at(left + 1, top + 1), colour(0)); // and not the last symbol
  const c = decode(
    curveFigure({
      title: 'LOSS',
      yTitle: 'LOSS',
      series: [
        {
          label: 'TRAINING',
          points: [
            [10, 3],
            [20, 2],
            [30, 1.5],
          ],
        },
        {
          label: 'VALIDATION',
          points: [
            [20, 2.5],
            [30, 2.2],
          ],
        },
      ],
    }),
  );
  let blue = 0;
  let red = 0;
  for (let y = 30; y < c.height - 40; y++) {
    for (let x = 60; x < c.width - 20; x++) {
      const p = c.at(x, y);
      if (p[0] === 31 && p[1] === 119 && p[2] === 180) blue++;
      if (p[0] === 214 && p[1] === 39 && p[2] === 40) red++;
    }
  }
  assert.ok(blue > 100 && red > 50, `blue ${blue}, red ${red}`);
});
