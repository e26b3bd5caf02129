/**
 * Geo-steering through a real recursive resolver: Unbound (test/helpers/unbound.ts: stub-zone
 * to our server, subnetcache module, `send-client-subnet` covering our server,
 * `client-subnet-always-forward: yes`, default `max-client-subnet-ipv4: 24` / `-ipv6: 56`).
 *
 * On loopback every client is 127.0.0.1, so each client here is a dig query to Unbound
 * carrying its own ECS option (`dig +subnet=… @unbound`): Unbound forwards that subnet
 * (truncated to /24 or /56) to us and caches our answer for the scope we return. Checks:
 * clients from different countries get their own nearest regions; an answer given for a
 * documentation-range subnet (placed by the source address, scope = source prefix) does not
 * reach a Japanese client; repeated and in-scope subnets are answered from Unbound's cache
 * (our query counter stays put), out-of-scope subnets are asked again.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, type DigMessage } from './helpers/dig.js';
import { FLEET, GeoDb, Incomputable, askSteered, digEcs, parseCidr, sameIp, waitGeoTable, type DigEcs, type SteeredReply } from './helpers/geo.js';
import { QUERIES, describeMetric, scrape, sumOf } from './helpers/metrics.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';
import { startUnbound, type RunningUnbound } from './helpers/unbound.js';

let cfg: TestConfig;
let srv: RunningServer;
let ub: RunningUnbound;
let db: GeoDb;

before(async () => {
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: Unbound asks from 127.0.0.1 for every client subnet.
    withRateLimitMode(c, 'off');
    c.geoip = { enabled: true };
  });
  srv = await spawnServer({ configFile: cfg.file });
  const geo = await waitGeoTable(srv, { timeoutMs: 120000 });
  db = new GeoDb(geo.database);
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

async function queriesListing(): Promise<string> {
  return describeMetric(await scrape(srv.http), QUERIES);
}

function scopeOf(cidr: string): number | undefined {
  try {
    return db.expectedScope(cidr);
  } catch (e) {
    if (e instanceof Incomputable) return undefined;
    throw e;
  }
}

/** Unbound relays our ECS option: the client's subnet with the scope we gave. */
function assertRelayedEcs(r: SteeredReply, cidr: string, scope: number | undefined): void {
  const c = parseCidr(cidr);
  assert.ok(r.ecs, `Unbound's reply carries the client's ECS option\n${r.summary}${ubLogs()}`);
  assert.ok(sameIp(r.ecs.address, cidr.split('/')[0]!), r.summary);
  assert.equal(r.ecs.source, c.prefix, r.summary);
  if (scope === undefined) assert.ok(r.ecs.scope >= 1 && r.ecs.scope <= (c.family === 4 ? 24 : 56), r.summary);
  else assert.equal(r.ecs.scope, scope, `scope relayed by Unbound for ${cidr}: expected /${scope}\n${r.summary}`);
}

test('two clients from different countries resolve api through Unbound to their own nearest regions', async () => {
  const clients: { cidr: string; qtype: 'A' | 'AAAA'; country: string; region: string }[] = [
    { cidr: '133.242.0.0/24', qtype: 'A', country: 'JP', region: 'ap-tyo' },
    { cidr: '200.160.0.0/24', qtype: 'A', country: 'BR', region: 'sa-sao' },
    { cidr: '2a01:e00::/56', qtype: 'AAAA', country: 'FR', region: 'eu-ie' },
  ];
  for (const c of clients) {
    const p = db.place(c.cidr.split('/')[0]!);
    assert.equal(p?.country, c.country, `precondition: the database places ${c.cidr} in ${c.country} (${JSON.stringify(p)})`);
    const q0 = await totalQueries();
    const r = await askSteered(ub.endpoint, c.qtype, c.cidr);
    assert.equal(r.status, 'NOERROR', r.summary + ubLogs());
    assert.ok(r.run.msg.flags.includes('ra'), 'answered by the recursive resolver');
    const want = c.qtype === 'A' ? FLEET[c.region]!.a : FLEET[c.region]!.aaaa;
    assert.deepEqual(r.addrs, want, `${c.cidr} through Unbound: expected ${c.region}\n${r.summary}${ubLogs()}`);
    assertRelayedEcs(r, c.cidr, scopeOf(c.cidr));
    assert.ok((await totalQueries()) > q0, `Unbound asked our server for ${c.cidr}\n${await queriesListing()}`);
  }
});

