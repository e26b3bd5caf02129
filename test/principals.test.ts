/**
 * No feed can speak for another (issue 28, ADR 0021), through the running server with the
 * embedded store: ingest tokens are granted source prefixes (optionally per region), a signal
 * outside its grant or in a reserved namespace (manual/, a configured collector's prefix) is
 * refused with 403 naming `body.signals[i].source` and nothing of the batch is stored, a token
 * without a grant posts only where no one else speaks, each stored fact shows its principal,
 * one principal's live record is never replaced by another's, per-principal quotas answer 429,
 * and overlapping grants are refused at load (serve and check-config), naming both.
 * No DNS is sent: the rate limiter is not involved.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { apiCall, type ApiReply } from './helpers/api.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { cliPath } from './helpers/paths.js';

const BRIDGE = 'principals-bridge-token-5f1a0c';
const PROBER = 'principals-prober-token-77d2e9';
const OTHER = 'principals-other-token-0b4c13';
const OPERATOR = 'principals-operator-token-c3a9';
const sha = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');

let cfg: TestConfig;
let srv: RunningServer;

function tokensFile(dir: string, extra: Record<string, unknown>[] = []): void {
  writeFileSync(
    join(dir, 'tokens.yaml'),
    stringify({
      tokens: [
        { name: 'bridge', role: 'ingest', sha256: sha(BRIDGE), grants: [{ source: 'utility/', regions: ['us-va', 'us-tx'] }, 'ercot/'] },
        { name: 'alice', role: 'operator', sha256: sha(OPERATOR) },
        ...extra,
      ],
    }),
  );
}

before(async () => {
  cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    // A configured collector reserves its prefix (prometheus-rw/); loopback, so no warning.
    (c as Record<string, unknown>).collectors = { 'prometheus-remote-write': { listen: '127.0.0.1:0', sources: [{ region: 'us-va', match: { job: 'vllm' } }] } };
    (c as Record<string, unknown>).ingest = { perMinute: 40, liveRecords: 12 };
    // Bindings as docs/grid-policy.md shows them: the bridge's ERCOT feed and the prober's own prefix.
    const policy = ((c as Record<string, unknown>).policy ?? {}) as Record<string, unknown>;
    (c as Record<string, unknown>).policy = { ...policy, grid: { ...((policy.grid as object) ?? {}), loss: { bindings: { 'ercot/': ['us-tx'], 'prober/': ['us-va'] } } } };
  });
  tokensFile(cfg.dir);
  // Two ungranted ingest tokens from the environment, as the README's prober.
  srv = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_TOKENS: `ingest:prober:${PROBER},ingest:other:${OTHER}` } });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(srv.http, method, path, token, body);
const now = () => Date.now();
const probe = (source: string, region = 'us-va', key = 'e1') => ({ region, kind: 'health.probe', source, key, observedAt: now(), expiresAt: now() + 60_000, value: { up: true } });
const post = (token: string, ...signals: unknown[]) => api('POST', '/v1/signals', token, { signals });
const err = (r: ApiReply) => r.body.error as { code: string; message: string; field?: string; details?: Record<string, unknown> };

/** Polls `fn` until it returns a value (bounded: 50 tries, 100 ms apart): the views read the snapshot the plan in force came from. */
async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 50; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: never seen`);
}

async function signalsOf(region: string): Promise<{ source: string; key: string; principal?: string; grant?: string }[]> {
  const r = await api('GET', `/v1/regions/${region}`, OPERATOR);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body.signals as { source: string; key: string; principal?: string; grant?: string }[]) ?? [];
}

test('grants and reserved namespaces, case table: 403 naming body.signals[i].source, and nothing of the batch stored', async () => {
  const cases: { name: string; token: string; signals: unknown[]; field: string; why: RegExp }[] = [
    { name: 'a granted token outside its grants', token: BRIDGE, signals: [probe('utility/ok-1'), probe('caiso/x')], field: 'body.signals[1].source', why: /token "bridge" may post only under its grants \(utility\/ \(us-tx, us-va\); ercot\/ \(every region\)\); caiso\/x about us-va is outside them/ },
    { name: 'a granted prefix in a region outside the grant', token: BRIDGE, signals: [probe('utility/x', 'eu-ie')], field: 'body.signals[0].source', why: /utility\/x about eu-ie is outside them/ },
    { name: 'an ungranted token in another token\'s grant', token: PROBER, signals: [probe('prober/ok-1'), probe('utility/feeder-9')], field: 'body.signals[1].source', why: /utility\/feeder-9 is in utility\/, granted to token "bridge"/ },
    { name: 'an ungranted token in the operator route\'s namespace', token: PROBER, signals: [probe('manual/alice')], field: 'body.signals[0].source', why: /reserved for the operator route/ },
    { name: 'an ungranted token in a configured collector\'s namespace', token: PROBER, signals: [probe('prometheus-rw/node-a')], field: 'body.signals[0].source', why: /prometheus-rw\/node-a is in prometheus-rw\/, reserved for collector prometheus-remote-write/ },
  ];
  for (const c of cases) {
    const r = await post(c.token, ...c.signals);
    assert.equal(r.status, 403, `${c.name}: ${JSON.stringify(r.body)}`);
    assert.equal(err(r).code, 'GSLB_ERR_NOT_GRANTED', c.name);
    assert.equal(err(r).field, c.field, c.name);
    assert.match(err(r).message, c.why, c.name);
    assert.match(err(r).message, /nothing of the request was stored/, c.name);
  }
  // The good signals of the refused batches were not stored either.
  const stored = (await signalsOf('us-va')).map((s) => s.source);
  for (const s of ['utility/ok-1', 'prober/ok-1']) assert.ok(!stored.includes(s), `${s} was stored from a refused batch: ${stored.join(', ')}`);
});

test('what a token may post is stored with its principal and grant, shown in GET /v1/regions/:id and /v1/grid-events', async () => {
  const event = { region: 'us-tx', kind: 'grid.event', source: 'ercot/eea', key: 'ev-1', observedAt: now(), expiresAt: now() + 3_600_000, value: { id: 'ev-1', type: 'load-shed', start: now() + 1_800_000, end: now() + 3_000_000 } };
  assert.equal((await post(BRIDGE, probe('utility/feeder-1'), event)).status, 200);
  assert.equal((await post(PROBER, probe('prober/dub-1'))).status, 200);
  const fact = await until('utility/feeder-1', async () => (await signalsOf('us-va')).find((s) => s.source === 'utility/feeder-1'));
  assert.deepEqual([fact.principal, fact.grant], ['token:bridge', 'utility/']);
  const loose = await until('prober/dub-1', async () => (await signalsOf('us-va')).find((s) => s.source === 'prober/dub-1'));
  assert.equal(loose.principal, 'token:prober');
  assert.equal(loose?.grant, undefined, 'an ungranted token\'s fact has no grant');
  const gridEvents = async () => (await api('GET', '/v1/grid-events', OPERATOR)).body.events as { source: string; principal?: string; grant?: string }[];
  const ev = await until('ercot/eea', async () => (await gridEvents()).find((e) => e.source === 'ercot/eea'));
  assert.equal(ev?.principal, 'token:bridge');
  assert.equal(ev?.grant, 'ercot/');
  // The operator route writes manual/<name> as the operator's token.
  const manual = await api('POST', '/v1/grid-events', OPERATOR, { region: 'us-va', id: 'call-1', type: 'load-shed', start: now() + 3_600_000, end: now() + 7_200_000 });
  assert.ok(manual.status === 200 || manual.status === 201, JSON.stringify(manual.body));
  const m = await until('manual/alice', async () => (await gridEvents()).find((e) => e.source === 'manual/alice'));
  assert.deepEqual([m?.principal, m?.grant], ['token:alice', 'manual/']);
});

test("one principal's live record is never replaced by another's: the write comes back held, naming the holder", async () => {
  assert.deepEqual((await post(PROBER, probe('shared/x', 'us-va', 'k'))).body.results, [{ stored: true }]);
  const r = await post(OTHER, probe('shared/x', 'us-va', 'k'));
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.results, [{ stored: false, reason: "held: the record is token:prober's until it expires" }]);
  const rec = await until('shared/x', async () => (await signalsOf('us-va')).find((s) => s.source === 'shared/x'));
  assert.equal(rec?.principal, 'token:prober');
});

test('quotas per principal: live records and signals per minute answer 429 GSLB_ERR_QUOTA with Retry-After; refreshing held records is never refused', async () => {
  // `other` holds nothing live yet (its only write was refused): 12 live records at most.
  const batch = Array.from({ length: 12 }, (_, i) => probe('other/meter', 'us-va', `m${i}`));
  assert.equal((await post(OTHER, ...batch)).status, 200);
  const over = await post(OTHER, probe('other/meter', 'us-va', 'm12'));
  assert.equal(over.status, 429, JSON.stringify(over.body));
  assert.equal(err(over).code, 'GSLB_ERR_QUOTA');
  assert.deepEqual(err(over).details, { principal: 'token:other', quota: 'liveRecords' });
  assert.match(err(over).message, /token:other holds 12 live records and this batch adds 1; at most 12 per principal/);
  // Refreshing the 12 it holds adds nothing: taken (the minute's budget: 13 of 40 so far).
  const again = batch.map((s) => ({ ...s, observedAt: s.observedAt + 1000 }));
  assert.equal((await post(OTHER, ...again)).status, 200);
  // Signals per minute: 40 per principal, so the next refresh (12 more: 38) fits and the one after does not.
  const third = again.map((s) => ({ ...s, observedAt: s.observedAt + 1000 }));
  assert.equal((await post(OTHER, ...third)).status, 200);
  const fast = await post(OTHER, ...third.map((s) => ({ ...s, observedAt: s.observedAt + 1000 })));
  assert.equal(fast.status, 429);
  assert.deepEqual(err(fast).details, { principal: 'token:other', quota: 'perMinute' });
  // Another principal is not limited by it.
  assert.equal((await post(PROBER, probe('prober/dub-2'))).status, 200);
  const metrics = await (await fetch(`${srv.http}/metrics`)).text();
  assert.match(metrics, /gridsteer_ingest_refused_total\{principal="token:other",why="quota"\} 2/);
  assert.match(metrics, /gridsteer_ingest_refused_total\{principal="token:bridge",why="forbidden"\} 2/);
});

test('trust decisions are audit entries naming the principal: trusted under a grant, untrusted without one', async () => {
  const shed = (source: string, region: string, id: string) => ({ region, kind: 'grid.event', source, key: id, observedAt: now(), expiresAt: now() + 3_600_000, value: { id, type: 'load-shed', start: now() + 1_800_000, end: now() + 3_000_000 } });
  assert.equal((await post(BRIDGE, shed('ercot/eea', 'us-tx', 'ev-9'))).status, 200);
  assert.equal((await post(PROBER, shed('prober/grid', 'us-va', 'pg-1'))).status, 200);
  type Entry = { actor: string; action: string; target: string; reason: string; after: { principal?: string } };
  const entry = (target: string) => until(target, async () => ((await api('GET', '/v1/audit?limit=100', OPERATOR)).body.entries as Entry[]).find((e) => e.target === target));
  const trusted = await entry('loss:us-tx:ercot/eea:ev-9');
  assert.deepEqual([trusted.actor, trusted.action, trusted.after.principal], ['planner', 'trust.trusted', 'token:bridge']);
  assert.match(trusted.reason, /ercot\/eea \(token:bridge\) is bound to us-tx/);
  const loose = await entry('loss:us-va:prober/grid:pg-1');
  assert.deepEqual([loose.action, loose.after.principal], ['trust.untrusted', 'token:prober']);
  assert.match(loose.reason, /without a grant/);
  // The same decision again (a re-post of the same content) adds no entry.
  await post(BRIDGE, { ...shed('ercot/eea', 'us-tx', 'ev-9') });
  await new Promise((r) => setTimeout(r, 500));
  const all = (await api('GET', '/v1/audit?limit=200', OPERATOR)).body.entries as Entry[];
  assert.equal(all.filter((e) => e.target === 'loss:us-tx:ercot/eea:ev-9').length, 1);
});

test("an operator corrects another principal's event (audited); the correction holds against the feed's re-post until it expires", async () => {
  const start = now() + 1_800_000;
  const ev = (cancelled = false) => ({ region: 'us-tx', kind: 'grid.event', source: 'ercot/eea', key: 'ev-c', observedAt: now(), expiresAt: now() + 3_600_000, value: { id: 'ev-c', type: 'load-shed', start, end: start + 1_200_000, ...(cancelled ? { cancelled: true } : {}) } });
  assert.equal((await post(BRIDGE, ev())).status, 200);
  // No one else may cancel it under its name.
  assert.equal((await post(PROBER, ev(true))).status, 403);
  const body = { region: 'us-tx', id: 'ev-c', type: 'load-shed', start, end: start + 1_200_000, cancelled: true, source: 'ercot/eea' };
  const noReason = await api('POST', '/v1/grid-events', OPERATOR, body);
  assert.equal(noReason.status, 400);
  assert.equal(err(noReason).field, 'body.reason');
  const unknown = await api('POST', '/v1/grid-events', OPERATOR, { ...body, id: 'ev-none', reason: 'x' });
  assert.equal(unknown.status, 400);
  assert.equal(err(unknown).field, 'body.source');
  const fixed = await api('POST', '/v1/grid-events', OPERATOR, { ...body, reason: 'ERCOT confirmed by phone: the order was withdrawn' });
  assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
  assert.equal(fixed.body.stored, true);
  type View = { source: string; key: string; principal?: string; cancelled: boolean };
  const seen = await until('the correction', async () => (((await api('GET', '/v1/grid-events', OPERATOR)).body.events as View[]).find((e) => e.key === 'ev-c' && e.cancelled)));
  assert.deepEqual([seen.source, seen.principal], ['ercot/eea', 'token:alice']);
  const audit = ((await api('GET', '/v1/audit?limit=50', OPERATOR)).body.entries as { action: string; actor: string; target: string; reason: string; before: { principal: string } }[]).find((e) => e.action === 'signal.correct');
  assert.deepEqual([audit?.actor, audit?.target, audit?.before.principal], ['alice', 'signal:us-tx|grid.event|ercot/eea|ev-c', 'token:bridge']);
  // The feed's next poll says the same as before: held, the operator's correction stands.
  const again = await post(BRIDGE, ev());
  assert.deepEqual(again.body.results, [{ stored: false, reason: "held: the record is token:alice's until it expires" }]);
});

function checkConfig(env: Record<string, string>, file = cfg.file): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, 'check-config', '--config', file], { env: { ...process.env, ...env }, timeout: 30_000 }, (e, stdout, stderr) => {
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, out: `${stdout}${stderr}` });
    });
  });
}

test('overlapping grants and grants over a reserved namespace are refused at load, naming both; check-config says the same', async () => {
  const ok = await checkConfig({ GRIDSTEER_TOKENS: `ingest:prober:${PROBER}` });
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /3 token\(s\)/);
  const cases: [string, string, RegExp][] = [
    ['an env grant inside a file grant', `ingest:feed[utility/feeder-=us-va]:${OTHER}`, /the grant utility\/feeder- \(us-va\) of token "feed" overlaps the grant utility\/ \(us-tx, us-va\) of token "bridge" \(.*tokens\.yaml:\d+: tokens\[0\]\)/],
    ['a grant over a configured collector\'s prefix', `ingest:feed[prometheus-rw/]:${OTHER}`, /the grant prometheus-rw\/ \(every region\) covers prometheus-rw\/, reserved for collector prometheus-remote-write/],
    ['a grant over manual/', `ingest:feed[manual/]:${OTHER}`, /covers manual\/, reserved for the operator route/],
    ['a grant naming a region not in the fleet', `ingest:feed[acme/=mars-1]:${OTHER}`, /names mars-1, not a region of this fleet/],
    ['a grant on an operator token', `operator:bob[acme/]:${OTHER}`, /grants are for ingest tokens/],
  ];
  for (const [name, env, want] of cases) {
    const r = await checkConfig({ GRIDSTEER_TOKENS: env });
    assert.equal(r.code, 1, `${name}: ${r.out}`);
    assert.match(r.out, want, name);
    assert.ok(!r.out.includes(OTHER), `${name}: the token is never echoed`);
  }
  // Disjoint regions on one prefix do not overlap.
  const disjoint = await checkConfig({ GRIDSTEER_TOKENS: `ingest:feed[utility/=eu-ie]:${OTHER}` });
  assert.equal(disjoint.code, 0, disjoint.out);
});

test('check-config warns about a receiver beyond loopback without a token (anyone reaching it speaks as the collector), and not with one', async (t) => {
  const open = writeTestConfig((c) => {
    (c as Record<string, unknown>).collectors = { 'prometheus-remote-write': { listen: '0.0.0.0:9091', sources: [{ region: 'us-va', match: { job: 'vllm' } }] } };
  });
  t.after(() => open.cleanup());
  const r = await checkConfig({ GRIDSTEER_TOKENS: '' }, open.file);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /warning: collectors\.prometheus-remote-write\.listen: 0\.0\.0\.0:9091 is reachable beyond loopback and bearerToken is not set/);
  const closed = writeTestConfig((c) => {
    (c as Record<string, unknown>).collectors = { 'prometheus-remote-write': { listen: '0.0.0.0:9091', bearerToken: 'remote-write-token-0123456789', sources: [{ region: 'us-va', match: { job: 'vllm' } }] } };
  });
  t.after(() => closed.cleanup());
  const ok = await checkConfig({ GRIDSTEER_TOKENS: '' }, closed.file);
  assert.equal(ok.code, 0, ok.out);
  assert.doesNotMatch(ok.out, /warning/);
});
