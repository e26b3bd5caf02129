import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, FULL_STEP, initialPlan, nextChangeOf, planFromConfig, regionStepAt, weightOf, type DecideName } from './decide.js';
import { ecsScope, widestInside32 } from '../geo/scope.js';
import type { Cell, CellRange, SubnetKey } from '../model/cell.js';
import { admissionDraw } from './admission.js';
import { parseAddr } from '../geo/addr.js';
import { planOf, planWith, xorshift32 } from '../../test/helpers/policy.js';
import type { Plan } from '../model/types.js';

const k4 = (s: string, prefix = 24): SubnetKey => ({ family: 4, hi: parseAddr(s)!.hi, lo: 0, prefix });
const k6 = (s: string, prefix = 56): SubnetKey => {
  const a = parseAddr(s)!;
  return { family: 6, hi: a.hi, lo: a.lo, prefix };
};
const r4 = (first: string, last: string): CellRange => ({ family: 4, firstHi: parseAddr(first)!.hi, firstLo: 0, lastHi: parseAddr(last)!.hi, lastLo: 0 });
const r6 = (first: string, last: string): CellRange => {
  const f = parseAddr(first)!;
  const l = parseAddr(last)!;
  return { family: 6, firstHi: f.hi, firstLo: f.lo, lastHi: l.hi, lastLo: l.lo };
};

test('ecsScope: source prefix 0 → 0; admission in play → exactly /24 or /56', () => {
  const whole4 = r4('0.0.0.0', '255.255.255.255');
  const small4 = r4('192.0.2.0', '192.0.2.255');
  assert.equal(ecsScope(k4('8.8.8.0'), 0, whole4, false), 0);
  assert.equal(ecsScope(k4('8.8.8.0'), 0, small4, true), 0);
  assert.equal(ecsScope(k4('8.8.8.0', 0), 0, undefined, true), 0);
  assert.equal(ecsScope(k6('2001:db8::', 0), 0, r6('::', 'ffff:ffff:ffff:ffff::'), false), 0);
  for (const src of [8, 16, 20, 24, 32]) {
    assert.equal(ecsScope(k4('10.1.2.0', Math.min(src, 24)), src, whole4, true), 24, `IPv4 /${src}, admission in play`);
    assert.equal(ecsScope(k4('192.0.2.0', Math.min(src, 24)), src, small4, true), 24);
  }
  for (const src of [32, 48, 56, 64, 128]) {
    assert.equal(ecsScope(k6('2a00:1450:4000:1200::', Math.min(src, 56)), src, r6('2a00::', '2a00:ffff:ffff:ffff::'), true), 56, `IPv6 /${src}, admission in play`);
  }
});

