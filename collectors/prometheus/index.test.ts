/**
 * The prometheus collector against a real HTTP server on 127.0.0.1 serving the fixtures and
 * hostile answers (500, HTML, a cut-off body, slow headers and body, oversized, a gzip bomb,
 * too many series). The clock is the test's; every emitted signal must pass the state
 * layer's validateSignal. Rounds are driven by PrometheusPoller.round(), the timer by start().
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { Ajv } from 'ajv';
import { pino } from 'pino';
import type { CollectorContext, Signal } from '../types.js';
import { validateSignal } from '../../gslb/state/signals.js';
import { MAX_BODY_BYTES, PrometheusConfigSchema, PrometheusPoller, prometheus, prometheusTotals as prometheusStats, type PrometheusConfig } from './index.js';
import { live } from '../../test/helpers/live.js';

const FIXTURES = fileURLToPath(new URL('../../../collectors/prometheus/fixtures/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name, 'utf8');
const VLLM = fixture('vllm.prom');
const SGLANG = fixture('sglang.prom');
const DCGM_TEXT = fixture('dcgm-exporter.prom');

const T0 = 1_800_000_000_000;
const REGIONS: ReadonlySet<string> = new Set(['us-va', 'us-tx', 'eu-ie', 'ap-tyo', 'ap-sin', 'sa-sao', 'ca-ab']);
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the server -------------------------------------------------------------------------

/** Requests per path. */
const hits = new Map<string, number>();
/** What /var and /dcgm-xid serve now (tests set them). */
const vars: { text: string; status: number; dcgm: string } = { text: VLLM, status: 200, dcgm: DCGM_TEXT };
const open = new Set<http.ServerResponse>();
const MANY = Array.from({ length: 150_000 }, (_, i) => `m{i="${i}"} 1`).join('\n') + '\n';
const BOMB = gzipSync(Buffer.alloc(20 * MiB, 0x23)); // 20 MiB of '#' (one endless comment line)

function hold(res: http.ServerResponse): void {
  // Keeps the response open until the client gives up (bounded: 10 s at most).
  open.add(res);
  const t = setTimeout(() => res.destroy(), 10_000);
  res.on('close', () => {
    clearTimeout(t);
    open.delete(res);
  });
}

