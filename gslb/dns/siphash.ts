/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012) with a 128-bit key and a 64-bit result, as DNS
 * server cookies use it (RFC 9018 §4.4). Pure JavaScript on 32-bit halves (no BigInt), no
 * allocation per call: the state lives in a module-level Uint32Array. Checked against the
 * reference implementation's vectors in siphash.test.ts.
 */

/** v0..v3 as (hi, lo) pairs: s[0]=v0.hi, s[1]=v0.lo, s[2]=v1.hi, … */
const s = new Uint32Array(8);

function add(a: number, b: number): void {
  const lo = s[a + 1]! + s[b + 1]!;
  s[a] = s[a]! + s[b]! + (lo > 0xffffffff ? 1 : 0);
  s[a + 1] = lo;
}

function rotl(a: number, n: number): void {
  let hi = s[a]!;
  let lo = s[a + 1]!;
  if (n >= 32) {
    const t = hi;
    hi = lo;
    lo = t;
    n -= 32;
  }
  if (n === 0) {
    s[a] = hi;
    s[a + 1] = lo;
    return;
  }
  s[a] = (hi << n) | (lo >>> (32 - n));
  s[a + 1] = (lo << n) | (hi >>> (32 - n));
}

function xor(a: number, b: number): void {
  s[a] = s[a]! ^ s[b]!;
  s[a + 1] = s[a + 1]! ^ s[b + 1]!;
}

const V0 = 0;
const V1 = 2;
const V2 = 4;
const V3 = 6;

function round(): void {
  add(V0, V1);
  rotl(V1, 13);
  xor(V1, V0);
  rotl(V0, 32);
  add(V2, V3);
  rotl(V3, 16);
  xor(V3, V2);
  add(V0, V3);
  rotl(V3, 21);
  xor(V3, V0);
  add(V2, V1);
  rotl(V1, 17);
  xor(V1, V2);
  rotl(V2, 32);
}

function le32(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

/** Mixes one 64-bit little-endian word (hi, lo) into the state. */
function block(hi: number, lo: number): void {
  s[V3] = s[V3]! ^ hi;
  s[V3 + 1] = s[V3 + 1]! ^ lo;
  round();
  round();
  s[V0] = s[V0]! ^ hi;
  s[V0 + 1] = s[V0 + 1]! ^ lo;
}

/**
 * SipHash-2-4 of msg[start, start + len) under the 16-byte `key`; the 8 result bytes are
 * written little-endian (the reference's byte order) to out[at, at + 8).
 */
export function siphash24(key: Uint8Array, msg: Uint8Array, start: number, len: number, out: Uint8Array, at: number): void {
  const k0lo = le32(key, 0);
  const k0hi = le32(key, 4);
  const k1lo = le32(key, 8);
  const k1hi = le32(key, 12);
  s[V0] = k0hi ^ 0x736f6d65;
  s[V0 + 1] = k0lo ^ 0x70736575;
  s[V1] = k1hi ^ 0x646f7261;
  s[V1 + 1] = k1lo ^ 0x6e646f6d;
  s[V2] = k0hi ^ 0x6c796765;
  s[V2 + 1] = k0lo ^ 0x6e657261;
  s[V3] = k1hi ^ 0x74656462;
  s[V3 + 1] = k1lo ^ 0x79746573;
  const end = start + len;
  let i = start;
  for (; i + 8 <= end; i += 8) block(le32(msg, i + 4), le32(msg, i));
  // The last block: the remaining bytes, and the length's low byte in the top byte.
  let lo = 0;
  let hi = (len & 0xff) << 24;
  for (let j = 0; i + j < end; j++) {
    const b = msg[i + j]!;
    if (j < 4) lo |= b << (8 * j);
    else hi |= b << (8 * (j - 4));
  }
  block(hi >>> 0, lo >>> 0);
  s[V2 + 1] = s[V2 + 1]! ^ 0xff;
  round();
  round();
  round();
  round();
  const rhi = s[V0]! ^ s[V1]! ^ s[V2]! ^ s[V3]!;
  const rlo = s[V0 + 1]! ^ s[V1 + 1]! ^ s[V2 + 1]! ^ s[V3 + 1]!;
  for (let j = 0; j < 4; j++) {
    out[at + j] = (rlo >>> (8 * j)) & 0xff;
    out[at + 4 + j] = (rhi >>> (8 * j)) & 0xff;
  }
}
