/**
 * The conformance suite every StateStore passes (docs/conventions.md "One store interface, one conformance suite"): the contracts of
 * store.ts, checked through the interface only. A test file calls storeConformance once per
 * implementation; this file registers node:test tests and is not a test file itself.
 *
 * `make` returns a started store on an empty backend (revision 0 or any value, no signals,
 * overrides, audit entries, demand or leases), folding with DEFAULT_RULES, and a cleanup
 * that closes it and removes what it made. It is called once per test. Every wait here is
 * bounded in time and count; nothing asserts how fast a store is.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Override, Signal, SignalKind } from '../../gslb/model/types.js';
import { DEFAULT_RULES } from '../../gslb/state/reducer.js';
import { StoreError, type PutItem, type PutResult, type StateStore } from '../../gslb/state/store.js';

export interface ConformanceHandle {
  store: StateStore;
  cleanup(): Promise<void>;
  /**
   * Arranges for `write` to run once inside the store's next putSignals, after it read the
   * records it folds onto and before it writes them (Redis: between its two pipelines), as
   * another node's write would. Absent for a store whose batch has no such moment (memory: a
   * loop of synchronous folds): the suite then runs `write` just before the batch, which must
   * give the same answers.
   */
  between?(write: () => Promise<void>): void;
}

/** A fixed instant (ms epoch) the signals are observed around; stores never read the clock for signals. */
const T0 = 1_700_000_000_000;
const HOUR = 3600_000;

function signal(kind: SignalKind, value: unknown, observedAt: number, o: Partial<Signal> = {}): Signal {
  return { region: 'aa', kind, source: 'test/conformance', key: 'k1', observedAt, expiresAt: observedAt + HOUR, value, ...o };
}
const probe = (up: boolean, at: number) => signal('health.probe', { up }, at, { source: 'health/node-a', key: 'https://aa.example/health' });
const capacity = (fraction: number, at: number) => signal('capacity', { fraction }, at, { key: 'fleet' });
const load = (queueDepth: number, at: number, o: Partial<Signal> = {}) => signal('load.metrics', { queueDepth }, at, o);

function drain(region: string, reason = 'maintenance window'): Omit<Override, 'id'> {
  return { region, action: 'drain', value: 0, ramp: 60_000, actor: 'ops/alice', reason, start: T0, end: T0 + HOUR };
}

const isCode = (code: string) => (e: unknown) => {
  assert.ok(e instanceof StoreError, `expected a StoreError, got ${String(e)}`);
  assert.equal(e.code, code, e.message);
  assert.match(e.message, /^state: /);
  return true;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 20 ms for at most `ms`; fails naming `what`. */
async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const tries = Math.ceil(ms / 20);
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await sleep(20);
  }
  assert.fail(`timed out after ${ms} ms waiting for ${what}`);
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Registers the conformance tests for one implementation under `describe(name)`.
 * `make` is called once per test (see the module comment for what it must return).
 */
