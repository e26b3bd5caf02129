/**
 * The grid-alerts collector through start(ctx) against a live HTTP server on 127.0.0.1
 * serving the four (synthetic, unverified) fixtures, with a controllable clock: every
 * signal must pass the state layer's validation; failures (garbage, HTTP errors, huge and
 * silent bodies, wrong shapes) emit nothing, are logged once per change and counted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { configProblems, gridAlerts, gridAlertsTotals as gridAlertsStats, GridAlertsConfigSchema, type GridAlertsConfig } from './index.js';
import type { CollectorContext, FleetRegion } from '../types.js';
import type { Signal } from '../../gslb/model/types.js';
import { validateSignal } from '../../gslb/state/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { live } from '../../test/helpers/live.js';

type GridAlert = KindValue<'grid.alert'>;

const FIXTURES = fileURLToPath(new URL('../../../collectors/grid-alerts/fixtures/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name, 'utf8');

/** The fixtures' instant: 17:00 CDT, 15:00 PDT, 18:00 EDT, 16:00 MDT. */
const NOW = Date.parse('2025-07-15T22:00:00Z');

/** What a path answers: a body, a status, or a behaviour. */
type Route = { body: string; status?: number; type?: string } | { huge: number } | { declared: number } | { silent: true };
const routes = new Map<string, Route>();
const defaults = (): [string, Route][] => [
  ['/ercot', { body: fixture('ercot-daily-prc.json'), type: 'application/json' }],
  ['/caiso/stats', { body: fixture('caiso-stats.json'), type: 'text/plain' }],
  ['/caiso/notices', { body: fixture('caiso-notices.json'), type: 'application/json' }],
  ['/pjm', { body: fixture('pjm-postings.json'), type: 'application/json' }],
  ['/aeso', { body: fixture('aeso-grid-alerts.rss'), type: 'application/rss+xml' }],
];
let server: http.Server;
let base = '';

before(async () => {
  server = http.createServer((req, res) => {
    const r = routes.get((req.url ?? '').split('?')[0]!);
    if (!r) {
      res.statusCode = 404;
      res.end('not found');
    } else if ('silent' in r) {
      // Never answers; closed in after().
    } else if ('huge' in r) {
      // No content-length: the reader must count.
      res.on('error', () => undefined);
      res.write(Buffer.alloc(r.huge, 0x20));
      res.end();
    } else if ('declared' in r) {
      res.writeHead(200, { 'content-length': String(r.declared) });
      res.write('{');
    } else {
      res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'application/json' });
      res.end(r.body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

interface Harness {
  ctx: CollectorContext<GridAlertsConfig>;
  emitted: Signal[];
  logs: { level: number; msg: string }[];
  abort: AbortController;
  setNow(t: number): void;
  now(): number;
}

function harness(config: GridAlertsConfig, fleet: FleetRegion[]): Harness {
  const emitted: Signal[] = [];
  const logs: { level: number; msg: string }[] = [];
  const abort = new AbortController();
  let clock = NOW;
  const log = pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line) as { level: number; msg: string }) });
  return {
    emitted,
    logs,
    abort,
    setNow: (t) => (clock = t),
    now: () => clock,
    ctx: { config, log, emit: (s) => emitted.push(s), now: () => clock, node: 'test-node', fleet: () => fleet, signal: abort.signal },
  };
}

const configOf = (c: Record<string, unknown>) => Value.Default(GridAlertsConfigSchema, structuredClone(c)) as GridAlertsConfig;

