/**
 * Geo-steering with real dig and kdig (issue 3): one server (workers 0, geoip enabled, the
 * embedded GeoLite2 City compiled against the example fleet) answering clients given by
 * EDNS Client Subnet from ten countries on five continents, IPv4 and IPv6.
 *
 * Expectations are worked out independently of the server (test/helpers/geo.ts): the
 * database is read with MaxMind's readers (as a precondition, what it says about each test
 * subnet), regions are ranked by great-circle distance from the fleet written out by hand,
 * the expected ECS scope is the widest aligned prefix inside the client's cell, walked over
 * the database's networks, and the admission draw is MurmurHash3/FNV-1a from their
 * published definitions.
 *
 * Then: source prefix 0, documentation/private subnets (fallback to the source address,
 * scope = source prefix), network overrides (longest prefix wins, over the database) and
 * admission weights below 1 (scope exactly /24).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kdig, kdigOpt } from './helpers/dig.js';
import {
  FLEET,
  GeoDb,
  Incomputable,
  admissionDraw,
  askSteered,
  fnv1a32,
  murmur3x86_32,
  parseCidr,
  rankFrom,
  regionOf,
  sameIp,
  waitGeoTable,
  type OverrideSpec,
  type SteeredReply,
} from './helpers/geo.js';
import { spawnServer, writeTestConfig, type ConfigObject, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';

/** One test client: a subnet, what the database must say about it, and the region it must get. */
interface Case {
  cidr: string;
  country: string;
  /** ISO 3166-2 subdivision code the database must give, when the case depends on it. */
  subdivision?: string;
  region: string;
}

const IPV4_CASES: Case[] = [
  { cidr: '133.242.0.0/24', country: 'JP', region: 'ap-tyo' },
  { cidr: '202.32.0.0/24', country: 'JP', region: 'ap-tyo' },
  { cidr: '165.21.0.0/24', country: 'SG', region: 'ap-sin' },
  { cidr: '87.32.0.0/24', country: 'IE', region: 'eu-ie' },
  { cidr: '80.128.0.0/24', country: 'DE', region: 'eu-ie' },
  { cidr: '90.0.0.0/24', country: 'FR', region: 'eu-ie' },
  { cidr: '200.160.0.0/24', country: 'BR', subdivision: 'SP', region: 'sa-sao' },
  { cidr: '68.144.0.0/24', country: 'CA', subdivision: 'AB', region: 'ca-ab' },
  { cidr: '129.116.0.0/24', country: 'US', subdivision: 'TX', region: 'us-tx' },
  { cidr: '129.119.0.0/24', country: 'US', subdivision: 'TX', region: 'us-tx' },
  { cidr: '117.192.0.0/24', country: 'IN', region: 'ap-sin' },
  { cidr: '1.120.0.0/24', country: 'AU', region: 'ap-sin' },
  // A longer and a shorter source prefix than the /24 floor.
  { cidr: '202.32.0.77/32', country: 'JP', region: 'ap-tyo' },
  { cidr: '165.21.0.0/16', country: 'SG', region: 'ap-sin' },
];

const IPV6_CASES: Case[] = [
  { cidr: '2400:4000::/56', country: 'JP', region: 'ap-tyo' },
  { cidr: '2400:4000::/48', country: 'JP', region: 'ap-tyo' },
  { cidr: '2804:14c::/56', country: 'BR', subdivision: 'SP', region: 'sa-sao' },
  { cidr: '2a01:e00::/48', country: 'FR', region: 'eu-ie' },
  { cidr: '2a01:e00::/56', country: 'FR', region: 'eu-ie' },
];

const CASES = [...IPV4_CASES, ...IPV6_CASES];

/** The first address of a CIDR as text (what the database is asked about). */
function firstAddr(cidr: string): string {
  return cidr.split('/')[0]!;
}

let db: GeoDb | undefined;
function database(): GeoDb {
  assert.ok(db, 'the database was not opened (see the first test)');
  return db;
}

/**
 * The scope the rules give a public subnet (no weight below 1 in play); `undefined` when the
 * cell cannot be worked out (then only the bounds are checked).
 */
