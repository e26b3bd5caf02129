/**
 * The drain curve of one obligation (a grid event, an alert, an operator drain with a
 * deadline): the cap it puts on a region over time, as absolute-time steps
 * (docs/design.md "The drain curve", docs/adr/0007-proactive-drain.md). Pure: no clock.
 *
 *   g     = max(Tmin, F)                       spacing of steps (a resolver clamping to F
 *                                              still sees every step)
 *   reach = T − S − g − m                      the cap is reached: cached answers expire by
 *                                              T − S − m, sessions get S to finish
 *   S     = clamp(T − L − (max(R, TTL0 − g)    S grows with the notice (L = learned), so long
 *                 + g + m), sessionAllowance,  streams end on their own before T
 *                 …Max)
 *   start = reach − R                          first ramp step
 *   lead  = max(R, TTL0 − g) + g + S + m       answers' TTLs start shrinking at T − lead: the
 *                                              shrink overlaps the ramp (ADR 0016; decide
 *                                              bounds a TTL by the next step)
 *
 * Learned late (L > T − lead): the notice missing is reported as the shortfall, answers get
 * Tmin from L until T, and the ramp is compressed into [L, reach] (at once when that leaves
 * less than one step, or when L ≥ reach). After the end E — or after the fact changed or was
 * cancelled at U — the cap reached holds for `holdMs` (hysteresis), then ramps back to 1 over
 * `restoreMs` in steps g apart.
 */
import type { DrainSettings } from './settings.js';
import { isoOf } from '../model/domains.js';

export interface CurveInput {
  /** The obligation's start T and end E (Infinity = open-ended), ms epoch. */
  start: number;
  end: number;
  /** When it was learned (L), ms epoch. */
  learnedAt: number;
  /** The cap to reach, [0, 1) (0 = full drain). */
  cap: number;
  /** The obligation stopped holding here (its content changed or it was cancelled), ms epoch. */
  until?: number;
  /** TTL0 of the region's names, s. */
  ttl0S: number;
  /** R for this obligation (an operator's ramp), ms; default the settings'. */
  rampMs?: number;
  /** A grid obligation (with cap 0: to take nothing): S may grow to sessionAllowanceMaxMs. */
  gridDrain?: boolean;
}

export type CurvePhase = 'before' | 'ramp' | 'ahead' | 'event' | 'hold' | 'restore' | 'done';

export interface CurvePoint {
  cap: number;
  phase: CurvePhase;
  /** Step k of n of the ramp or the restore. */
  k?: number;
  n?: number;
}

export interface DrainCurve {
  input: CurveInput;
  /** The first ramp step (after compression), the instant the cap is reached, ms epoch. */
  rampStart: number;
  reach: number;
  /**
   * A drain to 0: new connections and streams are refused from here, reach + max(Tmin, F) + m
   * (= T − S with notice in time: no cached answer can still name the region), at the latest
   * T; between reach and here the gateway sends GOAWAY to its connections progressively.
   */
  refuseAt: number;
  /** T − lead: when answers' TTLs begin to shrink. */
  noticeStart: number;
  /** Notice missing, ms (0 = learned in time). */
  shortfallMs: number;
  /** When the obligation stops holding: min(E, until). */
  endAt: number;
  /** The cap in force when it stopped holding (what the restore starts from). */
  endLevel: number;
  /** Every instant at which the cap or the phase changes. */
  instants: number[];
  at(t: number): CurvePoint;
}

const round = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 10000) / 10000;

export function stepSpacingMs(d: DrainSettings): number {
  return Math.max(1000, Math.max(d.minTtlS, d.resolverFloorS) * 1000);
}

/**
 * From the notice to the instant the weight may reach 0, at the least, ms: the ramp R, and
 * long enough for an answer cached just before the notice (TTL0) to have expired by the
 * time the last one given during the ramp has (reach + g). The TTL shrink overlaps the ramp:
 * from the notice on every answer's TTL runs to the next step, and what was cached before
 * it only blurs the first step (ADR 0016). With notice to spare the shrink comes first, TTL0
 * ahead of the ramp, and the steps are sharp.
 */
function toReachMs(ttl0S: number, R: number, g: number): number {
  return Math.max(R, ttl0S * 1000 - g);
}

/**
 * S's maximum: a grid obligation to take nothing cuts what is still running at T, so S may grow
 * to the longest sessions (`sessionAllowanceMaxMs`); every other curve — a grid cap above 0 cuts
 * nothing, a window's or an operator's drain is at a time they chose — grows S only to
 * `discretionarySessionAllowanceMaxMs` (ADR 0016).
 */
export function sessionAllowanceMax(d: DrainSettings, gridDrain: boolean): number {
  return Math.max(d.sessionAllowanceMs, gridDrain ? d.sessionAllowanceMaxMs : Math.min(d.sessionAllowanceMaxMs, d.discretionarySessionAllowanceMaxMs));
}

/**
 * The drain lead, ms: the notice a drain to `cap` needs for S at its minimum — the shortest
 * notice at which no answer names the region once sessions are to be left to end.
 * max(R, TTL0 − g) + g + S + m.
 */
