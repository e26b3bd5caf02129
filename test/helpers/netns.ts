/**
 * Network namespaces made by a test (iproute2, root or CAP_NET_ADMIN): a private LAN on
 * which every member — Redis, each GridSteer node — has its own network stack, port space
 * and routes, and the test process (the root namespace) has an address too, so dig and
 * fetch reach every member from here.
 *
 *   root ns: gs<sfx>h 10.200.X.1/24 ──veth──┐
 *                                           │  gs-lan-<sfx>: bridge br0 (no address)
 *   gs-<member>-<sfx>: eth0 10.200.X.N/24 ──┘  one veth per member, ends v<N> on br0
 *
 * The bridge lives in a namespace of its own, so the root namespace gains one veth end and
 * one connected /24 route, nothing else; X is random and picked among /24s the root
 * namespace does not already route. Every name carries a random suffix; `cleanup()`
 * deletes every namespace (which destroys the veths and the bridge with them) and checks
 * that nothing is left. A failure to make a namespace (not root, no CAP_NET_ADMIN) is an
 * error naming what is needed, never a skip.
 *
 * Also: a member's own redis-server (`startNetnsRedis`), commands run inside a member
 * (`exec`), and a partition of one member from one address by a blackhole route in that
 * member's namespace (`cut` / `heal`): the member's packets to the address are dropped
 * before they leave it, while everything else, the root namespace's queries to it
 * included, still flows.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, type ToolRun } from './dig.js';
import { redisArgs } from './redis.js';
import { findTool, requireTool } from './tools.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Namespaces made and not yet deleted: deleted synchronously if the process exits before
 * cleanup() ran (a crash, process.exit), so no run leaves one behind.
 */
const undeleted = new Set<string>();
/** redis-servers started here and still running: killed on exit too. */
const liveRedis = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of liveRedis) p.kill('SIGKILL');
  for (const ns of undeleted) {
    try {
      execFileSync(findTool('ip') ?? 'ip', ['netns', 'del', ns], { stdio: 'ignore', timeout: 5000 });
    } catch {
      // best effort
    }
  }
});

/** The path of `ip` (iproute2); throws naming the package when it is missing. */
export function ipTool(): string {
  const p = findTool('ip');
  if (!p) throw new Error('ip is not installed: this test needs it. Install the Debian package: apt-get install -y iproute2');
  return p;
}

