/**
 * Quarantine, the search (ADR 0020): when planning a snapshot throws, which of its records
 * make it throw. The node that finds them writes them to the store as quarantine entries
 * (StateStore.quarantine), which every node reads and plans without
 * (gslb/policy/quarantine.ts); the search only runs on the node that met the failure.
 *
 * Deterministic: the same snapshot, settings and planner give the same records on every
 * node (the candidates are in a fixed order and the search has no randomness), so two nodes
 * that search at once write the same entries, and the store keeps one of each.
 *
 * How: plan with every record held out. If that throws too, no record is to blame (the
 * configuration, or a defect): the search finds nothing and the node keeps its last plan.
 * Otherwise the records are put back in their order, a block at a time: a block that plans
 * is kept; one that throws is split in halves and each tried; a single record that throws
 * stays out and is reported with the error it caused. About 2 k · log2(n) plans for k bad
 * records among n, and never more than `maxPlans`.
 */
import type { StoreSnapshot } from '../model/snapshot.js';
import { candidatesOf, quarantineOf, withoutTargets, type Candidate } from '../policy/quarantine.js';

export interface Found extends Candidate {
  /** The error planning threw with this record put back, in words. */
  why: string;
}

export interface SearchResult {
  /** The records that make planning throw, in candidate order. */
  found: Found[];
  /** Plans made. */
  plans: number;
  /** Planning throws even with every record held out: the error (no record is to blame). */
  baseError: string | null;
  /** The search stopped at maxPlans before it had tried every record (those not tried are not reported). */
  exhausted: boolean;
}

/** An error's first line, at most 300 characters. */
export function errorWords(e: unknown): string {
  const m = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return (m.split('\n')[0] ?? '').slice(0, 300);
}

/**
 * The records of `snapshot` without which planning does not throw. `planWith` plans a
 * snapshot (it throws when planning does). Records the snapshot's quarantine already
 * holds out are not candidates.
 */
export function findPoison(snapshot: StoreSnapshot, planWith: (s: StoreSnapshot) => unknown, maxPlans = 2000): SearchResult {
  const already = quarantineOf(snapshot).targets;
  const base: StoreSnapshot = withoutTargets(snapshot, already);
  const cands = candidatesOf(base);
  let plans = 0;
  const attempt = (held: ReadonlySet<string>): unknown => {
    plans++;
    try {
      planWith(withoutTargets(base, held));
      return null;
    } catch (e) {
      return e ?? new Error('planning threw nothing describable');
    }
  };
  let held = new Set(cands.map((c) => c.target));
  const none = attempt(held);
  if (none !== null) return { found: [], plans, baseError: errorWords(none), exhausted: false };
  const found: Found[] = [];
  let exhausted = false;
  const putBack = (block: Candidate[]): void => {
    if (block.length === 0) return;
    if (plans >= maxPlans) {
      exhausted = true;
      return;
    }
    const trial = new Set(held);
    for (const c of block) trial.delete(c.target);
    const err = attempt(trial);
    if (err === null) {
      held = trial;
      return;
    }
    if (block.length === 1) {
      found.push({ ...block[0]!, why: errorWords(err) });
      return;
    }
    const mid = Math.ceil(block.length / 2);
    putBack(block.slice(0, mid));
    putBack(block.slice(mid));
  };
  putBack(cands);
  return { found, plans, baseError: null, exhausted };
}
