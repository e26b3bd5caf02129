/**
 * TCP abuse limits (docs/dns.md "Transports"), on loopback with real sockets:
 * - a connection dribbling one byte every 200 ms is closed at the message deadline
 *   (`dns.tcp.messageTimeoutMs`), although bytes keep arriving and the idle timeout is long;
 * - partial bytes do not reset the idle timer: a connection that sent half a message and then
 *   a byte now and then is closed at `dns.tcp.idleTimeoutMs`;
 * - the issue's bar: 2,000 idle connections plus 200 dribbling ones from 100 addresses (each
 *   in a /24 of its own, 127.1.X.1) against the default limits (1,024 per process): a fresh
 *   client from another address (127.2.0.1) is answered over TCP every time (15 of 15), the
 *   server never holds more than its limit, every dribbler is closed, the RSS stays bounded.
 * Bounded in count and time; the attackers' sockets live in this process.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { scrape, sumOf } from './helpers/metrics.js';
import { FramedTcp, sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer } from './helpers/server.js';
import { QTYPE, RCODE, buildQuery, frame, parseMessage } from './helpers/wire.js';

async function serverFor(t: TestContext, tcp: Record<string, number> = {}): Promise<RunningServer> {
  const cfg = writeTestConfig((c) => {
    c.dns = { ...(c.dns ?? {}), tcp };
  });
  t.after(() => cfg.cleanup());
  const srv = await spawnServer({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  return srv;
}

const TCP = 'gridsteer_dns_tcp_connections_total';

/** A raw connection from `from`; resolves once connected (or rejects within 5 s). */
function connectFrom(srv: RunningServer, from: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: srv.tcp.host, port: srv.tcp.port, localAddress: from });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`connect from ${from} timed out`));
    }, 5000);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Resolves with ms from now until `s` is closed by the peer, or -1 after `boundMs`. */
function closedWithin(s: net.Socket, boundMs: number): Promise<number> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    if (s.destroyed || s.readableEnded) return resolve(0);
    const timer = setTimeout(() => resolve(-1), boundMs);
    const done = () => {
      clearTimeout(timer);
      resolve(Date.now() - t0);
    };
    s.once('close', done);
    s.once('end', done);
    s.on('error', () => {});
  });
}

/** Writes `bytes` one at a time every `everyMs` until the socket closes or they run out. */
function dribble(s: net.Socket, bytes: Buffer, everyMs: number): NodeJS.Timeout {
  let i = 0;
  const timer = setInterval(() => {
    if (s.destroyed || i >= bytes.length) return clearInterval(timer);
    s.write(bytes.subarray(i, i + 1));
    i++;
  }, everyMs);
  return timer;
}

const QUERY = frame(buildQuery({ id: 7, name: 'api.gslb.example.com', qtype: QTYPE.A }));

test('the message deadline: a connection dribbling a byte every 200 ms is closed at messageTimeoutMs, not kept alive by its bytes', { timeout: 60_000 }, async (t) => {
  const srv = await serverFor(t, { messageTimeoutMs: 1000, idleTimeoutMs: 60000 });
  const s = await connectFrom(srv, '127.0.0.1');
  t.after(() => s.destroy());
  const timer = dribble(s, QUERY, 200);
  t.after(() => clearInterval(timer));
  const ms = await closedWithin(s, 20_000);
  assert.ok(ms >= 0, 'closed by the server within 20 s (idle timeout 60 s)');
  const after = await scrape(srv.http);
  assert.equal(sumOf(after, TCP, { outcome: 'message_timeout' }), 1);
  assert.equal(sumOf(after, TCP, { outcome: 'idle_closed' }), 0);
  // The same query sent whole is answered.
  const c = await FramedTcp.connect(srv.tcp);
  t.after(() => c.destroy());
  c.socket.write(QUERY);
  const r = await c.next(5000);
  assert.ok(Buffer.isBuffer(r), 'a whole message is answered');
});

test('partial bytes do not reset the idle timer: half a message, then a byte now and then, is closed at idleTimeoutMs', { timeout: 60_000 }, async (t) => {
  const srv = await serverFor(t, { messageTimeoutMs: 60000, idleTimeoutMs: 1000 });
  const s = await connectFrom(srv, '127.0.0.1');
  t.after(() => s.destroy());
  s.write(QUERY.subarray(0, 10));
  const timer = dribble(s, QUERY.subarray(10, 30), 300);
  t.after(() => clearInterval(timer));
  const ms = await closedWithin(s, 20_000);
  assert.ok(ms >= 0, 'closed by the server within 20 s (message deadline 60 s)');
  const after = await scrape(srv.http);
  assert.equal(sumOf(after, TCP, { outcome: 'idle_closed' }), 1);
  assert.equal(sumOf(after, TCP, { outcome: 'message_timeout' }), 0);
});

