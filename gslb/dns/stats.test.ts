/** The hot-path counters: case tables of (transport, qtype, rcode) → labels, response times → buckets, decisions and cache results. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CACHE_BYPASS, CACHE_HIT, CACHE_MISS, DECISION_INDEX, DnsStats, LATENCY_BOUNDS_MS, latencyBucket, TRANSPORT_TCP, TRANSPORT_UDP } from './stats.js';

test('every (transport, qtype, rcode) lands under the right labels', () => {
  const cases: [transport: number, qtype: number, rcode: number, labels: string][] = [
    [TRANSPORT_UDP, 1, 0, 'udp A NOERROR'],
    [TRANSPORT_TCP, 28, 3, 'tcp AAAA NXDOMAIN'],
    [TRANSPORT_UDP, 257, 0, 'udp CAA NOERROR'],
    [TRANSPORT_UDP, 252, 5, 'udp AXFR REFUSED'],
    [TRANSPORT_UDP, 255, 0, 'udp ANY NOERROR'],
    [TRANSPORT_UDP, 65535, 0, 'udp other NOERROR'],
    [TRANSPORT_UDP, 99, 4, 'udp other NOTIMP'],
    [TRANSPORT_UDP, -1, 1, 'udp none FORMERR'],
    [TRANSPORT_TCP, 1, 16, 'tcp A BADVERS'],
    // An rcode without its own label counts as SERVFAIL.
    [TRANSPORT_UDP, 1, 9, 'udp A SERVFAIL'],
  ];
  for (const [transport, qtype, rcode, labels] of cases) {
    const s = new DnsStats();
    s.count(transport, qtype, rcode);
    s.count(transport, qtype, rcode);
    const got = s.snapshot().queries.map((c) => `${c.transport} ${c.qtype} ${c.rcode} ×${c.value}`);
    assert.deepEqual(got, [`${labels} ×2`], `count(${transport}, ${qtype}, ${rcode})`);
  }
});

test('response times land in the first bucket whose bound is ≥ them (Prometheus le), slower ones in +Inf', () => {
  assert.deepEqual(LATENCY_BOUNDS_MS, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100]);
  const INF = LATENCY_BOUNDS_MS.length;
  const cases: [ms: number, bucket: number][] = [
    [0, 0],
    [0.001, 0],
    [0.005, 0], // on a bound: that bucket (le is ≤)
    [0.0050001, 1],
    [0.008, 1],
    [0.01, 1],
    [0.02, 2],
    [0.3, 6],
    [1, 7],
    [1.5, 8],
    [99.9, 13],
    [100, 13],
    [100.01, INF],
    [60_000, INF],
  ];
  for (const [ms, bucket] of cases) assert.equal(latencyBucket(ms), bucket, `${ms} ms`);

  const s = new DnsStats();
  for (const [ms] of cases) s.observe(ms);
  const l = s.snapshot().latency;
  assert.equal(l.counts.length, LATENCY_BOUNDS_MS.length + 1);
  assert.equal(l.counts.reduce((a, b) => a + b, 0), cases.length, 'every observation counted once');
  assert.deepEqual(l.counts, [3, 3, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 2, 2]);
  const sumMs = cases.reduce((a, [ms]) => a + ms, 0);
  assert.ok(Math.abs(l.sumSeconds - sumMs / 1000) < 1e-9, `sum ${l.sumSeconds} s`);
});

test('decisions by name and class, and decision-cache results, come out of the snapshot as counted', () => {
  const s = new DnsStats();
  const api = s.decisionsFor('api.example.com');
  assert.equal(s.decisionsFor('api.example.com'), api, 'one array per name');
  api[DECISION_INDEX.nearest]! += 3;
  api[DECISION_INDEX.spill]!++;
  s.decisionsFor('v6.example.com')[DECISION_INDEX.servfail]!++;
  s.decisionsFor('idle.example.com');
  s.cache[CACHE_HIT]! += 5;
  s.cache[CACHE_MISS]!++;
  s.cache[CACHE_BYPASS]! += 2;
  const snap = s.snapshot();
  assert.deepEqual(
    snap.decisions.map((d) => `${d.name} ${d.reason} ${d.value}`),
    ['api.example.com nearest 3', 'api.example.com spill 1', 'v6.example.com servfail 1'],
    'zero counts are left out',
  );
  assert.deepEqual(snap.cache, { hit: 5, miss: 1, bypass: 2 });
  assert.deepEqual(DECISION_INDEX, { nearest: 0, preferred: 1, failover: 2, spill: 3, when_all_down: 4, servfail: 5 });
});
