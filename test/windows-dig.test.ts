/**
 * Recurring windows in the running server, watched with dig on a test clock
 * (issue 21, "Tests"): `windows:` in the configuration drains the home region us-va every day
 * 12:30–12:35 UTC. Nothing is posted: the control loop passes the horizon epoch, the planner
 * expands the window, and the drain runs as for any obligation — answers keep TTL 30 until
 * T − 485 s (TTL0 ahead of the first step), then TTLs follow the ramp steps; clients leave us-va step by step; none
 * is sent there from T − 335 s until the end E; after E the cap holds 120 s, then clients come
 * back over the 300 s restore, and all are back by E + 420 s. The region's drain hook hears
 * each step, is told to refuse new streams at T and to take traffic again after. A node started
 * in the middle of the window answers inside it. Two practice runs later that day: one moves
 * us-va's clients and restores them, one a grid alert blocks; the practice-runs job's records
 * (GET /v1/practice-runs) say the same, with the demand measured while the run acted matching
 * the queries dig sent, and a health probe that failed during the run.
 *
 * The server runs with GRIDSTEER_TEST_CLOCK at 50× (gslb/platform/clock.ts): a 30 s step takes
 * 0.6 s; the housekeeping jobs follow the test clock too (a minute's job every 1.2 s). Every
 * wait is bounded in count; no assertion depends on how long anything took.
 * geoip is disabled: every client is placed at the default location (Ashburn, VA), whose
 * ranking starts us-va, us-tx.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { exampleRegions } from './helpers/paths.js';
import { testClock } from './helpers/test-clock.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';
import { startDrainGateway, type DrainGateway } from './helpers/drain-gateway.js';

const VIEWER = 'windows-dig-viewer-token-31c4';
const INGEST = 'windows-dig-ingest-token-8d2a';
const OPERATOR = 'windows-dig-operator-token-77b0';
const RATE = 50;
const clock = testClock(Date.UTC(2027, 5, 1, 12, 0, 0), RATE);
const fakeNow = clock.now;
const S = 1000;
/** The window's occurrence that day: 12:30–12:35 UTC (half an hour of test clock, 36 s, for the server to start). */
const T = Date.UTC(2027, 5, 1, 12, 30, 0);
const E = T + 300 * S;
const SUBNETS = Array.from({ length: 8 }, (_, i) => `198.51.${100 + i}.0/24`);

let cfg: TestConfig;
let srv: RunningServer;
let gw: DrainGateway;

before(async () => {
  gw = await startDrainGateway();
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: dig for eight client subnets at every step, from 127.0.0.1.
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.regionsDir = 'regions-hooked';
    // S fixed at 300 s and R at 120 s (five steps; the shipped 60 s is in gslb/policy/drain.test.ts): the ramp steps are T − 455 … T − 335 s (as in test/drain-dig.test.ts).
    c.policy = { ...(c.policy as Record<string, unknown>), drain: { sessionAllowanceMaxMs: 300_000, rampMs: 120_000 } };
    c.windows = [
      { id: 'va-daily', kind: 'maintenance', regions: ['us-va'], cron: '30 12 * * *', timezone: 'UTC', duration: '5m', reason: 'daily patching' },
      // Practice runs (the third test): one that goes, one a grid alert blocks.
      { id: 'drill-a', kind: 'practice', regions: ['us-va'], cron: '5 13 * * *', timezone: 'UTC', duration: '5m', reason: 'failover drill' },
      { id: 'drill-b', kind: 'practice', regions: ['us-va'], cron: '25 13 * * *', timezone: 'UTC', duration: '5m', reason: 'failover drill' },
    ];
  });
  const dir = join(cfg.dir, 'regions-hooked');
  cpSync(exampleRegions, dir, { recursive: true });
  const va = parse(readFileSync(join(dir, 'us-va.yaml'), 'utf8')) as Record<string, unknown>;
  va.drainHook = { url: gw.url, tokenEnv: 'GRIDSTEER_TEST_HOOK_TOKEN', timeoutMs: 1000, retries: 2, retryBaseMs: 50 };
  writeFileSync(join(dir, 'us-va.yaml'), stringify(va));
  writeTokensFile(cfg.dir, [{ name: 'vic', role: 'viewer', token: VIEWER }, { name: 'iso', role: 'ingest', token: INGEST }, { name: 'olga', role: 'operator', token: OPERATOR }]);
  srv = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_TEST_CLOCK: clock.env, GRIDSTEER_TEST_HOOK_TOKEN: 'hook-secret-2' } });
});

