/**
 * Starts GridSteer for a suite: writes a test config into a temp dir (the example
 * gridsteer.yaml, changed as the suite needs, beside a symlink to the example regions),
 * spawns the CLI (`serve … --dns-listen 127.0.0.1:0 --http-listen 127.0.0.1:0`) and
 * waits, bounded, for its `"msg":"ready"` log line, from which it takes the addresses.
 * `stop()` sends SIGTERM, then SIGKILL after a bound; it is safe to call twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse, stringify } from 'yaml';
import { cliPath, exampleConfig, exampleRegions, mainModulePath } from './paths.js';
import type { Endpoint } from './net.js';

/** The example config as a plain object, to be changed by a suite. */
export type ConfigObject = Record<string, unknown> & {
  dns?: Record<string, unknown>;
  http?: Record<string, unknown>;
  zones: { name: string; records?: Record<string, unknown>[]; [k: string]: unknown }[];
  names?: Record<string, unknown>[];
};

export function exampleConfigObject(): ConfigObject {
  return parse(readFileSync(exampleConfig, 'utf8')) as ConfigObject;
}

export interface TestConfig {
  dir: string;
  file: string;
  /** Removes the temp dir. */
  cleanup(): void;
}

/**
 * Writes `tokens.yaml` (the file `http.tokensFile: tokens.yaml` names) into `dir`: each
 * token as its name, role, SHA-256 and grants (ADR 0021), as the server reads them (docs/api.md).
 */
export function writeTokensFile(dir: string, tokens: { name: string; role: 'operator' | 'viewer' | 'ingest'; token: string; grants?: (string | { source: string; regions?: string[] })[] }[]): void {
  const sha = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');
  writeFileSync(join(dir, 'tokens.yaml'), stringify({ tokens: tokens.map((t) => ({ name: t.name, role: t.role, sha256: sha(t.token), ...(t.grants ? { grants: t.grants } : {}) })) }));
}

/**
 * Writes `gridsteer.yaml` (the example, changed by `mutate`) into a fresh temp dir with a
 * `regions` symlink to the example fleet. Listen addresses default to port 0 on loopback
 * and workers to 0, so that a config used without CLI flags never takes a fixed port;
 * geoip is disabled unless `mutate` enables it.
 */
export function writeTestConfig(mutate?: (cfg: ConfigObject) => void, opts: { raw?: string } = {}): TestConfig {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-test-'));
  symlinkSync(exampleRegions, join(dir, 'regions'), 'dir');
  const file = join(dir, 'gridsteer.yaml');
  if (opts.raw !== undefined) {
    writeFileSync(file, opts.raw);
  } else {
    const cfg = exampleConfigObject();
    cfg.dns = { ...(cfg.dns ?? {}), listen: ['127.0.0.1:0'] };
    cfg.http = { ...(cfg.http ?? {}), listen: '127.0.0.1:0' };
    cfg.workers = 0;
    // The DNS-core suites do not depend on the GeoIP database (every client is placed at the
    // default location); geo suites turn it back on in `mutate`.
    cfg.geoip = { enabled: false };
    // The verify-hooks housekeeping job re-sends hook calls every 15 minutes of real time: off in
    // tests, whose loopback gateways count calls; a suite about it turns it back on in `mutate`.
    cfg.housekeeping = { verifyHooks: false };
    mutate?.(cfg);
    writeFileSync(file, stringify(cfg));
  }
  return { dir, file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Sets `dns.rateLimit.mode` (docs/dns.md "Response rate limiting"; on by default). Every
 * suite that sends many queries from one loopback source sets it explicitly (and says so in
 * its header), so that what it tests is not the rate limiter unless it means to.
 */
export function withRateLimitMode(cfg: ConfigObject, mode: 'on' | 'log' | 'off'): void {
  const dns = cfg.dns ?? {};
  cfg.dns = { ...dns, rateLimit: { ...((dns.rateLimit as Record<string, unknown> | undefined) ?? {}), mode } };
}

/** Adds static records to the first zone (gslb.example.com) of a config object. */
export function addRecords(cfg: ConfigObject, ...records: Record<string, unknown>[]): void {
  const zone = cfg.zones[0]!;
  zone.records = [...(zone.records ?? []), ...records];
}

export interface ListenAddr extends Endpoint {
  transport: 'udp' | 'tcp';
}

/** Parses `udp://127.0.0.1:5353`, `tcp://[::1]:5353`. */
export function parseListenUrl(url: string): ListenAddr {
  const m = url.match(/^(udp|tcp):\/\/(?:\[([^\]]+)\]|([^:/]+)):(\d+)$/);
  if (!m) throw new Error(`server: cannot parse the DNS address ${JSON.stringify(url)} from the ready line`);
  return { transport: m[1] as 'udp' | 'tcp', host: (m[2] ?? m[3])!, port: Number(m[4]) };
}

export interface RunningServer {
  /** The `dns` strings of the ready line, as printed. */
  dnsUrls: string[];
  dns: ListenAddr[];
  /** The first UDP endpoint (what dig queries). */
  udp: Endpoint;
  /** The first TCP endpoint. */
  tcp: Endpoint;
  /** The base URL of the HTTP API, e.g. http://127.0.0.1:40123 */
  http: string;
  /** The spawned process (undefined in process). */
  proc?: ChildProcess;
  /** Every log line seen so far (stdout and stderr), for failure messages. */
  logs: string[];
  /** The ready line, parsed. */
  ready: Record<string, unknown>;
  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and reports how the process ended. */
  stop(): Promise<ExitInfo>;
}

/** How a spawned process ended (in process: always code 0). */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when SIGTERM was not enough and SIGKILL was sent. */
  killed: boolean;
}

