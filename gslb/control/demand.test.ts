/**
 * DemandFlusher (measured demand, ADR 0005): it closes a bucket on its clock's 10 s boundary,
 * waiting on a real timer for the real time that span takes (gslb/platform/clock.ts realMs),
 * so on a test clock — faster, or standing still — buckets close at the clock's pace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { DemandFlusher, bucketRows } from './demand.js';
import type { DemandBucket } from '../model/snapshot.js';
import type { StateStore } from '../state/store.js';

const NOW = 1_800_000_004_000; // 4 s into a 10 s bucket

test('bucketRows: sums per home and name, leaves out zeros', () => {
  assert.deepEqual(bucketRows(NOW, [{ 'api.example.com': { a: 2, b: 0 } }, { 'api.example.com': { a: 3 } }]), [{ bucket: NOW, home: 'a', name: 'api.example.com', queries: 5 }]);
});

test('DemandFlusher: waits the real time the clock takes to its next 10 s boundary, then writes the bucket just ended', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const writes: DemandBucket[][] = [];
  const store = { addDemand: async (rows: DemandBucket[]) => void writes.push(rows) } as unknown as StateStore;
  // A clock running at a tenth of real speed: its 6.05 s to the boundary take 60.5 real seconds.
  const f = new DemandFlusher(store, async () => [{ 'api.example.com': { a: 3 } }], () => undefined, () => NOW, (ms) => ms * 10);
  f.start();
  t.mock.timers.tick(60_499);
  await tick();
  assert.equal(writes.length, 0, 'not before the real time the clock takes');
  t.mock.timers.tick(1);
  await tick();
  await tick();
  f.stop();
  assert.deepEqual(writes, [[{ bucket: 1_799_999_990_000, home: 'a', name: 'api.example.com', queries: 3 }]]);
});
