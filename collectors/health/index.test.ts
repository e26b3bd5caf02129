/**
 * The health collector against live peers on loopback: HTTP servers on 127.0.0.2 and
 * 127.0.0.3 (loopback /8 addresses stand for two regions' endpoints), a closed TCP port, a
 * server that never answers, wrong statuses and bodies. Every emitted signal must pass the
 * state layer's own validation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import { health, probe, HealthCheckSchema, HealthConfigSchema, type HealthConfig } from './index.js';
import type { CollectorContext, FleetRegion } from '../types.js';
import type { Signal } from '../../gslb/model/types.js';
import { validateSignal } from '../../gslb/state/signals.js';
import { Value } from '@sinclair/typebox/value';

let port = 0;
const servers: http.Server[] = [];
let silent: net.Server;
let silentPort = 0;
const sockets = new Set<net.Socket>();
/** What 127.0.0.3 answers on /health (changed by tests). */
let b3Status = 200;

function serve(host: string, handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler);
  servers.push(s);
  return new Promise((resolve) => s.listen(port, host, () => resolve((s.address() as net.AddressInfo).port)));
}

before(async () => {
  // One port on two loopback addresses: the same check probes both "regions".
  port = await serve('127.0.0.2', (req, res) => {
    if (req.url === '/v1/models') res.end('{"data":[{"id":"llama-3-70b"}]}');
    else if (req.url === '/health') res.end('ok');
    else {
      res.statusCode = 404;
      res.end();
    }
  });
  await serve('127.0.0.3', (req, res) => {
    if (req.url === '/v1/models') res.end('{"data":[]}');
    else {
      res.statusCode = b3Status;
      res.end('x');
    }
  });
  // Accepts connections and never answers.
  silent = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  silentPort = await new Promise((r) => silent.listen(0, '127.0.0.1', () => r((silent.address() as net.AddressInfo).port)));
});

after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

const check = (c: Record<string, unknown>) => Value.Default(HealthCheckSchema, c) as HealthConfig['checks'][number];

test('probe: a case table of checks and what they say', async () => {
  const closed = await new Promise<number>((r) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const cases: [string, string, Record<string, unknown>, RegExp | null][] = [
    ['http 200', '127.0.0.2', { type: 'http', port, path: '/health' }, null],
    ['http 404 is not up', '127.0.0.2', { type: 'http', port, path: '/nope' }, /status 404, expected 200/],
    ['404 accepted when listed', '127.0.0.2', { type: 'http', port, path: '/nope', expectStatus: [200, 404] }, null],
    ['body matches', '127.0.0.2', { type: 'http', port, path: '/v1/models', bodyMatch: '"id":\\s*"llama-3-70b"' }, null],
    ['model not loaded: body does not match', '127.0.0.3', { type: 'http', port, path: '/v1/models', bodyMatch: '"id":\\s*"llama-3-70b"' }, /does not match/],
    ['connection refused', '127.0.0.1', { type: 'http', port: closed, path: '/health' }, /ECONNREFUSED/],
    ['tcp open', '127.0.0.2', { type: 'tcp', port }, null],
    ['tcp refused', '127.0.0.1', { type: 'tcp', port: closed }, /ECONNREFUSED/],
    ['no answer: timeout', '127.0.0.1', { type: 'http', port: silentPort, path: '/health' }, /no answer within 300 ms/],
    ['bad regular expression', '127.0.0.2', { type: 'http', port, path: '/health', bodyMatch: '(' }, /not a regular expression/],
  ];
  for (const [what, addr, c, want] of cases) {
    const why = await probe(addr, check(c), 300);
    if (want === null) assert.equal(why, null, `${what}: ${why}`);
    else assert.match(String(why), want, what);
  }
});

function ctxFor(config: HealthConfig, fleet: FleetRegion[]): { ctx: CollectorContext<HealthConfig>; emitted: Signal[]; logs: string[]; abort: AbortController } {
  const emitted: Signal[] = [];
  const logs: string[] = [];
  const abort = new AbortController();
  const log = pino({ level: 'info' }, { write: (line: string) => logs.push(line) });
  return {
    emitted,
    logs,
    abort,
    ctx: { config, log, emit: (s) => emitted.push(s), now: Date.now, node: 'test-node', fleet: () => fleet, signal: abort.signal },
  };
}

async function until(fn: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${what}: not within 5 s`);
}

test('rounds: one valid health.probe per endpoint, up only when every applying check passes; changes logged once; stop stops', async () => {
  const config = Value.Default(
    HealthConfigSchema,
    {
      intervalMs: 500,
      timeoutMs: 300,
      checks: [
        { type: 'http', port, path: '/health' },
        { type: 'tcp', port, regions: ['r2'] },
      ],
    },
  ) as HealthConfig;
  const fleet: FleetRegion[] = [
    { id: 'r2', endpoints: ['127.0.0.2'] },
    { id: 'r3', endpoints: ['127.0.0.3'] },
  ];
  const { ctx, emitted, logs, abort } = ctxFor(config, fleet);
  b3Status = 200;
  const stop = await health.start(ctx);
  try {
    await until(() => emitted.length >= 2, 'the first round');
    const regions = new Set(['r2', 'r3']);
    for (const s of emitted) validateSignal(structuredClone(s), Date.now(), regions);
    const first = emitted.slice(0, 2).sort((a, b) => (a.region < b.region ? -1 : 1));
    assert.deepEqual(first.map((s) => [s.region, s.key, s.source, (s.value as { up: boolean }).up]), [
      ['r2', '127.0.0.2', 'health/test-node', true],
      ['r3', '127.0.0.3', 'health/test-node', true],
    ]);
    assert.equal(first[0]!.expiresAt - first[0]!.observedAt, 1500, 'expires after three intervals');
    // r3 starts failing: the next rounds say so, and it is logged once.
    b3Status = 503;
    await until(() => emitted.filter((s) => s.region === 'r3' && !(s.value as { up: boolean }).up).length >= 3, 'three failing rounds for r3');
    const down = emitted.filter((s) => s.region === 'r3' && !(s.value as { up: boolean }).up);
    assert.match((down[0]!.value as { detail: string }).detail, /status 503, expected 200/);
    assert.equal(logs.filter((l) => /r3 127\.0\.0\.3 fails/.test(l)).length, 1, 'a failure is logged once per change');
    b3Status = 200;
    await until(() => (emitted.at(-1)!.value as { up: boolean }).up && emitted.filter((s) => s.region === 'r3').at(-1)!.value !== down[0]!.value, 'r3 back');
  } finally {
    abort.abort();
    await stop();
  }
  const n = emitted.length;
  await new Promise((r) => setTimeout(r, 1200));
  assert.ok(emitted.length <= n + 2, `no rounds after stop (${n} → ${emitted.length}; at most the round in flight)`);
});