async function until(fn: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${what}: not within ${ms} ms`);
}

const latest = (emitted: Signal[], region: string) => emitted.filter((s) => s.region === region).at(-1) as Signal<GridAlert> | undefined;

test('start(ctx): one valid grid.alert per feed and region from the four fixtures, following now()', async () => {
  for (const [p, r] of defaults()) routes.set(p, r);
  const config = configOf({
    pollMs: 300,
    timeoutMs: 250,
    feeds: [
      { iso: 'ercot', url: `${base}/ercot`, regions: ['us-tx'] },
      { iso: 'caiso', url: `${base}/caiso/stats`, noticesUrl: `${base}/caiso/notices`, regions: ['us-ca', 'us-ca-2'] },
      { iso: 'pjm', url: `${base}/pjm?key=secret`, regions: ['us-va'] },
      { iso: 'aeso', url: `${base}/aeso`, regions: ['ca-ab', 'eu-nowhere'] },
    ],
  });
  assert.ok(Value.Check(GridAlertsConfigSchema, config), 'the config validates');
  const fleet: FleetRegion[] = ['us-tx', 'us-ca', 'us-ca-2', 'us-va', 'ca-ab'].map((id) => ({ id, endpoints: ['192.0.2.1'] }));
  const h = harness(config, fleet);
  const regions = new Set(fleet.map((r) => r.id));
  const signalsBefore = gridAlertsStats.signals;
  const stop = await gridAlerts.start(h.ctx);
  try {
    await until(() => regions.size === new Set(h.emitted.map((s) => s.region)).size, 'a fact for every region');
    for (const s of h.emitted) validateSignal(structuredClone(s), h.now(), regions);
    const want: [string, string, string, GridAlert['type'], number][] = [
      ['us-tx', 'grid-alerts/ercot', 'ERCOT', 'normal', 0],
      ['us-ca', 'grid-alerts/caiso', 'CAISO', 'watch', 0],
      ['us-ca-2', 'grid-alerts/caiso', 'CAISO', 'watch', 0],
      ['us-va', 'grid-alerts/pjm', 'PJM', 'eea', 1],
      ['ca-ab', 'grid-alerts/aeso', 'AESO', 'grid-alert', 2],
    ];
    for (const [region, source, key, type, level] of want) {
      const s = latest(h.emitted, region)!;
      assert.deepEqual([s.kind, s.source, s.key, s.value.zone, s.value.type, s.value.level], ['grid.alert', source, key, key, type, level], region);
      assert.equal(s.observedAt, NOW, `${region}: observedAt = now()`);
      assert.equal(s.expiresAt - s.observedAt, 900, `${region}: expires after 3 × pollMs`);
    }
    assert.ok(!h.emitted.some((s) => s.region === 'eu-nowhere'), 'no fact for a region the fleet does not have');
    assert.ok(gridAlertsStats.signals - signalsBefore >= 5);

    // 16:30 PDT, 19:30 EDT: the Flex Alert and BGE's load management action are in force.
    h.setNow(Date.parse('2025-07-15T23:30:00Z'));
    await until(() => latest(h.emitted, 'us-ca')!.value.type === 'flex-alert' && latest(h.emitted, 'us-va')!.value.level === 2, 'CAISO Flex Alert and PJM EEA 2');
    const ca = latest(h.emitted, 'us-ca')!;
    assert.deepEqual([ca.value.start, ca.value.end], [Date.parse('2025-07-15T16:00:00-07:00'), Date.parse('2025-07-15T21:00:00-07:00')]);
    for (const s of h.emitted) validateSignal(structuredClone(s), h.now(), regions);
    await until(() => h.emitted.filter((s) => s.region === 'us-tx').length >= 3, 'three rounds');
    const msgs = h.logs.map((l) => l.msg);
    assert.equal(msgs.filter((m) => /eu-nowhere, which is not a region of the fleet/.test(m)).length, 1, 'an unknown region is warned about once');
    assert.equal(msgs.filter((m) => /CAISO says flex-alert level 0 \(was watch level 0\)/.test(m)).length, 1, 'a change of fact is logged once');
    assert.equal(msgs.filter((m) => /"Post Contingency Local Load Relief Warning" are not mapped/.test(m)).length, 1, 'a skipped kind is logged once');
    assert.ok(!msgs.some((m) => m.includes('secret')), 'URL queries stay out of the logs');
  } finally {
    h.abort.abort();
    await stop();
  }
  const n = h.emitted.length;
  await new Promise((r) => setTimeout(r, 1100));
  assert.equal(h.emitted.length, n, 'nothing after stop');
});

test('failures emit nothing, are logged once per change and counted; recovery is logged', async () => {
  for (const [p, r] of defaults()) routes.set(p, r);
  // timeoutMs well above the time a loaded 2-core host takes to send 6 MiB on loopback, so the
  // too-large steps fail as too large, not as timeouts.
  const config = configOf({ pollMs: 400, timeoutMs: 400, feeds: [{ iso: 'ercot', url: `${base}/ercot`, regions: ['us-tx'] }] });
  const h = harness(config, [{ id: 'us-tx', endpoints: ['192.0.2.1'] }]);
  const stop = await gridAlerts.start(h.ctx);
  const warns = (code: string) => h.logs.filter((l) => l.level === 40 && l.msg.includes(code)).length;
  const failures = (code: keyof typeof gridAlertsStats.failuresByCode) => gridAlertsStats.failuresByCode[code];
  try {
    await until(() => h.emitted.length >= 1, 'the first fact');
    const steps: [string, Route, keyof typeof gridAlertsStats.failuresByCode, RegExp][] = [
      ['truncated JSON', { body: fixture('ercot-daily-prc.json').slice(0, 100) }, 'GRID_ALERTS_ERR_PARSE', /not JSON/],
      ['HTTP 503', { body: 'busy', status: 503 }, 'GRID_ALERTS_ERR_FETCH', /HTTP 503/],
      ['a 6 MiB body', { huge: 6 * 1024 * 1024 }, 'GRID_ALERTS_ERR_TOO_LARGE', /more than 4194304 bytes/],
      ['a declared 10 MiB body', { declared: 10 * 1024 * 1024 }, 'GRID_ALERTS_ERR_TOO_LARGE', /is 10485760 bytes/],
      ['no answer', { silent: true }, 'GRID_ALERTS_ERR_FETCH', /no complete answer within 400 ms/],
      ['eea_level as a string', { body: fixture('ercot-daily-prc.json').replace('"eea_level": 0', '"eea_level": "2"') }, 'GRID_ALERTS_ERR_SHAPE', /eea_level must be an integer/],
    ];
    let previous = '';
    for (const [what, route, code, why] of steps) {
      routes.set('/ercot', route);
      const w0 = warns(code);
      const f0 = failures(code);
      await until(() => failures(code) >= f0 + 1, `${what}: a failed poll`);
      const n = h.emitted.length;
      await until(() => failures(code) >= f0 + 3, `${what}: two more`);
      assert.equal(h.emitted.length, n, `${what}: nothing emitted`);
      // One warn per change of state (the two TOO_LARGE steps are one state: no second warn).
      assert.equal(warns(code) - w0, code === previous ? 0 : 1, `${what}: logged once`);
      if (code !== previous) {
        const last = h.logs.filter((l) => l.level === 40).at(-1)!;
        assert.match(last.msg, why, what);
        assert.match(last.msg, /^collectors\/grid-alerts: /);
      }
      previous = code;
    }
    routes.set('/ercot', { body: fixture('ercot-daily-prc.json') });
    const n = h.emitted.length;
    await until(() => h.emitted.length >= n + 2, 'facts again');
    assert.equal(h.logs.filter((l) => l.level === 30 && /ercot http:\/\/127\.0\.0\.1:\d+\/ercot reads again/.test(l.msg)).length, 1, 'recovery logged once');
    assert.ok(gridAlertsStats.failures >= 18 && gridAlertsStats.polls >= gridAlertsStats.failures);
  } finally {
    h.abort.abort();
    await stop();
  }
});

test('stop() during a fetch that never answers returns at once and emits nothing', async () => {
  routes.set('/silent', { silent: true });
  // The fetch's own timeout (120 s) is four times the liveness bound below: only an abort ends it in time.
  const h = harness(configOf({ pollMs: 120000, timeoutMs: 120000, feeds: [{ iso: 'pjm', url: `${base}/silent`, regions: ['us-va'] }] }), [{ id: 'us-va', endpoints: [] }]);
  const polls = gridAlertsStats.polls;
  const stop = await gridAlerts.start(h.ctx);
  await new Promise((r) => setTimeout(r, 100));
  await live(stop(), 30_000, 'stop() aborts the fetch in flight');
  assert.equal(h.emitted.length, 0);
  assert.equal(gridAlertsStats.polls, polls, 'a poll cut short by stop() is not counted');
});

test('config: defaults, unknown keys, and what start() refuses', async () => {
  const c = configOf({ feeds: [{ iso: 'aeso', url: 'https://example.invalid/rss', regions: ['ca-ab'] }] });
  assert.deepEqual([c.pollMs, c.timeoutMs, c.alertMaxAgeMs], [60000, 10000, 172800000]);
  assert.ok(Value.Check(GridAlertsConfigSchema, c));
  const bad: [string, Record<string, unknown>][] = [
    ['unknown key', { ...c, extra: 1 }],
    ['unknown feed key', { ...c, feeds: [{ ...c.feeds[0], zone: 'X' }] }],
    ['unknown iso', { ...c, feeds: [{ ...c.feeds[0], iso: 'miso' }] }],
    ['url with credentials', { ...c, feeds: [{ ...c.feeds[0], url: 'https://u:p@example.invalid/' }] }],
    ['no regions', { ...c, feeds: [{ ...c.feeds[0], regions: [] }] }],
    ['a bad region id', { ...c, feeds: [{ ...c.feeds[0], regions: ['CA AB'] }] }],
    ['pollMs too small', { ...c, pollMs: 10 }],
    ['alertMaxAgeMs too small', { ...c, alertMaxAgeMs: 1000 }],
  ];
  for (const [what, v] of bad) assert.ok(!Value.Check(GridAlertsConfigSchema, v), what);

  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['noticesUrl on ercot', { feeds: [{ iso: 'ercot', url: 'http://127.0.0.1:9/', noticesUrl: 'http://127.0.0.1:9/n', regions: ['us-tx'] }] }, /feeds\[0\]\.noticesUrl: only a caiso feed/],
    ['areas on aeso', { feeds: [{ iso: 'aeso', url: 'http://127.0.0.1:9/', areas: ['x'], regions: ['ca-ab'] }] }, /feeds\[0\]\.areas: only a pjm feed/],
    [
      'a region fed twice by one ISO',
      { feeds: [{ iso: 'pjm', url: 'http://127.0.0.1:9/a', regions: ['us-va'] }, { iso: 'pjm', url: 'http://127.0.0.1:9/b', regions: ['us-oh', 'us-va'] }] },
      /feeds\[1\]\.regions: us-va already gets pjm facts from feeds\[0\]/,
    ],
  ];
  for (const [what, v, why] of refused) {
    const cfg = configOf(v);
    assert.equal(configProblems(cfg).length, 1, what);
    const h = harness(cfg, []);
    await assert.rejects(gridAlerts.start(h.ctx), why, what);
  }
  assert.deepEqual(configProblems(configOf({ feeds: [{ iso: 'pjm', url: 'http://127.0.0.1:9/a', regions: ['us-va'] }, { iso: 'aeso', url: 'http://127.0.0.1:9/b', regions: ['us-va'] }] })), [], 'two ISOs may feed one region');
});
