/**
 * Plan reuse (ADR 0009): a region's schedule from the last plan made with the same settings object, kept with the inputs it was made from.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { RegionId, RegionStep } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { PlannerSettings } from '../settings.js';
import type { RegionRecords } from '../rules/rule.js';

/**
 * What the last plan made with a settings object made for one region, and from what: its
 * records (compared by content: sameData), its overrides and the fleet's freezes (as JSON),
 * and whether the inputs were frozen. A region's schedule depends on nothing else, so a plan
 * whose inputs for the region are the same reuses it.
 */
export class RegionMemo {
  /** The schedule again under the safety pass's floors, for the floor segments (as JSON) it was made for. */
  floored?: { key: string; steps: RegionStep[] };
  /** The schedule again with the practice runs that go (rules/practice.ts), for the runs (as JSON) it was made for. */
  practiced?: { key: string; steps: RegionStep[]; grid: [number, number][] | null };
  readonly steps: RegionStep[];
  readonly grid: [number, number][] | null;
  readonly loss: [number, number][] | null;
  constructor(
    /** The region's records it was made from (an array of the plan's own, never changed after). */
    private readonly recs: readonly SignalRecord[],
    private readonly ovsKey: string,
    private readonly freezeKey: string,
    private readonly frozen: boolean,
    readonly rr: RegionRecords,
    readonly instants: ReadonlyMap<number, number>,
    made: { steps: RegionStep[]; grid: [number, number][] | null; loss: [number, number][] | null },
  ) {
    this.steps = made.steps;
    this.grid = made.grid;
    this.loss = made.loss;
  }

  /** The same records (by content): the split records (rr) and instants still hold. */
  sameRecords(recs: readonly SignalRecord[]): boolean {
    if (recs.length !== this.recs.length) return false;
    for (let i = 0; i < recs.length; i++) if (!sameData(recs[i], this.recs[i])) return false;
    return true;
  }

  /** The same inputs otherwise (overrides, the fleet's freezes and the loss verdicts as keys, frozen). */
  sameKeys(ovsKey: string, freezeKey: string, frozen: boolean): boolean {
    return ovsKey === this.ovsKey && freezeKey === this.freezeKey && frozen === this.frozen;
  }
}

/**
 * Structural equality of JSON-like data (records, as stores hand them out: plain objects,
 * arrays, strings, finite and infinite numbers). Content, not identity: both stores hand out
 * new objects with every snapshot.
 */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    n++;
    if (!Object.hasOwn(y, k) || !sameData(x[k], y[k])) return false;
  }
  for (const k in y) if (Object.hasOwn(y, k)) n--;
  return n === 0;
}

/** Per settings object (a reload makes a new one; settings are never changed in place), each region's RegionMemo. */
export const regionMemos = new WeakMap<PlannerSettings, Map<RegionId, RegionMemo>>();
