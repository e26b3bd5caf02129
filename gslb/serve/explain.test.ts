import { test } from 'node:test';
import assert from 'node:assert/strict';
import { explain, ExplainError, parseSubnet, type ExplainResult } from './explain.js';
import { admissionDraw } from '../policy/admission.js';
import { ADDRS, context, FLEET, fixtureTable, lookup, NOW, planWith, snapshot } from '../../test/helpers/explain-fixture.js';
import { explainQuery, type ExplainContext } from './serving.js';
import { compileZones } from '../dns/zone.js';
import { Responder } from '../dns/respond.js';
import { decodeMessage, ipBytes } from '../dns/message.js';
import { QTYPE } from '../dns/constants.js';
import { query, EDNS } from '../dns/testing.js';
import { defaultTable } from '../geo/table.js';
import { parseAddr } from '../geo/addr.js';
import type { Plan } from '../model/types.js';
import type { WhenAllDownPolicy } from '../model/policy.js';

const run = (q: { client: string; subnet?: string; name?: string; type?: 'A' | 'AAAA' }, ctx: ExplainContext = context(), now = NOW): Promise<ExplainResult> =>
  explainQuery(ctx, { client: q.client, name: q.name ?? 'api.gslb.example.com', type: q.type ?? 'A', ...(q.subnet === undefined ? {} : { subnet: q.subnet }) }, now);

const chosen = (r: ExplainResult) => r.candidates.filter((c) => c.answered).map((c) => c.region);

