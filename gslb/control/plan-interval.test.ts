/**
 * The state service under a burst of writes (issue 27): plans are coalesced to at most one per
 * state.planMinIntervalMs, a plan in flight with writes arriving is followed by exactly one
 * more, the first write after a quiet spell waits only the debounce, and a plan an operator or
 * the configuration asks for is not held by the interval. Real MemoryStore, real validator and
 * planner (counted); the service's timers are the test's own (no wall clock in any assertion:
 * time moves only when the test moves it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { MemoryStore } from '../state/memory-store.js';
import { StateService } from './service.js';
import { defaultSettings, plan, type PlanInput } from '../policy/planner/index.js';
import type { Timers } from '../platform/clock.js';
import type { StoreSnapshot } from '../model/snapshot.js';
import type { Plan } from '../model/types.js';

const NOW = 1_800_000_000_000;
const H = 3_600_000;
const DEBOUNCE = 50;
const INTERVAL = 250;
const REGIONS = new Set(['a', 'b']);

/** Timers whose time moves only in advance(); a due timer fires, then what it started runs to its end. */
class ManualTimers implements Timers {
  private t = 0;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  set(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }
  clear(h: unknown): void {
    this.pending.delete(h as number);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const due = [...this.pending].filter(([, x]) => x.at <= end).sort(([i, x], [j, y]) => x.at - y.at || i - j)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.t = Math.max(this.t, due[1].at);
      due[1].fn();
    }
    this.t = end;
    await settle();
  }
}

/** Lets promise chains started by a timer (a snapshot read, a plan) finish. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** A MemoryStore whose snapshot reads can be held, to keep a plan in flight. */
class GatedStore extends MemoryStore {
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = null;
  }
  /** Read at once, handed over when released: a read in flight while the store moves on. */
  override async snapshot(): Promise<StoreSnapshot> {
    const snap = await super.snapshot();
    if (this.gate) await this.gate;
    return snap;
  }
}

async function setup(minIntervalMs = INTERVAL) {
  const store = new GatedStore({ file: null, clock: () => NOW });
  const timers = new ManualTimers();
  const settings = defaultSettings([
    { id: 'a', location: { lat: 50, lon: 8 }, capacityUnits: 100 },
    { id: 'b', location: { lat: 52, lon: 0 }, capacityUnits: 100 },
  ]);
  let planned = 0;
  let last: Plan | null = null;
  const planner = (i: PlanInput) => {
    planned++;
    return plan(i);
  };
  const svc = new StateService({ store, log: pino({ level: 'silent' }), configHash: 'cfg', settings, debounceMs: DEBOUNCE, minIntervalMs, timers, planner, onPlan: (p) => (last = p), clock: () => NOW });
  await svc.start();
  let n = 0;
  /** One write through the validator: a newer health probe of region a. */
  const write = async () => {
    n++;
    const r = await svc.ingest([{ region: 'a', kind: 'health.probe', source: 'health/n1', key: '10.0.0.1:443', observedAt: NOW - 100_000 + n, expiresAt: NOW + H, value: { up: n % 2 === 0 } }], REGIONS);
    assert.equal(r.results[0]!.stored, true);
    return r.revision;
  };
  return { svc, store, timers, write, planned: () => planned, last: () => last!, settings };
}

test('a burst of K writes makes at most one plan per interval, and the last write is planned', async (t) => {
  const s = await setup();
  t.after(() => s.svc.close());
  await s.timers.advance(10_000);
  const before = s.planned();
  // The first write after a quiet spell waits only the debounce.
  await s.write();
  await s.timers.advance(DEBOUNCE);
  assert.equal(s.planned(), before + 1, 'the first write after quiet is planned after the debounce, not after the interval');
  // K writes, 5 ms apart: 2 s of burst.
  const K = 400;
  const STEP = 5;
  let rev = 0;
  for (let i = 0; i < K; i++) {
    rev = await s.write();
    await s.timers.advance(STEP);
  }
  const burst = s.planned() - before - 1;
  const bound = Math.ceil((K * STEP) / INTERVAL) + 1;
  assert.ok(burst <= bound, `${burst} plans for ${K} writes over ${K * STEP} ms: at most ${bound} (one per ${INTERVAL} ms)`);
  assert.ok(burst >= Math.floor((K * STEP) / (INTERVAL + DEBOUNCE)) - 1, `${burst} plans: the burst is planned as it goes, not only at its end`);
  // Nothing is lost: once the interval has passed, the plan in force is the last write's.
  await s.timers.advance(INTERVAL + DEBOUNCE);
  assert.equal(s.last().storeRevision, rev, 'the last write of the burst is planned');
  const settled = s.planned();
  await s.timers.advance(10 * INTERVAL);
  assert.equal(s.planned(), settled, 'no plan without a write');
});

