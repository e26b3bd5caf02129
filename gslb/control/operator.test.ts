/**
 * OperatorService over a real MemoryStore and StateService (the planner for real), on a
 * fixed clock: previews write nothing and show what would change (an event, a freeze, a
 * shadowed source applied, an undrain); drain, undrain, force and freeze validate their
 * input naming the field, and each change is audited.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { MemoryStore } from '../state/memory-store.js';
import { SignalError } from '../state/signals.js';
import { OverrideError, StateService } from './service.js';
import { OperatorService } from './operator.js';
import { defaultSettings, type PlannerSettings } from '../policy/planner/index.js';
import { regionStepAt } from '../policy/decide.js';
import type { Plan } from '../model/types.js';

const NOW = 1_800_000_000_000;
const S = 1000;

async function setup(over: Partial<PlannerSettings> = {}) {
  const store = new MemoryStore({ file: null, clock: () => NOW });
  const base = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
    { id: 'c', location: { lat: 40, lon: -75 }, capacityUnits: 100 },
  ]);
  const settings = { ...base, ...over };
  let current: Plan | null = null;
  const svc = new StateService({ store, log: pino({ level: 'silent' }), configHash: 'cfg', settings, debounceMs: 0, onPlan: (p) => (current = p), clock: () => NOW });
  await svc.start();
  const regions = new Set(['a', 'b', 'c']);
  const op = new OperatorService(svc, () => regions, () => current!, () => NOW);
  return { svc, op, regions, plan: () => current!, close: () => svc.close() };
}

// The load shed starts 6 h ahead: its drain (S up to 4 h for a grid drain to 0) has not begun at NOW.
const shed = (source: string) => ({
  region: 'b',
  kind: 'grid.event',
  source,
  key: 'e1',
  observedAt: NOW,
  expiresAt: NOW + 24 * 3600 * S,
  value: { id: 'e1', type: 'load-shed', start: NOW + 6 * 3600 * S, end: NOW + 7 * 3600 * S },
});

test('preview of a grid event: the region changes, shares move to its neighbours, nothing is written', async () => {
  const t = await setup();
  try {
    const before = await t.svc.snapshot();
    const p = await t.op.preview({ event: { region: 'b', type: 'load-shed', start: NOW + 6 * 3600 * S, end: NOW + 7 * 3600 * S } }, 'alice');
    assert.deepEqual(p.changed, ['b']);
    assert.ok(p.shares.length > 3 && p.shares.length <= 24);
    assert.ok(p.shares[0]!.regions.b! > 0.3, JSON.stringify(p.shares[0]));
    const drained = p.shares.find((x) => x.at >= NOW + 6 * 3600 * S)!;
    assert.equal(drained.regions.b, 0);
    assert.ok(Math.abs(Object.values(drained.regions).reduce((n, x) => n + x, 0) + drained.unplaced - 1) < 1e-3, 'shares add up to 1');
    assert.deepEqual(await t.svc.snapshot(), before, 'nothing written');
    // A bad event names its field.
    await assert.rejects(t.op.preview({ event: { region: 'b', type: 'no-such-type', start: NOW, end: NOW + S } }, 'alice'), (e: unknown) => e instanceof OverrideError && /^body\.event\.type/.test(e.field));
    await assert.rejects(t.op.preview({}, 'alice'), (e: unknown) => e instanceof OverrideError && e.field === 'body');
  } finally {
    await t.close();
  }
});

test('ingest: a grid event whose end has passed is refused on the API path (refuseEnded), stored from a collector replay', async () => {
  const t = await setup();
  try {
    const past = { ...shed('utility/x'), value: { id: 'e1', type: 'load-shed', start: NOW - 7200 * S, end: NOW - S } };
    await assert.rejects(t.svc.ingest([past], t.regions, undefined, { refuseEnded: true }), (e: unknown) => e instanceof SignalError && e.field === 'signals[0].value.end');
    assert.equal((await t.svc.ingest([past], t.regions)).results[0]!.stored, true, 'a replay of history is stored');
  } finally {
    await t.close();
  }
});

test('preview applyShadow: what a shadowed source would have done, while the plan in force ignores it', async () => {
  const t = await setup({ gridShadow: ['openadr3'] });
  try {
    await t.svc.ingest([shed('openadr3/vtn')], t.regions);
    await t.svc.replan();
    assert.equal(regionStepAt(t.plan(), 'b', NOW + 6 * 3600 * S).share, 1, 'shadowed: not applied');
    const p = await t.op.preview({ applyShadow: true }, 'alice');
    assert.deepEqual(p.changed, ['b']);
    assert.equal(regionStepAt(p.plan, 'b', NOW + 6 * 3600 * S).share, 0);
  } finally {
    await t.close();
  }
});

test('freeze: preview, then on (holding gridPolicy), a second is refused, off; each audited', async () => {
  const t = await setup();
  try {
    await t.svc.ingest([shed('openadr3/vtn')], t.regions);
    await t.svc.replan();
    const pv = await t.op.preview({ freeze: true }, 'alice');
    assert.deepEqual(pv.changed, ['b'], 'freezing now stops the coming drain of b');
    const on = await t.op.freeze(true, 'VTN looks wrong', undefined, 'alice');
    assert.deepEqual(on.frozen?.hold, { a: 1, b: 1, c: 1 });
    await assert.rejects(t.op.freeze(true, 'again', undefined, 'bob'), (e: unknown) => e instanceof OverrideError && e.field === 'body.frozen');
    await t.svc.replan();
    assert.equal(regionStepAt(t.plan(), 'b', NOW + 6 * 3600 * S).share, 1, 'held at 1 while frozen');
    assert.equal((await t.op.status()).frozen?.reason, 'VTN looks wrong');
    const off = await t.op.freeze(false, 'checked', undefined, 'alice');
    assert.equal(off.ended.length, 1);
    await t.svc.replan();
    assert.equal(regionStepAt(t.plan(), 'b', NOW + 6 * 3600 * S).share, 0, 'the drain goes on');
    const audit = await t.svc.audit(10);
    assert.deepEqual(
      audit.map((e) => `${e.actor} ${e.action} ${e.reason}`),
      ['alice override.end checked', 'alice override.create VTN looks wrong'],
    );
  } finally {
    await t.close();
  }
});

test('status cites only overrides the store still holds ([ended] otherwise) and carries a data loss held', async () => {
  const t = await setup();
  try {
    const kept = await t.op.drain('a', { reason: 'PDU swap' }, 'alice');
    const gone = await t.op.force('b', 'down', undefined, 'fire drill', 'alice');
    await t.svc.replan();
    // The plan in force is older than the store (a data loss held, a plan still being made): b's force has ended since.
    const older = t.plan();
    await t.svc.endOverride(gone.force.id, 'alice', 'drill over');
    const held = { detectedAt: NOW - 60 * S, seenRevision: 2, revision: 0, seenEpoch: '1', epoch: null, why: 'Redis at 127.0.0.1:1 (prefix x): its epoch marker is gone' };
    const svc = Object.assign(Object.create(t.svc) as StateService, { status: () => ({ ...t.svc.status(), loss: held }) });
    const st = await new OperatorService(svc, () => t.regions, () => older, () => NOW).status();
    const reasons = st.regions.flatMap((r) => r.reasons);
    assert.ok(reasons.some((r) => r.includes(`[${kept.id}]`)), `the live drain is cited: ${reasons.join(' | ')}`);
    assert.ok(reasons.some((r) => /forced down by alice \(fire drill\) \[ended\]/.test(r)), `the ended force says [ended]: ${reasons.join(' | ')}`);
    assert.ok(!reasons.some((r) => r.includes(gone.force.id)), `the ended force's id is not cited: ${reasons.join(' | ')}`);
    assert.deepEqual(st.storeLoss, held);
    assert.equal((await t.op.status()).storeLoss, null, 'none held: null');
  } finally {
    await t.close();
  }
});

test('drain, undrain and force validate their input and name the field', async () => {
  const t = await setup();
  try {
    const cases: [string, () => Promise<unknown>, string, RegExp][] = [
      ['unknown region', () => t.op.drain('zz', { reason: 'x' }, 'alice'), 'params.id', /not a region of this fleet/],
      ['deadline in the past', () => t.op.drain('a', { reason: 'x', by: NOW - 1 }, 'alice'), 'body.by', /after the start/],
      ['no reason', () => t.op.drain('a', { reason: '  ' }, 'alice'), 'body.reason', /say why/],
      ['undrain without a drain', () => t.op.undrain('a', 'nothing to end', 'alice'), 'params.id', /no operator drain/],
      ['force up without until', () => t.op.force('a', 'up', undefined, 'probe false alarm', 'alice'), 'body.until', /required for force-up/],
      ['force until in the past', () => t.op.force('a', 'down', NOW - 1, 'x', 'alice'), 'body.until', /in the past/],
    ];
    for (const [what, call, field, problem] of cases) {
      await assert.rejects(call(), (e: unknown) => e instanceof OverrideError && e.field === field && problem.test(e.problem), what);
    }
    assert.equal((await t.svc.overrides()).length, 0, 'nothing stored by refused requests');
  } finally {
    await t.close();
  }
});

test('undrain ramps back from where the drain had brought the region; a new force replaces the old', async () => {
  const t = await setup();
  try {
    await t.op.drain('a', { reason: 'maintenance', cap: 0.2 }, 'alice');
    const { ended, undrain } = await t.op.undrain('a', 'done early', 'alice');
    assert.equal(ended.length, 1);
    assert.deepEqual([undrain?.action, undrain?.value, undrain?.ramp, undrain?.end], ['undrain', 0.2, 300_000, NOW + 300_000]);
    await t.svc.replan();
    assert.equal(regionStepAt(t.plan(), 'a', NOW).share, 0.28, 'slow start: step 1 of 10 from 0.2');
    const first = await t.op.force('c', 'down', NOW + 3600 * S, 'fibre cut', 'alice');
    const second = await t.op.force('c', 'up', NOW + 600 * S, 'fibre back, probes lag', 'alice');
    assert.deepEqual(second.ended.map((o) => o.id), [first.force.id]);
    assert.deepEqual((await t.svc.overrides()).filter((o) => o.region === 'c').map((o) => o.action), ['force-up']);
    // Clearing ends the region's forces (audited); with none left, 400 naming the region.
    const cleared = await t.op.unforce('c', 'probes fixed', 'bob');
    assert.deepEqual(cleared.ended.map((o) => o.id), [second.force.id]);
    assert.deepEqual((await t.svc.overrides()).filter((o) => o.region === 'c'), []);
    const audit = await t.svc.audit(10);
    assert.ok(audit.some((e) => e.actor === 'bob' && e.action === 'override.end' && e.target === second.force.id && e.reason === 'probes fixed'), JSON.stringify(audit.slice(-2)));
    await assert.rejects(t.op.unforce('c', 'again', 'bob'), (e: Error & { field?: string }) => e.field === 'params.id' && /has no force to end/.test(e.message));
    await assert.rejects(t.op.unforce('c', ' ', 'bob'), (e: Error & { field?: string }) => e.field === 'query.reason');
  } finally {
    await t.close();
  }
});

test('a grid event entered by hand: stored from manual/<actor>, planned like any event, modified and cancelled by id; bad fields named', async () => {
  const t = await setup();
  try {
    const ev = { region: 'b', id: 'call-1', type: 'load-shed', start: NOW + 7200 * S, end: NOW + 10_800 * S, program: 'utility phone call' };
    const r = await t.op.enterEvent(ev, 'alice');
    assert.equal(r.stored, true);
    assert.equal(r.signal.source, 'manual/alice');
    assert.equal(r.signal.key, 'call-1');
    assert.equal(r.signal.expiresAt, NOW + 10_800 * S + 3600 * S);
    await t.svc.replan();
    const during = regionStepAt(t.plan(), 'b', NOW + 7200 * S);
    assert.equal(during.share, 0, 'a load shed drains the region by the event start');
    assert.match(during.reasons.join(' '), /manual\/alice/);
    const fleet = await t.op.fleet([{ id: 'a', name: 'A' }, { id: 'b', name: 'B' }, { id: 'c', name: 'C' }]);
    assert.deepEqual(
      fleet.events.map((e) => [e.region, e.source, e.key, e.program]),
      [['b', 'manual/alice', 'call-1', 'utility phone call']],
    );
    // The same id a second later, cancelled: the drain is called off.
    const later = new OperatorService(t.svc, () => t.regions, () => t.plan(), () => NOW + S);
    assert.equal((await later.enterEvent({ ...ev, cancelled: true }, 'alice')).stored, true);
    await t.svc.replan();
    assert.equal(regionStepAt(t.plan(), 'b', NOW + 7200 * S).share, 1, 'cancelled: nothing planned');
    // Entered again in the same millisecond: refused as stale, and said so.
    assert.deepEqual(await later.enterEvent(ev, 'alice').then((x) => [x.stored, x.reason]), [false, 'stale']);
    // Bad fields are named as the body's.
    await assert.rejects(t.op.enterEvent({ ...ev, type: 'tornado' }, 'alice'), (e: unknown) => e instanceof OverrideError && e.field === 'body.type');
    await assert.rejects(t.op.enterEvent({ ...ev, region: 'zz' }, 'alice'), (e: unknown) => e instanceof OverrideError && e.field === 'body.region');
    await assert.rejects(t.op.enterEvent({ ...ev, type: 'simple', level: 7 }, 'alice'), (e: unknown) => e instanceof OverrideError && e.field === 'body.level');
    // An event whose end has passed is refused naming end; one still running is taken.
    await assert.rejects(
      t.op.enterEvent({ ...ev, id: 'call-2', start: NOW - 7200 * S, end: NOW - S }, 'alice'),
      (e: unknown) => e instanceof OverrideError && e.field === 'body.end' && /has passed/.test(e.message),
    );
    await assert.rejects(t.op.enterEvent({ ...ev, id: 'call-2', start: NOW - 7200 * S, end: NOW }, 'alice'), (e: unknown) => e instanceof OverrideError && e.field === 'body.end');
    assert.equal((await t.op.enterEvent({ ...ev, id: 'call-3', start: NOW - 7200 * S, end: NOW + S }, 'alice')).stored, true);
  } finally {
    await t.close();
  }
});
