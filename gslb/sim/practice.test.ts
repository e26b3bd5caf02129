/**
 * Failover practice runs in a scenario (issue 30, item 6; docs/schedules.md "Practice runs"):
 * windows of kind practice, run through the real planner and the engine. A run goes when
 * nothing blocks it, is aborted when a physical loss is announced while it acts (its region
 * restores from there), and is skipped when that loss is known at its first ramp step; the
 * engine reports each occurrence as GridSteer's last plan has it, and the world is not changed
 * by a drill (static geo serves the region as always).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadScenario } from './scenario.js';
import { runScenario } from './run.js';
import { contractProblems, renderMarkdown, reportJson } from './report.js';
import { tempDir, tinyScenario } from './testing.js';
import type { PolicyResult } from './engine.js';

const M = 60_000;

/**
 * The tiny fleet over two hours (18:00–20:00 UTC), east's load shed moved to 19:30–19:45
 * (announced 19:10), a short discretionary allowance (2 min) so that a window's drain starts
 * a few minutes ahead, and three practice runs: west 18:30 (nothing in the way), south 19:05
 * (acting when the shed is announced) and west 19:20 (its first step after the announcement).
 */
function drills(t: { after(fn: () => void): void }, windows = PRACTICE) {
  const text = tinyScenario(`policies:
  gridsteer:
    planner: { drain: { discretionarySessionAllowanceMaxMs: 120000 } }
${windows}`)
    .replace('hours: 1\n', 'hours: 2\n')
    .replace('    at: 30m\n', '    at: 1h30m\n');
  return loadScenario(join(tempDir(t, { 'tiny.yaml': text }), 'tiny.yaml'));
}
const PRACTICE = `windows:
  - { id: west-drill, kind: practice, regions: [west], cron: "30 18 * * *", duration: 10m, reason: failover drill }
  - { id: south-drill, kind: practice, regions: [south], cron: "5 19 * * *", duration: 20m, reason: failover drill }
  - { id: west-late, kind: practice, regions: [west], cron: "20 19 * * *", duration: 10m, reason: failover drill }
`;

/** Sessions started on `region` from `fromMin` to `toMin` (minutes after 18:00, whole buckets). */
function startedOn(r: PolicyResult, regions: string[], region: string, epoch: number, fromMin: number, toMin: number): number {
  const s = r.series;
  const R = regions.length;
  const ri = regions.indexOf(region);
  let n = 0;
  for (let b = 0; b < s.n; b++) {
    const t = s.t0 + b * s.bucketMs;
    if (t >= epoch + fromMin * M && t + s.bucketMs <= epoch + toMin * M) n += s.started[b * R + ri]!;
  }
  return n;
}

test('practice runs through the planner and the engine: one runs, one is aborted by an announced shed, one is skipped; the world is not changed', (t) => {
  const sc = drills(t);
  assert.deepEqual(sc.windows.map((w) => [w.id, w.kind]), [['west-drill', 'practice'], ['south-drill', 'practice'], ['west-late', 'practice']]);
  const rep = runScenario(sc, { policies: ['static', 'gridsteer'] });
  const [st, gs] = rep.results as [PolicyResult, PolicyResult];
  const regions = rep.world.regions.map((r) => r.id);
  const on = (r: PolicyResult, region: string, a: number, b: number) => startedOn(r, regions, region, sc.epoch, a, b);

  // The planner's outcome of each occurrence, from GridSteer's last plan listing it.
  assert.equal(st.windows, undefined, 'static geo has no plan');
  const occ = gs.windows!;
  assert.deepEqual(occ.map((o) => [o.window, (o.start - sc.epoch) / M, o.skipped === undefined ? (o.aborted ? 'aborted' : 'ran') : 'skipped']), [
    ['west-drill', 30, 'ran'],
    ['south-drill', 65, 'aborted'],
    ['west-late', 80, 'skipped'],
  ]);
  const south = occ[1]!;
  assert.ok(south.aborted!.at >= sc.epoch + 70 * M && south.aborted!.at < sc.epoch + 71 * M, `aborted when the shed is told (19:10): ${new Date(south.aborted!.at).toISOString()}`);
  assert.match(south.aborted!.why, /east/, 'the shed on east blocks it');
  assert.match(occ[2]!.skipped!, /practice run blocked/);

  // West's drill moves its clients away while it holds; static geo serves west as always (the world is unchanged).
  const staticWest = on(st, 'west', 31, 39);
  assert.ok(staticWest > 300, `static geo starts ${staticWest} on west over 18:31–18:39`);
  assert.ok(on(gs, 'west', 31, 39) < 0.05 * staticWest, `GridSteer starts ${on(gs, 'west', 31, 39)} on west while its drill holds (static ${staticWest})`);
  assert.ok(on(gs, 'west', 50, 60) > 0.8 * on(st, 'west', 50, 60), 'west is back after its drill');
  // South's drill holds until the shed is announced, then south restores to take east's clients.
  assert.ok(on(gs, 'south', 66, 70) < 0.05 * on(st, 'south', 66, 70), `south drained before the abort: ${on(gs, 'south', 66, 70)} vs ${on(st, 'south', 66, 70)}`);
  assert.ok(on(gs, 'south', 80, 90) > on(st, 'south', 80, 90), `south restored after the abort and takes spill: ${on(gs, 'south', 80, 90)} vs ${on(st, 'south', 80, 90)}`);
  // The late west drill never acts.
  assert.ok(on(gs, 'west', 80, 90) > on(st, 'west', 80, 90), 'west serves through its skipped drill (and takes spill)');
  // A drill fails nobody by itself: nothing fails under GridSteer before the shed is announced (19:10), drills included.
  const failedBefore = (r: PolicyResult) => r.series.failed.slice(0, (70 * M) / r.series.bucketMs).reduce((a, x) => a + x, 0);
  assert.equal(gs.series.t0, sc.epoch);
  assert.equal(failedBefore(gs), 0, 'no session failed on a drill');

  // The report says so, and its JSON twin keeps the contract.
  const md = renderMarkdown(rep);
  assert.match(md, /Recurring windows .*west-drill \(practice, west, to 0\) 18:30–18:40 UTC: ran; south-drill .*: aborted at 19:10:\d\d \(.*east.*\); west-late .*: skipped \(practice run blocked/);
  assert.deepEqual(contractProblems(JSON.parse(JSON.stringify(reportJson(rep)))), []);
});

test('without windows the report and the results carry no window line or field', (t) => {
  const rep = runScenario(drills(t, ''), { scale: 0.2, hoursMs: 30 * M, policies: ['gridsteer'] });
  assert.equal(rep.results[0]!.windows, undefined);
  assert.doesNotMatch(renderMarkdown(rep), /Recurring windows/);
});
