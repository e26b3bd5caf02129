/**
 * The OpenAPI description served at /docs is generated from the routes' own schemas: every
 * route the API has is in it (with its role, when it needs one), every path in it is a route,
 * and docs/api.md has a section for every route.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { buildApi, routeTables } from './app.js';
import { loadTokens } from '../config/tokens.js';

const never = async (): Promise<never> => {
  throw new Error('not called: this test reads the route table');
};

async function app() {
  return buildApi({
    log: pino({ level: 'silent' }),
    tokens: loadTokens({ env: 'operator:alice:operator-token-0123456789abcdef' }),
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: 'f', loadedAt: 0, zones: [], names: [], regions: [] }),
    reload: never,
    explain: never,
    state: { ingest: never, overrides: never, createOverride: never, endOverride: never, audit: never, demand: never, plan: () => ({ version: 'v', configHash: 'c', storeRevision: 0, computedAt: 0, regions: {} }), store: () => ({ backend: 'memory', ready: true, stale: false, detail: '', loss: null, losses: 0 }), confirmLoss: never },
    operator: { drain: never, undrain: never, force: never, unforce: never, freeze: never, distrust: never, status: never, preview: never, enterEvent: never },
    fleet: never,
    windows: { list: never, add: never, remove: never, skipNext: never },
    jobs: { status: never, practiceRuns: never },
    quarantine: { view: () => { throw new Error('not reached'); }, end: never },
  });
}

test('every route is in the OpenAPI description at /docs, with its role; every documented path is a route; docs/api.md has each', async (t) => {
  const a = await app();
  t.after(() => a.close());
  await a.ready();
  const routes = [...new Set(routeTables.get(a)!)]
    .map((r) => r.replace(/:([A-Za-z]+)/g, '{$1}'))
    .sort();
  assert.ok(routes.length >= 19, `the route table was read: ${routes.join(', ')}`);
  const res = await a.inject({ method: 'GET', url: '/docs' });
  assert.equal(res.statusCode, 200);
  const spec = res.json() as { openapi: string; paths: Record<string, Record<string, { description?: string; 'x-gridsteer-role'?: string; security?: unknown }>> };
  assert.equal(spec.openapi, '3.1.0');
  const documented = Object.entries(spec.paths)
    .flatMap(([path, ops]) => Object.keys(ops).filter((m) => m !== 'head').map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
  assert.deepEqual(documented, routes);
  // Roles: what requireRole checks is what the description says.
  const role = (m: string, p: string) => spec.paths[p]?.[m]?.['x-gridsteer-role'];
  assert.equal(role('post', '/v1/regions/{id}/drain'), 'operator');
  assert.equal(role('get', '/v1/status'), 'viewer');
  assert.equal(role('post', '/v1/signals'), 'ingest');
  assert.equal(role('get', '/healthz'), undefined, 'open routes need no token');
  assert.match(spec.paths['/v1/plan/preview']!.post!.description!, /^Role: operator\./);
  const yaml = await a.inject({ method: 'GET', url: '/docs/openapi.yaml' });
  assert.equal(yaml.statusCode, 200);
  assert.match(yaml.body, /^openapi: 3\.1\.0/m);
  // docs/api.md has a heading per route (`### \`METHOD /path\``, params as :name).
  const md = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const headings = new Set([...md.matchAll(/^### `([A-Z]+) ([^`?\s]+)/gm)].map((m) => `${m[1]} ${m[2]!.replace(/:([A-Za-z]+)/g, '{$1}')}`));
  const missing = routes.filter((r) => !headings.has(r));
  assert.deepEqual(missing, [], 'routes without a section in docs/api.md');
});

test("docs/api.md's roles table names every route only a role's own tokens may use, and promises no route to come", async (t) => {
  const a = await app();
  t.after(() => a.close());
  await a.ready();
  const spec = (await a.inject({ method: 'GET', url: '/docs' })).json() as { paths: Record<string, Record<string, { 'x-gridsteer-role'?: string }>> };
  const md = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const table = md.slice(md.indexOf('Each token has one role'));
  const rows = new Map([...table.slice(0, table.indexOf('\n\n', table.indexOf('| Role'))).matchAll(/^\| `([a-z]+)` \| (.*) \|$/gm)].map((m) => [m[1]!, m[2]!]));
  assert.deepEqual([...rows.keys()].sort(), ['ingest', 'operator', 'viewer']);
  for (const [name, text] of rows) assert.doesNotMatch(text, /\b(yet|later)\b/, `the ${name} row speaks of routes to come: ${text}`);
  // No other role is granted ingest's routes (gslb/api/auth.ts roleGrants): the row names each.
  const ingest = Object.entries(spec.paths).flatMap(([path, ops]) => Object.entries(ops).filter(([, op]) => op['x-gridsteer-role'] === 'ingest').map(([m]) => `${m.toUpperCase()} ${path}`));
  assert.ok(ingest.length >= 1, 'POST /v1/signals needs ingest');
  for (const r of ingest) assert.ok(rows.get('ingest')!.includes(r), `the ingest row names ${r}: ${rows.get('ingest')}`);
});
