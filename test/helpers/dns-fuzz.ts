/**
 * The DNS fuzz generator (issue 20): deterministic (xorshift32, a seed and an index name every
 * packet), independent of the server's codec, used by the in-process fuzz
 * (gslb/dns/fuzz.test.ts), the burst against a running server (test/dns-fuzz-burst.test.ts)
 * and the 1M-packet campaign (bench/dns-fuzz.ts).
 *
 * Seeds are valid queries with every option a client sends: EDNS with and without DO,
 * ECS v4 and v6 (source prefixes 0 to full, scope 0), COOKIE (client only, client + server),
 * many OPT options at once (padding, keepalive, unknown codes), several names and types
 * (steered, CNAME, TXT too big for UDP, apex, NXDOMAIN, out of zone, ANY, 0x20 case).
 * Mutations: bit flips, truncation, count lies (QD/AN/NS/AR), length lies (label, OPT
 * RDLENGTH, option length), compression loops (a pointer to itself, two pointers to each
 * other, forward pointers, pointer chains), two OPT records, random overwrites, appended junk,
 * entirely random packets. TCP streams add framing lies: a length prefix larger or smaller
 * than the message, zero, 65535, a message split across writes at any byte, many pipelined
 * messages in one write, a prefix cut in half.
 */
import { xorshift32 } from './policy.js';

/** Floats in [0, 1) from xorshift32. */
export function fuzzRng(seed: number): () => number {
  const next = xorshift32(seed >>> 0 || 1);
  return () => next() / 0x100000000;
}

const NAMES = ['api.gslb.example.com', 'API.Gslb.Example.COM', 'www.gslb.example.com', 'big.gslb.example.com', 'gslb.example.com', 'nope.x.gslb.example.com', 'host.sub.gslb.example.com', 'example.org', 'a.b.c.d.e.f.g.h.gslb.example.com'];
const TYPES = [1, 28, 16, 5, 6, 2, 255, 15, 257, 65, 99];

function encodeName(name: string): Buffer {
  const parts = name.split('.').filter((p) => p !== '');
  return Buffer.concat([...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'latin1')])), Buffer.from([0])]);
}

function option(code: number, data: Buffer): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt16BE(code, 0);
  h.writeUInt16BE(data.length, 2);
  return Buffer.concat([h, data]);
}

function ecs(r: () => number): Buffer {
  if (r() < 0.5) {
    const prefix = [0, 8, 16, 20, 24, 25, 32][Math.floor(r() * 7)]!;
    const bytes = Math.ceil(prefix / 8);
    const addr = Buffer.from(Array.from({ length: bytes }, () => Math.floor(r() * 256)));
    if (prefix % 8 !== 0 && bytes > 0) addr[bytes - 1]! &= (0xff << (8 - (prefix % 8))) & 0xff;
    return option(8, Buffer.concat([Buffer.from([0, 1, prefix, 0]), addr]));
  }
  const prefix = [0, 32, 48, 56, 64, 128][Math.floor(r() * 6)]!;
  const bytes = Math.ceil(prefix / 8);
  const addr = Buffer.from(Array.from({ length: bytes }, () => Math.floor(r() * 256)));
  if (bytes > 0) addr[0] = 0x20 | (addr[0]! & 0x0f);
  return option(8, Buffer.concat([Buffer.from([0, 2, prefix, 0]), addr]));
}

function cookie(r: () => number): Buffer {
  const client = Buffer.from(Array.from({ length: 8 }, () => Math.floor(r() * 256)));
  if (r() < 0.5) return option(10, client);
  const server = Buffer.from(Array.from({ length: 8 + Math.floor(r() * 25) }, () => Math.floor(r() * 256)));
  return option(10, Buffer.concat([client, server]));
}

/** An OPT RR with `options`. */
function opt(udpSize: number, flags: number, options: Buffer[], version = 0): Buffer {
  const rdata = Buffer.concat(options);
  const h = Buffer.alloc(11);
  h[0] = 0;
  h.writeUInt16BE(41, 1);
  h.writeUInt16BE(udpSize, 3);
  h[5] = 0;
  h[6] = version;
  h.writeUInt16BE(flags, 7);
  h.writeUInt16BE(rdata.length, 9);
  return Buffer.concat([h, rdata]);
}

