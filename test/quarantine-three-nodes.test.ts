/**
 * A poison record in a shared store (issue 27, ADR 0020): three GridSteer nodes on one real
 * redis-server, and records written straight into Redis as an older build, a hand or another
 * program would: a grid.event record whose value is null (planning with it throws a
 * TypeError) and a signal record that is not JSON at all.
 *
 * Throughout, a DNS probe asks every node every 100 ms (bounded: at most 600 rounds); every
 * probe must be answered (a node the test restarts on purpose is left out while it is down). Every node must report the same quarantine (GET /v1/quarantine,
 * /readyz's store detail, gridsteer_quarantined_records, the plan's critical alert), keep
 * planning the other records (an operator drain posted after the poison moves the answers),
 * and never exit. A node restarted while the poison is stored starts and reports the same.
 * Dropping the records (audited) clears the quarantine on every node.
 *
 * dns.rateLimit.mode is off: the probes all come from 127.0.0.1 and every one must be answered.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';

const OPERATOR = 'quarantine-operator-5e1f0a';
const VIEWER = 'quarantine-viewer-77a0b3c';

let redis: RunningRedis;
let cfg: TestConfig;
let prefix: string;
const nodes: RunningServer[] = [];
const exits: string[] = [];

before(async () => {
  redis = await startRedis();
  prefix = `q${process.pid}`;
  cfg = writeTestConfig((c) => {
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url: redis.url, prefix }, planDebounceMs: 20 };
  });
  writeTokensFile(cfg.dir, [
    { name: 'olga', role: 'operator', token: OPERATOR },
    { name: 'vic', role: 'viewer', token: VIEWER },
  ]);
  for (let i = 0; i < 3; i++) nodes.push(await start(i));
});

async function start(i: number): Promise<RunningServer> {
  const n = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_NODE: `node-${i}` } });
  n.proc?.once('exit', (code, signal) => {
    if (!stopping.has(n)) exits.push(`node-${i} exited (${code ?? signal})`);
  });
  return n;
}
const stopping = new Set<RunningServer>();
/** Nodes the probe leaves out while the test restarts them on purpose. */
const restarting = new Set<number>();

after(async () => {
  for (const n of nodes) stopping.add(n);
  await Promise.all(nodes.map((n) => n.stop()));
  await redis?.cleanup();
  cfg?.cleanup();
});

const api = (node: RunningServer, method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(node.http, method, path, token, body);
const key = (k: string) => `gs:{${prefix}}:${k}`;

/** The DNS probe: every node every 100 ms until stopped (at most 600 rounds); what went unanswered. */
function probe(): { rounds(): number; stop(): Promise<{ rounds: number; unanswered: string[] }> } {
  let running = true;
  const unanswered: string[] = [];
  let rounds = 0;
  const loop = (async () => {
    while (running && rounds < 600) {
      rounds++;
      await Promise.all(
        nodes.map(async (n, i) => {
          if (restarting.has(i)) return;
          let miss: string | null = null;
          try {
            const r = await askSteered(n.udp, 'A');
            if (r.status !== 'NOERROR' || r.addrs.length === 0) miss = r.summary;
          } catch (e) {
            miss = (e as Error).message;
          }
          // A probe the restart overtook (sent before it, answered after the node stopped) does not count.
          if (miss !== null && !restarting.has(i)) unanswered.push(`round ${rounds} node-${i}: ${miss}`);
        }),
      );
      await sleep(100);
    }
  })();
  return {
    rounds: () => rounds,
    async stop() {
      running = false;
      await loop;
      return { rounds, unanswered };
    },
  };
}

async function quarantineOf(n: RunningServer): Promise<string[]> {
  const r = await api(n, 'GET', '/v1/quarantine', VIEWER);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body as { held: { target: string }[] }).held.map((e) => e.target);
}

async function until(what: string, f: () => Promise<boolean>, rounds = 100): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (await f()) return;
    await sleep(100);
  }
  assert.fail(`timed out: ${what}\n${nodes.map((n) => n.logs.slice(-6).join('\n')).join('\n---\n')}`);
}

const POISON_ID = 'us-va|grid.event|hand/written|evt-1';
const GARBAGE_ID = 'us-tx|capacity|hand/written|cap';
const WANT = [`signal:${GARBAGE_ID}`, `signal:${POISON_ID}`].sort();

