/**
 * Per-instance counters of collectors. A collector declares its counters once
 * (`defineCounters(template)`: numbers, maps of numbers, nested, plus the odd non-number leaf
 * such as `listening`) and each running instance gets its own zeroed copy from its context
 * (`countersFor(ctx, family)`), so two instances of one collector never share counters.
 *
 * Who reads them:
 * - the collector host (gslb/control/collectors.ts) hands the copies out through `ctx.counters` and
 *   sums, per collector, the copies of the instances it started: /metrics exports every numeric
 *   leaf of that sum as gridsteer_collector_events_total{collector, event="a.b"};
 * - `family.total`, a read-only live sum over every instance made in this process (also those
 *   of a test's context, which has no `ctx.counters`): for tests and diagnostics only. It is
 *   never written; nothing in the collectors reads it.
 *
 * Contract: counters only grow (an instance never resets its copy); summing never throws; a
 * non-number leaf sums to the newest instance's value that differs from the template's.
 */
import type { CollectorContext } from '../types.js';

export interface CounterFamily<T extends object> {
  /** What a fresh instance starts from (frozen). */
  readonly template: Readonly<T>;
  /** A fresh copy for one running instance, counted into `total`. */
  create(): T;
  /** Live sums over every instance this process made: read-only, for tests and diagnostics. */
  readonly total: Readonly<T>;
}

/** Declares a collector's counters. `template` holds the starting values (usually zeros). */
export function defineCounters<T extends object>(template: T): CounterFamily<T> {
  const frozen = structuredClone(template);
  const made: T[] = [];
  const total = {} as T;
  for (const key of Object.keys(frozen)) {
    Object.defineProperty(total, key, { enumerable: true, get: () => sumCounters(made.map((m) => (m as Record<string, unknown>)[key]), (frozen as Record<string, unknown>)[key]) });
  }
  return {
    template: Object.freeze(frozen),
    create() {
      const c = structuredClone(frozen);
      made.push(c);
      return c;
    },
    total: Object.freeze(total),
  };
}

const isTree = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The sum of counter trees shaped like `template`: numbers add up, objects are summed key by
 * key (keys some trees lack count as absent), any other leaf is the newest tree's value that is
 * not the template's. Trees are in creation order, oldest first. A fresh object each call.
 */
export function sumCounters(trees: readonly unknown[], template: unknown): unknown {
  if (typeof template === 'number' || (template === undefined && trees.some((t) => typeof t === 'number'))) {
    let n = 0;
    for (const t of trees) if (typeof t === 'number' && Number.isFinite(t)) n += t;
    return n;
  }
  if (isTree(template) || (template === undefined && trees.some(isTree))) {
    const out: Record<string, unknown> = {};
    const keys = new Set<string>(isTree(template) ? Object.keys(template) : []);
    for (const t of trees) if (isTree(t)) for (const k of Object.keys(t)) keys.add(k);
    for (const k of keys) out[k] = sumCounters(trees.map((t) => (isTree(t) ? t[k] : undefined)), isTree(template) ? template[k] : undefined);
    return out;
  }
  for (let i = trees.length - 1; i >= 0; i--) if (trees[i] !== template && trees[i] !== undefined) return trees[i];
  return template;
}

/** This instance's counters: from its context when the host gives them, else a fresh copy. */
export function countersFor<T extends object>(ctx: Pick<CollectorContext, 'counters'>, family: CounterFamily<T>): T {
  return ctx.counters ? ctx.counters(family) : family.create();
}
