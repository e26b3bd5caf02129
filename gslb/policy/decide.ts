/**
 * decide(plan, cell, subnetKey, name, qtype, now) → Answer: which region answers a client,
 * with which TTL and ECS scope, and why (docs/design.md "Choosing a region", "TTLs and draining").
 * Pure: no I/O, no clock — `now` only selects the plan step in force. The DNS hot path calls
 * it through a per-cell cache; explain, the API and the simulator call it directly.
 */
import type { Answer, DecisionClass, Plan, RegionId, RegionStep } from '../model/types.js';
import type { WhenAllDownPolicy } from '../model/policy.js';
import { admissionDraw } from './admission.js';
import type { Cell, SubnetKey } from '../model/cell.js';
import { ecsScope } from '../geo/scope.js';
import { isoOf } from '../model/domains.js';

/** What decide needs to know about a steered name (compiled from config). */
export interface DecideName {
  name: string;
  /** TTL0 in seconds. */
  ttl: number;
  /** Regions that serve the name, in config order, with their addresses per family. */
  regions: Map<RegionId, { v4: string[]; v6: string[] }>;
  whenAllDown: WhenAllDownPolicy;
}

export interface DecideOptions {
  /** Tmin in seconds. */
  minTtl: number;
  /** Build `reasons` (explain); the hot path leaves it off. */
  explain?: boolean;
  /**
   * The ECS source prefix of the query, when the subnet key came from a client subnet option;
   * undefined when it came from the packet's source (no ECS in the reply then).
   */
  ecsSource?: number;
}

const NO_REASONS: string[] = [];
Object.freeze(NO_REASONS);

/** What a region without a step of its own at `now` gets: every client, up, no cap. */
export const FULL_STEP: RegionStep = Object.freeze({ at: 0, share: 1, down: false, reasons: [] }) as RegionStep;

/** The step of region `r` in force at `now` (the last with at ≤ now), or FULL_STEP. */
export function regionStepAt(plan: Plan, r: RegionId, now: number): RegionStep {
  const steps = plan.regions[r];
  if (steps === undefined) return FULL_STEP;
  let chosen = FULL_STEP;
  for (const s of steps) {
    if (s.at <= now) chosen = s;
    else break;
  }
  return chosen;
}

/** The weight of a region's step for clients whose home is `home`. */
export function stepWeight(st: RegionStep, home: RegionId): number {
  return st.homes?.[home] ?? st.share;
}

/** The weight of target `r` at `now` for clients whose home is `home` (1 when nothing is planned). */
export function weightOf(plan: Plan, home: RegionId, r: RegionId, now: number): number {
  return stepWeight(regionStepAt(plan, r, now), home);
}

/** Per plan and region: the instants at which the region's effect changes (reasons aside). */
const changeIndex = new WeakMap<Plan, Map<RegionId, number[]>>();

function effect(st: RegionStep): string {
  return JSON.stringify([st.share, st.homes ?? null, st.down, st.ttlCap ?? null]);
}

/** Whole seconds from `now` to `at` (Infinity: never). */
export function secondsUntil(at: number, now: number): number {
  return at === Infinity ? Infinity : Math.floor((at - now) / 1000);
}

/** An answer's TTL, s: the name's TTL bounded by the plan's TTL cap and by the next change, never below minTtl. */
export function answerTtl(minTtl: number, nameTtl: number, ttlCapS: number, untilNextS: number): number {
  return Math.max(minTtl, Math.min(nameTtl, ttlCapS, untilNextS));
}

/** ms epoch of the next step after `now` that changes region `r` (weights, down, TTL cap), or Infinity. */
export function nextChangeOf(plan: Plan, r: RegionId, now: number): number {
  let idx = changeIndex.get(plan);
  if (!idx) {
    idx = new Map();
    changeIndex.set(plan, idx);
  }
  let times = idx.get(r);
  if (!times) {
    times = [];
    let prev = effect(FULL_STEP);
    for (const st of plan.regions[r] ?? []) {
      const e = effect(st);
      if (e !== prev) times.push(st.at);
      prev = e;
    }
    idx.set(r, times);
  }
  for (const t of times) if (t > now) return t;
  return Infinity;
}

