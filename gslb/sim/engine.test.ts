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
import { judgeSpill, runPolicy, timeline, type SpillSpan } from './engine.js';
import type { SimPolicy } from './policies.js';
import { runScenario, type SimReport } from './run.js';
import { tempDir, tinyScenario } from './testing.js';
import { evaluateTargets } from './report.js';

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
    for (const c of [0, 1, 2, 3] as const) {
      const done = r.started[c] + r.failed[c];
      // A session still retrying at the window's end is neither: at most a few seconds' worth.
      assert.ok(done <= r.arrivals[c] && r.arrivals[c] - done <= 0.002 * r.arrivals[c] + 5, `${r.policy} class ${c}: ${done} of ${r.arrivals[c]}`);
    }
    const startedInSeries = r.series.started.reduce((s, x) => s + x, 0);
    // The series counts starts in the window (including retried sessions that arrived in the warm-up).
    assert.ok(Math.abs(startedInSeries - sum3of(r.started)) <= 0.01 * startedInSeries, `${r.policy}: series ${startedInSeries}`);
  }
  const st = total(rep, 'static');
  const re = total(rep, 'reactive');
  const gs = total(rep, 'gridsteer');
  const sent = (r: typeof st) => sum3of(r.sentToEventRegion[0]!);
  // Static keeps sending the dark region's clients there: every one of those sessions fails.
  assert.ok(sent(st) > 100, `static sent ${sent(st)}`);
  assert.ok(sum3of(st.failed) >= 0.9 * sent(st));
  assert.equal(st.addedKm.mean[0], 0, 'static always serves from the nearest region');
  assert.equal(st.goaways, 0);
  // Reactive notices within checks × interval + TTL: far fewer, but some.
  assert.ok(sent(re) > 0 && sent(re) < sent(st) / 5, `reactive sent ${sent(re)}`);
  assert.ok(re.addedKm.mean[0] > 0);
  // GridSteer, told 20 minutes ahead, drains before T.
  assert.ok(sent(gs) < sent(re), `GridSteer sent ${sent(gs)}, reactive ${sent(re)}`);
  assert.ok(sum3of(gs.cut) < sum3of(re.cut), `GridSteer cut ${gs.cut}, reactive ${re.cut}`);
  assert.ok(gs.goaways > 0, 'the drain hook sent GOAWAYs');
  assert.ok(gs.plans > 100, `plans ${gs.plans}`);
  // Static and reactive cut the same sessions: both leave the region full until T.
  assert.deepEqual(st.cut, re.cut);
  // The unavoidable bound and the sessions alive at T without steering are the same under every
  // policy, and are what static geo (no steering) has on the region at T: its cut started before
  // the announcement, and its whole cut.
  for (const res of rep.results) {
    assert.deepEqual(res.bound, st.bound, `${res.policy}: the same bound`);
    assert.deepEqual(res.aliveAtT, st.aliveAtT, `${res.policy}: the same sessions alive at T`);
    assert.deepEqual(res.homeArrivals, st.homeArrivals, res.policy);
    assert.deepEqual(res.ignoringClients, st.ignoringClients, res.policy);
  }
  assert.deepEqual(st.bound, st.cutBeforeAnnounce, 'static: bound = its cut started before the announcement');
  // Of the cuts started before the announcement, those of other homes' clients (spill) are apart: static places none; what is left
  // (the region's own clients) is within the bound under every policy, which counts them all, moved or not.
  assert.deepEqual(st.cutSpillBeforeAnnounce, [[0, 0, 0, 0]], 'static geo spills nothing');
  for (const res of rep.results) {
    for (const c of [0, 1, 2, 3]) {
      const own = res.cutBeforeAnnounce[0]![c]! - res.cutSpillBeforeAnnounce[0]![c]!;
      assert.ok(res.cutSpillBeforeAnnounce[0]![c]! >= 0 && own <= res.bound[0]![c]!, `${res.policy} class ${c}: own clients cut ${own}, bound ${res.bound[0]![c]}`);
    }
  }
  assert.deepEqual(st.aliveAtT[0], st.cut, 'static: alive at T = its cut');
  assert.ok(st.bound[0]![0] > 0 && st.bound[0]![0] < st.aliveAtT[0]![0], `bound ${st.bound[0]}, alive ${st.aliveAtT[0]}`);
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
  for (const r of rep.results) assert.deepEqual(r.cut, [0, 0, 0, 0], `${r.policy}: a throttle cuts nothing`);
  const [st, gs] = rep.results as [(typeof rep.results)[0], (typeof rep.results)[0]];
  // With half its capacity left, the region's own clients load it at about 2 × homeUtil.
  assert.ok(st.peakUtil[east]! > 1.5 * homeUtil, `static peak ${st.peakUtil[east]} (home utilisation ${homeUtil})`);
  assert.ok(st.overCapacityMs[east]! > 0.9 * sc.events[0]!.durationMs, `static over capacity for ${st.overCapacityMs[east]} ms`);
  // GridSteer learns the throttle from its scrapes and caps the region: over capacity for less time.
  assert.ok(gs.overCapacityMs[east]! < 0.5 * st.overCapacityMs[east]!, `GridSteer over capacity for ${gs.overCapacityMs[east]} ms`);
  assert.ok(gs.goaways > 0, 'the drain hook followed the cap');
});

