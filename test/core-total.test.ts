/**
 * The core is total (issue 27, ADR 0020): for every input the validators accept, the reducer,
 * the planner and `decide` return; they never throw. Property-based, with fast-check:
 * signals of every kind generated from the kinds' value schemas (test/helpers/signal-arbitrary.ts;
 * boundary values favoured: each range's ends, 0, -0, 2^53 − 1, the extreme doubles in range)
 * and mutations of them go through validation → the reducer → `plan` (as served and frozen,
 * with the example fleet's policy and with grid-loss bindings and trust set) → `decide` for a
 * client of every region at several instants.
 *
 * What must hold: validation either accepts or refuses with a SignalError naming a field
 * (no other exception); nothing after it throws; every answer has a finite TTL of at least the
 * minimum and names a region that serves the name, or none; the plan's shares lie in [0, 1].
 *
 * Cases: GRIDSTEER_PROP_CASES (default 5,000 in `npm test`; `npm run test:props` runs
 * 100,000), seed GRIDSTEER_PROP_SEED (default fixed, printed; a failure prints the seed and
 * the path to replay it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { loadConfig } from '../gslb/config/load.js';
import { plannerSettings } from '../gslb/control/setup.js';
import { SignalError, validateSignal } from '../gslb/state/signals.js';
import { reduce, DEFAULT_RULES } from '../gslb/state/reducer.js';
import { plan, type PlannerSettings } from '../gslb/policy/planner/index.js';
import { decide, type DecideName } from '../gslb/policy/decide.js';
import { HORIZON_MS } from '../gslb/policy/rules/windows.js';
import type { Signal } from '../gslb/model/types.js';
import type { DemandBucket, SignalRecord } from '../gslb/model/snapshot.js';
import type { SubnetKey } from '../gslb/model/cell.js';
import { INSTANT_MAX, INSTANT_MIN } from '../gslb/model/domains.js';
import { exampleConfig } from './helpers/paths.js';
import { mutatedSignal, validSignal } from './helpers/signal-arbitrary.js';

const CASES = Number(process.env.GRIDSTEER_PROP_CASES ?? 5000);
const SEED = Number(process.env.GRIDSTEER_PROP_SEED ?? 20261204);

const loaded = loadConfig(exampleConfig);
const regions = loaded.regions.map((r) => r.id);
const regionSet = new Set(regions);
const served = plannerSettings(loaded.config, loaded.regions);
// The same fleet with physical-loss bindings and trust set (ADR 0014), so the loss pass and its alerts run too.
const bound: PlannerSettings = (() => {
  const c = structuredClone(loaded.config) as typeof loaded.config & { policy?: { grid?: Record<string, unknown> } };
  const policy = (c.policy ??= {} as never) as { grid?: Record<string, unknown> };
  policy.grid = { ...(policy.grid ?? {}), loss: { bindings: { 'openadr3/vtn.utility.example': regions, 'grid-alerts/': regions.slice(0, 3) }, maxTrustedLossShare: 0.5 }, trust: { 'grid-alerts/': 'cap' } };
  return plannerSettings(c, loaded.regions);
})();
const NAMES: DecideName[] = loaded.config.names.map((n) => ({
  name: n.name,
  ttl: n.ttl,
  regions: new Map((served.names?.find((x) => x.name === n.name)?.regions ?? regions).map((r) => [r, { v4: [`192.0.2.${regions.indexOf(r) + 1}`], v6: [`2001:db8::${regions.indexOf(r) + 1}`] }])),
  whenAllDown: 'nearest',
}));
const KEY: SubnetKey = { family: 4, hi: 0x14010200, lo: 0, prefix: 24 };

/** The arbitrary of one case: an instant, signals (valid and broken), demand, how to plan. */
const caseArb = fc
  .oneof(fc.constant(Date.UTC(2026, 11, 4, 12)), fc.integer({ min: INSTANT_MIN + 86_400_000, max: INSTANT_MAX - 86_400_000 }))
  .chain((now) =>
    fc.record({
      now: fc.constant(now),
      inputs: fc.array(fc.oneof({ arbitrary: validSignal(regions, now), weight: 4 }, { arbitrary: mutatedSignal(regions, now), weight: 1 }), { minLength: 1, maxLength: 14 }),
      demand: fc.array(
        fc.record({ bucket: fc.integer({ min: -60, max: 0 }).map((k) => Math.floor(now / 10_000) * 10_000 + k * 10_000), home: fc.constantFrom(...regions), name: fc.constantFrom(...NAMES.map((n) => n.name)), queries: fc.oneof(fc.constantFrom(0, 1, 2 ** 31 - 1), fc.double({ min: 0, max: 2 ** 31 - 1, noNaN: true })) }),
        { maxLength: 6 },
      ),
      frozen: fc.boolean(),
      bindings: fc.boolean(),
      refuseEnded: fc.boolean(),
      later: fc.array(fc.oneof(fc.integer({ min: 0, max: 7 * 86_400_000 }), fc.constantFrom(0, 1, 30_000, 3_600_000)), { minLength: 1, maxLength: 4 }),
    }),
  );

