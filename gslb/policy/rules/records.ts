/**
 * The records router: a region's records routed by kind to the rules that declare them, and
 * the derivations several rules share, once per region (not per instant). A new kind needs
 * nothing here: a rule that declares it in `kinds` gets its records. Pure: no clock reads, no I/O.
 */
import type { SignalRecord } from '../../model/snapshot.js';
import { KIND_LIST, type SignalKind } from '../../model/kinds/index.js';
import type { PlannerRegion, PlannerSettings } from '../settings.js';
import { gridFacts } from './grid.js';
import { healthScratch } from './health.js';
import type { Derivation, RegionRecords } from './rule.js';

/** The kinds each derivation is made from (in the order it reads them). */
export const DERIVATIONS: { readonly [D in Derivation]: readonly SignalKind[] } = {
  facts: ['grid.alert', 'grid.event', 'power.budget'],
  tally: ['health.probe'],
};

/** What every unrouted kind reads as (shared: never written to). */
const NONE: readonly SignalRecord[] = Object.freeze([]);

/** The kinds a list of rules reads: each rule's own and those of the derivations (records.ts routes these). */
export function routedKinds(rules: readonly { kinds: readonly SignalKind[] }[]): SignalKind[] {
  const out = new Set<SignalKind>();
  for (const r of rules) for (const k of r.kinds) out.add(k);
  for (const ks of Object.values(DERIVATIONS)) for (const k of ks) out.add(k);
  return [...out].sort();
}

/**
 * A region's records routed: `byKind[k]` holds its records of kind k in record order for
 * every kind of `kinds` and of the derivations; every other kind reads as empty. Then the
 * derivations.
 */
export function routeRecords(recs: readonly SignalRecord[], region: PlannerRegion, s: PlannerSettings, kinds: readonly SignalKind[]): RegionRecords {
  const byKind = {} as Record<SignalKind, SignalRecord[] | readonly SignalRecord[]>;
  for (const k of KIND_LIST) byKind[k.name] = NONE;
  for (const k of kinds) byKind[k] = [];
  for (const ks of Object.values(DERIVATIONS)) for (const k of ks) if (byKind[k] === NONE) byKind[k] = [];
  for (const r of recs) {
    const list = byKind[r.signal.kind];
    if (list !== NONE) (list as SignalRecord[]).push(r);
  }
  const grid = [...byKind['grid.alert'], ...byKind['grid.event']];
  return { byKind, facts: gridFacts(region, grid, byKind['power.budget'], s), tally: healthScratch(byKind['health.probe']) };
}