/** Runs `ip <args>` (bounded, 10 s); throws with its output when it fails. */
export async function ip(args: string[], what = ''): Promise<ToolRun> {
  const r = await run(ipTool(), args, 10000);
  if (r.code !== 0) throw new Error(`netns: ${what ? `${what}: ` : ''}$ ${r.cmd} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r;
}

export interface Member {
  /** The role given to makeLan, e.g. `node1`. */
  role: string;
  /** The namespace, `gs-<role>-<suffix>`. */
  ns: string;
  /** Its address on the LAN. */
  addr: string;
  /** The prefix for a command run inside the namespace: `['/usr/sbin/ip', 'netns', 'exec', ns]`. */
  wrap: string[];
}

export interface Lan {
  suffix: string;
  /** `10.200.X.0/24`. */
  subnet: string;
  /** The root namespace's address on the LAN (the test's own). */
  hostAddr: string;
  /** The namespace holding the bridge. */
  lanNs: string;
  /** The root namespace's veth end. */
  hostLink: string;
  members: Map<string, Member>;
  member(role: string): Member;
  /** Runs a command inside a member's namespace (bounded, 10 s); never rejects on a non-zero exit. */
  exec(role: string, args: string[]): Promise<ToolRun>;
  /** Drops every packet `role` sends to `addr` (a blackhole route in its namespace). */
  cut(role: string, addr: string): Promise<void>;
  /** Deletes that route again. */
  heal(role: string, addr: string): Promise<void>;
  /**
   * Deletes every namespace (and so every veth and the bridge) and the root veth end if it
   * is still there; returns what could not be removed (empty when all is gone). Safe to call twice.
   */
  cleanup(): Promise<string[]>;
}

/** Namespaces whose name carries `suffix` (from `ip netns list`). */
export async function namespacesWith(suffix: string): Promise<string[]> {
  const r = await ip(['netns', 'list'], 'listing namespaces');
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((n) => n !== '' && n.endsWith(`-${suffix}`));
}

/** Links of the root namespace whose name contains `needle`. */
export async function rootLinksWith(needle: string): Promise<string[]> {
  const r = await ip(['-o', 'link', 'show'], 'listing links');
  return r.stdout
    .split('\n')
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '')
    .filter((n) => n !== '' && n.includes(needle));
}

/** A random third octet for 10.200.X.0/24 that no route or address of the root namespace overlaps. */
async function freeSubnet(): Promise<number> {
  const routes = (await ip(['-4', 'route', 'show', 'table', 'all'], 'listing routes')).stdout + (await ip(['-4', '-o', 'addr', 'show'], 'listing addresses')).stdout;
  // A covering route (10.0.0.0/8, …) does no harm: the connected /24 is more specific.
  const used = (x: number) => routes.includes(`10.200.${x}.`);
  for (let i = 0; i < 50; i++) {
    const x = randomInt(1, 255);
    if (!used(x)) return x;
  }
  throw new Error('netns: no free 10.200.X.0/24 in 50 tries: the root namespace routes too much of 10.200.0.0/16');
}

/**
 * Makes the LAN: `gs-lan-<sfx>` with bridge br0, and for each role a namespace
 * `gs-<role>-<sfx>` with loopback up and eth0 at 10.200.X.(10 + index), plus the root
 * namespace's veth at 10.200.X.1. On any failure what was made is removed and the error
 * says what is needed.
 */
export async function makeLan(roles: string[]): Promise<Lan> {
  const ipBin = ipTool();
  const suffix = randomBytes(3).toString('hex');
  const x = await freeSubnet();
  const base = `10.200.${x}`;
  const lanNs = `gs-lan-${suffix}`;
  const hostLink = `gs${suffix}h`;
  const members = new Map<string, Member>();
  roles.forEach((role, i) => {
    if (!/^[a-z0-9]{1,10}$/.test(role)) throw new Error(`netns: role ${JSON.stringify(role)} must be 1–10 of [a-z0-9]`);
    const ns = `gs-${role}-${suffix}`;
    members.set(role, { role, ns, addr: `${base}.${10 + i}`, wrap: [ipBin, 'netns', 'exec', ns] });
  });
  const made: string[] = [];

  const cleanup = async (): Promise<string[]> => {
    const left: string[] = [];
    for (const ns of [...made].reverse()) {
      const r = await run(ipBin, ['netns', 'del', ns], 10000);
      if (r.code !== 0 && !/No such file/.test(r.stderr)) left.push(`namespace ${ns}: ${r.stderr.trim()}`);
      else undeleted.delete(ns);
    }
    made.length = 0;
    // The root veth end goes with its peer, a moment after the namespace: delete it by hand if
    // it stayed (gone by the time we ask is fine; the loop below checks nothing is left).
    if ((await rootLinksWith(hostLink)).length > 0) {
      const r = await run(ipBin, ['link', 'del', hostLink], 10000);
      if (r.code !== 0 && !/Cannot find device/.test(r.stderr)) left.push(`link ${hostLink}: ${r.stderr.trim()}`);
    }
    for (let i = 0; i < 20; i++) {
      const nss = await namespacesWith(suffix);
      const links = await rootLinksWith(`gs${suffix}`);
      if (nss.length === 0 && links.length === 0) return left;
      if (i === 19) left.push(...nss.map((n) => `namespace ${n} still listed`), ...links.map((l) => `link ${l} still in the root namespace`));
      await sleep(100);
    }
    return left;
  };

  try {
    const first = await run(ipBin, ['netns', 'add', lanNs], 10000);
    if (first.code !== 0) {
      throw new Error(
        `netns: cannot make a network namespace ($ ${first.cmd} exited ${first.code}: ${first.stderr.trim()}): ` +
          `this suite needs root or CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns add, veth, a bridge); CI runs it as root`,
      );
    }
    made.push(lanNs);
    undeleted.add(lanNs);
    const inLan = (args: string[], what: string) => ip(['-n', lanNs, ...args], what);
    await inLan(['link', 'set', 'lo', 'up'], 'lan loopback');
    await inLan(['link', 'add', 'br0', 'type', 'bridge', 'stp_state', '0', 'forward_delay', '0'], 'the bridge');
    await inLan(['link', 'set', 'br0', 'up'], 'the bridge up');

    // The test's own leg: a veth from the root namespace onto the bridge.
    await ip(['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'vhost', 'netns', lanNs], 'the root veth');
    await inLan(['link', 'set', 'vhost', 'master', 'br0', 'up'], 'the root veth on the bridge');
    await ip(['addr', 'add', `${base}.1/24`, 'dev', hostLink], 'the root address');
    await ip(['link', 'set', hostLink, 'up'], 'the root veth up');

    let i = 0;
    for (const m of members.values()) {
      await ip(['netns', 'add', m.ns], `namespace ${m.ns}`);
      made.push(m.ns);
      undeleted.add(m.ns);
      const inNs = (args: string[], what: string) => ip(['-n', m.ns, ...args], `${m.role}: ${what}`);
      await inNs(['link', 'set', 'lo', 'up'], 'loopback');
      const leg = `v${i++}`;
      await ip(['-n', lanNs, 'link', 'add', leg, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', m.ns], `${m.role}: veth`);
      await inLan(['link', 'set', leg, 'master', 'br0', 'up'], `${m.role}: veth on the bridge`);
      await inNs(['addr', 'add', `${m.addr}/24`, 'dev', 'eth0'], 'address');
      await inNs(['link', 'set', 'eth0', 'up'], 'eth0 up');
    }
  } catch (e) {
    const left = await cleanup();
    if (left.length > 0) (e as Error).message += `\nand cleaning up left: ${left.join('; ')}`;
    throw e;
  }

  const member = (role: string): Member => {
    const m = members.get(role);
    if (!m) throw new Error(`netns: no member ${role} (have ${[...members.keys()].join(', ')})`);
    return m;
  };
  return {
    suffix,
    subnet: `${base}.0/24`,
    hostAddr: `${base}.1`,
    lanNs,
    hostLink,
    members,
    member,
    exec: (role, args) => run(ipBin, ['netns', 'exec', member(role).ns, ...args], 10000),
    cut: async (role, addr) => {
      await ip(['-n', member(role).ns, 'route', 'add', 'blackhole', `${addr}/32`], `cutting ${role} off from ${addr}`);
    },
    heal: async (role, addr) => {
      await ip(['-n', member(role).ns, 'route', 'del', 'blackhole', `${addr}/32`], `healing ${role}'s path to ${addr}`);
    },
    cleanup,
  };
}

