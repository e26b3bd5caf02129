/**
 * The instants at which something happens to a region (the only ones it is evaluated at), and why.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { Override } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import { overrideInstants } from '../rules/operator.js';
import type { PlannerRegion, PlannerSettings } from '../settings.js';
import type { RegionRecords } from '../rules/rule.js';
import { slowStartInstants } from '../rules/slow-start.js';

/**
 * Why a region is evaluated at an instant (bits): only a health probe's vote changes there
 * (VOTES_ONLY: what the votes decide may stay the same, see healthOutcome), or anything else.
 */
export const VOTES_ONLY = 1;

export const ANY_CHANGE = 2;

/**
 * The instants at which something happens to a region (it is evaluated at those only), each
 * with why (VOTES_ONLY, ANY_CHANGE): its
 * records' expiries and stale points, slow-start steps, its overrides' ramps and ends, the
 * fleet's freezes, its grid facts' windows and drain curves.
 */
export function regionInstants(region: PlannerRegion, recs: readonly SignalRecord[], rr: RegionRecords, ovs: readonly Override[], freezes: readonly Override[], s: PlannerSettings): Map<number, number> {
  const set = new Map<number, number>();
  const at = (t: number, why = ANY_CHANGE) => {
    if (t > 0 && Number.isFinite(t)) set.set(t, (set.get(t) ?? 0) | why);
  };
  for (const r of recs) {
    if (r.fold.kind === 'health' && r.fold.upSince !== undefined && s.slowStartMs > 0) {
      slowStartInstants(r.fold.upSince, s.slowStartMs, s.rampStepMs, at);
    }
    // Up by its last probe but not yet by rise: after a known outage that one probe is enough
    // (the health rule, ADR 0019), and the slow start runs from it.
    if (r.fold.kind === 'health' && !r.fold.stableUp && r.fold.lastUp && s.slowStartMs > 0) slowStartInstants(r.signal.observedAt, s.slowStartMs, s.rampStepMs, at);
    const keep = s.stale[r.signal.kind].keepMs;
    const why = r.signal.kind === 'health.probe' ? VOTES_ONLY : ANY_CHANGE;
    // Past expiresAt a kept value acts as a fresh one; only a grid alert's reason says
    // "(expired, kept)". The stale policy takes over at expiresAt + keepMs.
    if (r.signal.kind === 'grid.alert' || keep === 0) at(r.signal.expiresAt, why);
    if (keep > 0) at(r.signal.expiresAt + keep, why);
  }
  for (const o of freezes) {
    at(o.start);
    if (o.end !== undefined) at(o.end);
  }
  for (const o of ovs) for (const t of overrideInstants(o, region, s)) at(t);
  for (const f of rr.facts) {
    at(f.from);
    at(f.end);
    for (const t of f.curve?.instants ?? []) at(t);
  }
  return set;
}
