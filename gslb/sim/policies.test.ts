/**
 * The three policies as answerers, by case tables: static answers the home; reactive marks a
 * region down after 3 failed checks and up after 3 passed; GridSteer answers through the
 * real planner and decide, from facts folded by the real reducer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { defaultSettings } from '../policy/planner/index.js';
import { loadScenario } from './scenario.js';
import { buildWorld } from './world.js';
import { factProvenance, GridSteerPolicy, ReactivePolicy, StaticPolicy, simPlannerSettings, type WorldState } from './policies.js';
import type { Provenance } from '../model/principal.js';
import { tempDir, tinyScenario, tinyTwoSheds, toldOfEvents, verdicts } from './testing.js';

function tinyWorld(t: { after(fn: () => void): void }, extra = '', trust?: string) {
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario(extra, trust) });
  const sc = loadScenario(join(dir, 'tiny.yaml'));
  return buildWorld(sc, 1, 1);
}

/** A /24 whose home is `region`. */
function subnetHomedAt(w: ReturnType<typeof buildWorld>, region: string): number {
  const r = w.regionIndex.get(region)!;
  const s = Array.from(w.subnetMetro).findIndex((m) => w.metroHome[m] === r);
  assert.ok(s >= 0, `no /24 homed at ${region}`);
  return s;
}

test('static geo: the nearest region with the name\'s TTL, whatever happens', (t) => {
  const w = tinyWorld(t);
  const p = new StaticPolicy(w, { ttl: 30 });
  for (const id of ['east', 'west', 'south']) {
    const s = subnetHomedAt(w, id);
    assert.equal(w.regions[p.answer(s)]!.id, id);
    assert.equal(p.ttl, 30);
  }
});

test('reactive failover: down after failureThreshold failed checks in a row, up after successThreshold passes', (t) => {
  const w = tinyWorld(t);
  // Each case: the check results for region 0 (true = failing) and its marked-down state after each check.
  const cases: [string, boolean[], number[]][] = [
    ['two failures do not mark it down', [true, true, false, true, true], [0, 0, 0, 0, 0]],
    ['three failures do', [true, true, true], [0, 0, 1]],
    ['up again after three passes, not two', [true, true, true, false, false, true, false, false, false], [0, 0, 1, 1, 1, 1, 1, 1, 0]],
  ];
  for (const [what, checks, want] of cases) {
    const p = new ReactivePolicy(w, { ttl: 60, checkIntervalMs: 10_000, failureThreshold: 3, successThreshold: 3, check: 'event' as const }, 0);
    const got: number[] = [];
    for (const failing of checks) {
      p.check((r) => r === 0 && failing);
      got.push(p.down[0]!);
    }
    assert.deepEqual(got, want, what);
  }
});

test('reactive failover: answers skip a region marked down, and every region down gives the nearest', (t) => {
  const w = tinyWorld(t);
  const p = new ReactivePolicy(w, { ttl: 60, checkIntervalMs: 10_000, failureThreshold: 1, successThreshold: 1, check: 'event' as const }, 0);
  const east = w.regionIndex.get('east')!;
  const s = subnetHomedAt(w, 'east');
  assert.equal(p.answer(s), east);
  p.check((r) => r === east);
  assert.notEqual(p.answer(s), east);
  assert.equal(p.ttl, 60);
  p.check(() => true);
  assert.equal(p.answer(s), east, 'all down: the nearest');
  // tick() runs the checks due on its interval against the world.
  const q = new ReactivePolicy(w, { ttl: 60, checkIntervalMs: 10_000, failureThreshold: 3, successThreshold: 3, check: 'event' as const }, 0);
  const ws = { eventActive: (r: number, at: number) => r === east && at >= 10_000 } as unknown as WorldState;
  q.tick(25_000, ws); // checks at 0, 10 s, 20 s: two failures
  assert.equal(q.down[east], 0);
  q.tick(30_000, ws); // the third
  assert.equal(q.down[east], 1);
});