test('a fallback answer (documentation-range ECS) does not pollute other clients: a Japanese subnet asked next still gets ap-tyo', async () => {
  const fallback = '198.51.100.0/24';
  const japan = '202.32.0.0/24';
  assert.equal(db.place('202.32.0.0')?.country, 'JP', 'precondition: the database places 202.32.0.0/24 in Japan');

  const q0 = await totalQueries();
  const fb = await askSteered(ub.endpoint, 'A', fallback);
  assert.equal(fb.status, 'NOERROR', fb.summary + ubLogs());
  assert.equal(fb.region, 'us-va', `the fallback client is placed by the source (Unbound, 127.0.0.1): the default location\n${fb.summary}`);
  const q1 = await totalQueries();
  assert.ok(q1 > q0, `Unbound asked our server for the fallback subnet (${q0} → ${q1})`);

  const jp = await askSteered(ub.endpoint, 'A', japan);
  assert.equal(jp.status, 'NOERROR', jp.summary + ubLogs());
  assert.equal(jp.region, 'ap-tyo', `the Japanese client must not get the cached fallback answer\n${jp.summary}${ubLogs()}`);
  const q2 = await totalQueries();
  assert.ok(q2 > q1, `Unbound asked our server again for the Japanese subnet (${q1} → ${q2})\n${await queriesListing()}`);
  assert.equal(fb.ecs?.scope, 24, `the fallback answer is scoped to the client's /24, not 0\n${fb.summary}`);

  // The fallback answer itself is cached for its own /24.
  const again = await askSteered(ub.endpoint, 'A', fallback);
  assert.equal(again.region, 'us-va', again.summary);
  assert.equal(await totalQueries(), q2, 'the second fallback query came from Unbound\'s cache');
});

test('control: Unbound gives a scope-0 answer to every other subnet (why a fallback answer must not carry scope 0)', async () => {
  // Static records hold for every client, so we answer them with scope 0: the answer given to
  // one /24 is then served to another /24 from Unbound's cache. A steered fallback answer with
  // scope 0 would travel the same way, which the previous test would catch.
  const q0 = await totalQueries();
  const txt1 = await askTxt('198.51.100.0/24');
  assert.equal(txt1.msg.status, 'NOERROR', txt1.summary + ubLogs());
  assert.equal(txt1.ecs?.scope, 0, `static answers carry scope 0\n${txt1.summary}`);
  const q1 = await totalQueries();
  assert.ok(q1 > q0, 'Unbound asked our server for the TXT record');
  const txt2 = await askTxt('87.32.0.0/24');
  assert.equal(txt2.msg.status, 'NOERROR', txt2.summary);
  assert.equal(txt2.msg.answer.filter((rr) => rr.type === 'TXT').length, 1, txt2.summary);
  assert.equal(await totalQueries(), q1, `another /24 got the scope-0 answer from Unbound's cache\n${await queriesListing()}${ubLogs()}`);
});

/** `dig +subnet=SUBNET status.gslb.example.com TXT @unbound`. */
async function askTxt(subnet: string): Promise<{ msg: DigMessage; ecs: DigEcs | undefined; summary: string }> {
  const r = await dig(ub.endpoint, [`+subnet=${subnet}`, 'status.gslb.example.com', 'TXT']);
  return { msg: r.msg, ecs: digEcs(r.msg), summary: digSummary(r) };
}

test('the same /24 twice is served from Unbound\'s cache; so is any subnet inside the scope; outside it Unbound asks again', async () => {
  const cidr = '165.21.0.0/24';
  assert.equal(db.place('165.21.0.0')?.country, 'SG', 'precondition: the database places 165.21.0.0/24 in Singapore');
  const scope = scopeOf(cidr);
  assert.ok(scope !== undefined && scope < 24, `precondition: the cell of ${cidr} is wider than a /24 (scope ${scope})`);

  const q0 = await totalQueries();
  const first = await askSteered(ub.endpoint, 'A', cidr);
  assert.equal(first.region, 'ap-sin', first.summary + ubLogs());
  assertRelayedEcs(first, cidr, scope);
  const q1 = await totalQueries();
  assert.ok(q1 > q0, `the first query reached our server (${q0} → ${q1})`);

  const second = await askSteered(ub.endpoint, 'A', cidr);
  assert.equal(second.region, 'ap-sin', second.summary);
  assertRelayedEcs(second, cidr, scope);
  assert.equal(await totalQueries(), q1, `the same /24 again must come from Unbound's cache\n${await queriesListing()}`);

  // Another address of the same /24 (Unbound truncates it to /24: max-client-subnet-ipv4).
  const host = await askSteered(ub.endpoint, 'A', '165.21.0.77/32');
  assert.equal(host.region, 'ap-sin', host.summary);
  assert.equal(await totalQueries(), q1, `165.21.0.77/32 is inside the cached /24\n${await queriesListing()}`);

  // The last /24 of the scope block: same cell, so Unbound may (and does) reuse the answer.
  const block = parseCidr(`165.21.0.0/${scope}`);
  const far = `${[24n, 16n, 8n].map((s) => String((block.end >> s) & 255n)).join('.')}.0/24`;
  assert.equal(db.cellOf(far), db.cellOf(cidr), `precondition: ${far} is in the cell of ${cidr}`);
  const inScope = await askSteered(ub.endpoint, 'A', far);
  assert.equal(inScope.region, 'ap-sin', inScope.summary);
  assert.equal(await totalQueries(), q1, `${far} is inside the /${scope} we answered for: served from Unbound's cache\n${await queriesListing()}`);

  // A Singapore /24 outside the block: Unbound must ask us.
  const outside = '203.116.0.0/24';
  assert.equal(db.place('203.116.0.0')?.country, 'SG', 'precondition: the database places 203.116.0.0/24 in Singapore');
  const out = await askSteered(ub.endpoint, 'A', outside);
  assert.equal(out.region, 'ap-sin', out.summary);
  assert.ok((await totalQueries()) > q1, `${outside} is outside the cached block: Unbound asked our server again\n${await queriesListing()}`);
});
