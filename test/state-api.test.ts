/**
 * Region state through the running server with the embedded (memory) store, asked with dig
 * (issue 4): operator overrides and pushed signals change the answers; bad input is refused
 * with the field named and changes nothing; overrides and the audit log survive a restart
 * (the append-only file); ending an override brings the answers back.
 *
 * geoip is disabled, so every client is placed at the default location (Ashburn, VA): the
 * ranking is us-va, us-tx, ca-ab, … (great-circle distance, worked out in helpers/geo.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { askSteered, DEFAULT_LOCATION, rankFrom } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, writeTokensFile } from './helpers/server.js';

const OPERATOR = 'state-api-operator-token-1b7e';
const INGEST = 'state-api-ingest-token-93c4';
const RANKING = rankFrom(DEFAULT_LOCATION, 7);

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
  });
  writeTokensFile(cfg.dir, [{ name: 'alice', role: 'operator', token: OPERATOR }, { name: 'prober', role: 'ingest', token: INGEST }]);
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(srv.http, method, path, token, body);

/** Asks dig until the answer's region is `want` (bounded: 40 tries, 100 ms apart). */
async function waitRegion(want: string, what: string): Promise<void> {
  let last = '';
  for (let i = 0; i < 40; i++) {
    const r = await askSteered(srv.udp, 'A');
    if (r.region === want) return;
    last = `${r.region}\n${r.summary}`;
    await sleep(100);
  }
  assert.fail(`${what}: the answer never became ${want}; last: ${last}\n${srv.logs.slice(-10).join('\n')}`);
}

test('precondition: the default location ranks us-va, us-tx first, and the answer is us-va', async () => {
  assert.deepEqual(RANKING.slice(0, 2), ['us-va', 'us-tx']);
  assert.equal((await askSteered(srv.udp, 'A')).region, 'us-va');
});

test('bad overrides and signals are refused with the field named, and change nothing', async () => {
  const cases: [string, string, string | null, unknown, number, string][] = [
    ['no token', '/v1/overrides', null, { region: 'us-va', action: 'drain', reason: 'x' }, 401, 'headers.authorization'],
    ['ingest token cannot override', '/v1/overrides', INGEST, { region: 'us-va', action: 'drain', reason: 'x' }, 403, ''],
    ['unknown region', '/v1/overrides', OPERATOR, { region: 'mars-1', action: 'drain', reason: 'x' }, 400, 'body.region'],
    ['force-up without end', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'force-up', reason: 'x' }, 400, 'body.end'],
    ['no reason', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain' }, 400, 'body.reason'],
    ['drain share above 1', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 1.5, reason: 'x' }, 400, 'body.value'],
    ['unknown action', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'explode', reason: 'x' }, 400, 'body.action'],
    ['weight without value', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'weight', reason: 'x' }, 400, 'body.value'],
    ['unknown property', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', reason: 'x', color: 'red' }, 400, 'body.color'],
    ['operator token cannot push signals', '/v1/signals', OPERATOR, { signals: [] }, 403, ''],
    ['empty batch', '/v1/signals', INGEST, { signals: [] }, 400, 'body.signals'],
  ];
  const now = Date.now();
  const good = { region: 'us-va', kind: 'health.probe', source: 'health/a', key: 'e1', observedAt: now, expiresAt: now + 60000, value: { up: false } };
  cases.push(
    ['alert level 7', '/v1/signals', INGEST, { signals: [good, { ...good, kind: 'grid.alert', key: 'x', value: { level: 7 } }] }, 400, 'body.signals[1].value.level'],
    ['observed a minute ahead', '/v1/signals', INGEST, { signals: [{ ...good, observedAt: now + 60000, expiresAt: now + 120000 }] }, 400, 'body.signals[0].observedAt'],
    ['unknown kind', '/v1/signals', INGEST, { signals: [{ ...good, kind: 'gossip' }] }, 400, 'body.signals[0].kind'],
    [
      'a grid event whose end has passed',
      '/v1/signals',
      INGEST,
      { signals: [{ ...good, kind: 'grid.event', source: 'utility/x', key: 'old-1', value: { id: 'old-1', type: 'load-shed', start: now - 7_200_000, end: now - 60_000 } }] },
      400,
      'body.signals[0].value.end',
    ],
    ['a grid event by hand whose end has passed', '/v1/grid-events', OPERATOR, { region: 'us-va', id: 'old-2', type: 'load-shed', start: now - 7_200_000, end: now - 60_000 }, 400, 'body.end'],
  );
  for (const [what, path, token, body, status, field] of cases) {
    const r = await api('POST', path, token, body);
    assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
    const err = r.body.error as { field?: string; message?: string };
    if (field) assert.equal(err.field, field, `${what}: ${JSON.stringify(r.body)}`);
    assert.match(String(err.message), /^api: /, what);
  }
  const ov = await api('GET', '/v1/overrides', OPERATOR);
  assert.deepEqual(ov.body.overrides, [], 'no override was created');
  // The batch with one bad signal stored none: us-va is still answered.
  assert.equal((await askSteered(srv.udp, 'A')).region, 'us-va');
  assert.equal(((await api('GET', '/v1/audit', OPERATOR)).body.entries as unknown[]).length, 0, 'nothing audited');
});

let drainId = '';

