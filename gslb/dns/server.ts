/**
 * UDP and TCP listeners around a Responder. UDP: one datagram in, at most one out.
 * TCP (RFC 1035 §4.2.2, RFC 7766): 2-byte length framing, pipelined queries answered in
 * order, an idle timeout, and limits on open connections per process and per client.
 * Nothing here throws into the event loop: socket errors close that socket and are counted.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from 'pino';
import type { Responder } from './respond.js';
import { formatListen, parseListenWith, type ListenAddress, type ListenRules } from '../platform/listen.js';

export interface TcpLimits {
  idleTimeoutMs: number;
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

function listenTcp(addr: ListenAddress, responder: Responder, limits: TcpLimits, log: Logger, open: Set<net.Socket>): Promise<net.Server> {
  const perClient = new Map<string, number>();
  const stats = responder.stats;
  const server = net.createServer({ noDelay: true, pauseOnConnect: false }, (sock) => {
    const client = sock.remoteAddress ?? '?';
    const count = perClient.get(client) ?? 0;
    if (open.size >= limits.maxConnections) {
      stats.tcpRejected++;
      sock.destroy();
      return;
    }
    if (count >= limits.maxConnectionsPerClient) {
      stats.tcpRejectedPerClient++;
      sock.destroy();
      return;
    }
    perClient.set(client, count + 1);
    open.add(sock);
    stats.tcpAccepted++;
    stats.tcpOpen = open.size;
    sock.setTimeout(limits.idleTimeoutMs);
    sock.on('timeout', () => {
      stats.tcpIdleClosed++;
      sock.destroy();
    });
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      open.delete(sock);
      stats.tcpOpen = open.size;
      const c = (perClient.get(client) ?? 1) - 1;
      if (c <= 0) perClient.delete(client);
      else perClient.set(client, c);
    });
    let pending: Buffer = Buffer.alloc(0);
    let scheduled = false;
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
      if (pending.length === 0) pending = Buffer.alloc(0);
      else if (pending.byteOffset !== 0) pending = Buffer.from(pending);
    };
    sock.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
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
          const t = await listenTcp({ host: addr.host, port }, responder, limits, log, open);
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
