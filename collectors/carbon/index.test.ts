/**
 * The carbon collector against a live peer on loopback: one HTTP server on 127.0.0.1 (port 0)
 * implementing both APIs under path prefixes — Electricity Maps `/em/v3/carbon-intensity/latest`
 * (auth-token header) and WattTime `/wt/login` (basic auth → token) and `/wt/v3/signal-index`
 * (bearer; 401 once its tokens are revoked) — serving the fixtures with their times moved to
 * the test's clock, and misbehaving on demand (statuses, redirects, garbage, huge bodies,
 * hangs, resets, hostile values). Every emitted signal must pass the state layer's validation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { carbon, carbonTotals as carbonStats, CarbonConfigSchema, CarbonPoller, planConfig, readSecret, SOURCE_ELECTRICITY_MAPS, SOURCE_WATTTIME, type CarbonConfig } from './index.js';
import { CarbonError } from './parse.js';
import type { CollectorContext, FleetRegion } from '../types.js';
import type { Signal } from '../../gslb/model/types.js';
import { validateSignal } from '../../gslb/state/signals.js';
import { live } from '../../test/helpers/live.js';

const FIXTURES = fileURLToPath(new URL('../../../collectors/carbon/fixtures/', import.meta.url));
const EM_FIXTURE = JSON.parse(readFileSync(FIXTURES + 'electricitymaps-latest.json', 'utf8')) as Record<string, unknown>;
const WT_FIXTURE = JSON.parse(readFileSync(FIXTURES + 'watttime-signal-index.json', 'utf8')) as { data: Record<string, unknown>[]; meta: Record<string, unknown> };

const EM_TOKEN = 'em-secret-token';
const WT_USER = 'gridsteer';
const WT_PASSWORD = 'correct horse battery staple';

/** The test's clock: ctx.now() and the times the peer serves. */
const clock = Date.parse('2026-03-04T21:20:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

type Behaviour = 'ok' | 'status:500' | 'status:429' | 'status:403' | 'redirect' | 'garbage' | 'huge' | 'huge-chunked' | 'hang' | 'reset' | 'negative' | 'string' | 'stale' | 'future';

/** The peer: what it serves and what it saw. */
const peer = {
  port: 0,
  hits: [] as { path: string; headers: http.IncomingHttpHeaders }[],
  em: new Map<string, Behaviour>(),
  emValue: new Map<string, number>(),
  wt: new Map<string, Behaviour>(),
  wtValue: new Map<string, number>(),
  password: WT_PASSWORD,
  tokens: new Set<string>(),
  tokenSerial: 0,
  logins: 0,
  /** Refuse every bearer token, fresh ones too. */
  rejectBearer: false,
  /** Login answers this instead of a token. */
  loginBody: null as string | null,
};

const sockets = new Set<net.Socket>();
let server: http.Server;
let dir: string;

/** Answers as `b` says: the good body (maybe with hostile values) or a misbehaviour. */
function misbehave(b: Behaviour, res: http.ServerResponse, good: () => unknown): void {
  switch (b) {
    case 'status:500':
    case 'status:429':
    case 'status:403':
      res.statusCode = Number(b.slice(7));
      res.end('{"error":"nope"}');
      return;
    case 'redirect':
      res.statusCode = 302;
      res.setHeader('location', `http://127.0.0.1:${peer.port}/steal`);
      res.end();
      return;
    case 'garbage':
      res.setHeader('content-type', 'application/json');
      res.end('{"carbonIntensity": 3');
      return;
    case 'huge': {
      const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
      res.setHeader('content-length', body.length);
      res.end(body);
      return;
    }
    case 'huge-chunked': {
      // No content-length: the reader must stop at 4 MiB by itself.
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      let sent = 0;
      const more = () => {
        while (sent < 40 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
      return;
    }
    case 'hang':
      return; // never answers; the socket is destroyed in after()
    case 'reset':
      res.socket?.destroy();
      return;
    default: {
      const body = good() as Record<string, unknown>;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body));
    }
  }
}

function emBody(zone: string, b: Behaviour): Record<string, unknown> {
  const v = peer.emValue.get(zone) ?? 302;
  const base = { ...EM_FIXTURE, zone, carbonIntensity: v, datetime: iso(clock - 20 * 60_000), updatedAt: iso(clock - 5 * 60_000) };
  if (b === 'negative') return { ...base, carbonIntensity: -5 };
  if (b === 'string') return { ...base, carbonIntensity: String(v) };
  if (b === 'stale') return { ...base, datetime: iso(clock - 26 * 3600_000) };
  if (b === 'future') return { ...base, datetime: iso(clock + 3600_000) };
  return base;
}

function wtBody(ba: string, b: Behaviour): Record<string, unknown> {
  const v = peer.wtValue.get(ba) ?? 63;
  const point = { point_time: iso(clock - 2 * 60_000), value: v };
  if (b === 'negative') point.value = -1;
  const body = { data: [point], meta: { ...WT_FIXTURE.meta, region: ba, generated_at: iso(clock) } } as Record<string, unknown>;
  if (b === 'string') (body.data as Record<string, unknown>[])[0]!.value = String(v);
  return body;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gridsteer-carbon-'));
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    peer.hits.push({ path: u.pathname + u.search, headers: req.headers });
    const json = (status: number, body: unknown) => {
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body));
    };
    if (u.pathname === '/em/v3/carbon-intensity/latest') {
      if (req.headers['auth-token'] !== EM_TOKEN) return json(401, { error: 'Invalid auth-token' });
      const zone = u.searchParams.get('zone') ?? '';
      const b = peer.em.get(zone);
      if (b === undefined) return json(404, { error: `Zone '${zone}' does not exist` });
      misbehave(b, res, () => emBody(zone, b));
      return;
    }
    if (u.pathname === '/wt/login') {
      const want = 'Basic ' + Buffer.from(`${WT_USER}:${peer.password}`).toString('base64');
      peer.logins++;
      if (req.headers.authorization !== want) return json(401, { error: 'Unauthorized' });
      if (peer.loginBody !== null) return void res.end(peer.loginBody);
      const token = `tok-${++peer.tokenSerial}`;
      peer.tokens.add(token);
      return json(200, { token });
    }
    if (u.pathname === '/wt/v3/signal-index') {
      const auth = req.headers.authorization ?? '';
      const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
      if (peer.rejectBearer || !peer.tokens.has(token)) return json(401, { error: 'Unauthorized' });
      if (u.searchParams.get('signal_type') !== 'co2_moer') return json(400, { error: 'signal_type' });
      const ba = u.searchParams.get('region') ?? '';
      const b = peer.wt.get(ba);
      if (b === undefined) return json(403, { error: 'no access to this region' });
      misbehave(b, res, () => wtBody(ba, b));
      return;
    }
    json(404, { error: 'not found' });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  peer.port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
});

