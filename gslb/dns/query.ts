/**
 * The query hot path's parser: header, one question and the OPT record with its options,
 * read straight from the buffer into a reusable ParsedQuery (no allocation beyond the
 * name key string). It validates everything the responder relies on and classifies
 * every malformed input (RFC 1035, 6891, 7871 §6); it never throws.
 */
import { EDNS_DO, EDNS_OPT, FLAG, QTYPE } from './constants.js';
import { MAX_NAME, keyFromWire } from './name.js';

/** What the responder must do with a packet. */
export const enum Verdict {
  /** A well-formed query: answer it. */
  OK = 0,
  /** Send nothing (too short to answer, or a response: QR=1). */
  DROP = 1,
  FORMERR = 2,
  NOTIMP = 3,
  /** EDNS version > 0 (RFC 6891 §6.1.3). */
  BADVERS = 4,
}

/** Filled by parseQuery; fields past `verdict`'s reach are stale. Offsets index the query buffer. */
export interface ParsedQuery {
  id: number;
  /** The query's 16-bit flags word. */
  flags: number;
  opcode: number;
  /** Offset just past the question (QTYPE/QCLASS included); 0 when the question did not parse. */
  questionEnd: number;
  /** Wire length of the question name, final zero byte included. */
  qnameLen: number;
  /** Lowercased wire-form key of the question name (see name.ts). */
  key: string;
  qtype: number;
  qclass: number;
  /** The query carried a well-formed OPT record. */
  edns: boolean;
  udpSize: number;
  ednsVersion: number;
  /** DNSSEC OK bit of the query's OPT. */
  dnssecOk: boolean;
  /** The query carried a valid ECS option. */
  ecs: boolean;
  ecsFamily: number;
  ecsSource: number;
  /** Offset and length of the ECS address bytes in the query. */
  ecsAddrOffset: number;
  ecsAddrLen: number;
  /** Offset and length of the COOKIE option's data (RFC 7873; length 8 or 16–40); cookieLen 0: none. */
  cookieOffset: number;
  cookieLen: number;
  /** The query asked for the NSID (RFC 5001). */
  nsid: boolean;
  /** The query carried edns-tcp-keepalive (RFC 7828), and its option length (0 in a well-formed query). */
  keepalive: boolean;
  keepaliveLen: number;
  /** Why the verdict is not OK (a metric label). */
  reason: string;
  /** Keys of recently seen question names (see KeyCache); owned by this ParsedQuery. */
  keys: KeyCache;
}

/**
 * A direct-mapped cache from question-name wire bytes to their key string: building the
 * string costs more than hashing and comparing the ~20 bytes of a name, and a GSLB is asked
 * the same few names over and over. A miss costs one string and one small copy, as before.
 */
export class KeyCache {
  private static readonly SIZE = 256;
  private readonly wires: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(KeyCache.SIZE).fill(undefined);
  private readonly strings: string[] = new Array<string>(KeyCache.SIZE).fill('');

  /** The key of the name at buf[start, end) (end = offset of its zero byte); h = hashName's hash. */
  get(buf: Buffer, start: number, end: number, h: number): string {
    const slot = h & (KeyCache.SIZE - 1);
    const w = this.wires[slot];
    const n = end - start;
    if (w !== undefined && w.length === n) {
      let i = 0;
      for (; i < n; i++) {
        const c = buf[start + i]!;
        if ((c >= 65 && c <= 90 ? c + 32 : c) !== w[i]) break;
      }
      if (i === n) return this.strings[slot]!;
    }
    const key = keyFromWire(buf, start, end);
    const copy = new Uint8Array(n);
    for (let i = 0; i < n; i++) copy[i] = key.charCodeAt(i);
    this.wires[slot] = copy;
    this.strings[slot] = key;
    return key;
  }
}

