/**
 * decide(plan, cell, subnetKey, name, qtype, now) → Answer: which region answers a client,
 * with which TTL and ECS scope, and why (DESIGN.md "Choosing a region", "TTLs and draining").
 * Pure: no I/O, no clock — `now` only selects the plan step in force. The DNS hot path calls
 * it through a per-cell cache; explain, the API and the simulator call it directly.
 */
import type { Answer, Plan, PlanStep, RegionId } from '../types.js';
import type { WhenAllDownPolicy } from '../config/schema.js';
import { admissionDraw, type SubnetKey } from './admission.js';

/** What decide needs to know about a steered name (compiled from config). */
export interface DecideName {
  name: string;
  /** TTL0 in seconds. */
  ttl: number;
  /** Regions that serve the name, in config order, with their addresses per family. */
  regions: Map<RegionId, { v4: string[]; v6: string[] }>;
  whenAllDown: WhenAllDownPolicy;
}

/**
 * A geo cell: the client's ranking of regions, nearest first (top K), and the address range
 * the ranking holds for (for ECS scopes). `range` is absent when the client was placed
 * without the table (the default location before the first compile).
 */
export interface Cell {
  ranking: readonly RegionId[];
  /** Why the client is where it is, in words (shown by explain). */
  origin: string;
  range?: CellRange;
}

/** [first, last] in the family's key space: IPv4 as (addr, 0), IPv6 as the top 64 bits. */
export interface CellRange {
  family: 4 | 6;
  firstHi: number;
  firstLo: number;
  lastHi: number;
  lastLo: number;
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

/** The step of `plan` in force at `now` (the last with at ≤ now; the first if none). */
export function stepAt(plan: Plan, now: number): PlanStep {
  let chosen = plan.steps[0]!;
  for (const s of plan.steps) {
    if (s.at <= now) chosen = s;
    else break;
  }
  return chosen;
}

/** ms epoch of the first step after `now`, or Infinity. */
export function nextStepAfter(plan: Plan, now: number): number {
  for (const s of plan.steps) if (s.at > now) return s.at;
  return Infinity;
}

/** Per plan and region: the instants at which anything about the region changes. */
const changeIndex = new WeakMap<Plan, Map<RegionId, number[]>>();

function regionSlice(step: PlanStep, r: RegionId): string {
  const row = step.weights[r] ?? {};
  const col = Object.entries(step.weights)
    .map(([h, targets]) => [h, targets[r]])
    .filter(([, w]) => w !== undefined);
  return JSON.stringify([row, col, step.down.includes(r), step.ttlCap[r] ?? null]);
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
    for (let i = 1; i < plan.steps.length; i++) {
      if (regionSlice(plan.steps[i]!, r) !== regionSlice(plan.steps[i - 1]!, r)) times.push(plan.steps[i]!.at);
    }
    idx.set(r, times);
  }
  for (const t of times) if (t > now) return t;
  return Infinity;
}

/** The weight of target `r` for clients whose home is `home` (missing = 1). */
export function weightOf(step: PlanStep, home: RegionId, r: RegionId): number {
  return step.weights[home]?.[r] ?? 1;
}

/**
 * True when a region of `ranking` has a weight below 1 for the ranking's home (its first
 * region) in `step`: admission hashing can then give clients of one cell different answers,
 * so the responder decides per query instead of per cell.
 */
export function admissionSplits(step: PlanStep, ranking: readonly RegionId[]): boolean {
  const home = ranking[0];
  if (home === undefined) return false;
  for (const r of ranking) if (weightOf(step, home, r) < 1) return true;
  return false;
}

/**
 * The ECS scope (RFC 7871 §7.2.1) for an answer: 0 when the source prefix is 0; the
 * floor (/24, /56) when admission could differ inside the cell; else the widest aligned
 * prefix around the key that stays inside the cell's range (never wider than needed to
 * stay in the cell, never 0 unless the cell is the whole space).
 */
export function ecsScope(key: SubnetKey, sourcePrefix: number, range: CellRange | undefined, admissionInPlay: boolean): number {
  if (sourcePrefix === 0) return 0;
  const floor = key.family === 4 ? 24 : 56;
  if (admissionInPlay || !range) return range ? floor : Math.min(sourcePrefix, floor);
  for (let p = 0; p <= floor; p++) {
    // Block of the key at prefix p: [first, last].
    let fHi: number;
    let fLo: number;
    let lHi: number;
    let lLo: number;
    if (p <= 32) {
      const m = p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0;
      fHi = (key.hi & m) >>> 0;
      lHi = (fHi | ~m) >>> 0;
      fLo = 0;
      lLo = key.family === 4 ? 0 : 0xffffffff;
    } else {
      const m = (0xffffffff << (64 - p)) >>> 0;
      fHi = lHi = key.hi >>> 0;
      fLo = (key.lo & m) >>> 0;
      lLo = (fLo | ~m) >>> 0;
    }
    const geFirst = fHi > range.firstHi || (fHi === range.firstHi && fLo >= range.firstLo);
    const leLast = lHi < range.lastHi || (lHi === range.lastHi && lLo <= range.lastLo);
    if (geFirst && leLast) return p;
  }
  return floor;
}

