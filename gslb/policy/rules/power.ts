/**
 * The power budget at an instant: available power, draw and headroom, from the site's budget signals and grid events' import limits.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { SignalRecord } from '../../model/snapshot.js';
import type { KindValue } from '../../model/kinds/index.js';
import { eventImportLimitAt } from './grid.js';
import { type PlannerRegion, type PlannerSettings, phaseAt } from '../settings.js';
import { routeRecords } from './records.js';
import { gridImportW, siteAvailableW } from './watts.js';
import { type ViewAcc, type ViewRule, capText, capWhy, capWords, staleCap } from './rule.js';

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
  const rr = routeRecords(records, region, s, ['power.budget']);
  const eventLimitW = eventImportLimitAt(rr.facts, t);
  let out: RegionPower | undefined;
  for (const r of rr.byKind['power.budget']) {
    if (r.fold.kind !== 'applied') continue;
    if (phaseAt(r, t, s.stale['power.budget']) === 'stale') continue;
    const availableW = siteAvailableW(r.fold.value as KindValue<'power.budget'>, region, eventLimitW).availableW;
    if (!Number.isFinite(availableW) || (out?.availableW !== undefined && out.availableW <= availableW)) continue;
    const drawW = (r.signal.value as KindValue<'power.budget'>).drawW;
    out = drawW === undefined ? { availableW } : { availableW, drawW, headroomW: availableW - drawW };
  }
  if (out) return out;
  const importW = gridImportW(region, eventLimitW);
  return Number.isFinite(importW) ? { availableW: importW } : {};
}

/**
 * The power rule: available watts over full-load draw, per applied power budget (a grid
 * event's import limit lowers the import part while it holds); without a budget, the region
 * file's import limit under the event's limit. A stale budget follows its stale policy.
 */
export const powerRule: ViewRule = {
  name: 'power budget',
  module: 'rules/power.ts',
  kinds: ['power.budget'],
  reads: "power.budget (hysteresis-folded); the grid rule's import limit; the region's power.fullLoadW and importLimitW",
  changesAt: "a budget's expiry and stale point; the grid rule's instants",
  sets: 'cap (available W ÷ full-load W)',
  apply(a: ViewAcc): void {
    const { region, rr, t, s } = a;
    const id = region.id;
    const texts = a.ctx.texts;
    const eventLimitW = a.eventLimitW;
    const eventLimitWhy = a.eventLimitWhy;
    let budgeted = false;
    for (const r of rr.byKind['power.budget']) {
      if (r.fold.kind !== 'applied') continue;
      const pol = s.stale['power.budget'];
      const ph = phaseAt(r, t, pol);
      if (ph === 'stale') {
        staleCap(a, r, 'power budget', pol);
        continue;
      }
      const fullLoadW = region.fullLoadW;
      if (!fullLoadW) continue;
      budgeted = true;
      const { importW, availableW: avail } = siteAvailableW(r.fold.value as KindValue<'power.budget'>, region, eventLimitW);
      if (avail < fullLoadW) {
        const limited = importW === eventLimitW;
        const c = avail / fullLoadW;
        const variant = limited ? `${eventLimitW}|${eventLimitWhy}` : avail;
        capText(
          a,
          c,
          texts.get(r, variant) ??
            texts.put(r, variant, capWords(id, c, `power: ${Math.round(avail)} W available of ${fullLoadW} W at full load (${r.signal.source}${limited ? `; import limited by ${eventLimitWhy}` : ''})`)),
        );
      }
    }
    if (!budgeted && eventLimitW < Infinity) {
      if (region.fullLoadW) {
        const importW = gridImportW(region, eventLimitW);
        if (importW < region.fullLoadW) capWhy(a, importW / region.fullLoadW, `power: ${Math.round(importW)} W of grid import available of ${region.fullLoadW} W at full load; import limited by ${eventLimitWhy}`);
      } else a.reasons.push(`${id}: ${eventLimitWhy} sets an import limit, but the region has no power.fullLoadW to turn watts into a share: not applied`);
    }
  },
};
