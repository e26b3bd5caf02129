/**
 * Operator overrides as caps over time: drain (with or without a deadline's curve), undrain, weight; and the instants at which each changes.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { Override, RegionId } from '../../model/types.js';
import { curveWords, drainCurve, type DrainCurve } from '../drain.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';
import { type ViewAcc, type ViewRule, capWhy, refuseNew } from './rule.js';
import { isoOf } from '../../model/domains.js';

/**
 * The curve of an operator drain with a deadline (`by`): planned like a grid event starting
 * at `by`, learned when the drain was asked for.
 */
const deadlineCurves = new WeakMap<PlannerSettings, WeakMap<Override, DrainCurve>>();

function deadlineCurve(o: Override, region: PlannerRegion, s: PlannerSettings): DrainCurve | undefined {
  if (o.action !== 'drain' || o.by === undefined) return undefined;
  // Asked for at every instant of the region's schedule: made once per (settings, override).
  let bySettings = deadlineCurves.get(s);
  if (!bySettings) deadlineCurves.set(s, (bySettings = new WeakMap()));
  let c = bySettings.get(o);
  if (!c) bySettings.set(o, (c = newDeadlineCurve(o, o.by, region, s)));
  return c;
}

function newDeadlineCurve(o: Override, by: number, region: PlannerRegion, s: PlannerSettings): DrainCurve {
  return drainCurve(
    { start: by, end: o.end ?? Infinity, learnedAt: o.start, cap: o.value ?? 0, ttl0S: region.ttl0S ?? s.drain.ttl0S, ...(o.ramp > 0 ? { rampMs: o.ramp } : {}) },
    s.drain,
  );
}

/** Steps of an immediate ramp of length `ramp` from `start`: n steps, rampStepMs apart or more. */
function rampSteps(ramp: number, rampStepMs: number): number {
  return ramp > 0 ? Math.max(1, Math.ceil(ramp / rampStepMs)) : 1;
}

/**
 * The cap operator drain/undrain/weight overrides leave at t (1 = none), with its words, and
 * whether the gateway should refuse new streams (a drain to 0 past its deadline).
 * The latest-starting drain or undrain in force decides; weight overrides combine by minimum.
 * - drain without `by`: ramps from `start` to `value` over `ramp`;
 * - drain with `by`: the deadline's curve (the ramp ends before `by`, docs/design.md "The drain curve");
 * - undrain: ramps from `value` (the level the drain had reached) back to 1 over `ramp`.
 */
/** operatorCap with no override (shared: never written to). */
const NO_OPERATOR_CAP: { cap: number; why: string | null; refuse: boolean } = Object.freeze({ cap: 1, why: null, refuse: false });

