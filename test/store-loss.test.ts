/**
 * Store loss is loud (issue 20): two `serve` nodes on one real redis-server; Redis is killed,
 * its append-only files removed and started again empty (a restart without persistence)
 * while the nodes run.
 *
 * 1. both nodes report the loss: an error-level JSON log line, `gridsteer_store_data_loss` 1
 *    and `gridsteer_store_data_losses_total` 1, the `/readyz` store detail, GET /v1/store,
 *    `storeLoss` in GET /v1/regions (what the dashboard reads), a `store.loss` audit entry in
 *    the store as it is now, and `gridsteer store` (the CLI) says so, as `gridsteer status` does
 *    (citing the lost drain as [ended], not by its id), and `gridsteer explain` and GET
 *    /v1/explain cite it as [ended] too;
 * 2. the plan in force is kept: the region drained before the loss stays drained in dig's
 *    answers on both nodes, also after a new override is written to the emptied store;
 * 3. ids are not reused: the next override's id differs from the lost one's, and the new audit
 *    seqs are above every seq of the lost log;
 * 4. `gridsteer store confirm-loss` on one node resumes both (the confirmation is in the store):
 *    they plan from the store as it is now (the drain put back keeps us-va drained; ending it
 *    brings us-va back), the confirmation is audited, and a second confirm is refused 404.
 *
 * 5. the store alone (RedisStore): `onLoss: hold` hands no revision on until confirmLoss, a
 *    second confirm is `not_found`; `onLoss: accept` logs and audits the loss, then plans from
 *    the emptied store at once;
 * 6. a StateService over it logs a flush (Redis answering) as a data loss, not as the store
 *    unreachable.
 *
 * geoip is disabled: every client is at the default location (Ashburn): us-va, then us-tx.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { scrape, sumOf } from './helpers/metrics.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, writeTokensFile } from './helpers/server.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import pino from 'pino';
import { RedisStore } from '../gslb/state/redis-store.js';
import { StateService } from '../gslb/control/service.js';
import { defaultSettings } from '../gslb/policy/planner/index.js';

const OPERATOR = 'store-loss-operator-3c9d';
const VIEWER = 'store-loss-viewer-81be';

let redis: RunningRedis;
let cfg: TestConfig;
const nodes: RunningServer[] = [];

before(async () => {
  redis = await startRedis();
  cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url: redis.url, prefix: `loss${process.pid}` }, planDebounceMs: 20 };
  });
  writeTokensFile(cfg.dir, [{ name: 'olga', role: 'operator', token: OPERATOR }, { name: 'vic', role: 'viewer', token: VIEWER }]);
  for (let i = 0; i < 2; i++) nodes.push(await spawnServer({ configFile: cfg.file }));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await redis?.cleanup();
  cfg?.cleanup();
});

const api = (node: RunningServer, method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(node.http, method, path, token, body);

async function regions(): Promise<string[]> {
  return Promise.all(nodes.map(async (n) => (await askSteered(n.udp, 'A')).region));
}

/** Polls (bounded: 100 × 100 ms) until `ok` holds; fails naming `what` with the last value. */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 100; i++) {
    last = await read();
    if (ok(last)) return last;
    await sleep(100);
  }
  assert.fail(`${what}: last ${JSON.stringify(last)}\n${nodes.map((n) => n.logs.slice(-8).join('\n')).join('\n---\n')}`);
}

/** `gridsteer <args>` as a process against a node; bounded (20 s). */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [new URL('../gslb/cli/main.js', import.meta.url).pathname, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`gridsteer ${args.join(' ')} did not end within 20 s`));
    }, 20000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

type Audit = { seq: number; action: string; target: string; actor: string; reason: string };
const auditOf = async (n: RunningServer) => ((await api(n, 'GET', '/v1/audit?limit=100', VIEWER)).body.entries as Audit[]) ?? [];

let lostId = '';
let lostSeqs: number[] = [];

