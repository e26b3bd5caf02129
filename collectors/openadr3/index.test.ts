/**
 * The openadr3 collector against a loopback VTN (test-vtn.ts, built from the OpenADR 3.0.1 and
 * 3.1.1 definitions) serving the fixtures: through start(ctx) with the webhook (3.0.1 and 3.1
 * spellings: tokens, target filters, paging, notifications, modification, cancellation), and
 * hostile answers poll by poll (token endpoint down or refusing, 401/403/5xx, truncated and
 * garbage JSON, wrong shapes, 10^6 intervals, a VTN that never answers). Every emitted signal
 * must pass the state layer's validateSignal.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { validateSignal } from '../../gslb/state/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import type { CollectorContext, Signal } from '../types.js';
import { MAX_FACTS, openadr3, openadr3Totals as openadr3Stats, Openadr3ConfigSchema, Openadr3Poller, type Openadr3Config } from './index.js';
import { TestVtn, fixture, notify, type Fault } from './test-vtn.js';

type GridEvent = KindValue<'grid.event'>;

const T = (s: string) => Date.parse(s);
const NOW = T('2031-06-01T12:00:00Z');
const FLEET = ['us-va', 'eu-west', 'ap-tyo', 'ap-sin'];
const REGIONS = new Set(FLEET);

const vtns: TestVtn[] = [];
after(async () => {
  await Promise.all(vtns.map((v) => v.close()));
});

async function vtnOf(version: '3.0.1' | '3.1', programs: string, events: string): Promise<TestVtn> {
  const v = await new TestVtn(version).start();
  vtns.push(v);
  v.programs = fixture<unknown[]>(programs);
  v.events = fixture<unknown[]>(events);
  return v;
}

interface Harness {
  ctx: CollectorContext<Openadr3Config>;
  emitted: Signal<GridEvent>[];
  logs: { level: number; msg: string; [k: string]: unknown }[];
  abort: AbortController;
  setNow(t: number): void;
}

/** A ctx whose emit validates and collects, with a controllable clock and captured logs. */
function harness(config: Record<string, unknown>): Harness {
  const cfg = Value.Default(Openadr3ConfigSchema, structuredClone(config)) as Openadr3Config;
  assert.ok(Value.Check(Openadr3ConfigSchema, cfg), `config: ${[...Value.Errors(Openadr3ConfigSchema, cfg)].map((e) => `${e.path} ${e.message}`).join('; ')}`);
  let clock = NOW;
  const emitted: Signal<GridEvent>[] = [];
  const logs: Harness['logs'] = [];
  const abort = new AbortController();
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as Harness['logs'][number]) });
  return {
    emitted,
    logs,
    abort,
    setNow: (t) => (clock = t),
    ctx: {
      config: cfg,
      log,
      now: () => clock,
      node: 'test-node',
      fleet: () => FLEET.map((id) => ({ id, endpoints: [] })),
      signal: abort.signal,
      emit: (s) => {
        validateSignal(structuredClone(s), clock, REGIONS);
        emitted.push(s as Signal<GridEvent>);
      },
    },
  };
}

async function until(fn: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`${what}: not within ${ms} ms`);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const byKey = (a: Signal, b: Signal) => (a.region + a.key < b.region + b.key ? -1 : 1);
const warns = (h: Harness, re: RegExp) => h.logs.filter((l) => l.level === 40 && re.test(l.msg));
const infos = (h: Harness, re: RegExp) => h.logs.filter((l) => l.level === 30 && re.test(l.msg));
const webhookUrl = (h: Harness, path = '/openadr3/callback') => {
  const l = h.logs.find((x) => /webhook listening/.test(x.msg));
  assert.ok(l, 'the webhook logged where it listens');
  return `http://127.0.0.1:${l.port as number}${path}`;
};

