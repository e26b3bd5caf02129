/**
 * A burst of fuzz packets (test/helpers/dns-fuzz.ts: every EDNS option, count and length
 * lies, compression loops; TCP framing lies) over UDP and TCP at a running server (its own
 * process, two DNS workers), after which real `dig +tries=3` still gets its answer, no
 * worker exited and the server's malformed-packet counters show the burst arrived. The
 * 1M-packet campaign with the same generator is bench/dns-fuzz.ts (docs/dns-fuzz.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { writeTestConfig, withRateLimitMode } from './helpers/server.js';
import { fuzzPacket, fuzzRng, fuzzTcpWrites } from './helpers/dns-fuzz.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

test('a burst of 30,000 fuzz packets over UDP and TCP leaves the server answering dig', { timeout: 180_000 }, async (t) => {
  const cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: a burst of thousands of packets from 127.0.0.1; this suite tests the parser, not the limiter (dns-ratelimit does).
    withRateLimitMode(c, 'off');
  });
  t.after(() => cfg.cleanup());
  const child = spawn(process.execPath, [`${root}dist/gslb/cli/main.js`, 'serve', '--config', cfg.file, '--workers', '2', '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  const ready = await new Promise<{ dns: string[]; http: string }>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('server did not log "ready" within 30 s')), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split('\n')) {
        if (line.includes('"msg":"ready"')) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as { dns: string[]; http: string });
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited early (${code})`)));
  });
  const port = Number(/:(\d+)$/.exec(ready.dns[0]!)![1]);
  const r = fuzzRng(20261130);
  const logs: string[] = [];
  child.stdout!.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean)));

  // UDP: 25,000 packets in paced batches (bounded count and time).
  const sock = dgram.createSocket('udp4');
  t.after(() => sock.close());
  let replies = 0;
  sock.on('message', () => replies++);
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', () => resolve()));
  for (let i = 0; i < 25_000; i++) {
    sock.send(fuzzPacket(r, i).packet, port, '127.0.0.1');
    if (i % 500 === 499) await new Promise((res) => setTimeout(res, 5));
  }

  // TCP: 10 connections, each sending 500 framed garbage messages and junk frames.
  await Promise.all(
    Array.from({ length: 10 }, (_, c) =>
      new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => resolve());
        s.on('close', () => resolve());
        s.on('data', () => {});
        s.on('connect', () => {
          for (const w of fuzzTcpWrites(r, c * 1000, 500).writes) s.write(w);
          s.end();
          setTimeout(() => {
            s.destroy();
            resolve();
          }, 3000).unref();
        });
      }),
    ),
  );

  // The server still answers, over UDP and TCP.
  for (const transport of ['+notcp', '+tcp']) {
    const { stdout } = await run('dig', ['@127.0.0.1', '-p', String(port), '+tries=3', '+time=2', transport, 'api.gslb.example.com', 'A', '+short']);
    assert.match(stdout, /^192\.0\.2\.10$/m, `dig ${transport}`);
  }
  assert.ok(replies > 0, 'replies reached the client');
  const metrics = await (await fetch(`${ready.http}/metrics`)).text();
  const answered = [...metrics.matchAll(/^gridsteer_dns_queries_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
  assert.ok(answered > 5_000, `the server answered the packets it could (${answered})`);
  const malformed = [...metrics.matchAll(/^gridsteer_dns_malformed_total\{reason="[^"]+"\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
  assert.ok(malformed > 10_000, `malformed packets were counted (${malformed})`);
  assert.doesNotMatch(metrics, /reason="internal_error"/, 'no packet reached the internal-error path');
  assert.equal(logs.filter((l) => l.includes('dns worker exited')).length, 0, 'no DNS worker died');
});