test('ecsScope: the widest aligned prefix around the key inside the cell range', () => {
  const cases: [string, SubnetKey, CellRange, number][] = [
    ['the whole space', k4('8.8.8.0'), r4('0.0.0.0', '255.255.255.255'), 0],
    ['a /8', k4('20.1.2.0'), r4('20.0.0.0', '20.255.255.255'), 8],
    ['the lower half of a /8', k4('20.1.2.0'), r4('20.0.0.0', '20.127.255.255'), 9],
    ['the upper half of a /8, key in it', k4('20.200.2.0'), r4('20.128.0.0', '20.255.255.255'), 9],
    ['unaligned range, key at its start', k4('20.0.1.0'), r4('20.0.1.0', '20.0.255.255'), 24],
    ['unaligned range, key in its middle', k4('20.0.128.0'), r4('20.0.1.0', '20.0.255.255'), 17],
    ['unaligned range, key near its end', k4('20.0.254.0'), r4('20.0.1.0', '20.0.254.255'), 24],
    ['unaligned range across a /8 boundary', k4('21.5.0.0'), r4('20.255.0.0', '22.0.255.255'), 8],
    ['exactly one /24', k4('192.0.2.0'), r4('192.0.2.0', '192.0.2.255'), 24],
    ['two /24s, key in the second', k4('192.0.3.0'), r4('192.0.2.0', '192.0.3.255'), 23],
    ['a /16 starting at 0', k4('0.0.5.0'), r4('0.0.0.0', '0.0.255.255'), 16],
    ['up to the top of the space', k4('255.255.255.0'), r4('128.0.0.0', '255.255.255.255'), 1],
    ['a source /16 key in a /12 cell', k4('20.16.0.0', 16), r4('20.16.0.0', '20.31.255.255'), 12],
    ['IPv6: the whole space', k6('2001:db8::'), r6('::', 'ffff:ffff:ffff:ffff::'), 0],
    ['IPv6: a /32', k6('2001:db8:1:200::'), r6('2001:db8::', '2001:db8:ffff:ffff::'), 32],
    ['IPv6: a /20', k6('2a00:1450:4000::'), r6('2a00:1000::', '2a00:1fff:ffff:ffff::'), 20],
    ['IPv6: a /48 (inside the low 32 bits)', k6('2001:db8:5:1200::'), r6('2001:db8:5::', '2001:db8:5:ffff::'), 48],
    ['IPv6: a /44', k6('2001:db8:5:1200::'), r6('2001:db8::', '2001:db8:f:ffff::'), 44],
    ['IPv6: exactly one /56', k6('2001:db8:5:1200::'), r6('2001:db8:5:1200::', '2001:db8:5:12ff::'), 56],
    ['IPv6: two /56, key in the second', k6('2001:db8:5:1300::'), r6('2001:db8:5:1200::', '2001:db8:5:13ff::'), 55],
    ['IPv6: unaligned across the 32-bit boundary', k6('2001:db9:0:100::'), r6('2001:db8:ff00::', '2001:db9:00ff:ffff::'), 40],
  ];
  for (const [what, key, range, want] of cases) {
    assert.equal(ecsScope(key, key.family === 4 ? 24 : 56, range, false), want, what);
    // The block at the scope is inside the range, and the next wider one is not (or is the whole space).
  }
});

test('ecsScope: without a cell range (placed without the table) → min(source, floor)', () => {
  assert.equal(ecsScope(k4('20.1.0.0', 16), 16, undefined, false), 16);
  assert.equal(ecsScope(k4('20.1.2.0', 24), 32, undefined, false), 24);
  assert.equal(ecsScope(k6('2001:db8::', 48), 48, undefined, true), 48);
  assert.equal(ecsScope(k6('2001:db8::', 56), 64, undefined, false), 56);
});

const NAME: DecideName = {
  name: 'api.example.com.',
  ttl: 30,
  regions: new Map([
    ['a', { v4: ['192.0.2.1'], v6: ['2001:db8::a'] }],
    ['b', { v4: ['192.0.2.2'], v6: ['2001:db8::b'] }],
    ['c', { v4: ['192.0.2.3'], v6: ['2001:db8::c'] }],
  ]),
  whenAllDown: 'nearest',
};
const CELL: Cell = { ranking: ['a', 'b', 'c'], origin: 'test' };
const KEY = k4('20.1.2.0');
const NOW = 1_800_000_000_000;
const O = { minTtl: 5 };