export function drainLeadMs(d: DrainSettings, ttl0S: number, rampMs: number = d.rampMs): number {
  const g = stepSpacingMs(d);
  return toReachMs(ttl0S, Math.max(0, rampMs), g) + g + d.sessionAllowanceMs + d.marginMs;
}

export function drainCurve(i: CurveInput, d: DrainSettings): DrainCurve {
  const g = stepSpacingMs(d);
  const R = Math.max(0, i.rampMs ?? d.rampMs);
  const m = d.marginMs;
  const T = i.start;
  const L = i.learnedAt;
  const toReach = toReachMs(i.ttl0S, R, g);
  // S grows with the notice beyond what the rest of the lead needs, up to its maximum.
  const S = Math.min(sessionAllowanceMax(d, i.gridDrain === true && i.cap === 0), Math.max(d.sessionAllowanceMs, T - L - (toReach + g + m)));
  const reach0 = T - S - g - m;
  const start0 = reach0 - R;
  const noticeStart = reach0 - toReach;
  const shortfallMs = Math.max(0, L - noticeStart);
  const a = Math.max(L, start0);
  const b = Math.max(L, reach0);
  // Ramp steps: n steps from a to b, g or more apart, the last one reaching the cap at b.
  const n = b - a >= g ? Math.floor((b - a) / g) + 1 : 1;
  const rampAt: number[] = [];
  // One step (no room for two, or no ramp): at once at a.
  for (let k = 1; k <= n; k++) rampAt.push(n === 1 ? a : a + Math.round(((k - 1) * (b - a)) / (n - 1)));
  const capAfter = (k: number) => round(1 - ((1 - i.cap) * k) / n);
  const endAt = Math.min(i.end, i.until ?? Infinity);

  /** The cap before any end: ramp, then held. */
  const raw = (t: number): CurvePoint => {
    if (t < rampAt[0]!) return { cap: 1, phase: 'before' };
    let k = 0;
    while (k < n && rampAt[k]! <= t) k++;
    if (k < n) return { cap: capAfter(k), phase: 'ramp', k, n };
    return { cap: round(i.cap), phase: t >= T ? 'event' : n > 1 ? 'ahead' : 'ramp', ...(n > 1 ? {} : { k: 1, n: 1 }) };
  };
  const endLevel = endAt === Infinity ? round(i.cap) : raw(endAt - 1).cap;
  const holdEnd = endAt + d.holdMs;
  const nr = d.restoreMs > 0 ? Math.max(1, Math.floor(d.restoreMs / g)) : 1;
  const restoreAt: number[] = [];
  for (let k = 1; k <= nr; k++) restoreAt.push(holdEnd + Math.round((k * d.restoreMs) / nr));

  const at = (t: number): CurvePoint => {
    if (t < endAt) return raw(t);
    if (endLevel >= 1) return { cap: 1, phase: 'done' };
    if (t < holdEnd) return { cap: endLevel, phase: 'hold' };
    if (d.restoreMs <= 0) return { cap: 1, phase: 'done' };
    let k = 0;
    while (k < nr && restoreAt[k]! <= t) k++;
    if (k >= nr) return { cap: 1, phase: 'done' };
    return { cap: round(endLevel + ((1 - endLevel) * k) / nr), phase: 'restore', k, n: nr };
  };

  const instants = new Set<number>([...rampAt, T, L, Math.min(T, rampAt[n - 1]! + g + m)]);
  if (Number.isFinite(endAt)) {
    instants.add(endAt);
    instants.add(holdEnd);
    for (const r of restoreAt) instants.add(r);
  }
  return {
    input: i,
    rampStart: rampAt[0]!,
    reach: rampAt[n - 1]!,
    refuseAt: Math.min(T, rampAt[n - 1]! + g + m),
    noticeStart,
    shortfallMs,
    endAt,
    endLevel,
    instants: [...instants].filter((x) => Number.isFinite(x)).sort((x, y) => x - y),
    at,
  };
}

/** Words for a curve's point, e.g. "ramp step 2/5 toward 0 by 2026-…". */
const isoCache = new Map<number, string>();
/** ISO 8601 of an instant, cached (the planner words the same few instants at every step). */
function iso(t: number): string {
  let v = isoCache.get(t);
  if (v === undefined) {
    if (isoCache.size > 4096) isoCache.clear();
    isoCache.set(t, (v = isoOf(t)));
  }
  return v;
}

export function curveWords(c: DrainCurve, p: CurvePoint): string {
  const T = iso(c.input.start);
  switch (p.phase) {
    case 'ramp':
      return p.n === 1 ? `at once (ahead of ${T})` : `ramp step ${p.k}/${p.n} toward ${round(c.input.cap)} ahead of ${T}`;
    case 'ahead':
      return `drained ahead of ${T} (reached at ${iso(c.reach)})`;
    case 'event':
      return `in force since ${T}`;
    case 'hold':
      return `held after its end at ${iso(c.endAt)} (hysteresis)`;
    case 'restore':
      return `restoring after its end at ${iso(c.endAt)}, step ${p.k}/${p.n}`;
    default:
      return '';
  }
}
