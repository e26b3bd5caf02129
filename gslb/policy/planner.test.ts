/**
 * The planner, by case tables: each case is a store snapshot (records folded by the real
 * reducer, overrides) and the steps expected — when each starts, which regions are down and
 * the weight of every (home, target) pair below 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, defaultSettings, demandPerHome, DEFAULT_DRAIN, type PlannerSettings } from './planner/index.js';
import { decide, nextChangeOf, regionStepAt, weightOf, type DecideName } from './decide.js';
import type { SubnetKey } from '../model/cell.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import { foldRecords } from '../../test/helpers/policy.js';
import type { Override, Signal, SignalKind } from '../model/types.js';

const T = 1_800_000_000_000; // a fixed instant (2027-01-15)
const MIN = 60_000;

function settings(over: Partial<PlannerSettings> = {}): PlannerSettings {
  return { ...defaultSettings([{ id: 'a', capacityUnits: 100, fullLoadW: 10_000_000, importLimitW: 12_000_000 }, { id: 'b' }, { id: 'c' }]), ...over };
}

let seq = 0;
const records = foldRecords;

function sig(region: string, kind: SignalKind, value: unknown, o: { source?: string; key?: string; at?: number; ttl?: number } = {}): Signal {
  const at = o.at ?? T + seq++;
  return { region, kind, source: o.source ?? 'test/1', key: o.key ?? 'k', observedAt: at, expiresAt: at + (o.ttl ?? 10 * MIN), value };
}

function probe(region: string, vantage: string, endpoint: string, up: boolean, at: number): Signal {
  return sig(region, 'health.probe', { up }, { source: `health/${vantage}`, key: endpoint, at, ttl: MIN });
}

function ov(region: string, action: Override['action'], o: Partial<Override> = {}): Override {
  return { id: `ov-${++seq}`, region, action, ramp: 0, actor: 'alice', reason: 'test', start: T, ...o };
}

function snap(recs: SignalRecord[], overrides: Override[] = [], revision = 7): StoreSnapshot {
  return { revision, records: recs, overrides, demand: [] };
}

/** Steps as `at-offset down=[…] a>b=0.5 …` strings, at offsets from T in seconds (0 = "0"). */
/**
 * The fleet's state at every instant where some region's schedule has a step, as
 * `at down=[…] *>r=share h>r=w …` (`*` = every home not listed), at offsets from T.
 */
function steps(s: StoreSnapshot, st = settings()): string[] {
  const p = plan({ configHash: 'cfg', snapshot: s, settings: st });
  const times = [...new Set([0, ...Object.values(p.regions).flatMap((xs) => xs.map((x) => x.at))])].sort((a, b) => a - b);
  return times.map((t) => {
    const at = t === 0 ? '0' : `T${t >= T ? '+' : ''}${(t - T) / 1000}s`;
    const down: string[] = [];
    const w: string[] = [];
    for (const r of Object.keys(p.regions).sort()) {
      const x = regionStepAt(p, r, t);
      if (x.down) down.push(r);
      if (x.share < 1) w.push(`*>${r}=${x.share}`);
      if (x.ttlCap !== undefined) w.push(`ttl(${r})=${x.ttlCap}`);
      for (const [h, v] of Object.entries(x.homes ?? {})) w.push(`${h}>${r}=${v}`);
    }
    return [at, `down=[${down.join(',')}]`, ...w.sort()].join(' ');
  });
}

const all = (r: string, w: number) => [`*>${r}=${w}`];

test('health: majority of vantages per endpoint; a region is down when every probed endpoint is', () => {
  const cases: [string, Signal[], string[]][] = [
    ['no probes: up', [], ['0 down=[]']],
    ['one vantage says down (first probe sets the state)', [probe('b', 'n1', 'e1', false, T)], ['0 down=[b]', 'T+360s down=[]']],
    ['2 of 3 vantages down', [probe('b', 'n1', 'e1', false, T), probe('b', 'n2', 'e1', false, T), probe('b', 'n3', 'e1', true, T)], ['0 down=[b]', 'T+360s down=[]']],
    ['1 of 3 vantages down: up', [probe('b', 'n1', 'e1', false, T), probe('b', 'n2', 'e1', true, T), probe('b', 'n3', 'e1', true, T)], ['0 down=[]']],
    ['one of two endpoints down: up', [probe('b', 'n1', 'e1', false, T), probe('b', 'n1', 'e2', true, T)], ['0 down=[]']],
    ['both endpoints down', [probe('b', 'n1', 'e1', false, T), probe('b', 'n1', 'e2', false, T)], ['0 down=[b]', 'T+360s down=[]']],
    ['1 down 1 up: a tie is not a majority', [probe('b', 'n1', 'e1', false, T), probe('b', 'n2', 'e1', true, T)], ['0 down=[]']],
  ];
  for (const [what, sigs, want] of cases) assert.deepEqual(steps(snap(records(...sigs))), want, what);
});

test('health anti-flap comes from the reducer: two failures after an up do not take it down, three do', () => {
  const up = probe('b', 'n1', 'e1', true, T);
  const f = (k: number) => probe('b', 'n1', 'e1', false, T + k * 1000);
  assert.deepEqual(steps(snap(records(up, f(1), f(2)))).at(0), '0 down=[]');
  assert.deepEqual(steps(snap(records(up, f(1), f(2), f(3)))).at(0), '0 down=[b]');
});

test('stale policies: each expired fact becomes a step at expiresAt + keepMs, with the kind\'s policy', () => {
  const down = probe('b', 'n1', 'e1', false, T); // expires T+60s
  const st = settings();
  st.stale['health.probe'] = { keepMs: MIN, then: 'ignore' };
  assert.deepEqual(steps(snap(records(down)), st), ['0 down=[b]', 'T+120s down=[]'], 'ignore: the vote is dropped');
  st.stale['health.probe'] = { keepMs: MIN, then: 'down' };
  const up = probe('c', 'n1', 'e1', true, T);
  assert.deepEqual(steps(snap(records(up)), st), ['0 down=[]', 'T+120s down=[c]'], 'down: a silent prober counts as down');
  st.stale.capacity = { keepMs: MIN, then: 'degraded' };
  const cap = sig('c', 'capacity', { fraction: 1 }, { at: T, ttl: MIN });
  assert.deepEqual(steps(snap(records(cap)), st), ['0 down=[]', ['T+120s down=[]', ...all('c', 0.5)].join(' ')], 'degraded: capped at degradedShare');
  st.stale.capacity = { keepMs: MIN, then: 'healthy' };
  const low = sig('c', 'capacity', { fraction: 0.4 }, { at: T, ttl: MIN });
  assert.deepEqual(steps(snap(records(low)), st), [['0 down=[]', ...all('c', 0.4)].join(' '), 'T+120s down=[]'], 'healthy: the cap lifts');
});

