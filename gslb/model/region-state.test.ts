import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REGION_STATES, REGION_STATE_TABLE, regionStateOf, visiblyDiffers, type StateStep } from './region-state.js';

const up: StateStep = { down: false, share: 1 };
const half: StateStep = { down: false, share: 0.5 };
const zero: StateStep = { down: false, share: 0 };
const down: StateStep = { down: true, share: 0 };

test('regionStateOf: one state per step in force and next change', () => {
  const cases: [what: string, now: StateStep, next: StateStep | undefined, state: string][] = [
    ['full share, nothing next', up, undefined, 'up'],
    ['full share, a drain next', up, half, 'up'],
    ['capped, nothing next', half, undefined, 'draining'],
    ['ramping down', half, { down: false, share: 0.25 }, 'draining'],
    ['capped, going down next', half, down, 'draining'],
    ['ramping back up', half, up, 'restoring'],
    ['share 0, nothing next', zero, undefined, 'drained'],
    ['share 0, coming back next: drained (it takes none of its clients; the way back is its next change)', zero, { down: false, share: 0.25 }, 'drained'],
    ['a quarter, coming back', { down: false, share: 0.25 }, half, 'restoring'],
    ['share 0, down next', zero, down, 'drained'],
    ['refusing new streams', { down: false, share: 0, refuse: true }, up, 'refusing'],
    ['down, even if refusing', { down: true, share: 0, refuse: true }, undefined, 'down'],
    ['down, coming back', down, up, 'down'],
  ];
  for (const [what, now, next, state] of cases) assert.equal(regionStateOf(now, next), state, what);
});

test('every state of the table is reachable and described once', () => {
  const seen = new Set([up, half, zero, down, { down: false, share: 0, refuse: true }].map((s) => regionStateOf(s)));
  seen.add(regionStateOf(half, up));
  assert.deepEqual([...seen].sort(), [...REGION_STATES].sort());
  assert.equal(new Set(REGION_STATES).size, REGION_STATE_TABLE.length);
  for (const s of REGION_STATE_TABLE) assert.ok(s.meaning.length > 10, s.state);
});

test('visiblyDiffers: share or down, not the TTL cap or weights', () => {
  const cases: [a: StateStep, b: StateStep, differs: boolean][] = [
    [up, up, false],
    [half, { down: false, share: 0.5, refuse: true }, false],
    [down, { down: true, share: 1 }, false],
    [zero, down, true],
    [half, up, true],
    [up, down, true],
  ];
  for (const [a, b, d] of cases) assert.equal(visiblyDiffers(a, b), d, JSON.stringify([a, b]));
});