function expectedScope(cidr: string, overrides: OverrideSpec[] = []): number | undefined {
  try {
    return database().expectedScope(cidr, overrides);
  } catch (e) {
    if (e instanceof Incomputable) return undefined;
    throw e;
  }
}

/** Asserts the reply echoes the client subnet and carries `scope` (or, unknown, 1..floor). */
function assertEcs(r: SteeredReply, cidr: string, scope: number | undefined): void {
  const c = parseCidr(cidr);
  assert.ok(r.ecs, `the reply carries a CLIENT-SUBNET option\n${r.summary}`);
  assert.ok(sameIp(r.ecs.address, firstAddr(cidr)), `ECS address echoed: ${r.ecs.address} vs ${cidr}\n${r.summary}`);
  assert.equal(r.ecs.source, c.prefix, `ECS source prefix echoed\n${r.summary}`);
  const floor = c.family === 4 ? 24 : 56;
  if (scope === undefined) {
    assert.ok(r.ecs.scope >= 1 && r.ecs.scope <= floor, `scope ${r.ecs.scope} must be within 1..${floor}\n${r.summary}`);
  } else {
    assert.equal(r.ecs.scope, scope, `ECS scope for ${cidr}: expected /${scope} (the widest aligned prefix inside its cell), got /${r.ecs.scope}\n${r.summary}`);
  }
}

function geoConfig(mutate?: (cfg: ConfigObject) => void): TestConfig {
  return writeTestConfig((cfg) => {
    // dns.rateLimit.mode off: ECS clients of many subnets, all sent from 127.0.0.1 (the limiter counts the source, never the ECS address).
    withRateLimitMode(cfg, 'off');
    cfg.geoip = { enabled: true };
    mutate?.(cfg);
  });
}

