import type { ChaosProgress, ChaosReport } from './chaosReport';
import { duplicatesExplained, reportSections } from './report';
import { environmentViolation, unchargedDeadLetters, verdictLine } from './verdict';

/**
 * `npm run demo -- --report FILE.html`: one self-contained page: the verdict, the run's timeline as inline SVG, the
 * invariant table and the figures. Its only script checks that the chart was laid out (`data-chart` on `<body>`, read
 * by the browser test); the page reads the same without it.
 */

/** A series of the timeline: a cumulative count read from each progress sample. */
interface Series {
  readonly name: string;
  readonly color: string;
  readonly value: (p: ChaosProgress) => number | undefined;
}

export const TIMELINE_SERIES: readonly Series[] = [
  { name: 'deliveries', color: '#1f77b4', value: (p) => p.deliveries },
  { name: 'completed', color: '#2ca02c', value: (p) => p.completed },
  { name: 'charges (provider)', color: '#9467bd', value: (p) => p.charges },
  { name: 'duplicate deliveries (redeliveries)', color: '#ff7f0e', value: (p) => p.redeliveries },
  { name: 'crashes injected', color: '#d62728', value: (p) => p.crashes },
  { name: 'dead-lettered', color: '#7f7f7f', value: (p) => p.deadLettered },
];

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The invariants the page tabulates: name, holds, what was measured. */
export function invariantRows(r: ChaosReport): Array<{ name: string; holds: boolean; detail: string }> {
  const env = environmentViolation(unchargedDeadLetters(r));
  const rows = [
    { name: 'no message lost', holds: r.lost === 0, detail: `${r.lost} lost` },
    { name: 'every run final at verification', holds: (r.unfinished ?? 0) === 0, detail: `${r.unfinished ?? 0} unfinished at verification` },
    { name: 'no payment charged twice', holds: r.doubleCharged === 0, detail: `${r.doubleCharged} double charged` },
    {
      name: 'effective charges = chargeable - uncharged in the DLQ',
      holds: r.effectiveCharges === r.expectedCharges,
      detail: `${r.effectiveCharges} charged, ${r.expectedCharges} expected (${r.effectiveChargesSource})`,
    },
    {
      name: 'uncharged dead-letters within what the injected faults explain',
      holds: env === undefined,
      detail: env ?? `${unchargedDeadLetters(r).uncharged} uncharged in the DLQ`,
    },
  ];
  if (r.timePhase) {
    const t = r.timePhase;
    rows.push({
      name: 'time phase: nothing stuck or left in progress, no orphan row',
      holds: t.atElapsedMs >= 0 && t.resubmittedStuck === 0 && t.leftInProgress === 0 && t.orphanLocalRows === 0,
      detail: t.atElapsedMs < 0 ? 'did not run' : `stuck ${t.resubmittedStuck}, left in progress ${t.leftInProgress}, orphan rows ${t.orphanLocalRows}`,
    });
  }
  const others = r.violations.filter(
    (v) => !v.startsWith('the environment is broken') && !/message\(s\) lost|unfinished at verification|charged twice/.test(v),
  );
  rows.push({
    name: 'every other check (parking, reused keys, orders, amounts)',
    holds: others.length === 0,
    detail: others.length === 0 ? 'all hold' : `${others.length} violation(s), listed below`,
  });
  return rows;
}

