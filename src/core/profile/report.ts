// A self-contained HTML report (inline SVG, no scripts or network): the step-time breakdown per
// step as stacked bars, the GPU utilisation over time, and the verdicts — what a person would
// rather look at than read. Also the terminal timeline: one bar of span letters per step.
import type { DeviceSampleRecord } from '../telemetry/index.js';
import { SPAN_NAMES, type StepRecord } from '../telemetry/index.js';
import type { ProfileVerdicts } from './verdicts.js';

const COLORS: Record<string, string> = {
  dataWaitMs: '#d62728',
  uploadMs: '#ff7f0e',
  forwardBackwardMs: '#1f77b4',
  optimizerMs: '#17becf',
  syncMs: '#9467bd',
  allReduceMs: '#e377c2',
  checkpointMs: '#8c564b',
  otherMs: '#bbbbbb',
};
const LETTERS: Record<string, string> = {
  dataWaitMs: 'D',
  uploadMs: 'U',
  forwardBackwardMs: 'F',
  optimizerMs: 'O',
  syncMs: 'S',
  allReduceMs: 'A',
  checkpointMs: 'C',
  otherMs: '.',
};

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/** At most this many bars: longer runs are shown as means over consecutive steps (a 10,000-step run
 * drawn bar by bar made a 6 MB page that no one could read). */
const MAX_BARS = 400;

export function stepChartSvg(steps: readonly StepRecord[], width = 900, height = 260): string {
  const per = Math.max(1, Math.ceil(steps.length / MAX_BARS));
  const bars = [] as { label: string; spans: Record<string, number>; wallMs: number }[];
  for (let i = 0; i < steps.length; i += per) {
    const group = steps.slice(i, i + per);
    const spans: Record<string, number> = {};
    for (const name of SPAN_NAMES) spans[name] = group.reduce((a, s) => a + s.spans[name], 0) / group.length;
    const label =
      group.length === 1 ? `step ${group[0].step}` : `steps ${group[0].step}–${group[group.length - 1].step} (mean)`;
    bars.push({ label, spans, wallMs: group.reduce((a, s) => a + s.wallMs, 0) / group.length });
  }
  const maxMs = Math.max(1, ...bars.map((b) => b.wallMs));
  const pad = 40;
  const barW = Math.max(1, (width - pad - 10) / Math.max(1, bars.length));
  const y = (ms: number) => (ms / maxMs) * (height - 40);
  const rects: string[] = [];
  bars.forEach((b, i) => {
    let acc = 0;
    for (const name of SPAN_NAMES) {
      const h = y(b.spans[name]);
      if (h <= 0) continue;
      rects.push(
        `<rect x="${(pad + i * barW).toFixed(1)}" ` +
          `y="${(height - 20 - y(acc) - h).toFixed(1)}" ` +
          `width="${Math.max(0.5, barW - 0.5).toFixed(1)}" height="${h.toFixed(1)}" ` +
          `fill="${COLORS[name]}"><title>${b.label} ${name.replace(/Ms$/, '')} ${b.spans[name].toFixed(2)} ` +
          `ms</title></rect>`,
      );
      acc += b.spans[name];
    }
  });
  const legend = SPAN_NAMES.map(
    (n, i) =>
      `<rect x="${pad + i * 120}" y="2" width="10" height="10" ` +
      `fill="${COLORS[n]}"/><text x="${pad + 14 + i * 120}" y="11" ` +
      `font-size="11">${n.replace(/Ms$/, '')}</text>`,
  ).join('');
  const axis = per === 1 ? 'step' : `step (each bar: the mean of ${per} steps)`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `font-family="sans-serif">${legend}<text x="2" y="${height - 22}" ` +
    `font-size="10">0</text><text x="2" y="30" font-size="10">${maxMs.toFixed(0)} ` +
    `ms</text><line x1="${pad}" y1="${height - 20}" x2="${width - 10}" ` +
    `y2="${height - 20}" stroke="#333"/>${rects.join('')}<text x="${width / 2}" ` +
    `y="${height - 4}" font-size="11" text-anchor="middle">${axis}</text></svg>`
  );
}

