/**
 * Drain hooks with two nodes on one real Redis (issue 6, docs/design.md "Many nodes"): the
 * hooks run on one node at a time, under the store lease `hooks`, so an operator drain
 * posted to either node reaches the region's gateway once per step, not once per node;
 * the drain, its undrain and a freeze posted to one node are in the other's status; when
 * the node holding the lease is stopped, the other takes over and the next change still
 * reaches the gateway.
 *
 * Waits are bounded polls; nothing depends on how long anything took.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { sleep } from './helpers/net.js';
import { apiCall } from './helpers/api.js';
import { exampleRegions } from './helpers/paths.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, writeTokensFile } from './helpers/server.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import { startDrainGateway, type DrainGateway } from './helpers/drain-gateway.js';

const OPERATOR = 'hooks-two-nodes-operator-a3c9';

let redis: RunningRedis;
let cfg: TestConfig;
let gw: DrainGateway;
const nodes: RunningServer[] = [];

before(async () => {
  redis = await startRedis();
  gw = await startDrainGateway();
  cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url: redis.url, prefix: `h${process.pid}` }, planDebounceMs: 20 };
    c.regionsDir = 'regions-hooked';
    // Ramps in 2 steps of 1 s (rampStepMs is the floor of 1 s), so the test sees several calls quickly.
    // …and an undrain restores over 3 s in 3 steps.
    c.policy = { ...(c.policy as Record<string, unknown>), rampStepMs: 1000, drain: { restoreMs: 3000 } };
  });
  const dir = join(cfg.dir, 'regions-hooked');
  cpSync(exampleRegions, dir, { recursive: true });
  const eu = parse(readFileSync(join(dir, 'eu-ie.yaml'), 'utf8')) as Record<string, unknown>;
  eu.drainHook = { url: gw.url, timeoutMs: 1000, retries: 1, retryBaseMs: 50 };
  writeFileSync(join(dir, 'eu-ie.yaml'), stringify(eu));
  writeTokensFile(cfg.dir, [{ name: 'olga', role: 'operator', token: OPERATOR }]);
  for (let i = 0; i < 2; i++) nodes.push(await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_NODE: `node-${i}` } }));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await gw?.close();
  await redis?.cleanup();
  cfg?.cleanup();
});

/** Calls received for eu-ie, as `share/refuse`. */
const euCalls = () => gw.calls.filter((c) => c.body?.region === 'eu-ie').map((c) => c.body!);

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (cond()) return;
    await sleep(100);
  }
  assert.fail(`${what}; gateway calls: ${JSON.stringify(euCalls().map((b) => [b.id, b.share]))}`);
}

test('a drain posted to node 1 reaches the gateway once per step (one node calls), and node 0 shows it', async () => {
  // On start the leader tells the gateway the state in force (share 1), once.
  await until(() => euCalls().length >= 1, 'the leader syncs the gateway on start');
  await sleep(500);
  assert.equal(euCalls().length, 1, 'one node calls, not both');
  const dr = await apiCall(nodes[1]!.http, 'POST', '/v1/regions/eu-ie/drain', OPERATOR, { reason: 'fibre works', ramp: 2000 });
  assert.equal(dr.status, 201, JSON.stringify(dr.body));
  await until(() => euCalls().some((b) => b.share === 0), 'the drain reaches 0 at the gateway');
  await sleep(500);
  const ids = euCalls().map((b) => b.id as string);
  assert.equal(new Set(ids).size, ids.length, `each step once: ${ids.join(', ')}`);
  assert.deepEqual(euCalls().map((b) => b.share), [1, 0.5, 0]);
  const st = (await apiCall(nodes[0]!.http, 'GET', '/v1/status', OPERATOR)).body as { regions: { id: string; share: number }[] };
  assert.equal(st.regions.find((r) => r.id === 'eu-ie')?.share, 0, 'node 0 has the drain (through Redis)');
});

test('the node holding the hooks lease stops: the other takes over and the undrain reaches the gateway', async () => {
  const leader = nodes.findIndex((n) => n.logs.some((l) => l.includes('lease hooks') && l.includes('leads')));
  assert.ok(leader >= 0, `a node logged that it leads the hooks lease:\n${nodes.map((n) => n.logs.filter((l) => l.includes('hooks')).join('\n')).join('\n---\n')}`);
  const other = nodes[1 - leader]!;
  await nodes[leader]!.stop();
  const before = euCalls().length;
  const un = await apiCall(other.http, 'DELETE', `/v1/regions/eu-ie/drain?reason=${encodeURIComponent('works done')}`, OPERATOR);
  assert.equal(un.status, 200, JSON.stringify(un.body));
  // The lease (15 s) was given up on a clean stop, so the other node takes it within a renewal period.
  await until(() => euCalls().slice(before).some((b) => b.share === 1 && b.phase === 'up'), 'the restored share reaches the gateway from the other node');
  const after = euCalls().slice(before).map((b) => b.share as number);
  assert.deepEqual(after.filter((x) => x > 0), [0.3333, 0.6667, 1].filter((x) => after.includes(x)), `slow start steps: ${JSON.stringify(after)}`);
  assert.ok(after.includes(1) && after.length <= 5, `the restore in a few calls: ${JSON.stringify(after)}`);
});
