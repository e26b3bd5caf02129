/**
 * A node whose clock differs from Redis `TIME` by more than 250 ms reports not ready
 * (docs/design.md "Many nodes"): plans switch steps at absolute instants, so a skewed node would
 * switch at the wrong time. Real redis-server; the node's clock is shifted through the
 * store's `clock` option (what it compares with TIME).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import { sleep } from './helpers/net.js';
import { RedisStore } from '../gslb/state/redis-store.js';
import { StateService, MAX_CLOCK_SKEW_MS } from '../gslb/control/service.js';
import { defaultSettings } from '../gslb/policy/planner/index.js';

let redis: RunningRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.cleanup();
});

async function statusWithOffset(offsetMs: number): Promise<ReturnType<StateService['status']>> {
  const store = new RedisStore({ url: redis.url, prefix: `skew${offsetMs}`, pollMs: 100, clock: () => Date.now() + offsetMs });
  const svc = new StateService({ store, log: pino({ level: 'silent' }), configHash: 'c', settings: defaultSettings([{ id: 'a' }]), debounceMs: 0, onPlan: () => undefined });
  await svc.start();
  try {
    // Let the store measure the skew a few times (bounded).
    for (let i = 0; i < 20; i++) {
      await sleep(100);
      if (Math.abs(svc.status().clockSkewMs + offsetMs) < 100) break;
    }
    return svc.status();
  } finally {
    await svc.close();
  }
}

test('in step with Redis: ready', async () => {
  const s = await statusWithOffset(0);
  assert.ok(Math.abs(s.clockSkewMs) < MAX_CLOCK_SKEW_MS, `skew ${s.clockSkewMs} ms`);
  assert.equal(s.ready, true, s.why);
});

test('a node clock 1 s ahead of Redis: not ready, and the reason says so', async () => {
  const s = await statusWithOffset(1000);
  assert.ok(s.clockSkewMs < -MAX_CLOCK_SKEW_MS, `skew ${s.clockSkewMs} ms (store − node)`);
  assert.equal(s.ready, false);
  assert.match(s.why, /clock differs from the store's by -?\d+ ms .*NTP/);
});

test('a node clock 400 ms behind: not ready', async () => {
  const s = await statusWithOffset(-400);
  assert.ok(s.clockSkewMs > MAX_CLOCK_SKEW_MS, `skew ${s.clockSkewMs} ms`);
  assert.equal(s.ready, false, s.why);
});