const TEXT = { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' };
const routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void> = {
  '/vllm': (_q, res) => res.writeHead(200, TEXT).end(VLLM),
  '/vllm-legacy': (_q, res) => res.writeHead(200, TEXT).end(fixture('vllm-legacy.prom')),
  '/sglang': (_q, res) => res.writeHead(200, TEXT).end(SGLANG),
  '/trtllm': (_q, res) => res.writeHead(200, TEXT).end(fixture('trtllm.prom')),
  '/tgi': (_q, res) => res.writeHead(200, TEXT).end(fixture('tgi.prom')),
  '/dcgm': (_q, res) => res.writeHead(200, TEXT).end(DCGM_TEXT),
  '/dcgm-xid': (_q, res) => res.writeHead(200, TEXT).end(vars.dcgm),
  '/var': (_q, res) => res.writeHead(vars.status, TEXT).end(vars.status === 200 ? vars.text : 'internal error\n'),
  '/timer': (_q, res) => res.writeHead(200, TEXT).end(VLLM),
  '/headers': (req, res) => res.writeHead(200, TEXT).end(`vllm:num_requests_waiting{auth="${req.headers.authorization ?? ''}"} 1\n`),
  '/500': (_q, res) => res.writeHead(500, TEXT).end('internal error\n'),
  '/html': (_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><h1>502 Bad Gateway</h1></body></html>\n'),
  '/truncated': (_q, res) => {
    res.writeHead(200, { ...TEXT, 'content-length': '5000' });
    res.write(VLLM.slice(0, 100));
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/slow-headers': (_q, res) => hold(res),
  '/slow-body': (_q, res) => {
    res.writeHead(200, TEXT);
    res.write('vllm:num_requests_waiting 1\n');
    hold(res);
  },
  '/huge-declared': (_q, res) => {
    res.writeHead(200, { ...TEXT, 'content-length': String(9 * MiB) });
    res.write('# a start\n');
    hold(res);
  },
  '/huge-streamed': (_q, res) => {
    const chunk = Buffer.from(`# ${'x'.repeat(1021)}\n`.repeat(64)); // 64 KiB
    let sent = 0;
    let closed = false;
    res.on('close', () => (closed = true));
    res.writeHead(200, TEXT);
    const pump = () => {
      while (!closed && sent < 10 * MiB) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!closed) res.end();
    };
    pump();
  },
  '/gzip-bomb': (_q, res) => res.writeHead(200, { ...TEXT, 'content-encoding': 'gzip' }).end(BOMB),
  '/many': (_q, res) => res.writeHead(200, TEXT).end(MANY),
  '/empty': (_q, res) => res.writeHead(200, TEXT).end(''),
  '/node': (_q, res) => res.writeHead(200, TEXT).end('# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.42\n'),
  '/nan': (_q, res) => res.writeHead(200, TEXT).end('vllm:num_requests_waiting NaN\nvllm:num_requests_running -1\nvllm:kv_cache_usage_perc 1.5\n'),
};

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]!;
  hits.set(path, (hits.get(path) ?? 0) + 1);
  const route = routes[path];
  if (route) route(req, res);
  else res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const PORT = (server.address() as AddressInfo).port;
const BASE = `http://127.0.0.1:${PORT}`;
const SOURCE = `prometheus/127.0.0.1:${PORT}`;

// A port with nothing listening: listen, note it, close.
const refusedPort = await new Promise<number>((resolve) => {
  const s = http.createServer();
  s.listen(0, '127.0.0.1', () => {
    const p = (s.address() as AddressInfo).port;
    s.close(() => resolve(p));
  });
});

after(async () => {
  for (const res of open) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

// ---- helpers ----------------------------------------------------------------------------

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, allowUnionTypes: true });
const validateConfig = ajv.compile(PrometheusConfigSchema);

/** The config as the loader makes it: validated with defaults filled in. */
function config(input: unknown): PrometheusConfig {
  const c = structuredClone(input);
  if (!validateConfig(c)) throw new Error(ajv.errorsText(validateConfig.errors));
  return c as PrometheusConfig;
}

interface LogLine {
  level: number;
  msg: string;
  target?: string;
  reason?: string;
}

/** A ctx whose emit collects, whose logs are captured, and whose clock the test moves. */
function harness(cfg: PrometheusConfig) {
  const emitted: Signal[] = [];
  const logs: LogLine[] = [];
  const ac = new AbortController();
  let t = T0;
  const ctx = {
    config: cfg,
    log: pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s) as LogLine) }),
    emit: (s: Signal) => void emitted.push(s),
    now: () => t,
    node: 'test-node',
    fleet: () => [...REGIONS].map((id) => ({ id, endpoints: [] as string[] })),
    signal: ac.signal,
  };
  return {
    ctx: ctx as CollectorContext<PrometheusConfig>,
    emitted,
    logs,
    ac,
    advance: (ms: number) => void (t += ms),
    now: () => t,
    warns: (target?: string) => logs.filter((l) => l.level === 40 && (target === undefined || l.target === target)),
    infos: (re: RegExp) => logs.filter((l) => l.level === 30 && re.test(l.msg)),
  };
}

/** Every signal passes the state layer's validation at its observation time. */
function assertValid(signals: Signal[]): void {
  for (const s of signals) assert.doesNotThrow(() => validateSignal(structuredClone(s), s.observedAt, REGIONS), JSON.stringify(s));
}

const stats = () => ({ ...prometheusStats });
const delta = (a: typeof prometheusStats, b: typeof prometheusStats) => ({ scrapes: b.scrapes - a.scrapes, failures: b.failures - a.failures, signals: b.signals - a.signals });

async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await sleep(20);
  }
}

// ---- config -----------------------------------------------------------------------------

