/**
 * Recurring windows through the control layer and the API (issue 21), over a real MemoryStore,
 * StateService and planner on a clock the test moves: windows added through the API are stored
 * like overrides (audited) and planned like the configuration's; bad input is refused naming
 * the field (the cron expression's bad part named); skip-next skips one occurrence; a
 * window added later than its lead drains at once with the shortfall said; the control loop
 * passes the horizon epoch and plans again when it advances.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { MemoryStore } from '../state/memory-store.js';
import { OverrideError, StateService } from './service.js';
import { WindowsService } from './windows.js';
import { defaultSettings, type PlannerSettings } from '../policy/planner/index.js';
import { regionStepAt } from '../policy/decide.js';
import { checkWindow } from '../config/windows.js';
import { WindowSpecSchema, type WindowSpec } from '../model/windows.js';
import type { Plan } from '../model/types.js';
import { buildApi } from '../api/app.js';
import { loadTokens } from '../config/tokens.js';

const REGIONS = ['eu-ie', 'us-tx', 'us-va'];
const SAFETY = { maxAutoShare: 0.5, minDrainIntervalMs: 120_000, units: {}, names: [{ name: 'api', regions: REGIONS }] };
/** Saturday 2026-10-24 12:00Z: the Dublin window below starts Sunday 02:00 GMT (02:00Z). */
const START = Date.parse('2026-10-24T12:00:00Z');
const SUNDAY = Date.parse('2026-10-25T02:00:00Z');
const spec = (o: Partial<WindowSpec>): WindowSpec => Value.Default(WindowSpecSchema, { id: 'w', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h', reason: 'patching', ...o }) as WindowSpec;

async function setup(configWindows: WindowSpec[] = []) {
  let now = START;
  const clock = () => now;
  const store = new MemoryStore({ file: null, clock });
  const base = defaultSettings(REGIONS.map((id, i) => ({ id, location: { lat: 40 + i, lon: -i * 30 } })));
  const windows = configWindows.map((w) => checkWindow(w, new Set(REGIONS), SAFETY, 'config').window!);
  const settings: PlannerSettings = { ...base, ...(windows.length > 0 ? { windows } : {}) };
  const plans: Plan[] = [];
  const svc = new StateService({ store, log: pino({ level: 'silent' }), configHash: 'cfg', settings, debounceMs: 0, onPlan: (p) => plans.push(p), clock });
  await svc.start();
  const ws = new WindowsService({ svc, regions: () => new Set(REGIONS), safety: () => SAFETY, plan: () => svc.plan, clock });
  /** Plans again now (as a store revision does) and returns the plan in force. */
  const planned = async () => {
    await svc.replan();
    return svc.plan!;
  };
  return { svc, ws, store, plans, planned, setNow: (t: number) => (now = t), close: () => svc.close() };
}

const refused = async (p: Promise<unknown>, field: string, message: RegExp) => {
  await assert.rejects(p, (e: unknown) => e instanceof OverrideError && e.field === field && message.test(e.problem));
};

test('a window added through the API is stored (audited) and planned like one of the configuration; removed, it stops', async (t) => {
  const c = await setup();
  t.after(c.close);
  const o = await c.ws.add(spec({}), 'alice');
  assert.equal(o.action, 'window');
  assert.equal(o.window?.source, 'api');
  const p = await c.planned();
  assert.deepEqual(
    p.windows?.map((x) => [x.window, new Date(x.start).toISOString(), x.source]),
    [['w', '2026-10-25T02:00:00.000Z', 'api']],
  );
  assert.equal(regionStepAt(p, 'eu-ie', SUNDAY + 1000).share, 0);
  const audit = await c.svc.audit(5);
  assert.equal(audit[0]!.action, 'override.create');
  assert.equal((audit[0]!.after as { window: { id: string } }).window.id, 'w');
  const listed = await c.ws.list();
  assert.deepEqual(listed.windows.map((w) => [w.id, w.source, w.addedBy, w.next.map((n) => new Date(n.start).toISOString().slice(0, 10))]), [['w', 'api', 'alice', ['2026-10-25', '2026-11-01', '2026-11-08']]]);
  await c.ws.remove('w', 'alice', 'done');
  const after = await c.planned();
  assert.equal(after.windows, undefined);
  assert.equal(after.regions['eu-ie'], undefined);
});

test('bad windows are refused naming the field: the cron expression\'s bad part, the time zone, a region, the safety limits, a taken id', async (t) => {
  const c = await setup([spec({ id: 'conf' })]);
  t.after(c.close);
  await refused(c.ws.add(spec({ cron: '0 25 * * sun' }), 'alice'), 'body.cron', /its hour field \("25"\)/);
  await refused(c.ws.add(spec({ cron: '61 2 * * sun' }), 'alice'), 'body.cron', /its minute field \("61"\)/);
  await refused(c.ws.add(spec({ timezone: 'Mars/Olympus' }), 'alice'), 'body.timezone', /not a time zone this build knows/);
  await refused(c.ws.add(spec({ regions: ['eu-ie', 'eu-fr'] }), 'alice'), 'body.regions[1]', /unknown region "eu-fr"/);
  await refused(c.ws.add(spec({ regions: ['eu-ie', 'us-va'] }), 'alice'), 'body.force', /drains 2 regions at once.*set force: true/);
  await refused(c.ws.add(spec({ id: 'conf' }), 'alice'), 'body.id', /a window of the configuration file/);
  await refused(c.ws.remove('conf', 'alice', 'x'), 'params.id', /remove it there/);
  await refused(c.ws.remove('nope', 'alice', 'x'), 'params.id', /no window "nope"/);
  // Confirmed with force: stored, and the audit holds the confirmation.
  const forced = await c.ws.add(spec({ id: 'both', regions: ['eu-ie', 'us-va'], force: true }), 'alice');
  assert.equal(forced.window?.force, true);
  assert.equal(((await c.svc.audit(1))[0]!.after as { window: { force: boolean } }).window.force, true);
  await refused(c.ws.add(spec({ id: 'both' }), 'alice'), 'body.id', /already a window/);
});

test('skip-next: the next occurrence is listed as skipped (who, why) and does not act; the one after does', async (t) => {
  const c = await setup([spec({ id: 'conf' })]);
  t.after(c.close);
  const { occurrence } = await c.ws.skipNext('conf', 'alice', 'release week');
  assert.equal(occurrence.start, SUNDAY);
  const p = await c.planned();
  assert.match(p.windows![0]!.skipped!, /^skipped by alice \(release week\) \[ov-/);
  assert.equal(p.regions['eu-ie'], undefined, 'nothing planned for the skipped occurrence');
  const listed = await c.ws.list();
  assert.deepEqual(listed.windows[0]!.next.map((n) => n.skipped !== undefined), [true, false, false]);
  // Skipping again skips the following week's.
  assert.equal((await c.ws.skipNext('conf', 'alice', 'and the next')).occurrence.start, SUNDAY + 7 * 86_400_000);
});

test('a window added later than its lead: drained at once with the shortfall said, TTLs at the minimum until it starts', async (t) => {
  const c = await setup();
  t.after(c.close);
  c.setNow(SUNDAY - 100_000);
  await c.ws.add(spec({}), 'alice');
  const p = await c.planned();
  const st = regionStepAt(p, 'eu-ie', SUNDAY - 50_000);
  assert.equal(st.share, 0);
  assert.equal(st.ttlCap, 5);
  assert.ok(st.reasons.some((r) => /was added \d+ s later than the lead it needs/.test(r)), st.reasons.join(' | '));
});

test('the control loop passes the horizon epoch and plans again when it advances', async (t) => {
  const c = await setup([spec({ id: 'conf' })]);
  t.after(c.close);
  const first = c.svc.plan!;
  assert.deepEqual(first.windows?.map((x) => new Date(x.start).toISOString()), ['2026-10-25T02:00:00.000Z']);
  // A week on: the next Sunday comes into the horizon. The store did not change; the loop's
  // once-a-second check plans again (bounded wait: 50 checks).
  c.setNow(START + 7 * 86_400_000);
  const n = c.plans.length;
  for (let i = 0; i < 50 && c.plans.length === n; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(c.plans.length > n, 'planned again after the epoch advanced');
  assert.deepEqual(c.svc.plan!.windows?.map((x) => new Date(x.start).toISOString()), ['2026-11-01T02:00:00.000Z']);
});

test('the API: POST /v1/windows refuses a bad cron expression naming body.cron and its bad part; GET lists; skip-next and DELETE', async (t) => {
  const c = await setup();
  t.after(c.close);
  const TOKEN = 'operator-token-0123456789abcdef';
  const app = await buildApi({
    log: pino({ level: 'silent' }),
    tokens: loadTokens({ env: `operator:alice:${TOKEN}` }),
    readiness: () => ({ ready: true, checks: [] }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    configInfo: () => ({ version: 'v', file: 'f', loadedAt: 0, zones: [], names: [], regions: REGIONS }),
    reload: async () => ({ version: 'v', changed: false }),
    explain: async () => {
      throw new Error('not here');
    },
    windows: c.ws,
    dashboardDir: false,
  });
  t.after(() => app.close());
  const auth = { authorization: `Bearer ${TOKEN}` };
  const bad = await app.inject({ method: 'POST', url: '/v1/windows', headers: auth, payload: { id: 'w', regions: ['eu-ie'], cron: '0 2 * 13 sun', duration: '2h', reason: 'x' } });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().error.field, 'body.cron');
  assert.match(bad.json().error.message, /its month field \("13"\)/);
  const badDuration = await app.inject({ method: 'POST', url: '/v1/windows', headers: auth, payload: { id: 'w', regions: ['eu-ie'], cron: '0 2 * * sun', duration: 'soon', reason: 'x' } });
  assert.equal(badDuration.statusCode, 400);
  assert.equal(badDuration.json().error.field, 'body.duration');
  const ok = await app.inject({ method: 'POST', url: '/v1/windows', headers: auth, payload: { id: 'w', regions: ['eu-ie'], cron: '0 2 * * sun', timezone: 'Europe/Dublin', duration: '2h', reason: 'patching' } });
  assert.equal(ok.statusCode, 201, ok.body);
  const list = await app.inject({ method: 'GET', url: '/v1/windows', headers: auth });
  assert.equal(list.statusCode, 200);
  assert.equal(list.json().windows[0].next[0].start, SUNDAY);
  const skip = await app.inject({ method: 'POST', url: '/v1/windows/w/skip-next', headers: auth, payload: { reason: 'freeze' } });
  assert.equal(skip.statusCode, 201, skip.body);
  const del = await app.inject({ method: 'DELETE', url: '/v1/windows/w?reason=done', headers: auth });
  assert.equal(del.statusCode, 200, del.body);
  const gone = await app.inject({ method: 'DELETE', url: '/v1/windows/w?reason=done', headers: auth });
  assert.equal(gone.statusCode, 400);
  assert.equal(gone.json().error.field, 'params.id');
});

test('configWindowChanges: a reload\'s windows compared by id (case table)', async () => {
  const { configWindowChanges } = await import('./windows.js');
  const a = spec({ id: 'a' });
  const b = spec({ id: 'b', regions: ['us-tx'] });
  const a2 = spec({ id: 'a', duration: '3h' });
  const cases: [string, WindowSpec[], WindowSpec[], [string, string][]][] = [
    ['nothing', [], [], []],
    ['equal', [a, b], [a, b], []],
    ['reordered', [a, b], [b, a], []],
    ['added', [a], [a, b], [['window.config-add', 'b']]],
    ['removed', [a, b], [b], [['window.config-remove', 'a']]],
    ['changed', [a, b], [a2, b], [['window.config-change', 'a']]],
    ['all three, in id order', [a, spec({ id: 'c' })], [a2, b], [['window.config-change', 'a'], ['window.config-add', 'b'], ['window.config-remove', 'c']]],
  ];
  for (const [name, before, after, want] of cases) assert.deepEqual(configWindowChanges(before, after).map((c) => [c.action, c.id]), want, name);
  const [c] = configWindowChanges([a], [a2]);
  assert.deepEqual([c!.before, c!.after], [a, a2]);
});
