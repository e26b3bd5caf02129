/**
 * `serve --workers 2`: the primary forks two DNS worker processes; answers come from the
 * workers over UDP and TCP, /metrics on the primary adds up the counters of both workers
 * (the response-time histogram, decisions and decision-cache results among them, each
 * agreeing with the query counters), the query log (sample rate 1) has a line per reply, and
 * SIGTERM stops the primary and its workers.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dig, digSummary } from './helpers/dig.js';
import { VIRGINIA_A, VIRGINIA_AAAA, sorted } from './helpers/fleet.js';
import { QUERIES, describeMetric, scrape, sumOf, type Sample } from './helpers/metrics.js';
import { sleep, tcpExchange, udpExchange } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, withRateLimitMode } from './helpers/server.js';
import { QTYPE, RCODE, buildQuery, parseMessage, rdataAddress } from './helpers/wire.js';

let cfg: TestConfig;
let srv: RunningServer;
const INGEST = 'workers-burst-ingest-token';
const VIEWER = 'workers-burst-viewer-token';
const asViewer = { authorization: `Bearer ${VIEWER}` };

before(async () => {
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: hundreds of queries from 127.0.0.1 counted exactly across the workers.
    withRateLimitMode(c, 'off');
    c.log = { queries: { sampleRate: 1 } };
  });
  srv = await spawnServer({ configFile: cfg.file, workers: 2, readyTimeoutMs: 60000, env: { GRIDSTEER_TOKENS: `ingest:burst:${INGEST},viewer:watch:${VIEWER}` } });
});

after(async () => {
  await srv?.stop();
  // Workers that outlived their primary (a failure reported below) must not linger.
  for (const pid of workerPids.filter(alive)) process.kill(pid, 'SIGKILL');
  cfg?.cleanup();
});

/** PIDs of the live processes whose parent is `ppid` (from /proc). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // pid (comm) state ppid ...; comm may contain spaces, so split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid && fields[0] !== 'Z') out.push(Number(d));
    } catch {
      // the process went away meanwhile
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

const N = 20;
let workerPids: number[] = [];

test('the primary has forked two worker processes', () => {
  assert.ok(srv.proc?.pid, 'spawned');
  workerPids = childrenOf(srv.proc.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
    } catch {
      return false;
    }
  });
  assert.equal(workerPids.length, 2, `node children of ${srv.proc.pid}: ${JSON.stringify(workerPids)}`);
});

test('dig gets authoritative answers from the workers over UDP and TCP', async () => {
  const udp = await dig(srv.udp, ['api.gslb.example.com', 'A']);
  assert.equal(udp.msg.status, 'NOERROR', digSummary(udp));
  assert.ok(udp.msg.flags.includes('aa'), digSummary(udp));
  assert.deepEqual(sorted(udp.msg.answer.map((x) => x.data)), VIRGINIA_A, digSummary(udp));
  const tcp = await dig(srv.tcp, ['+tcp', 'api.gslb.example.com', 'AAAA']);
  assert.equal(tcp.msg.status, 'NOERROR', digSummary(tcp));
  assert.deepEqual(tcp.msg.answer.map((x) => x.data), VIRGINIA_AAAA, digSummary(tcp));
});

test(`/metrics adds up both workers: ${N} UDP and ${N} TCP queries from distinct sockets are all counted`, async () => {
  const base = await scrape(srv.http);
  const udp0 = sumOf(base, QUERIES, { transport: 'udp' });
  const tcp0 = sumOf(base, QUERIES, { transport: 'tcp' });

  // Each query from a fresh socket (a new source port, a new TCP connection), so that the
  // kernel or the cluster scheduler spreads them over both workers.
  for (let i = 0; i < N; i++) {
    const reply = await udpExchange(srv.udp, buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A }));
    assert.ok(reply, `UDP query ${i + 1} unanswered`);
    const m = parseMessage(reply);
    assert.equal(m.rcode, RCODE.NOERROR);
    assert.deepEqual(sorted(m.answers.map(rdataAddress)), VIRGINIA_A);
  }
  for (let i = 0; i < N; i++) {
    const [reply] = await tcpExchange(srv.tcp, [buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.AAAA })]);
    assert.ok(reply, `TCP query ${i + 1} unanswered`);
    assert.deepEqual(parseMessage(reply).answers.map(rdataAddress), VIRGINIA_AAAA);
  }

  // Counters are collected from the workers at scrape time; allow a few scrapes for the
  // last increments to land (bounded), then require the exact totals.
  let udpDelta = -1;
  let tcpDelta = -1;
  let last = base;
  for (let attempt = 0; attempt < 10; attempt++) {
    last = await scrape(srv.http);
    udpDelta = sumOf(last, QUERIES, { transport: 'udp' }) - udp0;
    tcpDelta = sumOf(last, QUERIES, { transport: 'tcp' }) - tcp0;
    if (udpDelta === N && tcpDelta === N) break;
    await sleep(300);
  }
  assert.equal(udpDelta, N, `UDP queries counted across workers\n${describeMetric(last, QUERIES)}`);
  assert.equal(tcpDelta, N, `TCP queries counted across workers\n${describeMetric(last, QUERIES)}`);
});

test('/metrics: one response time per reply, one decision and one cache lookup per steered answer; the query log has a line per reply', async () => {
  // Every query so far was answered by a worker: the histogram counts each reply once, as the
  // query counters do, and each steered answer has one decision class and one cache result.
  const H = 'gridsteer_dns_response_duration_seconds';
  const ANSWERS = 'gridsteer_dns_answers_total';
  const totals = (m: Sample[]) => ({
    replies: sumOf(m, QUERIES),
    timed: sumOf(m, `${H}_count`),
    inf: sumOf(m, `${H}_bucket`, { le: '+Inf' }),
    answers: sumOf(m, ANSWERS),
    decisions: sumOf(m, 'gridsteer_dns_decisions_total'),
    lookups: sumOf(m, 'gridsteer_dns_decision_cache_lookups_total'),
  });
  const m = await scrape(srv.http);
  const t = totals(m);
  assert.ok(t.replies >= 2 * N + 2, `the queries of the tests above were counted: ${JSON.stringify(t)}`);
  assert.equal(t.timed, t.replies, `histogram count = replies\n${describeMetric(m, `${H}_count`)}\n${describeMetric(m, QUERIES)}`);
  assert.equal(t.inf, t.timed, 'le="+Inf" = count');
  const buckets = m.filter((s) => s.name === `${H}_bucket`).sort((a, b) => Number(a.labels.le) - Number(b.labels.le));
  assert.equal(buckets.length, 15, `one bucket per bound (5 µs … 100 ms) and +Inf: ${describeMetric(m, `${H}_bucket`)}`);
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'cumulative buckets');
  assert.ok(sumOf(m, `${H}_sum`) > 0, 'the sum of response times');
  // Every query of this suite asked api.gslb.example.com A or AAAA: all steered, all nearest (us-va).
  assert.equal(t.answers, t.replies, `every reply was a steered answer\n${describeMetric(m, ANSWERS)}`);
  assert.equal(t.decisions, t.answers, `decisions sum to the answers\n${describeMetric(m, 'gridsteer_dns_decisions_total')}`);
  assert.equal(sumOf(m, 'gridsteer_dns_decisions_total', { name: 'api.gslb.example.com', reason: 'nearest' }), t.answers);
  assert.equal(t.lookups, t.answers, `one cache lookup per steered answer\n${describeMetric(m, 'gridsteer_dns_decision_cache_lookups_total')}`);
  assert.ok(sumOf(m, 'gridsteer_dns_decision_cache_lookups_total', { result: 'hit' }) > 0, 'repeated queries from one cell hit the cache');

  // The query log: a JSON line per reply (sample rate 1), from the workers. Lines reach our
  // pipe a little after the replies: wait for them (bounded: 50 × 100 ms).
  const queryLines = () => srv.logs.filter((l) => l.includes('"module":"querylog"')).map((l) => JSON.parse(l) as Record<string, unknown>);
  for (let i = 0; i < 50 && queryLines().length < t.replies; i++) await sleep(100);
  const lines = queryLines();
  assert.equal(lines.length, t.replies, `one query log line per reply:\n${lines.slice(-3).map((l) => JSON.stringify(l)).join('\n')}`);
  const udpA = lines.find((l) => l.transport === 'udp' && l.type === 'A');
  assert.ok(udpA, 'a UDP A query is logged');
  assert.deepEqual(
    { ...udpA, level: undefined, time: undefined, pid: undefined },
    { level: undefined, time: undefined, pid: undefined, role: 'dns-worker', module: 'querylog', msg: 'query', client: '127.0.0.0/24', clientFrom: 'source', transport: 'udp', name: 'api.gslb.example.com.', type: 'A', rcode: 'NOERROR', region: 'us-va', reason: 'nearest' },
  );
  assert.ok(lines.some((l) => l.transport === 'tcp' && l.type === 'AAAA' && l.region === 'us-va'), 'a TCP AAAA query is logged');
  assert.ok(workerPids.length === 0 || lines.every((l) => workerPids.includes(l.pid as number)), 'logged by the workers');
});

test('demand: the steered answers of both workers reach the 10-second buckets (GET /v1/demand)', async () => {
  // Every query of the test above and before it was steered (api, A or AAAA) and answered
  // by one of the two workers; the primary collects both workers' counts each 10 s.
  let total = 0;
  let rows: { home: string; name: string; queries: number }[] = [];
  for (let i = 0; i < 50 && total < 2 * N; i++) {
    const res = await fetch(`${srv.http}/v1/demand?buckets=30`, { headers: asViewer, signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200, 'viewer routes are open without tokens');
    rows = ((await res.json()) as { buckets: typeof rows }).buckets;
    total = rows.filter((r) => r.name === 'api.gslb.example.com' && r.home === 'us-va').reduce((n, r) => n + r.queries, 0);
    if (total < 2 * N) await sleep(500);
  }
  assert.ok(total >= 2 * N, `at least the ${2 * N} steered queries of the test above were counted: ${JSON.stringify(rows)}`);
});

test('/healthz and /readyz answer 200 with workers', async () => {
  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${srv.http}${path}`, { signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200, `${path}: ${await res.text()}`);
  }
});

test('a burst of plan changes: both workers end on the newest plan (the primary keeps one state message per worker in flight, and sends the newest last)', async () => {
  const now = Date.now();
  // 120 signals, each a new fact (another load reading): each store write plans again.
  const posts = Array.from({ length: 120 }, (_, i) =>
    fetch(`${srv.http}/v1/signals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST}`, 'content-type': 'application/json' },
      body: JSON.stringify({ signals: [{ region: 'us-tx', kind: 'load.metrics', source: 'burst', key: `k${i % 6}`, observedAt: now - 60_000 + i, expiresAt: now + 600_000, value: { queueDepth: i % 9, kvCacheUse: (i % 10) / 10 } }] }),
      signal: AbortSignal.timeout(20_000),
    }).then((r) => r.status),
  );
  assert.deepEqual([...new Set(await Promise.all(posts))], [200]);
  let detail = '';
  for (let i = 0; i < 100; i++) {
    const plan = (await (await fetch(`${srv.http}/v1/plan`, { headers: asViewer })).json()) as { version: string };
    const ready = (await (await fetch(`${srv.http}/readyz`)).json()) as { checks: { name: string; ok: boolean; detail: string }[] };
    const w = ready.checks.find((c) => c.name === 'dns-workers');
    detail = `${plan.version}: ${JSON.stringify(w)}`;
    if (w?.ok && w.detail.includes(plan.version)) return;
    await sleep(100);
  }
  assert.fail(`the workers did not end on the newest plan: ${detail}`);
});

test('SIGTERM stops the primary (exit 0) and both workers', async () => {
  const pids = workerPids.length ? workerPids : childrenOf(srv.proc!.pid!);
  assert.ok(pids.length > 0, 'workers found before stopping');
  const exit = await srv.stop();
  assert.equal(exit.killed, false, 'SIGTERM alone must stop the server');
  assert.equal(exit.code, 0, `exit: ${JSON.stringify(exit)}\n${srv.logs.slice(-10).join('\n')}`);
  let left = pids.filter(alive);
  for (let i = 0; i < 20 && left.length > 0; i++) {
    await sleep(250);
    left = pids.filter(alive);
  }
  assert.deepEqual(left, [], 'no worker outlives the primary');
});
