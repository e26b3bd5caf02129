/**
 * A complete DNS message codec (RFC 1035 §4, RFC 6891 OPT): encoder with name compression
 * and a strict decoder. Used to build answer templates at zone compile time, and by tests
 * and tooling. The query hot path does not use it (see query.ts).
 */
import { isIP } from 'node:net';
import { QTYPE } from './constants.js';
import { MAX_LABEL, MAX_NAME, asciiLower, escapeLabel, labelsOf } from './name.js';

/** Thrown by the decoder; `message` names what is wrong and where. */
export class DecodeError extends Error {}

export type RData =
  | { kind: 'raw'; bytes: Buffer }
  /** NS, CNAME, PTR: one compressible name. */
  | { kind: 'name'; name: string }
  | { kind: 'mx'; preference: number; exchange: string }
  | { kind: 'soa'; mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number };

export interface Question {
  name: string;
  type: number;
  class: number;
}

export interface ResourceRecord {
  name: string;
  type: number;
  class: number;
  ttl: number;
  data: RData;
}

export interface EdnsOption {
  code: number;
  data: Buffer;
}

export interface Edns {
  udpSize: number;
  extRcode: number;
  version: number;
  /** The 16 flag bits (DO = 0x8000). */
  flags: number;
  options: EdnsOption[];
}

export interface Message {
  id: number;
  /** The whole 16-bit flags word (QR, opcode, AA, TC, RD, RA, Z, AD, CD, rcode). */
  flags: number;
  questions: Question[];
  answers: ResourceRecord[];
  authority: ResourceRecord[];
  additional: ResourceRecord[];
  /** The OPT record, when present (kept out of `additional`). */
  edns?: Edns;
}

/** Types whose RDATA names may be compressed (RFC 3597 §4: only the RFC 1035 types). */
const COMPRESSIBLE = new Set<number>([QTYPE.NS, QTYPE.CNAME, QTYPE.PTR, QTYPE.MX, QTYPE.SOA]);

/** Grows as it writes; compresses names against everything written before. */
export class MessageWriter {
  private buf: Buffer;
  pos = 0;
  private readonly offsets = new Map<string, number>();
  /** Offsets of every compression pointer written (answer templates shift them). */
  readonly pointers: number[] = [];

  constructor(size = 512) {
    this.buf = Buffer.alloc(size);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
    return this;
  }
  u16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v & 0xffff, this.pos);
    this.pos += 2;
    return this;
  }
  u32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }
  bytes(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }
  at(offset: number): { u16(v: number): void } {
    return { u16: (v: number) => void this.buf.writeUInt16BE(v & 0xffff, offset) };
  }

  /** Writes a name; compressed against earlier names unless `compress` is false. */
  name(name: string, compress = true): this {
    const labels = labelsOf(name);
    for (let i = 0; i < labels.length; i++) {
      const suffix = asciiLower(labels.slice(i).join('.'));
      const seen = compress ? this.offsets.get(suffix) : undefined;
      if (seen !== undefined) {
        this.pointers.push(this.pos);
        return this.u16(0xc000 | seen);
      }
      if (this.pos < 0x4000 && !this.offsets.has(suffix)) this.offsets.set(suffix, this.pos);
      const b = Buffer.from(labels[i]!, 'latin1');
      if (b.length > MAX_LABEL) throw new DecodeError(`label longer than ${MAX_LABEL}`);
      this.u8(b.length).bytes(b);
    }
    return this.u8(0);
  }

  rdata(type: number, d: RData): this {
    const lenAt = this.pos;
    this.u16(0);
    const start = this.pos;
    const c = COMPRESSIBLE.has(type);
    switch (d.kind) {
      case 'raw':
        this.bytes(d.bytes);
        break;
      case 'name':
        this.name(d.name, c);
        break;
      case 'mx':
        this.u16(d.preference).name(d.exchange, c);
        break;
      case 'soa':
        this.name(d.mname, c).name(d.rname, c).u32(d.serial).u32(d.refresh).u32(d.retry).u32(d.expire).u32(d.minimum);
        break;
    }
    this.buf.writeUInt16BE(this.pos - start, lenAt);
    return this;
  }

  record(rr: ResourceRecord): this {
    return this.name(rr.name).u16(rr.type).u16(rr.class).u32(rr.ttl).rdata(rr.type, rr.data);
  }

  opt(e: Edns): this {
    this.u8(0).u16(QTYPE.OPT).u16(e.udpSize);
    this.u8(e.extRcode).u8(e.version).u16(e.flags);
    const lenAt = this.pos;
    this.u16(0);
    const start = this.pos;
    for (const o of e.options) this.u16(o.code).u16(o.data.length).bytes(o.data);
    this.buf.writeUInt16BE(this.pos - start, lenAt);
    return this;
  }

  /** A copy of what was written. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** Encodes a whole message (compressed). The OPT record goes last in the additional section. */
