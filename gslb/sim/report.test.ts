/**
 * The report: the targets by case table (met, not met, n/a), and the Markdown and SVG of a
 * tiny run carrying what they promise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CapCheck, EventRt, PolicyResult, SpillSpan } from './engine.js';
import type { PolicyName } from './policies.js';
import { contractProblems, evaluateTargets, renderMarkdown, reportJson, reportJsonText, type Target } from './report.js';
import { escapeXml, renderSvg } from './chart.js';
import { runScenario, type SimReport } from './run.js';
import { loadScenario } from './scenario.js';
import { tempDir, tinyScenario } from './testing.js';
import type { World } from './world.js';

type R4 = [number, number, number, number];
interface Opts {
  sent?: R4;
  /** Of `sent`, those sent while the fleet had room (default: all). */
  sentRoom?: R4;
  /** Failed on the region's own refusal before T. */
  refused?: R4;
  /** ms of the event with room (default: all 60 minutes). */
  roomMs?: number;
  started?: R4;
  cutBefore?: R4;
  cutAfter?: R4;
  /** Of cutBefore, sessions of other homes' clients (spill placed before the announcement). */
  cutSpillBefore?: R4;
  /** The unavoidable bound (default: cutBefore) and the sessions alive at T without steering (default 1,000 / 100 / 10 / 50). */
  bound?: R4;
  alive?: R4;
  homeArrivals?: R4;
  peak?: number[];
  /** (d): seconds over by spill while the fleet had room elsewhere, in the event's span and outside it; and the fleet's overflow in the event's span. */
  judgedMs?: number;
  outsideJudgedMs?: number;
  overflowMs?: number;
  cap?: CapCheck | null;
}
/** A span of target (d): `judgedMs` over by spill at b (20 sessions, 20 % of its capacity) while the fleet had room elsewhere, `overflowMs` with 30 sessions it could not hold. */
function span(judgedMs: number, overflowMs: number, spanMs: number): SpillSpan {
  return { spanMs, judgedMs, judgedPeak: judgedMs ? 20 : 0, judgedPeakShare: judgedMs ? 0.1 : 0, regionMs: [0, judgedMs], regionPeak: [0, judgedMs ? 0.2 : 0], overflowMs, overflowPeak: overflowMs ? 30 : 0, overflowPeakShare: overflowMs ? 0.15 : 0, overflowSessionS: (30 * overflowMs) / 1000 };
}
function result(policy: PolicyName, o: Opts = {}): PolicyResult {
  const z = (): R4 => [0, 0, 0, 0];
  const cb = o.cutBefore ?? z();
  const ca = o.cutAfter ?? z();
  return {
    policy,
    arrivals: [1000, 100, 20, 50],
    started: [1000, 100, 20, 50],
    failed: z(),
    startedOverCapacity: z(),
    cut: cb.map((x, i) => x + ca[i]!) as R4,
    cutBeforeAnnounce: [cb],
    cutAfterAnnounce: [ca],
    cutSpillBeforeAnnounce: [o.cutSpillBefore ?? z()],
    bound: [o.bound ?? cb],
    aliveAtT: [o.alive ?? [1000, 100, 10, 50]],
    homeArrivals: [o.homeArrivals ?? [5000, 500, 100, 250]],
    ignoringClients: [20],
    refusedAttempts: z(),
    sentToEventRegion: [o.sent ?? z()],
    sentWithRoom: [o.sentRoom ?? o.sent ?? z()],
    failedDark: [z()],
    failedRefusedBeforeT: [o.refused ?? z()],
    eventSpanMs: [60 * 60_000],
    eventRoomMs: [o.roomMs ?? 60 * 60_000],
    startedOnEventRegion: [o.started ?? z()],
    addedKm: { count: z(), sum: z(), mean: z(), p95: z() },
    peakUtil: o.peak ?? [0.5, 0.5],
    peakAt: [0, 0],
    overCapacityMs: (o.peak ?? [0.5, 0.5]).map((u) => (u > 1 ? 60_000 : 0)),
    peakSpillShare: [0, 0.5],
    spillOverMs: [0, (o.judgedMs ?? 0) + (o.outsideJudgedMs ?? 0)],
    spillOverPeak: [0, (o.judgedMs ?? 0) + (o.outsideJudgedMs ?? 0) > 0 ? 0.2 : 0],
    spillSpans: [span(o.judgedMs ?? 0, o.overflowMs ?? 0, 90 * 60_000), span(o.outsideJudgedMs ?? 0, 0, 30 * 60_000)],
    capChecks: [o.cap ?? null],
    cutRetry: { retried: z(), started: z(), failed: z(), sentDark: z() },
    hook: { calls: 0, delivered: 0, late: 0, failedAttempts: 0, gaveUp: 0, abandoned: 0, maxLagMs: 0, sumLagMs: 0 },
    unplaced: { peakQps: 0, peakAt: 0, seconds: 0, queries: 0, flips: 0, changes: 0 },
    dnsQueries: 0,
    goaways: 0,
    plans: 0,
    series: { t0: 0, bucketMs: 60_000, n: 0, started: new Float64Array(0), refused: new Float64Array(0), failed: new Float64Array(0), load: new Float64Array(0), capacity: new Float64Array(0), spill: new Float64Array(0), unplaced: new Float64Array(0), goaways: new Float64Array(0) },
  };
}

