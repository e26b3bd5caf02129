/**
 * The soak harness (bench/soak.ts, issue 20) for 30 seconds with every moving part: three
 * nodes on one redis-server (AOF), DNS load from many ECS subnets, signals at 100/s, override
 * flips, the GeoIP file swapped and back, Redis restarted twice (a crash, a clean stop), one
 * node killed and started again. dns.rateLimit.mode is off (every query comes from
 * 127.0.0.1) and the report says so. Only counts are asserted, never a time: no query is
 * left unanswered outside the killed node's downtime, no answer differs between nodes after
 * convergence, nothing crashed or logged an error, and every event happened. The full
 * 10-minute run and its report: docs/soak.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSoak } from '../bench/soak.js';

test('soak, 30 s: no query unanswered outside the kill window, no answer differing after convergence, no crash', { timeout: 600_000 }, async (t) => {
  const r = await runSoak({ seconds: 30, qps: 150, signalsPerSecond: 100, subnets: 500, workers: 0, rateLimitMode: 'off', log: (l) => t.diagnostic(l) });
  t.diagnostic(JSON.stringify({ queries: r.queries, signals: r.signals, overrides: r.overrides, comparisons: { ...r.comparisons, details: r.comparisons.details.length } }));
  assert.equal(r.options.rateLimitMode, 'off');
  // Every moving part moved.
  const did = (re: RegExp) => r.events.filter((e) => re.test(e.what)).length;
  assert.equal(did(/^Redis (crash|stopped)/), 2, 'Redis restarted twice');
  assert.equal(did(/^Redis back/), 2);
  assert.equal(did(/^GeoIP file swapped/), 2, 'the GeoIP file swapped and back');
  assert.equal(did(/killed \(SIGKILL\)/), 1);
  assert.equal(did(/restarted on the same ports/), 1);
  assert.ok(r.geo.versions.length >= 2, `two geo tables in force in turn: ${r.geo.versions.join(', ')}`);
  assert.ok(r.overrides.flips >= 2, `override flips: ${JSON.stringify(r.overrides)}`);
  assert.deepEqual(r.overrides.survivedRedisRestarts, [true, true], 'the override in force survived each Redis restart (AOF)');
  assert.ok(r.signals.accepted > 0 && r.signals.failed === 0, `signals: ${JSON.stringify(r.signals)}`);
  assert.ok(r.queries.answered > 0 && r.comparisons.questions > 0);
  // The moving parts moved the answers (on every node alike): the Japanese /24s were sent to
  // sa-sao while the moved database was in force and to ap-tyo before, and some answers were
  // narrowed to /24 by the weight override.
  assert.ok((r.comparisons.japanByRegion['ap-tyo'] ?? 0) > 0 && (r.comparisons.japanByRegion['sa-sao'] ?? 0) > 0, `Japanese /24s: ${JSON.stringify(r.comparisons.japanByRegion)}`);
  assert.ok(r.comparisons.agreedScope24 > 0, 'answers narrowed to /24 by the weight override');
  // What the run is for.
  assert.equal(r.queries.unansweredOutside, 0, `unanswered outside the kill window: ${JSON.stringify(r.queries.unansweredSamples)}`);
  assert.equal(r.comparisons.differing, 0, `answers differing after convergence: ${JSON.stringify(r.comparisons.details, null, 1)}`);
  assert.deepEqual(r.crashes, []);
});
