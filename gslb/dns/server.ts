/**
 * UDP and TCP listeners around a Responder. UDP: one datagram in, at most one out.
 * TCP (RFC 1035 §4.2.2, RFC 7766): 2-byte length framing, pipelined queries answered in
 * order, an idle timeout that partial messages do not reset, a deadline for each message
 * from its first byte, and limits on open connections per process (with a fair share per
 * client prefix and the longest-idle evicted when full) and per client.
 * Nothing here throws into the event loop: socket errors close that socket and are counted.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from 'pino';
import type { Responder } from './respond.js';
import { parseAddr } from '../geo/addr.js';
import { formatListen, parseListenWith, type ListenAddress, type ListenRules } from '../platform/listen.js';

export interface TcpLimits {
  idleTimeoutMs: number;
  /** Once a message's first byte arrived, the whole message must be in within this (dribbling does not extend it). */
  messageTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerClient: number;
  maxPipelined: number;
}

export type { ListenAddress } from '../platform/listen.js';
export { formatListen };

/** DNS's and the HTTP API's listen rules: an IP address (or localhost), never a name. */
const DNS_LISTEN: ListenRules = { hosts: 'ip', label: 'dns: ', example: '127.0.0.1:5353 or [::1]:5353' };

/** Parses `127.0.0.1:53`, `[::1]:53`, `localhost:53`. Throws with a message naming the form. */
export function parseListen(s: string): ListenAddress {
  return parseListenWith(s, DNS_LISTEN);
}

/** Running listeners; `close()` stops accepting and ends open TCP connections. */
export interface DnsServer {
  /** `udp://host:port` and `tcp://host:port` for each address. */
  addresses: string[];
  close(): Promise<void>;
}

function bindUdp(addr: ListenAddress, responder: Responder, log: Logger): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket({ type: net.isIPv6(addr.host) ? 'udp6' : 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
    const onError = (e: Error) => reject(e);
    sock.once('error', onError);
    sock.on('message', (msg, rinfo) => {
      const out = responder.answer(msg, false, rinfo.address);
      if (out !== null) sock.send(out, rinfo.port, rinfo.address);
    });
    sock.bind({ address: addr.host, port: addr.port, exclusive: false }, () => {
      sock.off('error', onError);
      sock.on('error', (e) => log.warn({ err: e.message }, 'dns: UDP socket error'));
      resolve(sock);
    });
  });
}

/** One open connection, as the connection table keeps it. */
interface Conn {
  sock: net.Socket;
  client: string;
  prefix: string;
}

/**
 * The TCP connections of one process (all its listen addresses): at most
 * `maxConnections`, at most `maxConnectionsPerClient` per address. When full, a client whose
 * prefix (/24, /56) holds less than a fair share (maxConnections / prefixes connected) gets
 * a slot by closing the longest-idle connection of the prefix holding the most; otherwise
 * it is refused. Per prefix the connections are kept least recently active first.
 */
class TcpTable {
  private readonly byPrefix = new Map<string, Map<net.Socket, Conn>>();
  private readonly byClient = new Map<string, number>();
  size = 0;

  constructor(
    private readonly limits: TcpLimits,
    private readonly stats: Responder['stats'],
  ) {}

  /** Admits a new connection (evicting one when full and fair), or says why not. */
  admit(c: Conn): 'ok' | 'full' | 'per_client' {
    if ((this.byClient.get(c.client) ?? 0) >= this.limits.maxConnectionsPerClient) return 'per_client';
    if (this.size >= this.limits.maxConnections) {
      const mine = this.byPrefix.get(c.prefix)?.size ?? 0;
      const prefixes = this.byPrefix.size + (mine === 0 ? 1 : 0);
      const share = Math.max(1, Math.floor(this.limits.maxConnections / prefixes));
      if (mine >= share) return 'full';
      let most: Map<net.Socket, Conn> | undefined;
      for (const m of this.byPrefix.values()) if (!most || m.size > most.size) most = m;
      const victim = most?.values().next().value;
      if (!victim || most!.size <= mine) return 'full';
      this.stats.tcpEvicted++;
      this.remove(victim);
      victim.sock.destroy();
    }
    let m = this.byPrefix.get(c.prefix);
    if (!m) this.byPrefix.set(c.prefix, (m = new Map()));
    m.set(c.sock, c);
    this.byClient.set(c.client, (this.byClient.get(c.client) ?? 0) + 1);
    this.size++;
    return 'ok';
  }