export function storeConformance(name: string, make: () => Promise<ConformanceHandle>): void {
  describe(`StateStore conformance: ${name}`, () => {
    async function openHandle(t: TestContext): Promise<ConformanceHandle> {
      const h = await make();
      t.after(() => h.cleanup());
      return h;
    }
    async function open(t: TestContext): Promise<StateStore> {
      return (await openHandle(t)).store;
    }
    /** `write` between the reads and the writes of the next putSignals (ConformanceHandle.between), or before it; resolves to whether it ran. */
    async function interpose(h: ConformanceHandle, write: () => Promise<void>): Promise<() => boolean> {
      let ran = false;
      const once = async () => {
        assert.equal(ran, false, 'the interposed write runs once');
        ran = true;
        await write();
      };
      if (h.between) h.between(once);
      else await once();
      return () => ran;
    }
    /** A PutResult without its revision, to compare two stores' answers. */
    const answer = (r: PutResult) => (r.stored ? { stored: true, record: r.record } : r.reason === 'held' ? { stored: false, reason: r.reason, holder: r.holder } : { stored: false, reason: r.reason });

    it('bumps the revision on every write, strictly increasing, and tells listeners', async (t) => {
      const store = await open(t);
      const seen: number[] = [];
      const off = store.onRevision((r) => seen.push(r));
      const r0 = await store.revision();
      assert.ok(Number.isInteger(r0) && r0 >= 0);
      const a = await store.putSignal(load(5, T0));
      assert.equal(a.stored, true);
      const b = await store.createOverride(drain('aa'), T0);
      const c = await store.endOverride(b.override.id, 'ops/bob', 'window over', T0 + 1);
      const d = await store.putSignal(load(6, T0 + 1));
      const revs = [r0, a.revision, b.revision, c.revision, d.revision];
      for (let i = 1; i < revs.length; i++) assert.ok(revs[i]! > revs[i - 1]!, `revisions ${revs.join(', ')} must strictly increase`);
      assert.equal(await store.revision(), d.revision);

      // What changes nothing does not bump it: a stale signal, demand.
      const stale = await store.putSignal(load(7, T0));
      assert.deepEqual(stale, { stored: false, revision: d.revision, reason: 'stale' });
      await store.addDemand([{ bucket: 1_700_000_000_000, home: 'aa', name: 'llm.example.com', queries: 3 }]);
      assert.equal(await store.revision(), d.revision);

      await waitFor(() => seen.at(-1) === d.revision, `the listener to see revision ${d.revision} (saw ${seen.join(', ')})`);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `listener revisions ${seen.join(', ')} must strictly increase`);
      for (const r of revs.slice(1)) assert.ok(seen.includes(r), `the listener saw ${seen.join(', ')}, not ${r}`);

      off();
      const e = await store.putSignal(load(8, T0 + 2));
      assert.ok(e.revision > d.revision);
      await sleep(50);
      assert.ok(!seen.includes(e.revision), 'an unsubscribed listener is not called');
    });

    it('records who wrote a signal (principal, grant) and refuses another principal\'s write while the record is live (ADR 0021)', async (t) => {
      const store = await open(t);
      const first = await store.putSignal(load(5, T0), undefined, { principal: 'token:bridge', grant: 'test/' });
      assert.ok(first.stored);
      assert.deepEqual([first.record.principal, first.record.grant], ['token:bridge', 'test/']);
      const snap = await store.snapshot();
      assert.deepEqual([snap.records[0]!.principal, snap.records[0]!.grant], ['token:bridge', 'test/'], 'the snapshot carries them');
      const r0 = await store.revision();
      // Another principal, newer observedAt, the record still live: held, nothing changes.
      const held = await store.putSignal(load(6, T0 + 1), undefined, { principal: 'token:evil' });
      assert.deepEqual(held, { stored: false, revision: r0, reason: 'held', holder: 'token:bridge' });
      const kept = (await store.snapshot()).records[0]!;
      assert.deepEqual([kept.principal, kept.signal.observedAt], ['token:bridge', T0], 'the held write changed nothing');
      // Its own principal refreshes it; an ungranted write of its own drops the grant it had.
      const mine = await store.putSignal(load(7, T0 + 2), undefined, { principal: 'token:bridge' });
      assert.ok(mine.stored);
      assert.equal(mine.record.grant, undefined);
      // Once expired at the new fact's observedAt (these facts hold an hour), anyone may write it.
      const later = await store.putSignal(load(8, T0 + 2 * HOUR), undefined, { principal: 'token:other', grant: 'test/' });
      assert.ok(later.stored);
      assert.equal(later.record.principal, 'token:other');
    });

    it('appends audit entries of its own (durable, seq increasing), without a revision bump', async (t) => {
      const store = await open(t);
      await store.putSignal(load(5, T0));
      const r0 = await store.revision();
      const a = await store.appendAudit({ at: T0, actor: 'node-a', action: 'job.start', target: 'job:gc-signals@2026-12-02T06:00:00.000Z', reason: 'scheduled', before: null, after: { node: 'node-a' } });
      const b = await store.appendAudit({ at: T0 + 1, actor: 'node-a', action: 'job.finish', target: 'job:gc-signals@2026-12-02T06:00:00.000Z', reason: 'ok: removed 3 records', before: null, after: { outcome: 'ok' } });
      assert.ok(b.seq > a.seq);
      assert.equal(await store.revision(), r0);
      const log = await store.audit(2);
      assert.deepEqual(log.map((e) => [e.action, e.seq, e.reason]), [['job.finish', b.seq, 'ok: removed 3 records'], ['job.start', a.seq, 'scheduled']]);
    });

    it('trims audit entries older than a cutoff, newest kept, without a revision bump', async (t) => {
      const store = await open(t);
      for (let i = 0; i < 5; i++) await store.appendAudit({ at: T0 + i * HOUR, actor: 'n1', action: 'job.start', target: `job:x@${i}`, reason: 'r', before: null, after: null });
      const r0 = await store.revision();
      assert.deepEqual(await store.trimAudit(T0 + 2 * HOUR), { removed: 2 });
      assert.deepEqual((await store.audit(10)).map((e) => e.target), ['job:x@4', 'job:x@3', 'job:x@2']);
      assert.deepEqual(await store.trimAudit(T0 + 2 * HOUR), { removed: 0 }, 'again: nothing more');
      assert.equal(await store.revision(), r0);
    });

    it('removes signal records only as they were read (compare-and-delete), bumping the revision once', async (t) => {
      const store = await open(t);
      await store.putSignal(load(5, T0));
      await store.putSignal(load(6, T0, { key: 'k2' }));
      const kept = await store.putSignal(load(7, T0, { key: 'k3' }));
      const r0 = await store.revision();
      // k3 was refreshed after it was read: its old observedAt no longer matches, it stays.
      await store.putSignal(load(8, T0 + 1, { key: 'k3' }));
      const r1 = await store.revision();
      const res = await store.removeSignals([
        { id: 'aa|load.metrics|test/conformance|k1', observedAt: T0 },
        { id: 'aa|load.metrics|test/conformance|k2', observedAt: T0 },
        { id: kept.stored ? kept.record.id : '', observedAt: T0 },
        { id: 'aa|load.metrics|test/conformance|nope', observedAt: T0 },
      ]);
      assert.equal(res.removed, 2);
      assert.ok(r1 > r0 && res.revision === r1 + 1, `one bump: ${r0}, ${r1}, ${res.revision}`);
      assert.deepEqual((await store.snapshot()).records.map((r) => r.id), ['aa|load.metrics|test/conformance|k3']);
      // Nothing to remove: no bump.
      assert.deepEqual(await store.removeSignals([{ id: 'aa|load.metrics|test/conformance|k1', observedAt: T0 }]), { removed: 0, revision: res.revision });
    });

    it('keeps the latest signal per id by observedAt: older and equal ones are refused as stale', async (t) => {
      const store = await open(t);
      const first = await store.putSignal(load(5, T0));
      assert.ok(first.stored);
      assert.equal(first.record.id, 'aa|load.metrics|test/conformance|k1');
      assert.deepEqual(first.record.signal, load(5, T0));
      assert.deepEqual(first.record.fold, { kind: 'latest' });

      const older = await store.putSignal(load(9, T0 - 1));
      assert.deepEqual(older, { stored: false, revision: first.revision, reason: 'stale' });
      const equal = await store.putSignal(load(7, T0));
      assert.deepEqual(equal, { stored: false, revision: first.revision, reason: 'stale' });
      let snap = await store.snapshot();
      assert.equal(snap.revision, first.revision);
      assert.deepEqual(snap.records, [first.record]);

      // Another id is a record of its own, whatever its observedAt.
      const other = await store.putSignal(load(1, T0 - 10, { key: 'k2' }));
      assert.ok(other.stored);
      const newer = await store.putSignal(load(8, T0 + 1));
      assert.ok(newer.stored);
      assert.deepEqual(newer.record.signal.value, { queueDepth: 8 });
      snap = await store.snapshot();
      assert.deepEqual(
        snap.records.map((r) => [r.id, r.signal.observedAt, (r.signal.value as { queueDepth: number }).queueDepth]),
        [
          ['aa|load.metrics|test/conformance|k1', T0 + 1, 8],
          ['aa|load.metrics|test/conformance|k2', T0 - 10, 1],
        ],
      );
    });

    it('folds health probes with anti-flap (DEFAULT_RULES: fall 3, rise 2)', async (t) => {
      assert.equal(DEFAULT_RULES.fall, 3);
      assert.equal(DEFAULT_RULES.rise, 2);
      const store = await open(t);
      // [probe result, stable state after it]
      const steps: [boolean, boolean][] = [
        [true, true], // the first probe sets the state
        [false, true],
        [false, true],
        [false, false], // third consecutive failure: down
        [true, false],
        [false, false], // streak broken
        [true, false],
        [true, true], // second consecutive success: up
        [false, true],
        [true, true],
      ];
      let at = T0;
      for (const [i, [up, stable]] of steps.entries()) {
        at += 1000;
        const r = await store.putSignal(probe(up, at));
        assert.ok(r.stored, `probe ${i} stored`);
        assert.equal(r.record.fold.kind, 'health');
        assert.equal(r.record.fold.kind === 'health' && r.record.fold.stableUp, stable, `after probe ${i} (${up ? 'up' : 'down'}) the stable state is ${stable ? 'up' : 'down'}`);
      }
      const snap = await store.snapshot();
      assert.equal(snap.records.length, 1);
      // upSince: the probe that turned the stable state up again (probe 7, at T0 + 8 s).
      assert.deepEqual(snap.records[0]!.fold, { kind: 'health', stableUp: true, streak: 1, lastUp: true, upSince: T0 + 8000 });
      // A late probe changes nothing.
      assert.equal((await store.putSignal(probe(false, T0))).stored, false);
      assert.deepEqual((await store.snapshot()).records[0]!.fold, { kind: 'health', stableUp: true, streak: 1, lastUp: true, upSince: T0 + 8000 });
    });

    it('applies capacity with hysteresis (5 % relative) and at 0', async (t) => {
      const store = await open(t);
      // [reported fraction, applied fraction after it]
      const steps: [number, number][] = [
        [0.5, 0.5],
        [0.51, 0.5], // 2 %: within the band
        [0.52, 0.5], // 4 % of the applied 0.5
        [0.6, 0.6],
        [0.58, 0.6],
        [0, 0], // reaching 0 always applies
        [0.01, 0.01], // leaving 0 always applies
      ];
      let at = T0;
      for (const [reported, applied] of steps) {
        at += 1000;
        const r = await store.putSignal(capacity(reported, at));
        assert.ok(r.stored);
        assert.deepEqual(r.record.signal.value, { fraction: reported });
        assert.deepEqual(r.record.fold, { kind: 'applied', value: { fraction: applied } }, `reported ${reported}`);
      }
      const snap = await store.snapshot();
      assert.deepEqual(snap.records[0]!.fold, { kind: 'applied', value: { fraction: 0.01 } });
    });

    it('returns records and overrides sorted by id in the snapshot', async (t) => {
      const store = await open(t);
      const regions = ['mm', 'aa', 'zz', 'bb'];
      const kinds: SignalKind[] = ['load.metrics', 'capacity'];
      const stored = new Map<string, unknown>();
      let at = T0;
      for (const region of regions) {
        for (const kind of kinds) {
          const value = kind === 'capacity' ? { fraction: 0.5 } : { queueDepth: 1 };
          const r = await store.putSignal(signal(kind, value, (at += 1), { region, key: `key-${region}` }));
          assert.ok(r.stored);
          stored.set(r.record.id, r.record);
        }
      }
      // 11 overrides: ids ov-1 … ov-11 or whatever the store assigns; order is by id string.
      const created: Override[] = [];
      for (let i = 0; i < 11; i++) created.push((await store.createOverride(drain(regions[i % regions.length]!, `reason ${i}`), T0 + i)).override);
      const snap = await store.snapshot();
      const recIds = snap.records.map((r) => r.id);
      assert.deepEqual(recIds, [...stored.keys()].sort(byId));
      for (const r of snap.records) assert.deepEqual(r, stored.get(r.id));
      const ovIds = snap.overrides.map((o) => o.id);
      assert.deepEqual(ovIds, created.map((o) => o.id).sort(byId));
      for (const o of snap.overrides) assert.deepEqual(o, created.find((c) => c.id === o.id));
      assert.equal(snap.revision, await store.revision());
    });

    it('creates overrides with distinct ids, ends them, and audits before and after (newest first, limited)', async (t) => {
      const store = await open(t);
      const one = await store.createOverride(drain('aa', 'swap PDUs'), T0 + 10);
      const two = await store.createOverride({ region: 'bb', action: 'weight', value: 0.3, ramp: 0, by: T0 + 3600_000, actor: 'automation/heat', reason: 'heat wave', start: T0 }, T0 + 20);
      assert.notEqual(one.override.id, two.override.id);
      assert.ok(one.override.id.length > 0);
      assert.deepEqual(one.override, { id: one.override.id, ...drain('aa', 'swap PDUs') });
      assert.deepEqual(two.override, { id: two.override.id, region: 'bb', action: 'weight', value: 0.3, ramp: 0, by: T0 + 3600_000, actor: 'automation/heat', reason: 'heat wave', start: T0 });
      assert.deepEqual(
        (await store.snapshot()).overrides.map((o) => o.id),
        [one.override.id, two.override.id].sort(byId),
      );

      const ended = await store.endOverride(one.override.id, 'ops/bob', 'PDUs swapped', T0 + 30);
      assert.deepEqual(ended.override, one.override);
      assert.ok(ended.revision > two.revision);
      const snap = await store.snapshot();
      assert.deepEqual(snap.overrides, [two.override]);

      const log = await store.audit(10);
      assert.equal(log.length, 3);
      assert.deepEqual(
        log.map((e) => [e.action, e.target, e.actor, e.reason, e.at]),
        [
          ['override.end', one.override.id, 'ops/bob', 'PDUs swapped', T0 + 30],
          ['override.create', two.override.id, 'automation/heat', 'heat wave', T0 + 20],
          ['override.create', one.override.id, 'ops/alice', 'swap PDUs', T0 + 10],
        ],
      );
      assert.ok(log[0]!.seq > log[1]!.seq && log[1]!.seq > log[2]!.seq, `audit seqs ${log.map((e) => e.seq).join(', ')} decrease, newest first`);
      assert.deepEqual([log[0]!.before, log[0]!.after], [one.override, null]);
      assert.deepEqual([log[1]!.before, log[1]!.after], [null, two.override]);
      assert.deepEqual([log[2]!.before, log[2]!.after], [null, one.override]);
      assert.deepEqual(await store.audit(2), log.slice(0, 2));
      assert.deepEqual(await store.audit(1), log.slice(0, 1));
      assert.deepEqual(await store.audit(0), []);

      // A later override never reuses an id, even one that has ended.
      const three = await store.createOverride(drain('cc'), T0 + 40);
      assert.ok(![one.override.id, two.override.id].includes(three.override.id));
    });

    it('keeps a fleet freeze (region *) with its per-region hold, and a drain deadline, exactly; and grid facts with their learnedAt and previous content', async (t) => {
      const store = await open(t);
      const fz = await store.createOverride({ region: '*', action: 'freeze', ramp: 0, hold: { aa: 0.6, bb: 1, cc: 0 }, actor: 'alice', reason: 'suspect feed', start: T0 }, T0);
      const dr = await store.createOverride({ region: 'aa', action: 'drain', value: 0, ramp: 120_000, by: T0 + 7_200_000, actor: 'alice', reason: 'PDU swap', start: T0 }, T0);
      const snap = await store.snapshot();
      assert.deepEqual(snap.overrides.find((o) => o.id === fz.override.id), { id: fz.override.id, region: '*', action: 'freeze', ramp: 0, hold: { aa: 0.6, bb: 1, cc: 0 }, actor: 'alice', reason: 'suspect feed', start: T0 });
      assert.deepEqual(snap.overrides.find((o) => o.id === dr.override.id)?.by, T0 + 7_200_000);
      const ev = (observedAt: number, start: number): Signal => ({ region: 'aa', kind: 'grid.event', source: 'test/conformance', key: 'e1', observedAt, expiresAt: observedAt + 86_400_000, value: { id: 'e1', type: 'load-shed', start, end: start + 3_600_000 } });
      await store.putSignal(ev(T0, T0 + 7_200_000));
      await store.putSignal(ev(T0 + 1000, T0 + 7_200_000));
      const moved = await store.putSignal(ev(T0 + 2000, T0 + 3_600_000));
      assert.ok(moved.stored);
      const rec = (await store.snapshot()).records.find((r) => r.signal.kind === 'grid.event')!;
      assert.deepEqual(rec.fold, { kind: 'grid', learnedAt: T0 + 2000, last: { value: ev(T0, T0 + 7_200_000).value, learnedAt: T0, until: T0 + 2000 } });
    });

    it('rejects endOverride of an unknown or already ended id with not_found, changing nothing', async (t) => {
      const store = await open(t);
      await assert.rejects(store.endOverride('ov-404', 'ops/bob', 'typo', T0), isCode('not_found'));
      const o = await store.createOverride(drain('aa'), T0);
      await store.endOverride(o.override.id, 'ops/bob', 'done', T0 + 1);
      const rev = await store.revision();
      const auditLen = (await store.audit(100)).length;
      await assert.rejects(store.endOverride(o.override.id, 'ops/carol', 'again', T0 + 2), isCode('not_found'));
      assert.equal(await store.revision(), rev);
      assert.equal((await store.audit(100)).length, auditLen);
    });

    it('sums demand across calls per (bucket, home, name)', async (t) => {
      const store = await open(t);
      const b0 = 1_700_000_000_000;
      const b1 = b0 + 10_000;
      await store.addDemand([
        { bucket: b0, home: 'aa', name: 'llm.example.com', queries: 3 },
        { bucket: b0, home: 'bb', name: 'llm.example.com', queries: 2 },
      ]);
      await store.addDemand([
        { bucket: b0, home: 'aa', name: 'llm.example.com', queries: 4 },
        { bucket: b1, home: 'aa', name: 'llm.example.com', queries: 1 },
        { bucket: b0, home: 'aa', name: 'img.example.com', queries: 5 },
      ]);
      await store.addDemand([]);
      const key = (d: { bucket: number; home: string; name: string }) => `${d.bucket} ${d.home} ${d.name}`;
      const got = new Map((await store.snapshot()).demand.map((d) => [key(d), d.queries]));
      assert.deepEqual(
        [...got.entries()].sort(),
        [
          [`${b0} aa img.example.com`, 5],
          [`${b0} aa llm.example.com`, 7],
          [`${b0} bb llm.example.com`, 2],
          [`${b1} aa llm.example.com`, 1],
        ],
      );
    });

    it('grants leases with fencing tokens: refused while held, renewed with the same token, taken over after expiry with a larger one', async (t) => {
      const store = await open(t);
      const ttl = 300;
      const a = await store.acquireLease('poller/openadr', 'node-a', ttl);
      assert.ok(a, 'a free lease is granted');
      assert.equal(a.name, 'poller/openadr');
      assert.equal(a.holder, 'node-a');
      assert.ok(Number.isInteger(a.token) && a.token > 0);
      assert.equal(await store.acquireLease('poller/openadr', 'node-b', ttl), null, 'a held lease is refused to another holder');

      const a2 = await store.acquireLease('poller/openadr', 'node-a', ttl);
      assert.ok(a2);
      assert.equal(a2.token, a.token, 'renewal keeps the token');
      assert.ok(a2.until >= a.until);
      const fenceA = { lease: 'poller/openadr', token: a2.token };
      assert.ok((await store.putSignal(load(1, T0), fenceA)).stored, 'the holder writes with its token');

      // Other leases are independent.
      const other = await store.acquireLease('poller/iso', 'node-b', ttl);
      assert.ok(other && other.token !== a.token);

      // Expiry is judged by the store's clock.
      await waitFor(async () => (await store.time()) > a2.until, `store time to pass ${a2.until}`, 10 * ttl + 5000);
      const b = await store.acquireLease('poller/openadr', 'node-b', ttl);
      assert.ok(b, 'an expired lease is taken over');
      assert.equal(b.holder, 'node-b');
      assert.ok(b.token > a2.token, `takeover token ${b.token} > ${a2.token}`);
      assert.ok(b.until > a2.until);

      // The deposed holder's late writes are fenced, stale or not; the new holder's go through.
      const rev = await store.revision();
      await assert.rejects(store.putSignal(load(2, T0 + 1), fenceA), isCode('fenced'));
      await assert.rejects(store.putSignal(load(0, T0 - 1), fenceA), isCode('fenced'));
      assert.equal(await store.revision(), rev);
      assert.deepEqual((await store.snapshot()).records.map((r) => r.signal.value), [{ queueDepth: 1 }]);
      const byB = await store.putSignal(load(3, T0 + 2), { lease: 'poller/openadr', token: b.token });
      assert.ok(byB.stored);
      await assert.rejects(store.putSignal(load(4, T0 + 3), { lease: 'poller/never-taken', token: 1 }), isCode('fenced'));

      // Release: only the current holder with its token gives it up.
      await store.releaseLease('poller/openadr', 'node-a', a2.token);
      assert.equal(await store.acquireLease('poller/openadr', 'node-a', ttl), null, 'a release by the deposed holder changes nothing');
      await store.releaseLease('poller/openadr', 'node-b', b.token + 1);
      assert.equal(await store.acquireLease('poller/openadr', 'node-a', ttl), null, 'a release with a wrong token changes nothing');
      await store.releaseLease('poller/openadr', 'node-b', b.token);
      const c = await store.acquireLease('poller/openadr', 'node-a', ttl);
      assert.ok(c, 'a released lease is free at once');
      assert.ok(c.token > b.token);
      await assert.rejects(store.putSignal(load(5, T0 + 4), { lease: 'poller/openadr', token: b.token }), isCode('fenced'));
    });

    it('stores a batch as putSignal would one by one (putSignals): stored, stale and held answers, the same id twice, per-signal revisions', async (t) => {
      const store = await open(t);
      // The same writes one by one on a second, empty backend of the same kind: the reference.
      const loop = await open(t);
      const bridge = { principal: 'token:bridge', grant: 'test/' };
      const evil = { principal: 'token:evil' };
      const before: PutItem[] = [{ signal: load(5, T0), by: bridge }, { signal: load(1, T0, { key: 'k2' }) }];
      for (const s of [store, loop]) for (const x of before) assert.ok((await s.putSignal(x.signal, undefined, x.by)).stored);
      const batch: [PutItem, string][] = [
        [{ signal: load(6, T0 + 1), by: evil }, 'held'], // k1 is token:bridge's while live
        [{ signal: load(2, T0 - 1, { key: 'k2' }) }, 'stale'], // older than the stored k2
        [{ signal: load(3, T0, { key: 'k3' }), by: bridge }, 'stored'], // a new id
        [{ signal: load(4, T0, { key: 'k3' }) }, 'stale'], // equal to the k3 of this batch
        [{ signal: load(9, T0 - 2, { key: 'k2' }) }, 'stale'], // after a write of the batch: its revision at least that write's
        [{ signal: load(5, T0 + 2, { key: 'k3' }), by: evil }, 'held'], // held by the k3 of this batch
        [{ signal: load(6, T0 + 3, { key: 'k3' }), by: bridge }, 'stored'], // folds onto the k3 of this batch
        [{ signal: probe(true, T0) }, 'stored'],
        [{ signal: probe(false, T0 + 1) }, 'stored'],
        [{ signal: probe(false, T0 + 1) }, 'stale'],
        [{ signal: probe(false, T0 + 2) }, 'stored'], // the second failure in a row: streak 2
        [{ signal: load(7, T0 + 1, { key: 'k2' }), by: evil }, 'stored'], // k2 has no principal: anyone's
      ];
      const seen: number[] = [];
      store.onRevision((r) => seen.push(r));
      const r0 = await store.revision();
      const got = await store.putSignals(batch.map(([x]) => x));
      const want: PutResult[] = [];
      for (const [x] of batch) want.push(await loop.putSignal(x.signal, undefined, x.by));
      assert.deepEqual(got.map((r) => (r.stored ? 'stored' : r.reason)), batch.map(([, w]) => w));
      assert.deepEqual(got.map(answer), want.map(answer), 'the answers of putSignal one by one');
      assert.deepEqual((await store.snapshot()).records, (await loop.snapshot()).records, 'the records of putSignal one by one');

      const rec = (i: number) => {
        const r = got[i]!;
        assert.ok(r.stored, `signal ${i} stored`);
        return r.record;
      };
      assert.deepEqual([rec(6).signal.value, rec(6).principal, rec(6).grant], [{ queueDepth: 6 }, 'token:bridge', 'test/']);
      assert.deepEqual(rec(10).fold, { kind: 'health', stableUp: true, streak: 2, lastUp: false });
      assert.equal(rec(11).principal, 'token:evil');
      const held = got[5]!;
      assert.ok(!held.stored && held.reason === 'held' && held.holder === 'token:bridge');

      // Revisions: one per stored signal, increasing per id in batch order; every other answer
      // at least the revision of each write before it, as a loop would read.
      const stored = got.flatMap((r, i) => (r.stored ? [[i, r.revision] as const] : []));
      assert.equal(new Set(stored.map(([, r]) => r)).size, stored.length, 'a revision of its own per stored signal');
      for (const [, r] of stored) assert.ok(r > r0, `revision ${r} after ${r0}`);
      assert.ok(got[6]!.revision > got[2]!.revision, 'k3: the later write has the later revision');
      assert.ok(got[7]!.revision < got[8]!.revision && got[8]!.revision < got[10]!.revision, 'the probe: revisions in batch order');
      got.forEach((r, i) => {
        if (r.stored) return;
        assert.ok(r.revision >= r0);
        for (const [j, rj] of stored) if (j < i) assert.ok(r.revision >= rj, `answer ${i} (revision ${r.revision}) reads the write of ${j} (revision ${rj})`);
      });
      const last = Math.max(...stored.map(([, r]) => r));
      assert.equal(await store.revision(), last);
      await waitFor(() => seen.includes(last), `the listener to see revision ${last} (saw ${seen.join(', ')})`);
      // Each write tells listeners; one may hear of a newer revision first (Redis: by pub/sub) and so skip an older one.
      for (const [, r] of stored) assert.ok(seen.some((x) => x >= r), `the listener heard of revision ${r} or a newer one`);

      // An empty batch answers nothing and writes nothing.
      assert.deepEqual(await store.putSignals([]), []);
      assert.equal(await store.revision(), last);
    });

    it('folds a batch onto what another writer stored between its read and its write (putSignals: compare-and-set, then again)', async (t) => {
      const h = await openHandle(t);
      const store = h.store;
      await store.putSignal(probe(true, T0));
      await store.putSignal(load(1, T0, { key: 'k2' }));
      const ran = await interpose(h, async () => {
        // Another node: a failed probe the batch's must fold onto, and a k2 newer than the batch's.
        assert.ok((await store.putSignal(probe(false, T0 + 1))).stored);
        assert.ok((await store.putSignal(load(9, T0 + 5, { key: 'k2' }))).stored);
      });
      // The probe twice: the later one folds onto the earlier, which is folded again first.
      const got = await store.putSignals([{ signal: probe(false, T0 + 2) }, { signal: load(2, T0 + 1, { key: 'k2' }) }, { signal: load(3, T0, { key: 'k3' }) }, { signal: probe(true, T0 + 3) }]);
      assert.ok(ran(), 'the other write ran');
      assert.deepEqual(got.map((r) => (r.stored ? 'stored' : r.reason)), ['stored', 'stale', 'stored', 'stored']);
      const [p, , , q] = got;
      assert.ok(p?.stored && q?.stored);
      assert.deepEqual(p.record.fold, { kind: 'health', stableUp: true, streak: 2, lastUp: false }, 'folded onto the other write, not onto what the batch read');
      assert.deepEqual(q.record.fold, { kind: 'health', stableUp: true, streak: 1, lastUp: true }, 'the later probe folded onto the earlier one');
      assert.ok(q.revision > p.revision);
      const snap = await store.snapshot();
      assert.deepEqual(
        snap.records.map((r) => [r.id, r.signal.observedAt]),
        [
          ['aa|health.probe|health/node-a|https://aa.example/health', T0 + 3],
          ['aa|load.metrics|test/conformance|k2', T0 + 5],
          ['aa|load.metrics|test/conformance|k3', T0],
        ],
      );
      assert.deepEqual(snap.records[0], q.record);
      assert.equal(snap.revision, Math.max(...got.map((r) => r.revision)));
    });

    it('fences a batch as putSignal: a deposed or unknown lease writes nothing of it, the holder writes it all', async (t) => {
      const h = await openHandle(t);
      const store = h.store;
      const name = 'poller/batch';
      const a = await store.acquireLease(name, 'node-a', 60_000);
      assert.ok(a);
      const fenceA = { lease: name, token: a.token };
      const first = await store.putSignals([{ signal: load(1, T0) }, { signal: load(1, T0, { key: 'k2' }) }], fenceA);
      assert.deepEqual(first.map((r) => r.stored), [true, true]);
      await store.releaseLease(name, 'node-a', a.token);
      const b = await store.acquireLease(name, 'node-b', 60_000);
      assert.ok(b && b.token > a.token);
      const rev = await store.revision();
      await assert.rejects(store.putSignals([{ signal: load(2, T0 + 1) }, { signal: load(2, T0 + 1, { key: 'k3' }) }], fenceA), isCode('fenced'));
      await assert.rejects(store.putSignals([{ signal: load(0, T0 - 1) }], fenceA), isCode('fenced'), 'stale or not');
      await assert.rejects(store.putSignals([{ signal: load(2, T0 + 1) }], { lease: 'poller/never-taken', token: 1 }), isCode('fenced'));
      assert.equal(await store.revision(), rev);
      // The lease taken over between the batch's read and its write: fenced, nothing written.
      const fenceB = { lease: name, token: b.token };
      const ran = await interpose(h, async () => {
        await store.releaseLease(name, 'node-b', b.token);
        assert.ok(await store.acquireLease(name, 'node-c', 60_000));
      });
      await assert.rejects(store.putSignals([{ signal: load(3, T0 + 2) }, { signal: load(3, T0 + 2, { key: 'k2' }) }], fenceB), isCode('fenced'));
      assert.ok(ran());
      assert.equal(await store.revision(), rev);
      assert.deepEqual((await store.snapshot()).records.map((r) => r.signal.value), [{ queueDepth: 1 }, { queueDepth: 1 }]);
      const c = await store.acquireLease(name, 'node-c', 60_000);
      assert.ok(c);
      const byC = await store.putSignals([{ signal: load(4, T0 + 3) }, { signal: load(0, T0 - 1, { key: 'k2' }) }], { lease: name, token: c.token });
      assert.deepEqual(byC.map((r) => (r.stored ? 'stored' : r.reason)), ['stored', 'stale']);
    });

    it('quarantine (ADR 0020): entries in the snapshot, idempotent by fingerprint, audited; release keeps the record, drop deletes it with a trace', async (t) => {
      const store = await open(t);
      const a = await store.putSignal(load(5, T0));
      assert.ok(a.stored);
      const ov = await store.createOverride(drain('aa'), T0);
      const sig = `signal:${a.record.id}`;
      const entry = { target: sig, fingerprint: 'f1', why: 'planning with it failed: TypeError: x', at: T0 + 1, by: 'node-a' };
      const r0 = await store.revision();
      const add = await store.quarantine([entry, { ...entry, target: `override:${ov.override.id}`, fingerprint: 'f2' }]);
      assert.equal(add.added, 2);
      assert.ok(add.revision > r0, 'a quarantine bumps the revision');
      const snap = await store.snapshot();
      assert.deepEqual(snap.quarantine?.map((e) => e.target), [`override:${ov.override.id}`, sig].sort());
      assert.deepEqual(snap.quarantine?.find((e) => e.target === sig), entry);
      // The records themselves are still stored: the planner holds them out, the store does not.
      assert.equal(snap.records.length, 1);
      assert.equal(snap.overrides.length, 1);
      // The same entry again (another node's finding of the same thing): nothing changes.
      const again = await store.quarantine([{ ...entry, at: T0 + 2, by: 'node-b' }]);
      assert.equal(again.added, 0);
      assert.equal(again.revision, add.revision);
      assert.equal((await store.snapshot()).quarantine?.find((e) => e.target === sig)?.by, 'node-a', 'the first finding stays');
      // Another fingerprint replaces it (the record changed and fails again).
      assert.equal((await store.quarantine([{ ...entry, fingerprint: 'f3' }])).added, 1);
      const adds = (await store.audit(20)).filter((e) => e.action === 'quarantine.add');
      assert.equal(adds.length, 3);
      assert.deepEqual(adds[0]!.before, entry, 'the replaced entry is in the audit');
      assert.equal(adds[0]!.actor, 'node-a');
      // Release: the entry goes, the record stays.
      await assert.rejects(store.releaseQuarantine('signal:none', 'ops/alice', 'x', T0), isCode('not_found'));
      const rel = await store.releaseQuarantine(sig, 'ops/alice', 'fixed', T0 + 3);
      assert.equal(rel.entry.fingerprint, 'f3');
      const s2 = await store.snapshot();
      assert.deepEqual(s2.quarantine?.map((e) => e.target), [`override:${ov.override.id}`]);
      assert.equal(s2.records.length, 1);
      assert.ok((await store.audit(5)).some((e) => e.action === 'quarantine.release' && e.target === sig && e.actor === 'ops/alice'));
      // Drop: the override goes with its entry; the audit keeps both.
      await store.dropQuarantined(`override:${ov.override.id}`, 'ops/alice', 'bad override', T0 + 4);
      const s3 = await store.snapshot();
      assert.equal(s3.overrides.length, 0);
      assert.equal((s3.quarantine ?? []).length, 0);
      const drop = (await store.audit(5)).find((e) => e.action === 'quarantine.drop');
      assert.equal((drop?.before as { record: { id: string } }).record.id, ov.override.id);
      assert.ok(s3.revision > s2.revision);
      await assert.rejects(store.dropQuarantined(`override:${ov.override.id}`, 'ops/alice', 'again', T0 + 5), isCode('not_found'));
      // A signal dropped: deleted.
      await store.quarantine([entry]);
      await store.dropQuarantined(sig, 'ops/alice', 'bad record', T0 + 6);
      assert.equal((await store.snapshot()).records.length, 0);
    });
  });
}
