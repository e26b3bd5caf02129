/**
 * What StateStore.putSignals saves over putSignal one by one (issue 27 item 5: all-valid
 * batches of `POST /v1/signals` took seconds). One real redis-server (test/helpers/redis.ts:
 * AOF, `appendfsync always`, in the system's temp dir) and one RedisStore; batches of
 * `--size` load.metrics signals, each a newer fact of an existing record (every one stored),
 * written alternately by a loop over putSignal (putEach: what StateService.ingest did before)
 * and by putSignals, `--rounds` times each, so both meet the same machine load. Prints the
 * median and mean ms per batch of each and their ratio, and a JSON line.
 *
 * Bounded: rounds × 2 batches; loopback only; Redis is stopped at the end.
 * usage: node dist/bench/put-batch.js [--size 300] [--rounds 10]
 */
import { parseArgs } from 'node:util';
import type { Signal } from '../gslb/model/types.js';
import { RedisStore } from '../gslb/state/redis-store.js';
import { putEach, type PutItem } from '../gslb/state/store.js';
import { startRedis } from '../test/helpers/redis.js';

const { values } = parseArgs({ options: { size: { type: 'string', default: '300' }, rounds: { type: 'string', default: '10' } } });
const SIZE = Number(values.size);
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(SIZE) || SIZE < 1 || SIZE > 1000 || !Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 1000) {
  console.error('put-batch: --size 1…1000 and --rounds 1…1000');
  process.exit(2);
}

const T0 = 1_700_000_000_000;
let at = T0;
/** A batch: SIZE records, each a newer fact than the last batch's. */
function batch(): PutItem[] {
  at += 1000;
  return Array.from({ length: SIZE }, (_, i): PutItem => {
    const signal: Signal = { region: 'aa', kind: 'load.metrics', source: 'bench/put-batch', key: `k${i}`, observedAt: at, expiresAt: at + 3600_000, value: { queueDepth: i } };
    return { signal, by: { principal: 'token:bench' } };
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const redis = await startRedis();
const store = new RedisStore({ url: redis.url, prefix: 'bench-put-batch' });
try {
  await store.start();
  await putEach(store, batch()); // the records exist: every batch below updates them
  const loop: number[] = [];
  const batched: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const [how, times] of (r % 2 ? [['batched', batched], ['loop', loop]] : [['loop', loop], ['batched', batched]]) as [string, number[]][]) {
      const items = batch();
      const t = performance.now();
      const res = how === 'loop' ? await putEach(store, items) : await store.putSignals(items);
      times.push(performance.now() - t);
      const stored = res.filter((x) => x.stored).length;
      if (stored !== SIZE) throw new Error(`put-batch: ${how} stored ${stored} of ${SIZE}`);
    }
  }
  const f = (x: number) => x.toFixed(1);
  console.log(`batches of ${SIZE} signals, ${ROUNDS} of each, alternating (ms per batch):`);
  console.log(`  putSignal one by one: median ${f(median(loop))}, mean ${f(mean(loop))}, max ${f(Math.max(...loop))}`);
  console.log(`  putSignals:           median ${f(median(batched))}, mean ${f(mean(batched))}, max ${f(Math.max(...batched))}`);
  console.log(`  one by one ÷ batched: ${(median(loop) / median(batched)).toFixed(1)} (medians)`);
  console.log(JSON.stringify({ size: SIZE, rounds: ROUNDS, loopMs: loop.map((x) => Math.round(x)), batchedMs: batched.map((x) => Math.round(x)) }));
} finally {
  await store.close();
  await redis.cleanup();
}