test('operator overrides: force-down beats health, force-up beats health alone, drains ramp in steps and end', () => {
  const healthyB = probe('b', 'n1', 'e1', true, T);
  const downB = probe('b', 'n1', 'e1', false, T);
  assert.deepEqual(steps(snap(records(healthyB), [ov('b', 'force-down', { start: T + 1000 })])).slice(0, 2), ['0 down=[]', 'T+1s down=[b]']);
  assert.deepEqual(steps(snap(records(downB), [ov('b', 'force-up', { start: T, end: T + 30_000 })])), ['0 down=[b]', 'T+0s down=[]', 'T+30s down=[b]', 'T+360s down=[]']);
  // A force-up does not lift a drain.
  assert.deepEqual(
    steps(snap([], [ov('b', 'force-up', { start: T, end: T + 30_000 }), ov('b', 'drain', { value: 0.2, start: T })])),
    ['0 down=[]', ['T+0s down=[]', ...all('b', 0.2)].join(' ')],
  );
  // Drain to 0 over 2 minutes in 30 s steps: 0.75, 0.5, 0.25, 0; ends at T+10min.
  assert.deepEqual(steps(snap([], [ov('a', 'drain', { value: 0, ramp: 120_000, start: T, end: T + 10 * MIN })])), [
    '0 down=[]',
    ['T+0s down=[]', ...all('a', 0.75)].join(' '),
    ['T+30s down=[]', ...all('a', 0.5)].join(' '),
    ['T+60s down=[]', ...all('a', 0.25)].join(' '),
    ['T+90s down=[]', ...all('a', 0)].join(' '),
    'T+600s down=[]',
  ]);
  // An undrain that starts later wins over the drain.
  assert.deepEqual(steps(snap([], [ov('a', 'drain', { value: 0.5, start: T }), ov('a', 'undrain', { start: T + 5000 })])), [
    '0 down=[]',
    ['T+0s down=[]', ...all('a', 0.5)].join(' '),
    'T+5s down=[]',
  ]);
  // weight overrides combine with drains by minimum.
  assert.deepEqual(steps(snap([], [ov('c', 'weight', { value: 0.3, start: T }), ov('c', 'drain', { value: 0.6, start: T })])).at(-1), ['T+0s down=[]', ...all('c', 0.3)].join(' '));
});