test('decide: TTL is TTL0 without a schedule; capped by the next change of a region ranked at or before the answer', () => {
  assert.equal(decide(initialPlan('x'), CELL, KEY, NAME, 'A', NOW, O).ttl, 30, 'no schedule: TTL0');
  assert.equal(decide(planWith({}), CELL, KEY, NAME, 'A', NOW, O).region, 'a');

  // The answer's own region changes in 12 s.
  const own = planOf([{ at: 0 }, { at: NOW + 12_000, down: ['a'] }]);
  const d1 = decide(own, CELL, KEY, NAME, 'A', NOW, O);
  assert.deepEqual([d1.region, d1.ttl], ['a', 12]);
  // A region ranked before the answer (down now, back in 12 s): 12.
  const before = planOf([{ at: 0, down: ['a'] }, { at: NOW + 12_000 }]);
  const d2 = decide(before, CELL, KEY, NAME, 'A', NOW, O);
  assert.deepEqual([d2.region, d2.ttl], ['b', 12]);
  // Fractions of a second round down: a change 12.9 s away gives 12.
  const frac = planOf([{ at: 0, down: ['a'] }, { at: NOW + 12_900 }]);
  assert.equal(decide(frac, CELL, KEY, NAME, 'A', NOW, O).ttl, 12);
  // A change of a region ranked after the answer does not cap.
  for (const later of ['b', 'c']) {
    const after = planOf([{ at: 0 }, { at: NOW + 12_000, down: [later] }]);
    const d = decide(after, CELL, KEY, NAME, 'A', NOW, O);
    assert.deepEqual([d.region, d.ttl], ['a', 30], `a change of ${later} (after the answer)`);
  }
  const afterWeight = planOf([{ at: 0 }, { at: NOW + 12_000, weights: { b: { c: 0.5 } } }]);
  assert.equal(decide(afterWeight, CELL, KEY, NAME, 'A', NOW, O).ttl, 30, 'a weight of regions ranked after');
  // …but it does once the answer is that region.
  const d3 = decide(planOf([{ at: 0, down: ['a'] }, { at: NOW + 12_000, down: ['a', 'c'] }]), CELL, KEY, NAME, 'A', NOW, O);
  assert.deepEqual([d3.region, d3.ttl], ['b', 30], 'c ranked after b: no cap');
  const d4 = decide(planOf([{ at: 0, down: ['a'] }, { at: NOW + 12_000, down: ['a', 'b'] }]), CELL, KEY, NAME, 'A', NOW, O);
  assert.deepEqual([d4.region, d4.ttl], ['b', 12]);
  // A later step that changes nothing about the ranked regions does not cap.
  const same = planOf([{ at: 0, weights: { a: { a: 1 } } }, { at: NOW + 12_000, reasons: ['other'], weights: { a: { a: 1 } } }]);
  assert.equal(decide(same, CELL, KEY, NAME, 'A', NOW, O).ttl, 30);
  // Changes further away than TTL0 do not cap; a past change is no next change.
  assert.equal(decide(planOf([{ at: 0 }, { at: NOW + 31_000, down: ['a'] }]), CELL, KEY, NAME, 'A', NOW, O).ttl, 30);
  assert.equal(decide(planOf([{ at: 0 }, { at: NOW - 1000, down: ['c'] }]), CELL, KEY, NAME, 'A', NOW, O).ttl, 30);
  // The nearest of several upcoming changes.
  const two = planOf([{ at: 0 }, { at: NOW + 20_000, down: ['a'] }, { at: NOW + 25_000, down: [] }]);
  assert.equal(decide(two, CELL, KEY, NAME, 'A', NOW, O).ttl, 20);
  assert.equal(decide(two, CELL, KEY, NAME, 'A', NOW + 21_000, O).region, 'b');
  assert.equal(decide(two, CELL, KEY, NAME, 'A', NOW + 21_000, O).ttl, 5, '4 s to the change: minTtl 5');
  assert.equal(decide(two, CELL, KEY, NAME, 'A', NOW + 24_000, O).ttl, 5);
});

test('decide: TTL never below minTtl; the plan\'s ttlCap caps regions ranked at or before the answer', () => {
  for (const ms of [0, 400, 1000, 4999]) {
    const p = planOf([{ at: 0 }, { at: NOW + ms + 1, down: ['a'] }]);
    assert.equal(decide(p, CELL, KEY, NAME, 'A', NOW, O).ttl, 5, `change in ${ms + 1} ms`);
    assert.equal(decide(p, CELL, KEY, NAME, 'A', NOW, { minTtl: 2 }).ttl, Math.max(2, Math.floor((ms + 1) / 1000)));
  }
  assert.equal(decide(planWith({}, { ttlCap: { a: 10 } }), CELL, KEY, NAME, 'A', NOW, O).ttl, 10);
  assert.equal(decide(planWith({}, { ttlCap: { a: 1 } }), CELL, KEY, NAME, 'A', NOW, O).ttl, 5, 'cap below minTtl');
  assert.equal(decide(planWith({}, { ttlCap: { a: 60 } }), CELL, KEY, NAME, 'A', NOW, O).ttl, 30, 'cap above TTL0');
  assert.equal(decide(planWith({}, { ttlCap: { b: 10 } }), CELL, KEY, NAME, 'A', NOW, O).ttl, 30, 'cap of a region ranked after');
  const d = decide(planWith({}, { ttlCap: { a: 10 }, down: ['a'] }), CELL, KEY, NAME, 'A', NOW, O);
  assert.deepEqual([d.region, d.ttl], ['b', 10], 'cap of a region ranked before');
  assert.equal(decide(planWith({}, { ttlCap: { a: 10 } }), CELL, KEY, NAME, 'A', NOW, { minTtl: 15 }).ttl, 15);
  // A name TTL below minTtl is raised too.
  assert.equal(decide(initialPlan('x'), CELL, KEY, { ...NAME, ttl: 1 }, 'A', NOW, O).ttl, 5);
});

