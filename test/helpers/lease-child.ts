/**
 * A stand-in node for the lease test: opens a RedisStore, runs a LeaseRunner whose poller
 * writes one `carbon` signal every 100 ms with its fence, and prints one JSON line per event
 * ({"event":"ready"|"try"|"leader"|"wrote"|"refused"|"stopped"|"released", …}) on stdout; "try"
 * is one call of the store's acquireLease (the runner's attempts, counted by the test).
 *
 * usage: node lease-child.js <redis-url> <prefix> <holder> <ttl-ms>
 */
import { RedisStore } from '../../gslb/state/redis-store.js';
import { LeaseRunner } from '../../gslb/state/lease.js';
import { StoreError } from '../../gslb/state/store.js';

const [url, prefix, holder, ttl] = process.argv.slice(2);
const say = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify({ holder, at: Date.now(), ...o }) + '\n');
const store = new RedisStore({ url: url!, prefix: prefix! });
await store.start();
const acquire = store.acquireLease.bind(store);
store.acquireLease = (...args: Parameters<typeof acquire>) => {
  say({ event: 'try' });
  return acquire(...args);
};
const runner = new LeaseRunner({
  store,
  name: 'test/poller',
  holder: holder!,
  ttlMs: Number(ttl),
  log: (level, msg) => say({ event: 'log', level, msg }),
  start: (fence) => {
    say({ event: 'leader', token: fence.token });
    const timer = setInterval(() => {
      const now = Date.now();
      store
        .putSignal({ region: 'us-va', kind: 'carbon', source: `poller/${holder}`, key: 'grid', observedAt: now, expiresAt: now + 60_000, value: { gPerKWh: 100 } }, fence)
        .then(() => say({ event: 'wrote', token: fence.token }))
        .catch((e: unknown) => say({ event: 'refused', token: fence.token, code: e instanceof StoreError ? e.code : String(e) }));
    }, 100);
    return () => {
      clearInterval(timer);
      say({ event: 'stopped', token: fence.token });
    };
  },
});
runner.run();
say({ event: 'ready' });
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    void runner
      .stop()
      .then(() => say({ event: 'released' }))
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}
