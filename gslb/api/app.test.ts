import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BODY_LIMIT, buildApi } from './app.js';
import type { ApiDeps } from './deps.js';
import { hashToken, loadTokens, type TokenStore } from '../config/tokens.js';
import type { ErrorCode } from './errors.js';
import type { ApiInstance, TypeBoxTypeProvider } from './schemas.js';

const OPERATOR = 'operator-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const INGEST = 'ingest-token-0123456789abcdef';
const TOKENS = loadTokens({ env: `operator:alice:${OPERATOR},viewer:grafana:${VIEWER},ingest:meter:${INGEST}` });

const CONFIG_INFO = {
  version: 'c0ffee',
  file: '/etc/gridsteer/gridsteer.yaml',
  loadedAt: 1_764_460_800_000,
  zones: ['gslb.example.com'],
  names: ['api.gslb.example.com'],
  regions: ['us-east', 'eu-west'],
};

/** A logger whose lines the test can read. */
function captureLog(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void out.push(s) });
  return { log, lines: () => out.map((s) => JSON.parse(s) as Record<string, unknown>) };
}

function deps(over: Partial<ApiDeps> = {}): ApiDeps {
  return {
    log: pino({ level: 'silent' }),
    tokens: TOKENS,
    readiness: () => ({ ready: true, checks: [{ name: 'config', ok: true, detail: 'loaded c0ffee' }] }),
    metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '# HELP up x\n# TYPE up gauge\nup 1\n' }),
    configInfo: () => CONFIG_INFO,
    reload: async () => ({ version: 'c0ffee', changed: false }),
    explain: async () => {
      throw new Error('explain is tested in explain.test.ts');
    },
    ...over,
  };
}