after(async () => {
  for (const s of sockets) s.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** Resets what the peer serves (each test starts from a known peer). */
function resetPeer(): void {
  peer.hits.length = 0;
  peer.em.clear();
  peer.emValue.clear();
  peer.wt.clear();
  peer.wtValue.clear();
  peer.password = WT_PASSWORD;
  peer.tokens.clear();
  peer.logins = 0;
  peer.rejectBearer = false;
  peer.loginBody = null;
}

interface Harness {
  ctx: CollectorContext<CarbonConfig>;
  emitted: Signal[];
  logs: { level: number; msg: string; code?: string }[];
  abort: AbortController;
}

const FLEET: FleetRegion[] = [
  { id: 'us-ca', endpoints: ['192.0.2.1'] },
  { id: 'eu-de', endpoints: ['192.0.2.2'] },
  { id: 'eu-de2', endpoints: ['192.0.2.3'] },
  { id: 'eu-fr', endpoints: ['192.0.2.4'] },
];
const REGIONS = new Set(FLEET.map((r) => r.id));

/** The logs of the newest harness, printed by until() on a timeout when CARBON_DEBUG is set. */
let lastLogs: unknown[] = [];

function harness(config: CarbonConfig, fleet: FleetRegion[] = FLEET): Harness {
  const emitted: Signal[] = [];
  const logs: Harness['logs'] = [];
  lastLogs = logs;
  const abort = new AbortController();
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as Harness['logs'][number]) }).child({ module: 'collectors/carbon' });
  return { emitted, logs, abort, ctx: { config, log, emit: (s) => emitted.push(s), now: () => clock, node: 'test-node', fleet: () => fleet, signal: abort.signal } };
}

