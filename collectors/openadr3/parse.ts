/**
 * OpenADR 3 payloads → grid.event facts: pure functions, no I/O, no clock (the caller passes
 * `now`). Both spellings of the definitions are read: 3.0.1 (`targets` as valuesMaps
 * `{type, values}`, notification operations GET/POST/PUT/DELETE) and 3.1 (`targets` as plain
 * strings, operations CREATE/READ/UPDATE/DELETE).
 *
 * Time base: ms since the Unix epoch (UTC). Power: W.
 */
import { MAX_EVENT_MS, MAX_VALIDITY_MS } from '../../gslb/model/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { INSTANT_MAX, INSTANT_MIN, MAX_WATTS, isoOf } from '../../gslb/model/domains.js';

type GridEvent = KindValue<'grid.event'>;
type GridEventType = KindValue<'grid.event'>['type'];

/** The event payload types this collector turns into facts, and the fact type each becomes. */
export const PAYLOAD_TYPES: Readonly<Record<string, GridEventType>> = {
  SIMPLE: 'simple',
  IMPORT_CAPACITY_LIMIT: 'import-capacity-limit',
  DISPATCH_SETPOINT: 'dispatch-setpoint',
  ALERT_GRID_EMERGENCY: 'grid-emergency',
};

/** Watts per unit of an eventPayloadDescriptor's `units` (upper-cased). Any other unit is refused for limits. */
export const UNIT_FACTORS: Readonly<Record<string, number>> = { W: 1, KW: 1e3, MW: 1e6, GW: 1e9 };

/** How many targets, and values per target, are read from one object (the rest is ignored). */
export const MAX_TARGETS = 1000;
/** How many problems are kept per event (the first ones). */
const MAX_PROBLEMS = 5;

// ---------------------------------------------------------------------------------------------
// ISO 8601 durations and RFC 3339 date-times

/** A parsed ISO 8601 duration; every field ≥ 0 (the sign is separate). */
export interface Duration {
  negative: boolean;
  years: number;
  months: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

/** The definitions' `duration` pattern (3.0.1 and 3.1.1 alike): P[nY][nM][nD|nW][T[nH][nM][n[.n]S]]. */
const DURATION_RE = /^(-?)P(?=\d|T\d)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)([DW]))?(?:T(?:(\d+)H)?(?:(\d+)M)?(\d+(?:\.\d+)?S)?)?$/;

/** Parses an ISO 8601 duration as the OpenADR definitions spell it (`PT1H`, `PT15M`, `P1D`, `P2W`, `P9999Y`, `PT0.5S`); null if it is not one. */
export function parseDuration(s: unknown): Duration | null {
  if (typeof s !== 'string' || s.length > 64) return null;
  const m = DURATION_RE.exec(s);
  if (!m) return null;
  const n = (x: string | undefined) => (x === undefined ? 0 : Number(x));
  const dayCount = n(m[4]) * (m[5] === 'W' ? 7 : 1);
  return {
    negative: m[1] === '-',
    years: n(m[2]),
    months: n(m[3]),
    days: dayCount,
    hours: n(m[6]),
    minutes: n(m[7]),
    seconds: m[8] === undefined ? 0 : Number(m[8].slice(0, -1)),
  };
}

/** True for a duration of zero (PT0S: "instantaneous or infinity, depending on payloadType"). */
export function isZero(d: Duration): boolean {
  return d.years === 0 && d.months === 0 && d.days === 0 && d.hours === 0 && d.minutes === 0 && d.seconds === 0;
}

/** Years at or above which a duration means "no end" (the definitions: `P9999Y` may indicate infinity). */
export const OPEN_ENDED_YEARS = 9999;

/**
 * `start + d` in ms, calendar-aware in UTC: years and months move the calendar date (clamped to
 * the month's last day, so Jan 31 + P1M = Feb 28/29), days are 24 h (UTC has no DST).
 * NaN when the result is not a representable date. `d` must not be negative.
 */