test('config: defaults filled in, unknown keys and bad values refused', () => {
  const c = config({ targets: [{ region: 'us-va', url: 'http://10.0.0.5:8000/metrics' }] });
  assert.deepEqual(c, {
    intervalMs: 10000,
    timeoutMs: 3000,
    targets: [{ region: 'us-va', url: 'http://10.0.0.5:8000/metrics' }],
    saturation: { queueWaiting: 5, kvCacheUse: 0.8 },
    throttleTempC: 87,
    xidBurst: 3,
  });
  const ok = { region: 'us-va', url: 'https://gpu-7.example.net:9400/metrics', key: 'gpu-7', kind: 'dcgm', headers: { authorization: 'Bearer x' } };
  assert.doesNotThrow(() => config({ targets: [ok] }));
  const bad: [string, unknown][] = [
    ['unknown top-level key', { targets: [ok], interval: 5 }],
    ['unknown target key', { targets: [{ ...ok, job: 'x' }] }],
    ['unknown saturation key', { targets: [ok], saturation: { queue: 1 } }],
    ['no targets', { targets: [] }],
    ['ftp url', { targets: [{ ...ok, url: 'ftp://x/metrics' }] }],
    ['file url', { targets: [{ ...ok, url: 'file:///etc/passwd' }] }],
    ['credentials in the url', { targets: [{ ...ok, url: 'http://user:pw@host:9400/metrics' }] }],
    ['region not an id', { targets: [{ ...ok, region: 'US VA' }] }],
    ['kind not known', { targets: [{ ...ok, kind: 'triton' }] }],
    ['intervalMs below 1000', { targets: [ok], intervalMs: 500 }],
    ['kvCacheUse above 1', { targets: [ok], saturation: { kvCacheUse: 1.5 } }],
    ['xidBurst 0', { targets: [ok], xidBurst: 0 }],
    ['bad header name', { targets: [{ ...ok, headers: { 'x y': '1' } }] }],
  ];
  for (const [name, input] of bad) assert.throws(() => config(input), Error, name);
});

test('a target that cannot be scraped as configured is refused at start, naming it', () => {
  const mk = (targets: unknown[]) => harness(config({ targets })).ctx;
  assert.throws(() => new PrometheusPoller(mk([{ region: 'us-va', url: 'http://[::1/metrics' }])), /^Error: collectors\/prometheus: targets\[0\]\.url: .* is not a URL/);
  assert.throws(
    () => new PrometheusPoller(mk([{ region: 'us-va', url: `${BASE}/vllm` }, { region: 'us-va', url: `${BASE}/vllm` }])),
    /collectors\/prometheus: targets\[0\] and targets\[1\] would emit the same facts/,
  );
  assert.throws(() => new PrometheusPoller(mk([{ region: 'us-va', url: `${BASE}/${'x'.repeat(200)}` }])), /targets\[0\]: the url is longer than 200 characters; give the target a key/);
  // Same URL in two regions, or with two keys, is fine.
  assert.doesNotThrow(() => new PrometheusPoller(mk([{ region: 'us-va', url: `${BASE}/vllm` }, { region: 'us-tx', url: `${BASE}/vllm` }])));
});

// ---- mapping ----------------------------------------------------------------------------

test('each fixture gives one load.metrics fact with exactly the mapped values (and DCGM targets a capacity fact)', async () => {
  const cfg = config({
    intervalMs: 10000,
    targets: [
      { region: 'us-va', url: `${BASE}/vllm` },
      { region: 'us-tx', url: `${BASE}/vllm-legacy`, key: 'mistral-7b' },
      { region: 'eu-ie', url: `${BASE}/sglang` },
      { region: 'ap-tyo', url: `${BASE}/trtllm`, kind: 'model-server' },
      { region: 'ap-sin', url: `${BASE}/tgi` },
      { region: 'sa-sao', url: `${BASE}/dcgm`, kind: 'dcgm' },
      { region: 'ca-ab', url: `${BASE}/dcgm` },
    ],
  });
  const h = harness(cfg);
  const before = stats();
  await new PrometheusPoller(h.ctx).round();
  const env = (region: string, key: string) => ({ region, kind: 'load.metrics', source: SOURCE, key, observedAt: T0, expiresAt: T0 + 30_000 });
  const dcgm = { gpuMemoryUse: 78336 / (78336 + 2703), throttledShare: 0.25 };
  const want = [
    { ...env('us-va', `${BASE}/vllm`), value: { queueDepth: 3, runningRequests: 45, kvCacheUse: 0.57 } },
    { ...env('us-tx', 'mistral-7b'), value: { queueDepth: 0, runningRequests: 7, kvCacheUse: 0.125 } },
    { ...env('eu-ie', `${BASE}/sglang`), value: { queueDepth: 7, runningRequests: 31, kvCacheUse: 0.875 } },
    { ...env('ap-tyo', `${BASE}/trtllm`), value: { queueDepth: 2, runningRequests: 64, kvCacheUse: 0.71875 } },
    { ...env('ap-sin', `${BASE}/tgi`), value: { queueDepth: 4, runningRequests: 16 } },
    { ...env('sa-sao', `${BASE}/dcgm`), value: dcgm },
    { ...env('ca-ab', `${BASE}/dcgm`), value: dcgm },
    // A DCGM target also renews its capacity fact on every scrape: all 8 GPUs usable.
    { ...env('sa-sao', `${BASE}/dcgm`), kind: 'capacity', value: { fraction: 1 } },
    { ...env('ca-ab', `${BASE}/dcgm`), kind: 'capacity', value: { fraction: 1 } },
  ];
  const order = (a: { region: string; kind: string }, b: { region: string; kind: string }) => (a.region + a.kind < b.region + b.kind ? -1 : 1);
  assert.deepEqual([...h.emitted].sort(order), [...want].sort(order));
  assertValid(h.emitted);
  assert.deepEqual(delta(before, stats()), { scrapes: 7, failures: 0, signals: 9 });
  assert.equal(h.warns().length, 0);
  // SGLang's fixture is saturated under the endpoint picker's defaults: logged, not emitted.
  const sat = h.infos(/is saturated/);
  assert.equal(sat.length, 1);
  assert.match(sat[0]!.msg, /sglang is saturated \(7 requests waiting > 5, KV cache 87\.5 % > 80 %\)/);
});

