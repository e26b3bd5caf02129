import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileZones, type ZoneSnapshot } from './zone.js';
import { decodeMessage, type Edns, type Message } from './message.js';
import { SNAP, EDNS, OPTS, makeResponder, query } from './testing.js';
import { defaultTable } from '../geo/table.js';
import { newParsedQuery, parseQuery, Verdict } from './query.js';
import { FLAG, QTYPE, RCODE } from './constants.js';
import { initialPlan } from '../policy/decide.js';
import { planOf, snapshotABC } from '../../test/helpers/policy.js';
import { Responder } from './respond.js';
import type { QueryLogEntry } from './querylog.js';

const rcodeOf = (m: Message) => (m.flags & 0xf) | ((m.edns?.extRcode ?? 0) << 4);
const ans = (m: Message) => m.answers.map((a) => `${a.name} ${a.type} ${a.ttl}`);

test('answers: a case table over the example zone', () => {
  const r = makeResponder();
  type Case = [string, string, number, { rcode: number; aa: boolean; an: string[]; ns?: string[]; ar?: number }];
  const cases: Case[] = [
    ['steered A (nearest region a)', 'api.gslb.example.com.', QTYPE.A, { rcode: 0, aa: true, an: ['api.gslb.example.com. 1 30'] }],
    ['steered AAAA', 'api.gslb.example.com.', QTYPE.AAAA, { rcode: 0, aa: true, an: ['api.gslb.example.com. 28 30'] }],
    ['region without IPv6 is skipped: NODATA', 'v4only.gslb.example.com.', QTYPE.AAAA, { rcode: 0, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['steered name, other type: NODATA', 'api.gslb.example.com.', QTYPE.TXT, { rcode: 0, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['CNAME chased to a steered name', 'www.gslb.example.com.', QTYPE.A, { rcode: 0, aa: true, an: ['www.gslb.example.com. 5 3600', 'api.gslb.example.com. 1 30'] }],
    ['two-link chain', 'alias.gslb.example.com.', QTYPE.A, { rcode: 0, aa: true, an: ['alias.gslb.example.com. 5 3600', 'www.gslb.example.com. 5 3600', 'api.gslb.example.com. 1 30'] }],
    ['CNAME asked for itself', 'www.gslb.example.com.', QTYPE.CNAME, { rcode: 0, aa: true, an: ['www.gslb.example.com. 5 3600'] }],
    ['CNAME to a missing name in zone: NXDOMAIN (RFC 6604)', 'dangling.gslb.example.com.', QTYPE.A, { rcode: 3, aa: true, an: ['dangling.gslb.example.com. 5 3600'], ns: ['gslb.example.com. 6 60'] }],
    ['CNAME out of our zones: not chased', 'outside.gslb.example.com.', QTYPE.A, { rcode: 0, aa: true, an: ['outside.gslb.example.com. 5 3600'] }],
    ['SOA at apex', 'gslb.example.com.', QTYPE.SOA, { rcode: 0, aa: true, an: ['gslb.example.com. 6 300'] }],
    ['NS at apex with in-zone glue', 'gslb.example.com.', QTYPE.NS, { rcode: 0, aa: true, an: ['gslb.example.com. 2 3600', 'gslb.example.com. 2 3600'], ar: 2 }],
    ['MX with additional address', 'gslb.example.com.', QTYPE.MX, { rcode: 0, aa: true, an: ['gslb.example.com. 15 3600'], ar: 1 }],
    ['TXT', 'gslb.example.com.', QTYPE.TXT, { rcode: 0, aa: true, an: ['gslb.example.com. 16 3600'] }],
    ['CAA', 'gslb.example.com.', QTYPE.CAA, { rcode: 0, aa: true, an: ['gslb.example.com. 257 3600'] }],
    ['SRV', '_https._tcp.gslb.example.com.', QTYPE.SRV, { rcode: 0, aa: true, an: ['_https._tcp.gslb.example.com. 33 3600'] }],
    ['NXDOMAIN: SOA with min(TTL, MINIMUM)', 'nope.gslb.example.com.', QTYPE.A, { rcode: 3, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['NXDOMAIN deep below', 'x.y.z.nope.gslb.example.com.', QTYPE.A, { rcode: 3, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['empty non-terminal: NODATA', 'a.b.gslb.example.com.', QTYPE.A, { rcode: 0, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['below an existing name: NXDOMAIN', 'x.deep.a.b.gslb.example.com.', QTYPE.A, { rcode: 3, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
    ['delegation: referral, not authoritative', 'host.sub.gslb.example.com.', QTYPE.A, { rcode: 0, aa: false, an: [], ns: ['sub.gslb.example.com. 2 3600', 'sub.gslb.example.com. 2 3600'], ar: 1 }],
    ['outside our zones: REFUSED', 'example.org.', QTYPE.A, { rcode: 5, aa: false, an: [] }],
    ['parent of our zone: REFUSED', 'example.com.', QTYPE.A, { rcode: 5, aa: false, an: [] }],
    ['ANY: RFC 8482 HINFO', 'gslb.example.com.', QTYPE.ANY, { rcode: 0, aa: true, an: ['gslb.example.com. 13 3600'] }],
    ['AXFR: REFUSED', 'gslb.example.com.', QTYPE.AXFR, { rcode: 5, aa: false, an: [] }],
    ['unknown type at existing name: NODATA', 'mail.gslb.example.com.', 65400, { rcode: 0, aa: true, an: [], ns: ['gslb.example.com. 6 60'] }],
  ];
  for (const [what, name, type, want] of cases) {
    const out = r.answer(query(name, type), false);
    assert.ok(out, what);
    const m = decodeMessage(out);
    assert.equal(rcodeOf(m), want.rcode, `${what}: rcode`);
    assert.equal(Boolean(m.flags & FLAG.AA), want.aa, `${what}: AA`);
    assert.equal(Boolean(m.flags & FLAG.RA), false, `${what}: RA clear`);
    assert.equal(Boolean(m.flags & FLAG.RD), true, `${what}: RD copied`);
    assert.equal(m.id, 0x1234, `${what}: id`);
    assert.deepEqual(m.questions, [{ name, type, class: 1 }], `${what}: question echoed`);
    assert.deepEqual(ans(m), want.an, `${what}: answer`);
    if (want.ns) assert.deepEqual(ans({ ...m, answers: m.authority }), want.ns, `${what}: authority`);
    if (want.ar !== undefined) assert.equal(m.additional.length, want.ar, `${what}: additional`);
    assert.ok(m.edns, `${what}: OPT kept`);
  }
});

test('question case is returned byte for byte, and answers compress against it', () => {
  const r = makeResponder();
  for (const name of ['ApI.GsLb.ExAmPlE.CoM.', 'NOPE.gslb.EXAMPLE.com.', 'X.y.Deep.A.B.gslb.example.COM.']) {
    const q = query(name, QTYPE.A);
    const out = r.answer(q, false)!;
    const qEnd = 12 + name.length + 1 + 4;
    assert.deepEqual(out.subarray(12, qEnd), q.subarray(12, qEnd), name);
    decodeMessage(out); // every pointer (shifted for longer names) resolves
  }
});

test('malformed queries: a case table of verdicts and replies', () => {
  const r = makeResponder();
  const ok = query('api.gslb.example.com.', QTYPE.A, { edns: null });
  const withOpt = (opts: { code: number; data: number[] }[], version = 0) =>
    query('api.gslb.example.com.', QTYPE.A, { edns: { ...EDNS, version, options: opts.map((o) => ({ code: o.code, data: Buffer.from(o.data) })) } });
  const set16 = (b: Buffer, at: number, v: number) => {
    const c = Buffer.from(b);
    c.writeUInt16BE(v, at);
    return c;
  };
  type Case = [string, Buffer, Verdict, number | null];
  const cases: Case[] = [
    ['well formed', ok, Verdict.OK, RCODE.NOERROR],
    ['shorter than a header', ok.subarray(0, 11), Verdict.DROP, null],
    ['a response (QR=1)', set16(ok, 2, FLAG.QR), Verdict.DROP, null],
    ['opcode STATUS', set16(ok, 2, 2 << 11), Verdict.NOTIMP, RCODE.NOTIMP],
    ['opcode NOTIFY', set16(ok, 2, 4 << 11), Verdict.NOTIMP, RCODE.NOTIMP],
    ['QDCOUNT 0', set16(ok, 4, 0), Verdict.FORMERR, RCODE.FORMERR],
    ['QDCOUNT 2', set16(ok, 4, 2), Verdict.FORMERR, RCODE.FORMERR],
    ['question truncated', ok.subarray(0, ok.length - 2), Verdict.FORMERR, RCODE.FORMERR],
    ['compression pointer in question', Buffer.concat([ok.subarray(0, 12), Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])]), Verdict.FORMERR, RCODE.FORMERR],
    ['label type 0x40', Buffer.concat([ok.subarray(0, 12), Buffer.from([0x41, 0, 0, 1, 0, 1])]), Verdict.FORMERR, RCODE.FORMERR],
    ['name over 255 bytes', Buffer.concat([ok.subarray(0, 12), ...Array(5).fill(Buffer.concat([Buffer.from([60]), Buffer.alloc(60, 97)])), Buffer.from([0, 0, 1, 0, 1])]), Verdict.FORMERR, RCODE.FORMERR],
    ['trailing garbage', Buffer.concat([ok, Buffer.from([1, 2, 3])]), Verdict.FORMERR, RCODE.FORMERR],
    ['ARCOUNT too high', set16(ok, 10, 1), Verdict.FORMERR, RCODE.FORMERR],
    ['two OPT records', (() => { const q = withOpt([]); const opt = q.subarray(q.length - 11); const c = Buffer.concat([q, opt]); c.writeUInt16BE(2, 10); return c; })(), Verdict.FORMERR, RCODE.FORMERR],
    ['OPT owner not root', (() => { const q = withOpt([]); const c = Buffer.concat([q.subarray(0, q.length - 11), Buffer.from([1, 97, 0]), q.subarray(q.length - 10)]); return c; })(), Verdict.FORMERR, RCODE.FORMERR],
    ['OPT option overruns RDATA', (() => { const q = withOpt([{ code: 65001, data: [1, 2] }]); q.writeUInt16BE(9, q.length - 4); return q; })(), Verdict.FORMERR, RCODE.FORMERR],
    ['OPT RDATA overruns packet', (() => { const q = withOpt([]); q.writeUInt16BE(4, q.length - 2); return q; })(), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS /33 for IPv4', withOpt([{ code: 8, data: [0, 1, 33, 0, 1, 2, 3, 4, 5] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS /129 for IPv6', withOpt([{ code: 8, data: [0, 2, 129, 0, ...Array(17).fill(0)] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS address longer than prefix', withOpt([{ code: 8, data: [0, 1, 24, 0, 192, 0, 2, 0] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS address shorter than prefix', withOpt([{ code: 8, data: [0, 1, 24, 0, 192, 0] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS bits beyond the prefix', withOpt([{ code: 8, data: [0, 1, 23, 0, 192, 0, 3] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS scope non-zero in a query', withOpt([{ code: 8, data: [0, 1, 24, 24, 192, 0, 2] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS unknown family', withOpt([{ code: 8, data: [0, 3, 8, 0, 1] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS shorter than its fixed part', withOpt([{ code: 8, data: [0, 1, 0] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS twice', withOpt([{ code: 8, data: [0, 1, 0, 0] }, { code: 8, data: [0, 1, 0, 0] }]), Verdict.FORMERR, RCODE.FORMERR],
    ['ECS /0 (valid)', withOpt([{ code: 8, data: [0, 1, 0, 0] }]), Verdict.OK, RCODE.NOERROR],
    ['ECS IPv6 /56 (valid)', withOpt([{ code: 8, data: [0, 2, 56, 0, 0x20, 1, 0xd, 0xb8, 0xab, 0xcd, 0] }]), Verdict.OK, RCODE.NOERROR],
    ['ECS IPv4 /22 (valid)', withOpt([{ code: 8, data: [0, 1, 22, 0, 198, 51, 100] }]), Verdict.OK, RCODE.NOERROR],
    ['unknown EDNS option ignored', withOpt([{ code: 65001, data: [0xab, 0xcd] }]), Verdict.OK, RCODE.NOERROR],
    ['EDNS version 1', withOpt([], 1), Verdict.BADVERS, RCODE.BADVERS],
  ];
  const p = newParsedQuery();
  for (const [what, buf, verdict, rcode] of cases) {
    assert.equal(parseQuery(buf, p), verdict, `${what}: verdict (${p.reason})`);
    const out = r.answer(buf, false);
    if (rcode === null) {
      assert.equal(out, null, `${what}: dropped`);
      continue;
    }
    assert.ok(out, `${what}: answered`);
    const m = decodeMessage(out);
    assert.equal(rcodeOf(m), rcode, `${what}: rcode`);
    assert.equal(m.id, buf.readUInt16BE(0), `${what}: id`);
    assert.ok(m.flags & FLAG.QR, `${what}: QR`);
  }
});

test('EDNS in replies: ECS echoed with scope 0 (one cell), DO copied, BADVERS carries version 0', () => {
  const r = makeResponder();
  const ecs4 = { code: 8, data: Buffer.from([0, 1, 24, 0, 198, 51, 100]) };
  const ecs6 = { code: 8, data: Buffer.from([0, 2, 56, 0, 0x20, 1, 0xd, 0xb8, 0xab, 0xcd, 0]) };
  for (const opt of [ecs4, ecs6]) {
    const m = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: { ...EDNS, flags: 0x8000, options: [opt] } }), false)!);
    assert.equal(m.edns!.flags & 0x8000, 0x8000, 'DO copied');
    assert.equal(m.edns!.udpSize, 1232);
    assert.equal(m.edns!.options.length, 1);
    // Without a geo table every client is in one cell: the answer holds for everyone (scope 0).
    // (Scopes with a table: gslb/geo/geo.test.ts.)
    const echoed = Buffer.from(opt.data);
    assert.deepEqual(m.edns!.options[0]!.data, echoed, 'family, source, scope 0 and address echoed');
    // A static answer does not depend on the client: scope 0.
    const st = decodeMessage(r.answer(query('gslb.example.com.', QTYPE.TXT, { edns: { ...EDNS, options: [opt] } }), false)!);
    const zero = Buffer.from(opt.data);
    zero[3] = 0;
    assert.deepEqual(st.edns!.options[0]!.data, zero, 'static answer: scope 0');
  }
  const noDo = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A), false)!);
  assert.equal(noDo.edns!.flags & 0x8000, 0, 'DO clear when the query had it clear');
  const unknown = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: { ...EDNS, options: [{ code: 65001, data: Buffer.from([1]) }] } }), false)!);
  assert.deepEqual(unknown.edns!.options, [], 'unknown options are not echoed');
  const bad = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: { ...EDNS, version: 3 } }), false)!);
  assert.equal(bad.flags & 0xf, 0);
  assert.equal(bad.edns!.extRcode, 1, 'BADVERS = 16: upper bits 1 in the OPT');
  assert.equal(bad.edns!.version, 0);
  assert.equal(bad.answers.length, 0);
});

test('UDP size: max(512, min(advertised, 1232)); truncation sets TC and keeps the OPT; TCP gets it all', () => {
  const r = makeResponder();
  const big = 'big.gslb.example.com.';
  const cases: [string, Edns | null, boolean, boolean][] = [
    ['no EDNS: 512', null, false, true],
    ['EDNS 4096 → capped at 1232', { ...EDNS, udpSize: 4096 }, false, true],
    ['EDNS 100 → raised to 512', { ...EDNS, udpSize: 100 }, false, true],
    ['TCP: whole answer', { ...EDNS, udpSize: 512 }, true, false],
  ];
  for (const [what, edns, tcp, truncated] of cases) {
    const out = r.answer(query(big, QTYPE.TXT, { edns }), tcp)!;
    const m = decodeMessage(out);
    assert.equal(Boolean(m.flags & FLAG.TC), truncated, `${what}: TC`);
    if (truncated) {
      assert.ok(out.length <= (edns ? Math.max(512, Math.min(edns.udpSize, 1232)) : 512), `${what}: size ${out.length}`);
      assert.equal(m.answers.length, 0);
      assert.equal(Boolean(m.edns), Boolean(edns), `${what}: OPT kept`);
    } else assert.equal(m.answers.length, 8, `${what}: all 8 TXT records`);
  }
  // A small answer with a tiny advertised size is not truncated (512 floor).
  const small = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: { ...EDNS, udpSize: 1 } }), false)!);
  assert.equal(small.flags & FLAG.TC, 0);
});

test('class other than IN is REFUSED; qtype OPT is FORMERR', () => {
  const r = makeResponder();
  const q = query('api.gslb.example.com.', QTYPE.A);
  const ch = Buffer.from(q);
  ch.writeUInt16BE(3, 12 + 22 + 2);
  assert.equal(decodeMessage(r.answer(ch, false)!).flags & 0xf, RCODE.REFUSED);
  assert.equal(decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.OPT), false)!).flags & 0xf, RCODE.FORMERR);
});

test('whenAllDown policies when every serving region is down', () => {
  for (const [policy, rcode, count] of [
    ['nearest', RCODE.NOERROR, 1],
    ['all', RCODE.NOERROR, 2],
    ['empty', RCODE.NOERROR, 0],
    ['servfail', RCODE.SERVFAIL, 0],
  ] as const) {
    const snap: ZoneSnapshot = { ...SNAP, names: [{ name: 'api.gslb.example.com', ttl: 30, whenAllDown: policy }] };
    const plan = planOf([{ at: 0, down: ['a', 'b'] }]);
    const r = makeResponder(snap, ['a', 'b'], plan);
    const m = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A), false)!);
    assert.equal(m.flags & 0xf, rcode, policy);
    assert.equal(m.answers.length, count, policy);
  }
});

