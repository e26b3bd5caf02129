/**
 * A small, independent DNS wire-format encoder and decoder for the integration tests.
 *
 * It exists so that tests can build packets no ordinary client sends (two OPT records,
 * a broken ECS option, QR=1, QDCOUNT 0 or 2, unknown opcodes) and read every bit of a
 * reply (header flags, the OPT record, the question name byte for byte). It shares no
 * code with the server on purpose: a bug in the server's parser cannot hide here.
 * Names keep their case exactly as given or received; nothing here lowercases.
 */

export const QTYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  HINFO: 13,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  OPT: 41,
  ANY: 255,
  CAA: 257,
} as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  BADVERS: 16,
} as const;

export const OPCODE = { QUERY: 0, IQUERY: 1, STATUS: 2, NOTIFY: 4, UPDATE: 5 } as const;

/** EDNS option codes used by the tests. */
export const EDNS_OPT = { ECS: 8, COOKIE: 10 } as const;

export interface EdnsOption {
  code: number;
  data: Buffer;
}

/** An OPT pseudo-record to put in a query's additional section (RFC 6891 §6.1.2). */
export interface OptSpec {
  /** Requestor's UDP payload size (the CLASS field). Default 1232. */
  udpSize?: number;
  /** Upper 8 bits of the extended RCODE (TTL byte 0). Default 0. */
  extRcode?: number;
  /** EDNS version (TTL byte 1). Default 0. */
  version?: number;
  /** The DO bit (RFC 3225). */
  do?: boolean;
  /** Options, encoded in order. Ignored when `rdata` is given. */
  options?: EdnsOption[];
  /** Raw RDATA to use as is (to build a malformed OPT). */
  rdata?: Buffer;
  /** Raw owner name (default: the root, a single 0 byte). */
  owner?: Buffer;
  /** RDLENGTH to write instead of the real length (to build a malformed OPT). */
  rdlengthOverride?: number;
}

export interface Question {
  name: string;
  qtype: number;
  qclass?: number;
}

export interface QuerySpec {
  id?: number;
  /** Shorthand for one question. */
  name?: string;
  qtype?: number;
  qclass?: number;
  /** Explicit question list (overrides name/qtype); may be empty. */
  questions?: Question[];
  /** QDCOUNT to write instead of questions.length. */
  qdcountOverride?: number;
  opcode?: number;
  qr?: boolean;
  aa?: boolean;
  tc?: boolean;
  rd?: boolean;
  cd?: boolean;
  ad?: boolean;
  /** One OPT record, or several (to build an invalid message), or none. */
  edns?: OptSpec | OptSpec[] | false;
}