/** The tiny scenario with `world:` lines added and top-level `extra`. */
function tinyWith(t: { after(fn: () => void): void }, worldLines: string, extra = '') {
  const text = tinyScenario(extra).replace('  warmup: 5m', `  warmup: 5m\n${worldLines}`);
  const dir = tempDir(t, { 'tiny.yaml': text });
  return loadScenario(join(dir, 'tiny.yaml'));
}

test('the unavoidable bound: cuts split by session start at the announcement, hand-checked with sessions that outlive the window', (t) => {
  // Every session lasts 7000–7200 s and the window is 1 h without warm-up: a session started
  // on east in [announcement, T) is alive at T, so it is cut, and cut "after"; the bound is
  // what started before (the warm start's long sessions included).
  const text = tinyScenario().replace('  warmup: 5m', '  warmup: 0\n  session: { tailShare: 1, tailMinS: 7000, tailMaxS: 7200 }');
  const dir = tempDir(t, { 'long.yaml': text });
  const s2 = loadScenario(join(dir, 'long.yaml'));
  const rep = runScenario(s2, { scale: 0.2 });
  const east = rep.world.regionIndex.get('east')!;
  const R = rep.world.regions.length;
  const e = rep.events[0]!;
  const bucketOf = (t: number) => (t - rep.timeline.windowStart) / s2.world.bucketMs;
  assert.equal(bucketOf(e.announce), 10);
  assert.equal(bucketOf(e.T), 30);
  for (const res of rep.results) {
    const starts = (from: number, to: number) => {
      let n = 0;
      for (let b = from; b < to; b++) n += res.series.started[b * R + east]!;
      return n;
    };
    const before = sum3of(res.cutBeforeAnnounce[0]!);
    const after = sum3of(res.cutAfterAnnounce[0]!);
    assert.deepEqual(
      res.cut,
      [0, 1, 2, 3].map((c) => res.cutBeforeAnnounce[0]![c]! + res.cutAfterAnnounce[0]![c]!),
      `${res.policy}: before + after = cut, per class`,
    );
    assert.equal(after, starts(10, 30), `${res.policy}: cut after the announcement = sessions started on east in [announcement, T)`);
    // Bucket 0 also holds the warm start's placements, some of which end before T.
    assert.ok(before >= starts(1, 10) && before <= starts(0, 10), `${res.policy}: bound ${before} within [${starts(1, 10)}, ${starts(0, 10)}]`);
    assert.ok(before > 0);
  }
  // Static and reactive leave east full until T: the same sessions; GridSteer steers new ones away after the announcement.
  const [st, , gs] = rep.results;
  assert.ok(sum3of(gs!.cutAfterAnnounce[0]!) < sum3of(st!.cutAfterAnnounce[0]!) / 2, 'GridSteer starts fewer sessions on east after the announcement');
});

/** The sum over every client class. */
function sum3of(x: number[]): number {
  return x.reduce((a, b) => a + b, 0);
}

