/**
 * Real Redis servers for the store suites (Debian package `redis-server`), each in the
 * foreground in a temp dir of its own, on a free loopback port (never the default 6379):
 * `--bind 127.0.0.1 --save '' --appendonly yes --appendfsync always`, so what a write
 * acknowledged survives a kill -9 and a restart on the same port and dir.
 *
 * Offers a replica (`replicaOf`), a Sentinel (`startSentinel`), a three-master Cluster
 * (`startRedisCluster`), and a tiny
 * RESP client (`respCommand`) so the tests can look at Redis without ioredis (only
 * gslb/state/redis-store.ts imports ioredis). Every wait is bounded; a server that does not
 * answer PING in time fails with its log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { findTool, requireTool } from './tools.js';

export type RespValue = string | number | null | RespError | RespValue[];

/** An error reply (`-ERR …`), returned rather than thrown so callers can wait on LOADING. */
export class RespError {
  constructor(readonly message: string) {}
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Parses one RESP2 reply from `buf` at `at`; null when it is not complete yet. */
function parseResp(buf: Buffer, at: number): { value: RespValue; next: number } | null {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[at]!);
  const line = buf.toString('utf8', at + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+':
      return { value: line, next: after };
    case '-':
      return { value: new RespError(line), next: after };
    case ':':
      return { value: Number(line), next: after };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return null;
      return { value: buf.toString('utf8', after, after + len), next: after + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let p = after;
      for (let i = 0; i < n; i++) {
        const r = parseResp(buf, p);
        if (!r) return null;
        items.push(r.value);
        p = r.next;
      }
      return { value: items, next: p };
    }
    default:
      throw new Error(`redis helper: unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/**
 * Sends one command to 127.0.0.1:`port` on a fresh connection and returns its reply.
 * Rejects on a connection error or after `timeoutMs` (default 2000).
 */
export function respCommand(port: number, args: (string | number)[], timeoutMs = 2000): Promise<RespValue> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`redis helper: ${args[0]} to port ${port}: no reply within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on('connect', () => {
      const parts = args.map(String);
      let out = `*${parts.length}\r\n`;
      for (const p of parts) out += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
      sock.write(out);
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parseResp(buf, 0);
      if (r) {
        clearTimeout(timer);
        sock.destroy();
        resolve(r.value);
      }
    });
  });
}

export interface RedisServerOptions {
  /** Start as a replica of this server, and wait (bounded) until the link is up and synced. */
  replicaOf?: RunningRedis;
  /** Cluster mode (used by startRedisCluster). */
  cluster?: boolean;
  /** Bound on the wait for PING (and for replication sync). Default 15 s. */
  readyTimeoutMs?: number;
}

export interface RunningRedis {
  host: '127.0.0.1';
  port: number;
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  dir: string;
  /** The server's log lines, all runs. */
  logs: string[];
  /** One command on a fresh connection (see respCommand). */
  command(...args: (string | number)[]): Promise<RespValue>;
  /** Kills the process (default SIGKILL) and waits (bounded) until it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and dir (AOF replayed) and waits for PING. */
  restart(): Promise<void>;
  /** SIGTERM (Redis flushes and exits), SIGKILL after 5 s. */
  stop(): Promise<void>;
  /** stop() and remove the dir. */
  cleanup(): Promise<void>;
}

function waitExit(proc: ChildProcess, ms: number): Promise<boolean> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** redis-server's arguments for a test server: one address and port, AOF fsynced always in `dir`, no RDB, in the foreground, logging to stdout. */
export function redisArgs(port: number, bind: string, dir: string): string[] {
  return [
    '--port', String(port),
    '--bind', bind,
    '--save', '',
    '--appendonly', 'yes',
    '--appendfsync', 'always',
    '--dir', dir,
    '--daemonize', 'no',
    '--logfile', '',
  ];
}

