/**
 * A region's view at one instant (the rules of rules/index.ts combined), and the step it becomes.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { Override, RegionId, RegionStep } from '../../model/types.js';
import { applyViewRules } from '../rules/index.js';
import { type RegionRecords, type RegionView, type ViewAcc, type ViewContext, refusal } from '../rules/rule.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';

/** A fresh accumulator for one region at one instant (every output at its neutral value). */
export function newAcc(region: PlannerRegion, rr: RegionRecords, ovs: Override[], t: number, s: PlannerSettings, ctx: ViewContext): ViewAcc {
  return {
    region,
    rr,
    ovs,
    t,
    s,
    ctx,
    forceDown: undefined,
    forceUp: undefined,
    down: false,
    share: 1,
    firm: 1,
    reasons: [],
    gridRaw: 1,
    grid: 1,
    lossRaw: 1,
    goawayBy: undefined,
    refuseWhy: undefined,
    autoRefuseWhy: undefined,
    autoLifted: false,
    ttlCap: undefined,
    eventLimitW: Infinity,
    eventLimitWhy: '',
    noSpill: false,
    auto: 1,
    autoFirm: 1,
    autoGoaway: Infinity,
    loss: 1,
    lossFirm: 1,
    lossGoaway: Infinity,
    lossSources: '',
  };
}

/**
 * A region's view at t: every rule of rules/index.ts applied in its written order to one
 * accumulator, caps combined by minimum (see rules/rule.ts).
 */
export function viewAt(region: PlannerRegion, rr: RegionRecords, ovs: Override[], t: number, s: PlannerSettings, ctx: ViewContext): RegionView {
  const a = newAcc(region, rr, ovs, t, s, ctx);
  applyViewRules(a);
  // Refusal is decided here, once every rule has run (rules/rule.ts refuseNew): no rule's depends on the order.
  const why = refusal(a);
  const view: RegionView = { down: a.down, refuse: why !== undefined, gridRaw: a.gridRaw, grid: a.grid, lossRaw: a.lossRaw, share: round(a.share), firm: round(Math.max(a.share, a.firm)), noSpill: a.noSpill, reasons: a.reasons };
  if (why !== undefined) view.refuseWhy = why;
  if (a.ttlCap !== undefined) view.ttlCap = a.ttlCap;
  if (a.goawayBy !== undefined && !view.refuse && !a.down && round(a.share) === 0) view.goawayBy = a.goawayBy;
  return view;
}

/**
 * A region's step from its view: `share` for every home; `homes` where a home differs —
 * static config weights w[home][region] multiply the share, and a saturated region (no
 * spill) has share 0 except for its own clients.
 */
export function stepOf(id: RegionId, v: RegionView, t: number, sw: StaticWeights): RegionStep {
  const share = v.noSpill ? 0 : v.share;
  const st: RegionStep = { at: t, share, down: v.down, reasons: sw.reason === null ? v.reasons : [...v.reasons, sw.reason] };
  if (v.ttlCap !== undefined) st.ttlCap = v.ttlCap;
  if (v.refuse) st.refuse = true;
  if (v.goawayBy !== undefined) st.goawayBy = v.goawayBy;
  if (!v.noSpill && sw.homes.length === 0) return st;
  const homes: Record<RegionId, number> = {};
  if (v.noSpill && v.share !== share) homes[id] = v.share;
  for (const [home, stat] of sw.homes) {
    const base = v.noSpill && home !== id ? 0 : v.share;
    const w = round(base * stat);
    if (w !== share) homes[home] = w;
    else delete homes[home];
  }
  if (Object.keys(homes).length > 0) st.homes = Object.fromEntries(Object.entries(homes).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  return st;
}

/** A region's static config weights (policy.weights) as stepOf reads them: made once per plan. */
interface StaticWeights {
  /** (home, weight) for every home of the fleet with a weight for this region. */
  homes: [RegionId, number][];
  /** The reason step lists for them, or null when every weight is 1. */
  reason: string | null;
}

export function staticWeightsOf(id: RegionId, s: PlannerSettings, ids: ReadonlySet<RegionId>): StaticWeights {
  const homes: [RegionId, number][] = [];
  const words: string[] = [];
  for (const [home, row] of Object.entries(s.staticWeights)) {
    const stat = row[id];
    if (stat === undefined || !ids.has(home)) continue;
    homes.push([home, stat]);
    if (stat !== 1) words.push(`from ${home} ${stat}`);
  }
  return { homes, reason: words.length > 0 ? `${id}: static weights (policy.weights): ${words.sort().join(', ')}` : null };
}

/** Two steps of one region with the same effect and reasons (their `at` aside). */
export function sameStep(a: RegionStep, b: RegionStep): boolean {
  if (a.share !== b.share || a.down !== b.down || a.ttlCap !== b.ttlCap || a.refuse !== b.refuse || a.goawayBy !== b.goawayBy || a.reasons.length !== b.reasons.length) return false;
  for (let i = 0; i < a.reasons.length; i++) if (a.reasons[i] !== b.reasons[i]) return false;
  const ha = a.homes ?? {};
  const hb = b.homes ?? {};
  const ka = Object.keys(ha);
  if (ka.length !== Object.keys(hb).length) return false;
  for (const k of ka) if (ha[k] !== hb[k]) return false;
  return true;
}