after(async () => {
  await srv?.stop();
  await gw?.close();
  cfg?.cleanup();
});

const api = (method: string, path: string): Promise<ApiReply> => apiCall(srv.http, method, path, VIEWER);

interface Sample {
  t0: number;
  t1: number;
  subnet: string;
  region: string;
  ttl: number;
}

test('a daily maintenance window from the config: TTLs shrink ahead, us-va drained by T − 335 s and through the window, restored after the hold and the restore; the hook hears it all', async () => {
  assert.ok(fakeNow() < T - 500 * S, `the server started before the lead (test clock at ${new Date(fakeNow()).toISOString()})`);
  // The plan and the listing hold the occurrence (the configuration's window, no API call made).
  const plan = (await api('GET', '/v1/plan')).body as unknown as { windows?: { window: string; start: number; end: number }[] };
  assert.deepEqual(plan.windows?.find((o) => o.start === T), { window: 'va-daily', kind: 'maintenance', regions: ['us-va'], start: T, end: E, cap: 0, reason: 'daily patching', source: 'config' });
  const listing = (await api('GET', '/v1/windows')).body as unknown as { windows: { id: string; next: { start: number }[] }[] };
  assert.equal(listing.windows[0]?.next[0]?.start, T);
  // The housekeeping jobs are scheduled (node-cron's match, on the test clock).
  const jobs = (await api('GET', '/v1/jobs')).body as unknown as { jobs: { name: string; nextRun: number | null }[] };
  assert.deepEqual(jobs.jobs.map((j) => [j.name, typeof j.nextRun]), [['gc-signals', 'number'], ['audit-trim', 'number'], ['verify-hooks', 'number'], ['geoip-check', 'number'], ['practice-runs', 'number']]);

  const samples: Sample[] = [];
  let explained: { reasons?: string[]; planStep?: { reasons: string[] } } | undefined;
  // Bounded: at most 2,000 rounds of 8 queries, until the test clock passes E + 560 s.
  for (let round = 0; round < 2000 && fakeNow() < E + 560 * S; round++) {
    for (const subnet of SUBNETS) {
      const t0 = fakeNow();
      const r = await askSteered(srv.udp, 'A', subnet);
      const t1 = fakeNow();
      samples.push({ t0, t1, subnet, region: r.region, ttl: r.run.msg.answer.find((rr) => rr.type === 'A')?.ttl ?? -1 });
    }
    if (explained === undefined && fakeNow() > T + 30 * S && fakeNow() < E - 30 * S) {
      explained = (await api('GET', `/v1/explain?client=127.0.0.1&name=api.gslb.example.com&type=A&subnet=${encodeURIComponent(SUBNETS[0]!)}`)).body as unknown as typeof explained;
    }
    await sleep(40);
  }
  const rel = (t: number) => `T${t >= T ? '+' : '−'}${Math.abs(Math.round((t - T) / S))}s`;
  const show = (xs: Sample[]) => xs.map((x) => `${rel(x.t0)} ${x.subnet} ${x.region} ttl ${x.ttl}`).join('\n');
  assert.ok(fakeNow() >= E + 560 * S, 'the loop ran past the restore');

  // Before T − 485 s (TTL0 ahead of the first step): us-va with the full TTL.
  const early = samples.filter((x) => x.t1 < T - 485 * S);
  assert.ok(early.length >= 8, `answers before T − 485 s: ${early.length}`);
  for (const x of early) assert.deepEqual([x.region, x.ttl], ['us-va', 30], show([x]));
  // Then TTLs reach no further than the next ramp step (never below Tmin, 5 s).
  const steps = [455, 425, 395, 365, 335].map((k) => T - k * S);
  const ramping = samples.filter((y) => y.region === 'us-va' && y.t0 >= T - 485 * S && y.t1 < T - 335 * S);
  assert.ok(ramping.length > 0, 'answers naming us-va during the lead');
  for (const x of ramping) {
    let next = steps.find((st) => st > x.t0)!;
    if (next <= x.t1) next = steps.find((st) => st > x.t1) ?? next;
    assert.ok(x.ttl < 30 && x.ttl * S <= Math.max(5 * S, next - x.t0 + 1000), `TTL ${x.ttl} s reaches past the next step at ${rel(next)}: ${show([x])}`);
  }
  // From the reach (T − 335 s) until the end of the hold (E + 120 s): nobody is sent to us-va.
  const drained = samples.filter((x) => x.t0 >= T - 334 * S && x.t1 < E + 120 * S);
  assert.ok(drained.length >= 40, `answers while drained: ${drained.length}`);
  for (const x of drained) assert.equal(x.region, 'us-tx', show([x]));
  // After the restore (E + 420 s): every client is back at us-va, each having left once.
  const restored = samples.filter((x) => x.t0 >= E + 421 * S);
  assert.ok(restored.length >= 8, `answers after the restore: ${restored.length}`);
  for (const x of restored) assert.equal(x.region, 'us-va', show([x]));
  for (const subnet of SUBNETS) {
    const seq = samples.filter((x) => x.subnet === subnet).map((x) => x.region);
    const changes = seq.filter((r, i) => i > 0 && r !== seq[i - 1]).length;
    assert.equal(changes, 2, `${subnet} left us-va once and came back once:\n${show(samples.filter((x) => x.subnet === subnet))}`);
  }
  // Explain, during the window, says why.
  assert.ok(JSON.stringify(explained).includes('maintenance window va-daily (daily patching)'), JSON.stringify(explained));

  // The drain hook: every ramp step, refuse new streams at T, then the restore back to 1.
  const va = gw.calls.filter((c) => c.body?.region === 'us-va').map((c) => c.body!);
  const shares = va.map((b) => b.share as number);
  for (const want of [0.8, 0.6, 0.4, 0.2, 0, 0.5, 1]) assert.ok(shares.includes(want), `a hook call with share ${want}: ${JSON.stringify(shares)}`);
  const refuse = va.find((b) => b.refuseNewStreams === true);
  assert.ok(refuse && Date.parse(refuse.at as string) >= T, `refuse new streams from T on: ${JSON.stringify(va)}`);
  assert.equal(shares.at(-1), 1, 'the last call gives the region all its traffic back');
  assert.deepEqual(gw.enforced.get('us-va')?.refuseNewStreams, false);
});