test('grid obligations: events learned late cap at once with Tmin until they start and hold to their end; cancelled events nothing; alert levels; shadow mode', () => {
  // No hold or restore after the end here (drain curves have their own tests below).
  const quick = () => settings({ drain: { ...DEFAULT_DRAIN, holdMs: 0, restoreMs: 0 } });
  const ev = (v: Record<string, unknown>) => sig('b', 'grid.event', { id: 'ev1', start: T + MIN, end: T + 2 * MIN, ...v }, { key: 'ev1', source: 'openadr3/vtn', at: T, ttl: 3 * MIN });
  // Learned 60 s ahead, far less than the lead (395 s): at once, TTL 5 s (Tmin) until it starts.
  assert.deepEqual(steps(snap(records(ev({ type: 'cap', cap: 0.4 }))), quick()), [
    '0 down=[]',
    ['T+0s down=[]', ...all('b', 0.4), 'ttl(b)=5'].join(' '),
    ['T+60s down=[]', ...all('b', 0.4)].join(' '),
    'T+120s down=[]',
  ]);
  // A drain: GOAWAY from the instant the weight is 0 (at once), new streams refused from
  // then + max(Tmin, F) + m = T+35s (the drain-hook contract), at the latest at the start.
  assert.deepEqual(steps(snap(records(ev({ type: 'drain' }))), quick()), [
    '0 down=[]',
    ['T+0s down=[]', ...all('b', 0), 'ttl(b)=5'].join(' '),
    ['T+35s down=[]', ...all('b', 0), 'ttl(b)=5'].join(' '),
    ['T+60s down=[]', ...all('b', 0)].join(' '),
    'T+120s down=[]',
  ]);
  assert.deepEqual(steps(snap(records(ev({ type: 'drain', cancelled: true })))), ['0 down=[]']);
  const shadow = plan({ configHash: 'cfg', snapshot: snap(records(ev({ type: 'drain' }))), settings: settings({ gridMode: 'shadow' }) });
  const shadowSteps = shadow.regions.b ?? [];
  assert.ok(shadowSteps.every((s) => s.share === 1 && !s.homes), 'shadow applies nothing');
  assert.ok(shadowSteps.some((s) => s.reasons.some((r) => /shadow: rule direct-drain \(grid event ev1 .*would apply: cap 0/.test(r))), JSON.stringify(shadowSteps.map((s) => s.reasons)));
  const alert = (level: number) => sig('c', 'grid.alert', { level }, { source: 'ercot/alerts', at: T, ttl: MIN });
  const st = quick();
  st.stale['grid.alert'] = { keepMs: MIN, then: 'ignore' };
  // At expiry (T+60s) the same cap holds, kept, with its reason saying so: a step of its own.
  // An alert without a start holds from when it was learned (T).
  assert.deepEqual(steps(snap(records(alert(3))), st), ['0 down=[]', ['T+0s down=[]', ...all('c', 0)].join(' '), ['T+60s down=[]', ...all('c', 0)].join(' '), 'T+120s down=[]']);
  assert.deepEqual(steps(snap(records(alert(2))), st), ['0 down=[]', ['T+0s down=[]', ...all('c', 0)].join(' '), ['T+60s down=[]', ...all('c', 0)].join(' '), 'T+120s down=[]']);
  const kept = plan({ configHash: 'cfg', snapshot: snap(records(alert(3))), settings: st }).regions.c![2]!;
  assert.ok(kept.reasons.some((r) => /grid alert eea level 3 .*\(expired, kept\)/.test(r)), JSON.stringify(kept.reasons));
  assert.deepEqual(steps(snap(records(alert(1))), st), ['0 down=[]', ['T+0s down=[]', ...all('c', 0.75), 'ttl(c)=30'].join(' '), ['T+60s down=[]', ...all('c', 0.75), 'ttl(c)=30'].join(' '), 'T+120s down=[]']);
  assert.deepEqual(steps(snap(records(alert(0))), st), ['0 down=[]']);
});

test('gridPolicy: the shipped rules, trust, shadow sources, OpenADR priority, import limits, custom rules; the rule is named', () => {
  const at = (region: string, v: Record<string, unknown>, source = 'openadr3/vtn', id = 'ev1') =>
    sig(region, 'grid.event', { id, start: T - MIN, end: T + 10 * MIN, ...v }, { key: id, source, at: T - MIN, ttl: 20 * MIN });
  const alertAt = (region: string, v: Record<string, unknown>, source: string) => sig(region, 'grid.alert', v, { source, at: T, ttl: 10 * MIN });
  const now = (p: ReturnType<typeof plan>, r: string) => regionStepAt(p, r, T);
  const run = (recs: Signal[], over: Partial<PlannerSettings> = {}) => plan({ configHash: 'cfg', snapshot: snap(records(...recs)), settings: settings(over) });
  const cases: [string, Signal[], Partial<PlannerSettings>, string, number, number | undefined, RegExp][] = [
    ['OpenADR SIMPLE 1', [at('b', { type: 'simple', level: 1 })], {}, 'b', 0.75, undefined, /rule openadr-simple-1 \(grid event ev1 from openadr3\/vtn: simple level 1/],
    ['OpenADR SIMPLE 2', [at('b', { type: 'simple', level: 2 })], {}, 'b', 0.5, undefined, /rule openadr-simple-2/],
    ['OpenADR SIMPLE 3', [at('b', { type: 'simple', level: 3 })], {}, 'b', 0, undefined, /rule openadr-simple-3/],
    ['OpenADR SIMPLE 0: nothing', [at('b', { type: 'simple', level: 0 })], {}, 'b', 1, undefined, /^$/],
    ['grid emergency', [at('b', { type: 'grid-emergency' })], {}, 'b', 0, undefined, /rule grid-emergency/],
    ['a load-shedding order', [at('b', { type: 'load-shed' })], {}, 'b', 0, undefined, /rule load-shed-order/],
    ['import capacity limit: 5 of 10 MW full load', [at('a', { type: 'import-capacity-limit', limitW: 5e6 })], {}, 'a', 0.5, undefined, /import limited by rule capacity-limit/],
    ['import limit above the configured import limit: no cap', [at('a', { type: 'import-capacity-limit', limitW: 20e6 })], {}, 'a', 1, undefined, /^$/],
    ['import limit without fullLoadW: not applied, said so', [at('b', { type: 'dispatch-setpoint', limitW: 1e6 })], {}, 'b', 1, undefined, /no power\.fullLoadW .*not applied/],
    ['EEA2 from an ISO feed trusted to cap only: capped at the floor', [alertAt('c', { level: 2, type: 'eea', zone: 'ERCOT' }, 'grid-alerts/ercot')], {}, 'c', 0.25, undefined, /rule alert-eea2 .*trusted to cap only: a drain needs an operator's confirmation, so capped at 0\.25/],
    ['EEA2 from a fully trusted source: drained', [alertAt('c', { level: 2, type: 'eea' }, 'ops/manual')], {}, 'c', 0, undefined, /rule alert-eea2/],
    ['AESO grid alert', [alertAt('c', { level: 2, type: 'grid-alert' }, 'ops/aeso')], {}, 'c', 0, undefined, /rule alert-grid-alert/],
    ['a watch pre-arms: TTL capped, no cap', [alertAt('c', { level: 0, type: 'watch' }, 'grid-alerts/caiso')], {}, 'c', 1, 30, /rule alert-watch .*TTL ≤ 30 s/],
    ['a shadowed source: shown, not applied', [alertAt('c', { level: 3, type: 'eea' }, 'grid-alerts/ercot')], { gridShadow: ['grid-alerts'] }, 'c', 1, undefined, /shadow: rule alert-eea3-load-shed .*would apply: cap 0\.25/],
    [
      'OpenADR priority: the lower number wins within a program',
      [at('b', { type: 'simple', level: 3, priority: 2, program: 'p' }, 'openadr3/vtn', 'ev-a'), at('b', { type: 'simple', level: 1, priority: 1, program: 'p' }, 'openadr3/vtn', 'ev-b')],
      {},
      'b',
      0.75,
      undefined,
      /grid event ev-a from .* \(priority 2\) yields to priority 1/,
    ],
    ['custom rules replace the shipped ones', [alertAt('c', { level: 0, type: 'watch' }, 'x/y')], { gridRules: [{ name: 'mine', kind: 'grid.alert', types: ['watch'], then: { cap: 0.9 } }] }, 'c', 0.9, undefined, /rule mine/],
    ['a source-specific rule', [at('b', { type: 'drain' }, 'site/ctl')], { gridRules: [{ name: 'only-ops', kind: 'grid.event', source: 'ops/', then: { drain: true } }] }, 'b', 1, undefined, /^$/],
  ];
  for (const [what, recs, over, region, share, ttl, why] of cases) {
    const p = run(recs, over);
    const st = now(p, region);
    assert.equal(st.share, share, `${what}: share ${JSON.stringify(st)}`);
    assert.equal(st.ttlCap, ttl, `${what}: ttlCap`);
    const words = st.reasons.join(' | ');
    if (why.source === '^$') assert.ok(!/rule /.test(words), `${what}: no rule fired: ${words}`);
    else assert.match(words, why, what);
  }
});

test('power, compute and load: caps combine by minimum; saturated regions take no spill', () => {
  // a: full load 10 MW. 6 MW import + 2 MW generation = 0.8.
  const power = sig('a', 'power.budget', { importLimitW: 6e6, generationW: 2e6 });
  assert.deepEqual(steps(snap(records(power))).at(0), ['0 down=[]', ...all('a', 0.8)].join(' '));
  // Storage counts with its discharge power while it holds energy.
  const storage = sig('a', 'power.budget', { importLimitW: 6e6, storageWh: 1e6, storageMaxW: 1e6 });
  assert.deepEqual(steps(snap(records(storage))).at(0), ['0 down=[]', ...all('a', 0.7)].join(' '));
  const empty = sig('a', 'power.budget', { importLimitW: 6e6, storageWh: 0, storageMaxW: 1e6 });
  assert.deepEqual(steps(snap(records(empty))).at(0), ['0 down=[]', ...all('a', 0.6)].join(' '));
  // Capacity in units of the configured 100.
  assert.deepEqual(steps(snap(records(sig('a', 'capacity', { units: 50 })))).at(0), ['0 down=[]', ...all('a', 0.5)].join(' '));
  assert.deepEqual(steps(snap(records(sig('b', 'capacity', { fraction: 0.6 })))).at(0), ['0 down=[]', ...all('b', 0.6)].join(' '));
  // Throttling caps; the minimum of power and capacity wins.
  assert.deepEqual(steps(snap(records(sig('a', 'load.metrics', { throttledShare: 0.25 }), power))).at(0), ['0 down=[]', ...all('a', 0.75)].join(' '));
  // Throttled and saturated: capped at throttledFactor (0.5) of what the throttle leaves until
  // the load is back under it (the share its own clients keep too); 1 = just the throttle.
  const hot = (v: Record<string, number>) => sig('a', 'load.metrics', { throttledShare: 0.5, ...v });
  assert.deepEqual(steps(snap(records(hot({ queueDepth: 40 })))).at(0), '0 down=[] *>a=0 a>a=0.25');
  assert.deepEqual(steps(snap(records(hot({ queueDepth: 2 })))).at(0), ['0 down=[]', ...all('a', 0.5)].join(' '));
  const throttleOnly = { ...settings(), saturation: { ...settings().saturation, throttledFactor: 1 } };
  assert.deepEqual(
    steps(snap(records(hot({ kvCacheUse: 0.99 }))), throttleOnly).at(0),
    '0 down=[] *>a=0 a>a=0.5',
  );
  // Saturation: no spill from other homes, own clients unaffected.
  assert.deepEqual(steps(snap(records(sig('b', 'load.metrics', { kvCacheUse: 0.97 })))).at(0), '0 down=[] *>b=0 b>b=1');
  const sat = plan({ configHash: 'cfg', snapshot: snap(records(sig('b', 'load.metrics', { kvCacheUse: 0.97 }))), settings: settings() });
  assert.equal(weightOf(sat, 'a', 'b', T), 0, 'a client of home a is not admitted to saturated b');
  assert.equal(weightOf(sat, 'b', 'b', T), 1, 'b\'s own clients are');
  // Caps combine by minimum across kinds: operator 0.5, grid alert EEA1 0.75 (and its TTL cap), capacity 0.3 → 0.3.
  const recs = records(sig('c', 'grid.alert', { level: 1 }), sig('c', 'capacity', { fraction: 0.3 }));
  const both = plan({ configHash: 'cfg', snapshot: snap(recs, [ov('c', 'drain', { value: 0.5, start: 0 })]), settings: settings() });
  const inForce = regionStepAt(both, 'c', T + 1000);
  assert.deepEqual([inForce.share, inForce.ttlCap], [0.3, 30]);
});

test('static weights from config multiply with the plan\'s', () => {
  const st = settings({ staticWeights: { a: { b: 0.5 } } });
  assert.deepEqual(steps(snap([]), st), ['0 down=[] a>b=0.5']);
  assert.deepEqual(steps(snap([], [ov('b', 'drain', { value: 0.5, start: 0 })]), st), [['0 down=[]', '*>b=0.5', 'a>b=0.25'].join(' ')]);
});

test('deterministic: the same inputs give byte-identical plans; the version follows the inputs; no clock is read', () => {
  const recs = records(probe('b', 'n1', 'e1', false, T), sig('a', 'capacity', { fraction: 0.7 }));
  const ovs = [ov('c', 'drain', { value: 0, ramp: 90_000 })];
  const p1 = plan({ configHash: 'cfg', snapshot: snap(recs, ovs), settings: settings() });
  const realNow = Date.now;
  try {
    Date.now = () => {
      throw new Error('the planner read the clock');
    };
    const p2 = plan({ configHash: 'cfg', snapshot: structuredClone(snap(recs, ovs)), settings: settings() });
    assert.equal(JSON.stringify(p2), JSON.stringify(p1));
  } finally {
    Date.now = realNow;
  }
  assert.notEqual(plan({ configHash: 'cfg2', snapshot: snap(recs, ovs), settings: settings() }).version, p1.version, 'config hash');
  assert.notEqual(plan({ configHash: 'cfg', snapshot: snap(recs, ovs, 8), settings: settings() }).version, p1.version, 'revision');
  assert.notEqual(plan({ configHash: 'cfg', snapshot: snap(recs, [], 7), settings: settings() }).version, p1.version, 'overrides');
  assert.equal(p1.storeRevision, 7);
  const newest = Math.max(...recs.map((r) => r.signal.observedAt), ...ovs.map((o) => o.start));
  assert.equal(p1.computedAt, newest, 'computedAt is the newest input instant, not a clock read');
  for (const xs of Object.values(p1.regions)) for (let i = 1; i < xs.length; i++) assert.ok(xs[i]!.at > xs[i - 1]!.at, 'steps ordered by at');
  assert.deepEqual(Object.keys(p1.regions).sort(), ['a', 'b', 'c'], 'every region with something planned has a schedule');
  const quiet = plan({ configHash: 'cfg', snapshot: snap([]), settings: settings() });
  assert.deepEqual(quiet.regions, {}, 'a region with nothing planned has no schedule');
});

test('signals for regions not in the fleet are ignored', () => {
  assert.deepEqual(steps(snap(records(probe('zz', 'n1', 'e1', false, T)))), ['0 down=[]']);
});

test('demandPerHome: the mean of the last six closed buckets (the newest is still open), names summed', () => {
  const row = (bucket: number, home: string, queries: number, name = 'api') => ({ bucket, home, name, queries });
  assert.deepEqual([...demandPerHome([])], []);
  assert.deepEqual([...demandPerHome([row(0, 'a', 100)])], [], 'only the open bucket: nothing closed yet');
  assert.deepEqual([...demandPerHome([row(0, 'a', 100), row(0, 'a', 50, 'www'), row(10_000, 'a', 999)])], [['a', 15]]);
  // Eight closed buckets of 10 queries plus one of 1000 long ago: only the last six count.
  const rows = [row(0, 'a', 1000), ...Array.from({ length: 8 }, (_, i) => row((i + 1) * 10_000, 'a', 10)), row(90_000, 'a', 5)];
  assert.deepEqual([...demandPerHome(rows)], [['a', 1]]);
});

test('spill goes only where there is headroom; what nobody can take is reported', () => {
  // a, b, c on a line (b is a's nearest neighbour, then c); a drained; demand per bucket.
  const at = (lon: number) => ({ lat: 0, lon });
  // Saturation out of the way (KV 0.95): this is about headroom below it. c has 0.8 of b's
  // capacity units. A region holds its capacity units at the fleet's cost per query (ADR 0019).
  const st = settings({ regions: [{ id: 'a', location: at(0) }, { id: 'b', location: at(10) }, { id: 'c', location: at(20), capacityUnits: 0.8 }], saturation: { queueWaiting: 5, kvCacheUse: 0.95, throttledFactor: 0.5, spillMargin: 0 } });
  const buckets = (home: string, perBucket: number) => [0, 10_000, 20_000].map((bucket) => ({ bucket, home, name: 'api', queries: perBucket }));
  const load = (region: string, kv: number, t = T) => sig(region, 'load.metrics', { kvCacheUse: kv }, { at: t });
  const drainA = [ov('a', 'drain', { value: 0, start: T - 1000 })];
  const planWith = (recs: SignalRecord[], demand: ReturnType<typeof buckets>) =>
    plan({ configHash: 'cfg', snapshot: { revision: 1, records: recs, overrides: drainA, demand }, settings: st });

  // b serves 100 q/s of its own at 80 % KV cache, read just as a's drain began: a's 100 q/s of
  // spill is newer than the reading, so it is not in b's load. Over the fleet (b alone is
  // measured and uncapped): 100 q/s at 0.8 units, 125 q/s a unit. b holds 125 at full load,
  // room up to its saturation point 125 × 0.95 − 100 = 18.75: b admits 18.75 % of a's clients;
  // c has no load reading, so it takes the rest unlimited.
  const p1 = planWith(records(load('b', 0.8)), [...buckets('a', 1000), ...buckets('b', 1000)]);
  assert.deepEqual(regionStepAt(p1, 'b', T).homes, { a: 0.1875 });
  assert.equal(weightOf(p1, 'b', 'b', T), 1, "b's own clients are not limited");
  assert.equal(weightOf(p1, 'c', 'b', T), 1, 'homes that do not spill are not limited');
  assert.equal(regionStepAt(p1, 'c', T).homes, undefined);
  assert.ok(!JSON.stringify(p1.regions).includes('could not be placed'), JSON.stringify(p1.regions.a));

  // c too is busy (90 q/s of its own at 90 % on 0.8 units). Over the fleet 190 q/s at
  // 0.8 + 0.72 = 1.52 units: 125 q/s a unit. b room 18.75 as before; c holds 100, room
  // 95 − 90 = 5: of a's remaining 81.25 q/s c admits 5 (w = 5/81.25); 76.25 q/s cannot be
  // placed, and a's schedule says so.
  const p2 = planWith(records(load('b', 0.8), load('c', 0.9)), [...buckets('a', 1000), ...buckets('b', 1000), ...buckets('c', 900)]);
  assert.deepEqual(regionStepAt(p2, 'b', T).homes, { a: 0.1875 });
  assert.deepEqual(regionStepAt(p2, 'c', T).homes, { a: 0.0615 });
  assert.ok(regionStepAt(p2, 'a', T).reasons.some((r) => /76\.3 of 100\.0 q\/s of spill could not be placed on b, c/.test(r)), JSON.stringify(regionStepAt(p2, 'a', T).reasons));
  assert.deepEqual(p2.unplaced, { a: 76 }, 'and the plan reports it as unplaced demand (metric, API), in two significant digits');
  assert.equal(p1.unplaced, undefined);

  // b's load read 2 minutes into a's drain: it includes a's spill. 200 q/s at 80 %: 250 q/s a
  // unit, room up to its saturation point 237.5, 137.5 beyond its own: all of a's 100 q/s fit.
  const settled = planWith(records(load('b', 0.8, T + 120_000)), [...buckets('a', 1000), ...buckets('b', 1000)]);
  assert.equal(regionStepAt(settled, 'b', T + 120_000).homes, undefined, JSON.stringify(settled.regions.b));

  // Settled spill placed past the ranking counts too (every query is served somewhere): c reads
  // 90 % with 90 q/s of its own and b 80 % with 100 of its own plus a's 100 (2 minutes in). Over
  // the fleet 290 q/s at 1.52 units, 190.8 q/s a unit: b room 190.8 × 0.95 − 100 = 81.3 for
  // a's 100; c holds 152.6, room 145 − 90 = 55 for the other 18.7: nothing unplaced.
  const lagging = planWith(records(load('b', 0.8, T + 120_000), load('c', 0.9, T + 120_000)), [...buckets('a', 1000), ...buckets('b', 1000), ...buckets('c', 900)]);
  assert.deepEqual(regionStepAt(lagging, 'b', T + 120_000).homes, { a: 0.8125 });
  assert.equal(regionStepAt(lagging, 'c', T + 120_000).homes, undefined);
  assert.equal(lagging.unplaced, undefined);
  // A region being drained keeps its sessions while its demand goes: it is left out of the
  // fleet's sums. a at half its clients (50 q/s) still reads 90 %: b's room is as in p1.
  const halfA = plan({
    configHash: 'cfg',
    snapshot: { revision: 1, records: records(load('a', 0.9), load('b', 0.8)), overrides: [ov('a', 'drain', { value: 0.5, start: T - 1000 })], demand: [...buckets('a', 1000), ...buckets('b', 1000)] },
    settings: st,
  });
  assert.deepEqual(regionStepAt(halfA, 'b', T).homes, { a: 0.375 }, "b takes 18.75 of a's 50 q/s of spill");

  // No measured demand, or only the open bucket: no limits at all.
  assert.equal(regionStepAt(planWith(records(load('b', 0.8)), []), 'b', T).homes, undefined);
  assert.equal(regionStepAt(planWith(records(load('b', 0.8)), [{ bucket: 0, home: 'a', name: 'api', queries: 1000 }]), 'b', T).homes, undefined);
  // The version follows what demand changed: same limits → same version; other limits → another.
  const again = planWith(records(load('b', 0.8)), [...buckets('a', 1000), ...buckets('b', 1000)]);
  assert.equal(again.version, p1.version);
  assert.notEqual(p2.version, p1.version);
});

test('back home (ADR 0018): spill no region with headroom can take goes back to a home held only by soft holds (slow start), up to its firm share; a firm cap keeps it out', () => {
  // a … e on a line, 10° apart; b … e full at their saturation point (no headroom for spill).
  const at = (lon: number) => ({ lat: 0, lon });
  const ids = ['a', 'b', 'c', 'd', 'e'];
  const st = settings({ slowStartMs: 60_000, rampStepMs: 30_000, regions: ids.map((id, i) => ({ id, location: at(i * 10), capacityUnits: 100 })), saturation: { queueWaiting: 5, kvCacheUse: 0.95, throttledFactor: 0.5, spillMargin: 0 } });
  const buckets = (home: string, perBucket: number) => [0, 10_000, 20_000].map((bucket) => ({ bucket, home, name: 'api', queries: perBucket }));
  const full = ['b', 'c', 'd', 'e'].map((r) => sig(r, 'load.metrics', { kvCacheUse: 0.95 }, { at: T }));
  // a came back up at T (rise 2): slow start step 1/2, share 0.5; 100 q/s of its own demand.
  const back = [probe('a', 'n1', 'e1', false, T - 5000), probe('a', 'n1', 'e1', true, T - 1000), probe('a', 'n1', 'e1', true, T)];
  const demand = [...buckets('a', 1000), ...['b', 'c', 'd', 'e'].flatMap((r) => buckets(r, 950))];
  const planWith = (overrides: Override[]) => plan({ configHash: 'cfg', snapshot: { revision: 1, records: records(...back, ...full), overrides, demand }, settings: st });
  const soft = planWith([]);
  assert.equal(regionStepAt(soft, 'a', T).share, 0.5, 'slow start holds a at 0.5');
  // The 50 q/s a's slow start sends on fit nowhere with headroom: they stay at a (its firm share is 1).
  assert.equal(soft.unplaced, undefined, 'nothing unplaced: a takes its own back');
  assert.deepEqual(soft.overflow, { a: { a: 1 } });
  assert.ok(regionStepAt(soft, 'a', T).reasons.some((r) => /a: 50 q\/s of its own clients that no region with headroom can take stay at home through its slow start or restore \(up to share 1\)/.test(r)), JSON.stringify(regionStepAt(soft, 'a', T).reasons));
  // An operator's weight 0.8 is firm: back home only up to it (30 of the 50); 20 unplaced and spread.
  const capped = planWith([ov('a', 'weight', { value: 0.8, start: T - 1000 })]);
  assert.equal(regionStepAt(capped, 'a', T).share, 0.5);
  assert.deepEqual(capped.unplaced, { a: 20 });
  assert.ok((capped.overflow?.a?.a ?? 0) > 0.55 && (capped.overflow?.a?.a ?? 0) < 0.65, `30 of 50 back home: ${JSON.stringify(capped.overflow)}`);
  // A drain to 0.5 is firm: nothing goes back; all 50 unplaced, spread over the others.
  const drained = planWith([ov('a', 'drain', { value: 0.5, start: T - 1000 })]);
  assert.deepEqual(drained.unplaced, { a: 50 });
  assert.equal(drained.overflow?.a?.a, undefined, JSON.stringify(drained.overflow));
  // decide: a's clients the slow start turns away are answered with a itself, not a full neighbour.
  const name: DecideName = { name: 'api.example.com.', ttl: 30, regions: new Map(ids.map((r, i) => [r, { v4: [`192.0.2.${i + 1}`], v6: [] }])), whenAllDown: 'nearest' };
  const count: Record<string, number> = {};
  for (let i = 0; i < 2000; i++) {
    const key: SubnetKey = { family: 4, hi: ((10 << 24) | (i << 8)) >>> 0, lo: 0, prefix: 24 };
    const x = decide(soft, { ranking: ['a', 'b', 'c'], origin: 'test' }, key, name, 'A', T, { minTtl: 5 });
    count[x.region ?? 'none'] = (count[x.region ?? 'none'] ?? 0) + 1;
  }
  assert.deepEqual(count, { a: 2000 }, 'every client of a at a');
});

test('slow start: a region whose every endpoint comes back takes clients back in steps; one endpoint flapping does not', () => {
  const st = settings({ slowStartMs: 60_000, rampStepMs: 30_000 });
  // Vantage n1: e1 down (first probe), then up twice (rise 2): up since the second success.
  const back = [probe('b', 'n1', 'e1', false, T - 5000), probe('b', 'n1', 'e1', true, T - 1000), probe('b', 'n1', 'e1', true, T)];
  const p = plan({ configHash: 'cfg', snapshot: snap(records(...back)), settings: st });
  assert.equal(regionStepAt(p, 'b', T).share, 0.5, 'step 1/2 right after');
  assert.match(regionStepAt(p, 'b', T).reasons.join(' '), /slow start after coming back up at .* step 1\/2/);
  assert.equal(regionStepAt(p, 'b', T + 30_000).share, 1, 'step 2/2 at +30 s: the whole share');
  assert.equal(regionStepAt(p, 'b', T + 60_000).share, 1, 'done after slowStartMs');
  assert.ok(nextChangeOf(p, 'b', T) <= T + 30_000, 'the TTL of answers is cut to the next step');
  // Two endpoints; only e2 flapped back, e1 stayed up throughout: no slow start.
  const flap = [probe('b', 'n1', 'e1', true, T - 5000), ...back.map((x) => ({ ...x, key: 'e2' }))];
  assert.equal(regionStepAt(plan({ configHash: 'cfg', snapshot: snap(records(...flap)), settings: st }), 'b', T).share, 1);
  // Off.
  assert.equal(regionStepAt(plan({ configHash: 'cfg', snapshot: snap(records(...back)), settings: settings({ slowStartMs: 0 }) }), 'b', T).share, 1);
});

test('carbon tie-break: a clearly cleaner, healthy, uncapped region of the home\'s latency band goes first; never over health or caps', () => {
  // a and b 100 km apart (one band), c 2,000 km away.
  const st = settings({ regions: [{ id: 'a', location: { lat: 50, lon: 8 } }, { id: 'b', location: { lat: 50.9, lon: 8 } }, { id: 'c', location: { lat: 50, lon: 36 } }] });
  const co2 = (region: string, v: Record<string, number>) => sig(region, 'carbon', v, { source: 'carbon/electricitymaps', key: region, at: T });
  const prefer = (recs: Signal[], ovs: Override[] = [], over: Partial<PlannerSettings> = {}) =>
    plan({ configHash: 'cfg', snapshot: snap(records(...recs), ovs), settings: { ...st, ...over } }).prefer;
  const cases: [string, Signal[], Override[], Partial<PlannerSettings>, Record<string, string> | undefined][] = [
    ['b is 50 % cleaner than a, in a\'s band: a\'s clients try b first', [co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 200 })], [], {}, { a: 'b' }],
    ['only 10 % cleaner: below minGain, no change', [co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 360 })], [], {}, undefined],
    ['c is far cleaner but outside the band', [co2('a', { gPerKWh: 400 }), co2('c', { gPerKWh: 10 })], [], {}, undefined],
    ['percentiles when there are no gCO2 figures', [co2('a', { percentile: 90 }), co2('b', { percentile: 30 })], [], {}, { a: 'b' }],
    ['the cleaner region is drained: never over a drain', [co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 100 })], [ov('b', 'drain', { value: 0.5, start: 0 })], {}, undefined],
    ['the cleaner region is down: never over health', [co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 100 }), probe('b', 'n1', 'e1', false, T)], [], {}, undefined],
    ['turned off with bandKm 0', [co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 100 })], [], { carbonBandKm: 0 }, undefined],
    ['no carbon fact for a: nothing to compare', [co2('b', { gPerKWh: 100 })], [], {}, undefined],
  ];
  for (const [what, recs, ovs, over, want] of cases) {
    const p = prefer(recs, ovs, over);
    assert.deepEqual(p === undefined ? undefined : Object.fromEntries(Object.entries(p).map(([h, x]) => [h, x.region])), want, what);
  }
  const p = plan({ configHash: 'cfg', snapshot: snap(records(co2('a', { gPerKWh: 400 }), co2('b', { gPerKWh: 200 }))), settings: st });
  assert.match(p.prefer!.a!.reason, /carbon tie-break: b is within 250 km of a and cleaner \(200 against 400 gCO2\/kWh\)/);
});