/** 60 untargeted PRICE events: every query pages (limit 50). */
const fillers = () =>
  Array.from({ length: 60 }, (_, i) => ({
    id: `filler-${i}`,
    createdDateTime: '2031-06-01T00:00:00Z',
    modificationDateTime: '2031-06-01T00:00:00Z',
    objectType: 'EVENT',
    programID: 'prog-price',
    targets: null,
    intervalPeriod: { start: '2031-06-01T12:00:00Z', duration: 'PT1H' },
    intervals: [{ id: 0, payloads: [{ type: 'PRICE', values: [0.1 + i / 1000] }] }],
  }));

const REGIONS_301 = [
  { region: 'us-va', targets: [{ type: 'RESOURCE_NAME', values: ['site-a'] }], programs: ['dr-program-a'] },
  { region: 'eu-west', targets: [{ type: 'GROUP', values: ['zone-west'] }] },
];
const CALLBACK_TOKEN = 'callback-token-123';

test('3.0.1 through start(ctx): token, paged and filtered polls, facts; a PUT notification re-polls and re-emits; a DELETE cancels; bad callbacks refused; stop stops', async () => {
  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  vtn.events.push(...fillers());
  const h = harness({
    vtn: { url: vtn.url, clientId: vtn.clientId, clientSecret: vtn.clientSecret, scope: 'read_all' },
    pollMs: 60000,
    timeoutMs: 2000,
    regions: REGIONS_301,
    webhook: { listen: '127.0.0.1:0', bearerToken: CALLBACK_TOKEN },
  });
  const stop = await openadr3.start(h.ctx);
  try {
    await until(() => h.emitted.length >= 4, 'the first poll');
    await sleep(100);
    const source = `openadr3/${new URL(vtn.url).host}`;
    const sig = (region: string, value: GridEvent): Signal<GridEvent> => ({ region, kind: 'grid.event', source, key: value.id, observedAt: NOW, expiresAt: Math.max(value.end, NOW + 180000), value });
    assert.deepEqual([...h.emitted].sort(byKey), [
      sig('eu-west', { id: 'evt-emergency/7', start: T('2031-06-01T11:00:00Z'), end: T('2031-06-02T11:00:00Z'), type: 'grid-emergency', program: 'grid-alerts' }),
      sig('us-va', { id: 'evt-import-limit/0', start: T('2031-06-01T17:00:00Z'), end: T('2031-06-01T18:00:00Z'), type: 'import-capacity-limit', limitW: 1_200_000, priority: 5, program: 'dr-program-a' }),
      sig('us-va', { id: 'evt-import-limit/1', start: T('2031-06-01T18:00:00Z'), end: T('2031-06-01T19:00:00Z'), type: 'import-capacity-limit', limitW: 800_500, priority: 5, program: 'dr-program-a' }),
      sig('us-va', { id: 'evt-simple-3/0', start: T('2031-06-01T18:00:00Z'), end: T('2031-06-01T20:00:00Z'), type: 'simple', level: 3, priority: 1, program: 'dr-program-a' }),
    ]);
    // What was asked: /auth/server (404 on 3.0.1), the token with the credentials in the form body, programs, events by target, paged.
    assert.deepEqual(vtn.requests.slice(0, 2).map((r) => `${r.method} ${r.path}`), ['GET /auth/server', 'POST /auth/token']);
    const form = new URLSearchParams(vtn.requests[1]!.body);
    assert.deepEqual(Object.fromEntries(form), { grant_type: 'client_credentials', scope: 'read_all', client_id: vtn.clientId, client_secret: vtn.clientSecret });
    const evq = vtn.requests.filter((r) => r.path === '/events').map((r) => r.query.toString());
    assert.deepEqual(evq, [
      'targetType=GROUP&targetValues=zone-west&skip=0&limit=50',
      'targetType=GROUP&targetValues=zone-west&skip=50&limit=50',
      'targetType=RESOURCE_NAME&targetValues=site-a&skip=0&limit=50',
      'targetType=RESOURCE_NAME&targetValues=site-a&skip=50&limit=50',
    ]);
    assert.ok(vtn.requests.filter((r) => r.path === '/events').every((r) => r.authorization === 'Bearer tok-1'));
    assert.equal(infos(h, /polling http/).length, 1);

    // Modification: level 3 → 2 with a new modificationDateTime; a 3.0.1 PUT notification.
    const n301 = fixture<{ object: Record<string, unknown> }>('notification-3.0.1.json');
    vtn.events = vtn.events.map((e) => ((e as { id: string }).id === 'evt-simple-3' ? n301.object : e));
    const T1 = NOW + 30_000;
    h.setNow(T1);
    const n0 = h.emitted.length;
    const p0 = openadr3Stats.polls;
    const cb = webhookUrl(h);
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify(n301)), 200);
    await until(() => h.emitted.length > n0, 'the re-emitted event');
    await sleep(150);
    assert.equal(openadr3Stats.polls, p0 + 1, 'one poll per notification');
    assert.equal(h.emitted.length, n0 + 1, 'only the changed fact is emitted again');
    assert.deepEqual(h.emitted.at(-1), {
      ...sig('us-va', { id: 'evt-simple-3/0', start: T('2031-06-01T18:00:00Z'), end: T('2031-06-01T20:00:00Z'), type: 'simple', level: 2, priority: 1, program: 'dr-program-a' }),
      observedAt: T1,
    });
    assert.equal(vtn.tokenCount, 1, 'the token is reused');

    // Deletion: the event disappears; a 3.0.1 DELETE notification → both intervals cancelled.
    const gone = vtn.events.find((e) => (e as { id: string }).id === 'evt-import-limit')!;
    vtn.events = vtn.events.filter((e) => e !== gone);
    const T2 = NOW + 60_000;
    h.setNow(T2);
    const n1 = h.emitted.length;
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify({ objectType: 'EVENT', operation: 'DELETE', object: gone })), 200);
    await until(() => h.emitted.length >= n1 + 2, 'the cancellations');
    await sleep(150);
    assert.deepEqual(h.emitted.slice(n1).sort(byKey), [
      { ...sig('us-va', { id: 'evt-import-limit/0', start: T('2031-06-01T17:00:00Z'), end: T('2031-06-01T18:00:00Z'), type: 'import-capacity-limit', limitW: 1_200_000, priority: 5, program: 'dr-program-a', cancelled: true }), observedAt: T2 },
      { ...sig('us-va', { id: 'evt-import-limit/1', start: T('2031-06-01T18:00:00Z'), end: T('2031-06-01T19:00:00Z'), type: 'import-capacity-limit', limitW: 800_500, priority: 5, program: 'dr-program-a', cancelled: true }), observedAt: T2 },
    ]);

    // Callbacks that are refused, and ones that do not call for a poll.
    const p1 = openadr3Stats.polls;
    const r0 = openadr3Stats.notificationsRefused;
    const body = JSON.stringify(n301);
    assert.equal(await notify(cb, 'wrong-token-xyz', body), 401);
    assert.equal(await notify(cb, null, body), 401);
    assert.equal(await notify(cb, CALLBACK_TOKEN, '{"objectType":"EVENT",'), 400);
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify({ objectType: 'EVENT', operation: 'PATCH', object: {} })), 400);
    assert.equal(await notify(webhookUrl(h, '/elsewhere'), CALLBACK_TOKEN, body), 404);
    assert.equal(await notify(cb, CALLBACK_TOKEN, body, 'DELETE'), 405);
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify({ objectType: 'EVENT', operation: 'GET', object: {} })), 200);
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify({ objectType: 'REPORT', operation: 'POST', object: {} })), 200);
    await sleep(400);
    assert.equal(openadr3Stats.polls, p1, 'no poll for refused or read-only notifications');
    assert.equal(openadr3Stats.notificationsRefused, r0 + 6);
    assert.equal(warns(h, /webhook: refused a request: no or wrong bearer token/).length, 1, 'a run of the same refusal is logged once');
  } finally {
    h.abort.abort();
    await stop();
  }
  const n = h.emitted.length;
  await assert.rejects(notify(webhookUrl(h), CALLBACK_TOKEN, '{}'), /ECONNREFUSED/, 'the listener is closed');
  await sleep(200);
  assert.equal(h.emitted.length, n, 'nothing after stop');
});

