/**
 * Housekeeping jobs on three nodes sharing one real Redis (issue 21, "Tests"): node-cron's
 * distributed mode with the store as run coordinator starts each slot at most once
 * fleet-wide; the node running a slot dies mid-run (its runner is dropped and stops renewing
 * the slot's lease, as a killed process would) — the slot is reported `incomplete` by every
 * node and is not started again; later slots run on the other nodes.
 *
 * Three JobRunners in this process, each with its own RedisStore connection (the three nodes),
 * so that many slots and the not-elected counts are seen in seconds; test/jobs-three-processes
 * does the same with three server processes and a real SIGKILL.
 * one redis-server on a free loopback port. The job runs every second (node-cron's seconds
 * field); every wait is bounded in count, no assertion depends on how long anything took.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { RedisStore } from '../gslb/state/redis-store.js';
import { JobRunner, type JobDef } from '../gslb/control/jobs.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import { sleep } from './helpers/net.js';

let redis: RunningRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.cleanup();
});

const NODES = ['n1', 'n2', 'n3'];

test('each slot starts once fleet-wide; a node dying mid-run leaves its slot incomplete, never run again; the others go on', async (t) => {
  const prefix = `jobs-${process.pid}`;
  const stores = NODES.map(() => new RedisStore({ url: redis.url, prefix, pollMs: 200 }));
  for (const s of stores) await s.start();
  t.after(async () => {
    for (const s of stores) await s.close();
  });
  /** Every run any node began: [slot ISO, node]. */
  const ran: [string, string][] = [];
  let hungNode: string | null = null;
  let slotOfHang = '';
  const hang = new Promise<never>(() => undefined);
  const runners = NODES.map(
    (node, i) =>
      new JobRunner({
        store: stores[i]!,
        node,
        log: pino({ level: 'silent' }),
        clock: Date.now,
        leaseMs: 600,
        jobs: [
          {
            name: 'tick',
            cron: '* * * * * *',
            what: 'a test job',
            async run(ctx) {
              await ctx.changing();
              const slot = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
              ran.push([slot, node]);
              // The third run anywhere hangs: its node is then dropped mid-run.
              if (ran.length === 3 && hungNode === null) {
                hungNode = node;
                slotOfHang = slot;
                return hang;
              }
              await sleep(100);
              return { outcome: 'ok', detail: `ran on ${node}` };
            },
          } satisfies JobDef,
        ],
      }),
  );
  for (const r of runners) r.start();
  t.after(async () => {
    for (const r of runners) await r.close(true);
  });
  // Bounded: at most 100 checks 100 ms apart, until the hung node exists.
  for (let i = 0; i < 100 && hungNode === null; i++) await sleep(100);
  assert.ok(hungNode !== null, `three runs happened: ${JSON.stringify(ran)}`);
  const dead = NODES.indexOf(hungNode);
  await runners[dead]!.close(true);
  const before = ran.length;
  // Then at least four more slots on the other nodes (bounded: 100 checks).
  for (let i = 0; i < 100 && ran.length < before + 4; i++) await sleep(100);
  assert.ok(ran.length >= before + 4, `the other nodes went on: ${JSON.stringify(ran)}`);
  for (const r of runners) await r.close(true);
  // Let runs in progress finish writing (bounded).
  await sleep(300);

  // At most once per slot: by what the job saw, and by the audit log every node reads.
  const slots = ran.map(([s]) => s);
  assert.equal(new Set(slots).size, slots.length, `a slot ran twice: ${JSON.stringify(ran)}`);
  const audit = await stores[0]!.audit(500);
  const starts = audit.filter((e) => e.action === 'job.start').map((e) => e.target);
  assert.equal(new Set(starts).size, starts.length, `a slot was started twice: ${starts.join(', ')}`);
  assert.ok(starts.length >= 7);
  assert.ok(ran.slice(before).every(([, n]) => n !== hungNode), 'the dead node ran nothing more');
  assert.ok(new Set(ran.map(([, n]) => n)).size >= 2, `more than one node ran slots: ${JSON.stringify(ran)}`);

  // Every node reports the hung slot incomplete, and it was never started again.
  for (const r of runners) {
    const [view] = await r.status();
    const hung = [view!.lastRun, ...view!.earlier].find((x) => x && new Date(x.slot).toISOString() === slotOfHang);
    assert.ok(hung, `the hung slot is listed: ${JSON.stringify(view)}`);
    assert.equal(hung.outcome, 'incomplete', JSON.stringify(hung));
    assert.equal(hung.node, hungNode);
    assert.ok([view!.lastRun, ...view!.earlier].filter((x) => x?.outcome === 'ok').length >= 3);
  }
  assert.equal(starts.filter((s) => s === `job:tick@${slotOfHang}`).length, 1);
  // The nodes that were up were told of slots another node took.
  const skipped = runners.reduce((n, r) => n + (r.countsOf('tick')?.notElected ?? 0), 0);
  assert.ok(skipped >= ran.length, `not-elected skips counted: ${skipped}`);
});