/** Encodes a presentation-format name ("a.b.c" or "a.b.c.") keeping its case. */
export function encodeName(name: string): Buffer {
  const parts: Buffer[] = [];
  const trimmed = name.endsWith('.') ? name.slice(0, -1) : name;
  if (trimmed.length > 0) {
    for (const label of trimmed.split('.')) {
      const b = Buffer.from(label, 'latin1');
      if (b.length === 0 || b.length > 63) throw new Error(`wire: bad label in ${JSON.stringify(name)}`);
      parts.push(Buffer.from([b.length]), b);
    }
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}

/** Encodes an OPT record. */
export function encodeOpt(o: OptSpec): Buffer {
  const rdata =
    o.rdata ?? Buffer.concat((o.options ?? []).map((op) => Buffer.concat([u16(op.code), u16(op.data.length), op.data])));
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(QTYPE.OPT, 0);
  fixed.writeUInt16BE(o.udpSize ?? 1232, 2);
  fixed.writeUInt8(o.extRcode ?? 0, 4);
  fixed.writeUInt8(o.version ?? 0, 5);
  fixed.writeUInt16BE(o.do ? 0x8000 : 0, 6);
  fixed.writeUInt16BE(o.rdlengthOverride ?? rdata.length, 8);
  return Buffer.concat([o.owner ?? Buffer.from([0]), fixed, rdata]);
}

/** The header flags word for the given bits. */
export function flagsWord(s: Pick<QuerySpec, 'qr' | 'opcode' | 'aa' | 'tc' | 'rd' | 'ad' | 'cd'>): number {
  return (
    (s.qr ? 0x8000 : 0) |
    (((s.opcode ?? 0) & 0xf) << 11) |
    (s.aa ? 0x0400 : 0) |
    (s.tc ? 0x0200 : 0) |
    (s.rd ? 0x0100 : 0) |
    (s.ad ? 0x0020 : 0) |
    (s.cd ? 0x0010 : 0)
  );
}

let nextId = 0x1234;
/** A fresh query ID (deterministic sequence; distinct within a test run). */
export function newId(): number {
  nextId = (nextId * 1103515245 + 12345) & 0xffff;
  return nextId;
}

/** Builds a query message. Defaults: a fresh ID, RD=0, one OPT with udp 1232, class IN. */
export function buildQuery(spec: QuerySpec): Buffer {
  const questions: Question[] = spec.questions ?? (spec.name !== undefined ? [{ name: spec.name, qtype: spec.qtype ?? QTYPE.A, qclass: spec.qclass }] : []);
  const opts: OptSpec[] = spec.edns === false ? [] : Array.isArray(spec.edns) ? spec.edns : [spec.edns ?? {}];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(spec.id ?? newId(), 0);
  header.writeUInt16BE(flagsWord(spec), 2);
  header.writeUInt16BE(spec.qdcountOverride ?? questions.length, 4);
  header.writeUInt16BE(0, 6);
  header.writeUInt16BE(0, 8);
  header.writeUInt16BE(opts.length, 10);
  const qparts = questions.map((q) => Buffer.concat([encodeName(q.name), u16(q.qtype), u16(q.qclass ?? 1)]));
  return Buffer.concat([header, ...qparts, ...opts.map(encodeOpt)]);
}

/** An ECS option (RFC 7871 §6) with every field given explicitly, valid or not. */
export function ecsOptionRaw(family: number, sourcePrefix: number, scopePrefix: number, address: Buffer): EdnsOption {
  const head = Buffer.alloc(4);
  head.writeUInt16BE(family, 0);
  head.writeUInt8(sourcePrefix, 2);
  head.writeUInt8(scopePrefix, 3);
  return { code: EDNS_OPT.ECS, data: Buffer.concat([head, address]) };
}

/** Parses an IPv4 or IPv6 address (no zone id) into its bytes. */
export function ipBytes(addr: string): Buffer {
  if (addr.includes(':')) {
    const [headS, tailS] = addr.includes('::') ? (addr.split('::') as [string, string]) : [addr, ''];
    const head = headS ? headS.split(':') : [];
    const tail = tailS ? tailS.split(':') : [];
    const fill = addr.includes('::') ? 8 - head.length - tail.length : 0;
    const groups = [...head, ...Array<string>(fill).fill('0'), ...tail];
    if (groups.length !== 8) throw new Error(`wire: bad IPv6 address ${addr}`);
    const b = Buffer.alloc(16);
    groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
    return b;
  }
  const parts = addr.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !(p >= 0 && p <= 255))) throw new Error(`wire: bad IPv4 address ${addr}`);
  return Buffer.from(parts);
}

/** A well-formed ECS option for `addr/prefix` (address truncated to the prefix, RFC 7871 §6). */
export function ecsOption(cidr: string): EdnsOption {
  const [addr, p] = cidr.split('/') as [string, string];
  const prefix = Number(p);
  const full = ipBytes(addr);
  const family = full.length === 4 ? 1 : 2;
  const bytes = Buffer.from(full.subarray(0, Math.ceil(prefix / 8)));
  if (prefix % 8 !== 0 && bytes.length > 0) bytes[bytes.length - 1]! &= (0xff << (8 - (prefix % 8))) & 0xff;
  return ecsOptionRaw(family, prefix, 0, bytes);
}

// ---------------------------------------------------------------- decoding

export interface ResourceRecord {
  name: string;
  type: number;
  class: number;
  ttl: number;
  rdata: Buffer;
  /** Offset of the RDATA in the message (for names compressed inside RDATA). */
  rdataOffset: number;
}

export interface ParsedQuestion {
  name: string;
  /** The name's labels exactly as received (length bytes and label bytes, uncompressed). */
  nameWire: Buffer;
  qtype: number;
  qclass: number;
}

export interface ParsedOpt {
  owner: string;
  udpSize: number;
  extRcode: number;
  version: number;
  do: boolean;
  /** The other 15 flag bits (Z). */
  z: number;
  options: EdnsOption[];
}

