// The run folder's pictures, each readable on its own: a title, labelled panels, axes with ticks in
// the units that mean something (seconds, mel bins, text symbols, steps), and a colour scale with its
// values. Mels: predicted above target on one scale. Alignments: which text symbol each decoder step
// says. Loss curves: training and validation loss against steps.
import { BLACK, Canvas, GLYPH_H, GREY, LIGHT, type Rgb, textWidth, tickLabel, ticks } from './canvas.js';
import { colour } from './png.js';

const TITLE_H = 16;
const LABEL_H = 11;
const GAP = 8;
const MIN_LEFT = 40;
const BOTTOM = 30;
const BAR_W = 12;
const RIGHT = 60;

interface Heat {
  label: string;
  /** Row-major [columns, rows]: columns left to right, rows bottom to top. */
  values: Float32Array;
  columns: number;
  rows: number;
}

/** Panels of heat maps stacked vertically on one colour scale, with shared x axis (seconds). */
function heatFigure(o: {
  title: string;
  panels: Heat[];
  xScale: number;
  yScale: number;
  secondsPerColumn: number;
  yTitle: string;
  /** Value range of the colour scale; default the data's min and max. */
  range?: [number, number];
  scaleTitle: string;
}): Buffer {
  const columns = Math.max(1, ...o.panels.map((p) => p.columns));
  const plotW = columns * o.xScale;
  let lo = o.range?.[0] ?? Infinity;
  let hi = o.range?.[1] ?? -Infinity;
  if (!o.range)
    for (const p of o.panels)
      for (let i = 0; i < p.columns * p.rows; i++)
        if (Number.isFinite(p.values[i])) [lo, hi] = [Math.min(lo, p.values[i]), Math.max(hi, p.values[i])];
  if (!(hi > lo)) [lo, hi] = [Number.isFinite(lo) ? lo : 0, (Number.isFinite(lo) ? lo : 0) + 1];
  const heights = o.panels.map((p) => Math.max(1, p.rows) * o.yScale);
  // The y axis title sits in the first panel's label row, left of the plot.
  const LEFT = Math.max(MIN_LEFT, textWidth(o.yTitle) + 8);
  // Labels and the title wider than the plot push the colour scale right rather than run into it.
  const contentW = Math.max(plotW, textWidth(o.title), ...o.panels.map((p) => textWidth(p.label)));
  const width = LEFT + contentW + RIGHT;
  const height = TITLE_H + o.panels.reduce((a, _, i) => a + LABEL_H + heights[i] + GAP, 0) + BOTTOM;
  const c = new Canvas(width, height);
  c.text(o.title, LEFT, 4);
  let top = TITLE_H;
  for (const [k, p] of o.panels.entries()) {
    c.text(p.label, LEFT, top + 2, { color: BLACK });
    top += LABEL_H;
    const h = heights[k];
    for (let col = 0; col < p.columns; col++) {
      for (let row = 0; row < p.rows; row++) {
        const v = p.values[col * p.rows + row];
        const rgb = Number.isFinite(v) ? colour((v - lo) / (hi - lo)) : ([255, 0, 255] as Rgb);
        c.rect(LEFT + col * o.xScale, top + h - (row + 1) * o.yScale, o.xScale, o.yScale, rgb);
      }
    }
    // The y axis: row ticks, and the axis title on the first panel.
    c.vline(LEFT - 1, top, top + h - 1, BLACK);
    const yt = ticks(0, p.rows, Math.max(2, Math.min(5, Math.floor(h / 24))));
    const ystep = yt.length > 1 ? yt[1] - yt[0] : 1;
    for (const v of yt) {
      const y = top + h - v * o.yScale;
      c.hline(LEFT - 4, LEFT - 2, Math.min(top + h - 1, y), BLACK);
      c.text(tickLabel(v, ystep), LEFT - 6, Math.max(top, Math.min(top + h - 1, y) - 3), { align: 'right' });
    }
    top += h + GAP;
  }
  c.text(o.yTitle, 2, TITLE_H + 2, { color: GREY }); // the first panel's label row
  // The x axis under the last panel, in seconds.
  const axisY = top - GAP;
  c.hline(LEFT - 1, LEFT + plotW - 1, axisY, BLACK);
  const seconds = columns * o.secondsPerColumn;
  const xt = ticks(0, seconds, Math.max(2, Math.min(10, Math.floor(plotW / 60))));
  const xstep = xt.length > 1 ? xt[1] - xt[0] : 1;
  for (const s of xt) {
    const x = LEFT + Math.min(plotW - 1, Math.round(s / o.secondsPerColumn) * o.xScale);
    c.vline(x, axisY + 1, axisY + 3, BLACK);
    c.text(tickLabel(s, xstep), x, axisY + 6, { align: 'center' });
  }
  c.text('SECONDS', LEFT + Math.floor(plotW / 2), axisY + 6 + GLYPH_H + 4, { align: 'center', color: GREY });
  // The colour scale: high at the top, with its end values and title.
  const barX = LEFT + contentW + 10;
  const barTop = TITLE_H + LABEL_H;
  const barH = Math.max(20, axisY - barTop - GAP);
  for (let y = 0; y < barH; y++) c.hline(barX, barX + BAR_W - 1, barTop + y, colour(1 - y / (barH - 1)));
  c.text(fmt(hi), barX + BAR_W + 3, barTop);
  c.text(fmt(lo), barX + BAR_W + 3, barTop + barH - GLYPH_H);
  c.text(o.scaleTitle, barX, barTop - LABEL_H + 2, { color: GREY });
  return c.png();
}