/**
 * Chooses the region for one client. Walks the cell's ranking; the first region is the
 * client's home; a region that serves the name, has addresses of the family and is not down
 * admits the key when its draw h(key, r) < w[home][r]; else the walk spills to the next.
 * When nothing admits, the name's whenAllDown policy answers.
 */
export function decide(plan: Plan, cell: Cell, subnetKey: SubnetKey, name: DecideName, qtype: 'A' | 'AAAA', now: number, o: DecideOptions): Answer {
  const step = stepAt(plan, now);
  const fam = qtype === 'A' ? 'v4' : 'v6';
  const explain = o.explain === true;
  const reasons: string[] = explain ? [`client placed by ${cell.origin}`] : NO_REASONS;
  const home = cell.ranking[0];
  if (explain && home !== undefined) reasons.push(`home region: ${home} (the nearest)`);
  let admissionInPlay = false;
  let ttlCapS = Infinity;
  let nextChange = Infinity;
  let chosen: RegionId | null = null;
  for (const r of cell.ranking) {
    // Every region ranked at or before the chosen one bounds the TTL and may make the answer
    // depend on the subnet hash.
    nextChange = Math.min(nextChange, nextChangeOf(plan, r, now));
    const cap = step.ttlCap[r];
    if (cap !== undefined) ttlCapS = Math.min(ttlCapS, cap);
    const serves = name.regions.get(r);
    if (!serves) {
      if (explain) reasons.push(`${r}: does not serve ${name.name}`);
      continue;
    }
    if (serves[fam].length === 0) {
      if (explain) reasons.push(`${r}: no ${qtype === 'A' ? 'IPv4' : 'IPv6'} endpoints, skipped for ${qtype}`);
      continue;
    }
    if (step.down.includes(r)) {
      if (explain) reasons.push(`${r}: down in the plan step from ${new Date(step.at).toISOString()}`);
      continue;
    }
    const w = home === undefined ? 1 : weightOf(step, home, r);
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
    if (explain) reasons.push(`${r}: weight ${w} for home ${home}, draw ${draw.toFixed(4)} ≥ ${w}: not admitted, spill to the next`);
  }
  const untilNext = nextChange === Infinity ? Infinity : Math.floor((nextChange - now) / 1000);
  const ttl = Math.max(o.minTtl, Math.min(name.ttl, ttlCapS, untilNext));
  if (explain) {
    if (untilNext < name.ttl) reasons.push(`TTL ${ttl}s: the next scheduled change of a region ranked at or before the answer is in ${untilNext}s (minimum ${o.minTtl}s)`);
    else if (ttlCapS < name.ttl) reasons.push(`TTL ${ttl}s: capped by the plan (minimum ${o.minTtl}s)`);
  }
  const scope = o.ecsSource === undefined ? 0 : ecsScope(subnetKey, o.ecsSource, cell.range, admissionInPlay);
  if (chosen !== null) {
    return { region: chosen, addresses: name.regions.get(chosen)![fam], ttl, ecsScope: scope, rcode: 'answer', reasons };
  }
  if (explain) reasons.push(`no region admitted the client: whenAllDown=${name.whenAllDown}`);
  switch (name.whenAllDown) {
    case 'servfail':
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'servfail', reasons };
    case 'empty':
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'answer', reasons };
    case 'all': {
      const all = [...new Set([...name.regions.values()].flatMap((r) => r[fam]))];
      return { region: null, addresses: all, ttl, ecsScope: scope, rcode: 'answer', reasons };
    }
    case 'nearest':
    default: {
      const candidates = [...cell.ranking, ...name.regions.keys()];
      for (const id of candidates) {
        const r = name.regions.get(id);
        if (r && r[fam].length > 0) {
          if (explain) reasons.push(`${id}: nearest serving region with ${qtype} endpoints, answered although not admitted`);
          return { region: id, addresses: r[fam], ttl, ecsScope: scope, rcode: 'answer', reasons };
        }
      }
      return { region: null, addresses: [], ttl, ecsScope: scope, rcode: 'answer', reasons };
    }
  }
}

/** The plan before any state exists: one step, every weight 1, nothing down. */
export function initialPlan(configHash: string, at = 0): Plan {
  return {
    version: `${configHash}:0`,
    configHash,
    storeRevision: 0,
    computedAt: at,
    steps: [{ at: 0, weights: {}, ttlCap: {}, down: [], reasons: ['no state yet: every region up, every weight 1'] }],
  };
}

/** Plan weights from configuration (until the planner exists): `weights[home][target]`. */
export function planFromConfig(configHash: string, weights: Record<RegionId, Record<RegionId, number>>): Plan {
  const p = initialPlan(configHash);
  p.steps[0]!.weights = weights;
  if (Object.keys(weights).length > 0) p.steps[0]!.reasons = ['weights from configuration'];
  return p;
}
