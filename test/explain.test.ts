/**
 * Explain against a running server: GET /v1/explain must give the answer, TTL and ECS scope
 * that the DNS responder gives the same client (source 127.0.0.1, with and without ECS) —
 * raw UDP queries and dig, with admission weights below 1 so that the answer depends on the
 * subnet; and `gridsteer explain` against a spawned server prints that answer, and exits 1
 * with a clear message when the server refuses or cannot be reached.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, run } from './helpers/dig.js';
import { udpExchange, type Endpoint } from './helpers/net.js';
import { cliPath } from './helpers/paths.js';
import { spawnServer, startInProcess, writeTestConfig, type ConfigObject, withRateLimitMode } from './helpers/server.js';
import { QTYPE, buildQuery, ecsOption, parseEcs, parseMessage, rdataAddress } from './helpers/wire.js';
import { sorted } from './helpers/fleet.js';

const NAME = 'api.gslb.example.com';

/** The example fleet, geoip off (everyone at the default location, Ashburn: us-va, then us-tx), Virginia admitting half. */
function withWeights(cfg: ConfigObject): void {
  const policy = (cfg.policy ?? {}) as Record<string, unknown>;
  cfg.policy = { ...policy, weights: { 'us-va': { 'us-va': 0.5 } } };
}

interface Explained {
  answer: { region: string | null; addresses: string[]; ttl: number; ecsScope: number | null; rcode: string };
  usedEcs: boolean;
  subnetKey: string;
  candidates: { region: string; draw?: number; admitted: boolean | null }[];
  located: { country?: string } | null;
  cell: { origin: string };
  geoTable: { compiled: boolean };
}

async function explainOf(http: string, client: string, subnet: string | undefined, type: 'A' | 'AAAA'): Promise<Explained> {
  const u = new URL('/v1/explain', http);
  u.searchParams.set('client', client);
  u.searchParams.set('name', NAME);
  u.searchParams.set('type', type);
  if (subnet !== undefined) u.searchParams.set('subnet', subnet);
  const res = await fetch(u, { signal: AbortSignal.timeout(5000) });
  const body = await res.text();
  assert.equal(res.status, 200, `${u}: ${body}`);
  return JSON.parse(body) as Explained;
}

async function dnsOf(ep: Endpoint, subnet: string | undefined, type: 'A' | 'AAAA'): Promise<{ addresses: string[]; ttl: number[]; scope: number | null; rcode: number }> {
  const q = buildQuery({ name: NAME, qtype: QTYPE[type], edns: { options: subnet === undefined ? [] : [ecsOption(subnet)] } });
  const reply = await udpExchange(ep, q);
  assert.ok(reply, `no reply for ${type} ${subnet}`);
  const m = parseMessage(reply);
  const ecs = m.opt?.options.find((o) => o.code === 8);
  const answers = m.answers.filter((a) => a.type === QTYPE[type]);
  return { addresses: sorted(answers.map(rdataAddress)), ttl: answers.map((a) => a.ttl), scope: ecs ? parseEcs(ecs.data).scopePrefix : null, rcode: m.rcode };
}

test('explain gives what the responder answers: same region, addresses, TTL and ECS scope', async (t) => {
  const cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: about 100 raw UDP queries from 127.0.0.1 for ECS subnets.
    withRateLimitMode(c, 'off');
    withWeights(c);
  });
  t.after(() => cfg.cleanup());
  const srv = await startInProcess({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  const subnets: (string | undefined)[] = [undefined, '0.0.0.0/0', '10.20.0.0/16', 'fd00:1::/48', '2a00:1450:4001::/48', '2001:4860::/32'];
  for (let i = 0; i < 40; i++) subnets.push(`${11 + i}.${(i * 53) & 255}.${(i * 97) & 255}.0/24`);
  for (let i = 0; i < 6; i++) subnets.push(`${60 + i}.${i * 16}.0.0/12`);
  const regions = new Set<string | null>();
  for (const type of ['A', 'AAAA'] as const) {
    for (const subnet of subnets) {
      const e = await explainOf(srv.http, '127.0.0.1', subnet, type);
      const d = await dnsOf(srv.udp, subnet, type);
      const at = `${type} ${subnet ?? '(no ECS)'}: explain ${JSON.stringify(e.answer)} dns ${JSON.stringify(d)}`;
      assert.equal(d.rcode, e.answer.rcode === 'SERVFAIL' ? 2 : 0, at);
      assert.deepEqual(d.addresses, sorted(e.answer.addresses), at);
      for (const ttl of d.ttl) assert.equal(ttl, e.answer.ttl, at);
      assert.equal(d.scope, e.answer.ecsScope, at);
      regions.add(e.answer.region);
    }
  }
  assert.deepEqual(sorted([...regions] as string[]), ['us-tx', 'us-va'], 'with weight 0.5 some subnets stay in Virginia and some spill to Texas');

  // dig, for a few subnets.
  for (const subnet of subnets.slice(6, 10) as string[]) {
    const e = await explainOf(srv.http, '127.0.0.1', subnet, 'A');
    const r = await dig(srv.udp, ['+norec', `+subnet=${subnet}`, NAME, 'A']);
    assert.equal(r.msg.status, 'NOERROR', digSummary(r));
    assert.deepEqual(sorted(r.msg.answer.map((x) => x.data)), sorted(e.answer.addresses), digSummary(r));
    const cs = r.msg.opt?.options.find((o) => o.name === 'CLIENT-SUBNET')?.value;
    assert.equal(cs, `${subnet}/${e.answer.ecsScope}`, digSummary(r));
    assert.ok(e.usedEcs && e.subnetKey === subnet, JSON.stringify(e));
  }
});