function config(over: Record<string, unknown> = {}): CarbonConfig {
  return Value.Default(CarbonConfigSchema, {
    pollMs: 1000,
    timeoutMs: 400,
    electricityMaps: { url: `http://127.0.0.1:${peer.port}/em/`, tokenFile: join(dir, 'em-token') },
    wattTime: { url: `http://127.0.0.1:${peer.port}/wt`, username: WT_USER, passwordFile: join(dir, 'wt-password') },
    regions: [
      { region: 'us-ca', wattTimeRegion: 'CAISO_NORTH', electricityMapsZone: 'US-CAL-CISO' },
      { region: 'eu-de', electricityMapsZone: 'DE' },
      { region: 'eu-de2', electricityMapsZone: 'DE' },
      { region: 'eu-fr', electricityMapsZone: 'FR' },
      { region: 'ap-gone', wattTimeRegion: 'PJM_DC' },
    ],
    ...over,
  }) as CarbonConfig;
}

async function until(fn: () => boolean, what: string, ms = 5000): Promise<void> {
  for (let t = 0; t < ms; t += 25) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  if (process.env.CARBON_DEBUG) console.error(JSON.stringify(lastLogs, null, 1));
  assert.fail(`${what}: not within ${ms} ms`);
}

const validAll = (signals: Signal[]) => {
  for (const s of signals) validateSignal(structuredClone(s), clock, REGIONS);
};
const warns = (h: Harness, re: RegExp) => h.logs.filter((l) => l.level === 40 && re.test(l.msg));
const infos = (h: Harness, re: RegExp) => h.logs.filter((l) => l.level === 30 && re.test(l.msg));

test('config: schema defaults, strictness, and what start refuses', async () => {
  const d = Value.Default(CarbonConfigSchema, { electricityMaps: { token: 't' }, wattTime: { username: 'u', password: 'p' }, regions: [{ region: 'a', electricityMapsZone: 'DE' }] }) as CarbonConfig;
  assert.equal(d.pollMs, 300000);
  assert.equal(d.timeoutMs, 10000);
  assert.equal(d.electricityMaps!.url, 'https://api.electricitymap.org');
  assert.equal(d.wattTime!.url, 'https://api.watttime.org');
  assert.ok(Value.Check(CarbonConfigSchema, d));
  const checks: [string, unknown, boolean][] = [
    ['unknown top-level key', { ...d, colour: 1 }, false],
    ['unknown provider key', { ...d, electricityMaps: { ...d.electricityMaps, apiKey: 'x' } }, false],
    ['pollMs below 1000', { ...d, pollMs: 999 }, false],
    ['no regions', { ...d, regions: [] }, false],
    ['bad region id', { ...d, regions: [{ region: 'EU_DE', electricityMapsZone: 'DE' }] }, false],
    ['url with credentials', { ...d, electricityMaps: { ...d.electricityMaps, url: 'https://u:p@api.electricitymap.org' } }, false],
    ['url not http', { ...d, electricityMaps: { ...d.electricityMaps, url: 'ftp://x' } }, false],
    ['url with a query', { ...d, wattTime: { ...d.wattTime, url: 'https://api.watttime.org/?a=1' } }, false],
    ['username with a colon', { ...d, wattTime: { ...d.wattTime, username: 'a:b' } }, false],
  ];
  for (const [what, c, ok] of checks) assert.equal(Value.Check(CarbonConfigSchema, c), ok, what);

  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['token and tokenFile', { electricityMaps: { token: 't', tokenFile: '/x' }, regions: [{ region: 'a', electricityMapsZone: 'DE' }] }, /exactly one of token and tokenFile/],
    ['neither token nor tokenFile', { electricityMaps: {}, regions: [{ region: 'a', electricityMapsZone: 'DE' }] }, /exactly one of token and tokenFile/],
    ['password and passwordFile', { wattTime: { username: 'u', password: 'p', passwordFile: '/x' }, regions: [{ region: 'a', wattTimeRegion: 'X' }] }, /exactly one of password and passwordFile/],
    ['a zone without its provider', { regions: [{ region: 'a', electricityMapsZone: 'DE' }] }, /regions\[0\] \(a\) has electricityMapsZone but there is no electricityMaps section/],
    ['a WattTime region without its provider', { electricityMaps: { token: 't' }, regions: [{ region: 'a', wattTimeRegion: 'X' }] }, /no wattTime section/],
    ['a region without codes', { electricityMaps: { token: 't' }, regions: [{ region: 'a' }] }, /give electricityMapsZone, wattTimeRegion or both/],
    ['a region twice', { electricityMaps: { token: 't' }, regions: [{ region: 'a', electricityMapsZone: 'DE' }, { region: 'a', electricityMapsZone: 'FR' }] }, /regions\[1\]: a is listed twice/],
    ['a token with a line break', { electricityMaps: { token: 'a\nb' }, regions: [{ region: 'a', electricityMapsZone: 'DE' }] }, /cannot carry/],
  ];
  for (const [what, c, msg] of refused) {
    const cfg = Value.Default(CarbonConfigSchema, c) as CarbonConfig;
    assert.throws(
      () => planConfig(cfg),
      (e: unknown) => e instanceof CarbonError && e.code === 'CARBON_ERR_CONFIG' && /^collectors\/carbon: /.test(e.message) && msg.test(e.message),
      what,
    );
  }
  const p = planConfig(Value.Default(CarbonConfigSchema, { electricityMaps: { token: 't', url: 'http://10.0.0.1:8080' }, regions: [{ region: 'a', electricityMapsZone: 'DE' }] }) as CarbonConfig);
  assert.match(p.warnings.join('\n'), /plain http to 10\.0\.0\.1:8080: the credentials travel unencrypted/);

  // A secret file that is missing, empty or not header-safe is refused at start.
  writeFileSync(join(dir, 'empty'), '\n');
  writeFileSync(join(dir, 'spacey'), 'a b\n');
  writeFileSync(join(dir, 'big'), 'a'.repeat(64 * 1024 + 1));
  for (const [file, msg] of [
    ['missing', /cannot be read \(ENOENT\)/],
    ['empty', /is empty/],
    ['spacey', /cannot carry/],
    ['big', /larger than 65536 bytes/],
  ] as const) {
    await assert.rejects(readSecret(join(dir, file), 'electricityMaps.tokenFile', true), (e: unknown) => e instanceof CarbonError && e.code === 'CARBON_ERR_SECRET' && msg.test(e.message), file);
  }
  writeFileSync(join(dir, 'spacey-pw'), '  pass word  \n');
  assert.equal(await readSecret(join(dir, 'spacey-pw'), 'wattTime.passwordFile', false), 'pass word');
  const h = harness(config({ electricityMaps: { url: `http://127.0.0.1:${peer.port}/em`, tokenFile: join(dir, 'missing') } }));
  await assert.rejects(carbon.start(h.ctx), /collectors\/carbon: electricityMaps\.tokenFile .*missing cannot be read/);
  assert.equal(peer.hits.length, 0, 'a refused start sends nothing');
});