/**
 * Per plan: each region's windows [start, end) in which it refuses new streams (an obligation
 * to take nothing), flat as start, end, start, end …; null when no region of the plan ever
 * refuses (the common case: one lookup on the hot path).
 */
const refuseIndex = new WeakMap<Plan, Map<RegionId, number[]> | null>();

function refuseWindows(plan: Plan): Map<RegionId, number[]> | null {
  let idx = refuseIndex.get(plan);
  if (idx !== undefined) return idx;
  idx = null;
  for (const [r, steps] of Object.entries(plan.regions)) {
    const w: number[] = [];
    let open = NaN;
    for (const st of steps) {
      if (st.refuse === true && Number.isNaN(open)) open = st.at;
      else if (st.refuse !== true && !Number.isNaN(open)) {
        w.push(open, st.at);
        open = NaN;
      }
    }
    if (!Number.isNaN(open)) w.push(open, Infinity);
    if (w.length > 0) (idx ??= new Map()).set(r, w);
  }
  refuseIndex.set(plan, idx);
  return idx;
}

/**
 * True when region `r` refuses new streams at some instant in [from, to] (it is dark, or will
 * be: a grid obligation to take nothing, an operator drain to 0 past its deadline). A health
 * or stale-policy "down" ahead is not counted: fresh signals usually undo it, so only what the
 * plan knows will happen keeps answers away early.
 */
export function refusesWithin(plan: Plan, r: RegionId, from: number, to: number): boolean {
  return refusesIn(refuseWindows(plan), r, from, to);
}

/** refusesWithin on a plan's windows looked up once (decide walks several regions per query). */
function refusesIn(windows: Map<RegionId, number[]> | null, r: RegionId, from: number, to: number): boolean {
  if (windows === null) return false;
  const w = windows.get(r);
  if (w === undefined) return false;
  for (let i = 0; i < w.length; i += 2) if (w[i]! <= to && w[i + 1]! > from) return true;
  return false;
}

/** How far ahead of `now` decide keeps answers off a region that goes dark, ms: max(the name's TTL, F) + m. */
export function darkHorizonMs(plan: Plan, ttlS: number): number {
  const la = plan.lookahead;
  return Math.max(ttlS, la?.resolverFloorS ?? 0) * 1000 + (la?.marginMs ?? 0);
}

/**
 * True when a region of `ranking` has a weight below 1 for the ranking's home (its first
 * region) at `now`: admission hashing can then give clients of one cell different answers,
 * so the responder decides per query instead of per cell.
 */
export function admissionSplits(plan: Plan, ranking: readonly RegionId[], now: number): boolean {
  const home = ranking[0];
  if (home === undefined) return false;
  for (const r of ranking) if (weightOf(plan, home, r, now) < 1) return true;
  return false;
}

/**
 * Chooses the region for one client. Walks the cell's ranking; the first region is the
 * client's home; a region that serves the name, has addresses of the family and is not down
 * admits the key when its draw h(key, r) < w[home][r]; else the walk spills to the next.
 * When nothing admits, the name's whenAllDown policy answers.
 */