const world = { regions: [{ id: 'a' }, { id: 'b' }], capacity: Float64Array.from([100, 100]), expectedConcurrent: 80 } as unknown as World;
const MIN = 60_000;
const T0 = 10 * 60 * MIN;
const ev = (kind: 'power-off' | 'throttle', noticeMin: number, share = 1, goesDark = kind === 'power-off'): EventRt => ({
  idx: 0,
  id: 'e1',
  region: 0,
  kind,
  share,
  announce: T0 - noticeMin * MIN,
  learn: T0 - noticeMin * MIN,
  T: T0,
  E: T0 + 60 * MIN,
  goesDark,
  servedFrom: -Infinity,
  distFrom: 0,
  distTo: 1,
});
const LEAD = 10 * MIN;
/** A partial cap learnt at `learnMin` before T, judged from max(T, learn + 56 s): over its level with new sessions on it for `overMs`. */
const cc = (overMs: number, spanMs = 60 * MIN - 56_000, learnMin = 0): CapCheck => {
  const free = T0 - learnMin * MIN + 56_000;
  return { free, from: Math.max(T0, free), spanMs, capacity: 50, overMs, peakExcess: overMs ? 0.04 : 0, overAnyMs: overMs + 20_000, loadAtFrom: 70, newLoadAtFrom: 40, startsAfter: 1000 };
};
const SHORT: Record<string, string> = { 'TTL-honouring': 'H', 'clamped-resolver': 'C', 'TTL-ignoring': 'I', 'no-ECS': 'N', all: '' };
/** `a H met`: target, class (H, C, I, N; none for load) and status. */
const line = (x: Target) => `${x.id}${SHORT[x.class] ? ` ${SHORT[x.class]}` : ''} ${x.status}`;