test('start(ctx): both providers polled, one fact per provider and region, token kept, 401 → one re-login, stop stops', async () => {
  resetPeer();
  writeFileSync(join(dir, 'em-token'), `${EM_TOKEN}\n`);
  writeFileSync(join(dir, 'wt-password'), `${WT_PASSWORD}\n`);
  peer.em.set('US-CAL-CISO', 'ok');
  peer.emValue.set('US-CAL-CISO', 251.5);
  peer.em.set('DE', 'ok');
  peer.em.set('FR', 'ok');
  peer.emValue.set('FR', 38);
  peer.wt.set('CAISO_NORTH', 'ok');
  peer.wt.set('PJM_DC', 'ok');
  const fleet = FLEET.slice(); // ap-gone is not in the fleet
  const h = harness(config(), fleet);
  const before = structuredClone(carbonStats);
  const stop = await carbon.start(h.ctx);
  try {
    const have = (source: string, region: string) => h.emitted.some((s) => s.source === source && s.region === region);
    await until(() => have(SOURCE_ELECTRICITY_MAPS, 'us-ca') && have(SOURCE_ELECTRICITY_MAPS, 'eu-de') && have(SOURCE_ELECTRICITY_MAPS, 'eu-de2') && have(SOURCE_ELECTRICITY_MAPS, 'eu-fr') && have(SOURCE_WATTTIME, 'us-ca'), 'the first poll');
    validAll(h.emitted);
    const first = h.emitted.slice(0, 5).map((s) => [s.region, s.source, s.key, JSON.stringify(s.value)]).sort();
    assert.deepEqual(first, [
      ['eu-de', SOURCE_ELECTRICITY_MAPS, 'DE', '{"gPerKWh":302}'],
      ['eu-de2', SOURCE_ELECTRICITY_MAPS, 'DE', '{"gPerKWh":302}'],
      ['eu-fr', SOURCE_ELECTRICITY_MAPS, 'FR', '{"gPerKWh":38}'],
      ['us-ca', SOURCE_ELECTRICITY_MAPS, 'US-CAL-CISO', '{"gPerKWh":251.5}'],
      ['us-ca', SOURCE_WATTTIME, 'CAISO_NORTH', '{"percentile":63}'],
    ]);
    for (const s of h.emitted.slice(0, 5)) {
      assert.equal(s.kind, 'carbon');
      const dataTime = s.source === SOURCE_WATTTIME ? clock - 2 * 60_000 : clock - 20 * 60_000;
      assert.equal(s.observedAt, dataTime, `${s.source} ${s.key}: observedAt is the data's own time`);
      assert.equal(s.expiresAt, clock + 3 * 1000, `${s.source} ${s.key}: three polls after it was read`);
    }
    assert.ok(!h.emitted.some((s) => s.region === 'ap-gone'), 'a region outside the fleet gets nothing');
    assert.equal(warns(h, /ap-gone/).length, 1, 'the missing region is logged once');
    // DE serves two regions but is fetched once per poll; the credentials were sent as documented.
    const emHits = peer.hits.filter((x) => x.path.startsWith('/em/'));
    assert.equal(emHits.filter((x) => x.path === '/em/v3/carbon-intensity/latest?zone=DE').length, 1);
    assert.ok(emHits.every((x) => x.headers['auth-token'] === EM_TOKEN));
    assert.equal(peer.logins, 1);
    const wtHit = peer.hits.find((x) => x.path.startsWith('/wt/v3/signal-index'))!;
    assert.equal(wtHit.path, '/wt/v3/signal-index?region=CAISO_NORTH&signal_type=co2_moer');
    assert.equal(wtHit.headers.authorization, 'Bearer tok-1');

    // The next polls reuse the token.
    const wtCount = () => h.emitted.filter((s) => s.source === SOURCE_WATTTIME && s.key === 'CAISO_NORTH').length;
    await until(() => wtCount() >= 2, 'a second poll');
    assert.equal(peer.logins, 1, 'the token is kept across polls');

    // The token expires at the peer: the next request gets 401, logs in once more and retries.
    peer.tokens.clear();
    peer.wtValue.set('CAISO_NORTH', 12);
    await until(() => h.emitted.some((s) => s.source === SOURCE_WATTTIME && (s.value as { percentile: number }).percentile === 12), 'a fact after the re-login');
    assert.equal(peer.logins, 2, 'one re-login');
    const seq = peer.hits.filter((x) => x.path.startsWith('/wt/')).map((x) => `${x.path.split('?')[0]} ${x.headers.authorization?.split(' ')[1]?.slice(0, 6) ?? ''}`);
    const i = seq.lastIndexOf('/wt/login Z3JpZH');
    assert.ok(i > 0, `a second login: ${seq.join(', ')}`);
    assert.equal(seq[i - 1], '/wt/v3/signal-index tok-1', 'after a 401 with the old token');
    assert.equal(seq[i + 1], '/wt/v3/signal-index tok-2', 'and a retry with the new one');
    assert.equal(warns(h, /watttime/).length, 0, 'an expired token is routine, not a warning');
    validAll(h.emitted);
    assert.ok(carbonStats.electricityMaps.signals - before.electricityMaps.signals >= 8);
    assert.ok(carbonStats.wattTime.logins - before.wattTime.logins === 2);
  } finally {
    h.abort.abort();
    await stop();
  }
  const n = h.emitted.length;
  const hits = peer.hits.length;
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal(h.emitted.length, n, 'nothing emitted after stop');
  assert.equal(peer.hits.length, hits, 'no request after stop');
});

