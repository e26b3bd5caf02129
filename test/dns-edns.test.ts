/**
 * EDNS (RFC 6891), Client Subnet (RFC 7871), opcodes and malformed messages: dig and kdig
 * for what they can send, raw UDP packets (node:dgram) for what they cannot.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, kdig, kdigOpt } from './helpers/dig.js';
import { VIRGINIA_A, sorted } from './helpers/fleet.js';
import { MALFORMED, QTYPE_LABEL, QUERIES, RCODE_LABEL, describeMetric, hasMetric, scrape, sumOf } from './helpers/metrics.js';
import { udpCollect, udpExchange } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';
import {
  EDNS_OPT,
  OPCODE,
  QTYPE,
  RCODE,
  buildQuery,
  ecsOption,
  ecsOptionRaw,
  encodeName,
  parseEcs,
  parseMessage,
  rdataAddress,
  type Message,
  type QuerySpec,
} from './helpers/wire.js';

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: dozens of error replies (FORMERR, BADVERS, NOTIMP) in a few seconds from 127.0.0.1, over the 10 errors/s default.
    withRateLimitMode(c, 'off');
  });
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

/** Sends a raw query over UDP and parses the reply; fails the test when none comes. */
async function ask(spec: QuerySpec | Buffer): Promise<{ q: Buffer; m: Message }> {
  const q = Buffer.isBuffer(spec) ? spec : buildQuery(spec);
  const reply = await udpExchange(srv.udp, q, 3000);
  assert.ok(reply, `no reply within 3 s to the query ${q.toString('hex')}`);
  const m = parseMessage(reply);
  assert.equal(m.id, q.readUInt16BE(0), 'the reply carries the query ID');
  assert.ok(m.qr, 'QR set in the reply');
  return { q, m };
}

const RCODE_NAME: Record<number, string> = Object.fromEntries(Object.entries(RCODE).map(([k, v]) => [v, k]));
function rc(n: number): string {
  return `${RCODE_NAME[n] ?? 'rcode'}(${n})`;
}

// ---------------------------------------------------------------- EDNS basics

test('BADVERS for EDNS version 1 (dig +edns=1), with our OPT at version 0', async () => {
  const r = await dig(srv.udp, ['+edns=1', '+noednsnegotiation', 'api.gslb.example.com', 'A']);
  assert.equal(r.messages.length, 1, `dig must not need to retry\n${digSummary(r)}`);
  assert.equal(r.msg.status, 'BADVERS', digSummary(r));
  assert.ok(r.msg.opt, `a BADVERS reply carries an OPT record\n${digSummary(r)}`);
  assert.equal(r.msg.opt.version, 0, digSummary(r));
  assert.equal(r.msg.answer.length, 0, digSummary(r));
});

test('BADVERS on the wire: extended RCODE 1 in the OPT, header RCODE 0, OPT version 0', async () => {
  for (const version of [1, 2, 255]) {
    const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { version } });
    assert.ok(m.opt, 'OPT present');
    assert.equal(m.fullRcode, RCODE.BADVERS, `version ${version}: got ${rc(m.fullRcode)}`);
    assert.equal(m.rcode, 0);
    assert.equal(m.opt.extRcode, 1);
    assert.equal(m.opt.version, 0);
    assert.equal(m.answers.length, 0);
  }
});

test('the DO bit is copied into the reply OPT (dig +dnssec), and absent when not asked', async () => {
  const withDo = await dig(srv.udp, ['+dnssec', 'api.gslb.example.com', 'A']);
  assert.equal(withDo.msg.status, 'NOERROR', digSummary(withDo));
  assert.ok(withDo.msg.opt, digSummary(withDo));
  assert.ok(withDo.msg.opt.flags.includes('do'), `flags: do expected\n${digSummary(withDo)}`);
  assert.deepEqual(sorted(withDo.msg.answer.filter((x) => x.type === 'A').map((x) => x.data)), VIRGINIA_A);

  const without = await dig(srv.udp, ['api.gslb.example.com', 'A']);
  assert.ok(without.msg.opt, `the reply to an EDNS query carries OPT\n${digSummary(without)}`);
  assert.ok(!without.msg.opt.flags.includes('do'), digSummary(without));
});

