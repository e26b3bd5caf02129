/**
 * UDP reply size and truncation (RFC 1035 §4.2.1, RFC 6891 §6.2.3-6.2.5, RFC 7766):
 * a UDP reply is at most max(512, min(advertised payload size, 1232)) bytes; a reply that
 * does not fit is sent with TC=1 (keeping the OPT record when the query had one), and the
 * whole answer comes over TCP. A `big` TXT record (1500 bytes of data) fits only TCP; a
 * `medium` one (700 bytes) fits EDNS payload sizes from about 770 bytes up.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, kdig, kdigOpt } from './helpers/dig.js';
import { BIG_TXT, GLUE, MEDIUM_TXT, digTxtStrings, withLargeRecords } from './helpers/fleet.js';
import { tcpExchange, udpExchange } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { QTYPE, buildQuery, parseMessage, txtStrings, type QuerySpec } from './helpers/wire.js';

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig(withLargeRecords);
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

function joinedTxt(r: Awaited<ReturnType<typeof dig>>): string {
  return r.msg.answer.filter((x) => x.type === 'TXT').flatMap((x) => digTxtStrings(x.data)).join('');
}

async function rawUdp(spec: QuerySpec) {
  const q = buildQuery(spec);
  const reply = await udpExchange(srv.udp, q);
  assert.ok(reply, 'no reply within 3 s');
  return { reply, m: parseMessage(reply) };
}

test('big TXT over UDP with +bufsize=1232: TC=1, OPT kept, reply within 1232 bytes', async () => {
  const r = await dig(srv.udp, ['+bufsize=1232', '+ignore', 'big.gslb.example.com', 'TXT']);
  assert.equal(r.msg.transport, 'UDP', digSummary(r));
  assert.ok(r.msg.flags.includes('tc'), `tc flag expected\n${digSummary(r)}`);
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.ok(r.msg.opt, `the OPT record is kept in a truncated reply\n${digSummary(r)}`);
  assert.ok((r.msg.msgSize ?? Infinity) <= 1232, digSummary(r));
});

test('big TXT over UDP with +noedns: TC=1, no OPT, reply within 512 bytes', async () => {
  const r = await dig(srv.udp, ['+noedns', '+ignore', 'big.gslb.example.com', 'TXT']);
  assert.ok(r.msg.flags.includes('tc'), `tc flag expected\n${digSummary(r)}`);
  assert.equal(r.msg.opt, undefined, digSummary(r));
  assert.ok((r.msg.msgSize ?? Infinity) <= 512, digSummary(r));
});

test('big TXT over UDP with +bufsize=4096: still TC=1, the server caps replies at 1232', async () => {
  const r = await dig(srv.udp, ['+bufsize=4096', '+ignore', 'big.gslb.example.com', 'TXT']);
  assert.ok(r.msg.flags.includes('tc'), `tc flag expected\n${digSummary(r)}`);
  assert.ok((r.msg.msgSize ?? Infinity) <= 1232, digSummary(r));
});

test('big TXT over TCP (+tcp): the full answer, no TC', async () => {
  const r = await dig(srv.tcp, ['+tcp', 'big.gslb.example.com', 'TXT']);
  assert.equal(r.msg.transport, 'TCP', digSummary(r));
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(!r.msg.flags.includes('tc'), digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.equal(r.msg.answer.length, 1, digSummary(r));
  assert.equal(joinedTxt(r), BIG_TXT);
});

test('dig falls back to TCP on its own after TC and gets the full answer', async () => {
  const r = await dig(srv.udp, ['big.gslb.example.com', 'TXT']);
  assert.ok(r.retriedOverTcp, `dig should print "Truncated, retrying in TCP mode."\n${digSummary(r)}`);
  assert.equal(r.msg.transport, 'TCP', digSummary(r));
  assert.equal(joinedTxt(r), BIG_TXT, digSummary(r));
});

test('kdig: TC over UDP (+ignore), the full answer over TCP', async () => {
  const udp = await kdig(srv.udp, ['+bufsize=1232', '+ignore', 'big.gslb.example.com', 'TXT']);
  assert.equal(udp.json.TC, 1, udp.stdout);
  assert.ok(kdigOpt(udp.json), `OPT kept\n${udp.stdout}`);
  const tcp = await kdig(srv.tcp, ['+tcp', 'big.gslb.example.com', 'TXT']);
  assert.equal(tcp.json.TC, 0, tcp.stdout);
  assert.equal(tcp.json.RCODE, 0, tcp.stdout);
  const rr = (tcp.json.answerRRs ?? []).find((x) => x.TYPE === QTYPE.TXT);
  assert.ok(rr?.RDATAHEX, tcp.stdout);
  assert.equal(txtStrings(Buffer.from(rr.RDATAHEX, 'hex')).join(''), BIG_TXT);
});

test('the TXT data is split into strings of at most 255 bytes (TCP, raw)', async () => {
  const [reply] = await tcpExchange(srv.tcp, [buildQuery({ name: 'big.gslb.example.com', qtype: QTYPE.TXT })]);
  assert.ok(reply, 'no TCP reply');
  const m = parseMessage(reply);
  assert.equal(m.tc, false);
  assert.equal(m.answers.length, 1);
  const strings = txtStrings(m.answers[0]!.rdata);
  assert.ok(strings.every((s) => s.length <= 255));
  assert.equal(strings.join(''), BIG_TXT);
});

test('medium TXT (about 770-byte reply): fits +bufsize=1232, truncated with +noedns', async () => {
  const fits = await dig(srv.udp, ['+bufsize=1232', '+ignore', 'medium.gslb.example.com', 'TXT']);
  assert.ok(!fits.msg.flags.includes('tc'), digSummary(fits));
  assert.equal(joinedTxt(fits), MEDIUM_TXT, digSummary(fits));

  const plain = await dig(srv.udp, ['+noedns', '+ignore', 'medium.gslb.example.com', 'TXT']);
  assert.ok(plain.msg.flags.includes('tc'), `a reply over 512 bytes without EDNS is truncated\n${digSummary(plain)}`);
  assert.ok((plain.msg.msgSize ?? Infinity) <= 512, digSummary(plain));
});

test('the advertised size is honoured between 512 and 1232 (medium TXT: 600 truncates, 1000 fits)', async () => {
  const small = await rawUdp({ name: 'medium.gslb.example.com', qtype: QTYPE.TXT, edns: { udpSize: 600 } });
  assert.equal(small.m.tc, true, `TC expected with a 600-byte limit (reply ${small.reply.length} bytes)`);
  assert.ok(small.reply.length <= 600, `reply of ${small.reply.length} bytes exceeds the advertised 600`);
  assert.ok(small.m.opt, 'OPT kept in the truncated reply');

  const big = await rawUdp({ name: 'medium.gslb.example.com', qtype: QTYPE.TXT, edns: { udpSize: 1000 } });
  assert.equal(big.m.tc, false, `no TC with a 1000-byte limit (reply ${big.reply.length} bytes)`);
  assert.equal(txtStrings(big.m.answers[0]!.rdata).join(''), MEDIUM_TXT);
});

test('an advertised size below 512 counts as 512 (RFC 6891 §6.2.5): a 170-byte reply is not truncated', async () => {
  for (const udpSize of [0, 100, 511]) {
    const { reply, m } = await rawUdp({ name: 'gslb.example.com', qtype: QTYPE.NS, edns: { udpSize } });
    assert.ok(reply.length > 100, 'the NS reply with glue is larger than 100 bytes');
    assert.equal(m.tc, false, `advertised ${udpSize}: TC must be clear for a ${reply.length}-byte reply`);
    assert.equal(m.answers.length, 2);
    const glue = m.additional.filter((x) => x.type === QTYPE.A || x.type === QTYPE.AAAA).length;
    assert.equal(glue, Object.values(GLUE).reduce((n, g) => n + g.A.length + g.AAAA.length, 0), `advertised ${udpSize}: all glue present`);
  }
});

test('raw UDP: every truncated reply stays within its limit and keeps the question', async () => {
  for (const [edns, limit] of [
    [false, 512],
    [{ udpSize: 512 }, 512],
    [{ udpSize: 1232 }, 1232],
    [{ udpSize: 65535 }, 1232],
  ] as const) {
    const { reply, m } = await rawUdp({ name: 'big.gslb.example.com', qtype: QTYPE.TXT, edns });
    assert.equal(m.tc, true, `edns ${JSON.stringify(edns)}: TC expected`);
    assert.ok(reply.length <= limit, `edns ${JSON.stringify(edns)}: ${reply.length} bytes > ${limit}`);
    assert.equal(m.questions.length, 1);
    assert.equal(m.questions[0]!.name, 'big.gslb.example.com.');
    assert.equal(Boolean(m.opt), edns !== false, 'OPT present exactly when the query had one');
  }
});