async function build(t: TestContext, over: Partial<ApiDeps> = {}): Promise<FastifyInstance> {
  const app = await buildApi(deps(over));
  t.after(() => app.close());
  return app;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

interface ErrorCase {
  name: string;
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  url: string;
  headers?: Record<string, string>;
  payload?: string;
  status: number;
  code: ErrorCode;
  field?: string;
  message?: RegExp;
}

async function checkError(app: FastifyInstance, c: ErrorCase): Promise<void> {
  const res = await app.inject({ method: c.method, url: c.url, headers: c.headers ?? {}, ...(c.payload === undefined ? {} : { payload: c.payload }) });
  assert.equal(res.statusCode, c.status, `${c.name}: status (body ${res.body.slice(0, 300)})`);
  assert.match(String(res.headers['content-type']), /^application\/json/, `${c.name}: content type`);
  const body = res.json() as { error: { code: string; message: string; field?: string } };
  assert.equal(body.error.code, c.code, `${c.name}: code`);
  assert.ok(body.error.message.startsWith('api: '), `${c.name}: message starts with the module`);
  assert.equal(body.error.field, c.field, `${c.name}: field`);
  if (c.message) assert.match(body.error.message, c.message, `${c.name}: message`);
  assert.deepEqual(Object.keys(body), ['error'], `${c.name}: body shape`);
}

test('every error path answers the table code, with the field at fault', async (t) => {
  const app = await build(t);
  // A route that takes a body (POST /v1/config/reload takes none: a body there is refused).
  (app as unknown as ApiInstance).withTypeProvider<TypeBoxTypeProvider>().post(
    '/v1/test/body',
    { onRequest: (app as unknown as ApiInstance).requireRole('operator'), schema: { body: Type.Object({ reason: Type.Optional(Type.Unknown()) }) } },
    async () => ({ ok: true }),
  );
  const op = { ...bearer(OPERATOR), 'content-type': 'application/json' };
  const cases: ErrorCase[] = [
    { name: 'missing token', method: 'GET', url: '/v1/config', status: 401, code: 'GSLB_ERR_AUTH_REQUIRED', field: 'headers.authorization', message: /role viewer; send the header `Authorization: Bearer <token>`/ },
    { name: 'empty authorization', method: 'GET', url: '/v1/config', headers: { authorization: '' }, status: 401, code: 'GSLB_ERR_AUTH_REQUIRED', field: 'headers.authorization' },
    { name: 'wrong token', method: 'GET', url: '/v1/config', headers: bearer('not-a-token-0123456789abcdef'), status: 401, code: 'GSLB_ERR_AUTH_INVALID', field: 'headers.authorization', message: /no configured token matches/ },
    { name: 'not a bearer header', method: 'GET', url: '/v1/config', headers: { authorization: `Basic ${OPERATOR}` }, status: 401, code: 'GSLB_ERR_AUTH_INVALID', field: 'headers.authorization', message: /must be `Bearer <token>`/ },
    { name: 'viewer on an operator route', method: 'POST', url: '/v1/config/reload', headers: bearer(VIEWER), status: 403, code: 'GSLB_ERR_FORBIDDEN', message: /needs role operator; token "grafana" has role viewer/ },
    { name: 'ingest on a viewer route', method: 'GET', url: '/v1/config', headers: bearer(INGEST), status: 403, code: 'GSLB_ERR_FORBIDDEN', message: /needs role viewer; token "meter" has role ingest/ },
    { name: 'malformed JSON', method: 'POST', url: '/v1/test/body', headers: op, payload: '{"reason": ', status: 400, code: 'GSLB_ERR_BAD_JSON', field: 'body', message: /not valid JSON: .*JSON/ },
    { name: 'prototype poisoning', method: 'POST', url: '/v1/test/body', headers: op, payload: '{"__proto__": {"admin": true}}', status: 400, code: 'GSLB_ERR_BAD_JSON', field: 'body', message: /__proto__/ },
    { name: 'wrong content type', method: 'POST', url: '/v1/test/body', headers: { ...bearer(OPERATOR), 'content-type': 'text/plain' }, payload: 'reload please', status: 415, code: 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', field: 'headers.content-type', message: /content type "text\/plain" is not accepted/ },
    { name: 'form body', method: 'POST', url: '/v1/test/body', headers: { ...bearer(OPERATOR), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1', status: 415, code: 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', field: 'headers.content-type' },
    { name: 'body without content type', method: 'POST', url: '/v1/test/body', headers: bearer(OPERATOR), payload: '{}', status: 415, code: 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', field: 'headers.content-type', message: /content type \(none\)/ },
    { name: 'oversized body', method: 'POST', url: '/v1/test/body', headers: op, payload: `"${'x'.repeat(BODY_LIMIT)}"`, status: 413, code: 'GSLB_ERR_BODY_TOO_LARGE', field: 'body', message: /larger than 1048576 bytes/ },
    { name: 'oversized body, not authenticated: refused before reading', method: 'POST', url: '/v1/test/body', headers: { 'content-type': 'application/json' }, payload: `"${'x'.repeat(BODY_LIMIT)}"`, status: 401, code: 'GSLB_ERR_AUTH_REQUIRED', field: 'headers.authorization' },
    { name: 'a body where the route takes none', method: 'POST', url: '/v1/config/reload', headers: op, payload: '{"a":1}', status: 400, code: 'GSLB_ERR_VALIDATION', field: 'body', message: /body is not taken by POST \/v1\/config\/reload; send no body/ },
    { name: 'charset utf-16', method: 'POST', url: '/v1/test/body', headers: { ...op, 'content-type': 'application/json; charset=utf-16' }, payload: '{}', status: 415, code: 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', field: 'headers.content-type', message: /content type "application\/json; charset=utf-16" is not accepted/ },
    { name: 'empty parameters', method: 'POST', url: '/v1/test/body', headers: { ...op, 'content-type': 'application/json;;;' }, payload: '{}', status: 415, code: 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', field: 'headers.content-type' },
    { name: 'a NUL in body text', method: 'POST', url: '/v1/test/body', headers: op, payload: '{"reason":"a\\u0000"}', status: 400, code: 'GSLB_ERR_VALIDATION', field: 'body.reason', message: /body\.reason contains the control character U\+0000/ },
    { name: 'limit=1e400', method: 'GET', url: '/v1/test/query?limit=1e400', headers: bearer(VIEWER), status: 400, code: 'GSLB_ERR_VALIDATION', field: 'querystring.limit', message: /querystring\.limit must be a decimal integer \(digits only, e\.g\. 100; got "1e400"\)/ },
    { name: 'limit=0x10', method: 'GET', url: '/v1/test/query?limit=0x10', headers: bearer(VIEWER), status: 400, code: 'GSLB_ERR_VALIDATION', field: 'querystring.limit' },
    { name: 'a NUL in query text', method: 'GET', url: '/v1/test/query?reason=a%00', headers: bearer(VIEWER), status: 400, code: 'GSLB_ERR_VALIDATION', field: 'querystring.reason', message: /U\+0000/ },
    { name: 'invalid UTF-8 in query text', method: 'GET', url: '/v1/test/query?reason=%FF', headers: bearer(VIEWER), status: 400, code: 'GSLB_ERR_VALIDATION', field: 'querystring.reason', message: /not valid UTF-8/ },
    { name: 'unknown route', method: 'GET', url: '/v1/nope?x=1', status: 404, code: 'GSLB_ERR_NOT_FOUND', message: /route GET \/v1\/nope was not found/ },
    { name: 'wrong method', method: 'DELETE', url: '/v1/config', status: 404, code: 'GSLB_ERR_NOT_FOUND', message: /route DELETE \/v1\/config/ },
    { name: 'bad percent-encoding', method: 'GET', url: '/v1/%E0%A4%A', status: 400, code: 'GSLB_ERR_BAD_REQUEST', message: /not correctly percent-encoded/ },
    { name: 'unknown route with a bad body', method: 'PUT', url: '/nope', headers: { 'content-type': 'text/plain' }, payload: 'x', status: 404, code: 'GSLB_ERR_NOT_FOUND' },
  ];
  (app as unknown as ApiInstance).withTypeProvider<TypeBoxTypeProvider>().get(
    '/v1/test/query',
    { onRequest: (app as unknown as ApiInstance).requireRole('viewer'), schema: { querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })), reason: Type.Optional(Type.String()) }, { additionalProperties: false }) } },
    async (request) => ({ limit: request.query.limit ?? null }),
  );
  for (const c of cases) await checkError(app, c);
  // Accepted forms: RFC 9110 media types are case-insensitive, charset=utf-8 (any case, quoted).
  for (const ct of ['application/json', 'application/JSON', 'Application/Json; charset=UTF-8', 'application/json;charset="utf-8"']) {
    const ok = await app.inject({ method: 'POST', url: '/v1/test/body', headers: { ...op, 'content-type': ct }, payload: '{"reason":"tab\\tand newline\\n are text"}' });
    assert.equal(ok.statusCode, 200, `${ct}: ${ok.body}`);
  }
  const limit = await app.inject({ method: 'GET', url: '/v1/test/query?limit=16', headers: bearer(VIEWER) });
  assert.equal(limit.json().limit, 16, 'a decimal integer is read as such');

  const res = await app.inject({ method: 'GET', url: '/v1/config' });
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="gridsteer"');
  const forbidden = await app.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(VIEWER) });
  assert.match(String(forbidden.headers['www-authenticate']), /error="insufficient_scope", scope="operator"/);
});

