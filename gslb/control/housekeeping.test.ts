/**
 * The practice-runs job over a real MemoryStore and StateService (the planner for real): a run
 * nothing blocks is recorded started, then finished with the share it moved and restored; a run
 * blocked by a grid alert is recorded skipped with the reason; recording twice writes nothing
 * new (idempotent); GET /v1/practice-runs' view reads the records back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { MemoryStore } from '../state/memory-store.js';
import { StateService } from './service.js';
import { defaultSettings } from '../policy/planner/index.js';
import { checkWindow } from '../config/windows.js';
import { WindowSpecSchema, type WindowSpec } from '../model/windows.js';
import { practiceRuns, recordPracticeRuns } from './housekeeping.js';
import type { DrainHookConfig } from '../config/drain-hook.js';

const REGIONS = ['eu-ie', 'us-tx', 'us-va'];
const SAFETY = { maxAutoShare: 0.5, minDrainIntervalMs: 120_000, units: {}, names: [{ name: 'api', regions: REGIONS }] };
const T = Date.parse('2026-06-02T14:00:00Z');
const H = 3_600_000;

async function setup() {
  let now = T - 2 * H;
  const clock = () => now;
  const store = new MemoryStore({ file: null, clock });
  const spec = Value.Default(WindowSpecSchema, { id: 'va-drill', kind: 'practice', regions: ['us-va'], cron: '0 14 * * tue', duration: '1h', reason: 'weekly drill' }) as WindowSpec;
  const settings = { ...defaultSettings(REGIONS.map((id) => ({ id }))), windows: [checkWindow(spec, new Set(REGIONS), SAFETY, 'config').window!] };
  const svc = new StateService({ store, log: pino({ level: 'silent' }), configHash: 'cfg', settings, debounceMs: 0, onPlan: () => undefined, clock });
  await svc.start();
  const deps = { svc, plan: () => svc.plan, node: 'n1', clock, practiceCounts: new Map<string, number>() };
  return { svc, store, deps, at: async (t: number) => ((now = t), await svc.replan()), close: () => svc.close() };
}

test('a practice run nothing blocks: recorded started, then finished with what moved and restored; twice writes nothing new', async (t) => {
  const c = await setup();
  t.after(c.close);
  assert.deepEqual(await recordPracticeRuns(c.deps), { outcome: 'ok', detail: 'nothing new to record' });
  await c.at(T + 60_000);
  await recordPracticeRuns(c.deps);
  assert.deepEqual(practiceRuns(await c.svc.audit(100)).map((r) => [r.window, r.outcome]), [['va-drill', 'started']]);
  await c.at(T + 2 * H);
  assert.match((await recordPracticeRuns(c.deps)).detail, /^1 outcome\(s\) recorded$/);
  const [run] = practiceRuns(await c.svc.audit(100));
  const { restoredAt, traffic, ...rest } = run!;
  assert.deepEqual(rest, { window: 'va-drill', regions: ['us-va'], start: T, end: T + H, outcome: 'finished', share: 0, restored: true, probeErrors: [], recordedBy: 'automation/n1' });
  assert.ok(restoredAt! > T + H && restoredAt! <= T + 2 * H, `restored after the end: ${restoredAt}`);
  assert.deepEqual([traffic!.homes, traffic!.held, traffic!.acting.queries, traffic!.acting.moved], [['us-va'], { from: T, to: T + H, queries: 0, qps: 0 }, 0, 0], 'no demand measured, none recorded');
  assert.deepEqual(await recordPracticeRuns(c.deps), { outcome: 'ok', detail: 'nothing new to record' });
  assert.deepEqual([...c.deps.practiceCounts], [['practice.started', 1], ['practice.finished', 1], ['practice.moved-queries', 0]]);
});

test('a practice run records what was measured: its regions\' clients\' demand before, held and moved (from the demand buckets), and a probe that failed mid-run even after it recovered', async (t) => {
  const c = await setup();
  t.after(c.close);
  const B = 10_000;
  const row = (bucket: number, home: string, queries: number) => ({ bucket, home, name: 'api.gslb.example.com', queries });
  // us-tx's probe is up before the run (its first result decides its state: one failure later is below fall, 3).
  const probe = (at: number, up: boolean) => ({ region: 'us-tx', kind: 'health.probe' as const, source: 'health/n9', key: '10.0.0.7:443', observedAt: at, expiresAt: at + 10 * H, value: up ? { up } : { up, detail: 'connect timeout' } });
  await c.svc.ingest([probe(T - 2 * H, true)], new Set(REGIONS));
  await c.at(T - 30 * 60_000);
  // The plan's first step of the run (the drain lead: from the plan, not assumed here).
  const steps = c.svc.plan!.regions['us-va']!;
  const F = Math.floor(steps.find((st) => st.share < 1 || st.down)!.at / B) * B;
  // Demand as the flusher writes it, bucket by bucket while time goes: 2 q/bucket from us-va's clients before F, 3 from F on; eu-ie's clients are not read.
  let written = F - 600_000;
  let probed = 0;
  let recorded = '';
  // Bounded: 5-minute steps from F − 10 min to T + 2 h (the job every 5 minutes; the store keeps an hour of demand).
  for (let t = F - 600_000; t <= T + 2 * H; t += 300_000) {
    const rows = [];
    for (; written < t - B; written += B) rows.push(row(written, 'us-va', written < F ? 2 : 3), row(written, 'eu-ie', 100));
    await c.store.addDemand(rows);
    await c.at(t);
    if (!probed && t >= T + 10 * 60_000) {
      // Mid-run: us-tx's probe fails once, the job runs, then the probe recovers before the next run.
      probed = t;
      await c.svc.ingest([probe(t, false)], new Set(REGIONS));
      recorded = (await recordPracticeRuns(c.deps)).detail;
      assert.equal(c.svc.plan!.windows!.find((o) => o.window === 'va-drill')!.aborted, undefined, 'one failure does not take us-tx down: the run goes on');
      await c.at(t + 60_000);
      await c.svc.ingest([probe(t + 60_000, true)], new Set(REGIONS));
      continue;
    }
    await recordPracticeRuns(c.deps);
  }
  assert.match(recorded, /^\d outcome\(s\) recorded$/);
  const [run] = practiceRuns(await c.svc.audit(1000));
  assert.equal(run!.outcome, 'finished', JSON.stringify(run));
  assert.deepEqual(run!.probeErrors, [{ region: 'us-tx', source: 'health/n9', key: '10.0.0.7:443', at: probed, detail: 'connect timeout' }]);
  const tr = run!.traffic!;
  const restoredAt = run!.restoredAt!;
  assert.deepEqual(tr.before, { from: F - 300_000, to: F, queries: 2 * 30, qps: 0.2 });
  assert.deepEqual(tr.held, { from: T, to: T + H, queries: 3 * 360, qps: 0.3 });
  const actingBuckets = Math.ceil(restoredAt / B) - F / B;
  assert.deepEqual([tr.acting.from, tr.acting.to, tr.acting.queries], [F, Math.ceil(restoredAt / B) * B, 3 * actingBuckets]);
  // Moved: all of the held hour (share 0), part of the ramp buckets: between the two.
  assert.ok(tr.acting.moved > 3 * 360 && tr.acting.moved < 3 * actingBuckets, `moved ${tr.acting.moved} of ${tr.acting.queries}`);
  assert.ok(F < T - H, `the drain lead is over an hour (${(T - F) / 60_000} min): the demand was measured in stretches`);
  // The metrics' counts: the queries moved and the one probe failure.
  assert.equal(c.deps.practiceCounts.get('practice.moved-queries'), tr.acting.moved);
  assert.equal(c.deps.practiceCounts.get('practice.probe-errors'), 1);
  // Recording again writes nothing.
  assert.deepEqual(await recordPracticeRuns(c.deps), { outcome: 'ok', detail: 'nothing new to record' });
  assert.equal(c.deps.practiceCounts.get('practice.moved-queries'), tr.acting.moved);
});

test('a practice run blocked by a grid alert: recorded skipped with the reason; nothing moved', async (t) => {
  const c = await setup();
  t.after(c.close);
  await c.svc.ingest([{ region: 'us-tx', kind: 'grid.alert', source: 'ercot/alerts', key: 'a1', observedAt: T - 2 * H, expiresAt: T + 6 * H, value: { type: 'watch', level: 1 } }], new Set(REGIONS));
  await c.at(T + 60_000);
  await recordPracticeRuns(c.deps);
  const [run] = practiceRuns(await c.svc.audit(100));
  assert.equal(run!.outcome, 'skipped');
  assert.match(run!.why!, /^practice run blocked at .*: a grid alert is in force in us-tx/);
  assert.equal(c.svc.plan!.regions['us-va'], undefined, 'us-va was never capped');
});

test('a per-node job (geoip-check) runs on every node for the same slot, unaudited; a fleet job on one', async (t) => {
  const { JobRunner } = await import('./jobs.js');
  const store = new MemoryStore({ file: null });
  const seen: string[] = [];
  const mk = (node: string) =>
    new JobRunner({
      store,
      node,
      log: pino({ level: 'silent' }),
      clock: Date.now,
      leaseMs: 500,
      jobs: [
        { name: 'local', cron: '* * * * * *', perNode: true, what: 'per node', run: async () => (seen.push(`local ${node}`), { outcome: 'ok', detail: node }) },
        { name: 'fleet', cron: '* * * * * *', what: 'once', run: async (ctx) => (await ctx.changing(), seen.push(`fleet ${node}`), { outcome: 'ok', detail: node }) },
      ],
    });
  const runners = [mk('n1'), mk('n2')];
  for (const r of runners) r.start();
  t.after(async () => {
    for (const r of runners) await r.close(true);
  });
  // Bounded: at most 60 checks 50 ms apart, until both nodes ran the per-node job.
  for (let i = 0; i < 60 && !(seen.includes('local n1') && seen.includes('local n2')); i++) await new Promise((r) => setTimeout(r, 50));
  for (const r of runners) await r.close(true);
  assert.ok(seen.includes('local n1') && seen.includes('local n2'), seen.join(', '));
  const views = await runners[0]!.status();
  assert.equal(views.find((v) => v.name === 'local')!.lastRun?.node, 'n1', "a per-node job lists this node's runs");
  const audit = await store.audit(100);
  assert.ok(audit.every((e) => !e.target.startsWith('job:local@')), 'per-node runs are not audited');
  const fleetStarts = audit.filter((e) => e.action === 'job.start' && e.target.startsWith('job:fleet@')).map((e) => e.target);
  assert.ok(fleetStarts.length > 0);
  assert.equal(fleetStarts.length, new Set(fleetStarts).size, 'each fleet slot started once');
});

test('audit-trim: nothing with retention 0; with a retention, what is older is exported (JSON lines) first, then trimmed; twice changes nothing', async (t) => {
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { trimAudit } = await import('./housekeeping.js');
  const c = await setup();
  t.after(c.close);
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-trim-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const DAY = 24 * H;
  for (const age of [40, 35, 20, 1]) await c.store.appendAudit({ at: T - 2 * H - age * DAY, actor: 'n1', action: 'job.start', target: `job:x@${age}`, reason: 'r', before: null, after: null });
  assert.match((await trimAudit(c.deps, { retentionMs: 0 })).detail, /everything is kept/);
  const file = join(dir, 'export', 'audit.jsonl');
  const r = await trimAudit(c.deps, { retentionMs: 30 * DAY, exportFile: file });
  assert.match(r.detail, /^removed 2 audit entries older than .* \(exported first to /);
  assert.deepEqual(readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { target: string }).target), ['job:x@40', 'job:x@35']);
  assert.deepEqual((await c.svc.audit(10)).map((e) => e.target), ['job:x@1', 'job:x@20']);
  assert.match((await trimAudit(c.deps, { retentionMs: 30 * DAY, exportFile: file })).detail, /^nothing older than /);
  assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 2, 'nothing exported twice');
});

test('verify-hooks: each hooked region is re-sent its state in force with the runner\'s id (applied once by the gateway); a hook that does not answer fails the run, named', async (t) => {
  const { startDrainGateway, closedPort } = await import('../../test/helpers/drain-gateway.js');
  const { verifyHooks } = await import('./housekeeping.js');
  const gw = await startDrainGateway();
  t.after(() => gw.close());
  const c = await setup();
  t.after(c.close);
  await c.svc.createOverride({ region: 'eu-ie', action: 'drain', value: 0, reason: 'fibre work' }, 'alice', new Set(REGIONS));
  await c.at(T - 2 * H + 1000);
  const dead = `http://127.0.0.1:${await closedPort()}/hook`;
  const hooks = new Map<string, DrainHookConfig>([
    ['eu-ie', { url: gw.url, tokenEnv: 'HOOK_TOKEN', timeoutMs: 1000, retries: 0, retryBaseMs: 10 }],
    ['us-tx', { url: dead, timeoutMs: 1000, retries: 0, retryBaseMs: 10 }],
  ]);
  const check = { hooks: () => hooks, env: { HOOK_TOKEN: 'hook-secret-3' } };
  const r = await verifyHooks(c.deps, check);
  assert.equal(r.outcome, 'failed');
  assert.match(r.detail, /^eu-ie ok \(HTTP 204, eu-ie@\d+\); us-tx error: /);
  const call = gw.calls.find((x) => x.body?.region === 'eu-ie')!;
  assert.deepEqual([call.body!.share, call.body!.phase, call.headers.authorization], [0, 'drain', 'Bearer hook-secret-3']);
  // Again: the same id, so the gateway applies it once.
  await verifyHooks(c.deps, check);
  const ids = gw.calls.filter((x) => x.body?.region === 'eu-ie').map((x) => x.body!.id);
  assert.equal(ids.length, 2);
  assert.equal(ids[0], ids[1]);
  assert.equal(gw.enforced.get('eu-ie')?.applied, 1);
});