test('GridSteer: the real planner and decide answer, and a grid fact moves the region\'s clients', (t) => {
  const w = tinyWorld(t);
  const sc = w.scenario;
  const T = sc.epoch + sc.events[0]!.atMs;
  const p = new GridSteerPolicy(w, sc.policies.gridsteer, sc.epoch);
  const east = w.regionIndex.get('east')!;
  const eastClients = Array.from(w.subnetMetro.keys()).filter((s) => w.metroHome[w.subnetMetro[s]!] === east);
  assert.ok(eastClients.length > 10);
  // Before any fact: every client goes home, with the name's TTL.
  for (const s of eastClients) assert.equal(p.answer(s, T - 3_600_000), east);
  assert.equal(p.ttl, 30);
  assert.equal(p.drainShare(east, T), 1);
  // The announced event, folded by the real reducer and planned.
  const f = sc.events[0]!.facts[0]!;
  p.fact({ region: 'east', kind: f.kind, source: f.source, key: f.key, observedAt: T - 1_200_000, expiresAt: sc.epoch + 7_200_000, value: f.value }, T - 1_200_000);
  assert.ok(p.current.regions.east !== undefined, 'the plan has a schedule for east');
  assert.equal(p.drainShare(east, T), 0, 'drained at T');
  assert.equal(p.refuses(east, T), true, 'the gateway refuses new streams from T');
  for (const s of eastClients) assert.notEqual(p.answer(s, T + 1000), east, `subnet ${s} still sent to east after T`);
  assert.ok(p.plans >= 2);
});

test('GridSteer\'s planner settings mirror the configuration\'s and merge the scenario\'s mappings', (t) => {
  const w = tinyWorld(t, 'policies:\n  gridsteer:\n    ttl: 20\n    minTtl: 3\n    planner: { drain: { sessionAllowanceMs: 60000 }, gridTrust: { grid-alerts: full }, degradedShare: 0.3 }\n');
  const s = simPlannerSettings(w, w.scenario.policies.gridsteer);
  const d = defaultSettings([]);
  assert.equal(s.drain.sessionAllowanceMs, 60000, 'merged');
  assert.equal(s.drain.rampMs, d.drain.rampMs, 'the other drain settings keep their defaults');
  assert.equal(s.drain.ttl0S, 20, 'TTL0 is the name\'s TTL');
  assert.equal(s.drain.minTtlS, 3, 'Tmin is the policy\'s');
  assert.deepEqual(s.gridTrust, { 'grid-alerts': 'full' }, 'a mapping merges key by key');
  assert.equal(s.degradedShare, 0.3);
  assert.deepEqual(s.names, [{ name: 'api.example.com', regions: ['east', 'west', 'south'] }]);
  assert.deepEqual(
    s.regions.map((r) => [r.id, r.capacityUnits, r.ttl0S]),
    [
      ['east', 100, 20],
      ['west', 100, 20],
      ['south', 100, 20],
    ],
  );
});

test('GridSteer when no region admits: the name\'s whenAllDown decides (nearest, all: one of every address, empty: no answer)', (t) => {
  const cases: [string, (home: number, got: number) => boolean][] = [
    ['nearest', (home, got) => got === home],
    ['all', (_home, got) => got >= 0 && got < 3],
    ['empty', (_home, got) => got === -1],
    ['servfail', (_home, got) => got === -1],
  ];
  for (const [policy, ok] of cases) {
    const w = tinyWorld(t, `policies:\n  gridsteer: { whenAllDown: ${policy} }\n`);
    const sc = w.scenario;
    const p = new GridSteerPolicy(w, sc.policies.gridsteer, sc.epoch);
    const now = sc.epoch + 60_000;
    // Every region's endpoint fails its probe: every region is down.
    for (const r of w.regions) p.ingest({ region: r.id, kind: 'health.probe', source: 'health/sim-1', key: r.v4[0]!, observedAt: now, expiresAt: now + 30_000, value: { up: false } }, now, { principal: 'collector:health', grant: 'health/' });
    p.tick(now, { serving: new Uint8Array(3), load: new Float64Array(3), capacityNow: new Float64Array(3), throttled: new Float64Array(3), probed: [], eventActive: () => false });
    const picks = new Set<number>();
    for (let s = 0; s < w.subnetMetro.length; s++) {
      const got = p.answer(s, now + 1000);
      assert.ok(ok(w.metroHome[w.subnetMetro[s]!]!, got), `${policy}: /24 ${s} got ${got}`);
      picks.add(got);
    }
    if (policy === 'all') assert.equal(picks.size, 3, 'all: the /24s spread over every region\'s address');
  }
});

