/**
 * Expected traffic shares from a plan (for previews and status): where each home's demand
 * goes at an instant. Pure. Admission draws are independent per region (ADR 0003), so a
 * client of home h reaches the k-th region of its ranking with probability
 * Π_{j<k}(1 − w_j) · w_k; what no region admits is unplaced (whenAllDown answers it).
 * Homes are the located regions ranked from their own location (the planner's spill model);
 * names are not told apart.
 */
import { rankRegions, type LatLon } from '../geo/distance.js';
import { regionStepAt, stepWeight } from './decide.js';
import type { PlannerSettings } from './planner/index.js';
import type { Plan, RegionId } from '../model/types.js';

export interface TrafficShares {
  /** Fraction of all demand each region takes (regions taking nothing are listed with 0). */
  regions: Record<RegionId, number>;
  /** Fraction of all demand no region admits. */
  unplaced: number;
}

/**
 * Shares at `t` of demand `demand` (queries/s per home; homes without an entry count 0; an
 * empty map weighs every home the same).
 */
export function trafficShares(plan: Plan, s: PlannerSettings, demand: ReadonlyMap<RegionId, number>, t: number): TrafficShares {
  const located = s.regions.filter((r) => r.location !== undefined) as { id: RegionId; location: LatLon; bias?: number }[];
  const regions: Record<RegionId, number> = Object.fromEntries(s.regions.map((r) => [r.id, 0]));
  const weightOfHome = (h: RegionId) => (demand.size === 0 ? 1 : (demand.get(h) ?? 0));
  const total = located.reduce((n, r) => n + weightOfHome(r.id), 0);
  if (total <= 0) return { regions, unplaced: 0 };
  let unplaced = 0;
  for (const home of located) {
    const d = weightOfHome(home.id) / total;
    if (d <= 0) continue;
    let walk = rankRegions(home.location, located.map((r) => ({ id: r.id, location: r.location, bias: r.bias ?? 0 }))).map((x) => x.id);
    const pref = plan.prefer?.[home.id];
    if (pref && walk.includes(pref.region)) walk = [pref.region, ...walk.filter((r) => r !== pref.region)];
    let left = d;
    for (const r of walk) {
      const st = regionStepAt(plan, r, t);
      if (st.down) continue;
      const w = Math.max(0, Math.min(1, stepWeight(st, home.id)));
      regions[r] = (regions[r] ?? 0) + left * w;
      left *= 1 - w;
      if (left <= 1e-12) break;
    }
    unplaced += left;
  }
  const r4 = (x: number) => Math.round(x * 10000) / 10000;
  return { regions: Object.fromEntries(Object.entries(regions).map(([k, v]) => [k, r4(v)])), unplaced: r4(unplaced) };
}
