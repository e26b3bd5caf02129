/**
 * Convergence benchmark: how long from a signal accepted by node A until every node of a
 * three-node fleet answers by the new plan. Spawns a real redis-server and three GridSteer
 * processes (one core-agnostic `--workers 0` each) on loopback, then 200 times posts a
 * `capacity` signal for us-va to node A — alternately 0 (us-va drained: clients at the
 * default location go to us-tx) and 1 (back to us-va) — and polls all three nodes over UDP
 * every 2 ms until each answers the expected region. Prints p50/p99/max and a JSON line.
 *
 * Bounded: 200 changes, each given at most 5 s; loopback only.
 * usage: node dist/bench/convergence.js [--changes 200] [--redis-server /usr/bin/redis-server]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { decodeMessage, encodeMessage } from '../gslb/dns/message.js';

const { values } = parseArgs({ options: { changes: { type: 'string', default: '200' }, 'redis-server': { type: 'string', default: 'redis-server' } } });
const CHANGES = Number(values.changes);
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const cli = join(root, 'dist', 'gslb', 'cli', 'main.js');
const INGEST = 'convergence-bench-ingest-token';

const procs: ChildProcess[] = [];
const work = mkdtempSync(join(tmpdir(), 'gridsteer-convergence-'));
const cleanup = () => {
  for (const p of procs) p.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
};
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(1));

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => res(p));
    });
  });
}

async function startRedis(): Promise<number> {
  const port = await freePort();
  const p = spawn(values['redis-server']!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
  procs.push(p);
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((res) => {
      const c = net.connect(port, '127.0.0.1', () => c.write('PING\r\n'));
      c.once('data', (d) => {
        c.destroy();
        res(d.toString().startsWith('+PONG'));
      });
      c.once('error', () => res(false));
    });
    if (ok) return port;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('convergence: redis-server did not answer PING within 10 s');
}

interface Node {
  http: string;
  dnsPort: number;
}

function startNode(configFile: string): Promise<Node> {
  const p = spawn(process.execPath, [cli, 'serve', '--config', configFile, '--workers', '0', '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0', '--log-level', 'info'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, GRIDSTEER_TOKENS: `ingest:bench:${INGEST}` },
  });
  procs.push(p);
  return new Promise((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error('convergence: a node did not log "ready" within 30 s')), 30000);
    p.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split('\n')) {
        if (!line.includes('"msg":"ready"')) continue;
        const j = JSON.parse(line) as { dns: string[]; http: string };
        const udp = j.dns.find((u) => u.startsWith('udp://'))!;
        clearTimeout(timer);
        res({ http: j.http, dnsPort: Number(udp.slice(udp.lastIndexOf(':') + 1)) });
        return;
      }
    });
    p.once('exit', (code) => rej(new Error(`convergence: a node exited (${code}) before ready`)));
  });
}

const sock = dgram.createSocket('udp4');
await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
let qid = 0;
const waiting = new Map<number, (addr: string | null) => void>();
sock.on('message', (m) => {
  try {
    const msg = decodeMessage(m);
    const a = msg.answers.find((rr) => rr.type === 1);
    const bytes = a && a.data.kind === 'raw' ? a.data.bytes : null;
    waiting.get(msg.id)?.(bytes ? [...bytes].join('.') : null);
    waiting.delete(msg.id);
  } catch {
    // not ours
  }
});

/** The first A address node answers for api.gslb.example.com (null on timeout). */
function ask(port: number): Promise<string | null> {
  const id = (qid = (qid + 1) & 0xffff);
  const q = encodeMessage({ id, flags: 0x0100, questions: [{ name: 'api.gslb.example.com.', type: 1, class: 1 }], answers: [], authority: [], additional: [] });
  return new Promise((res) => {
    const t = setTimeout(() => {
      waiting.delete(id);
      res(null);
    }, 500);
    waiting.set(id, (a) => {
      clearTimeout(t);
      res(a);
    });
    sock.send(q, port, '127.0.0.1');
  });
}

const redisPort = await startRedis();
const cfg = parse(readFileSync(join(root, 'gridsteer.yaml'), 'utf8')) as Record<string, unknown>;
cfg.geoip = { enabled: false };
cfg.http = { listen: '127.0.0.1:0' };
cfg.state = { store: 'redis', redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: 'bench' } };
symlinkSync(join(root, 'regions'), join(work, 'regions'), 'dir');
const configFile = join(work, 'gridsteer.yaml');
writeFileSync(configFile, stringify(cfg));
const nodes = await Promise.all([0, 1, 2].map(() => startNode(configFile)));

const VA = '192.0.2.10';
const TX = '192.0.2.20';
const times: number[] = [];
let failures = 0;
const t0all = Date.now();
for (let i = 0; i < CHANGES; i++) {
  const drain = i % 2 === 0;
  const want = drain ? TX : VA;
  const now = Date.now();
  const body = { signals: [{ region: 'us-va', kind: 'capacity', source: 'bench/a', key: 'gpus', observedAt: now + (i % 2), expiresAt: now + 3_600_000, value: { fraction: drain ? 0 : 1 } }] };
  const res = await fetch(`${nodes[0]!.http}/v1/signals`, { method: 'POST', headers: { authorization: `Bearer ${INGEST}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const accepted = performance.now();
  if (res.status !== 200) throw new Error(`convergence: POST /v1/signals answered ${res.status}: ${await res.text()}`);
  const done = new Set<number>();
  while (done.size < nodes.length && performance.now() - accepted < 5000) {
    const got = await Promise.all(nodes.map((n) => ask(n.dnsPort)));
    got.forEach((a, k) => {
      if (a === want) done.add(k);
    });
    if (done.size < nodes.length) await new Promise((r) => setTimeout(r, 2));
  }
  if (done.size < nodes.length) failures++;
  else times.push(performance.now() - accepted);
}
const wall = (Date.now() - t0all) / 1000;
times.sort((a, b) => a - b);
const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))] ?? NaN;
console.log(
  `convergence over ${CHANGES} changes (3 nodes, one Redis, loopback): p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${(times.at(-1) ?? NaN).toFixed(1)} ms; ` +
    `${failures} not converged within 5 s; ${wall.toFixed(1)} s wall`,
);
console.log(JSON.stringify({ date: new Date().toISOString(), changes: CHANGES, nodes: 3, p50Ms: +pct(50).toFixed(2), p99Ms: +pct(99).toFixed(2), maxMs: +(times.at(-1) ?? NaN).toFixed(2), failures }));
sock.close();
process.exit(failures > 0 ? 1 : 0);