test('decide: whenAllDown nearest / all / empty / servfail', () => {
  const allDown = planWith({}, { down: ['a', 'b', 'c'] });
  const nearest = decide(allDown, { ranking: ['b', 'c', 'a'], origin: 'test' }, KEY, NAME, 'A', NOW, { ...O, explain: true });
  assert.deepEqual([nearest.rcode, nearest.region, nearest.addresses], ['answer', 'b', ['192.0.2.2']]);
  assert.ok(nearest.reasons.some((r) => /whenAllDown=nearest/.test(r)), nearest.reasons.join('\n'));
  // nearest with an IPv6 question skips a nearer region without IPv6.
  const noV6b: DecideName = { ...NAME, regions: new Map([...NAME.regions].map(([id, a]) => [id, id === 'b' ? { v4: a.v4, v6: [] } : a])) };
  const n6 = decide(allDown, { ranking: ['b', 'c', 'a'], origin: 'test' }, KEY, noV6b, 'AAAA', NOW, O);
  assert.deepEqual([n6.region, n6.addresses], ['c', ['2001:db8::c']]);
  const all = decide(allDown, CELL, KEY, { ...NAME, whenAllDown: 'all' }, 'A', NOW, O);
  assert.deepEqual([all.rcode, all.region, [...all.addresses].sort()], ['answer', null, ['192.0.2.1', '192.0.2.2', '192.0.2.3']]);
  const all6 = decide(allDown, CELL, KEY, { ...NAME, whenAllDown: 'all' }, 'AAAA', NOW, O);
  assert.deepEqual([...all6.addresses].sort(), ['2001:db8::a', '2001:db8::b', '2001:db8::c']);
  const empty = decide(allDown, CELL, KEY, { ...NAME, whenAllDown: 'empty' }, 'A', NOW, O);
  assert.deepEqual([empty.rcode, empty.region, empty.addresses], ['answer', null, []]);
  const sf = decide(allDown, CELL, KEY, { ...NAME, whenAllDown: 'servfail' }, 'A', NOW, O);
  assert.deepEqual([sf.rcode, sf.region, sf.addresses], ['servfail', null, []]);
  // Not admitted anywhere by weights (rather than down) is the same situation.
  const zero = planWith({ a: { a: 0, b: 0, c: 0 } });
  assert.equal(decide(zero, CELL, KEY, { ...NAME, whenAllDown: 'servfail' }, 'A', NOW, O).rcode, 'servfail');
  assert.equal(decide(zero, CELL, KEY, { ...NAME, whenAllDown: 'nearest' }, 'A', NOW, O).region, 'a');
  // With one region up, the policy is not used.
  for (const w of ['nearest', 'all', 'empty', 'servfail'] as const) {
    const d = decide(planWith({}, { down: ['a', 'b'] }), CELL, KEY, { ...NAME, whenAllDown: w }, 'A', NOW, O);
    assert.deepEqual([d.rcode, d.region], ['answer', 'c'], w);
  }
});