export function addDuration(start: number, d: Duration): number {
  let t = start;
  if (d.years !== 0 || d.months !== 0) {
    const date = new Date(start);
    const months = date.getUTCFullYear() * 12 + date.getUTCMonth() + d.years * 12 + d.months;
    const y = Math.floor(months / 12);
    const mo = months - y * 12;
    const last = new Date(Date.UTC(y, mo + 1, 0)).getUTCDate();
    const day = Math.min(date.getUTCDate(), last);
    t = Date.UTC(y, mo, day) + (start - Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
    // Date.UTC maps years 0–99 to 1900–1999; such dates are never valid here anyway.
    if (y < 100) return NaN;
  }
  t += ((d.days * 24 + d.hours) * 60 + d.minutes) * 60_000 + d.seconds * 1000;
  return Number.isFinite(t) && Math.abs(t) <= 8.64e15 ? Math.round(t) : NaN;
}

/** `'now'`: the 3.1 definitions let a start of 0001-01-01 mean "now" (the User Guide's marker). */
export type StartTime = number | 'now';

const DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Parses an RFC 3339 date-time (`2031-06-01T18:00:00Z`, `…+02:00`, fractions to the ms; a time
 * without an offset is read as UTC; a bare date as its midnight UTC) into ms epoch, `'now'` for
 * the 0001-01-01 marker, or null when it is not a valid date-time.
 */
export function parseDateTime(s: unknown): StartTime | null {
  if (typeof s !== 'string' || s.length > 64) return null;
  const m = DATE_TIME_RE.exec(s);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y === 1 && mo === 1 && d === 1) return 'now';
  const [h, mi, sec] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (y < 1000 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60) return null;
  if (d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return null;
  let t = Date.UTC(y, mo - 1, d, h, mi, Math.min(sec, 59)) + (m[7] ? Math.floor(Number(m[7]) * 1000) : 0);
  const off = m[8];
  if (off && off !== 'Z' && off !== 'z') {
    const sign = off[0] === '-' ? -1 : 1;
    const digits = off.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2));
    if (oh > 23 || om > 59) return null;
    t -= sign * (oh * 60 + om) * 60_000;
  }
  return Number.isFinite(t) ? t : null;
}

// ---------------------------------------------------------------------------------------------
// Targets and region matching

/** One target, either spelling: 3.0.1 `{type, values}` (type set) or a 3.1 string (type undefined). */
export interface Target {
  type?: string;
  values: string[];
}

/** A region's matching rule (the config's `regions[]` entry). */
export interface RegionMatch {
  region: string;
  venName?: string;
  targets?: ReadonlyArray<{ type: string; values: readonly string[] } | string>;
  programs?: readonly string[];
}

const isPrimitive = (v: unknown): v is string | number | boolean => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * Reads an object's `targets` in either spelling. Absent, null or [] → [] (addressed to every
 * VEN). An element that is neither a string nor a `{type, values}` is kept as a target that
 * matches nothing, so a garbled target never widens who an event is for. null if `targets` is
 * present and not an array.
 */
export function readTargets(raw: unknown): Target[] | null {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const out: Target[] = [];
  for (const el of raw.slice(0, MAX_TARGETS)) {
    if (typeof el === 'string') out.push({ values: [el] });
    else if (typeof el === 'object' && el !== null && typeof (el as { type?: unknown }).type === 'string' && Array.isArray((el as { values?: unknown }).values)) {
      const t = el as { type: string; values: unknown[] };
      out.push({ type: t.type, values: t.values.slice(0, MAX_TARGETS).filter(isPrimitive).map(String) });
    } else out.push({ type: '\u0000unreadable', values: [] });
  }
  return out;
}

/** A region's own targets: its `targets` plus its `venName` as a VEN_NAME target. */
export function regionTargets(r: RegionMatch): Target[] {
  const out: Target[] = [];
  for (const t of r.targets ?? []) out.push(typeof t === 'string' ? { values: [t] } : { type: t.type, values: [...t.values] });
  if (r.venName !== undefined) out.push({ type: 'VEN_NAME', values: [r.venName] });
  return out;
}

/**
 * Whether an event is for a region:
 * - the region lists `programs` → the event's program name must be one of them;
 * - the event has no targets → it is for every VEN, so for the region;
 * - the region has no targets and no venName → it takes every event (of its programs);
 * - else some event target must share a value with some region target, and when both carry a
 *   type (3.0.1 spelling) the types must be equal; a 3.1 string target compares by value only.
 */
export function matchesRegion(r: RegionMatch, programName: string | undefined, eventTargets: readonly Target[]): boolean {
  if (r.programs && (programName === undefined || !r.programs.includes(programName))) return false;
  if (eventTargets.length === 0) return true;
  const mine = regionTargets(r);
  if (mine.length === 0) return true;
  return eventTargets.some((t) => mine.some((m) => (t.type === undefined || m.type === undefined || t.type === m.type) && t.values.some((v) => m.values.includes(v))));
}