test('2,000 idle + 200 dribbling connections from 100 addresses: a fresh client from another address is answered over TCP every time', { timeout: 180_000 }, async (t) => {
  const srv = await serverFor(t);
  const rssBefore = sumOf(await scrape(srv.http), 'gridsteer_process_resident_memory_bytes');
  const sockets: net.Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  t.after(() => {
    for (const x of timers) clearInterval(x);
    for (const s of sockets) s.destroy();
  });
  const addr = (i: number) => `127.1.${i % 100}.1`;
  // Dribblers first (the table is empty then: all admitted), then the idle flood.
  const dribblers: net.Socket[] = [];
  for (let i = 0; i < 200; i++) {
    const s = await connectFrom(srv, addr(i));
    s.on('error', () => {});
    sockets.push(s);
    dribblers.push(s);
    timers.push(dribble(s, QUERY, 200));
  }
  const dribblersClosed = Promise.all(dribblers.map((s) => closedWithin(s, 60_000)));
  let refusedAtOnce = 0;
  for (let batch = 0; batch < 20; batch++) {
    const made = await Promise.allSettled(Array.from({ length: 100 }, (_, j) => connectFrom(srv, addr(batch * 100 + j))));
    for (const m of made) {
      if (m.status === 'fulfilled') {
        m.value.on('error', () => {});
        sockets.push(m.value);
      } else refusedAtOnce++;
    }
  }
  // A fresh client from another address: a new connection and a query, 15 times, while the
  // idle and dribbling connections stay.
  let answered = 0;
  const failures: string[] = [];
  for (let i = 0; i < 15; i++) {
    try {
      const s = await connectFrom(srv, '127.2.0.1');
      const c = await new Promise<Buffer | string>((resolve) => {
        let buf = Buffer.alloc(0);
        const timer = setTimeout(() => resolve('timeout'), 5000);
        s.on('data', (d: Buffer) => {
          buf = Buffer.concat([buf, d]);
          if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
            clearTimeout(timer);
            resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
          }
        });
        s.on('close', () => resolve('closed'));
        s.on('error', () => resolve('error'));
        s.write(QUERY);
      });
      s.destroy();
      if (Buffer.isBuffer(c) && parseMessage(c).rcode === RCODE.NOERROR) answered++;
      else failures.push(`attempt ${i + 1}: ${String(c)}`);
    } catch (e) {
      failures.push(`attempt ${i + 1}: ${(e as Error).message}`);
    }
    await sleep(100);
  }
  const m = await scrape(srv.http);
  const open = sumOf(m, 'gridsteer_dns_tcp_open_connections');
  const rss = sumOf(m, 'gridsteer_process_resident_memory_bytes');
  t.diagnostic(
    `open ${open}; accepted ${sumOf(m, TCP, { outcome: 'accepted' })}, rejected ${sumOf(m, TCP, { outcome: 'rejected' })}, ` +
      `evicted ${sumOf(m, TCP, { outcome: 'evicted' })}, message_timeout ${sumOf(m, TCP, { outcome: 'message_timeout' })}; ` +
      `client connects refused at once ${refusedAtOnce}; RSS ${(rssBefore / 1e6).toFixed(0)} → ${(rss / 1e6).toFixed(0)} MB`,
  );
  assert.equal(answered, 15, `the fresh client answered ${answered} of 15: ${failures.join('; ')}`);
  assert.ok(open <= 1024, `open connections ${open} ≤ maxConnections 1024`);
  assert.ok(sumOf(m, TCP, { outcome: ['rejected', 'evicted'] }) > 0, 'the table was full: connections refused or evicted');
  const closed = await dribblersClosed;
  assert.equal(closed.filter((x) => x < 0).length, 0, 'every dribbling connection closed by the server');
  assert.ok(sumOf(await scrape(srv.http), TCP, { outcome: 'message_timeout' }) > 0, 'dribblers hit the message deadline');
  assert.ok(rss - rssBefore < 256e6, `RSS grew by ${((rss - rssBefore) / 1e6).toFixed(0)} MB (bounded by the connection limit)`);
});
