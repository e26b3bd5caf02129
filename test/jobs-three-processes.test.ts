/**
 * Housekeeping jobs on three GridSteer processes sharing one real Redis (issue 21, "Tests"):
 * each slot is started at most once fleet-wide; SIGKILL of the node running a slot mid-run
 * leaves that slot `incomplete` on every node, never started again; a node restarted in the
 * middle of a maintenance window answers inside it.
 *
 * The slot: audit-trim (daily, 03:23 UTC), with seeded audit entries older than its two-day
 * retention and `housekeeping.auditExport` a named pipe (FIFO) in each node's folder: the node
 * that takes the slot audits `job.start`, then blocks opening the pipe (no reader) — mid-run,
 * for as long as the test wants. The test finds it from the audit log, SIGKILLs it, and removes
 * the pipes. A day later on the test clock, another node runs the next slot: it exports and
 * trims, and every node then reports the killed slot incomplete.
 *
 * The three servers run with GRIDSTEER_TEST_CLOCK at 1000× (a day of jobs in 86.4 s), the
 * same anchor for all, so they agree on every slot. Every wait is bounded in count; no
 * assertion depends on how long anything took (a machine that takes more than LEAD to start
 * the three nodes fails the "the others were asked" check, saying so).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RedisStore } from '../gslb/state/redis-store.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';
import { spawnServer, writeTestConfig, writeTokensFile, type RunningServer, type TestConfig } from './helpers/server.js';
import { apiCall } from './helpers/api.js';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';

const VIEWER = 'jobs-procs-viewer-token-5e1f';
const RATE = 1000;
const S = 1000;
const DAY = 86_400 * S;
/** The first audit-trim slot, and the next. */
const SLOT1 = Date.UTC(2027, 2, 10, 3, 23, 0);
const SLOT2 = SLOT1 + DAY;
/** Real ms from the first spawn until SLOT1 − 5 s of test clock. */
const LEAD = 25_000;
const NAMES = ['n1', 'n2', 'n3'];

let redis: RunningRedis;
let store: RedisStore;
let clockEnv = '';
const cfgs: TestConfig[] = [];
const nodes: (RunningServer | null)[] = [];
const fifo = (i: number) => join(cfgs[i]!.dir, 'export', 'audit.jsonl');

before(async () => {
  redis = await startRedis();
  const prefix = `jp${process.pid}`;
  store = new RedisStore({ url: redis.url, prefix, pollMs: 200 });
  await store.start();
  // Audit entries three days older than SLOT1: audit-trim (retention two days, so SLOT1's own entries stay) has them to export and trim.
  for (let k = 0; k < 3; k++) await store.appendAudit({ at: SLOT1 - 3 * DAY + k, actor: 'alice', action: 'test.seed', target: `seed-${k}`, reason: 'old entry', before: null, after: null });
  for (let i = 0; i < 3; i++) {
    const cfg = writeTestConfig((c) => {
      c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
      c.state = { store: 'redis', redis: { url: redis.url, prefix }, planDebounceMs: 20 };
      c.housekeeping = { verifyHooks: false, auditRetentionDays: 2, auditExport: 'export/audit.jsonl' };
      // us-va drained every night 03:00–13:00 UTC (the restarted node must answer inside it).
      c.windows = [{ id: 'va-nightly', kind: 'maintenance', regions: ['us-va'], cron: '0 3 * * *', timezone: 'UTC', duration: '10h', reason: 'nightly work' }];
    });
    writeTokensFile(cfg.dir, [{ name: 'vic', role: 'viewer', token: VIEWER }]);
    mkdirSync(join(cfg.dir, 'export'));
    cfgs.push(cfg);
    execFileSync('mkfifo', [fifo(i)]);
  }
  clockEnv = `${SLOT1 - 5 * S}@${RATE}@${Date.now() + LEAD}`;
  for (let i = 0; i < 3; i++) nodes.push(await spawnServer({ configFile: cfgs[i]!.file, env: { GRIDSTEER_TEST_CLOCK: clockEnv, GRIDSTEER_NODE: NAMES[i]! } }));
});

after(async () => {
  await Promise.all(nodes.map((n) => n?.stop()));
  await store?.close();
  await redis?.cleanup();
  for (const c of cfgs) c.cleanup();
});

type Run = { slot: number; node: string; outcome: string; detail: string };
type Job = { name: string; lastRun: Run | null; earlier: Run[]; thisNode: { started: number; notElected: number } };
const jobsOf = async (n: RunningServer): Promise<Job> => ((await apiCall(n.http, 'GET', '/v1/jobs', VIEWER)).body as unknown as { jobs: Job[] }).jobs.find((j) => j.name === 'audit-trim')!;
const trimEntries = async () => (await store.audit(200)).filter((e) => e.target.startsWith('job:audit-trim@'));