test('reactive failover judged by load checks: a region fails while dark or over its capacity, not merely while an event is in force', (t) => {
  const w = tinyWorld(t);
  const east = w.regionIndex.get('east')!;
  const ws = (o: { serving?: number; load?: number; cap?: number; event?: boolean }) =>
    ({
      serving: Uint8Array.from([1, 1, 1]).fill(o.serving ?? 1, east, east + 1),
      load: Float64Array.from([0, 0, 0]).fill(o.load ?? 0, east, east + 1),
      capacityNow: Float64Array.from([100, 100, 100]).fill(o.cap ?? 100, east, east + 1),
      throttled: new Float64Array(3),
      probed: [],
      eventActive: (r: number) => r === east && (o.event ?? false),
    }) as unknown as WorldState;
  // [what, the world seen by every check, check mode, east marked down after three checks]
  const cases: [string, WorldState, 'load' | 'event', number][] = [
    ['dark: down', ws({ serving: 0, cap: 0, event: true }), 'load', 1],
    ['over capacity: down', ws({ load: 60, cap: 50, event: true }), 'load', 1],
    ['throttled but within capacity: up', ws({ load: 40, cap: 50, event: true }), 'load', 0],
    ['at capacity exactly: up', ws({ load: 50, cap: 50 }), 'load', 0],
    ['event mode: a throttle in force fails it whatever the load', ws({ load: 10, cap: 50, event: true }), 'event', 1],
    ['event mode: overloaded without an event passes', ws({ load: 90, cap: 50 }), 'event', 0],
  ];
  for (const [what, world, check, want] of cases) {
    const p = new ReactivePolicy(w, { ttl: 60, checkIntervalMs: 10_000, failureThreshold: 3, successThreshold: 3, check }, 0);
    p.tick(20_000, world); // checks at 0, 10 s, 20 s
    assert.equal(p.down[east], want, what);
  }
});

test('the trust configuration is the scenario\'s: bindings as given (none by default), each fact written by its principal', (t) => {
  const gl = (w: ReturnType<typeof buildWorld>) => (simPlannerSettings(w, w.scenario.policies.gridsteer) as unknown as { gridLoss: { bindings: unknown; maxTrustedLossShare: number } }).gridLoss;
  assert.deepEqual(gl(tinyWorld(t, '', '')).bindings, {}, 'production default: nothing bound');
  assert.deepEqual(gl(tinyWorld(t)).bindings, { 'openadr3/vtn.test': ['east'] }, 'the scenario\'s bindings');
  assert.deepEqual(gl(tinyWorld(t, 'policies:\n  gridsteer:\n    planner: { gridLoss: { maxTrustedLossShare: 0.3 } }\n')), { bindings: { 'openadr3/vtn.test': ['east'] }, maxTrustedLossShare: 0.3 }, 'other gridLoss settings kept');
  const trust = { bindings: {}, principals: { 'openadr3/': { principal: 'token:a', granted: true }, 'openadr3/vtn.b': { principal: 'token:b', granted: false } } };
  const cases: [string, string, Provenance][] = [
    ['no prefix covers it: the ungranted feed token', 'grid-alerts/caiso', { principal: 'token:feed' }],
    ['a prefix, granted', 'openadr3/vtn.a', { principal: 'token:a', grant: 'openadr3/' }],
    ['the longest prefix wins; not granted', 'openadr3/vtn.b.example', { principal: 'token:b' }],
  ];
  for (const [what, source, want] of cases) assert.deepEqual(factProvenance(trust, source), want, what);
});


