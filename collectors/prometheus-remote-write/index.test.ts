/**
 * The receiver through start(ctx): real remote-write requests POSTed with node:http to its
 * listener on 127.0.0.1 (port 0), vLLM and DCGM series for two sources, series of no source,
 * series split across requests, sample times in the future and past, an XID burst, and every
 * failure status. Every emitted signal must pass the state layer's validateSignal.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Ajv } from 'ajv';
import { pino } from 'pino';
import type { CollectorContext, Signal } from '../types.js';
import { validateSignal } from '../../gslb/state/signals.js';
import { parseListen, prometheusRemoteWrite, remoteWriteTotals as remoteWriteStats, RemoteWriteConfigSchema, type RemoteWriteConfig } from './index.js';
import { encodeWriteRequest, remoteWriteBody, snappyEncodeLiterals, varint, type SeriesIn } from './encode.js';

const T0 = 1_800_000_000_000;
const REGIONS: ReadonlySet<string> = new Set(['us-va', 'eu-ie']);
const TOKEN = 'sixteen-chars-token-0123';
const SOURCE = 'prometheus-rw/test-node';
const KEY_A = 'cluster=va-1,job=vllm';

interface LogLine {
  level: number;
  msg: string;
  kind?: string;
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, allowUnionTypes: true });
const validateConfig = ajv.compile(RemoteWriteConfigSchema);

function config(extra: Record<string, unknown> = {}): RemoteWriteConfig {
  const cfg: Record<string, unknown> = {
    listen: '127.0.0.1:0',
    bearerToken: TOKEN,
    maxBodyBytes: 64 * 1024,
    maxDecodedBytes: 1024 * 1024,
    sources: [
      { region: 'us-va', match: { job: 'vllm', cluster: 'va-1' } },
      { region: 'eu-ie', match: { job: 'dcgm', cluster: 'ie-1' }, key: 'gpu-node-07' },
    ],
    ...extra,
  };
  assert.ok(validateConfig(cfg), JSON.stringify(validateConfig.errors));
  return cfg as unknown as RemoteWriteConfig;
}

function harness(cfg: RemoteWriteConfig) {
  let t = T0;
  const emitted: Signal[] = [];
  const logs: LogLine[] = [];
  const ac = new AbortController();
  const ctx: CollectorContext<RemoteWriteConfig> = {
    config: cfg,
    log: pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s) as LogLine) }),
    emit: (s: Signal) => void emitted.push(s),
    now: () => t,
    node: 'test-node',
    fleet: () => [...REGIONS].map((id) => ({ id, endpoints: [] as string[] })),
    signal: ac.signal,
  };
  return { ctx, emitted, logs, ac, set: (ms: number) => void (t = ms), now: () => t };
}

interface Answer {
  status: number;
  text: string;
}

/** POSTs (or sends `method`) to the receiver; resolves with the answer even if the server closes early. */
function send(port: number, body: Buffer, headers: Record<string, string>, path = '/api/v1/write', method = 'POST'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: { 'content-length': String(body.length), ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

const GOOD = { 'content-encoding': 'snappy', 'content-type': 'application/x-protobuf', 'x-prometheus-remote-write-version': '0.1.0', authorization: `Bearer ${TOKEN}` };
const s = (name: string, labels: Record<string, string>, value: number, timestamp: number): SeriesIn => ({ labels: { __name__: name, ...labels }, samples: [{ value, timestamp }] });
const VA = { job: 'vllm', cluster: 'va-1', model_name: 'llama-70b' };
const IE = { job: 'dcgm', cluster: 'ie-1', Hostname: 'gpu-node-07' };

function assertValid(signals: Signal[], now: number): void {
  for (const x of signals) assert.doesNotThrow(() => validateSignal(structuredClone(x), now, REGIONS), JSON.stringify(x));
}

test('parseListen', () => {
  assert.deepEqual(parseListen('127.0.0.1:9091'), { host: '127.0.0.1', port: 9091 });
  assert.deepEqual(parseListen('[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(parseListen('localhost:80'), { host: 'localhost', port: 80 });
  for (const bad of ['9091', '1.2.3.4:99999', ':9091', '::1:9091']) assert.throws(() => parseListen(bad), /not host:port/, bad);
});

test('receives remote write through start(ctx) and emits the facts of each source', async () => {
  const h = harness(config());
  const stop = await prometheusRemoteWrite.start(h.ctx);
  after(stop);
  const port = Number(remoteWriteStats.listening!.split(':').pop());
  assert.ok(port > 0);
  const before = { ...remoteWriteStats };

  // 1. Two sources, one unknown series, one known-source series of an unread name.
  const r1 = await send(
    port,
    remoteWriteBody([
      s('vllm:num_requests_waiting', VA, 3, T0 - 2000),
      { labels: { __name__: 'vllm:num_requests_running', ...VA }, samples: [{ value: 45, timestamp: T0 - 1000 }, { value: 40, timestamp: T0 - 3000 }] },
      s('vllm:kv_cache_usage_perc', VA, 0.57, T0 - 1000),
      s('process_cpu_seconds_total', VA, 12, T0 - 1000),
      s('DCGM_FI_DEV_FB_USED', { ...IE, gpu: '0', UUID: 'GPU-a' }, 30000, T0 - 500),
      s('DCGM_FI_DEV_FB_FREE', { ...IE, gpu: '0', UUID: 'GPU-a' }, 10000, T0 - 500),
      s('DCGM_FI_DEV_FB_USED', { ...IE, gpu: '1', UUID: 'GPU-b' }, 10000, T0 - 500),
      s('DCGM_FI_DEV_FB_FREE', { ...IE, gpu: '1', UUID: 'GPU-b' }, 30000, T0 - 500),
      s('DCGM_FI_DEV_GPU_TEMP', { ...IE, gpu: '0', UUID: 'GPU-a' }, 90, T0 - 500),
      s('DCGM_FI_DEV_GPU_TEMP', { ...IE, gpu: '1', UUID: 'GPU-b' }, 60, T0 - 500),
      s('DCGM_EXP_XID_ERRORS_TOTAL', { ...IE, gpu: '0', UUID: 'GPU-a', xid: '79' }, 0, T0 - 500),
      s('up', { job: 'node', cluster: 'va-1' }, 1, T0 - 500),
      s('vllm:num_requests_waiting', { job: 'vllm', cluster: 'va-2' }, 99, T0 - 500),
    ]),
    GOOD,
  );
  assert.deepEqual(r1, { status: 204, text: '' });
  assert.deepEqual(h.emitted, [
    { region: 'us-va', source: SOURCE, key: KEY_A, observedAt: T0 - 1000, expiresAt: T0 + 59000, kind: 'load.metrics', value: { queueDepth: 3, runningRequests: 45, kvCacheUse: 0.57 } },
    { region: 'eu-ie', source: SOURCE, key: 'gpu-node-07', observedAt: T0 - 500, expiresAt: T0 + 59500, kind: 'load.metrics', value: { gpuMemoryUse: 0.75, throttledShare: 0.5 } },
    { region: 'eu-ie', source: SOURCE, key: 'gpu-node-07', observedAt: T0 - 500, expiresAt: T0 + 59500, kind: 'capacity', value: { fraction: 1 } },
  ]);
  assertValid(h.emitted, h.now());
  assert.equal(remoteWriteStats.series - before.series, 13);
  assert.equal(remoteWriteStats.unmatched - before.unmatched, 2);
  assert.equal(remoteWriteStats.signals - before.signals, 3);

  // 2. A shard carrying one series of source A: the fact is re-read over everything kept.
  h.emitted.length = 0;
  h.set(T0 + 2000);
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_waiting', VA, 7, T0 + 1000)]), GOOD)).status, 204);
  assert.deepEqual(h.emitted, [{ region: 'us-va', source: SOURCE, key: KEY_A, observedAt: T0 + 1000, expiresAt: T0 + 61000, kind: 'load.metrics', value: { queueDepth: 7, runningRequests: 45, kvCacheUse: 0.57 } }]);

  // 3. Sample times from a clock far ahead or far behind: observedAt is now.
  h.emitted.length = 0;
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_waiting', VA, 8, T0 + 3_600_000)]), GOOD)).status, 204);
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_running', VA, 50, T0 - 600_000)]), GOOD)).status, 204);
  assert.deepEqual(
    h.emitted.map((x) => [x.observedAt, x.expiresAt, x.value]),
    [
      [T0 + 2000, T0 + 62000, { queueDepth: 8, runningRequests: 45, kvCacheUse: 0.57 }],
      // The late sample is older than the kept one: the kept 45 stays.
      [T0 + 2000, T0 + 62000, { queueDepth: 8, runningRequests: 45, kvCacheUse: 0.57 }],
    ],
  );
  // A kept sample stamped in the future does not hold its series back.
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_waiting', VA, 9, T0 + 1500)]), GOOD)).status, 204);
  assert.deepEqual(h.emitted.at(-1)!.value, { queueDepth: 9, runningRequests: 45, kvCacheUse: 0.57 });
  assertValid(h.emitted, h.now());

  // 4. An XID burst on GPU-a: capacity drops to 1/2 and stays there for expireMs.
  h.emitted.length = 0;
  h.set(T0 + 10_000);
  assert.equal((await send(port, remoteWriteBody([s('DCGM_EXP_XID_ERRORS_TOTAL', { ...IE, gpu: '0', UUID: 'GPU-a', xid: '79' }, 3, T0 + 9000)]), GOOD)).status, 204);
  h.set(T0 + 20_000);
  assert.equal((await send(port, remoteWriteBody([s('DCGM_FI_DEV_GPU_TEMP', { ...IE, gpu: '0', UUID: 'GPU-a' }, 70, T0 + 19_000)]), GOOD)).status, 204);
  assert.deepEqual(
    h.emitted.filter((x) => x.kind === 'capacity').map((x) => [x.observedAt, x.value]),
    [
      [T0 + 9000, { fraction: 0.5 }],
      [T0 + 19_000, { fraction: 0.5 }],
    ],
  );
  assert.deepEqual(h.emitted.at(-2)!.value, { gpuMemoryUse: 0.75, throttledShare: 0 });
  assertValid(h.emitted, h.now());

  // 5. Kept series expire after expireMs: only what arrived since counts.
  h.emitted.length = 0;
  h.set(T0 + 75_000);
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_waiting', VA, 1, T0 + 74_000)]), GOOD)).status, 204);
  assert.deepEqual(h.emitted.map((x) => x.value), [{ queueDepth: 1 }]);
});

test('every failure status, logged once per change of state, with no fact', async () => {
  const h = harness(config());
  const stop = await prometheusRemoteWrite.start(h.ctx);
  after(stop);
  const port = Number(remoteWriteStats.listening!.split(':').pop());
  const before = { ...remoteWriteStats };
  const good = remoteWriteBody([s('vllm:num_requests_waiting', VA, 3, T0)]);
  const noAuth: Record<string, string> = { ...GOOD };
  delete noAuth.authorization;
  // Copy before any output; a protobuf group; declared 2 MiB decoded (limit 1 MiB).
  const badSnappy = Buffer.from([8, 0x01, 1]);
  const badProto = snappyEncodeLiterals(Buffer.from([0x0b, 0x0c]));
  const truncatedProto = snappyEncodeLiterals(encodeWriteRequest([s('m', VA, 1, 1)]).subarray(0, 10));
  const hugeDecoded = Buffer.from([...varint(2 * 1024 * 1024), 0]);
  const cases: Array<[string, Buffer, Record<string, string>, number, RegExp, string?, string?]> = [
    ['no token', good, noAuth, 401, /bearer token/],
    ['wrong token', good, { ...GOOD, authorization: `Bearer ${TOKEN.replace('0', '1')}` }, 401, /bearer token/],
    ['json', good, { ...GOOD, 'content-type': 'application/json' }, 415, /Content-Type must be application\/x-protobuf/],
    ['gzip', good, { ...GOOD, 'content-encoding': 'gzip' }, 415, /Content-Encoding must be snappy/],
    ['no encoding', good, { ...GOOD, 'content-encoding': '' }, 415, /Content-Encoding/],
    ['remote write 2.0', good, { ...GOOD, 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request' }, 415, /only remote-write 1.0/],
    ['bad snappy', badSnappy, GOOD, 400, /^snappy: copy offset 1 at output byte 0/],
    ['bad protobuf', badProto, GOOD, 400, /^protobuf: .*wire type 3/],
    ['truncated protobuf', truncatedProto, GOOD, 400, /^protobuf: .*(past the end|truncated)/],
    ['body too large', Buffer.alloc(100 * 1024, 0x41), GOOD, 413, /more than 65536/],
    ['decoded too large', hugeDecoded, GOOD, 413, /declared uncompressed length 2097152 bytes is more than 1048576/],
    ['other path', good, GOOD, 404, /not found/, '/write'],
    ['GET', Buffer.alloc(0), GOOD, 405, /use POST/, '/api/v1/write', 'GET'],
  ];
  for (const [name, body, headers, status, re, path, method] of cases) {
    const a = await send(port, body, headers, path, method);
    assert.equal(a.status, status, `${name}: ${a.text}`);
    assert.match(a.text, re, name);
  }
  assert.deepEqual(h.emitted, []);
  // A chunked body over the limit (no content-length) is cut at the limit too.
  const chunked = await new Promise<Answer>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/write', method: 'POST', headers: GOOD, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.write(Buffer.alloc(40 * 1024));
    req.end(Buffer.alloc(40 * 1024));
  });
  assert.deepEqual(chunked, { status: 413, text: 'the body is more than 65536 bytes\n' });

  const d = (k: keyof typeof remoteWriteStats) => (remoteWriteStats[k] as number) - (before[k] as number);
  assert.deepEqual(
    { requests: d('requests'), unauthorized: d('unauthorized'), unsupported: d('unsupported'), malformed: d('malformed'), tooLarge: d('tooLarge'), notFound: d('notFound'), badMethod: d('badMethod'), accepted: d('accepted'), signals: d('signals') },
    { requests: 14, unauthorized: 2, unsupported: 4, malformed: 3, tooLarge: 3, notFound: 1, badMethod: 1, accepted: 0, signals: 0 },
  );
  // One warning per failure kind, not per request.
  const warns = h.logs.filter((l) => l.level === 40);
  assert.deepEqual(warns.map((l) => l.kind).sort(), ['badMethod', 'malformed', 'notFound', 'tooLarge', 'unauthorized', 'unsupported']);
  // The next accepted request logs the recovery of each, once; a later failure warns again.
  assert.equal((await send(port, good, GOOD)).status, 204);
  assert.equal((await send(port, good, GOOD)).status, 204);
  assert.equal(h.logs.filter((l) => l.level === 30 && /accepted again/.test(l.msg)).length, 6);
  assert.equal((await send(port, good, noAuth)).status, 401);
  assert.equal(h.logs.filter((l) => l.level === 40).length, 7);
  assert.equal(h.emitted.length, 2);
  assertValid(h.emitted, h.now());
});

test('stop() closes the port; an aborted ctx.signal stops too; a taken port fails start', async () => {
  const h = harness(config({ bearerToken: undefined }));
  delete (h.ctx.config as Partial<RemoteWriteConfig>).bearerToken;
  const stop = await prometheusRemoteWrite.start(h.ctx);
  const port = Number(remoteWriteStats.listening!.split(':').pop());
  // Without bearerToken no authorization is needed.
  assert.equal((await send(port, remoteWriteBody([s('vllm:num_requests_waiting', VA, 3, T0)]), { 'content-encoding': 'snappy', 'content-type': 'application/x-protobuf' })).status, 204);
  assert.equal(h.emitted.length, 1);
  // A second receiver on the same port fails to start with a clear message.
  const h2 = harness(config({ listen: `127.0.0.1:${port}` }));
  await assert.rejects(prometheusRemoteWrite.start(h2.ctx), /cannot listen on 127\.0\.0\.1:\d+: .*EADDRINUSE/);
  await stop();
  await stop(); // idempotent
  const refused = await new Promise<string>((resolve) => {
    const c = net.connect({ host: '127.0.0.1', port });
    c.on('connect', () => {
      c.destroy();
      resolve('connected');
    });
    c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
  assert.equal(refused, 'ECONNREFUSED');

  const h3 = harness(config());
  await prometheusRemoteWrite.start(h3.ctx);
  const port3 = Number(remoteWriteStats.listening!.split(':').pop());
  h3.ac.abort();
  await new Promise((r) => setTimeout(r, 50));
  await assert.rejects(send(port3, Buffer.alloc(0), GOOD), /ECONNREFUSED/);
});

test('config: sources whose facts would collide are refused at start', async () => {
  const h = harness(config({ sources: [{ region: 'us-va', match: { job: 'a' }, key: 'k' }, { region: 'us-va', match: { job: 'b' }, key: 'k' }] }));
  await assert.rejects(prometheusRemoteWrite.start(h.ctx), /sources\[0\] and sources\[1\] would emit the same facts/);
  assert.equal(validateConfig({ listen: '127.0.0.1:1', sources: [{ region: 'us-va', match: {} }] }), false, 'an empty match is refused');
  assert.equal(validateConfig({ listen: '127.0.0.1:1', sources: [{ region: 'us-va', match: { job: 'x' } }], extra: 1 }), false, 'unknown keys are refused');
});
