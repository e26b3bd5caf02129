/**
 * Physical loss vs discretionary caps (issue 17, ADR 0014), through the real planner: which
 * claims of loss are trusted (planned whatever the safety limits and the freeze say), the
 * bounds on that trust, and the plan's alerts. Case tables over one three-region name.
 * Defaults: steps 30 s apart, S 300 s, m 5 s, R 120 s, TTL0 30 s → the ramp reaches 0 at
 * T − 335 s, GOAWAY until T − 300 s, new streams refused from T − 300 s.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, defaultSettings, type PlannerSettings } from './planner/index.js';
import { regionStepAt } from './decide.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import { foldRecords } from '../../test/helpers/policy.js';
import { FLEET, type Override, type Plan, type PlanAlert, type Signal } from '../model/types.js';

const T = 1_800_000_000_000;
const S = 1000;
const MIN = 60 * S;
const H = 3600 * S;
/** b's event starts 30 minutes after a's, and both overlap for 30 minutes. */
const TB = T + 30 * MIN;

function settings(loss: Partial<PlannerSettings['gridLoss']> = {}, over: Partial<PlannerSettings> = {}): PlannerSettings {
  const base = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
    { id: 'c', location: { lat: 40, lon: -75 }, capacityUnits: 100, fullLoadW: 10_000_000, minServingW: 2_000_000 },
  ]);
  return {
    ...base,
    names: [{ name: 'api.example.com', regions: ['a', 'b', 'c'] }],
    gridLoss: { bindings: { 'openadr3/vtn': ['a', 'b', 'c'], 'utility/': ['b'] }, maxTrustedLossShare: 0.7, ...loss },
    ...over,
    drain: { ...base.drain, sessionAllowanceMaxMs: 300_000, ...(over.drain ?? {}) },
  };
}

function event(region: string, v: Record<string, unknown>, o: { at?: number; source?: string; key?: string } = {}): Signal {
  const id = (v.id as string | undefined) ?? `ev-${region}`;
  const start = (v.start as number | undefined) ?? (region === 'b' ? TB : T);
  const observedAt = o.at ?? start - 2 * H;
  return { region, kind: 'grid.event', source: o.source ?? 'openadr3/vtn', key: o.key ?? id, observedAt, expiresAt: start + 2 * H, value: { id, start, end: start + H, type: 'load-shed', ...v } };
}

function snap(recs: SignalRecord[], overrides: Override[] = []): StoreSnapshot {
  return { revision: 1, records: recs, overrides, demand: [] };
}

let seq = 0;
function ov(region: string, action: Override['action'], o: Partial<Override> = {}): Override {
  return { id: `ov-${String(++seq).padStart(3, '0')}`, region, action, ramp: 0, actor: 'alice', reason: 'called the utility', start: T - 3 * H, ...o };
}

const run = (sigs: Signal[], st = settings(), ovs: Override[] = []): Plan => plan({ configHash: 'cfg', snapshot: snap(foldRecords(...sigs), ovs), settings: st });

/** A region at an instant: share, and refuse / GOAWAY when set. */
function at(p: Plan, r: string, t: number): string {
  const st = regionStepAt(p, r, t);
  return `${st.down ? 'down' : st.share}${st.refuse ? '/refuse' : ''}${st.goawayBy !== undefined ? `/goaway${(st.goawayBy - t) / S}` : ''}`;
}
const kinds = (p: Plan): string[] => (p.alerts ?? []).map((a: PlanAlert) => `${a.kind}:${a.regions.join(',')}:${a.severity}`).sort();
const reasons = (p: Plan, r: string, t: number) => regionStepAt(p, r, t).reasons.join(' | ');

const both = [event('a', {}), event('b', {})];