/**
 * The query strings (without skip/limit) for GET /events that together cover every region:
 * 3.0.1 `targetType=T&targetValues=a&targetValues=b` per (region, target type), 3.1
 * `targets=a&targets=b` per region. One unfiltered query when `filter` is off, or when some
 * region takes every event or has targets the version cannot express as a query.
 */
export function eventQueries(regions: readonly RegionMatch[], version: '3.0.1' | '3.1', filter: boolean): string[] {
  if (!filter) return [''];
  const qs = new Set<string>();
  for (const r of regions) {
    const ts = regionTargets(r);
    if (ts.length === 0) return [''];
    if (version === '3.0.1') {
      if (ts.some((t) => t.type === undefined)) return [''];
      const byType = new Map<string, Set<string>>();
      for (const t of ts) {
        const set = byType.get(t.type!) ?? new Set<string>();
        for (const v of t.values) set.add(v);
        byType.set(t.type!, set);
      }
      for (const [type, values] of byType) {
        const p = new URLSearchParams({ targetType: type });
        for (const v of [...values].sort()) p.append('targetValues', v);
        qs.add(p.toString());
      }
    } else {
      const p = new URLSearchParams();
      for (const v of [...new Set(ts.flatMap((t) => t.values))].sort()) p.append('targets', v);
      qs.add(p.toString());
    }
  }
  return [...qs].sort();
}

// ---------------------------------------------------------------------------------------------
// Programs

/** The program id → programName map from a GET /programs page (programs without a usable id or name are skipped). */
export function readProgramNames(programs: readonly unknown[], into: Map<string, ProgramInfo>): void {
  for (const p of programs) {
    if (typeof p !== 'object' || p === null) continue;
    const { id, programName, payloadDescriptors } = p as { id?: unknown; programName?: unknown; payloadDescriptors?: unknown };
    if (typeof id !== 'string' || !OBJECT_ID.test(id) || typeof programName !== 'string' || programName.length === 0) continue;
    into.set(id, { name: programName.slice(0, 200), descriptors: readDescriptors(payloadDescriptors) });
  }
}

/** What this collector keeps of a program. */
export interface ProgramInfo {
  name: string;
  /** payloadType → units from the program's payloadDescriptors. */
  descriptors: Map<string, string>;
}

