import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApi } from './app.js';
import type { ApiDeps } from './deps.js';
import { loadTokens } from '../config/tokens.js';
import { explainQuery } from '../serve/serving.js';
import { context, NOW, planWith } from '../../test/helpers/explain-fixture.js';

const VIEWER = 'viewer-token-0123456789abcdef';
const INGEST = 'ingest-token-0123456789abcdef';
const TOKENS = loadTokens({ env: `viewer:grafana:${VIEWER},ingest:meter:${INGEST}` });
const auth = { authorization: `Bearer ${VIEWER}` };

async function build(t: TestContext, explain?: ApiDeps['explain']): Promise<FastifyInstance> {
  const ctx = context({ plan: planWith({ weights: { a: { a: 0.5 } } }) });
  const app = await buildApi({
    log: pino({ level: 'silent' }),
    tokens: TOKENS,
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: '/x', loadedAt: 0, zones: [], names: [], regions: [] }),
    reload: async () => ({ version: 'v', changed: false }),
    explain: explain ?? ((q) => explainQuery(ctx, q, NOW)),
  });
  t.after(() => app.close());
  return app;
}

test('GET /v1/explain: 200 carries every field of the result (the response schema drops nothing)', async (t) => {
  const app = await build(t);
  const ctx = context({ plan: planWith({ weights: { a: { a: 0.5 } } }) });
  for (const qs of ['client=10.0.0.1&name=api.gslb.example.com&subnet=1.2.3.0/24', 'client=3.3.3.3&name=www.gslb.example.com&type=AAAA', 'client=127.0.0.1&name=api.gslb.example.com&subnet=10.0.0.0/8', 'client=2a00::1&name=bc.gslb.example.com']) {
    const res = await app.inject({ method: 'GET', url: `/v1/explain?${qs}`, headers: auth });
    assert.equal(res.statusCode, 200, `${qs}: ${res.body}`);
    const p = new URLSearchParams(qs);
    const direct = await explainQuery(ctx, { client: p.get('client')!, name: p.get('name')!, type: (p.get('type') as 'A' | 'AAAA' | null) ?? 'A', ...(p.has('subnet') ? { subnet: p.get('subnet')! } : {}) }, NOW);
    assert.deepEqual(res.json(), JSON.parse(JSON.stringify(direct)), qs);
  }
  const one = (await app.inject({ method: 'GET', url: '/v1/explain?client=10.0.0.1&name=api.gslb.example.com&subnet=1.2.3.0/24', headers: auth })).json() as {
    candidates: { region: string; draw?: number; weight: number }[];
    answer: { ecsScope: number };
  };
  assert.equal(one.candidates[0]!.weight, 0.5);
  assert.equal(typeof one.candidates[0]!.draw, 'number');
  assert.equal(one.answer.ecsScope, 24);
});

test('GET /v1/explain: bad input is 400 GSLB_ERR_VALIDATION naming the field', async (t) => {
  const app = await build(t);
  const cases: [string, string, RegExp][] = [
    ['client=1.2.3&name=api.gslb.example.com', 'querystring.client', /^api: querystring\.client "1\.2\.3" is not an IPv4 or IPv6 address$/],
    ['client=example.com&name=api.gslb.example.com', 'querystring.client', /is not an IPv4 or IPv6 address/],
    ['client=1.2.3.4&name=api.gslb.example.com&subnet=1.2.3.0', 'querystring.subnet', /"1\.2\.3\.0" is not a subnet like 198\.51\.100\.0\/24/],
    ['client=1.2.3.4&name=api.gslb.example.com&subnet=2001:db8::/129', 'querystring.subnet', /\/129 is longer than an IPv6 address/],
    ['client=1.2.3.4&name=nope.gslb.example.com', 'querystring.name', /"nope\.gslb\.example\.com" is not a steered name; the steered names are: api\.gslb\.example\.com, bc\.gslb\.example\.com/],
    ['client=1.2.3.4&name=api.gslb.example.com&type=MX', 'querystring.type', /querystring\.type must be one of: "A", "AAAA"/],
    ['client=1.2.3.4&name=api.gslb.example.com&type=aaaa', 'querystring.type', /must be one of/],
    ['name=api.gslb.example.com', 'querystring.client', /querystring\.client is required/],
    ['client=1.2.3.4', 'querystring.name', /querystring\.name is required/],
    ['client=1.2.3.4&name=api.gslb.example.com&ecs=1.2.3.0/24', 'querystring.ecs', /is not a known field/],
    ['client=1.2.3.4&name=api.gslb.example.com&subnet=', 'querystring.subnet', /fewer than 1 characters/],
  ];
  for (const [qs, field, message] of cases) {
    const res = await app.inject({ method: 'GET', url: `/v1/explain?${qs}`, headers: auth });
    assert.equal(res.statusCode, 400, `${qs}: ${res.body}`);
    const body = res.json() as { error: { code: string; message: string; field?: string } };
    assert.equal(body.error.code, 'GSLB_ERR_VALIDATION', qs);
    assert.equal(body.error.field, field, qs);
    assert.match(body.error.message, message, qs);
  }
});

test('GET /v1/explain: viewer role; other failures are not blamed on the request', async (t) => {
  const app = await build(t);
  const url = '/v1/explain?client=1.2.3.4&name=api.gslb.example.com';
  assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401);
  assert.equal((await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${INGEST}` } })).statusCode, 403);
  assert.equal((await app.inject({ method: 'GET', url, headers: auth })).statusCode, 200);

  const broken = await build(t, async () => {
    throw new Error('table exploded');
  });
  const res = await broken.inject({ method: 'GET', url, headers: auth });
  assert.equal(res.statusCode, 500);
  assert.equal((res.json() as { error: { code: string } }).error.code, 'GSLB_ERR_INTERNAL');
  assert.doesNotMatch(res.body, /exploded/);
});