describe('geo: the embedded database, no overrides, no weights', () => {
  let cfg: TestConfig;
  let srv: RunningServer;

  before(async () => {
    cfg = geoConfig();
    srv = await spawnServer({ configFile: cfg.file });
    const geo = await waitGeoTable(srv, { timeoutMs: 120000 });
    db = new GeoDb(geo.database);
  });

  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  test('precondition: the database places every test subnet in its country, nearest to the expected region', () => {
    const countries = new Set<string>();
    const continents = new Set<string>();
    for (const c of CASES) {
      const p = database().place(firstAddr(c.cidr));
      assert.ok(p, `${c.cidr}: not in the database ${database().file}`);
      assert.equal(p.country, c.country, `${c.cidr}: the database says country ${p.country} (${JSON.stringify(p)})`);
      if (c.subdivision) assert.equal(p.subdivision, c.subdivision, `${c.cidr}: the database says subdivision ${p.subdivision} (${JSON.stringify(p)})`);
      assert.ok(typeof p.lat === 'number' && typeof p.lon === 'number', `${c.cidr}: the database gives no coordinates (${JSON.stringify(p)})`);
      const nearest = rankFrom({ lat: p.lat, lon: p.lon });
      assert.equal(nearest[0], c.region, `${c.cidr}: from (${p.lat}, ${p.lon}) the nearest regions are ${nearest.join(', ')}`);
      countries.add(p.country!);
      if (p.continent) continents.add(p.continent);
    }
    assert.ok(countries.size >= 6, `at least six countries: ${[...countries].join(', ')}`);
    assert.ok(continents.size >= 4, `at least four continents: ${[...continents].join(', ')}`);
  });

  for (const c of CASES) {
    test(`${c.cidr} (${c.country}${c.subdivision ? `-${c.subdivision}` : ''}) gets ${c.region}, A and AAAA, with the scope of its cell`, async () => {
      const scope = expectedScope(c.cidr);
      const a = await askSteered(srv.udp, 'A', c.cidr);
      assert.equal(a.status, 'NOERROR', a.summary);
      assert.ok(a.run.msg.flags.includes('aa'), `authoritative\n${a.summary}`);
      assert.equal(a.region, c.region, `A answer for ${c.cidr}: expected ${c.region} ${FLEET[c.region]!.a.join(' ')}\n${a.summary}`);
      assertEcs(a, c.cidr, scope);

      const aaaa = await askSteered(srv.udp, 'AAAA', c.cidr);
      assert.equal(aaaa.status, 'NOERROR', aaaa.summary);
      assert.deepEqual(aaaa.addrs, FLEET[c.region]!.aaaa, `AAAA answer for ${c.cidr} comes from ${c.region}'s IPv6 endpoint\n${aaaa.summary}`);
      assertEcs(aaaa, c.cidr, scope);
    });
  }

  test('the scope is never 0 and never above the source prefix for a /24 inside a wider cell', async () => {
    // Spot check on the bounds alone, whatever the cell computation says.
    for (const cidr of ['87.32.0.0/24', '200.160.0.0/24', '117.192.0.0/24']) {
      const r = await askSteered(srv.udp, 'A', cidr);
      assert.ok(r.ecs && r.ecs.scope > 0 && r.ecs.scope <= 24, r.summary);
    }
  });

  test('two /24s in one scope block get the same answer; the scope says how far the answer holds', async () => {
    // 133.242.0.0/24's scope covers a block; a /24 at the far end of that block is in the same cell.
    const first = await askSteered(srv.udp, 'A', '133.242.0.0/24');
    assert.ok(first.ecs, first.summary);
    const block = parseCidr(`133.242.0.0/${first.ecs.scope}`);
    const lastOfBlock = `${[24n, 16n, 8n].map((s) => String((block.end >> s) & 255n)).join('.')}.0/24`;
    assert.equal(database().cellOf(lastOfBlock), database().cellOf('133.242.0.0/24'), `precondition: ${lastOfBlock} is in the same cell`);
    const other = await askSteered(srv.udp, 'A', lastOfBlock);
    assert.equal(other.region, first.region, other.summary);
    assert.equal(other.ecs?.scope, first.ecs.scope, `the same block, seen from its other end\n${other.summary}`);
  });

  test('+subnet=0.0.0.0/0 and ::/0: scope 0 and the answer for the source address (127.0.0.1: the default location, us-va)', async () => {
    for (const [subnet, qtype] of [
      ['0.0.0.0/0', 'A'],
      ['0.0.0.0/0', 'AAAA'],
      ['::/0', 'A'],
      ['::/0', 'AAAA'],
    ] as const) {
      const r = await askSteered(srv.udp, qtype, subnet);
      assert.equal(r.status, 'NOERROR', r.summary);
      assert.deepEqual(r.addrs, qtype === 'A' ? FLEET['us-va']!.a : FLEET['us-va']!.aaaa, r.summary);
      assert.ok(r.ecs, r.summary);
      assert.equal(r.ecs.source, 0, r.summary);
      assert.equal(r.ecs.scope, 0, `source prefix 0 → scope 0\n${r.summary}`);
    }
  });

  test('documentation, private and reserved subnets fall back to the source (us-va), scope = source prefix (at most /24, /56)', async () => {
    const cases: [string, number][] = [
      ['198.51.100.0/24', 24],
      ['203.0.113.0/24', 24],
      ['192.0.2.0/24', 24],
      ['10.20.0.0/16', 16],
      ['192.168.7.0/24', 24],
      ['100.64.0.0/12', 12],
      // Longer than the floor: the docs bound the scope by /24.
      ['198.51.100.7/32', 24],
      ['2001:db8:1234::/48', 48],
      ['2001:db8::/56', 56],
      ['fd12:3456:789a::/56', 56],
    ];
    for (const [subnet, scope] of cases) {
      for (const qtype of ['A', 'AAAA'] as const) {
        const r = await askSteered(srv.udp, qtype, subnet);
        assert.equal(r.status, 'NOERROR', r.summary);
        assert.equal(r.region, 'us-va', `${subnet} ${qtype}: the source 127.0.0.1 is at the default location\n${r.summary}`);
        assert.ok(r.ecs, r.summary);
        assert.equal(r.ecs.scope, scope, `${subnet}: a fallback answer must carry scope /${scope}, not one a resolver would give other clients\n${r.summary}`);
      }
    }
  });

  test('kdig +subnet, a second client: Singapore → ap-sin with the scope of its cell', async () => {
    const cidr = '165.21.0.0/24';
    const scope = expectedScope(cidr);
    const r = await kdig(srv.udp, [`+subnet=${cidr}`, 'api.gslb.example.com', 'A']);
    const m = r.json;
    assert.equal(m.RCODE, 0, r.stdout + r.stderr);
    const addrs = (m.answerRRs ?? []).filter((rr) => rr.TYPE === 1).map((rr) => String(rr.rdataA)).sort();
    assert.equal(regionOf(addrs), 'ap-sin', r.stdout);
    const opt = kdigOpt(m);
    const ecs = opt?.options.find((o) => o.code === 8);
    assert.ok(ecs, `kdig's reply carries ECS\n${r.stdout}`);
    assert.equal(ecs.data.readUInt16BE(0), 1, 'family IPv4');
    assert.equal(ecs.data[2], 24, 'source prefix echoed');
    if (scope !== undefined) assert.equal(ecs.data[3], scope, `scope\n${r.stdout}`);
    else assert.ok(ecs.data[3]! >= 1 && ecs.data[3]! <= 24, r.stdout);
    assert.deepEqual([...ecs.data.subarray(4)], [165, 21, 0], 'address echoed');
  });
});