export interface Message {
  buf: Buffer;
  id: number;
  qr: boolean;
  opcode: number;
  aa: boolean;
  tc: boolean;
  rd: boolean;
  ra: boolean;
  z: boolean;
  ad: boolean;
  cd: boolean;
  /** The 4-bit header RCODE. */
  rcode: number;
  /** Header RCODE combined with the OPT extended RCODE (RFC 6891 §6.1.3). */
  fullRcode: number;
  qdcount: number;
  ancount: number;
  nscount: number;
  arcount: number;
  questions: ParsedQuestion[];
  answers: ResourceRecord[];
  authority: ResourceRecord[];
  /** Additional records other than OPT. */
  additional: ResourceRecord[];
  /** Every OPT record found in the additional section. */
  opts: ParsedOpt[];
  opt: ParsedOpt | undefined;
}

/** Reads a possibly compressed name at `offset`; returns the name, its raw labels and the end offset. */
export function readName(buf: Buffer, offset: number): { name: string; wire: Buffer; end: number } {
  const labels: string[] = [];
  const wire: Buffer[] = [];
  let pos = offset;
  let end = -1;
  for (let hops = 0; hops < 128; hops++) {
    if (pos >= buf.length) throw new Error('wire: name runs past the end of the message');
    const len = buf[pos]!;
    if ((len & 0xc0) === 0xc0) {
      if (pos + 1 >= buf.length) throw new Error('wire: truncated compression pointer');
      if (end < 0) end = pos + 2;
      pos = ((len & 0x3f) << 8) | buf[pos + 1]!;
      continue;
    }
    if ((len & 0xc0) !== 0) throw new Error('wire: unsupported label type');
    if (len === 0) {
      wire.push(Buffer.from([0]));
      if (end < 0) end = pos + 1;
      return { name: labels.length ? labels.join('.') + '.' : '.', wire: Buffer.concat(wire), end };
    }
    if (pos + 1 + len > buf.length) throw new Error('wire: label runs past the end of the message');
    const label = buf.subarray(pos + 1, pos + 1 + len);
    wire.push(buf.subarray(pos, pos + 1 + len));
    labels.push(label.toString('latin1'));
    pos += 1 + len;
  }
  throw new Error('wire: compression loop');
}

function readRR(buf: Buffer, offset: number): { rr: ResourceRecord; end: number } {
  const { name, end: nEnd } = readName(buf, offset);
  if (nEnd + 10 > buf.length) throw new Error('wire: truncated resource record');
  const type = buf.readUInt16BE(nEnd);
  const cls = buf.readUInt16BE(nEnd + 2);
  const ttl = buf.readUInt32BE(nEnd + 4);
  const rdlen = buf.readUInt16BE(nEnd + 8);
  const rdataOffset = nEnd + 10;
  if (rdataOffset + rdlen > buf.length) throw new Error('wire: truncated RDATA');
  return { rr: { name, type, class: cls, ttl, rdata: buf.subarray(rdataOffset, rdataOffset + rdlen), rdataOffset }, end: rdataOffset + rdlen };
}

function parseOptions(rdata: Buffer): EdnsOption[] {
  const out: EdnsOption[] = [];
  let p = 0;
  while (p + 4 <= rdata.length) {
    const code = rdata.readUInt16BE(p);
    const len = rdata.readUInt16BE(p + 2);
    if (p + 4 + len > rdata.length) throw new Error('wire: EDNS option runs past the OPT RDATA');
    out.push({ code, data: rdata.subarray(p + 4, p + 4 + len) });
    p += 4 + len;
  }
  if (p !== rdata.length) throw new Error('wire: trailing bytes in the OPT RDATA');
  return out;
}