test('swap replaces what is served for the next query', () => {
  const r = makeResponder();
  const before = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A), false)!);
  assert.deepEqual(before.answers[0]!.data, { kind: 'raw', bytes: Buffer.from([192, 0, 2, 10]) });
  r.swap({ zones: compileZones(SNAP), plan: initialPlan('t'), geo: defaultTable(['b', 'a'], 't'), opts: OPTS, version: 'v2' });
  const after = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A), false)!);
  assert.deepEqual(after.answers[0]!.data, { kind: 'raw', bytes: Buffer.from([198, 51, 100, 20]) });
  assert.equal(r.version, 'v2');
});

test('a TTL counted down to a scheduled change never outlives it, even from the per-cell cache', () => {
  const NOW = 1_800_000_000_000;
  const plan = planOf([{ at: 0 }, { at: NOW + 12_000, down: ['a'], reasons: ['a goes down'] }]);
  const r = makeResponder(SNAP, ['a', 'b'], plan);
  for (const dt of [0, 300, 900, 999, 1000, 1500, 4200]) {
    const m = decodeMessage(r.answer(query('api.gslb.example.com.', QTYPE.A), false, '', NOW + dt)!);
    const ttl = m.answers[0]!.ttl;
    assert.ok(NOW + dt + ttl * 1000 <= NOW + 12_000, `at +${dt} ms the TTL ${ttl}s ends after the change`);
    assert.ok(ttl >= 5, 'never below minTtl');
  }
});

