/**
 * Matching a parsed cron expression against instants in a time zone, minute by minute from an
 * explicit start: the planner's side of recurring windows (ADR 0015). The expression is
 * parsed and validated by node-cron at the edge (gslb/config/windows.ts); this module is its
 * match() — the same rules as node-cron 4's TimeMatcher (a day matches when its
 * day-of-month AND its day-of-week match; L, L-n, nW, LW in day-of-month; nL and n#k in
 * day-of-week) — over plain data, because the pure core may not import node-cron (its module
 * schedules timers and forks). gslb/policy/cron.test.ts checks it against node-cron's own
 * match() on every minute of days with DST changes.
 *
 * Pure: no clock reads (time is an argument), no I/O. Local time comes from Intl (the Node
 * build's tz data, whose version is part of the config hash).
 */
import type { CronFields } from '../model/windows.js';

const MINUTE = 60_000;
/** Offsets change only at whole quarter hours (every zone in use today): a block's offset is read once. */
const BLOCK = 15 * MINUTE;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', hourCycle: 'h23' });
    formatters.set(tz, f);
  }
  return f;
}

/** The zone's offset from UTC at instant t, ms (local wall time = t + offset). */
export function offsetAt(tz: string, t: number): number {
  let y = 0;
  let mo = 0;
  let d = 0;
  let h = 0;
  let mi = 0;
  let s = 0;
  for (const p of formatter(tz).formatToParts(t)) {
    const v = Number(p.value);
    switch (p.type) {
      case 'year':
        y = v;
        break;
      case 'month':
        mo = v;
        break;
      case 'day':
        d = v;
        break;
      case 'hour':
        h = v === 24 ? 0 : v;
        break;
      case 'minute':
        mi = v;
        break;
      case 'second':
        s = v;
        break;
    }
  }
  const whole = t - (((t % 1000) + 1000) % 1000);
  return Date.UTC(y, mo - 1, d, h, mi, s) - whole;
}

/** Wall-clock parts of a local instant (ms as if UTC). */
export interface LocalParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  weekday: number;
}

export function localParts(local: number): LocalParts {
  const d = new Date(local);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), weekday: d.getUTCDay() };
}

/** YYYY-MM-DD of a local instant. */
export function localDate(local: number): string {
  return new Date(local).toISOString().slice(0, 10);
}

function lastDayOfMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function nearestWeekday(year: number, month: number, target: number): number {
  const last = lastDayOfMonth(year, month);
  if (target < 1 || target > last) return -1;
  const wd = new Date(Date.UTC(year, month - 1, target)).getUTCDay();
  if (wd === 6) return target === 1 ? target + 2 : target - 1;
  if (wd === 0) return target === last ? target - 2 : target + 1;
  return target;
}

const WEEKDAY_TOKEN = /^(\d{1,2}|L)W$/;
const LAST_OFFSET_TOKEN = /^L-(\d{1,2})$/;
const LAST_WEEKDAY = /^([0-7])L$/i;
const NTH_WEEKDAY = /^([0-7])#([1-5])$/;

function dayOfMonthMatches(field: readonly (number | string)[], year: number, month: number, day: number): boolean {
  for (const v of field) {
    if (v === day) return true;
    if (typeof v !== 'string') continue;
    if (v === 'L' && day === lastDayOfMonth(year, month)) return true;
    const w = WEEKDAY_TOKEN.exec(v);
    if (w) {
      const target = w[1] === 'L' ? lastDayOfMonth(year, month) : Number(w[1]);
      if (nearestWeekday(year, month, target) === day) return true;
    }
    const o = LAST_OFFSET_TOKEN.exec(v);
    if (o) {
      const target = lastDayOfMonth(year, month) - Number(o[1]);
      if (target >= 1 && target === day) return true;
    }
  }
  return false;
}

function dayOfWeekMatches(field: readonly (number | string)[], year: number, month: number, day: number, weekday: number): boolean {
  for (const v of field) {
    if (v === weekday) return true;
    if (typeof v !== 'string') continue;
    const n = NTH_WEEKDAY.exec(v);
    if (n) {
      if (Number(n[1]) % 7 === weekday && Math.floor((day - 1) / 7) + 1 === Number(n[2])) return true;
      continue;
    }
    const l = LAST_WEEKDAY.exec(v);
    if (l && Number(l[1]) % 7 === weekday && day + 7 > lastDayOfMonth(year, month)) return true;
  }
  return false;
}

/** Whether the fields match these wall-clock parts (seconds are not looked at: windows start on whole minutes). */
export function fieldsMatch(f: CronFields, p: LocalParts): boolean {
  return (
    f.minute.includes(p.minute) &&
    f.hour.includes(p.hour) &&
    f.month.includes(p.month) &&
    dayOfMonthMatches(f.dayOfMonth, p.year, p.month, p.day) &&
    dayOfWeekMatches(f.dayOfWeek, p.year, p.month, p.day, p.weekday)
  );
}

/**
 * The instants in [from, to) — on whole UTC minutes, which are whole local minutes in every
 * zone in use — at which the expression matches in `tz`, each with its local wall time.
 * A wall time repeated by a fall-back change matches once, at its first instant (node-cron's
 * scheduler runs the repeated hour once); a wall time skipped by a spring-forward change does
 * not occur, so it never matches.
 */
export function cronMatches(f: CronFields, tz: string, from: number, to: number): { at: number; local: number }[] {
  const out: { at: number; local: number }[] = [];
  const seen = new Set<number>();
  // Scanned from 2 h earlier (the largest DST shift in use), so that a wall time whose first
  // instant lies before `from` is not taken at its repeat after it: every range agrees.
  let t = Math.ceil((from - 2 * 3_600_000) / MINUTE) * MINUTE;
  // Quick reject per local day: the month, day-of-month and day-of-week fields.
  let dayKey = NaN;
  let dayOk = false;
  while (t < to) {
    const blockEnd = Math.min(to, (Math.floor(t / BLOCK) + 1) * BLOCK);
    const off0 = offsetAt(tz, t);
    const exact = offsetAt(tz, blockEnd - MINUTE) === off0;
    for (; t < blockEnd; t += MINUTE) {
      const local = t + (exact ? off0 : offsetAt(tz, t));
      const day = Math.floor(local / 86_400_000);
      if (day !== dayKey) {
        dayKey = day;
        const p = localParts(local);
        dayOk = f.month.includes(p.month) && dayOfMonthMatches(f.dayOfMonth, p.year, p.month, p.day) && dayOfWeekMatches(f.dayOfWeek, p.year, p.month, p.day, p.weekday);
      }
      if (!dayOk) continue;
      const minOfDay = Math.floor((local % 86_400_000) / MINUTE);
      if (!f.hour.includes(Math.floor(minOfDay / 60)) || !f.minute.includes(minOfDay % 60)) continue;
      if (seen.has(local)) continue;
      seen.add(local);
      if (t >= from) out.push({ at: t, local });
    }
  }
  return out;
}

/** Whether the expression matches the whole minute at instant t in `tz` (node-cron's match(), seconds aside): the reference cronMatches follows, repeats and all. */
export function matchesAt(f: CronFields, tz: string, t: number): boolean {
  return fieldsMatch(f, localParts(t + offsetAt(tz, t)));
}
