/**
 * The core is total (issue 27, ADR 0020): for every input the validators accept, the reducer,
 * the planner and `decide` return; they never throw. Property-based, with fast-check:
 * signals of every kind generated from the kinds' value schemas (test/helpers/signal-arbitrary.ts;
 * boundary values favoured: each range's ends, 0, -0, 2^53 − 1, the extreme doubles in range)
 * and mutations of them go through validation → the reducer → `plan` (as served and frozen,
 * with the example fleet's policy and with grid-loss bindings and trust set) → `decide` for a
 * client of every region at several instants.
 *
 * Operator overrides too (test/helpers/override-arbitrary.ts): every request that stores or
 * ends one (POST /v1/overrides with each action, a region's undrain, the freeze on and off,
 * distrust and trust again, windows added and skipped, DELETE /v1/overrides/:id) drawn from
 * its route's body schema, checked as the API checks it (the route's body schema compiled by
 * fastify's validator with the API's options, the strict text rules, then the service's own
 * checks: overrideOf, freezeOf, distrustOf, checkWindow), made over the day before the instant
 * planned at, so some have ended by then; the accepted ones are the snapshot's overrides.
 *
 * What must hold: validation either accepts or refuses with a SignalError naming a field
 * (no other exception), an override request is accepted or refused with a 400 naming a field
 * (a validation error or an OverrideError); nothing after it throws; every answer has a finite
 * TTL of at least the minimum and names a region that serves the name, or none; the plan's
 * shares lie in [0, 1]; a region forced down at the instant planned at is down then.
 *
 * Cases: GRIDSTEER_PROP_CASES (default 5,000 in `npm test`; `npm run test:props` runs
 * 100,000), seed GRIDSTEER_PROP_SEED (default fixed, printed; a failure prints the seed and
 * the path to replay it). GRIDSTEER_PROP_DEBUG=1 prints why each refused override request was
 * refused (for tuning the generators: most should be accepted).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { loadConfig } from '../gslb/config/load.js';
import { plannerSettings } from '../gslb/control/setup.js';
import { SignalError, validateSignal } from '../gslb/state/signals.js';
import { reduce, DEFAULT_RULES } from '../gslb/state/reducer.js';
import { gridSharesAt, operatorShareAt, plan, type PlannerSettings } from '../gslb/policy/planner/index.js';
import { decide, regionStepAt, type DecideName } from '../gslb/policy/decide.js';
import { HORIZON_MS } from '../gslb/policy/rules/windows.js';
import type { Signal } from '../gslb/model/types.js';
import type { DemandBucket, SignalRecord } from '../gslb/model/snapshot.js';
import type { SubnetKey } from '../gslb/model/cell.js';
import { INSTANT_MAX, INSTANT_MIN } from '../gslb/model/domains.js';
import { FLEET, OVERRIDE_ACTIONS, type Override } from '../gslb/model/types.js';
import { distrustOf, freezeOf, OverrideError, overrideOf, type OverrideRequest } from '../gslb/control/service.js';
import { checkWindow, safetyFactsOf } from '../gslb/config/windows.js';
import { nextOccurrences } from '../gslb/policy/rules/windows.js';
import { AJV_OPTIONS, checkBody, strictBodyValidator } from '../gslb/api/strict.js';
import { ApiError } from '../gslb/api/errors.js';
import { OverrideBodySchema } from '../gslb/api/routes/state.js';
import { DistrustBody, FreezeBody } from '../gslb/api/routes/operator.js';
import { WindowBody } from '../gslb/api/routes/windows.js';
import type { WindowSpec } from '../gslb/model/windows.js';
import { exampleConfig } from './helpers/paths.js';
import { mutatedSignal, validSignal } from './helpers/signal-arbitrary.js';
import { bodyAt, overrideOps, type OverrideOp } from './helpers/override-arbitrary.js';

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
const SAFETY = safetyFactsOf(loaded.config, loaded.regions);

// The routes' body validators as the API builds them (app.ts: fastify's compiler, bodies not coerced).
const compile = strictBodyValidator({}, AJV_OPTIONS as never);
const bodyValidator = (schema: unknown, url: string) => compile({ schema, method: 'POST', url, httpPart: 'body' } as never) as unknown as (b: unknown) => boolean;
const BODY = { create: bodyValidator(OverrideBodySchema, '/v1/overrides'), freeze: bodyValidator(FreezeBody, '/v1/automation/freeze'), distrust: bodyValidator(DistrustBody, '/v1/grid/distrust'), window: bodyValidator(WindowBody, '/v1/windows') };

/** A refusal as the API gives it: a 400 naming a field. */
class Refused extends Error {}

