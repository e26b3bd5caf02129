/**
 * reduce(): case tables for latest-wins, health anti-flap (rise/fall streaks), hysteresis of
 * capacity and power.budget, the plain fold of every other kind, and that inputs are never
 * mutated. Pure logic: no store, no clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Signal, SignalKind } from '../model/types.js';
import { DEFAULT_RULES, movedEnough, reduce, type ReduceRules } from './reducer.js';
import type { SignalRecord } from '../model/snapshot.js';
import { signalId } from './signals.js';
import { SIGNAL_KINDS } from '../model/signals.js';
import { KINDS, KIND_LIST } from '../model/kinds/index.js';
import { foldLatest } from '../model/kinds/folds.js';

const T0 = 1_700_000_000_000;

function sig(kind: SignalKind, value: unknown, observedAt: number, key = 'k1'): Signal {
  return { region: 'eu-west', kind, source: 'test/a', key, observedAt, expiresAt: observedAt + 60_000, value };
}

/** Folds `values` in order, one second apart; returns the record after each. */
function fold(kind: SignalKind, values: unknown[], rules?: ReduceRules): SignalRecord[] {
  const out: SignalRecord[] = [];
  let rec: SignalRecord | undefined;
  values.forEach((v, i) => {
    const next = reduce(rec, sig(kind, v, T0 + i * 1000), rules);
    assert.ok(next, `signal ${i} is newer, so it is folded`);
    rec = next;
    out.push(next);
  });
  return out;
}

/** A valid value of every kind, from the kinds' own examples (gslb/model/kinds/): no list of kinds pinned here. */
const VALUES = Object.fromEntries(KIND_LIST.map((k) => [k.name, k.examples.valid[0]])) as Record<SignalKind, unknown>;

// ---- latest wins ---------------------------------------------------------------------------

const latest: { name: string; prevAt: number | null; at: number; folds: boolean }[] = [
  { name: 'no previous record', prevAt: null, at: T0, folds: true },
  { name: 'older than the record', prevAt: T0, at: T0 - 1, folds: false },
  { name: 'much older than the record', prevAt: T0, at: 0, folds: false },
  { name: 'equal observedAt', prevAt: T0, at: T0, folds: false },
  { name: 'newer by 1 ms', prevAt: T0, at: T0 + 1, folds: true },
  { name: 'newer by an hour', prevAt: T0, at: T0 + 3600_000, folds: true },
];

for (const kind of SIGNAL_KINDS) {
  for (const c of latest) {
    test(`latest wins: ${kind}, ${c.name} → ${c.folds ? 'folded' : 'refused (null)'}`, () => {
      const prev = c.prevAt === null ? undefined : (reduce(undefined, sig(kind, VALUES[kind], c.prevAt)) ?? assert.fail('the first signal folds'));
      const s = sig(kind, VALUES[kind], c.at);
      const next = reduce(prev, s);
      if (!c.folds) return assert.equal(next, null);
      assert.ok(next);
      assert.equal(next.signal, s, 'the record holds the new signal');
      assert.equal(next.id, signalId(s));
    });
  }
}

test('latest wins: a refused signal leaves the record as it was (the caller keeps prev)', () => {
  const prev = reduce(undefined, sig('grid.alert', { level: 3 }, T0));
  assert.ok(prev);
  const before = structuredClone(prev);
  assert.equal(reduce(prev, sig('grid.alert', { level: 0 }, T0 - 5000)), null);
  assert.deepEqual(prev, before);
});

// ---- health anti-flap ----------------------------------------------------------------------

/**
 * `probes`: U = success, D = failure, one per second. `stable`: the stable state expected
 * after each probe.
 */