/**
 * Waits (bounded) until `host:port` accepts a TCP connection from the root namespace;
 * throws naming the last error.
 */
export async function waitTcp(host: string, port: number, timeoutMs: number): Promise<void> {
  let last = '';
  for (let i = 0; i < Math.ceil(timeoutMs / 100); i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port });
      const t = setTimeout(() => {
        s.destroy();
        last = 'connect timed out';
        resolve(false);
      }, 500);
      s.once('connect', () => {
        clearTimeout(t);
        s.destroy();
        resolve(true);
      });
      s.once('error', (e) => {
        clearTimeout(t);
        last = e.message;
        resolve(false);
      });
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`netns: ${host}:${port} accepted no connection within ${timeoutMs} ms (last: ${last})`);
}

/** One inline command to Redis at `host:port` (e.g. `PING`); resolves with the first reply line. Bounded. */
export function redisInline(host: string, port: number, command: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    let buf = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`netns: ${command} to ${host}:${port}: no reply within ${timeoutMs} ms`));
    }, timeoutMs);
    s.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    s.on('connect', () => s.write(`${command}\r\n`));
    s.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      const eol = buf.indexOf('\r\n');
      if (eol >= 0) {
        clearTimeout(t);
        s.destroy();
        resolve(buf.slice(0, eol));
      }
    });
  });
}

export interface NetnsRedis {
  url: string;
  addr: string;
  port: number;
  logs: string[];
  proc: ChildProcess;
  /** SIGTERM, SIGKILL after 5 s; removes the dir. Safe to call twice. */
  cleanup(): Promise<void>;
}

/**
 * redis-server inside `member`'s namespace on its LAN address, port 6379 (the namespace
 * has its own port space), in a temp dir with AOF; resolves once PING from the root
 * namespace answers PONG (bounded).
 */
export async function startNetnsRedis(member: Member, readyTimeoutMs = 15000): Promise<NetnsRedis> {
  const bin = requireTool('redis-server');
  const port = 6379;
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-netns-redis-'));
  const args = [bin, ...redisArgs(port, member.addr, dir), '--protected-mode', 'no'];
  const proc = spawn(member.wrap[0]!, [...member.wrap.slice(1), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  liveRedis.add(proc);
  proc.once('exit', () => liveRedis.delete(proc));
  const logs: string[] = [];
  const onData = (d: Buffer) => logs.push(...d.toString('utf8').split('\n').filter((l) => l !== ''));
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = () => proc.exitCode !== null || proc.signalCode !== null;
  const waitExit = (ms: number) =>
    exited()
      ? Promise.resolve(true)
      : new Promise<boolean>((resolve) => {
          const t = setTimeout(() => resolve(false), ms);
          proc.once('exit', () => {
            clearTimeout(t);
            resolve(true);
          });
        });
  const cleanup = async () => {
    if (!exited()) {
      proc.kill('SIGTERM');
      if (!(await waitExit(5000))) {
        proc.kill('SIGKILL');
        await waitExit(5000);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  let last = '';
  for (let i = 0; i < Math.ceil(readyTimeoutMs / 100) && !exited(); i++) {
    try {
      last = await redisInline(member.addr, port, 'PING', 1000);
      if (last === '+PONG') return { url: `redis://${member.addr}:${port}`, addr: member.addr, port, logs, proc, cleanup };
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(100);
  }
  await cleanup();
  throw new Error(`netns: redis-server in ${member.ns} on ${member.addr}:${port} did not answer PING within ${readyTimeoutMs} ms (last: ${last}); log:\n${logs.slice(-30).join('\n')}`);
}