test(`the core is total: validation → reducer → plan → decide never throws (${CASES} cases, seed ${SEED})`, (t) => {
  let accepted = 0;
  let refused = 0;
  let answered = 0;
  const property = fc.property(caseArb, (c) => {
    const records = new Map<string, SignalRecord>();
    for (const input of c.inputs) {
      let s: Signal;
      try {
        s = validateSignal(input, c.now, regionSet, { refuseEnded: c.refuseEnded });
      } catch (e) {
        if (!(e instanceof SignalError)) throw new Error(`validation threw ${String(e)} (not a SignalError) for ${JSON.stringify(input)?.slice(0, 400)}`);
        assert.ok(e.field.length > 0, 'a refusal names a field');
        refused++;
        continue;
      }
      accepted++;
      const id = `${s.region}|${s.kind}|${s.source}|${s.key}`;
      const next = reduce(records.get(id), s, DEFAULT_RULES);
      if (next) records.set(id, next);
    }
    const demand: DemandBucket[] = c.demand;
    const snapshot = { revision: c.inputs.length, records: [...records.values()].sort((a, b) => (a.id < b.id ? -1 : 1)), overrides: [], demand };
    const settings = c.bindings ? bound : served;
    const p = plan({ configHash: 'props', snapshot, settings, ...(c.frozen ? { frozen: true } : {}), horizonEpoch: Math.floor(c.now / HORIZON_MS) });
    for (const steps of Object.values(p.regions)) for (const st of steps) assert.ok(st.share >= 0 && st.share <= 1, `share ${st.share}`);
    const instants = [c.now, ...c.later.map((d) => Math.min(INSTANT_MAX, c.now + d)), ...Object.values(p.regions).flatMap((xs) => xs.slice(0, 3).map((x) => x.at))];
    for (const at of instants) {
      for (const home of regions) {
        const name = NAMES[(home.length + at) % NAMES.length]!;
        const a = decide(p, { ranking: [home, ...regions.filter((r) => r !== home)], origin: 'property' }, KEY, name, at % 2 ? 'A' : 'AAAA', at, { minTtl: 5, explain: at % 3 === 0 });
        assert.ok(Number.isFinite(a.ttl) && a.ttl >= 5, `ttl ${a.ttl}`);
        assert.ok(a.region === null || name.regions.has(a.region), `answered ${a.region} for ${name.name}`);
        answered++;
      }
    }
  });
  const out = fc.check(property, { numRuns: CASES, seed: SEED, endOnFailure: true });
  t.diagnostic(`${out.numRuns} cases, seed ${SEED}: ${accepted} signals accepted, ${refused} refused with a SignalError, ${answered} answers`);
  console.log(`# core-total: ${out.numRuns} cases, seed ${SEED}${out.failed ? `, FAILED at path ${out.counterexamplePath}` : ''}`);
  if (out.failed) {
    assert.fail(`the core threw (seed ${SEED}, path ${out.counterexamplePath}; replay: GRIDSTEER_PROP_SEED=${SEED}): ${String(out.errorInstance)}\ncounterexample: ${fc.stringify(out.counterexample).slice(0, 3000)}`);
  }
  assert.equal(out.numRuns, CASES);
  assert.ok(accepted > CASES, `most generated signals pass validation (${accepted} accepted, ${refused} refused)`);
  assert.ok(refused > CASES / 10, `the broken ones are refused (${refused})`);
});