test('before the loss: a drain of us-va posted to node 1 moves both nodes to us-tx; ids carry the store epoch', { timeout: 60_000 }, async () => {
  assert.deepEqual(await regions(), ['us-va', 'us-va']);
  const r = await api(nodes[0]!, 'POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 0, reason: 'PDU swap' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  lostId = String(r.body.id);
  assert.match(lostId, /^ov-[0-9a-z]{6,10}-1$/, 'ov-<epoch in base 36>-<n>');
  await until('both nodes answer us-tx', regions, (v) => v.every((x) => x === 'us-tx'));
  lostSeqs = (await auditOf(nodes[0]!)).map((e) => e.seq);
  assert.equal(lostSeqs.length, 1);
});

test('Redis restarted empty: the loss is reported everywhere, the plan in force is kept', { timeout: 90_000 }, async () => {
  await redis.kill('SIGKILL');
  rmSync(join(redis.dir, 'appendonlydir'), { recursive: true, force: true });
  rmSync(join(redis.dir, 'appendonly.aof'), { force: true });
  await redis.restart();
  assert.equal(await redis.command('EXISTS', `gs:{loss${process.pid}}:ov`), 0, 'Redis came back empty');

  for (const n of nodes) {
    const st = await until('GET /v1/store reports the loss', async () => (await api(n, 'GET', '/v1/store', VIEWER)).body, (b) => b.loss !== null && b.loss !== undefined);
    const loss = st.loss as { why: string; seenRevision: number; revision: number };
    assert.match(loss.why, /epoch marker .* (is gone|changed from)|revision went back|format marker/, loss.why);
    assert.ok(loss.seenRevision >= 1, JSON.stringify(loss));
    assert.equal(st.stale, true);
    assert.equal(st.losses, 1);
    // The error log line, as JSON.
    const line = n.logs.map((l) => { try { return JSON.parse(l) as { level: number; msg: string }; } catch { return null; } }).find((j) => j && /DATA LOSS/.test(j.msg));
    assert.ok(line, `an error line about the loss:\n${n.logs.slice(-10).join('\n')}`);
    assert.equal(line.level, 50, 'logged at error level');
    // /readyz: still ready (it answers from its last plan), the detail says why.
    const readyRes = await fetch(`${n.http}/readyz`, { signal: AbortSignal.timeout(5000) });
    const ready = (await readyRes.json()) as { checks: { name: string; detail: string }[] };
    assert.equal(readyRes.status, 200, 'still ready: it answers from its last plan');
    assert.match(ready.checks.find((c) => c.name === 'store')!.detail, /DATA LOSS.*\(data loss held: ready, answering from the last plan; changes are stored, planned once confirmed\)/);
    const m = await scrape(n.http);
    assert.equal(sumOf(m, 'gridsteer_store_data_loss'), 1);
    assert.equal(sumOf(m, 'gridsteer_store_data_losses_total'), 1);
    const fleet = (await api(n, 'GET', '/v1/regions', VIEWER)).body;
    assert.match(String((fleet.storeLoss as { why?: string } | null)?.why), /prefix loss/, 'the dashboard reads it with the fleet');
  }
  const cliOut = await cli(['store', '--server', nodes[1]!.http, '--token', VIEWER]);
  assert.equal(cliOut.code, 0, cliOut.stderr);
  assert.match(cliOut.stdout, /^DATA LOSS seen .*\n.*until confirmed/m);
  // `gridsteer status` says it too, with the command that confirms it, and cites no override the store lost.
  const statusOut = await cli(['status', '--server', nodes[1]!.http, '--token', VIEWER]);
  assert.equal(statusOut.code, 0, statusOut.stderr);
  assert.match(statusOut.stdout, /^DATA LOSS seen \d{4}-\d\d-\d\dT[\d:]+Z \(.*\): Redis at .*prefix loss.*\n.*until confirmed.*\n {2}gridsteer store confirm-loss --reason/m);
  assert.match(statusOut.stdout, /^us-va .*drain to 0 by olga \(PDU swap\) \[ended\]/m, statusOut.stdout);
  assert.ok(!statusOut.stdout.includes(lostId), `the lost override ${lostId} is not cited:\n${statusOut.stdout}`);
  // `gridsteer explain` (and GET /v1/explain) neither: the plan step's reasons and each region's why say [ended].
  const explainOut = await cli(['explain', '127.0.0.1', 'api.gslb.example.com', '--server', nodes[1]!.http, '--token', VIEWER]);
  assert.equal(explainOut.code, 0, explainOut.stderr);
  assert.match(explainOut.stdout, /drain to 0 by olga \(PDU swap\)[^\n]*\[ended\]/, explainOut.stdout);
  assert.ok(!explainOut.stdout.includes(lostId), `explain cites no lost override ${lostId}:\n${explainOut.stdout}`);
  const explained = (await api(nodes[0]!, 'GET', '/v1/explain?client=127.0.0.1&name=api.gslb.example.com', VIEWER)).body;
  assert.equal(explained.answer && (explained.answer as { region: string }).region, 'us-tx', 'the held plan still answers');
  assert.ok(!JSON.stringify(explained).includes(lostId), `GET /v1/explain cites no lost override ${lostId}: ${JSON.stringify(explained).slice(0, 2000)}`);

  // The plan in force is kept: us-va stays drained for several rounds.
  for (let i = 0; i < 10; i++) {
    assert.deepEqual(await regions(), ['us-tx', 'us-tx'], `round ${i}: the drained region stays drained`);
    await sleep(150);
  }
  const audit = await auditOf(nodes[0]!);
  const losses = audit.filter((e) => e.action === 'store.loss');
  assert.ok(losses.length >= 1 && losses.length <= 2, `one store.loss entry per node that saw it: ${JSON.stringify(audit)}`);
  for (const e of audit) assert.ok(e.seq > Math.max(...lostSeqs), `audit seq ${e.seq} above the lost ones (${lostSeqs.join(', ')})`);
});

test('the next override gets a new id; the node still holds its plan until confirmed', { timeout: 60_000 }, async () => {
  const r = await api(nodes[0]!, 'POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 0, reason: 'PDU swap, put back after the loss' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.notEqual(r.body.id, lostId, 'an id of the lost store is never given again');
  assert.match(String(r.body.id), /^ov-[0-9a-z]{6,10}-1$/);
  assert.deepEqual(await regions(), ['us-tx', 'us-tx']);
  const st = (await api(nodes[1]!, 'GET', '/v1/store', VIEWER)).body;
  assert.notEqual(st.loss, null, 'still held on node 2');
});

test('confirm on node 1 resumes both nodes from the store as it is now; audited; a second confirm is 404', { timeout: 60_000 }, async () => {
  const empty = await api(nodes[0]!, 'POST', '/v1/store/confirm-loss', OPERATOR, { reason: '  ' });
  assert.equal(empty.status, 400);
  assert.equal((empty.body.error as { field?: string }).field, 'body.reason');
  const viewer = await api(nodes[0]!, 'POST', '/v1/store/confirm-loss', VIEWER, { reason: 'not mine to say' });
  assert.equal(viewer.status, 403);

  const c = await cli(['store', 'confirm-loss', '--reason', 'drain put back by hand', '--server', nodes[0]!.http, '--token', OPERATOR]);
  assert.equal(c.code, 0, c.stderr);
  assert.match(c.stdout, /^confirmed the data loss: /);
  for (const n of nodes) await until('the loss is confirmed on every node', async () => (await api(n, 'GET', '/v1/store', VIEWER)).body, (b) => b.loss === null && b.stale === false);
  const m = await scrape(nodes[1]!.http);
  assert.equal(sumOf(m, 'gridsteer_store_data_loss'), 0);
  assert.equal(sumOf(m, 'gridsteer_store_data_losses_total'), 1, 'the counter keeps the history');
  const audit = await auditOf(nodes[1]!);
  const confirm = audit.find((e) => e.action === 'store.loss.confirm');
  assert.ok(confirm, JSON.stringify(audit));
  assert.equal(confirm.actor, 'olga');
  assert.equal(confirm.reason, 'drain put back by hand');

  // Planning from the store as it is now: the drain put back holds us-va drained; ended, us-va is back.
  assert.deepEqual(await regions(), ['us-tx', 'us-tx']);
  const live = (await api(nodes[0]!, 'GET', '/v1/overrides', VIEWER)).body.overrides as { id: string }[];
  assert.equal(live.length, 1);
  const end = await api(nodes[1]!, 'DELETE', `/v1/overrides/${live[0]!.id}?reason=done`, OPERATOR);
  assert.equal(end.status, 200, JSON.stringify(end.body));
  await until('both nodes answer us-va again', regions, (v) => v.every((x) => x === 'us-va'));

  const again = await api(nodes[0]!, 'POST', '/v1/store/confirm-loss', OPERATOR, { reason: 'twice' });
  assert.equal(again.status, 404);
  assert.equal((again.body.error as { code: string }).code, 'GSLB_ERR_NOT_FOUND');
});

// The store itself (RedisStore against the same redis-server, prefixes of their own): the
// policies `hold` and `accept`, a flush of the prefix's keys as the loss.

const T0 = 1_796_000_000_000;
const drainOv = (reason: string) => ({ region: 'us-va', action: 'drain' as const, value: 0, ramp: 0, actor: 'ops/alice', reason, start: T0 });

async function flushPrefix(prefix: string): Promise<void> {
  const keys = (await redis.command('KEYS', `gs:{${prefix}}:*`)) as string[];
  if (keys.length > 0) await redis.command('DEL', ...keys);
}

async function storeUntil(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await sleep(50);
  assert.ok(ok(), what);
}

test('RedisStore, onLoss hold: the loss is held (no revision handed on) until confirmLoss; ids and seqs are new', { timeout: 60_000 }, async (t) => {
  const prefix = `hold${process.pid}`;
  const logs: string[] = [];
  const store = new RedisStore({ url: redis.url, prefix, pollMs: 100, log: (level, msg) => logs.push(`${level} ${msg}`) });
  t.after(() => store.close());
  await store.start();
  const heard: number[] = [];
  store.onRevision((r) => heard.push(r));
  const first = await store.createOverride(drainOv('before'), T0);
  const lostSeq = (await store.audit(10))[0]!.seq;
  await flushPrefix(prefix);
  // Looked for at every turn of the event loop, not every 50 ms: the override below is then
  // written at the first moment the loss is known, while its audit entry may still be on the
  // way, and must still be audited after it.
  for (let i = 0; i < 200_000 && store.status().loss == null; i++) await new Promise((r) => setImmediate(r));
  assert.notEqual(store.status().loss, null, 'the loss is seen');
  const st = store.status();
  assert.equal(st.stale, true);
  assert.equal(st.losses, 1);
  assert.match(st.detail, /DATA LOSS/);
  assert.ok(logs.some((l) => /^error state: DATA LOSS/.test(l)), logs.join('\n'));
  const heardAtLoss = heard.length;
  const second = await store.createOverride(drainOv('after'), T0 + 1);
  assert.notEqual(second.override.id, first.override.id);
  await sleep(400);
  assert.equal(heard.length, heardAtLoss, 'no revision is handed on while the loss is held');
  const audit = await store.audit(10);
  assert.deepEqual(audit.map((e) => e.action), ['override.create', 'store.loss']);
  for (const e of audit) assert.ok(e.seq > lostSeq, `seq ${e.seq} > ${lostSeq}`);
  const c = await store.confirmLoss('ops/bob', 'put back', T0 + 2);
  assert.match(c.loss.why, new RegExp(`prefix ${prefix}`));
  assert.equal(store.status().loss, null);
  assert.equal(store.status().stale, false);
  assert.equal(heard.at(-1), c.revision, 'the confirmation hands the store revision on');
  assert.equal((await store.audit(1))[0]!.action, 'store.loss.confirm');
  await assert.rejects(store.confirmLoss('ops/bob', 'again', T0 + 3), (e: Error & { code?: string }) => e.code === 'not_found');
});

test('RedisStore, onLoss accept: reported and audited as loudly, then planned from at once', { timeout: 60_000 }, async (t) => {
  const prefix = `accept${process.pid}`;
  const logs: string[] = [];
  const store = new RedisStore({ url: redis.url, prefix, pollMs: 100, onLoss: 'accept', log: (level, msg) => logs.push(`${level} ${msg}`) });
  t.after(() => store.close());
  await store.start();
  const heard: number[] = [];
  store.onRevision((r) => heard.push(r));
  await store.createOverride(drainOv('before'), T0);
  await flushPrefix(prefix);
  await storeUntil('the loss is counted', () => store.status().losses === 1);
  await storeUntil('and accepted', () => store.status().loss === null && !store.status().stale);
  assert.ok(logs.some((l) => /^error state: DATA LOSS.*onLoss is accept/.test(l)), logs.join('\n'));
  assert.equal(heard.at(-1), 0, 'the emptied store (revision 0) is handed on');
  assert.deepEqual((await store.audit(10)).map((e) => e.action), ['store.loss']);
  assert.deepEqual((await store.snapshot()).overrides, []);
});

test('StateService over RedisStore, a flush of its keys (Redis answering throughout): logged as a data loss, never as the store unreachable', { timeout: 60_000 }, async (t) => {
  const prefix = `svc${process.pid}`;
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
  const store = new RedisStore({ url: redis.url, prefix, pollMs: 100 });
  const svc = new StateService({ store, log, configHash: 'c', settings: defaultSettings([{ id: 'us-va' }, { id: 'us-tx' }]), debounceMs: 0, onPlan: () => undefined });
  t.after(() => svc.close());
  await svc.start();
  await svc.createOverride({ region: 'us-va', action: 'drain', value: 0, reason: 'before the flush' }, 'ops/alice', new Set(['us-va', 'us-tx']));
  await storeUntil('the drain is planned', () => svc.status().planRevision >= 1);
  await flushPrefix(prefix);
  await storeUntil('the loss is held', () => svc.status().loss != null);
  await storeUntil('the service says why it holds its plan', () => lines.some((l) => /^state: the store lost data/.test(l.msg)));
  // The watch runs every second: give it two more turns to say anything else.
  await sleep(2100);
  const said = lines.map((l) => `${l.level} ${l.msg}`).join('\n');
  assert.ok(!lines.some((l) => /unreachable/.test(l.msg)), `Redis answered: nothing says unreachable:\n${said}`);
  assert.equal(lines.find((l) => /^state: the store lost data/.test(l.msg))!.level, 50, 'at error level');
  assert.match(svc.status().why, /DATA LOSS/);
});
