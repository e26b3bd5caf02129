/**
 * RedisStore against real redis-server processes on loopback (test/helpers/redis.ts):
 * the StateStore conformance suite on a standalone server and on a three-master Cluster
 * (through redis+cluster://, which proves the hash tag keeps the multi-key scripts in one
 * slot), then what only a shared store has: two nodes seeing each other's writes by pub/sub
 * and by the revision poll, fail static across a kill -9 and a restart (AOF), WAIT for a
 * replica, and a lease taken over from a holder that stopped renewing, with fencing.
 *
 * Every wait is bounded; no assertion is about speed. "No hang" is checked with a generous
 * guard (10 s) around calls that must reject within the store's command timeout.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { storeKeys } from '../gslb/state/keys.js';
import { parseRedisUrl, redactUrl, RedisStore, STORE_FORMAT, type RedisStoreOptions } from '../gslb/state/redis-store.js';
import { storeConformance, type ConformanceHandle } from './helpers/store-conformance.js';
import { StoreError, type Lease } from '../gslb/state/store.js';
import type { Override, Signal } from '../gslb/model/types.js';
import { startRedis, startRedisCluster, startSentinel, type RunningCluster, type RunningRedis, type RunningSentinel } from './helpers/redis.js';

const T0 = 1_700_000_000_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// One standalone server, one Sentinel (with a primary of its own) and one Cluster for the
// whole file, each started on first use.
let standalone: Promise<RunningRedis> | null = null;
let sentinel: Promise<{ primary: RunningRedis; sentinel: RunningSentinel }> | null = null;
let cluster: Promise<RunningCluster> | null = null;
const shared = () => (standalone ??= startRedis());
const sharedCluster = () => (cluster ??= startRedisCluster(3));
after(async () => {
  await Promise.all([
    standalone?.then((r) => r.cleanup()),
    sentinel?.then(async (s) => {
      await s.sentinel.cleanup();
      await s.primary.cleanup();
    }),
    cluster?.then((c) => c.cleanup()),
  ]);
});

let prefixes = 0;
/** A fresh prefix per store: tests never see each other's keys, no flush needed. */
const freshPrefix = (what: string) => `t${process.pid}-${++prefixes}-${what}`;

async function openStore(o: RedisStoreOptions, t: { after(fn: () => Promise<void>): void }): Promise<RedisStore> {
  const store = new RedisStore({ pollMs: 200, ...o });
  await store.start();
  t.after(() => store.close());
  return store;
}

function load(queueDepth: number, observedAt: number, key = 'k1'): Signal {
  return { region: 'aa', kind: 'load.metrics', source: 'test/redis', key, observedAt, expiresAt: observedAt + 3600_000, value: { queueDepth } };
}
function drain(region: string): Omit<Override, 'id'> {
  return { region, action: 'drain', value: 0, ramp: 0, actor: 'ops/alice', reason: 'test', start: T0 };
}

const isCode = (code: string, message?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof StoreError, `expected a StoreError, got ${String(e)}`);
  assert.equal(e.code, code, e.message);
  if (message) assert.match(e.message, message);
  return true;
};

/** Polls `cond` every 20 ms for at most `ms`. */
async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  for (let i = 0; i < Math.ceil(ms / 20); i++) {
    if (await cond()) return;
    await sleep(20);
  }
  assert.fail(`timed out after ${ms} ms waiting for ${what}`);
}