test('geoip on: explain locates with the database and agrees with the responder in geoip cells', async (t) => {
  const cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: about 100 raw UDP queries from 127.0.0.1 for ECS subnets.
    withRateLimitMode(c, 'off');
    c.geoip = { enabled: true };
  });
  t.after(() => cfg.cleanup());
  const srv = await startInProcess({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  // The first start compiles the embedded database (10–20 s); later starts load the cached table.
  const deadline = Date.now() + 120_000;
  for (;;) {
    const r = (await (await fetch(`${srv.http}/readyz`, { signal: AbortSignal.timeout(5000) })).json()) as { checks: { name: string; ok: boolean; detail: string }[] };
    const g = r.checks.find((c) => c.name === 'geo');
    if (g?.ok) break;
    assert.ok(Date.now() < deadline, `the geo table never came into force: ${JSON.stringify(g)}`);
    const early = await explainOf(srv.http, '127.0.0.1', '133.242.0.0/24', 'A');
    assert.equal(early.geoTable.compiled, false, 'before the first table: the default table, and explain says so');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const cases: [string, 'A' | 'AAAA', string, string][] = [
    ['133.242.0.0/24', 'A', 'JP', 'ap-tyo'],
    ['87.198.1.0/24', 'A', 'IE', 'eu-ie'],
    ['200.147.0.0/16', 'AAAA', 'BR', 'sa-sao'],
    ['2a01:4f8:1234::/48', 'AAAA', 'DE', 'eu-ie'],
  ];
  for (const [subnet, type, country, region] of cases) {
    const e = await explainOf(srv.http, '127.0.0.1', subnet, type);
    const d = await dnsOf(srv.udp, subnet, type);
    const at = `${subnet} ${type}: explain ${JSON.stringify({ answer: e.answer, located: e.located, cell: e.cell })} dns ${JSON.stringify(d)}`;
    assert.equal(e.located?.country, country, at);
    assert.equal(e.cell.origin, 'geoip', at);
    assert.equal(e.answer.region, region, at);
    assert.deepEqual(d.addresses, sorted(e.answer.addresses), at);
    assert.equal(d.scope, e.answer.ecsScope, at);
    for (const ttl of d.ttl) assert.equal(ttl, e.answer.ttl, at);
  }
});

test('gridsteer explain against a spawned server: the report names the region; errors exit 1', async (t) => {
  const cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: about 100 raw UDP queries from 127.0.0.1 for ECS subnets.
    withRateLimitMode(c, 'off');
    withWeights(c);
  });
  t.after(() => cfg.cleanup());
  const srv = await spawnServer({ configFile: cfg.file });
  t.after(async () => {
    await srv.stop();
  });
  // Find one subnet that spills to Texas and one that stays, from the API.
  let spill: string | undefined;
  let keep: string | undefined;
  for (let i = 0; i < 64 && (!spill || !keep); i++) {
    const subnet = `${20 + i}.1.2.0/24`;
    const e = await explainOf(srv.http, '127.0.0.1', subnet, 'A');
    if (e.answer.region === 'us-tx') spill ??= subnet;
    else keep ??= subnet;
  }
  assert.ok(spill && keep, 'both outcomes occur');
  for (const [subnet, region, addresses] of [
    [spill, 'us-tx', '192.0.2.20 192.0.2.21'],
    [keep, 'us-va', '192.0.2.10 192.0.2.11'],
  ] as const) {
    const r = await run(process.execPath, [cliPath, 'explain', '198.51.100.7', NAME, '--subnet', subnet, '--server', srv.http]);
    assert.equal(r.code, 0, `${r.cmd}\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^answer: ${region} \\(NOERROR\\)  ${addresses}  TTL 30s  ECS scope /24$`, 'm'), r.stdout);
    assert.match(r.stdout, new RegExp(`^api\\.gslb\\.example\\.com A for client 198\\.51\\.100\\.7 with ECS ${subnet.replace(/\./g, '\\.')}$`, 'm'), r.stdout);
    assert.match(r.stdout, region === 'us-va' ? /^>\s+1\s+us-va\s.*\byes\s+weight 0\.5 for home us-va, draw 0\.\d{4} < 0\.5: admitted$/m : /^>\s+2\s+us-tx\s.*\byes\s+weight 1 for home us-va: admitted$/m, r.stdout);
    assert.match(r.stdout, /^\s+rank\s+region\s+km\s+bias\s+biased km\s+weight\s+draw\s+admitted\s+why$/m, r.stdout);
  }
  const json = await run(process.execPath, [cliPath, 'explain', '127.0.0.1', NAME, '--type', 'aaaa', '--server', srv.http, '--json']);
  assert.equal(json.code, 0, json.stderr);
  assert.equal((JSON.parse(json.stdout) as Explained).answer.region !== undefined, true);

  const bad = await run(process.execPath, [cliPath, 'explain', '127.0.0.1', 'nope.gslb.example.com', '--server', srv.http]);
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(bad.stderr, /HTTP 400 GSLB_ERR_VALIDATION: api: querystring\.name "nope\.gslb\.example\.com" is not a steered name; the steered names are: api\.gslb\.example\.com/);
  const usage = await run(process.execPath, [cliPath, 'explain', '127.0.0.1']);
  assert.equal(usage.code, 2, usage.stderr);

  await srv.stop();
  const gone = await run(process.execPath, [cliPath, 'explain', '127.0.0.1', NAME, '--server', srv.http]);
  assert.equal(gone.code, 1, gone.stdout);
  assert.match(gone.stderr, /cannot reach the GridSteer API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
});