test('past the neighbours: spill goes to farther regions by headroom; what the fleet cannot take is spread by room to full (else capacity), never all onto one', () => {
  // a … e on a line, 10° apart: a's neighbours are b, c, d (SPILL_NEIGHBOURS = 3), e lies beyond.
  const at = (lon: number) => ({ lat: 0, lon });
  const ids = ['a', 'b', 'c', 'd', 'e'];
  // Capacity units as the readings say (1 q/s a unit at full load everywhere, so the fleet's
  // ratio and each region's agree; the case where they do not is in the test above): e has
  // 100 ÷ kvE units.
  const st = (unitsE = 300) => settings({ regions: ids.map((id, i) => ({ id, location: at(i * 10), capacityUnits: i === 4 ? unitsE : 100 })), saturation: { queueWaiting: 5, kvCacheUse: 0.95, throttledFactor: 0.5, spillMargin: 0 } });
  const buckets = (home: string, perBucket: number) => [0, 10_000, 20_000].map((bucket) => ({ bucket, home, name: 'api', queries: perBucket }));
  const load = (region: string, kv: number) => sig(region, 'load.metrics', { kvCacheUse: kv }, { at: T });
  const drainA = [ov('a', 'drain', { value: 0, start: T - 1000 })];
  const planWith = (kvE: number) =>
    plan({
      configHash: 'cfg',
      // b, c, d full (90 q/s at 90 %: room for 10 each); e serves 100 q/s at kvE.
      snapshot: { revision: 1, records: records(load('b', 0.9), load('c', 0.9), load('d', 0.9), load('e', kvE)), overrides: drainA, demand: [...buckets('a', 1000), ...['b', 'c', 'd'].flatMap((r) => buckets(r, 900)), ...buckets('e', 1000)] },
      settings: st(100 / kvE),
    });
  // Spill fills each up to its saturation point (95 % here): b, c, d room for 95 − 90 = 5 each.
  // e at 50 %: room for 90. Of a's 100 q/s, b, c, d take 5 each; e the other 85: nothing unplaced.
  const roomy = planWith(0.5);
  assert.equal(roomy.unplaced, undefined);
  assert.deepEqual(roomy.overflow, { a: { e: 1 } });
  // e at 80 %: room for 100 × 0.95/0.8 − 100 = 18.75. 66.25 q/s cannot be placed below the
  // saturation points: unplaced, and spread by the room each has before it is full (b, c, d:
  // 100 − 90 − 5 = 5 each; e: 125 − 100 − 18.75 = 6.25): of the 85 beyond the ranking, b, c, d
  // 15.59 each, e 18.75 + 19.49 = 38.24.
  const tight = planWith(0.8);
  assert.deepEqual(tight.unplaced, { a: 66 });
  assert.deepEqual(tight.overflow, { a: { b: 0.1834, c: 0.1834, d: 0.1834, e: 0.4498 } });
  assert.ok(regionStepAt(tight, 'a', T).reasons.some((r) => /66\.3 of 100\.0 q\/s of spill could not be placed on b, c, d or the 1 regions beyond them with headroom \(no headroom\); spread over 4 regions in proportion to the room each has before it is full/.test(r)), JSON.stringify(regionStepAt(tight, 'a', T).reasons));
  // decide: a's clients (ranking a, b, c) that b and c do not admit follow the overflow weights.
  const name: DecideName = { name: 'api.example.com.', ttl: 30, regions: new Map(ids.map((r, i) => [r, { v4: [`192.0.2.${i + 1}`], v6: [] }])), whenAllDown: 'nearest' };
  const count: Record<string, number> = {};
  const N = 4000;
  for (let i = 0; i < N; i++) {
    const key: SubnetKey = { family: 4, hi: ((10 << 24) | (i << 8)) >>> 0, lo: 0, prefix: 24 };
    const a = decide(tight, { ranking: ['a', 'b', 'c'], origin: 'test' }, key, name, 'A', T, { minTtl: 5 });
    count[a.region ?? 'none'] = (count[a.region ?? 'none'] ?? 0) + 1;
  }
  // Admitted on the ranking: b and c each 10 of 100 → about 10 % and 9 % (the second draw on the rest); the rest by the weights.
  const rest = N - (count.b ?? 0) - (count.c ?? 0);
  assert.ok(count.a === undefined && count.none === undefined, JSON.stringify(count));
  assert.ok(Math.abs((count.e ?? 0) / rest - 0.4498 / (0.4498 + 0.1834)) < 0.2, JSON.stringify(count));
  assert.ok((count.d ?? 0) > 0 && (count.e ?? 0) > (count.d ?? 0) * 1.5, `d and e both take overflow, e most: ${JSON.stringify(count)}`);
  // The report's dead band: 1.5 q/s left of 100 (below 2 % of the spill) is not reported, 2.5 is (and the clients are spread all the same).
  assert.equal(planWith(95 / 183.5).unplaced, undefined);
  assert.ok(planWith(95 / 183.5).overflow?.a?.b !== undefined);
  assert.deepEqual(planWith(95 / 182.5).unplaced, { a: 2.5 });
  // Without measured load nowhere has known headroom: no overflow, whenAllDown's nearest as before.
  const unknown = plan({ configHash: 'cfg', snapshot: { revision: 1, records: [], overrides: drainA, demand: buckets('a', 1000) }, settings: st() });
  assert.equal(unknown.overflow, undefined);
});