test('demand: steered queries counted by name (CNAME chains under their target) and home; reset on take; kept across a swap', () => {
  const r = makeResponder();
  const ask = (name: string, type: number, times: number) => {
    for (let i = 0; i < times; i++) assert.ok(r.answer(query(name, type), false, '192.0.2.1'));
  };
  ask('api.gslb.example.com.', QTYPE.A, 5);
  ask('API.gslb.example.com.', QTYPE.AAAA, 2);
  ask('www.gslb.example.com.', QTYPE.A, 3); // CNAME to api
  ask('v4only.gslb.example.com.', QTYPE.A, 1);
  ask('mail.gslb.example.com.', QTYPE.A, 4); // not steered: not counted
  ask('api.gslb.example.com.', QTYPE.TXT, 2); // NODATA at a steered name: not a steered answer
  // The table changes: clients now have home b. Counts so far stay with home a.
  r.swap({ zones: compileZones(SNAP), plan: initialPlan('t'), geo: defaultTable(['b', 'a'], 't'), opts: OPTS, version: 'v2' });
  ask('api.gslb.example.com.', QTYPE.A, 6);
  assert.deepEqual(r.takeDemand(), {
    'api.gslb.example.com': { a: 10, b: 6 },
    'v4only.gslb.example.com': { a: 1 },
  });
  assert.deepEqual(r.takeDemand(), {}, 'taking resets');
  ask('api.gslb.example.com.', QTYPE.A, 1);
  assert.deepEqual(r.takeDemand(), { 'api.gslb.example.com': { b: 1 } });
});

