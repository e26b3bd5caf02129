/**
 * Proactive drain in the running server, watched with dig over time on a test clock
 * (issue 6, "Done when"): a load-shedding order for the home region us-va, pushed through
 * the signal API 520 s (test-clock) ahead of its start, is planned as docs/design.md "The drain curve" says —
 * answers keep TTL 30 until T − 485 s (TTL0 ahead of the first step), then TTLs follow the ramp steps; the share
 * of clients answered with us-va falls step by step (each client once, never back); from
 * T − 335 s no answer names us-va; and the region's drain hook is called at each step, told
 * at T − 335 s to send GOAWAY to its connections by T − 300 s (T − S), and from then to
 * refuse new streams.
 *
 * The server runs with GRIDSTEER_TEST_CLOCK at 10× (gslb/platform/clock.ts): a 30 s step takes
 * 3 s. Samples are taken on the test clock's schedule (a round every 5 s of it), each judged
 * against the instants it was sent and answered, so a loaded machine gives fewer samples, not
 * wrong ones. Every wait is bounded in count; no assertion depends on how long anything took.
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
import { describeMetric, scrape, sumOf } from './helpers/metrics.js';

const OPERATOR = 'drain-dig-operator-token-5e1a';
const INGEST = 'drain-dig-ingest-token-77f0';
const RATE = 10;
const clock = testClock(Date.UTC(2027, 5, 1, 12, 0, 0), RATE);
const fakeNow = clock.now;
const S = 1000;
/** Client subnets (ECS): each is one client for admission; all are placed at the default location. */
const SUBNETS = Array.from({ length: 10 }, (_, i) => `198.51.${100 + i}.0/24`);

let cfg: TestConfig;
let srv: RunningServer;
let gw: DrainGateway;

before(async () => {
  gw = await startDrainGateway();
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: dig for ten client subnets every step of a drain, from 127.0.0.1.
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.regionsDir = 'regions-hooked';
    // S fixed at 300 s (it would grow with the 520 s notice) and R at 120 s (five steps; the shipped 60 s is in gslb/policy/drain.test.ts): the steps below are T − 455 … T − 335 s.
    c.policy = { ...(c.policy as Record<string, unknown>), drain: { sessionAllowanceMaxMs: 300_000, rampMs: 120_000 } };
  });
  // The example fleet, with a drain hook on us-va pointing at the loopback gateway.
  const dir = join(cfg.dir, 'regions-hooked');
  cpSync(exampleRegions, dir, { recursive: true });
  const va = parse(readFileSync(join(dir, 'us-va.yaml'), 'utf8')) as Record<string, unknown>;
  va.drainHook = { url: gw.url, tokenEnv: 'GRIDSTEER_TEST_HOOK_TOKEN', timeoutMs: 1000, retries: 2, retryBaseMs: 50 };
  writeFileSync(join(dir, 'us-va.yaml'), stringify(va));
  writeTokensFile(cfg.dir, [{ name: 'alice', role: 'operator', token: OPERATOR }, { name: 'vtn', role: 'ingest', token: INGEST }]);
  srv = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_TEST_CLOCK: clock.env, GRIDSTEER_TEST_HOOK_TOKEN: 'hook-secret-1' } });
});

after(async () => {
  await srv?.stop();
  await gw?.close();
  cfg?.cleanup();
});

