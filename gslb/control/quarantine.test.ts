/**
 * Quarantine (ADR 0020): the search finds exactly the records that make planning throw, in a
 * fixed order, and the state service keeps answering from its last good plan, quarantines
 * those records in the store and plans without them; an operator releases or drops them.
 * The poison here is real for the real planner: a grid.event record whose value is null (a
 * record written by hand or by an older build: validation would refuse it), which makes
 * `plan()` throw a TypeError.
 */
import { test } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { findPoison } from './quarantine.js';
import { StateService } from './service.js';
import { MemoryStore } from '../state/memory-store.js';
import { defaultSettings, plan } from '../policy/planner/index.js';
import type { Plan, Signal } from '../model/types.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import { candidatesOf, fingerprintOf, plannable, quarantineOf } from '../policy/quarantine.js';

const NOW = 1_780_000_000_000;
const log = pino({ level: 'silent' });
const settings = defaultSettings([
  { id: 'us-east', capacityUnits: 10 },
  { id: 'eu-west', capacityUnits: 10 },
]);

function record(region: string, key: string, value: unknown = { units: 5 }, kind = 'capacity'): SignalRecord {
  const signal = { kind, region, source: 'src', key, observedAt: NOW, expiresAt: NOW + 60_000, value } as unknown as Signal;
  return { id: `${region}|${kind}|src|${key}`, signal, fold: { kind: 'latest' } };
}

const snap = (records: SignalRecord[]): StoreSnapshot => ({ revision: 7, records, overrides: [], demand: [] });

test('findPoison: exactly the records that make planning throw, whatever their number and place, with the error each caused', () => {
  const recs = Array.from({ length: 37 }, (_, i) => record(i % 2 ? 'us-east' : 'eu-west', `k${String(i).padStart(2, '0')}`));
  const cases: { name: string; bad: number[]; pair?: [number, number] }[] = [
    { name: 'none', bad: [] },
    { name: 'one, first', bad: [0] },
    { name: 'one, last', bad: [36] },
    { name: 'three spread', bad: [3, 17, 30] },
    { name: 'every other one of the first ten', bad: [0, 2, 4, 6, 8] },
    { name: 'a pair that fails only together: the later one is held', bad: [], pair: [5, 20] },
    { name: 'another pair', bad: [], pair: [2, 33] },
  ];
  for (const c of cases) {
    const bad = new Set(c.bad.map((i) => recs[i]!.id));
    const planWith = (s: StoreSnapshot) => {
      const ids = new Set(s.records.map((r) => r.id));
      for (const id of bad) if (ids.has(id)) throw new RangeError(`bad record ${id}`);
      if (c.pair && ids.has(recs[c.pair[0]]!.id) && ids.has(recs[c.pair[1]]!.id)) throw new Error('the pair');
    };
    const r = findPoison(snap(recs), planWith);
    // Of a pair, the one later in the candidates' order (by target) is held: the first is put back before it.
    const expected = c.pair ? [[`signal:${recs[c.pair[0]]!.id}`, `signal:${recs[c.pair[1]]!.id}`].sort()[1]!] : [...bad].map((id) => `signal:${id}`).sort();
    assert.deepEqual(r.found.map((f) => f.target), expected, c.name);
    assert.equal(r.baseError, null, c.name);
    assert.equal(r.exhausted, false, c.name);
    for (const f of r.found) assert.match(f.why, c.pair ? /the pair/ : /^RangeError: bad record /, c.name);
    // Each found record carries the fingerprint of what is stored.
    for (const f of r.found) assert.equal(f.fingerprint, fingerprintOf(recs.find((x) => `signal:${x.id}` === f.target)), c.name);
    // Fewer plans than one per record when few are bad.
    if (bad.size <= 1 && !c.pair) assert.ok(r.plans < recs.length, `${c.name}: ${r.plans} plans`);
    // Deterministic: the same answer again.
    assert.deepEqual(findPoison(snap(recs), planWith), r, c.name);
  }
});

test('findPoison: a planner that fails without any record blames none; a budget stops the search and says so', () => {
  const recs = [record('us-east', 'a'), record('us-east', 'b')];
  const always = findPoison(snap(recs), () => {
    throw new Error('config');
  });
  assert.deepEqual(always.found, []);
  assert.match(always.baseError ?? '', /config/);
  const many = Array.from({ length: 64 }, (_, i) => record('us-east', `m${String(i).padStart(2, '0')}`));
  const capped = findPoison(snap(many), (s) => {
    if (s.records.length > 0) throw new Error('every record');
  }, 10);
  assert.equal(capped.exhausted, true);
  assert.ok(capped.plans <= 10, String(capped.plans));
});