test('schema validation errors name the field (routes added after buildApi inherit the handlers)', async (t) => {
  const app = (await build(t)) as unknown as ApiInstance;
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/v1/test/echo/:region',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: Type.Object({ region: Type.String({ pattern: '^[a-z0-9-]+$' }) }),
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }, { additionalProperties: false }),
        body: Type.Object(
          {
            reason: Type.String({ minLength: 1 }),
            ramp: Type.Optional(Type.Integer({ minimum: 0 })),
            action: Type.Optional(Type.Union([Type.Literal('drain'), Type.Literal('undrain')])),
            steps: Type.Optional(Type.Array(Type.Object({ at: Type.Integer() }, { additionalProperties: false }))),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ region: Type.String(), reason: Type.String() }) },
      },
    },
    async (request) => ({ region: request.params.region, reason: request.body.reason }),
  );
  const op = { ...bearer(OPERATOR), 'content-type': 'application/json' };
  const v = (name: string, url: string, payload: string | undefined, field: string, message: RegExp): ErrorCase => ({
    name,
    method: 'POST',
    url,
    headers: op,
    ...(payload === undefined ? {} : { payload }),
    status: 400,
    code: 'GSLB_ERR_VALIDATION',
    field,
    message,
  });
  const cases: ErrorCase[] = [
    v('missing property', '/v1/test/echo/us-east', '{}', 'body.reason', /^api: body\.reason is required$/),
    v('unknown property', '/v1/test/echo/us-east', '{"reason":"x","extra":1}', 'body.extra', /body\.extra is not a known field; remove it/),
    v('wrong type', '/v1/test/echo/us-east', '{"reason":"x","ramp":"soon"}', 'body.ramp', /body\.ramp must be integer/),
    v('out of range', '/v1/test/echo/us-east', '{"reason":"x","ramp":-1}', 'body.ramp', /body\.ramp must be >= 0/),
    v('nested array item', '/v1/test/echo/us-east', '{"reason":"x","steps":[{"at":1},{"at":2,"bad":true}]}', 'body.steps[1].bad', /not a known field/),
    v('no body at all', '/v1/test/echo/us-east', undefined, 'body', /^api: body must be object$/),
    v('empty JSON body', '/v1/test/echo/us-east', '', 'body', /^api: body must be object$/),
    v('bad path parameter', '/v1/test/echo/US_EAST', '{"reason":"x"}', 'params.region', /params\.region must match pattern/),
    v('bad query parameter', '/v1/test/echo/us-east?limit=1000', '{"reason":"x"}', 'querystring.limit', /querystring\.limit must be <= 100/),
    v('unknown query parameter', '/v1/test/echo/us-east?lmit=5', '{"reason":"x"}', 'querystring.lmit', /not a known field/),
  ];
  cases.push({
    name: 'over-long path parameter',
    method: 'POST',
    url: `/v1/test/echo/${'a'.repeat(101)}`,
    headers: op,
    payload: '{"reason":"x"}',
    status: 400,
    code: 'GSLB_ERR_BAD_REQUEST',
    field: 'params',
    message: /longer than 100 characters/,
  });
  for (const c of cases) await checkError(app as unknown as FastifyInstance, c);

  const ok = await app.inject({ method: 'POST', url: '/v1/test/echo/us-east?limit=5', headers: op, payload: '{"reason":"maintenance","ramp":0}' });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(ok.json(), { region: 'us-east', reason: 'maintenance' });
});