/** A valid query: header, one question, an OPT with a random mix of options (or none). */
export function seedQuery(r: () => number, id: number): Buffer {
  const name = NAMES[Math.floor(r() * NAMES.length)]!;
  const qtype = TYPES[Math.floor(r() * TYPES.length)]!;
  const options: Buffer[] = [];
  const kind = r();
  let withOpt = true;
  if (kind < 0.15) withOpt = false;
  else if (kind < 0.45) options.push(ecs(r));
  else if (kind < 0.6) options.push(cookie(r));
  else if (kind < 0.75) options.push(ecs(r), cookie(r));
  else if (kind < 0.9) {
    // Many options at once: padding, keepalive, unknown codes, and ECS/COOKIE among them.
    const n = 3 + Math.floor(r() * 18);
    for (let i = 0; i < n; i++) {
      const c = r();
      if (c < 0.2) options.push(option(12, Buffer.alloc(Math.floor(r() * 64))));
      else if (c < 0.3) options.push(option(11, Buffer.alloc(0)));
      else if (c < 0.35 && i === 0) options.push(ecs(r));
      else if (c < 0.4 && i === 1) options.push(cookie(r));
      else options.push(option(65001 + Math.floor(r() * 500), Buffer.from(Array.from({ length: Math.floor(r() * 12) }, () => Math.floor(r() * 256)))));
    }
  }
  const flags = r() < 0.3 ? 0x8000 : 0;
  const udp = [0, 512, 1232, 4096, 65535][Math.floor(r() * 5)]!;
  const ar = withOpt ? 1 : 0;
  const hdr = Buffer.from([id >> 8, id & 0xff, r() < 0.8 ? 1 : 0, 0, 0, 1, 0, 0, 0, 0, 0, ar]);
  const q = Buffer.alloc(4);
  q.writeUInt16BE(qtype, 0);
  q.writeUInt16BE(r() < 0.97 ? 1 : 3, 2);
  return Buffer.concat([hdr, encodeName(name), q, ...(withOpt ? [opt(udp, flags, options, r() < 0.03 ? 1 : 0)] : [])]);
}

/** The offset of the byte after the question name (12 + name length), or -1. */
function afterName(b: Buffer): number {
  let at = 12;
  while (at < b.length) {
    const len = b[at]!;
    if (len === 0) return at + 1;
    if ((len & 0xc0) !== 0) return at + 2;
    at += len + 1;
  }
  return -1;
}

/** The kinds of mutation, by name (for reports and failure messages). */
export const MUTATIONS = ['none', 'bitflip', 'truncate', 'counts', 'overwrite', 'append', 'random', 'compression-loop', 'label-length', 'opt-length', 'option-length', 'two-opts', 'pointers'] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** One packet: a seed mutated by one of MUTATIONS (index `i` picks it, `r` the details). */
export function fuzzPacket(r: () => number, i: number): { packet: Buffer; mutation: Mutation } {
  const mutation = MUTATIONS[Math.floor(r() * MUTATIONS.length)]!;
  const b = seedQuery(r, i & 0xffff);
  const end = afterName(b);
  switch (mutation) {
    case 'none':
      return { packet: b, mutation };
    case 'bitflip': {
      const n = 1 + Math.floor(r() * 8);
      for (let k = 0; k < n; k++) b[Math.floor(r() * b.length)]! ^= 1 << Math.floor(r() * 8);
      return { packet: b, mutation };
    }
    case 'truncate':
      return { packet: b.subarray(0, Math.floor(r() * b.length)), mutation };
    case 'counts': {
      const n = 1 + Math.floor(r() * 3);
      for (let k = 0; k < n; k++) b.writeUInt16BE([0, 2, 3, 0xff, 0xffff][Math.floor(r() * 5)]!, 4 + 2 * Math.floor(r() * 4));
      return { packet: b, mutation };
    }
    case 'overwrite': {
      const at = Math.floor(r() * b.length);
      const n = Math.min(b.length - at, 1 + Math.floor(r() * 16));
      for (let k = 0; k < n; k++) b[at + k] = Math.floor(r() * 256);
      return { packet: b, mutation };
    }
    case 'append':
      return { packet: Buffer.concat([b, Buffer.from(Array.from({ length: 1 + Math.floor(r() * 60) }, () => Math.floor(r() * 256)))]), mutation };
    case 'random':
      return { packet: Buffer.from(Array.from({ length: Math.floor(r() * 600) }, () => Math.floor(r() * 256))), mutation };
    case 'compression-loop': {
      // The question name becomes a pointer to itself, or two pointers to each other.
      if (r() < 0.5) return { packet: Buffer.concat([b.subarray(0, 12), Buffer.from([0xc0, 12, 0, 1, 0, 1])]), mutation };
      return { packet: Buffer.concat([b.subarray(0, 12), Buffer.from([1, 0x61, 0xc0, 16, 0xc0, 14, 0, 1, 0, 1])]), mutation };
    }
    case 'label-length': {
      // A label longer than what is left, or over 63.
      b[12] = r() < 0.5 ? 63 + Math.floor(r() * 1) : 64 + Math.floor(r() * 128);
      return { packet: b, mutation };
    }
    case 'opt-length': {
      // The OPT RDLENGTH (last RR) says more or less than there is.
      if (b.readUInt16BE(10) === 1 && end > 0 && b.length >= end + 4 + 11) b.writeUInt16BE([0, 1, 3, 0xffff, b.length][Math.floor(r() * 5)]! & 0xffff, end + 4 + 9);
      return { packet: b, mutation };
    }
    case 'option-length': {
      // The first option's length says more than there is (or an odd small number).
      const at = end + 4 + 11;
      if (b.readUInt16BE(10) === 1 && end > 0 && b.length >= at + 4) b.writeUInt16BE([0xffff, 1, 3, 7, 200][Math.floor(r() * 5)]!, at + 2);
      return { packet: b, mutation };
    }
    case 'two-opts': {
      const extra = opt(1232, 0, [ecs(r)]);
      b.writeUInt16BE(b.readUInt16BE(10) + 1, 10);
      return { packet: Buffer.concat([b, extra]), mutation };
    }
    case 'pointers':
    default: {
      // Pointers and label bytes sprinkled over the name: forward pointers, chains, past the end.
      const n = 1 + Math.floor(r() * 3);
      for (let k = 0; k < n; k++) {
        const at = 12 + Math.floor(r() * Math.max(1, b.length - 13));
        if (at + 1 < b.length) {
          b[at] = r() < 0.6 ? 0xc0 | Math.floor(r() * 4) : Math.floor(r() * 256);
          b[at + 1] = Math.floor(r() * 256);
        }
      }
      return { packet: b, mutation: 'pointers' };
    }
  }
}