test('the real planner: a grid.event record with a null value throws; quarantined, it is planned without and the plan says so in a critical alert', () => {
  const poison = record('us-east', 'evt', null, 'grid.event');
  poison.fold = { kind: 'grid', learnedAt: NOW };
  const good = record('eu-west', 'cap');
  const s = snap([good, poison]);
  assert.throws(() => plan({ configHash: 'x', snapshot: s, settings, horizonEpoch: 0 }), TypeError);
  const found = findPoison(s, (x) => plan({ configHash: 'x', snapshot: x, settings, horizonEpoch: 0 }));
  assert.deepEqual(found.found.map((f) => f.target), [`signal:${poison.id}`]);
  const held: StoreSnapshot = { ...s, quarantine: [{ target: `signal:${poison.id}`, fingerprint: found.found[0]!.fingerprint, why: 'planning with it failed', at: NOW, by: 'n1' }] };
  const p = plan({ configHash: 'x', snapshot: held, settings, horizonEpoch: 0 });
  const alert = p.alerts?.find((a) => a.kind === 'records-quarantined');
  assert.ok(alert, JSON.stringify(p.alerts));
  assert.equal(alert.severity, 'critical');
  assert.deepEqual(alert.regions, ['us-east']);
  assert.match(alert.events[0]!, /^signal:us-east\|grid\.event\|src\|evt: planning with it failed/);
  // The plan without the record is the plan of the snapshot that never had it, but for the alert and version.
  const without = plan({ configHash: 'x', snapshot: snap([good]), settings, horizonEpoch: 0 });
  assert.deepEqual(p.regions, without.regions);
  assert.notEqual(p.version, without.version, 'the quarantine is part of the version');
  // The record written again (another content): the entry holds nothing; planned again.
  const rewritten = { ...held, records: [good, { ...poison, signal: { ...poison.signal, observedAt: NOW + 1 } }] };
  assert.equal(quarantineOf(rewritten).held.length, 0);
  assert.equal(quarantineOf(rewritten).idle.length, 1);
  assert.equal(plannable(rewritten).records.length, 2);
  assert.equal(candidatesOf(rewritten).length, 2);
});

async function service(store: MemoryStore, planner?: (i: Parameters<typeof plan>[0]) => Plan) {
  const plans: Plan[] = [];
  const svc = new StateService({ store, log, configHash: 'cfg', settings, debounceMs: 5, onPlan: (p) => plans.push(p), clock: () => NOW, nodeId: 'node-a', ...(planner ? { planner } : {}) });
  return { svc, plans };
}

