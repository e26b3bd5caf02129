/**
 * DNS Cookies (RFC 7873, RFC 9018 server cookies), NSID (RFC 5001) and edns-tcp-keepalive
 * (RFC 7828) with real dig and kdig against running servers on loopback:
 * - node A and node B share one secret file; node C has no secret (a random one);
 * - a client cookie alone gets a server cookie (dig, kdig); the cookie comes back "good";
 *   a bad server cookie over UDP gets BADCOOKIE with a fresh cookie (dig retries with it),
 *   over TCP an answer; B accepts A's cookie, C does not;
 * - rotation: A's secret file replaced, the old one as previousSecretFile, SIGHUP: the old
 *   cookie is still good and is renewed; the previous file removed, SIGHUP: BADCOOKIE;
 * - a malformed COOKIE option (length 5, 9, 41) is FORMERR;
 * - a valid server cookie is exempt from rate limiting (a flood with it is answered in full);
 * - NSID only when asked and configured; keepalive over TCP only, advertising the idle timeout.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { dig, digSummary, kdig, kdigOpt } from './helpers/dig.js';
import { tcpExchange, udpExchange, sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, withRateLimitMode, type ConfigObject, type RunningServer, type TestConfig } from './helpers/server.js';
import { EDNS_OPT, QTYPE, RCODE, buildQuery, parseMessage, type Message } from './helpers/wire.js';

const SECRET_1 = '0123456789abcdef0123456789abcdef';
const SECRET_2 = 'fedcba9876543210fedcba9876543210';
const NAME = 'api.gslb.example.com';

interface Node {
  cfg: TestConfig;
  srv: RunningServer;
}
let a: Node;
let b: Node;
let c: Node;

async function start(mutate: (cfg: ConfigObject) => void, secret?: string): Promise<Node> {
  const cfg = writeTestConfig(mutate);
  if (secret) writeFileSync(join(cfg.dir, 'cookie.secret'), secret + '\n');
  return { cfg, srv: await spawnServer({ configFile: cfg.file }) };
}

before(async () => {
  // Rate limiting stays on (the default): these suites send a few dozen queries, and one
  // test floods with a valid cookie on purpose.
  a = await start((x) => {
    x.dns = { ...x.dns, cookies: { secretFile: 'cookie.secret' }, nsid: 'node-a', tcp: { idleTimeoutMs: 7500 } };
  }, SECRET_1);
  b = await start((x) => {
    x.dns = { ...x.dns, cookies: { secretFile: 'cookie.secret' }, nsid: 'hex:6e6f6465ff' };
  }, SECRET_1);
  c = await start((x) => {
    withRateLimitMode(x, 'on');
  });
});

after(async () => {
  for (const n of [a, b, c]) {
    await n?.srv.stop();
    n?.cfg.cleanup();
  }
});

/** The COOKIE line dig printed: the hex and dig's verdict ("good", …). */
function digCookie(r: Awaited<ReturnType<typeof dig>>): { hex: string; verdict: string } | undefined {
  const o = r.msg.opt?.options.find((x) => x.name === 'COOKIE');
  if (!o) return undefined;
  const m = /^([0-9a-f]+)(?: \((\w+)\))?/.exec(o.value);
  return m ? { hex: m[1]!, verdict: m[2] ?? '' } : undefined;
}

function cookieOf(m: Message): Buffer | undefined {
  return m.opt?.options.find((o) => o.code === EDNS_OPT.COOKIE)?.data;
}

function withCookie(cookie: Buffer, o: { tcp?: boolean; id?: number } = {}): Buffer {
  return buildQuery({ id: o.id, name: NAME, qtype: QTYPE.A, edns: { options: [{ code: EDNS_OPT.COOKIE, data: cookie }] } });
}

async function udp(n: Node, q: Buffer): Promise<Message> {
  const r = await udpExchange(n.srv.udp, q);
  assert.ok(r, 'a reply within 3 s');
  return parseMessage(r);
}

const CLIENT = Buffer.from('a1b2c3d4e5f60718', 'hex');

test('dig +cookie: a client cookie alone gets a 16-byte server cookie (RFC 9018: version 1, now); sent back, dig calls it good', { timeout: 30_000 }, async () => {
  const r1 = await dig(a.srv.udp, ['+cookie', NAME, 'A']);
  const c1 = digCookie(r1);
  assert.ok(c1, `a COOKIE in the reply\n${digSummary(r1)}`);
  assert.equal(c1.hex.length, 48, digSummary(r1));
  assert.equal(c1.hex.slice(16, 18), '01', 'version 1');
  const ts = parseInt(c1.hex.slice(24, 32), 16);
  assert.ok(Math.abs(ts - Date.now() / 1000) < 60, `timestamp ${ts} is now`);
  assert.equal(c1.verdict, 'good', digSummary(r1));
  assert.equal(r1.msg.status, 'NOERROR');
  const r2 = await dig(a.srv.udp, [`+cookie=${c1.hex}`, NAME, 'A']);
  assert.equal(r2.msg.status, 'NOERROR', digSummary(r2));
  assert.equal(digCookie(r2)?.verdict, 'good', digSummary(r2));
  assert.equal(digCookie(r2)?.hex, c1.hex, 'a young cookie is echoed');
  // kdig too.
  const k = await kdig(a.srv.udp, ['+cookie', NAME, 'A']);
  const opt = kdigOpt(k.json);
  const ck = opt?.options.find((o) => o.code === 10);
  assert.equal(ck?.data.length, 24, k.stdout);
});