test('what the fleet cannot place is spread over every region up and open by its room before it is full, saturated or not; none onto a region reading full (ADR 0019)', () => {
  // a … e on a line, 10° apart, 100 units each; a drained; the default saturation point
  // (KV 0.8, spill up to 0.7). b and c at 85 % are saturated (no spill along the ranking), d at
  // 75 % is not, e reads 96 % (FULL_READING 0.95). The fleet serves 1 q/s a unit, so each
  // holds 100 q/s at full load.
  const at = (lon: number) => ({ lat: 0, lon });
  const ids = ['a', 'b', 'c', 'd', 'e'];
  const st = settings({ regions: ids.map((id, i) => ({ id, location: at(i * 10), capacityUnits: 100 })) });
  const buckets = (home: string, perBucket: number) => [0, 10_000, 20_000].map((bucket) => ({ bucket, home, name: 'api', queries: perBucket }));
  const load = (region: string, kv: number) => sig(region, 'load.metrics', { kvCacheUse: kv }, { at: T });
  const planWith = (kvE: number) =>
    plan({
      configHash: 'cfg',
      snapshot: {
        revision: 1,
        records: records(load('b', 0.85), load('c', 0.85), load('d', 0.75), load('e', kvE)),
        overrides: [ov('a', 'drain', { value: 0, start: T - 1000 })],
        demand: [...buckets('a', 1000), ...buckets('b', 850), ...buckets('c', 850), ...buckets('d', 750), ...buckets('e', kvE * 1000)],
      },
      settings: st,
    });
  // No region has headroom below its spill target: a's 100 q/s are unplaced, and spread by the
  // room before full (b and c 15 each, d 25; e none), tapered by the reading from the
  // saturation point (0.8: ×1) to FULL_READING (×0): b and c at 0.85 weigh 15 × 2/3 = 10,
  // d 25. (Before ADR 0019 all of it went to d, the one region below its saturation point at
  // that reading.)
  const full = planWith(0.96);
  assert.deepEqual(full.unplaced, { a: 100 });
  assert.deepEqual(full.overflow, { a: { b: 0.2222, c: 0.2222, d: 0.5556 } });
  // e at 93 % is not full: room for 7, weighing 7 × 0.02/0.15 = 0.93.
  const roomy = planWith(0.93);
  assert.deepEqual(roomy.overflow, { a: { b: 0.2177, c: 0.2177, d: 0.5443, e: 0.0203 } });
  // Every region reading full: spread by capacity over all of them, never all onto one.
  const allFull = plan({
    configHash: 'cfg',
    snapshot: { revision: 1, records: records(...['b', 'c', 'd', 'e'].map((r) => load(r, 0.97))), overrides: [ov('a', 'drain', { value: 0, start: T - 1000 })], demand: [...buckets('a', 1000), ...['b', 'c', 'd', 'e'].flatMap((r) => buckets(r, 970))] },
    settings: st,
  });
  assert.deepEqual(allFull.overflow, { a: { b: 0.25, c: 0.25, d: 0.25, e: 0.25 } });
});

