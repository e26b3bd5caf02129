/**
 * Authoritative answers for the example fleet, checked with real clients (dig from
 * bind9-dnsutils, kdig from knot-dnsutils) and raw packets: header bits (RFC 1035,
 * AA/RD/RA), apex SOA and NS with glue, static records, CNAME chasing, NXDOMAIN and
 * NODATA with the RFC 2308 negative TTL, REFUSED outside our zones, and the question
 * name returned byte for byte (0x20 mixed case).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, kdig, type DigRecord } from './helpers/dig.js';
import {
  API,
  API_TTL,
  APEX_CAA,
  APEX_TXT,
  GLUE,
  NAMESERVERS,
  NEGATIVE_TTL,
  SECOND_NEGATIVE_TTL,
  SOA,
  STATUS_TXT,
  VIRGINIA_A,
  VIRGINIA_AAAA,
  WWW,
  ZONE,
  ZONE_TTL,
  digTxtStrings,
  sorted,
  withSecondZone,
} from './helpers/fleet.js';
import { udpExchange } from './helpers/net.js';
import { addRecords, spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';
import { QTYPE, RCODE, buildQuery, parseMessage } from './helpers/wire.js';

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: dozens of dig queries in a few seconds from 127.0.0.1.
    withRateLimitMode(c, 'off');
    withSecondZone(c);
    addRecords(
      c,
      // A CNAME into our other zone, one to a name outside our zones, one to nothing.
      { name: 'alias', type: 'CNAME', data: 'host.second.example.' },
      { name: 'outside', type: 'CNAME', data: 'www.example.net.' },
      { name: 'dangling', type: 'CNAME', data: 'nothere' },
      // Makes ent.gslb.example.com an empty non-terminal.
      { name: 'deep.ent', type: 'TXT', data: 'below an empty non-terminal' },
    );
  });
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

function datas(rrs: DigRecord[], type: string): string[] {
  return sorted(rrs.filter((r) => r.type === type).map((r) => r.data));
}

test('the ready line lists UDP and TCP on one loopback port, and the HTTP address', () => {
  const udp = srv.dns.filter((d) => d.transport === 'udp');
  const tcp = srv.dns.filter((d) => d.transport === 'tcp');
  assert.equal(udp.length, 1, `dns: ${JSON.stringify(srv.dnsUrls)}`);
  assert.equal(tcp.length, 1, `dns: ${JSON.stringify(srv.dnsUrls)}`);
  assert.equal(udp[0]!.host, '127.0.0.1');
  assert.ok(udp[0]!.port > 0, 'port 0 must be replaced by the port actually bound');
  assert.equal(udp[0]!.port, tcp[0]!.port, 'UDP and TCP share the port picked for :0');
  assert.match(srv.http, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
});

test('api A: the Virginia addresses with TTL 30, AA set, RD copied, RA clear', async () => {
  const r = await dig(srv.udp, ['+rec', 'api.gslb.example.com', 'A']);
  const m = r.msg;
  assert.equal(m.status, 'NOERROR', digSummary(r));
  assert.ok(m.flags.includes('qr'), digSummary(r));
  assert.ok(m.flags.includes('aa'), `AA must be set on an authoritative answer\n${digSummary(r)}`);
  assert.ok(m.flags.includes('rd'), `RD must be copied from the query\n${digSummary(r)}`);
  assert.ok(!m.flags.includes('ra'), `RA must be clear: we do not recurse\n${digSummary(r)}`);
  assert.deepEqual(datas(m.answer, 'A'), VIRGINIA_A, digSummary(r));
  assert.equal(m.answer.length, VIRGINIA_A.length, digSummary(r));
  for (const rr of m.answer) {
    assert.equal(rr.name, API);
    assert.equal(rr.class, 'IN');
    assert.equal(rr.ttl, API_TTL, digSummary(r));
  }
});

test('RD clear in the query stays clear in the reply (dig +norec)', async () => {
  const r = await dig(srv.udp, ['+norec', 'api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(!r.msg.flags.includes('rd'), digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.ok(!r.msg.flags.includes('ra'), digSummary(r));
});

test('api AAAA: the Virginia IPv6 address with TTL 30', async () => {
  const r = await dig(srv.udp, ['api.gslb.example.com', 'AAAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'AAAA'), VIRGINIA_AAAA, digSummary(r));
  assert.equal(r.msg.answer.length, 1, digSummary(r));
  assert.equal(r.msg.answer[0]!.ttl, API_TTL, digSummary(r));
});

test('SOA at the apex, with the configured fields and the zone TTL', async () => {
  const r = await dig(srv.udp, ['gslb.example.com', 'SOA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.equal(r.msg.answer.length, 1, digSummary(r));
  const soa = r.msg.answer[0]!;
  assert.equal(soa.type, 'SOA');
  assert.equal(soa.name, ZONE);
  assert.equal(soa.ttl, ZONE_TTL, digSummary(r));
  assert.equal(soa.data, `${SOA.mname} ${SOA.rname} ${SOA.serial} ${SOA.refresh} ${SOA.retry} ${SOA.expire} ${SOA.minimum}`);
});

test('NS at the apex, with the in-zone glue (A and AAAA) in the additional section', async () => {
  const r = await dig(srv.udp, ['gslb.example.com', 'NS']);
  const m = r.msg;
  assert.equal(m.status, 'NOERROR', digSummary(r));
  assert.ok(m.flags.includes('aa'), digSummary(r));
  assert.deepEqual(datas(m.answer, 'NS'), NAMESERVERS, digSummary(r));
  for (const rr of m.answer) assert.equal(rr.name, ZONE);
  for (const [ns, glue] of Object.entries(GLUE)) {
    const a = sorted(m.additional.filter((x) => x.name === ns && x.type === 'A').map((x) => x.data));
    const aaaa = sorted(m.additional.filter((x) => x.name === ns && x.type === 'AAAA').map((x) => x.data));
    assert.deepEqual(a, glue.A, `glue A for ${ns}\n${digSummary(r)}`);
    assert.deepEqual(aaaa, glue.AAAA, `glue AAAA for ${ns}\n${digSummary(r)}`);
  }
});

test('the nameserver host names answer their addresses authoritatively', async () => {
  const r = await dig(srv.udp, ['ns2.gslb.example.com', 'AAAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'AAAA'), GLUE['ns2.gslb.example.com.']!.AAAA, digSummary(r));
});

test('www A: the CNAME is followed inside the zone (CNAME to api, then api\'s A records)', async () => {
  const r = await dig(srv.udp, ['www.gslb.example.com', 'A']);
  const m = r.msg;
  assert.equal(m.status, 'NOERROR', digSummary(r));
  assert.ok(m.flags.includes('aa'), digSummary(r));
  const cname = m.answer.filter((x) => x.type === 'CNAME');
  assert.equal(cname.length, 1, digSummary(r));
  assert.equal(cname[0]!.name, WWW);
  assert.equal(cname[0]!.data, API);
  assert.equal(cname[0]!.ttl, ZONE_TTL);
  assert.equal(m.answer[0]!.type, 'CNAME', `the CNAME comes first in the chain\n${digSummary(r)}`);
  const a = m.answer.filter((x) => x.type === 'A');
  assert.deepEqual(sorted(a.map((x) => x.data)), VIRGINIA_A, digSummary(r));
  for (const rr of a) {
    assert.equal(rr.name, API, 'the A records are owned by the CNAME target');
    assert.equal(rr.ttl, API_TTL);
  }
});

test('www AAAA follows the CNAME too', async () => {
  const r = await dig(srv.udp, ['www.gslb.example.com', 'AAAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'CNAME'), [API], digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'AAAA'), VIRGINIA_AAAA, digSummary(r));
});

test('www TXT: the CNAME, then NODATA at the target (SOA in authority)', async () => {
  const r = await dig(srv.udp, ['www.gslb.example.com', 'TXT']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(r.msg.answer.map((x) => `${x.type} ${x.data}`), [`CNAME ${API}`], digSummary(r));
  assert.ok(r.msg.authority.some((x) => x.type === 'SOA' && x.name === ZONE), digSummary(r));
});

test('a CNAME into another of our zones is followed there', async () => {
  const r = await dig(srv.udp, ['alias.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'CNAME'), ['host.second.example.'], digSummary(r));
  const a = r.msg.answer.filter((x) => x.type === 'A');
  assert.deepEqual(a.map((x) => `${x.name} ${x.data}`), ['host.second.example. 203.0.113.7'], digSummary(r));
});

test('a CNAME to a name outside our zones: NOERROR with the CNAME alone (not REFUSED)', async () => {
  const r = await dig(srv.udp, ['outside.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(r.msg.answer.map((x) => `${x.type} ${x.data}`), ['CNAME www.example.net.'], digSummary(r));
});

test('a CNAME to a missing name in our zone: NXDOMAIN with the CNAME in the answer (RFC 6604)', async () => {
  const r = await dig(srv.udp, ['dangling.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NXDOMAIN', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(r.msg.answer.map((x) => `${x.type} ${x.data}`), ['CNAME nothere.gslb.example.com.'], digSummary(r));
  assert.equal(r.msg.authority.find((x) => x.type === 'SOA')?.ttl, NEGATIVE_TTL, digSummary(r));
});

test('an empty non-terminal is NODATA, not NXDOMAIN (RFC 8020)', async () => {
  const r = await dig(srv.udp, ['ent.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(r.msg.answer.length, 0, digSummary(r));
  assert.equal(r.msg.authority.find((x) => x.type === 'SOA')?.ttl, NEGATIVE_TTL, digSummary(r));
  const below = await dig(srv.udp, ['deep.ent.gslb.example.com', 'TXT']);
  assert.equal(below.msg.status, 'NOERROR', digSummary(below));
  assert.equal(below.msg.answer.length, 1, digSummary(below));
});

test('www CNAME: the CNAME record alone', async () => {
  const r = await dig(srv.udp, ['www.gslb.example.com', 'CNAME']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(r.msg.answer.length, 1, digSummary(r));
  assert.equal(r.msg.answer[0]!.type, 'CNAME');
  assert.equal(r.msg.answer[0]!.data, API);
});

test('TXT at the apex and at status', async () => {
  const apex = await dig(srv.udp, ['gslb.example.com', 'TXT']);
  assert.equal(apex.msg.status, 'NOERROR', digSummary(apex));
  assert.ok(apex.msg.flags.includes('aa'), digSummary(apex));
  assert.equal(apex.msg.answer.length, 1, digSummary(apex));
  assert.deepEqual(digTxtStrings(apex.msg.answer[0]!.data), [APEX_TXT]);
  assert.equal(apex.msg.answer[0]!.ttl, ZONE_TTL);

  const status = await dig(srv.udp, ['status.gslb.example.com', 'TXT']);
  assert.equal(status.msg.status, 'NOERROR', digSummary(status));
  assert.equal(status.msg.answer.length, 1, digSummary(status));
  assert.deepEqual(digTxtStrings(status.msg.answer[0]!.data), [STATUS_TXT]);
});

test('CAA at the apex', async () => {
  const r = await dig(srv.udp, ['gslb.example.com', 'CAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.equal(r.msg.answer.length, 1, digSummary(r));
  assert.equal(r.msg.answer[0]!.type, 'CAA');
  assert.equal(r.msg.answer[0]!.data, APEX_CAA);
});

test('NXDOMAIN: AA, empty answer, the SOA in authority with TTL min(SOA TTL, MINIMUM) (RFC 2308)', async () => {
  for (const name of ['nope.gslb.example.com', 'deeper.under.api.gslb.example.com']) {
    const r = await dig(srv.udp, [name, 'A']);
    const m = r.msg;
    assert.equal(m.status, 'NXDOMAIN', digSummary(r));
    assert.ok(m.flags.includes('aa'), digSummary(r));
    assert.equal(m.answer.length, 0, digSummary(r));
    const soa = m.authority.filter((x) => x.type === 'SOA');
    assert.equal(soa.length, 1, `one SOA in authority\n${digSummary(r)}`);
    assert.equal(soa[0]!.name, ZONE);
    assert.equal(soa[0]!.ttl, NEGATIVE_TTL, `negative TTL = min(${ZONE_TTL}, ${SOA.minimum})\n${digSummary(r)}`);
  }
});

test('NODATA: NOERROR, empty answer, the SOA in authority with the negative TTL', async () => {
  // A name with other types (status has TXT), the GSLB name for a type it lacks,
  // the apex for A, and a glue host for TXT.
  for (const [name, type] of [
    ['status.gslb.example.com', 'A'],
    ['api.gslb.example.com', 'MX'],
    ['api.gslb.example.com', 'TXT'],
    ['gslb.example.com', 'A'],
    ['ns1.gslb.example.com', 'TXT'],
  ] as const) {
    const r = await dig(srv.udp, [name, type]);
    const m = r.msg;
    assert.equal(m.status, 'NOERROR', `${name} ${type}\n${digSummary(r)}`);
    assert.ok(m.flags.includes('aa'), digSummary(r));
    assert.equal(m.answer.length, 0, `${name} ${type}: empty answer\n${digSummary(r)}`);
    const soa = m.authority.filter((x) => x.type === 'SOA');
    assert.equal(soa.length, 1, `${name} ${type}: one SOA in authority\n${digSummary(r)}`);
    assert.equal(soa[0]!.name, ZONE);
    assert.equal(soa[0]!.ttl, NEGATIVE_TTL, digSummary(r));
  }
});

test('negative TTL when the SOA TTL is below MINIMUM: the SOA TTL wins (second zone: ttl 20, minimum 300)', async () => {
  const nx = await dig(srv.udp, ['missing.second.example', 'A']);
  assert.equal(nx.msg.status, 'NXDOMAIN', digSummary(nx));
  const soa = nx.msg.authority.find((x) => x.type === 'SOA');
  assert.ok(soa, digSummary(nx));
  assert.equal(soa.name, 'second.example.');
  assert.equal(soa.ttl, SECOND_NEGATIVE_TTL, digSummary(nx));

  const nodata = await dig(srv.udp, ['host.second.example', 'AAAA']);
  assert.equal(nodata.msg.status, 'NOERROR', digSummary(nodata));
  assert.equal(nodata.msg.answer.length, 0, digSummary(nodata));
  assert.equal(nodata.msg.authority.find((x) => x.type === 'SOA')?.ttl, SECOND_NEGATIVE_TTL, digSummary(nodata));

  const yes = await dig(srv.udp, ['host.second.example', 'A']);
  assert.equal(yes.msg.status, 'NOERROR', digSummary(yes));
  assert.deepEqual(datas(yes.msg.answer, 'A'), ['203.0.113.7'], digSummary(yes));
  assert.equal(yes.msg.answer[0]!.ttl, 600);
});

test('REFUSED for names outside our zones, with AA clear', async () => {
  for (const name of ['example.org', 'example.com', 'com', 'notgslb.example.com']) {
    const r = await dig(srv.udp, [name, 'A']);
    assert.equal(r.msg.status, 'REFUSED', `${name}\n${digSummary(r)}`);
    assert.ok(!r.msg.flags.includes('aa'), `AA must be clear outside our zones\n${digSummary(r)}`);
    assert.equal(r.msg.answer.length, 0, digSummary(r));
  }
});

test('0x20: the question comes back with the case it was asked in (dig)', async () => {
  const r = await dig(srv.udp, ['API.GsLb.Example.COM', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(r.msg.question.length, 1, digSummary(r));
  assert.equal(r.msg.question[0]!.name, 'API.GsLb.Example.COM.', digSummary(r));
  assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A, 'a mixed-case name still matches');
});

test('0x20: the question name is returned byte for byte (raw packet)', async () => {
  const name = 'aPi.GSLB.eXaMpLe.cOm';
  const q = buildQuery({ name, qtype: QTYPE.A });
  const reply = await udpExchange(srv.udp, q);
  assert.ok(reply, 'no reply');
  const m = parseMessage(reply);
  assert.equal(m.rcode, RCODE.NOERROR);
  assert.equal(m.questions.length, 1);
  // The question as sent starts right after the 12-byte header.
  const sentName = q.subarray(12, 12 + m.questions[0]!.nameWire.length);
  assert.deepEqual(m.questions[0]!.nameWire, sentName);
  assert.equal(m.questions[0]!.name, `${name}.`);
  assert.equal(m.answers.length, 2);

  // Error replies (NXDOMAIN, REFUSED) keep the question's bytes too.
  for (const other of ['NoPe.GSLB.example.COM', 'ExAmPlE.oRg']) {
    const q2 = buildQuery({ name: other, qtype: QTYPE.A });
    const r2 = await udpExchange(srv.udp, q2);
    assert.ok(r2, 'no reply');
    const m2 = parseMessage(r2);
    assert.deepEqual(m2.questions[0]?.nameWire, q2.subarray(12, 12 + other.length + 2), `question of ${other}`);
  }
});

test('kdig: api A over UDP (AA, RD copied, RA clear) and AAAA over TCP', async () => {
  const a = await kdig(srv.udp, ['api.gslb.example.com', 'A']);
  const j = a.json;
  assert.equal(j.RCODE, 0, a.stdout);
  assert.equal(j.QR, 1);
  assert.equal(j.AA, 1, a.stdout);
  assert.equal(j.RD, 1, `kdig sets RD by default; it must be copied\n${a.stdout}`);
  assert.equal(j.RA, 0, a.stdout);
  assert.deepEqual(sorted((j.answerRRs ?? []).map((rr) => String(rr.rdataA))), VIRGINIA_A, a.stdout);
  for (const rr of j.answerRRs ?? []) assert.equal(rr.TTL, API_TTL);

  const aaaa = await kdig(srv.tcp, ['+tcp', 'api.gslb.example.com', 'AAAA']);
  assert.equal(aaaa.json.RCODE, 0, aaaa.stdout);
  assert.equal(aaaa.json.AA, 1, aaaa.stdout);
  assert.deepEqual((aaaa.json.answerRRs ?? []).map((rr) => String(rr.rdataAAAA)), VIRGINIA_AAAA, aaaa.stdout);
});

test('kdig: NXDOMAIN with the SOA in authority, and REFUSED outside', async () => {
  const nx = await kdig(srv.udp, ['+norecurse', 'nothing-here.gslb.example.com', 'AAAA']);
  assert.equal(nx.json.RCODE, RCODE.NXDOMAIN, nx.stdout);
  assert.equal(nx.json.AA, 1, nx.stdout);
  assert.equal(nx.json.RD, 0, nx.stdout);
  const soa = (nx.json.authorityRRs ?? []).filter((rr) => rr.TYPE === QTYPE.SOA);
  assert.equal(soa.length, 1, nx.stdout);
  assert.equal(soa[0]!.NAME, ZONE);
  assert.equal(soa[0]!.TTL, NEGATIVE_TTL, nx.stdout);

  const refused = await kdig(srv.udp, ['www.example.net', 'A']);
  assert.equal(refused.json.RCODE, RCODE.REFUSED, refused.stdout);
  assert.equal(refused.json.AA, 0, refused.stdout);
});

test('dig over TCP answers the same as over UDP', async () => {
  const r = await dig(srv.tcp, ['+tcp', 'www.gslb.example.com', 'A']);
  assert.equal(r.msg.transport, 'TCP', digSummary(r));
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.flags.includes('aa'), digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'A'), VIRGINIA_A, digSummary(r));
  assert.deepEqual(datas(r.msg.answer, 'CNAME'), [API], digSummary(r));
});