/** The framing lies of a TCP stream. */
export const FRAMINGS = ['honest', 'split', 'pipelined', 'prefix-too-long', 'prefix-too-short', 'prefix-zero', 'prefix-65535', 'prefix-half'] as const;
export type Framing = (typeof FRAMINGS)[number];

/**
 * The writes of one TCP connection carrying `count` fuzz packets, each framed by one of
 * FRAMINGS. A lying prefix desynchronises the rest of the stream on purpose (the server must
 * drop the connection or keep reading, never crash); the writes are what a client sends, in
 * order. Returns how many packets the writes carry.
 */
export function fuzzTcpWrites(r: () => number, i: number, count: number): { writes: Buffer[]; framings: Framing[] } {
  const writes: Buffer[] = [];
  const framings: Framing[] = [];
  let pending: Buffer[] = [];
  for (let k = 0; k < count; k++) {
    const { packet } = fuzzPacket(r, i + k);
    const framing = r() < 0.6 ? 'honest' : FRAMINGS[Math.floor(r() * FRAMINGS.length)]!;
    framings.push(framing);
    const len = Buffer.alloc(2);
    const real = Math.min(packet.length, 0xffff);
    len.writeUInt16BE(
      framing === 'prefix-too-long' ? Math.min(0xffff, real + 1 + Math.floor(r() * 100)) : framing === 'prefix-too-short' ? Math.max(0, real - 1 - Math.floor(r() * 10)) : framing === 'prefix-zero' ? 0 : framing === 'prefix-65535' ? 0xffff : real,
    );
    const framed = Buffer.concat([len, packet.subarray(0, real)]);
    if (framing === 'prefix-half') {
      writes.push(...pending.splice(0), framed.subarray(0, 1), framed.subarray(1));
    } else if (framing === 'split') {
      const cut = 1 + Math.floor(r() * Math.max(1, framed.length - 1));
      writes.push(...pending.splice(0), framed.subarray(0, cut), framed.subarray(cut));
    } else if (framing === 'pipelined') {
      pending.push(framed);
      if (pending.length >= 8) writes.push(Buffer.concat(pending.splice(0)));
    } else {
      writes.push(...pending.splice(0), framed);
    }
  }
  if (pending.length > 0) writes.push(Buffer.concat(pending));
  pending = [];
  return { writes, framings };
}