test('a handler fault is a 500 GSLB_ERR_INTERNAL that names the request and hides the detail', async (t) => {
  const cap = captureLog();
  const app = await build(t, {
    log: cap.log,
    configInfo: () => {
      throw new Error('secret internal detail');
    },
  });
  const res = await app.inject({ method: 'GET', url: '/v1/config', headers: bearer(VIEWER) });
  assert.equal(res.statusCode, 500);
  const body = res.json() as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'GSLB_ERR_INTERNAL');
  assert.match(body.error.message, /^api: internal error \(request req-[0-9a-z]+\); the server log has the details$/);
  assert.ok(!res.body.includes('secret'));
  const logged = cap.lines().find((l) => l.msg === 'api: internal error');
  assert.ok(logged, 'the fault is logged');
  assert.equal(logged.module, 'api');
  assert.match(JSON.stringify(logged.err), /secret internal detail/);
});

test('GET /healthz answers 200 {status:"ok"} without a token', async (t) => {
  const app = await build(t, { readiness: () => ({ ready: false, checks: [] }) });
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: 'ok' });
  assert.equal(res.headers['cache-control'], 'no-store');
});

test('GET /readyz: 200 when ready, 503 with the checks when not, 503 when the check throws', async (t) => {
  const cases: [string, ApiDeps['readiness'], number, unknown][] = [
    [
      'ready',
      () => ({ ready: true, checks: [{ name: 'config', ok: true, detail: 'loaded' }] }),
      200,
      { ready: true, checks: [{ name: 'config', ok: true, detail: 'loaded' }] },
    ],
    [
      'not ready',
      () => ({
        ready: false,
        checks: [
          { name: 'config', ok: true, detail: 'loaded' },
          { name: 'workers', ok: false, detail: '3 of 4 workers acknowledged plan p2' },
        ],
      }),
      503,
      {
        ready: false,
        checks: [
          { name: 'config', ok: true, detail: 'loaded' },
          { name: 'workers', ok: false, detail: '3 of 4 workers acknowledged plan p2' },
        ],
      },
    ],
    [
      'a failing check wins over ready: true',
      () => ({ ready: true, checks: [{ name: 'store', ok: false, detail: 'stale' }] }),
      503,
      { ready: false, checks: [{ name: 'store', ok: false, detail: 'stale' }] },
    ],
    [
      'throws',
      () => {
        throw new Error('store gone');
      },
      503,
      { ready: false, checks: [{ name: 'readiness', ok: false, detail: 'api: the readiness check failed: store gone' }] },
    ],
  ];
  for (const [name, readiness, status, body] of cases) {
    const app = await build(t, { readiness });
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(res.statusCode, status, name);
    assert.deepEqual(res.json(), body, name);
  }
});

test('GET /metrics answers the text and content type the caller gives, without a token', async (t) => {
  const cases = [
    { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '# TYPE gridsteer_up gauge\ngridsteer_up 1\n' },
    { contentType: 'application/openmetrics-text; version=1.0.0; charset=utf-8', body: '# TYPE gridsteer_up gauge\ngridsteer_up 1\n# EOF\n' },
  ];
  for (const m of cases) {
    const app = await build(t, { metrics: async () => m });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], m.contentType);
    assert.equal(res.body, m.body);
  }
});