/** The sum of a DnsStats snapshot's counts of one kind. */
const total = (xs: { value: number }[]) => xs.reduce((n, x) => n + x.value, 0);

test('per reply: one response time; per steered answer: one decision class and one decision-cache result', () => {
  const NOW = 1_800_000_000_000;
  const r = makeResponder();
  const ask = (name: string, type: number, now = NOW) => assert.ok(r.answer(query(name, type), false, '192.0.2.1', now), `${name} ${type}`);
  ask('api.gslb.example.com.', QTYPE.A); // decided and cached: miss
  for (let i = 0; i < 4; i++) ask('api.gslb.example.com.', QTYPE.A, NOW + 10 * i); // cached: hits
  ask('api.gslb.example.com.', QTYPE.AAAA); // its own slot: miss
  ask('www.gslb.example.com.', QTYPE.A); // CNAME to api: a cache of its own, a miss
  ask('api.gslb.example.com.', QTYPE.A, NOW + 1000); // the cached decision is a second old: miss
  ask('mail.gslb.example.com.', QTYPE.A); // static: no decision
  ask('nope.gslb.example.com.', QTYPE.A); // NXDOMAIN
  ask('example.org.', QTYPE.A); // REFUSED
  const formerr = query('api.gslb.example.com.', QTYPE.A);
  formerr.writeUInt16BE(2, 4); // QDCOUNT 2
  assert.ok(r.answer(formerr, false), 'FORMERR answered');
  assert.equal(r.answer(query('api.gslb.example.com.', QTYPE.A, { flags: FLAG.QR }), false), null, 'a response is dropped');
  assert.equal(r.answer(Buffer.alloc(5), false), null, 'a short packet is dropped');

  const s = r.stats.snapshot();
  const replies = total(s.queries);
  assert.equal(replies, 12, 'replies counted by the query counters');
  assert.equal(
    s.latency.counts.reduce((a, b) => a + b, 0),
    replies,
    'one response time per reply, none for a dropped packet',
  );
  assert.ok(s.latency.sumSeconds >= 0 && s.latency.sumSeconds < 60, `sum ${s.latency.sumSeconds}`);
  assert.equal(total(s.answers), 8);
  assert.deepEqual(s.decisions, [{ name: 'api.gslb.example.com', reason: 'nearest', value: 8 }]);
  assert.deepEqual(s.cache, { hit: 4, miss: 4, bypass: 0 });
});

