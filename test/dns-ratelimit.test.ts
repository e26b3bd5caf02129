/**
 * Response rate limiting (dns.rateLimit, docs/dns.md "Response rate limiting") with real
 * sockets and real dig, on loopback:
 * - the example config as shipped (rate limiting on by default): a flood from one source is
 *   limited, the slipped replies carry TC=1 and no records, the rest are dropped, and the
 *   counters say so; a client in another /24 is answered meanwhile;
 * - slip 1 and an exempt address: dig, asking while its /24 floods, gets TC and retries over
 *   TCP (never limited) to get the answer; the exempt address is answered every time;
 * - log mode, answered by a DNS worker: every query of a flood is answered, the limited ones
 *   counted and logged (the worker's line has an ISO time like the primary's).
 * Floods are bounded in count (a few hundred datagrams) and time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { dig, digSummary } from './helpers/dig.js';
import { scrape, sumOf } from './helpers/metrics.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { QTYPE, buildQuery, parseMessage, type Message } from './helpers/wire.js';
import type { Endpoint } from './helpers/net.js';

const RRL = 'gridsteer_dns_rate_limited_total';

/**
 * Sends `count` copies of a query from one socket bound to `from`, `perTick` at a time every
 * 5 ms (so a flood lasts count / perTick × 5 ms), and collects replies until `waitMs` after
 * the last send.
 */
async function flood(ep: Endpoint, o: { from: string; count: number; perTick?: number; name?: string; qtype?: number; waitMs?: number }): Promise<Message[]> {
  const sock = dgram.createSocket('udp4');
  const got: Message[] = [];
  sock.on('message', (m) => got.push(parseMessage(m)));
  sock.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(0, o.from, () => resolve());
  });
  try {
    const q = buildQuery({ name: o.name ?? 'api.gslb.example.com', qtype: o.qtype ?? QTYPE.A, edns: {} });
    const perTick = o.perTick ?? 50;
    for (let sent = 0; sent < o.count; ) {
      for (let i = 0; i < perTick && sent < o.count; i++, sent++) {
        q.writeUInt16BE(sent & 0xffff, 0);
        sock.send(q, ep.port, ep.host);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, o.waitMs ?? 500));
    return got;
  } finally {
    sock.close();
  }
}

const full = (ms: Message[]) => ms.filter((m) => !m.tc && m.ancount > 0);
const truncated = (ms: Message[]) => ms.filter((m) => m.tc);

let defaults: { cfg: TestConfig; srv: RunningServer };
let slipOne: { cfg: TestConfig; srv: RunningServer };
let logOnly: { cfg: TestConfig; srv: RunningServer };

before(async () => {
  // As shipped: no dns.rateLimit in the config, so the defaults (on, 20 answers/s, slip 2).
  const c1 = writeTestConfig((cfg) => {
    if (cfg.dns) delete cfg.dns.rateLimit;
  });
  defaults = { cfg: c1, srv: await spawnServer({ configFile: c1.file }) };
  const c2 = writeTestConfig((cfg) => {
    cfg.dns = { ...cfg.dns, rateLimit: { mode: 'on', slip: 1, exempt: ['127.0.0.2'] } };
  });
  slipOne = { cfg: c2, srv: await spawnServer({ configFile: c2.file }) };
  const c3 = writeTestConfig((cfg) => {
    cfg.dns = { ...cfg.dns, rateLimit: { mode: 'log' } };
  });
  // Answered by a DNS worker (the others answer in the primary): its log lines read as the primary's.
  logOnly = { cfg: c3, srv: await spawnServer({ configFile: c3.file, workers: 1, readyTimeoutMs: 60_000 }) };
});

after(async () => {
  for (const s of [defaults, slipOne, logOnly]) {
    await s?.srv.stop();
    s?.cfg.cleanup();
  }
});