test('GET /v1/config: viewer and operator read it; only declared fields are sent', async (t) => {
  const app = await build(t, { configInfo: () => ({ ...CONFIG_INFO, secret: 'not for the API' }) as typeof CONFIG_INFO });
  for (const token of [VIEWER, OPERATOR]) {
    const res = await app.inject({ method: 'GET', url: '/v1/config', headers: bearer(token) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), CONFIG_INFO);
  }
});

test('POST /v1/config/reload: 200 with the version, 422 with every issue, 500 for a fault', async (t) => {
  const issues = [
    { file: '/etc/gridsteer/gridsteer.yaml', line: 12, column: 5, path: 'zones[0].soa.serial', message: 'must be integer' },
    { file: '/etc/gridsteer/regions/eu-west.yaml', path: '', message: 'missing: add "id"' },
  ];
  const configError = Object.assign(new Error('config: 2 problems'), { name: 'ConfigError', issues });
  const cases: [string, ApiDeps['reload'], number, unknown][] = [
    ['changed', async () => ({ version: 'v2', changed: true }), 200, { version: 'v2', changed: true }],
    ['unchanged', async () => ({ version: 'v1', changed: false }), 200, { version: 'v1', changed: false }],
    [
      'invalid config',
      async () => {
        throw configError;
      },
      422,
      {
        error: {
          code: 'GSLB_ERR_CONFIG_INVALID',
          message: 'api: the configuration has 2 problem(s) and was not applied; the running configuration stays in force',
          details: { issues },
        },
      },
    ],
  ];
  for (const [name, reload, status, body] of cases) {
    const app = await build(t, { reload });
    for (const headers of [bearer(OPERATOR), { ...bearer(OPERATOR), 'content-type': 'application/json' }]) {
      const res = await app.inject({ method: 'POST', url: '/v1/config/reload', headers });
      assert.equal(res.statusCode, status, `${name}: ${res.body}`);
      assert.deepEqual(res.json(), body, name);
    }
  }
  const broken = await build(t, {
    reload: async () => {
      throw new Error('disk on fire');
    },
  });
  const res = await broken.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(OPERATOR) });
  assert.equal(res.statusCode, 500);
  assert.equal((res.json() as { error: { code: string } }).error.code, 'GSLB_ERR_INTERNAL');
  assert.ok(!res.body.includes('disk on fire'));
});

test('reloads never overlap', async (t) => {
  let running = 0;
  let maxRunning = 0;
  let n = 0;
  const app = await build(t, {
    reload: async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 10));
      running--;
      n++;
      if (n === 2) throw Object.assign(new Error('bad'), { issues: [{ file: 'f', path: 'p', message: 'm' }] });
      return { version: `v${n}`, changed: true };
    },
  });
  const results = await Promise.all(
    [1, 2, 3].map(() => app.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(OPERATOR) })),
  );
  assert.equal(maxRunning, 1);
  assert.deepEqual(
    results.map((r) => r.statusCode),
    [200, 422, 200],
  );
  assert.deepEqual(results[2]?.json(), { version: 'v3', changed: true });
});

test('without any token: viewer routes are open, writes say how to configure tokens, a warning is logged once', async (t) => {
  const cap = captureLog();
  const empty: TokenStore = loadTokens({});
  const app = await build(t, { log: cap.log, tokens: empty });
  const read = await app.inject({ method: 'GET', url: '/v1/config' });
  assert.equal(read.statusCode, 200);
  assert.deepEqual(read.json(), CONFIG_INFO);
  await checkError(app, {
    name: 'write without tokens',
    method: 'POST',
    url: '/v1/config/reload',
    headers: bearer(OPERATOR),
    status: 401,
    code: 'GSLB_ERR_AUTH_REQUIRED',
    field: 'headers.authorization',
    message: /no API tokens are configured: set http\.tokensFile in gridsteer\.yaml or GRIDSTEER_TOKENS=operator:<name>:<token>/,
  });
  await app.inject({ method: 'GET', url: '/v1/config' });
  const warnings = cap.lines().filter((l) => l.level === 40 && String(l.msg).includes('no API tokens are configured'));
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0]?.module, 'api');
});