test('3.1 through start(ctx): token endpoint from /auth/server, HTTP Basic credentials, string targets; CREATE and DELETE notifications', async () => {
  const vtn = await vtnOf('3.1', 'programs-3.1.json', 'events-3.1.json');
  const h = harness({
    vtn: { url: vtn.url, clientId: vtn.clientId, clientSecret: vtn.clientSecret, clientAuth: 'basic', version: '3.1' },
    pollMs: 60000,
    timeoutMs: 2000,
    regions: [
      { region: 'ap-tyo', targets: ['site-b'] },
      { region: 'ap-sin', targets: ['zone-east'], programs: ['alerts-east'] },
    ],
    webhook: { listen: '127.0.0.1:0', path: '/vtn/notify', bearerToken: CALLBACK_TOKEN },
  });
  const stop = await openadr3.start(h.ctx);
  try {
    await until(() => h.emitted.length >= 6, 'the first poll');
    await sleep(100);
    const got = [...h.emitted].sort(byKey).map((s) => [s.region, s.key, s.value.type, s.value.level ?? s.value.limitW ?? null, new Date(s.value.start).toISOString().slice(11, 16), new Date(s.value.end).toISOString().slice(11, 16)]);
    assert.deepEqual(got, [
      ['ap-sin', 'evt31-emergency/0', 'grid-emergency', null, '11:45', '11:45'],
      ['ap-tyo', 'evt31-dispatch/0', 'dispatch-setpoint', 2_500_000, '12:00', '12:15'],
      ['ap-tyo', 'evt31-limit/1', 'import-capacity-limit', 450_000, '13:00', '13:45'],
      ['ap-tyo', 'evt31-simple/10', 'simple', 1, '13:00', '13:30'],
      ['ap-tyo', 'evt31-simple/11', 'simple', 2, '13:30', '14:00'],
      ['ap-tyo', 'evt31-simple/12', 'simple', 3, '14:00', '14:30'],
    ]);
    assert.deepEqual(vtn.requests.slice(0, 2).map((r) => `${r.method} ${r.path}`), ['GET /auth/server', 'POST /auth/token'], 'the token endpoint named by /auth/server');
    const tokenReq = vtn.requests[1]!;
    assert.equal(tokenReq.authorization, `Basic ${Buffer.from(`${vtn.clientId}:${vtn.clientSecret}`).toString('base64')}`);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(tokenReq.body)), { grant_type: 'client_credentials' }, 'basic: no credentials in the body');
    assert.deepEqual(
      vtn.requests.filter((r) => r.path === '/events').map((r) => r.query.toString()),
      ['targets=site-b&skip=0&limit=50', 'targets=zone-east&skip=0&limit=50'],
    );

    // A 3.1 CREATE notification for a new event.
    const n31 = fixture<{ object: Record<string, unknown> }>('notification-3.1.json');
    vtn.events.push(n31.object);
    h.setNow(NOW + 60_000);
    const n0 = h.emitted.length;
    const cb = webhookUrl(h, '/vtn/notify');
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify(n31), 'PUT'), 200);
    await until(() => h.emitted.length > n0, 'the new event');
    await sleep(100);
    assert.deepEqual(
      h.emitted.slice(n0).map((s) => [s.region, s.key, s.value.level, s.observedAt]),
      [['ap-tyo', 'evt31-new/0', 3, NOW + 60_000]],
    );

    // A 3.1 DELETE of the three-step event: its three intervals are cancelled.
    vtn.events = vtn.events.filter((e) => (e as { id: string }).id !== 'evt31-simple');
    const n1 = h.emitted.length;
    assert.equal(await notify(cb, CALLBACK_TOKEN, JSON.stringify({ objectType: 'EVENT', operation: 'DELETE', object: { id: 'evt31-simple', programID: 'p31-flex' } })), 200);
    await until(() => h.emitted.length >= n1 + 3, 'the cancellations');
    assert.deepEqual(
      h.emitted.slice(n1).map((s) => [s.key, s.value.cancelled]).sort(),
      [
        ['evt31-simple/10', true],
        ['evt31-simple/11', true],
        ['evt31-simple/12', true],
      ],
    );
  } finally {
    h.abort.abort();
    await stop();
  }
});

