/**
 * A small DNS client for `gridsteer check-delegation`: one question to one server over UDP
 * or TCP, with or without an EDNS OPT record, bounded by a timeout, never throwing (every
 * failure is an Outcome with a reason).
 *
 * The messages are encoded and parsed with dns2's `Packet` class; the sockets are our own
 * (node:dgram, node:net), because dns2 3.0.0's clients cannot do what the checks need:
 *  - `UDPClient` adds an OPT record only together with an EDNS Client Subnet option (and a
 *    `clientIp` of `0.0.0.0/0` goes out as a /32), so a plain EDNS query cannot be sent; it
 *    uses an unconnected socket, so a port that is closed costs the whole timeout instead of
 *    failing at once with ICMP port unreachable.
 *  - `TCPClient` has no timeout (a server that accepts and stays silent hangs the command),
 *    takes the host as `dns.split(':')[0]` (an IPv6 address such as `::1` becomes `''`,
 *    i.e. localhost: the wrong server is asked), and does not check the reply's id.
 * What dns2 gives and we use: the encoder (header bits, question, OPT via
 * `Packet.Resource.EDNS`) and the parser (the AA/TC bits, every section, A, AAAA, NS,
 * SOA, CNAME and the OPT record's payload size and version).
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import { Packet, type Resource } from 'dns2';

export interface Endpoint {
  host: string;
  port: number;
}

export type QType = 'A' | 'AAAA' | 'NS' | 'SOA';

/** One resource record, names lowercased without the trailing dot. */
export interface Rec {
  name: string;
  type: string;
  ttl: number;
  /** A/AAAA: the address; NS/CNAME: the target name; SOA: `mname rname serial`; else ''. */
  data: string;
  /** SOA only. */
  serial?: number;
}

export interface Reply {
  transport: 'udp' | 'tcp';
  rcode: string;
  aa: boolean;
  tc: boolean;
  ra: boolean;
  answer: Rec[];
  authority: Rec[];
  /** Without the OPT record (see `opt`). */
  additional: Rec[];
  opt: { udpPayload: number; version: number } | null;
}

export type Outcome = { ok: true; reply: Reply } | { ok: false; error: string };

export interface QueryOptions {
  transport: 'udp' | 'tcp';
  /** Send an OPT record (EDNS0, UDP payload 1232). */
  edns: boolean;
  /** The RD bit: true for a resolver, false for an authoritative server. */
  rd: boolean;
  /** Per try. */
  timeoutMs: number;
  /** UDP tries when no reply came (a refused port is not retried). Default 2. */
  tries?: number;
  /** Ask again over TCP when the UDP reply is truncated. Default false. */
  tcpOnTruncation?: boolean;
}

/** The query the checks send; injectable so that the logic can be tested without sockets. */
export type QueryFn = (server: Endpoint, name: string, type: QType, opts: QueryOptions) => Promise<Outcome>;

const RCODES: Record<number, string> = { 0: 'NOERROR', 1: 'FORMERR', 2: 'SERVFAIL', 3: 'NXDOMAIN', 4: 'NOTIMP', 5: 'REFUSED', 16: 'BADVERS' };
const TYPE_NAMES = new Map<number, string>(Object.entries(Packet.TYPE).map(([k, v]) => [v as number, k]));
const OPT = 41;

export function rcodeName(n: number): string {
  return RCODES[n] ?? `RCODE${n}`;
}

/** `host:port`, IPv6 in brackets. */
export function formatEndpoint(e: Endpoint): string {
  return net.isIPv6(e.host) ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}

/** Lowercase, no trailing dot. */
export function normName(n: string): string {
  return n.replace(/\.$/, '').toLowerCase();
}

/** The canonical text of an IP address (RFC 5952 for IPv6), so that equal addresses compare equal. */
export function canonicalIp(a: string): string {
  if (net.isIPv6(a)) return new URL(`http://[${a}]/`).hostname.slice(1, -1);
  return a;
}

/** The wire bytes of a query (dns2's encoder). */
export function encodeQuery(id: number, name: string, type: QType, edns: boolean, rd: boolean): Buffer {
  const q = new Packet();
  q.header.id = id;
  q.header.rd = rd ? 1 : 0;
  q.questions.push(new Packet.Question(name, Packet.TYPE[type], Packet.CLASS.IN));
  if (edns) {
    // dns2 types EDNS() with one parameter; at run time the second sets the payload size.
    const makeOpt = Packet.Resource.EDNS as unknown as (rdata: object[], o: { udpPayloadSize: number }) => Resource;
    q.additionals.push(makeOpt([], { udpPayloadSize: 1232 }));
  }
  return q.toBuffer();
}

function toRec(r: Resource): Rec {
  const type = TYPE_NAMES.get(r.type) ?? `TYPE${r.type}`;
  let data = '';
  let serial: number | undefined;
  if (type === 'A' || type === 'AAAA') data = canonicalIp(String(r.address ?? ''));
  else if (type === 'NS') data = normName(String(r.ns ?? ''));
  else if (type === 'CNAME') data = normName(String(r.domain ?? ''));
  else if (type === 'SOA') {
    serial = r.serial;
    data = `${normName(String(r.primary ?? ''))} ${normName(String(r.admin ?? ''))} ${r.serial}`;
  }
  return { name: normName(String(r.name ?? '')), type, ttl: r.ttl, data, ...(serial === undefined ? {} : { serial }) };
}

/**
 * Parses a reply with dns2 and checks that it answers the query (QR set, same id, same
 * question); a string says why it does not.
 */