const health: { name: string; rules: ReduceRules; probes: string; stable: string }[] = [
  { name: 'the brief\'s sequence', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UUDDDUUU', stable: 'UUUUDDUU' },
  { name: 'first probe up sets up', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'U', stable: 'U' },
  { name: 'first probe down sets down at once', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'D', stable: 'D' },
  { name: 'a single failure does not flip', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UUDUU', stable: 'UUUUU' },
  { name: 'a single success does not flip', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'DDUDD', stable: 'DDDDD' },
  { name: 'two failures of three needed do not flip', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UDD', stable: 'UUU' },
  { name: 'alternation resets the failure streak', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UDDUDDUDD', stable: 'UUUUUUUUU' },
  { name: 'alternation resets the success streak', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'DUDUDUD', stable: 'DDDDDDD' },
  { name: 'the third failure after a reset flips', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UDDUDDD', stable: 'UUUUUUD' },
  { name: 'down, a blip of up, down again, then two ups', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UDDDUDUU', stable: 'UUUDDDDU' },
  { name: 'long outage and recovery', rules: { ...DEFAULT_RULES, rise: 2, fall: 3 }, probes: 'UUUDDDDDDUUUU', stable: 'UUUUUDDDDDUUU' },
  { name: 'rise 1, fall 1: every probe applies', rules: { ...DEFAULT_RULES, rise: 1, fall: 1 }, probes: 'UDUDDU', stable: 'UDUDDU' },
  { name: 'rise 3, fall 1: down at once, up slowly', rules: { ...DEFAULT_RULES, rise: 3, fall: 1 }, probes: 'UDUUUD', stable: 'UDDDUD' },
  { name: 'rise 1, fall 5: up at once, down slowly', rules: { ...DEFAULT_RULES, rise: 1, fall: 5 }, probes: 'DUDDDDDU', stable: 'DUUUUUDU' },
  { name: 'default rules are rise 2, fall 3', rules: DEFAULT_RULES, probes: 'UDDDUU', stable: 'UUUDDU' },
];

for (const c of health) {
  test(`health: ${c.name} (rise ${c.rules.rise}, fall ${c.rules.fall}): ${c.probes} → ${c.stable}`, () => {
    assert.equal(c.probes.length, c.stable.length, 'the case lists one state per probe');
    const recs = fold('health.probe', [...c.probes].map((p) => ({ up: p === 'U' })), c.rules);
    const got = recs.map((r) => (r.fold.kind === 'health' ? (r.fold.stableUp ? 'U' : 'D') : '?')).join('');
    assert.equal(got, c.stable);
    recs.forEach((r, i) => {
      assert.equal(r.fold.kind === 'health' && r.fold.lastUp, c.probes[i] === 'U', `lastUp after probe ${i + 1}`);
      assert.equal((r.signal.value as { up: boolean }).up, c.probes[i] === 'U', 'the record holds the latest probe as is');
    });
  });
}

test('health: the streak counts consecutive equal results and restarts at 1 on a change', () => {
  const recs = fold('health.probe', [...'UUDDDU'].map((p) => ({ up: p === 'U' })));
  assert.deepEqual(
    recs.map((r) => (r.fold.kind === 'health' ? r.fold.streak : -1)),
    [1, 2, 1, 2, 3, 1],
  );
});

test('health: an out-of-order probe does not count toward a streak', () => {
  const rules = { ...DEFAULT_RULES, rise: 2, fall: 2 };
  let rec = reduce(undefined, sig('health.probe', { up: true }, T0), rules);
  assert.ok(rec);
  rec = reduce(rec, sig('health.probe', { up: false }, T0 + 2000), rules) ?? rec;
  // A late failure observed before the last probe is refused, so it cannot be the second.
  assert.equal(reduce(rec, sig('health.probe', { up: false }, T0 + 1000), rules), null);
  assert.equal(rec.fold.kind === 'health' && rec.fold.stableUp, true);
});

// ---- hysteresis ----------------------------------------------------------------------------

/** `values`: successive payloads; `applied`: the applied value expected after each. */
const hysteresis: { name: string; kind: 'capacity' | 'power.budget'; band?: number; values: Record<string, number>[]; applied: Record<string, number>[] }[] = [
  { name: '1.0 → 0.97 stays at 1.0 (3 %)', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.97 }], applied: [{ fraction: 1 }, { fraction: 1 }] },
  { name: '1.0 → 0.94 applies (6 %)', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.94 }], applied: [{ fraction: 1 }, { fraction: 0.94 }] },
  { name: '1.0 → 0.95 stays: exactly 5 % is not more than 5 %', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.95 }], applied: [{ fraction: 1 }, { fraction: 1 }] },
  { name: '100 → 95 units stays, → 94.9 applies', kind: 'capacity', values: [{ units: 100 }, { units: 95 }, { units: 94.9 }], applied: [{ units: 100 }, { units: 100 }, { units: 94.9 }] },
  { name: '1.0 → 0 applies at once', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0 }], applied: [{ fraction: 1 }, { fraction: 0 }] },
  { name: '0.02 → 0 applies at once (a small absolute change)', kind: 'capacity', values: [{ fraction: 0.02 }, { fraction: 0 }], applied: [{ fraction: 0.02 }, { fraction: 0 }] },
  { name: '0 → 0.01 applies at once (leaving 0)', kind: 'capacity', values: [{ fraction: 0 }, { fraction: 0.01 }], applied: [{ fraction: 0 }, { fraction: 0.01 }] },
  { name: 'drift is measured from the applied value, not the last one', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.97 }, { fraction: 0.96 }, { fraction: 0.955 }, { fraction: 0.949 }], applied: [{ fraction: 1 }, { fraction: 1 }, { fraction: 1 }, { fraction: 1 }, { fraction: 0.949 }] },
  { name: 'upward: 0.5 → 0.52 stays (4 %), → 0.53 applies (6 %)', kind: 'capacity', values: [{ fraction: 0.5 }, { fraction: 0.52 }, { fraction: 0.53 }], applied: [{ fraction: 0.5 }, { fraction: 0.5 }, { fraction: 0.53 }] },
  { name: 'back inside the band after applying stays at the new value', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.9 }, { fraction: 0.92 }], applied: [{ fraction: 1 }, { fraction: 0.9 }, { fraction: 0.9 }] },
  { name: 'a new field applies', kind: 'capacity', values: [{ fraction: 1 }, { fraction: 0.99, units: 64 }], applied: [{ fraction: 1 }, { fraction: 0.99, units: 64 }] },
  { name: 'a field gone applies', kind: 'capacity', values: [{ fraction: 1, units: 64 }, { fraction: 1 }], applied: [{ fraction: 1, units: 64 }, { fraction: 1 }] },
  { name: 'one field moving enough applies every field', kind: 'capacity', values: [{ fraction: 1, units: 100 }, { fraction: 0.5, units: 99 }], applied: [{ fraction: 1, units: 100 }, { fraction: 0.5, units: 99 }] },
  { name: 'no field moving enough keeps every field', kind: 'capacity', values: [{ fraction: 1, units: 100 }, { fraction: 0.99, units: 98 }], applied: [{ fraction: 1, units: 100 }, { fraction: 1, units: 100 }] },
  { name: 'custom band 20 %: 1 → 0.85 stays, → 0.79 applies', kind: 'capacity', band: 0.2, values: [{ fraction: 1 }, { fraction: 0.85 }, { fraction: 0.79 }], applied: [{ fraction: 1 }, { fraction: 1 }, { fraction: 0.79 }] },
  { name: 'reaching 0 applies even inside a band wider than 100 %', kind: 'capacity', band: 2, values: [{ fraction: 1 }, { fraction: 0.1 }, { fraction: 0 }], applied: [{ fraction: 1 }, { fraction: 1 }, { fraction: 0 }] },
  { name: 'band 0: any change applies', kind: 'capacity', band: 0, values: [{ fraction: 1 }, { fraction: 0.999 }, { fraction: 0.999 }], applied: [{ fraction: 1 }, { fraction: 0.999 }, { fraction: 0.999 }] },
  { name: 'power 12 MW → 11.5 MW stays (4.2 %)', kind: 'power.budget', values: [{ importLimitW: 12e6 }, { importLimitW: 11.5e6 }], applied: [{ importLimitW: 12e6 }, { importLimitW: 12e6 }] },
  { name: 'power 12 MW → 11 MW applies (8.3 %)', kind: 'power.budget', values: [{ importLimitW: 12e6 }, { importLimitW: 11e6 }], applied: [{ importLimitW: 12e6 }, { importLimitW: 11e6 }] },
  { name: 'power → 0 applies at once', kind: 'power.budget', values: [{ importLimitW: 12e6 }, { importLimitW: 0 }], applied: [{ importLimitW: 12e6 }, { importLimitW: 0 }] },
  { name: 'power: a new field applies', kind: 'power.budget', values: [{ importLimitW: 12e6 }, { importLimitW: 12e6, generationW: 1e6 }], applied: [{ importLimitW: 12e6 }, { importLimitW: 12e6, generationW: 1e6 }] },
  { name: 'power: a noisy meter inside the band never moves', kind: 'power.budget', values: [{ drawW: 8e6 }, { drawW: 8.2e6 }, { drawW: 7.8e6 }, { drawW: 8.3e6 }, { drawW: 7.7e6 }], applied: [{ drawW: 8e6 }, { drawW: 8e6 }, { drawW: 8e6 }, { drawW: 8e6 }, { drawW: 8e6 }] },
];

