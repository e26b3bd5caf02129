/**
 * The DNS metrics read from DnsStats at scrape time: the response-time histogram (counts kept
 * outside prom-client) in both of prom-client's output paths and summed across processes the
 * way the primary sums its workers; decisions and decision-cache results.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';
import { aggregateMetrics, CountedHistogram, createRegistry } from './metrics.js';
import { CACHE_HIT, CACHE_MISS, DECISION_INDEX, DnsStats, LATENCY_BOUNDS_MS, TRANSPORT_UDP } from '../dns/stats.js';

const H = 'gridsteer_dns_response_duration_seconds';

/** `name{labels} value` lines of one family (and its _bucket/_sum/_count), sorted. */
function lines(text: string, family: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${family}_`) || l.startsWith(`${family}{`) || l.startsWith(`${family} `))
    .sort();
}

test('CountedHistogram: cumulative buckets, +Inf = _count, the sum, in the JSON and the text path; nothing before there are counts', async () => {
  const registry = new client.Registry();
  const read: { counts?: { counts: number[]; sum: number } } = {};
  new CountedHistogram({ name: 'x_seconds', help: 'x', buckets: [0.1, 1], registers: [registry] }, () => read.counts);
  assert.equal(lines(await registry.metrics(), 'x_seconds').length, 0, 'no series before there is anything to read');
  assert.match(await registry.metrics(), /# TYPE x_seconds histogram/);
  read.counts = { counts: [2, 0, 3], sum: 7.5 };
  assert.deepEqual(lines(await registry.metrics(), 'x_seconds'), ['x_seconds_bucket{le="+Inf"} 5', 'x_seconds_bucket{le="0.1"} 2', 'x_seconds_bucket{le="1"} 2', 'x_seconds_count 5', 'x_seconds_sum 7.5']);
  const [json] = await registry.getMetricsAsJSON();
  assert.equal(json!.type as unknown, 'histogram');
  assert.equal(json!.aggregator, 'sum');
});

test('DNS metrics from DnsStats: the histogram and the counters, summed over two processes', async () => {
  const mk = (ms: number[], cache: [number, number], decisions: Record<string, number>) => {
    const s = new DnsStats();
    for (const x of ms) {
      s.observe(x);
      s.count(TRANSPORT_UDP, 1, 0);
    }
    s.cache[CACHE_HIT] = cache[0];
    s.cache[CACHE_MISS] = cache[1];
    const d = s.decisionsFor('api.example.com');
    for (const [k, v] of Object.entries(decisions)) d[DECISION_INDEX[k as keyof typeof DECISION_INDEX]] = v;
    return createRegistry(() => s);
  };
  const one = mk([0.004, 0.02, 0.02, 3], [3, 1], { nearest: 3, spill: 1 });
  const two = mk([0.004, 200], [1, 1], { failover: 2 });
  const { body } = await aggregateMetrics([await one.getMetricsAsJSON(), await two.getMetricsAsJSON()]);
  const bucket = (le: number | string) => {
    const m = new RegExp(`^${H}_bucket\\{le="${String(le).replace('+', '\\+')}"\\} (\\S+)$`, 'm').exec(body);
    return m ? Number(m[1]) : NaN;
  };
  assert.equal(bucket(0.000005), 2, '4 µs twice: the first bucket (5 µs)');
  assert.equal(bucket(0.00001), 2);
  assert.equal(bucket(0.000025), 4, '20 µs twice');
  assert.equal(bucket(0.0025), 4);
  assert.equal(bucket(0.005), 5, '3 ms');
  assert.equal(bucket(0.1), 5);
  assert.equal(bucket('+Inf'), 6, '200 ms only in +Inf');
  assert.equal(LATENCY_BOUNDS_MS.length + 1, lines(body, H).filter((l) => l.includes('_bucket')).length, 'one series per bound and +Inf');
  assert.match(body, new RegExp(`^${H}_count 6$`, 'm'));
  const sum = Number(new RegExp(`^${H}_sum (\\S+)$`, 'm').exec(body)?.[1]);
  assert.ok(Math.abs(sum - (0.004 + 0.02 + 0.02 + 3 + 0.004 + 200) / 1000) < 1e-12, `sum ${sum}`);
  assert.match(body, /^gridsteer_dns_queries_total\{transport="udp",qtype="A",rcode="NOERROR"\} 6$/m, 'as many replies counted as timed');
  assert.deepEqual(lines(body, 'gridsteer_dns_decision_cache_lookups_total'), [
    'gridsteer_dns_decision_cache_lookups_total{result="bypass"} 0',
    'gridsteer_dns_decision_cache_lookups_total{result="hit"} 4',
    'gridsteer_dns_decision_cache_lookups_total{result="miss"} 2',
  ]);
  assert.deepEqual(lines(body, 'gridsteer_dns_decisions_total'), [
    'gridsteer_dns_decisions_total{name="api.example.com",reason="failover"} 2',
    'gridsteer_dns_decisions_total{name="api.example.com",reason="nearest"} 3',
    'gridsteer_dns_decisions_total{name="api.example.com",reason="spill"} 1',
  ]);
});

test('a registry without DNS stats (a primary with workers) declares the families with no series', async () => {
  const text = await createRegistry(() => undefined).metrics();
  for (const name of [H, 'gridsteer_dns_decisions_total', 'gridsteer_dns_decision_cache_lookups_total']) assert.match(text, new RegExp(`# TYPE ${name} (histogram|counter)`), name);
  assert.deepEqual(lines(text, H), []);
});