/** The timeline as an inline SVG: cumulative series, storage outages as bands, the time phase as a line. */
export function timelineSvg(samples: readonly ChaosProgress[], width = 960, height = 360): string {
  const pad = { left: 56, right: 16, top: 16, bottom: 40 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const points = samples.filter((s) => !s.phase);
  const tMax = Math.max(1, ...samples.map((s) => s.elapsedMs));
  const yMax = niceCeil(Math.max(1, ...points.flatMap((p) => TIMELINE_SERIES.map((s) => s.value(p) ?? 0))));
  const x = (ms: number) => pad.left + (ms / tMax) * w;
  const y = (v: number) => pad.top + h - (v / yMax) * h;
  const parts: string[] = [];
  // Outages: consecutive samples with the proxy cut.
  for (let i = 0; i < points.length; i++) {
    if (!points[i].outage) continue;
    let j = i;
    while (j + 1 < points.length && points[j + 1].outage) j++;
    const from = i > 0 ? points[i - 1].elapsedMs : points[i].elapsedMs;
    const to = j + 1 < points.length ? points[j + 1].elapsedMs : points[j].elapsedMs;
    parts.push(
      `<rect class="outage" x="${x(from).toFixed(1)}" y="${pad.top}" width="${Math.max(2, x(to) - x(from)).toFixed(1)}" height="${h}" fill="#f4c7c3" opacity="0.7"><title>storage outage</title></rect>`,
    );
    i = j;
  }
  for (const s of samples.filter((p) => p.phase)) {
    parts.push(
      `<line class="phase" x1="${x(s.elapsedMs).toFixed(1)}" x2="${x(s.elapsedMs).toFixed(1)}" y1="${pad.top}" y2="${pad.top + h}" stroke="#444" stroke-dasharray="4 3"><title>${escape(s.phase!)}</title></line>`,
      `<text x="${(x(s.elapsedMs) + 4).toFixed(1)}" y="${pad.top + 12}" font-size="11" fill="#444">time phase</text>`,
    );
  }
  // Axes and grid.
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    parts.push(
      `<line x1="${pad.left}" x2="${pad.left + w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${pad.left - 6}" y="${(y(v) + 4).toFixed(1)}" font-size="11" text-anchor="end" fill="#333">${Math.round(v).toLocaleString('en-US')}</text>`,
    );
  }
  for (let k = 0; k <= 5; k++) {
    const ms = (tMax * k) / 5;
    parts.push(`<text x="${x(ms).toFixed(1)}" y="${pad.top + h + 16}" font-size="11" text-anchor="middle" fill="#333">${(ms / 1000).toFixed(1)} s</text>`);
  }
  parts.push(`<text x="${pad.left + w / 2}" y="${height - 6}" font-size="12" text-anchor="middle" fill="#333">time since start (cumulative counts)</text>`);
  parts.push(`<rect x="${pad.left}" y="${pad.top}" width="${w}" height="${h}" fill="none" stroke="#999"/>`);
  for (const s of TIMELINE_SERIES) {
    const pts = points.filter((p) => s.value(p) !== undefined).map((p) => `${x(p.elapsedMs).toFixed(1)},${y(s.value(p)!).toFixed(1)}`);
    if (pts.length === 0) continue;
    if (pts.length === 1) pts.push(pts[0]);
    parts.push(
      `<polyline class="series" data-series="${escape(s.name)}" points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2.5"><title>${escape(s.name)}</title></polyline>`,
    );
  }
  return `<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="timeline of the run">${parts.join('')}</svg>`;
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** The whole page. */
export function htmlReport(r: ChaosReport, samples: readonly ChaosProgress[], title = 'Chaos run'): string {
  const legend = TIMELINE_SERIES.filter((s) => samples.some((p) => !p.phase && s.value(p) !== undefined))
    .map((s) => `<span class="key"><i style="background:${s.color}"></i>${escape(s.name)}</span>`)
    .concat(['<span class="key"><i style="background:#f4c7c3"></i>storage outage</span>', '<span class="key"><i class="dash"></i>time phase</span>'])
    .join(' ');
  const invariants = invariantRows(r)
    .map(
      (row) =>
        `<tr class="${row.holds ? 'ok' : 'bad'}"><td>${escape(row.name)}</td><td>${row.holds ? 'holds' : 'FAILS'}</td><td>${escape(row.detail)}</td></tr>`,
    )
    .join('');
  const figures = reportSections(r)
    .map(
      ([name, rows]) =>
        `<tr><th colspan="3">${escape(name)}</th></tr>` +
        rows.map(([k, v, note]) => `<tr><td>${escape(k)}</td><td class="num">${escape(String(v))}</td><td>${escape(note ?? '')}</td></tr>`).join(''),
    )
    .join('');
  const violations = r.violations.length
    ? `<h2>Violations</h2><ul>${r.violations
        .slice(0, 50)
        .map((v) => `<li>${escape(v)}</li>`)
        .join('')}</ul>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}: ${escape(verdictLine(r))}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:20px;margin:0 0 4px} .verdict{font-size:18px;font-weight:600;padding:8px 12px;border-radius:4px;display:inline-block}
.pass{background:#dff0d8;color:#1d5e1d} .fail{background:#f8d7da;color:#842029}
table{border-collapse:collapse;margin:8px 0 16px} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums} tr.ok td:nth-child(2){color:#1d5e1d;font-weight:600}
tr.bad td:nth-child(2){color:#842029;font-weight:700} .key{margin-right:14px;white-space:nowrap} .key i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}
.key i.dash{border-top:2px dashed #444;height:0} p.note{color:#444;max-width:900px}
</style></head>
<body data-chart="not checked">
<h1>${escape(title)}, seed ${r.seed}, ${(r.elapsedMs / 1000).toFixed(1)} s</h1>
<p class="verdict ${r.ok ? 'pass' : 'fail'}">${escape(verdictLine(r))}</p>
<h2>Timeline</h2>
<div>${legend}</div>
${timelineSvg(samples)}
<h2>Invariants</h2>
<table><tr><th>invariant</th><th>verdict</th><th>measured</th></tr>${invariants}</table>
${violations}
<p class="note">${escape(duplicatesExplained(r))}</p>
<h2>Figures</h2>
<table>${figures}</table>
<script>
(function () {
  var lines = document.querySelectorAll('#timeline polyline.series'), drawn = 0;
  for (var i = 0; i < lines.length; i++) { var b = lines[i].getBBox(); if (b.width > 0) drawn++; }
  document.body.setAttribute('data-chart', 'drawn ' + drawn + ' series');
})();
</script>
</body></html>
`;
}
