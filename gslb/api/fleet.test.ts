/**
 * Fleet routes (routes/fleet.ts) and the dashboard's static files (routes/dashboard.ts) through
 * fastify's inject and, for the event stream, a real socket: auth per route, bad input named,
 * a store that does not answer → 503, the stream's first event and its change events, the
 * stream limit; the page's CSP and a build that is missing.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { buildApi } from './app.js';
import type { ApiDeps } from './deps.js';
import { loadTokens } from '../config/tokens.js';
import { MAX_STREAMS, MAX_STREAMS_PER_CALLER } from './routes/fleet.js';
import { StoreError } from '../state/store.js';
import type { FleetView } from '../control/fleet.js';

const OPERATOR = 'operator-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const INGEST = 'ingest-token-0123456789abcdef';
const TOKENS = loadTokens({ env: `operator:alice:${OPERATOR},viewer:grafana:${VIEWER},ingest:meter:${INGEST}` });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function view(share = 1, revision = 1): FleetView & { revision: number } {
  return {
    now: 1_800_000_000_000,
    planVersion: `plan-${share}`,
    revision,
    unplaced: 0,
    regions: [
      { id: 'us-va', name: 'Virginia', location: { lat: 39, lon: -77.5, country: 'US' }, power: { site: 'grid' }, share, down: false, refuse: false, state: share < 1 ? (share <= 0 ? 'drained' : 'draining') : 'up', reasons: share < 1 ? ['drain'] : [], traffic: share, signals: [] },
      { id: 'eu-ie', name: 'Ireland', power: {}, share: 1, down: false, refuse: false, state: 'up', reasons: [], traffic: 1 - share, signals: [] },
    ],
    events: [{ region: 'us-va', kind: 'grid.event', source: 'openadr/x', key: 'e1', type: 'load-shed', start: 1, end: 2, cancelled: false, phase: 'over', replay: false, learnedAt: 0, observedAt: 0, expiresAt: 3 }],
  };
}

async function build(t: TestContext, over: Partial<ApiDeps> = {}) {
  const app = await buildApi({
    log: pino({ level: 'silent' }),
    tokens: TOKENS,
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: 'f', loadedAt: 0, zones: [], names: [], regions: [] }),
    reload: async () => ({ version: 'v', changed: false }),
    explain: async () => {
      throw new Error('not here');
    },
    fleet: async () => view(),
    ...over,
  });
  t.after(() => app.close());
  return app;
}

test('GET /v1/regions, /v1/regions/:id, /v1/grid-events, /v1/whoami: viewer role; unknown region named; store down is 503', async (t) => {
  let down = false;
  const app = await build(t, {
    fleet: async () => {
      if (down) throw new StoreError('unavailable', 'redis: connection refused');
      return view();
    },
  });
  const cases: [string, string, Record<string, string>, number, string?][] = [
    ['regions without a token', '/v1/regions', {}, 401, 'GSLB_ERR_AUTH_REQUIRED'],
    ['regions with a bad token', '/v1/regions', bearer('nope-nope-nope-nope'), 401, 'GSLB_ERR_AUTH_INVALID'],
    ['regions as ingest', '/v1/regions', bearer(INGEST), 403, 'GSLB_ERR_FORBIDDEN'],
    ['regions as viewer', '/v1/regions', bearer(VIEWER), 200],
    ['regions as operator', '/v1/regions', bearer(OPERATOR), 200],
    ['one region', '/v1/regions/us-va', bearer(VIEWER), 200],
    ['an unknown region', '/v1/regions/mars-1', bearer(VIEWER), 404, 'GSLB_ERR_NOT_FOUND'],
    ['an over-long id', `/v1/regions/${'x'.repeat(64)}`, bearer(VIEWER), 400, 'GSLB_ERR_VALIDATION'],
    ['grid events', '/v1/grid-events', bearer(VIEWER), 200],
    ['grid events without a token', '/v1/grid-events', {}, 401, 'GSLB_ERR_AUTH_REQUIRED'],
    ['whoami', '/v1/whoami', bearer(OPERATOR), 200],
    ['whoami without a token', '/v1/whoami', {}, 401, 'GSLB_ERR_AUTH_REQUIRED'],
    ['stream without a token', '/v1/stream', {}, 401, 'GSLB_ERR_AUTH_REQUIRED'],
    ['stream as ingest', '/v1/stream', bearer(INGEST), 403, 'GSLB_ERR_FORBIDDEN'],
  ];
  for (const [what, url, headers, status, code] of cases) {
    const res = await app.inject({ method: 'GET', url, headers });
    assert.equal(res.statusCode, status, `${what}: ${res.body}`);
    if (code) assert.equal((res.json() as { error: { code: string } }).error.code, code, what);
  }
  const regions = (await app.inject({ method: 'GET', url: '/v1/regions', headers: bearer(VIEWER) })).json() as { regions: { id: string }[]; revision: number };
  assert.deepEqual(
    regions.regions.map((r) => r.id),
    ['us-va', 'eu-ie'],
  );
  assert.equal(regions.revision, 1);
  assert.equal('events' in regions, false, 'events are their own route');
  const unknown = (await app.inject({ method: 'GET', url: '/v1/regions/mars-1', headers: bearer(VIEWER) })).json() as { error: { message: string; field: string } };
  assert.match(unknown.error.message, /us-va, eu-ie/);
  assert.equal(unknown.error.field, 'params.id');
  const events = (await app.inject({ method: 'GET', url: '/v1/grid-events', headers: bearer(VIEWER) })).json() as { events: { key: string }[] };
  assert.deepEqual(
    events.events.map((e) => e.key),
    ['e1'],
  );
  assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/whoami', headers: bearer(OPERATOR) })).json(), { name: 'alice', role: 'operator' });
  down = true;
  for (const url of ['/v1/regions', '/v1/regions/us-va', '/v1/grid-events', '/v1/stream']) {
    const res = await app.inject({ method: 'GET', url, headers: bearer(VIEWER) });
    assert.equal(res.statusCode, 503, url);
    assert.equal((res.json() as { error: { code: string } }).error.code, 'GSLB_ERR_STORE_UNAVAILABLE', url);
  }
});

test('whoami with no tokens configured: reads are open, nobody is named', async (t) => {
  const app = await build(t, { tokens: loadTokens({}) });
  assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/whoami' })).json(), { name: null, role: null });
});

/** Reads SSE events from a real connection until `count` events came (bounded by the test's timeout). */
async function readEvents(url: string, token: string, count: number, signal: AbortSignal, onEvent: (n: number) => void = () => undefined): Promise<{ event: string; data: string }[]> {
  const res = await fetch(url, { headers: bearer(token), signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const out: { event: string; data: string }[] = [];
  let buf = '';
  while (out.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const ev = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (ev && data) {
        out.push({ event: ev, data });
        onEvent(out.length);
      }
    }
  }
  await reader.cancel().catch(() => undefined);
  return out;
}

test('GET /v1/stream: the fleet on connect, again when it changes; a store that fails says so and the stream goes on', { timeout: 30_000 }, async (t) => {
  let current = view(1, 1);
  let fail = false;
  const app = await build(t, {
    streamTickMs: 20,
    fleet: async () => {
      if (fail) throw new StoreError('unavailable', 'redis: connection refused');
      return current;
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const ac = new AbortController();
  t.after(() => ac.abort());
  // After the first event the fleet changes; after the second the store fails.
  const events = await readEvents(`${base}/v1/stream`, VIEWER, 3, ac.signal, (n) => {
    if (n === 1) current = view(0.4, 2);
    if (n === 2) fail = true;
  });
  assert.deepEqual(
    events.map((e) => e.event),
    ['fleet', 'fleet', 'error'],
  );
  const first = JSON.parse(events[0]!.data) as FleetView;
  const second = JSON.parse(events[1]!.data) as FleetView;
  assert.equal(first.regions[0]!.share, 1);
  assert.equal(second.regions[0]!.share, 0.4);
  assert.equal(second.events.length, 1, 'the stream carries the grid events too');
  assert.match(events[2]!.data, /store does not answer/);
});

/** Enough viewer tokens to fill every stream slot of a node within the per-caller limit. */
const STREAM_VIEWERS = Array.from({ length: Math.ceil(MAX_STREAMS / MAX_STREAMS_PER_CALLER) + 1 }, (_, i) => `stream-viewer-${i}-0123456789abcdef`);
const STREAM_TOKENS = loadTokens({ env: STREAM_VIEWERS.map((tok, i) => `viewer:v${i}:${tok}`).join(',') });

test(`GET /v1/stream: at most ${MAX_STREAMS_PER_CALLER} per token (429), another token still gets one; closing one frees its place`, { timeout: 60_000 }, async (t) => {
  const app = await build(t, { streamTickMs: 1000, tokens: STREAM_TOKENS });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const controllers: AbortController[] = [];
  t.after(() => controllers.forEach((c) => c.abort()));
  const open = async (token: string) => {
    const c = new AbortController();
    const res = await fetch(`${base}/v1/stream`, { headers: bearer(token), signal: c.signal });
    if (res.status === 200) controllers.push(c);
    else await res.body?.cancel().catch(() => undefined);
    return res;
  };
  for (let i = 0; i < MAX_STREAMS_PER_CALLER; i++) assert.equal((await open(STREAM_VIEWERS[0]!)).status, 200, `stream ${i}`);
  const over = await fetch(`${base}/v1/stream`, { headers: bearer(STREAM_VIEWERS[0]!) });
  assert.equal(over.status, 429);
  assert.equal(over.headers.get('retry-after'), '30');
  assert.equal(((await over.json()) as { error: { code: string } }).error.code, 'GSLB_ERR_RATE_LIMITED');
  assert.equal((await open(STREAM_VIEWERS[1]!)).status, 200, 'another token is not affected');
  controllers[0]!.abort();
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 20));
    status = (await open(STREAM_VIEWERS[0]!)).status;
  }
  assert.equal(status, 200, 'the closed stream freed its place');
});

test(`GET /v1/stream: at most ${MAX_STREAMS} at once; closing one frees its place`, { timeout: 60_000 }, async (t) => {
  const app = await build(t, { streamTickMs: 1000, tokens: STREAM_TOKENS });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const controllers: AbortController[] = [];
  t.after(() => controllers.forEach((c) => c.abort()));
  for (let i = 0; i < MAX_STREAMS; i++) {
    const c = new AbortController();
    controllers.push(c);
    const res = await fetch(`${base}/v1/stream`, { headers: bearer(STREAM_VIEWERS[i % (STREAM_VIEWERS.length - 1)]!), signal: c.signal });
    assert.equal(res.status, 200, `stream ${i}`);
  }
  const over = await fetch(`${base}/v1/stream`, { headers: bearer(STREAM_VIEWERS.at(-1)!) });
  assert.equal(over.status, 503);
  assert.equal(over.headers.get('retry-after'), '30');
  assert.match(((await over.json()) as { error: { message: string } }).error.message, /poll GET \/v1\/regions/);
  controllers.pop()!.abort();
  // The server sees the close; a bounded number of tries.
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const c = new AbortController();
    const res = await fetch(`${base}/v1/stream`, { headers: bearer(STREAM_VIEWERS.at(-1)!), signal: c.signal });
    status = res.status;
    if (status === 200) controllers.push(c);
    else await res.body?.cancel();
  }
  assert.equal(status, 200);
});