test('overlapping neighbours, both losses trusted: each is out of every answer before its T whatever maxAutoShare says, with an alert', () => {
  const p = run(both);
  // a alone: within every limit. b: 2 of 3 regions gone, beyond maxAutoShare 0.5: planned anyway.
  assert.equal(at(p, 'a', T - 320 * S), '0/goaway20');
  assert.equal(at(p, 'a', T - 300 * S), '0/refuse');
  assert.equal(at(p, 'b', TB - 336 * S), '0.3333', 'the last step of the 60 s ramp');
  assert.equal(at(p, 'b', TB - 335 * S), '0/goaway35');
  assert.equal(at(p, 'b', TB - 300 * S), '0/refuse');
  assert.equal(at(p, 'b', TB), '0/refuse');
  assert.match(reasons(p, 'b', TB), /physical loss: rule load-shed-order \(grid event ev-b from openadr3\/vtn.*\), trusted: openadr3\/vtn is bound to b/);
  assert.deepEqual(kinds(p), ['trusted-loss-over-limit:b:warning']);
  const al = p.alerts!.find((x) => x.kind === 'trusted-loss-over-limit')!;
  assert.equal(al.at, TB);
  assert.match(al.message, /at most 50 % of api\.example\.com's capacity/);
  // Two trusted losses starting 60 s apart: the one-drain-per-interval limit does not hold the second.
  const close = run([event('a', {}), event('b', { start: T + MIN })], settings({ maxTrustedLossShare: 0.7 }, { drain: { ...settings().drain, maxAutoShare: 1 } }));
  assert.equal(at(close, 'b', T + MIN - 335 * S), '0/goaway35');
  assert.deepEqual(kinds(close), ['trusted-loss-over-limit:b:warning']);
  assert.match(close.alerts![0]!.message, /at most one drain started per 120 s without an operator: a started at/);
  // The same events through a source not bound to b: b is a discretionary cap held by the safety limits.
  const unbound = run([event('a', {}), event('b', {}, { source: 'openadr3/other' })]);
  assert.equal(at(unbound, 'b', TB), '0.5');
  assert.deepEqual(kinds(unbound), ['held-by-safety:b:critical', 'loss-untrusted:b:warning']);
  assert.match(unbound.alerts!.find((x) => x.kind === 'held-by-safety')!.message, /waits for an operator, before .* for a full proactive drain/);
});

test('one source alone may take at most maxTrustedLossShare and never every region: the rest waits for a second source or an operator', () => {
  const tight = settings({ maxTrustedLossShare: 0.5 });
  const p = run(both, tight);
  assert.equal(at(p, 'a', T), '0/refuse');
  assert.equal(at(p, 'b', TB), '0.5', 'waits: the safety limits apply meanwhile');
  assert.deepEqual(kinds(p), ['loss-waiting:b:critical']);
  assert.match(p.alerts!.find((x) => x.kind === 'loss-waiting')!.message, /one principal \(openadr3\/vtn\) may take at most 50 % .*waits for a second principal or an operator \(gridsteer drain b --by /);
  // A second source bound to b says the same: corroborated, trusted.
  const corroborated = run([...both, event('b', { id: 'u-7' }, { source: 'utility/feeder-9' })], tight);
  assert.equal(at(corroborated, 'b', TB), '0/refuse');
  assert.match(reasons(corroborated, 'b', TB), /corroborated by utility\/feeder-9/);
  // A second claim by the same source is not corroboration.
  const same = run([...both, event('b', { id: 'ev-b2' }, { key: 'ev-b2' })], tight);
  assert.equal(at(same, 'b', TB), '0.5');
  // An operator's drain of b acknowledges it.
  const acked = run(both, tight, [ov('b', 'drain', { value: 0, start: TB - H })]);
  assert.match(reasons(acked, 'b', TB), /acknowledged by alice's drain \[ov-\d+\]/);
  assert.ok(!kinds(acked).some((k) => k.startsWith('loss-waiting')));
  // Every region of the name from one source, with no share bound: the last one waits.
  const all3 = run([...both, event('c', { start: T + 40 * MIN })], settings({ maxTrustedLossShare: 1 }));
  assert.equal(at(all3, 'b', TB), '0/refuse');
  assert.deepEqual(
    kinds(all3).filter((k) => k.startsWith('loss-waiting')),
    ['loss-waiting:c:critical'],
  );
  assert.match(all3.alerts!.find((x) => x.kind === 'loss-waiting')!.message, /it would leave none of api\.example\.com's regions/);
});

test('untrusted claims, case table: cap-only source, distrusted, replayed, stale, shadowed', () => {
  const cases: { name: string; sigs: Signal[]; st?: PlannerSettings; ovs?: Override[]; b: string; why?: RegExp; alerts: string[] }[] = [
    {
      name: 'a source trusted to cap only',
      sigs: [event('a', {}), event('b', {}, { source: 'grid-alerts/ercot' })],
      st: settings({ bindings: { 'openadr3/vtn': ['a'], 'grid-alerts/': ['b'] } }),
      // capped at capFloor 0.25, then held at 0.5 by maxAutoShare (a's trusted loss takes 100 of the 150 allowed)
      b: '0.5',
      why: /trusted to cap only/,
      alerts: ['held-by-safety:b:critical', 'loss-untrusted:b:warning'],
    },
    {
      name: 'distrusted by an operator',
      sigs: both,
      ovs: [ov(FLEET, 'distrust', { source: 'openadr3/vtn', reason: 'VTN compromised' })],
      b: '0.5',
      why: /openadr3\/vtn distrusted by alice \(VTN compromised\)/,
      alerts: ['held-by-safety:b:critical', 'loss-untrusted:a:warning', 'loss-untrusted:b:warning'],
    },
    {
      name: 'a distrust that ended before the events is no distrust',
      sigs: both,
      ovs: [ov(FLEET, 'distrust', { source: 'openadr3/vtn', start: T - 5 * H, end: T - 4 * H })],
      b: '0/refuse',
      alerts: ['trusted-loss-over-limit:b:warning'],
    },
    {
      name: 'a replay: observed before its source cancelled the same event',
      sigs: [event('a', {}), event('b', { id: 'ev-b' }, { key: 'ev-b-old', at: TB - 3 * H }), event('c', { id: 'ev-b', cancelled: true }, { key: 'ev-b', at: TB - 2.5 * H })],
      b: '0.5',
      why: /replayed: observed at .*, before openadr3\/vtn cancelled event ev-b at/,
      alerts: ['held-by-safety:b:critical', 'loss-untrusted:b:warning'],
    },
    {
      name: 'shadowed: not a claim at all',
      sigs: both,
      st: settings({}, { gridShadow: ['openadr3/'] }),
      b: '1',
      alerts: [],
    },
  ];
  for (const c of cases) {
    const p = run(c.sigs, c.st ?? settings(), c.ovs ?? []);
    assert.equal(at(p, 'b', TB), c.b, c.name);
    assert.deepEqual(kinds(p), c.alerts, c.name);
    if (c.why) assert.match((p.alerts ?? []).map((x) => x.message).join(' | '), c.why, c.name);
  }
});

test('the operator freeze does not stop a trusted loss (and says so); distrust does', () => {
  const freeze = ov(FLEET, 'freeze', { hold: { a: 1, b: 1, c: 1 }, reason: 'suspect VTN', start: T - 2 * H });
  const p = run(both, settings(), [freeze]);
  assert.equal(at(p, 'a', T), '0/refuse');
  assert.equal(at(p, 'b', TB), '0/refuse');
  assert.match(reasons(p, 'b', TB), /the physical loss acts although automation frozen by alice \[ov-\d+\] would hold it/);
  assert.deepEqual(kinds(p), ['loss-during-freeze:a:warning', 'loss-during-freeze:b:warning', 'trusted-loss-over-limit:b:warning']);
  // Untrusted (distrusted), the freeze holds both where they were.
  const d = run(both, settings(), [freeze, ov(FLEET, 'distrust', { source: 'openadr3/', start: T - 2 * H })]);
  assert.equal(at(d, 'a', T), '1');
  assert.equal(at(d, 'b', TB), '1');
});

test('an import limit is a loss only when the limit plus on-site power is below the region\'s minimum serving load', () => {
  const limit = (limitW: number) => event('c', { type: 'import-capacity-limit', limitW });
  const budget = (generationW: number): Signal => ({
    region: 'c',
    kind: 'power.budget',
    source: 'site/bms',
    key: 'c',
    observedAt: T - 2 * H,
    expiresAt: T + 24 * H,
    value: { importLimitW: 10_000_000, generationW },
  });
  const cases: { name: string; sigs: Signal[]; claim: boolean }[] = [
    { name: 'zero import, no on-site power', sigs: [limit(0)], claim: true },
    { name: 'zero import, 3 MW on site (≥ 2 MW minimum)', sigs: [limit(0), budget(3_000_000)], claim: false },
    { name: '1 MW import, 0.5 MW on site (< 2 MW)', sigs: [limit(1_000_000), budget(500_000)], claim: true },
    { name: '5 MW import', sigs: [limit(5_000_000)], claim: false },
  ];
  for (const c of cases) {
    const p = run(c.sigs);
    const claim = /physical loss: rule capacity-limit/.test(reasons(p, 'c', T));
    assert.equal(claim, c.claim, c.name);
    if (c.claim) assert.equal(at(p, 'c', T), '0/refuse', c.name);
  }
});

test('the plan is the same made again and reused: verdicts are part of what a region\'s schedule is kept by', () => {
  const st = settings({ maxTrustedLossShare: 0.5 });
  const first = run(both, st);
  // The same inputs again: the same plan.
  assert.deepEqual(run(both, st), first);
  // A corroborating source arrives: b's records are unchanged, its verdict changes, so its schedule does.
  const corroborated = run([...both, event('b', { id: 'u-7' }, { source: 'utility/feeder-9' })], st);
  assert.equal(at(corroborated, 'b', TB), '0/refuse');
  // And back: the corroboration is gone.
  assert.equal(at(run(both, st), 'b', TB), '0.5');
});

test('nested, back-to-back, modified and cancelled losses on one region and on neighbours, case table', () => {
  const st = settings();
  const cases: { name: string; sigs: Signal[]; want: [string, number, string][]; alerts?: string[] }[] = [
    {
      name: 'nested on one region: dark through the outer event, restored after its end and hold',
      sigs: [event('a', { id: 'outer', start: T, end: T + 2 * H }), event('a', { id: 'inner', start: T + 30 * MIN, end: T + H }, { key: 'inner' })],
      want: [['a', T + 59 * MIN, '0/refuse'], ['a', T + H + 5 * MIN, '0/refuse'], ['a', T + 2 * H, '0'], ['a', T + 2 * H + 2 * MIN + 30 * S, '0.1']],
    },
    {
      name: 'back to back on one region: no restore in between',
      sigs: [event('a', { id: 'first', start: T, end: T + H }), event('a', { id: 'second', start: T + H, end: T + 2 * H }, { key: 'second' })],
      want: [['a', T + H - S, '0/refuse'], ['a', T + H, '0/refuse'], ['a', T + H + 3 * MIN, '0/refuse']],
    },
    {
      name: 'back to back on neighbours: a restores while b drains; both trusted (2 of 3 regions at once, within 0.7)',
      sigs: [event('a', { start: T, end: T + H }), event('b', { start: T + H, end: T + 2 * H })],
      want: [['a', T + H - 60 * S, '0/refuse'], ['b', T + H - 300 * S, '0/refuse'], ['a', T + H + 150 * S, '0.1'], ['b', T + H, '0/refuse']],
      alerts: ['trusted-loss-over-limit:b:warning'],
    },
    {
      name: "b's event moved later while a's is in force: the new window is planned, the old one ends at the change",
      sigs: [...both, event('b', { start: TB + H, end: TB + 2 * H }, { at: TB - H })],
      want: [['b', TB, '1'], ['b', TB + H - 300 * S, '0/refuse'], ['a', TB, '0/refuse']],
    },
    {
      name: "b's event cancelled while a's is in force: b never drains, a is unaffected",
      sigs: [...both, event('b', { cancelled: true }, { at: TB - 2 * H + MIN })],
      want: [['b', TB, '1'], ['a', T, '0/refuse']],
      alerts: [],
    },
  ];
  for (const c of cases) {
    const p = run(c.sigs, st);
    for (const [r, t, want] of c.want) assert.equal(at(p, r, t), want, `${c.name}: ${r} at T${t >= T ? '+' : '−'}${Math.abs(t - T) / S}s`);
    if (c.alerts) assert.deepEqual(kinds(p), c.alerts, c.name);
  }
});

test('a trusted loss never lifts a discretionary drain that started before it; later discretionary caps get what is left', () => {
  // a: a grid emergency (a drain, not a claim of loss) from T; b: a trusted load shed from TB;
  // c: a discretionary drain from TB + 10 min. maxAutoShare 0.5 of 300 units = 150.
  const emergency = event('a', { type: 'grid-emergency' });
  const later = event('c', { type: 'drain', start: TB + 10 * MIN });
  const p = run([emergency, event('b', {}), later]);
  assert.equal(at(p, 'a', TB), '0/refuse', "a started first: it keeps its drain when b's trusted loss comes");
  assert.equal(at(p, 'b', TB), '0/refuse', "b's trusted loss acts beyond the limit");
  assert.equal(at(p, 'c', TB + 10 * MIN), '1', 'c, later and discretionary, gets what is left: nothing');
  assert.match(reasons(p, 'c', TB + 10 * MIN), /safety: gridPolicy may take at most 50 %/);
  assert.deepEqual(kinds(p), ['held-by-safety:c:warning', 'trusted-loss-over-limit:b:warning']);
});
