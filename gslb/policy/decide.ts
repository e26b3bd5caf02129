/**
 * decide(plan, cell, subnetKey, name, qtype, now) → Answer: which region answers a client.
 * Pure: no I/O, no clock (`now` only selects the plan step in force).
 *
 * This is the DNS core's version: it walks the cell's ranking and answers the first region
 * that serves the name, has addresses of the query's family and is not down in the plan
 * step in force. Hashed admission by weight, TTL capping by the schedule and ECS scopes
 * are the geo engine's (issue 3) and replace this walk; the signature stays.
 */
import type { Answer, Plan, PlanStep, RegionId } from '../types.js';
import type { WhenAllDownPolicy } from '../config/schema.js';

/** What decide needs to know about a steered name (compiled from config). */
export interface DecideName {
  name: string;
  /** TTL0 in seconds. */
  ttl: number;
  /** Regions that serve the name, with their addresses per family. */
  regions: Map<RegionId, { v4: string[]; v6: string[] }>;
  whenAllDown: WhenAllDownPolicy;
}

/** A geo cell: the client's ranking of regions, nearest first (the geo engine fills more). */
export interface Cell {
  ranking: RegionId[];
  /** Why the client is where it is (e.g. "default location"). */
  origin: string;
}

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

/** The TTL for an answer: TTL0 capped by the time until the plan's next step, never below minTtl. */
export function answerTtl(ttl0: number, minTtl: number, plan: Plan, now: number): number {
  const next = nextStepAfter(plan, now);
  const untilNext = next === Infinity ? Infinity : Math.floor((next - now) / 1000);
  return Math.max(minTtl, Math.min(ttl0, untilNext));
}

export function decide(
  plan: Plan,
  cell: Cell,
  _subnetKey: string,
  name: DecideName,
  qtype: 'A' | 'AAAA',
  now: number,
  minTtl = 0,
): Answer {
  const step = stepAt(plan, now);
  const fam = qtype === 'A' ? 'v4' : 'v6';
  const reasons: string[] = [`client placed by ${cell.origin}`];
  const ttl = answerTtl(name.ttl, minTtl, plan, now);
  for (const id of cell.ranking) {
    const r = name.regions.get(id);
    if (!r) continue;
    if (step.down.includes(id)) {
      reasons.push(`${id}: down in the plan`);
      continue;
    }
    const addrs = r[fam];
    if (addrs.length === 0) {
      reasons.push(`${id}: no ${qtype === 'A' ? 'IPv4' : 'IPv6'} endpoints, skipped for ${qtype}`);
      continue;
    }
    reasons.push(`${id}: nearest serving region, admitted`);
    return { region: id, addresses: addrs, ttl, ecsScope: 0, rcode: 'answer', reasons };
  }
  reasons.push(`no region admitted the client: whenAllDown=${name.whenAllDown}`);
  switch (name.whenAllDown) {
    case 'servfail':
      return { region: null, addresses: [], ttl, ecsScope: 0, rcode: 'servfail', reasons };
    case 'empty':
      return { region: null, addresses: [], ttl, ecsScope: 0, rcode: 'answer', reasons };
    case 'all': {
      const all = [...name.regions.values()].flatMap((r) => r[fam]);
      return { region: null, addresses: all, ttl, ecsScope: 0, rcode: 'answer', reasons };
    }
    case 'nearest':
    default: {
      for (const id of cell.ranking) {
        const r = name.regions.get(id);
        if (r && r[fam].length > 0) {
          reasons.push(`${id}: nearest with ${qtype} endpoints, answered although down`);
          return { region: id, addresses: r[fam], ttl, ecsScope: 0, rcode: 'answer', reasons };
        }
      }
      return { region: null, addresses: [], ttl, ecsScope: 0, rcode: 'answer', reasons };
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