test('decide: a region without the query\'s family is skipped with a reason; one that does not serve the name too', () => {
  const name: DecideName = {
    ...NAME,
    regions: new Map([
      ['a', { v4: ['192.0.2.1'], v6: [] }],
      ['c', { v4: ['192.0.2.3'], v6: ['2001:db8::c'] }],
    ]),
  };
  const d6 = decide(initialPlan('x'), CELL, KEY, name, 'AAAA', NOW, { ...O, explain: true });
  assert.deepEqual([d6.region, d6.addresses], ['c', ['2001:db8::c']]);
  assert.ok(d6.reasons.includes('a: no IPv6 endpoints, skipped for AAAA'), d6.reasons.join('\n'));
  assert.ok(d6.reasons.includes('b: does not serve api.example.com.'), d6.reasons.join('\n'));
  const d4 = decide(initialPlan('x'), CELL, KEY, name, 'A', NOW, { ...O, explain: true });
  assert.deepEqual([d4.region, d4.addresses], ['a', ['192.0.2.1']]);
  assert.ok(!d4.reasons.some((r) => /skipped/.test(r)));
  // No reasons on the hot path.
  assert.deepEqual(decide(initialPlan('x'), CELL, KEY, name, 'AAAA', NOW, O).reasons, []);
  const noV4: DecideName = { ...NAME, regions: new Map([['a', { v4: [], v6: ['2001:db8::a'] }], ['b', { v4: ['192.0.2.2'], v6: [] }]]) };
  const e = decide(initialPlan('x'), CELL, KEY, noV4, 'A', NOW, { ...O, explain: true });
  assert.equal(e.region, 'b');
  assert.ok(e.reasons.includes('a: no IPv4 endpoints, skipped for A'), e.reasons.join('\n'));
});

test('decide: admission walks the ranking — admitted when draw < w, else spill; ECS scope follows', () => {
  const next = (() => {
    let x = 0x01020300;
    return () => (x = (x + 0x01010100) >>> 0);
  })();
  let admitted = 0;
  let spilled = 0;
  const plan = planWith({ a: { a: 0.5 } });
  const range = r4('0.0.0.0', '255.255.255.255');
  for (let i = 0; i < 2000; i++) {
    const key: SubnetKey = { family: 4, hi: (next() & 0xffffff00) >>> 0, lo: 0, prefix: 24 };
    const d = decide(plan, { ...CELL, range }, key, NAME, 'A', NOW, { ...O, ecsSource: 24 });
    const want = admissionDraw(key, 'a') < 0.5 ? 'a' : 'b';
    assert.equal(d.region, want);
    assert.equal(d.ecsScope, 24, 'a weight below 1 at or before the answer: scope /24');
    if (want === 'a') admitted++;
    else spilled++;
  }
  assert.ok(admitted > 800 && spilled > 800, `${admitted} admitted, ${spilled} spilled`);
  // A weight below 1 only after the answer leaves the scope to the range.
  const d = decide(planWith({ a: { c: 0.5 } }), { ...CELL, range }, KEY, NAME, 'A', NOW, { ...O, ecsSource: 24 });
  assert.deepEqual([d.region, d.ecsScope], ['a', 0]);
  // Without ECS (ecsSource undefined) no scope.
  assert.equal(decide(plan, { ...CELL, range }, KEY, NAME, 'A', NOW, O).ecsScope, 0);
  // The weights of the client's home are used, not those of the region being tried.
  const homeB = decide(planWith({ a: { b: 0 } }), { ranking: ['b', 'a'], origin: 'test' }, KEY, NAME, 'A', NOW, O);
  assert.equal(homeB.region, 'b');
});