test('where the client is: a case table of cells, keys and ECS', async () => {
  interface Case {
    name: string;
    client: string;
    subnet?: string;
    type?: 'A' | 'AAAA';
    origin: 'geoip' | 'default' | 'override';
    special?: boolean;
    range: string | null;
    cidrs?: string[];
    ranking: string[];
    key: string;
    usedEcs: boolean;
    fallback?: RegExp;
    located: string | null;
    from: 'database' | 'default-location' | null;
    region: string;
    scope: number | null;
    note?: RegExp;
  }
  const cases: Case[] = [
    { name: 'geoip cell, packet source', client: '1.2.3.4', origin: 'geoip', range: '1.0.0.0–1.255.255.255', cidrs: ['1.0.0.0/8'], ranking: ['a', 'b', 'c'], key: '1.2.3.0/24', usedEcs: false, located: '1.2.3.4', from: 'database', region: 'a', scope: null },
    { name: 'override cell', client: '2.9.9.9', origin: 'override', range: '2.0.0.0–2.255.255.255', ranking: ['c', 'a'], key: '2.9.9.0/24', usedEcs: false, located: '2.9.9.9', from: 'database', region: 'c', scope: null, note: /override 2\.0\.0\.0\/8 sets the ranking/ },
    { name: 'geoip cell whose /24 ranks differently from its own position', client: '3.4.5.6', origin: 'geoip', range: '3.0.0.0–3.255.255.255', ranking: ['b', 'a', 'c'], key: '3.4.5.0/24', usedEcs: false, located: '3.4.5.6', from: 'database', region: 'b', scope: null, note: /own position the ranking would be b, c, a/ },
    { name: 'default cell: not in the database', client: '4.4.4.4', origin: 'default', range: '4.0.0.0–255.255.255.255', cidrs: ['4.0.0.0/6', '8.0.0.0/5', '16.0.0.0/4', '32.0.0.0/3', '64.0.0.0/2', '128.0.0.0/1'], ranking: ['a', 'b', 'c'], key: '4.4.4.0/24', usedEcs: false, located: null, from: 'default-location', region: 'a', scope: null, note: /database has no location for 4\.4\.4\.4/ },
    { name: 'special client → the default location', client: '10.0.0.1', origin: 'default', special: true, range: null, ranking: ['a', 'b', 'c'], key: '0.0.0.0/0', usedEcs: false, located: null, from: 'default-location', region: 'a', scope: null, note: /10\.0\.0\.1 is private, reserved or not routable/ },
    { name: 'special IPv6 client', client: '::1', origin: 'default', special: true, range: null, ranking: ['a', 'b', 'c'], key: '0.0.0.0/0', usedEcs: false, located: null, from: 'default-location', region: 'a', scope: null },
    { name: 'ECS used (resolver on a private address)', client: '10.0.0.1', subnet: '3.7.0.0/16', origin: 'geoip', range: '3.0.0.0–3.255.255.255', ranking: ['b', 'a', 'c'], key: '3.7.0.0/16', usedEcs: true, located: '3.7.0.0', from: 'database', region: 'b', scope: 8 },
    { name: 'ECS with host bits', client: '10.0.0.1', subnet: '1.2.3.77/24', origin: 'geoip', range: '1.0.0.0–1.255.255.255', ranking: ['a', 'b', 'c'], key: '1.2.3.0/24', usedEcs: true, located: '1.2.3.0', from: 'database', region: 'a', scope: 8, note: /host bits past \/24 were cleared \(1\.2\.3\.0\/24\)/ },
    { name: 'ECS private → packet source (fallback)', client: '3.1.1.1', subnet: '192.168.7.0/24', origin: 'geoip', range: '3.0.0.0–3.255.255.255', ranking: ['b', 'a', 'c'], key: '3.1.1.0/24', usedEcs: false, fallback: /192\.168\.7\.0\/24 is private, reserved or not routable/, located: '3.1.1.1', from: 'database', region: 'b', scope: 24 },
    { name: 'ECS source prefix 0 → packet source, scope 0', client: '1.1.1.1', subnet: '0.0.0.0/0', origin: 'geoip', range: '1.0.0.0–1.255.255.255', ranking: ['a', 'b', 'c'], key: '1.1.1.0/24', usedEcs: false, fallback: /source prefix is 0/, located: '1.1.1.1', from: 'database', region: 'a', scope: 0 },
    { name: 'ECS private and source special → special cell', client: '127.0.0.1', subnet: '10.9.0.0/16', origin: 'default', special: true, range: null, ranking: ['a', 'b', 'c'], key: '0.0.0.0/0', usedEcs: false, fallback: /10\.9\.0\.0\/16 is private/, located: null, from: 'default-location', region: 'a', scope: 16 },
    { name: 'IPv6 ECS, AAAA', client: '10.0.0.1', subnet: '2b00:1234:5600::/40', type: 'AAAA', origin: 'geoip', range: '2b00::–2bff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', cidrs: ['2b00::/8'], ranking: ['b', 'a', 'c'], key: '2b00:1234:5600::/40', usedEcs: true, located: '2b00:1234:5600::', from: 'database', region: 'a', scope: 8 },
    { name: 'IPv6 source masked to /56', client: '2a00:1:2:3ff::9', type: 'AAAA', origin: 'geoip', range: '2a00::–2aff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', ranking: ['a', 'b', 'c'], key: '2a00:1:2:300::/56', usedEcs: false, located: '2a00:1:2:3ff::9', from: 'database', region: 'a', scope: null },
    { name: 'IPv6 ECS in ULA → fallback, scope min(source, /56)', client: '2a00::1', subnet: 'fd00:1::/48', type: 'AAAA', origin: 'geoip', range: '2a00::–2aff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', ranking: ['a', 'b', 'c'], key: '2a00::/56', usedEcs: false, fallback: /fd00:1::\/48 is private/, located: '2a00::1', from: 'database', region: 'a', scope: 48 },
  ];
  for (const c of cases) {
    const r = await run({ client: c.client, subnet: c.subnet, type: c.type });
    const at = `${c.name}: ${JSON.stringify(r, null, 1).slice(0, 3000)}`;
    assert.equal(r.cell.origin, c.origin, at);
    assert.equal(r.cell.special, c.special ?? false, at);
    assert.equal(r.cell.range, c.range, at);
    if (c.cidrs) assert.deepEqual(r.cell.rangeCidrs, c.cidrs, at);
    assert.deepEqual(r.cell.ranking, c.ranking, at);
    assert.equal(r.subnetKey, c.key, at);
    assert.equal(r.usedEcs, c.usedEcs, at);
    if (c.fallback) assert.match(r.fallbackReason ?? '', c.fallback, at);
    else assert.equal(r.fallbackReason, undefined, at);
    assert.equal(r.located?.address ?? null, c.located, at);
    assert.equal(r.distanceFrom?.what ?? null, c.from, at);
    assert.equal(r.answer.region, c.region, at);
    assert.deepEqual(chosen(r), [c.region], at);
    assert.equal(r.answer.ecsScope, c.scope, at);
    assert.equal(r.answer.rcode, 'NOERROR', at);
    assert.equal(r.answer.ttl, 30, at);
    if (c.note) assert.ok(r.notes.some((n) => c.note!.test(n)), `${c.name}: notes ${JSON.stringify(r.notes)}`);
    assert.equal(r.reasons[0], `client placed by ${r.cell.description}`, at);
    assert.ok(r.geoTable.compiled, at);
    // Every fleet region is listed once: the ranking first, in order.
    assert.deepEqual(r.candidates.slice(0, c.ranking.length).map((x) => x.region), c.ranking, at);
    assert.deepEqual(r.candidates.map((x) => x.region).sort(), ['a', 'b', 'c'], at);
  }
});