export function encodeMessage(m: Message): Buffer {
  const w = new MessageWriter();
  w.u16(m.id).u16(m.flags).u16(m.questions.length).u16(m.answers.length).u16(m.authority.length);
  w.u16(m.additional.length + (m.edns ? 1 : 0));
  for (const q of m.questions) w.name(q.name).u16(q.type).u16(q.class);
  for (const rr of m.answers) w.record(rr);
  for (const rr of m.authority) w.record(rr);
  for (const rr of m.additional) w.record(rr);
  if (m.edns) w.opt(m.edns);
  return w.finish();
}

/**
 * Reads a possibly compressed name at `offset`. Pointers must point strictly backwards
 * (which also rules out loops); the name must fit in 255 bytes.
 * Returns the presentation name (escaped, trailing dot; the root is '.') and the offset
 * just past the name's bytes at `offset`.
 */
export function readName(buf: Buffer, offset: number): { name: string; next: number } {
  let pos = offset;
  let next = -1;
  let wireLen = 1;
  let out = '';
  let lowest = offset;
  for (let hops = 0; ; hops++) {
    if (pos >= buf.length) throw new DecodeError(`name at ${offset} runs past the end`);
    const len = buf[pos]!;
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= buf.length) throw new DecodeError(`pointer at ${pos} runs past the end`);
      const target = ((len & 0x3f) << 8) | buf[pos + 1]!;
      if (target >= lowest) throw new DecodeError(`compression pointer at ${pos} does not point backwards (loop)`);
      if (next < 0) next = pos + 2;
      lowest = target;
      pos = target;
      if (hops > 127) throw new DecodeError('too many compression pointers');
      continue;
    }
    if (kind !== 0) throw new DecodeError(`label type 0x${kind.toString(16)} at ${pos} is not supported`);
    if (pos + 1 + len > buf.length) throw new DecodeError(`label at ${pos} runs past the end`);
    wireLen += len + 1;
    if (wireLen > MAX_NAME) throw new DecodeError(`name at ${offset} is longer than ${MAX_NAME} bytes`);
    out += escapeLabel(buf.toString('latin1', pos + 1, pos + 1 + len)) + '.';
    pos += 1 + len;
  }
  return { name: out === '' ? '.' : out, next };
}

function readRData(buf: Buffer, type: number, start: number, len: number): RData {
  const end = start + len;
  const nameIn = (at: number) => {
    const r = readName(buf, at);
    if (r.next > end) throw new DecodeError(`name in RDATA at ${at} overruns the record`);
    return r;
  };
  switch (type) {
    case QTYPE.NS:
    case QTYPE.CNAME:
    case QTYPE.PTR: {
      const r = nameIn(start);
      if (r.next !== end) throw new DecodeError(`RDATA of type ${type} at ${start} has trailing bytes`);
      return { kind: 'name', name: r.name };
    }
    case QTYPE.MX: {
      if (len < 3) throw new DecodeError(`MX RDATA at ${start} too short`);
      const r = nameIn(start + 2);
      if (r.next !== end) throw new DecodeError(`MX RDATA at ${start} has trailing bytes`);
      return { kind: 'mx', preference: buf.readUInt16BE(start), exchange: r.name };
    }
    case QTYPE.SOA: {
      const m = nameIn(start);
      const r = nameIn(m.next);
      if (r.next + 20 !== end) throw new DecodeError(`SOA RDATA at ${start} has the wrong length`);
      const p = r.next;
      return {
        kind: 'soa',
        mname: m.name,
        rname: r.name,
        serial: buf.readUInt32BE(p),
        refresh: buf.readUInt32BE(p + 4),
        retry: buf.readUInt32BE(p + 8),
        expire: buf.readUInt32BE(p + 12),
        minimum: buf.readUInt32BE(p + 16),
      };
    }
    default:
      return { kind: 'raw', bytes: Buffer.from(buf.subarray(start, end)) };
  }
}