test('back after a known outage (ADR 0019): probes that failed during a drain to 0 do not keep the region down past its end; one probe after it decides (rise 1)', () => {
  // b: a grid emergency (trusted to drain to 0) from T − 10 min to T; its probes failed from then
  // on (fall 3, stable down); the last at T − 5 s.
  const ev = sig('b', 'grid.event', { id: 'ev1', type: 'grid-emergency', start: T - 10 * MIN, end: T }, { key: 'ev1', source: 'openadr3/vtn', at: T - 20 * MIN, ttl: 60 * MIN });
  const failed = [-25_000, -15_000, -5_000].map((d) => probe('b', 'n1', 'e1', false, T + d));
  const at = (recs: Signal[], t: number) => regionStepAt(plan({ configHash: 'cfg', snapshot: snap(records(...recs)), settings: settings({ slowStartMs: 60_000, rampStepMs: 30_000 }) }), 'b', t);
  // During the event: down, as ever.
  assert.equal(at([ev, ...failed], T - 1000).down, true);
  // From its end, no probe since: not down, but it takes none of anyone's clients (share 0, a
  // soft hold: only its own clients no region with room can take go to it), and says why.
  const after = at([ev, ...failed], T);
  assert.equal(after.down, false, JSON.stringify(after.reasons));
  assert.equal(after.share, 0);
  assert.ok(after.reasons.some((r) => /b: health says down \(e1\) but only by probes made before its known outage ended at .*awaiting a probe/.test(r)), JSON.stringify(after.reasons));
  // One probe after the end succeeds: up at once (rise 1, not 2), through its slow start.
  const ok = at([ev, ...failed, probe('b', 'n1', 'e1', true, T + 2000)], T + 2000);
  assert.equal(ok.down, false);
  assert.ok(!ok.reasons.some((r) => /awaiting a probe/.test(r)) && ok.reasons.some((r) => /slow start after coming back up/.test(r)), JSON.stringify(ok.reasons));
  // One probe after the end fails: down, as ever.
  assert.equal(at([ev, ...failed, probe('b', 'n1', 'e1', false, T + 2000)], T + 2000).down, true);
  // No outage known, or one that did not drain it to 0 (SIMPLE level 1 caps at 0.75): the
  // failures are a fault, down as ever; a success needs rise 2.
  assert.equal(at(failed, T).down, true);
  const simple = sig('b', 'grid.event', { id: 'ev1', type: 'simple', level: 1, start: T - 10 * MIN, end: T }, { key: 'ev1', source: 'openadr3/vtn', at: T - 20 * MIN, ttl: 60 * MIN });
  assert.equal(at([simple, ...failed], T).down, true);
  assert.equal(at([...failed, probe('b', 'n1', 'e1', true, T + 2000)], T + 2000).down, true);
});