test('failures: each emits nothing for its zone, is counted with its code, logged once, and recovery is logged once', async () => {
  resetPeer();
  writeFileSync(join(dir, 'em-token'), EM_TOKEN);
  writeFileSync(join(dir, 'wt-password'), WT_PASSWORD);
  const cases: [Behaviour, string][] = [
    ['status:500', 'CARBON_ERR_HTTP'],
    ['status:429', 'CARBON_ERR_RATE_LIMITED'],
    ['status:403', 'CARBON_ERR_AUTH'],
    ['redirect', 'CARBON_ERR_HTTP'],
    ['garbage', 'CARBON_ERR_BAD_JSON'],
    ['huge', 'CARBON_ERR_TOO_LARGE'],
    ['huge-chunked', 'CARBON_ERR_TOO_LARGE'],
    ['hang', 'CARBON_ERR_TIMEOUT'],
    ['reset', 'CARBON_ERR_NETWORK'],
    ['negative', 'CARBON_ERR_PAYLOAD'],
    ['string', 'CARBON_ERR_PAYLOAD'],
    ['stale', 'CARBON_ERR_STALE'],
  ];
  for (const [b, code] of cases) {
    resetPeer();
    peer.em.set('DE', 'ok');
    peer.em.set('FR', b);
    peer.wt.set('CAISO_NORTH', b === 'stale' ? 'ok' : b);
    const cfg = config({ regions: [{ region: 'eu-de', electricityMapsZone: 'DE' }, { region: 'eu-fr', electricityMapsZone: 'FR' }, { region: 'us-ca', wattTimeRegion: 'CAISO_NORTH' }] });
    const h = harness(cfg);
    const poller = new CarbonPoller(h.ctx, cfg, planConfig(cfg));
    const before = structuredClone(carbonStats);
    try {
      await poller.poll();
      await poller.poll();
      validAll(h.emitted);
      const keys = h.emitted.map((s) => `${s.source} ${s.key}`);
      assert.equal(keys.filter((k) => k === `${SOURCE_ELECTRICITY_MAPS} DE`).length, 2, `${b}: the healthy zone still emits`);
      assert.ok(!keys.includes(`${SOURCE_ELECTRICITY_MAPS} FR`), `${b}: nothing for the failing zone`);
      if (b !== 'stale') assert.ok(!keys.includes(`${SOURCE_WATTTIME} CAISO_NORTH`), `${b}: nothing for the failing WattTime region`);
      assert.equal(warns(h, /electricitymaps FR fails/).length, 1, `${b}: logged once over two polls`);
      assert.equal(warns(h, /electricitymaps FR fails/)[0]!.code, code, `${b}: the code`);
      assert.equal(carbonStats.electricityMaps.failures - before.electricityMaps.failures, 2, `${b}: counted`);
      assert.equal((carbonStats.byCode[code as keyof typeof carbonStats.byCode] ?? 0) - (before.byCode[code as keyof typeof before.byCode] ?? 0) >= 2, true, `${b}: counted by code`);
      if (b !== 'stale') assert.equal(warns(h, /watttime CAISO_NORTH fails/).length, 1, `${b}: WattTime logged once`);
      assert.ok(!h.logs.some((l) => l.msg.includes(EM_TOKEN) || l.msg.includes(WT_PASSWORD) || /tok-\d/.test(l.msg)), `${b}: no credential in the logs`);
      // Recovery.
      peer.em.set('FR', 'ok');
      peer.wt.set('CAISO_NORTH', 'ok');
      await poller.poll();
      assert.ok(h.emitted.some((s) => s.key === 'FR'), `${b}: FR back`);
      assert.ok(h.emitted.some((s) => s.key === 'CAISO_NORTH'), `${b}: CAISO_NORTH back`);
      assert.equal(infos(h, /electricitymaps FR: 302 gCO2eq\/kWh/).length, 1, `${b}: recovery logged once`);
      validAll(h.emitted);
    } finally {
      await poller.stop();
    }
  }
  assert.ok(!peer.hits.some((x) => x.path === '/steal'), 'a redirect is never followed (it would carry the token)');
});