test('decisions per query (admission splits the cell): bypass, with each answer classed nearest or spill', () => {
  const plan = planOf([{ at: 0, weights: { a: { a: 0.5 } } }]);
  const r = makeResponder(SNAP, ['a', 'b'], plan);
  const N = 64;
  for (let i = 0; i < N; i++) {
    const ecs = { ...EDNS, options: [{ code: 8, data: Buffer.from([0, 1, 24, 0, 20, i, 7]) }] };
    assert.ok(r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: ecs }), false, '192.0.2.1'));
  }
  const s = r.stats.snapshot();
  assert.deepEqual(s.cache, { hit: 0, miss: 1, bypass: N - 1 }, 'the first query fills the slot (decided per query), the rest bypass it');
  const by = Object.fromEntries(s.decisions.map((d) => [d.reason, d.value]));
  assert.equal((by.nearest ?? 0) + (by.spill ?? 0), N, JSON.stringify(s.decisions));
  assert.ok(by.nearest! > 0 && by.spill! > 0, `both classes among ${N} subnets at weight 0.5: ${JSON.stringify(by)}`);
  const answers = Object.fromEntries(s.answers.map((a) => [a.region, a.value]));
  assert.deepEqual(answers, { a: by.nearest, b: by.spill }, 'nearest answered by a (home), spill by b');
});