export function gpuChartSvg(samples: readonly DeviceSampleRecord[], width = 900, height = 160): string {
  if (samples.length === 0) return '<p>No GPU samples (no NVIDIA GPU or driver on this host).</p>';
  const t0 = samples[0].tMs;
  const t1 = Math.max(t0 + 1, samples[samples.length - 1].tMs);
  const devices = [...new Set(samples.map((s) => s.device))];
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e'];
  const lines = devices.map((d, k) => {
    const pts = samples
      .filter((s) => s.device === d && s.utilizationPct !== null)
      .map(
        (s) =>
          (40 + ((s.tMs - t0) / (t1 - t0)) * (width - 50)).toFixed(1) +
          `,` +
          (height - 20 - ((s.utilizationPct as number) / 100) * (height - 40)).toFixed(1),
      );
    return (
      `<polyline fill="none" stroke="${palette[k % palette.length]}" ` +
      `stroke-width="1.5" points="${pts.join(' ')}"><title>GPU ${d}</title></polyline>`
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `font-family="sans-serif"><text x="2" y="24" font-size="10">100%</text><text ` +
    `x="2" y="${height - 22}" font-size="10">0%</text><line x1="40" ` +
    `y1="${height - 20}" x2="${width - 10}" y2="${height - 20}" ` +
    `stroke="#333"/>${lines.join('')}<text x="${width / 2}" y="${height - 4}" ` +
    `font-size="11" text-anchor="middle">time (${((t1 - t0) / 1000).toFixed(1)} ` +
    `s)</text></svg>`
  );
}

export function htmlReport(
  title: string,
  steps: readonly StepRecord[],
  samples: readonly DeviceSampleRecord[],
  v: ProfileVerdicts,
  facts: Record<string, string>,
): string {
  const b = v.breakdown;
  const cells = (...values: string[]) => `<tr>${values.map((x) => `<td>${x}</td>`).join('')}</tr>`;
  const rows = SPAN_NAMES.map((n) =>
    cells(
      `<span style="color:${COLORS[n]}">■</span> ${n.replace(/Ms$/, '')}`,
      b.spans[n].mean.toFixed(2),
      b.spans[n].p95.toFixed(2),
      `${(b.shares[n] * 100).toFixed(1)}%`,
    ),
  ).join('');
  const verdicts = v.verdicts
    .map(
      (x) =>
        `<li class="${x.grade}"><b>${x.n}. ${esc(x.title)}</b> ` +
        (`<small>[${x.grade}]</small><br>${esc(x.evidence)}` +
          (x.actions.length
            ? `<ul>` +
              x.actions
                .map(
                  (a) =>
                    `<li><code>${esc(a.key)}: ${esc(String(a.value))}</code> ` +
                    `— ${esc(a.effect)}${a.rule ? ` <small>(rule ${esc(a.rule)})</small>` : ''}</li>`,
                )
                .join('') +
              `</ul>`
            : '') +
          `</li>`),
    )
    .join('');
  const factRows = Object.entries(facts)
    .map(([k, val]) => cells(esc(k), esc(val)))
    .join('');
  const style =
    'body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}table{border-collapse:collapse}' +
    'td{padding:2px 10px;border-bottom:1px solid #eee}li.high{color:#b00}li.moderate{color:#a60}';
  return (
    `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title><style>${style}</style></head>` +
    `<body><h1>${esc(title)}</h1><table>${factRows}</table>` +
    `<h2>Verdicts</h2><ol style="list-style:none;padding:0">${verdicts}</ol>` +
    `<h2>Where each step's time goes</h2>${stepChartSvg(steps)}` +
    `<table><tr><th>span</th><th>mean ms</th><th>p95 ms</th><th>share</th></tr>${rows}</table>` +
    `<h2>GPU utilisation</h2>${gpuChartSvg(samples)}</body></html>\n`
  );
}

/**
 * One line per step: the step's time as letters, proportional to each span (D data, U upload, F forward/backward, O
 * optimizer, S sync, C checkpoint).
 */
export function terminalTimeline(steps: readonly StepRecord[], width = 60, maxLines = 30): string[] {
  const maxMs = Math.max(1, ...steps.map((s) => s.wallMs));
  const pick = steps.length <= maxLines ? steps : steps.filter((_, i) => i % Math.ceil(steps.length / maxLines) === 0);
  return pick.map((s) => {
    let bar = '';
    for (const n of SPAN_NAMES) bar += LETTERS[n].repeat(Math.round((s.spans[n] / maxMs) * width));
    return `${String(s.step).padStart(6)} ${bar.padEnd(width)} ${s.wallMs.toFixed(1)} ms`;
  });
}
