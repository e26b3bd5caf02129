/**
 * Drain curves by case table: the formulas of docs/design.md "The drain curve" with the shipped defaults
 * (Tmin 5 s, F 30 s → steps 30 s apart; S 300 s; m 5 s; R 60 s; TTL0 30 s; hold 120 s;
 * restore 300 s): reach = T − 335 s, ramp start = T − 395 s, lead = max(R, TTL0 − g) + g +
 * S + m = 395 s (ADR 0016: the TTL shrink overlaps the ramp when the notice is short).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drainCurve, drainLeadMs, type CurveInput } from './drain.js';
import { DEFAULT_DRAIN, type DrainSettings } from './planner/index.js';

const T = 1_800_000_000_000;
const S = 1000;
const H = 3600 * S;

/** The curve as `offset-from-T-in-s:cap` at every instant where it changes. */
function shape(i: Partial<CurveInput>, d: Partial<DrainSettings> = {}): string {
  // S fixed at 300 s unless a case lets it grow.
  const c = drainCurve({ start: T, end: T + H, learnedAt: T - 2 * H, cap: 0, ttl0S: 30, ...i }, { ...DEFAULT_DRAIN, sessionAllowanceMaxMs: 300_000, ...d });
  let prev = 1;
  const out: string[] = [];
  for (const t of c.instants) {
    const p = c.at(t);
    if (p.cap !== prev) out.push(`${(t - T) / S}:${p.cap}`);
    prev = p.cap;
  }
  return out.join(' ');
}

const cases: [string, Partial<CurveInput>, Partial<DrainSettings>, string][] = [
  ['2 h of notice: three steps 30 s apart reach 0 at T − 335 s; hold 120 s after E; restore in ten steps', {}, {}, '-395:0.6667 -365:0.3333 -335:0 3750:0.1 3780:0.2 3810:0.3 3840:0.4 3870:0.5 3900:0.6 3930:0.7 3960:0.8 3990:0.9 4020:1'],
  ['a cap of 0.5: the ramp stops at 0.5 and the restore starts from it', { cap: 0.5 }, { restoreMs: 60_000 }, '-395:0.8333 -365:0.6667 -335:0.5 3750:0.75 3780:1'],
  ['a longer resolver floor (F = 60 s) spaces the steps 60 s apart', {}, { resolverFloorS: 60, restoreMs: 0 }, '-425:0.5 -365:0 3720:1'],
  ['the old ramp (R = 120 s): five steps', {}, { rampMs: 120_000, holdMs: 0, restoreMs: 0 }, '-455:0.8 -425:0.6 -395:0.4 -365:0.2 -335:0 3600:1'],
  ['no ramp (R = 0): one step at T − S − g − m', {}, { rampMs: 0, holdMs: 0, restoreMs: 0 }, '-335:0 3600:1'],
  ['learned 380 s ahead (after the ramp would have started): compressed into [L, reach], steps still ≥ 30 s apart', { learnedAt: T - 380 * S }, { restoreMs: 0, holdMs: 0 }, '-380:0.5 -335:0 3600:1'],
  ['learned 350 s ahead: less than one step to reach: at once', { learnedAt: T - 350 * S }, { restoreMs: 0, holdMs: 0 }, '-350:0 3600:1'],
  ['learned after the event began: at once when learned', { learnedAt: T + 60 * S }, { restoreMs: 0, holdMs: 0 }, '60:0 3600:1'],
  ['cancelled before the ramp began: nothing at all', { until: T - 1000 * S }, {}, ''],
  ['cancelled mid-ramp (after step 2): held at 0.3333, then restored from it', { until: T - 350 * S }, { restoreMs: 60_000 }, '-395:0.6667 -365:0.3333 -200:0.6667 -170:1'],
  ['S grows with the notice: 2 h ahead, S up to 30 min → the ramp ends at T − 1835 s', {}, { sessionAllowanceMaxMs: 1_800_000, restoreMs: 0, holdMs: 0 }, '-1895:0.6667 -1865:0.3333 -1835:0 3600:1'],
  [
    'S grows only as far as the notice allows: learned 1000 s ahead → S = 905 s, reach at T − 940 s; the ramp starts at the notice (the TTL shrink overlaps it)',
    { learnedAt: T - 1000 * S },
    { sessionAllowanceMaxMs: 1_800_000, restoreMs: 0, holdMs: 0 },
    '-1000:0.6667 -970:0.3333 -940:0 3600:1',
  ],
  [
    'TTL0 300 s learned at the lead (605 s): the ramp waits until the answers cached before the notice expire by reach + g',
    { learnedAt: T - 605 * S, ttl0S: 300 },
    { restoreMs: 0, holdMs: 0 },
    '-395:0.6667 -365:0.3333 -335:0 3600:1',
  ],
  ['a grid cap above 0 grows S only to discretionarySessionAllowanceMaxMs: 10 min → reach at T − 635 s', { cap: 0.5, gridDrain: true }, { sessionAllowanceMaxMs: 1_800_000, discretionarySessionAllowanceMaxMs: 600_000, restoreMs: 0, holdMs: 0 }, '-695:0.8333 -665:0.6667 -635:0.5 3600:1'],
  ['a grid drain to 0 with the same settings grows S to sessionAllowanceMaxMs: 30 min', { gridDrain: true }, { sessionAllowanceMaxMs: 1_800_000, discretionarySessionAllowanceMaxMs: 600_000, restoreMs: 0, holdMs: 0 }, '-1895:0.6667 -1865:0.3333 -1835:0 3600:1'],
  ['a window or an operator drain to 0 (not a grid obligation) with the same settings: 10 min', {}, { sessionAllowanceMaxMs: 1_800_000, discretionarySessionAllowanceMaxMs: 600_000, restoreMs: 0, holdMs: 0 }, '-695:0.6667 -665:0.3333 -635:0 3600:1'],
  ['an open-ended event never restores', { end: Infinity }, {}, '-395:0.6667 -365:0.3333 -335:0'],
];