test('a poison record and an unreadable one written straight into Redis: every node keeps answering, quarantines the same records, keeps planning the rest, survives a restart; a drop clears it', async () => {
  const p = probe();
  const now = Date.now();
  const poison = { id: POISON_ID, signal: { kind: 'grid.event', region: 'us-va', source: 'hand/written', key: 'evt-1', observedAt: now, expiresAt: now + 3_600_000, value: null }, fold: { kind: 'grid', learnedAt: now } };
  await redis.command('HSET', key('sig'), POISON_ID, JSON.stringify(poison));
  await redis.command('HSET', key('sig'), GARBAGE_ID, '{"id": "torn');
  const rev = await redis.command('INCR', key('rev'));
  await redis.command('PUBLISH', key('revision'), String(rev));

  // Every node: the same two records held, by the store's entries.
  await until('every node reports the quarantine', async () => (await Promise.all(nodes.map(quarantineOf))).every((q) => JSON.stringify(q) === JSON.stringify(WANT)));
  const stored = (await redis.command('HKEYS', key('quarantine'))) as string[];
  assert.deepEqual([...stored].sort(), WANT, 'the quarantine is a store record');
  for (const [i, n] of nodes.entries()) {
    const ready = (await (await fetch(`${n.http}/readyz`)).json()) as { ready: boolean; checks: { name: string; detail: string }[] };
    assert.equal(ready.ready, true, `node-${i} is ready: it answers from a plan made without the records`);
    assert.match(ready.checks.find((c) => c.name === 'store')!.detail, /2 records quarantined, planned without/, `node-${i}`);
    const metrics = await (await fetch(`${n.http}/metrics`)).text();
    assert.match(metrics, /^gridsteer_quarantined_records\{type="signal"\} 2$/m, `node-${i}`);
    assert.match(metrics, /^gridsteer_plan_alerts\{kind="records-quarantined",severity="critical"\} 1$/m, `node-${i}`);
    const plan = (await api(n, 'GET', '/v1/plan', VIEWER)).body as { alerts?: { kind: string; events: string[] }[] };
    const alert = plan.alerts?.find((a) => a.kind === 'records-quarantined');
    assert.ok(alert, `node-${i}: ${JSON.stringify(plan.alerts)}`);
    assert.ok(alert.events.some((e) => e.startsWith(`signal:${POISON_ID}: planning with it failed: TypeError`)), JSON.stringify(alert.events));
    assert.ok(alert.events.some((e) => e.startsWith(`signal:${GARBAGE_ID}: could not be read: not valid JSON`)), JSON.stringify(alert.events));
  }
  const audit = (await api(nodes[0]!, 'GET', '/v1/audit?limit=20', VIEWER)).body as { entries: { action: string; target: string }[] };
  assert.deepEqual(audit.entries.filter((e) => e.action === 'quarantine.add').map((e) => e.target).sort(), WANT, 'each found once, audited');

  // Planning goes on with the other records: a drain posted now moves every node's answers.
  assert.equal((await askSteered(nodes[1]!.udp, 'A')).region, 'us-va');
  const drain = await api(nodes[2]!, 'POST', '/v1/regions/us-va/drain', OPERATOR, { reason: 'planning goes on around the poison' });
  assert.equal(drain.status, 201, JSON.stringify(drain.body));
  await until('every node answers away from us-va', async () => (await Promise.all(nodes.map((n) => askSteered(n.udp, 'A')))).every((r) => r.region !== 'us-va'));

  // A node restarted with the poison stored starts, answers and reports the same quarantine.
  restarting.add(1);
  stopping.add(nodes[1]!);
  await nodes[1]!.stop();
  nodes[1] = await start(1);
  restarting.delete(1);
  await until('the restarted node reports the quarantine', async () => JSON.stringify(await quarantineOf(nodes[1]!)) === JSON.stringify(WANT));
  assert.notEqual((await askSteered(nodes[1]!.udp, 'A')).region, 'us-va', 'the restarted node follows the drain');

  // Drop both (audited, each with what it held): every node's quarantine is empty, the alert gone.
  for (const target of WANT) {
    const r = await api(nodes[0]!, 'POST', '/v1/quarantine/drop', OPERATOR, { target, reason: 'records written by hand' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const unknown = await api(nodes[0]!, 'POST', '/v1/quarantine/release', OPERATOR, { target: WANT[0], reason: 'again' });
  assert.equal(unknown.status, 400);
  assert.equal((unknown.body as { error: { field: string } }).error.field, 'body.target');
  await until('every node reports no quarantine', async () => (await Promise.all(nodes.map(quarantineOf))).every((q) => q.length === 0));
  assert.deepEqual(await redis.command('HEXISTS', key('sig'), POISON_ID), 0, 'dropped from the store');
  const drops = ((await api(nodes[0]!, 'GET', '/v1/audit?limit=20', VIEWER)).body as { entries: { action: string; before: { record: unknown } }[] }).entries.filter((e) => e.action === 'quarantine.drop');
  assert.equal(drops.length, 2);
  assert.ok(drops.some((e) => e.before.record === '{"id": "torn'), 'the unreadable text is kept in the audit, as text');
  await until('no node plans the alert', async () => {
    const plans = await Promise.all(nodes.map(async (n) => (await api(n, 'GET', '/v1/plan', VIEWER)).body as { alerts?: { kind: string }[] }));
    return plans.every((pl) => !(pl.alerts ?? []).some((a) => a.kind === 'records-quarantined'));
  });

  // The probe went on past the last change (however fast or slow this machine is): three more rounds.
  const mark = p.rounds();
  await until('three probe rounds after the last change', async () => p.rounds() >= mark + 3);
  const { rounds, unanswered } = await p.stop();
  assert.ok(rounds >= 3, `probe rounds: ${rounds}`);
  assert.deepEqual(unanswered, [], `every probe answered (${rounds} rounds × 3 nodes)`);
  assert.deepEqual(exits, [], 'no node exited');
});
