/**
 * Three GridSteer nodes sharing one real Redis (issue 4, docs/design.md "Many nodes"):
 *
 * 1. an override posted to node A changes the answers of B and C;
 * 2. signals posted to node B change the answers of A and C;
 * 3. Redis is killed under query load (dig-style UDP queries to every node, bounded): no
 *    query goes unanswered, the three nodes keep giving identical answers, /readyz says the
 *    store is stale, and a change posted meanwhile is refused with 503 and changes nothing;
 * 4. Redis comes back (AOF): the nodes resynchronise, a change posted to C converges on all;
 * 5. node A restarts: its overrides and audit are intact (they live in Redis).
 *
 * geoip is disabled: every client is at the default location (Ashburn), ranking us-va,
 * us-tx, ca-ab, …
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { askSteered, DEFAULT_LOCATION, rankFrom } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';

const OPERATOR = 'three-nodes-operator-5e1f';
const INGEST = 'three-nodes-ingest-77a0';
const RANKING = rankFrom(DEFAULT_LOCATION, 7);

let redis: RunningRedis;
let cfg: TestConfig;
const nodes: RunningServer[] = [];

before(async () => {
  redis = await startRedis();
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: 450 queries from 127.0.0.1, all must be answered.
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url: redis.url, prefix: `t${process.pid}` }, planDebounceMs: 20 };
  });
  writeTokensFile(cfg.dir, [{ name: 'olga', role: 'operator', token: OPERATOR }, { name: 'probe', role: 'ingest', token: INGEST }]);
  for (let i = 0; i < 3; i++) nodes.push(await spawnServer({ configFile: cfg.file }));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await redis?.cleanup();
  cfg?.cleanup();
});

const api = (node: RunningServer, method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(node.http, method, path, token, body);

/** The region each node answers now (one dig each). */
async function regions(): Promise<string[]> {
  return Promise.all(nodes.map(async (n) => (await askSteered(n.udp, 'A')).region));
}

/** Polls (bounded: 60 × 100 ms) until every node answers `want`; returns how long it took. */
async function converge(want: string, what: string): Promise<number> {
  const t0 = Date.now();
  let last: string[] = [];
  for (let i = 0; i < 60; i++) {
    last = await regions();
    if (last.every((r) => r === want)) return Date.now() - t0;
    await sleep(100);
  }
  assert.fail(`${what}: the nodes answer ${last.join(', ')}, not all ${want}\n${nodes.map((n) => n.logs.slice(-5).join('\n')).join('\n---\n')}`);
}