  /** Marks a connection active now (a whole message arrived): last in its prefix's eviction order. */
  touch(c: Conn): void {
    const m = this.byPrefix.get(c.prefix);
    if (m?.delete(c.sock)) m.set(c.sock, c);
  }

  remove(c: Conn): void {
    const m = this.byPrefix.get(c.prefix);
    if (!m?.delete(c.sock)) return;
    if (m.size === 0) this.byPrefix.delete(c.prefix);
    const n = (this.byClient.get(c.client) ?? 1) - 1;
    if (n <= 0) this.byClient.delete(c.client);
    else this.byClient.set(c.client, n);
    this.size--;
  }
}

/** The /24 or /56 of an address string (the address itself when it does not parse). */
function prefixOf(address: string): string {
  const a = parseAddr(address);
  if (!a) return address;
  return a.family === 4 ? `4/${(a.hi >>> 8).toString(16)}` : `6/${a.hi.toString(16)}:${(a.lo >>> 8).toString(16)}`;
}

function listenTcp(addr: ListenAddress, responder: Responder, limits: TcpLimits, log: Logger, open: Set<net.Socket>, table: TcpTable): Promise<net.Server> {
  const stats = responder.stats;
  const server = net.createServer({ noDelay: true, pauseOnConnect: false }, (sock) => {
    const client = sock.remoteAddress ?? '?';
    const conn: Conn = { sock, client, prefix: prefixOf(client) };
    const verdict = table.admit(conn);
    if (verdict !== 'ok') {
      if (verdict === 'full') stats.tcpRejected++;
      else stats.tcpRejectedPerClient++;
      sock.destroy();
      return;
    }
    open.add(sock);
    stats.tcpAccepted++;
    stats.tcpOpen = open.size;
    // Two timers of our own (a socket timeout would restart on every byte): the idle timer
    // restarts only when a whole message has arrived; the message timer starts at a message's
    // first byte and stops when it is complete.
    let idle: NodeJS.Timeout | null = null;
    let message: NodeJS.Timeout | null = null;
    const armIdle = () => {
      if (idle) idle.refresh();
      else
        idle = setTimeout(() => {
          stats.tcpIdleClosed++;
          sock.destroy();
        }, limits.idleTimeoutMs);
    };
    armIdle();
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      if (idle) clearTimeout(idle);
      if (message) clearTimeout(message);
      open.delete(sock);
      table.remove(conn);
      stats.tcpOpen = open.size;
    });
    let pending: Buffer = Buffer.alloc(0);
    let scheduled = false;
    /** Starts the message deadline when a message has begun; stops it when nothing is pending. */
    const armMessage = (started: boolean) => {
      if (pending.length === 0) {
        if (message) clearTimeout(message);
        message = null;
        return;
      }
      if (message && !started) return;
      if (message) clearTimeout(message);
      message = setTimeout(() => {
        stats.tcpMessageTimeouts++;
        sock.destroy();
      }, limits.messageTimeoutMs);
    };
    const drainQueue = () => {
      scheduled = false;
      let answered = 0;
      while (pending.length >= 2) {
        const len = pending.readUInt16BE(0);
        if (pending.length < 2 + len) break;
        if (answered >= limits.maxPipelined) {
          // Give other connections a turn; continue with the rest soon.
          scheduled = true;
          setImmediate(drainQueue);
          return;
        }
        const msg = pending.subarray(2, 2 + len);
        pending = pending.subarray(2 + len);
        answered++;
        const out = responder.answer(msg, true, client);
        if (out === null || sock.destroyed) continue;
        const prefix = Buffer.allocUnsafe(2);
        prefix.writeUInt16BE(out.length, 0);
        sock.cork();
        sock.write(prefix);
        const ok = sock.write(out);
        sock.uncork();
        if (!ok) {
          sock.pause();
          sock.once('drain', () => sock.resume());
        }
      }
      if (answered > 0) {
        armIdle();
        table.touch(conn);
      }
      // What is left is the start of the next message: its deadline runs from now.
      armMessage(answered > 0);
      if (pending.length === 0) pending = Buffer.alloc(0);
      else if (pending.byteOffset !== 0) pending = Buffer.from(pending);
    };
    sock.on('data', (chunk: Buffer) => {
      const wasEmpty = pending.length === 0;
      pending = wasEmpty ? chunk : Buffer.concat([pending, chunk]);
      if (wasEmpty) armMessage(true);
      if (!scheduled) drainQueue();
    });
  });
  server.on('error', (e) => log.warn({ err: e.message }, 'dns: TCP server error'));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: addr.host, port: addr.port, exclusive: false }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/**
 * Binds UDP and TCP on every address. Ports must be concrete unless there is one address
 * with port 0: then a port free for both UDP and TCP is picked (bounded retries).
 */