describe('geo: network overrides beat the database, longest prefix first', () => {
  const OVERRIDES: OverrideSpec[] = [
    { cidr: '133.242.0.0/16', regions: ['sa-sao'] },
    { cidr: '133.242.0.0/24', regions: ['eu-ie'] },
    { cidr: '2400:4000::/32', regions: ['sa-sao'] },
    { cidr: '2400:4000::/48', regions: ['eu-ie'] },
  ];
  let cfg: TestConfig;
  let srv: RunningServer;

  before(async () => {
    cfg = geoConfig((c) => {
      c.networks = OVERRIDES;
    });
    srv = await spawnServer({ configFile: cfg.file });
    const geo = await waitGeoTable(srv, { timeoutMs: 120000 });
    db ??= new GeoDb(geo.database);
  });

  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  const cases: { cidr: string; region: string; why: string }[] = [
    { cidr: '133.242.0.0/24', region: 'eu-ie', why: 'the /24 override inside the /16 one' },
    { cidr: '133.242.1.0/24', region: 'sa-sao', why: 'the /16 override' },
    { cidr: '133.242.128.0/24', region: 'sa-sao', why: 'the /16 override' },
    { cidr: '133.243.0.0/24', region: 'ap-tyo', why: 'no override: the database (Japan)' },
    { cidr: '2400:4000::/56', region: 'eu-ie', why: 'the /48 override inside the /32 one' },
    { cidr: '2400:4000:1::/56', region: 'sa-sao', why: 'the /32 override' },
    { cidr: '2400:4001::/56', region: 'ap-tyo', why: 'no override: the database (Japan)' },
  ];

  test('precondition: the database puts every one of these subnets in Japan (nearest: ap-tyo)', () => {
    for (const c of cases) {
      const p = database().place(firstAddr(c.cidr));
      assert.ok(p && p.country === 'JP', `${c.cidr}: ${JSON.stringify(p)}`);
      assert.equal(rankFrom({ lat: p.lat!, lon: p.lon! })[0], 'ap-tyo', c.cidr);
    }
  });

  for (const c of cases) {
    test(`${c.cidr} → ${c.region} (${c.why}), with the scope of its cell`, async () => {
      const scope = expectedScope(c.cidr, OVERRIDES);
      const a = await askSteered(srv.udp, 'A', c.cidr);
      assert.equal(a.status, 'NOERROR', a.summary);
      assert.equal(a.region, c.region, a.summary);
      assertEcs(a, c.cidr, scope);
      const aaaa = await askSteered(srv.udp, 'AAAA', c.cidr);
      assert.deepEqual(aaaa.addrs, FLEET[c.region]!.aaaa, aaaa.summary);
      assertEcs(aaaa, c.cidr, scope);
    });
  }

  test('an override /24 is a cell of its own: scope exactly /24', async () => {
    const r = await askSteered(srv.udp, 'A', '133.242.0.0/24');
    assert.equal(r.ecs?.scope, 24, r.summary);
  });
});

