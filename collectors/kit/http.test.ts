/**
 * The kit's bounded client against a real loopback server: deadlines, body caps (declared,
 * read, decoded), truncation, redirects refused or followed without credentials, stop.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { boundedRequest, FetchError, type BoundedRequest } from './http.js';

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function serve(t: TestContext, routes: Record<string, Route>): Promise<{ url: string; seen: http.IncomingHttpHeaders[] }> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    const r = routes[(req.url ?? '').split('?')[0]!];
    if (r) r(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const base = (url: string, o: Partial<BoundedRequest> = {}): BoundedRequest => ({ url, headers: {}, timeoutMs: 500, maxBytes: 1000, stop: new AbortController().signal, ...o });
const fails = async (p: Promise<unknown>, kind: string, re: RegExp) =>
  assert.rejects(p, (e: unknown) => e instanceof FetchError && e.kind === kind && re.test(e.message));

test('kit http: answers, bounds and failures', async (t) => {
  const { url, seen } = await serve(t, {
    '/ok': (_q, r) => r.writeHead(200).end('hello'),
    '/500': (_q, r) => r.writeHead(500).end('boom'),
    '/declared': (_q, r) => r.writeHead(200, { 'content-length': 5000 }).end('x'.repeat(5000)),
    '/chunked': (_q, r) => {
      r.writeHead(200);
      r.write('x'.repeat(800));
      r.end('y'.repeat(800));
    },
    '/bomb': (_q, r) => r.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(Buffer.alloc(1 << 20))),
    '/gzip': (_q, r) => r.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync('small')),
    '/hang': () => undefined,
    '/cut': (_q, r) => {
      r.writeHead(200, { 'content-length': 100 });
      r.write('partial');
      setTimeout(() => r.destroy(), 20);
    },
    '/redirect': (_q, r) => r.writeHead(302, { location: '/ok' }).end(),
    '/post': (q, r) => {
      let b = '';
      q.on('data', (c: Buffer) => (b += c.toString()));
      q.on('end', () => r.writeHead(201).end(`${q.method} ${b}`));
    },
  });
  const ok = await boundedRequest(base(`${url}/ok`));
  assert.deepEqual([ok.status, ok.text], [200, 'hello']);
  assert.equal((await boundedRequest(base(`${url}/500`))).text, '', 'a non-2xx body is not read by default');
  assert.equal((await boundedRequest(base(`${url}/500`, { readBody: () => true }))).text, 'boom');
  assert.equal((await boundedRequest(base(`${url}/gzip`))).text, 'small', 'gzip is decoded');
  await fails(boundedRequest(base(`${url}/declared`)), 'too-large', /5000 bytes, more than 1000/);
  await fails(boundedRequest(base(`${url}/chunked`)), 'too-large', /more than 1000 bytes/);
  await fails(boundedRequest(base(`${url}/bomb`)), 'too-large', /more than 1000 bytes/);
  const cut = await boundedRequest(base(`${url}/chunked`, { overflow: 'truncate', maxBytes: 10 }));
  assert.deepEqual([cut.status, cut.text], [200, 'xxxxxxxxxx'], 'truncate keeps the first maxBytes');
  await fails(boundedRequest(base(`${url}/hang`, { timeoutMs: 150 })), 'timeout', /within 150 ms/);
  await assert.rejects(boundedRequest(base(`${url}/cut`)), (e: unknown) => e instanceof FetchError && e.kind === 'cut-short' && e.status === 200, 'cut short, with the status that came');
  await fails(boundedRequest(base('http://127.0.0.1:9/')), 'network', /ECONNREFUSED/);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  await fails(boundedRequest(base(`${url}/hang`, { stop: ac.signal, timeoutMs: 5000 })), 'stopped', /stopped/);
  const post = await boundedRequest(base(`${url}/post`, { method: 'POST', body: 'a=1', readBody: () => true }));
  assert.deepEqual([post.status, post.text], [201, 'POST a=1']);
  await fails(boundedRequest(base(`${url}/ok`, { headers: { authorization: 'Bearer a\r\nx: y' } })), 'network', /Invalid character/);
  // Redirects: refused by default (the 3xx is the answer), followed on request.
  seen.length = 0;
  assert.equal((await boundedRequest(base(`${url}/redirect`, { headers: { authorization: 'Bearer t' } }))).status, 302);
  assert.equal(seen.length, 1, 'not followed');
  const followed = await boundedRequest(base(`${url}/redirect`, { redirect: 'follow' }));
  assert.deepEqual([followed.status, followed.text], [200, 'hello']);
});

test('kit http: a followed redirect to another origin does not carry credentials', async (t) => {
  const other = await serve(t, { '/there': (_q, r) => r.writeHead(200).end('there') });
  const { url } = await serve(t, { '/away': (_q, r) => r.writeHead(301, { location: `${other.url}/there` }).end() });
  const a = await boundedRequest(base(`${url}/away`, { redirect: 'follow', headers: { authorization: 'Bearer secret', 'x-keep': '1' } }));
  assert.equal(a.text, 'there');
  assert.equal(other.seen[0]?.authorization, undefined);
  assert.equal(other.seen[0]?.['x-keep'], '1');
});

test('kit http: the deadline cuts a request at timeoutMs on the timer clock, not later (fake timers, nothing timed)', async (t) => {
  let arrived!: () => void;
  const inFlight = new Promise<void>((resolve) => (arrived = resolve));
  const { url } = await serve(t, { '/hang': () => arrived() });
  t.mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let settled = false;
    const p = boundedRequest(base(`${url}/hang`, { timeoutMs: 150 }));
    p.then(
      () => (settled = true),
      () => (settled = true),
    );
    await inFlight;
    t.mock.timers.tick(149);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'not cut before timeoutMs');
    t.mock.timers.tick(1);
    for (let i = 0; i < 100 && !settled; i++) await new Promise((r) => setImmediate(r));
    assert.equal(settled, true, 'cut at timeoutMs');
    await fails(p, 'timeout', /within 150 ms/);
  } finally {
    t.mock.timers.reset();
  }
});