test('a node started in the middle of an occurrence answers inside it: its first plan holds the window (no clock read in the planner, the horizon reaches back)', async (t) => {
  // A second server on the same configuration whose test clock starts 100 s into the window, at 1×.
  // Its own folder (its own state file), the same window.
  const inside = T + 100 * S;
  const real = Date.now();
  const cfg2 = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.policy = { ...(c.policy as Record<string, unknown>), drain: { sessionAllowanceMaxMs: 300_000, rampMs: 120_000 } };
    c.windows = [{ id: 'va-daily', kind: 'maintenance', regions: ['us-va'], cron: '30 12 * * *', timezone: 'UTC', duration: '5m', reason: 'daily patching' }];
  });
  t.after(() => cfg2.cleanup());
  writeTokensFile(cfg2.dir, [{ name: 'vic', role: 'viewer', token: VIEWER }]);
  const late = await spawnServer({ configFile: cfg2.file, env: { GRIDSTEER_TEST_CLOCK: `${inside}@1@${real}` } });
  t.after(() => late.stop());
  for (const subnet of SUBNETS) {
    const r = await askSteered(late.udp, 'A', subnet);
    assert.equal(r.region, 'us-tx', `${subnet} answered inside the window`);
  }
  const st = (await apiCall(late.http, 'GET', '/v1/status', VIEWER)).body as unknown as { regions: { id: string; share: number; refuse: boolean; reasons: string[] }[] };
  const va = st.regions.find((r) => r.id === 'us-va')!;
  assert.deepEqual([va.share, va.refuse], [0, true], JSON.stringify(va));
  assert.ok(va.reasons.some((x) => x.includes('maintenance window va-daily (daily patching)')), JSON.stringify(va.reasons));
});


