/**
 * Recurring windows through the real planner (issue 21): windows → occurrences → each
 * region's steps, as case tables. DST changes in Europe/Dublin and America/Chicago, blocked
 * dates, from/until, overlapping windows, a window overlapping a grid event, where each kind
 * ranks (maintenance: the operator's; tariff: a grid obligation under the safety limits),
 * a node planning mid-window, and horizons of consecutive epochs agreeing.
 * Drain settings: steps 30 s apart, S 300 s (fixed), m 5 s, R 120 s, TTL0 30 s → the ramp at
 * start − 455 … − 335 s (5 steps), the hold 120 s after the end, then 10 restore steps 30 s apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, defaultSettings, type PlannerSettings } from './planner/index.js';
import { decide, regionStepAt, type DecideName } from './decide.js';
import { HORIZON_MS } from './rules/windows.js';
import { checkWindow } from '../config/windows.js';
import { Value } from '@sinclair/typebox/value';
import { WindowSpecSchema, type PlannerWindow, type WindowSpec } from '../model/windows.js';
import type { Override, Plan, Signal } from '../model/types.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import { foldRecords } from '../../test/helpers/policy.js';
import type { SubnetKey } from '../model/cell.js';

const S = 1000;
const H = 3_600_000;
const REGIONS = ['eu-ie', 'us-tx', 'us-va'];

function settings(windows: PlannerWindow[], drain: Partial<PlannerSettings['drain']> = {}): PlannerSettings {
  const base = defaultSettings([
    { id: 'eu-ie', location: { lat: 53, lon: -6 } },
    { id: 'us-tx', location: { lat: 32, lon: -97 } },
    { id: 'us-va', location: { lat: 39, lon: -77 } },
  ]);
  return { ...base, windows, drain: { ...base.drain, sessionAllowanceMaxMs: 300_000, rampMs: 120_000, ...drain } };
}

const SAFETY = { maxAutoShare: 0.5, minDrainIntervalMs: 120_000, units: {}, names: [{ name: 'api', regions: REGIONS }] };

/** A window as the config or the API writes it (schema defaults filled), checked and parsed like the loader does. */
function win(spec: Partial<WindowSpec> & { id: string; cron: string; duration: string; regions: string[] }, learnedAt?: number): PlannerWindow {
  const w = Value.Default(WindowSpecSchema, { reason: 'test', ...spec }) as WindowSpec;
  assert.ok(Value.Check(WindowSpecSchema, w), `${spec.id} fits the schema`);
  const r = checkWindow(w, new Set(REGIONS), SAFETY, learnedAt === undefined ? 'config' : 'api', learnedAt);
  assert.deepEqual(r.problems, [], `${spec.id} is accepted`);
  return r.window!;
}

const epochOf = (day: string) => Math.floor(Date.parse(`${day}T00:00:00Z`) / HORIZON_MS);
const snap = (recs: SignalRecord[] = [], overrides: Override[] = []): StoreSnapshot => ({ revision: 1, records: recs, overrides, demand: [] });
const run = (s: PlannerSettings, day: string, sn: StoreSnapshot = snap()) => plan({ configHash: 'cfg', snapshot: sn, settings: s, horizonEpoch: epochOf(day) });

/** Each step of a region as `offset s from t0:share[/refuse]` ("0" = the plan's first step). */
function shape(p: Plan, r: string, t0: number): string {
  return (p.regions[r] ?? []).map((x) => `${x.at === 0 ? '0' : (x.at - t0) / S}:${x.down ? 'down' : x.share}${x.ttlCap !== undefined ? `/ttl${x.ttlCap}` : ''}${x.refuse ? '/refuse' : ''}`).join(' ');
}
const shareAt = (p: Plan, r: string, t: number) => regionStepAt(p, r, t).share;
const occ = (p: Plan) => (p.windows ?? []).map((o) => `${o.window} ${new Date(o.start).toISOString().slice(0, 16)}–${new Date(o.end).toISOString().slice(11, 16)}${o.skipped ? ` skipped: ${o.skipped}` : ''}`);

const DRAINED = '-455:0.8 -425:0.6 -395:0.4 -365:0.2 -335:0 0:0/refuse';
const RESTORE = (end: number) => `${end}:0 ${end + 120}:0 ${[...Array(10).keys()].map((k) => `${end + 150 + 30 * k}:${k === 9 ? 1 : (k + 1) / 10}`).join(' ')}`;

