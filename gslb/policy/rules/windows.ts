/**
 * Recurring windows (issue 21, docs/schedules.md, ADR 0015): each window's occurrences over
 * the horizon of an explicit epoch, and the rule that caps a region during them with the
 * drain curve of any obligation (drain.ts: TTLs shrink ahead, the ramp ends before the start,
 * the hold and the restore after the end; the drain hook follows the plan's steps).
 *
 * Where windows rank (decided in issue 21, so every rule agrees):
 * - maintenance: at the operator drain's rank (this rule runs right after the operator rule);
 *   a window that would exceed the automation's safety limits was confirmed with `force`;
 * - tariff: a grid obligation: it lowers gridPolicy's share (ViewAcc.auto, which the automation
 *   limits read: rules/limits.ts), so the safety pass's floors and the operator's freeze apply to it;
 * - practice: automation, like tariff (every safety limit applies).
 *
 * The horizon: epoch E = floor(now / HORIZON_MS) is a plan input (PlanInput.horizonEpoch) the
 * control loop passes and advances; occurrences are those starting in
 * [E·H − longest duration − drain lead − hold − restore, (E + 2)·H], found minute by minute
 * from that explicit start (cron.ts), never from a clock: every node finds the same instants,
 * and a node restarted mid-window is in it.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { RegionId } from '../../model/types.js';
import type { PlannerWindow, WindowKind, WindowOccurrence } from '../../model/windows.js';
import { cronMatches, localDate } from '../cron.js';
import { curveWords, drainCurve, sessionAllowanceMax, stepSpacingMs } from '../drain.js';
import { type PlannerSettings, round } from '../settings.js';
import { type ViewAcc, type ViewRule, automationCap, capText, capTtl, capWords, refuseNew } from './rule.js';
import type { RegionWindow } from './shared.js';
import { isoOf } from '../../model/domains.js';

/** H: the horizon epoch's length, ms (a day). */
export const HORIZON_MS = 86_400_000;

/** An operator's skip of one occurrence (gridsteer windows skip-next): the window and the occurrence's start. */
export interface WindowSkip {
  window: string;
  at: number;
  why: string;
}

export interface WindowExpansion {
  epoch: number;
  /** The range scanned: occurrences starting in [from, to). */
  from: number;
  to: number;
  /** Every occurrence in the range, skipped ones with why; by start, then window id. */
  occurrences: WindowOccurrence[];
  /** Per region, the occurrences acting on it. */
  byRegion: Map<RegionId, RegionWindow[]>;
  /** Per region, a key of what acts on it (the plan's reuse compares it: planner/memo.ts). */
  keys: Map<RegionId, string>;
  /** Practice runs not skipped yet: whether each runs is the practice pass's (rules/practice.ts), which sees every region's schedule. */
  practice: PendingPractice[];
}

/** A practice run's occurrence awaiting the practice pass: `occ` is the one listed in `occurrences`. */
export interface PendingPractice {
  occ: WindowOccurrence;
  learnedAt: number;
  minCapacityLeft: number;
}

/** One region's window with its drain curve and words (the practice pass makes them for the runs it lets go). */
export function regionWindow(o: WindowOccurrence, learnedAt: number, ttl0S: number, s: PlannerSettings, until?: number): RegionWindow {
  const curve = drainCurve({ start: o.start, end: o.end, learnedAt, cap: o.cap, ttl0S, ...(until !== undefined ? { until } : {}) }, s.drain);
  return { occ: o, curve, words: `${KIND_WORDS[o.kind]} ${o.window} (${o.reason}), ${iso(o.start)}–${iso(o.end)}` };
}

const KIND_WORDS: Record<WindowKind, string> = { maintenance: 'maintenance window', tariff: 'tariff window', practice: 'practice run' };

const iso = isoOf;

/** The lead and tail of a drain curve, at most, over the fleet: how far before its start and after its end an occurrence acts. */
function curveReach(s: PlannerSettings): number {
  const d = s.drain;
  const ttl0 = Math.max(d.ttl0S, ...s.regions.map((r) => r.ttl0S ?? 0));
  // At most: TTL0's shrink, then the ramp, with S at its largest (a drain to 0).
  const lead = ttl0 * 1000 + d.rampMs + stepSpacingMs(d) + sessionAllowanceMax(d, false) + d.marginMs;
  return lead + d.holdMs + d.restoreMs;
}