test('regionStepAt, nextChangeOf, weightOf, planFromConfig', () => {
  const p = planOf([{ at: 0 }, { at: 100, down: ['a'] }, { at: 200, weights: { a: { b: 0.5 } }, down: ['a'] }, { at: 300, ttlCap: { c: 7 }, weights: { a: { b: 0.5 } }, down: ['a'] }]);
  assert.equal(regionStepAt(p, 'a', -5).down, false, 'before any step: the implicit full step');
  assert.equal(regionStepAt(p, 'a', 99).down, false);
  assert.equal(regionStepAt(p, 'a', 100).down, true);
  assert.equal(regionStepAt(p, 'c', 1e15).ttlCap, 7);
  assert.equal(regionStepAt(p, 'z', 0), FULL_STEP, 'a region with no schedule');
  assert.equal(nextChangeOf(p, 'a', 0), 100, 'a goes down');
  assert.equal(nextChangeOf(p, 'a', 100), Infinity, 'a stays down; weights into b are b\'s');
  assert.equal(nextChangeOf(p, 'b', 0), 200, 'b is a target of a weight');
  assert.equal(nextChangeOf(p, 'c', 0), 300, 'ttl cap of c');
  assert.equal(nextChangeOf(p, 'c', 300), Infinity);
  assert.equal(nextChangeOf(p, 'z', 0), Infinity);
  assert.equal(weightOf(p, 'a', 'b', 200), 0.5);
  assert.equal(weightOf(p, 'a', 'b', 199), 1);
  assert.equal(weightOf(p, 'a', 'c', 200), 1);
  assert.equal(weightOf(p, 'b', 'b', 200), 1);
  // share applies to every home not listed in homes; a listed home's own weight wins.
  const shared: Plan = { ...initialPlan('h'), regions: { b: [{ at: 0, share: 0.3, homes: { b: 1 }, down: false, reasons: [] }], c: [{ at: 0, share: 0, homes: { a: 0.5 }, down: false, reasons: [] }] } };
  assert.equal(weightOf(shared, 'a', 'b', 0), 0.3);
  assert.equal(weightOf(shared, 'b', 'b', 0), 1);
  assert.equal(weightOf(shared, 'a', 'c', 0), 0.5);
  assert.equal(weightOf(shared, 'z', 'c', 0), 0);
  assert.equal(weightOf(shared, 'z', 'd', 0), 1);
  // A step that changes only reasons is not a change (no TTL is cut short for it).
  const reasonsOnly: Plan = { ...initialPlan('h'), regions: { b: [{ at: 0, share: 0.5, down: false, reasons: ['x'] }, { at: 50, share: 0.5, down: false, reasons: ['y'] }, { at: 80, share: 1, down: false, reasons: [] }] } };
  assert.equal(nextChangeOf(reasonsOnly, 'b', 0), 80);
  const cfg = planFromConfig('h', { x: { y: 0.25 } });
  assert.deepEqual(Object.keys(cfg.regions), ['y']);
  assert.equal(weightOf(cfg, 'x', 'y', 0), 0.25);
  assert.equal(weightOf(cfg, 'w', 'y', 0), 1);
  assert.equal(cfg.configHash, 'h');
});

test('decide: a carbon preference changes the order of the walk only; weights and health still decide', () => {
  const cell: Cell = { ranking: ['a', 'b'], origin: 'test' };
  const key = { family: 4 as const, hi: 0xc0000200, lo: 0, prefix: 24 };
  const pref: Plan = { ...initialPlan('h'), prefer: { a: { region: 'b', reason: 'carbon tie-break: test' } } };
  const ans = decide(pref, cell, key, NAME, 'A', 0, { minTtl: 5, explain: true });
  assert.equal(ans.region, 'b');
  assert.ok(ans.reasons.includes('b tried first: carbon tie-break: test'), JSON.stringify(ans.reasons));
  // b down: the walk goes on to a.
  const down: Plan = { ...pref, regions: { b: [{ at: 0, share: 1, down: true, reasons: ['b down'] }] } };
  assert.equal(decide(down, cell, key, NAME, 'A', 0, { minTtl: 5 }).region, 'a');
  // A preference for a region not in the cell's ranking is ignored.
  const elsewhere: Plan = { ...initialPlan('h'), prefer: { a: { region: 'z', reason: 'x' } } };
  assert.equal(decide(elsewhere, cell, key, NAME, 'A', 0, { minTtl: 5 }).region, 'a');
});

test('ecsScope for IPv4 in closed form agrees with the prefix-by-prefix search on 200k random cells and keys', () => {
  // The reference: the smallest p whose aligned block around key lies in [first, last].
  const reference = (key: number, first: number, last: number): number => {
    for (let p = 0; p <= 32; p++) {
      const m = p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0;
      const lo = (key & m) >>> 0;
      const hi = (lo | ~m) >>> 0;
      if (lo >= first && hi <= last) return p;
    }
    return 33;
  };
  const next = xorshift32(99);
  for (let i = 0; i < 200_000; i++) {
    // Ranges of every size, including the edges of the space.
    const a = next() >>> 0;
    const b = i % 7 === 0 ? 0xffffffff : i % 11 === 0 ? 0 : next() >>> (next() % 32);
    const first = Math.min(a, b) >>> 0;
    const last = Math.max(a, b) >>> 0;
    const key = (first + Math.floor((last - first) * (next() / 0x100000000))) >>> 0;
    const want = reference(key, first, last);
    const got = widestInside32(key, first, last);
    if (got !== want) assert.fail(`key ${key} in [${first}, ${last}]: closed form ${got}, search ${want}`);
  }
  // Through ecsScope: the floor still bounds it.
  assert.equal(ecsScope({ family: 4, hi: 0x01020300, lo: 0, prefix: 24 }, 24, { family: 4, firstHi: 0x01020300, lastHi: 0x010203ff, firstLo: 0, lastLo: 0 }, false), 24);
  assert.equal(ecsScope({ family: 4, hi: 0x01020300, lo: 0, prefix: 24 }, 24, { family: 4, firstHi: 0, lastHi: 0xffffffff, firstLo: 0, lastLo: 0 }, false), 0);
});