test('overlapping events on one region: dark from the first T to the last E, cut once', (t) => {
  const text = tinyScenario().replace(
    'events:\n',
    'events:\n  - { id: shed-0, region: east, at: 25m, duration: 10m, effect: { kind: power-off } }\n  - { id: hot-0, region: east, at: 20m, duration: 40m, effect: { kind: throttle, share: 0.5 } }\n',
  );
  const dir = tempDir(t, { 'over.yaml': text });
  const s2 = loadScenario(join(dir, 'over.yaml'));
  const rep = runScenario(s2, { scale: 0.3, policies: ['static'] });
  const res = rep.results[0]!;
  const east = rep.world.regionIndex.get('east')!;
  const R = rep.world.regions.length;
  const cap = rep.world.capacity[east]!;
  // shed-0 [25, 35) and shed-1 [30, 45) overlap: dark over [25, 45); the throttle halves what is left until 60.
  for (let b = 0; b < res.series.n; b++) {
    const end = (b + 1) * 60_000; // relative to the window start (= the epoch)
    const want = end > 25 * 60_000 && end <= 45 * 60_000 ? 0 : end > 20 * 60_000 && end <= 60 * 60_000 ? cap / 2 : cap;
    assert.ok(Math.abs(res.series.capacity[b * R + east]! - want) < 1e-6, `bucket ${b}: capacity ${res.series.capacity[b * R + east]} want ${want}`);
    if (want === 0) assert.equal(res.series.load[b * R + east], 0, `bucket ${b}: dark`);
  }
  const evIdx = (id: string) => rep.events.findIndex((e) => e.id === id);
  assert.ok(sum3of(res.cutBeforeAnnounce[evIdx('shed-0')]!) + sum3of(res.cutAfterAnnounce[evIdx('shed-0')]!) > 0, 'shed-0 cuts');
  assert.deepEqual([...res.cutBeforeAnnounce[evIdx('shed-1')]!, ...res.cutAfterAnnounce[evIdx('shed-1')]!], [0, 0, 0, 0, 0, 0, 0, 0], 'shed-1 begins while east is already dark');
  assert.deepEqual(
    rep.events.map((e) => [e.id, e.goesDark]),
    [
      ['shed-0', true],
      ['hot-0', false],
      ['shed-1', false],
    ],
  );
  assert.deepEqual(res.bound[evIdx('shed-1')], [0, 0, 0, 0], 'no bound for an event that cuts nothing');
  assert.deepEqual(res.bound[evIdx('shed-0')], res.cutBeforeAnnounce[evIdx('shed-0')], 'static: the bound is its cut before the announcement');
});

test('cut sessions retried by their clients: counted apart from arrivals, re-resolving', (t) => {
  const base = runScenario(tiny(t), { scale: 0.3, policies: ['static', 'gridsteer'] });
  const rep = runScenario(tinyWith(t, '  cutRetry: { share: 1, delay: 2s }'), { scale: 0.3, policies: ['static', 'gridsteer'] });
  rep.results.forEach((res, i) => {
    const b = base.results[i]!;
    assert.deepEqual(res.arrivals, b.arrivals, `${res.policy}: retries are not arrivals`);
    assert.deepEqual(res.cut, b.cut, `${res.policy}: the same sessions are cut`);
    assert.deepEqual(res.cutRetry.retried, res.cut, `${res.policy}: share 1: every cut session is retried`);
    for (const c of [0, 1, 2, 3]) assert.ok(res.cutRetry.started[c]! + res.cutRetry.failed[c]! <= res.cutRetry.retried[c]!, `${res.policy} class ${c}`);
    assert.deepEqual(b.cutRetry.retried, [0, 0, 0, 0], 'share 0: none');
  });
  // Static sends the retries back to the dark region: they fail; GridSteer's answers place them.
  const [st, gs] = rep.results;
  assert.equal(sum3of(st!.cutRetry.started), 0, 'static: every retry goes to the dark region');
  assert.equal(sum3of(st!.cutRetry.sentDark), sum3of(st!.cutRetry.retried));
  assert.ok(gs!.cutRetry.started[0] > 0.9 * gs!.cutRetry.retried[0], `GridSteer: TTL-honouring retries placed ${gs!.cutRetry.started[0]} of ${gs!.cutRetry.retried[0]}`);
});