test('a datetime ahead of our clock: observedAt is now and the fact is valid', async () => {
  resetPeer();
  writeFileSync(join(dir, 'em-token'), EM_TOKEN);
  peer.em.set('DE', 'future');
  const cfg = config({ wattTime: undefined, regions: [{ region: 'eu-de', electricityMapsZone: 'DE' }] });
  const h = harness(cfg);
  const poller = new CarbonPoller(h.ctx, cfg, planConfig(cfg));
  await poller.poll();
  await poller.stop();
  assert.equal(h.emitted.length, 1);
  assert.equal(h.emitted[0]!.observedAt, clock);
  assert.equal(h.emitted[0]!.expiresAt, clock + 3000);
  validAll(h.emitted);
});

test('WattTime credentials: a refused login is logged once (not per region), stops logins for the poll, recovers when the password file is fixed; a bearer refused after a fresh login is CARBON_ERR_AUTH', async () => {
  resetPeer();
  writeFileSync(join(dir, 'em-token'), EM_TOKEN);
  writeFileSync(join(dir, 'wt-password'), 'wrong');
  peer.wt.set('CAISO_NORTH', 'ok');
  peer.wt.set('PJM_DC', 'ok');
  peer.wt.set('ERCOT_EASTTX', 'ok');
  const regions = [
    { region: 'us-ca', wattTimeRegion: 'CAISO_NORTH' },
    { region: 'eu-de', wattTimeRegion: 'PJM_DC' },
    { region: 'eu-fr', wattTimeRegion: 'ERCOT_EASTTX' },
  ];
  const cfg = config({ electricityMaps: undefined, regions });
  const h = harness(cfg);
  const poller = new CarbonPoller(h.ctx, cfg, planConfig(cfg));
  const before = structuredClone(carbonStats);
  try {
    await poller.poll();
    assert.equal(peer.logins, 1, 'one login attempt for three regions');
    await poller.poll();
    assert.equal(peer.logins, 2, 'one a poll');
    assert.equal(h.emitted.length, 0);
    assert.equal(warns(h, /watttime login fails/).length, 1, 'logged once');
    assert.equal(warns(h, /watttime login fails/)[0]!.code, 'CARBON_ERR_AUTH');
    assert.equal(warns(h, /watttime (CAISO_NORTH|PJM_DC|ERCOT_EASTTX)/).length, 0, 'not once per region');
    assert.equal(carbonStats.wattTime.loginFailures - before.wattTime.loginFailures, 2);
    assert.equal(carbonStats.wattTime.failures - before.wattTime.failures, 6);

    writeFileSync(join(dir, 'wt-password'), `${WT_PASSWORD}\n`);
    await poller.poll();
    assert.equal(h.emitted.length, 3);
    validAll(h.emitted);
    assert.equal(infos(h, /watttime: logged in/).length, 1);

    // A login that answers garbage instead of a token.
    peer.tokens.clear();
    peer.loginBody = '{"token": 5}';
    await poller.poll();
    assert.equal(h.emitted.length, 3);
    assert.equal(warns(h, /watttime login fails/).length, 2, 'a new failure after a success');
    assert.match(warns(h, /watttime login fails/)[1]!.msg, /has no token/);
    peer.loginBody = null;

    // Tokens are issued but every bearer is refused: one re-login a poll at most, then CARBON_ERR_AUTH per region.
    peer.rejectBearer = true;
    const l0 = peer.logins;
    await poller.poll();
    assert.ok(peer.logins - l0 <= 2, `at most two logins a poll (${peer.logins - l0})`);
    assert.equal(h.emitted.length, 3);
    const auth = warns(h, /watttime (CAISO_NORTH|PJM_DC|ERCOT_EASTTX) fails/);
    assert.ok(auth.length >= 1 && auth.every((l) => l.code === 'CARBON_ERR_AUTH'), JSON.stringify(auth));
  } finally {
    await poller.stop();
  }
});

test('stop() aborts a request in flight and resolves promptly; nothing is emitted afterwards', async () => {
  resetPeer();
  writeFileSync(join(dir, 'em-token'), EM_TOKEN);
  peer.em.set('DE', 'hang');
  // The request's own timeout (60 s) is twice the liveness bound below: only an abort ends it in time.
  const cfg = config({ timeoutMs: 60000, pollMs: 60000, wattTime: undefined, regions: [{ region: 'eu-de', electricityMapsZone: 'DE' }] });
  const h = harness(cfg);
  const before = structuredClone(carbonStats);
  const stop = await carbon.start(h.ctx);
  await until(() => peer.hits.length === 1, 'the request is in flight');
  h.abort.abort();
  await live(stop(), 30_000, 'stop() aborts the request in flight');
  assert.equal(h.emitted.length, 0);
  assert.equal(carbonStats.electricityMaps.failures, before.electricityMaps.failures, 'a request cut short by stop is no failure');
  assert.equal(warns(h, /fails/).length, 0);
});
