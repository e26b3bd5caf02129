/**
 * Proactive drain through the real planner and decide (issue 6): grid events planned ahead
 * of their start, what answers' TTLs and shares do over time, events modified, cancelled,
 * overlapping, already running when learned, covering every region of a name; operator
 * drains with a deadline and undrains; the safety limits and the freeze.
 * Defaults but R: steps 30 s apart, S 300 s, m 5 s, TTL0 30 s, and R 120 s here (five steps
 * make the mid-ramp cases finer; the shipped 60 s has its cases in drain.test.ts) → ramp at
 * T − 455…T − 335 s, lead max(R, TTL0 − g) + g + S + m = 455 s.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, defaultSettings, gridSharesAt, DEFAULT_DRAIN, type PlannerSettings } from './planner/index.js';
import { decide, regionStepAt, type DecideName } from './decide.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import { foldRecords } from '../../test/helpers/policy.js';
import { FLEET, type Override, type Plan, type Signal } from '../model/types.js';
import type { SubnetKey } from '../model/cell.js';

const T = 1_800_000_000_000;
const S = 1000;
const H = 3600 * S;

function settings(over: Partial<PlannerSettings> = {}): PlannerSettings {
  const base = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
    { id: 'c', location: { lat: 40, lon: -75 }, capacityUnits: 100 },
  ]);
  // S fixed at 300 s and R at 120 s here (S's growth with the notice has its own cases in drain.test.ts).
  return { ...base, ...over, drain: { ...base.drain, sessionAllowanceMaxMs: 300_000, rampMs: 120_000, ...(over.drain ?? {}) } };
}

const records = foldRecords;

function event(region: string, v: Record<string, unknown>, observedAt: number, source = 'openadr3/vtn'): Signal {
  const id = (v.id as string | undefined) ?? 'ev1';
  return { region, kind: 'grid.event', source, key: id, observedAt, expiresAt: observedAt + 24 * H, value: { id, start: T, end: T + H, type: 'load-shed', ...v } };
}

function snap(recs: SignalRecord[], overrides: Override[] = []): StoreSnapshot {
  return { revision: 1, records: recs, overrides, demand: [] };
}

let seq = 0;
function ov(region: string, action: Override['action'], o: Partial<Override> = {}): Override {
  return { id: `ov-${String(++seq).padStart(3, '0')}`, region, action, ramp: 0, actor: 'alice', reason: 'maintenance', start: T - H, ...o };
}

const run = (s: StoreSnapshot, st = settings()) => plan({ configHash: 'cfg', snapshot: s, settings: st });

/** `offset:share` for every step of a region, offsets in s from T ("0" = the first step). */
function shape(p: Plan, r: string): string {
  return (p.regions[r] ?? [])
    .map((x) => `${x.at === 0 ? '0' : (x.at - T) / S}:${x.down ? 'down' : x.share}${x.ttlCap !== undefined ? `/ttl${x.ttlCap}` : ''}${x.refuse ? '/refuse' : ''}${x.goawayBy !== undefined ? `/goaway${(x.goawayBy - T) / S}` : ''}`)
    .join(' ');
}

const NAME: DecideName = {
  name: 'api.example.com.',
  ttl: 30,
  regions: new Map(['a', 'b', 'c'].map((r, i) => [r, { v4: [`192.0.2.${i + 1}`], v6: [] }])),
  whenAllDown: 'nearest',
};
/** Clients whose home is b (ranking b, a, c): 2,000 /24 keys. */
const KEYS: SubnetKey[] = Array.from({ length: 2000 }, (_, i) => ({ family: 4, hi: ((10 << 24) | (i << 8)) >>> 0, lo: 0, prefix: 24 }));
function answers(p: Plan, now: number, ranking = ['b', 'a', 'c'], name = NAME): { share: Record<string, number>; ttls: Set<number> } {
  const share: Record<string, number> = {};
  const ttls = new Set<number>();
  for (const k of KEYS) {
    const a = decide(p, { ranking, origin: 'test' }, k, name, 'A', now, { minTtl: 5 });
    share[a.region ?? 'none'] = (share[a.region ?? 'none'] ?? 0) + 1 / KEYS.length;
    ttls.add(a.ttl);
  }
  return { share, ttls };
}