test('three processes on one Redis: a slot starts once; SIGKILL of its runner mid-run leaves it incomplete, never run again; a restarted node answers inside the window; the next slot runs elsewhere', async () => {
  // Bounded: 600 looks 100 ms apart (60 s), until a node has started SLOT1.
  let start: { node: string } | undefined;
  for (let i = 0; i < 600 && !start; i++) {
    start = (await trimEntries()).find((e) => e.action === 'job.start')?.after as { node: string } | undefined;
    if (!start) await sleep(100);
  }
  assert.ok(start, 'a node started the audit-trim slot');
  const dead = NAMES.indexOf(start.node);
  assert.ok(dead >= 0, start.node);
  const others = [0, 1, 2].filter((i) => i !== dead);
  // The others were asked for the slot and not elected (they were up: the coordinator said no).
  for (const i of others) {
    let j: Job | undefined;
    for (let k = 0; k < 50 && !(j && j.thisNode.notElected >= 1); k++) {
      j = await jobsOf(nodes[i]!);
      if (j.thisNode.notElected < 1) await sleep(100);
    }
    assert.ok(j!.thisNode.notElected >= 1 && j!.thisNode.started === 0, `${NAMES[i]} was not elected for the slot (up before it? LEAD ${LEAD} ms): ${JSON.stringify(j!.thisNode)}`);
  }
  // Mid-run: started, no finish (blocked on the pipe). SIGKILL it.
  assert.deepEqual((await trimEntries()).map((e) => e.action), ['job.start']);
  const proc = nodes[dead]!.proc!;
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await gone;
  nodes[dead] = null;
  for (let i = 0; i < 3; i++) rmSync(fifo(i));

  // Restarted mid-window (test clock past 03:23, the window 03:00–13:00): its first plan holds the drain.
  nodes[dead] = await spawnServer({ configFile: cfgs[dead]!.file, env: { GRIDSTEER_TEST_CLOCK: clockEnv, GRIDSTEER_NODE: NAMES[dead]! } });
  for (const n of nodes) assert.equal((await askSteered(n!.udp, 'A')).region, 'us-tx', 'us-va is drained by the window on every node, the restarted one included');

  // Bounded: 1,500 looks 100 ms apart (150 s; the next slot is 86.4 s of real time after the first), until SLOT2 finished.
  const slotOf = (e: { target: string }) => e.target.slice('job:audit-trim@'.length);
  for (let i = 0; i < 1500; i++) {
    if ((await trimEntries()).some((e) => e.action === 'job.finish' && slotOf(e) === new Date(SLOT2).toISOString())) break;
    await sleep(100);
  }
  const entries = await trimEntries();
  const starts = entries.filter((e) => e.action === 'job.start').map((e) => [slotOf(e), (e.after as { node: string }).node]);
  assert.deepEqual(starts.filter(([s]) => s === new Date(SLOT1).toISOString()), [[new Date(SLOT1).toISOString(), NAMES[dead]]], 'SLOT1 was started once, by the killed node, never again');
  const second = starts.find(([s]) => s === new Date(SLOT2).toISOString());
  assert.ok(second, `SLOT2 started: ${JSON.stringify(entries)}`);
  assert.equal(starts.filter(([s]) => s === new Date(SLOT2).toISOString()).length, 1, 'SLOT2 started once');
  // It exported the seeded entries to its own file (a plain file now) and trimmed them.
  const runner = NAMES.indexOf(second[1]!);
  const exported = readFileSync(fifo(runner), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { target: string }).target);
  assert.deepEqual(exported, ['seed-0', 'seed-1', 'seed-2']);
  assert.ok(!(await store.audit(200)).some((e) => e.action === 'test.seed'), 'trimmed');
  for (let i = 0; i < 3; i++) if (i !== runner) assert.ok(!existsSync(fifo(i)), `${NAMES[i]} exported nothing`);

  // Every node reports SLOT2 ok and SLOT1 incomplete, run by the killed node.
  for (const n of nodes) {
    const j = await jobsOf(n!);
    assert.deepEqual([j.lastRun?.slot, j.lastRun?.outcome], [SLOT2, 'ok'], JSON.stringify(j));
    const first = j.earlier.find((r) => r.slot === SLOT1);
    assert.deepEqual([first?.node, first?.outcome], [NAMES[dead], 'incomplete'], JSON.stringify(j));
  }
});