/** A poller (no timer) for one hostile case at a time. */
function pollerFor(vtn: TestVtn, extra: Record<string, unknown> = {}): { h: Harness; p: Openadr3Poller; poll: () => Promise<boolean> } {
  const h = harness({ vtn: { url: vtn.url, clientId: vtn.clientId, clientSecret: vtn.clientSecret }, pollMs: 1000, timeoutMs: 300, regions: REGIONS_301, ...extra });
  const p = new Openadr3Poller(h.ctx);
  return { h, p, poll: () => p.pollOnce(h.abort.signal) };
}

const answer = (status: number, body: string | Buffer, type = 'application/json') => (res: http.ServerResponse) => {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
};
const on = (path: string, f: (res: http.ServerResponse, req: http.IncomingMessage) => void): Fault => (route, req, res) => {
  if (route !== path) return false;
  f(res, req);
  return true;
};

/** Streams one event with 10^6 intervals (≈ 50 MB), respecting backpressure, until the client hangs up. */
const huge = (res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Array.from({ length: 1000 }, (_, i) => `{"id":${i},"payloads":[{"type":"SIMPLE","values":[1]}]}`).join(',');
  void (async () => {
    res.write('[{"id":"huge","programID":"prog-dr-a","intervalPeriod":{"start":"2031-06-01T18:00:00Z","duration":"PT1M"},"intervals":[');
    for (let i = 0; i < 1000 && !res.destroyed; i++) {
      if (!res.write(i === 0 ? chunk : `,${chunk}`)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            res.off('drain', go);
            res.off('close', go);
            resolve();
          };
          res.on('drain', go);
          res.on('close', go);
        });
      }
    }
    if (!res.destroyed) res.end(']}]');
  })().catch(() => undefined);
};