export function operatorCap(region: PlannerRegion, overrides: Override[], t: number, s: PlannerSettings): { cap: number; why: string | null; refuse: boolean; goaway?: number } {
  if (overrides.length === 0) return NO_OPERATOR_CAP;
  let drainish: Override | undefined;
  let cap = 1;
  let why: string | null = null;
  for (const o of overrides) {
    if (o.start > t) continue;
    const curve = deadlineCurve(o, region, s);
    // A drain with a deadline keeps acting after its end while it holds and restores.
    const over = o.end !== undefined && t >= o.end;
    if (over && !(curve && curve.at(t).cap < 1)) continue;
    if (o.action === 'drain' || o.action === 'undrain') {
      if (!drainish || o.start > drainish.start || (o.start === drainish.start && o.id > drainish.id)) drainish = o;
    } else if (o.action === 'weight' && o.value !== undefined && o.value < cap) {
      cap = o.value;
      why = `weight ${o.value} by ${o.actor} (${o.reason}) [${o.id}]`;
    }
  }
  let refuse = false;
  let goaway: number | undefined;
  if (drainish && drainish.action === 'drain') {
    const target = drainish.value ?? 0;
    const curve = deadlineCurve(drainish, region, s);
    let c: number;
    let how: string;
    if (curve) {
      const p = curve.at(t);
      c = p.cap;
      how = `by ${isoOf(drainish.by!)}${p.cap < 1 ? `: ${curveWords(curve, p).replace(/ ahead of .*$/, '')}` : ''}`;
      // The drain-hook contract, as for a grid drain: GOAWAY from the instant the weight reaches 0, new streams refused from T − S.
      if (target === 0 && (drainish.end === undefined || t < drainish.end)) {
        if (t >= curve.refuseAt) refuse = true;
        else if (t >= curve.reach) goaway = curve.refuseAt;
      }
      if (curve.shortfallMs > 0 && t < drainish.by!) how += ` (asked ${Math.round(curve.shortfallMs / 1000)} s later than the lead it needs)`;
    } else {
      const n = rampSteps(drainish.ramp, s.rampStepMs);
      const k = Math.min(n, Math.floor(((t - drainish.start) * n) / Math.max(1, drainish.ramp)) + 1);
      c = round(1 - ((1 - target) * k) / n);
      how = n > 1 ? `ramp step ${k}/${n}` : '';
    }
    if (c < cap) {
      cap = c;
      why = `drain to ${target} by ${drainish.actor} (${drainish.reason})${how ? `, ${how}` : ''} [${drainish.id}]`;
    }
  } else if (drainish && drainish.action === 'undrain' && drainish.value !== undefined && drainish.value < 1) {
    const from = drainish.value;
    const n = rampSteps(drainish.ramp, s.rampStepMs);
    const k = Math.min(n, Math.floor(((t - drainish.start) * n) / Math.max(1, drainish.ramp)) + 1);
    const c = round(from + ((1 - from) * k) / n);
    if (c < cap) {
      cap = c;
      why = `undrain by ${drainish.actor} (${drainish.reason}), slow start from ${from}, step ${k}/${n} [${drainish.id}]`;
    }
  }
  return { cap, why, refuse, ...(goaway !== undefined ? { goaway } : {}) };
}

/** The instants of an override (start, each ramp step, end; a deadline drain's curve). */
export function overrideInstants(o: Override, region: PlannerRegion, s: PlannerSettings): number[] {
  const out = [o.start];
  if (o.end !== undefined) out.push(o.end);
  const curve = deadlineCurve(o, region, s);
  if (curve) out.push(...curve.instants);
  else if ((o.action === 'drain' || o.action === 'undrain') && o.ramp > 0) {
    const n = rampSteps(o.ramp, s.rampStepMs);
    for (let k = 1; k < n; k++) out.push(o.start + Math.ceil((k * o.ramp) / n));
  }
  return out;
}

/** The cap operator overrides alone leave a region at `t` (1 = none): where an undrain ramps back from. */
export function operatorShareAt(s: PlannerSettings, region: RegionId, overrides: Override[], t: number): number {
  const r = s.regions.find((x) => x.id === region);
  if (!r) return 1;
  return operatorCap(r, overrides.filter((o) => o.region === region), t, s).cap;
}

/** The operator rule: drains (immediate, ramped or by a deadline), undrains and weights. */
export const operatorRule: ViewRule = {
  name: 'operator drain / cap',
  module: 'rules/operator.ts',
  kinds: [],
  reads: 'drain, undrain and weight overrides',
  changesAt: "an override's start, each ramp step, its end; a deadline drain's curve",
  sets: 'cap; GOAWAY (a drain to 0 by a deadline, from the instant the weight reaches 0); refuse (from T − S of that deadline)',
  instants(x, at): void {
    for (const o of x.ovs) for (const t of overrideInstants(o, x.region, x.s)) at(t);
  },
  apply(a: ViewAcc): void {
    const op = operatorCap(a.region, a.ovs, a.t, a.s);
    if (op.why) capWhy(a, op.cap, op.why);
    if (op.refuse) refuseNew(a, op.why ?? 'operator drain');
    if (op.goaway !== undefined) a.goawayBy = op.goaway;
  },
};