test('distances, bias and the located position', async () => {
  const r = await run({ client: '1.2.3.4' });
  assert.deepEqual(r.located, { address: '1.2.3.4', lat: 50.1, lon: 0.2, country: 'GB', city: 'Westtown', accuracyRadiusKm: 20, network: '1.0.0.0/8' });
  const byId = new Map(r.candidates.map((c) => [c.region, c]));
  assert.ok(byId.get('a')!.distanceKm! < 20, JSON.stringify(byId.get('a')));
  const c = byId.get('c')!;
  assert.equal(c.bias, 20);
  assert.ok(Math.abs(c.biasedKm! - c.distanceKm! * 0.8) < 0.2, JSON.stringify(c));
  assert.deepEqual(
    r.candidates.map((x) => [x.rank, x.admitted]),
    [
      [1, true],
      [2, null],
      [3, null],
    ],
  );
  assert.match(byId.get('b')!.why, /^not reached: a admitted the client first$/);
  // The override cell: c first although b is nearer; a region outside the override's list.
  const o = await run({ client: '2.9.9.9' });
  assert.deepEqual(
    o.candidates.map((x) => [x.region, x.rank]),
    [
      ['c', 1],
      ['a', 2],
      ['b', null],
    ],
  );
  assert.match(o.candidates[2]!.why, /not in the override's list \(2\.0\.0\.0\/8\)/);
});

/** A /24 in 1/8 whose draw for `region` is below (want true) or at/above (false) `w`. */
function subnetWithDraw(region: string, w: number, want: boolean): string {
  for (let i = 0; i < 65536; i++) {
    const hi = (0x01000000 | (i << 8)) >>> 0;
    const d = admissionDraw({ family: 4, hi, lo: 0, prefix: 24 }, region);
    if (d < w === want) return `1.${(i >>> 8) & 255}.${i & 255}.0/24`;
  }
  throw new Error('no such subnet');
}

test('weights below 1: draws, admission and spill, scope /24', async () => {
  const ctx = context({ plan: planWith({ weights: { a: { a: 0.5, b: 0.25 } } }) });
  const stay = await run({ client: '10.0.0.1', subnet: subnetWithDraw('a', 0.5, true) }, ctx);
  assert.equal(stay.answer.region, 'a');
  assert.equal(stay.candidates[0]!.weight, 0.5);
  assert.ok(stay.candidates[0]!.draw! < 0.5);
  assert.equal(stay.candidates[0]!.admitted, true);
  assert.match(stay.candidates[0]!.why, /weight 0\.5 for home a, draw 0\.\d{4} < 0\.5: admitted/);
  assert.equal(stay.answer.ecsScope, 24, 'admission in play: the floor');
  assert.ok(stay.notes.some((n) => /scope: \/24: a region weighed at or before the answer has a weight below 1/.test(n)), JSON.stringify(stay.notes));
  // b's weight shows its draw even when the walk does not reach it.
  assert.equal(typeof stay.candidates[1]!.draw, 'number');
  assert.equal(stay.candidates[1]!.admitted, null);

  // Spill from a: the walk goes on to b (weight 0.25) and then c (weight 1).
  let spilled = 0;
  for (let i = 0; i < 200 && spilled < 5; i++) {
    const subnet = `1.${i}.7.0/24`;
    const r = await run({ client: '10.0.0.1', subnet }, ctx);
    const [a, b, c] = r.candidates;
    const key = { family: 4 as const, hi: parseAddr(`1.${i}.7.0`)!.hi, lo: 0, prefix: 24 };
    assert.equal(a!.draw, admissionDraw(key, 'a'), subnet);
    if (a!.draw! < 0.5) {
      assert.equal(r.answer.region, 'a', subnet);
      continue;
    }
    spilled++;
    assert.equal(a!.admitted, false, subnet);
    assert.match(a!.why, /≥ 0\.5: not admitted, spills to the next/, subnet);
    const expect = b!.draw! < 0.25 ? 'b' : 'c';
    assert.equal(r.answer.region, expect, subnet);
    assert.equal(b!.admitted, expect === 'b', subnet);
    assert.equal(c!.admitted, expect === 'c' ? true : null, subnet);
    assert.equal(c!.draw, undefined, `${subnet}: weight 1 shows no draw`);
    assert.ok(r.reasons.some((x) => /a: weight 0\.5 for home a, draw .* ≥ 0\.5: not admitted, spill to the next/.test(x)), subnet);
    assert.equal(r.answer.ecsScope, 24, subnet);
  }
  assert.equal(spilled, 5, 'some subnets spill');

  // Weights of another home do not touch this client: a 3/8 client (home b) has weight 1 everywhere.
  const other = await run({ client: '3.3.3.3', subnet: '3.3.3.0/24' }, ctx);
  assert.ok(other.candidates.every((c) => c.weight === 1 && c.draw === undefined), JSON.stringify(other.candidates));
  assert.equal(other.answer.ecsScope, 8);
});

test('a region without the family is skipped for AAAA; a name some regions do not serve', async () => {
  const r = await run({ client: '3.3.3.3', type: 'AAAA' });
  assert.equal(r.candidates[0]!.region, 'b');
  assert.equal(r.candidates[0]!.hasFamily, false);
  assert.equal(r.candidates[0]!.servesName, true);
  assert.equal(r.candidates[0]!.admitted, false);
  assert.match(r.candidates[0]!.why, /has no IPv6 endpoints: skipped for AAAA/);
  assert.equal(r.answer.region, 'a');
  assert.deepEqual(r.answer.addresses, ADDRS.a.v6);
  assert.ok(r.reasons.includes('b: no IPv6 endpoints, skipped for AAAA'), JSON.stringify(r.reasons));

  const bc = await run({ client: '1.2.3.4', name: 'bc.gslb.example.com' });
  assert.equal(bc.candidates[0]!.servesName, false);
  assert.match(bc.candidates[0]!.why, /does not serve bc\.gslb\.example\.com/);
  assert.equal(bc.answer.region, 'b');
  assert.equal(bc.answer.ttl, 20);
  // Through a CNAME: the steered name answers.
  const www = await run({ client: '1.2.3.4', name: 'WWW.gslb.example.com.' });
  assert.equal(www.name, 'www.gslb.example.com');
  assert.equal(www.steeredName, 'api.gslb.example.com');
  assert.equal(www.answer.region, 'a');
});

test('whenAllDown: every region down', async () => {
  const plan = planWith({ down: ['a', 'b', 'c'] });
  const cases: [WhenAllDownPolicy, string | null, string[], 'NOERROR' | 'SERVFAIL'][] = [
    ['nearest', 'a', ADDRS.a.v4, 'NOERROR'],
    ['all', null, [...ADDRS.a.v4, ...ADDRS.b.v4, ...ADDRS.c.v4], 'NOERROR'],
    ['empty', null, [], 'NOERROR'],
    ['servfail', null, [], 'SERVFAIL'],
  ];
  for (const [policy, region, addresses, rcode] of cases) {
    const r = await run({ client: '1.2.3.4' }, context({ plan, whenAllDown: policy }));
    assert.equal(r.answer.region, region, policy);
    assert.deepEqual(r.answer.addresses, addresses, policy);
    assert.equal(r.answer.rcode, rcode, policy);
    assert.ok(r.candidates.every((c) => c.down && c.admitted !== true), policy);
    assert.match(r.candidates[0]!.why, /^is down in its plan step from /, policy);
    assert.ok(r.reasons.includes(`no region admitted the client: whenAllDown=${policy}`), policy);
    if (policy === 'nearest') assert.match(r.candidates[0]!.why, /answered under whenAllDown=nearest/);
    else assert.deepEqual(chosen(r), [], policy);
  }
});

test('TTL: a scheduled change shortens it; the plan step is reported', async () => {
  const plan = planWith({ reasons: ['now'] }, [{ weights: { a: { a: 0 } }, reasons: ['drain a'] }]);
  const r = await run({ client: '1.2.3.4' }, context({ plan }));
  assert.equal(r.answer.ttl, 30, 'the change is 60 s away, beyond TTL0');
  const soon: Plan = { ...plan, regions: { a: [{ ...plan.regions.a![0]!, at: NOW + 12_500 }] } };
  const s = await run({ client: '1.2.3.4' }, context({ plan: soon }));
  assert.equal(s.answer.ttl, 12);
  // Nothing is planned for a before the change: its step in force is the implicit one.
  assert.deepEqual(s.planStep, { at: 0, planVersion: 'fixture:1', reasons: ['nothing planned for this region: weight 1, up'] });
  const later = await run({ client: '1.2.3.4' }, context({ plan: soon }), NOW + 13_000);
  assert.deepEqual(later.planStep.reasons, ['drain a'], JSON.stringify(later.planStep));
});

test('before the first table: the default table, and the result says so', async () => {
  const r = await run({ client: '1.2.3.4', subnet: '1.2.0.0/16' }, context({ geo: defaultTable(['a', 'b', 'c'], 'no geo table yet') }));
  assert.equal(r.geoTable.compiled, false);
  assert.match(r.geoTable.note, /no compiled geo table is in force \(no geo table yet\)/);
  assert.ok(r.notes.some((n) => /^geo: no compiled geo table/.test(n)));
  assert.equal(r.cell.origin, 'default');
  assert.equal(r.distanceFrom?.what, 'default-location');
  assert.equal(r.answer.region, 'a');
  assert.equal(r.answer.ecsScope, 0, 'one cell, no weights: scope 0');
});

test('bad input: ExplainError names the field', async () => {
  const cases: [Parameters<typeof run>[0], string, RegExp][] = [
    [{ client: 'localhost' }, 'client', /"localhost" is not an IPv4 or IPv6 address/],
    [{ client: '1.2.3.4', subnet: '1.2.3.0' }, 'subnet', /is not a subnet like/],
    [{ client: '1.2.3.4', subnet: '1.2.3.0/33' }, 'subnet', /\/33 is longer than an IPv4 address/],
    [{ client: '1.2.3.4', subnet: '::ffff:1.2.3.0/120' }, 'subnet', /dotted form/],
    [{ client: '1.2.3.4', name: 'nope.gslb.example.com' }, 'name', /is not a steered name; the steered names are: api\.gslb\.example\.com, bc\.gslb\.example\.com/],
    [{ client: '1.2.3.4', name: 'gslb.example.com' }, 'name', /not a steered name/],
    [{ client: '1.2.3.4', name: 'a..b' }, 'name', /is not a domain name/],
  ];
  for (const [q, field, msg] of cases) {
    await assert.rejects(run(q), (e: unknown) => e instanceof ExplainError && e.field === field && msg.test(e.problem), JSON.stringify(q));
  }
  assert.deepEqual(parseSubnet(' 2001:db8:1:2:3::/80 '), { addr: parseAddr('2001:db8:1:2::')!, prefix: 80, text: '2001:db8:1:2:3::/80', hostBits: false });
});

/** The ECS option payload for `cidr` as a resolver sends it. */
function ecsData(cidr: string): Buffer {
  const [a, p] = cidr.split('/') as [string, string];
  const prefix = Number(p);
  const full = ipBytes(a);
  const bytes = Buffer.from(full.subarray(0, Math.ceil(prefix / 8)));
  if (prefix % 8 !== 0) bytes[bytes.length - 1]! &= (0xff << (8 - (prefix % 8))) & 0xff;
  return Buffer.concat([Buffer.from([0, full.length === 4 ? 1 : 2, prefix, 0]), bytes]);
}

function addrText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  const g: string[] = [];
  for (let i = 0; i < 16; i += 2) g.push(b.readUInt16BE(i).toString(16));
  return g.join(':');
}