for (const c of hysteresis) {
  test(`hysteresis: ${c.kind} ${c.name}`, () => {
    const rules = c.band === undefined ? DEFAULT_RULES : { ...DEFAULT_RULES, hysteresis: c.band };
    const recs = fold(c.kind, c.values, rules);
    assert.deepEqual(
      recs.map((r) => (r.fold.kind === 'applied' ? r.fold.value : r.fold.kind)),
      c.applied,
    );
    // The record always holds the newest signal, applied or not.
    recs.forEach((r, i) => assert.deepEqual(r.signal.value, c.values[i]));
  });
}

const moved: { applied: Record<string, number>; next: Record<string, number>; band: number; moved: boolean }[] = [
  { applied: {}, next: {}, band: 0.05, moved: false },
  { applied: { a: 1 }, next: { a: 1 }, band: 0.05, moved: false },
  { applied: { a: 1 }, next: { a: 1.05 }, band: 0.05, moved: false },
  { applied: { a: 1 }, next: { a: 1.0501 }, band: 0.05, moved: true },
  { applied: { a: 1 }, next: { a: 0.95 }, band: 0.05, moved: false },
  { applied: { a: 0.3 }, next: { a: 0.285 }, band: 0.05, moved: false },
  { applied: { a: 0.3 }, next: { a: 0.2849 }, band: 0.05, moved: true },
  { applied: { a: 1 }, next: { a: 0 }, band: 0.5, moved: true },
  { applied: { a: 0 }, next: { a: 1e-9 }, band: 0.5, moved: true },
  { applied: { a: 1 }, next: { a: 0 }, band: 2, moved: true },
  { applied: { a: 1 }, next: { a: 0.01 }, band: 2, moved: false },
  { applied: { a: 1 }, next: { b: 1 }, band: 0.05, moved: true },
  { applied: { a: 1 }, next: { a: 1, b: 1 }, band: 0.05, moved: true },
  { applied: { a: 1, b: 1 }, next: { a: 1 }, band: 0.05, moved: true },
  { applied: { a: 1, b: 1 }, next: { a: 1.01, b: 0.9 }, band: 0.05, moved: true },
];