test('targets (a)–(c) per client class, (d), (e): met, not met and n/a by their conditions, each with its figures', () => {
  // The bound is 100 (started before the announcement); 1,000 were alive there at T: (b)'s limit is 110 + 1 = 111.
  // Clamped-resolver: bound 10, 100 alive: 11.1. TTL-ignoring: bound 5, 10 alive: 5.51 (20 clients). No-ECS: bound 20, 50 alive: 22.05.
  // (c) at most reactive − 0.9 × (reactive − bound): TTL-honouring 140 with reactive 500, clamped-resolver 19, TTL-ignoring 5.5, no-ECS 23.
  const st = result('static', { cutBefore: [100, 10, 5, 20], cutAfter: [900, 90, 5, 30] });
  const re = (after: number) => result('reactive', { cutBefore: [100, 10, 5, 20], cutAfter: [after, 90, 5, 30] });
  const gs = (o: Opts) => result('gridsteer', { cutBefore: [100, 10, 5, 20], cutAfter: [5, 1, 0, 2], ...o });
  const allMet = ['a H met', 'a C met', 'a I met', 'a N met', 'b H met', 'b C met', 'b I met', 'b N met', 'c H met', 'c C met', 'c I met', 'c N met', 'd met', 'd met'];
  /** The lines of allMet with `changes` (same target and class) in their place. */
  const key = (l: string) => l.replace(/ (met|not met|n\/a)$/, '');
  const but = (...changes: string[]) => allMet.map((l) => changes.find((c) => key(c) === key(l)) ?? l);
  type Case = [string, EventRt, PolicyResult[], string[]];
  const cases: Case[] = [
    ['all met (60 min notice)', ev('power-off', 60), [st, re(400), gs({ sent: [0, 0, 2, 0] })], allMet],
    ['one TTL-honouring session sent to the dark region is too many', ev('power-off', 60), [st, re(400), gs({ sent: [1, 0, 0, 0] })], but('a H not met')],
    ['so is one no-ECS or clamped-resolver session', ev('power-off', 60), [st, re(400), gs({ sent: [0, 1, 0, 1] })], but('a C not met', 'a N not met')],
    ['TTL-ignoring: up to one per client of the region (20)', ev('power-off', 60), [st, re(400), gs({ sent: [0, 0, 20, 0] })], allMet],
    ['… one more is not', ev('power-off', 60), [st, re(400), gs({ sent: [0, 0, 21, 0] })], but('a I not met')],
    ['failed on GridSteer\'s own refusal before T counts in (a), per class', ev('power-off', 60), [st, re(400), gs({ refused: [0, 1, 0, 0] })], but('a C not met')],
    ['cuts at exactly 1.10 × bound + 0.1 % are met', ev('power-off', 60), [st, re(400), gs({ cutAfter: [11, 1, 0, 2] })], allMet],
    ['one more is not', ev('power-off', 60), [st, re(400), gs({ cutAfter: [12, 1, 0, 2] })], but('b H not met')],
    ['per class: clamped-resolver 11.1, no-ECS 22.05', ev('power-off', 60), [st, re(400), gs({ cutAfter: [5, 2, 0, 3] })], but('b C not met', 'b N not met')],
    ['every class\'s (b) and (c) line fails on its own figures: TTL-ignoring 6 of 5.5 and 5.5, clamped-resolver 20 of 19, no-ECS 24 of 23', ev('power-off', 60), [st, re(400), gs({ cutAfter: [5, 10, 1, 4] })], but('b C not met', 'b I not met', 'b N not met', 'c C not met', 'c I not met', 'c N not met')],
    ['avoided exactly 0.9 × (reactive − bound) is met', ev('power-off', 60), [st, re(400), gs({ cutAfter: [40, 1, 0, 2] })], but('b H not met')],
    ['one cut more is not', ev('power-off', 60), [st, re(400), gs({ cutAfter: [41, 1, 0, 2] })], but('b H not met', 'c H not met')],
    ['less notice than the drain lead: (a), (b), (c) n/a', ev('power-off', 5), [st, re(400), gs({ sent: [7, 0, 0, 0], cutAfter: [300, 0, 0, 0] })], but('a H n/a', 'a C n/a', 'a I n/a', 'a N n/a', 'b H n/a', 'b C n/a', 'b I n/a', 'b N n/a', 'c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['30 minutes\' notice: (c) n/a', ev('power-off', 30), [st, re(400), gs({})], but('c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['reactive not run: (c) n/a', ev('power-off', 60), [st, gs({})], but('c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['reactive cut no more than the bound: (c) n/a', ev('power-off', 60), [st, result('reactive', { cutBefore: [100, 10, 5, 20] }), gs({})], but('c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['without static, (b)\'s allowance is the same (alive at T without steering, whichever policies ran)', ev('power-off', 60), [re(400), gs({ cutAfter: [11, 1, 0, 2] })], allMet],
    ['GridSteer\'s own placement before the announcement does not raise its bound', ev('power-off', 60), [st, re(400), gs({ cutBefore: [150, 10, 5, 20], bound: [100, 10, 5, 20] })], but('b H not met', 'c H not met')],
    ['the region already dark at T (another event in force): (b), (c) n/a, 0 of 0', ev('power-off', 60, 1, false), [st, re(400), gs({ cutBefore: [0, 0, 0, 0], cutAfter: [0, 0, 0, 0], bound: [0, 0, 0, 0], alive: [0, 0, 0, 0] })], but('b H n/a', 'b C n/a', 'b I n/a', 'b N n/a', 'c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['nothing alive on the region at T and nothing cut: (b) n/a, 0 of 0', ev('power-off', 60), [st, result('reactive'), gs({ cutBefore: [0, 0, 0, 0], cutAfter: [0, 0, 0, 0], bound: [0, 0, 0, 0], alive: [0, 0, 0, 0] })], but('b H n/a', 'b C n/a', 'b I n/a', 'b N n/a', 'c H n/a', 'c C n/a', 'c I n/a', 'c N n/a')],
    ['no session of the region\'s clients while dark and none sent: (a) n/a, 0 of 0', ev('power-off', 60), [st, re(400), gs({ homeArrivals: [0, 0, 0, 0] })], but('a H n/a', 'a C n/a', 'a I n/a', 'a N n/a')],
    ['the fleet had no room at any instant of the event: (a) n/a', ev('power-off', 60), [st, re(400), gs({ sent: [9, 0, 0, 0], sentRoom: [0, 0, 0, 0], roomMs: 0 })], but('a H n/a', 'a C n/a', 'a I n/a', 'a N n/a')],
    ['room for part of the event: sessions sent while it had none are excused', ev('power-off', 60), [st, re(400), gs({ sent: [9, 0, 0, 0], sentRoom: [0, 0, 0, 0], roomMs: 20 * MIN })], allMet],
    ['… those sent while it had room are not', ev('power-off', 60), [st, re(400), gs({ sent: [9, 0, 0, 0], sentRoom: [1, 0, 0, 0], roomMs: 20 * MIN })], but('a H not met')],
    ['a region over capacity by spill while the fleet had room elsewhere, in the event\'s span', ev('power-off', 60), [st, re(400), gs({ judgedMs: 1000, peak: [0, 1.2] })], [...allMet.slice(0, -2), 'd not met', 'd met']],
    ['… outside every event\'s span', ev('power-off', 60), [st, re(400), gs({ outsideJudgedMs: 30_000, peak: [0, 1.2] })], [...allMet.slice(0, -2), 'd met', 'd not met']],
    ['the fleet\'s overflow alone (demand it could not hold) is reported as unplaced, not judged', ev('power-off', 60), [st, re(400), gs({ overflowMs: 600_000, peak: [0, 1.2] })], allMet],
    ['a throttle without notice: its level held from T + 56 s (over only with sessions started before)', ev('throttle', 0, 0.5), [st, gs({ cap: cc(0) })], ['e met', 'd met', 'd met']],
    ['… one second over it with sessions started after', ev('throttle', 0, 0.5), [st, gs({ cap: cc(1000) })], ['e not met', 'd met', 'd met']],
    ['an announced cap (demand response, an import limit): judged from T', ev('throttle', 20, 0.5), [st, gs({ cap: cc(5000, 60 * MIN, 20) })], ['e not met', 'd met', 'd met']],
    ['a cap that ends before the policy could act: (e) n/a, 0 of 0', ev('throttle', 0, 0.5), [st, gs({ cap: cc(0, 0) })], ['e n/a', 'd met', 'd met']],
  ];
  for (const [what, e, results, want] of cases) {
    const got = evaluateTargets({ world, events: [e], results }, { leadMs: LEAD });
    assert.deepEqual(got.map(line), want, `${what}: ${JSON.stringify(got, null, 1)}`);
    for (const x of got) {
      assert.ok(!/NaN|undefined|Infinity/.test(x.why + x.what), `${what}: ${x.why}`);
      assert.equal(x.event, x === got[got.length - 1] ? null : 'e1', `${what}: the last line is (d) outside every event's span`);
      // The status follows the figures wherever the target applies.
      if (x.status !== 'n/a') assert.equal(x.status === 'met', x.measured <= x.bound, `${what}: ${line(x)} ${x.measured} of ${x.bound}`);
    }
  }
  const got = evaluateTargets({ world, events: [ev('power-off', 60)], results: [st, re(400), gs({})] }, { leadMs: LEAD });
  const pick = (id: string, cls: string) => got.find((x) => x.id === id && x.class === cls)!;
  assert.match(pick('a', 'TTL-honouring').why, /^0 sent while dark with room, 0 failed on a's refusal before T; the reachable fleet had room throughout/);
  assert.match(pick('b', 'TTL-honouring').why, /105 cut \(100 started before the announcement, 5 after\) against 111 = 1\.10 × 100 \(the unavoidable bound, the same for every policy\) \+ 0\.1 % × 1,000 alive there at T without steering/);
  assert.deepEqual([pick('b', 'TTL-honouring').measured, pick('b', 'TTL-honouring').bound], [105, 111]);
  // Spill placed on the region before anyone could know (a practice drill's drain, docs/simulation.md "10. Practice runs aborted and skipped by a shed (issue 30, item 6)") is named in (b)'s figures and still counts against the one bound.
  const drill = evaluateTargets({ world, events: [ev('power-off', 60)], results: [st, re(400), gs({ cutBefore: [150, 10, 5, 20], cutSpillBefore: [50, 0, 0, 0], bound: [100, 10, 5, 20] })] }, { leadMs: LEAD });
  const drillB = drill.find((x) => x.id === 'b' && x.class === 'TTL-honouring')!;
  assert.equal(drillB.status, 'not met');
  assert.match(drillB.why, /155 cut \(150 started before the announcement — 50 of them other homes' clients placed there as spill, 5 after\) against 111/);
  assert.match(pick('c', 'TTL-honouring').why, /reactive 500, GridSteer 105, bound 100: avoided 395 of 400/);
  assert.deepEqual([pick('c', 'TTL-honouring').measured, pick('c', 'TTL-honouring').bound], [105, 140], 'at most reactive − 0.9 × (reactive − bound) = 500 − 360');
  const e = evaluateTargets({ world, events: [ev('throttle', 20, 0.5)], results: [gs({ cap: cc(5000, 60 * MIN, 20) })] }, { leadMs: LEAD })[0]!;
  assert.deepEqual([e.id, e.event, e.class, e.status, e.measured, e.bound], ['e', 'e1', 'all', 'not met', 5, 0]);
  assert.match(e.what, /^\(e\) a's capped level \(50 % of its capacity: 50 sessions\) held on its load from T to the cap's end$/);
  assert.match(e.why, /^sessions started there from T − 19m4s on \(56s after anyone could learn of the cap, at T − 20m\) are the policy's; over its level with such sessions on it for 5s of 1h, by up to 4\.0 % of its capacity then; reported, not judged: over capacity at all for 25s, its load at T 70 \(30 of it sessions started before T − 19m4s\)/);
  const d = evaluateTargets({ world, events: [ev('power-off', 60)], results: [st, re(400), gs({ judgedMs: 5000, overflowMs: 600_000 })] }, { leadMs: LEAD })[12]!;
  assert.deepEqual([d.id, d.event, d.status, d.measured, d.bound], ['d', 'e1', 'not met', 5, 0]);
  assert.match(d.why, /for 5s of 1h30m, up to 20 sessions \(10\.0 % of the reachable capacity\): b 5s, up to 20\.0 % of its capacity; unplaced \(not judged: .*\) for 10m, up to 30 sessions \(15\.0 % of its capacity\), 5 session-hours/);
  assert.deepEqual(evaluateTargets({ world, events: [ev('power-off', 60)], results: [result('static')] }, { leadMs: LEAD }), [], 'no GridSteer, no targets');
});

let cached: SimReport | undefined;
function tinyRun(t: { after(fn: () => void): void }): SimReport {
  if (cached) return cached;
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario() });
  cached = runScenario(loadScenario(join(dir, 'tiny.yaml')), { scale: 0.3 });
  return cached;
}

test('the Markdown report has the events, the world, both traffic classes, peaks, targets and the chart', (t) => {
  const rep = tinyRun(t);
  const md = renderMarkdown(rep, { command: 'gridsteer simulate tiny.yaml', chart: 'tiny.svg' });
  for (const want of [
    '# tiny test fleet',
    'Made with `gridsteer simulate tiny.yaml`',
    '| shed-1 | east | no power: stops serving | T − 20m',
    '### TTL-honouring clients',
    '### clamped-resolver clients',
    '### TTL-ignoring clients',
    '| sent to east while shed-1 has it dark |',
    '… the **unavoidable bound** (the same for every policy)',
    '### Unplaced demand',
    'Over capacity **by spill**',
    '(a) TTL-honouring sessions sent to east',
    '### Peak load ÷ capacity per region',
    '## Targets (GridSteer)',
    '![Share of sessions started per region, per minute, one panel per policy](tiny.svg)',
  ]) {
    assert.ok(md.includes(want), `missing ${want}`);
  }
  assert.ok(!/NaN|undefined|Infinity/.test(md), 'no NaN, undefined or Infinity in the report');
  // The JSON twin: the same figures, plain arrays, round-trips.
  const text = reportJsonText(rep);
  assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(reportJson(rep))), 'the text is the same JSON, lists of numbers on one line');
  assert.match(text, /"load": \[[\d.,]+\]/);
  const js = JSON.parse(text) as { results: { policy: string; cut: number[]; series: { load: number[] } }[]; targets: { id: string }[] };
  assert.deepEqual(
    js.results.map((r) => [r.policy, r.cut]),
    rep.results.map((r) => [r.policy, r.cut]),
  );
  assert.equal(js.results[0]!.series.load.length, rep.results[0]!.series.n * rep.world.regions.length);
  assert.deepEqual(
    js.targets.map((x) => x.id),
    evaluateTargets(rep).map((x) => x.id),
  );
  // Every row of the per-class tables has one cell per policy.
  for (const line of md.split('\n').filter((l) => l.startsWith('| sent to east'))) assert.equal(line.split('|').length, 2 + 1 + 3, line);
});

test('the report contract: the JSON twin of a run keeps it, and each way of breaking it is found', (t) => {
  const rep = tinyRun(t);
  const json = JSON.parse(reportJsonText(rep)) as { targets: Record<string, unknown>[]; events: { id: string; counts: Record<string, unknown>; shared: unknown }[]; classes: string[] };
  assert.deepEqual(contractProblems(json), []);
  // 1 power-off event: (a), (b), (c) for each of 4 classes, its (d), and (d) outside its span.
  assert.equal(json.targets.length, 3 * 4 + 2);
  assert.deepEqual(Object.keys(json.events[0]!.counts), ['static', 'reactive', 'gridsteer']);
  const shared = json.events[0]!.shared as { byClass: Record<string, { bound: number }> };
  assert.equal(shared.byClass['TTL-honouring']!.bound, rep.results[0]!.bound[0]![0]);
  const broken: [string, (j: typeof json) => void, RegExp][] = [
    ['a field missing', (j) => delete j.targets[0]!.why, /targets\/0/],
    ['an unknown status', (j) => (j.targets[0]!.status = 'ok'), /targets\/0\/status/],
    ['met although measured > bound', (j) => Object.assign(j.targets[0]!, { status: 'met', measured: 3, bound: 2 }), /met with 3 against 2/],
    ['not met although measured ≤ bound', (j) => Object.assign(j.targets[0]!, { status: 'not met', measured: 2, bound: 2 }), /not met with 2 against 2/],
    ['an event not in events[]', (j) => (j.targets[0]!.event = 'nope'), /no event nope/],
    ['a (b) line missing', (j) => j.targets.splice(j.targets.findIndex((x) => x.id === 'b'), 1), /0 lines of \(b\)/],
    ['a line twice', (j) => j.targets.push({ ...j.targets[0]! }), /2 lines of \(a\)/],
    ['(d) outside the events missing', (j) => j.targets.pop(), /\(d\) for outside every event/],
    ['load counted per class', (j) => (j.targets[j.targets.length - 1]!.class = 'TTL-honouring'), /\(d\) and \(e\) all/],
    ['a policy\'s counts missing', (j) => delete j.events[0]!.counts.reactive, /no reactive/],
    ['a class\'s counts missing', (j) => delete (j.events[0]!.counts.static as Record<string, unknown>)['no-ECS'], /events\/0\/counts\/static/],
    ['the classes renamed', (j) => (j.classes[3] = 'no-ecs'), /classes/],
    ['a cut that is not its split at the announcement', (j) => ((j.events[0]!.counts.static as Record<string, { cut: number }>)['TTL-honouring']!.cut += 1), /counts\.static\.TTL-honouring: cut \d+ is not/],
    ['more spill cut than was cut before the announcement', (j) => {
      const k = (j.events[0]!.counts.gridsteer as Record<string, { cutBeforeAnnouncement: number; cutSpillBeforeAnnouncement: number }>)['TTL-honouring']!;
      k.cutSpillBeforeAnnouncement = k.cutBeforeAnnouncement + 1;
    }, /counts\.gridsteer\.TTL-honouring: \d+ spill cut of/],
  ];
  for (const [what, f, want] of broken) {
    const j = structuredClone(json);
    f(j);
    const got = contractProblems(j);
    assert.ok(got.some((x) => want.test(x)), `${what}: ${JSON.stringify(got)}`);
  }
});

test('the bundled reports in docs/simulation/ keep the report contract (regenerate them when it changes)', () => {
  const dir = fileURLToPath(new URL('../../../docs/simulation/', import.meta.url));
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 6, `${files.length} reports in ${dir}`);
  for (const f of files) assert.deepEqual(contractProblems(JSON.parse(readFileSync(join(dir, f), 'utf8'))), [], f);
});

test('the SVG: well formed, one panel per policy, legend, axes, event window', (t) => {
  const rep = tinyRun(t);
  const svg = renderSvg(rep);
  assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  assert.ok(svg.trimEnd().endsWith('</svg>'));
  assert.equal((svg.match(/<g>/g) ?? []).length, 3, 'one panel per policy');
  assert.equal((svg.match(/<g>/g) ?? []).length, (svg.match(/<\/g>/g) ?? []).length);
  for (const want of ['static geo', 'reactive failover', 'GridSteer', '>east<', '>west<', '>south<', '>failed<', 'time (UTC)', 'share of sessions', 'east: no power', 'announced', '100 %']) {
    assert.ok(svg.includes(want), `missing ${want}`);
  }
  assert.ok(!/NaN|undefined|Infinity/.test(svg), 'no NaN, undefined or Infinity in the SVG');
  // Every number in a points list is finite and inside the drawing.
  const W = Number(/width="(\d+)"/.exec(svg)![1]);
  const H = Number(/height="(\d+)"/.exec(svg)![1]);
  for (const m of svg.matchAll(/points="([^"]*)"/g)) {
    for (const pair of m[1]!.trim().split(/\s+/)) {
      const [x, y] = pair.split(',').map(Number);
      assert.ok(x! >= 0 && x! <= W && y! >= 0 && y! <= H, `point ${pair} outside ${W}×${H}`);
    }
  }
  assert.equal(escapeXml(`<a & "b">`), '&lt;a &amp; &quot;b&quot;&gt;');
});

test('the SVG: labels of overlapping and nearby events never print over each other (one "announced" per instant)', (t) => {
  const rep = tinyRun(t);
  const e = rep.events[0]!;
  const other = rep.events.find((x) => x.region !== e.region)?.region ?? (e.region === 0 ? 1 : 0);
  const crowded: SimReport = {
    ...rep,
    events: [
      e,
      { ...e, id: 'shed-2', region: other, T: e.T + 60_000, E: e.E + 60_000, announce: e.announce + 30_000 },
      { ...e, id: 'shed-3', T: e.T + 30_000, E: e.E, announce: e.announce },
    ],
  };
  const svg = renderSvg(crowded);
  const panel = svg.slice(svg.indexOf('<g>'), svg.indexOf('</g>'));
  const labels = [...panel.matchAll(/<text x="([\d.]+)" y="([\d.]+)"(?: text-anchor="(\w+)")?[^>]*>([^<]*)<\/text>/g)]
    .filter((m) => /announced|no power|throttled/.test(m[4]!))
    .map((m) => {
      const x = Number(m[1]);
      const w = 7 * m[4]!.length;
      return { text: m[4]!, y: Number(m[2]), x0: m[3] === 'end' ? x - w : x, x1: m[3] === 'end' ? x : x + w };
    });
  assert.deepEqual(
    labels.filter((l) => l.text.endsWith('announced')).map((l) => l.text),
    [`${rep.world.regions[e.region]!.id} announced`, `${rep.world.regions[other]!.id} announced`],
    'one "announced" per announcement instant, naming the regions announced then',
  );
  assert.equal(labels.length, 5);
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i]!;
      const b = labels[j]!;
      assert.ok(a.y !== b.y || a.x1 <= b.x0 || b.x1 <= a.x0, `"${a.text}" and "${b.text}" overlap at y ${a.y}`);
    }
  }
});