export function decide(plan: Plan, cell: Cell, subnetKey: SubnetKey, name: DecideName, qtype: 'A' | 'AAAA', now: number, o: DecideOptions): Answer {
  const fam = qtype === 'A' ? 'v4' : 'v6';
  const explain = o.explain === true;
  const reasons: string[] = explain ? [`client placed by ${cell.origin}`] : NO_REASONS;
  const home = cell.ranking[0];
  if (explain && home !== undefined) reasons.push(`home region: ${home} (the nearest)`);
  let admissionInPlay = false;
  let ttlCapS = Infinity;
  let nextChange = Infinity;
  let chosen: RegionId | null = null;
  // Carbon tie-break: the plan may put a cleaner region within the home's latency band first.
  let walk: readonly RegionId[] = cell.ranking;
  const pref = home === undefined ? undefined : plan.prefer?.[home];
  /** The region tried first for the carbon tie-break (its refusal makes no failover or spill). */
  let preferred: RegionId | undefined;
  if (pref && pref.region !== home && cell.ranking.includes(pref.region)) {
    walk = [pref.region, ...cell.ranking.filter((r) => r !== pref.region)];
    preferred = pref.region;
    if (explain) reasons.push(`${pref.region} tried first: ${pref.reason}`);
  }
  // For the decision's class: a region ranked before the answer was down / did not admit.
  let passedDown = false;
  let passedWeight = false;
  // A cached answer outlives its TTL by up to F: a region that refuses new streams now or
  // will within the horizon is passed over (whenAllDown's last resort may still name it).
  const darkBy = now + darkHorizonMs(plan, name.ttl);
  const refusing = refuseWindows(plan);
  for (const r of walk) {
    // Every region ranked at or before the chosen one bounds the TTL and may make the answer
    // depend on the subnet hash.
    nextChange = Math.min(nextChange, nextChangeOf(plan, r, now));
    const step = regionStepAt(plan, r, now);
    if (step.ttlCap !== undefined) ttlCapS = Math.min(ttlCapS, step.ttlCap);
    const serves = name.regions.get(r);
    if (!serves) {
      if (explain) reasons.push(`${r}: does not serve ${name.name}`);
      continue;
    }
    if (serves[fam].length === 0) {
      if (explain) reasons.push(`${r}: no ${qtype === 'A' ? 'IPv4' : 'IPv6'} endpoints, skipped for ${qtype}`);
      continue;
    }
    if (step.down) {
      if (r !== preferred) passedDown = true;
      if (explain) reasons.push(`${r}: down in its plan step from ${isoOf(step.at)}${step.reasons.length ? ` (${step.reasons.join('; ')})` : ''}`);
      continue;
    }
    if (refusesIn(refusing, r, now, darkBy)) {
      if (r !== preferred) passedDown = true;
      if (explain) reasons.push(`${r}: ${step.refuse === true ? 'refuses new streams' : `will refuse new streams within ${Math.round((darkBy - now) / 1000)} s (the name's TTL or the resolver floor, and the margin)`}: passed over`);
      continue;
    }
    const w = home === undefined ? 1 : stepWeight(step, home);
    if (w >= 1) {
      if (explain) reasons.push(`${r}: weight 1 for home ${home}: admitted`);
      chosen = r;
      break;
    }
    admissionInPlay = true;
    const draw = admissionDraw(subnetKey, r);
    if (draw < w) {
      if (explain) reasons.push(`${r}: weight ${w} for home ${home}, draw ${draw.toFixed(4)} < ${w}: admitted`);
      chosen = r;
      break;
    }
    if (r !== preferred) passedWeight = true;
    if (explain) reasons.push(`${r}: weight ${w} for home ${home}, draw ${draw.toFixed(4)} ≥ ${w}: not admitted, spill to the next`);
  }
  const untilNext = secondsUntil(nextChange, now);
  const ttl = answerTtl(o.minTtl, name.ttl, ttlCapS, untilNext);
  if (explain) {
    if (untilNext < name.ttl) reasons.push(`TTL ${ttl}s: the next scheduled change of a region ranked at or before the answer is in ${untilNext}s (minimum ${o.minTtl}s)`);
    else if (ttlCapS < name.ttl) reasons.push(`TTL ${ttl}s: capped by the plan (minimum ${o.minTtl}s)`);
  }
  const scope = o.ecsSource === undefined ? 0 : ecsScope(subnetKey, o.ecsSource, cell.range, admissionInPlay);
  if (chosen !== null) {
    const decision: DecisionClass = chosen === preferred ? 'preferred' : passedDown ? 'failover' : passedWeight ? 'spill' : 'nearest';
    return { region: chosen, addresses: name.regions.get(chosen)![fam], ttl, ecsScope: scope, rcode: 'answer', reasons, decision };
  }
  if (explain) reasons.push(`no region admitted the client: whenAllDown=${name.whenAllDown}`);
  const decision: DecisionClass = 'when_all_down';
  switch (name.whenAllDown) {
    case 'servfail':
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'servfail', reasons, decision: 'servfail' };
    case 'empty':
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'answer', reasons, decision };
    case 'all': {
      const all = [...new Set([...name.regions.values()].flatMap((r) => r[fam]))];
      return { region: null, addresses: all, ttl, ecsScope: scope, rcode: 'answer', reasons, decision };
    }
    case 'nearest':
    default: {
      // Spill past the ranking (the planner's overflow for this home): regions with headroom
      // in proportion to it, or — when the fleet cannot take all — to capacity; never all
      // onto one neighbour. Only regions up and taking new streams through the horizon.
      const over = home === undefined ? undefined : plan.overflow?.[home];
      if (over !== undefined) {
        let total = 0;
        for (const id in over) if (overflowOk(plan, refusing, name, fam, id, now, darkBy)) total += over[id]!;
        if (total > 0) {
          let x = admissionDraw(subnetKey, OVERFLOW_SEED) * total;
          let last: RegionId | undefined;
          for (const id in over) {
            if (!overflowOk(plan, refusing, name, fam, id, now, darkBy)) continue;
            last = id;
            x -= over[id]!;
            if (x < 0) break;
          }
          if (explain) reasons.push(`${last}: overflow for home ${home} (no region of the ranking admits the client): weights ${JSON.stringify(over)}`);
          return { region: last!, addresses: name.regions.get(last!)![fam], ttl, ecsScope: o.ecsSource === undefined ? 0 : ecsScope(subnetKey, o.ecsSource, cell.range, true), rcode: 'answer', reasons, decision: 'spill' };
        }
      }
      // The nearest region, looking past the cell's ranking to every region of the name, by
      // the first pass that finds one (NEAREST_PASSES): one that stays up through the horizon
      // and takes clients of this home (weight > 0: not saturated, not drained); then one
      // that stays up; then one up now; then any.
      const candidates = [...cell.ranking, ...name.regions.keys()];
      for (let pass = 0; pass < NEAREST_PASSES.length; pass++) {
        for (const id of candidates) {
          const r = name.regions.get(id);
          if (!r || r[fam].length === 0) continue;
          const st = regionStepAt(plan, id, now);
          if (pass < 3 && (st.down || st.refuse === true)) continue;
          if (pass < 2 && refusesIn(refusing, id, now, darkBy)) continue;
          if (pass === 0 && home !== undefined && stepWeight(st, home) <= 0) continue;
          if (explain) reasons.push(`${id}: nearest ${NEAREST_PASSES[pass]} with ${qtype} endpoints, answered although not admitted`);
          return { region: id, addresses: r[fam], ttl, ecsScope: scope, rcode: 'answer', reasons, decision };
        }
      }
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'answer', reasons, decision };
    }
  }
}