export interface SpawnOptions {
  configFile: string;
  /** Default 0 (answer in the primary); 'auto' is one worker per core, as gridsteer.yaml says. */
  workers?: number | 'auto';
  /** Default ['127.0.0.1:0']. */
  dnsListen?: string[];
  /** Default '127.0.0.1:0'. */
  httpListen?: string;
  /** Bound on the wait for the ready line. Default 30 s. */
  readyTimeoutMs?: number;
  extraArgs?: string[];
  /** Extra environment for the server (e.g. GRIDSTEER_TEST_CLOCK). */
  env?: Record<string, string>;
  /**
   * A command `node` runs under, e.g. `['ip', 'netns', 'exec', ns]` (helpers/netns.ts); it
   * must exec node in its place, so that stop() signals node itself.
   */
  wrap?: string[];
}

function fromReady(ready: Record<string, unknown>, logs: string[]): Omit<RunningServer, 'proc' | 'stop' | 'logs' | 'ready'> {
  const dnsUrls = ready.dns;
  const http = ready.http;
  if (!Array.isArray(dnsUrls) || dnsUrls.some((u) => typeof u !== 'string') || typeof http !== 'string') {
    throw new Error(`server: the ready line lacks dns: string[] / http: string:\n${JSON.stringify(ready)}\n${logs.slice(-20).join('\n')}`);
  }
  const dns = (dnsUrls as string[]).map(parseListenUrl);
  const udp = dns.find((d) => d.transport === 'udp');
  const tcp = dns.find((d) => d.transport === 'tcp');
  if (!udp || !tcp) throw new Error(`server: the ready line lacks a udp:// or tcp:// address: ${JSON.stringify(dnsUrls)}`);
  return { dnsUrls: dnsUrls as string[], dns, udp: { host: udp.host, port: udp.port }, tcp: { host: tcp.host, port: tcp.port }, http: http.replace(/\/$/, '') };
}

function requireBuilt(): void {
  if (!existsSync(cliPath)) {
    throw new Error(`server: ${cliPath} does not exist: build first (npx tsc -p .)`);
  }
}