test('resolvers without ECS: one answer per resolver for all its /24s; the world is otherwise the same', (t) => {
  const sc0 = tiny(t);
  const sc1 = tinyWith(t, '  noEcsResolvers: 1');
  const w0 = buildWorld(sc0, 1, 0.3);
  const w1 = buildWorld(sc1, 1, 0.3);
  assert.deepEqual(w1.subnetAddr, w0.subnetAddr);
  // Every TTL-honouring client of the world with ECS is a no-ECS client here; the other classes are as they were.
  assert.deepEqual(
    Array.from(w1.clientClass),
    Array.from(w0.clientClass, (c) => (c === 0 ? 3 : c)),
  );
  assert.ok(w1.classShare[3] > 0.8 && w1.classShare[0] === 0 && w0.classShare[3] === 0, `${w0.classShare} / ${w1.classShare}`);
  assert.equal(Array.from(w0.resolverNoEcs).filter((x) => x).length, 0);
  assert.equal(Array.from(w1.resolverNoEcs).filter((x) => x).length, w1.resolverNoEcs.length);
  assert.equal(w1.queryMetro.length, w1.subnetMetro.length + w1.resolverNoEcs.length);
  for (let i = 0; i < w1.resolverMetro.length; i++) assert.equal(w1.queryMetro[w1.subnetMetro.length + i], w1.resolverMetro[i]);
  const half = buildWorld(tinyWith(t, '  noEcsResolvers: 0.5'), 1, 0.3);
  assert.equal(Array.from(half.resolverNoEcs).filter((x) => x).length, Math.round(0.5 * half.resolverNoEcs.length));
  const r0 = runScenario(sc0, { scale: 0.3, policies: ['static'] }).results[0]!;
  const r1 = runScenario(sc1, { scale: 0.3, policies: ['static'] }).results[0]!;
  assert.deepEqual(r1.arrivals, [0, r0.arrivals[1], r0.arrivals[2], r0.arrivals[0]], 'the same sessions, the TTL-honouring ones counted as no-ECS');
  // Fewer resolver caches than /24s: fewer cache misses reach the authoritative server.
  // Without ECS a resolver misses its cache at most once per TTL (30 s) over the 65 simulated minutes.
  const nRes = w1.resolverNoEcs.length;
  assert.ok(r1.dnsQueries <= nRes * (65 * 2 + 1), `without ECS ${r1.dnsQueries} for ${nRes} resolvers`);
  assert.ok(r1.dnsQueries < r0.dnsQueries, `without ECS ${r1.dnsQueries}, with ${r0.dnsQueries}`);
});

test('the drain hook: delivery delay, failed attempts retried, late and given-up calls counted; switched off, no GOAWAY', (t) => {
  const run = (hook: string) => runScenario(tinyWith(t, '', `policies:\n  gridsteer:\n    hook: ${hook}\n`), { scale: 0.3, policies: ['gridsteer'] }).results[0]!;
  const ok = run('{}');
  assert.ok(ok.hook.calls > 0 && ok.hook.delivered === ok.hook.calls, `every call delivered at once: ${JSON.stringify(ok.hook)}`);
  assert.equal(ok.hook.maxLagMs, 0);
  assert.equal(ok.hook.late + ok.hook.failedAttempts + ok.hook.gaveUp, 0);
  const slow = run('{ delay: 30s }');
  assert.ok(slow.hook.delivered > 0 && slow.hook.sumLagMs >= 30_000 * slow.hook.delivered, `every delivery at least 30 s late: ${JSON.stringify(slow.hook)}`);
  const flaky = run('{ failureRate: 0.5, retries: 2, retryBase: 1s }');
  assert.ok(flaky.hook.failedAttempts > 0 && flaky.hook.late > 0, JSON.stringify(flaky.hook));
  assert.ok(flaky.hook.delivered + flaky.hook.gaveUp + flaky.hook.abandoned <= flaky.hook.calls + 1, JSON.stringify(flaky.hook));
  assert.ok(flaky.hook.maxLagMs >= 1000);
  const off = run('{ enabled: false }');
  assert.equal(off.goaways, 0);
  assert.equal(off.hook.calls, 0);
  assert.ok(sum3of(off.cut) >= sum3of(ok.cut), `without the hook GridSteer cuts at least as many (${off.cut} vs ${ok.cut})`);
});

