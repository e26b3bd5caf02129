/**
 * Raw UDP and TCP exchanges with a DNS server on loopback. Every wait is bounded: a
 * helper resolves with what arrived (or null / 'timeout') and never hangs a test.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { frame } from './wire.js';

export interface Endpoint {
  host: string;
  port: number;
}

function udpType(host: string): 'udp4' | 'udp6' {
  return net.isIPv6(host) ? 'udp6' : 'udp4';
}

/**
 * Sends each packet in order from one UDP socket and collects every datagram that comes
 * back within `waitMs` (the wait ends early once `expect` datagrams have arrived).
 */
export async function udpCollect(
  ep: Endpoint,
  packets: Buffer[],
  opts: { waitMs?: number; expect?: number } = {},
): Promise<Buffer[]> {
  const waitMs = opts.waitMs ?? 3000;
  const sock = dgram.createSocket(udpType(ep.host));
  const got: Buffer[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(0, net.isIPv6(ep.host) ? '::1' : '127.0.0.1', () => resolve());
    });
    return await new Promise<Buffer[]>((resolve) => {
      const timer = setTimeout(() => resolve(got), waitMs);
      sock.on('message', (msg) => {
        got.push(msg);
        if (opts.expect !== undefined && got.length >= opts.expect) {
          clearTimeout(timer);
          resolve(got);
        }
      });
      sock.on('error', () => {
        // ICMP port unreachable and the like: keep waiting until the bound.
      });
      for (const p of packets) sock.send(p, ep.port, ep.host);
    });
  } finally {
    sock.close();
  }
}

/** One UDP query, one reply (or null when nothing came back within `timeoutMs`). */
export async function udpExchange(ep: Endpoint, packet: Buffer, timeoutMs = 3000): Promise<Buffer | null> {
  const id = packet.readUInt16BE(0);
  const replies = await udpCollect(ep, [packet], { waitMs: timeoutMs, expect: 1 });
  return replies.find((r) => r.length >= 2 && r.readUInt16BE(0) === id) ?? replies[0] ?? null;
}

export type TcpEvent = Buffer | 'closed' | 'timeout';

/**
 * A TCP connection that splits the byte stream into length-framed DNS messages.
 * `next()` waits (bounded) for the next message or for the peer closing.
 */
export class FramedTcp {
  readonly socket: net.Socket;
  private pending = Buffer.alloc(0);
  private readonly queue: Buffer[] = [];
  private closedFlag = false;
  private waiter: (() => void) | null = null;
  /** Set once the peer has closed (FIN, RST or error). */
  closedAt: number | null = null;
  error: Error | null = null;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => {
      this.pending = Buffer.concat([this.pending, d]);
      while (this.pending.length >= 2) {
        const len = this.pending.readUInt16BE(0);
        if (this.pending.length < 2 + len) break;
        this.queue.push(this.pending.subarray(2, 2 + len));
        this.pending = this.pending.subarray(2 + len);
      }
      this.wake();
    });
    const onClose = () => {
      if (!this.closedFlag) {
        this.closedFlag = true;
        this.closedAt = Date.now();
      }
      this.wake();
    };
    socket.on('end', onClose);
    socket.on('close', onClose);
    socket.on('error', (e) => {
      this.error = e;
      onClose();
    });
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** Connects (bounded by `timeoutMs`); rejects when the connection cannot be made. */
  static connect(ep: Endpoint, timeoutMs = 3000): Promise<FramedTcp> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: ep.host, port: ep.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`tcp connect to ${ep.host}:${ep.port} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const onError = (e: Error) => {
        clearTimeout(timer);
        reject(e);
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        const framed = new FramedTcp(socket);
        socket.removeListener('error', onError);
        resolve(framed);
      });
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Writes the given messages framed, all in a single write. */
  send(...msgs: Buffer[]): void {
    this.socket.write(Buffer.concat(msgs.map(frame)));
  }

  /** The next message, 'closed' when the peer closed first, or 'timeout'. */
  async next(timeoutMs = 3000): Promise<TcpEvent> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const m = this.queue.shift();
      if (m) return m;
      if (this.closedFlag) return 'closed';
      const left = deadline - Date.now();
      if (left <= 0) return 'timeout';
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          this.waiter = null;
          resolve();
        }, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** Waits (bounded) until the peer closes; true when it did. Messages received meanwhile are kept. */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closedFlag) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return true;
  }

  /** Closes our side and frees the socket. */
  destroy(): void {
    this.socket.destroy();
  }
}

/** Sends the queries in one write on a fresh connection and reads `expect` replies (bounded). */
export async function tcpExchange(ep: Endpoint, queries: Buffer[], timeoutMs = 5000): Promise<Buffer[]> {
  const c = await FramedTcp.connect(ep, timeoutMs);
  try {
    c.send(...queries);
    const out: Buffer[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < queries.length) {
      const ev = await c.next(Math.max(1, deadline - Date.now()));
      if (typeof ev === 'string') break;
      out.push(ev);
    }
    return out;
  } finally {
    c.destroy();
  }
}

/** Resolves true when a TCP connection to the endpoint is refused (nothing listening). */
export async function tcpRefused(ep: Endpoint, timeoutMs = 3000): Promise<boolean> {
  try {
    const c = await FramedTcp.connect(ep, timeoutMs);
    c.destroy();
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ECONNREFUSED';
  }
}

/** Bounded sleep. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