test('a loss is trusted only from a bound source written under a grant: none by default, as in production', (t) => {
  assert.deepEqual(verdicts(toldOfEvents(tinyWorld(t))), ['east trusted token:vtn-test']);
  assert.deepEqual(verdicts(toldOfEvents(tinyWorld(t, '', ''))), ['east untrusted token:feed'], 'no trust configuration');
  const ungranted = "trust:\n  bindings: { openadr3/vtn.test: [east] }\n  principals: { openadr3/vtn.test: { principal: 'token:vtn-test', granted: false } }\n";
  assert.deepEqual(verdicts(toldOfEvents(tinyWorld(t, '', ungranted))), ['east untrusted token:vtn-test'], 'bound but written without a grant');
});

test('one principal speaking for two bound sources is one witness: its second loss is not trusted past maxTrustedLossShare', (t) => {
  const world = (b: string) => buildWorld(loadScenario(join(tempDir(t, { 'tiny.yaml': tinyTwoSheds(b) }), 'tiny.yaml')), 1, 1);
  const westAtT = (p: ReturnType<typeof toldOfEvents>) => p.drainShare(p.w.regionIndex.get('west')!, p.w.scenario.epoch + 30 * 60_000);
  const two = toldOfEvents(world('token:b'));
  assert.deepEqual(verdicts(two), ['east trusted token:a', 'west trusted token:b'], 'two principals: each within its own bound');
  assert.equal(westAtT(two), 0, 'west drained at T');
  const one = toldOfEvents(world('token:a'));
  assert.deepEqual(verdicts(one), ['east trusted token:a', 'west waiting token:a'], 'one principal: the second loss waits');
  assert.ok(westAtT(one) > 0, 'west is not drained to 0 on token:a\'s word alone (capped like any claim)');
});

test('GridSteer configured with wrong capacity units plans with them; the simulated fleet keeps its own', (t) => {
  const w = tinyWorld(t, 'policies:\n  gridsteer:\n    capacityUnits: { east: 300 }\n');
  const s = simPlannerSettings(w, w.scenario.policies.gridsteer);
  assert.deepEqual(
    s.regions.map((r) => [r.id, r.capacityUnits]),
    [
      ['east', 300],
      ['west', 100],
      ['south', 100],
    ],
  );
  assert.equal(w.capacity[0], w.capacity[1], 'the real capacity is by the regions\' own units');
});

test('noisy load readings: each scrape\'s kvCacheUse has the given relative error, from a stream of its own; none reads exactly', (t) => {
  const readings = (noise: number, seed = 1) => {
    const w = tinyWorld(t);
    const sc = { ...w.scenario, world: { ...w.scenario.world, loadNoise: noise } };
    const world = { ...w, seed, scenario: sc };
    const p = new GridSteerPolicy(world, sc.policies.gridsteer, sc.epoch);
    const out: number[] = [];
    const ingest = p.ingest.bind(p);
    p.ingest = (s, now, by) => {
      if (s.kind === 'load.metrics' && s.region === 'east') out.push((s.value as { kvCacheUse: number }).kvCacheUse);
      ingest(s, now, by);
    };
    const R = w.regions.length;
    const ws: WorldState = { serving: new Uint8Array(R).fill(1), load: Float64Array.from(w.capacity, (c) => 0.5 * c), capacityNow: Float64Array.from(w.capacity), throttled: new Float64Array(R), probed: [], eventActive: () => false };
    for (let k = 0; k < 400; k++) p.tick(sc.epoch + k * 1000, ws);
    return out;
  };
  const exact = readings(0);
  assert.ok(exact.length >= 20 && exact.every((x) => x === 0.5), `exact: ${exact.slice(0, 5)}`);
  const noisy = readings(0.2);
  assert.equal(noisy.length, exact.length);
  const mean = noisy.reduce((a, x) => a + x, 0) / noisy.length;
  const sd = Math.sqrt(noisy.reduce((a, x) => a + (x - mean) ** 2, 0) / (noisy.length - 1));
  // 0.5 × (1 + 0.2 N): sd 0.1; with about 26 readings, generous bounds.
  assert.ok(Math.abs(mean - 0.5) < 0.06 && sd > 0.05 && sd < 0.16, `mean ${mean}, sd ${sd}`);
  assert.deepEqual(readings(0.2), noisy, 'the same seed reads the same noise');
  assert.notDeepEqual(readings(0.2, 2), noisy, 'another seed another');
});