test('a drain of us-va moves the answer to us-tx; the plan shows the weights and the reason', async () => {
  const r = await api('POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 0, reason: 'maintenance window 42' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.actor, 'alice', 'the actor is the token name');
  drainId = String(r.body.id);
  await waitRegion('us-tx', 'after the drain');
  const plan = (await api('GET', '/v1/plan', OPERATOR)).body as { regions: Record<string, { share: number; reasons: string[] }[]> };
  const last = plan.regions['us-va']?.at(-1);
  assert.ok(last, `us-va has a schedule: ${JSON.stringify(plan)}`);
  assert.equal(last.share, 0, JSON.stringify(last));
  assert.ok(last.reasons.some((x) => x.includes('maintenance window 42') && x.includes('alice')), JSON.stringify(last.reasons));
});

test('signals: probes saying us-tx is down (two vantages of three) move the answer on to the third region', async () => {
  const now = Date.now();
  const p = (vantage: string, up: boolean) => ({ region: 'us-tx', kind: 'health.probe', source: `health/${vantage}`, key: '192.0.2.20', observedAt: now, expiresAt: now + 600000, value: { up } });
  const r = await api('POST', '/v1/signals', INGEST, { signals: [p('n1', false), p('n2', false), p('n3', true)] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.results, [{ stored: true }, { stored: true }, { stored: true }]);
  await waitRegion(RANKING[2]!, 'after us-tx went down');
  // The same signals again are older-or-equal: refused as stale, nothing changes.
  const again = await api('POST', '/v1/signals', INGEST, { signals: [p('n1', false)] });
  assert.deepEqual(again.body.results, [{ stored: false, reason: 'stale' }]);
  // A majority back up (anti-flap: rise 2 successes per vantage) brings us-tx back.
  for (let k = 1; k <= 2; k++) {
    const t = now + k;
    const up = (v: string) => ({ ...p(v, true), observedAt: t });
    assert.equal((await api('POST', '/v1/signals', INGEST, { signals: [up('n1'), up('n2')] })).status, 200);
  }
  await waitRegion('us-tx', 'after us-tx came back');
});

test('overrides and the audit log survive a restart; ending the drain brings us-va back, audited', async () => {
  await srv.stop();
  const file = join(cfg.dir, 'var', 'gridsteer-state.jsonl');
  assert.match(readFileSync(file, 'utf8'), /maintenance window 42/, 'the override is in the append-only file');
  srv = await spawnServer({ configFile: cfg.file });
  const ov = await api('GET', '/v1/overrides', OPERATOR);
  assert.deepEqual((ov.body.overrides as { id: string }[]).map((o) => o.id), [drainId]);
  // Signals are not persisted: after the restart us-tx is unprobed, hence up, and takes us-va's clients.
  assert.equal((await askSteered(srv.udp, 'A')).region, 'us-tx', 'the drain holds from the first answer after the restart');
  const missingReason = await api('DELETE', `/v1/overrides/${drainId}`, OPERATOR);
  assert.equal(missingReason.status, 400, JSON.stringify(missingReason.body));
  assert.equal(await api('DELETE', `/v1/overrides/ov-999?reason=x`, OPERATOR).then((x) => x.status), 404);
  const end = await api('DELETE', `/v1/overrides/${drainId}?reason=${encodeURIComponent('maintenance done')}`, OPERATOR);
  assert.equal(end.status, 200, JSON.stringify(end.body));
  await waitRegion('us-va', 'after the drain ended');
  const audit = (await api('GET', '/v1/audit?limit=10', OPERATOR)).body.entries as { action: string; actor: string; reason: string; before: unknown; after: unknown }[];
  assert.deepEqual(
    audit.map((a) => `${a.action} ${a.actor} ${a.reason}`),
    ['override.end alice maintenance done', 'override.create alice maintenance window 42'],
  );
  assert.equal(audit[0]!.after, null);
  assert.equal((audit[0]!.before as { id: string }).id, drainId);
});

test('demand: answered queries are counted by name and home into 10-second buckets (GET /v1/demand)', async (t) => {
  const N = 25;
  for (let i = 0; i < N; i++) await askSteered(srv.udp, 'A');
  await askSteered(srv.udp, 'A', undefined, 'www.gslb.example.com'); // a CNAME to api: counted under api
  // The bucket is written just after its 10 s end: poll (bounded, 25 s).
  let rows: { bucket: number; home: string; name: string; queries: number }[] = [];
  for (let i = 0; i < 50; i++) {
    rows = (await api('GET', '/v1/demand?buckets=10', OPERATOR)).body.buckets as typeof rows;
    const sum = rows.filter((r) => r.home === 'us-va' && r.name === 'api.gslb.example.com').reduce((n, r) => n + r.queries, 0);
    if (sum >= N + 1) break;
    await sleep(500);
  }
  const mine = rows.filter((r) => r.name === 'api.gslb.example.com');
  t.diagnostic(JSON.stringify(mine));
  assert.ok(mine.length > 0, `no demand bucket for api.gslb.example.com: ${JSON.stringify(rows)}`);
  assert.ok(mine.every((r) => r.bucket % 10_000 === 0), 'buckets start on 10-second boundaries');
  assert.ok(mine.every((r) => r.home === 'us-va'), 'every client is at the default location: home us-va');
  assert.ok(mine.reduce((n, r) => n + r.queries, 0) >= N + 1, `at least the ${N + 1} queries of this test: ${JSON.stringify(mine)}`);
});