export function newParsedQuery(): ParsedQuery {
  return {
    id: 0,
    flags: 0,
    opcode: 0,
    questionEnd: 0,
    qnameLen: 0,
    key: '',
    qtype: 0,
    qclass: 0,
    edns: false,
    udpSize: 0,
    ednsVersion: 0,
    dnssecOk: false,
    ecs: false,
    ecsFamily: 0,
    ecsSource: 0,
    ecsAddrOffset: 0,
    ecsAddrLen: 0,
    cookieOffset: 0,
    cookieLen: 0,
    nsid: false,
    keepalive: false,
    keepaliveLen: 0,
    reason: '',
    keys: new KeyCache(),
  };
}

/** Big-endian 16-bit read without Buffer#readUInt16BE's bounds checks (callers check). */
function u16(buf: Buffer, at: number): number {
  return (buf[at]! << 8) | buf[at + 1]!;
}

function fail(q: ParsedQuery, v: Verdict, reason: string): Verdict {
  q.reason = reason;
  return v;
}

/** Skips a (possibly compressed) name; returns the offset after it, or -1 if malformed. */
function skipName(buf: Buffer, pos: number): number {
  let total = 1;
  while (pos < buf.length) {
    const len = buf[pos]!;
    if (len === 0) return pos + 1;
    if ((len & 0xc0) === 0xc0) return pos + 2 <= buf.length ? pos + 2 : -1;
    if ((len & 0xc0) !== 0) return -1;
    total += len + 1;
    if (total > MAX_NAME) return -1;
    pos += len + 1;
  }
  return -1;
}

/**
 * Parses `buf` as a query into `q` and says what to do with it.
 * On FORMERR/NOTIMP/BADVERS, `q.questionEnd` tells whether the question can be echoed
 * and `q.edns` whether an OPT record should be in the reply.
 */