async function storeCheck(node: RunningServer): Promise<{ ok: boolean; detail: string }> {
  const res = await fetch(`${node.http}/readyz`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as { checks: { name: string; ok: boolean; detail: string }[] };
  const c = body.checks.find((x) => x.name === 'store');
  assert.ok(c, JSON.stringify(body));
  return c;
}

test('precondition: three nodes, one Redis, every node answers us-va and reports the store ready', async () => {
  assert.deepEqual(RANKING.slice(0, 3), ['us-va', 'us-tx', 'ca-ab']);
  assert.deepEqual(await regions(), ['us-va', 'us-va', 'us-va']);
  for (const n of nodes) {
    const c = await storeCheck(n);
    assert.ok(c.ok, c.detail);
    assert.match(c.detail, /^redis/);
  }
});

let drainId = '';

test('an override posted to node A changes the answers of B and C', async (t) => {
  const r = await api(nodes[0]!, 'POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 0, reason: 'rack move' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  drainId = String(r.body.id);
  const ms = await converge('us-tx', 'after the drain posted to A');
  t.diagnostic(`all three nodes answered us-tx ${ms} ms after the drain was accepted`);
  const plans = await Promise.all(nodes.map((n) => api(n, 'GET', '/v1/plan', OPERATOR)));
  assert.equal(new Set(plans.map((p) => JSON.stringify(p.body))).size, 1, 'the three nodes hold byte-identical plans');
});

test('signals posted to node B change the answers of A and C', async (t) => {
  const now = Date.now();
  const probe = (v: string) => ({ region: 'us-tx', kind: 'health.probe', source: `health/${v}`, key: '192.0.2.20', observedAt: now, expiresAt: now + 600_000, value: { up: false } });
  const r = await api(nodes[1]!, 'POST', '/v1/signals', INGEST, { signals: [probe('n1'), probe('n2')] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const ms = await converge('ca-ab', 'after us-tx was reported down to B');
  t.diagnostic(`all three nodes answered ca-ab ${ms} ms after the signals were accepted`);
});

test('Redis killed under query load: no query unanswered, identical answers, stale in /readyz, writes refused', async (t) => {
  const ROUNDS = 150;
  const rounds: string[][] = [];
  let refused: ApiReply | undefined;
  let refusedSignals: ApiReply | undefined;
  let staleSeen = [false, false, false];
  let staleMetric = [false, false, false];
  for (let i = 0; i < ROUNDS; i++) {
    if (i === 20) await redis.kill('SIGKILL');
    if (i === 60) {
      refused = await api(nodes[2]!, 'POST', '/v1/overrides', OPERATOR, { region: 'ca-ab', action: 'drain', value: 0, reason: 'during the outage' });
      const now = Date.now();
      refusedSignals = await api(nodes[1]!, 'POST', '/v1/signals', INGEST, { signals: [{ region: 'us-tx', kind: 'health.probe', source: 'health/outage', key: '192.0.2.20', observedAt: now, expiresAt: now + 600_000, value: { up: true } }] });
      staleSeen = await Promise.all(
        nodes.map(async (n) => {
          const c = await storeCheck(n);
          // Fail static is ready (orchestrators keep the node in service) and says so.
          return c.ok && /\(fail static: ready, changes refused\)$/.test(c.detail);
        }),
      );
      staleMetric = await Promise.all(nodes.map(async (n) => /^gridsteer_store_stale 1$/m.test(await (await fetch(`${n.http}/metrics`, { signal: AbortSignal.timeout(5000) })).text())));
    }
    rounds.push(await Promise.all(nodes.map(async (n) => (await askSteered(n.udp, 'A')).region)));
    await sleep(20);
  }
  const unanswered = rounds.flatMap((r, i) => r.map((x, k) => [i, k, x] as const)).filter(([, , x]) => !/^[a-z]{2}-[a-z]{2,3}$/.test(x));
  assert.deepEqual(unanswered, [], 'every query answered with a region');
  const differing = rounds.map((r, i) => [i, r] as const).filter(([, r]) => new Set(r).size !== 1);
  assert.deepEqual(differing, [], 'the nodes answered alike in every round');
  assert.ok(rounds.every((r) => r[0] === 'ca-ab'), 'the last plan stays in force');
  assert.ok(refused, 'a change was posted during the outage');
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal((refused.body.error as { code: string }).code, 'GSLB_ERR_STORE_UNAVAILABLE');
  // An override applies whole or not at all (its script's deadline); a signal batch is written
  // in rounds, so its refusal may not promise that nothing was stored.
  assert.match((refused.body.error as { message: string }).message, /; nothing was changed: retry later/);
  assert.ok(refusedSignals, 'signals were posted during the outage');
  assert.equal(refusedSignals.status, 503, JSON.stringify(refusedSignals.body));
  assert.match((refusedSignals.body.error as { message: string }).message, /signals of the batch may have been stored .*sending the batch again is safe/);
  assert.deepEqual(staleSeen, [true, true, true], 'every node reports its store stale in /readyz, and stays ready (fail static)');
  assert.deepEqual(staleMetric, [true, true, true], 'and in /metrics (gridsteer_store_stale 1)');
  t.diagnostic(`${ROUNDS * 3} queries to 3 nodes across the outage, all answered alike`);
});

test('Redis back: the nodes resynchronise and a change posted to C converges everywhere', async (t) => {
  await redis.restart();
  for (const n of nodes) {
    // Ready throughout (fail static); fresh again once the detail no longer says so.
    const fresh = (c: { ok: boolean; detail: string }) => c.ok && !c.detail.includes('fail static');
    let c = await storeCheck(n);
    for (let i = 0; i < 50 && !fresh(c); i++) {
      await sleep(200);
      c = await storeCheck(n);
    }
    assert.ok(fresh(c), `store read again: ${c.detail}`);
  }
  const ov = await api(nodes[2]!, 'GET', '/v1/overrides', OPERATOR);
  assert.deepEqual((ov.body.overrides as { id: string; reason: string }[]).map((o) => o.reason), ['rack move'], 'the refused change left nothing; the drain survived (AOF)');
  const end = await api(nodes[2]!, 'DELETE', `/v1/overrides/${drainId}?reason=${encodeURIComponent('rack moved')}`, OPERATOR);
  assert.equal(end.status, 200, JSON.stringify(end.body));
  const ms = await converge('us-va', 'after the drain was ended on C');
  t.diagnostic(`all three nodes answered us-va ${ms} ms after the end was accepted`);
});

test('node A restarts: overrides and audit are intact', async () => {
  const made = await api(nodes[1]!, 'POST', '/v1/overrides', OPERATOR, { region: 'sa-sao', action: 'weight', value: 0.5, reason: 'canary' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await nodes[0]!.stop();
  nodes[0] = await spawnServer({ configFile: cfg.file });
  const ov = await api(nodes[0], 'GET', '/v1/overrides', OPERATOR);
  assert.deepEqual((ov.body.overrides as { reason: string }[]).map((o) => o.reason), ['canary']);
  const audit = (await api(nodes[0], 'GET', '/v1/audit', OPERATOR)).body.entries as { action: string; reason: string; actor: string }[];
  assert.deepEqual(
    audit.map((a) => `${a.action} ${a.actor} ${a.reason}`),
    ['override.create olga canary', 'override.end olga rack moved', 'override.create olga rack move'],
  );
  await converge('us-va', 'after the restart');
  // Every node re-plans every 10 s with the fleet's measured demand, so for a moment after a
  // restart their versions may differ by when each last read the demand buckets: poll, bounded.
  let versions: string[] = [];
  for (let i = 0; i < 30; i++) {
    const plans = await Promise.all(nodes.map((n) => api(n, 'GET', '/v1/plan', OPERATOR)));
    versions = plans.map((p) => (p.body as { version: string }).version);
    if (new Set(versions).size === 1) break;
    await sleep(500);
  }
  assert.equal(new Set(versions).size, 1, `the restarted node holds the same plan version: ${versions.join(', ')}`);
});