/** payloadType → units of an object's payloadDescriptors (descriptors without units are skipped). */
function readDescriptors(raw: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(raw)) return out;
  for (const d of raw.slice(0, MAX_TARGETS)) {
    if (typeof d !== 'object' || d === null) continue;
    const { payloadType, units, objectType } = d as { payloadType?: unknown; units?: unknown; objectType?: unknown };
    if (objectType !== undefined && objectType !== null && objectType !== 'EVENT_PAYLOAD_DESCRIPTOR') continue;
    if (typeof payloadType === 'string' && typeof units === 'string' && !out.has(payloadType)) out.set(payloadType, units);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Events → facts

/** The definitions' objectID: URL-safe, 1–128 characters. */
export const OBJECT_ID = /^[a-zA-Z0-9_-]{1,128}$/;

/** How to read events. */
export interface MapOptions {
  /** ms epoch: intervals that ended at or before this are skipped. */
  now: number;
  /** At most this many intervals are read per event; the event is then `incomplete`. */
  maxIntervals: number;
  /** An open-ended interval (duration absent, PT0S or ≥ P9999Y) ends this long after its start (extended in these steps while it is listed, so that at least half of it remains). */
  openEndedMs: number;
  /** Units for a limit whose event and program give none; absent = such payloads are refused. */
  unitsWhenMissing?: string;
  /** When an event whose intervals start at 0001-01-01 ("now") was first seen, if it was. */
  firstSeen?: number;
}

/** One fact of an event, before it is given a region. */
export type EventFact = GridEvent;

/** An event as read: its facts (current or future intervals), and whether anything was refused. */
export interface ReadEvent {
  id: string;
  programID: string;
  /** Changes whenever the VTN modified the event (modificationDateTime, createdDateTime). */
  version: string;
  targets: Target[];
  facts: EventFact[];
  /** Why parts of the event were refused (at most a few, in words). */
  problems: string[];
  /** Some intervals were refused or not read (too many): its earlier facts must not be taken as cancelled. */
  incomplete: boolean;
}

/** An event that could not be read at all; `id` when at least that was readable. */
export interface UnreadableEvent {
  id?: string;
  error: string;
}

/** What a JSON value is, in words, without calling into it. */
const kindOf = (v: unknown): string =>
  v === undefined ? 'none' : v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : typeof v === 'number' ? `the number ${v}` : `a ${typeof v}`;

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The end of an open-ended interval: start + n × cap, the first such step at least cap/2 after now. */
export function openEnd(start: number, now: number, cap: number): number {
  const n = Math.max(1, Math.ceil((now + cap / 2 - start) / cap));
  return start + n * cap;
}

/**
 * Reads one event object (either spelling) against the program it belongs to, and returns its
 * facts: one per interval and recognised payload whose interval has not ended at `o.now`.
 *
 * Interval times: an interval's own intervalPeriod (start, duration) wins field by field over
 * the event's; an interval without a start begins where the previous interval ended (the first
 * at the event's start), so an event's intervalPeriod with N intervals is N consecutive
 * periods. randomizeStart is read as zero (the earliest possible start). The fact id is
 * `<eventId>/<intervalId>`, or `<eventId>/<intervalId>/<type>` when one interval carries more
 * than one recognised payload.
 */
export function readEvent(raw: unknown, program: ProgramInfo | undefined, o: MapOptions): ReadEvent | UnreadableEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { error: 'an event is not a JSON object' };
  const e = raw as Record<string, unknown>;
  if (typeof e.id !== 'string' || !OBJECT_ID.test(e.id)) return { error: `an event has no usable id (${typeof e.id === 'string' ? JSON.stringify(e.id.slice(0, 40)) : kindOf(e.id)})` };
  const id = e.id;
  if (typeof e.programID !== 'string' || !OBJECT_ID.test(e.programID)) return { id, error: `event ${id}: programID is missing or not an object id` };
  const targets = readTargets(e.targets);
  if (targets === null) return { id, error: `event ${id}: targets is not an array` };
  if (e.intervals !== undefined && e.intervals !== null && !Array.isArray(e.intervals)) return { id, error: `event ${id}: intervals is not an array` };
  const period = e.intervalPeriod;
  if (period !== undefined && period !== null && (typeof period !== 'object' || Array.isArray(period))) return { id, error: `event ${id}: intervalPeriod is not an object` };
  const ep = (period ?? {}) as Record<string, unknown>;

  const out: ReadEvent = {
    id,
    programID: e.programID,
    version: `${typeof e.modificationDateTime === 'string' ? e.modificationDateTime : ''}|${typeof e.createdDateTime === 'string' ? e.createdDateTime : ''}`.slice(0, 200),
    targets,
    facts: [],
    problems: [],
    incomplete: false,
  };
  const note = (msg: string) => {
    if (out.problems.length < MAX_PROBLEMS) out.problems.push(msg);
  };
  const problem = (msg: string) => {
    out.incomplete = true;
    note(msg);
  };

  let priority: number | undefined;
  if (typeof e.priority === 'number' && Number.isInteger(e.priority) && e.priority >= 0) priority = Math.min(e.priority, 1000);
  else if (e.priority !== undefined && e.priority !== null) note(`event ${id}: priority ${JSON.stringify(e.priority)} is not an integer ≥ 0; left out`);

  const eventDescriptors = readDescriptors(e.payloadDescriptors);
  const unitsOf = (payloadType: string): string | undefined => eventDescriptors.get(payloadType) ?? program?.descriptors.get(payloadType) ?? o.unitsWhenMissing;
  // 0001-01-01 ("now"): the VTN's own times for the event, else when we first saw it.
  const nowStart = (): number | null => {
    for (const t of [e.modificationDateTime, e.createdDateTime]) {
      const v = parseDateTime(t);
      if (typeof v === 'number') return v;
    }
    return o.firstSeen ?? o.now;
  };
  const resolve = (v: StartTime | null): number | null => (v === 'now' ? nowStart() : v);

  const intervals = (e.intervals ?? []) as unknown[];
  if (intervals.length > o.maxIntervals) problem(`event ${id}: ${intervals.length} intervals; only the first ${o.maxIntervals} are read`);
  let cursor: number | null | undefined = ep.start === undefined || ep.start === null ? undefined : resolve(parseDateTime(ep.start));
  if (cursor === null) {
    problem(`event ${id}: intervalPeriod.start ${JSON.stringify(ep.start)} is not a date-time`);
    cursor = undefined;
  }
  const seen = new Set<number>();
  const n = Math.min(intervals.length, o.maxIntervals);
  for (let i = 0; i < n; i++) {
    const iv = intervals[i];
    if (typeof iv !== 'object' || iv === null || Array.isArray(iv)) {
      problem(`event ${id}: intervals[${i}] is not an object`);
      cursor = undefined;
      continue;
    }
    const it = iv as Record<string, unknown>;
    const ivId = it.id;
    if (typeof ivId !== 'number' || !Number.isInteger(ivId) || Math.abs(ivId) > 2 ** 31) {
      problem(`event ${id}: intervals[${i}].id is not an integer`);
      cursor = undefined;
      continue;
    }
    const own = it.intervalPeriod;
    if (own !== undefined && own !== null && (typeof own !== 'object' || Array.isArray(own))) {
      problem(`event ${id}: interval ${ivId}: intervalPeriod is not an object`);
      cursor = undefined;
      continue;
    }
    const ip = (own ?? {}) as Record<string, unknown>;
    // Times: own start, else where the previous interval ended (the event's start for the first).
    let start: number | null | undefined;
    if (ip.start !== undefined && ip.start !== null) start = resolve(parseDateTime(ip.start));
    else start = cursor;
    if (start === null || start === undefined) {
      problem(`event ${id}: interval ${ivId}: ${start === null ? `start ${JSON.stringify(ip.start)} is not a date-time` : 'no start (neither its own intervalPeriod nor the event\'s gives one, or it follows an open-ended interval)'}`);
      cursor = undefined;
      continue;
    }
    const durRaw = ip.duration ?? ep.duration;
    let end = NaN;
    let openEnded = false;
    if (durRaw === undefined || durRaw === null) openEnded = true;
    else {
      const d = parseDuration(durRaw);
      if (d === null || d.negative) {
        problem(`event ${id}: interval ${ivId}: duration ${JSON.stringify(durRaw)} is not an ISO 8601 duration ≥ 0`);
        cursor = undefined;
        continue;
      }
      openEnded = isZero(d) || d.years >= OPEN_ENDED_YEARS;
      end = openEnded ? NaN : addDuration(start, d);
      if (!openEnded && Number.isNaN(end)) openEnded = true;
    }
    if (openEnded) end = openEnd(start, o.now, o.openEndedMs);
    cursor = openEnded ? undefined : end;
    // The value domains (gslb/model/domains.ts, gslb/model/signals.ts): a fact outside them is
    // refused by the state layer, so it is refused here, by field, and counted.
    if (start < INSTANT_MIN || end > INSTANT_MAX) {
      problem(`event ${id}: interval ${ivId}: intervalPeriod ${start < INSTANT_MIN ? `start ${isoOf(start)}` : `start + duration (the end) ${isoOf(end)}`} is outside 2000-01-01 … 2200-01-01 (a broken clock, or seconds for ms?)`);
      continue;
    }
    if (end - start > MAX_EVENT_MS) {
      problem(`event ${id}: interval ${ivId}: duration ${JSON.stringify(durRaw)} makes it last ${Math.round((end - start) / 86_400_000)} days; at most ${MAX_EVENT_MS / 86_400_000} are taken`);
      continue;
    }
    if (end - o.now > MAX_VALIDITY_MS['grid.event']) {
      problem(`event ${id}: interval ${ivId}: intervalPeriod ends ${isoOf(end)}, more than ${MAX_VALIDITY_MS['grid.event'] / 86_400_000} days ahead; an event that far ahead is not taken (its start: ${isoOf(start)})`);
      continue;
    }
    if (seen.has(ivId)) {
      problem(`event ${id}: interval id ${ivId} appears twice; the later one is left out`);
      continue;
    }
    seen.add(ivId);
    if (end <= o.now) continue;

    // Payloads → facts.
    const payloads = Array.isArray(it.payloads) ? (it.payloads as unknown[]) : null;
    if (payloads === null) {
      problem(`event ${id}: interval ${ivId}: payloads is not an array`);
      continue;
    }
    const facts: EventFact[] = [];
    for (const p of payloads.slice(0, MAX_TARGETS)) {
      if (typeof p !== 'object' || p === null) continue;
      const { type, values } = p as { type?: unknown; values?: unknown };
      if (typeof type !== 'string') continue;
      const factType = Object.hasOwn(PAYLOAD_TYPES, type) ? PAYLOAD_TYPES[type] : undefined;
      if (factType === undefined || facts.some((f) => f.type === factType)) continue;
      const v = Array.isArray(values) ? (values as unknown[])[0] : undefined;
      const fact: EventFact = { id: '', start, end, type: factType };
      if (factType === 'simple') {
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3) {
          problem(`event ${id}: interval ${ivId}: SIMPLE value ${JSON.stringify(v) ?? 'missing'} is not an integer 0–3`);
          continue;
        }
        fact.level = v;
      } else if (factType === 'import-capacity-limit' || factType === 'dispatch-setpoint') {
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
          problem(`event ${id}: interval ${ivId}: ${type} value ${JSON.stringify(v) ?? 'missing'} is not a number ≥ 0`);
          continue;
        }
        const units = unitsOf(type);
        const unitKey = units?.trim().toUpperCase();
        const factor = unitKey !== undefined && Object.hasOwn(UNIT_FACTORS, unitKey) ? UNIT_FACTORS[unitKey] : undefined;
        if (factor === undefined) {
          problem(`event ${id}: interval ${ivId}: ${type} has ${units === undefined ? 'no units (no payloadDescriptor gives them; set unitsWhenMissing to assume some)' : `units ${JSON.stringify(units.slice(0, 20))}, not a power (W, KW, MW, GW)`}`);
          continue;
        }
        const w = round3(v * factor);
        if (!Number.isFinite(w) || w > MAX_WATTS) {
          problem(`event ${id}: interval ${ivId}: ${type} value ${v} ${unitKey} is ${Number.isFinite(w) ? `${w} W, above ${MAX_WATTS} (10 TW, MAX_WATTS): a unit mistake?` : 'out of range'}`);
          continue;
        }
        fact.limitW = w;
      }
      if (priority !== undefined) fact.priority = priority;
      if (program) fact.program = program.name;
      facts.push(fact);
    }
    for (const f of facts) f.id = facts.length === 1 ? `${id}/${ivId}` : `${id}/${ivId}/${f.type}`;
    out.facts.push(...facts);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Notifications

