/**
 * An event modified, extended or cancelled while in force (issue 30, item 6): the source's fact
 * changes at that instant (same source and id, a new observedAt), and the world follows the
 * final truth.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadScenario } from './scenario.js';
import { buildWorld } from './world.js';
import { factSegments } from './engine.js';
import { GridSteerPolicy } from './policies.js';
import { runScenario } from './run.js';
import { tempDir, tinyScenario } from './testing.js';

const M = 60_000;
/** The tiny scenario (east dark 30–45 min, told 20 min ahead) with `changes` under its event. */
function withChanges(t: { after(fn: () => void): void }, changes: string) {
  const text = tinyScenario().replace('    effect: { kind: power-off }\n', `    effect: { kind: power-off }\n    changes: ${changes}\n`);
  return loadScenario(join(tempDir(t, { 'tiny.yaml': text }), 'tiny.yaml'));
}

test('changes: the world follows the final truth; the source tells each change from its instant, same id, until the end it tells', (t) => {
  const ext = withChanges(t, '[{ at: 40m, end: 55m }]');
  const e = ext.events[0]!;
  assert.deepEqual([e.atMs, e.durationMs, e.announcedDurationMs, e.effect.kind], [30 * M, 25 * M, 15 * M, 'power-off'], 'extended: dark until 55 min');
  const f = e.facts[0]!;
  const segs = factSegments(ext.epoch, ext.epoch + 10 * M, e, f).map((s) => [s.from - ext.epoch, s.to - ext.epoch, (s.value.end as number) - ext.epoch, s.value.id, s.value.cancelled ?? false]);
  assert.deepEqual(segs, [
    [10 * M, 40 * M, 45 * M, 'shed-1', false],
    [40 * M, 55 * M, 55 * M, 'shed-1', false],
  ]);
  const cut = withChanges(t, '[{ at: 35m, cancelled: true }]').events[0]!;
  assert.deepEqual([cut.durationMs, cut.effect.kind], [5 * M, 'power-off'], 'cancelled in force: it stops at the cancellation');
  const cutSegs = factSegments(ext.epoch, ext.epoch + 10 * M, cut, cut.facts[0]!).map((s) => [s.from - ext.epoch, s.to - ext.epoch, s.value.cancelled ?? false]);
  assert.deepEqual(cutSegs, [
    [10 * M, 35 * M, false],
    [35 * M, 45 * M, true],
  ], 'the cancelled fact is re-reported until the end told before');
  const never = withChanges(t, '[{ at: 20m, cancelled: true }]').events[0]!;
  assert.deepEqual([never.effect.kind, never.durationMs], ['none', 15 * M], 'cancelled before T: nothing happens');
});

test('changes that cannot be told are refused with their path', (t) => {
  const cases: [string, string, RegExp][] = [
    ['[{ at: 5m, end: 50m }]', 'events[0].changes[0].at', /must be after the announcement/],
    ['[{ at: 50m, end: 55m }]', 'events[0].changes[0].at', /before the end told so far/],
    ['[{ at: 40m, end: 35m }]', 'events[0].changes[0].end', /must be after T/],
    ['[{ at: 40m }]', 'events[0].changes[0]', /give exactly one of end/],
    ['[{ at: 35m, cancelled: true }, { at: 40m, end: 50m }]', 'events[0].changes[1]', /comes after the cancellation/],
  ];
  for (const [changes, path, message] of cases) {
    let issues: { path: string; message: string }[] = [];
    try {
      withChanges(t, changes);
    } catch (e) {
      issues = (e as { issues: { path: string; message: string }[] }).issues;
    }
    assert.ok(issues.some((i) => i.path === path && message.test(i.message)), `${changes}: ${JSON.stringify(issues)}`);
  }
});

/** GridSteer told the event's facts piece by piece (each change at its instant), as the engine schedules them; `upTo` leaves out the pieces from that change on. */
function toldPolicy(sc: ReturnType<typeof withChanges>, upTo = Infinity) {
  const w = buildWorld(sc, 1, 1);
  const p = new GridSteerPolicy(w, sc.policies.gridsteer, sc.epoch);
  const e = sc.events[0]!;
  const f = e.facts[0]!;
  factSegments(sc.epoch, sc.epoch + e.atMs - e.noticeMs, e, f).slice(0, upTo).forEach((seg) => p.fact({ region: e.region, kind: f.kind, source: f.source, key: f.key, observedAt: seg.from, expiresAt: seg.end, value: seg.value }, seg.from));
  return { p, east: w.regionIndex.get('east')!, at: (m: number) => sc.epoch + m * M };
}