/** Starts redis-server on a free loopback port in a fresh temp dir; resolves once it answers PING. */
export async function startRedis(o: RedisServerOptions = {}): Promise<RunningRedis> {
  const bin = requireTool('redis-server');
  const port = await freePort();
  if (port === 6379) throw new Error('redis helper: refusing the default port 6379');
  const busPort = o.cluster ? await freePort() : 0;
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-redis-'));
  const readyTimeoutMs = o.readyTimeoutMs ?? 15000;
  const logs: string[] = [];
  const args = [...redisArgs(port, '127.0.0.1', dir), '--repl-diskless-sync-delay', '0'];
  if (o.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-port', String(busPort), '--cluster-node-timeout', '3000');
  if (o.replicaOf) args.push('--replicaof', '127.0.0.1', String(o.replicaOf.port));

  let proc: ChildProcess;
  const spawnIt = () => {
    proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const onData = (d: Buffer) => logs.push(...d.toString('utf8').split('\n').filter((l) => l !== ''));
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
  };

  const waitPing = async () => {
    const tries = Math.ceil(readyTimeoutMs / 100);
    let last = '';
    for (let i = 0; i < tries; i++) {
      if (proc.exitCode !== null || proc.signalCode !== null) break;
      try {
        const r = await respCommand(port, ['PING'], 1000);
        if (r === 'PONG') return;
        last = r instanceof RespError ? r.message : String(r);
      } catch (e) {
        last = (e as Error).message;
      }
      await sleep(100);
    }
    throw new Error(`redis helper: redis-server on port ${port} did not answer PING within ${readyTimeoutMs} ms (last: ${last}); log:\n${logs.slice(-30).join('\n')}`);
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill(signal);
    if (!(await waitExit(proc, 5000))) {
      proc.kill('SIGKILL');
      if (!(await waitExit(proc, 5000))) throw new Error(`redis helper: redis-server on port ${port} did not exit`);
    }
  };

  const running: RunningRedis = {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    logs,
    command: (...a) => respCommand(port, a),
    kill,
    async restart() {
      await kill('SIGKILL');
      spawnIt();
      await waitPing();
    },
    stop: () => kill('SIGTERM'),
    async cleanup() {
      await kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };

  spawnIt();
  try {
    await waitPing();
    if (o.replicaOf) await waitReplicaSynced(running, o.replicaOf, readyTimeoutMs);
  } catch (e) {
    await running.cleanup();
    throw e;
  }
  return running;
}

/** Waits until `replica` reports its link to `primary` up and the primary counts it online. */
async function waitReplicaSynced(replica: RunningRedis, primary: RunningRedis, ms: number): Promise<void> {
  const tries = Math.ceil(ms / 100);
  let info = '';
  for (let i = 0; i < tries; i++) {
    const r = await replica.command('INFO', 'replication');
    const p = await primary.command('INFO', 'replication');
    info = `${String(r)}\n${String(p)}`;
    if (/master_link_status:up/.test(String(r)) && /slave0:.*state=online/.test(String(p))) return;
    await sleep(100);
  }
  throw new Error(`redis helper: replica on port ${replica.port} did not sync with ${primary.port} within ${ms} ms:\n${info}`);
}

export interface RunningCluster {
  nodes: RunningRedis[];
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`. */
  url: string;
  cleanup(): Promise<void>;
}

/**
 * Three cluster-enabled masters joined by `redis-cli --cluster create … --cluster-replicas 0`;
 * resolves once every node reports cluster_state:ok (bounded).
 */
export async function startRedisCluster(masters = 3, readyTimeoutMs = 30000): Promise<RunningCluster> {
  const cli = findTool('redis-cli');
  if (!cli) throw new Error('redis-cli is not installed: this test needs it. Install the Debian package: apt-get install -y redis-tools');
  const nodes: RunningRedis[] = [];
  const cleanup = async () => {
    await Promise.all(nodes.map((n) => n.cleanup()));
  };
  try {
    for (let i = 0; i < masters; i++) nodes.push(await startRedis({ cluster: true }));
    const addrs = nodes.map((n) => `127.0.0.1:${n.port}`);
    await new Promise<void>((resolve, reject) => {
      const p = spawn(cli, ['--cluster', 'create', ...addrs, '--cluster-replicas', '0', '--cluster-yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), readyTimeoutMs);
      p.on('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`redis helper: redis-cli --cluster create exited ${code}:\n${out}`));
      });
    });
    const tries = Math.ceil(readyTimeoutMs / 100);
    for (let i = 0; i < tries; i++) {
      const infos = await Promise.all(nodes.map((n) => n.command('CLUSTER', 'INFO')));
      if (infos.every((s) => /cluster_state:ok/.test(String(s)))) return { nodes, url: `redis+cluster://${addrs.join(',')}`, cleanup };
      await sleep(100);
    }
    throw new Error(`redis helper: the cluster on ${addrs.join(', ')} did not reach cluster_state:ok within ${readyTimeoutMs} ms`);
  } catch (e) {
    await cleanup();
    throw e;
  }
}

export interface RunningSentinel {
  port: number;
  /** `redis+sentinel://127.0.0.1:<port>/<master>`. */
  url: string;
  logs: string[];
  cleanup(): Promise<void>;
}

/**
 * One Sentinel (`redis-server <conf> --sentinel`, quorum 1) monitoring `primary` as
 * `master`, in a temp dir of its own; resolves once it names the primary's address.
 */
export async function startSentinel(primary: RunningRedis, master = 'mymaster', readyTimeoutMs = 15000): Promise<RunningSentinel> {
  const bin = requireTool('redis-server');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nlogfile ""\nsentinel monitor ${master} 127.0.0.1 ${primary.port} 1\n`);
  const logs: string[] = [];
  const proc = spawn(bin, [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const onData = (d: Buffer) => logs.push(...d.toString('utf8').split('\n').filter((l) => l !== ''));
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const cleanup = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      if (!(await waitExit(proc, 5000))) proc.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  let last = '';
  for (let i = 0; i < Math.ceil(readyTimeoutMs / 100); i++) {
    try {
      const r = await respCommand(port, ['SENTINEL', 'get-master-addr-by-name', master], 1000);
      if (Array.isArray(r) && r[1] === String(primary.port)) return { port, url: `redis+sentinel://127.0.0.1:${port}/${master}`, logs, cleanup };
      last = JSON.stringify(r);
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(100);
  }
  await cleanup();
  throw new Error(`redis helper: sentinel on port ${port} did not name ${master} within ${readyTimeoutMs} ms (last: ${last}); log:\n${logs.slice(-20).join('\n')}`);
}