for (const c of moved) {
  test(`movedEnough(${JSON.stringify(c.applied)}, ${JSON.stringify(c.next)}, ${c.band}) = ${c.moved}`, () => {
    assert.equal(movedEnough(c.applied, c.next, c.band), c.moved);
  });
}

// ---- every other kind ----------------------------------------------------------------------

for (const kind of SIGNAL_KINDS.filter((k) => KINDS[k].fold === foldLatest)) {
  test(`other kinds: ${kind} keeps fold 'latest' and the newest value as is`, () => {
    const v2 = structuredClone(VALUES[kind]) as Record<string, unknown>;
    const recs = fold(kind, [VALUES[kind], v2]);
    for (const r of recs) assert.deepEqual(r.fold, { kind: 'latest' });
    assert.equal(recs[1]!.signal.value, v2);
  });
}

// ---- grid facts: when learned, and what they said before ----------------------------------

const EV = { id: 'e1', start: T0 + 3600_000, end: T0 + 7200_000, type: 'load-shed' };
const gridCases: { name: string; values: unknown[]; learned: number[]; last: (null | { value: unknown; learnedAt: number; until: number })[] }[] = [
  { name: 'first signal: learned at its observedAt', values: [EV], learned: [T0], last: [null] },
  { name: 're-polls of the same content keep the first learnedAt', values: [EV, { ...EV }, { type: EV.type, end: EV.end, start: EV.start, id: EV.id }], learned: [T0, T0, T0], last: [null, null, null] },
  {
    name: 'a modified start is learned anew, and the old content is kept until the change',
    values: [EV, { ...EV, start: EV.start - 600_000 }],
    learned: [T0, T0 + 1000],
    last: [null, { value: EV, learnedAt: T0, until: T0 + 1000 }],
  },
  {
    name: 'a cancellation remembers the event it cancelled',
    values: [EV, EV, { ...EV, cancelled: true }],
    learned: [T0, T0, T0 + 2000],
    last: [null, null, { value: EV, learnedAt: T0, until: T0 + 2000 }],
  },
  {
    name: 'only the content just before the last change is kept',
    values: [EV, { ...EV, type: 'drain' }, { ...EV, type: 'cap', cap: 0.5 }],
    learned: [T0, T0 + 1000, T0 + 2000],
    last: [null, { value: EV, learnedAt: T0, until: T0 + 1000 }, { value: { ...EV, type: 'drain' }, learnedAt: T0 + 1000, until: T0 + 2000 }],
  },
];
for (const c of gridCases) {
  test(`grid.event fold: ${c.name}`, () => {
    const recs = fold('grid.event', c.values);
    assert.deepEqual(
      recs.map((r) => (r.fold.kind === 'grid' ? r.fold.learnedAt : -1)),
      c.learned,
    );
    assert.deepEqual(
      recs.map((r) => (r.fold.kind === 'grid' ? (r.fold.last ?? null) : 'not a grid fold')),
      c.last,
    );
  });
}

