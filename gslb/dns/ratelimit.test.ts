import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateLimiter, RRL_ANSWER, RRL_ERROR, RRL_NODATA, RRL_NXDOMAIN, RRL_REFERRAL, type RateLimitEvent, type RateLimitOptions } from './ratelimit.js';
import { DnsStats } from './stats.js';
import { compileZones } from './zone.js';
import { decodeMessage } from './message.js';
import { OPTS, SNAP, query } from './testing.js';
import { FLAG, QTYPE, RCODE } from './constants.js';
import { Responder } from './respond.js';
import { initialPlan } from '../policy/decide.js';
import { defaultTable } from '../geo/table.js';

const T0 = 1_800_000_000_000;

function opts(o: Partial<RateLimitOptions> = {}): RateLimitOptions {
  return {
    mode: 'on',
    responsesPerSecond: 20,
    referralsPerSecond: 20,
    nodataPerSecond: 20,
    nxdomainsPerSecond: 10,
    errorsPerSecond: 10,
    zoneNxdomainsPerSecond: 0,
    slip: 2,
    ipv4PrefixLength: 24,
    ipv6PrefixLength: 56,
    exempt: [],
    tableSize: 1024,
    ...o,
  };
}

/** n checks at `now`; the verdicts as a string: p (pass), s (slip), d (drop). */
function run(l: RateLimiter, n: number, kind: number, client: string, now: number, zone = 0): string {
  let s = '';
  for (let i = 0; i < n; i++) s += 'psd'[l.check(kind, zone, client, now)];
  return s;
}