test('a bad server cookie: BADCOOKIE over UDP with a fresh cookie (dig retries with it and is answered); over TCP answered', { timeout: 30_000 }, async () => {
  const bad = Buffer.concat([CLIENT, Buffer.from('0100000000000000aaaaaaaaaaaaaaaa', 'hex')]);
  const m = await udp(a, withCookie(bad));
  assert.equal(m.fullRcode, 23, 'BADCOOKIE (extended rcode 23)');
  assert.equal(m.ancount, 0);
  assert.equal(m.questions[0]?.name, `${NAME}.`);
  const fresh = cookieOf(m);
  assert.ok(fresh && fresh.length === 24 && fresh.subarray(0, 8).equals(CLIENT), 'the client cookie and a new server cookie');
  const again = await udp(a, withCookie(fresh));
  assert.equal(again.fullRcode, RCODE.NOERROR);
  assert.ok(again.ancount > 0);
  const [tcp] = await tcpExchange(a.srv.tcp, [withCookie(bad)]);
  const t = parseMessage(tcp!);
  assert.equal(t.fullRcode, RCODE.NOERROR, 'over TCP the address is proven: answered');
  assert.equal(cookieOf(t)?.length, 24, 'with a fresh cookie');
  const r = await dig(a.srv.udp, [`+cookie=${bad.toString('hex')}`, NAME, 'A']);
  assert.match(r.stdout, /BADCOOKIE, retrying/, digSummary(r));
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.equal(digCookie(r)?.verdict, 'good', digSummary(r));
});

test('a second node with the same secret accepts the first node\'s cookie; a node with its own secret answers BADCOOKIE', { timeout: 30_000 }, async () => {
  const first = cookieOf(await udp(a, withCookie(CLIENT)))!;
  const onB = await udp(b, withCookie(first));
  assert.equal(onB.fullRcode, RCODE.NOERROR);
  assert.ok(cookieOf(onB)!.equals(first), 'B echoes the cookie A made');
  const r = await dig(b.srv.udp, [`+cookie=${first.toString('hex')}`, NAME, 'A']);
  assert.equal(digCookie(r)?.verdict, 'good', digSummary(r));
  const onC = await udp(c, withCookie(first));
  assert.equal(onC.fullRcode, 23);
});

test('secret rotation: with the old secret as previous, old cookies stay good and are renewed; without it they are bad', { timeout: 60_000 }, async () => {
  const old = cookieOf(await udp(a, withCookie(CLIENT)))!;
  const file = a.cfg.file;
  writeFileSync(join(a.cfg.dir, 'cookie.secret'), SECRET_2);
  writeFileSync(join(a.cfg.dir, 'cookie.previous'), SECRET_1);
  const edit = (previous: boolean) => {
    const cfg = parse(readFileSync(file, 'utf8')) as { dns: { cookies: Record<string, string> } };
    cfg.dns.cookies = { secretFile: 'cookie.secret', ...(previous ? { previousSecretFile: 'cookie.previous' } : {}) };
    writeFileSync(file, stringify(cfg));
  };
  const reload = async (want: (m: Message) => boolean) => {
    assert.ok(a.srv.proc?.kill('SIGHUP'));
    for (let i = 0; i < 100; i++) {
      const m = await udp(a, withCookie(old, { id: i }));
      if (want(m)) return m;
      await sleep(100);
    }
    assert.fail(`the reload did not take effect within 10 s\n${a.srv.logs.slice(-10).join('\n')}`);
  };
  edit(true);
  // After the reload, the old cookie is accepted and replaced by one made with the new secret.
  const renewed = await reload((m) => m.fullRcode === RCODE.NOERROR && !cookieOf(m)!.equals(old));
  const fresh = cookieOf(renewed)!;
  assert.ok(fresh.subarray(0, 8).equals(CLIENT));
  assert.equal((await udp(a, withCookie(fresh))).fullRcode, RCODE.NOERROR, 'the renewed cookie is good');
  assert.equal((await udp(b, withCookie(fresh))).fullRcode, 23, 'B, still on the old secret, does not know the new one');
  edit(false);
  unlinkSync(join(a.cfg.dir, 'cookie.previous'));
  await reload((m) => m.fullRcode === 23);
  assert.equal((await udp(a, withCookie(fresh))).fullRcode, RCODE.NOERROR);
});

