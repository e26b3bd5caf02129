/**
 * Collecting long-expired signal records (the housekeeping job gc-signals): what may go leaves
 * the plan byte-identical from now on — checked here against a real MemoryStore, planning
 * before and after the removal — and what still acts (a stale capacity reading's degraded cap)
 * stays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectable, planFrom } from './gc.js';
import { defaultSettings, plan } from './planner/index.js';
import { MemoryStore } from '../state/memory-store.js';
import type { Signal } from '../model/types.js';

const H = 3_600_000;
const NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const DAY = 24 * H;

test('gc-signals removes only records whose removal leaves the plan identical from now on, and the plan is byte-identical after', async () => {
  const store = new MemoryStore({ file: null, clock: () => NOW });
  const settings = defaultSettings([{ id: 'a', capacityUnits: 10 }, { id: 'b', capacityUnits: 10 }, { id: 'c', capacityUnits: 10 }]);
  const sig = (o: Partial<Signal> & Pick<Signal, 'region' | 'kind' | 'value'>): Signal => ({ source: 'test', key: 'k', observedAt: NOW - 3 * DAY, expiresAt: NOW - 3 * DAY + H, ...o });
  const signals: Signal[] = [
    // Long expired, stale policy ignore: may go.
    sig({ region: 'a', kind: 'health.probe', source: 'health/n1', key: 'https://a/health', value: { up: true } }),
    sig({ region: 'b', kind: 'load.metrics', value: { queueDepth: 3 } }),
    // A grid event that ended two days ago (its drain and restore long done): may go.
    sig({ region: 'b', kind: 'grid.event', source: 'openadr3/vtn', key: 'e1', expiresAt: NOW - 2 * DAY, value: { id: 'e1', type: 'load-shed', start: NOW - 3 * DAY + 2 * H, end: NOW - 3 * DAY + 3 * H } }),
    // A capacity reading expired days ago: its stale policy (degraded) still caps c — it stays.
    sig({ region: 'c', kind: 'capacity', value: { fraction: 0.8 } }),
    // Fresh: never a candidate.
    sig({ region: 'a', kind: 'capacity', key: 'fresh', observedAt: NOW - 60_000, expiresAt: NOW + H, value: { fraction: 0.9 } }),
    // Expired only a minute ago: within the retention, not a candidate.
    sig({ region: 'b', kind: 'carbon', key: 'recent', observedAt: NOW - H, expiresAt: NOW - 60_000, value: { gPerKWh: 300 } }),
  ];
  for (const s of signals) assert.equal((await store.putSignal(s)).stored, true, `${s.region} ${s.kind}`);
  const horizonEpoch = Math.floor(NOW / DAY);
  const input = async () => ({ configHash: 'cfg', snapshot: await store.snapshot(), settings, horizonEpoch });
  const before = plan(await input());
  const { remove, candidates, kept } = collectable(await input(), NOW, H);
  assert.deepEqual(remove.map((x) => x.id).sort(), ['a|health.probe|health/n1|https://a/health', 'b|grid.event|openadr3/vtn|e1', 'b|load.metrics|test|k']);
  assert.deepEqual([candidates, kept], [4, 1], 'the stale capacity reading was a candidate and was kept');
  const res = await store.removeSignals(remove);
  assert.equal(res.removed, 3);
  const after = plan(await input());
  assert.equal(planFrom(after, NOW), planFrom(before, NOW), 'the plan is byte-identical from now on');
  // Every region's schedule as decide reads it now and later: the same; c still capped by its stale reading.
  assert.match(planFrom(after, NOW), /c: capacity from test is stale \(policy: degraded\)/);
  // Nothing more to collect; the same run again removes nothing.
  assert.deepEqual(collectable(await input(), NOW, H).remove, []);
});
