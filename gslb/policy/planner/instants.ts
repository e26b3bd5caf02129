/**
 * The instants at which something happens to a region (the only ones it is evaluated at), and why.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { Override } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { PlannerRegion, PlannerSettings } from '../settings.js';
import type { InstantsInput, RegionRecords, ViewContext } from '../rules/rule.js';
import { VIEW_RULES } from '../rules/index.js';

/**
 * Why a region is evaluated at an instant (bits): only a health probe's vote changes there
 * (VOTES_ONLY: what the votes decide may stay the same, see healthOutcome), or anything else.
 */
export const VOTES_ONLY = 1;

export const ANY_CHANGE = 2;

/**
 * The instants at which something happens to a region (it is evaluated at those only), each
 * with why (VOTES_ONLY, ANY_CHANGE): its records' expiries and stale points (every record: a
 * plan pass may read a kind no view rule does), then what each rule of rules/index.ts says
 * through its `instants` (slow-start steps, overrides' ramps and ends, the fleet's freezes,
 * grid facts' windows and drain curves, windows' occurrences).
 */
export function regionInstants(region: PlannerRegion, recs: readonly SignalRecord[], rr: RegionRecords, ovs: readonly Override[], ctx: ViewContext, s: PlannerSettings): Map<number, number> {
  const set = new Map<number, number>();
  const at = (t: number, why = ANY_CHANGE) => {
    if (t > 0 && Number.isFinite(t)) set.set(t, (set.get(t) ?? 0) | why);
  };
  for (const r of recs) {
    const keep = s.stale[r.signal.kind].keepMs;
    // Only a probe's vote changes where a probe expires: the planner may skip such an instant (VOTES_ONLY).
    const why = r.signal.kind === 'health.probe' ? VOTES_ONLY : ANY_CHANGE;
    // Past expiresAt a kept value acts as a fresh one; only a grid alert's reason says
    // "(expired, kept)". The stale policy takes over at expiresAt + keepMs.
    if (r.signal.kind === 'grid.alert' || keep === 0) at(r.signal.expiresAt, why);
    if (keep > 0) at(r.signal.expiresAt + keep, why);
  }
  const x: InstantsInput = { region, rr, ovs, s, ctx };
  for (const rule of VIEW_RULES) rule.instants?.(x, at);
  return set;
}