test('grid.alert fold: a cleared alert (level 0) remembers the level it cleared', () => {
  const recs = fold('grid.alert', [{ type: 'eea', level: 2 }, { type: 'eea', level: 2 }, { type: 'eea', level: 0 }]);
  const f = recs[2]!.fold;
  assert.equal(f.kind, 'grid');
  assert.deepEqual(f.kind === 'grid' && f.last, { value: { type: 'eea', level: 2 }, learnedAt: T0, until: T0 + 2000 });
});

test('the fold of a record follows the kind of the new signal, never the previous fold', () => {
  // A record of the same id always has the same kind; a foreign fold must not leak in.
  const foreign: SignalRecord = { id: 'x', signal: sig('health.probe', { up: false }, T0), fold: { kind: 'latest' } };
  const h = reduce(foreign, sig('health.probe', { up: true }, T0 + 1));
  assert.deepEqual(h?.fold, { kind: 'health', stableUp: true, streak: 1, lastUp: true });
  const c = reduce(foreign, sig('capacity', { fraction: 0.97 }, T0 + 1));
  assert.deepEqual(c?.fold, { kind: 'applied', value: { fraction: 0.97 } });
});

// ---- inputs are never mutated ----------------------------------------------------------------

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** A second valid value of every kind (its second example, else its first). */
const SECOND = Object.fromEntries(KIND_LIST.map((k) => [k.name, k.examples.valid[1] ?? k.examples.valid[0]])) as Record<SignalKind, unknown>;

for (const kind of SIGNAL_KINDS) {
  test(`never mutates: ${kind} (prev, signal and rules deep-frozen)`, () => {
    const rules = deepFreeze({ ...DEFAULT_RULES });
    const first = deepFreeze(sig(kind, structuredClone(VALUES[kind]), T0));
    const prev = reduce(undefined, first, rules);
    assert.ok(prev);
    deepFreeze(prev);
    const prevCopy = structuredClone(prev);
    const s = deepFreeze(sig(kind, structuredClone(SECOND[kind]), T0 + 1000));
    const sCopy = structuredClone(s);
    // ESM is strict mode: a write into a frozen object throws.
    const next = reduce(prev, s, rules);
    assert.ok(next);
    assert.deepEqual(prev, prevCopy);
    assert.deepEqual(s, sCopy);
    assert.deepEqual(rules, DEFAULT_RULES);
    // A refused (older) signal mutates nothing either.
    assert.equal(reduce(prev, deepFreeze(sig(kind, structuredClone(SECOND[kind]), T0 - 1)), rules), null);
    assert.deepEqual(prev, prevCopy);
  });
}

test('health upSince: set by the probe that turns the stable state up, kept while up, cleared when it turns down; none for a first probe', () => {
  const fold = (ups: boolean[]) => {
    let rec: SignalRecord | undefined;
    ups.forEach((up, i) => (rec = reduce(rec, sig('health.probe', { up }, T0 + i * 1000)) ?? rec));
    return rec!.fold as { stableUp: boolean; upSince?: number };
  };
  const cases: [string, boolean[], boolean, number | undefined][] = [
    ['a first probe up: no known turn', [true], true, undefined],
    ['up all along', [true, true, true], true, undefined],
    ['down, then up twice (rise 2): up since the second success', [false, true, true], true, T0 + 2000],
    ['…and it stays that instant while up', [false, true, true, true, true], true, T0 + 2000],
    ['turned down again (fall 3): cleared', [false, true, true, false, false, false], false, undefined],
    ['one success is not a turn', [false, true], false, undefined],
  ];
  for (const [what, ups, stable, since] of cases) {
    const f = fold(ups);
    assert.equal(f.stableUp, stable, `${what}: stable state`);
    assert.equal(f.upSince, since, `${what}: upSince`);
  }
});