/** Decodes a whole message strictly: any overrun, bad pointer or trailing byte throws DecodeError. */
export function decodeMessage(buf: Buffer): Message {
  if (buf.length < 12) throw new DecodeError('shorter than a header');
  const id = buf.readUInt16BE(0);
  const flags = buf.readUInt16BE(2);
  const counts = [buf.readUInt16BE(4), buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)];
  let pos = 12;
  const questions: Question[] = [];
  for (let i = 0; i < counts[0]!; i++) {
    const n = readName(buf, pos);
    if (n.next + 4 > buf.length) throw new DecodeError('question runs past the end');
    questions.push({ name: n.name, type: buf.readUInt16BE(n.next), class: buf.readUInt16BE(n.next + 2) });
    pos = n.next + 4;
  }
  const sections: ResourceRecord[][] = [[], [], []];
  let edns: Edns | undefined;
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s + 1]!; i++) {
      const n = readName(buf, pos);
      if (n.next + 10 > buf.length) throw new DecodeError(`record header at ${n.next} runs past the end`);
      const type = buf.readUInt16BE(n.next);
      const klass = buf.readUInt16BE(n.next + 2);
      const ttl = buf.readUInt32BE(n.next + 4);
      const rdlen = buf.readUInt16BE(n.next + 8);
      const rdStart = n.next + 10;
      if (rdStart + rdlen > buf.length) throw new DecodeError(`RDATA at ${rdStart} runs past the end`);
      if (type === QTYPE.OPT) {
        if (s !== 2) throw new DecodeError('OPT record outside the additional section');
        if (edns) throw new DecodeError('more than one OPT record');
        if (n.name !== '.') throw new DecodeError('OPT owner is not the root');
        const options: EdnsOption[] = [];
        let o = rdStart;
        while (o < rdStart + rdlen) {
          if (o + 4 > rdStart + rdlen) throw new DecodeError(`EDNS option header at ${o} overruns the OPT`);
          const code = buf.readUInt16BE(o);
          const olen = buf.readUInt16BE(o + 2);
          if (o + 4 + olen > rdStart + rdlen) throw new DecodeError(`EDNS option ${code} at ${o} overruns the OPT`);
          options.push({ code, data: Buffer.from(buf.subarray(o + 4, o + 4 + olen)) });
          o += 4 + olen;
        }
        edns = { udpSize: klass, extRcode: ttl >>> 24, version: (ttl >>> 16) & 0xff, flags: ttl & 0xffff, options };
      } else {
        sections[s]!.push({ name: n.name, type, class: klass, ttl, data: readRData(buf, type, rdStart, rdlen) });
      }
      pos = rdStart + rdlen;
    }
  }
  if (pos !== buf.length) throw new DecodeError(`${buf.length - pos} trailing bytes after the last record`);
  return { id, flags, questions, answers: sections[0]!, authority: sections[1]!, additional: sections[2]!, edns };
}

/** Parses an IP address to its 4 or 16 bytes; throws for anything else. */
export function ipBytes(ip: string): Buffer {
  const v = isIP(ip);
  if (v === 4) return Buffer.from(ip.split('.').map(Number));
  if (v !== 6) throw new DecodeError(`not an IP address: ${ip}`);
  let s = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  let tail: number[] = [];
  if (v4) {
    tail = [...ipBytes(v4[1]!)];
    s = s.slice(0, -v4[1]!.length) + '0:0';
  }
  const [head, rest] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const groups = rest === undefined ? h : [...h, ...Array(8 - h.length - r.length).fill('0'), ...r];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  if (v4) Buffer.from(tail).copy(out, 12);
  return out;
}

/** Renders 4 or 16 address bytes (IPv6 in RFC 5952 short form). */
export function ipString(b: Uint8Array): string {
  if (b.length === 4) return Array.from(b).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i]! << 8) | b[i + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}
