/**
 * Drain hooks: the pure "which call is due" as a case table, then the runner against real
 * loopback gateways (test/helpers/drain-gateway.ts: node:http on 127.0.0.1, port 0) — no
 * mock of fetch or http. Plans are built from Date.now() with steps a few hundred ms apart;
 * every wait polls a condition with a deadline, and no assertion depends on how long
 * something took.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Value } from '@sinclair/typebox/value';
import { bearerToken, DrainHookRunner, drainHookPhase, drainHookProblems, dueDrainHookCall, nextDrainHookInstant, type DrainHookPayload, type DrainHookRunnerOptions, type DrainHookState } from './hooks.js';
import { DrainHookSchema, type DrainHookConfig } from '../config/drain-hook.js';
import type { Plan, RegionStep } from '../model/types.js';
import { closedPort, startDrainGateway, type DrainGateway, type GatewayCall } from '../../test/helpers/drain-gateway.js';

type Step = RegionStep & { refuse?: boolean };

const step = (at: number, share: number, o: { down?: boolean; refuse?: boolean; goawayBy?: number; reasons?: string[]; homes?: Record<string, number> } = {}): Step => ({
  at,
  share,
  down: o.down ?? false,
  ...(o.refuse ? { refuse: true } : {}),
  ...(o.goawayBy !== undefined ? { goawayBy: o.goawayBy } : {}),
  ...(o.homes ? { homes: o.homes } : {}),
  reasons: o.reasons ?? [`step at ${at}`],
});

const planOf = (version: string, regions: Record<string, Step[]>, computedAt = 1000): Plan => ({ version, configHash: 'c', storeRevision: 1, computedAt, regions });

const bodyOf = (c: GatewayCall) => c.body as unknown as DrainHookPayload;
const S = (share: number, refuse = false, down = false): DrainHookState => ({ share, refuse, down });
const FULL = S(1);

test('DrainHookSchema: defaults, and what it refuses', () => {
  const d = Value.Default(DrainHookSchema, { url: 'https://gw.example.com/drain' }) as DrainHookConfig;
  assert.deepEqual(d, { url: 'https://gw.example.com/drain', headers: {}, timeoutMs: 2000, retries: 3, retryBaseMs: 500 });
  assert.ok(Value.Check(DrainHookSchema, d));
  assert.ok(Value.Check(DrainHookSchema, { ...d, tokenEnv: 'GW_TOKEN', headers: { 'X-Tenant': 'a', 'x-route': 'b' } }));
  const bad: [string, Record<string, unknown>][] = [
    ['unknown key', { ...d, token: 'secret' }],
    ['ftp URL', { ...d, url: 'ftp://gw.example.com/' }],
    ['user:password@ in the URL', { ...d, url: 'https://u:p@gw.example.com/' }],
    ['tokenEnv not a variable name', { ...d, tokenEnv: '1TOKEN' }],
    ['header name with a space', { ...d, headers: { 'X Tenant': 'a' } }],
    ['header value with a newline', { ...d, headers: { 'X-Tenant': 'a\r\nEvil: 1' } }],
    ['timeout too short', { ...d, timeoutMs: 5 }],
    ['negative retries', { ...d, retries: -1 }],
  ];
  for (const [what, v] of bad) assert.equal(Value.Check(DrainHookSchema, v), false, what);
  for (const [key, s] of Object.entries(DrainHookSchema.properties)) assert.ok((s as { description?: string }).description, `${key} has a description`);
});

test('drainHookProblems: reserved headers and a token variable that is not set', () => {
  const hook = Value.Default(DrainHookSchema, { url: 'http://gw/', tokenEnv: 'GW_TOKEN', headers: { Authorization: 'Basic x', 'X-Tenant': 'a' } }) as DrainHookConfig;
  const p = drainHookProblems('us-va', hook, {});
  assert.equal(p.length, 2);
  assert.match(p[0]!, /^hooks: us-va: drainHook\.headers\.Authorization is set by GridSteer and ignored; remove it and put the token in the variable named by tokenEnv$/);
  assert.match(p[1]!, /^hooks: us-va: the environment variable GW_TOKEN \(drainHook\.tokenEnv\) is not set or empty: the hook will not be called/);
  assert.deepEqual(drainHookProblems('us-va', { ...hook, headers: {} }, { GW_TOKEN: 't' }), []);
  assert.deepEqual(bearerToken({ T: '  abc.def-1~+/=\n' }, 'T'), { token: 'abc.def-1~+/=' }, 'trimmed (a token read from a file ends in a newline)');
  const bad = bearerToken({ T: 'abc\ndef' }, 'T');
  assert.ok(bad.error !== undefined && !bad.error.includes('abc'), 'refused, without the value in the message');
});

test('dueDrainHookCall: a case table', () => {
  const ramp = [
    step(10_000, 0.75, { reasons: ['drain ramp 1/4'] }),
    step(20_000, 0.5),
    step(25_000, 0.5, { reasons: ['same share, other reasons'] }),
    step(30_000, 0),
    step(40_000, 0, { refuse: true, reasons: ['grid event begins'] }),
    step(50_000, 0.5),
    step(60_000, 1),
  ];
  const p = planOf('v1', { 'us-va': ramp, other: [step(0, 0)] }, 5_000);
  const downs = planOf('v2', { 'us-va': [step(10_000, 0.7, { down: true }), step(20_000, 0)] });
  const goaway = planOf('v7', { 'us-va': [step(20_000, 0.5), step(30_000, 0, { goawayBy: 35_000 }), step(35_000, 0, { refuse: true })] });
  const alert = { id: 'a1', severity: 'warning' as const, kind: 'trusted-loss-over-limit' as const, events: ['e'], at: 40_000, message: 'us-va: trusted loss' };
  const withAlerts: Plan = { ...planOf('v8', { 'us-va': [step(30_000, 0)] }), alerts: [{ ...alert, regions: ['us-va'] }, { ...alert, id: 'a2', regions: ['eu-ie'], message: 'eu-ie only' }] };
  type Want = Partial<DrainHookPayload> | null;
  const cases: [string, Plan, DrainHookState | null, number, Want][] = [
    ['no steps, nothing told: the full state is due, from the plan’s computedAt', planOf('v0', {}, 1234), null, 5000, { id: 'us-va@1234', at: new Date(1234).toISOString(), phase: 'up', share: 1, shed: 0, refuseNewStreams: false, down: false, reasons: [] }],
    ['no steps, full told: nothing', planOf('v0', {}), FULL, 5000, null],
    ['before the first step, full told: nothing', p, FULL, 9_999, null],
    ['before the first step, nothing told: full at computedAt', p, null, 9_999, { id: 'us-va@5000', phase: 'up', share: 1 }],
    ['the first ramp step', p, FULL, 10_000, { id: 'us-va@10000', phase: 'drain', share: 0.75, shed: 0.25, reasons: ['drain ramp 1/4'], planVersion: 'v1' }],
    ['the state told holds: nothing', p, S(0.75), 15_000, null],
    ['a step that changes only the reasons: nothing', p, S(0.5), 25_000, null],
    ['nothing told, inside a run of equal states: the run’s first step', p, null, 27_000, { id: 'us-va@20000', phase: 'drain', share: 0.5, reasons: ['step at 20000'] }],
    ['steps skipped (0.75 told, now at 0): the step in force', p, S(0.75), 30_000, { id: 'us-va@30000', phase: 'drain', share: 0, shed: 1 }],
    ['share 0 and refuse at T: hold', p, S(0), 40_000, { id: 'us-va@40000', phase: 'hold', share: 0, refuseNewStreams: true, reasons: ['grid event begins'] }],
    ['after the end: restore', p, S(0, true), 50_000, { id: 'us-va@50000', phase: 'restore', share: 0.5, shed: 0.5, refuseNewStreams: false }],
    ['back to 1: up', p, S(0.5), 60_000, { id: 'us-va@60000', phase: 'up', share: 1, shed: 0 }],
    ['long after the last step, up told: nothing', p, FULL, 1e12, null],
    ['down with share 0.7: share 0, down', downs, FULL, 10_000, { id: 'us-va@10000', phase: 'drain', share: 0, shed: 1, down: true }],
    ['down ends, share stays 0: hold', downs, S(0, false, true), 20_000, { id: 'us-va@20000', phase: 'hold', share: 0, down: false }],
    ['a new plan drops the region while a drain was told: up at computedAt', planOf('v3', {}, 77_000), S(0, true), 80_000, { id: 'us-va@77000', phase: 'up', share: 1, planVersion: 'v3' }],
    ['other homes’ weights do not change the share told', planOf('v4', { 'us-va': [step(10, 0.4, { homes: { 'eu-de': 1 } })] }), FULL, 10, { share: 0.4, shed: 0.6, phase: 'drain' }],
    ['a saturated region (no spill, share 0) keeps its own clients: nothing to shed', planOf('v5', { 'us-va': [step(10, 0, { homes: { 'us-va': 1 } })] }), FULL, 10, null],
    ['the region’s own clients’ weight is the share told', planOf('v6', { 'us-va': [step(10, 0, { homes: { 'us-va': 0.6 } })] }), FULL, 10, { share: 0.6, shed: 0.4, phase: 'drain' }],
    ['shed is rounded: 1 − 0.7 = 0.3', planOf('v5', { 'us-va': [step(10, 0.7)] }), FULL, 10, { share: 0.7, shed: 0.3 }],
    // The drain-hook contract: at share 0 GOAWAY to every connection by T − S, then refuse.
    ['share 0 with GOAWAY by T − S: goawayBy told', goaway, S(0.5), 30_000, { id: 'us-va@30000', phase: 'drain', share: 0, goawayBy: new Date(35_000).toISOString(), refuseNewStreams: false }],
    ['then refuse at T − S (GOAWAY done): a call of its own, hold', goaway, { share: 0, refuse: false, down: false, goawayBy: 35_000 }, 35_000, { id: 'us-va@35000', phase: 'hold', goawayBy: undefined, refuseNewStreams: true }],
    ['a plan with alerts naming the region: they go with the call', withAlerts, FULL, 30_000, { share: 0, alerts: [{ kind: 'trusted-loss-over-limit', severity: 'warning', message: 'us-va: trusted loss' }] }],
  ];
  for (const [name, plan, last, now, want] of cases) {
    const got = dueDrainHookCall(plan, 'us-va', last, now);
    if (want === null) {
      assert.equal(got, null, name);
      continue;
    }
    assert.ok(got, name);
    assert.equal(got.payload.region, 'us-va', name);
    assert.equal(got.payload.planVersion, plan.version, name);
    assert.equal(got.payload.at, new Date(got.at).toISOString(), name);
    assert.equal(got.payload.id, `us-va@${got.at}`, name);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got.payload[k as keyof DrainHookPayload], v, `${name}: ${k}`);
    assert.deepEqual(got.state, { share: got.payload.share, refuse: got.payload.refuseNewStreams, down: got.payload.down, ...(got.payload.goawayBy ? { goawayBy: Date.parse(got.payload.goawayBy) } : {}) }, name);
    // Told this state, nothing more is due at the same instant.
    assert.equal(dueDrainHookCall(plan, 'us-va', got.state, now), null, `${name}: due again`);
  }
});

test('drainHookPhase and nextDrainHookInstant', () => {
  assert.equal(drainHookPhase(S(0.5), FULL), 'drain');
  assert.equal(drainHookPhase(S(0.5), S(0.2)), 'restore');
  assert.equal(drainHookPhase(S(0, true), S(0)), 'hold');
  assert.equal(drainHookPhase(FULL, S(0)), 'up');
  assert.equal(drainHookPhase(S(1, true), S(1)), 'hold');
  const p = planOf('v', { a: [step(10, 0.5), step(30, 0)], b: [step(20, 0.5)], c: [step(5, 0)] });
  assert.equal(nextDrainHookInstant(p, ['a', 'b', 'c'], 0), 5);
  assert.equal(nextDrainHookInstant(p, ['a', 'b'], 10), 20);
  assert.equal(nextDrainHookInstant(p, ['a', 'b'], 20), 30);
  assert.equal(nextDrainHookInstant(p, ['a', 'b', 'x'], 30), Infinity);
});

// --- the runner against loopback gateways ---

interface LogLine {
  level: number;
  msg: string;
  region?: string;
}

function hookOf(c: Partial<DrainHookConfig> & { url: string }): DrainHookConfig {
  return Value.Default(DrainHookSchema, structuredClone(c)) as DrainHookConfig;
}

function runnerOf(t: TestContext, hooks: Record<string, DrainHookConfig>, plan: Plan, extra: Partial<DrainHookRunnerOptions> = {}) {
  const registry = new Registry();
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s) as LogLine) });
  const runner = new DrainHookRunner({ hooks: new Map(Object.entries(hooks)), plan: () => plan, clock: Date.now, log, registry, env: {}, ...extra });
  t.after(() => runner.close());
  const metric = async (region: string, outcome: string): Promise<number> => {
    const m = await registry.getSingleMetric('gridsteer_drain_hook_calls_total')!.get();
    return m.values.find((v) => v.labels.region === region && v.labels.outcome === outcome)?.value ?? NaN;
  };
  const lastOk = async (region: string): Promise<number | undefined> => {
    const m = await registry.getSingleMetric('gridsteer_drain_hook_last_success_timestamp_seconds')!.get();
    return m.values.find((v) => v.labels.region === region)?.value;
  };
  return { runner, logs, registry, metric, lastOk };
}

async function gateway(t: TestContext): Promise<DrainGateway> {
  const gw = await startDrainGateway();
  t.after(() => gw.close());
  return gw;
}

async function until(fn: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`${what}: not within ${ms} ms`);
}

test('runner: a drain and restore ramp gives the calls in order, with payloads, bearer token and headers', async (t) => {
  const gw = await gateway(t);
  // The runner's clock is the test's: it moves to a step only once the runner has acted on the
  // one before (its next wake-up is past it and its call delivered), so a loaded machine that
  // fires timers late delays the calls but can never make the runner skip a step.
  let fake = Date.UTC(2031, 5, 1, 12, 0, 0);
  const computedAt = fake - 1000;
  const t0 = fake + 300;
  const ramp = [
    step(t0, 0.5, { reasons: ['drain ramp 1/2'] }),
    step(t0 + 300, 0, { reasons: ['drain ramp 2/2'] }),
    step(t0 + 450, 0, { reasons: ['drained; caches turning over'] }),
    step(t0 + 600, 0, { refuse: true, reasons: ['grid event E1 begins'] }),
    step(t0 + 900, 0.5, { reasons: ['slow start 1/2'] }),
    step(t0 + 1200, 1, { reasons: ['slow start done'] }),
  ];
  const plan = planOf('p1', { 'us-va': ramp, 'eu-de': [step(t0, 0)] }, computedAt);
  const hook = hookOf({ url: gw.url, tokenEnv: 'GW_TOKEN', headers: { 'X-Tenant': 'fleet-a', Authorization: 'Basic not-this' } });
  const { runner, metric, lastOk, logs } = runnerOf(t, { 'us-va': hook }, plan, { env: { GW_TOKEN: 's3cret' }, clock: () => fake });
  runner.start();
  const lastId = `us-va@${t0 + 1200}`;
  const acted = (at: number) => {
    const st = runner.status();
    const c = st.regions['us-va']?.lastCall;
    return (st.nextWakeAt === null || st.nextWakeAt > at) && c !== undefined && c !== null && c.outcome === 'ok';
  };
  await until(() => acted(fake), 'the first call delivered', 30_000);
  for (const s of ramp) {
    fake = s.at;
    await until(() => acted(s.at), `the runner acted on the step at t0 + ${s.at - t0} ms`, 30_000);
  }
  assert.equal(runner.status().regions['us-va']?.lastCall?.id, lastId, 'the last step delivered');

  const iso = (x: number) => new Date(x).toISOString();
  const want: DrainHookPayload[] = [
    { region: 'us-va', planVersion: 'p1', id: `us-va@${computedAt}`, at: iso(computedAt), share: 1, shed: 0, refuseNewStreams: false, down: false, phase: 'up', reasons: [] },
    { region: 'us-va', planVersion: 'p1', id: `us-va@${t0}`, at: iso(t0), share: 0.5, shed: 0.5, refuseNewStreams: false, down: false, phase: 'drain', reasons: ['drain ramp 1/2'] },
    { region: 'us-va', planVersion: 'p1', id: `us-va@${t0 + 300}`, at: iso(t0 + 300), share: 0, shed: 1, refuseNewStreams: false, down: false, phase: 'drain', reasons: ['drain ramp 2/2'] },
    { region: 'us-va', planVersion: 'p1', id: `us-va@${t0 + 600}`, at: iso(t0 + 600), share: 0, shed: 1, refuseNewStreams: true, down: false, phase: 'hold', reasons: ['grid event E1 begins'] },
    { region: 'us-va', planVersion: 'p1', id: `us-va@${t0 + 900}`, at: iso(t0 + 900), share: 0.5, shed: 0.5, refuseNewStreams: false, down: false, phase: 'restore', reasons: ['slow start 1/2'] },
    { region: 'us-va', planVersion: 'p1', id: lastId, at: iso(t0 + 1200), share: 1, shed: 0, refuseNewStreams: false, down: false, phase: 'up', reasons: ['slow start done'] },
  ];
  assert.deepEqual(
    gw.calls.map((c) => c.body),
    want,
  );
  for (const c of gw.calls) {
    assert.equal(c.method, 'POST');
    assert.equal(c.path, '/gridsteer/drain');
    assert.equal(c.headers['content-type'], 'application/json');
    assert.equal(c.headers.authorization, 'Bearer s3cret', 'the token from tokenEnv, not a configured Authorization');
    assert.equal(c.headers['x-tenant'], 'fleet-a');
    assert.equal(c.headers['idempotency-key'], (c.body as { id: string }).id);
    assert.equal(c.headers['user-agent'], 'gridsteer-drain-hook');
  }
  assert.deepEqual(gw.enforced.get('us-va'), { id: lastId, share: 1, shed: 0, refuseNewStreams: false, applied: 6 });
  assert.equal(await metric('us-va', 'ok'), 6);
  for (const o of ['error', 'timeout', 'abandoned']) assert.equal(await metric('us-va', o), 0, o);
  const ok = await lastOk('us-va');
  assert.ok(ok !== undefined && ok * 1000 >= t0 + 1200, 'the last success is the last step’s call');
  const st = runner.status();
  assert.equal(st.active, true);
  assert.equal(st.nextWakeAt, null, 'no step left: no timer');
  assert.deepEqual(Object.keys(st.regions), ['us-va'], 'only hooked regions');
  assert.equal(st.regions['us-va']!.url, gw.url);
  assert.deepEqual({ ...st.regions['us-va']!.lastCall, at: 0 }, { id: lastId, phase: 'up', share: 1, refuseNewStreams: false, outcome: 'ok', at: 0, httpStatus: 204, error: null, attempts: 1 });
  assert.ok(logs.some((l) => l.level === 40 && /drainHook\.headers\.Authorization is set by GridSteer and ignored/.test(l.msg)), 'the reserved header is reported at start');
});

test('runner: a gateway that fails twice then succeeds is retried, and the metric says so', async (t) => {
  const gw = await gateway(t);
  gw.react = (_c, n) => (n < 2 ? 503 : 200);
  const { runner, metric, lastOk, logs } = runnerOf(t, { 'us-va': hookOf({ url: gw.url, retries: 3, retryBaseMs: 20 }) }, planOf('p', { 'us-va': [step(Date.now() - 10, 0.25)] }));
  runner.start();
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'ok', 'the call succeeded');
  assert.equal(gw.calls.length, 3);
  assert.equal(new Set(gw.calls.map((c) => c.raw)).size, 1, 'the same body each attempt');
  assert.equal(await metric('us-va', 'error'), 2);
  assert.equal(await metric('us-va', 'ok'), 1);
  assert.equal(await metric('us-va', 'timeout'), 0);
  assert.ok((await lastOk('us-va'))! > 0);
  const c = runner.status().regions['us-va']!.lastCall!;
  assert.equal(c.attempts, 3);
  assert.equal(c.httpStatus, 200);
  assert.equal(c.error, null);
  const warns = logs.filter((l) => l.level === 40 && l.region === 'us-va').map((l) => l.msg);
  assert.equal(warns.length, 2);
  assert.match(warns[0]!, /attempt 1 failed \(http:\/\/127\.0\.0\.1:\d+\/gridsteer\/drain: HTTP 503: gateway says 503\); retrying in 20 ms/);
  assert.match(warns[1]!, /attempt 2 failed .*retrying in 40 ms/);
});

test('runner: a gateway that hangs hits the timeout, and the runner goes on', async (t) => {
  const hanging = await gateway(t);
  hanging.react = () => 'hang';
  const good = await gateway(t);
  const t0 = Date.now() + 300;
  const plan = planOf('p', { 'eu-de': [step(t0, 0.5)] });
  const { runner, metric } = runnerOf(t, { 'us-va': hookOf({ url: hanging.url, timeoutMs: 150, retries: 1, retryBaseMs: 20 }), 'eu-de': hookOf({ url: good.url }) }, plan);
  runner.start();
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'timeout', 'the hanging hook timed out');
  await until(() => runner.status().regions['eu-de']?.lastCall?.id === `eu-de@${t0}` && runner.status().regions['eu-de']?.lastCall?.outcome === 'ok', 'the other region’s step delivered');
  assert.equal(hanging.calls.length, 2, 'first attempt and one retry');
  assert.equal(await metric('us-va', 'timeout'), 2);
  const c = runner.status().regions['us-va']!.lastCall!;
  assert.equal(c.attempts, 2);
  assert.equal(c.httpStatus, null);
  assert.match(c.error!, /no answer within 150 ms/);
  assert.deepEqual(good.calls.map((x) => bodyOf(x).phase), ['up', 'drain']);
  // The gateway answers again: the next change reaches it.
  hanging.react = () => 204;
  runner.onPlan(planOf('p2', { 'us-va': [step(Date.now() - 1, 0.5)], 'eu-de': [step(t0, 0.5)] }));
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'ok', 'us-va delivered after recovering');
  assert.equal(await metric('us-va', 'ok'), 1);
});

test('runner: an unreachable URL and a broken plan are reported, never thrown', async (t) => {
  const port = await closedPort();
  const { runner, metric, logs } = runnerOf(t, { 'us-va': hookOf({ url: `http://127.0.0.1:${port}/drain`, retries: 1, retryBaseMs: 10 }) }, planOf('p', {}));
  runner.start();
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'error', 'the call failed');
  const c = runner.status().regions['us-va']!.lastCall!;
  assert.match(c.error!, /ECONNREFUSED/);
  assert.equal(c.attempts, 2);
  assert.equal(c.httpStatus, null);
  assert.equal(await metric('us-va', 'error'), 2);
  assert.ok(logs.some((l) => l.level === 40 && /gave up after 2 attempts .*ECONNREFUSED.*the plan goes on without it/.test(l.msg)));
  // A plan the runner cannot read is logged, not thrown.
  assert.doesNotThrow(() => runner.onPlan({} as Plan));
  assert.ok(logs.some((l) => l.level === 50 && /hooks: evaluating the plan failed/.test(l.msg)));
  assert.doesNotThrow(() => runner.status());
});

test('runner: a token variable that is not set: no call, an error reported', async (t) => {
  const gw = await gateway(t);
  const { runner, metric } = runnerOf(t, { 'us-va': hookOf({ url: gw.url, tokenEnv: 'GW_TOKEN_MISSING' }) }, planOf('p', {}));
  runner.start();
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'error', 'reported');
  assert.match(runner.status().regions['us-va']!.lastCall!.error!, /GW_TOKEN_MISSING \(drainHook\.tokenEnv\) is not set or empty/);
  assert.equal(gw.calls.length, 0);
  assert.equal(await metric('us-va', 'error'), 1);
});

test('runner: a new plan replaces pending calls, and abandons a call in flight', async (t) => {
  const gw = await gateway(t);
  const t0 = Date.now() + 400;
  const p1 = planOf('p1', { 'us-va': [step(t0, 0.5), step(t0 + 400, 0)] });
  const { runner, metric } = runnerOf(t, { 'us-va': hookOf({ url: gw.url, timeoutMs: 30_000 }) }, p1);
  runner.start();
  // The sync call (full, p1) hangs; p2 changes the state in force now: the hanging call is abandoned.
  gw.react = (_c, n) => (n === 0 ? 'hang' : 204);
  await until(() => gw.calls.length === 1, 'the first call reached the gateway');
  runner.onPlan(planOf('p2', { 'us-va': [step(Date.now() - 1, 0.9), step(t0, 0.8)] }));
  await until(() => runner.status().regions['us-va']?.lastCall?.id === `us-va@${t0}` && runner.status().regions['us-va']?.lastCall?.outcome === 'ok', 'p2’s step at t0 delivered');
  await until(() => runner.status().nextWakeAt === null, 'no wake-up left');
  const bodies = gw.calls.map((c) => bodyOf(c));
  assert.deepEqual(
    bodies.map((b) => [b.planVersion, b.share]),
    [
      ['p1', 1],
      ['p2', 0.9],
      ['p2', 0.8],
    ],
    'nothing of p1’s steps was called',
  );
  assert.equal(await metric('us-va', 'abandoned'), 1);
  assert.equal(await metric('us-va', 'timeout'), 0);
  assert.equal(await metric('us-va', 'ok'), 2);
});

test('runner: while active() is false nothing is called; on becoming active the state in force is told', async (t) => {
  const gw = await gateway(t);
  let active = false;
  const t0 = Date.now() + 200;
  const plan = planOf('p', { 'us-va': [step(t0, 0.5), step(t0 + 200, 0.25)] });
  const { runner, metric } = runnerOf(t, { 'us-va': hookOf({ url: gw.url, timeoutMs: 30_000 }) }, plan, { active: () => active, activeCheckMs: 20 });
  runner.start();
  assert.equal(runner.status().active, false);
  await until(() => Date.now() > t0 + 300 && runner.status().nextWakeAt !== null && runner.status().nextWakeAt! > t0 + 300, 'the runner woke past both steps');
  assert.equal(gw.calls.length, 0, 'not active: no call');
  assert.equal(runner.status().regions['us-va']!.lastCall, null);
  active = true;
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'ok', 'told once active');
  assert.deepEqual(
    gw.calls.map((c) => [bodyOf(c).id, bodyOf(c).share]),
    [[`us-va@${t0 + 200}`, 0.25]],
    'only the state in force, not the steps missed',
  );
  // Leadership lost during a call: the call is abandoned; regained: the state is told again (same id).
  gw.react = (_c, n) => (n === 1 ? 'hang' : 204);
  runner.onPlan(planOf('p2', { 'us-va': [step(Date.now() - 1, 0)] }));
  await until(() => gw.calls.length === 2, 'the second call reached the gateway');
  active = false;
  await until(() => runner.status().active === false && runner.status().regions['us-va']?.lastCall?.outcome === 'abandoned', 'abandoned on losing the lease');
  assert.equal(await metric('us-va', 'abandoned'), 1);
  active = true;
  await until(() => runner.status().regions['us-va']?.lastCall?.outcome === 'ok' && gw.calls.length === 3, 'told again once active');
  assert.equal(bodyOf(gw.calls[2]!).id, bodyOf(gw.calls[1]!).id);
  assert.equal(gw.enforced.get('us-va')!.share, 0);
});

test('runner: close() aborts the call in flight and clears the timer', async (t) => {
  const gw = await gateway(t);
  gw.react = () => 'hang';
  const t0 = Date.now() + 60_000;
  const { runner, metric } = runnerOf(t, { 'us-va': hookOf({ url: gw.url, timeoutMs: 60_000 }) }, planOf('p', { 'us-va': [step(t0, 0)] }));
  runner.start();
  await until(() => gw.calls.length === 1, 'the call reached the gateway');
  assert.equal(runner.status().nextWakeAt, t0);
  let closed = false;
  void runner.close().then(() => (closed = true));
  await until(() => closed, 'close() resolved');
  assert.equal(runner.status().nextWakeAt, null);
  assert.equal(runner.status().regions['us-va']!.lastCall!.outcome, 'abandoned');
  assert.equal(await metric('us-va', 'abandoned'), 1);
  // Closed for good: a plan or start() afterwards starts nothing (a call would show in status at once).
  runner.onPlan(planOf('p2', { 'us-va': [step(Date.now() - 1, 0.5)] }));
  runner.start();
  assert.equal(runner.status().nextWakeAt, null);
  assert.equal(runner.status().regions['us-va']!.lastCall!.outcome, 'abandoned');
  assert.equal(runner.status().regions['us-va']!.lastCall!.share, 1);
});
