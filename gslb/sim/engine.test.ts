/**
 * The world and the engine: the world's layout keeps its promises; the timeline; a tiny
 * scenario run end to end (each policy behaves as modelled, the counts add up); the same
 * seed gives the same report, another seed another.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadScenario } from './scenario.js';
import { buildWorld } from './world.js';
import { runPolicy, timeline } from './engine.js';
import { runScenario, type SimReport } from './run.js';
import { tempDir, tinyScenario } from './testing.js';

function tiny(t: { after(fn: () => void): void }, extra = '') {
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario(extra) });
  return loadScenario(join(dir, 'tiny.yaml'));
}

test('world: capacity is headroom × expected concurrency shared by units; shares of clamping resolvers and TTL-ignoring clients are exact', (t) => {
  const sc = tiny(t);
  const w = buildWorld(sc, 3, 1);
  const cap = Array.from(w.capacity).reduce((s, x) => s + x, 0);
  assert.ok(Math.abs(cap - sc.world.fleetHeadroom * w.expectedConcurrent) < 1e-6);
  assert.ok(Math.abs(w.capacity[0]! - w.capacity[1]!) < 1e-9, 'equal units, equal capacity');
  const home = Array.from(w.expectedHomeConcurrent).reduce((s, x) => s + x, 0);
  assert.ok(Math.abs(home - w.expectedConcurrent) < 1e-6, 'every client has a home');
  assert.equal(Array.from(w.resolverClamps).filter((x) => x).length, Math.round(0.1 * w.resolverClamps.length));
  assert.equal(Array.from(w.clientIgnoresTtl).filter((x) => x).length, Math.round(0.02 * w.clientIgnoresTtl.length));
  assert.ok(w.honouringShare > 0.8 && w.honouringShare < 0.95, `honouring share ${w.honouringShare}`);
  // /24s are distinct public networks.
  assert.equal(new Set(w.subnetAddr).size, w.subnetAddr.length);
  for (const a of w.subnetAddr) assert.equal(a & 0xff, 0);
  // Only North American metros have demand in the tiny scenario.
  assert.ok(w.metros.every((m) => m.continent === 'north-america'));
  // The same seed builds the same world; another seed places /24s elsewhere.
  assert.deepEqual(buildWorld(sc, 3, 1).subnetAddr, w.subnetAddr);
  assert.notDeepEqual(buildWorld(sc, 4, 1).subnetAddr, w.subnetAddr);
});

test('timeline: --hours shortens the window before the first event first, keeping 10 minutes before it', (t) => {
  const sc = tiny(t); // 1 h, event at 30 min, warm-up 5 min
  const H = 3_600_000;
  const cases: [number | undefined, number, number][] = [
    // [hours, window start − epoch, window length]
    [undefined, 0, H],
    [2 * H, 0, H],
    [0.75 * H, 0.25 * H, 0.75 * H],
    [0.5 * H, 20 * 60_000, 0.5 * H],
    [0.1 * H, 20 * 60_000, 0.1 * H],
  ];
  for (const [h, start, len] of cases) {
    const tl = timeline(sc, h);
    assert.equal(tl.windowStart - sc.epoch, start, `hours ${h}`);
    assert.equal(tl.windowEnd - tl.windowStart, len, `hours ${h}`);
    assert.equal(tl.windowStart - tl.start, sc.world.warmupMs);
  }
});

function total(rep: SimReport, policy: string) {
  return rep.results.find((r) => r.policy === policy)!;
}

test('a tiny scenario end to end: the counts add up and each policy behaves as modelled', (t) => {
  const sc = tiny(t);
  const rep = runScenario(sc, { scale: 1 });
  assert.deepEqual(
    rep.results.map((r) => r.policy),
    ['static', 'reactive', 'gridsteer'],
  );
  const arrivals = rep.results[0]!.arrivals;
  for (const r of rep.results) {
    assert.deepEqual(r.arrivals, arrivals, `${r.policy}: the same sessions arrive under every policy`);
    for (const c of [0, 1, 2] as const) {
      const done = r.started[c] + r.failed[c];
      // A session still retrying at the window's end is neither: at most a few seconds' worth.
      assert.ok(done <= r.arrivals[c] && r.arrivals[c] - done <= 0.002 * r.arrivals[c] + 5, `${r.policy} class ${c}: ${done} of ${r.arrivals[c]}`);
    }
    const startedInSeries = r.series.started.reduce((s, x) => s + x, 0);
    // The series counts starts in the window (including retried sessions that arrived in the warm-up).
    assert.ok(Math.abs(startedInSeries - (r.started[0] + r.started[1] + r.started[2])) <= 0.01 * startedInSeries, `${r.policy}: series ${startedInSeries}`);
  }
  const st = total(rep, 'static');
  const re = total(rep, 'reactive');
  const gs = total(rep, 'gridsteer');
  const sent = (r: typeof st) => r.sentToEventRegion[0]![0] + r.sentToEventRegion[0]![1] + r.sentToEventRegion[0]![2];
  // Static keeps sending the dark region's clients there: every one of those sessions fails.
  assert.ok(sent(st) > 100, `static sent ${sent(st)}`);
  assert.ok(st.failed[0] + st.failed[1] + st.failed[2] >= 0.9 * sent(st));
  assert.equal(st.addedKm.mean[0], 0, 'static always serves from the nearest region');
  assert.equal(st.goaways, 0);
  // Reactive notices within checks × interval + TTL: far fewer, but some.
  assert.ok(sent(re) > 0 && sent(re) < sent(st) / 5, `reactive sent ${sent(re)}`);
  assert.ok(re.addedKm.mean[0] > 0);
  // GridSteer, told 20 minutes ahead, drains before T.
  assert.ok(sent(gs) < sent(re), `GridSteer sent ${sent(gs)}, reactive ${sent(re)}`);
  assert.ok(gs.cut[0] + gs.cut[1] + gs.cut[2] < re.cut[0] + re.cut[1] + re.cut[2], `GridSteer cut ${gs.cut}, reactive ${re.cut}`);
  assert.ok(gs.goaways > 0, 'the drain hook sent GOAWAYs');
  assert.ok(gs.plans > 100, `plans ${gs.plans}`);
  // Static and reactive cut the same sessions: both leave the region full until T.
  assert.deepEqual(st.cut, re.cut);
  // The region's load is 0 from T to E in the series, under every policy.
  const T = sc.epoch + sc.events[0]!.atMs;
  const r = rep.world.regionIndex.get('east')!;
  const R = rep.world.regions.length;
  for (const res of rep.results) {
    for (let b = 0; b < res.series.n; b++) {
      const end = res.series.t0 + (b + 1) * res.series.bucketMs;
      if (end > T && end <= T + sc.events[0]!.durationMs) assert.equal(res.series.load[b * R + r], 0, `${res.policy} bucket ${b}`);
    }
  }
});

test('determinism: the same seed gives the same report; another seed another', (t) => {
  const sc = tiny(t);
  const a = runScenario(sc, { scale: 0.5 }).results;
  const b = runScenario(sc, { scale: 0.5 }).results;
  assert.deepEqual(a, b);
  const c = runScenario(sc, { scale: 0.5, seed: 99 }).results;
  assert.notDeepEqual(
    c.map((r) => r.arrivals),
    a.map((r) => r.arrivals),
  );
  // One policy alone gives the same result as within the full run.
  const world = buildWorld(sc, sc.seed, 0.5);
  assert.deepEqual(runPolicy(world, 'gridsteer', timeline(sc)), a[2]);
});

test('a throttle: capacity halves at T; static overloads the region for the whole event, nothing is cut', (t) => {
  const dir = tempDir(t, {
    'throttle.yaml': tinyScenario()
      .replace('effect: { kind: power-off }', 'effect: { kind: throttle, share: 0.5 }')
      .replace(/ {4}facts:\n(.*\n){3}/, '')
      .replace('notice: 20m', 'notice: 0'),
  });
  const sc = loadScenario(join(dir, 'throttle.yaml'));
  assert.equal(sc.events[0]!.facts.length, 0);
  const rep = runScenario(sc, { scale: 1, policies: ['static', 'gridsteer'] });
  const east = rep.world.regionIndex.get('east')!;
  const homeUtil = rep.world.expectedHomeConcurrent[east]! / rep.world.capacity[east]!;
  assert.ok(homeUtil > 0.5, `the test needs east loaded above half its capacity (${homeUtil})`);
  for (const r of rep.results) assert.deepEqual(r.cut, [0, 0, 0], `${r.policy}: a throttle cuts nothing`);
  const [st, gs] = rep.results as [(typeof rep.results)[0], (typeof rep.results)[0]];
  // With half its capacity left, the region's own clients load it at about 2 × homeUtil.
  assert.ok(st.peakUtil[east]! > 1.5 * homeUtil, `static peak ${st.peakUtil[east]} (home utilisation ${homeUtil})`);
  assert.ok(st.overCapacityMs[east]! > 0.9 * sc.events[0]!.durationMs, `static over capacity for ${st.overCapacityMs[east]} ms`);
  // GridSteer learns the throttle from its scrapes and caps the region: over capacity for less time.
  assert.ok(gs.overCapacityMs[east]! < 0.5 * st.overCapacityMs[east]!, `GridSteer over capacity for ${gs.overCapacityMs[east]} ms`);
  assert.ok(gs.goaways > 0, 'the drain hook followed the cap');
});
