/**
 * Scale-out with a real network between the nodes (issue 8): Redis and three GridSteer
 * nodes, each in a network namespace of its own on a private bridge (helpers/netns.ts),
 * each node on <its address>:53 and :8053 — the shape of a deployment, one host per
 * process. The test process (the root namespace) has an address on the bridge and asks
 * every node with dig and fetch over it.
 *
 * 1. All three answer the steered name alike (authoritative); an operator drain of us-va
 *    posted to node1 converges on all three (us-tx).
 * 2. node2 is cut off from Redis only (a blackhole route to Redis in its namespace: its
 *    packets to Redis are dropped, the test still reaches it): node2 keeps answering as
 *    before, /readyz 200 with the store check failing static, gridsteer_store_stale 1, a
 *    write to it 503 GSLB_ERR_STORE_UNAVAILABLE; nodes 1 and 3 stay fresh.
 * 3. A drain of us-tx posted to node1: nodes 1 and 3 converge to ca-ab; node2 keeps its last
 *    plan and answers us-tx (fail static, as documented).
 * 4. node3 is SIGKILLed: nodes 1 and 2 keep answering; queries to node3 get no answer.
 *    Throughout 2–4 a paced query loop (at least 100 rounds, every live node each round) runs:
 *    no live node leaves a query unanswered, node2 answers us-tx in every round, nodes 1 and
 *    3 switch to ca-ab once and never back.
 * 5. node2's route to Redis is healed: its store check is fresh again, it answers ca-ab,
 *    holds the plan node1 holds and takes writes again; the write node2 refused during the cut
 *    left nothing in the store (5b).
 *
 * geoip is disabled: every client is at the default location (Ashburn), ranking us-va,
 * us-tx, ca-ab, … Every wait is a bounded poll; nothing asserts on wall-clock durations.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { askSteered, DEFAULT_LOCATION, rankFrom, type SteeredReply } from './helpers/geo.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { dig } from './helpers/dig.js';
import { makeLan, startNetnsRedis, type Lan, type NetnsRedis } from './helpers/netns.js';
import { sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode, writeTokensFile } from './helpers/server.js';

const OPERATOR = 'scale-out-operator-3c9d';
const RANKING = rankFrom(DEFAULT_LOCATION, 7);
const ROLES = ['node1', 'node2', 'node3'] as const;
type Role = (typeof ROLES)[number];

let lan: Lan | undefined;
let redis: NetnsRedis | undefined;
let cfg: TestConfig | undefined;
const nodes = new Map<Role, RunningServer>();

const node = (r: Role): RunningServer => {
  const n = nodes.get(r);
  assert.ok(n, `${r} is running`);
  return n;
};

before(async () => {
  lan = await makeLan(['redis', ...ROLES]);
  redis = await startNetnsRedis(lan.member('redis'));
  const url = redis.url;
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: 100+ query rounds from one test address, none may go unanswered.
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url, prefix: `n${lan!.suffix}` }, planDebounceMs: 20 };
  });
  writeTokensFile(cfg.dir, [{ name: 'olga', role: 'operator', token: OPERATOR }]);
  await Promise.all(
    ROLES.map(async (r) => {
      const m = lan!.member(r);
      nodes.set(r, await spawnServer({ configFile: cfg!.file, wrap: m.wrap, dnsListen: [`${m.addr}:53`], httpListen: `${m.addr}:8053` }));
    }),
  );
});

after(async () => {
  await Promise.all([...nodes.values()].map((n) => n.stop()));
  await redis?.cleanup();
  cfg?.cleanup();
  const left = (await lan?.cleanup()) ?? [];
  assert.deepEqual(left, [], 'every namespace, veth and the bridge are gone');
});

const api = (r: Role, method: string, path: string, body?: unknown): Promise<ApiReply> => apiCall(node(r).http, method, path, OPERATOR, body);

/** One dig to `r`, read as a steered answer; `answered` only for an authoritative NOERROR with a region's addresses. */
async function ask(r: Role): Promise<{ reply: SteeredReply; answered: boolean }> {
  const reply = await askSteered(node(r).udp, 'A');
  const msg = reply.run.messages.at(-1);
  const answered = msg !== undefined && msg.status === 'NOERROR' && msg.flags.includes('aa') && !msg.flags.includes('tc') && /^[a-z]{2}-[a-z]{2,3}$/.test(reply.region);
  return { reply, answered };
}