export function parseQuery(buf: Buffer, q: ParsedQuery): Verdict {
  q.questionEnd = 0;
  q.edns = false;
  q.ecs = false;
  q.dnssecOk = false;
  q.ednsVersion = 0;
  q.cookieLen = 0;
  q.nsid = false;
  q.keepalive = false;
  q.reason = '';
  const len = buf.length;
  if (len < 12) return fail(q, Verdict.DROP, 'short');
  q.id = u16(buf, 0);
  const flags = u16(buf, 2);
  q.flags = flags;
  if (flags & FLAG.QR) return fail(q, Verdict.DROP, 'response');
  q.opcode = (flags >>> 11) & 0xf;
  if (q.opcode !== 0) return fail(q, Verdict.NOTIMP, 'opcode');
  if (u16(buf, 4) !== 1) return fail(q, Verdict.FORMERR, 'qdcount');

  // The question name: uncompressed labels only (a pointer could only point into the header).
  let pos = 12;
  let total = 1;
  // FNV-1a over the name's bytes, ASCII-lowercased, for the key cache.
  let h = 0x811c9dc5;
  for (;;) {
    if (pos >= len) return fail(q, Verdict.FORMERR, 'truncated_question');
    const l = buf[pos]!;
    if (l === 0) break;
    if (l > 63) return fail(q, Verdict.FORMERR, (l & 0xc0) === 0xc0 ? 'question_pointer' : 'label_type');
    total += l + 1;
    if (total > MAX_NAME) return fail(q, Verdict.FORMERR, 'name_too_long');
    const next = pos + l + 1;
    if (next > len) return fail(q, Verdict.FORMERR, 'truncated_question');
    for (let i = pos; i < next; i++) {
      const c = buf[i]!;
      h = Math.imul(h ^ (c >= 65 && c <= 90 ? c + 32 : c), 0x01000193);
    }
    pos = next;
  }
  if (pos + 5 > len) return fail(q, Verdict.FORMERR, 'truncated_question');
  q.qnameLen = pos + 1 - 12;
  q.key = q.keys.get(buf, 12, pos, (h ^ (h >>> 16)) >>> 0);
  q.qtype = u16(buf, pos + 1);
  q.qclass = u16(buf, pos + 3);
  pos += 5;
  q.questionEnd = pos;

  // Answer and authority records (unusual in a query) are skipped; the additional
  // section is searched for the one OPT record.
  const an = u16(buf, 6);
  const ns = u16(buf, 8);
  const ar = u16(buf, 10);
  const records = an + ns + ar;
  let sawOpt = false;
  let version = 0;
  for (let i = 0; i < records; i++) {
    const nameStart = pos;
    pos = skipName(buf, pos);
    if (pos < 0 || pos + 10 > len) return fail(q, Verdict.FORMERR, 'truncated_record');
    const type = u16(buf, pos);
    const rdlen = u16(buf, pos + 8);
    const rdStart = pos + 10;
    const rdEnd = rdStart + rdlen;
    if (rdEnd > len) return fail(q, Verdict.FORMERR, 'truncated_record');
    if (type === QTYPE.OPT) {
      if (i < an + ns) return fail(q, Verdict.FORMERR, 'opt_misplaced');
      if (sawOpt) return fail(q, Verdict.FORMERR, 'two_opt');
      if (pos !== nameStart + 1) return fail(q, Verdict.FORMERR, 'opt_owner');
      sawOpt = true;
      q.udpSize = u16(buf, pos + 2);
      version = buf[pos + 5]!;
      q.dnssecOk = (u16(buf, pos + 6) & EDNS_DO) !== 0;
      let o = rdStart;
      while (o < rdEnd) {
        if (o + 4 > rdEnd) return fail(q, Verdict.FORMERR, 'opt_option');
        const code = u16(buf, o);
        const olen = u16(buf, o + 2);
        const dataStart = o + 4;
        if (dataStart + olen > rdEnd) return fail(q, Verdict.FORMERR, 'opt_option');
        if (code === EDNS_OPT.COOKIE) {
          // RFC 7873 §5.2.2: a client cookie (8) and optionally a server cookie (8–32).
          if (q.cookieLen !== 0) return fail(q, Verdict.FORMERR, 'cookie_twice');
          if (olen !== 8 && (olen < 16 || olen > 40)) return fail(q, Verdict.FORMERR, 'cookie_length');
          q.cookieOffset = dataStart;
          q.cookieLen = olen;
        } else if (code === EDNS_OPT.NSID) {
          q.nsid = true;
        } else if (code === EDNS_OPT.KEEPALIVE) {
          q.keepalive = true;
          q.keepaliveLen = olen;
        } else if (code === EDNS_OPT.ECS) {
          // RFC 7871 §6: malformed ECS → FORMERR.
          if (q.ecs) return fail(q, Verdict.FORMERR, 'ecs_twice');
          if (olen < 4) return fail(q, Verdict.FORMERR, 'ecs_short');
          const family = u16(buf, dataStart);
          const source = buf[dataStart + 2]!;
          const scope = buf[dataStart + 3]!;
          const max = family === 1 ? 32 : family === 2 ? 128 : -1;
          if (max < 0) return fail(q, Verdict.FORMERR, 'ecs_family');
          if (source > max) return fail(q, Verdict.FORMERR, 'ecs_source_prefix');
          if (scope !== 0) return fail(q, Verdict.FORMERR, 'ecs_scope');
          const addrLen = olen - 4;
          if (addrLen !== (source + 7) >>> 3) return fail(q, Verdict.FORMERR, 'ecs_address_length');
          if (source & 7) {
            const last = buf[dataStart + 4 + addrLen - 1]!;
            if (last & (0xff >>> (source & 7))) return fail(q, Verdict.FORMERR, 'ecs_address_bits');
          }
          q.ecs = true;
          q.ecsFamily = family;
          q.ecsSource = source;
          q.ecsAddrOffset = dataStart + 4;
          q.ecsAddrLen = addrLen;
        }
        o = dataStart + olen;
      }
    }
    pos = rdEnd;
  }
  if (pos !== len) return fail(q, Verdict.FORMERR, 'trailing_bytes');
  if (sawOpt) {
    q.edns = true;
    q.ednsVersion = version;
    if (version !== 0) {
      q.ecs = false;
      q.cookieLen = 0;
      q.nsid = false;
      q.keepalive = false;
      return fail(q, Verdict.BADVERS, 'edns_version');
    }
  }
  return Verdict.OK;
}
