/**
 * Operator overrides and acknowledgements at given instants (issue 30, item 6): a scenario's
 * `operator` actions reach GridSteer's planner as Override records from their instant, as the
 * operator API stores them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadScenario } from './scenario.js';
import { buildWorld } from './world.js';
import { GridSteerPolicy, type WorldState } from './policies.js';
import { tempDir, tinyScenario, tinyTwoSheds, toldOfEvents, verdicts } from './testing.js';

const M = 60_000;
const world = (t: { after(fn: () => void): void }, text: string) => buildWorld(loadScenario(join(tempDir(t, { 'tiny.yaml': text }), 'tiny.yaml')), 1, 1);
/** Every region serving, empty. */
const calm: WorldState = { serving: new Uint8Array([1, 1, 1]), load: new Float64Array(3), capacityNow: new Float64Array([100, 100, 100]), throttled: new Float64Array(3), probed: [], eventActive: () => false };

/** GridSteer over the scenario, ticked at each of `minutes` (after the start); returns it and a reader of a region's share. */
function ticked(w: ReturnType<typeof buildWorld>, minutes: number[]) {
  const p = new GridSteerPolicy(w, w.scenario.policies.gridsteer, w.scenario.epoch);
  const at = (m: number) => w.scenario.epoch + m * M;
  for (const m of minutes) p.tick(at(m), calm);
  return { p, share: (region: string, m: number) => p.drainShare(w.regionIndex.get(region)!, at(m)) };
}

test('operator: a drain by a deadline from its instant, an undrain ramping back, a force-down until its end', (t) => {
  const w = world(t, tinyScenario(`operator:
  - { at: 10m, action: drain, region: west, by: 20m, reason: maintenance }
  - { at: 30m, action: undrain, region: west }
  - { at: 10m, action: force-down, region: south, until: 20m }
`));
  const before = ticked(w, [9]);
  assert.deepEqual(before.p.snapshot().overrides, [], 'nothing before 10 min');
  assert.equal(before.share('west', 25), 1);
  const drained = ticked(w, [9, 10]);
  const ov = drained.p.snapshot().overrides;
  assert.deepEqual(
    ov.map((o) => [o.region, o.action, o.start - w.scenario.epoch, o.by === undefined ? null : o.by - w.scenario.epoch, o.reason]),
    [
      ['west', 'drain', 10 * M, 20 * M, 'maintenance'],
      ['south', 'force-down', 10 * M, null, 'scenario'],
    ],
  );
  assert.equal(drained.share('west', 20), 0, 'drained by its deadline');
  assert.equal(drained.share('south', 15), 0, 'forced down');
  assert.ok(drained.share('south', 40) > 0, 'the force-down ended at 20 min');
  const back = ticked(w, [9, 10, 30]);
  assert.deepEqual(back.p.snapshot().overrides.map((o) => `${o.region} ${o.action}`), ['south force-down', 'west undrain'], 'the undrain ended the drain');
  const restore = back.p.settings.drain.restoreMs;
  assert.ok(back.share('west', 30 + restore / M / 2) > 0 && back.share('west', 30 + restore / M / 2) < 1, 'ramping back');
  assert.equal(back.share('west', 31 + restore / M), 1, 'restored after drain.restoreMs');
});

test('operator: a drain acknowledges a loss beyond one principal\'s bound; a distrust of the principal untrusts its claim', (t) => {
  const T = 30;
  const noAck = toldOfEvents(world(t, tinyTwoSheds('token:a')));
  assert.deepEqual(verdicts(noAck), ['east trusted token:a', 'west waiting token:a'], 'without the operator: west waits');
  const ackWorld = world(t, tinyTwoSheds('token:a', 'operator:\n  - { at: 5m, action: drain, region: west, by: 30m, reason: acknowledged }\n'));
  const ack = ticked(ackWorld, [5]);
  toldOfEvents(ackWorld, ack.p);
  assert.deepEqual(verdicts(ack.p), ['east trusted token:a', 'west trusted token:a'], 'the operator\'s drain acknowledges west');
  assert.equal(ack.share('west', T), 0);
  const distrustWorld = world(t, tinyScenario("operator:\n  - { at: 5m, action: distrust, principal: 'token:vtn-test' }\n"));
  const d = ticked(distrustWorld, [5]);
  toldOfEvents(distrustWorld, d.p);
  assert.deepEqual(verdicts(d.p), ['east distrusted token:vtn-test']);
});

test('operator actions that the API would refuse are refused with their path', (t) => {
  const cases: [string, string, RegExp][] = [
    ['{ at: 10m, action: drain }', 'operator[0]', /a drain needs region/],
    ['{ at: 10m, action: drain, region: north }', 'operator[0].region', /"north" is not a region of the fleet/],
    ['{ at: 10m, action: distrust, source: a/, principal: "token:x" }', 'operator[0]', /exactly one of source .* or principal/],
    ['{ at: 10m, action: force-down, region: east, value: 0.5 }', 'operator[0].value', /only a drain has value/],
    ['{ at: 10m, action: drain, region: east, by: 5m }', 'operator[0].by', /must be after at/],
    ['{ at: 2h, action: drain, region: east }', 'operator[0].at', /after the simulation ends/],
  ];
  for (const [action, path, message] of cases) {
    let issues: { path: string; message: string }[] = [];
    try {
      loadScenario(join(tempDir(t, { 'tiny.yaml': tinyScenario(`operator:\n  - ${action}\n`) }), 'tiny.yaml'));
    } catch (e) {
      issues = (e as { issues: { path: string; message: string }[] }).issues;
    }
    assert.ok(issues.some((i) => i.path === path && message.test(i.message)), `${action}: ${JSON.stringify(issues)}`);
  }
});

test('windows: a maintenance window drains its region over its occurrence, planned with the horizon epoch the control loop passes', (t) => {
  // The tiny scenario starts at 18:00 UTC: west's window occurs at 18:40 for 10 minutes.
  const w = world(t, tinyScenario('windows:\n  - { id: west-maint, regions: [west], cron: "40 18 * * *", duration: 10m, reason: patching }\n'));
  assert.equal(w.scenario.windows.length, 1);
  const g = ticked(w, [1]);
  assert.equal(g.share('west', -120), 1, 'before the window and its drain ahead (the planner drains it from about 17:08)');
  assert.equal(g.share('west', 45), 0, 'drained during its occurrence');
  assert.equal(g.share('east', 45), 1, 'other regions untouched');
  assert.ok(g.share('west', 58) > 0, 'restored after it');
  const bad = (() => {
    try {
      world(t, tinyScenario('windows:\n  - { id: w, regions: [north], cron: "40 18 * * *", duration: 10m, reason: x }\n'));
    } catch (e) {
      return (e as { issues: { path: string; message: string }[] }).issues;
    }
    return [];
  })();
  assert.ok(bad.some((i) => i.path === 'windows[0].regions[0]' && /unknown region "north"/.test(i.message)), JSON.stringify(bad));
});
