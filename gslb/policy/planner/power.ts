/**
 * The power budget at an instant: available power, draw and headroom, from the site's budget signals and grid events' import limits.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { SignalRecord } from '../../model/snapshot.js';
import type { PowerBudget } from '../../model/signals.js';
import { eventImportLimitAt } from './grid.js';
import { type PlannerRegion, type PlannerSettings, phaseAt } from './settings.js';
import { splitRecords } from './view.js';

/** Power at a site at one instant (regionPowerAt); an absent field is not known. */
export interface RegionPower {
  /**
   * What the site can draw, W: its grid import limit (the power budget's, else the region
   * file's `power.importLimitW`), lowered by a grid event's import limit while one is in
   * force, plus on-site generation and storage discharge (when storage holds energy).
   */
  availableW?: number;
  /** The site's draw, W: the latest reading of the power budget that sets availableW. */
  drawW?: number;
  /** availableW − drawW, W (negative: drawing more than is available). */
  headroomW?: number;
}

/**
 * A region's power at t from its signal records, as viewAt weighs a power budget: applied
 * (hysteresis-folded) budgets that are not stale, the smallest availability among them when
 * several sources report; without a budget, the configured import limit under any grid
 * event's limit. Nothing known (no import limit anywhere): no availableW.
 */
export function regionPowerAt(region: PlannerRegion, records: readonly SignalRecord[], s: PlannerSettings, t: number): RegionPower {
  const rr = splitRecords([...records], region, s);
  const eventLimitW = eventImportLimitAt(rr.facts, t);
  let out: RegionPower | undefined;
  for (const r of rr.power) {
    if (r.signal.kind !== 'power.budget' || r.fold.kind !== 'applied') continue;
    if (phaseAt(r, t, s.stale['power.budget']) === 'stale') continue;
    const v = r.fold.value as PowerBudget;
    const importW = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, eventLimitW);
    const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
    const availableW = importW + (v.generationW ?? 0) + storageW;
    if (!Number.isFinite(availableW) || (out?.availableW !== undefined && out.availableW <= availableW)) continue;
    const drawW = (r.signal.value as PowerBudget).drawW;
    out = drawW === undefined ? { availableW } : { availableW, drawW, headroomW: availableW - drawW };
  }
  if (out) return out;
  const importW = Math.min(region.importLimitW ?? Infinity, eventLimitW);
  return Number.isFinite(importW) ? { availableW: importW } : {};
}
