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
    ['{ at: 10m, action: force-down, region: east, value: 0.5 }', 'operator[0].value', /only a drain or a weight has value/],
    ['{ at: 10m, action: force-up, region: east }', 'operator[0].until', /a force-up needs until/],
    ['{ at: 10m, action: weight, region: east }', 'operator[0].value', /a weight needs value/],
    ['{ at: 10m, action: weight, region: east, value: 0.5, ramp: 1m }', 'operator[0].ramp', /only a drain has ramp/],
    ['{ at: 10m, action: weight, value: 0.5 }', 'operator[0]', /a weight needs region/],
    ['{ at: 10m, action: freeze, region: east }', 'operator[0].region', /a freeze is fleet-wide: remove region/],
    ['{ at: 10m, action: freeze, value: 0.5 }', 'operator[0].value', /only a drain or a weight has value/],
    ['{ at: 10m, action: unfreeze, until: 20m }', 'operator[0].until', /remove until/],
    ['{ at: 20m, action: freeze }\n  - { at: 10m, action: freeze, until: 30m }', 'operator[0].at', /already frozen by operator\[1\]/],
    ['{ at: 10m, action: freeze }\n  - { at: 20m, action: unfreeze }\n  - { at: 25m, action: freeze }', 'none', /./],
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
    if (path === 'none') assert.deepEqual(issues, [], `${action}: a freeze after an unfreeze is accepted`);
    else assert.ok(issues.some((i) => i.path === path && message.test(i.message)), `${action}: ${JSON.stringify(issues)}`);
  }
});

/** A world where `dark` serves nothing and is probed (its probes fail), the rest serving, empty. */
const darkWorld = (dark: number): WorldState => ({ ...calm, serving: new Uint8Array([0, 1, 2].map((r) => (r === dark ? 0 : 1))), probed: [dark] });

test('operator: a weight caps its region until its end; a force-up keeps a region whose probes fail in the plan until its end', (t) => {
  const w = world(t, tinyScenario(`operator:
  - { at: 10m, action: weight, region: west, value: 0.3, until: 20m }
  - { at: 1m, action: force-up, region: east, until: 4m, reason: probes wrong }
`));
  const g = ticked(w, [10]);
  assert.equal(g.share('west', 15), 0.3, 'weighted');
  assert.equal(g.share('west', 25), 1, 'the weight ended at 20 min');
  // East dark from the start: its probes fail every 10 s. Forced up from 1 to 4 min, then its health decides again.
  const east = w.regionIndex.get('east')!;
  const run = (scenario: string) => {
    const ww = world(t, tinyScenario(scenario));
    const p = new GridSteerPolicy(ww, ww.scenario.policies.gridsteer, ww.scenario.epoch);
    const shares: number[] = [];
    for (let s = 0; s <= 300; s++) {
      p.tick(ww.scenario.epoch + s * 1000, darkWorld(east));
      if (s % 60 === 30) shares.push(p.drainShare(east, ww.scenario.epoch + s * 1000));
    }
    return shares; // at 0.5, 1.5, 2.5, 3.5 and 4.5 min
  };
  const unforced = run('');
  assert.deepEqual(unforced.map((x) => x > 0), [false, false, false, false, false], `down on its failing probes: ${unforced.join(', ')}`);
  const forced = run('operator:\n  - { at: 1m, action: force-up, region: east, until: 4m, reason: probes wrong }\n');
  assert.deepEqual(forced.map((x) => x > 0), [false, true, true, true, false], `forced up from 1 to 4 min: ${forced.join(', ')}`);
  // A force-down at 2 min replaces the force-up.
  const replaced = run('operator:\n  - { at: 1m, action: force-up, region: east, until: 4m }\n  - { at: 2m, action: force-down, region: east }\n');
  assert.deepEqual(replaced.map((x) => x > 0), [false, true, false, false, false], `the force-down replaced it: ${replaced.join(', ')}`);
});

test('operator: a freeze holds gridPolicy\'s share where the plan had it (an untrusted claim does not drain), a trusted loss acts through it, an unfreeze ends it', (t) => {
  const T = 30;
  // Production trust (''): east's claim is untrusted, capped like any claim, and drained by T without a freeze.
  const plain = toldOfEvents(world(t, tinyScenario('', '')));
  assert.equal(plain.drainShare(plain.w.regionIndex.get('east')!, plain.w.scenario.epoch + (T + 5) * M), 0, 'untrusted claim, not frozen: drained');
  const frozenWorld = world(t, tinyScenario("operator:\n  - { at: 5m, action: freeze, until: 50m, reason: incident }\n  - { at: 20m, action: unfreeze }\n", ''));
  const frozen = ticked(frozenWorld, [5]);
  assert.deepEqual(frozen.p.snapshot().overrides.map((o) => [o.region, o.action, o.hold]), [['*', 'freeze', { east: 1, west: 1, south: 1 }]], 'the hold: every share as planned at 5 min');
  toldOfEvents(frozenWorld, frozen.p);
  assert.equal(frozen.share('east', T + 5), 1, 'frozen: the claim told at 10 min does not move east');
  frozen.p.tick(frozenWorld.scenario.epoch + 20 * M, calm);
  assert.deepEqual(frozen.p.snapshot().overrides, [], 'the unfreeze ended it');
  assert.equal(frozen.share('east', T + 5), 0, 'unfrozen at 20 min: east is drained by T');
  // A trusted physical loss acts although automation is frozen, and the plan says so.
  const trustedWorld = world(t, tinyScenario('operator:\n  - { at: 5m, action: freeze, reason: incident }\n'));
  const trusted = ticked(trustedWorld, [5]);
  toldOfEvents(trustedWorld, trusted.p);
  assert.equal(trusted.share('east', T + 5), 0, 'a trusted loss drains through the freeze');
  assert.ok((trusted.p.current.alerts ?? []).some((a) => a.kind === 'loss-during-freeze'), JSON.stringify(trusted.p.current.alerts));
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
