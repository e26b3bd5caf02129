/**
 * LeaseRunner's cadence on fake timers: one attempt at once, then one every ttlMs / 3, so a
 * contender's attempts count lease periods (test/lease.test.ts counts them on a real Redis).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseRunner } from './lease.js';
import type { StateStore } from './store.js';

test('LeaseRunner: an attempt at once, then one every ttlMs / 3 (fake timers)', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let attempts = 0;
  const store = { acquireLease: () => (attempts++, Promise.resolve(null)) } as unknown as StateStore;
  const runner = new LeaseRunner({ store, name: 'test/cadence', holder: 'n1', ttlMs: 900, start: () => () => undefined });
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  };
  runner.run();
  await settle();
  assert.equal(attempts, 1, 'one attempt at once');
  t.mock.timers.tick(299);
  await settle();
  assert.equal(attempts, 1, 'none before ttlMs / 3');
  t.mock.timers.tick(1);
  await settle();
  assert.equal(attempts, 2);
  for (let i = 0; i < 3; i++) {
    t.mock.timers.tick(300);
    await settle();
  }
  assert.equal(attempts, 5, 'three more in one lease period');
  await runner.stop();
});