/** What the API makes of a body before its handler: parsed from JSON, the strict text rules, the route's schema (defaults filled in). */
function received(op: 'create' | 'freeze' | 'distrust' | 'window', body: Record<string, unknown>, at: number): Record<string, unknown> {
  const wire: unknown = JSON.parse(JSON.stringify(bodyAt(body, at)));
  try {
    checkBody(wire);
  } catch (e) {
    if (e instanceof ApiError && e.statusCode === 400) throw new Refused(e.message);
    throw e;
  }
  const validate = BODY[op] as ((b: unknown) => boolean) & { errors?: unknown };
  if (!validate(wire)) throw new Refused(`${op}: the body schema refuses it: ${JSON.stringify(validate.errors)?.slice(0, 200)}`);
  return wire as Record<string, unknown>;
}

const live = (o: Override, t: number) => o.start <= t && (o.end === undefined || t < o.end);

/**
 * Applies the requests as the services do (gslb/control/service.ts, operator.ts, windows.ts),
 * each at its own instant; returns the overrides stored after the last, as a snapshot has them.
 */
function applyOps(ops: readonly OverrideOp[], now: number, settings: PlannerSettings, counts: { accepted: number; refused: number; actions: Record<string, number> }): Override[] {
  let stored: Override[] = [];
  let next = 1;
  const store = (o: Omit<Override, 'id'>) => {
    stored.push({ id: `ov-${next++}`, ...o } as Override);
    counts.actions[o.action] = (counts.actions[o.action] ?? 0) + 1;
  };
  for (const op of ops) {
    const at = Math.max(INSTANT_MIN, now - op.ago);
    try {
      switch (op.op) {
        case 'create': {
          const b = received('create', op.body, at);
          store(overrideOf(b as unknown as OverrideRequest, 'alice', regionSet, at));
          break;
        }
        case 'freeze': {
          const b = received('freeze', op.body, at) as { frozen: boolean; reason: string; until?: number };
          if (!b.frozen) {
            freezeOf({}, b.reason, 'alice', at, b.until); // the same checks as freeze on
            stored = stored.filter((o) => o.action !== 'freeze');
            break;
          }
          if (stored.some((o) => o.action === 'freeze')) throw new Refused('body.frozen: already frozen');
          const hold = gridSharesAt({ configHash: 'props', snapshot: { revision: next, records: [], overrides: stored, demand: [] }, settings, horizonEpoch: Math.floor(at / HORIZON_MS) }, at);
          store(freezeOf(hold, b.reason, 'alice', at, b.until));
          break;
        }
        case 'distrust': {
          const b = received('distrust', op.body, at) as { source?: string; principal?: string; distrusted: boolean; reason: string; until?: number };
          const target = { ...(b.source !== undefined ? { source: b.source } : {}), ...(b.principal !== undefined ? { principal: b.principal } : {}) };
          const o = distrustOf(target, b.reason, 'alice', at, b.until);
          const same = (x: Override) => x.action === 'distrust' && x.source === o.source && x.principal === o.principal && (x.end === undefined || x.end > at);
          if (!b.distrusted) {
            if (!stored.some(same)) throw new Refused('body.source: no distrust of it in force');
            stored = stored.filter((x) => !same(x));
          } else if (stored.some(same)) throw new Refused('body.source: already distrusted');
          else store(o);
          break;
        }
        case 'window': {
          const spec = received('window', op.body, at) as unknown as WindowSpec;
          const { window, problems } = checkWindow(spec, regionSet, SAFETY, 'api', at);
          if (problems.length > 0 || !window) throw new Refused(`body.${problems[0]?.path.join('.')}: ${problems[0]?.message}`);
          if ((settings.windows ?? []).some((w) => w.id === spec.id) || stored.some((o) => o.window?.id === spec.id)) throw new Refused('body.id: already a window');
          store({ region: FLEET, action: 'window', ramp: 0, window, actor: 'alice', reason: spec.reason, start: at });
          break;
        }
        case 'undrain': {
          const drained = stored.filter((o) => o.action === 'drain');
          const region = drained.length > 0 && op.pick % 4 !== 0 ? drained[op.pick % drained.length]!.region : op.region;
          if (!regionSet.has(region)) throw new Refused('params.id: not a region');
          if (op.reason.trim() === '') throw new Refused('query.reason: blank');
          const mine = stored.filter((o) => o.region === region);
          const from = operatorShareAt(settings, region, mine, at);
          const drains = mine.filter((o) => o.action === 'drain' || o.action === 'undrain');
          if (!drains.some((o) => o.action === 'drain')) throw new Refused('params.id: no drain to end');
          const restoreMs = settings.drain.restoreMs;
          stored = stored.filter((o) => !drains.includes(o));
          if (from < 1 && restoreMs > 0) store({ region, action: 'undrain', value: from, ramp: restoreMs, actor: 'alice', reason: op.reason, start: at, end: at + restoreMs });
          break;
        }
        case 'end': {
          if (stored.length === 0) throw new Refused('params.id: no such override');
          stored.splice(op.pick % stored.length, 1);
          break;
        }
        case 'skip': {
          const windows = [...(settings.windows ?? []), ...stored.flatMap((o) => (o.action === 'window' && o.window ? [o.window] : []))];
          if (windows.length === 0 || op.reason.trim() === '') throw new Refused('params.id: no window');
          const w = windows[windows.length - 1 - (op.pick % windows.length)]!; // pick 0: the window added last
          const skips = stored.flatMap((o) => (o.action === 'window-skip' && o.skip ? [{ window: o.skip.window, at: o.skip.at, why: o.reason }] : []));
          // The service looks 16 occurrences and 62 days ahead; the windows generated recur daily or weekly (or on 29 February),
          // so the next one not yet started is among the first three of the next 8 days (cron expansion is the costly part).
          const occ = nextOccurrences(w, skips, at, 3, 8).find((x) => x.start > at && x.skipped === undefined);
          if (!occ) throw new Refused('params.id: nothing to skip');
          store({ region: FLEET, action: 'window-skip', ramp: 0, skip: { window: w.id, at: occ.start }, actor: 'alice', reason: op.reason, start: at, end: occ.end });
          break;
        }
      }
      counts.accepted++;
    } catch (e) {
      if (e instanceof Refused || e instanceof OverrideError) {
        counts.refused++;
        if (process.env.GRIDSTEER_PROP_DEBUG) console.log(`# refused ${op.op}: ${e.message.slice(0, 120)}`);
        continue;
      }
      throw new Error(`the ${op.op} request threw ${String(e)} (not a 400) for ${JSON.stringify(op)?.slice(0, 400)}`);
    }
  }
  return stored;
}

