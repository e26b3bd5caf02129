/**
 * A region's records split by the rule that reads them, once per region (not per instant).
 * Pure: no clock reads, no I/O.
 */
import type { SignalRecord } from '../../model/snapshot.js';
import type { PlannerRegion, PlannerSettings } from '../settings.js';
import { gridFacts } from './grid.js';
import { healthScratch } from './health.js';
import type { RegionRecords } from './rule.js';

export function splitRecords(recs: SignalRecord[], region: PlannerRegion, s: PlannerSettings): RegionRecords {
  const health: SignalRecord[] = [];
  const grid: SignalRecord[] = [];
  const power: SignalRecord[] = [];
  const compute: SignalRecord[] = [];
  for (const r of recs) {
    const k = r.signal.kind;
    if (k === 'health.probe') health.push(r);
    else if (k === 'grid.event' || k === 'grid.alert') grid.push(r);
    else if (k === 'power.budget') power.push(r);
    else if (k === 'capacity' || k === 'load.metrics') compute.push(r);
  }
  return { health, grid, power, compute, facts: gridFacts(region, grid, power, s), tally: healthScratch(health) };
}