test('kind: model-server ignores DCGM metrics and the reverse; headers are sent', async () => {
  const h = harness(
    config({
      targets: [
        { region: 'us-va', url: `${BASE}/dcgm`, kind: 'model-server' },
        { region: 'us-tx', url: `${BASE}/vllm`, kind: 'dcgm' },
        { region: 'eu-ie', url: `${BASE}/headers`, headers: { authorization: 'Bearer s3cret' } },
      ],
    }),
  );
  await new PrometheusPoller(h.ctx).round();
  assert.deepEqual(
    h.emitted.map((s) => [s.region, s.value]),
    [['eu-ie', { queueDepth: 1 }]],
  );
  assert.match(h.warns(`${BASE}/dcgm`)[0]!.reason!, /none of the known model-server metrics among 107 samples/);
  assert.match(h.warns(`${BASE}/vllm`)[0]!.reason!, /none of the known DCGM exporter metrics among \d+ samples/);
});

test('saturation is logged once per change', async () => {
  const h = harness(config({ targets: [{ region: 'eu-ie', url: `${BASE}/var` }] }));
  const p = new PrometheusPoller(h.ctx);
  vars.status = 200;
  vars.text = SGLANG;
  await p.round();
  await p.round();
  vars.text = VLLM;
  await p.round();
  await p.round();
  vars.text = SGLANG.replace('sglang:num_queue_reqs{model_name="Qwen/Qwen2.5-72B-Instruct"} 7.0', 'sglang:num_queue_reqs{model_name="Qwen/Qwen2.5-72B-Instruct"} 0.0');
  await p.round(); // KV 0.875 > 0.8 alone is saturated
  assert.deepEqual(
    h.logs.filter((l) => /saturated/.test(l.msg)).map((l) => l.msg.replace(BASE, '')),
    [
      'collectors/prometheus: /var is saturated (7 requests waiting > 5, KV cache 87.5 % > 80 %)',
      'collectors/prometheus: /var is no longer saturated',
      'collectors/prometheus: /var is saturated (KV cache 87.5 % > 80 %)',
    ],
  );
  assert.equal(h.emitted.length, 5);
  assertValid(h.emitted);
});

/** The DCGM fixture with its XID totals replaced: gpu index → xid code → total. */
function dcgmWithXid(totals: Record<number, Record<string, number>>): string {
  const lines = DCGM_TEXT.split('\n').filter((l) => !l.startsWith('DCGM_EXP_XID_ERRORS_TOTAL{'));
  for (const [gpu, byCode] of Object.entries(totals)) {
    const labels = new RegExp(`^DCGM_FI_DEV_GPU_TEMP\\{(gpu="${gpu}",[^}]*)\\}`, 'm').exec(DCGM_TEXT)![1]!;
    for (const [code, n] of Object.entries(byCode)) lines.push(`DCGM_EXP_XID_ERRORS_TOTAL{${labels},xid="${code}"} ${n}`);
  }
  return lines.join('\n') + '\n';
}