const OPS = overrideOps(regions);

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
      ops: OPS,
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
  const ov = { accepted: 0, refused: 0, planned: 0, actions: {} as Record<string, number> };
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
    const settings = c.bindings ? bound : served;
    const overrides = applyOps(c.ops, c.now, settings, ov);
    ov.planned += overrides.length;
    const snapshot = { revision: c.inputs.length, records: [...records.values()].sort((a, b) => (a.id < b.id ? -1 : 1)), overrides, demand };
    const p = plan({ configHash: 'props', snapshot, settings, ...(c.frozen ? { frozen: true } : {}), horizonEpoch: Math.floor(c.now / HORIZON_MS) });
    for (const steps of Object.values(p.regions)) for (const st of steps) assert.ok(st.share >= 0 && st.share <= 1, `share ${st.share}`);
    for (const o of overrides) if (o.action === 'force-down' && live(o, c.now)) assert.ok(regionStepAt(p, o.region, c.now).down, `${o.region} is forced down at ${c.now} [${o.id}]`);
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
  t.diagnostic(`${out.numRuns} cases, seed ${SEED}: ${accepted} signals accepted, ${refused} refused with a SignalError, ${ov.accepted} override requests accepted, ${ov.refused} refused with a 400, ${ov.planned} overrides planned with (stored: ${JSON.stringify(ov.actions)}), ${answered} answers`);
  console.log(`# core-total: ${out.numRuns} cases, seed ${SEED}${out.failed ? `, FAILED at path ${out.counterexamplePath}` : ''}`);
  if (out.failed) {
    assert.fail(`the core threw (seed ${SEED}, path ${out.counterexamplePath}; replay: GRIDSTEER_PROP_SEED=${SEED}): ${String(out.errorInstance)}\ncounterexample: ${fc.stringify(out.counterexample).slice(0, 3000)}`);
  }
  assert.equal(out.numRuns, CASES);
  assert.ok(accepted > CASES, `most generated signals pass validation (${accepted} accepted, ${refused} refused)`);
  assert.ok(refused > CASES / 10, `the broken ones are refused (${refused})`);
  assert.ok(ov.accepted > CASES / 2 && ov.refused > CASES / 10, `override requests: ${ov.accepted} accepted, ${ov.refused} refused`);
  // Every action an operator can store was stored and planned with.
  if (CASES >= 1000) for (const a of OVERRIDE_ACTIONS) assert.ok((ov.actions[a] ?? 0) > 0, `no ${a} override was accepted: ${JSON.stringify(ov.actions)}`);
});
