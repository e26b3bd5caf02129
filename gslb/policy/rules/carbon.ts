/**
 * The carbon tie-break: per home, a cleaner region within the latency band tried first (order only).
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import { greatCircleKm, type LatLon } from '../../geo/distance.js';
import type { RegionId } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import { type PlannerRegion, type PlannerSettings, phaseAt } from '../settings.js';
import type { PlanPass, RegionView } from './rule.js';

/**
 * Per home region h, a region g to try first when: g is within carbonBandKm of h (the same
 * latency band), g is up with its full share and takes spill, h is not cleaner, and g's grid
 * is clearly cleaner — by fresh `carbon` facts, comparing gCO2/kWh when both have it (g at
 * least carbonMinGain lower, relative), else percentiles (at least carbonMinGain × 100 points
 * lower). Undefined when no home has such a region.
 */
export function carbonPreferences(
  s: PlannerSettings,
  recsBy: Map<RegionId, SignalRecord[]>,
  viewsAt: () => Map<RegionId, RegionView>,
  t: number,
): Record<RegionId, { region: RegionId; reason: string }> | undefined {
  if (s.carbonBandKm <= 0) return undefined;
  const carbon = new Map<RegionId, { g?: number; p?: number }>();
  for (const [id, recs] of recsBy) {
    for (const r of recs) {
      if (r.signal.kind !== 'carbon' || phaseAt(r, t, s.stale.carbon) === 'stale') continue;
      const v = r.signal.value as { gPerKWh?: number; percentile?: number };
      const c = carbon.get(id) ?? {};
      if (v.gPerKWh !== undefined) c.g = Math.min(c.g ?? Infinity, v.gPerKWh);
      if (v.percentile !== undefined) c.p = Math.min(c.p ?? Infinity, v.percentile);
      carbon.set(id, c);
    }
  }
  if (carbon.size < 2) return undefined;
  const out: Record<RegionId, { region: RegionId; reason: string }> = {};
  const located = s.regions.filter((r) => r.location !== undefined) as (PlannerRegion & { location: LatLon })[];
  for (const h of located) {
    const ch = carbon.get(h.id);
    if (!ch) continue;
    let best: { id: RegionId; why: string; score: number } | undefined;
    for (const g of located) {
      if (g.id === h.id) continue;
      const cg = carbon.get(g.id);
      if (!cg || greatCircleKm(h.location, g.location) > s.carbonBandKm) continue;
      const v = viewsAt().get(g.id)!;
      if (v.down || v.share < 1 || v.noSpill) continue;
      let score: number | undefined;
      let why = '';
      if (ch.g !== undefined && cg.g !== undefined && cg.g <= ch.g * (1 - s.carbonMinGain)) {
        score = cg.g / Math.max(ch.g, 1e-9);
        why = `${Math.round(cg.g)} against ${Math.round(ch.g)} gCO2/kWh`;
      } else if ((ch.g === undefined || cg.g === undefined) && ch.p !== undefined && cg.p !== undefined && cg.p <= ch.p - s.carbonMinGain * 100) {
        score = cg.p / 100 - ch.p / 100;
        why = `carbon percentile ${Math.round(cg.p)} against ${Math.round(ch.p)}`;
      }
      if (score !== undefined && (!best || score < best.score || (score === best.score && g.id < best.id))) best = { id: g.id, why, score };
    }
    if (best) out[h.id] = { region: best.id, reason: `carbon tie-break: ${best.id} is within ${s.carbonBandKm} km of ${h.id} and cleaner (${best.why})` };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The carbon tie-break pass, for the precedence table. */
export const carbonPass: PlanPass = {
  name: 'carbon tie-break',
  module: 'rules/carbon.ts',
  kinds: ['carbon'],
  reads: "carbon intensity; every region's view at the newest input; distance from the home",
  changesAt: 'every plan',
  sets: 'a preferred region per home, tried first (never over health, drains, caps or power)',
};
