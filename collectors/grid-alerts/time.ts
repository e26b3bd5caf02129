/**
 * Timestamps as the ISO feeds write them, read into ms epoch (UTC). Pure; no I/O.
 *
 * Contract of `parseTime(v, zone)`:
 * - `undefined`, `null` and the empty string are absent: it returns `undefined`.
 * - A number is an epoch: below 10^11 it counts seconds (ERCOT's `current_condition.datetime`),
 *   else milliseconds.
 * - A string is one of, and nothing else:
 *   ISO 8601 `2024-01-13T15:58:00Z` / `2024-01-13 15:58:00-0600` / `…+05:30` / fractions of a second;
 *   `MM.DD.YYYY HH:MM[:SS]` or `MM/DD/YYYY HH:MM[:SS]` (PJM's emergency procedures board);
 *   RFC 822 as RSS writes it, `Sat, 13 Jan 2024 15:58:00 MST` (zones UT, GMT, Z, the US
 *   zone letters EST … PDT, or ±HHMM; the weekday is optional; two-digit years are 20YY).
 *   A time without an offset is wall-clock time in `zone` (an IANA name: the ISO's own, e.g.
 *   America/Chicago), resolved through the platform's time-zone data.
 * - Anything else, a time outside the instants' domain (gslb/model/domains.ts: before 2000 or
 *   from 2200 on: a broken clock, or seconds read as ms), or a field out of range (month 13, hour 24),
 *   returns `null`: the caller treats that as a payload it does not understand.
 * It never throws and runs in time linear in the input (anchored patterns on at most 64 characters).
 */

import { INSTANT_MAX, INSTANT_MIN } from '../../gslb/model/domains.js';

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s?(Z|[+-]\d{2}:?\d{2})?$/i;
const US = /^(\d{2})[./](\d{2})[./](\d{4}) (\d{2}):(\d{2})(?::(\d{2}))?$/;
const RFC822 = /^(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4}|\d{2})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s+([A-Za-z]{1,3}|[+-]\d{4})$/;

const MONTHS: Record<string, number> = { jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12 };
/** RFC 822 zone names, minutes east of UTC. */
const ZONES: Record<string, number> = { ut: 0, gmt: 0, z: 0, utc: 0, est: -300, edt: -240, cst: -360, cdt: -300, mst: -420, mdt: -360, pst: -480, pdt: -420 };

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Offset of `zone` from UTC at instant `utcMs`, in ms (America/Chicago in winter: −6 h). */
function zoneOffsetMs(utcMs: number, zone: string): number {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(utcMs))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const wall = Date.UTC(p.year ?? 1970, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0, p.second ?? 0);
  return wall - Math.floor(utcMs / 1000) * 1000;
}

/** The instant at which wall-clock `wallMs` (fields read as if UTC) holds in `zone`. */
export function zonedToUtc(wallMs: number, zone: string): number {
  const first = wallMs - zoneOffsetMs(wallMs, zone);
  const second = wallMs - zoneOffsetMs(first, zone);
  return second;
}

/** Date.UTC of the fields, or null when a field is out of range (Feb 30, hour 24, …). */
function fields(y: number, mo: number, d: number, h: number, mi: number, s: number, ms = 0): number | null {
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return null;
  const t = Date.UTC(y, mo - 1, d, h, mi, Math.min(s, 59), ms);
  const back = new Date(t);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  return t;
}

function inRange(t: number | null): number | null {
  return t !== null && Number.isFinite(t) && t >= INSTANT_MIN && t <= INSTANT_MAX ? Math.round(t) : null;
}

/** Minutes east of UTC of `+05:30`, `-0600`, `Z`. */
function offsetMinutes(o: string): number | null {
  if (o.toUpperCase() === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(o);
  if (!m) return null;
  const h = Number(m[2]);
  const mi = Number(m[3]);
  if (h > 14 || mi > 59) return null;
  return (m[1] === '-' ? -1 : 1) * (h * 60 + mi);
}

/** See the module comment. */
export function parseTime(v: unknown, zone: string): number | null | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null;
    return inRange(Math.abs(v) < 1e11 ? v * 1000 : v);
  }
  if (typeof v !== 'string') return null;
  const s = v.trim();
  if (s === '') return undefined;
  if (s.length > 64) return null;
  let m = ISO.exec(s);
  if (m) {
    const frac = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
    const wall = fields(Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0), frac);
    if (wall === null) return null;
    if (m[8] === undefined) return inRange(zonedToUtc(wall, zone));
    const off = offsetMinutes(m[8]);
    return off === null ? null : inRange(wall - off * 60_000);
  }
  m = US.exec(s);
  if (m) {
    const wall = fields(Number(m[3]), Number(m[1]), Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0));
    return wall === null ? null : inRange(zonedToUtc(wall, zone));
  }
  m = RFC822.exec(s);
  if (m) {
    const mo = MONTHS[m[2]!.toLowerCase()];
    if (mo === undefined) return null;
    const y = m[3]!.length === 2 ? 2000 + Number(m[3]) : Number(m[3]);
    const wall = fields(y, mo, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0));
    if (wall === null) return null;
    const z = m[7]!;
    const off = /^[+-]/.test(z) ? offsetMinutes(z) : ZONES[z.toLowerCase()];
    return off === null || off === undefined ? null : inRange(wall - off * 60_000);
  }
  return null;
}
