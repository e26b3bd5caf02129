/**
 * DNS over TCP (RFC 1035 §4.2.2, RFC 7766): pipelined queries on one connection, messages
 * split across segments, the idle timeout (`dns.tcp.idleTimeoutMs`) and the per-client
 * connection limit (`dns.tcp.maxConnectionsPerClient`). Each test starts its own server so
 * that connections left by one test cannot count against another.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary } from './helpers/dig.js';
import { STATUS_TXT, VIRGINIA_A, VIRGINIA_AAAA, sorted } from './helpers/fleet.js';
import { QTYPE_LABEL, QUERIES, RCODE_LABEL, describeMetric, scrape, sumOf } from './helpers/metrics.js';
import { FramedTcp, sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type ConfigObject, type RunningServer } from './helpers/server.js';
import { QTYPE, RCODE, buildQuery, frame, parseMessage, rdataAddress, txtStrings } from './helpers/wire.js';

async function serverFor(t: TestContext, tcp: Record<string, number> = {}): Promise<RunningServer> {
  const cfg = writeTestConfig((c: ConfigObject) => {
    c.dns = { ...(c.dns ?? {}), tcp };
  });
  t.after(() => cfg.cleanup());
  const srv = await spawnServer({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  return srv;
}

async function connect(t: TestContext, srv: RunningServer): Promise<FramedTcp> {
  const c = await FramedTcp.connect(srv.tcp);
  t.after(() => c.destroy());
  return c;
}

function expectMessage(ev: Buffer | string, what: string): Buffer {
  assert.ok(Buffer.isBuffer(ev), `${what}: expected a DNS message, got ${String(ev)}`);
  return ev;
}

test('pipelining: three queries in one write get three answers on the same connection', async (t) => {
  const srv = await serverFor(t);
  const before0 = await scrape(srv.http);
  const c = await connect(t, srv);
  const qa = buildQuery({ id: 101, name: 'api.gslb.example.com', qtype: QTYPE.A });
  const qaaaa = buildQuery({ id: 102, name: 'api.gslb.example.com', qtype: QTYPE.AAAA });
  const qtxt = buildQuery({ id: 103, name: 'status.gslb.example.com', qtype: QTYPE.TXT });
  c.send(qa, qaaaa, qtxt);
  const replies = new Map<number, ReturnType<typeof parseMessage>>();
  for (let i = 0; i < 3; i++) {
    const m = parseMessage(expectMessage(await c.next(5000), `reply ${i + 1} of 3`));
    replies.set(m.id, m);
  }
  assert.deepEqual([...replies.keys()].sort(), [101, 102, 103], 'one reply per query ID (any order, RFC 7766 §6.2.1.1)');
  const a = replies.get(101)!;
  assert.equal(a.rcode, RCODE.NOERROR);
  assert.ok(a.aa);
  assert.deepEqual(sorted(a.answers.map(rdataAddress)), VIRGINIA_A);
  assert.deepEqual(replies.get(102)!.answers.map(rdataAddress), VIRGINIA_AAAA);
  assert.deepEqual(txtStrings(replies.get(103)!.answers[0]!.rdata), [STATUS_TXT]);

  // The connection stays open for more queries.
  c.send(buildQuery({ id: 104, name: 'api.gslb.example.com', qtype: QTYPE.A }));
  const fourth = parseMessage(expectMessage(await c.next(5000), 'a fourth query on the same connection'));
  assert.equal(fourth.id, 104);
  assert.equal(c.closed, false);

  const after1 = await scrape(srv.http);
  assert.equal(
    sumOf(after1, QUERIES, { transport: 'tcp' }) - sumOf(before0, QUERIES, { transport: 'tcp' }),
    4,
    `four TCP queries counted\n${describeMetric(after1, QUERIES)}`,
  );
  assert.equal(
    sumOf(after1, QUERIES, { transport: 'tcp', qtype: [...QTYPE_LABEL.A], rcode: [...RCODE_LABEL.NOERROR] }) -
      sumOf(before0, QUERIES, { transport: 'tcp', qtype: [...QTYPE_LABEL.A], rcode: [...RCODE_LABEL.NOERROR] }),
    2,
    describeMetric(after1, QUERIES),
  );
});

test('a message split across several TCP segments is reassembled', async (t) => {
  const srv = await serverFor(t);
  const c = await connect(t, srv);
  c.socket.setNoDelay(true);
  const framed = frame(buildQuery({ id: 201, name: 'api.gslb.example.com', qtype: QTYPE.A }));
  // One byte of the length, then half the message, then the rest.
  const cuts = [1, Math.floor(framed.length / 2), framed.length];
  let from = 0;
  for (const to of cuts) {
    c.socket.write(framed.subarray(from, to));
    from = to;
    await sleep(100);
  }
  const m = parseMessage(expectMessage(await c.next(5000), 'reply to the split query'));
  assert.equal(m.id, 201);
  assert.deepEqual(sorted(m.answers.map(rdataAddress)), VIRGINIA_A);
});

test('dig +tcp twice: each new connection is served', async (t) => {
  const srv = await serverFor(t);
  for (let i = 0; i < 2; i++) {
    const r = await dig(srv.tcp, ['+tcp', 'api.gslb.example.com', 'A']);
    assert.equal(r.msg.transport, 'TCP', digSummary(r));
    assert.equal(r.msg.status, 'NOERROR', digSummary(r));
    assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(r));
  }
});

test('idle timeout: the server closes a TCP connection idle for dns.tcp.idleTimeoutMs (300 ms)', async (t) => {
  const srv = await serverFor(t, { idleTimeoutMs: 300 });

  // A connection that never sends anything.
  const silent = await connect(t, srv);
  assert.ok(await silent.waitClosed(15000), 'the server did not close a silent connection within 15 s (idle timeout 300 ms)');

  // A connection that was used, then left idle.
  const used = await connect(t, srv);
  used.send(buildQuery({ id: 301, name: 'api.gslb.example.com', qtype: QTYPE.A }));
  const m = parseMessage(expectMessage(await used.next(5000), 'reply before going idle'));
  assert.equal(m.id, 301);
  assert.ok(await used.waitClosed(15000), 'the server did not close an idle connection after a query within 15 s');
});

test('per-client limit: with maxConnectionsPerClient 2, a third connection is closed by the server', async (t) => {
  const srv = await serverFor(t, { maxConnectionsPerClient: 2 });
  const conns: FramedTcp[] = [];
  for (let i = 0; i < 2; i++) {
    const c = await connect(t, srv);
    c.send(buildQuery({ id: 400 + i, name: 'api.gslb.example.com', qtype: QTYPE.A }));
    const m = parseMessage(expectMessage(await c.next(5000), `connection ${i + 1} is served`));
    assert.equal(m.id, 400 + i);
    conns.push(c);
  }

  // The third: the handshake may complete in the kernel, but the server must close it
  // without answering.
  let third: FramedTcp | null = null;
  try {
    third = await FramedTcp.connect(srv.tcp);
    t.after(() => third?.destroy());
  } catch (e) {
    assert.fail(`connecting the third time failed outright (${(e as Error).message}); expected the server to accept and close it`);
  }
  third.send(buildQuery({ id: 499, name: 'api.gslb.example.com', qtype: QTYPE.A }));
  const ev = await third.next(10000);
  assert.equal(ev, 'closed', `the third connection must be closed unanswered, got ${Buffer.isBuffer(ev) ? 'an answer' : ev}`);

  // The first two still work.
  conns[1]!.send(buildQuery({ id: 402, name: 'api.gslb.example.com', qtype: QTYPE.AAAA }));
  const again = parseMessage(expectMessage(await conns[1]!.next(5000), 'the second connection after the refusal'));
  assert.equal(again.id, 402);

  // Closing one frees a slot (polled: the server learns of the close asynchronously).
  conns[0]!.destroy();
  let served = false;
  for (let attempt = 0; attempt < 20 && !served; attempt++) {
    await sleep(150);
    const c = await FramedTcp.connect(srv.tcp);
    c.send(buildQuery({ id: 500 + attempt, name: 'api.gslb.example.com', qtype: QTYPE.A }));
    const r = await c.next(3000);
    served = Buffer.isBuffer(r);
    c.destroy();
  }
  assert.ok(served, 'after closing one of the two connections, a new one is served');
});
