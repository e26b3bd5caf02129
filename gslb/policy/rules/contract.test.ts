/**
 * The rule contract (rules/rule.ts): a rule reads only the kinds and derivations it declares,
 * and refusal does not depend on the order the rules run in. Run over a seeded walk of every
 * input kind (test/helpers/plan-walk.ts) with every kind routed, so a read of an undeclared
 * kind meets records and is caught; every kind's own examples (its kind file's
 * `examples.valid`) are put into the walk as well, so a new kind's rule meets records of it
 * here with no edit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KIND_LIST, type SignalKind } from '../../model/kinds/index.js';
import type { Signal } from '../../model/types.js';
import { VIEW_RULES, applyViewRules } from './index.js';
import { routeRecords } from './records.js';
import { type RegionRecords, type ViewAcc, type ViewRule, Texts, refusal } from './rule.js';
import { newAcc } from '../planner/view.js';
import { xorshift32 } from '../../../test/helpers/policy.js';
import { IDS, World, fleetSettings, populate, step } from '../../../test/helpers/plan-walk.js';

const ALL_KINDS = KIND_LIST.map((k) => k.name) as SignalKind[];

/** rr as `rule` may see it: any other kind's records or an undeclared derivation throws, naming both. */
function guarded(rr: RegionRecords, rule: ViewRule): RegionRecords {
  const byKind = new Proxy(rr.byKind, {
    get(o, k) {
      if (typeof k === 'string' && !rule.kinds.includes(k as SignalKind)) throw new Error(`rule "${rule.name}" read kind ${k}, which it does not declare in kinds`);
      return o[k as SignalKind];
    },
  });
  return new Proxy(rr, {
    get(o, k) {
      if (k === 'byKind') return byKind;
      if ((k === 'facts' || k === 'tally') && !(rule.derived ?? []).includes(k)) throw new Error(`rule "${rule.name}" read the derivation ${k}, which it does not declare in derived`);
      return o[k as keyof RegionRecords];
    },
  });
}

/** Every region of every snapshot of a seeded walk, at its instants and around them. */
function* cases(seed: number): Generator<{ acc: () => ViewAcc; rr: RegionRecords; run: (rules: readonly ViewRule[], a: ViewAcc) => void }> {
  const w = new World(xorshift32(seed));
  populate(w);
  const s = fleetSettings();
  for (let i = 0; i < 60; i++) {
    step(w);
    // One of each kind's examples, for a region of the walk's choosing (the walk itself models only the kinds it knows).
    for (const k of KIND_LIST) {
      const value: unknown = structuredClone(w.pick<unknown>(k.examples.valid));
      const id = (value as { id?: unknown } | null)?.id;
      const at = w.at();
      w.put({ region: w.pick(IDS), kind: k.name, source: 'test/examples', key: typeof id === 'string' ? id : 'example', observedAt: at, expiresAt: at + 2 * 60_000, value } as Signal);
    }
    const snap = w.snapshot();
    const texts = new Texts();
    const ctx = { freezes: snap.overrides.filter((o) => o.action === 'freeze'), texts };
    for (const region of s.regions) {
      const recs = snap.records.filter((r) => r.signal.region === region.id);
      const rr = routeRecords(recs, region, s, ALL_KINDS);
      const ovs = snap.overrides.filter((o) => o.region === region.id);
      const times = new Set<number>([0]);
      for (const r of recs) times.add(r.signal.expiresAt).add(r.signal.observedAt);
      for (const f of rr.facts) times.add(f.from).add(f.end).add(f.start - 1);
      for (const t of times) {
        if (!Number.isFinite(t)) continue;
        yield { acc: () => newAcc(region, rr, ovs, t, s, ctx), rr, run: (rules, a) => rules.forEach((r) => r.apply(a)) };
      }
    }
  }
}

test('a rule reads only the kinds and derivations it declares (every kind routed, over a seeded walk)', () => {
  let views = 0;
  for (const seed of [1, 7, 42]) {
    for (const c of cases(seed)) {
      const a = c.acc();
      for (const rule of VIEW_RULES) {
        (a as { rr: RegionRecords }).rr = guarded(c.rr, rule);
        rule.apply(a);
        rule.instants?.({ region: a.region, rr: a.rr, ovs: a.ovs, s: a.s, ctx: a.ctx }, () => {});
      }
      views++;
    }
  }
  assert.ok(views > 1000, `views checked: ${views}`);
});

test('the guard catches a rule that reads a kind it did not declare', () => {
  const sneaky: ViewRule = { ...VIEW_RULES.find((r) => r.name === 'compute capacity')!, kinds: ['capacity'] };
  let caught = 0;
  for (const c of cases(7)) {
    const a = c.acc();
    (a as { rr: RegionRecords }).rr = guarded(c.rr, sneaky);
    try {
      sneaky.apply(a);
    } catch (e) {
      assert.match((e as Error).message, /read kind load\.metrics/);
      caught++;
    }
  }
  assert.ok(caught > 0);
});

test('refusal, caps and down do not depend on the order of the rules that set them (windows, grid, operator swapped)', () => {
  const names = VIEW_RULES.map((r) => r.name);
  const at = (n: string) => names.indexOf(n);
  const swapped = [...VIEW_RULES];
  // Every rule that may refuse, moved: the operator rule after the grid obligations, the windows after them too.
  const [op] = swapped.splice(at('operator drain / cap'), 1);
  swapped.splice(swapped.findIndex((r) => r.name === 'grid obligations') + 1, 0, op!);
  const [win] = swapped.splice(swapped.findIndex((r) => r.name === 'recurring windows'), 1);
  swapped.splice(swapped.findIndex((r) => r.name === 'grid obligations') + 1, 0, win!);
  assert.notDeepEqual(swapped.map((r) => r.name), names);
  let refusals = 0;
  let n = 0;
  for (const seed of [1, 42, 99]) {
    for (const c of cases(seed)) {
      const a = c.acc();
      applyViewRules(a);
      const b = c.acc();
      c.run(swapped, b);
      assert.equal(refusal(b) !== undefined, refusal(a) !== undefined);
      assert.equal(b.down, a.down);
      assert.equal(b.share, a.share);
      assert.deepEqual([...b.reasons].sort(), [...a.reasons].sort());
      if (refusal(a) !== undefined) refusals++;
      n++;
    }
  }
  assert.ok(n > 1000 && refusals > 0, `views ${n}, refusing ${refusals}`);
});