test('no OPT in the reply to a query without EDNS (dig +noedns)', async () => {
  const r = await dig(srv.udp, ['+noedns', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(r.msg.opt, undefined, digSummary(r));
  assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A);
});

test('unknown EDNS options are ignored (dig +ednsopt=65001:abcd)', async () => {
  const r = await dig(srv.udp, ['+ednsopt=65001:abcd', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(r));

  const { m } = await ask({
    name: 'api.gslb.example.com',
    qtype: QTYPE.A,
    edns: { options: [{ code: 65001, data: Buffer.from('abcd', 'hex') }, { code: 3, data: Buffer.alloc(0) }] },
  });
  assert.equal(m.fullRcode, RCODE.NOERROR, `got ${rc(m.fullRcode)}`);
  assert.equal(m.answers.length, 2);
});

// ---------------------------------------------------------------- ECS (RFC 7871)

function ecsLine(r: Awaited<ReturnType<typeof dig>>): string | undefined {
  return r.msg.opt?.options.find((o) => o.name === 'CLIENT-SUBNET')?.value;
}

test('ECS: dig +subnet=198.51.100.0/24 gets the option echoed with scope 0', async () => {
  const r = await dig(srv.udp, ['+subnet=198.51.100.0/24', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(ecsLine(r), '198.51.100.0/24/0', digSummary(r));
  assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(r));
});

test('ECS: dig +subnet=2001:db8:abcd::/56 gets the option echoed with scope 0', async () => {
  const r = await dig(srv.udp, ['+subnet=2001:db8:abcd::/56', 'api.gslb.example.com', 'AAAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(ecsLine(r), '2001:db8:abcd::/56/0', digSummary(r));
});

test('ECS: source prefix 0 (dig +subnet=0.0.0.0/0) is echoed with scope 0', async () => {
  const r = await dig(srv.udp, ['+subnet=0.0.0.0/0', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(ecsLine(r), '0.0.0.0/0/0', digSummary(r));
});

test('ECS: kdig +subnet gets family, source prefix and address echoed, scope 0', async () => {
  const r = await kdig(srv.udp, ['+subnet=198.51.100.0/24', 'api.gslb.example.com', 'A']);
  assert.equal(r.json.RCODE, 0, r.stdout);
  const opt = kdigOpt(r.json);
  assert.ok(opt, r.stdout);
  const ecs = opt.options.find((o) => o.code === EDNS_OPT.ECS);
  assert.ok(ecs, `ECS echoed\n${r.stdout}`);
  const e = parseEcs(ecs.data);
  assert.equal(e.family, 1);
  assert.equal(e.sourcePrefix, 24);
  assert.equal(e.scopePrefix, 0);
  assert.deepEqual([...e.address], [198, 51, 100]);
});

test('ECS: a well-formed raw option is echoed byte for byte except the scope', async () => {
  const opt = ecsOption('203.0.113.0/22');
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { options: [opt] } });
  assert.equal(m.fullRcode, RCODE.NOERROR, `got ${rc(m.fullRcode)}`);
  const echoed = m.opt?.options.find((o) => o.code === EDNS_OPT.ECS);
  assert.ok(echoed, 'ECS echoed');
  const e = parseEcs(echoed.data);
  assert.equal(e.family, 1);
  assert.equal(e.sourcePrefix, 22);
  assert.equal(e.scopePrefix, 0);
  assert.deepEqual(e.address, opt.data.subarray(4));
  assert.deepEqual(sorted(m.answers.map(rdataAddress)), VIRGINIA_A);
});

// RFC 7871 §6: FORMERR for an ECS option the server cannot trust.
const BAD_ECS: [string, Buffer][] = [
  ['IPv4 source prefix 33 (longer than the family allows)', ecsOptionRaw(1, 33, 0, Buffer.from([198, 51, 100, 1, 0])).data],
  ['IPv6 source prefix 129 (longer than the family allows)', ecsOptionRaw(2, 129, 0, Buffer.alloc(17, 0x20)).data],
  ['/24 with 4 address bytes (too many)', ecsOptionRaw(1, 24, 0, Buffer.from([198, 51, 100, 0])).data],
  ['/24 with 2 address bytes (too few)', ecsOptionRaw(1, 24, 0, Buffer.from([198, 51])).data],
  ['/0 with 1 address byte (too many)', ecsOptionRaw(1, 0, 0, Buffer.from([0])).data],
  ['/56 IPv6 with 8 address bytes (too many)', ecsOptionRaw(2, 56, 0, Buffer.from([0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0, 0])).data],
  ['/23 with a non-zero bit beyond the prefix', ecsOptionRaw(1, 23, 0, Buffer.from([198, 51, 101])).data],
  ['/20 IPv6 with non-zero bits beyond the prefix', ecsOptionRaw(2, 20, 0, Buffer.from([0x20, 0x01, 0x0f])).data],
  ['non-zero scope prefix in a query', ecsOptionRaw(1, 24, 16, Buffer.from([198, 51, 100])).data],
  ['unknown family 3', ecsOptionRaw(3, 24, 0, Buffer.from([198, 51, 100])).data],
  ['option shorter than its 4-byte fixed part', Buffer.from([0x00, 0x01, 0x18])],
];

for (const [label, data] of BAD_ECS) {
  test(`ECS FORMERR (RFC 7871 §6): ${label}`, async () => {
    const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { options: [{ code: EDNS_OPT.ECS, data }] } });
    assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)} for ECS ${data.toString('hex')}`);
    assert.equal(m.answers.length, 0, 'no answer records with FORMERR');
  });
}

// ---------------------------------------------------------------- malformed messages

test('FORMERR for two OPT records (RFC 6891 §6.1.1)', async () => {
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: [{}, { udpSize: 4096 }] });
  assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)}`);
  assert.equal(m.answers.length, 0);
});

test('FORMERR for a malformed OPT: an option running past the OPT RDATA', async () => {
  // Option 65001 claims 10 bytes; 2 follow.
  const rdata = Buffer.from([0xfd, 0xe9, 0x00, 0x0a, 0xab, 0xcd]);
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { rdata } });
  assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)}`);
});

test('FORMERR for a malformed OPT: RDATA with a dangling partial option header', async () => {
  const rdata = Buffer.from([0x00, 0x0a, 0x00]);
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { rdata } });
  assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)}`);
});

