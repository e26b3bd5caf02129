import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderExplain, runExplain, type CliIo } from './explain.js';
import { explainQuery } from '../serve/serving.js';
import { context, NOW, planWith } from '../../test/helpers/explain-fixture.js';

function io(reply: (url: URL, init: RequestInit) => Response | Promise<Response>, env: NodeJS.ProcessEnv = {}): CliIo & { stdout: string; stderr: string; urls: URL[]; inits: RequestInit[] } {
  const o = {
    stdout: '',
    stderr: '',
    urls: [] as URL[],
    inits: [] as RequestInit[],
    env,
    out: (s: string) => void (o.stdout += s),
    err: (s: string) => void (o.stderr += s),
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const u = new URL(String(input));
      o.urls.push(u);
      o.inits.push(init ?? {});
      return reply(u, init ?? {});
    }) as typeof fetch,
  };
  return o;
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

test('runExplain: the query it sends, the token, and the report', async () => {
  const result = await explainQuery(context(), { client: '10.0.0.1', name: 'api.gslb.example.com', type: 'AAAA', subnet: '3.7.0.0/16' }, NOW);
  const o = io(() => json(200, result), { GRIDSTEER_TOKEN: 'tok-0123456789abcdef', GRIDSTEER_SERVER: 'http://10.9.9.9:8053/' });
  assert.equal(await runExplain(['10.0.0.1', 'api.gslb.example.com', '--type', 'aaaa', '--subnet', '3.7.0.0/16'], o), 0, o.stderr);
  assert.equal(o.urls[0]!.href, 'http://10.9.9.9:8053/v1/explain?client=10.0.0.1&name=api.gslb.example.com&type=AAAA&subnet=3.7.0.0%2F16');
  assert.equal((o.inits[0]!.headers as Record<string, string>).authorization, 'Bearer tok-0123456789abcdef');
  assert.equal(o.stdout, renderExplain(result));
  assert.match(o.stdout, /^api\.gslb\.example\.com AAAA for client 10\.0\.0\.1 with ECS 3\.7\.0\.0\/16$/m);
  assert.match(o.stdout, /^ {2}subnet key {6}3\.7\.0\.0\/16 \(from the ECS subnet\)$/m);
  assert.match(o.stdout, /^ {2}located {9}Middleton, DE at 49\.90, 9\.80 \(3\.7\.0\.0\)$/m);
  assert.match(o.stdout, /^ {2}cell {12}3\.0\.0\.0\/8, placed by the GeoIP database$/m);
  assert.match(o.stdout, /^ {2}ranking {9}b > a > c$/m);
  assert.match(o.stdout, /^ {3}1 {5}b .* no {8}has no IPv6 endpoints: skipped for AAAA$/m);
  assert.match(o.stdout, /^> {2}2 {5}a .* yes {7}weight 1 for home b: admitted$/m);
  assert.match(o.stdout, /^answer: a \(NOERROR\) {2}2001:db8:a::1 {2}TTL 30s {2}ECS scope \/8$/m);
  assert.match(o.stdout, /^reasons:\n {2}- client placed by the GeoIP database$/m);

  const j = io(() => json(200, result));
  assert.equal(await runExplain(['10.0.0.1', 'api.gslb.example.com', '--json', '--server', 'http://h:1', '--token', 'x'], j), 0);
  assert.deepEqual(JSON.parse(j.stdout), JSON.parse(JSON.stringify(result)));
  assert.equal(j.urls[0]!.origin, 'http://h:1');
});