test('GET /v1/stream: closing the server ends open streams first, so a node with a dashboard open stops at once', { timeout: 30_000 }, async (t) => {
  const app = await build(t, { streamTickMs: 1000 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const res = await fetch(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/stream`, { headers: bearer(VIEWER) });
  assert.equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  assert.match((await reader.read()).value ?? '', /^retry: 2000\nevent: fleet\n/);
  // The viewer stays; the server closes. close() must not wait for a viewer that never
  // leaves: it ends the stream cleanly (done, not a reset) and resolves. With the streams
  // ended in onClose instead, close() never resolved (fastify runs onClose only after every
  // in-flight request is done). The 20 s bound is liveness, not speed: past it the viewer
  // leaves, so a regression fails here instead of hanging the file.
  const closed = await Promise.race([app.close().then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 20_000).unref())]);
  if (!closed) await reader.cancel();
  assert.equal(closed, true, 'close() waited for an open stream');
  const r = await reader.read().then(
    (x) => (x.done ? 'done' : 'more'),
    (e: Error) => `error: ${e.message}`,
  );
  assert.equal(r, 'done');
});

test('the dashboard: GET / and /ui/* are open, with a strict CSP; a missing file or build is a 404 that says so', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-dash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'js'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(join(dir, 'js', 'main.js'), 'export {};');
  writeFileSync(join(dir, 'notes.txt'), 'not served');
  const app = await build(t, { dashboardDir: dir });
  const page = await app.inject({ method: 'GET', url: '/' });
  assert.equal(page.statusCode, 200);
  assert.match(page.headers['content-type'] as string, /^text\/html/);
  assert.match(page.headers['content-security-policy'] as string, /default-src 'self'; script-src 'self'/);
  const js = await app.inject({ method: 'GET', url: '/ui/js/main.js' });
  assert.equal(js.statusCode, 200);
  assert.match(js.headers['content-type'] as string, /^text\/javascript/);
  for (const url of ['/ui/notes.txt', '/ui/../package.json', '/ui/%2e%2e/%2e%2e/package.json', '/ui/nope.js']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 404, url);
    assert.equal((res.json() as { error: { code: string } }).error.code, 'GSLB_ERR_NOT_FOUND', url);
  }
  const empty = mkdtempSync(join(tmpdir(), 'gridsteer-dash-empty-'));
  t.after(() => rmSync(empty, { recursive: true, force: true }));
  const bare = await build(t, { dashboardDir: empty });
  const res = await bare.inject({ method: 'GET', url: '/' });
  assert.equal(res.statusCode, 404);
  assert.match((res.json() as { error: { message: string } }).error.message, /npm run build/);
  const none = await build(t, { dashboardDir: false });
  assert.equal((await none.inject({ method: 'GET', url: '/' })).statusCode, 404);
});