for (const [what, input, d, want] of cases) {
  test(`drain curve: ${what}`, () => {
    assert.equal(shape(input, d), want);
  });
}

test('drain curve: the shortfall is the notice missing against the lead, and phases are named', () => {
  const d = { ...DEFAULT_DRAIN, sessionAllowanceMaxMs: 300_000 };
  assert.equal(drainLeadMs(d, 30), 395 * S, 'max(R, TTL0 − g) + g + S + m = 60 + 30 + 300 + 5 s');
  assert.equal(drainLeadMs(d, 300), 605 * S, 'a TTL0 of 300 s: 270 + 30 + 300 + 5 s');
  const early = drainCurve({ start: T, end: T + H, learnedAt: T - 2 * H, cap: 0, ttl0S: 30 }, d);
  assert.equal(early.shortfallMs, 0);
  assert.equal(early.noticeStart, T - 395 * S);
  assert.equal(early.rampStart, T - 395 * S);
  assert.equal(early.reach, T - 335 * S);
  assert.deepEqual(
    [T - 500 * S, T - 395 * S, T - 300 * S, T, T + H, T + H + 130 * S, T + 2 * H].map((t) => early.at(t).phase),
    ['before', 'ramp', 'ahead', 'event', 'hold', 'restore', 'done'],
  );
  // Learned exactly at the lead: no shortfall, and the drain is the same as with more notice.
  const atLead = drainCurve({ start: T, end: T + H, learnedAt: T - 395 * S, cap: 0, ttl0S: 30 }, d);
  assert.equal(atLead.shortfallMs, 0);
  assert.equal(atLead.reach, T - 335 * S);
  const late = drainCurve({ start: T, end: T + H, learnedAt: T - 115 * S, cap: 0, ttl0S: 30 }, d);
  // Learned 115 s ahead: 280 s short of the 395 s lead.
  assert.equal(late.shortfallMs, 280 * S);
  // A longer TTL0 needs a longer lead: TTL0 300 s → 605 s.
  assert.equal(drainCurve({ start: T, end: T + H, learnedAt: T - 500 * S, cap: 0, ttl0S: 300 }, d).shortfallMs, 105 * S);
});