test('hostile answers: each fails the poll with its code, emits nothing, and is logged once', async () => {
  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  const eventsJson = JSON.stringify(vtn.events);
  const cases: [string, Fault, RegExp, Record<string, unknown>?][] = [
    ['token endpoint 500', on('/auth/token', answer(500, '{"title":"boom","status":500}')), /OADR3_ERR_TOKEN.*answered 500/],
    ['token endpoint 401 invalid_client', on('/auth/token', answer(401, '{"error":"invalid_client"}')), /OADR3_ERR_TOKEN.*401 \(invalid_client\)/],
    ['token endpoint garbage', on('/auth/token', answer(200, '<html>login</html>', 'text/html')), /OADR3_ERR_TOKEN.*not JSON/],
    ['token without access_token', on('/auth/token', answer(200, '{"token_type":"Bearer"}')), /OADR3_ERR_TOKEN.*access_token/],
    ['token_type not Bearer', on('/auth/token', answer(200, '{"access_token":"abc","token_type":"mac"}')), /OADR3_ERR_TOKEN.*not Bearer/],
    ['access_token with a line break', on('/auth/token', answer(200, '{"access_token":"abc\\r\\nx-evil: 1","token_type":"Bearer"}')), /OADR3_ERR_TOKEN/],
    ['token endpoint down', () => false, /OADR3_ERR_NETWORK.*ECONNREFUSED/, { tokenUrl: 'http://127.0.0.1:9/auth/token' }],
    ['/programs 503', on('/programs', answer(503, '{"title":"unavailable"}')), /OADR3_ERR_STATUS.*\/programs: status 503/],
    ['/events 500', on('/events', answer(500, '{"title":"boom"}')), /OADR3_ERR_STATUS.*\/events: status 500/],
    ['/events 403', on('/events', answer(403, '{"title":"forbidden"}')), /OADR3_ERR_AUTH.*403/],
    ['/events always 401', on('/events', answer(401, '{"title":"no"}')), /OADR3_ERR_AUTH.*401/],
    ['/events truncated JSON', on('/events', answer(200, eventsJson.slice(0, Math.floor(eventsJson.length / 2)))), /OADR3_ERR_JSON/],
    ['/events garbage', on('/events', answer(200, '\u0000\u0001garbage')), /OADR3_ERR_JSON/],
    [
      '/events cut mid-body',
      on('/events', (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': eventsJson.length });
        res.write(eventsJson.slice(0, 100));
        setTimeout(() => res.destroy(), 20);
      }),
      /OADR3_ERR_NETWORK.*cut short|OADR3_ERR_NETWORK/,
    ],
    ['/events an object', on('/events', answer(200, '{"events":[]}')), /OADR3_ERR_SHAPE.*not a JSON array/],
    ['/events an array of strings', on('/events', answer(200, '["evt-1","evt-2"]')), /OADR3_ERR_SHAPE.*not a JSON object/],
    ['/events 10^6 intervals (≈ 50 MB)', on('/events', huge), /OADR3_ERR_TOO_LARGE.*larger than 4194304 bytes/],
    ['/events never answers', on('/events', () => undefined), /OADR3_ERR_TIMEOUT.*within 300 ms/],
  ];
  for (const [what, fault, want, vtnExtra] of cases) {
    vtn.fault = fault;
    const tokens0 = vtn.tokenCount;
    const { h, poll } = pollerFor(vtn, vtnExtra ? { vtn: { url: vtn.url, clientId: vtn.clientId, clientSecret: vtn.clientSecret, ...vtnExtra } } : {});
    const f0 = openadr3Stats.pollFailures;
    // Bounded by what each failure names (a 300 ms deadline, a 4 MiB cap, a refused shape), not timed.
    assert.equal(await poll(), false, what);
    assert.equal(await poll(), false, what);
    assert.equal(h.emitted.length, 0, `${what}: nothing emitted`);
    assert.equal(openadr3Stats.pollFailures, f0 + 2, `${what}: counted`);
    const w = h.logs.filter((l) => l.level === 40);
    assert.equal(w.length, 1, `${what}: logged once: ${JSON.stringify(w.map((l) => l.msg))}`);
    assert.match(`${w[0]!.code as string} ${w[0]!.msg}`, want, what);
    if (what === '/events always 401') assert.equal(vtn.tokenCount - tokens0, 3, 'one fresh token per 401, once per poll (1 + 1 + 1)');
  }
  vtn.fault = null;
});

