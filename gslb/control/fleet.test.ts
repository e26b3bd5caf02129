/**
 * The fleet view (gslb/control/fleet.ts): signal summaries and power now as case tables; the
 * view of a small fleet built from real reducer records and a real plan: state, next change,
 * traffic shares that add up, health counts, expired facts, and grid events with their notice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fleetView, powerNow, regionStatusAt, summarize, ttlBasisOf, type RegionInfo } from './fleet.js';
import { gridEventPhaseOf, isReplay } from '../model/grid-event-phase.js';
import { reduce } from '../state/reducer.js';
import type { SignalRecord } from '../model/snapshot.js';
import { defaultSettings, plan } from '../policy/planner/index.js';
import type { Signal, SignalKind } from '../model/types.js';

const NOW = 1_800_000_000_000;
const S = 1000;

test('summarize: each kind in words', () => {
  const cases: [SignalKind, unknown, string][] = [
    ['health.probe', { up: true, latencyMs: 12.44 }, 'up, 12.4 ms'],
    ['health.probe', { up: false, detail: 'connect refused' }, 'down, connect refused'],
    ['load.metrics', { queueDepth: 4, kvCacheUse: 0.62, throttledShare: 0.5 }, 'queue 4, KV cache 62 %, throttled 50 %'],
    ['capacity', { fraction: 0.5 }, 'usable 50 %'],
    ['power.budget', { importLimitW: 12_000_000, generationW: 800, storageWh: 2500, drawW: 15_500 }, 'import limit 12 MW, generation 800 W, storage 2.5 kWh, draw 15.5 kW'],
    ['grid.event', { id: 'e', type: 'load-shed', start: 0, end: 3_600_000 }, 'load-shed, 1970-01-01T00:00:00.000Z – 1970-01-01T01:00:00.000Z'],
    ['grid.event', { id: 'e', type: 'simple', level: 2, start: 0, end: 1, cancelled: true }, 'simple level 2, cancelled, 1970-01-01T00:00:00.000Z – 1970-01-01T00:00:00.001Z'],
    ['grid.event', { id: 'e', type: 'import-capacity-limit', limitW: 5e6, start: 0, end: 1 }, 'import-capacity-limit 5 MW, 1970-01-01T00:00:00.000Z – 1970-01-01T00:00:00.001Z'],
    ['grid.alert', { level: 2, zone: 'ERCOT' }, 'eea level 2 (ERCOT)'],
    ['grid.alert', { level: 1, type: 'watch' }, 'watch level 1'],
    ['carbon', { gPerKWh: 412.4, percentile: 80 }, '412 g/kWh, percentile 80'],
    ['demand', { name: 'x', bucket: 0, queries: 5 }, ''],
    ['load.metrics', null, ''],
  ];
  for (const [kind, value, want] of cases) assert.equal(summarize(kind, value), want, `${kind} ${JSON.stringify(value)}`);
});

const budget = (value: Record<string, number>, observedAt = NOW - 5 * S, expiresAt = NOW + 60 * S, source = 'btm/a'): SignalRecord => ({
  id: `x|power.budget|${source}|m`,
  signal: { region: 'x', kind: 'power.budget', source, key: 'm', observedAt, expiresAt, value },
  fold: { kind: 'applied', value },
});

test('powerNow: as the planner weighs budgets (import or the configured limit, + generation, + storage while it holds energy; the smallest of several meters); headroom against draw; the newest budget\'s source and age', () => {
  const settings = defaultSettings([{ id: 'x', importLimitW: 10_000 }]);
  const region = settings.regions[0]!;
  const cases: [string, SignalRecord[], ReturnType<typeof powerNow>][] = [
    ['no budget: the configured import limit', [], { availableW: 10_000 }],
    ['import + generation + storage, with draw', [budget({ importLimitW: 8000, generationW: 2000, storageWh: 100, storageMaxW: 500, drawW: 9000 })], { availableW: 10_500, drawW: 9000, headroomW: 1500, source: 'btm/a', ageMs: 5000 }],
    ['empty storage gives nothing; the configured import limit', [budget({ generationW: 2000, storageWh: 0, storageMaxW: 500, drawW: 13_000 })], { availableW: 12_000, drawW: 13_000, headroomW: -1000, source: 'btm/a', ageMs: 5000 }],
    ['a budget past its keep time (10 min after expiry) is stale: not counted', [budget({ importLimitW: 1 }, NOW - 1200 * S, NOW - 660 * S)], { availableW: 10_000, source: 'btm/a', ageMs: 1_200_000 }],
    [
      'two meters: the smaller availability; source and age of the newest',
      [budget({ importLimitW: 1000 }, NOW - 50 * S, NOW + S, 'btm/old'), budget({ importLimitW: 2000 }, NOW - 10 * S, NOW + S, 'btm/new')],
      { availableW: 1000, source: 'btm/new', ageMs: 10_000 },
    ],
  ];
  for (const [what, recs, want] of cases) assert.deepEqual(powerNow(region, recs, settings, NOW), want, what);
  const bare = defaultSettings([{ id: 'x' }]);
  assert.deepEqual(powerNow(bare.regions[0]!, [budget({ drawW: 700 })], bare, NOW), { source: 'btm/a', ageMs: 5000 }, 'no limit anywhere: availability unknown');
});

function records(signals: Signal[]): SignalRecord[] {
  const byId = new Map<string, SignalRecord>();
  for (const s of signals) {
    const id = `${s.region}|${s.kind}|${s.source}|${s.key}`;
    const r = reduce(byId.get(id), s);
    if (r) byId.set(id, r);
  }
  return [...byId.values()];
}

test('fleetView: state, next change, traffic, health, signals and grid events of a small fleet', () => {
  const regions: RegionInfo[] = [
    { id: 'b', name: 'Bravo', location: { lat: 52, lon: 0, country: 'GB' } },
    { id: 'a', name: 'Alpha', location: { lat: 50, lon: 8, country: 'DE' }, capacityUnits: 100 },
    { id: 'c', name: 'Charlie', location: { lat: 40, lon: -75, country: 'US' } },
  ];
  const settings = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
    { id: 'c', location: { lat: 40, lon: -75 }, capacityUnits: 100 },
  ]);
  // Learned 6 h 10 min ahead: S grows to 4 h at most, so b's drain is still to come at NOW.
  const learned = NOW - 600 * S;
  const recs = records([
    { region: 'b', kind: 'grid.event', source: 'openadr/vtn', key: 'e1', observedAt: learned, expiresAt: NOW + 86_400 * S, value: { id: 'e1', type: 'load-shed', start: NOW + 6 * 3600 * S, end: NOW + 7 * 3600 * S } },
    // The same event polled again later: the notice stays from when it was first learned.
    { region: 'b', kind: 'grid.event', source: 'openadr/vtn', key: 'e1', observedAt: NOW - 60 * S, expiresAt: NOW + 86_400 * S, value: { id: 'e1', type: 'load-shed', start: NOW + 6 * 3600 * S, end: NOW + 7 * 3600 * S } },
    { region: 'a', kind: 'grid.alert', source: 'iso/x', key: 'alert', observedAt: NOW - 30 * S, expiresAt: NOW + 3600 * S, value: { level: 1, type: 'watch', message: 'tight' } },
    { region: 'c', kind: 'health.probe', source: 'health/n1', key: 'ep1', observedAt: NOW - 2 * S, expiresAt: NOW + 30 * S, value: { up: true } },
    { region: 'c', kind: 'health.probe', source: 'health/n1', key: 'ep2', observedAt: NOW - 2 * S, expiresAt: NOW + 30 * S, value: { up: false } },
    { region: 'c', kind: 'health.probe', source: 'health/n2', key: 'ep1', observedAt: NOW - 90 * S, expiresAt: NOW - 60 * S, value: { up: true } },
    { region: 'a', kind: 'demand', source: 'dns/n1', key: 'x', observedAt: NOW - S, expiresAt: NOW + S, value: { name: 'api.example.com', bucket: NOW - 10 * S, queries: 5 } },
  ]);
  const p = plan({ configHash: 'cfg', snapshot: { revision: 3, records: recs, overrides: [], demand: [] }, settings });
  const v = fleetView({ regions, records: recs, plan: p, settings, demand: [], now: NOW });

  assert.deepEqual(
    v.regions.map((r) => r.id),
    ['a', 'b', 'c'],
    'regions in id order',
  );
  const [a, b, c] = v.regions as [(typeof v.regions)[0], (typeof v.regions)[0], (typeof v.regions)[0]];
  assert.equal(a.name, 'Alpha');
  assert.equal(a.capacityUnits, 100);
  assert.deepEqual(
    a.signals.map((s) => s.kind),
    ['grid.alert'],
    'demand records are not region facts',
  );
  // b: serving now, a drain scheduled before its load shed.
  assert.equal(b.down, false);
  assert.equal(b.share, 1);
  assert.ok(b.next && b.next.at > NOW && b.next.at < NOW + 6 * 3600 * S && b.next.share < 1, JSON.stringify(b.next));
  // The TTL its answers carry: the names' TTL now; 12 s when its first step is 12 s away; none once it takes nothing.
  assert.equal(b.ttl, settings.drain.ttl0S);
  const basis = ttlBasisOf(settings, 'b');
  assert.equal(regionStatusAt(p, 'b', b.next!.at - 12 * S, basis).ttl, 12);
  assert.equal(regionStatusAt(p, 'b', b.next!.at - 2 * S, basis).ttl, settings.drain.minTtlS, 'never below minTtl');
  assert.equal(regionStatusAt(p, 'b', NOW + 6 * 3600 * S, basis).ttl, undefined, 'no answer names it during the load shed');
  assert.equal(regionStatusAt(p, 'b', NOW, undefined).ttl, undefined, 'without the basis, not said');
  assert.equal(b.next!.ifNotRefreshed, undefined, 'a drain step is scheduled, not a fact going stale');
  // A power budget that goes stale in 11 min (expiry + its 10 min keep): the cap its stale
  // policy sets is the next change, marked: a collector still reporting moves it on.
  const budget: Signal = { region: 'a', kind: 'power.budget', source: 'meter/a', key: 'm', observedAt: NOW, expiresAt: NOW + 60 * S, value: { importLimitW: 1e6, drawW: 5e5 } };
  const withBudget = plan({ configHash: 'cfg', snapshot: { revision: 4, records: records([budget]), overrides: [], demand: [] }, settings });
  const soon = regionStatusAt(withBudget, 'a', NOW, ttlBasisOf(settings, 'a')).next;
  assert.deepEqual(soon, { at: NOW + 660 * S, share: settings.degradedShare, down: false, ifNotRefreshed: true });
  // Traffic: every home weighed the same before demand is measured; shares add up with unplaced.
  const total = v.regions.reduce((n, r) => n + r.traffic, 0) + v.unplaced;
  assert.ok(Math.abs(total - 1) < 1e-3, `shares add up: ${total}`);
  // c: one endpoint up of the two unexpired probes; the expired probe is listed, marked expired.
  assert.deepEqual(c.health, { up: 1, total: 2 });
  assert.equal(c.signals.length, 3);
  assert.deepEqual(
    c.signals.filter((s) => s.expired).map((s) => [s.source, s.ageMs]),
    [['health/n2', 90_000]],
  );
  // Events: by start (the alert has none: it holds now), each with when it was learned.
  assert.deepEqual(
    v.events.map((e) => [e.region, e.kind, e.type, e.learnedAt]),
    [
      ['a', 'grid.alert', 'watch', NOW - 30 * S],
      ['b', 'grid.event', 'load-shed', learned],
    ],
  );
  assert.equal(v.events[0]!.message, 'tight');
  assert.deepEqual(
    v.events.map((e) => [e.phase, e.replay]),
    [
      ['in-force', false],
      ['announced', false],
    ],
    'the alert without times holds now; the load shed is announced',
  );
  assert.equal(v.planVersion, p.version);
});

test('fleetView: a grid event whose end has passed is history (over), a replay when learned after its end; it drains nothing', () => {
  const regions: RegionInfo[] = [{ id: 'a', name: 'Alpha', location: { lat: 50, lon: 8 } }];
  const settings = defaultSettings([{ id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 }]);
  const ev = (key: string, observedAt: number, start: number, end: number, cancelled?: boolean): Signal => ({
    region: 'a',
    kind: 'grid.event',
    source: 'openadr/vtn',
    key,
    observedAt,
    expiresAt: NOW + 86_400 * S,
    value: { id: key, type: 'load-shed', start, end, ...(cancelled ? { cancelled } : {}) },
  });
  const recs = records([
    // Learned ahead, now over: it was current once.
    ev('lived', NOW - 7200 * S, NOW - 3600 * S, NOW - 600 * S),
    // Learned after it ended (a feed's history replayed by a collector).
    ev('replayed', NOW - 60 * S, NOW - 7200 * S, NOW - 3600 * S),
    // In force, and cancelled while announced.
    ev('now', NOW - 900 * S, NOW - 60 * S, NOW + 600 * S),
    ev('called-off', NOW - 900 * S, NOW + 600 * S, NOW + 1200 * S, true),
  ]);
  const p = plan({ configHash: 'cfg', snapshot: { revision: 1, records: recs.filter((r) => r.signal.key !== 'now'), overrides: [], demand: [] }, settings });
  const v = fleetView({ regions, records: recs, plan: p, settings, demand: [], now: NOW });
  assert.deepEqual(
    v.events.map((e) => [e.key, e.phase, e.replay]),
    [
      ['replayed', 'over', true],
      ['lived', 'over', false],
      ['now', 'in-force', false],
      ['called-off', 'cancelled', false],
    ],
  );
  // History and a cancelled event drain nothing: planned without the one in force, the region takes all its clients.
  assert.equal(v.regions[0]!.share, 1);
  assert.equal(v.regions[0]!.next, undefined, JSON.stringify(v.regions[0]));
});

test('gridEventPhaseOf: a case table', () => {
  const cases: [string, { start?: number; end?: number; cancelled: boolean }, string][] = [
    ['no times: holds now', { cancelled: false }, 'in-force'],
    ['started, open', { start: NOW - S, cancelled: false }, 'in-force'],
    ['starts now', { start: NOW, end: NOW + S, cancelled: false }, 'in-force'],
    ['starts later', { start: NOW + S, end: NOW + 2 * S, cancelled: false }, 'announced'],
    ['ends now: over', { start: NOW - S, end: NOW, cancelled: false }, 'over'],
    ['ended', { start: NOW - 2 * S, end: NOW - S, cancelled: false }, 'over'],
    ['cancelled, not ended', { start: NOW + S, end: NOW + 2 * S, cancelled: true }, 'cancelled'],
    ['cancelled and ended: over', { start: NOW - 2 * S, end: NOW - S, cancelled: true }, 'over'],
  ];
  for (const [name, e, want] of cases) assert.equal(gridEventPhaseOf(e, NOW), want, name);
  assert.equal(isReplay({ end: NOW, learnedAt: NOW }), true, 'learned as it ended');
  assert.equal(isReplay({ end: NOW + 1, learnedAt: NOW }), false);
  assert.equal(isReplay({ learnedAt: NOW }), false, 'an open alert');
});