test('decide: the class of each decision (the hot path\'s reason label), a case table', () => {
  // KEY's draws into a and b decide admission below a weight of 1: a weight of 0 never admits.
  const noV6 = (r: string): DecideName => ({ ...NAME, regions: new Map([...NAME.regions].map(([id, a]) => [id, id === r ? { v4: a.v4, v6: [] } : a])) });
  const onlyBC: DecideName = { ...NAME, regions: new Map([...NAME.regions].filter(([id]) => id !== 'a')) };
  const prefer = (p: Plan, region: string): Plan => ({ ...p, prefer: { a: { region, reason: 'cleaner grid' } } });
  const allDown = planWith({}, { down: ['a', 'b', 'c'] });
  type Case = [what: string, plan: Plan, name: DecideName, qtype: 'A' | 'AAAA', region: string | null, decision: string];
  const cases: Case[] = [
    ['home admits: nearest', initialPlan('x'), NAME, 'A', 'a', 'nearest'],
    ['home has no IPv6: the next serving region is the nearest that serves AAAA', initialPlan('x'), noV6('a'), 'AAAA', 'b', 'nearest'],
    ['home does not serve the name: the next is the nearest serving it', initialPlan('x'), onlyBC, 'A', 'b', 'nearest'],
    ['home down: failover', planWith({}, { down: ['a'] }), NAME, 'A', 'b', 'failover'],
    ['home at weight 0: spill', planWith({ a: { a: 0 } }), NAME, 'A', 'b', 'spill'],
    ['home at weight 0, the next down: failover wins over spill', planWith({ a: { a: 0 } }, { down: ['b'] }), NAME, 'A', 'c', 'failover'],
    ['home down, the next at weight 0: failover', planWith({ a: { b: 0 } }, { down: ['a'] }), NAME, 'A', 'c', 'failover'],
    ['carbon tie-break region admits: preferred', prefer(initialPlan('x'), 'b'), NAME, 'A', 'b', 'preferred'],
    ['preferred region at weight 0: the home answers, nearest', prefer(planWith({ a: { b: 0 } }), 'b'), NAME, 'A', 'a', 'nearest'],
    ['preferred region down: the home answers, nearest', prefer(planWith({}, { down: ['b'] }), 'b'), NAME, 'A', 'a', 'nearest'],
    ['preferred region down and the home at weight 0: spill', prefer(planWith({ a: { a: 0 } }, { down: ['b'] }), 'b'), NAME, 'A', 'c', 'spill'],
    ['all down, whenAllDown nearest', allDown, NAME, 'A', 'a', 'when_all_down'],
    ['all down, whenAllDown all', allDown, { ...NAME, whenAllDown: 'all' }, 'A', null, 'when_all_down'],
    ['all down, whenAllDown empty', allDown, { ...NAME, whenAllDown: 'empty' }, 'A', null, 'when_all_down'],
    ['all down, whenAllDown servfail', allDown, { ...NAME, whenAllDown: 'servfail' }, 'A', null, 'servfail'],
    ['every weight 0: nothing admits, whenAllDown', planWith({ a: { a: 0, b: 0, c: 0 } }), { ...NAME, whenAllDown: 'empty' }, 'A', null, 'when_all_down'],
  ];
  for (const [what, plan, name, qtype, region, decision] of cases) {
    for (const explain of [false, true]) {
      const d = decide(plan, CELL, KEY, name, qtype, NOW, { ...O, explain });
      assert.equal(d.region, region, `${what}: region (explain ${explain})`);
      assert.equal(d.decision, decision, `${what}: class (explain ${explain})\n${d.reasons.join('\n')}`);
    }
  }
});