test('rate limiter: a token bucket per prefix and kind, slip every 2nd limited reply, refill over time', () => {
  const stats = new DnsStats();
  const l = new RateLimiter(opts(), 1, stats);
  assert.equal(run(l, 24, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(20) + 'dsds');
  // Same /24, another host: the same bucket (empty).
  assert.equal(run(l, 2, RRL_ANSWER, '192.0.2.200', T0), 'ds');
  // Another /24: its own bucket.
  assert.equal(run(l, 1, RRL_ANSWER, '192.0.3.1', T0), 'p');
  // Another kind for the limited prefix: its own bucket.
  assert.equal(run(l, 1, RRL_NODATA, '192.0.2.1', T0), 'p');
  assert.equal(run(l, 1, RRL_REFERRAL, '192.0.2.1', T0), 'p');
  assert.equal(run(l, 10, RRL_ERROR, '192.0.2.1', T0), 'p'.repeat(10));
  assert.equal(run(l, 1, RRL_ERROR, '192.0.2.1', T0), 'd');
  // Half a second later: 10 tokens back (20/s); the slip count restarts after a pass.
  assert.equal(run(l, 12, RRL_ANSWER, '192.0.2.9', T0 + 500), 'p'.repeat(10) + 'ds');
  // Never more than a second's worth (the capacity), however long the pause.
  assert.equal(run(l, 22, RRL_ANSWER, '192.0.2.9', T0 + 3_600_000), 'p'.repeat(20) + 'ds');
  const snap = stats.snapshot().rateLimited;
  assert.deepEqual(snap, [
    { kind: 'answer', action: 'slipped', value: 5 },
    { kind: 'answer', action: 'dropped', value: 5 },
    { kind: 'error', action: 'dropped', value: 1 },
  ]);
});

test('rate limiter: IPv6 by /56, IPv4-mapped as IPv4, NXDOMAIN per zone, exemptions, processes divide the rate', () => {
  const l = new RateLimiter(opts({ exempt: ['127.0.0.0/8', '2001:db8:ffff::/48', '198.51.100.7'] }), 1, new DnsStats());
  assert.equal(run(l, 21, RRL_ANSWER, '2001:db8:0:ff::1', T0), 'p'.repeat(20) + 'd');
  assert.equal(run(l, 1, RRL_ANSWER, '2001:db8:0:1::53', T0), 's', 'same /56 (2001:db8:0:0/56): the 2nd limited reply');
  assert.equal(run(l, 1, RRL_ANSWER, '2001:db8:0:100::1', T0), 'p', 'next /56');
  assert.equal(run(l, 21, RRL_ANSWER, '::ffff:203.0.113.5', T0), 'p'.repeat(20) + 'd');
  assert.equal(run(l, 1, RRL_ANSWER, '203.0.113.77', T0), 's', 'the mapped address counted as its IPv4 /24');
  // NXDOMAIN: every name of a zone shares the bucket; another zone has its own.
  assert.equal(run(l, 11, RRL_NXDOMAIN, '192.0.2.1', T0, 0), 'p'.repeat(10) + 'd');
  assert.equal(run(l, 10, RRL_NXDOMAIN, '192.0.2.1', T0, 1), 'p'.repeat(10));
  // Exempt: never limited.
  assert.equal(run(l, 100, RRL_ANSWER, '127.0.0.1', T0), 'p'.repeat(100));
  assert.equal(run(l, 100, RRL_ERROR, '2001:db8:ffff:1::1', T0), 'p'.repeat(100));
  assert.equal(run(l, 100, RRL_ANSWER, '198.51.100.7', T0), 'p'.repeat(100));
  assert.equal(run(l, 21, RRL_ANSWER, '198.51.100.8', T0), 'p'.repeat(20) + 'd', 'a host exemption is that host only');
  // Not an address (a unit test's ''): never limited.
  assert.equal(run(l, 50, RRL_ANSWER, '', T0), 'p'.repeat(50));
  // Two processes: each gets half of every rate.
  const half = new RateLimiter(opts(), 2, new DnsStats());
  assert.equal(half.rateOf(RRL_ANSWER), 10);
  assert.equal(run(half, 12, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(10) + 'ds');
});

test('rate limiter: slip 0 drops all, slip 1 truncates all, log mode answers all and counts', () => {
  assert.equal(run(new RateLimiter(opts({ slip: 0 }), 1, new DnsStats()), 24, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(20) + 'dddd');
  assert.equal(run(new RateLimiter(opts({ slip: 1 }), 1, new DnsStats()), 24, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(20) + 'ssss');
  assert.equal(run(new RateLimiter(opts({ slip: 3 }), 1, new DnsStats()), 26, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(20) + 'ddsdds');
  const stats = new DnsStats();
  const events: RateLimitEvent[] = [];
  const l = new RateLimiter(opts({ mode: 'log' }), 1, stats, (e) => events.push(e));
  assert.equal(run(l, 30, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(30));
  assert.deepEqual(stats.snapshot().rateLimited, [{ kind: 'answer', action: 'logged', value: 10 }]);
  // One line per episode (the first limited reply after a pass), naming the prefix.
  assert.deepEqual(events, [{ client: '192.0.2.0/24', kind: 'answer', mode: 'log', ratePerSecond: 20 }]);
});

test('rate limiter: zoneNxdomainsPerSecond limits a zone across prefixes (random-subdomain flood)', () => {
  const events: RateLimitEvent[] = [];
  const l = new RateLimiter(opts({ zoneNxdomainsPerSecond: 30, slip: 0 }), 1, new DnsStats(), (e) => events.push(e));
  let s = '';
  // 10 prefixes × 5 NXDOMAIN each: every prefix is within its own 10/s, the zone is not.
  for (let p = 0; p < 10; p++) s += run(l, 5, RRL_NXDOMAIN, `10.0.${p}.1`, T0, 0);
  assert.equal(s.split('').filter((c) => c === 'p').length, 30);
  assert.equal(run(l, 1, RRL_NXDOMAIN, '10.1.0.1', T0, 1), 'p', 'another zone is not affected');
  assert.equal(run(l, 1, RRL_ANSWER, '10.0.9.1', T0, 0), 'p', 'answers are not affected');
  assert.equal(events[0]?.zoneWide, true);
  assert.equal(events[0]?.kind, 'nxdomain');
});

test('rate limiter: fixed memory; a flood of prefixes evicts the least recently used', () => {
  const stats = new DnsStats();
  const l = new RateLimiter(opts({ tableSize: 1024 }), 1, stats);
  // Exhaust one prefix, then 5000 others each once: the table never grows.
  assert.equal(run(l, 21, RRL_ANSWER, '192.0.2.1', T0), 'p'.repeat(20) + 'd');
  for (let i = 0; i < 5000; i++) l.check(RRL_ANSWER, 0, `10.${(i >> 8) & 255}.${i & 255}.1`, T0 + 1 + i);
  assert.ok(stats.rateLimitEvictions >= 5000 - 1024, `evictions ${stats.rateLimitEvictions}`);
  // The exhausted prefix was evicted long ago: it comes back with a full bucket (errs on answering).
  assert.equal(run(l, 1, RRL_ANSWER, '192.0.2.1', T0 + 6000), 'p');
  // The table's arrays are the size configured.
  assert.equal((l as unknown as { used: Float64Array }).used.length, 1024);
});

function responder(rl: Partial<RateLimitOptions>, processes = 1): Responder {
  return new Responder(
    { zones: compileZones(SNAP), plan: initialPlan('test'), geo: defaultTable(['a', 'b'], 'test'), opts: { ...OPTS, rateLimit: opts(rl) }, version: 'v1' },
    { processes },
  );
}

test('responder: UDP replies of each kind limited after their rate, slipped ones TC=1 without records, TCP never limited', () => {
  const r = responder({ slip: 2 });
  const client = '192.0.2.33';
  type Case = [string, string, number, number];
  const cases: Case[] = [
    ['answer', 'gslb.example.com.', QTYPE.TXT, 20],
    ['steered answer shares the answer bucket', 'api.gslb.example.com.', QTYPE.A, 0],
    ['nodata', 'api.gslb.example.com.', QTYPE.MX, 20],
    ['referral', 'host.sub.gslb.example.com.', QTYPE.A, 20],
    ['nxdomain', 'random1.gslb.example.com.', QTYPE.A, 10],
    ['error (REFUSED outside our zones)', 'example.org.', QTYPE.A, 10],
  ];
  for (const [what, name, type, passes] of cases) {
    for (let i = 0; i < passes; i++) assert.ok(r.answer(query(name, type), false, client, T0), `${what}: reply ${i + 1} answered`);
    const dropped = r.answer(query(name, type), false, client, T0);
    assert.equal(dropped, null, `${what}: first limited reply dropped`);
    const slipped = r.answer(query(name, type, { id: 7 }), false, client, T0);
    assert.ok(slipped, `${what}: second limited reply slipped`);
    const m = decodeMessage(slipped);
    assert.equal(m.id, 7);
    assert.ok(m.flags & FLAG.TC, `${what}: TC=1`);
    assert.equal(m.answers.length + m.authority.length + m.additional.length, 0, `${what}: no records`);
    assert.equal(m.questions[0]?.name.toLowerCase(), name.toLowerCase());
    assert.equal(m.edns?.udpSize, OPTS.udpPayloadMax, `${what}: OPT kept`);
    // Over TCP the same client gets the full reply at once.
    const tcp = decodeMessage(r.answer(query(name, type), true, client, T0)!);
    assert.equal(tcp.flags & FLAG.TC, 0, `${what}: TCP not truncated`);
  }
  // Random subdomains of the zone share the NXDOMAIN bucket.
  assert.equal(r.answer(query('random2.gslb.example.com.', QTYPE.A), false, client, T0), null);
  // Another prefix is answered; the truncated_total (size) counter is not bumped by slips.
  const other = decodeMessage(r.answer(query('nope.gslb.example.com.', QTYPE.A), false, '198.51.100.1', T0)!);
  assert.equal(other.flags & 0xf, RCODE.NXDOMAIN);
  const snap = r.stats.snapshot();
  assert.equal(snap.truncated, 0);
  assert.deepEqual(
    snap.rateLimited.map((x) => `${x.kind} ${x.action} ${x.value}`),
    ['answer slipped 2', 'answer dropped 2', 'referral slipped 1', 'referral dropped 1', 'nodata slipped 1', 'nodata dropped 1', 'nxdomain slipped 1', 'nxdomain dropped 2', 'error slipped 1', 'error dropped 1'],
  );
});

test('responder: malformed queries count as errors; mode off and a reload to off stop limiting', () => {
  const r = responder({ errorsPerSecond: 2, slip: 0 });
  const bad = Buffer.from(query('gslb.example.com.', QTYPE.A));
  bad.writeUInt16BE(2, 4); // QDCOUNT 2: FORMERR
  assert.ok(r.answer(bad, false, '192.0.2.1', T0));
  assert.ok(r.answer(bad, false, '192.0.2.1', T0));
  assert.equal(r.answer(bad, false, '192.0.2.1', T0), null);
  assert.ok(r.answer(bad, true, '192.0.2.1', T0), 'TCP');
  const off = responder({ mode: 'off' });
  assert.equal(off.rateLimiter, null);
  for (let i = 0; i < 100; i++) assert.ok(off.answer(query('gslb.example.com.', QTYPE.TXT), false, '192.0.2.1', T0));
  r.swap({ zones: compileZones(SNAP), plan: initialPlan('test'), geo: defaultTable(['a', 'b'], 'test'), opts: { ...OPTS, rateLimit: opts({ mode: 'off' }) }, version: 'v2' });
  assert.ok(r.answer(bad, false, '192.0.2.1', T0), 'limits gone after the reload');
  // Two processes: each answers half the rate.
  const two = responder({ slip: 0 }, 2);
  let n = 0;
  for (let i = 0; i < 40; i++) if (two.answer(query('gslb.example.com.', QTYPE.TXT), false, '192.0.2.1', T0)) n++;
  assert.equal(n, 10);
});