/** The region `r` answers now, asserting the answer is authoritative. */
async function regionOf(r: Role): Promise<string> {
  const { reply, answered } = await ask(r);
  assert.ok(answered, `${r} answers authoritatively with a region:\n${reply.summary}`);
  return reply.region;
}

/** Polls (bounded: 60 × 100 ms) until every role in `roles` answers `want`. */
async function converge(roles: readonly Role[], want: string, what: string): Promise<void> {
  let last: string[] = [];
  for (let i = 0; i < 60; i++) {
    last = await Promise.all(roles.map(regionOf));
    if (last.every((x) => x === want)) return;
    await sleep(100);
  }
  assert.fail(`${what}: ${roles.join(', ')} answer ${last.join(', ')}, not all ${want}\n${roles.map((r) => `${r}:\n${node(r).logs.slice(-5).join('\n')}`).join('\n---\n')}`);
}

interface StoreCheck {
  status: number;
  ok: boolean;
  detail: string;
}

async function storeCheck(r: Role): Promise<StoreCheck> {
  const res = await fetch(`${node(r).http}/readyz`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as { checks: { name: string; ok: boolean; detail: string }[] };
  const c = body.checks.find((x) => x.name === 'store');
  assert.ok(c, JSON.stringify(body));
  return { status: res.status, ok: c.ok, detail: c.detail };
}

const FAIL_STATIC = /\(fail static: ready, changes refused\)$/;
const failingStatic = (c: StoreCheck) => c.status === 200 && c.ok && FAIL_STATIC.test(c.detail);
const fresh = (c: StoreCheck) => c.status === 200 && c.ok && !c.detail.includes('fail static');

/** Polls /readyz (bounded: `tries` × `everyMs`) until the store check satisfies `want`. */
async function waitStore(r: Role, want: (c: StoreCheck) => boolean, what: string, tries: number, everyMs: number): Promise<StoreCheck> {
  let c = await storeCheck(r);
  for (let i = 0; i < tries && !want(c); i++) {
    await sleep(everyMs);
    c = await storeCheck(r);
  }
  assert.ok(want(c), `${r}: ${what}; the store check says ${JSON.stringify(c)}\n${node(r).logs.slice(-8).join('\n')}`);
  return c;
}

/** gridsteer_store_stale from /metrics (null when absent). */
async function staleMetric(r: Role): Promise<number | null> {
  const text = await (await fetch(`${node(r).http}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const m = /^gridsteer_store_stale (\d+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}

// ---------------------------------------------------------------- the query loop (steps 2–4)

interface Round {
  /** Per live node: the region it answered, or `unanswered: …` with dig's output. */
  answers: Partial<Record<Role, string>>;
}

/**
 * Rounds of one dig to every live node, in parallel, 20 ms apart, until stopped (at most
 * MAX_ROUNDS). `drop(r)` takes a node out and waits for the round in flight, so no query
 * goes to a node after it is dropped.
 */
class QueryLoop {
  static readonly MAX_ROUNDS = 1000;
  readonly rounds: Round[] = [];
  private readonly live = new Set<Role>(ROLES);
  private inFlight: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private readonly done: Promise<void>;
  /** Rounds started after each drop. */
  readonly droppedAt = new Map<Role, number>();

  constructor() {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopping && this.rounds.length < QueryLoop.MAX_ROUNDS) {
      const targets = [...this.live];
      const round = Promise.all(
        targets.map(async (r) => {
          const { reply, answered } = await ask(r);
          return [r, answered ? reply.region : `unanswered: ${reply.summary}`] as const;
        }),
      );
      this.inFlight = round;
      this.rounds.push({ answers: Object.fromEntries(await round) });
      await sleep(20);
    }
  }

  async drop(r: Role): Promise<void> {
    this.live.delete(r);
    await this.inFlight;
    this.droppedAt.set(r, this.rounds.length);
  }

  /** Stops once at least `min` rounds are done, `minAfterLastDrop` of them after the last drop (bounded by MAX_ROUNDS). */
  async stopAfter(min: number, minAfterLastDrop: number): Promise<void> {
    const lastDrop = Math.max(0, ...this.droppedAt.values());
    for (let i = 0; i < 6000 && this.rounds.length < QueryLoop.MAX_ROUNDS; i++) {
      if (this.rounds.length >= min && this.rounds.length - lastDrop >= minAfterLastDrop) break;
      await sleep(10);
    }
    this.stopping = true;
    await this.done;
  }
}

let loop: QueryLoop | undefined;
/** What node2 answered when it was cut off. */
let beforeCut = '';
/** The reply to the write posted to node2 while it was cut off. */
let refusedWrite: ApiReply | undefined;

// ---------------------------------------------------------------- the steps

test('1: three nodes in their own namespaces answer alike and authoritatively; a drain posted to node1 converges on all', async (t) => {
  assert.deepEqual(RANKING.slice(0, 3), ['us-va', 'us-tx', 'ca-ab']);
  const l = lan!;
  t.diagnostic(`LAN ${l.subnet}: test ${l.hostAddr}, ${[...l.members.values()].map((m) => `${m.role} ${m.addr} (${m.ns})`).join(', ')}`);
  for (const r of ROLES) {
    const m = l.member(r);
    assert.deepEqual(node(r).udp, { host: m.addr, port: 53 }, `${r} serves DNS on its own address, port 53`);
    assert.equal(node(r).http, `http://${m.addr}:8053`);
    assert.ok(fresh(await storeCheck(r)), `${r}: the store check is fresh`);
  }
  const first = await Promise.all(ROLES.map(ask));
  for (const [i, a] of first.entries()) {
    const msg = a.reply.run.msg;
    assert.ok(msg.flags.includes('aa'), `${ROLES[i]} answers authoritatively:\n${a.reply.summary}`);
    assert.equal(msg.status, 'NOERROR');
    assert.deepEqual(msg.question, [{ name: 'api.gslb.example.com.', class: 'IN', type: 'A' }]);
    assert.ok(msg.answer.every((rr) => rr.name === 'api.gslb.example.com.' && rr.ttl > 0), a.reply.summary);
  }
  assert.deepEqual(first.map((a) => a.reply.region), ['us-va', 'us-va', 'us-va']);
  assert.equal(new Set(first.map((a) => a.reply.addrs.join(','))).size, 1, 'the same addresses from all three');

  const d = await api('node1', 'POST', '/v1/regions/us-va/drain', { reason: 'netns: rack move' });
  assert.equal(d.status, 201, JSON.stringify(d.body));
  await converge(ROLES, 'us-tx', 'after the drain of us-va posted to node1');
});

test('2: node2 cut off from Redis keeps answering, fails static (ready, stale, writes 503); nodes 1 and 3 stay fresh', async (t) => {
  const l = lan!;
  beforeCut = await regionOf('node2');
  assert.equal(beforeCut, 'us-tx');
  loop = new QueryLoop();
  await l.cut('node2', redis!.addr);
  // The cut is of node2's path to Redis only: its packets to the test still leave by eth0.
  const route = await l.exec('node2', ['ip', 'route', 'get', redis!.addr]);
  assert.match(route.stdout + route.stderr, /blackhole|invalid argument/i, `node2 has no route to Redis:\n${route.stdout}${route.stderr}`);
  const back = await l.exec('node2', ['ip', 'route', 'get', l.hostAddr]);
  assert.match(back.stdout, / dev eth0 /, `node2 still routes to the test:\n${back.stdout}${back.stderr}`);

  // ioredis sees no error on a silent drop: the poll's next command times out (1 s poll + 2 s bound).
  const c2 = await waitStore('node2', failingStatic, 'fails static after the cut', 40, 250);
  t.diagnostic(`node2 store check: ${c2.detail}`);
  assert.equal(await staleMetric('node2'), 1, 'node2: gridsteer_store_stale 1');
  assert.equal(await regionOf('node2'), beforeCut, 'node2 answers as before the cut');

  refusedWrite = await api('node2', 'POST', '/v1/regions/eu-ie/drain', { reason: 'netns: during the cut (refused)' });
  assert.equal(refusedWrite.status, 503, JSON.stringify(refusedWrite.body));
  assert.equal((refusedWrite.body.error as { code: string }).code, 'GSLB_ERR_STORE_UNAVAILABLE');

  for (const r of ['node1', 'node3'] as const) {
    const c = await storeCheck(r);
    assert.ok(fresh(c), `${r} stays fresh: ${c.detail}`);
    assert.equal(await staleMetric(r), 0, `${r}: gridsteer_store_stale 0`);
  }
});

test('3: a change posted to node1 converges on nodes 1 and 3; node2 keeps its last plan', async () => {
  const d = await api('node1', 'POST', '/v1/regions/us-tx/drain', { reason: 'netns: second drain' });
  assert.equal(d.status, 201, JSON.stringify(d.body));
  await converge(['node1', 'node3'], 'ca-ab', 'after the drain of us-tx posted to node1');
  for (let i = 0; i < 5; i++) {
    assert.equal(await regionOf('node2'), beforeCut, 'node2 fails static: it answers from its last plan');
    await sleep(100);
  }
  assert.ok(failingStatic(await storeCheck('node2')), 'node2 still fails static');
});

test('4: node3 SIGKILLed: nodes 1 and 2 keep answering, node3 answers nothing; no live node left a query unanswered', async (t) => {
  const n3 = node('node3');
  const proc = n3.proc!;
  await loop!.drop('node3');
  const gone = new Promise<boolean>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve(true);
    const timer = setTimeout(() => resolve(false), 5000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  proc.kill('SIGKILL');
  assert.ok(await gone, 'node3 exited within 5 s of SIGKILL');
  assert.equal(proc.signalCode, 'SIGKILL');

  const r3 = await dig(n3.udp, ['+tries=1', 'api.gslb.example.com', 'A'], { timeSeconds: 1 });
  assert.equal(r3.messages.length, 0, `no DNS reply from the killed node3:\n${r3.stdout}${r3.stderr}`);
  assert.notEqual(r3.code, 0, 'dig fails');
  t.diagnostic(`dig to node3 after the kill: exit ${r3.code}, ${/connection refused/.test(r3.stdout) ? 'port unreachable (its namespace remains, nothing listens)' : 'timed out'}`);
  await assert.rejects(fetch(`${n3.http}/readyz`, { signal: AbortSignal.timeout(2000) }), 'node3 HTTP answers nothing either');

  await loop!.stopAfter(100, 20);
  const rounds = loop!.rounds;
  const killedAt = loop!.droppedAt.get('node3')!;
  t.diagnostic(`${rounds.length} rounds, ${rounds.reduce((s, r) => s + Object.keys(r.answers).length, 0)} queries; node3 dropped after round ${killedAt}`);
  assert.ok(rounds.length >= 100, `at least 100 rounds (${rounds.length})`);
  assert.ok(rounds.length - killedAt >= 20, 'at least 20 rounds after the kill');

  const unanswered = rounds.flatMap((rd, i) => Object.entries(rd.answers).filter(([, a]) => a.startsWith('unanswered')).map(([r, a]) => `round ${i} ${r}: ${a}`));
  assert.deepEqual(unanswered, [], 'every live node answered every query of the loop');
  rounds.forEach((rd, i) => {
    const live = i < killedAt ? ROLES : (['node1', 'node2'] as const);
    assert.deepEqual(Object.keys(rd.answers).sort(), [...live].sort(), `round ${i} asked every live node and no other`);
    assert.equal(rd.answers.node2, beforeCut, `round ${i}: node2 answers from its last plan`);
  });
  for (const r of ['node1', 'node3'] as const) {
    const seq = rounds.map((rd) => rd.answers[r]).filter((x): x is string => x !== undefined);
    const switched = seq.indexOf('ca-ab');
    assert.ok(seq.every((x) => x === 'us-tx' || x === 'ca-ab'), `${r} answers us-tx or ca-ab: ${[...new Set(seq)].join(', ')}`);
    if (switched >= 0) assert.ok(seq.slice(switched).every((x) => x === 'ca-ab'), `${r} switched to ca-ab once and never back`);
  }
  assert.equal(rounds.at(-1)!.answers.node1, 'ca-ab');
});

test('5: node2 healed: it resynchronises, answers like node1, takes writes again', async (t) => {
  await lan!.heal('node2', redis!.addr);
  // Recovery runs over node2's old connection: after a silent drop TCP retransmits on a
  // doubling backoff, so node2 hears from Redis at the first retransmission after the heal.
  // Bounded at 60 s (a few seconds is usual: the cut lasts ~15 s).
  const t0 = Date.now();
  const c = await waitStore('node2', fresh, 'the store check is fresh again after the heal', 240, 250);
  t.diagnostic(`node2 fresh again ${Date.now() - t0} ms after the heal: ${c.detail}`);
  assert.equal(await staleMetric('node2'), 0, 'node2: gridsteer_store_stale 0');
  await converge(['node1', 'node2'], 'ca-ab', 'node2 after the heal');

  let versions: string[] = [];
  for (let i = 0; i < 30; i++) {
    const plans = await Promise.all((['node1', 'node2'] as const).map((r) => api(r, 'GET', '/v1/plan')));
    versions = plans.map((p) => String((p.body as { version: unknown }).version));
    if (versions[0] === versions[1]) break;
    await sleep(500);
  }
  assert.equal(versions[0], versions[1], `node1 and node2 hold the same plan version: ${versions.join(', ')}`);

  const w = await api('node2', 'POST', '/v1/regions/sa-sao/drain', { reason: 'netns: after the heal' });
  assert.equal(w.status, 201, `node2 takes writes again: ${JSON.stringify(w.body)}`);
  let seen: string[] = [];
  for (let i = 0; i < 30; i++) {
    seen = ((await api('node1', 'GET', '/v1/overrides')).body.overrides as { reason: string }[]).map((o) => o.reason);
    if (seen.includes('netns: after the heal')) break;
    await sleep(100);
  }
  assert.ok(seen.includes('netns: after the heal'), `node1 sees node2's write: ${seen.join(', ')}`);
});

/**
 * Found by this suite: under a silent partition (no RST) ioredis keeps the connection
 * `ready`, so the store sends the write into the socket; the command times out and the API
 * answers 503 "nothing was changed", but the bytes wait in node2's TCP send queue and TCP
 * delivers them when the path heals. The override scripts now carry a deadline in Redis
 * time (gslb/state/redis-store.ts DEADLINE_GUARD) and write nothing when they run after it.
 */
test(
  '5b: the write node2 refused with 503 during the cut left nothing in the store after the heal',
  async () => {
    assert.equal(refusedWrite?.status, 503, 'step 2 posted a write that node2 refused');
    const ov = await api('node1', 'GET', '/v1/overrides');
    assert.equal(ov.status, 200, JSON.stringify(ov.body));
    const live = (ov.body.overrides as { region: string; reason: string }[]).map((o) => `${o.region}: ${o.reason}`);
    assert.ok(!live.includes('eu-ie: netns: during the cut (refused)'), `the refused drain of eu-ie is not in force: ${live.join('; ')}`);
    const audit = ((await api('node1', 'GET', '/v1/audit')).body.entries as { action: string; reason: string }[]).map((a) => `${a.action} ${a.reason}`);
    assert.ok(!audit.some((a) => a.includes('during the cut')), `and not audited: ${audit.join('; ')}`);
  },
);
