/**
 * The report: the targets by case table (met, not met, n/a), and the Markdown and SVG of a
 * tiny run carrying what they promise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ByClass, EventRt, PolicyResult } from './engine.js';
import type { PolicyName } from './policies.js';
import { evaluateTargets, renderMarkdown, capacityDuringEvents } from './report.js';
import { escapeXml, renderSvg } from './chart.js';
import { runScenario, type SimReport } from './run.js';
import { loadScenario } from './scenario.js';
import { tempDir, tinyScenario } from './testing.js';
import type { World } from './world.js';

function result(policy: PolicyName, o: { sent?: ByClass; started?: ByClass; cut?: ByClass; peak?: number[] } = {}): PolicyResult {
  return {
    policy,
    arrivals: [1000, 100],
    started: [1000, 100],
    failed: [0, 0],
    startedOverCapacity: [0, 0],
    cut: o.cut ?? [0, 0],
    refusedAttempts: [0, 0],
    sentToEventRegion: [o.sent ?? [0, 0]],
    startedOnEventRegion: [o.started ?? [0, 0]],
    addedKm: { count: [0, 0], sum: [0, 0], mean: [0, 0], p95: [0, 0] },
    peakUtil: o.peak ?? [0.5, 0.5],
    peakAt: [0, 0],
    overCapacityMs: (o.peak ?? [0.5, 0.5]).map((u) => (u > 1 ? 60_000 : 0)),
    dnsQueries: 0,
    goaways: 0,
    plans: 0,
    series: { t0: 0, bucketMs: 60_000, n: 0, started: new Float64Array(0), refused: new Float64Array(0), failed: new Float64Array(0), load: new Float64Array(0), capacity: new Float64Array(0) },
  };
}

const world = { regions: [{ id: 'a' }, { id: 'b' }], capacity: Float64Array.from([100, 100]), expectedConcurrent: 80 } as unknown as World;
const ev = (kind: 'power-off' | 'throttle', share = 1): EventRt => ({ idx: 0, id: 'e1', region: 0, kind, share, announce: 0, T: 0, E: 1, distFrom: 0, distTo: 1 });

test('targets: met, not met and n/a, each with its figures', () => {
  type Case = [string, EventRt, PolicyResult[], string[]];
  const cases: Case[] = [
    ['all met', ev('power-off'), [result('reactive', { cut: [90, 10] }), result('gridsteer', { sent: [0, 4], cut: [5, 5] })], ['met', 'met', 'met']],
    ['one TTL-honouring session is too many', ev('power-off'), [result('reactive', { cut: [90, 10] }), result('gridsteer', { sent: [1, 0], cut: [5, 5] })], ['not met', 'met', 'met']],
    ['89 % fewer cuts is not 90 %', ev('power-off'), [result('reactive', { cut: [100, 0] }), result('gridsteer', { cut: [11, 0] })], ['met', 'not met', 'met']],
    ['exactly 90 % fewer is met', ev('power-off'), [result('reactive', { cut: [100, 0] }), result('gridsteer', { cut: [10, 0] })], ['met', 'met', 'met']],
    ['reactive cut nothing: n/a', ev('power-off'), [result('reactive'), result('gridsteer')], ['met', 'n/a', 'met']],
    ['a region over capacity', ev('power-off'), [result('reactive', { cut: [10, 0] }), result('gridsteer', { peak: [0, 1.2] })], ['met', 'met', 'not met']],
    ['a throttle leaves the region serving: the first target is n/a', ev('throttle', 0.5), [result('reactive'), result('gridsteer', { started: [50, 5], sent: [50, 5] })], ['n/a', 'n/a', 'met']],
    ['no reactive run', ev('power-off'), [result('gridsteer')], ['met', 'n/a', 'met']],
  ];
  for (const [what, e, results, want] of cases) {
    const got = evaluateTargets({ world, events: [e], results });
    assert.deepEqual(
      got.map((x) => x.status),
      want,
      `${what}: ${JSON.stringify(got)}`,
    );
  }
  // The fleet without room: the capacity target is n/a.
  const small = { ...world, expectedConcurrent: 150 } as World;
  const got = evaluateTargets({ world: small, events: [ev('power-off')], results: [result('gridsteer', { peak: [0, 1.5] })] });
  assert.equal(got[2]!.status, 'n/a');
  assert.match(got[2]!.detail, /the fleet has no room: 100 concurrent sessions of capacity/);
  assert.equal(capacityDuringEvents({ world, events: [ev('throttle', 0.25)] }), 175);
  assert.deepEqual(
    evaluateTargets({ world, events: [ev('power-off')], results: [result('static')] }).map((x) => x.status),
    ['n/a'],
  );
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
    '### TTL-honouring traffic',
    '### The rest (TTL-ignoring clients, clamping resolvers)',
    '| sent to east while shed-1 is in force |',
    '### Peak load ÷ capacity per region',
    '## Targets (GridSteer)',
    '![Share of sessions started per region, per minute, one panel per policy](tiny.svg)',
  ]) {
    assert.ok(md.includes(want), `missing ${want}`);
  }
  assert.ok(!/NaN|undefined|Infinity/.test(md), 'no NaN, undefined or Infinity in the report');
  // Every row of the per-class tables has one cell per policy.
  for (const line of md.split('\n').filter((l) => l.startsWith('| sent to east'))) assert.equal(line.split('|').length, 2 + 1 + 3, line);
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
  assert.equal(labels.filter((l) => l.text === 'announced').length, 2, 'one "announced" per announcement instant');
  assert.equal(labels.length, 5);
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i]!;
      const b = labels[j]!;
      assert.ok(a.y !== b.y || a.x1 <= b.x0 || b.x1 <= a.x0, `"${a.text}" and "${b.text}" overlap at y ${a.y}`);
    }
  }
});
