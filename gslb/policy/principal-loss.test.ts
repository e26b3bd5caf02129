/**
 * The loss bounds count principals, not sources (issue 28, ADR 0021): case tables through the
 * real planner over one three-region name. Bound sources as docs/grid-policy.md shows them;
 * each claim written by a principal, under a grant or without one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, defaultSettings, type PlannerSettings } from './planner/index.js';
import { regionStepAt } from './decide.js';
import type { StoreSnapshot } from '../model/snapshot.js';
import { foldRecordsBy } from '../../test/helpers/policy.js';
import { FLEET, type Override, type Plan, type Signal } from '../model/types.js';
import type { Provenance } from '../model/principal.js';

const T = 1_800_000_000_000;
const MIN = 60_000;
const H = 60 * MIN;
const TB = T + 30 * MIN;

/** `spread`: the default drain settings, whose ramp spreads over a long notice (hours before T). */
function settings(maxTrustedLossShare = 0.5, spread = false): PlannerSettings {
  const base = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
    { id: 'c', location: { lat: 40, lon: -75 }, capacityUnits: 100 },
  ]);
  return {
    ...base,
    names: [{ name: 'api.example.com', regions: ['a', 'b', 'c'] }],
    gridLoss: { bindings: { 'openadr3/vtn': ['a', 'b', 'c'], 'utility/': ['a', 'b', 'c'] }, maxTrustedLossShare },
    drain: spread ? base.drain : { ...base.drain, sessionAllowanceMaxMs: 300_000 },
  };
}

function event(region: string, v: Record<string, unknown> = {}, o: { at?: number; source?: string; key?: string } = {}): Signal {
  const id = (v.id as string | undefined) ?? `ev-${region}`;
  const start = (v.start as number | undefined) ?? (region === 'a' ? T : TB);
  return { region, kind: 'grid.event', source: o.source ?? 'openadr3/vtn', key: o.key ?? id, observedAt: o.at ?? start - 2 * H, expiresAt: start + 2 * H, value: { id, start, end: start + H, type: 'load-shed', ...v } };
}

const VTN: Provenance = { principal: 'collector:openadr3', grant: 'openadr3/' };
const BRIDGE: Provenance = { principal: 'token:bridge', grant: 'utility/' };
const EVIL: Provenance = { principal: 'token:evil', grant: 'utility/' };
const LOOSE: Provenance = { principal: 'token:prober' };

const run = (writes: [Signal, Provenance | undefined][], st = settings(), ovs: Override[] = []): Plan => {
  const snapshot: StoreSnapshot = { revision: 1, records: foldRecordsBy(...writes), overrides: ovs, demand: [] };
  return plan({ configHash: 'cfg', snapshot, settings: st });
};
const shareAt = (p: Plan, r: string, t: number) => {
  const s = regionStepAt(p, r, t);
  return s.down ? 'down' : String(s.share);
};
/** The regions with a claim waiting (each once). */
const waiting = (p: Plan) => [...new Set((p.alerts ?? []).filter((a) => a.kind === 'loss-waiting').map((a) => a.regions.join(',')))].sort();
/** Whether a region is planned dark on a trusted claim of physical loss at `t`. */
const trusted = (p: Plan, r: string, t: number) => regionStepAt(p, r, t).reasons.some((x) => /physical loss: .*trusted:/.test(x));
const messages = (p: Plan) => (p.alerts ?? []).map((a) => a.message).join(' | ') + ' | ' + ['a', 'b', 'c'].map((r) => regionStepAt(p, r, TB).reasons.join(' | ')).join(' | ');
/** The share of the name's capacity units trusted dark at `t` (every region 100 units). */
const trustedDark = (p: Plan, t: number) => ['a', 'b', 'c'].filter((r) => trusted(p, r, t)).length / 3;