test('XID bursts: a GPU whose total grew by ≥ xidBurst since the last scrape is unusable; capacity is renewed on every scrape', async () => {
  const h = harness(config({ intervalMs: 15000, targets: [{ region: 'us-va', url: `${BASE}/dcgm-xid`, key: 'gpu-node-07' }] }));
  const p = new PrometheusPoller(h.ctx);
  const capacities = async (text: string): Promise<unknown[]> => {
    vars.dcgm = text;
    h.emitted.length = 0;
    h.advance(15000);
    await p.round();
    assertValid(h.emitted);
    assert.equal(h.emitted.filter((s) => s.kind === 'load.metrics').length, 1);
    return h.emitted.filter((s) => s.kind === 'capacity').map((s) => s.value);
  };
  // 1: the fixture as is (gpu 3: 2 × xid 13, gpu 6: xid 31 and 43 once each): a baseline, all usable.
  assert.deepEqual(await capacities(dcgmWithXid({ 3: { 13: 2 }, 6: { 31: 1, 43: 1 } })), [{ fraction: 1 }]);
  // 2: gpu 3 +3, and gpu 5's first XIDs (a new series of 3): two of eight unusable.
  assert.deepEqual(await capacities(dcgmWithXid({ 3: { 13: 5 }, 5: { 79: 3 }, 6: { 31: 1, 43: 1 } })), [{ fraction: 0.75 }]);
  const cap = h.emitted.find((s) => s.kind === 'capacity')!;
  assert.deepEqual(cap, { region: 'us-va', kind: 'capacity', source: SOURCE, key: 'gpu-node-07', observedAt: h.now(), expiresAt: h.now() + 45000, value: { fraction: 0.75 } });
  const burst = h.warns('gpu-node-07');
  assert.equal(burst.length, 1);
  assert.match(burst[0]!.msg, /2 of 8 GPUs at .* had at least 3 XID errors since the last scrape/);
  // 3: no growth: all usable again, and said so (the capacity fact is renewed, never left to go stale).
  assert.deepEqual(await capacities(dcgmWithXid({ 3: { 13: 5 }, 5: { 79: 3 }, 6: { 31: 1, 43: 1 } })), [{ fraction: 1 }]);
  // 4: growth below the burst (gpu 6 +2 over two codes).
  assert.deepEqual(await capacities(dcgmWithXid({ 3: { 13: 5 }, 5: { 79: 3 }, 6: { 31: 2, 43: 2 } })), [{ fraction: 1 }]);
  // 5: exporter restart: totals back to nothing: a new baseline, not a burst.
  assert.deepEqual(await capacities(dcgmWithXid({})), [{ fraction: 1 }]);
  // 6: gpu 0 has four XID 48 since the restart.
  assert.deepEqual(await capacities(dcgmWithXid({ 0: { 48: 4 } })), [{ fraction: 0.875 }]);
});

// ---- failures ---------------------------------------------------------------------------

test('hostile answers: no fact, one warn per target naming why, counted; bounded in time', async () => {
  const cases: [string, RegExp, number][] = [
    [`http://127.0.0.1:${refusedPort}/metrics`, /ECONNREFUSED/, 5000],
    [`${BASE}/500`, /^HTTP 500$/, 5000],
    [`${BASE}/nope`, /^HTTP 404$/, 5000],
    [`${BASE}/html`, /^not Prometheus text format: line 1: sample: expected a metric name/, 5000],
    [`${BASE}/truncated`, /cut short/, 5000],
    [`${BASE}/slow-headers`, /^no complete answer within 300 ms$/, 300],
    [`${BASE}/slow-body`, /^no complete answer within 300 ms$/, 300],
    [`${BASE}/huge-declared`, new RegExp(`^the body is ${9 * MiB} bytes, more than ${MAX_BODY_BYTES}$`), 5000],
    [`${BASE}/huge-streamed`, new RegExp(`^the body is more than ${MAX_BODY_BYTES} bytes$`), 5000],
    [`${BASE}/gzip-bomb`, new RegExp(`^the body is more than ${MAX_BODY_BYTES} bytes$`), 5000],
    [`${BASE}/many`, /^not Prometheus text format: line 100001: more than 100000 series$/, 5000],
    [`${BASE}/empty`, /^none of the known model-server or DCGM exporter metrics among 0 samples$/, 5000],
    [`${BASE}/node`, /^none of the known model-server or DCGM exporter metrics among 1 samples$/, 5000],
    [`${BASE}/nan`, /^the model-server metrics hold no usable value/, 5000],
  ];
  // The slow answers under a short timeout; the rest under a long one (this machine is shared).
  const regions = [...REGIONS];
  const harnesses = [300, 5000].map((timeoutMs) =>
    harness(config({ intervalMs: 10000, timeoutMs, targets: cases.filter((c) => c[2] === timeoutMs).map(([url], i) => ({ region: regions[i % regions.length], url })) })),
  );
  const before = stats();
  // Each slow answer's reason names the 300 ms deadline that cut it: nothing here is timed.
  for (const h of harnesses) {
    const p = new PrometheusPoller(h.ctx);
    await p.round();
    await p.round();
  }
  assert.deepEqual(delta(before, stats()), { scrapes: 2 * cases.length, failures: 2 * cases.length, signals: 0 });
  for (const h of harnesses) assert.deepEqual(h.emitted, []);
  for (const [url, reason, timeoutMs] of cases) {
    const h = harnesses[timeoutMs === 300 ? 0 : 1]!;
    const w = h.warns(url);
    assert.equal(w.length, 1, `${url}: one warn over two failed rounds`);
    assert.match(w[0]!.reason!, reason, url);
    assert.match(w[0]!.msg, /^collectors\/prometheus: scraping .* fails \(.*\); no facts from it until it recovers$/);
  }
  assert.equal(harnesses[0]!.warns().length + harnesses[1]!.warns().length, cases.length);
});