function fmt(v: number): string {
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/**
 * Log-mel spectrograms (e.g. predicted above target), low bins at the bottom, on one colour scale:
 * x in seconds, y in mel bins, the scale in log-mel units.
 */
export function melFigure(o: {
  title: string;
  panels: { label: string; mel: Float32Array; frames: number; nMels: number }[];
  secondsPerFrame: number;
}): Buffer {
  return heatFigure({
    title: o.title,
    panels: o.panels.map((p) => ({ label: p.label, values: p.mel, columns: p.frames, rows: p.nMels })),
    xScale: 2,
    yScale: 2,
    secondsPerColumn: o.secondsPerFrame,
    yTitle: 'MEL BIN',
    scaleTitle: 'LOG-MEL',
  });
}

/**
 * Alignments [steps, symbols] (weights in 0..1): decoder steps left to right in seconds, text symbols
 * bottom to top. A reading of the whole text is one staircase from the bottom left to the top right.
 */
export function alignmentFigure(o: {
  title: string;
  panels: { label: string; alignment: Float32Array; steps: number; tokens: number }[];
  secondsPerStep: number;
}): Buffer {
  return heatFigure({
    title: o.title,
    panels: o.panels.map((p) => ({ label: p.label, values: p.alignment, columns: p.steps, rows: p.tokens })),
    xScale: 3,
    yScale: 3,
    secondsPerColumn: o.secondsPerStep,
    yTitle: 'TEXT TOKEN',
    range: [0, 1],
    scaleTitle: 'WEIGHT',
  });
}

const SERIES_COLOURS: Rgb[] = [
  [31, 119, 180],
  [214, 39, 40],
  [44, 160, 44],
  [148, 103, 189],
];

/** Curves against steps (e.g. training and validation loss), with a legend, axes and a light grid. */
export function curveFigure(o: {
  title: string;
  yTitle: string;
  series: { label: string; points: [number, number][] }[];
  width?: number;
  height?: number;
}): Buffer {
  const width = o.width ?? 640;
  const height = o.height ?? 360;
  const left = 52;
  const plot = {
    x: left,
    y: TITLE_H + LABEL_H + 4,
    w: width - left - 16,
    h: height - TITLE_H - LABEL_H - 4 - BOTTOM - 4,
  };
  const all = o.series.flatMap((s) => s.points).filter(([, v]) => Number.isFinite(v));
  const c = new Canvas(width, height);
  c.text(o.title, left, 4);
  let lx = left;
  for (const [i, s] of o.series.entries()) {
    const col = SERIES_COLOURS[i % SERIES_COLOURS.length];
    c.rect(lx, TITLE_H + 3, 10, 3, col);
    c.text(s.label, lx + 14, TITLE_H + 1);
    lx += 14 + textWidth(s.label) + 16;
  }
  c.text(o.yTitle, 2, plot.y - LABEL_H + 1, { color: GREY });
  if (all.length === 0) {
    c.text('NO POINTS YET', plot.x + plot.w / 2, plot.y + plot.h / 2, { align: 'center', color: GREY });
    return c.png();
  }
  const [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (!(y1 > y0)) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const pad = (y1 - y0) * 0.05;
  [y0, y1] = [y0 - pad, y1 + pad];
  const xs = (x: number) => plot.x + (x1 > x0 ? ((x - x0) / (x1 - x0)) * (plot.w - 1) : plot.w / 2);
  const ys = (y: number) => plot.y + plot.h - 1 - ((y - y0) / (y1 - y0)) * (plot.h - 1);
  const yt = ticks(y0, y1, 5);
  const ystep = yt.length > 1 ? yt[1] - yt[0] : 1;
  for (const v of yt) {
    const y = Math.round(ys(v));
    c.hline(plot.x, plot.x + plot.w - 1, y, LIGHT);
    c.text(tickLabel(v, ystep), plot.x - 5, y - 3, { align: 'right' });
  }
  const xt = ticks(x0, x1, Math.max(2, Math.floor(plot.w / 80)));
  const xstep = xt.length > 1 ? xt[1] - xt[0] : 1;
  for (const v of xt) {
    const x = Math.round(xs(v));
    c.vline(x, plot.y, plot.y + plot.h - 1, LIGHT);
    c.text(tickLabel(v, xstep), x, plot.y + plot.h + 5, { align: 'center' });
  }
  c.vline(plot.x - 1, plot.y, plot.y + plot.h, BLACK);
  c.hline(plot.x - 1, plot.x + plot.w - 1, plot.y + plot.h, BLACK);
  c.text('STEP', plot.x + plot.w / 2, plot.y + plot.h + 5 + GLYPH_H + 4, { align: 'center', color: GREY });
  for (const [i, s] of o.series.entries()) {
    const col = SERIES_COLOURS[i % SERIES_COLOURS.length];
    const pts = s.points.filter(([, v]) => Number.isFinite(v));
    for (let k = 1; k < pts.length; k++)
      c.line(xs(pts[k - 1][0]), ys(pts[k - 1][1]), xs(pts[k][0]), ys(pts[k][1]), col);
    if (pts.length <= 40) for (const [x, y] of pts) c.rect(Math.round(xs(x)) - 1, Math.round(ys(y)) - 1, 3, 3, col);
  }
  return c.png();
}
