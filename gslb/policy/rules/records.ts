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

/** Every kind read as empty: the shape each region's `byKind` starts from (copied, never written). */
const EMPTY_BY_KIND: Readonly<Record<SignalKind, readonly SignalRecord[]>> = Object.freeze(Object.fromEntries(KIND_LIST.map((k) => [k.name, NONE])) as Record<SignalKind, readonly SignalRecord[]>);

/**
 * `kinds` with the derivations' kinds, once per list (the planner passes the same ROUTED_KINDS
 * for every region): a memo of a pure function, so every node still plans the same bytes.
 */
const routedMemo = new WeakMap<readonly SignalKind[], readonly SignalKind[]>();
function withDerivations(kinds: readonly SignalKind[]): readonly SignalKind[] {
  let all = routedMemo.get(kinds);
  if (!all) routedMemo.set(kinds, (all = [...new Set([...kinds, ...Object.values(DERIVATIONS).flat()])]));
  return all;
}

/**
 * A region's records routed: `byKind[k]` holds its records of kind k in record order for
 * every kind of `kinds` and of the derivations; every other kind reads as empty. Then the
 * derivations.
 */
export function routeRecords(recs: readonly SignalRecord[], region: PlannerRegion, s: PlannerSettings, kinds: readonly SignalKind[]): RegionRecords {
  const byKind: Record<SignalKind, SignalRecord[] | readonly SignalRecord[]> = { ...EMPTY_BY_KIND };
  for (const k of withDerivations(kinds)) byKind[k] = [];
  for (const r of recs) {
    const list = byKind[r.signal.kind];
    if (list !== NONE) (list as SignalRecord[]).push(r);
  }
  const grid = [...byKind['grid.alert'], ...byKind['grid.event']];
  return { byKind, facts: gridFacts(region, grid, byKind['power.budget'], s), tally: healthScratch(byKind['health.probe']) };
}
