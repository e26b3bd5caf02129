/**
 * The receiver factory on loopback: plain HTTP with a health path, a handler that throws, a
 * request the parser refuses, body caps, listen errors; HTTPS and mutual TLS with real
 * certificates (openssl, gslb/config/testing-tls.ts).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { makeTestCerts } from '../../gslb/config/testing-tls.js';
import { answer, BodyTooLarge, readBody, startReceiver, type ReceiverOptions } from './server.js';

const log = pino({ level: 'silent' });

async function receiver(t: TestContext, o: Partial<ReceiverOptions> = {}) {
  const r = await startReceiver({
    module: 'collectors/test',
    listenKey: 'listen',
    listen: '127.0.0.1:0',
    example: '0.0.0.0:9091',
    log,
    healthPath: '/healthz',
    headersTimeoutMs: 2000,
    requestTimeoutMs: 5000,
    handle: async (req, res) => {
      if (req.url === '/throw') throw new Error('boom');
      try {
        const body = await readBody(req, 16);
        answer(res, 200, `got ${body.length}\n`);
      } catch (e) {
        answer(res, e instanceof BodyTooLarge ? 413 : 400, `${(e as Error).message}\n`, { connection: 'close' });
        req.resume();
      }
    },
    ...o,
  });
  t.after(() => r.close());
  return r;
}

/** Raw bytes to the port, the whole answer back. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.end(text));
    let got = '';
    s.on('data', (d) => (got += d.toString()));
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

test('receiver: health, handler, caps, refused requests, close', async (t) => {
  const r = await receiver(t);
  const base = `http://127.0.0.1:${r.port}`;
  assert.equal(r.scheme, 'http');
  assert.equal(r.shown, `127.0.0.1:${r.port}`);
  const health = await fetch(`${base}/healthz`);
  assert.deepEqual([health.status, await health.text()], [200, 'ok\n']);
  assert.equal((await fetch(`${base}/healthz`, { method: 'POST', body: 'x' })).status, 200, 'POST /healthz goes to the handler');
  assert.equal(await (await fetch(`${base}/any`, { method: 'POST', body: 'hello' })).text(), 'got 5\n');
  const big = await fetch(`${base}/any`, { method: 'POST', body: 'x'.repeat(17) });
  assert.deepEqual([big.status, await big.text()], [413, 'the body is more than 16 bytes\n']);
  assert.equal((await fetch(`${base}/throw`)).status, 500);
  assert.match(await raw(r.port, 'NOT HTTP\r\n\r\n'), /^HTTP\/1\.1 400 Bad Request/);
  assert.equal((await fetch(`${base}/healthz`)).status, 200, 'still serving');
  await Promise.all([r.close(), r.close()]);
  await assert.rejects(fetch(`${base}/healthz`));
});

test('receiver: listen errors name the key and the address', async (t) => {
  const r = await receiver(t);
  await assert.rejects(receiver(t, { listen: `127.0.0.1:${r.port}`, what: 'webhook' }), new RegExp(`^Error: collectors/test: webhook: cannot listen on 127\\.0\\.0\\.1:${r.port}: .*EADDRINUSE`));
  await assert.rejects(receiver(t, { listen: 'nope', listenKey: 'webhook.listen' }), /^Error: collectors\/test: webhook\.listen: "nope" is not host:port \(e\.g\. 0\.0\.0\.0:9091\)$/);
  await assert.rejects(receiver(t, { tls: { cert: '/nonexistent/cert.pem', key: '/nonexistent/key.pem' } }), /collectors\/test: tls\.cert \/nonexistent\/cert\.pem: ENOENT/);
});

test('receiver: HTTPS, and mutual TLS refusing clients without a certificate from clientCa', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-kit-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const c = makeTestCerts(dir);
  const get = (port: number, o: https.RequestOptions = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port, path: '/healthz', ca: readFileSync(c.ca), agent: false, ...o }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
    });
  const tls = await receiver(t, { tls: { cert: c.serverCert, key: c.serverKey } });
  assert.equal(tls.scheme, 'https');
  assert.equal(await get(tls.port), 200);
  const mtls = await receiver(t, { tls: { cert: c.serverCert, key: c.serverKey, clientCa: c.ca } });
  assert.equal(await get(mtls.port, { cert: readFileSync(c.clientCert), key: readFileSync(c.clientKey) }), 200);
  await assert.rejects(get(mtls.port), 'no client certificate: refused at the handshake');
  await assert.rejects(get(mtls.port, { cert: readFileSync(c.otherClientCert), key: readFileSync(c.otherClientKey) }), 'a certificate from another CA: refused');
  assert.equal(await get(mtls.port, { cert: readFileSync(c.clientCert), key: readFileSync(c.clientKey) }), 200, 'still serving');
});