test('progressive GOAWAY: from a step with goawayBy every connection of the region gets GOAWAY by then; off, only the share-based one', (t) => {
  // The planner's drain-hook contract: GOAWAY from the instant D the weight reaches 0 until
  // goawayBy = D + max(Tmin, F) + m; a margin m of 5 min here spreads it over several buckets.
  const planner = '    planner: { drain: { marginMs: 300000 } }\n';
  const sc = tinyWith(t, '', `policies:\n  gridsteer:\n    hook: { progressiveGoaway: true }\n${planner}`);
  const scOff = tinyWith(t, '', `policies:\n  gridsteer:\n    hook: { progressiveGoaway: false }\n${planner}`);
  let D = Infinity;
  let by = NaN;
  const spy = (p: SimPolicy): SimPolicy =>
    new Proxy(p, {
      get(target, prop, recv) {
        if (prop === 'drainShare')
          return (r: number, t: number) => {
            const sh = target.drainShare(r, t);
            if (r === 0 && sh === 0 && t < D) {
              D = t;
              by = (target as unknown as { goawayBy(r: number, t: number): number | undefined }).goawayBy(r, t) ?? NaN;
            }
            return sh;
          };
        const v = Reflect.get(target, prop, recv) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  const on = runPolicy(buildWorld(sc, 1, 0.3), 'gridsteer', timeline(sc), undefined, spy);
  const off = runPolicy(buildWorld(scOff, 1, 0.3), 'gridsteer', timeline(scOff));
  assert.ok(Number.isFinite(by) && by - D >= 5 * 60_000, `the plan asks for GOAWAY from ${new Date(D).toISOString()} by ${new Date(by).toISOString()}`);
  // Buckets strictly between D's and goawayBy's: share-based GOAWAY is over (one burst at D); progressive spreads its GOAWAYs there.
  const t0 = on.series.t0;
  const bD = Math.floor((D - t0) / 60_000);
  const bBy = Math.floor((by - t0) / 60_000);
  const spread = (x: Float64Array) => Array.from(x.subarray(bD + 1, bBy)).filter((n) => n > 0).length;
  assert.equal(spread(off.series.goaways), 0, `share-based: ${Array.from(off.series.goaways.subarray(bD, bBy + 1))}`);
  assert.ok(spread(on.series.goaways) >= (bBy - bD - 1) / 2, `progressive: ${Array.from(on.series.goaways.subarray(bD, bBy + 1))}`);
  assert.ok(on.series.goaways[bD]! < off.series.goaways[bD]!, 'no burst at D');
});


test('the daily cycle: demand follows each metro\'s local hour; amplitude 0 changes nothing', (t) => {
  // The window is 18:00–19:00 UTC: about 11:00–13:00 local solar time in the tiny scenario's North American metros.
  const peak = runScenario(tinyWith(t, '  dailyCycle: { amplitude: 0.8, peakHour: 12 }'), { scale: 0.3, policies: ['static'] }).results[0]!;
  const trough = runScenario(tinyWith(t, '  dailyCycle: { amplitude: 0.8, peakHour: 0 }'), { scale: 0.3, policies: ['static'] }).results[0]!;
  const flat = runScenario(tinyWith(t, '  dailyCycle: { amplitude: 0 }'), { scale: 0.3, policies: ['static'] }).results[0]!;
  const base = runScenario(tiny(t), { scale: 0.3, policies: ['static'] }).results[0]!;
  assert.deepEqual(flat.arrivals, base.arrivals);
  const n = (x: number[]) => x[0]! + x[1]! + x[2]!;
  // Factor about 1.8 against about 0.2, the mean being 1.
  assert.ok(n(peak.arrivals) > 1.5 * n(base.arrivals) && n(trough.arrivals) < 0.4 * n(base.arrivals), `peak ${n(peak.arrivals)}, trough ${n(trough.arrivals)}, flat ${n(base.arrivals)}`);
});

test('spill: static geo never spills; reactive failover pushes the dark region\'s clients onto neighbours, over capacity by spill while the fleet has room', (t) => {
  // Headroom 1.6: with east dark the fleet still holds 1.07 × the demand; east's clients fill their neighbours.
  const rep = runScenario(tinyWith(t, '  fleetHeadroom: 1.6'), { scale: 0.3, policies: ['static', 'reactive'] });
  const [st, re] = rep.results as [(typeof rep.results)[0], (typeof rep.results)[0]];
  const R = rep.world.regions.length;
  const east = rep.world.regionIndex.get('east')!;
  assert.ok(st.series.spill.every((x) => x === 0), 'static: every client at home');
  assert.deepEqual(st.peakSpillShare, [0, 0, 0]);
  assert.deepEqual(st.spillOverMs, [0, 0, 0], 'static over capacity only by its own clients');
  assert.ok(st.peakUtil.some((u) => u > 1), 'static is over capacity somewhere (by its own clients)');
  const T = rep.events[0]!.T;
  const b = Math.floor((T + 5 * 60_000 - re.series.t0) / re.series.bucketMs);
  let spill = 0;
  for (let r = 0; r < R; r++) if (r !== east) spill += re.series.spill[b * R + r]!;
  assert.ok(spill > 0.2 * rep.world.expectedHomeConcurrent[east]!, `reactive: east's clients spill onto its neighbours during the event (${spill})`);
  assert.ok(re.spillOverMs.some((ms) => ms > 0), 'reactive: over capacity by spill');
  for (const res of rep.results) {
    for (let r = 0; r < R; r++) {
      assert.ok(res.spillOverMs[r]! <= res.overCapacityMs[r]!, `${res.policy} ${r}: over by spill is over`);
      assert.ok(res.spillOverPeak[r]! <= Math.max(0, res.peakUtil[r]! - 1) + 1e-9, `${res.policy} ${r}: the excess by spill is part of the excess`);
    }
  }
});

test('unplaced demand: the plan\'s field sampled each second; its series adds up to the queries counted', (t) => {
  // Headroom 1.3: with east dark the rest holds 0.87 × the demand, so the plan cannot place all of east's.
  const rep = runScenario(tinyWith(t, '  fleetHeadroom: 1.3'), { scale: 0.3, policies: ['static', 'gridsteer'] });
  const [st, gs] = rep.results as [(typeof rep.results)[0], (typeof rep.results)[0]];
  assert.deepEqual(st.unplaced, { peakQps: 0, peakAt: 0, seconds: 0, queries: 0, flips: 0, changes: 0 }, 'static has no plan');
  assert.ok(st.series.unplaced.every((x) => x === 0));
  const u = gs.unplaced;
  assert.ok(u.seconds > 0 && u.queries > 0 && u.peakQps > 0, JSON.stringify(u));
  assert.ok(u.flips >= 1 && u.changes >= u.flips, JSON.stringify(u));
  const fromSeries = gs.series.unplaced.reduce((a, x) => a + x, 0) * (gs.series.bucketMs / 1000);
  assert.ok(Math.abs(fromSeries - u.queries) < 1e-6 * Math.max(1, u.queries), `series ${fromSeries}, counted ${u.queries}`);
  assert.ok(u.peakAt >= rep.timeline.windowStart && u.peakAt < rep.timeline.windowEnd);
});

test('judgeSpill: spill over capacity is judged every second, less the load the reachable fleet could not hold', () => {
  // [what, load, own clients' load, capacity, reachable, spill excess per region, overflow, judged]
  type Case = [string, number[], number[], number[], number[], number[], number, number];
  const cases: Case[] = [
    ['a over by 10 of spill, b with room: all of it judged', [110, 50], [90, 50], [100, 100], [1, 1], [10, 0], 0, 10],
    ['a over by its own clients only: nothing judged', [110, 50], [110, 50], [100, 100], [1, 1], [0, 0], 0, 0],
    ['the excess laid to spill first (spill 5 of an excess of 10)', [110, 50], [105, 50], [100, 100], [1, 1], [5, 0], 0, 5],
    ['the fleet over in all by 15: a\'s 10 of spill is what it could not hold, none judged', [110, 105], [90, 105], [100, 100], [1, 1], [10, 0], 15, 0],
    ['a over by 30 of spill, b with 10 to spare: 10 judged (b\'s room), 20 unplaced', [130, 90], [90, 90], [100, 100], [1, 1], [30, 0], 20, 10],
    ['a region announced to lose power is not room, and spill over its capacity is judged whatever the overflow', [110, 50, 40], [100, 50, 30], [100, 40, 30], [1, 1, 0], [10, 0, 10], 20, 10],
    ['dark (capacity 0, load 0): nothing', [0, 50], [0, 50], [0, 100], [1, 1], [0, 0], 0, 0],
  ];
  for (const [what, load, home, cap, reach, ex, overflow, judged] of cases) {
    const spillEx = new Float64Array(load.length);
    assert.deepEqual(judgeSpill(load, home, cap, reach, spillEx), { overflow, judged }, what);
    assert.deepEqual(Array.from(spillEx), ex, what);
  }
  // Spill a partial cap found on the region (started before it could be acted on) is excused: of a's 20 of spill, 15 leave 5 of its excess of 10, 20 leave none.
  const spillEx = new Float64Array(2);
  assert.deepEqual(judgeSpill([110, 50], [90, 50], [100, 100], [1, 1], spillEx, [15, 0]), { overflow: 0, judged: 5 });
  assert.deepEqual(judgeSpill([110, 50], [90, 50], [100, 100], [1, 1], spillEx, [20, 0]), { overflow: 0, judged: 0 });
});

test('spill judged over the whole window, per span: what reactive failover leaves on full neighbours after the event is judged; the spans cover the window once', (t) => {
  // Headroom 1.3: from east's announcement to its end the rest holds 0.87 × the demand, so the
  // fleet overflows (unplaced, not judged); once east is back, spill still on full neighbours
  // while east has room is judged (before issue 30 it was excused as placed while there was none).
  const rep = runScenario(tinyWith(t, '  fleetHeadroom: 1.3'), { scale: 0.3, policies: ['reactive', 'gridsteer'] });
  const R = rep.world.regions.length;
  const e = rep.events[0]!;
  for (const res of rep.results) {
    assert.equal(res.spillSpans.length, 2);
    const [ev, rest] = res.spillSpans as [SpillSpan, SpillSpan];
    assert.equal(ev.spanMs + rest.spanMs, rep.timeline.windowEnd - rep.timeline.windowStart, `${res.policy}: one event: its span and the rest make the window`);
    assert.equal(ev.spanMs, Math.min(rep.timeline.windowEnd, e.E + 15 * 60_000) - e.announce);
    for (const sp of res.spillSpans) {
      assert.ok(sp.judgedMs <= sp.spanMs && sp.overflowMs <= sp.spanMs, res.policy);
      for (let r = 0; r < R; r++) assert.ok(sp.regionMs[r]! <= sp.judgedMs, `${res.policy} ${r}`);
    }
    for (let r = 0; r < R; r++) {
      assert.ok(res.spillOverMs[r]! <= res.overCapacityMs[r]!, `${res.policy} ${r}: over by spill is over`);
      assert.ok(res.spillOverPeak[r]! <= Math.max(0, res.peakUtil[r]! - 1) + 1e-9, `${res.policy} ${r}: part of the excess`);
    }
  }
  const re = rep.results[0]!;
  assert.ok(re.spillSpans[0]!.overflowMs > 0, `reactive: the fleet overflows during the event (${JSON.stringify(re.spillSpans[0])})`);
  assert.ok(re.spillSpans[0]!.judgedMs > 0, `reactive: its spill stays on full neighbours after the event while east has room (${JSON.stringify(re.spillSpans[0])})`);
});

test('room per instant: the reachable fleet has no room only while both overlapping events are in force, not for all of each', (t) => {
  // Three equal regions at headroom 2.5: one region out leaves 1.67 × the demand (room), two
  // leave 0.83 × (none). east is dark 30–45 min (announced at 10 min); west from 40 to 50 min
  // with no notice. Room is lost from 40 to 45 min only; the union of the overlapping events
  // (the rule before issue 30) had no room for either event at all.
  const text = tinyScenario().replace('events:\n', 'events:\n  - { id: west-0, region: west, at: 40m, duration: 10m, effect: { kind: power-off } }\n');
  const dir = tempDir(t, { 'two.yaml': text });
  const rep = runScenario(loadScenario(join(dir, 'two.yaml')), { scale: 0.2, policies: ['static', 'gridsteer'] });
  const idx = (id: string) => rep.events.findIndex((e) => e.id === id);
  for (const res of rep.results) {
    assert.equal(res.eventSpanMs[idx('shed-1')], 15 * 60_000, res.policy);
    assert.equal(res.eventRoomMs[idx('shed-1')], 10 * 60_000, `${res.policy}: east's event has room but from 40 to 45 min`);
    assert.equal(res.eventSpanMs[idx('west-0')], 10 * 60_000, res.policy);
    assert.equal(res.eventRoomMs[idx('west-0')], 5 * 60_000, `${res.policy}: west's event has room from 45 min`);
    for (const e of [0, 1]) for (const c of [0, 1, 2, 3]) assert.ok(res.sentWithRoom[e]![c]! <= res.sentToEventRegion[e]![c]!, `${res.policy}: event ${e} class ${c}`);
  }
  // Static keeps sending east's clients to east: those sent from 40 to 45 min were sent while
  // the fleet had no room, the rest while it had room.
  const st = rep.results[0]!;
  const e = idx('shed-1');
  assert.ok(st.sentWithRoom[e]![0]! > 0 && st.sentWithRoom[e]![0]! < st.sentToEventRegion[e]![0]!, `static: ${st.sentWithRoom[e]} of ${st.sentToEventRegion[e]} sent with room`);
});

test('failures on GridSteer\'s own refusal before T are counted per event and class, apart from those on the dark region', (t) => {
  // Every resolver clamps TTLs to 300 s: a client whose connection the drain ends resolves
  // again, gets the cached answer naming east, and east's gateway, refusing new streams before
  // T, refuses it five times: the session fails before the power goes.
  const rep = runScenario(tinyWith(t, '  clampingResolvers: 1'), { scale: 0.3, policies: ['static', 'gridsteer'] });
  const [st, gs] = rep.results as [(typeof rep.results)[0], (typeof rep.results)[0]];
  assert.deepEqual(st.failedRefusedBeforeT[0], [0, 0, 0, 0], 'static has no gateway refusing');
  assert.deepEqual(st.failedDark[0], st.failed, 'static: every failure is on the dark region');
  assert.ok(gs.failedRefusedBeforeT[0]![1] > 0, `GridSteer: clamped-resolver sessions failed on its refusal (${gs.failedRefusedBeforeT[0]})`);
  for (let c = 0; c < 4; c++) assert.ok(gs.failedRefusedBeforeT[0]![c]! + gs.failedDark[0]![c]! <= gs.failed[c]!, `class ${c}: each failure counted once`);
  const a = evaluateTargets(rep).find((x) => x.id === 'a' && x.class === 'clamped-resolver')!;
  assert.equal(a.status, 'not met', JSON.stringify(a));
  assert.equal(a.measured, gs.sentWithRoom[0]![1]! + gs.failedRefusedBeforeT[0]![1]!);
});

test('a claim with no physical effect: the region serves at full capacity throughout, GridSteer steers away on the facts alone, only (d) is judged', (t) => {
  const dir = tempDir(t, { 'claim.yaml': tinyScenario().replace('effect: { kind: power-off }', 'effect: { kind: none }') });
  const claim = runScenario(loadScenario(join(dir, 'claim.yaml')), { scale: 0.3 });
  const east = claim.world.regionIndex.get('east')!;
  const R = claim.world.regions.length;
  const [st, re, gs] = claim.results as [(typeof claim.results)[0], (typeof claim.results)[0], (typeof claim.results)[0]];
  for (const res of claim.results) {
    assert.deepEqual(res.cut, [0, 0, 0, 0], `${res.policy}: nothing is cut`);
    assert.deepEqual(res.failed, [0, 0, 0, 0], `${res.policy}: nothing fails`);
    for (let b = 0; b < res.series.n; b++) assert.ok(Math.abs(res.series.capacity[b * R + east]! - claim.world.capacity[east]!) < 1e-9, `${res.policy} bucket ${b}: full capacity`);
  }
  // Static and reactive (by load) do not know of it; GridSteer, told, takes east's clients elsewhere.
  assert.deepEqual(re.startedOnEventRegion, st.startedOnEventRegion, 'reactive sees nothing wrong');
  assert.ok(gs.startedOnEventRegion[0]![0]! < 0.5 * st.startedOnEventRegion[0]![0]!, `GridSteer started ${gs.startedOnEventRegion[0]} on east, static ${st.startedOnEventRegion[0]}`);
  assert.ok(gs.addedKm.mean[0]! > 0);
  assert.deepEqual(
    evaluateTargets(claim).map((x) => `${x.id} ${x.event}`),
    ['d shed-1', 'd null'],
  );
});

test('resolvers without ECS far from their clients: some sit in another metro, and GridSteer\'s and static geo\'s answers follow the resolver', (t) => {
  const near = buildWorld(tinyWith(t, '  noEcsResolvers: 1'), 1, 0.3);
  const far = buildWorld(tinyWith(t, '  noEcsResolvers: 1\n  noEcsDistant: 1'), 1, 0.3);
  const none = buildWorld(tinyWith(t, '  noEcsResolvers: 1\n  noEcsDistant: 0'), 1, 0.3);
  assert.deepEqual(none.resolverMetro, near.resolverMetro, 'noEcsDistant 0: the world it was');
  assert.deepEqual(far.subnetAddr, near.subnetAddr);
  assert.deepEqual(far.clientClass, near.clientClass);
  const S = far.subnetMetro.length;
  let moved = 0;
  for (let s = 0; s < S; s++) if (far.resolverMetro[far.subnetResolver[s]!] !== far.subnetMetro[s]) moved++;
  assert.ok(moved > 0.3 * S, `${moved} of ${S} /24s behind a resolver in another metro`);
  for (let i = 0; i < far.resolverMetro.length; i++) assert.equal(far.queryMetro[S + i], far.resolverMetro[i], 'a query without ECS is placed at its resolver');
  assert.ok(Array.from(near.subnetMetro).every((m, s) => near.resolverMetro[near.subnetResolver[s]!] === m), 'by default every resolver sits in its clients\' metro');
});