/** The range the horizon epoch E scans: [E·H − longest duration − curve reach, (E + 2)·H). */
export function horizonRange(epoch: number, windows: readonly PlannerWindow[], s: PlannerSettings): { from: number; to: number } {
  const longest = Math.max(0, ...windows.map((w) => w.durationMs));
  return { from: epoch * HORIZON_MS - longest - curveReach(s), to: (epoch + 2) * HORIZON_MS };
}

/**
 * Every window's occurrences over the horizon of epoch E. An occurrence starts where the
 * window's cron expression matches (cron.ts: a skipped wall time never, a repeated one once)
 * and lasts durationMs; none starts on a blocked date or outside from/until (dates in the
 * window's time zone); an operator's skip keeps it listed, not acting. Occurrences of one
 * window that overlap act as one (from the first start to the last end). Windows of
 * different ids that overlap each act: caps combine by minimum.
 */
export function expandWindows(windows: readonly PlannerWindow[], skips: readonly WindowSkip[], epoch: number, s: PlannerSettings): WindowExpansion {
  const { from, to } = horizonRange(epoch, windows, s);
  const occurrences: WindowOccurrence[] = [];
  const acting: WindowOccurrence[] = [];
  const practice: PendingPractice[] = [];
  /** When each acting occurrence's window was learned (config windows: known before any occurrence, -Infinity). */
  const learned = new Map<WindowOccurrence, number>();
  const regionIds = new Set(s.regions.map((r) => r.id));
  for (const w of windows) {
    const mine: WindowOccurrence[] = [];
    for (const m of cronMatches(w.fields, w.timezone, from, to)) {
      const date = localDate(m.local);
      if ((w.from !== undefined && date < w.from) || (w.until !== undefined && date > w.until)) continue;
      const occ: WindowOccurrence = { window: w.id, kind: w.kind, regions: w.regions.filter((r) => regionIds.has(r)), start: m.at, end: m.at + w.durationMs, cap: round(w.cap), reason: w.reason, source: w.source };
      const skip = skips.find((k) => k.window === w.id && k.at === m.at);
      if (w.blockedDates.includes(date)) occ.skipped = `blocked date ${date} (${w.timezone})`;
      else if (skip) occ.skipped = skip.why;
      occurrences.push(occ);
      if (occ.skipped !== undefined) continue;
      if (w.kind === 'practice') {
        practice.push({ occ, learnedAt: w.learnedAt ?? -Infinity, minCapacityLeft: w.minCapacityLeft ?? 0.5 });
        continue;
      }
      const last = mine[mine.length - 1];
      if (last && occ.start < last.end) last.end = Math.max(last.end, occ.end);
      else mine.push({ ...occ });
    }
    for (const o of mine) {
      acting.push(o);
      learned.set(o, w.learnedAt ?? -Infinity);
    }
  }
  occurrences.sort((a, b) => a.start - b.start || (a.window < b.window ? -1 : a.window > b.window ? 1 : 0));
  const byRegion = new Map<RegionId, RegionWindow[]>();
  const keys = new Map<RegionId, string>();
  for (const region of s.regions) {
    const list: RegionWindow[] = [];
    for (const o of acting) {
      if (!o.regions.includes(region.id)) continue;
      list.push(regionWindow(o, learned.get(o)!, region.ttl0S ?? s.drain.ttl0S, s));
    }
    if (list.length === 0) continue;
    byRegion.set(region.id, list);
    keys.set(region.id, JSON.stringify(list.map((x) => [x.occ.window, x.occ.kind, x.occ.start, x.occ.end, x.occ.cap, x.occ.reason, x.curve.input.learnedAt])));
  }
  return { epoch, from, to, occurrences, byRegion, keys, practice };
}

/** The instants at which a region's windows change what they set. */
export function windowInstants(ws: readonly RegionWindow[] | undefined, at: (t: number) => void): void {
  if (!ws) return;
  for (const w of ws) for (const t of w.curve.instants) at(t);
}