test('state changes: failing → ok → failing logged once each; failed polls neither emit nor cancel; 401 refreshes the token once; tokens are cached until shortly before expiry', async () => {
  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  vtn.expiresIn = 120;
  const { h, poll } = pollerFor(vtn);
  assert.equal(await poll(), true);
  assert.equal(h.emitted.length, 4);
  assert.equal(vtn.tokenCount, 1);
  // The same answer again: nothing new to say.
  assert.equal(await poll(), true);
  assert.equal(h.emitted.length, 4, 'unchanged facts are not emitted again');
  assert.equal(vtn.tokenCount, 1, 'token cached');
  // A VTN that forgot its tokens: 401 → one fresh token → the poll succeeds, nothing logged.
  vtn.revokeTokens();
  assert.equal(await poll(), true);
  assert.equal(vtn.tokenCount, 2);
  // Refreshed shortly before expires_in (120 s − 12 s).
  h.setNow(NOW + 107_000);
  assert.equal(await poll(), true);
  assert.equal(vtn.tokenCount, 2);
  h.setNow(NOW + 109_000);
  assert.equal(await poll(), true);
  assert.equal(vtn.tokenCount, 3);
  assert.equal(h.logs.filter((l) => l.level === 40).length, 0, 'no warnings so far');

  // The VTN fails three times while the event is deleted: nothing emitted, nothing cancelled.
  vtn.events = vtn.events.filter((e) => (e as { id: string }).id !== 'evt-simple-3');
  vtn.fault = on('/events', answer(500, '{}'));
  for (let i = 0; i < 3; i++) assert.equal(await poll(), false);
  assert.equal(h.emitted.length, 4);
  assert.equal(warns(h, /status 500/).length, 1, 'failing logged once');
  // Back: the deletion is now seen and cancelled; the recovery logged once.
  vtn.fault = null;
  h.setNow(NOW + 120_000);
  assert.equal(await poll(), true);
  assert.equal(await poll(), true);
  assert.equal(infos(h, /answers again/).length, 1);
  assert.deepEqual(
    h.emitted.slice(4).map((s) => [s.key, s.value.cancelled, s.observedAt]),
    [['evt-simple-3/0', true, NOW + 120_000]],
  );
  // Another failure kind is a new state: logged again, once.
  vtn.fault = on('/programs', answer(200, 'nope'));
  assert.equal(await poll(), false);
  assert.equal(await poll(), false);
  assert.equal(warns(h, /OADR3_ERR_JSON|not valid JSON/).length, 1);
  vtn.fault = null;
});