const until = async (what: string, f: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 400; i++) {
    if (await f()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
};

test('StateService: a poison record never stops it: the last good plan stays, the record is quarantined in the store, audited, and planned without; release and drop are audited', async (t) => {
  const store = new MemoryStore({ file: null, clock: () => NOW });
  const { svc, plans } = await service(store);
  t.after(() => svc.close());
  await svc.start();
  await store.putSignal(record('eu-west', 'cap').signal);
  await until('a first plan', () => plans.length > 0);
  const good = svc.plan!;
  // The poison, written past validation (as a record by hand or by an older build would be).
  await store.putSignal({ kind: 'grid.event', region: 'us-east', source: 'src', key: 'evt', observedAt: NOW, expiresAt: NOW + 60_000, value: null } as unknown as Signal);
  await until('the quarantine', async () => ((await store.snapshot()).quarantine ?? []).length === 1);
  const q = (await store.snapshot()).quarantine![0]!;
  assert.equal(q.target, 'signal:us-east|grid.event|src|evt');
  assert.equal(q.by, 'node-a');
  assert.match(q.why, /planning with it failed: TypeError/);
  await until('a plan without it', () => svc.plan !== good && (svc.plan?.alerts ?? []).some((a) => a.kind === 'records-quarantined'));
  assert.equal(svc.quarantine().held.length, 1);
  assert.equal(svc.quarantine().planError, null);
  assert.match(svc.status().why, /1 record quarantined, planned without \(signal:us-east\|grid\.event\|src\|evt/);
  const audit = await store.audit(10);
  assert.ok(audit.some((e) => e.action === 'quarantine.add' && e.target === q.target && e.actor === 'node-a'), JSON.stringify(audit));
  // Release: planned again, fails again, found again (deterministically the same target).
  await assert.rejects(svc.endQuarantine('release', 'signal:nothing', 'alice', 'why'), /body\.target nothing is quarantined as "signal:nothing" \(quarantined: signal:us-east/);
  await assert.rejects(svc.endQuarantine('release', q.target, 'alice', ' '), /body\.reason/);
  await svc.endQuarantine('release', q.target, 'alice', 'fixed the planner, trying again');
  await until('quarantined again', async () => {
    const a = await store.audit(20);
    return a.filter((e) => e.action === 'quarantine.add').length === 2;
  });
  assert.ok((await store.audit(20)).some((e) => e.action === 'quarantine.release' && e.actor === 'alice'));
  // Drop: the record is deleted with its entry; the drop's audit keeps the record.
  await svc.endQuarantine('drop', q.target, 'alice', 'a bad record from the old build');
  const after = await store.snapshot();
  assert.equal(after.records.some((r) => r.id === 'us-east|grid.event|src|evt'), false);
  assert.equal((after.quarantine ?? []).length, 0);
  const drop = (await store.audit(5)).find((e) => e.action === 'quarantine.drop');
  assert.ok(drop);
  assert.equal((drop.before as { record: SignalRecord }).record.id, 'us-east|grid.event|src|evt');
  await until('a plan without alert', () => !(svc.plan?.alerts ?? []).some((a) => a.kind === 'records-quarantined'));
});

test('StateService: a planner that fails without any record keeps the last good plan, says so in its status, and never throws out of its timers', async (t) => {
  const store = new MemoryStore({ file: null, clock: () => NOW });
  let broken = false;
  const { svc, plans } = await service(store, (i) => {
    if (broken) throw new RangeError('Invalid time value');
    return plan(i);
  });
  t.after(() => svc.close());
  await svc.start();
  await until('a first plan', () => plans.length > 0);
  const good = svc.plan;
  broken = true;
  await store.putSignal(record('eu-west', 'cap').signal);
  await until('the failure seen', () => svc.quarantine().planError !== null);
  assert.equal(svc.plan, good, 'the last good plan stays in force');
  assert.match(svc.status().why, /planning fails \(RangeError: Invalid time value\): answering from plan /);
  assert.equal((await store.snapshot()).quarantine, undefined, 'no record blamed');
  // The timers keep running: a later fix plans again.
  broken = false;
  await store.putSignal({ ...record('eu-west', 'cap').signal, observedAt: NOW + 1 });
  await until('planned again', () => svc.quarantine().planError === null && svc.plan !== good);
});

test('StateService on a memory store whose file has an unreadable line: it starts, plans the rest, and quarantines the line as file:<n>', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gs-q-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'state.jsonl');
  const first = new MemoryStore({ file, clock: () => NOW });
  await first.start();
  await first.createOverride({ region: 'us-east', action: 'drain', value: 0, ramp: 0, actor: 'alice', reason: 'kept', start: NOW - 1000 }, NOW);
  await first.close();
  writeFileSync(file, `${readFileSync(file, 'utf8')}{"op":"end","rev":9,"id":\n`);
  const store = new MemoryStore({ file, clock: () => NOW, warn: () => undefined });
  const { svc, plans } = await service(store);
  t.after(() => svc.close());
  await svc.start();
  await until('the line quarantined', () => svc.quarantine().held.some((e) => e.target === 'file:2'));
  assert.match(svc.quarantine().held[0]!.why, /could not be read: .*state\.jsonl:2: unreadable line/);
  assert.ok(plans.length > 0, 'planned');
  assert.ok((svc.plan?.regions['us-east'] ?? []).some((st) => st.share === 0), 'the readable drain is in force');
});

test('StateService: /readyz revision high-water mark starts again at every read, so a store that went back (a confirmed data loss) does not say "planning" for ever', async (t) => {
  const store = new MemoryStore({ file: null, clock: () => NOW });
  const { svc } = await service(store);
  t.after(() => svc.close());
  await svc.start();
  // A revision told of that the store never reaches again (the lost store's high-water mark).
  (svc as unknown as { seenRevision: number }).seenRevision = 500;
  await store.putSignal(record('eu-west', 'cap').signal);
  await until('planned', () => svc.status().planRevision === 1);
  assert.equal(svc.status().seenRevision, 1);
});