test('ok → failing → ok: one warn and one info per change; facts only from good scrapes', async () => {
  const h = harness(config({ targets: [{ region: 'us-va', url: `${BASE}/var` }] }));
  const p = new PrometheusPoller(h.ctx);
  vars.text = VLLM;
  const seq: [number, string][] = [
    [200, 'ok'],
    [500, 'fail'],
    [500, 'fail'],
    [500, 'fail'],
    [200, 'ok'],
    [200, 'ok'],
    [500, 'fail'],
  ];
  const observed: number[] = [];
  for (const [status] of seq) {
    vars.status = status;
    h.advance(10000);
    const n = h.emitted.length;
    await p.round();
    if (h.emitted.length > n) observed.push(h.emitted[h.emitted.length - 1]!.observedAt);
  }
  vars.status = 200;
  assert.deepEqual(observed, [T0 + 10000, T0 + 50000, T0 + 60000]);
  assert.equal(h.warns().length, 2);
  assert.equal(h.infos(/works again/).length, 1);
  assertValid(h.emitted);
});

// ---- the timer --------------------------------------------------------------------------

test('start() scrapes at once and every intervalMs; stop() stops the timer', async () => {
  const h = harness(config({ intervalMs: 1000, timeoutMs: 500, targets: [{ region: 'us-va', url: `${BASE}/timer` }] }));
  hits.set('/timer', 0);
  const stop = await prometheus.start(h.ctx);
  await until(() => (hits.get('/timer') ?? 0) >= 1, 2000);
  await until(() => (hits.get('/timer') ?? 0) >= 2, 3000);
  await stop();
  const n = hits.get('/timer')!;
  const emitted = h.emitted.length;
  await sleep(1500);
  assert.equal(hits.get('/timer'), n, 'no request after stop()');
  assert.equal(h.emitted.length, emitted, 'no fact after stop()');
  assert.ok(emitted >= 1 && emitted <= n);
  assertValid(h.emitted);
});

test('stop() aborts a scrape in flight at once, counting and logging nothing; ctx.signal stops it too', async () => {
  // The scrape's own timeout (60 s) is twice the liveness bound below: only an abort ends it in time.
  const h = harness(config({ intervalMs: 60000, timeoutMs: 60000, targets: [{ region: 'us-va', url: `${BASE}/slow-body` }] }));
  hits.set('/slow-body', 0);
  const before = stats();
  const stop = await prometheus.start(h.ctx);
  await until(() => (hits.get('/slow-body') ?? 0) >= 1, 2000);
  await live(stop(), 30_000, 'stop() aborts the scrape in flight');
  assert.deepEqual(delta(before, stats()), { scrapes: 0, failures: 0, signals: 0 });
  assert.equal(h.warns().length, 0);

  // Aborting ctx.signal stops the timer as well.
  const h2 = harness(config({ intervalMs: 1000, targets: [{ region: 'us-va', url: `${BASE}/timer` }] }));
  hits.set('/timer', 0);
  const stop2 = await prometheus.start(h2.ctx);
  await until(() => (hits.get('/timer') ?? 0) >= 1, 2000);
  h2.ac.abort();
  await sleep(1300);
  assert.equal(hits.get('/timer'), 1);
  await stop2(); // idempotent
});