test('FORMERR for a malformed OPT: owner name not the root', async () => {
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { owner: encodeName('gslb.example.com') } });
  assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)}`);
});

test('FORMERR for QDCOUNT 0', async () => {
  const { m } = await ask({ questions: [], edns: false });
  assert.equal(m.rcode, RCODE.FORMERR, `got ${rc(m.rcode)}`);
  assert.equal(m.answers.length, 0);
});

test('FORMERR for QDCOUNT 2 (RFC 9619)', async () => {
  const { m } = await ask({
    questions: [
      { name: 'api.gslb.example.com', qtype: QTYPE.A },
      { name: 'api.gslb.example.com', qtype: QTYPE.AAAA },
    ],
  });
  assert.equal(m.fullRcode, RCODE.FORMERR, `got ${rc(m.fullRcode)}`);
  assert.equal(m.answers.length, 0);
});

test('FORMERR when QDCOUNT says 2 but one question follows', async () => {
  const q = buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: false, qdcountOverride: 2 });
  const { m } = await ask(q);
  assert.equal(m.rcode, RCODE.FORMERR, `got ${rc(m.rcode)}`);
});

// ---------------------------------------------------------------- opcodes

test('NOTIMP for opcode STATUS (dig +opcode=status)', async () => {
  const r = await dig(srv.udp, ['+opcode=status', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.opcode, 'STATUS', digSummary(r));
  assert.equal(r.msg.status, 'NOTIMP', digSummary(r));
  assert.equal(r.msg.answer.length, 0, digSummary(r));
});

for (const [name, opcode] of [
  ['IQUERY', OPCODE.IQUERY],
  ['STATUS', OPCODE.STATUS],
  ['NOTIFY', OPCODE.NOTIFY],
  ['UPDATE', OPCODE.UPDATE],
  ['unassigned 3', 3],
  ['unassigned 15', 15],
] as const) {
  test(`NOTIMP for opcode ${name} (raw), the opcode echoed`, async () => {
    const { m } = await ask({ name: 'gslb.example.com', qtype: QTYPE.SOA, opcode });
    assert.equal(m.rcode, RCODE.NOTIMP, `got ${rc(m.rcode)}`);
    assert.equal(m.opcode, opcode);
    assert.equal(m.answers.length, 0);
  });
}

// ---------------------------------------------------------------- responses are dropped

test('a response (QR=1) is dropped, never answered', async () => {
  const response = buildQuery({ id: 0x5151, name: 'api.gslb.example.com', qtype: QTYPE.A, qr: true, aa: true });
  const query = buildQuery({ id: 0x7272, name: 'api.gslb.example.com', qtype: QTYPE.A });
  // Same socket, response first: by the time the query sent after it has been answered
  // (and 1.5 s more have passed), a reply to the response would have arrived too.
  const replies = await udpCollect(srv.udp, [response, query], { waitMs: 1500 });
  const ids = replies.map((r) => r.readUInt16BE(0));
  assert.ok(ids.includes(0x7272), `the ordinary query after it is answered (got IDs ${JSON.stringify(ids)})`);
  const late = await udpCollect(srv.udp, [response], { waitMs: 1500 });
  assert.ok(!ids.includes(0x5151), 'no reply to a message with QR=1');
  assert.equal(late.length, 0, 'no reply to a message with QR=1 sent alone');
});

test('a datagram shorter than a header does not stop the server (no answer, or FORMERR)', async () => {
  const replies = await udpCollect(srv.udp, [Buffer.from([0x12, 0x34, 0x01])], { waitMs: 1500 });
  for (const r of replies) {
    assert.ok(r.length >= 12 && (r[3]! & 0x0f) === RCODE.FORMERR, `unexpected reply ${r.toString('hex')}`);
  }
  const { m } = await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A });
  assert.equal(m.rcode, RCODE.NOERROR);
});

// ---------------------------------------------------------------- metrics

test('metrics: queries are counted by transport, qtype and rcode; malformed ones by reason', async () => {
  const before0 = await scrape(srv.http);
  const qBefore = sumOf(before0, QUERIES, { transport: 'udp', qtype: [...QTYPE_LABEL.AAAA], rcode: [...RCODE_LABEL.NOERROR] });
  const malformedBefore = sumOf(before0, MALFORMED);

  for (let i = 0; i < 3; i++) await ask({ name: 'api.gslb.example.com', qtype: QTYPE.AAAA });
  await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: [{}, {}] });
  await ask({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { options: [{ code: EDNS_OPT.ECS, data: ecsOptionRaw(1, 33, 0, Buffer.alloc(5)).data }] } });

  const after1 = await scrape(srv.http);
  assert.ok(hasMetric(after1, QUERIES), describeMetric(after1, QUERIES));
  assert.equal(
    sumOf(after1, QUERIES, { transport: 'udp', qtype: [...QTYPE_LABEL.AAAA], rcode: [...RCODE_LABEL.NOERROR] }) - qBefore,
    3,
    `three UDP AAAA NOERROR queries\n${describeMetric(after1, QUERIES)}`,
  );
  assert.ok(hasMetric(after1, MALFORMED), describeMetric(after1, MALFORMED));
  assert.ok(sumOf(after1, MALFORMED) - malformedBefore >= 2, `two malformed queries counted\n${describeMetric(after1, MALFORMED)}`);
  for (const s of after1.filter((x) => x.name === MALFORMED)) assert.ok(s.labels.reason, 'every malformed sample has a reason');
});
