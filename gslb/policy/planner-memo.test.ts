/**
 * The planner reuses a region's schedule from the last plan made with the same settings
 * object when the region's inputs are unchanged (RegionMemo in planner/memo.ts), and skips the
 * instants where only a probe's vote changes when the votes decide as before (VOTES_ONLY).
 * These tests hold both to one promise: a plan is the same as one made from scratch at
 * every instant. A seeded random
 * walk over a fleet with every kind of input — probes that came back up (slow start), load
 * (saturated, throttled), capacity, power budgets, grid events with drain curves and
 * cancellations, operator drains, forces and weights, fleet freezes, frozen inputs, static
 * weights, the safety limits and measured demand (the spill pass rewrites steps) — plans each
 * snapshot with the shared settings and with a fresh copy of them (nothing to reuse), and the
 * two must be equal. It also checks that reuse happens: an unchanged snapshot makes no region
 * again, one changed record makes one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, planCounting, type PlannerSettings } from './planner/index.js';
import { xorshift32 } from '../../test/helpers/policy.js';
import { IDS, World, fleetSettings, populate, step } from '../../test/helpers/plan-walk.js';

test('a plan is the same with or without reuse and skipping, over a random walk of 150 changes (three seeds)', () => {
  const health: [number, PlannerSettings['stale']['health.probe'] | undefined][] = [
    [1, { keepMs: 5_000, then: 'ignore' }],
    [7, { keepMs: 15_000, then: 'down' }],
    [42, undefined],
  ];
  for (const [seed, stale] of health) {
    const w = new World(xorshift32(seed));
    populate(w);
    const shared = fleetSettings(stale);
    let reusedSome = false;
    let prevFrozen = true; // nothing made yet
    for (let i = 0; i < 150; i++) {
      const { what, regions } = step(w);
      const frozen = w.r() % 10 === 0;
      const snapshot = w.snapshot();
      const { plan: reused, made } = planCounting({ configHash: 'cfg', snapshot, settings: shared, ...(frozen ? { frozen } : {}) });
      // From scratch, and evaluating every instant (also those where only a probe's vote
      // changes, which the planner skips when the votes decide as before).
      const fresh = plan({ configHash: 'cfg', snapshot, settings: { ...shared }, exhaustive: true, ...(frozen ? { frozen } : {}) });
      assert.deepEqual(reused, fresh, `seed ${seed}, change ${i} (${what}${frozen ? ', frozen' : ''})`);
      if (made < IDS.length) reusedSome = true;
      // Plan the same snapshot again: nothing to make (unless this one was frozen, which
      // made every region for frozen inputs; the check then runs on the next plain plan).
      if (!frozen && !prevFrozen) assert.ok(made <= regions, `seed ${seed}, change ${i} (${what}): made ${made}, more than the ${regions} it changed`);
      prevFrozen = frozen;
      if (!frozen) {
        const again = planCounting({ configHash: 'cfg', snapshot, settings: shared });
        assert.equal(again.made, 0, `seed ${seed}, change ${i}: the same inputs again made ${again.made} regions`);
        assert.deepEqual(again.plan, fresh);
      }
    }
    assert.ok(reusedSome);
  }
});

test('one changed record makes one region again; a settings object of its own makes all', () => {
  const w = new World(xorshift32(3));
  populate(w);
  const s = fleetSettings();
  assert.equal(planCounting({ configHash: 'cfg', snapshot: w.snapshot(), settings: s }).made, IDS.length);
  assert.equal(planCounting({ configHash: 'cfg', snapshot: w.snapshot(), settings: s }).made, 0);
  w.load('r04');
  const one = planCounting({ configHash: 'cfg', snapshot: w.snapshot(), settings: s });
  assert.equal(one.made, 1);
  assert.deepEqual(one.plan, plan({ configHash: 'cfg', snapshot: w.snapshot(), settings: { ...s } }));
  assert.equal(planCounting({ configHash: 'cfg', snapshot: w.snapshot(), settings: { ...s } }).made, IDS.length);
});

test("what a caller does to a plan's steps does not reach the next plan", () => {
  const w = new World(xorshift32(5));
  populate(w);
  const s = fleetSettings();
  const first = plan({ configHash: 'cfg', snapshot: w.snapshot(), settings: s });
  const expected = structuredClone(first);
  for (const steps of Object.values(first.regions))
    for (const st of steps) {
      st.share = 0.123;
      st.homes = { r00: 0 };
      st.reasons = ['scribbled'];
    }
  assert.deepEqual(plan({ configHash: 'cfg', snapshot: w.snapshot(), settings: s }), expected);
});

test('a record with the same id and times but other content is not taken for the old one', () => {
  const w = new World(xorshift32(9));
  populate(w);
  const s = fleetSettings();
  const before = w.snapshot();
  plan({ configHash: 'cfg', snapshot: before, settings: s });
  // The same record (id, observedAt, expiresAt) with another value, as a hand-made snapshot
  // or a restored backup could hold: the region is made again, and the plan follows it.
  const i = before.records.findIndex((r) => r.signal.region === 'r01' && r.signal.kind === 'capacity');
  const changed = structuredClone(before);
  const rec = changed.records[i]!;
  rec.signal.value = { fraction: 0.1 };
  if (rec.fold.kind === 'applied') rec.fold.value = { fraction: 0.1 };
  const r = planCounting({ configHash: 'cfg', snapshot: changed, settings: s });
  assert.equal(r.made, 1);
  assert.deepEqual(r.plan, plan({ configHash: 'cfg', snapshot: changed, settings: { ...s } }));
  assert.ok(JSON.stringify(r.plan.regions.r01).includes('capacity 0.1 reported by inventory'), JSON.stringify(r.plan.regions.r01));
});