test('practice runs in the running server: one moves us-va\'s clients and restores them, one a grid alert blocks; the recorded outcomes match what dig saw, and a probe that failed during the run', async () => {
  // Far enough after the first tests (a busy machine starts the late node slowly): 13:05 and 13:25.
  const TA = Date.UTC(2027, 5, 1, 13, 5, 0);
  const TB = Date.UTC(2027, 5, 1, 13, 25, 0);
  assert.ok(fakeNow() < TA - 500 * S, `the first test left time before drill-a (test clock at ${new Date(fakeNow()).toISOString()})`);
  const obs = () => Math.floor(fakeNow() / S) * S;
  // A grid alert in us-tx from 13:15 to 13:45 (a watch: it caps nothing, it blocks practice runs);
  // us-tx's health probe up (its first result sets its state; one failure later stays below fall, 3).
  const probe = (up: boolean) => ({ region: 'us-tx', kind: 'health.probe', source: 'health/n7', key: '192.0.2.10:443', observedAt: obs(), expiresAt: TB + 3600 * S, value: up ? { up } : { up, detail: 'tls handshake timeout' } });
  const alert = await apiCall(srv.http, 'POST', '/v1/signals', INGEST, {
    signals: [{ region: 'us-tx', kind: 'grid.alert', source: 'ercot/alerts', key: 'watch-1', observedAt: obs(), expiresAt: TB + 3600 * S, value: { type: 'watch', level: 1, start: TB - 600 * S, end: TB + 1200 * S } }, probe(true)],
  });
  assert.equal(alert.status, 200, JSON.stringify(alert.body));
  const samples: Sample[] = [];
  let failedAt = 0;
  // Bounded: at most 5,000 rounds of 4 queries, until the test clock passes drill-b's end.
  for (let round = 0; round < 5000 && fakeNow() < TB + 300 * S; round++) {
    for (const subnet of SUBNETS.slice(0, 4)) {
      const t0 = fakeNow();
      const r = await askSteered(srv.udp, 'A', subnet);
      samples.push({ t0, t1: fakeNow(), subnet, region: r.region, ttl: 0 });
    }
    if (failedAt === 0 && fakeNow() >= TA + 60 * S) {
      // During drill-a, us-tx's probe fails once (then nothing more is heard from it).
      const p = probe(false);
      const r = await apiCall(srv.http, 'POST', '/v1/signals', INGEST, { signals: [p] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      failedAt = p.observedAt;
    }
    await sleep(40);
  }
  assert.ok(fakeNow() >= TB + 300 * S, 'the loop ran past drill-b');
  const at = (from: number, to: number) => samples.filter((x) => x.t0 >= from && x.t1 < to);
  const moved = at(TA - 334 * S, TA + 420 * S);
  assert.ok(moved.length >= 20 && moved.every((x) => x.region === 'us-tx'), 'drill-a moved every client to us-tx');
  const back = at(TA + 721 * S, TB + 300 * S);
  assert.ok(back.length >= 20 && back.every((x) => x.region === 'us-va'), 'restored after drill-a, and drill-b moved nobody');
  // The practice-runs job (node-cron's match on the test clock: every test minute, 1.2 s) records what the plan decided and what was measured: bounded wait.
  type Span = { from: number; to: number; queries: number; qps: number };
  type Run = { window: string; outcome: string; why?: string; share?: number; restored?: boolean; restoredAt?: number; traffic?: { homes: string[]; before: Span; held: Span; acting: Span & { moved: number } }; probeErrors?: { region: string; source: string; key: string; at: number; detail?: string }[] };
  let runs: Run[] = [];
  for (let i = 0; i < 60; i++) {
    runs = ((await api('GET', '/v1/practice-runs')).body as unknown as { runs: Run[] }).runs;
    if (runs.some((r) => r.window === 'drill-a' && r.outcome === 'finished') && runs.some((r) => r.window === 'drill-b')) break;
    await sleep(500);
  }
  const a = runs.find((r) => r.window === 'drill-a');
  const b = runs.find((r) => r.window === 'drill-b');
  assert.deepEqual([a?.outcome, a?.share, a?.restored], ['finished', 0, true], JSON.stringify(runs));
  assert.equal(b?.outcome, 'skipped', JSON.stringify(runs));
  assert.match(b!.why!, /a grid alert is in force in us-tx/);

  // The measured traffic is what dig sent: every query here is from a client homed in us-va. A
  // query counted at a bucket's edge may land in the bucket next to it (the flush collects a
  // moment after the boundary), so each count lies between dig's queries in the span less its
  // edge buckets and in the span with one bucket more on each side.
  const B = 10 * S;
  const within = ({ from, to, queries }: Span, what: string) => {
    const inner = at(from + B, to - B).length;
    const outer = samples.filter((x) => x.t0 >= from - B && x.t0 < to + B).length;
    assert.ok(queries >= inner && queries <= outer, `${what}: recorded ${queries} queries, dig sent ${inner}–${outer} in [${rel(from)}, ${rel(to)})`);
  };
  const rel = (t: number) => `TA${t >= TA ? '+' : '−'}${Math.abs(Math.round((t - TA) / S))}s`;
  const tr = a!.traffic!;
  assert.deepEqual(tr.homes, ['us-va']);
  assert.deepEqual([tr.held.from, tr.held.to], [TA, TA + 300 * S], 'held: the run\'s start to its end');
  assert.equal(tr.acting.from, Math.floor((TA - 455 * S) / B) * B, 'acting from the first ramp step');
  assert.equal(tr.acting.to, Math.ceil(a!.restoredAt! / B) * B);
  within(tr.held, 'held');
  within(tr.acting, 'acting');
  within(tr.before, 'before');
  assert.ok(tr.held.queries >= 20, `queries measured while held: ${tr.held.queries}`);
  // Moved: every query while drained went elsewhere (dig: all us-tx), some of the ramp's and restore's.
  const drained = at(TA - 334 * S + B, TA + 420 * S - B).length;
  assert.ok(tr.acting.moved >= drained && tr.acting.moved <= tr.acting.queries, `moved ${tr.acting.moved}: dig saw ${drained} answers from us-tx while drained, ${tr.acting.queries} in all`);
  // The probe that failed during the run is in the record; nothing else failed.
  assert.ok(failedAt > 0);
  assert.deepEqual(a!.probeErrors, [{ region: 'us-tx', source: 'health/n7', key: '192.0.2.10:443', at: failedAt, detail: 'tls handshake timeout' }]);
});

test('a configuration reload that adds, changes and removes windows audits each change (actor config/<node>, before and after); one that only reorders them audits none', async () => {
  const file = cfg.file;
  const c = parse(readFileSync(file, 'utf8')) as { windows: Record<string, unknown>[]; [k: string]: unknown };
  const audited = async () => ((await api('GET', '/v1/audit?limit=200')).body as unknown as { entries: { actor: string; action: string; target: string; before: unknown; after: unknown }[] }).entries.filter((e) => e.action.startsWith('window.config-'));
  assert.deepEqual(await audited(), [], 'nothing before a reload');
  // va-daily's reason changes, drill-b goes, drill-c comes.
  c.windows = [
    { ...c.windows[0], reason: 'daily patching (new vendor)' },
    c.windows[1]!,
    { id: 'drill-c', kind: 'practice', regions: ['us-va'], cron: '45 14 * * *', timezone: 'UTC', duration: '5m', reason: 'failover drill' },
  ];
  writeFileSync(file, stringify(c));
  const r = await apiCall(srv.http, 'POST', '/v1/config/reload', OPERATOR);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // Bounded: the audit entries are written just after the reload answers (20 looks).
  let got: Awaited<ReturnType<typeof audited>> = [];
  for (let i = 0; i < 20 && got.length < 3; i++) {
    got = await audited();
    if (got.length < 3) await sleep(100);
  }
  assert.deepEqual(got.map((e) => [e.action, e.target]).sort(), [['window.config-add', 'window:drill-c'], ['window.config-change', 'window:va-daily'], ['window.config-remove', 'window:drill-b']]);
  const change = got.find((e) => e.target === 'window:va-daily')!;
  assert.match(change.actor, /^config\//);
  assert.deepEqual([(change.before as { reason: string }).reason, (change.after as { reason: string }).reason], ['daily patching', 'daily patching (new vendor)']);
  assert.equal(got.find((e) => e.target === 'window:drill-b')!.after, null);
  // A reload that only reorders them (the configuration changed, its windows did not): no entry
  // (the memory store writes them before the reload answers).
  writeFileSync(file, stringify({ ...c, windows: [...c.windows].reverse() }));
  const again = await apiCall(srv.http, 'POST', '/v1/config/reload', OPERATOR);
  assert.deepEqual([again.status, (again.body as { changed?: boolean }).changed], [200, true], JSON.stringify(again.body));
  assert.equal((await audited()).length, 3);
  const plan = (await api('GET', '/v1/plan')).body as unknown as { windows?: { window: string }[] };
  assert.ok(plan.windows?.some((o) => o.window === 'drill-c'), 'the new window is planned');
});
