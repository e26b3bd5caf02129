/**
 * Correlated grid events in the running server, watched with dig over a test clock (issue 17,
 * "Done when"): load-shed orders for us-va and us-tx — the default location's first two
 * regions, 55.8 % of the example fleet's capacity together — overlapping in time, learned 600 s
 * and 900 s ahead from one source bound to both. Beyond the automation safety limit
 * (maxAutoShare 0.5) the second is planned anyway, because it is a trusted physical loss
 * (docs/adr/0014-physical-loss.md): from each region's reach (T − 335 s) no answer names it,
 * clients go to the next region that stays up, and the plan, /v1/status and /metrics carry
 * the alert. Then `POST /v1/grid/distrust` makes the claims untrusted: us-tx is held by the
 * safety limit again and the alerts say it waits for an operator.
 *
 * The server runs with GRIDSTEER_TEST_CLOCK at 20× (gslb/platform/clock.ts). Every wait is
 * bounded in count; no assertion depends on how long anything took.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { testClock } from './helpers/test-clock.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';
import { describeMetric, scrape, sumOf } from './helpers/metrics.js';

const OPERATOR = 'overlap-dig-operator-token-31c9';
const INGEST = 'overlap-dig-ingest-token-0b7e';
const RATE = 20;
const clock = testClock(Date.UTC(2027, 6, 20, 21, 0, 0), RATE);
const fakeNow = clock.now;
const S = 1000;
const SUBNETS = Array.from({ length: 10 }, (_, i) => `198.51.${100 + i}.0/24`);
const SOURCE = 'openadr3/vtn.ercot-pjm.example';

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig((c) => {
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    const policy = (c.policy ?? {}) as Record<string, unknown>;
    c.policy = {
      ...policy,
      drain: { sessionAllowanceMaxMs: 300_000, rampMs: 120_000 },
      grid: { loss: { bindings: { [SOURCE]: ['us-va', 'us-tx'] }, maxTrustedLossShare: 0.6 } },
    };
  });
  writeTokensFile(cfg.dir, [
    { name: 'alice', role: 'operator', token: OPERATOR },
    // Granted the VTN's source: a claim of physical loss is trusted only under a grant (ADR 0021).
    { name: 'vtn', role: 'ingest', token: INGEST, grants: [SOURCE] },
  ]);
  srv = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_TEST_CLOCK: clock.env } });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(srv.http, method, path, token, body);

interface Sample {
  t0: number;
  t1: number;
  subnet: string;
  region: string;
}

interface AlertView {
  kind: string;
  severity: string;
  regions: string[];
  message: string;
}

test('two neighbours dark in overlapping windows: neither is answered from its reach on, the second despite the safety limit, with an alert; distrust holds it again', async () => {
  const learned = Math.floor(fakeNow() / S) * S;
  const Tva = learned + 600 * S;
  const Ttx = learned + 900 * S;
  const ev = (region: string, id: string, start: number) => ({
    region,
    kind: 'grid.event',
    source: SOURCE,
    key: id,
    observedAt: learned,
    expiresAt: start + 7200 * S,
    value: { id, type: 'load-shed', start, end: start + 1200 * S },
  });
  const post = await api('POST', '/v1/signals', INGEST, { signals: [ev('us-va', 'shed-va', Tva), ev('us-tx', 'shed-tx', Ttx)] });
  assert.equal(post.status, 200, JSON.stringify(post.body));

  const samples: Sample[] = [];
  // Bounded: at most 600 rounds of 10 queries, until the test clock passes us-tx's start + 20 s.
  for (let round = 0; round < 600 && fakeNow() < Ttx + 20 * S; round++) {
    for (const subnet of SUBNETS) {
      const t0 = fakeNow();
      const r = await askSteered(srv.udp, 'A', subnet);
      samples.push({ t0, t1: fakeNow(), subnet, region: r.region });
    }
    await sleep(40);
  }
  assert.ok(fakeNow() >= Ttx + 20 * S, 'the loop ran until both events had started');
  const rel = (t: number) => `Tva${t >= Tva ? '+' : '−'}${Math.abs(Math.round((t - Tva) / S))}s`;
  const show = (xs: Sample[]) => xs.map((x) => `${rel(x.t0)} ${x.subnet} ${x.region}`).join('\n');

  // Before us-va's ramp (T − 455 s): every client on us-va.
  const early = samples.filter((x) => x.t1 < Tva - 455 * S);
  assert.ok(early.length >= 10, `answers before us-va's ramp: ${early.length}`);
  for (const x of early) assert.equal(x.region, 'us-va', show([x]));
  // From us-va's reach (T − 335 s) on, no answer names us-va.
  const afterVa = samples.filter((x) => x.t0 >= Tva - 334 * S);
  assert.ok(afterVa.length >= 20);
  for (const x of afterVa) assert.notEqual(x.region, 'us-va', show([x]));
  // Between the two reaches, us-tx (the next nearest) takes them.
  const between = samples.filter((x) => x.t0 >= Tva - 334 * S && x.t1 < Ttx - 455 * S);
  assert.ok(between.length >= 10, `answers between the reaches: ${between.length}`);
  for (const x of between) assert.equal(x.region, 'us-tx', show([x]));
  // From us-tx's reach on, neither: beyond maxAutoShare (55.8 % of the fleet), planned anyway.
  const afterTx = samples.filter((x) => x.t0 >= Ttx - 334 * S);
  assert.ok(afterTx.length >= 20);
  for (const x of afterTx) assert.ok(x.region !== 'us-va' && x.region !== 'us-tx' && x.region !== 'none', show([x]));

  // The alert: in /v1/status and /metrics.
  const st = await api('GET', '/v1/status', OPERATOR);
  assert.equal(st.status, 200);
  const alerts = (st.body as { alerts?: AlertView[] }).alerts ?? [];
  const over = alerts.filter((a) => a.kind === 'trusted-loss-over-limit');
  assert.deepEqual(
    over.map((a) => a.regions.join()),
    ['us-tx'],
    JSON.stringify(alerts),
  );
  assert.match(over[0]!.message, /shed-tx.*trusted physical loss.*beyond the safety limits.*gridsteer distrust openadr3\/vtn\.ercot-pjm\.example stops it/);
  const tx = (st.body as { regions: { id: string; share: number; refuse: boolean }[] }).regions.find((r) => r.id === 'us-tx')!;
  assert.deepEqual([tx.share, tx.refuse], [0, true]);
  const m = await scrape(srv.http);
  assert.equal(sumOf(m, 'gridsteer_plan_alerts', { kind: 'trusted-loss-over-limit', severity: 'warning' }), 1, describeMetric(m, 'gridsteer_plan_alerts'));

  // Distrust the source: its claims count as caps again; us-tx is held by the safety limit.
  const bad = await api('POST', '/v1/grid/distrust', OPERATOR, { source: SOURCE, distrusted: true });
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /reason/);
  const d = await api('POST', '/v1/grid/distrust', OPERATOR, { source: SOURCE, distrusted: true, reason: 'feed compromised' });
  assert.equal(d.status, 200, JSON.stringify(d.body));
  const again = await api('POST', '/v1/grid/distrust', OPERATOR, { source: SOURCE, distrusted: true, reason: 'twice' });
  assert.equal(again.status, 400);
  assert.match(JSON.stringify(again.body), /body\.source/);
  let held: AlertView[] = [];
  // The plan follows the store within a replan (bounded: 100 polls).
  for (let i = 0; i < 100; i++) {
    const s2 = await api('GET', '/v1/status', OPERATOR);
    held = ((s2.body as { alerts?: AlertView[] }).alerts ?? []).filter((a) => a.kind === 'held-by-safety');
    if (held.length > 0) break;
    await sleep(100);
  }
  assert.deepEqual(
    held.map((a) => `${a.regions.join()}:${a.severity}`),
    ['us-tx:critical'],
  );
  const back = await askSteered(srv.udp, 'A', SUBNETS[0]);
  assert.notEqual(back.region, 'us-va', 'us-va was within the limits: still out');
  const audit = await api('GET', '/v1/audit?limit=10', OPERATOR);
  assert.match(JSON.stringify(audit.body), /distrust/);
  const off = await api('POST', '/v1/grid/distrust', OPERATOR, { source: SOURCE, distrusted: false, reason: 'feed checked' });
  assert.equal(off.status, 200, JSON.stringify(off.body));
  assert.equal((off.body as { ended: unknown[] }).ended.length, 1);
});