describe('geo: admission weights below 1 (w[ap-tyo][ap-tyo] = 0.5)', () => {
  let cfg: TestConfig;
  let srv: RunningServer;
  const W = 0.5;

  before(async () => {
    cfg = geoConfig((c) => {
      const policy = (c.policy ?? {}) as Record<string, unknown>;
      c.policy = { ...policy, weights: { 'ap-tyo': { 'ap-tyo': W } } };
    });
    srv = await spawnServer({ configFile: cfg.file });
    const geo = await waitGeoTable(srv, { timeoutMs: 120000 });
    db ??= new GeoDb(geo.database);
  });

  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  test('precondition: the hash functions match their published test vectors', () => {
    assert.equal(murmur3x86_32(Buffer.alloc(0), 0), 0);
    assert.equal(murmur3x86_32(Buffer.alloc(0), 1), 0x514e28b7);
    assert.equal(murmur3x86_32(Buffer.alloc(0), 0xffffffff), 0x81f16f39);
    assert.equal(murmur3x86_32(Buffer.from([0x21, 0x43, 0x65, 0x87]), 0), 0xf55b516b);
    assert.equal(murmur3x86_32(Buffer.from([0x21, 0x43, 0x65, 0x87]), 0x5082edee), 0x2362f9de);
    assert.equal(murmur3x86_32(Buffer.from([0x21, 0x43, 0x65]), 0), 0x7e4a8634);
    assert.equal(murmur3x86_32(Buffer.from([0x21, 0x43]), 0), 0xa0f7b07a);
    assert.equal(murmur3x86_32(Buffer.from([0x21]), 0), 0x72661cf4);
    assert.equal(murmur3x86_32(Buffer.from([0, 0, 0, 0]), 0), 0x2362f9de);
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  });

  test('Japanese /24s split between ap-tyo and the next region by the admission hash, every scope exactly /24', async () => {
    const ranking = rankFrom({ lat: 35.69, lon: 139.69 });
    assert.equal(ranking[0], 'ap-tyo');
    const spill = ranking[1]!;
    const seen = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const cidr = `133.242.${i}.0/24`;
      const want = admissionDraw(cidr, 'ap-tyo') < W ? 'ap-tyo' : spill;
      seen.set(want, (seen.get(want) ?? 0) + 1);
      const r = await askSteered(srv.udp, 'A', cidr);
      assert.equal(r.status, 'NOERROR', r.summary);
      assert.equal(r.region, want, `${cidr}: draw ${admissionDraw(cidr, 'ap-tyo').toFixed(4)} for ap-tyo (weight ${W}) → ${want}\n${r.summary}`);
      assert.equal(r.ecs?.scope, 24, `${cidr}: a weight below 1 is in play, so the scope is exactly /24\n${r.summary}`);
    }
    assert.ok((seen.get('ap-tyo') ?? 0) > 0 && (seen.get(spill) ?? 0) > 0, `precondition: both outcomes occur among the 40 subnets (${JSON.stringify([...seen])})`);
  });

  test('IPv6: a Japanese /56 gets exactly /56 while a weight below 1 is in play', async () => {
    const cidr = '2400:4000::/56';
    const want = admissionDraw(cidr, 'ap-tyo') < W ? 'ap-tyo' : rankFrom({ lat: 35.69, lon: 139.69 })[1]!;
    const r = await askSteered(srv.udp, 'AAAA', cidr);
    assert.deepEqual(r.addrs, FLEET[want]!.aaaa, r.summary);
    assert.equal(r.ecs?.scope, 56, r.summary);
  });

  test('clients of another home are untouched: Ireland keeps eu-ie and the scope of its cell', async () => {
    const cidr = '87.32.0.0/24';
    const r = await askSteered(srv.udp, 'A', cidr);
    assert.equal(r.region, 'eu-ie', r.summary);
    assertEcs(r, cidr, expectedScope(cidr));
  });
});