const api = (method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(srv.http, method, path, token, body);

interface Sample {
  /** Test-clock ms when the query was sent, and after the answer came. */
  t0: number;
  t1: number;
  subnet: string;
  region: string;
  ttl: number;
}

test('a load-shed order learned 520 s ahead: TTLs shrink from TTL0 ahead of the ramp, clients leave us-va step by step, none is sent there from T − 335 s, and the hook hears every step', async () => {
  const learned = Math.floor(fakeNow() / S) * S;
  const T = learned + 520 * S;
  const E = T + 600 * S;
  const post = await api('POST', '/v1/signals', INGEST, {
    signals: [{ region: 'us-va', kind: 'grid.event', source: 'openadr3/test-vtn', key: 'shed-1', observedAt: learned, expiresAt: E + 3600 * S, value: { id: 'shed-1', type: 'load-shed', start: T, end: E } }],
  });
  assert.equal(post.status, 200, JSON.stringify(post.body));

  const samples: Sample[] = [];
  // Sampling follows the test clock, not the machine's pace: a round of the ten clients, asked
  // at once (ten dig processes in parallel), every 5 s of test clock from learned + 1 s to
  // T + 20 s; a round that starts late is not made up for. Every answer is judged against its
  // own [t0, t1], so a slow round is still judged right, and at RATE 10 each window the test
  // needs answers in (35 s, 25 s, a 30 s step) lasts 2.5 s or more of real time, several
  // rounds even when one round of digs takes a second. Bounded: at most 109 rounds.
  for (let at = learned + S, round = 0; at <= T + 20 * S && round < 109; at += 5 * S, round++) {
    const wait = (at - fakeNow()) / RATE;
    if (wait > 0) await sleep(wait);
    const got = await Promise.all(
      SUBNETS.map(async (subnet): Promise<Sample> => {
        const t0 = fakeNow();
        const r = await askSteered(srv.udp, 'A', subnet);
        const t1 = fakeNow();
        return { t0, t1, subnet, region: r.region, ttl: r.run.msg.answer.find((rr) => rr.type === 'A')?.ttl ?? -1 };
      }),
    );
    samples.push(...got);
  }
  const last = fakeNow() < T + 20 * S ? (T + 20 * S - fakeNow()) / RATE : 0;
  if (last > 0) await sleep(last);
  const rel = (t: number) => `T${t >= T ? '+' : '−'}${Math.abs(Math.round((t - T) / S))}s`;
  const show = (xs: Sample[]) => xs.map((x) => `${rel(x.t0)} ${x.subnet} ${x.region} ttl ${x.ttl}`).join('\n');
  assert.ok(fakeNow() >= T + 20 * S, 'the loop ran until the event had started');

  // Before T − 485 s (TTL0 ahead of the first step): us-va with the full TTL.
  const early = samples.filter((x) => x.t1 < T - 485 * S);
  assert.ok(early.length >= 10, `answers before T − 485 s: ${early.length}`);
  for (const x of early) assert.deepEqual([x.region, x.ttl], ['us-va', 30], show([x]));
  // Between T − 485 s and the first step (T − 455 s): the TTL only reaches to the first step.
  const shrinking = samples.filter((x) => x.t0 > T - 480 * S && x.t1 < T - 455 * S);
  assert.ok(shrinking.length > 0, 'answers between T − 480 s and T − 455 s');
  // (never below Tmin, 5 s: an answer given less than 5 s before a step keeps 5 s)
  for (const x of shrinking) assert.ok(x.ttl < 30 && x.ttl * S <= Math.max(5 * S, T - 455 * S - x.t0 + 1000), `TTL bounded by the first step: ${show([x])}`);
  // No TTL ever reaches past the next step while the ramp runs (steps at T − 455 … T − 335 s, 30 s apart).
  const steps = [455, 425, 395, 365, 335].map((k) => T - k * S);
  // (The server answered somewhere in [t0, t1]: when a step falls inside, the later bound holds.)
  for (const x of samples.filter((y) => y.region === 'us-va' && y.t0 >= T - 485 * S)) {
    let next = steps.find((st) => st > x.t0);
    assert.ok(next !== undefined, `an answer naming us-va after the last step: ${show([x])}`);
    if (next <= x.t1) next = steps.find((st) => st > x.t1) ?? next;
    assert.ok(x.ttl * S <= Math.max(5 * S, next - x.t0 + 1000), `TTL ${x.ttl} s reaches past the next step at ${rel(next)}: ${show([x])}`);
  }
  // From the reach (T − 335 s) on, no answer names us-va: clients spill to us-tx, the next nearest.
  const after335 = samples.filter((x) => x.t0 >= T - 334 * S);
  assert.ok(after335.length >= 20);
  for (const x of after335) assert.equal(x.region, 'us-tx', show([x]));
  // Each client leaves us-va once and never comes back; some leave before others (a ramp, not a switch).
  const leftAt: number[] = [];
  for (const subnet of SUBNETS) {
    const seq = samples.filter((x) => x.subnet === subnet);
    const firstTx = seq.findIndex((x) => x.region !== 'us-va');
    assert.ok(firstTx > 0, `${subnet} was answered with us-va first`);
    assert.ok(seq.slice(firstTx).every((x) => x.region === 'us-tx'), `${subnet} never returns to us-va:\n${show(seq)}`);
    leftAt.push(seq[firstTx]!.t0);
  }
  assert.ok(new Set(leftAt.map((t) => steps.findIndex((st) => st > t))).size >= 2, `clients left at different steps: ${leftAt.map(rel).join(', ')}`);

  // The drain hook: every step reached the gateway in order, with the token, and "refuse new streams" at T.
  const va = gw.calls.filter((c) => c.body?.region === 'us-va').map((c) => c.body!);
  assert.ok(gw.calls.every((c) => c.headers.authorization === 'Bearer hook-secret-1'), 'bearer token from tokenEnv');
  const shares = va.map((b) => b.share as number);
  for (const want of [0.8, 0.6, 0.4, 0.2, 0]) assert.ok(shares.includes(want), `a hook call with share ${want}: ${JSON.stringify(va)}`);
  assert.deepEqual(
    shares.filter((x, i) => i === 0 || x !== shares[i - 1]),
    [...shares.filter((x, i) => i === 0 || x !== shares[i - 1])].sort((a, b) => b - a),
    `shares only fall: ${JSON.stringify(shares)}`,
  );
  // The drain-hook contract: GOAWAY from the instant the weight is 0 (T − 335 s), every
  // connection told by T − S (T − 300 s); new streams refused from then.
  const goaway = va.find((b) => typeof b.goawayBy === 'string');
  assert.ok(goaway, `a call asking for GOAWAY: ${JSON.stringify(va)}`);
  assert.equal(Date.parse(goaway.at as string), T - 335 * S);
  assert.equal(Date.parse(goaway.goawayBy as string), T - 300 * S);
  const refuse = va.find((b) => b.refuseNewStreams === true);
  assert.ok(refuse, `a call telling the gateway to refuse new streams: ${JSON.stringify(va)}`);
  assert.equal(Date.parse(refuse.at as string), T - 300 * S, `refuse from T − S on: ${String(refuse.at)}`);
  assert.deepEqual(gw.enforced.get('us-va')?.refuseNewStreams, true);

  // /metrics says the same: us-va's share is 0, its next change is the first restore step
  // (the end E, then 120 s of hold, then 30 s), and the hook calls succeeded.
  const m = await scrape(srv.http);
  assert.equal(sumOf(m, 'gridsteer_region_share', { region: 'us-va' }), 0);
  assert.equal(sumOf(m, 'gridsteer_region_share', { region: 'us-tx' }), 1);
  assert.equal(sumOf(m, 'gridsteer_region_next_change_timestamp_seconds', { region: 'us-va' }), (E + 150 * S) / 1000);
  assert.ok(sumOf(m, 'gridsteer_drain_hook_calls_total', { region: 'us-va', outcome: 'ok' }) >= 6, describeMetric(m, 'gridsteer_drain_hook_calls_total'));
  // Answers by region count exactly the queries this test sent (nothing else queried the server).
  for (const region of ['us-va', 'us-tx']) {
    assert.equal(sumOf(m, 'gridsteer_dns_answers_total', { region }), samples.filter((x) => x.region === region).length, `${region}: ${describeMetric(m, 'gridsteer_dns_answers_total')}`);
  }
});

test('operator failover over the API: drain by a deadline, status, preview, freeze, undrain — each audited with before and after', async () => {
  const now = fakeNow();
  // A viewer-less call is refused; a drain without a reason names the field.
  assert.equal((await api('POST', '/v1/regions/us-tx/drain', null, { reason: 'x' })).status, 401);
  const noReason = await api('POST', '/v1/regions/us-tx/drain', OPERATOR, {});
  assert.equal(noReason.status, 400);
  assert.match(JSON.stringify(noReason.body), /body\.reason|reason/);
  const unknown = await api('POST', '/v1/regions/xx-nowhere/drain', OPERATOR, { reason: 'typo' });
  assert.equal(unknown.status, 400);
  assert.match(JSON.stringify(unknown.body), /params\.id.*not a region of this fleet/);

  // Preview a drain of us-tx first: a dry run that writes nothing.
  const before = (await api('GET', '/v1/overrides', OPERATOR)).body as unknown as { overrides: unknown[] };
  const pv = await api('POST', '/v1/plan/preview', OPERATOR, { override: { region: 'us-tx', action: 'drain', value: 0, by: now + 900 * S } });
  assert.equal(pv.status, 200, JSON.stringify(pv.body));
  const preview = pv.body as unknown as { changed: string[]; shares: { at: number; regions: Record<string, number> }[] };
  assert.deepEqual(preview.changed, ['us-tx']);
  assert.ok(preview.shares.length >= 5);
  assert.ok(preview.shares[0]!.regions['us-tx']! > 0 && preview.shares.at(-1)!.regions['us-tx'] === 0, JSON.stringify(preview.shares));
  assert.deepEqual(((await api('GET', '/v1/overrides', OPERATOR)).body as unknown as { overrides: unknown[] }).overrides.length, before.overrides.length, 'a preview writes nothing');

  const dr = await api('POST', '/v1/regions/us-tx/drain', OPERATOR, { by: now + 900 * S, reason: 'PDU swap' });
  assert.equal(dr.status, 201, JSON.stringify(dr.body));
  const drain = dr.body as unknown as { id: string; by: number; action: string };
  assert.deepEqual([drain.action, drain.by], ['drain', now + 900 * S]);
  // The node re-plans after the write (debounced): poll, bounded.
  type Status = { regions: { id: string; share: number; next?: { at: number; share: number } }[] };
  let tx: Status['regions'][number] | undefined;
  for (let i = 0; i < 60; i++) {
    tx = ((await api('GET', '/v1/status', OPERATOR)).body as unknown as Status).regions.find((r) => r.id === 'us-tx');
    if (tx?.next) break;
    await sleep(50);
  }
  assert.ok(tx?.next && tx.next.at <= now + 900 * S && tx.next.share < 1, JSON.stringify(tx));

  // Freeze: gridPolicy holds; a second freeze is refused; off again.
  const fz = await api('POST', '/v1/automation/freeze', OPERATOR, { frozen: true, reason: 'suspect VTN feed' });
  assert.equal(fz.status, 200, JSON.stringify(fz.body));
  const hold = (fz.body as unknown as { frozen: { hold: Record<string, number> } }).frozen.hold;
  assert.equal(hold['us-va'], 0, 'us-va is held drained (its event is in force)');
  assert.equal((await api('POST', '/v1/automation/freeze', OPERATOR, { frozen: true, reason: 'again' })).status, 400);
  const frozenStatus = (await api('GET', '/v1/status', OPERATOR)).body as unknown as { frozen: { reason: string } | null };
  assert.equal(frozenStatus.frozen?.reason, 'suspect VTN feed');
  const unfz = await api('POST', '/v1/automation/freeze', OPERATOR, { frozen: false, reason: 'feed checked' });
  assert.equal((unfz.body as unknown as { ended: unknown[] }).ended.length, 1);

  // Undrain: the drain ends, an undrain ramps back.
  const un = await api('DELETE', `/v1/regions/us-tx/drain?reason=${encodeURIComponent('PDU swap cancelled')}`, OPERATOR);
  assert.equal(un.status, 200, JSON.stringify(un.body));
  assert.deepEqual((un.body as unknown as { ended: { id: string }[] }).ended.map((o) => o.id), [drain.id]);
  assert.equal((await api('DELETE', `/v1/regions/us-tx/drain?reason=again`, OPERATOR)).status, 400, 'nothing left to undrain');

  // Force down with an end; force up needs one.
  assert.equal((await api('POST', '/v1/regions/sa-sao/force', OPERATOR, { state: 'up', reason: 'probe false alarm' })).status, 400);
  const fd = await api('POST', '/v1/regions/sa-sao/force', OPERATOR, { state: 'down', until: fakeNow() + 3600 * S, reason: 'fibre cut' });
  assert.equal(fd.status, 201, JSON.stringify(fd.body));

  // Every change is in the audit log, with actor, reason, before and after.
  const audit = (await api('GET', '/v1/audit?limit=20', OPERATOR)).body as unknown as { entries: { actor: string; action: string; reason: string; before: unknown; after: unknown }[] };
  const words = audit.entries.map((e) => `${e.actor} ${e.action} ${e.reason}`);
  for (const w of ['alice override.create PDU swap', 'alice override.create suspect VTN feed', 'alice override.end feed checked', 'alice override.end PDU swap cancelled', 'alice override.create fibre cut']) {
    assert.ok(words.some((x) => x.startsWith(w)), `audit has "${w}": ${words.join(' | ')}`);
  }
  const ended = audit.entries.find((e) => e.reason === 'PDU swap cancelled' && e.action === 'override.end')!;
  assert.equal((ended.before as { id: string }).id, drain.id);
  assert.equal(ended.after, null);
});