test('runExplain: usage errors exit 2; refusals and unreachable servers exit 1 with the reason', async () => {
  for (const args of [[], ['1.2.3.4'], ['1.2.3.4', 'n', 'extra'], ['1.2.3.4', 'n', '--type', 'MX'], ['1.2.3.4', 'n', '--bogus'], ['1.2.3.4', 'n', '--server', 'not a url']]) {
    const o = io(() => json(200, {}));
    assert.equal(await runExplain(args, o), 2, `${args.join(' ')}: ${o.stderr}`);
    assert.equal(o.urls.length, 0);
    assert.match(o.stderr, /^gridsteer: /);
  }
  const help = io(() => json(200, {}));
  assert.equal(await runExplain(['--help'], help), 0);
  assert.match(help.stdout, /^usage: gridsteer explain <client-ip> <name>/);

  const refused = io(() => json(400, { error: { code: 'GSLB_ERR_VALIDATION', message: 'api: querystring.name "x" is not a steered name; the steered names are: api.gslb.example.com', field: 'querystring.name' } }));
  assert.equal(await runExplain(['1.2.3.4', 'x'], refused), 1);
  assert.equal(refused.stderr, 'gridsteer: the server refused: HTTP 400 GSLB_ERR_VALIDATION: api: querystring.name "x" is not a steered name; the steered names are: api.gslb.example.com\n');

  const noToken = io(() => json(401, { error: { code: 'GSLB_ERR_AUTH_REQUIRED', message: 'api: this request needs a bearer token with role viewer; …' } }));
  assert.equal(await runExplain(['1.2.3.4', 'x'], noToken), 1);
  assert.match(noToken.stderr, /pass a viewer token with --token or \$GRIDSTEER_TOKEN/);

  const html = io(() => new Response('<html>hi</html>', { status: 200 }));
  assert.equal(await runExplain(['1.2.3.4', 'x'], html), 1);
  assert.match(html.stderr, /answered HTTP 200 with something that is not JSON/);

  const down = io(() => {
    throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
  });
  assert.equal(await runExplain(['1.2.3.4', 'x'], down), 1);
  assert.equal(down.stderr, 'gridsteer: cannot reach the GridSteer API at http://127.0.0.1:8053 (ECONNREFUSED); is the server running? (--server or $GRIDSTEER_SERVER)\n');
});

test('renderExplain: fallback, special cell, spill with draws, whenAllDown', async () => {
  const fallback = renderExplain(await explainQuery(context(), { client: '127.0.0.1', name: 'www.gslb.example.com', type: 'A', subnet: '10.9.0.0/16' }, NOW));
  assert.match(fallback, /^www\.gslb\.example\.com \(→ api\.gslb\.example\.com\) A for client 127\.0\.0\.1 with ECS 10\.9\.0\.0\/16$/m);
  assert.match(fallback, /^ {2}subnet key {6}0\.0\.0\.0\/0 \(the special cell: no usable address\)$/m);
  assert.match(fallback, /^ {2}ECS not used {4}the ECS subnet 10\.9\.0\.0\/16 is private/m);
  assert.match(fallback, /^ {2}located {9}not looked up in the database \(see notes\)$/m);
  assert.match(fallback, /^ {2}cell {12}no range \(special cell\), placed by the default location/m);

  const ctx = context({ plan: planWith({ weights: { a: { a: 0 } } }) });
  const spill = renderExplain(await explainQuery(ctx, { client: '1.2.3.4', name: 'api.gslb.example.com', type: 'A' }, NOW));
  assert.match(spill, /^ {3}1 {5}a .* 0 {7}0\.\d{4} {2}no {8}weight 0 for home a, draw 0\.\d{4} ≥ 0: not admitted, spills to the next$/m);
  assert.match(spill, /^> {2}2 {5}b /m);

  const all = renderExplain(await explainQuery(context({ plan: planWith({ down: ['a', 'b', 'c'] }), whenAllDown: 'all' }), { client: '1.2.3.4', name: 'api.gslb.example.com', type: 'A' }, NOW));
  assert.match(all, /^answer: every serving region \(NOERROR\) {2}192\.0\.2\.1 192\.0\.2\.2 192\.0\.2\.3 192\.0\.2\.4 {2}TTL 30s {2}no ECS in the reply$/m);
  const empty = renderExplain(await explainQuery(context({ plan: planWith({ down: ['a', 'b', 'c'] }), whenAllDown: 'empty' }), { client: '1.2.3.4', name: 'api.gslb.example.com', type: 'A' }, NOW));
  assert.match(empty, /^answer: no region \(NOERROR, NODATA\) {2}- {2}TTL 30s/m);
});