/** The notification operations of 3.0.1 (HTTP verbs) and 3.1 (CRUD words). */
export const NOTIFICATION_OPERATIONS = ['GET', 'POST', 'PUT', 'DELETE', 'CREATE', 'READ', 'UPDATE'] as const;
export const OBJECT_TYPES = ['PROGRAM', 'EVENT', 'REPORT', 'SUBSCRIPTION', 'VEN', 'RESOURCE'] as const;

/** A notification as far as this collector reads it: it only decides whether to poll now. */
export interface Notification {
  objectType: (typeof OBJECT_TYPES)[number];
  operation: (typeof NOTIFICATION_OPERATIONS)[number];
  /** The object's id, if it has a readable one (for the log only; the body is not trusted). */
  objectId?: string;
}

/** Reads a notification body (either spelling); a string saying what is wrong otherwise. */
export function readNotification(raw: unknown): Notification | string {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'the notification is not a JSON object';
  const n = raw as Record<string, unknown>;
  if (typeof n.objectType !== 'string' || !(OBJECT_TYPES as readonly string[]).includes(n.objectType)) return `objectType must be one of ${OBJECT_TYPES.join(', ')}`;
  if (typeof n.operation !== 'string' || !(NOTIFICATION_OPERATIONS as readonly string[]).includes(n.operation)) return `operation must be one of ${NOTIFICATION_OPERATIONS.join(', ')} (3.0.1 or 3.1 spelling)`;
  if (typeof n.object !== 'object' || n.object === null || Array.isArray(n.object)) return 'object must be a JSON object';
  const oid = (n.object as { id?: unknown }).id;
  return {
    objectType: n.objectType as Notification['objectType'],
    operation: n.operation as Notification['operation'],
    ...(typeof oid === 'string' && OBJECT_ID.test(oid) ? { objectId: oid } : {}),
  };
}

/** Whether a notification says that events may have changed (a write on an event or a program). */
export function notificationWantsPoll(n: Notification): boolean {
  return (n.objectType === 'EVENT' || n.objectType === 'PROGRAM') && n.operation !== 'GET' && n.operation !== 'READ';
}