/** Servers spawned by this test process and still running: killed if the process exits first. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Spawns `node dist/gslb/cli/main.js serve …` and resolves once it logged "ready". */
export async function spawnServer(o: SpawnOptions): Promise<RunningServer> {
  requireBuilt();
  const args = [
    cliPath,
    'serve',
    '--config',
    o.configFile,
    '--workers',
    String(o.workers ?? 0),
    ...(o.dnsListen ?? ['127.0.0.1:0']).flatMap((a) => ['--dns-listen', a]),
    '--http-listen',
    o.httpListen ?? '127.0.0.1:0',
    ...(o.extraArgs ?? []),
  ];
  const cmd = [...(o.wrap ?? []), process.execPath];
  const proc = spawn(cmd[0]!, [...cmd.slice(1), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'test', ...(o.env ?? {}) } });
  live.add(proc);
  const logs: string[] = [];
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exitPromise = new Promise<void>((resolve) => {
    proc.once('exit', (code, signal) => {
      exited = { code, signal };
      live.delete(proc);
      resolve();
    });
  });

  let killed = false;
  const stop = async (): Promise<ExitInfo> => {
    if (!exited) {
      proc.kill('SIGTERM');
      const killTimer = setTimeout(() => {
        if (!exited) {
          killed = true;
          proc.kill('SIGKILL');
        }
      }, 10000);
      await exitPromise;
      clearTimeout(killTimer);
    }
    const e = exited as { code: number | null; signal: NodeJS.Signals | null } | null;
    return { code: e?.code ?? null, signal: e?.signal ?? null, killed };
  };

  const readyTimeoutMs = o.readyTimeoutMs ?? 30000;
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`server: no "ready" log line within ${readyTimeoutMs} ms:\n$ node ${args.join(' ')}\n${logs.slice(-40).join('\n')}`));
    }, readyTimeoutMs);
    const onLine = (line: string) => {
      logs.push(line);
      if (!line.includes('"ready"')) return;
      try {
        const j = JSON.parse(line) as Record<string, unknown>;
        if (j.msg === 'ready') {
          clearTimeout(timer);
          resolve(j);
        }
      } catch {
        // not JSON: keep it in the logs only
      }
    };
    const splitter = (stream: NodeJS.ReadableStream | null) => {
      let buf = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (d: string) => {
        buf += d;
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
    };
    splitter(proc.stdout);
    splitter(proc.stderr);
    void exitPromise.then(() => {
      clearTimeout(timer);
      reject(new Error(`server: exited (${JSON.stringify(exited)}) before logging "ready":\n$ node ${args.join(' ')}\n${logs.slice(-40).join('\n')}`));
    });
  }).catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  return { ...fromReady(ready, logs), proc, logs, ready, stop };
}

/** The in-process API of gslb/main.ts (the contract the tests rely on). */
export interface InProcessOptions {
  configFile: string;
  workers: 0;
  dnsListen?: string[];
  httpListen?: string;
  logLevel?: 'silent' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
}
export interface InProcessServer {
  dns: string[];
  http: string;
  close(): Promise<void>;
}
type StartGridSteer = (o: InProcessOptions) => Promise<InProcessServer>;

/** Starts GridSteer inside this process through `startGridSteer` (workers 0). */
export async function startInProcess(o: Omit<InProcessOptions, 'workers'>): Promise<RunningServer & { handle: InProcessServer }> {
  requireBuilt();
  // The module path is computed so that the suites compile before gslb/main.ts exists.
  const mod = (await import(pathToFileURL(mainModulePath).href)) as { startGridSteer?: StartGridSteer };
  if (typeof mod.startGridSteer !== 'function') throw new Error(`server: ${mainModulePath} does not export startGridSteer`);
  const handle = await mod.startGridSteer({ workers: 0, dnsListen: ['127.0.0.1:0'], httpListen: '127.0.0.1:0', logLevel: 'silent', ...o });
  let closed = false;
  const ready = { dns: handle.dns, http: handle.http };
  return {
    ...fromReady(ready, []),
    logs: [],
    ready,
    handle,
    stop: async () => {
      if (!closed) {
        closed = true;
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('server: close() did not finish within 15 s')), 15000);
        });
        try {
          await Promise.race([handle.close(), bound]);
        } finally {
          clearTimeout(timer);
        }
      }
      return { code: 0, signal: null, killed: false };
    },
  };
}
