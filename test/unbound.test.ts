/**
 * Through a real recursive resolver: Unbound (Debian package `unbound`) with a stub-zone
 * for gslb.example.com pointing at our server, ECS sent upstream by its subnetcache
 * module, and no trust anchor. Checks resolution of the GSLB name and the CNAME chain,
 * negative caching (the second NXDOMAIN never reaches us: our query counter stays put),
 * TC then TCP fallback for the big TXT record, and TTLs counting down in its cache.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary } from './helpers/dig.js';
import { API, API_TTL, BIG_TXT, NEGATIVE_TTL, VIRGINIA_A, VIRGINIA_AAAA, WWW, digTxtStrings, sorted, withLargeRecords } from './helpers/fleet.js';
import { QUERIES, describeMetric, scrape, sumOf } from './helpers/metrics.js';
import { sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';
import { startUnbound, type RunningUnbound } from './helpers/unbound.js';

let cfg: TestConfig;
let srv: RunningServer;
let ub: RunningUnbound;

before(async () => {
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: Unbound asks from 127.0.0.1.
    withRateLimitMode(c, 'off');
    withLargeRecords(c);
  });
  srv = await spawnServer({ configFile: cfg.file });
  ub = await startUnbound({ upstream: srv.udp });
});

after(async () => {
  await ub?.stop();
  await srv?.stop();
  cfg?.cleanup();
});

function ubLogs(): string {
  return `\n--- unbound log ---\n${ub.logs.slice(-30).join('\n')}`;
}

async function totalQueries(): Promise<number> {
  return sumOf(await scrape(srv.http), QUERIES);
}

test('api A and AAAA resolve through Unbound', async () => {
  const a = await dig(ub.endpoint, ['api.gslb.example.com', 'A']);
  assert.equal(a.msg.status, 'NOERROR', digSummary(a) + ubLogs());
  assert.ok(a.msg.flags.includes('ra'), 'answered by the recursive resolver');
  assert.deepEqual(sorted(a.msg.answer.filter((x) => x.type === 'A').map((x) => x.data)), VIRGINIA_A, digSummary(a) + ubLogs());
  for (const rr of a.msg.answer) assert.ok(rr.ttl <= API_TTL, `TTL ${rr.ttl} above ${API_TTL}`);

  const aaaa = await dig(ub.endpoint, ['api.gslb.example.com', 'AAAA']);
  assert.equal(aaaa.msg.status, 'NOERROR', digSummary(aaaa) + ubLogs());
  assert.deepEqual(aaaa.msg.answer.filter((x) => x.type === 'AAAA').map((x) => x.data), VIRGINIA_AAAA, digSummary(aaaa));
});

test('www resolves through the CNAME chain to the api addresses', async () => {
  const r = await dig(ub.endpoint, ['www.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r) + ubLogs());
  const cname = r.msg.answer.find((x) => x.type === 'CNAME');
  assert.ok(cname, digSummary(r));
  assert.equal(cname.name, WWW);
  assert.equal(cname.data, API);
  const a = r.msg.answer.filter((x) => x.type === 'A');
  assert.deepEqual(sorted(a.map((x) => x.data)), VIRGINIA_A, digSummary(r));
  for (const rr of a) assert.equal(rr.name, API);
});

test('NXDOMAIN is cached: the second query is answered by Unbound without asking us', async () => {
  const name = 'not-there.gslb.example.com';
  const q0 = await totalQueries();
  const first = await dig(ub.endpoint, [name, 'A']);
  assert.equal(first.msg.status, 'NXDOMAIN', digSummary(first) + ubLogs());
  const soa = first.msg.authority.find((x) => x.type === 'SOA');
  assert.ok(soa, `the SOA comes with the NXDOMAIN\n${digSummary(first)}`);
  assert.ok(soa.ttl <= NEGATIVE_TTL, `negative TTL ${soa.ttl} above ${NEGATIVE_TTL}`);
  const q1 = await totalQueries();
  assert.ok(q1 > q0, `the first query reached our server (${q0} → ${q1})`);

  const second = await dig(ub.endpoint, [name, 'A']);
  assert.equal(second.msg.status, 'NXDOMAIN', digSummary(second));
  const q2 = await totalQueries();
  assert.equal(q2, q1, `the second NXDOMAIN must come from Unbound's cache (our counter went ${q1} → ${q2})\n${describeMetric(await scrape(srv.http), QUERIES)}`);
});

test('the big TXT record: Unbound gets TC over UDP, retries over TCP, and returns the whole record', async () => {
  const before0 = await scrape(srv.http);
  const tcpBefore = sumOf(before0, QUERIES, { transport: 'tcp' });
  // Ask Unbound over TCP so that our client gets the full answer in one go.
  const r = await dig(ub.endpoint, ['+tcp', 'big.gslb.example.com', 'TXT']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r) + ubLogs());
  const txt = r.msg.answer.filter((x) => x.type === 'TXT').flatMap((x) => digTxtStrings(x.data)).join('');
  assert.equal(txt, BIG_TXT, digSummary(r));
  const after1 = await scrape(srv.http);
  assert.ok(
    sumOf(after1, QUERIES, { transport: 'tcp' }) > tcpBefore,
    `Unbound fell back to TCP: our tcp counter must have grown\n${describeMetric(after1, QUERIES)}`,
  );
  assert.ok(sumOf(after1, QUERIES, { transport: 'udp' }) > sumOf(before0, QUERIES, { transport: 'udp' }), 'it tried UDP first');
});

test('TTLs count down in Unbound\'s cache', async () => {
  const ttlOf = async () => {
    const r = await dig(ub.endpoint, ['api.gslb.example.com', 'A']);
    assert.equal(r.msg.status, 'NOERROR', digSummary(r));
    const a = r.msg.answer.find((x) => x.type === 'A');
    assert.ok(a, digSummary(r));
    return a.ttl;
  };
  let t1 = await ttlOf();
  if (t1 < 8) {
    // Too close to expiry for a fair comparison: let it expire (bounded) and start fresh.
    await sleep((t1 + 1) * 1000);
    t1 = await ttlOf();
  }
  assert.ok(t1 <= API_TTL, `TTL ${t1} above the answered ${API_TTL}`);
  await sleep(2500);
  const t2 = await ttlOf();
  assert.ok(t2 < t1, `the cached TTL must have decreased after 2.5 s (first ${t1}, then ${t2})`);
});