/** The windows rule (see the module's comment for where each kind ranks). */
export const windowsRule: ViewRule = {
  name: 'recurring windows',
  module: 'rules/windows.ts',
  kinds: [],
  reads: 'recurring windows (windows: in the config, and those added through the API) expanded over the horizon epoch the control loop passes; operators\' skips',
  changesAt: "each occurrence's drain curve: the ramp ahead of its start, its start and end, the hold, each restore step",
  sets: 'maintenance: cap at the operator drain\'s rank, refuse (a drain to 0 in force); tariff and practice: gridPolicy\'s share (the automation limits apply the safety floor and the freeze to it), refuse on automation\'s word; TTL cap (an API window added later than its lead)',
  instants(x, at): void {
    windowInstants(x.ctx.windows?.get(x.region.id), at);
  },
  apply(a: ViewAcc): void {
    const ws = a.ctx.windows?.get(a.region.id);
    if (!ws) return;
    const t = a.t;
    const id = a.region.id;
    const texts = a.ctx.texts;
    for (const rw of ws) {
      const c = rw.curve;
      const o = rw.occ;
      if (c.shortfallMs > 0 && t >= c.input.learnedAt && t < o.start) {
        capTtl(a, a.s.drain.minTtlS, `${id}: ${rw.words} was added ${Math.round(c.shortfallMs / 1000)} s later than the lead it needs: TTL ${a.s.drain.minTtlS} s until it starts`);
      }
      const p = c.at(t);
      if (p.cap >= 1) continue;
      const variant = `${p.phase}|${p.k ?? 0}|${p.cap}`;
      const text = texts.get(rw, variant) ?? texts.put(rw, variant, capWords(id, p.cap, `${rw.words}: ${curveWords(c, p)}`));
      const inWindow = t >= o.start && t < c.endAt;
      if (o.kind === 'maintenance') {
        capText(a, p.cap, text);
        if (o.cap === 0 && inWindow) refuseNew(a, rw.words);
      } else {
        automationCap(a, p.cap, text);
        if (o.cap === 0 && inWindow) refuseNew(a, rw.words, true);
      }
    }
  },
};

/** The last expansion made per settings object (settings are never changed in place): plans every 10 s reuse it. */
const expansions = new WeakMap<PlannerSettings, { key: string; x: WindowExpansion }>();

/** expandWindows, reused while the settings, the API's windows, the skips and the epoch are the same. */
export function windowExpansion(s: PlannerSettings, windows: readonly PlannerWindow[], skips: readonly WindowSkip[], epoch: number): WindowExpansion {
  const key = `${epoch}\n${JSON.stringify(windows)}\n${JSON.stringify(skips)}`;
  const last = expansions.get(s);
  if (last && last.key === key) return last.x;
  const x = expandWindows(windows, skips, epoch, s);
  expansions.set(s, { key, x });
  return x;
}

/**
 * A window's next `count` occurrences from `from` on (one in progress at `from` included),
 * each with why it is skipped, if it is (a blocked date, an operator's skip); outside
 * from/until none. Looks at most `maxDays` ahead (a window that starts less often lists
 * fewer). For listings and `skip-next`; the plan itself uses expandWindows over its horizon.
 */
export function nextOccurrences(w: PlannerWindow, skips: readonly WindowSkip[], from: number, count: number, maxDays = 62): WindowOccurrence[] {
  const out: WindowOccurrence[] = [];
  const chunk = 7 * HORIZON_MS;
  for (let t = from - w.durationMs; out.length < count && t < from + maxDays * HORIZON_MS; t += chunk) {
    for (const m of cronMatches(w.fields, w.timezone, t, t + chunk)) {
      if (m.at + w.durationMs <= from) continue;
      const date = localDate(m.local);
      if ((w.from !== undefined && date < w.from) || (w.until !== undefined && date > w.until)) continue;
      const occ: WindowOccurrence = { window: w.id, kind: w.kind, regions: [...w.regions], start: m.at, end: m.at + w.durationMs, cap: round(w.cap), reason: w.reason, source: w.source };
      const skip = skips.find((k) => k.window === w.id && k.at === m.at);
      if (w.blockedDates.includes(date)) occ.skipped = `blocked date ${date} (${w.timezone})`;
      else if (skip) occ.skipped = skip.why;
      out.push(occ);
      if (out.length >= count) break;
    }
  }
  return out;
}
