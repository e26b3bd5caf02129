/**
 * Every route, from the OpenAPI description the API serves (itself checked against the route
 * table by openapi.test.ts), refuses bad auth and bad input the same way — before any handler
 * runs (the handlers here throw if reached):
 * - a route with a role: no token → 401 GSLB_ERR_AUTH_REQUIRED; a token of a role that does
 *   not grant it → 403 GSLB_ERR_FORBIDDEN;
 * - a path parameter too long for its schema (80 characters) → 400 naming `params.<name>`, and
 *   one longer than any route takes (300) → 400 naming `params`;
 * - an unknown query parameter → 400 naming `querystring` (routes that take a query);
 * - a body of the wrong type (an array) → 400 naming `body` (routes that take a body).
 * Each route's own tests check its meaningful cases; this one makes sure none is left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { buildApi } from './app.js';
import { loadTokens } from './auth.js';

const OPERATOR = 'operator-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const INGEST = 'ingest-token-0123456789abcdef';

const reached = async (): Promise<never> => {
  throw new Error('a handler ran: the request should have been refused before it');
};

/** A token whose role does not grant `role`. */
const weaker: Record<string, string> = { viewer: INGEST, operator: VIEWER, ingest: VIEWER };
const tokenFor: Record<string, string> = { viewer: VIEWER, operator: OPERATOR, ingest: INGEST };

interface Operation {
  'x-gridsteer-role'?: string;
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
}

test('every route: auth refused without a token and with a weaker role; bad path, query and body input named', async (t) => {
  const app = await buildApi({
    log: pino({ level: 'silent' }),
    tokens: loadTokens({ env: `operator:alice:${OPERATOR},viewer:vic:${VIEWER},ingest:meter:${INGEST}` }),
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: 'f', loadedAt: 0, zones: [], names: [], regions: [] }),
    reload: reached,
    explain: reached,
    state: { ingest: reached, overrides: reached, createOverride: reached, endOverride: reached, audit: reached, demand: reached, plan: () => { throw new Error('a handler ran') }, store: () => { throw new Error('a handler ran') }, confirmLoss: reached },
    operator: { drain: reached, undrain: reached, force: reached, unforce: reached, freeze: reached, status: reached, preview: reached, enterEvent: reached },
    fleet: reached,
    dashboardDir: false,
  });
  t.after(() => app.close());
  const spec = (await app.inject({ method: 'GET', url: '/docs' })).json() as { paths: Record<string, Record<string, Operation>> };
  let checked = 0;
  const seen = { auth: 0, params: 0, query: 0, body: 0 };
  for (const [path, ops] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method === 'head') continue;
      const M = method.toUpperCase() as 'GET' | 'POST' | 'DELETE';
      const params = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      const url = path.replace(/\{([^}]+)\}/g, 'x');
      const what = `${M} ${path}`;
      const role = op['x-gridsteer-role'];
      const err = async (u: string, headers: Record<string, string>, body?: unknown) => {
        const res = await app.inject({ method: M, url: u, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
        return { status: res.statusCode, error: (res.json() as { error?: { code: string; field?: string } }).error };
      };
      if (role) {
        const none = await err(url, {});
        assert.equal(none.status, 401, `${what} without a token`);
        assert.equal(none.error?.code, 'GSLB_ERR_AUTH_REQUIRED', what);
        const weak = await err(url, { authorization: `Bearer ${weaker[role]}` });
        assert.equal(weak.status, 403, `${what} with a weaker token`);
        assert.equal(weak.error?.code, 'GSLB_ERR_FORBIDDEN', what);
        seen.auth++;
      }
      const auth: Record<string, string> = role ? { authorization: `Bearer ${tokenFor[role]}` } : {};
      for (const name of params) {
        for (const [n, field] of [[80, `params.${name}`], [300, 'params']] as const) {
          const res = await err(path.replace(/\{([^}]+)\}/g, (_m, p: string) => (p === name ? 'x'.repeat(n) : 'x')), auth);
          assert.equal(res.status, 400, `${what}: a ${n}-character ${name}`);
          assert.equal(res.error?.field, field, `${what}: a ${n}-character ${name}`);
        }
        seen.params++;
      }
      if ((op.parameters ?? []).some((p) => p.in === 'query')) {
        const res = await err(`${url}?no_such_parameter=1`, auth);
        assert.equal(res.status, 400, `${what}: an unknown query parameter`);
        assert.match(res.error?.field ?? '', /^querystring/, what);
        seen.query++;
      }
      if (op.requestBody !== undefined) {
        const res = await err(url, auth, []);
        assert.equal(res.status, 400, `${what}: an array for a body`);
        assert.match(res.error?.field ?? '', /^body/, what);
        seen.body++;
      }
      checked++;
    }
  }
  assert.ok(checked >= 24, `routes checked: ${checked}`);
  assert.ok(seen.auth >= 20 && seen.params >= 5 && seen.query >= 4 && seen.body >= 6, JSON.stringify(seen));
});