test('loss pass by principal, case table: two sources of one principal are one witness; corroboration needs a second principal', () => {
  const cases: { name: string; writes: [Signal, Provenance | undefined][]; b: boolean; waits: string[]; why?: RegExp; st?: PlannerSettings }[] = [
    {
      name: 'one principal, one source: b waits (a alone already takes 33 %; both would be 67 % > 50 %)',
      writes: [[event('a'), VTN], [event('b'), VTN]],
      b: false,
      waits: ['b'],
      why: /one principal \(collector:openadr3\) may take at most 50 %/,
    },
    {
      name: 'one principal speaking as two bound sources: still one witness, b waits',
      writes: [[event('a'), BRIDGE], [event('b', {}, { source: 'utility/feeder-9' }), BRIDGE], [event('b', { id: 'u-7' }, { source: 'utility/feeder-10' }), BRIDGE]],
      b: false,
      waits: ['b'],
    },
    {
      name: 'two principals on b: corroborated, trusted',
      writes: [[event('a'), VTN], [event('b'), VTN], [event('b', { id: 'u-7' }, { source: 'utility/feeder-9' }), BRIDGE]],
      b: true,
      waits: [],
      why: /corroborated by utility\/feeder-9 \(token:bridge\)/,
    },
    {
      name: 'another principal\'s claim on b for a later window does not corroborate (only its drain ramp, spread over 5 h of notice, overlaps)',
      st: settings(0.5, true),
      writes: [[event('a'), VTN], [event('b'), VTN], [event('b', { id: 'u-8', start: TB + 3 * H }, { source: 'utility/feeder-9', at: TB - 2 * H }), BRIDGE]],
      b: false,
      waits: ['b'],
    },
    {
      name: 'a principal without a grant never corroborates',
      writes: [[event('a'), VTN], [event('b'), VTN], [event('b', { id: 'p-1' }, { source: 'prober/x' }), LOOSE]],
      b: false,
      waits: ['b'],
    },
    {
      name: 'a principal without a grant is never trusted for a physical loss, even bound',
      writes: [[event('b', {}, { source: 'utility/feeder-9' }), LOOSE]],
      b: false,
      waits: [],
      why: /utility\/feeder-9 was written by token:prober without a grant for it: .*never trusted/,
    },
  ];
  for (const c of cases) {
    const p = run(c.writes, c.st);
    // The decision on b's event ev-b (Plan.trust): another claim's ramp may be under way at the same instant.
    const onB = (p.trust ?? []).filter((d) => d.region === 'b' && d.eventId === 'ev-b');
    assert.ok(onB.length > 0, `${c.name}: ev-b is a claim`);
    assert.equal(onB.every((d) => d.status === 'trusted'), c.b, `${c.name}: b's ev-b trusted: ${JSON.stringify(onB)}`);
    assert.deepEqual(waiting(p), c.waits, c.name);
    if (c.why) assert.match(messages(p), c.why, c.name);
  }
});

test('the issue\'s forgery: one token posting as every bound source never trusts more than maxTrustedLossShare dark', () => {
  // Before principals, two sources of one token corroborated each other: 2 of 3 regions (67 %) trusted dark.
  const forged: [Signal, Provenance | undefined][] = [
    [event('a', {}, { source: 'utility/feeder-1' }), EVIL],
    [event('b', {}, { source: 'utility/feeder-2' }), EVIL],
    [event('b', { id: 'x-2' }, { source: 'utility/feeder-3' }), EVIL],
    [event('c', {}, { source: 'utility/feeder-4' }), EVIL],
    [event('c', { id: 'x-3' }, { source: 'utility/feeder-5' }), EVIL],
  ];
  const p = run(forged);
  for (const t of [T + MIN, TB + MIN]) assert.ok(trustedDark(p, t) <= 0.5, `trusted dark ${trustedDark(p, t)} at ${t}`);
  assert.deepEqual(waiting(p), ['b', 'c']);
  assert.equal(p.alerts!.find((a) => a.kind === 'loss-waiting')!.severity, 'critical');
});

test('replay and cancel are per principal: another principal\'s cancel does not make a genuine claim a replay', () => {
  // VTN's claim on b, learned 2 h before; a cancellation of the same event id under the same source name, stored on c's record.
  const claim: [Signal, Provenance] = [event('b', { id: 'ev-b' }, { key: 'ev-b', at: TB - 3 * H }), VTN];
  const cancelBy = (by: Provenance): [Signal, Provenance] => [event('c', { id: 'ev-b', cancelled: true }, { key: 'ev-b', at: TB - 2.5 * H }), by];
  const own = run([claim, cancelBy(VTN)], settings(1));
  assert.match(messages(own), /replayed: observed at .*, before collector:openadr3 cancelled event ev-b of openadr3\/vtn/);
  assert.equal(trusted(own, 'b', TB + MIN), false, 'its own cancel: the older claim is a replay, untrusted');
  const other = run([claim, cancelBy({ principal: 'token:evil' })], settings(1));
  assert.doesNotMatch(messages(other), /replayed/);
  assert.equal(trusted(other, 'b', TB + MIN), true, 'another principal\'s cancel changes nothing: trusted');
});

test('a record is its writer\'s until it expires: another principal cannot modify or cancel it', () => {
  const claim = event('b');
  const cancel = { ...event('b', { cancelled: true }), observedAt: claim.observedAt + MIN };
  const p = run([[claim, VTN], [cancel, EVIL]], settings(1));
  assert.equal(trusted(p, 'b', TB + MIN), true, 'the forged cancel was refused: still a trusted loss');
  const mine = run([[claim, VTN], [cancel, VTN]], settings(1));
  assert.equal(shareAt(mine, 'b', TB + MIN), '1', 'its own cancel is taken');
});

test('distrust by principal: every claim it wrote, whatever source; another principal on the same source is untouched', () => {
  const d: Override = { id: 'ov-1', region: FLEET, action: 'distrust', principal: 'token:bridge', ramp: 0, actor: 'alice', reason: 'bridge compromised', start: T - 3 * H };
  const writes: [Signal, Provenance][] = [[event('a', {}, { source: 'utility/feeder-1' }), BRIDGE], [event('b'), VTN]];
  const p = run(writes, settings(1), [d]);
  assert.match(messages(p), /token:bridge distrusted by alice \(bridge compromised\)/);
  assert.equal(trusted(p, 'b', TB + MIN), true, "the VTN's claim stays trusted");
  assert.equal(trusted(p, 'a', T + MIN), false, "the bridge's claim is a cap like any other");
});