test('explain agrees with the responder: answer, TTL and ECS scope, over plans, policies and clients', async () => {
  const geo = fixtureTable();
  const plans: [string, Plan][] = [
    ['plain', planWith()],
    ['weights', planWith({ weights: { a: { a: 0.5, b: 0.3 }, b: { b: 0.6 } } })],
    ['a down, later change', planWith({ down: ['a'] }, [{ down: [] }])],
    ['all down', planWith({ down: ['a', 'b', 'c'] })],
  ];
  const sources = ['1.2.3.4', '3.4.5.6', '2.9.9.9', '4.4.4.4', '10.0.0.1', '127.0.0.1', '::1', '2a00:1::1', '2b00:5::7', '2c00::1', '::ffff:1.9.9.9'];
  const subnets: (string | undefined)[] = [undefined, '0.0.0.0/0', '10.1.0.0/16', 'fd00:1::/48', '::/0', '1.200.0.0/13', '2a00:77::/32', '2b00:1:2:300::/56', '2b00:1:2:3::/64', '3.3.3.3/32'];
  for (let i = 0; i < 24; i++) subnets.push(`1.${(i * 37) & 255}.${(i * 91) & 255}.0/24`, `3.${i * 7}.${(i * 3) & 0xf0}.0/20`);
  let compared = 0;
  for (const policy of ['nearest', 'all', 'empty', 'servfail'] as WhenAllDownPolicy[]) {
    const zones = compileZones(snapshot(policy));
    for (const [planName, plan] of plans) {
      const responder = new Responder({ zones, plan, geo, opts: { udpPayloadMax: 1232, minTtl: 5 }, version: 't' });
      const ctx = context({ plan, zones, geo });
      for (const name of ['api.gslb.example.com', 'bc.gslb.example.com', 'www.gslb.example.com']) {
        for (const type of ['A', 'AAAA'] as const) {
          for (const client of sources) {
            for (const subnet of subnets) {
              const edns = subnet === undefined ? EDNS : { ...EDNS, options: [{ code: 8, data: ecsData(subnet) }] };
              const reply = responder.answer(query(`${name}.`, type === 'A' ? QTYPE.A : QTYPE.AAAA, { edns }), false, client, NOW);
              const m = decodeMessage(reply!);
              const r = await run({ client, subnet, name, type }, ctx);
              const at = `${policy} ${planName} ${name} ${type} client ${client} subnet ${subnet}: explain ${JSON.stringify(r.answer)}`;
              const rcode = m.flags & 0xf;
              assert.equal(rcode, r.answer.rcode === 'SERVFAIL' ? 2 : 0, at);
              const want = type === 'A' ? QTYPE.A : QTYPE.AAAA;
              const got = m.answers.filter((x) => x.type === want);
              assert.deepEqual(
                got.map((x) => (x.data.kind === 'raw' ? addrText(x.data.bytes) : '?')).sort(),
                r.answer.addresses.map((x) => addrText(ipBytes(x))).sort(),
                at,
              );
              for (const x of got) assert.equal(x.ttl, r.answer.ttl, at);
              const ecs = m.edns?.options.find((o) => o.code === 8);
              if (rcode === 0) assert.equal(ecs === undefined ? null : ecs.data[3], r.answer.ecsScope, at);
              compared++;
            }
          }
        }
      }
    }
  }
  assert.ok(compared > 10000, `compared ${compared}`);
});

test('explain is pure: same input, same result; the fleet only informs distances', async () => {
  const input = { client: '1.2.3.4', subnet: '1.2.3.0/24', name: 'api.gslb.example.com', decideName: compileZones(snapshot()).gslb.values().next().value!.decide, qtype: 'A' as const, now: NOW, geo: fixtureTable(), lookup, plan: planWith(), fleet: FLEET, minTtl: 5 };
  assert.deepEqual(explain(input), explain(input));
  const noDb = explain({ ...input, lookup: null });
  assert.equal(noDb.located, null);
  assert.equal(noDb.distanceFrom, null, 'a geoip cell without a database position has nothing to measure from');
  assert.ok(noDb.candidates.every((c) => c.distanceKm === null && c.biasedKm === null));
  assert.ok(noDb.notes.some((n) => /no GeoIP database is in use/.test(n)));
  assert.deepEqual(noDb.answer, explain(input).answer);
  const failing = explain({
    ...input,
    lookup: () => {
      throw new Error('boom');
    },
  });
  assert.ok(failing.notes.some((n) => /lookup of 1\.2\.3\.0 failed: boom/.test(n)), JSON.stringify(failing.notes));
});