export function decodeReply(buf: Buffer, id: number, name: string, type: QType, transport: 'udp' | 'tcp'): Reply | string {
  if (buf.length < 12) return `malformed reply (${buf.length} bytes)`;
  let p: Packet;
  try {
    p = Packet.parse(buf);
  } catch (e) {
    return `malformed reply: ${(e as Error).message}`;
  }
  if (p.header.id !== id) return `reply with another id (${p.header.id}, sent ${id})`;
  if (p.header.qr !== 1) return 'a query came back, not a reply';
  const q = p.questions[0];
  if (q && (normName(q.name) !== normName(name) || q.type !== Packet.TYPE[type])) return `reply to another question (${q.name} type ${q.type})`;
  const optRec = p.additionals.find((r) => r && r.type === OPT) as (Resource & { version?: number }) | undefined;
  return {
    transport,
    rcode: rcodeName(p.header.rcode),
    aa: p.header.aa === 1,
    tc: p.header.tc === 1,
    ra: p.header.ra === 1,
    answer: p.answers.filter(Boolean).map(toRec),
    authority: p.authorities.filter(Boolean).map(toRec),
    additional: p.additionals.filter((r) => r && r.type !== OPT).map(toRec),
    opt: optRec ? { udpPayload: optRec.class, version: optRec.version ?? 0 } : null,
  };
}

function errText(e: NodeJS.ErrnoException, transport: 'udp' | 'tcp'): string {
  if (e.code === 'ECONNREFUSED') return transport === 'udp' ? 'port unreachable (ECONNREFUSED)' : 'connection refused (ECONNREFUSED)';
  if (e.code === 'ENETUNREACH' || e.code === 'EHOSTUNREACH') return `no route to it from here (${e.code})`;
  if (e.code === 'EADDRNOTAVAIL' || e.code === 'EAFNOSUPPORT') return `this host cannot send to that address family or address (${e.code})`;
  return e.message;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function udpOnce(server: Endpoint, name: string, type: QType, opts: QueryOptions): Promise<Outcome & { retry?: boolean }> {
  const id = randomInt(0x10000);
  const msg = encodeQuery(id, name, type, opts.edns, opts.rd);
  return new Promise((resolve) => {
    const sock = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
    let done = false;
    const finish = (o: Outcome & { retry?: boolean }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.close();
      resolve(o);
    };
    const timer = setTimeout(() => finish({ ok: false, error: `no reply within ${seconds(opts.timeoutMs)}`, retry: true }), opts.timeoutMs);
    sock.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, error: errText(e, 'udp') }));
    sock.on('message', (buf) => {
      const r = decodeReply(buf, id, name, type, 'udp');
      // A stray datagram (another id) is ignored: keep waiting for ours until the bound.
      if (typeof r === 'string') {
        if (!r.startsWith('reply with another id')) finish({ ok: false, error: r });
        return;
      }
      finish({ ok: true, reply: r });
    });
    // A connected socket hears ICMP port unreachable as ECONNREFUSED: a stopped server fails at once.
    // connect() hands its own failure (no route: ENETUNREACH, EHOSTUNREACH; an IPv6 address on a
    // host without IPv6: EADDRNOTAVAIL) to the callback, not to 'error'; sending on the socket that
    // did not connect would take the callback for the port and throw (issue 33).
    sock.connect(server.port, server.host, (ce?: Error) => {
      if (ce) {
        finish({ ok: false, error: errText(ce as NodeJS.ErrnoException, 'udp') });
        return;
      }
      sock.send(msg, (e) => {
        if (e) finish({ ok: false, error: errText(e as NodeJS.ErrnoException, 'udp') });
      });
    });
  });
}

function tcpOnce(server: Endpoint, name: string, type: QType, opts: QueryOptions): Promise<Outcome> {
  const id = randomInt(0x10000);
  const msg = encodeQuery(id, name, type, opts.edns, opts.rd);
  return new Promise((resolve) => {
    const sock = net.connect({ host: server.host, port: server.port });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (o: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(o);
    };
    const timer = setTimeout(() => finish({ ok: false, error: `no reply within ${seconds(opts.timeoutMs)} over TCP` }), opts.timeoutMs);
    sock.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, error: errText(e, 'tcp') }));
    sock.on('close', () => finish({ ok: false, error: 'the server closed the TCP connection without a reply' }));
    sock.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(msg.length);
      sock.write(Buffer.concat([len, msg]));
    });
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 2) return;
      const n = buf.readUInt16BE(0);
      if (buf.length < 2 + n) return;
      const r = decodeReply(buf.subarray(2, 2 + n), id, name, type, 'tcp');
      finish(typeof r === 'string' ? { ok: false, error: r } : { ok: true, reply: r });
    });
  });
}

/** One question to one server; never throws, always settles within (tries + 1) × timeout. */
export const dnsQuery: QueryFn = async (server, name, type, opts) => {
  if (opts.transport === 'tcp') return tcpOnce(server, name, type, opts);
  const tries = Math.max(1, opts.tries ?? 2);
  let last: Outcome & { retry?: boolean } = { ok: false, error: 'not sent' };
  for (let i = 0; i < tries; i++) {
    last = await udpOnce(server, name, type, opts);
    if (last.ok || !last.retry) break;
  }
  if (last.ok && last.reply.tc && opts.tcpOnTruncation) return tcpOnce(server, name, type, opts);
  const { retry: _retry, ...outcome } = last;
  return outcome;
};
