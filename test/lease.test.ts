/**
 * Pollers run on one node at a time under a Redis lease with a fencing token (issue 4):
 * two node processes compete for one lease on a real redis-server; SIGKILL of the leader
 * moves the poller to the other within one lease period (plus one renewal period), and a
 * late write with the deposed leader's token is refused as fenced. A clean stop hands over.
 * Nothing is timed: the takeover is counted in the contender's attempts (one every TTL/3,
 * its cadence checked on fake timers in gslb/state/lease.test.ts); a loaded machine makes
 * fewer attempts in a lease period, never more.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import { RedisStore } from '../gslb/state/redis-store.js';
import { StoreError } from '../gslb/state/store.js';
import { sleep } from './helpers/net.js';

const TTL = 1000;
const PREFIX = `lease${process.pid}`;
const child = fileURLToPath(new URL('./helpers/lease-child.js', import.meta.url));

interface Node {
  proc: ChildProcess;
  events: { event: string; at: number; token?: number; code?: string }[];
}

let redis: RunningRedis;
const nodes: Node[] = [];

function startNode(holder: string): Node {
  const proc = spawn(process.execPath, [child, redis.url, PREFIX, holder, String(TTL)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const n: Node = { proc, events: [] };
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        n.events.push(JSON.parse(line) as Node['events'][number]);
      } catch {
        // not an event line
      }
    }
  });
  nodes.push(n);
  return n;
}

async function waitFor(n: Node, what: (e: Node['events'][number]) => boolean, ms: number, label: string): Promise<Node['events'][number]> {
  for (let i = 0; i < ms / 20; i++) {
    const e = n.events.find(what);
    if (e) return e;
    await sleep(20);
  }
  assert.fail(`${label}: not seen within ${ms} ms; events: ${JSON.stringify(n.events.filter((e) => e.event !== 'wrote').slice(-10))}`);
}

before(async () => {
  redis = await startRedis();
});

after(async () => {
  for (const n of nodes) n.proc.kill('SIGKILL');
  await redis?.cleanup();
});

test('SIGKILL of the leader moves the poller within one lease period; the deposed token is fenced', async (t) => {
  const a = startNode('node-a');
  const aLead = await waitFor(a, (e) => e.event === 'leader', 5000, 'node-a leads');
  await waitFor(a, (e) => e.event === 'wrote', 2000, 'node-a writes');
  const b = startNode('node-b');
  await waitFor(b, (e) => e.event === 'ready', 5000, 'node-b starts');
  // While a renews, b never leads (three lease periods).
  await sleep(3 * TTL);
  assert.equal(b.events.find((e) => e.event === 'leader'), undefined, 'node-b must not lead while node-a renews');
  const killedAt = Date.now();
  const triesBefore = b.events.filter((e) => e.event === 'try').length;
  a.proc.kill('SIGKILL');
  const bLead = await waitFor(b, (e) => e.event === 'leader', 20 * TTL, 'node-b takes over (liveness bound)');
  const tries = b.events.slice(0, b.events.indexOf(bLead)).filter((e) => e.event === 'try').length - triesBefore;
  t.diagnostic(`node-b led after ${tries} attempts, ${bLead.at - killedAt} ms after node-a was killed (lease ${TTL} ms, an attempt every ${Math.floor(TTL / 3)} ms)`);
  // a's last renewal was at most one attempt period before the kill, so its lease runs out
  // within TTL of the kill, i.e. within 3 of b's attempt periods: b leads at its 4th attempt
  // after the kill at the latest, plus one that may have been in flight at the kill (its
  // success is the attempt that logged 'leader', counted here).
  assert.ok(tries >= 1 && tries <= 5, `takeover within one lease period plus one attempt: ${tries} attempts after the kill`);
  assert.ok(bLead.token! > aLead.token!, `the new token (${bLead.token}) is larger than the deposed one (${aLead.token})`);
  await waitFor(b, (e) => e.event === 'wrote', 2000, 'node-b writes');

  // The deposed leader's late write (as if a had only been paused, not killed).
  const late = new RedisStore({ url: redis.url, prefix: PREFIX });
  await late.start();
  try {
    const now = Date.now();
    await assert.rejects(
      late.putSignal({ region: 'us-va', kind: 'carbon', source: 'poller/node-a', key: 'grid', observedAt: now, expiresAt: now + 60_000, value: { gPerKWh: 1 } }, { lease: 'test/poller', token: aLead.token! }),
      (e: unknown) => e instanceof StoreError && e.code === 'fenced',
    );
    const snap = await late.snapshot();
    const rec = snap.records.find((r) => r.signal.source === 'poller/node-a');
    assert.ok(!rec || (rec.signal.value as { gPerKWh: number }).gPerKWh === 100, 'the fenced write changed nothing');
  } finally {
    await late.close();
  }
});

test('a clean stop hands the lease over at once', async () => {
  const b = nodes[1]!;
  const c = startNode('node-c');
  await waitFor(c, (e) => e.event === 'ready', 5000, 'node-c starts');
  b.proc.kill('SIGTERM');
  const released = await waitFor(b, (e) => e.event === 'released', 20 * TTL, 'node-b releases the lease (liveness bound)');
  const cLead = await waitFor(c, (e) => e.event === 'leader', 20 * TTL, 'node-c takes over (liveness bound)');
  // Counted, not timed: c's attempts that began after the release (both clocks are this
  // machine's) until it led: the first one takes the lease; an expiring lease would need 3 more.
  const after = c.events.slice(0, c.events.indexOf(cLead) + 1).filter((e) => e.event === 'try' && e.at >= released.at).length;
  assert.equal(after, 1, `a released lease is taken at the first attempt after the release, not when it would have expired (${after} attempts)`);
  await waitFor(b, (e) => e.event === 'stopped', 1000, 'node-b stopped its poller');
});
