/**
 * Starting and stopping the server: the in-process API (`startGridSteer`), listening on
 * IPv4 and IPv6 loopback with one port picked for :0, the HTTP probes, and a clean exit
 * on SIGTERM that frees the ports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary } from './helpers/dig.js';
import { VIRGINIA_A, VIRGINIA_AAAA, sorted } from './helpers/fleet.js';
import { QUERIES, describeMetric, scrape, sumOf } from './helpers/metrics.js';
import { tcpRefused, udpExchange } from './helpers/net.js';
import { spawnServer, startInProcess, writeTestConfig } from './helpers/server.js';
import { QTYPE, buildQuery, parseMessage, rdataAddress } from './helpers/wire.js';

test('in process: startGridSteer answers DNS and HTTP, and close() frees the ports', async (t) => {
  const cfg = writeTestConfig();
  t.after(() => cfg.cleanup());
  const srv = await startInProcess({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  assert.ok(srv.dnsUrls.some((u) => /^udp:\/\/127\.0\.0\.1:[1-9]\d*$/.test(u)), JSON.stringify(srv.dnsUrls));
  assert.ok(srv.dnsUrls.some((u) => /^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/.test(u)), JSON.stringify(srv.dnsUrls));
  assert.match(srv.http, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);

  const r = await dig(srv.udp, ['api.gslb.example.com', 'A']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(r));

  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${srv.http}${path}`, { signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200, `${path}: ${await res.text()}`);
  }
  const samples = await scrape(srv.http);
  assert.ok(sumOf(samples, QUERIES, { transport: 'udp' }) >= 1, describeMetric(samples, QUERIES));

  await srv.stop();
  assert.ok(await tcpRefused(srv.tcp), 'after close() nothing listens on the DNS TCP port');
  const late = await udpExchange(srv.udp, buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A }), 1500);
  assert.equal(late, null, 'after close() nothing answers on the DNS UDP port');
});

test('listening on 127.0.0.1:0 and [::1]:0: UDP and TCP share the port picked per address, and both families answer', async (t) => {
  const cfg = writeTestConfig();
  t.after(() => cfg.cleanup());
  const srv = await spawnServer({ configFile: cfg.file, dnsListen: ['127.0.0.1:0', '[::1]:0'] });
  t.after(async () => {
    await srv.stop();
  });
  const hosts = sorted(srv.dns.map((d) => `${d.transport} ${d.host}`));
  assert.deepEqual(hosts, ['tcp 127.0.0.1', 'tcp ::1', 'udp 127.0.0.1', 'udp ::1'], JSON.stringify(srv.dnsUrls));
  for (const host of ['127.0.0.1', '::1']) {
    const udp = srv.dns.find((d) => d.host === host && d.transport === 'udp')!;
    const tcp = srv.dns.find((d) => d.host === host && d.transport === 'tcp')!;
    assert.ok(udp.port > 0, JSON.stringify(srv.dnsUrls));
    assert.equal(udp.port, tcp.port, `UDP and TCP on ${host} share the port: ${JSON.stringify(srv.dnsUrls)}`);
  }
  const v6port = srv.dns.find((d) => d.host === '::1')!.port;
  assert.ok(srv.dnsUrls.includes(`udp://[::1]:${v6port}`), `IPv6 written in brackets: ${JSON.stringify(srv.dnsUrls)}`);

  const v6 = srv.dns.find((d) => d.host === '::1' && d.transport === 'udp')!;
  const r = await dig(v6, ['api.gslb.example.com', 'AAAA']);
  assert.equal(r.msg.status, 'NOERROR', digSummary(r));
  assert.deepEqual(r.msg.answer.map((x) => x.data), VIRGINIA_AAAA, digSummary(r));
  const t6 = await dig(v6, ['+tcp', 'api.gslb.example.com', 'A']);
  assert.deepEqual(sorted(t6.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(t6));
});

test('the CLI serves with the ready line, answers, and exits 0 on SIGTERM, freeing its ports', async (t) => {
  const cfg = writeTestConfig();
  t.after(() => cfg.cleanup());
  const srv = await spawnServer({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  assert.equal(srv.ready.msg, 'ready');
  const reply = await udpExchange(srv.udp, buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A }));
  assert.ok(reply, 'no reply');
  assert.deepEqual(sorted(parseMessage(reply).answers.map(rdataAddress)), VIRGINIA_A);
  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${srv.http}${path}`, { signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200, `${path}: ${await res.text()}`);
  }

  const exit = await srv.stop();
  assert.equal(exit.killed, false, 'SIGTERM alone must stop the server (SIGKILL was needed)');
  assert.equal(exit.code, 0, `exit after SIGTERM: ${JSON.stringify(exit)}\n${srv.logs.slice(-10).join('\n')}`);
  // A log line when the shutdown begins (naming the signal) and one when it is done.
  const lifecycle = srv.logs.filter((l) => l.includes('"module":"lifecycle"')).map((l) => JSON.parse(l) as { msg: string; why?: string });
  assert.equal(lifecycle.length, 2, `the shutdown's log lines:\n${srv.logs.slice(-10).join('\n')}`);
  assert.match(lifecycle[0]!.msg, /^shutting down \(SIGTERM\)/);
  assert.equal(lifecycle[0]!.why, 'SIGTERM');
  assert.match(lifecycle[1]!.msg, /^stopped after \d+ ms$/);
  assert.ok(await tcpRefused(srv.tcp), 'after exit nothing listens on the DNS TCP port');
});
