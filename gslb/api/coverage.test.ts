/**
 * Every route, from the OpenAPI description the API serves (itself checked against the route
 * table by openapi.test.ts), refuses bad auth and bad input the same way — before any handler
 * runs (the handlers here throw if reached):
 * - a route with a role: no token → 401 GSLB_ERR_AUTH_REQUIRED; a token of a role that does
 *   not grant it → 403 GSLB_ERR_FORBIDDEN;
 * - a path parameter too long for its schema (80 characters) → 400 naming `params.<name>`, and
 *   one longer than any route takes (300) → 400 naming `params`;
 * - an unknown query parameter → 400 naming `querystring.<name>`, on every route (one that takes
 *   no query too: a parameter it would ignore is a caller's mistake, said, not dropped);
 * - a body of the wrong type (an array) → 400 naming `body` (routes that take a body).
 * And the strict input rules of strict.ts, route by route (second test): every query integer
 * given in a hostile form (`1e400`, `1e309`, `Infinity`, `0x10`, …) and every query text given
 * NULs, control characters or invalid UTF-8 → 400 naming `querystring.<name>`; a parameter
 * given twice → 400; a route without a body refuses one (400 `body`, also 900 KB and 10 000
 * levels deep); a route with a body refuses content types other than JSON in UTF-8 (415
 * `headers.content-type`), a body that is not UTF-8 (400) and text with control characters
 * (400 naming the field); two Authorization headers → 400 `headers.authorization`.
 * Each route's own tests check its meaningful cases; this one makes sure none is left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { pino } from 'pino';
import { buildApi } from './app.js';
import { loadTokens } from '../config/tokens.js';

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
  parameters?: { in: string; name: string; schema?: { type?: string | string[] } }[];
  requestBody?: unknown;
}

async function hostileApp() {
  return buildApi({
    log: pino({ level: 'silent' }),
    tokens: loadTokens({ env: `operator:alice:${OPERATOR},viewer:vic:${VIEWER},ingest:meter:${INGEST}` }),
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: 'f', loadedAt: 0, zones: [], names: [], regions: [] }),
    reload: reached,
    explain: reached,
    state: { ingest: reached, overrides: reached, createOverride: reached, endOverride: reached, audit: reached, demand: reached, plan: () => { throw new Error('a handler ran') }, store: () => { throw new Error('a handler ran') }, confirmLoss: reached },
    operator: { drain: reached, undrain: reached, force: reached, unforce: reached, freeze: reached, distrust: reached, status: reached, preview: reached, enterEvent: reached },
    fleet: reached,
    windows: { list: reached, add: reached, remove: reached, skipNext: reached },
    jobs: { status: reached, practiceRuns: reached },
    quarantine: { view: () => { throw new Error('a handler was reached'); }, end: reached },
    dashboardDir: false,
  });
}

/** One raw HTTP/1.1 exchange on loopback (bounded: 5 s); the whole response as text. */
function rawRequest(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: hostname, port: Number(port) });
    let out = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no response within 5 s to ${request.split('\r\n')[0]}`));
    }, 5000);
    sock.on('data', (d: Buffer) => (out += d.toString('utf8')));
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    sock.write(request);
  });
}

/** Query integers in forms that are not decimal integers (each must be refused naming the parameter). */
export const HOSTILE_INTEGERS = ['1e400', '1e309', 'Infinity', '-Infinity', 'NaN', '0x10', '0o7', '0b1', '1.5', '1e2', '+5', '%205', '5%20', '05', '1_000', '', '99999999999999999999'];
/** Query text that body text refuses too: NUL, control characters, invalid UTF-8 (raw percent-encoded). */
export const HOSTILE_TEXT = ['a%00b', '%01', 'x%1By', '%7F', '%C2%85', '%FF', '%C3%28', '%ED%A0%80', '%EF%BF%BD'];

test('every route: hostile query integers and text, bodies where none is taken, bad content types, two Authorization headers', async (t) => {
  const app = await hostileApp();
  t.after(() => app.close());
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const spec = (await app.inject({ method: 'GET', url: '/docs' })).json() as { paths: Record<string, Record<string, Operation>> };
  const seen = { integers: 0, texts: 0, noBody: 0, body: 0, auth: 0 };
  const big = JSON.stringify({ pad: 'x'.repeat(900_000) });
  const deep = '['.repeat(10_000) + ']'.repeat(10_000);
  for (const [path, ops] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method === 'head') continue;
      const M = method.toUpperCase() as 'GET' | 'POST' | 'DELETE';
      const url = path.replace(/\{([^}]+)\}/g, 'x');
      const what = `${M} ${path}`;
      const role = op['x-gridsteer-role'];
      const auth: Record<string, string> = role ? { authorization: `Bearer ${tokenFor[role]}` } : {};
      const send = async (u: string, headers: Record<string, string> = {}, payload?: string | Buffer) => {
        const res = await app.inject({ method: M, url: u, headers: { ...auth, ...headers }, ...(payload === undefined ? {} : { payload }) });
        return { status: res.statusCode, error: (res.json() as { error?: { code: string; field?: string; message: string } }).error };
      };
      if (role) {
        // Two Authorization headers, over a real socket (inject folds header names): the first a valid token.
        const raw = await rawRequest(base, `${M} ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tokenFor[role]}\r\nAuthorization: Bearer ${weaker[role]}\r\nConnection: close\r\n\r\n`);
        assert.match(raw, /^HTTP\/1\.1 400 /, `${what} with two Authorization headers: ${raw.slice(0, 300)}`);
        assert.match(raw, /"field":"headers\.authorization"/, what);
        seen.auth++;
      }
      const query = (op.parameters ?? []).filter((p) => p.in === 'query');
      // Every other query parameter of the route left out: the one probed is the one at fault.
      for (const p of query) {
        const isInt = [p.schema?.type].flat().some((x) => x === 'integer' || x === 'number');
        for (const v of isInt ? HOSTILE_INTEGERS : HOSTILE_TEXT) {
          const r = await send(`${url}?${p.name}=${v}`);
          assert.equal(r.status, 400, `${what}?${p.name}=${v}: ${JSON.stringify(r.error)}`);
          assert.equal(r.error?.field, `querystring.${p.name}`, `${what}?${p.name}=${v}`);
        }
        const twice = await send(`${url}?${p.name}=1&${p.name}=2`);
        assert.equal(twice.status, 400, `${what}: ${p.name} twice`);
        assert.equal(twice.error?.field, `querystring.${p.name}`);
        if (isInt) seen.integers++;
        else seen.texts++;
      }
      if (op.requestBody === undefined) {
        if (M === 'GET') continue;
        for (const [name, payload] of [['{}', '{}'], ['900 KB', big], ['10 000 levels', deep]] as const) {
          const r = await send(url, { 'content-type': 'application/json' }, payload);
          assert.equal(r.status, 400, `${what} with a ${name} body: ${JSON.stringify(r.error)}`);
          assert.equal(r.error?.field, 'body', `${what} with a ${name} body`);
        }
        seen.noBody++;
      } else {
        for (const ct of ['application/json; charset=utf-16', 'application/json;;;', ' application/json', 'application/json; charset=latin1', 'application/json; boundary=x', 'text/plain', 'application/jsonx']) {
          const r = await send(url, { 'content-type': ct }, '{}');
          assert.equal(r.status, 415, `${what} as ${JSON.stringify(ct)}: ${JSON.stringify(r.error)}`);
          assert.equal(r.error?.field, 'headers.content-type', `${what} as ${ct}`);
        }
        const notUtf8 = await send(url, { 'content-type': 'application/json' }, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]));
        assert.equal(notUtf8.status, 400, `${what}: a body that is not UTF-8`);
        assert.equal(notUtf8.error?.code, 'GSLB_ERR_BAD_JSON');
        const nul = await send(url, { 'content-type': 'application/json' }, '{"reason":"a\\u0000b"}');
        assert.equal(nul.status, 400, `${what}: a NUL in body text`);
        assert.equal(nul.error?.field, 'body.reason', what);
        const deepBody = await send(url, { 'content-type': 'application/json' }, `{"reason":${deep}}`);
        assert.equal(deepBody.status, 400, `${what}: a body 10 000 levels deep`);
        assert.match(deepBody.error?.field ?? '', /^body/, what);
        seen.body++;
      }
    }
  }
  assert.ok(seen.integers >= 2 && seen.texts >= 4 && seen.noBody >= 3 && seen.body >= 6 && seen.auth >= 20, JSON.stringify(seen));
});

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
    operator: { drain: reached, undrain: reached, force: reached, unforce: reached, freeze: reached, distrust: reached, status: reached, preview: reached, enterEvent: reached },
    fleet: reached,
    windows: { list: reached, add: reached, remove: reached, skipNext: reached },
    jobs: { status: reached, practiceRuns: reached },
    quarantine: { view: () => { throw new Error('a handler was reached'); }, end: reached },
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
        return { status: res.statusCode, error: (res.json() as { error?: { code: string; field?: string; message?: string } }).error };
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
      {
        const res = await err(`${url}?no_such_parameter=1`, auth);
        assert.equal(res.status, 400, `${what}: an unknown query parameter`);
        assert.equal(res.error?.field, 'querystring.no_such_parameter', what);
        assert.match(res.error?.message ?? '', /is not a known field/, what);
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
  assert.ok(seen.auth >= 20 && seen.params >= 5 && seen.query >= 24 && seen.body >= 6, JSON.stringify(seen));
});
