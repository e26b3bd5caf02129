/**
 * The fleet metrics' pure parts by case tables: power available and headroom (checked
 * against the share the planner gives the same records where power is what binds), health
 * by probes, region state, signal age; then the gauges as a registry exports them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';
import { defaultSettings, plan, regionPowerAt, type PlannerSettings, type RegionPower } from '../policy/planner/index.js';
import { initialPlan, regionStepAt } from '../policy/decide.js';
import { foldRecords, planOf } from '../../test/helpers/policy.js';
import { regionStatusAt } from './fleet.js';
import { REGION_STATES, gridFactsInForce, regionHealthyAt, regionStateAt, registerFleetMetrics, signalAges } from './fleet-metrics.js';
import type { Plan, Signal, SignalKind } from '../model/types.js';
import type { SignalRecord } from '../model/snapshot.js';

const T = 1_800_000_000_000;
const MIN = 60_000;

function settings(over: Partial<PlannerSettings> = {}): PlannerSettings {
  return { ...defaultSettings([{ id: 'a', fullLoadW: 10_000_000, importLimitW: 12_000_000 }, { id: 'b' }, { id: 'c', importLimitW: 3_000_000 }]), ...over };
}

let seq = 0;
function sig(region: string, kind: SignalKind, value: unknown, o: { source?: string; key?: string; at?: number; ttl?: number } = {}): Signal {
  const at = o.at ?? T - 1000 + seq++;
  return { region, kind, source: o.source ?? 'test/1', key: o.key ?? 'k', observedAt: at, expiresAt: at + (o.ttl ?? 10 * MIN), value };
}
const budget = (v: Record<string, number>, o: { source?: string; at?: number; ttl?: number } = {}) => sig('a', 'power.budget', v, { key: 'meter', ...o });
const event = (v: Record<string, unknown>, source = 'openadr3/vtn') =>
  sig('a', 'grid.event', { id: 'ev1', type: 'import-capacity-limit', start: T - MIN, end: T + 10 * MIN, ...v }, { key: 'ev1', source, at: T - 2 * MIN, ttl: 20 * MIN });

test('power: available = import limit (under a grid event limit) + generation + storage discharge; headroom = available − draw', () => {
  type Case = [what: string, region: string, signals: Signal[], want: RegionPower, over?: Partial<PlannerSettings>, t?: number, planCheck?: boolean];
  const cases: Case[] = [
    ['no budget, no import limit anywhere: nothing known', 'b', [], {}],
    ['no budget: the region file\'s import limit', 'a', [], { availableW: 12e6 }],
    ['no budget, another region\'s limit', 'c', [], { availableW: 3e6 }],
    ['budget: import + generation', 'a', [budget({ importLimitW: 6e6, generationW: 2e6 })], { availableW: 8e6 }],
    ['budget with a draw: headroom', 'a', [budget({ importLimitW: 6e6, generationW: 2e6, drawW: 7.5e6 })], { availableW: 8e6, drawW: 7.5e6, headroomW: 0.5e6 }],
    ['drawing more than available: negative headroom', 'a', [budget({ importLimitW: 6e6, drawW: 7e6 })], { availableW: 6e6, drawW: 7e6, headroomW: -1e6 }],
    ['storage with energy: its discharge counts', 'a', [budget({ importLimitW: 6e6, storageWh: 1e6, storageMaxW: 1e6 })], { availableW: 7e6 }],
    ['storage empty: it does not', 'a', [budget({ importLimitW: 6e6, storageWh: 0, storageMaxW: 1e6 })], { availableW: 6e6 }],
    ['budget without an import limit: the region file\'s', 'a', [budget({ generationW: 1e6, drawW: 9e6 })], { availableW: 13e6, drawW: 9e6, headroomW: 4e6 }],
    ['a grid event\'s import limit lowers the configured one', 'a', [event({ limitW: 5e6 })], { availableW: 5e6 }],
    ['…and a budget\'s import, generation still counts', 'a', [event({ limitW: 5e6 }), budget({ importLimitW: 6e6, generationW: 2e6, drawW: 6e6 })], { availableW: 7e6, drawW: 6e6, headroomW: 1e6 }],
    ['an event limit above the import limit changes nothing', 'a', [event({ limitW: 20e6 }), budget({ importLimitW: 6e6 })], { availableW: 6e6 }],
    // (gridPolicy drains ahead of a known limit: the plan's share is already lower, by the drain curve.)
    ['before the event starts: no limit yet', 'a', [event({ limitW: 5e6, start: T + 5 * MIN })], { availableW: 12e6 }, {}, T, false],
    ['a shadowed source: not applied', 'a', [event({ limitW: 5e6 })], { availableW: 12e6 }, { gridShadow: ['openadr3'] }],
    ['a rule without importLimit (load-shed) sets no limit', 'a', [event({ type: 'load-shed', limitW: 5e6 })], { availableW: 12e6 }, {}, T, false],
    ['two budgets (two sources): the smaller availability', 'a', [budget({ importLimitW: 9e6 }, { source: 'mqtt/x' }), budget({ importLimitW: 7e6, drawW: 5e6 }, { source: 'mqtt/y' })], { availableW: 7e6, drawW: 5e6, headroomW: 2e6 }],
    ['a stale budget (past expiry + keep) counts no more', 'a', [budget({ importLimitW: 6e6 }, { ttl: MIN })], { availableW: 12e6 }, {}, T + 20 * MIN, false],
    ['a kept budget (past expiry, within keep) still counts', 'a', [budget({ importLimitW: 6e6 }, { ttl: MIN })], { availableW: 6e6 }, {}, T + 2 * MIN],
  ];
  for (const [what, region, signals, want, over, t, planCheck] of cases) {
    const s = settings(over);
    const r = s.regions.find((x) => x.id === region)!;
    const recs = foldRecords(...signals);
    const now = t ?? T;
    assert.deepEqual(regionPowerAt(r, recs, s, now), want, what);
    // Where power is the only cap, the planner's share is the same availability over full load.
    if (r.fullLoadW && want.availableW !== undefined && planCheck !== false) {
      const p = plan({ configHash: 'cfg', snapshot: { revision: 1, records: recs, overrides: [], demand: [] }, settings: s });
      const share = regionStepAt(p, region, now).share;
      assert.equal(share, Math.round(Math.min(1, want.availableW / r.fullLoadW) * 10000) / 10000, `${what}: the plan's share ${share}`);
    }
  }
});

test('power: the draw is the latest reading, while the planner holds the budget it applied', () => {
  const s = settings();
  // A second reading inside the reducer's hysteresis band: the applied budget stays, the draw moves.
  const recs = foldRecords(budget({ importLimitW: 8e6, drawW: 6e6 }, { at: T - 2000 }), budget({ importLimitW: 8.1e6, drawW: 6.2e6 }, { at: T - 1000 }));
  assert.deepEqual(regionPowerAt(s.regions[0]!, recs, s, T), { availableW: 8e6, drawW: 6.2e6, headroomW: 1.8e6 });
});

test('health by probes: undefined without probes; false only when every probed endpoint is down by a majority', () => {
  const probe = (vantage: string, endpoint: string, up: boolean, o: { at?: number; ttl?: number } = {}) =>
    sig('b', 'health.probe', { up }, { source: `health/${vantage}`, key: endpoint, at: o.at ?? T - 1000, ttl: o.ttl ?? MIN });
  const cases: [what: string, signals: Signal[], want: boolean | undefined, t?: number][] = [
    ['no probes', [], undefined],
    ['other kinds only', [sig('b', 'capacity', { fraction: 0.5 })], undefined],
    ['one vantage, up', [probe('n1', 'e1', true)], true],
    ['one vantage, down', [probe('n1', 'e1', false)], false],
    ['2 of 3 vantages down', [probe('n1', 'e1', false), probe('n2', 'e1', false), probe('n3', 'e1', true)], false],
    ['1 of 3 vantages down', [probe('n1', 'e1', false), probe('n2', 'e1', true), probe('n3', 'e1', true)], true],
    ['one of two endpoints down', [probe('n1', 'e1', false), probe('n1', 'e2', true)], true],
    ['both endpoints down', [probe('n1', 'e1', false), probe('n1', 'e2', false)], false],
    ['an up probe gone stale: its vote is dropped (policy ignore): no vote left', [probe('n1', 'e1', true, { at: T - 10 * MIN, ttl: MIN })], undefined, T + 10 * MIN],
  ];
  const s = settings();
  for (const [what, signals, want, t] of cases) assert.equal(regionHealthyAt(foldRecords(...signals), s, t ?? T), want, what);
  const staleDown = settings({ stale: { ...s.stale, 'health.probe': { keepMs: 0, then: 'down' } } });
  assert.equal(regionHealthyAt(foldRecords(probe('n1', 'e1', true, { at: T - 10 * MIN, ttl: MIN })), staleDown, T), false, 'a stale probe votes down under policy down');
});

test('region state from the plan: up, draining, drained, restoring, refusing, down; the next change skips steps that change nothing shown', () => {
  const ramp: Plan = {
    ...initialPlan('x'),
    regions: {
      a: [{ at: T - MIN, share: 0.5, down: false, reasons: ['drain'] }, { at: T + MIN, share: 0.25, down: false, reasons: ['drain'] }],
      b: [{ at: T - MIN, share: 0.5, down: false, reasons: ['undrain'] }, { at: T + MIN, share: 1, down: false, reasons: ['undrain'] }],
      c: [{ at: T - MIN, share: 0, down: false, refuse: true, reasons: ['grid event'] }],
      d: [{ at: T - MIN, share: 0.5, down: false, reasons: ['cap'] }],
      e: [{ at: T - MIN, share: 0.5, down: false, reasons: ['cap'] }, { at: T + MIN, share: 1, down: true, reasons: ['down'] }],
      f: [{ at: T - MIN, share: 0.25, down: false, reasons: ['back'] }, { at: T + MIN, share: 0.25, down: false, ttlCap: 5, reasons: ['ttl only'] }, { at: T + 2 * MIN, share: 0.5, down: false, reasons: ['back'] }],
      h: [{ at: T - MIN, share: 0, down: false, reasons: ['drained ahead of an event'] }, { at: T + 10 * MIN, share: 0.5, down: false, reasons: ['restore after it'] }],
      g: [{ at: T - MIN, share: 0, down: false, reasons: ['drained'] }, { at: T + MIN, share: 0, down: false, ttlCap: 5, reasons: ['ttl only'] }],
    },
  };
  const cases: [what: string, p: Plan, region: string, t: number, state: string][] = [
    ['nothing planned', initialPlan('x'), 'a', T, 'up'],
    ['down', planOf([{ at: 0, down: ['a'] }]), 'a', T, 'down'],
    ['weights for some homes only: up (its share is 1)', planOf([{ at: 0, weights: { b: { a: 0.5 } } }]), 'a', T, 'up'],
    ['a drain ramping down', ramp, 'a', T, 'draining'],
    ['a drain ramping back up', ramp, 'b', T, 'restoring'],
    ['the ramp over', ramp, 'b', T + 2 * MIN, 'up'],
    ['told to refuse new streams', ramp, 'c', T, 'refusing'],
    ['capped, nothing next', ramp, 'd', T, 'draining'],
    ['capped, going down next: draining', ramp, 'e', T, 'draining'],
    ['before its first step', ramp, 'a', T - 2 * MIN, 'up'],
    ['share 0, nothing visible next: drained', ramp, 'g', T, 'drained'],
    ['part of its clients, a TTL-only step, then back: restoring (the TTL step is not its next change)', ramp, 'f', T, 'restoring'],
    ['share 0 with its restore planned (drained ahead of an event): drained, not restoring', ramp, 'h', T, 'drained'],
  ];
  for (const [what, p, region, t, state] of cases) assert.equal(regionStateAt(p, region, t), state, what);
  // "next change" never lists a step that changes nothing it shows (share, down).
  assert.deepEqual(regionStatusAt(ramp, 'f', T).next, { at: T + 2 * MIN, share: 0.5, down: false });
  assert.equal(regionStatusAt(ramp, 'g', T).next, undefined, 'a TTL-only step is no next change');
  assert.deepEqual(regionStatusAt(ramp, 'e', T).next, { at: T + MIN, share: 0, down: true });
});

test('signal age: the newest signal per configured region and kind', () => {
  const recs = foldRecords(
    sig('a', 'health.probe', { up: true }, { source: 'health/n1', at: T - 5000 }),
    sig('a', 'health.probe', { up: true }, { source: 'health/n2', at: T - 2000 }),
    sig('a', 'power.budget', { drawW: 1 }, { at: T - 60_000 }),
    sig('b', 'capacity', { fraction: 1 }, { at: T }),
    sig('zz', 'capacity', { fraction: 1 }, { at: T - 1 }),
  );
  const got = signalAges(recs, new Set(['a', 'b', 'c']), T)
    .map((x) => `${x.region} ${x.kind} ${x.ageS}`)
    .sort();
  assert.deepEqual(got, ['a health.probe 2', 'a power.budget 60', 'b capacity 0']);
});

test('grid facts in force: events between start and end and not cancelled; alerts unexpired within their window; every configured region listed', () => {
  const ev = (id: string, start: number, end: number, extra: Record<string, unknown> = {}, region = 'a') =>
    sig(region, 'grid.event', { id, type: 'load-shed', start, end, ...extra }, { key: id, at: T - 10 * MIN, ttl: 60 * MIN });
  const alert = (key: string, v: Record<string, unknown>, ttl = 10 * MIN, region = 'b') => sig(region, 'grid.alert', { level: 1, ...v }, { key, at: T - MIN, ttl });
  const recs = foldRecords(
    ev('now', T - MIN, T + MIN),
    ev('later', T + MIN, T + 2 * MIN),
    ev('over', T - 2 * MIN, T),
    ev('called-off', T - MIN, T + MIN, { cancelled: true }),
    ev('elsewhere', T - MIN, T + MIN, {}, 'zz'),
    alert('open', {}),
    alert('announced', { start: T + MIN }),
    alert('expired', {}, 30_000),
  );
  const got = gridFactsInForce(recs, new Set(['a', 'b', 'c']), T)
    .map((x) => `${x.region} ${x.kind} ${x.n}`)
    .sort();
  assert.deepEqual(got, ['a grid.alert 0', 'a grid.event 1', 'b grid.alert 1', 'b grid.event 0', 'c grid.alert 0', 'c grid.event 0']);
});

test('the gauges as a registry exports them: bounded label sets, absent where nothing is known', async () => {
  const registry = new client.Registry();
  const s = settings();
  let records: SignalRecord[] = foldRecords(
    budget({ importLimitW: 6e6, generationW: 2e6, drawW: 7e6 }),
    sig('b', 'health.probe', { up: false }, { source: 'health/n1', key: 'e1', at: T - 1000, ttl: MIN }),
  );
  let frozen = false;
  registerFleetMetrics(registry, {
    settings: () => s,
    plan: () => planOf([{ at: 0, down: ['b'] }]),
    records: () => ({ records, frozen }),
    now: () => T,
    collectorsLastStored: () => new Map([['health', T - 3000]]),
  });
  const scrape = async () => {
    const out = new Map<string, string[]>();
    for (const m of await registry.getMetricsAsJSON()) out.set(m.name, m.values.map((v) => `${Object.values(v.labels).join(',')}=${v.value}`).sort());
    return out;
  };
  let m = await scrape();
  assert.deepEqual(m.get('gridsteer_region_state'), ['a,' + 'down=0', 'a,drained=0', 'a,draining=0', 'a,refusing=0', 'a,restoring=0', 'a,up=1', 'b,down=1', 'b,drained=0', 'b,draining=0', 'b,refusing=0', 'b,restoring=0', 'b,up=0', 'c,down=0', 'c,drained=0', 'c,draining=0', 'c,refusing=0', 'c,restoring=0', 'c,up=1']);
  assert.equal(REGION_STATES.length * s.regions.length, m.get('gridsteer_region_state')!.length);
  assert.deepEqual(m.get('gridsteer_region_healthy'), ['b=0'], 'a and c have no probes: no series');
  assert.deepEqual(m.get('gridsteer_region_power_available_watts'), ['a=8000000', 'c=3000000'], 'b: nothing known');
  assert.deepEqual(m.get('gridsteer_region_power_headroom_watts'), ['a=1000000']);
  assert.deepEqual(m.get('gridsteer_signal_age_seconds'), ['a,power.budget=' + ((T - records.find((r) => r.signal.kind === 'power.budget')!.signal.observedAt) / 1000), 'b,health.probe=1']);
  assert.deepEqual(m.get('gridsteer_collector_last_success_timestamp_seconds'), [`health=${(T - 3000) / 1000}`]);

  // Planned frozen (the store unreachable): nothing expires, as in the plan.
  records = foldRecords(budget({ importLimitW: 6e6 }, { at: T - 30 * MIN, ttl: MIN }));
  m = await scrape();
  assert.deepEqual(m.get('gridsteer_region_power_available_watts'), ['a=12000000', 'c=3000000'], 'stale: the configured limit');
  frozen = true;
  m = await scrape();
  assert.deepEqual(m.get('gridsteer_region_power_available_watts'), ['a=6000000', 'c=3000000'], 'frozen: the last budget holds');
});