test('defaults: a 300-query flood from one source is limited; slipped replies are TC=1 without records; another /24 is answered', { timeout: 30_000 }, async () => {
  const { srv } = defaults;
  const before = await scrape(srv.http);
  // 300 queries in about 30 ms: the bucket (20/s, a second's burst) admits about 20.
  const got = await flood(srv.udp, { from: '127.0.0.1', count: 300, perTick: 50 });
  const answered = full(got);
  const tc = truncated(got);
  assert.ok(answered.length >= 15 && answered.length <= 30, `full answers: ${answered.length} of ${got.length} replies`);
  assert.ok(tc.length >= 100, `slipped (TC) replies: ${tc.length}`);
  assert.ok(got.length < 200, `a third or more dropped: ${got.length} replies to 300`);
  for (const m of tc) {
    assert.equal(m.ancount + m.nscount, 0, 'a slipped reply has no records');
    assert.equal(m.additional.length, 0);
    assert.equal(m.questions[0]?.name.toLowerCase(), 'api.gslb.example.com.');
    assert.ok(m.opt, 'the OPT record is kept');
  }
  // Meanwhile a client of another /24 has a bucket of its own.
  const other = await flood(srv.udp, { from: '127.0.1.1', count: 5, perTick: 5 });
  assert.equal(full(other).length, 5);
  const after = await scrape(srv.http);
  const d = (m: Record<string, string>) => sumOf(after, RRL, m) - sumOf(before, RRL, m);
  assert.equal(d({ kind: 'answer', action: 'slipped' }), tc.length, 'slipped counted');
  assert.equal(d({ kind: 'answer', action: 'dropped' }), 300 - got.length, 'dropped counted');
  assert.ok(srv.logs.some((l) => l.includes('"module":"ratelimit"') && l.includes('"client":"127.0.0.0/24"') && l.includes('"kind":"answer"')), 'a log line names the prefix');
});

test('defaults: random subdomains share one NXDOMAIN bucket per zone (10/s)', { timeout: 30_000 }, async () => {
  const { srv } = defaults;
  const sock = dgram.createSocket('udp4');
  const got: Message[] = [];
  sock.on('message', (m) => got.push(parseMessage(m)));
  await new Promise<void>((r) => sock.bind(0, '127.0.2.1', () => r()));
  try {
    for (let i = 0; i < 100; i++) sock.send(buildQuery({ name: `r${i}x${Math.random().toString(36).slice(2, 8)}.gslb.example.com`, qtype: QTYPE.A }), srv.udp.port, srv.udp.host);
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    sock.close();
  }
  const nx = got.filter((m) => !m.tc && m.rcode === 3);
  assert.ok(nx.length >= 8 && nx.length <= 16, `NXDOMAIN answered: ${nx.length} of 100 distinct names`);
});

test('slip 1: dig asking while its /24 floods gets TC=1 and retries over TCP to get the answer', { timeout: 30_000 }, async () => {
  const { srv } = slipOne;
  // A flood of 600 queries over about 1.5 s from 127.0.0.1 keeps the /24's bucket empty.
  const bg = flood(srv.udp, { from: '127.0.0.1', count: 600, perTick: 2, waitMs: 100 });
  await new Promise((r) => setTimeout(r, 200));
  const r = await dig(srv.udp, ['-b', '127.0.0.1', 'api.gslb.example.com', 'A']);
  const replies = await bg;
  assert.ok(r.retriedOverTcp, `dig was told to retry over TCP\n${digSummary(r)}`);
  assert.equal(r.msg.transport, 'TCP', digSummary(r));
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.ok(r.msg.answer.some((a) => a.type === 'A'), digSummary(r));
  assert.ok(truncated(replies).length > 500, `slip 1: every limited reply truncated (${truncated(replies).length} of ${replies.length})`);
  assert.equal(replies.length, 600, 'slip 1 drops nothing');
});

test('an exempt address is answered in full every time, in the same /24 as a limited one', { timeout: 30_000 }, async () => {
  const { srv } = slipOne;
  const got = await flood(srv.udp, { from: '127.0.0.2', count: 300, perTick: 50 });
  assert.equal(full(got).length, 300, `exempt: ${full(got).length} full answers of 300`);
  const limited = await flood(srv.udp, { from: '127.0.0.3', count: 100, perTick: 50 });
  assert.ok(full(limited).length <= 30, `127.0.0.3 is not exempt: ${full(limited).length} full answers of 100`);
});

test('log mode: a flood is answered in full; the over-limit replies are counted as logged and logged once', { timeout: 30_000 }, async () => {
  const { srv } = logOnly;
  const got = await flood(srv.udp, { from: '127.0.0.1', count: 300, perTick: 50 });
  assert.equal(full(got).length, 300);
  const logged = sumOf(await scrape(srv.http), RRL, { action: 'logged' });
  assert.ok(logged >= 250 && logged <= 285, `logged: ${logged}`);
  assert.equal(sumOf(await scrape(srv.http), RRL, { action: ['slipped', 'dropped'] }), 0);
  const json = (l: string) => {
    try {
      return JSON.parse(l) as { role?: string; module?: string; mode?: string; time?: unknown };
    } catch {
      return null;
    }
  };
  const line = srv.logs.map(json).find((j) => j?.module === 'ratelimit' && j.mode === 'log');
  assert.ok(line, 'a log line in log mode');
  assert.equal(line.role, 'dns-worker', JSON.stringify(line));
  assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `an ISO time, as every other line (docs/dns.md): ${JSON.stringify(line)}`);
  assert.equal(typeof line.time, 'string');
});