test('without the interval (0) the same burst plans once per debounce: the bound above is the interval at work', async (t) => {
  const s = await setup(0);
  t.after(() => s.svc.close());
  await s.timers.advance(10_000);
  const before = s.planned();
  for (let i = 0; i < 400; i++) {
    await s.write();
    await s.timers.advance(5);
  }
  assert.ok(s.planned() - before >= 400 / (DEBOUNCE / 5) - 1, `${s.planned() - before} plans`);
});

test('a plan in flight while writes arrive is followed by exactly one more, an interval after it', async (t) => {
  const s = await setup();
  t.after(() => s.svc.close());
  await s.timers.advance(10_000);
  s.store.hold();
  await s.write();
  await s.timers.advance(DEBOUNCE);
  const inFlight = s.planned();
  let rev = 0;
  for (let i = 0; i < 50; i++) {
    rev = await s.write();
    await s.timers.advance(20);
  }
  assert.equal(s.planned(), inFlight, 'the run in flight waits on its snapshot; nothing else started meanwhile');
  s.store.release();
  await s.timers.advance(0);
  assert.equal(s.planned(), inFlight + 1, 'the run in flight plans');
  await s.timers.advance(INTERVAL - 1);
  assert.equal(s.planned(), inFlight + 1, 'the follow-up waits for the interval');
  await s.timers.advance(1);
  assert.equal(s.planned(), inFlight + 2, 'one more plan for the writes that came during the first');
  assert.equal(s.last().storeRevision, rev);
  await s.timers.advance(10 * INTERVAL);
  assert.equal(s.planned(), inFlight + 2, 'and only one');
});

test("an operator's action and a reload are planned at once, inside a burst's interval and after a plan in flight", async (t) => {
  const s = await setup();
  t.after(() => s.svc.close());
  await s.timers.advance(10_000);
  await s.write();
  await s.timers.advance(DEBOUNCE);
  const p0 = s.planned();
  // Within the interval after that plan, a write waits ...
  await s.write();
  await s.timers.advance(DEBOUNCE);
  assert.equal(s.planned(), p0, 'a write inside the interval waits for it');
  // ... an operator's drain does not.
  const o = await s.svc.createOverride({ region: 'b', action: 'drain', reason: 'burst test' }, 'alice', REGIONS);
  await s.timers.advance(0);
  assert.equal(s.planned(), p0 + 1, "the operator's drain is planned at once");
  const snap = await s.store.snapshot();
  assert.equal(s.last().storeRevision, snap.revision, 'the plan in force has the drain (and the write before it)');
  assert.ok(snap.overrides.some((x) => x.id === o.id));
  await s.svc.endOverride(o.id, 'alice', 'done');
  await s.timers.advance(0);
  assert.equal(s.planned(), p0 + 2, 'ending it too');
  // A reload while a plan is in flight (and a write came after its read): planned right after it, not an interval later.
  s.store.hold();
  await s.write();
  await s.timers.advance(INTERVAL + DEBOUNCE);
  const inFlight = s.planned();
  const rev = await s.write();
  s.svc.reconfigure('cfg2', s.settings);
  await s.timers.advance(0);
  s.store.release();
  await s.timers.advance(0);
  assert.equal(s.planned(), inFlight + 2, 'the run in flight, then the reload at once');
  assert.equal(s.last().storeRevision, rev);
  assert.equal(s.last().configHash, 'cfg2');
});
