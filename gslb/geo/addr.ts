/**
 * Addresses as numbers for the geo table: IPv4 as one uint32, IPv6 by its top 64 bits as
 * two uint32 (hi, lo). Nothing finer than /56 ever matters (the cell floor), so the low
 * 64 bits of an IPv6 address are dropped everywhere.
 */
import { isIP } from 'node:net';

export interface Addr {
  family: 4 | 6;
  hi: number;
  lo: number;
}

/** Parses dotted IPv4 to uint32; NaN when malformed. */
export function parse4(s: string): number {
  let v = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part > 255) return NaN;
      v = v * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      digits++;
      if (digits > 3) return NaN;
    } else return NaN;
  }
  if (dots !== 3 || digits === 0 || part > 255) return NaN;
  return v * 256 + part;
}

/**
 * Parses an address (IPv4, IPv6, IPv4-mapped IPv6) into an Addr; mapped addresses become
 * IPv4. Returns null for anything else.
 */
export function parseAddr(s: string): Addr | null {
  const v4 = parse4(s);
  if (!Number.isNaN(v4)) return { family: 4, hi: v4, lo: 0 };
  if (isIP(s) !== 6) return null;
  const lower = s.toLowerCase();
  if (lower.startsWith('::ffff:') && lower.includes('.')) {
    const m = parse4(lower.slice(7));
    if (!Number.isNaN(m)) return { family: 4, hi: m, lo: 0 };
  }
  let str = lower;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(str);
  if (dotted) {
    const x = parse4(dotted[1]!);
    str = str.slice(0, -dotted[1]!.length) + ((x >>> 16) & 0xffff).toString(16) + ':' + (x & 0xffff).toString(16);
  }
  const [head, tail] = str.includes('::') ? str.split('::') : [str, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const g = groups.map((x) => parseInt(x, 16));
  const hi = ((g[0]! << 16) | g[1]!) >>> 0;
  const lo = ((g[2]! << 16) | g[3]!) >>> 0;
  if (hi === 0 && lo === 0 && g[4] === 0 && g[5] === 0xffff) return { family: 4, hi: ((g[6]! << 16) | g[7]!) >>> 0, lo: 0 };
  return { family: 6, hi, lo };
}

/** The mask of the top `bits` bits of a uint32 (bits 0..32). */
export function mask32(bits: number): number {
  return bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
}

/** A prefix as masks over an Addr's words (IPv6: its top 64 bits). */
export interface Prefix {
  family: 4 | 6;
  hi: number;
  lo: number;
  maskHi: number;
  maskLo: number;
}

/**
 * Parses `192.0.2.0/24`, `2001:db8::/32`, or an address alone (a host). An IPv6 prefix
 * longer than /64 is matched on the top 64 bits. Throws naming the entry.
 */
export function parsePrefix(s: string): Prefix {
  const slash = s.indexOf('/');
  const a = parseAddr(slash < 0 ? s : s.slice(0, slash));
  const max = a?.family === 4 ? 32 : 128;
  const bits = slash < 0 ? max : /^\d{1,3}$/.test(s.slice(slash + 1)) ? Number(s.slice(slash + 1)) : NaN;
  if (!a || !(bits >= 0 && bits <= max)) throw new Error(`not an address or a prefix: ${JSON.stringify(s)} (e.g. 192.0.2.0/24, 2001:db8::/32 or 192.0.2.1)`);
  if (a.family === 4) return { family: 4, hi: (a.hi & mask32(bits)) >>> 0, lo: 0, maskHi: mask32(bits), maskLo: 0 };
  const b = Math.min(bits, 64);
  return { family: 6, hi: (a.hi & mask32(b)) >>> 0, lo: (a.lo & mask32(b - 32)) >>> 0, maskHi: mask32(b), maskLo: mask32(b - 32) };
}

/** Whether an Addr is inside a Prefix. */
export function inPrefix(p: Prefix, family: number, hi: number, lo: number): boolean {
  return p.family === family && ((hi & p.maskHi) >>> 0) === p.hi && ((lo & p.maskLo) >>> 0) === p.lo;
}

/** Masks an Addr to `prefix` bits (IPv6: of its top 64). */
export function maskAddr(a: Addr, prefix: number): Addr {
  if (a.family === 4) return { family: 4, hi: (a.hi & mask32(prefix)) >>> 0, lo: 0 };
  return { family: 6, hi: (a.hi & mask32(prefix)) >>> 0, lo: (a.lo & mask32(prefix - 32)) >>> 0 };
}

export function formatAddr(a: Addr, prefix?: number): string {
  let s: string;
  if (a.family === 4) s = [a.hi >>> 24, (a.hi >>> 16) & 255, (a.hi >>> 8) & 255, a.hi & 255].join('.');
  else {
    const g = [a.hi >>> 16, a.hi & 0xffff, a.lo >>> 16, a.lo & 0xffff].map((x) => x.toString(16));
    while (g.length > 1 && g[g.length - 1] === '0') g.pop();
    s = g.join(':') + (g.length < 8 ? '::' : '');
  }
  return prefix === undefined ? s : `${s}/${prefix}`;
}

/**
 * Special-purpose ranges (RFC 6890 and the IANA registries) whose addresses locate nobody:
 * a client subnet there falls back to the packet's source address, and a source there gets
 * the default location. [first, last] of IPv4; IPv6 by top-64 prefixes.
 */
const V4_SPECIAL: [number, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3],
].map(([a, p]) => {
  const s = parse4(a as string);
  return [s, s + 2 ** (32 - (p as number)) - 1] as [number, number];
});

const V6_SPECIAL: { hi: number; lo: number; prefix: number }[] = [
  ['::', 32], // ::/32 (unspecified, loopback, IPv4-compatible) — mapped forms are parsed as IPv4
  ['64:ff9b::', 32],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
].map(([a, p]) => {
  const x = parseAddr(a as string)!;
  return { hi: x.hi, lo: x.lo, prefix: p as number };
});

const V4_FIRST = Float64Array.from(V4_SPECIAL, (r) => r[0]);
const V4_LAST = Float64Array.from(V4_SPECIAL, (r) => r[1]);

/** True for IPv4 addresses (uint32) that are private, reserved or documentation. No allocation. */
export function isSpecial4(a: number): boolean {
  for (let i = 0; i < V4_FIRST.length; i++) if (a >= V4_FIRST[i]! && a <= V4_LAST[i]!) return true;
  return false;
}

/** True for IPv6 addresses (top 64 bits) outside global unicast or in a special range. No allocation. */
export function isSpecial6(hi: number, lo: number): boolean {
  // Only 2000::/3 is global unicast; inside it, the documentation prefix is special.
  if (hi >>> 29 !== 1) return true;
  for (const r of V6_SPECIAL) {
    const mh = mask32(r.prefix);
    const ml = mask32(r.prefix - 32);
    if (((hi & mh) >>> 0) === r.hi && ((lo & ml) >>> 0) === r.lo) return true;
  }
  return false;
}

/** True for addresses that are private, reserved or not routable on the Internet. */
export function isSpecial(a: Addr): boolean {
  return a.family === 4 ? isSpecial4(a.hi) : isSpecial6(a.hi, a.lo);
}