/** The admission draw's seed for the overflow choice (a name no region has). */
const OVERFLOW_SEED = '~overflow';

/** A region of a home's overflow that can take a client now: serves the name with the family's addresses, up, not refusing through the horizon. */
function overflowOk(plan: Plan, refusing: Map<RegionId, number[]> | null, name: DecideName, fam: 'v4' | 'v6', id: RegionId, now: number, darkBy: number): boolean {
  const r = name.regions.get(id);
  if (!r || r[fam].length === 0) return false;
  const st = regionStepAt(plan, id, now);
  return !st.down && st.refuse !== true && !refusesIn(refusing, id, now, darkBy);
}

/** whenAllDown nearest's passes, in order, as explain words them. */
const NEAREST_PASSES = [
  'region up and taking new streams, and so through the horizon, with weight for this home',
  'region up and taking new streams, and so through the horizon (every one with weight for this home is dark or going dark)',
  'region up and taking new streams now (every one goes dark within the horizon)',
  'serving region (every one is down or refusing)',
] as const;

/** The plan before any state exists: every region up, every weight 1. */
export function initialPlan(configHash: string, at = 0): Plan {
  return { version: `${configHash}:0`, configHash, storeRevision: 0, computedAt: at, regions: {} };
}

/** The plan of static weights from configuration, `weights[home][target]` (before the planner has run). */
export function planFromConfig(configHash: string, weights: Record<RegionId, Record<RegionId, number>>): Plan {
  const p = initialPlan(configHash);
  for (const [home, row] of Object.entries(weights)) {
    for (const [target, w] of Object.entries(row)) {
      const steps = (p.regions[target] ??= [{ at: 0, share: 1, homes: {}, down: false, reasons: ['weights from configuration'] }]);
      steps[0]!.homes![home] = w;
    }
  }
  return p;
}