test('a token file works end to end (only the hash is configured)', async (t) => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-api-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens.yaml');
  writeFileSync(file, `tokens:\n  - { name: ops, role: operator, sha256: ${hashToken(OPERATOR)} }\n`);
  const app = await build(t, { tokens: loadTokens({ file }) });
  const res = await app.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(OPERATOR) });
  assert.equal(res.statusCode, 200);
});

test('while closing: /healthz stays 200, /readyz turns 503, other routes answer GSLB_ERR_NOT_READY', async (t) => {
  const app = await buildApi(deps());
  const seen: Record<string, { status: number; body: unknown }> = {};
  let base = '';
  app.addHook('preClose', async () => {
    // server.close() has not been called yet: new connections are still accepted.
    for (const path of ['/healthz', '/readyz', '/v1/config']) {
      const res = await fetch(`${base}${path}`, { headers: bearer(VIEWER) });
      seen[path] = { status: res.status, body: await res.json() };
    }
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await app.close();
  t.after(() => app.close());
  assert.equal(seen['/healthz']?.status, 200);
  assert.equal(seen['/readyz']?.status, 503);
  assert.deepEqual((seen['/readyz']?.body as { checks: unknown[] }).checks.at(-1), { name: 'api', ok: false, detail: 'api: shutting down' });
  assert.equal(seen['/v1/config']?.status, 503);
  assert.equal((seen['/v1/config']?.body as { error: { code: string } }).error.code, 'GSLB_ERR_NOT_READY');
});

test('listens on 127.0.0.1 port 0 and answers a real fetch of /healthz', async (t) => {
  const app = await build(t);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  assert.ok(port > 0);
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(res.status, 200);
  assert.match(String(res.headers.get('content-type')), /^application\/json/);
  assert.deepEqual(await res.json(), { status: 'ok' });
  const missing = await fetch(`http://127.0.0.1:${port}/v1/config`);
  assert.equal(missing.status, 401);
  assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'GSLB_ERR_AUTH_REQUIRED');
});

test('rate limits: operator writes and explain per caller, 429 GSLB_ERR_RATE_LIMITED with Retry-After; refilled over the minute; reads not limited', async (t) => {
  let now = 1_000_000;
  const app = await build(t, {
    rateLimit: { writesPerMinute: 2, explainPerMinute: 1 },
    clock: () => now,
    explain: async () => {
      throw Object.assign(new Error('no client'), { statusCode: 400 });
    },
  });
  const reload = () => app.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(OPERATOR) });
  assert.equal((await reload()).statusCode, 200);
  assert.equal((await reload()).statusCode, 200);
  const third = await reload();
  assert.equal(third.statusCode, 429);
  assert.equal(third.json().error.code, 'GSLB_ERR_RATE_LIMITED');
  assert.equal(third.headers['retry-after'], '30', 'one write comes back every 30 s at 2 a minute');
  // Reads are not limited.
  for (let i = 0; i < 5; i++) assert.equal((await app.inject({ method: 'GET', url: '/v1/config', headers: bearer(VIEWER) })).statusCode, 200);
  now += 30_000;
  assert.equal((await reload()).statusCode, 200, 'refilled');
  assert.equal((await reload()).statusCode, 429);
  // Explain: its own bucket, per caller.
  const explain = (token: string) => app.inject({ method: 'GET', url: '/v1/explain?client=192.0.2.1&name=api.gslb.example.com', headers: bearer(token) });
  assert.notEqual((await explain(VIEWER)).statusCode, 429);
  assert.equal((await explain(VIEWER)).statusCode, 429);
  assert.notEqual((await explain(OPERATOR)).statusCode, 429, 'another caller has its own bucket');
});

test('rate limits given as a function are read per request: a reload that changes them applies at once; 0 lifts them', async (t) => {
  let now = 1_000_000;
  let limits = { writesPerMinute: 1, explainPerMinute: 0 };
  const app = await build(t, { rateLimit: () => limits, clock: () => now });
  const reload = () => app.inject({ method: 'POST', url: '/v1/config/reload', headers: bearer(OPERATOR) });
  assert.equal((await reload()).statusCode, 200);
  assert.equal((await reload()).statusCode, 429, 'one a minute');
  limits = { writesPerMinute: 0, explainPerMinute: 0 };
  for (let i = 0; i < 5; i++) assert.equal((await reload()).statusCode, 200, 'no limit');
  limits = { writesPerMinute: 60, explainPerMinute: 0 };
  now += 1000;
  assert.equal((await reload()).statusCode, 200, 'the bucket refills at the new rate: one a second');
});