test('an OpenADR load shed announced 2 h ahead: TTLs shrink from T − lead, the weight ramps to 0 by T − 335 s, nothing new at T; hold and slow restore after E', () => {
  const p = run(snap(records(event('b', {}, T - 2 * H))));
  assert.equal(shape(p, 'b'), '0:1 -455:0.8 -425:0.6 -395:0.4 -365:0.2 -335:0/goaway-300 -300:0/refuse 0:0/refuse 3600:0 3720:0 3750:0.1 3780:0.2 3810:0.3 3840:0.4 3870:0.5 3900:0.6 3930:0.7 3960:0.8 3990:0.9 4020:1');
  // Before TTL0 ahead of the ramp (T − 485 s: with notice to spare the shrink comes first) answers carry the full TTL; after, the TTL is bounded by the first step.
  assert.deepEqual([...answers(p, T - 600 * S).ttls], [30]);
  assert.deepEqual([...answers(p, T - 470 * S).ttls], [15]);
  // During the ramp the answer share of b follows the weight (admission by hash).
  const mid = answers(p, T - 400 * S).share;
  assert.ok(Math.abs((mid.b ?? 0) - 0.6) < 0.04, `b takes about 60 % at T − 400 s (step 2 of 5): ${JSON.stringify(mid)}`);
  assert.ok(Math.abs((mid.a ?? 0) - 0.4) < 0.04, `and its spill goes to the next region, a: ${JSON.stringify(mid)}`);
  // From the reach on, b is in no answer, and every answer given before it expired before T − S − m.
  for (const t of [T - 335 * S, T - 1, T, T + H - 1]) assert.equal(answers(p, t).share.b, undefined, `no answer names b at T${(t - T) / S}s`);
  const last = answers(p, T - 336 * S);
  assert.ok(Math.max(...last.ttls) <= 30, 'the last answers naming b expire before the S window starts');
  // The step at T says: refuse new streams (the drain hook passes it on).
  assert.equal(regionStepAt(p, 'b', T).refuse, true);
  assert.match(regionStepAt(p, 'b', T - 400 * S).reasons.join(' | '), /rule load-shed-order \(grid event ev1 from openadr3\/vtn: load-shed.*ramp step 2\/5 toward 0 ahead of/);
});

test('an event learned with less notice than the lead: at once, Tmin until it starts, and the shortfall is said', () => {
  const p = run(snap(records(event('b', {}, T - 200 * S))));
  assert.equal(shape(p, 'b').split(' ').slice(0, 3).join(' '), '0:1 -200:0/ttl5/goaway-165 -165:0/ttl5/refuse');
  assert.match(regionStepAt(p, 'b', T - 100 * S).reasons.join(' | '), /learned 255 s later than the lead it needs \(455 s\): TTL 5 s until it starts/);
  assert.deepEqual([...answers(p, T - 100 * S).ttls], [5]);
});

test('an event already in progress when learned: at once, refuse new streams, no Tmin window', () => {
  const p = run(snap(records(event('b', {}, T + 600 * S))));
  assert.equal(shape(p, 'b').split(' ').slice(0, 2).join(' '), '0:1 600:0/refuse');
});

test('a modified event: the new start is planned anew from when it was learned; the old ramp is ended with a hold and restore', () => {
  // Announced at T − 2 h for T; at T − 400 s (mid-ramp, share 0.4) moved to T + 1 h.
  const p = run(snap(records(event('b', {}, T - 2 * H), event('b', { start: T + H, end: T + 2 * H }, T - 400 * S))));
  const s = shape(p, 'b');
  assert.ok(s.startsWith('0:1 -455:0.8 -425:0.6 -400:0.6 '), s);
  // Held at 0.6 for 120 s after the change, then restored in ten steps to 1 …
  assert.equal(regionStepAt(p, 'b', T - 280 * S + 1).share, 0.6);
  assert.equal(regionStepAt(p, 'b', T + 100 * S).share, 1, 'restored by T + 100 s');
  // … and the new ramp reaches 0 at T + 1 h − 335 s.
  assert.equal(regionStepAt(p, 'b', T + H - 335 * S).share, 0);
  assert.equal(regionStepAt(p, 'b', T + H - 336 * S).share, 0.2);
});

test('a cancelled event: a ramp under way is held and restored; a cancel before the ramp leaves nothing', () => {
  const mid = run(snap(records(event('b', {}, T - 2 * H), event('b', { cancelled: true }, T - 400 * S))));
  assert.equal(regionStepAt(mid, 'b', T - 401 * S).share, 0.6);
  assert.equal(regionStepAt(mid, 'b', T - 300 * S).share, 0.6, 'held (hysteresis) until T − 280 s');
  assert.equal(regionStepAt(mid, 'b', T - 250 * S).share, 0.64, 'then restored in 30 s steps');
  assert.equal(regionStepAt(mid, 'b', T + 20 * S).share, 1);
  assert.equal(regionStepAt(mid, 'b', T + 1).refuse, undefined, 'a cancelled event refuses nothing');
  assert.match(regionStepAt(mid, 'b', T - 300 * S).reasons.join(' | '), /until it changed at .*held after its end/);
  const early = run(snap(records(event('b', {}, T - 2 * H), event('b', { cancelled: true }, T - H))));
  assert.equal(early.regions.b, undefined, 'nothing planned');
});

test('overlapping events: the lower cap wins while both hold; the longer one keeps the region until its own end', () => {
  const p = run(
    snap(records(event('b', { id: 'e1', type: 'cap', cap: 0.5, end: T + H }, T - 2 * H), event('b', { id: 'e2', type: 'drain', start: T + 1800 * S, end: T + 2 * H }, T - 2 * H))),
  );
  assert.equal(regionStepAt(p, 'b', T).share, 0.5);
  assert.equal(regionStepAt(p, 'b', T + 1800 * S).share, 0);
  assert.equal(regionStepAt(p, 'b', T + H + 600 * S).share, 0, 'e2 still holds after e1 ended');
  assert.equal(regionStepAt(p, 'b', T + 2 * H + 60 * S).share, 0, 'e2 hold');
  assert.equal(regionStepAt(p, 'b', T + 3 * H).share, 1, 'restored after both');
});

test('an event for every region of a name: nothing admits, whenAllDown answers (nearest by default, servfail or empty when asked)', () => {
  const st = settings({ drain: { ...DEFAULT_DRAIN, sessionAllowanceMaxMs: 300_000, maxAutoShare: 1, minDrainIntervalMs: 0 } });
  const p = run(snap(records(event('a', {}, T - 2 * H), event('b', {}, T - 2 * H), event('c', {}, T - 2 * H))), st);
  const at = T + 60 * S;
  const got = answers(p, at).share;
  assert.deepEqual(Object.keys(got), ['b'], 'nearest: the home region answers though not admitted');
  assert.ok(Math.abs(got.b! - 1) < 1e-9);
  const sf = decide(p, { ranking: ['b', 'a', 'c'], origin: 'test' }, KEYS[0]!, { ...NAME, whenAllDown: 'servfail' }, 'A', at, { minTtl: 5 });
  assert.equal(sf.rcode, 'servfail');
  const empty = decide(p, { ranking: ['b', 'a', 'c'], origin: 'test' }, KEYS[0]!, { ...NAME, whenAllDown: 'empty' }, 'A', at, { minTtl: 5 });
  assert.deepEqual([empty.rcode, empty.addresses], ['answer', []]);
});

test('safety: gridPolicy starts at most one drain per interval, and takes at most maxAutoShare of a name at once', () => {
  // Three regions, equal units; events for all three at T. Interval 120 s; share limit 0.5.
  const p = run(snap(records(event('a', {}, T - 2 * H), event('b', {}, T - 2 * H), event('c', {}, T - 2 * H))));
  // a starts at T − 455 s (first by id), b is held until 120 s later, and c would take the
  // name past 50 %: held at the share that keeps the total at the limit.
  assert.equal(regionStepAt(p, 'a', T).share, 0);
  assert.equal(regionStepAt(p, 'b', T - 455 * S).share, 1, 'b held: a started draining at the same instant');
  assert.match(regionStepAt(p, 'b', T - 455 * S).reasons.join(' | '), /safety: gridPolicy starts draining at most one region per 120 s/);
  const removed = (t: number) => ['a', 'b', 'c'].reduce((n, r) => n + (1 - regionStepAt(p, r, t).share), 0) / 3;
  for (let t = T - 500 * S; t <= T + H; t += 30 * S) assert.ok(removed(t) <= 0.5 + 1e-9, `at most half the capacity removed at T${(t - T) / S}s: ${removed(t)}`);
  assert.ok(removed(T) > 0.49, 'the limit is used, not more');
  assert.match(regionStepAt(p, 'c', T).reasons.join(' | '), /safety: gridPolicy may take at most 50 % of the fleet's capacity at once/);
  // An operator's drain is its confirmation: not limited.
  const confirmed = run(snap(records(event('a', {}, T - 2 * H), event('b', {}, T - 2 * H)), [ov('b', 'drain', { value: 0, by: T, start: T - 2 * H })]));
  assert.equal(regionStepAt(confirmed, 'b', T).share, 0);
  assert.equal(regionStepAt(confirmed, 'a', T).share, 0);
  // Limits off: all three drain.
  const off = run(snap(records(event('a', {}, T - 2 * H), event('b', {}, T - 2 * H), event('c', {}, T - 2 * H))), settings({ drain: { ...DEFAULT_DRAIN, sessionAllowanceMaxMs: 300_000, maxAutoShare: 1, minDrainIntervalMs: 0 } }));
  assert.deepEqual(['a', 'b', 'c'].map((r) => regionStepAt(off, r, T).share), [0, 0, 0]);
});

test('freeze: gridPolicy is held where it stood when frozen; operators and health still act; unfreezing lets the plan go on', () => {
  const recs = records(event('b', {}, T - 2 * H));
  const frozenAt = T - 400 * S;
  const hold = gridSharesAt({ configHash: 'cfg', snapshot: snap(recs), settings: settings() }, frozenAt);
  assert.deepEqual(hold, { a: 1, b: 0.6, c: 1 });
  const fz = ov(FLEET, 'freeze', { start: frozenAt, hold, reason: 'suspect VTN' });
  const p = run(snap(recs, [fz]));
  assert.equal(regionStepAt(p, 'b', T).share, 0.6, 'held at 0.6 through the event');
  assert.equal(regionStepAt(p, 'b', T).refuse, undefined);
  assert.match(regionStepAt(p, 'b', T).reasons.join(' | '), /automation frozen by alice \(suspect VTN\) \[ov-\d+\]: gridPolicy held at 0\.6, not 0/);
  // An operator drain still applies while frozen.
  const op = run(snap(recs, [fz, ov('a', 'drain', { value: 0, start: T - 300 * S })]));
  assert.equal(regionStepAt(op, 'a', T).share, 0);
  // A freeze that ends: the plan goes on from there.
  const ended = run(snap(recs, [{ ...fz, end: T + 60 * S }]));
  assert.equal(regionStepAt(ended, 'b', T + 60 * S).share, 0);
});

test('operator drain with a deadline: planned like an event at `by`; undrain ramps back from where it was', () => {
  const d = ov('b', 'drain', { value: 0, by: T, start: T - H });
  const p = run(snap([], [d]));
  assert.equal(shape(p, 'b'), '0:1 -455:0.8 -425:0.6 -395:0.4 -365:0.2 -335:0/goaway-300 -300:0/refuse 0:0/refuse');
  assert.match(regionStepAt(p, 'b', T - 400 * S).reasons.join(' | '), /drain to 0 by alice \(maintenance\), by .*: ramp step 2\/5 toward 0 \[ov-\d+\]/);
  // Asked for 100 s before its deadline: at once, and the shortfall is said.
  const late = run(snap([], [ov('b', 'drain', { value: 0, by: T, start: T - 100 * S })]));
  assert.equal(shape(late, 'b').split(' ').slice(0, 3).join(' '), '0:1 -100:0/goaway-65 -65:0/refuse');
  assert.match(regionStepAt(late, 'b', T - 50 * S).reasons.join(' | '), /asked 355 s later than the lead it needs/, "455 s − 100 s");
  // Undrain at T − 400 s (share 0.4, as an API call would find it after step 3): the drain ended, an undrain from 0.4 over 300 s in 30 s steps.
  const und = ov('b', 'undrain', { value: 0.4, ramp: 300 * S, start: T - 400 * S, end: T - 100 * S });
  const back = run(snap([], [und]));
  assert.equal(shape(back, 'b'), '0:1 -400:0.46 -370:0.52 -340:0.58 -310:0.64 -280:0.7 -250:0.76 -220:0.82 -190:0.88 -160:0.94 -130:1');
  assert.match(regionStepAt(back, 'b', T - 400 * S).reasons.join(' | '), /undrain by alice \(maintenance\), slow start from 0\.4, step 1\/10/);
});

test('shadow: a shadowed source shows the schedule it would have produced, and applies nothing', () => {
  const p = run(snap(records(event('b', {}, T - 2 * H))), settings({ gridShadow: ['openadr3'] }));
  assert.ok((p.regions.b ?? []).every((s) => s.share === 1 && !s.refuse));
  assert.match(regionStepAt(p, 'b', T - 400 * S).reasons.join(' | '), /shadow: rule load-shed-order .*would apply: cap 0 — now: ramp step 2\/5 toward 0/);
});

test('whenAllDown nearest: a client no region admits goes to the nearest region that is up and takes new streams, not to its dark home', () => {
  const at = T + 60 * S;
  const p: Plan = {
    version: 'v',
    configHash: 'c',
    storeRevision: 1,
    computedAt: T,
    regions: {
      b: [{ at: T, share: 0, down: false, refuse: true, reasons: ['b: load shed in force'] }],
      a: [{ at: T, share: 1, homes: { b: 0 }, down: false, reasons: ['a: spill from b limited by headroom'] }],
      c: [{ at: T, share: 1, down: true, reasons: ['c: down'] }],
    },
  };
  const a = decide(p, { ranking: ['b', 'a', 'c'], origin: 'test' }, KEYS[0]!, NAME, 'A', at, { minTtl: 5, explain: true });
  assert.equal(a.region, 'a', a.reasons.join(' | '));
  assert.match(a.reasons.at(-1)!, /a: nearest region up and taking new streams/);
  // Nothing up and open: the nearest at all.
  const dark: Plan = { ...p, regions: { ...p.regions, a: [{ at: T, share: 0, down: true, reasons: [] }] } };
  assert.equal(decide(dark, { ranking: ['b', 'a', 'c'], origin: 'test' }, KEYS[0]!, NAME, 'A', at, { minTtl: 5 }).region, 'b');
});

// ---------------------------------------------------------------------------------------
// Future-aware answers (issue "correlated grid events"): no answer names a region that
// refuses new streams, or will within max(TTL, F) + m, while another can serve; whenAllDown
// nearest looks past the cell's ranking, and prefers regions that take this home's clients.

test('decide passes over a region that will refuse new streams within max(TTL, F) + m, case table', () => {
  const now = T;
  const la = { resolverFloorS: 60, marginMs: 5000 }; // horizon max(30, 60) s + 5 s = 65 s
  const open = (r: string) => [{ at: 0, share: 1, down: false, reasons: [`${r}: open`] }];
  const refusing = (from: number) => [
    { at: 0, share: 1, down: false, reasons: ['before'] },
    { at: from, share: 0, down: false, refuse: true, reasons: ['load shed in force'] },
  ];
  const cases: { what: string; b: Plan['regions'][string]; lookahead?: Plan['lookahead']; ranking?: string[]; want: string }[] = [
    { what: 'refuses in 20 s (within the TTL alone)', b: refusing(now + 20 * S), want: 'a' },
    { what: 'refuses in 40 s: past the TTL, within the resolver floor F + m', b: refusing(now + 40 * S), lookahead: la, want: 'a' },
    { what: 'refuses in 40 s, no lookahead in the plan: the TTL alone (30 s)', b: refusing(now + 40 * S), want: 'b' },
    { what: 'refuses in 64 s: within F + m', b: refusing(now + 64 * S), lookahead: la, want: 'a' },
    { what: 'refuses in 66 s: past the horizon', b: refusing(now + 66 * S), lookahead: la, want: 'b' },
    { what: 'refused until 10 s ago, open now', b: [{ at: 0, share: 0, down: false, refuse: true, reasons: [] }, { at: now - 10 * S, share: 1, down: false, reasons: [] }], lookahead: la, want: 'b' },
    { what: 'refuses now and ever after', b: refusing(now - S), lookahead: la, want: 'a' },
    { what: 'every ranked region refuses soon: whenAllDown nearest, the nearest open now', b: refusing(now + 20 * S), ranking: ['b'], want: 'b' },
  ];
  for (const c of cases) {
    const p: Plan = { version: 'v', configHash: 'c', storeRevision: 1, computedAt: now, regions: { b: c.b, a: open('a'), c: open('c') }, ...(c.lookahead ? { lookahead: c.lookahead } : {}) };
    const name = c.ranking ? { ...NAME, regions: new Map([['b', NAME.regions.get('b')!]]) } : NAME;
    const got = decide(p, { ranking: c.ranking ?? ['b', 'a', 'c'], origin: 'test' }, KEYS[0]!, name, 'A', now, { minTtl: 5, explain: true });
    assert.equal(got.region, c.want, `${c.what}: ${got.reasons.join(' | ')}`);
  }
});

test('whenAllDown nearest looks past the ranking: a region that stays up and takes this home, before a saturated or soon-dark one', () => {
  const now = T;
  const four: DecideName = { ...NAME, regions: new Map(['a', 'b', 'c', 'd'].map((r, i) => [r, { v4: [`192.0.2.${i + 1}`], v6: [] }])) };
  const base: Plan['regions'] = {
    b: [{ at: 0, share: 0, down: false, refuse: true, reasons: ['b: load shed'] }],
    // Saturated: takes its own clients only (share 0 for every other home).
    a: [{ at: 0, share: 0, homes: { a: 1 }, down: false, reasons: ['a: saturated'] }],
    // Up and open now, refusing in 20 s.
    c: [{ at: 0, share: 1, down: false, reasons: [] }, { at: now + 20 * S, share: 0, down: false, refuse: true, reasons: ['c: load shed'] }],
    d: [{ at: 0, share: 1, down: false, reasons: [] }],
  };
  const ask = (regions: Plan['regions']) => decide({ version: 'v', configHash: 'c', storeRevision: 1, computedAt: now, regions }, { ranking: ['b', 'a'], origin: 'test' }, KEYS[0]!, four, 'A', now, { minTtl: 5, explain: true });
  let got = ask(base);
  assert.equal(got.region, 'd', got.reasons.join(' | '));
  assert.equal(got.decision, 'when_all_down');
  assert.match(got.reasons.at(-1)!, /^d: nearest region up and taking new streams, and so through the horizon, with weight for this home/);
  // Without d: c goes dark within the horizon, a stays up (saturated): a.
  got = ask({ ...base, d: [{ at: 0, share: 1, down: true, reasons: [] }] });
  assert.equal(got.region, 'a', got.reasons.join(' | '));
  // Without a either: c, open now (every region goes dark soon).
  got = ask({ ...base, d: [{ at: 0, share: 1, down: true, reasons: [] }], a: [{ at: 0, share: 1, down: true, reasons: [] }] });
  assert.equal(got.region, 'c', got.reasons.join(' | '));
  assert.match(got.reasons.at(-1)!, /every one goes dark within the horizon/);
});

test('the planner puts the lookahead (F, m) into every plan', () => {
  const p = run(snap([]), settings());
  assert.deepEqual(p.lookahead, { resolverFloorS: DEFAULT_DRAIN.resolverFloorS, marginMs: DEFAULT_DRAIN.marginMs });
});

test('after an event ends its hold and restore are soft (ADR 0018): clients of b no region with headroom can take come back to b; with headroom elsewhere the hold is kept', () => {
  const now = T + H + 60 * S; // in the hold after E (T + 3600 s … T + 3720 s at 0)
  const load = (r: string, kv: number): Signal => ({ region: r, kind: 'load.metrics', source: 'vllm/sim', key: 'vllm', observedAt: now, expiresAt: now + 60 * S, value: { kvCacheUse: kv } });
  const buckets = (home: string, q: number) => [30, 20, 10, 0].map((ago) => ({ bucket: now - ago * S, home, name: 'api', queries: q }));
  const at = (kv: number) =>
    run({ revision: 1, records: records(event('b', {}, T - 2 * H), load('a', kv), load('c', kv)), overrides: [], demand: [...buckets('a', 500), ...buckets('b', 500), ...buckets('c', 500)] });
  // a and c past their saturation point: nowhere with headroom for b's clients.
  const full = at(0.95);
  assert.equal(regionStepAt(full, 'b', now).share, 0, 'b held at 0 after E');
  assert.deepEqual(full.overflow, { b: { b: 1 } });
  assert.equal(full.unplaced, undefined);
  assert.match(regionStepAt(full, 'b', now).reasons.join(' | '), /b: 50 q\/s of its own clients that no region with headroom can take stay at home through its slow start or restore/);
  assert.deepEqual(Object.keys(answers(full, now).share), ['b'], 'every client of b at b, none pushed onto a full neighbour');
  // Before E the event is firm: b refuses new streams, nothing goes back.
  const during = run({ revision: 1, records: records(event('b', {}, T - 2 * H), { ...load('a', 0.95), observedAt: T + 600 * S }, { ...load('c', 0.95), observedAt: T + 600 * S }), overrides: [], demand: [...buckets('b', 500)].map((x) => ({ ...x, bucket: x.bucket - now + T + 600 * S })) });
  assert.equal(during.overflow?.b?.b, undefined, JSON.stringify(during.overflow));
  // a and c with headroom: the hold is kept and b's clients go to them.
  const roomy = at(0.3);
  assert.equal(roomy.overflow, undefined);
  const share = answers(roomy, now).share;
  assert.equal(share.b, undefined, JSON.stringify(share));
});
