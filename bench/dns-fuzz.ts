/**
 * The DNS fuzz campaign (issue 20): fuzz packets of test/helpers/dns-fuzz.ts at a running
 * GridSteer on loopback, over UDP and TCP (framing lies included), while a probe asks a valid
 * question every 100 ms; reports crashes, probe stalls, RSS over time and what the server
 * counted. Loopback only; every wait is bounded; the server it starts is stopped at the end.
 *
 *   npm run build && node dist/bench/dns-fuzz.js [options]
 *
 *   --packets N      fuzz packets in all (default 1000000), UDP and TCP together
 *   --tcp-share F    share of them sent over TCP (default 0.1), 50 per connection
 *   --rate PPS       fuzz packets per second, paced (default 10000)
 *   --seed S         generator seed (default 20261202); a packet is named by (seed, index)
 *   --workers N      DNS worker processes of the server it starts (default 2)
 *   --config FILE    start the server with this configuration instead of the example's
 *   --set PATH=VAL   change the configuration before starting (YAML value), repeatable, e.g.
 *                    --set dns.rateLimit.mode=off (a setting this build does not know stops
 *                    the server with a config error naming it)
 *   --report FILE    also write the report as JSON
 *
 * Response rate limiting (dns.rateLimit, on by default in a server) is set off unless a --set
 * or the --config file says otherwise: every fuzz packet and probe comes from 127.0.0.1, and
 * this measures the parser and the server's health, not the limiter (test/dns-ratelimit does).
 * The report's `config.rateLimitMode` says which mode ran.
 *
 * The probe runs in a worker thread of its own, so the generator's work does not delay it.
 * Crashes: the server process exiting, or any worker exiting (the supervisor logs
 * "dns worker exited"), or any log line at error level. A probe stall: a probe answered after
 * more than 100 ms, or not at all within 1 s (counted apart). RSS: the primary plus its
 * workers (/proc), every 5 s.
 */
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { connect } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { parse } from 'yaml';
import { fuzzPacket, fuzzRng, fuzzTcpWrites } from '../test/helpers/dns-fuzz.js';
import { writeTestConfig, type ConfigObject } from '../test/helpers/server.js';

const { values: o } = parseArgs({
  args: isMainThread ? process.argv.slice(2) : [],
  options: {
    packets: { type: 'string', default: '1000000' },
    'tcp-share': { type: 'string', default: '0.1' },
    rate: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '20261202' },
    workers: { type: 'string', default: '2' },
    config: { type: 'string' },
    set: { type: 'string', multiple: true, default: [] },
    report: { type: 'string' },
  },
  strict: true,
});
const PACKETS = Number(o.packets);
const TCP_SHARE = Number(o['tcp-share']);
const RATE = Number(o.rate);
const SEED = Number(o.seed);
const WORKERS = Number(o.workers);
const PER_CONN = 50;
const MAX_TOTAL_MS = Math.max(120_000, (PACKETS / RATE) * 3000 + 120_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cli = fileURLToPath(new URL('../gslb/cli/main.js', import.meta.url));

/** Sets `a.b.c` in a config object to a YAML-parsed value. */
function setPath(cfg: ConfigObject, assignment: string): void {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new Error(`--set ${assignment}: use PATH=VALUE`);
  const keys = assignment.slice(0, eq).split('.');
  let at = cfg as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) {
    if (typeof at[k] !== 'object' || at[k] === null) at[k] = {};
    at = at[k] as Record<string, unknown>;
  }
  at[keys.at(-1)!] = parse(assignment.slice(eq + 1)) as unknown;
}

/** The dns.rateLimit.mode the server ran with (for the report). */
let rateLimitMode = 'off';

const makeConfig = () =>
  writeTestConfig((c) => {
    if (o.config) for (const k of Object.keys(c)) delete c[k];
    if (o.config) Object.assign(c, parse(readFileSync(o.config, 'utf8')) as ConfigObject);
    const dns = ((c as Record<string, unknown>).dns ??= {}) as Record<string, unknown>;
    const rl = (dns.rateLimit ??= {}) as Record<string, unknown>;
    rl.mode ??= 'off';
    for (const s of o.set) setPath(c, s);
    rateLimitMode = String(rl.mode);
  });

function rssOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kb ? Number(kb[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const QUERY = (id: number) =>
  Buffer.concat([Buffer.from([id >> 8, id & 0xff, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from([3, 97, 112, 105, 4, 103, 115, 108, 98, 7, 101, 120, 97, 109, 112, 108, 101, 3, 99, 111, 109, 0, 0, 1, 0, 1])]);

interface ProbeResult {
  rtts: number[];
  stalls: number;
  lost: number;
  tcpProbes: number;
  tcpProbeFailures: number;
}

/**
 * The probe (in a worker thread): a valid query every 100 ms over UDP (its own socket), and
 * over TCP every second, until told to stop; posts its ProbeResult.
 */
async function runProbe(host: string, port: number): Promise<void> {
  const probe = createSocket('udp4');
  await new Promise<void>((r) => probe.bind(0, host, () => r()));
  const res: ProbeResult = { rtts: [], stalls: 0, lost: 0, tcpProbes: 0, tcpProbeFailures: 0 };
  let probeId = 1;
  const pendingProbes = new Map<number, number>();
  probe.on('message', (m: Buffer) => {
    const id = m.readUInt16BE(0);
    const at = pendingProbes.get(id);
    if (at === undefined) return;
    pendingProbes.delete(id);
    const ms = performance.now() - at;
    res.rtts.push(ms);
    if (ms > 100) res.stalls++;
  });
  const probeTimer = setInterval(() => {
    const now = performance.now();
    for (const [id, at] of pendingProbes) {
      if (now - at > 1000) {
        pendingProbes.delete(id);
        res.lost++;
      }
    }
    const id = probeId++ & 0xffff;
    pendingProbes.set(id, now);
    probe.send(QUERY(id), port, host);
  }, 100);
  const tcpProbeTimer = setInterval(() => {
    const t0 = performance.now();
    const s = connect({ host, port });
    const q = QUERY(0x4242);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(q.length);
    let got = Buffer.alloc(0);
    let finished = false;
    const done = (ok: boolean) => {
      if (finished) return;
      finished = true;
      s.destroy();
      res.tcpProbes++;
      if (!ok) res.tcpProbeFailures++;
      else {
        const ms = performance.now() - t0;
        res.rtts.push(ms);
        if (ms > 100) res.stalls++;
      }
    };
    const timer = setTimeout(() => done(false), 1000);
    s.on('connect', () => s.write(Buffer.concat([len, q])));
    s.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 2 && got.length >= 2 + got.readUInt16BE(0)) {
        clearTimeout(timer);
        done(true);
      }
    });
    s.on('error', () => {
      clearTimeout(timer);
      done(false);
    });
  }, 1000);
  parentPort!.once('message', () => {
    clearInterval(probeTimer);
    clearInterval(tcpProbeTimer);
    setTimeout(() => {
      res.lost += pendingProbes.size;
      probe.close();
      parentPort!.postMessage(res);
    }, 1000);
  });
}

async function main(): Promise<number> {
  const started = Date.now();
  const cfg = makeConfig();
  const server = spawn(process.execPath, [cli, 'serve', '--config', cfg.file, '--workers', String(WORKERS), '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Ctrl-C or a kill of the campaign stops the server it started.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      server.kill('SIGKILL');
      cfg.cleanup();
      process.exit(130);
    });
  }
  const logs: string[] = [];
  let exited: string | null = null;
  server.on('exit', (code, signal) => (exited = `${signal ?? code}`));
  const onData = (d: Buffer) => logs.push(...d.toString('utf8').split('\n').filter((l) => l !== ''));
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  let ready: { dns: string[]; http: string } | null = null;
  for (let i = 0; i < 600 && !ready && exited === null; i++) {
    const line = logs.find((l) => l.includes('"msg":"ready"'));
    if (line) ready = JSON.parse(line) as { dns: string[]; http: string };
    else await sleep(50);
  }
  if (!ready) {
    process.stderr.write(`dns-fuzz: the server did not start (${exited ?? 'no ready line in 30 s'}):\n${logs.slice(-20).join('\n')}\n`);
    server.kill('SIGKILL');
    cfg.cleanup();
    return 1;
  }
  const port = Number(/:(\d+)$/.exec(ready.dns.find((d) => d.startsWith('udp://'))!)![1]);
  const host = '127.0.0.1';
  const watchdog = setTimeout(() => {
    process.stderr.write(`dns-fuzz: gave up after ${MAX_TOTAL_MS} ms\n`);
    server.kill('SIGKILL');
    process.exit(2);
  }, MAX_TOTAL_MS);
  watchdog.unref();

  // RSS every 5 s.
  const rss: { t: number; primary: number; workers: number }[] = [];
  const sampleRss = () => {
    const pid = server.pid!;
    rss.push({ t: Math.round((Date.now() - started) / 1000), primary: rssOf(pid), workers: childrenOf(pid).reduce((n, c) => n + rssOf(c), 0) });
  };
  sampleRss();
  const rssTimer = setInterval(sampleRss, 5000);

  // The probe, in a thread of its own.
  const prober = new Worker(new URL(import.meta.url), { workerData: { probe: true, host, port } });
  const probeDone = new Promise<ProbeResult>((resolve, reject) => {
    prober.once('message', (m: ProbeResult) => resolve(m));
    prober.once('error', reject);
  });
  // The fuzz: UDP paced by batches on 4 sockets; TCP connections of PER_CONN packets, at most 8 open.
  const socks: Socket[] = [];
  let udpReplies = 0;
  for (let i = 0; i < 4; i++) {
    const s = createSocket('udp4');
    s.on('message', () => udpReplies++);
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.bind(0, host, () => r()));
    socks.push(s);
  }
  const r = fuzzRng(SEED);
  const tcpEvery = TCP_SHARE > 0 ? Math.max(1, Math.round(PER_CONN / TCP_SHARE)) : Infinity;
  let sent = 0;
  let udpSent = 0;
  let tcpSent = 0;
  let tcpConns = 0;
  let openConns = 0;
  const BATCH = 200;
  const t0 = performance.now();
  let lastReport = t0;
  while (sent < PACKETS && exited === null) {
    for (let k = 0; k < BATCH && sent < PACKETS; k++) {
      if (TCP_SHARE > 0 && sent % tcpEvery === 0 && openConns < 8 && PACKETS - sent >= PER_CONN) {
        const { writes } = fuzzTcpWrites(r, sent, PER_CONN);
        sent += PER_CONN;
        tcpSent += PER_CONN;
        tcpConns++;
        openConns++;
        const c = connect({ host, port });
        const close = () => {
          if (!c.destroyed) c.destroy();
        };
        c.on('error', () => undefined);
        c.on('data', () => undefined);
        c.on('close', () => openConns--);
        c.on('connect', () => {
          for (const w of writes) c.write(w);
          c.end();
        });
        setTimeout(close, 2000).unref();
        continue;
      }
      const { packet } = fuzzPacket(r, sent);
      socks[sent % socks.length]!.send(packet, port, host);
      sent++;
      udpSent++;
    }
    const ahead = (sent / RATE) * 1000 - (performance.now() - t0);
    await sleep(Math.max(0, ahead));
    if (performance.now() - lastReport > 10_000) {
      lastReport = performance.now();
      process.stderr.write(`dns-fuzz: ${sent} sent (${udpSent} UDP, ${tcpSent} TCP in ${tcpConns} connections), ${Math.round((performance.now() - t0) / 1000)} s\n`);
    }
  }
  const fuzzSeconds = (performance.now() - t0) / 1000;
  await sleep(2500);
  prober.postMessage('stop');
  const { rtts, stalls, lost, tcpProbes, tcpProbeFailures } = await probeDone;
  await prober.terminate();
  clearInterval(rssTimer);
  sampleRss();
  for (const s of socks) s.close();

  // What the server counted.
  let metrics = '';
  try {
    metrics = await (await fetch(`${ready.http}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  } catch (e) {
    metrics = `(metrics failed: ${(e as Error).message})`;
  }
  const sum = (re: RegExp) => [...metrics.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  const malformedByReason: Record<string, number> = {};
  for (const m of metrics.matchAll(/^gridsteer_dns_malformed_total\{reason="([^"]+)"\} (\d+)/gm)) malformedByReason[m[1]!] = (malformedByReason[m[1]!] ?? 0) + Number(m[2]);
  const workerExits = logs.filter((l) => l.includes('dns worker exited')).length;
  const errorLines = logs.filter((l) => {
    try {
      return (JSON.parse(l) as { level?: number }).level! >= 50;
    } catch {
      return true; // a line that is not JSON counts against the run
    }
  });
  const sorted = [...rtts].sort((a, b) => a - b);
  const q = (p: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 100) / 100 : null);
  const primaryAlive = exited === null;
  server.kill('SIGTERM');
  for (let i = 0; i < 100 && exited === null; i++) await sleep(50);
  if (exited === null) server.kill('SIGKILL');
  cfg.cleanup();
  const report = {
    command: `node dist/bench/dns-fuzz.js ${process.argv.slice(2).join(' ')}`.trim(),
    seed: SEED,
    packets: { sent, udp: udpSent, tcp: tcpSent, tcpConnections: tcpConns, udpReplies, seconds: Math.round(fuzzSeconds * 10) / 10, perSecond: Math.round(sent / fuzzSeconds) },
    crashes: { primaryExited: !primaryAlive, workerExits, errorLogLines: errorLines.length },
    probes: { answered: rtts.length, stallsOver100ms: stalls, lostUdp: lost, tcp: tcpProbes, tcpFailures: tcpProbeFailures, p50ms: q(0.5), p99ms: q(0.99), maxMs: sorted.length ? Math.round(sorted.at(-1)! * 100) / 100 : null },
    server: {
      queriesTotal: sum(/^gridsteer_dns_queries_total\{[^}]*\} (\d+)/gm),
      malformedTotal: Object.values(malformedByReason).reduce((a, b) => a + b, 0),
      malformedByReason,
      internalErrors: malformedByReason.internal_error ?? 0,
    },
    rssMiB: rss.map((s) => ({ t: s.t, primary: Math.round(s.primary / 1048576), workers: Math.round(s.workers / 1048576) })),
    config: { file: o.config ?? '(the example gridsteer.yaml, geoip off)', set: o.set, workers: WORKERS, rateLimitMode },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (o.report) writeFileSync(o.report, `${JSON.stringify(report, null, 2)}\n`);
  for (const l of errorLines.slice(0, 10)) process.stderr.write(`dns-fuzz: error line: ${l}\n`);
  const crashed = !primaryAlive || workerExits > 0 || errorLines.length > 0 || report.server.internalErrors > 0;
  return crashed ? 1 : 0;
}

if (!isMainThread && (workerData as { probe?: boolean }).probe) {
  const w = workerData as { host: string; port: number };
  void runProbe(w.host, w.port);
} else {
  main().then(
    (code) => process.exit(code),
    (e: Error) => {
      process.stderr.write(`dns-fuzz: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