test('query log: one entry per sampled reply, with the client subnet, question, rcode, region and reason', () => {
  const NOW = 1_800_000_000_000;
  const entries: QueryLogEntry[] = [];
  const snap = snapshotABC({ whenAllDown: 'servfail' });
  const state = (rate: number, plan = initialPlan('t')) => ({ zones: compileZones(snap), plan, geo: defaultTable(['a', 'b'], 't'), opts: { ...OPTS, queryLogSampleRate: rate }, version: `v${rate}` });
  const r = new Responder(state(1), { queryLog: (e) => entries.push(e) });
  const ecs = (bytes: number[], source: number, family = 1) => ({ ...EDNS, options: [{ code: 8, data: Buffer.from([0, family, source, 0, ...bytes]) }] });
  r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: ecs([198, 51, 100], 24) }), false, '192.0.2.1', NOW);
  r.answer(query('api.gslb.example.com.', QTYPE.AAAA, { edns: ecs([0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56, 0x78], 64, 2) }), true, '2001:db8::53', NOW);
  r.answer(query('api.gslb.example.com.', QTYPE.A, { edns: ecs([], 0) }), false, '::ffff:203.0.113.9', NOW);
  r.answer(query('mail.gslb.example.com.', QTYPE.A), false, '192.0.2.1', NOW);
  r.answer(query('nope.gslb.example.com.', QTYPE.TXT), false, '192.0.2.1', NOW);
  const formerr = query('api.gslb.example.com.', QTYPE.A);
  formerr.writeUInt16BE(2, 4);
  r.answer(formerr, false, '192.0.2.1', NOW);
  r.answer(query('api.gslb.example.com.', QTYPE.A, { flags: FLAG.QR }), false, '192.0.2.1', NOW); // dropped: no reply, no entry
  r.swap(state(1, planOf([{ at: 0, down: ['a', 'b', 'c'] }])));
  r.answer(query('api.gslb.example.com.', QTYPE.A), false, 'not-an-address', NOW);
  assert.deepEqual(entries, [
    { client: '198.51.100.0/24', clientFrom: 'ecs', transport: 'udp', name: 'api.gslb.example.com.', type: 'A', rcode: 'NOERROR', region: 'a', reason: 'nearest' },
    { client: '2001:db8:1234:5600::/56', clientFrom: 'ecs', transport: 'tcp', name: 'api.gslb.example.com.', type: 'AAAA', rcode: 'NOERROR', region: 'a', reason: 'nearest' },
    { client: '203.0.113.0/24', clientFrom: 'source', transport: 'udp', name: 'api.gslb.example.com.', type: 'A', rcode: 'NOERROR', region: 'a', reason: 'nearest' },
    { client: '192.0.2.0/24', clientFrom: 'source', transport: 'udp', name: 'mail.gslb.example.com.', type: 'A', rcode: 'NOERROR' },
    { client: '192.0.2.0/24', clientFrom: 'source', transport: 'udp', name: 'nope.gslb.example.com.', type: 'TXT', rcode: 'NXDOMAIN' },
    { client: '192.0.2.0/24', clientFrom: 'source', transport: 'udp', rcode: 'FORMERR' },
    { transport: 'udp', name: 'api.gslb.example.com.', type: 'A', rcode: 'SERVFAIL', region: null, reason: 'servfail' },
  ]);
});