test('bounds: an event with 10^6 intervals within 4 MiB is read only in part; maxEvents truncates without cancelling; a malformed modification keeps the earlier fact', async () => {
  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  // 10^6 intervals that fit in 4 MiB (`0,` each): only maxIntervalsPerEvent are looked at.
  const intervals = `[${new Array(1_000_000).fill('0').join(',')}]`;
  const eventsJson = JSON.stringify(vtn.events);
  const big = `[{"id":"evt-big","programID":"prog-dr-a","targets":[{"type":"RESOURCE_NAME","values":["site-a"]}],"intervals":${intervals}},${eventsJson.slice(1)}`;
  assert.ok(big.length < 4 * 1024 * 1024 && big.length > 2_000_000);
  vtn.fault = (route, req, res) => {
    if (route !== '/events' || new URL(req.url!, 'http://x').searchParams.get('skip') !== '0') return false;
    answer(200, big)(res);
    return true;
  };
  const { h, poll } = pollerFor(vtn, { maxIntervalsPerEvent: 100 });
  // That only maxIntervalsPerEvent intervals are looked at is counted in parse.test.ts (readEvent
  // over a counting Proxy); here, what the poller makes of it.
  assert.equal(await poll(), true);
  assert.equal(h.emitted.length, 4, 'the other events still count');
  assert.equal(warns(h, /evt-big: 1000000 intervals; only the first 100 are read/).length, 1);
  assert.equal(await poll(), true);
  assert.equal(warns(h, /evt-big: 1000000 intervals/).length, 1, 'a problem is logged once while it lasts');
  vtn.fault = null;

  // A modification that cannot be read: the earlier fact stays (not cancelled, not changed).
  const bad = structuredClone(vtn.events.find((e) => (e as { id: string }).id === 'evt-simple-3')) as { intervals: { payloads: { values: unknown[] }[] }[] };
  bad.intervals[0]!.payloads[0]!.values = [9];
  vtn.events = vtn.events.map((e) => ((e as { id: string }).id === 'evt-simple-3' ? bad : e));
  const n0 = h.emitted.length;
  assert.equal(await poll(), true);
  assert.equal(h.emitted.length, n0, 'no cancellation for an event that could not be read');
  assert.equal(warns(h, /evt-simple-3: interval 0: SIMPLE value 9/).length, 1);

  // maxEvents: more events than that → truncated, no cancellations inferred, warned once.
  const t = pollerFor(vtn, { maxEvents: 2 });
  assert.equal(await t.poll(), true);
  const before = t.h.emitted.length;
  vtn.events = [];
  vtn.fault = (route, _req, res) => {
    if (route !== '/events') return false;
    answer(200, JSON.stringify(Array.from({ length: 3 }, (_, i) => ({ id: `x${i}`, programID: 'prog-price', intervals: [] }))))(res);
    return true;
  };
  assert.equal(await t.poll(), true);
  assert.equal(t.h.emitted.length, before, 'nothing cancelled from a truncated view');
  assert.equal(warns(t.h, /more than maxEvents/).length, 1);
  vtn.fault = null;
});