test('a malformed COOKIE option (length 5, 9, 15, 41) is FORMERR; two COOKIE options too', { timeout: 30_000 }, async () => {
  for (const len of [5, 9, 15, 41]) {
    const m = await udp(c, withCookie(Buffer.alloc(len, 7)));
    assert.equal(m.fullRcode, RCODE.FORMERR, `length ${len}`);
  }
  const two = buildQuery({ name: NAME, qtype: QTYPE.A, edns: { options: [{ code: 10, data: CLIENT }, { code: 10, data: CLIENT }] } });
  assert.equal((await udp(c, two)).fullRcode, RCODE.FORMERR);
  const r = await dig(c.srv.udp, ['+ednsopt=10:0102030405', NAME, 'A']);
  assert.equal(r.msg.status, 'FORMERR', digSummary(r));
});

test('a valid server cookie is exempt from rate limiting: a 200-query flood with it is answered in full', { timeout: 30_000 }, async () => {
  const sock = dgram.createSocket('udp4');
  const got: Message[] = [];
  sock.on('message', (m) => got.push(parseMessage(m)));
  await new Promise<void>((r) => sock.bind(0, '127.0.7.1', () => r()));
  try {
    // Learn a cookie from this address, then flood with it.
    const q0 = withCookie(CLIENT, { id: 1 });
    sock.send(q0, c.srv.udp.port, c.srv.udp.host);
    for (let i = 0; i < 50 && got.length === 0; i++) await sleep(20);
    const cookie = cookieOf(got[0]!)!;
    got.length = 0;
    for (let i = 0; i < 200; i++) sock.send(withCookie(cookie, { id: i + 2 }), c.srv.udp.port, c.srv.udp.host);
    await sleep(500);
    const full = got.filter((m) => !m.tc && m.ancount > 0).length;
    assert.equal(full, 200, `answered in full: ${full} of 200`);
    // The same flood with a client cookie only is limited.
    got.length = 0;
    for (let i = 0; i < 200; i++) sock.send(withCookie(CLIENT, { id: i + 300 }), c.srv.udp.port, c.srv.udp.host);
    await sleep(500);
    const limited = got.filter((m) => !m.tc && m.ancount > 0).length;
    assert.ok(limited <= 40, `client cookie only: ${limited} of 200 answered in full`);
    // The slipped replies carry a server cookie, so a real client can come back validated.
    assert.ok(got.some((m) => m.tc && cookieOf(m)?.length === 24), 'a slipped reply carries a cookie');
  } finally {
    sock.close();
  }
});

test('NSID: sent when asked (dig +nsid, kdig +nsid) and configured, as text or hex; never unasked or unconfigured', { timeout: 30_000 }, async () => {
  const ra = await dig(a.srv.udp, ['+nsid', NAME, 'A']);
  assert.match(ra.stdout, /; NSID: 6e 6f 64 65 2d 61 \("node-a"\)/, digSummary(ra));
  const rb = await kdig(b.srv.udp, ['+nsid', NAME, 'A']);
  assert.equal(kdigOpt(rb.json)?.options.find((o) => o.code === 3)?.data.toString('hex'), '6e6f6465ff', rb.stdout);
  const unasked = await dig(a.srv.udp, [NAME, 'A']);
  assert.doesNotMatch(unasked.stdout, /NSID/, digSummary(unasked));
  const unconfigured = await dig(c.srv.udp, ['+nsid', NAME, 'A']);
  assert.doesNotMatch(unconfigured.stdout, /; NSID/, digSummary(unconfigured));
});

test('edns-tcp-keepalive: over TCP the idle timeout in 100 ms units (dig +keepalive); over UDP never; with data over TCP FORMERR', { timeout: 30_000 }, async () => {
  const r = await dig(a.srv.udp, ['+tcp', '+keepalive', NAME, 'A']);
  assert.match(r.stdout, /; TCP KEEPALIVE: 7\.5 secs/, digSummary(r));
  const rc = await dig(c.srv.udp, ['+tcp', '+keepalive', NAME, 'A']);
  assert.match(rc.stdout, /; TCP KEEPALIVE: 10\.0 secs/, `the default dns.tcp.idleTimeoutMs\n${digSummary(rc)}`);
  const overUdp = await udp(a, buildQuery({ name: NAME, qtype: QTYPE.A, edns: { options: [{ code: 11, data: Buffer.alloc(0) }] } }));
  assert.equal(overUdp.opt?.options.find((o) => o.code === 11), undefined, 'not over UDP');
  const [t] = await tcpExchange(a.srv.tcp, [buildQuery({ name: NAME, qtype: QTYPE.A, edns: { options: [{ code: 11, data: Buffer.alloc(0) }] } })]);
  assert.equal(parseMessage(t!).opt?.options.find((o) => o.code === 11)?.data.readUInt16BE(0), 75);
  const [bad] = await tcpExchange(a.srv.tcp, [buildQuery({ name: NAME, qtype: QTYPE.A, edns: { options: [{ code: 11, data: Buffer.from([0, 5]) }] } })]);
  assert.equal(parseMessage(bad!).fullRcode, RCODE.FORMERR);
});