/** `p`, or a failure naming `what` if it neither resolves nor rejects within `ms` (a hang). */
function guard<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} hung for ${ms} ms`)), ms);
  });
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

/**
 * ConformanceHandle.between for a RedisStore: `write` runs when the store next sends a
 * pipeline of gsPutSignal scripts — putSignals' writes, after its reads (redis-store.ts
 * putRound) — so a batch meets a record changed since it read it, deterministically.
 */
function betweenPipelines(store: RedisStore): ConformanceHandle['between'] {
  return (write) => {
    type Pipe = { exec(): Promise<unknown>; gsPutSignal(...a: unknown[]): unknown };
    const client = (store as unknown as { client: { pipeline(...a: unknown[]): Pipe } }).client;
    const pipeline = client.pipeline;
    client.pipeline = function (this: unknown, ...a: unknown[]): Pipe {
      const p = pipeline.apply(this, a);
      const put = p.gsPutSignal;
      const exec = p.exec;
      let writes = false;
      p.gsPutSignal = function (this: unknown, ...args: unknown[]) {
        writes = true;
        return put.apply(this, args);
      };
      p.exec = async function (this: unknown) {
        if (writes && client.pipeline !== pipeline) {
          client.pipeline = pipeline;
          await write();
        }
        return exec.apply(this);
      };
      return p;
    };
  };
}

async function conformanceStore(o: RedisStoreOptions): Promise<ConformanceHandle> {
  const store = new RedisStore({ pollMs: 200, ...o });
  await store.start();
  return { store, cleanup: () => store.close(), between: betweenPipelines(store) };
}

storeConformance('RedisStore (standalone redis-server)', async () => {
  const r = await shared();
  return conformanceStore({ url: r.url, prefix: freshPrefix('conf') });
});

storeConformance('RedisStore (through Sentinel, redis+sentinel://)', async () => {
  const s = await (sentinel ??= startRedis().then(async (primary) => ({ primary, sentinel: await startSentinel(primary) })));
  return conformanceStore({ url: s.sentinel.url, prefix: freshPrefix('sentinel') });
});

storeConformance('RedisStore (Cluster of three masters, redis+cluster://)', async () => {
  const c = await sharedCluster();
  return conformanceStore({ url: c.url, prefix: freshPrefix('cluster') });
});

describe('RedisStore URLs', () => {
  test('parses standalone, TLS, Sentinel and Cluster URLs', () => {
    assert.deepEqual(parseRedisUrl('redis://127.0.0.1:6400/2'), { mode: 'standalone', host: '127.0.0.1', port: 6400, tls: false, db: 2 });
    assert.deepEqual(parseRedisUrl('rediss://user:p%40ss@redis.example:6380'), { mode: 'standalone', host: 'redis.example', port: 6380, tls: true, username: 'user', password: 'p@ss', db: 0 });
    assert.deepEqual(parseRedisUrl('redis://:secret@[::1]'), { mode: 'standalone', host: '::1', port: 6379, tls: false, password: 'secret', db: 0 });
    assert.deepEqual(parseRedisUrl('redis+sentinel://s1:26379,s2/mymaster/1'), {
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
      tls: false,
      db: 1,
    });
    assert.deepEqual(parseRedisUrl('redis+cluster://a:7000,b:7001'), {
      mode: 'cluster',
      nodes: [
        { host: 'a', port: 7000 },
        { host: 'b', port: 7001 },
      ],
      tls: false,
    });
  });

  test('refuses malformed URLs with a message naming the fix, and never prints the password', () => {
    for (const [url, msg] of [
      ['http://x', /is not redis:\/\//],
      ['redis://a:1,b:2', /use redis\+sentinel:\/\/ or redis\+cluster:\/\//],
      ['redis+sentinel://s1:26379', /master name/],
      ['redis+cluster://a:7000/0', /no database path/],
      ['redis://:hunter2@host:99999', /not host\[:port\]/],
      ['redis://host/x', /database "x" is not a number/],
      ['redis://host?tls=1', /query strings/],
    ] as const) {
      assert.throws(() => parseRedisUrl(url), (e: unknown) => {
        isCode('invalid', msg)(e);
        assert.doesNotMatch((e as Error).message, /hunter2/);
        return true;
      });
    }
    assert.equal(redactUrl('redis://u:hunter2@h:1'), 'redis://u:***@h:1');
    assert.throws(() => new RedisStore({ url: 'redis://h', prefix: 'a{b}' }), isCode('invalid', /prefix/));
  });
});

describe('RedisStore on real redis-server', () => {
  test('start rejects with a clear error when Redis cannot be reached (bounded), and may be tried again', async (t) => {
    // A port where nothing listens: a stopped server's.
    const r = await startRedis();
    t.after(() => r.cleanup());
    await r.stop();
    const store = new RedisStore({ url: r.url, prefix: 'late', startTimeoutMs: 1000 });
    t.after(() => store.close());
    await assert.rejects(guard(store.start(), 'start'), isCode('unavailable', /^state: Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable: .*gave up starting after 1000 ms/));
    assert.deepEqual([store.status().connected, store.status().stale], [false, true]);
    await assert.rejects(store.revision(), isCode('unavailable'));
    // The node retries later (gslb/control/service.ts does): the same store starts once Redis is up.
    await r.restart();
    await guard(store.start(), 'start');
    assert.deepEqual([store.status().connected, store.status().stale], [true, false]);
    assert.ok((await store.putSignal(load(1, T0))).stored);
  });

  test('store format: a new prefix gets this build\'s; a newer or foreign one is refused at start and, met at run time, makes the node read and write nothing until it is ours again', async (t) => {
    const r = await shared();
    const prefix = freshPrefix('format');
    const k = storeKeys(prefix);
    const a = await openStore({ url: r.url, prefix }, t);
    assert.equal(await r.command('GET', k.format), String(STORE_FORMAT), 'written at the first start');
    await a.createOverride(drain('aa'), T0);

    // A node of this build meets a store a newer build has taken over: refused, with the fix.
    for (const [stored, says] of [
      [String(STORE_FORMAT + 1), new RegExp(`holds GridSteer store format ${STORE_FORMAT + 1}, newer than this build's ${STORE_FORMAT}: .*upgrade this node`)],
      ['0', /holds GridSteer store format 0, older than any this build .* can read/],
      ['{"queue":1}', /not a GridSteer store format: another program uses this prefix; give GridSteer a prefix of its own \(state\.redis\.prefix\)/],
    ] as const) {
      const other = freshPrefix('format-other');
      await r.command('SET', storeKeys(other).format, stored);
      const store = new RedisStore({ url: r.url, prefix: other, pollMs: 200 });
      t.after(() => store.close());
      await assert.rejects(store.start(), isCode('invalid', says));
      assert.equal(await r.command('GET', storeKeys(other).format), stored, 'left as it was');
    }

    // At run time: a newer build migrates the running node's prefix. Its next poll sees it:
    // failing static, every call refused naming the format, nothing written.
    await r.command('SET', k.format, String(STORE_FORMAT + 1));
    await waitFor(() => a.status().stale, 'the poll to notice the newer format');
    const newer = new RegExp(`store format ${STORE_FORMAT + 1}, newer than this build's ${STORE_FORMAT}`);
    assert.match(a.status().detail, newer);
    const before = await r.command('HLEN', k.ov);
    await assert.rejects(a.createOverride(drain('bb'), T0), isCode('unavailable', newer));
    await assert.rejects(a.snapshot(), isCode('unavailable', newer));
    assert.equal(await r.command('HLEN', k.ov), before, 'nothing written');
    // Back to this build's format (the upgrade rolled back): it reads and writes again.
    await r.command('SET', k.format, String(STORE_FORMAT));
    await waitFor(() => !a.status().stale, 'the poll to find the format ours again');
    assert.equal((await a.snapshot()).overrides.length, 1);
    await a.createOverride(drain('bb'), T0);
  });

  test('a revision poll racing pub/sub under a write load is no data loss (found by the soak run)', async (t) => {
    // B polls every 2 ms while A writes: B's poll reads revision R, A's next write publishes
    // R + 1, and B may take the message off its subscriber connection before the poll's reply
    // off the other one. That newer revision is no sign that Redis went back to R: before the
    // fix B declared DATA LOSS and held its plan until an operator confirmed it.
    const r = await shared();
    const prefix = freshPrefix('race');
    const a = await openStore({ url: r.url, prefix }, t);
    const logs: string[] = [];
    const b = await openStore({ url: r.url, prefix, pollMs: 2, log: (level, msg) => logs.push(`${level} ${msg}`) }, t);
    const seen: number[] = [];
    b.onRevision((rev) => seen.push(rev));
    // Bounded: 4000 writes, 8 at a time.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 4000) {
          const k = next++;
          await a.putSignal(load(k, T0 + k, `k${k % 5}`));
        }
      }),
    );
    const last = Number(await r.command('GET', storeKeys(prefix).rev));
    await waitFor(() => seen.at(-1) === last, `B to reach revision ${last}`);
    assert.equal(b.status().loss, null, `no loss: ${logs.filter((l) => /LOSS/.test(l)).join('\n')}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `each revision once, in order`);
  });

  test('two nodes on one Redis: a write on A reaches B by pub/sub and by the revision poll', async (t) => {
    const r = await shared();
    const prefix = freshPrefix('nodes');
    const a = await openStore({ url: r.url, prefix }, t);
    const b = await openStore({ url: r.url, prefix, pollMs: 200 }, t);
    // C polls only once a minute: what it sees in time came by pub/sub.
    const c = await openStore({ url: r.url, prefix, pollMs: 60_000 }, t);
    const seenB: number[] = [];
    const seenC: number[] = [];
    b.onRevision((rev) => seenB.push(rev));
    c.onRevision((rev) => seenC.push(rev));

    const o = await a.createOverride(drain('aa'), T0);
    await waitFor(() => seenB.includes(o.revision), `B to hear of revision ${o.revision}`);
    await waitFor(() => seenC.includes(o.revision), `C to hear of revision ${o.revision} by pub/sub`);
    let snap = await b.snapshot();
    assert.ok(snap.revision >= o.revision);
    assert.deepEqual(snap.overrides, [o.override]);

    const p = await a.putSignal(load(4, T0));
    assert.ok(p.stored);
    await waitFor(() => seenB.includes(p.revision), `B to hear of revision ${p.revision}`);
    snap = await b.snapshot();
    assert.deepEqual(snap.records, [p.record]);

    // A revision bump nobody published (as if the message were lost) reaches B by the poll.
    const bumped = (await r.command('INCR', storeKeys(prefix).rev)) as number;
    await waitFor(() => seenB.includes(bumped), `B's poll to find revision ${bumped}`);
    assert.equal(b.status().stale, false);
    for (const seen of [seenB, seenC]) for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `each revision once, in order: ${seen.join(', ')}`);
    assert.ok(Math.abs(b.status().clockSkewMs) < 60_000, 'the skew against Redis TIME on one machine is small');

    // Key TTLs never carry meaning: no key of the store has one.
    await a.acquireLease('poller/x', 'node-a', 1000);
    await a.addDemand([{ bucket: T0, home: 'aa', name: 'llm.example.com', queries: 1 }]);
    await a.audit(1);
    const keys = (await r.command('KEYS', `gs:{${prefix}}:*`)) as string[];
    assert.ok(keys.length >= 8, `keys: ${keys.join(', ')}`);
    for (const k of keys) assert.equal(await r.command('PTTL', k), -1, `${k} has no TTL`);
  });

  test('two nodes on a Cluster: a write on A reaches B by pub/sub', async (t) => {
    const c = await sharedCluster();
    const prefix = freshPrefix('cluster-nodes');
    const a = await openStore({ url: c.url, prefix }, t);
    const b = await openStore({ url: c.url, prefix, pollMs: 60_000 }, t);
    const seenB: number[] = [];
    b.onRevision((rev) => seenB.push(rev));
    const o = await a.createOverride(drain('aa'), T0);
    await waitFor(() => seenB.includes(o.revision), `B to hear of revision ${o.revision} by pub/sub`);
    assert.deepEqual((await b.snapshot()).overrides, [o.override]);
    // Every key of the prefix sits in one slot: that is what lets the scripts run.
    const k = storeKeys(prefix);
    const slots = new Set<unknown>();
    for (const key of [k.rev, k.sig, k.ov, k.ovseq, k.audit, k.auditseq, k.demand, k.demandIndex, k.leaseTokens, k.lease('p')]) slots.add(await c.nodes[0]!.command('CLUSTER', 'KEYSLOT', key));
    assert.equal(slots.size, 1);
  });

  test('concurrent writers of one record: compare-and-set keeps the newest and never folds onto an older record', async (t) => {
    const r = await shared();
    const prefix = freshPrefix('cas');
    const nodes = [await openStore({ url: r.url, prefix }, t), await openStore({ url: r.url, prefix }, t), await openStore({ url: r.url, prefix }, t)];
    // Health probes of one endpoint from three nodes at once: observedAt T0+1 … T0+60,
    // interleaved, all down. Whatever the interleaving, the stored record is the newest
    // probe and its streak counts only probes that were folded in observedAt order.
    const probe = (i: number): Signal => ({ region: 'aa', kind: 'health.probe', source: 'health/node-x', key: 'ep', observedAt: T0 + i, expiresAt: T0 + i + 60_000, value: { up: false } });
    await nodes[0]!.putSignal({ ...probe(0), value: { up: true } });
    const results = await Promise.all(nodes.map((n, k) => (async () => {
      const out = [];
      for (let i = 1 + k; i <= 60; i += nodes.length) out.push(await n.putSignal(probe(i)));
      return out;
    })()));
    const all = results.flat();
    const stored = all.filter((x) => x.stored);
    assert.ok(stored.length >= 1);
    const revs = stored.map((x) => x.revision).sort((x, y) => x - y);
    assert.equal(new Set(revs).size, revs.length, 'each stored write has a revision of its own');
    // Each stored record was folded onto a record with an older observedAt, so the streaks
    // of stored records increase with observedAt.
    const byAt = stored.map((x) => (x.stored ? x.record : null)!).sort((x, y) => x.signal.observedAt - y.signal.observedAt);
    for (let i = 1; i < byAt.length; i++) {
      const [p, q] = [byAt[i - 1]!.fold, byAt[i]!.fold];
      assert.ok(p.kind === 'health' && q.kind === 'health' && q.streak > p.streak, 'streaks grow with observedAt');
    }
    const snap = await nodes[1]!.snapshot();
    assert.equal(snap.records.length, 1);
    assert.equal(snap.records[0]!.signal.observedAt, T0 + 60, 'the newest probe is stored');
    assert.deepEqual(snap.records[0], byAt.at(-1));
    assert.equal(snap.records[0]!.fold.kind === 'health' && snap.records[0]!.fold.stableUp, false, 'three or more failures in a row: down');
  });

  test('fail static: Redis killed → stale and every call rejects unavailable; restarted → reconnects, resyncs, AOF kept', async (t) => {
    const r = await startRedis();
    t.after(() => r.cleanup());
    const logs: string[] = [];
    const store = await openStore({ url: r.url, prefix: 'failstatic', pollMs: 200, log: (level, msg) => logs.push(`${level} ${msg}`) }, t);
    const seen: number[] = [];
    store.onRevision((rev) => seen.push(rev));
    // A second node that polls once a minute: after the restart it hears of writes only if
    // its subscription came back by itself.
    const other = await openStore({ url: r.url, prefix: 'failstatic', pollMs: 60_000 }, t);
    const seenOther: number[] = [];
    other.onRevision((rev) => seenOther.push(rev));
    const kept = await store.createOverride(drain('aa'), T0);
    const stored = await store.putSignal(load(1, T0));
    assert.ok(stored.stored);
    assert.deepEqual([store.status().connected, store.status().stale], [true, false]);

    await r.kill('SIGKILL');
    await waitFor(() => !store.status().connected, 'the store to notice Redis is gone', 10_000);
    assert.equal(store.status().stale, true);
    assert.match(store.status().detail, /unreachable since/);
    const unreachable = /^state: Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable: /;
    await assert.rejects(guard(store.putSignal(load(2, T0 + 1)), 'putSignal'), isCode('unavailable', unreachable));
    await assert.rejects(guard(store.createOverride(drain('bb'), T0 + 1), 'createOverride'), isCode('unavailable', unreachable));
    await assert.rejects(guard(store.endOverride(kept.override.id, 'ops/bob', 'x', T0 + 1), 'endOverride'), isCode('unavailable', unreachable));
    await assert.rejects(guard(store.snapshot(), 'snapshot'), isCode('unavailable', unreachable));
    await assert.rejects(guard(store.acquireLease('p', 'node-a', 1000), 'acquireLease'), isCode('unavailable', unreachable));
    await assert.rejects(guard(store.time(), 'time'), isCode('unavailable', unreachable));
    // A few poll periods later it is still stale, not stuck in between.
    await sleep(600);
    assert.deepEqual([store.status().connected, store.status().stale], [false, true]);

    const heard = seen.length;
    await r.restart();
    await waitFor(() => store.status().connected && !store.status().stale, 'the store to reconnect by itself', 20_000);
    await waitFor(() => seen.length > heard, 'listeners to be told to resync');
    assert.equal(seen.at(-1), stored.revision, 'the resync hands over the current revision');
    const snap = await store.snapshot();
    assert.equal(snap.revision, stored.revision, 'nothing was written while Redis was down');
    assert.deepEqual(snap.overrides, [kept.override], 'the override acknowledged before the kill survived (AOF); the refused one is absent');
    assert.deepEqual(snap.records, [stored.record]);
    assert.deepEqual(
      (await store.audit(10)).map((e) => e.target),
      [kept.override.id],
    );
    assert.ok(logs.some((l) => /^warn state: lost Redis at/.test(l)), logs.join('\n'));
    assert.ok(logs.some((l) => /^info state: Redis at .* is back/.test(l)), logs.join('\n'));
    // Writes work again, and reach the other node by pub/sub.
    await waitFor(() => other.status().connected && !other.status().stale, 'the other node to reconnect', 20_000);
    const again = await store.createOverride(drain('bb'), T0 + 2);
    assert.ok(again.revision > stored.revision);
    await waitFor(() => seenOther.includes(again.revision), `the other node to hear of revision ${again.revision} by pub/sub`);
  });

  test('an override write that reaches Redis after the node gave up on it writes nothing (deadline in Redis time)', async (t) => {
    // A write delayed past the command timeout (bytes queued behind a cut connection, delivered
    // when it heals) is what this guards against; here the node's clock jumps 60 s back after
    // the skew was measured, so the deadline it sends has passed when the script runs.
    const r = await shared();
    let offset = 0;
    const store = await openStore({ url: r.url, prefix: freshPrefix('late'), pollMs: 3_600_000, clock: () => Date.now() - offset }, t);
    const live = await store.createOverride(drain('aa'), T0);
    offset = 60_000;
    await assert.rejects(guard(store.createOverride(drain('bb'), T0), 'createOverride'), isCode('unavailable', /ms after this node had given up on it .*nothing was written/));
    await assert.rejects(guard(store.endOverride(live.override.id, 'ops/bob', 'late', T0), 'endOverride'), isCode('unavailable', /nothing was written/));
    const snap = await store.snapshot();
    assert.deepEqual(
      snap.overrides.map((o) => o.id),
      [live.override.id],
      'neither late write applied',
    );
    assert.deepEqual(
      (await store.audit(10)).map((a) => a.action),
      ['override.create'],
      'and neither was audited',
    );
    offset = 0;
    assert.ok((await store.endOverride(live.override.id, 'ops/bob', 'on time', T0)).revision > live.revision, 'in time, it writes');
  });

  test('waitReplicas=1: an override resolves once a replica has it; without a replica it is refused as unavailable', async (t) => {
    const primary = await startRedis();
    t.after(() => primary.cleanup());
    const replica = await startRedis({ replicaOf: primary });
    t.after(() => replica.cleanup());
    const prefix = freshPrefix('wait');
    const store = await openStore({ url: primary.url, prefix, waitReplicas: 1, waitTimeoutMs: 5000 }, t);
    const o = await store.createOverride(drain('aa'), T0);
    const onReplica = await replica.command('HGET', storeKeys(prefix).ov, o.override.id);
    assert.deepEqual(JSON.parse(String(onReplica)), o.override, 'the acknowledged override is on the replica');
    const ended = await store.endOverride(o.override.id, 'ops/bob', 'done', T0 + 1);
    assert.ok(ended.revision > o.revision);

    const alone = await shared();
    const lonely = await openStore({ url: alone.url, prefix: freshPrefix('nowait'), waitReplicas: 1, waitTimeoutMs: 200 }, t);
    await assert.rejects(guard(lonely.createOverride(drain('aa'), T0), 'createOverride'), isCode('unavailable', /only 0 of 1 replica\(s\) acknowledged it within 200 ms/));
  });

  test('lease takeover: the holder stops renewing, the other node takes over at its first try after expiry, the deposed holder is fenced', async (t) => {
    const r = await shared();
    const prefix = freshPrefix('lease');
    const a = await openStore({ url: r.url, prefix }, t);
    const b = await openStore({ url: r.url, prefix }, t);
    const name = 'poller/openadr';
    const ttl = 1000;
    const every = 250;

    let held = await a.acquireLease(name, 'node-a', ttl);
    assert.ok(held);
    const token = held.token;
    for (let i = 0; i < 4; i++) {
      await sleep(every);
      held = await a.acquireLease(name, 'node-a', ttl);
      assert.ok(held, 'the holder renews');
      assert.equal(held.token, token);
      assert.equal(await b.acquireLease(name, 'node-b', ttl), null, 'the other node is refused while the lease is held');
    }
    assert.ok((await a.putSignal(load(1, T0), { lease: name, token })).stored);

    // node-a is "killed": it renews no more. node-b keeps trying every `every` ms.
    const lastUntil = held.until;
    const tries: { startedAt: number; got: Lease | null }[] = [];
    let taken: Lease | null = null;
    for (let i = 0; i < 40 && !taken; i++) {
      await sleep(every);
      const startedAt = await b.time();
      taken = await b.acquireLease(name, 'node-b', ttl);
      tries.push({ startedAt, got: taken });
    }
    assert.ok(taken, `node-b took the lease within ${tries.length} tries`);
    const takenAt = taken.until - ttl; // Redis TIME when the takeover script ran
    assert.ok(takenAt >= lastUntil, `never before the lease ran out (${takenAt} ≥ ${lastUntil})`);
    // Taken at the first try after expiry, so within one lease period plus one renew
    // interval of the last renewal (loop spacing, not a speed claim).
    for (const x of tries.slice(0, -1)) assert.ok(x.startedAt < lastUntil, `a refused try began at ${x.startedAt}, before ${lastUntil}`);
    assert.ok(taken.token > token, `the takeover token ${taken.token} is larger than ${token}`);

    // The deposed holder's late write is fenced; the new holder's is stored.
    await assert.rejects(a.putSignal(load(2, T0 + 1), { lease: name, token }), isCode('fenced', new RegExp(`current token ${taken.token}, held by node-b`)));
    assert.ok((await b.putSignal(load(3, T0 + 2), { lease: name, token: taken.token })).stored);
    assert.deepEqual((await b.snapshot()).records.map((rec) => rec.signal.value), [{ queueDepth: 3 }]);
    await b.releaseLease(name, 'node-b', taken.token);
  });
});