export async function startDnsServer(addresses: ListenAddress[], responder: Responder, limits: TcpLimits, log: Logger): Promise<DnsServer> {
  const udp: dgram.Socket[] = [];
  const tcp: net.Server[] = [];
  const open = new Set<net.Socket>();
  const table = new TcpTable(limits, responder.stats);
  const out: string[] = [];
  const closeAll = async () => {
    for (const s of udp) s.close();
    for (const c of open) c.destroy();
    await Promise.all(tcp.map((t) => new Promise<void>((r) => t.close(() => r()))));
  };
  try {
    for (const addr of addresses) {
      for (let attempt = 0; ; attempt++) {
        const u = await bindUdp(addr, responder, log);
        const port = u.address().port;
        try {
          const t = await listenTcp({ host: addr.host, port }, responder, limits, log, open, table);
          udp.push(u);
          tcp.push(t);
          const shown = formatListen({ host: addr.host, port });
          out.push(`udp://${shown}`, `tcp://${shown}`);
          break;
        } catch (e) {
          u.close();
          if (addr.port !== 0 || attempt >= 20) throw e;
        }
      }
    }
  } catch (e) {
    await closeAll();
    throw e;
  }
  return { addresses: out, close: closeAll };
}

/**
 * Picks concrete ports for addresses given with port 0, free for both UDP and TCP right
 * now (the primary does this before forking workers, which then bind the same ports).
 */
export async function reservePorts(addresses: ListenAddress[]): Promise<ListenAddress[]> {
  const out: ListenAddress[] = [];
  for (const a of addresses) {
    if (a.port !== 0) {
      out.push(a);
      continue;
    }
    let found: number | undefined;
    for (let attempt = 0; attempt < 20 && found === undefined; attempt++) {
      const u = dgram.createSocket(net.isIPv6(a.host) ? 'udp6' : 'udp4');
      const port = await new Promise<number>((resolve, reject) => {
        u.once('error', reject);
        u.bind({ address: a.host, port: 0 }, () => resolve(u.address().port));
      });
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.createServer();
        s.once('error', () => resolve(false));
        s.listen({ host: a.host, port }, () => s.close(() => resolve(true)));
      });
      u.close();
      if (ok) found = port;
    }
    if (found === undefined) throw new Error(`dns: no free port for both UDP and TCP on ${a.host}`);
    out.push({ host: a.host, port: found });
  }
  return out;
}