test('windows → occurrences over the horizon, across DST changes, blocked dates and from/until', () => {
  const dublin = { id: 'eu-ie-sunday', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h', reason: 'patching' };
  const cases: { name: string; w: PlannerWindow; day: string; want: string[] }[] = [
    { name: 'Dublin, Sunday 02:00 IST (spring forward: 02:00 exists, it is 01:00Z)', w: win(dublin), day: '2026-03-28', want: ['eu-ie-sunday 2026-03-29T01:00–03:00'] },
    { name: 'Dublin, Sunday 02:00 GMT after the fall back (02:00Z, once)', w: win(dublin), day: '2026-10-24', want: ['eu-ie-sunday 2026-10-25T02:00–04:00'] },
    { name: 'Dublin, a week of summer: one Sunday', w: win(dublin), day: '2026-06-06', want: ['eu-ie-sunday 2026-06-07T01:00–03:00'] },
    {
      name: 'Dublin, a release-freeze date blocked: listed, skipped',
      w: win({ ...dublin, blockedDates: ['2026-06-07'] }),
      day: '2026-06-06',
      want: ['eu-ie-sunday 2026-06-07T01:00–03:00 skipped: blocked date 2026-06-07 (Europe/Dublin)'],
    },
    { name: 'Dublin, until the day before: none', w: win({ ...dublin, until: '2026-06-06' }), day: '2026-06-06', want: [] },
    { name: 'Dublin, from that Sunday: it', w: win({ ...dublin, from: '2026-06-07' }), day: '2026-06-06', want: ['eu-ie-sunday 2026-06-07T01:00–03:00'] },
    {
      name: 'Chicago, daily 02:30: none on the spring-forward day (02:30 does not exist)',
      w: win({ id: 'tx-night', regions: ['us-tx'], cron: '30 2 * * *', timezone: 'America/Chicago', duration: '1h' }),
      day: '2026-03-08',
      want: ['tx-night 2026-03-09T07:30–08:30'],
    },
    {
      name: 'Chicago, daily 01:30 on the fall-back day: once, at 01:30 CDT',
      w: win({ id: 'tx-night', regions: ['us-tx'], cron: '30 1 * * *', timezone: 'America/Chicago', duration: '1h' }),
      day: '2026-11-01',
      want: ['tx-night 2026-11-01T06:30–07:30', 'tx-night 2026-11-02T07:30–08:30'],
    },
    {
      name: 'ERCOT 4CP: weekdays 15:00 Central in June–September for 3 h (20:00Z in CDT)',
      w: win({ id: 'ercot-4cp', kind: 'tariff', regions: ['us-tx'], cron: '0 15 * 6-9 1-5', timezone: 'America/Chicago', duration: '3h', cap: 0.6 }),
      day: '2026-06-01',
      want: ['ercot-4cp 2026-06-01T20:00–23:00', 'ercot-4cp 2026-06-02T20:00–23:00'],
    },
    {
      name: 'ERCOT 4CP on the last day of September: that afternoon, none on October 1',
      w: win({ id: 'ercot-4cp', kind: 'tariff', regions: ['us-tx'], cron: '0 15 * 6-9 1-5', timezone: 'America/Chicago', duration: '3h', cap: 0.6 }),
      day: '2026-09-30',
      want: ['ercot-4cp 2026-09-30T20:00–23:00'],
    },
  ];
  for (const c of cases) assert.deepEqual(occ(run(settings([c.w]), c.day)), c.want, c.name);
});

test('a maintenance window drains like an operator drain with a deadline: ramp ahead, refuse in it, hold and restore after', () => {
  const w = win({ id: 'eu-ie-sunday', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h', reason: 'patching' });
  const p = run(settings([w]), '2026-10-24');
  const t0 = Date.parse('2026-10-25T02:00:00Z');
  assert.equal(shape(p, 'eu-ie', t0), `0:1 ${DRAINED} ${RESTORE(7200)}`);
  assert.equal(p.regions['us-tx'], undefined, 'other regions untouched');
  const st = regionStepAt(p, 'eu-ie', t0 + H);
  assert.deepEqual(st.reasons, ['eu-ie: maintenance window eu-ie-sunday (patching), 2026-10-25T02:00:00.000Z–2026-10-25T04:00:00.000Z: in force since 2026-10-25T02:00:00.000Z → cap 0']);
  // Blocked: no step at all.
  const blocked = run(settings([win({ id: 'eu-ie-sunday', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h', blockedDates: ['2026-10-25'] })]), '2026-10-24');
  assert.equal(blocked.regions['eu-ie'], undefined);
});

/** Clients whose home is eu-ie (ranking eu-ie, us-va, us-tx). */
const KEYS: SubnetKey[] = Array.from({ length: 500 }, (_, i) => ({ family: 4, hi: ((10 << 24) | (i << 8)) >>> 0, lo: 0, prefix: 24 }));
const NAME: DecideName = { name: 'api.example.com.', ttl: 30, regions: new Map(REGIONS.map((r, i) => [r, { v4: [`192.0.2.${i + 1}`], v6: [] }])), whenAllDown: 'nearest' };

test('answers ahead of a maintenance window: the full TTL before the lead, then TTLs bounded by the next step; moved by the start; back after the restore', () => {
  const w = win({ id: 'eu-ie-sunday', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h' });
  const p = run(settings([w]), '2026-10-24');
  const t0 = Date.parse('2026-10-25T02:00:00Z');
  const at = (dt: number) => {
    const out = { ie: 0, ttls: new Set<number>() };
    for (const k of KEYS) {
      const a = decide(p, { ranking: ['eu-ie', 'us-va', 'us-tx'], origin: 'test' }, k, NAME, 'A', t0 + dt * S, { minTtl: 5 });
      if (a.region === 'eu-ie') out.ie++;
      out.ttls.add(a.ttl);
    }
    return out;
  };
  assert.deepEqual(at(-600), { ie: 500, ttls: new Set([30]) }, 'before the lead: all at home, full TTL');
  assert.deepEqual(at(-470).ttls, new Set([15]), 'TTLs shrink ahead of the first ramp step (at −455 s)');
  assert.equal(at(-335).ie, 0, 'drained by start − S − g − m');
  assert.equal(at(3600).ie, 0, 'in the window');
  assert.equal(at(7200 + 120 + 300 + 1).ie, 500, 'restored after the hold and the restore');
});

test('where windows rank: maintenance over the safety limits only with force; tariff under them; a window and a grid event overlapping', () => {
  const all = { regions: REGIONS, cron: '0 12 * * *', timezone: 'UTC', duration: '1h' };
  // Without force, a maintenance window draining the whole fleet is refused where it is written.
  const spec = Value.Default(WindowSpecSchema, { id: 'all', reason: 'x', ...all }) as WindowSpec;
  assert.deepEqual(
    checkWindow(spec, new Set(REGIONS), SAFETY, 'config').problems.map((p) => p.path.join('.')),
    ['force'],
  );
  const noon = Date.parse('2026-06-01T12:30:00Z');
  // Maintenance with force: every region drained (an operator's confirmation: no limit).
  const m = run(settings([win({ id: 'all', force: true, ...all })]), '2026-06-01');
  assert.deepEqual(REGIONS.map((r) => shareAt(m, r, noon)), [0, 0, 0]);
  // The same as a tariff window: gridPolicy may take at most half the capacity, one drain per 120 s.
  const t = run(settings([win({ id: 'all', kind: 'tariff', ...all })]), '2026-06-01');
  const shares = REGIONS.map((r) => shareAt(t, r, noon));
  assert.ok(shares.reduce((x, y) => x + (1 - y), 0) <= 1.5 + 1e-9, `at most 50 % taken: ${shares}`);
  assert.ok(regionStepAt(t, 'us-va', noon).reasons.some((x) => x.includes('safety:')), 'the held region says why');
  // A tariff cap 0.6 and an OpenADR load shed (drain) inside it on us-tx: the least wins, both said.
  const tariff = win({ id: 'ercot-4cp', kind: 'tariff', regions: ['us-tx'], cron: '0 15 * 6-9 1-5', timezone: 'America/Chicago', duration: '3h', cap: 0.6 });
  const shedStart = Date.parse('2026-06-01T21:00:00Z');
  const ev: Signal = { region: 'us-tx', kind: 'grid.event', source: 'openadr3/vtn', key: 'e1', observedAt: shedStart - 6 * H, expiresAt: shedStart + 24 * H, value: { id: 'e1', start: shedStart, end: shedStart + H, type: 'load-shed' } };
  const g = run(settings([tariff]), '2026-06-01', snap(foldRecords(ev)));
  assert.equal(shareAt(g, 'us-tx', Date.parse('2026-06-01T20:30:00Z')), 0.6);
  const during = regionStepAt(g, 'us-tx', shedStart + H / 2);
  assert.equal(during.share, 0);
  assert.equal(during.refuse, true);
  assert.ok(during.reasons.some((x) => x.includes('tariff window ercot-4cp')) && during.reasons.some((x) => x.includes('grid event e1')), during.reasons.join(' | '));
  assert.equal(shareAt(g, 'us-tx', Date.parse('2026-06-01T22:50:00Z')), 0.6, 'after the shed and its restore, the tariff cap again');
});

test('overlapping windows on one region: the least cap holds while both act', () => {
  const maint = win({ id: 'tx-works', regions: ['us-tx'], cron: '0 14 * * *', timezone: 'America/Chicago', duration: '2h', cap: 0.5 });
  const tariff = win({ id: 'ercot-4cp', kind: 'tariff', regions: ['us-tx'], cron: '0 15 * 6-9 1-5', timezone: 'America/Chicago', duration: '3h', cap: 0.6 });
  const p = run(settings([maint, tariff]), '2026-06-01');
  const at = (hhmm: string) => shareAt(p, 'us-tx', Date.parse(`2026-06-01T${hhmm}:00Z`));
  assert.deepEqual(['19:30', '20:30', '21:30', '22:30'].map(at), [0.5, 0.5, 0.6, 0.6]);
  // The same window's occurrences overlapping (a 25 h window every day) act as one.
  const long = run(settings([win({ id: 'long', regions: ['us-va'], cron: '0 0 * * *', timezone: 'UTC', duration: '1d1h' })]), '2026-06-01');
  const ones = (long.regions['us-va'] ?? []).filter((x) => x.share === 1);
  const lastEnd = Math.max(...(long.windows ?? []).map((o) => o.end));
  assert.deepEqual(ones.map((x) => x.at === 0 || x.at >= lastEnd), [true, true], 'never restored in between: 1 only before the first and after the last');
});

test('a node planning mid-window is in it, and consecutive epochs agree on every instant they share', () => {
  // 22:00–02:00 UTC every day: planned on day E+1 at 01:00 (a node restarted mid-window), the region is drained.
  const w = win({ id: 'night', regions: ['us-va'], cron: '0 22 * * *', timezone: 'UTC', duration: '4h' });
  const s = settings([w]);
  const pE = run(s, '2026-06-01');
  const pE1 = run(s, '2026-06-02');
  assert.equal(shareAt(pE1, 'us-va', Date.parse('2026-06-02T01:00:00Z')), 0);
  assert.equal(shareAt(pE1, 'us-va', Date.parse('2026-06-02T01:00:00Z')), shareAt(pE, 'us-va', Date.parse('2026-06-02T01:00:00Z')));
  let compared = 0;
  for (let t = (epochOf('2026-06-01') + 1) * HORIZON_MS; t < (epochOf('2026-06-01') + 2) * HORIZON_MS; t += 30 * S) {
    assert.equal(shareAt(pE, 'us-va', t), shareAt(pE1, 'us-va', t), new Date(t).toISOString());
    compared++;
  }
  assert.equal(compared, 2880);
  // Same inputs, same bytes; another epoch, another version.
  assert.equal(JSON.stringify(run(settings([w]), '2026-06-01')), JSON.stringify(pE));
  assert.notEqual(pE.version, pE1.version);
  // No epoch: windows do not act (the simulator and callers that pass none).
  assert.equal(plan({ configHash: 'cfg', snapshot: snap(), settings: s }).windows, undefined);
});

test('practice runs: run when nothing blocks; skipped when a grid alert, an announced physical loss, a capped region, a freeze or too little capacity left; aborted when one begins during the run', () => {
  const practice = (o: Partial<WindowSpec> = {}) => win({ id: 'va-drill', kind: 'practice', regions: ['us-va'], cron: '0 14 * * tue', timezone: 'UTC', duration: '1h', reason: 'weekly drill', ...o });
  const DAY = '2026-06-01'; // Monday: the run is Tuesday 2026-06-02 14:00–15:00Z
  const T = Date.parse('2026-06-02T14:00:00Z');
  const listed = (p: Plan) => p.windows!.find((o) => o.window === 'va-drill')!;
  // Nothing blocks: it runs like a drain, and restores.
  const ok = run(settings([practice()]), DAY);
  assert.equal(listed(ok).skipped, undefined);
  assert.equal(listed(ok).aborted, undefined);
  assert.equal(shape(ok, 'us-va', T), `0:1 ${DRAINED} ${RESTORE(3600)}`);
  assert.ok(regionStepAt(ok, 'us-va', T + 1000).reasons[0]!.includes('practice run va-drill (weekly drill)'));
  // A grid alert in force in another region when the run would begin: skipped, nothing moves.
  const alert: Signal = { region: 'us-tx', kind: 'grid.alert', source: 'ercot/alerts', key: 'a1', observedAt: T - 2 * H, expiresAt: T + 6 * H, value: { type: 'watch', level: 1 } };
  const alerted = run(settings([practice()]), DAY, snap(foldRecords(alert)));
  assert.match(listed(alerted).skipped!, /^practice run blocked at 2026-06-02T13:52:25\.000Z: a grid alert is in force in us-tx \(grid alert watch level 1 from ercot\/alerts\)$/);
  assert.equal(shareAt(alerted, 'us-va', T + 1000), 1);
  // A load shed announced for us-tx from half-way through the run (its drain starts during it): skipped.
  const shed: Signal = { region: 'us-tx', kind: 'grid.event', source: 'openadr3/vtn', key: 's1', observedAt: T - 2 * H, expiresAt: T + 6 * H, value: { id: 's1', type: 'load-shed', start: T + H / 2, end: T + 2 * H } };
  assert.match(listed(run(settings([practice()]), DAY, snap(foldRecords(shed)))).skipped!, /: a physical loss is announced for us-tx \(grid event s1 from openadr3\/vtn: load-shed/);
  // One announced for the next day (its drain starts long after the run): the drill runs.
  const later: Signal = { ...shed, value: { id: 's1', type: 'load-shed', start: T + 24 * H, end: T + 25 * H } };
  assert.equal(listed(run(settings([practice()]), DAY, snap(foldRecords(later)))).skipped, undefined);
  // Another region capped (a tariff window at that hour): skipped.
  const tariff = win({ id: 'tx-peak', kind: 'tariff', regions: ['us-tx'], cron: '0 13 * * *', timezone: 'UTC', duration: '3h', cap: 0.6 });
  assert.match(listed(run(settings([practice(), tariff]), DAY)).skipped!, /: us-tx is capped at 0\.6$/);
  // Automation frozen: skipped.
  const freeze: Override = { id: 'ov-9', region: '*', action: 'freeze', ramp: 0, hold: {}, actor: 'alice', reason: 'storm', start: T - H, end: T + 2 * H };
  assert.match(listed(run(settings([practice()]), DAY, snap([], [freeze]))).skipped!, /: automation is frozen by alice \(storm\) \[ov-9\]$/);
  // Too little capacity left with us-va out (2 of 3 units left, the run asks for 90 %).
  assert.match(listed(run(settings([practice({ minCapacityLeft: 0.9 })]), DAY)).skipped!, /the other regions keep 67 % of the fleet's capacity, less than 90 %$/);
  // An operator drains eu-ie half-way through the run: aborted there, us-va holds and restores from then.
  const drainIe: Override = { id: 'ov-1', region: 'eu-ie', action: 'drain', value: 0, ramp: 0, actor: 'bob', reason: 'fibre cut', start: T + 1800 * S };
  const aborted = run(settings([practice()]), DAY, snap([], [drainIe]));
  assert.deepEqual(listed(aborted).aborted, { at: T + 1800 * S, why: 'practice run aborted at 2026-06-02T14:30:00.000Z: eu-ie is capped at 0' });
  assert.equal(shape(aborted, 'us-va', T), `0:1 ${DRAINED} ${RESTORE(1800)}`);
});