test('config: the schema refuses unknown keys and bad values; a missing secret stops start; clientSecretFile is read', async () => {
  const base = { vtn: { url: 'https://vtn.example.com/openadr3/3.0.1', clientId: 'c', clientSecret: 's' }, regions: [{ region: 'us-va' }] };
  const ok = Value.Default(Openadr3ConfigSchema, structuredClone(base)) as Openadr3Config;
  assert.ok(Value.Check(Openadr3ConfigSchema, ok));
  assert.equal(ok.pollMs, 30000);
  assert.equal(ok.vtn.clientAuth, 'body');
  assert.equal(ok.vtn.version, '3.0.1');
  const bad: [string, Record<string, unknown>][] = [
    ['unknown key', { ...base, colour: 'red' }],
    ['unknown vtn key', { ...base, vtn: { ...base.vtn, pasword: 'x' } }],
    ['pollMs below 1000', { ...base, pollMs: 500 }],
    ['url not http(s)', { ...base, vtn: { ...base.vtn, url: 'ftp://vtn' } }],
    ['url with user:password@', { ...base, vtn: { ...base.vtn, url: 'https://u:p@vtn/x' } }],
    ['bad region id', { ...base, regions: [{ region: 'US VA' }] }],
    ['no regions', { ...base, regions: [] }],
    ['targets of neither spelling', { ...base, regions: [{ region: 'us-va', targets: [{ type: 'GROUP' }] }] }],
    ['webhook without bearerToken', { ...base, webhook: { listen: '127.0.0.1:8080' } }],
    ['webhook listen without port', { ...base, webhook: { listen: '127.0.0.1', bearerToken: 'abcdefgh' } }],
    ['unitsWhenMissing KWH', { ...base, unitsWhenMissing: 'KWH' }],
  ];
  for (const [what, c] of bad) assert.ok(!Value.Check(Openadr3ConfigSchema, Value.Default(Openadr3ConfigSchema, structuredClone(c))), what);

  const h = harness({ vtn: { url: 'http://127.0.0.1:9', clientId: 'c' }, regions: [{ region: 'us-va' }] });
  await assert.rejects(openadr3.start(h.ctx), /collectors\/openadr3: vtn: set clientSecret or clientSecretFile/);

  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  const dir = mkdtempSync(join(tmpdir(), 'openadr3-'));
  try {
    writeFileSync(join(dir, 'secret'), `${vtn.clientSecret}\n`);
    const f = harness({ vtn: { url: vtn.url, clientId: vtn.clientId, clientSecretFile: join(dir, 'secret') }, timeoutMs: 1000, regions: REGIONS_301 });
    assert.equal(await new Openadr3Poller(f.ctx).pollOnce(f.abort.signal), true);
    assert.equal(f.emitted.length, 4);
    const missing = harness({ vtn: { url: vtn.url, clientId: vtn.clientId, clientSecretFile: join(dir, 'nope') }, timeoutMs: 1000, regions: REGIONS_301 });
    assert.equal(await new Openadr3Poller(missing.ctx).pollOnce(missing.abort.signal), false);
    assert.match(warns(missing, /clientSecretFile/)[0]?.msg ?? '', /OADR3_ERR_CONFIG|clientSecretFile .*nope/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bounds: at most MAX_FACTS facts from one poll, then the poll counts as truncated', async () => {
  const vtn = await vtnOf('3.0.1', 'programs-3.0.1.json', 'events-3.0.1.json');
  vtn.events = Array.from({ length: 25 }, (_, e) => ({
    id: `many-${e}`,
    programID: 'prog-dr-a',
    targets: [{ type: 'RESOURCE_NAME', values: ['site-a'] }],
    intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: 'PT1M' },
    intervals: Array.from({ length: 500 }, (_, i) => ({ id: i, payloads: [{ type: 'SIMPLE', values: [1] }] })),
  }));
  const { h, poll } = pollerFor(vtn, { timeoutMs: 2000 });
  assert.equal(await poll(), true);
  assert.equal(h.emitted.length, MAX_FACTS);
  assert.equal(warns(h, /more than 10000 facts/).length, 1);
});