test('an extension told while in force: the world stays dark to the new end, and GridSteer keeps the region drained only if told', (t) => {
  const sc = withChanges(t, '[{ at: 40m, end: 55m }]');
  const told = toldPolicy(sc);
  assert.equal(told.p.drainShare(told.east, told.at(50)), 0, 'told: still drained at 50 min');
  const untold = toldPolicy(sc, 1);
  assert.ok(untold.p.drainShare(untold.east, untold.at(50)) > 0, 'not told: restored after the announced end');
  // The world follows the final truth: static geo sends the dark region's clients there 25 minutes instead of 15.
  const staticSent = (x: ReturnType<typeof withChanges>) => runScenario(x, { scale: 0.5, policies: ['static'] }).results[0]!.sentToEventRegion[0]!.reduce((s, v) => s + v, 0);
  const base = withChanges(t, '[{ at: 40m, end: 45m }]');
  const a = staticSent(sc);
  const b = staticSent(base);
  assert.ok(a > 1.4 * b, `extended ${a}, as announced ${b}`);
});

test('a cancellation told while in force restores the region in GridSteer\'s plan', (t) => {
  const sc = withChanges(t, '[{ at: 35m, cancelled: true }]');
  const before = toldPolicy(sc, 1);
  assert.equal(before.p.drainShare(before.east, before.at(32)), 0, 'drained while the event stands');
  assert.equal(before.p.drainShare(before.east, before.at(40)), 0, 'not told of the cancellation: still drained at 40 min');
  const after = toldPolicy(sc);
  assert.ok(after.p.drainShare(after.east, after.at(40)) > 0, 'told: back in the plan after the cancellation');
});

/** The tiny scenario with its fact told as a grid.alert (eea level 2: the shipped rule alert-eea2 drains) and `changes`. */
function alertWithChanges(t: { after(fn: () => void): void }, changes: string) {
  const text = tinyScenario()
    .replace('    effect: { kind: power-off }\n', `    effect: { kind: power-off }\n    changes: ${changes}\n`)
    .replace('      - kind: grid.event\n', '      - kind: grid.alert\n')
    .replace('value: { type: load-shed }', 'value: { type: eea, level: 2, zone: TEST, message: EEA 2 }');
  return loadScenario(join(tempDir(t, { 'tiny.yaml': text }), 'tiny.yaml'));
}

test('changes of a grid.alert: a new end moves its end; a cancellation is the all-clear (normal, level 0), and GridSteer follows only when told', (t) => {
  const ext = alertWithChanges(t, '[{ at: 40m, end: 55m }]');
  const e = ext.events[0]!;
  const segs = factSegments(ext.epoch, ext.epoch + 10 * M, e, e.facts[0]!).map((s) => [s.from - ext.epoch, (s.value.end as number) - ext.epoch, s.value.type, s.value.level]);
  assert.deepEqual(segs, [
    [10 * M, 45 * M, 'eea', 2],
    [40 * M, 55 * M, 'eea', 2],
  ]);
  const told = toldPolicy(ext);
  assert.equal(told.p.drainShare(told.east, told.at(50)), 0, 'extension told: still drained at 50 min');
  assert.ok(toldPolicy(ext, 1).p.drainShare(told.east, told.at(50)) > 0, 'not told: restored after the announced end');
  const cut = alertWithChanges(t, '[{ at: 35m, cancelled: true }]');
  const c = cut.events[0]!;
  const last = factSegments(cut.epoch, cut.epoch + 10 * M, c, c.facts[0]!).at(-1)!;
  assert.deepEqual([last.from - cut.epoch, last.value.type, last.value.level, 'message' in last.value], [35 * M, 'normal', 0, false], 'the all-clear');
  assert.equal(c.durationMs, 5 * M, 'the world: dark until the cancellation');
  const before = toldPolicy(cut, 1);
  assert.equal(before.p.drainShare(before.east, before.at(40)), 0, 'not told of the all-clear: still drained at 40 min');
  const after = toldPolicy(cut);
  assert.ok(after.p.drainShare(after.east, after.at(40)) > 0, 'told: back in the plan after the all-clear');
});
