/**
 * The report's chart: traffic share per region over time as a standalone SVG, one panel per
 * policy (stacked areas of the share of sessions started on each region per time bucket,
 * failed sessions in grey on top), the event windows shaded, the announcements dotted (named
 * by region when several regions have events), the event regions' load as a dashed line, axis
 * labels and a legend. Pure: returns the SVG text.
 */
import { POLICY_TITLES } from './policies.js';
import type { SimReport } from './run.js';

/** Okabe–Ito colours (distinguishable with colour-vision deficiencies), then a few more. */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999933', '#882255', '#44AA99'];
const FAILED = '#6b6b6b';

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const f1 = (x: number) => (Math.round(x * 10) / 10).toString();

export function renderSvg(rep: SimReport): string {
  const R = rep.world.regions.length;
  const W = 960;
  const left = 64;
  const right = 24;
  const panelH = 190;
  const gap = 46;
  const top = 104;
  const plotW = W - left - right;
  const n = rep.results.length;
  const H = top + n * (panelH + gap) + 10;
  const t0 = rep.timeline.windowStart;
  const t1 = rep.timeline.windowEnd;
  const x = (t: number) => left + ((Math.min(t1, Math.max(t0, t)) - t0) / (t1 - t0)) * plotW;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<title>${escapeXml(rep.scenario.title)}: share of sessions started per region</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="bold">${escapeXml(rep.scenario.title)}</text>`,
    `<text x="${left}" y="40" fill="#444">Share of sessions started per region, per ${Math.round(rep.results[0]?.series.bucketMs ?? 60000) / 1000} s (seed ${rep.seed}, scale ${rep.scale})</text>`,
  );
  // Legend.
  let lx = left;
  const ly = 60;
  const item = (swatch: string, label: string) => {
    out.push(`${swatch.replace(/X/g, String(lx)).replace(/Y/g, String(ly))}<text x="${lx + 18}" y="${ly + 10}">${escapeXml(label)}</text>`);
    lx += 24 + label.length * 6.6;
  };
  rep.world.regions.forEach((r, i) => item(`<rect x="X" y="Y" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`, r.id));
  item(`<rect x="X" y="Y" width="12" height="12" fill="${FAILED}"/>`, 'failed');
  const evRegions = [...new Set(rep.events.map((e) => e.region))];
  const evName = evRegions.map((r) => rep.world.regions[r]!.id).join(', ');
  out.push(`<line x1="${lx}" y1="${ly + 6}" x2="${lx + 14}" y2="${ly + 6}" stroke="#000" stroke-width="1.5" stroke-dasharray="4 2"/><text x="${lx + 18}" y="${ly + 10}">load on ${escapeXml(evName)} ÷ its normal capacity</text>`);

  // Time ticks: every 15 or 30 minutes or hour, whichever gives at most ~10 ticks.
  const span = t1 - t0;
  const step = [5, 10, 15, 30, 60, 120].map((m) => m * 60_000).find((s) => span / s <= 10) ?? 240 * 60_000;
  const ticks: number[] = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) ticks.push(t);

  rep.results.forEach((res, pi) => {
    const y0 = top + pi * (panelH + gap);
    const y = (f: number) => y0 + panelH - f * panelH;
    const s = res.series;
    out.push(`<g>`, `<text x="${left}" y="${y0 - 9}" font-size="13" font-weight="bold">${escapeXml(POLICY_TITLES[res.policy])}</text>`);
    // Stacked areas (steps per bucket).
    const totals = new Float64Array(s.n);
    for (let b = 0; b < s.n; b++) {
      let tot = s.failed[b]!;
      for (let r = 0; r < R; r++) tot += s.started[b * R + r]!;
      totals[b] = tot;
    }
    const cum = new Float64Array(s.n);
    const layer = (value: (b: number) => number, fill: string) => {
      const upper: string[] = [];
      const lower: string[] = [];
      for (let b = 0; b < s.n; b++) {
        const a = s.t0 + b * s.bucketMs;
        const z = Math.min(t1, a + s.bucketMs);
        const lo = totals[b]! > 0 ? cum[b]! / totals[b]! : 0;
        cum[b] = cum[b]! + value(b);
        const hi = totals[b]! > 0 ? cum[b]! / totals[b]! : 0;
        upper.push(`${f1(x(a))},${f1(y(hi))} ${f1(x(z))},${f1(y(hi))}`);
        lower.unshift(`${f1(x(z))},${f1(y(lo))} ${f1(x(a))},${f1(y(lo))}`);
      }
      out.push(`<polygon fill="${fill}" stroke="none" points="${upper.join(' ')} ${lower.join(' ')}"/>`);
    };
    for (let r = 0; r < R; r++) layer((b) => s.started[b * R + r]!, PALETTE[r % PALETTE.length]!);
    layer((b) => s.failed[b]!, FAILED);
    // Load on the event regions ÷ their normal capacity.
    for (const r of evRegions) {
      const pts: string[] = [];
      for (let b = 0; b < s.n; b++) pts.push(`${f1(x(Math.min(t1, s.t0 + (b + 1) * s.bucketMs)))},${f1(y(Math.min(1, s.load[b * R + r]! / rep.world.capacity[r]!)))}`);
      out.push(`<polyline fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="4 2" points="${pts.join(' ')}"/>`);
    }
    // Event windows (a band above the panel and a frame over it) and announcements, on top of the areas.
    for (const e of rep.events) {
      out.push(
        `<rect x="${f1(x(e.T))}" y="${y0 - 5}" width="${f1(x(e.E) - x(e.T))}" height="5" fill="#d62728"/>`,
        `<rect x="${f1(x(e.T))}" y="${y0}" width="${f1(x(e.E) - x(e.T))}" height="${panelH}" fill="#ffffff" fill-opacity="0.08" stroke="#d62728" stroke-width="2"/>`,
      );
      if (e.announce < e.T && e.announce >= t0) out.push(`<line x1="${f1(x(e.announce))}" y1="${y0 - 5}" x2="${f1(x(e.announce))}" y2="${y0 + panelH}" stroke="#d62728" stroke-width="2" stroke-dasharray="3 3"/>`);
    }
    // Labels: each event's at its start, and one "announced" per announcement instant (events
    // announced together share it). Overlapping or nearby events would print over each other:
    // each label takes the first row (16 px apart) where it overlaps no label already placed.
    const rows: [number, number][][] = [];
    const place = (x0: number, x1: number): number => {
      for (let i = 0; ; i++) {
        const row = (rows[i] ??= []);
        if (row.every(([a, b]) => x1 + 4 <= a || x0 >= b + 4)) {
          row.push([x0, x1]);
          return y0 + 14 + 16 * i;
        }
      }
    };
    /** Width of a label in px, as the chart's 12 px sans-serif sets it (about 7 px a character). */
    const width = (text: string) => 7 * text.length;
    const announcedAt = new Set<number>();
    for (const e of rep.events) {
      const label = `${rep.world.regions[e.region]!.id}: ${e.kind === 'power-off' ? 'no power' : e.kind === 'throttle' ? `${Math.round(e.share * 100)} % throttled` : 'claimed only'}`;
      const lx = x(e.T) + 4;
      out.push(`<text x="${f1(lx)}" y="${place(lx, lx + width(label))}" fill="#000" stroke="#fff" stroke-width="3" paint-order="stroke">${escapeXml(label)}</text>`);
      if (e.announce < e.T && e.announce >= t0 && !announcedAt.has(e.announce)) {
        announcedAt.add(e.announce);
        // Which regions' events were announced then (several events: say whose).
        const whose = [...new Set(rep.events.filter((x) => x.announce === e.announce && x.announce < x.T).map((x) => rep.world.regions[x.region]!.id))];
        const text = evRegions.length > 1 ? `${whose.join(', ')} announced` : 'announced';
        // Left of the line when there is room, else right of it (clear of the axis labels).
        const w = width(text);
        const room = x(e.announce) - left >= w + 8;
        const ax = x(e.announce) + (room ? -4 : 4);
        const ay = room ? place(ax - w, ax) : place(ax, ax + w);
        out.push(`<text x="${f1(ax)}" y="${ay}" text-anchor="${room ? 'end' : 'start'}" fill="#000" stroke="#fff" stroke-width="3" paint-order="stroke">${escapeXml(text)}</text>`);
      }
    }
    // Axes.
    out.push(`<rect x="${left}" y="${y0}" width="${plotW}" height="${panelH}" fill="none" stroke="#333"/>`);
    for (const f of [0, 0.25, 0.5, 0.75, 1]) {
      out.push(`<line x1="${left - 4}" y1="${f1(y(f))}" x2="${left}" y2="${f1(y(f))}" stroke="#333"/><text x="${left - 7}" y="${f1(y(f) + 4)}" text-anchor="end">${f * 100} %</text>`);
    }
    for (const t of ticks) {
      out.push(`<line x1="${f1(x(t))}" y1="${y0 + panelH}" x2="${f1(x(t))}" y2="${y0 + panelH + 4}" stroke="#333"/><text x="${f1(x(t))}" y="${y0 + panelH + 16}" text-anchor="middle">${new Date(t).toISOString().slice(11, 16)}</text>`);
    }
    const cy = y0 + panelH / 2;
    out.push(`<text x="16" y="${cy}" transform="rotate(-90 16 ${cy})" text-anchor="middle">share of sessions</text>`, `</g>`);
  });
  out.push(`<text x="${left + plotW / 2}" y="${H - 10}" text-anchor="middle">time (UTC)</text>`, `</svg>`, '');
  return out.join('\n');
}