test('query log sampling: one reply in round(1 / rate), changed by a swap; off at rate 0 or without a sink', () => {
  const entries: QueryLogEntry[] = [];
  const state = (rate: number) => ({ zones: compileZones(SNAP), plan: initialPlan('t'), geo: defaultTable(['a', 'b'], 't'), opts: { ...OPTS, queryLogSampleRate: rate }, version: `v${rate}` });
  const r = new Responder(state(0.25), { queryLog: (e) => entries.push(e) });
  const ask = (n: number, responder = r) => {
    for (let i = 0; i < n; i++) assert.ok(responder.answer(query('api.gslb.example.com.', QTYPE.A, { id: i }), false, '192.0.2.1'));
  };
  ask(40);
  assert.equal(entries.length, 10, 'rate 0.25: one in 4');
  r.swap(state(0.01));
  ask(300);
  assert.equal(entries.length, 13, 'rate 0.01: one in 100');
  r.swap(state(0));
  ask(50);
  assert.equal(entries.length, 13, 'rate 0: off');
  const quiet = new Responder(state(1));
  ask(10, quiet);
  assert.equal(entries.length, 13, 'no sink: nothing logged, nothing thrown');
  const throwing = new Responder(state(1), {
    queryLog: () => {
      throw new Error('disk full');
    },
  });
  ask(3, throwing); // a failing sink never costs an answer
});