/** Parses a whole DNS message. Throws on anything malformed. */
export function parseMessage(buf: Buffer): Message {
  if (buf.length < 12) throw new Error(`wire: message of ${buf.length} bytes is shorter than a header`);
  const flags = buf.readUInt16BE(2);
  const m: Message = {
    buf,
    id: buf.readUInt16BE(0),
    qr: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    aa: (flags & 0x0400) !== 0,
    tc: (flags & 0x0200) !== 0,
    rd: (flags & 0x0100) !== 0,
    ra: (flags & 0x0080) !== 0,
    z: (flags & 0x0040) !== 0,
    ad: (flags & 0x0020) !== 0,
    cd: (flags & 0x0010) !== 0,
    rcode: flags & 0xf,
    fullRcode: flags & 0xf,
    qdcount: buf.readUInt16BE(4),
    ancount: buf.readUInt16BE(6),
    nscount: buf.readUInt16BE(8),
    arcount: buf.readUInt16BE(10),
    questions: [],
    answers: [],
    authority: [],
    additional: [],
    opts: [],
    opt: undefined,
  };
  let pos = 12;
  for (let i = 0; i < m.qdcount; i++) {
    const { name, wire, end } = readName(buf, pos);
    if (end + 4 > buf.length) throw new Error('wire: truncated question');
    m.questions.push({ name, nameWire: wire, qtype: buf.readUInt16BE(end), qclass: buf.readUInt16BE(end + 2) });
    pos = end + 4;
  }
  const sections: [number, ResourceRecord[]][] = [
    [m.ancount, m.answers],
    [m.nscount, m.authority],
    [m.arcount, m.additional],
  ];
  for (const [count, list] of sections) {
    for (let i = 0; i < count; i++) {
      const { rr, end } = readRR(buf, pos);
      pos = end;
      if (list === m.additional && rr.type === QTYPE.OPT) {
        const ttl = rr.ttl;
        m.opts.push({
          owner: rr.name,
          udpSize: rr.class,
          extRcode: ttl >>> 24,
          version: (ttl >>> 16) & 0xff,
          do: (ttl & 0x8000) !== 0,
          z: ttl & 0x7fff,
          options: parseOptions(rr.rdata),
        });
      } else list.push(rr);
    }
  }
  if (pos !== buf.length) throw new Error(`wire: ${buf.length - pos} trailing bytes after the last record`);
  m.opt = m.opts[0];
  if (m.opt) m.fullRcode = (m.opt.extRcode << 4) | m.rcode;
  return m;
}

/** The dotted/colon text of an A or AAAA RDATA. */
export function rdataAddress(rr: ResourceRecord): string {
  if (rr.type === QTYPE.A && rr.rdata.length === 4) return [...rr.rdata].join('.');
  if (rr.type === QTYPE.AAAA && rr.rdata.length === 16) return formatIPv6(rr.rdata);
  throw new Error(`wire: not an address record (type ${rr.type}, ${rr.rdata.length} bytes)`);
}

/** Canonical (RFC 5952) text of 16 address bytes. */
export function formatIPv6(b: Buffer): string {
  const g: number[] = [];
  for (let i = 0; i < 16; i += 2) g.push(b.readUInt16BE(i));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  return hex.slice(0, bestStart).join(':') + '::' + hex.slice(bestStart + bestLen).join(':');
}

/** The character-strings of a TXT RDATA. */
export function txtStrings(rdata: Buffer): string[] {
  const out: string[] = [];
  let p = 0;
  while (p < rdata.length) {
    const len = rdata[p]!;
    if (p + 1 + len > rdata.length) throw new Error('wire: TXT string runs past its RDATA');
    out.push(rdata.subarray(p + 1, p + 1 + len).toString('latin1'));
    p += 1 + len;
  }
  return out;
}

export interface SoaData {
  mname: string;
  rname: string;
  serial: number;
  refresh: number;
  retry: number;
  expire: number;
  minimum: number;
}

/** The fields of an SOA record (names may be compressed against the message). */
export function soaData(msg: Message, rr: ResourceRecord): SoaData {
  const m = readName(msg.buf, rr.rdataOffset);
  const r = readName(msg.buf, m.end);
  const p = r.end;
  return {
    mname: m.name,
    rname: r.name,
    serial: msg.buf.readUInt32BE(p),
    refresh: msg.buf.readUInt32BE(p + 4),
    retry: msg.buf.readUInt32BE(p + 8),
    expire: msg.buf.readUInt32BE(p + 12),
    minimum: msg.buf.readUInt32BE(p + 16),
  };
}

/** The target name of a CNAME/NS/PTR record. */
export function rdataName(msg: Message, rr: ResourceRecord): string {
  return readName(msg.buf, rr.rdataOffset).name;
}

export interface EcsData {
  family: number;
  sourcePrefix: number;
  scopePrefix: number;
  address: Buffer;
}

/** Decodes an ECS option's payload. */
export function parseEcs(data: Buffer): EcsData {
  if (data.length < 4) throw new Error('wire: ECS option shorter than 4 bytes');
  return { family: data.readUInt16BE(0), sourcePrefix: data[2]!, scopePrefix: data[3]!, address: data.subarray(4) };
}

/** Prepends the two-byte length used on TCP (RFC 1035 §4.2.2). */
export function frame(msg: Buffer): Buffer {
  return Buffer.concat([u16(msg.length), msg]);
}
