/** A small DOM builder: text always goes in as text (names, reasons and signal words come from config and collectors). */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((e: Event) => void) | undefined>;

const SVG_NS = 'http://www.w3.org/2000/svg';
const SVG_TAGS = new Set(['svg', 'g', 'path', 'circle', 'rect', 'line', 'text', 'title', 'polyline']);

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement & SVGElement {
  const el = (SVG_TAGS.has(tag) ? document.createElementNS(SVG_NS, tag) : document.createElement(tag)) as HTMLElement & SVGElement;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (k === 'class') el.setAttribute('class', String(v));
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return el;
}

/** Replaces the children of the element with id `id`. */
export function fill(id: string, ...children: Child[]): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`no #${id}`);
  el.replaceChildren();
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return el;
}

export const pct = (x: number) => `${(Math.round(x * 1000) / 10).toFixed(x > 0 && x < 0.1 ? 1 : 0)} %`;

export function watts(w: number | undefined): string {
  if (w === undefined) return '—';
  const a = Math.abs(w);
  if (a >= 1e6) return `${(w / 1e6).toFixed(2)} MW`;
  if (a >= 1e3) return `${(w / 1e3).toFixed(1)} kW`;
  return `${Math.round(w)} W`;
}

/** "in 4 min", "12 s ago", "2 h 5 min". */
export function span(ms: number): string {
  const a = Math.abs(ms);
  if (a < 60_000) return `${Math.round(a / 1000)} s`;
  const mins = Math.round(a / 60_000);
  if (mins < 60) return `${mins} min`;
  const hrs = Math.floor(mins / 60);
  const m = mins - hrs * 60;
  return m > 0 ? `${hrs} h ${m} min` : `${hrs} h`;
}

export const utc = (t: number) => new Date(t).toISOString().slice(11, 16);
export const utcFull = (t: number) => `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** ISO 8601 instants as the server writes them in reasons (`2026-12-02T14:05:00.123Z`). */
const ISO_INSTANT = /\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z/g;

/** An instant for people: `14:05 UTC (in 4 min)`, with the day when it is not `now`'s. */
export function humanInstant(t: number, now: number): string {
  const d = new Date(t).toISOString();
  const sameDay = d.slice(0, 10) === new Date(now).toISOString().slice(0, 10);
  const clock = `${sameDay ? '' : `${d.slice(5, 10)} `}${d.slice(11, 16)} UTC`;
  const rel = Math.abs(t - now) < 1000 ? 'now' : t > now ? `in ${span(t - now)}` : `${span(now - t)} ago`;
  return `${clock} (${rel})`;
}

/** A `<time>` showing the instant for people, the exact instant on hover. */
export function timeEl(t: number, now: number): HTMLElement {
  const iso = new Date(t).toISOString();
  return h('time', { datetime: iso, title: iso }, humanInstant(t, now));
}

/** Text with its ISO instants replaced by `<time>` elements (human words, the exact instant on hover). */
export function withTimes(text: string, now: number): (string | HTMLElement)[] {
  const out: (string | HTMLElement)[] = [];
  let last = 0;
  for (const m of text.matchAll(ISO_INSTANT)) {
    const t = Date.parse(m[0]);
    if (!Number.isFinite(t)) continue;
    if (m.index! > last) out.push(text.slice(last, m.index));
    out.push(timeEl(t, now));
    last = m.index! + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
