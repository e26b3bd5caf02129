/**
 * Watts a site can draw: the one copy of this arithmetic, read by the power rule, the power
 * view of the API (regionPowerAt) and the share a grid event's import limit leaves (grid.ts).
 * Pure: no clock reads, no I/O.
 */
import type { KindValue } from '../../model/kinds/index.js';
import type { PlannerRegion } from '../settings.js';

/**
 * What a site can draw by one power budget, W (the one copy of this arithmetic): its grid
 * import — the budget's limit, else the region file's, under a grid event's limit `limitW`
 * (Infinity: none) — plus on-site generation, plus storage discharge while storage holds
 * energy. `importW` is the import part alone.
 */
export function siteAvailableW(v: KindValue<'power.budget'>, region: PlannerRegion, limitW: number): { importW: number; availableW: number } {
  const importW = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, limitW);
  const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
  return { importW, availableW: importW + (v.generationW ?? 0) + storageW };
}

/** What a site without a power budget can draw, W: the region file's import limit under a grid event's limit. */
export function gridImportW(region: PlannerRegion, limitW: number): number {
  return Math.min(region.importLimitW ?? Infinity, limitW);
}
