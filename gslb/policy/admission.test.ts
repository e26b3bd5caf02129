import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admissionDraw, fnv1a32, murmurKey, regionSeed } from './admission.js';
import type { SubnetKey } from '../model/cell.js';
import { prng } from '../../test/helpers/policy.js';

/**
 * An independent MurmurHash3_x86_32 over any byte string, written from Austin Appleby's
 * reference (MurmurHash3.cpp), with tail handling — checked below against published vectors of
 * every length class, then used to check murmurKey on random 8-byte (IPv6) keys.
 */
function murmur3ref(bytes: Uint8Array, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  let h1 = seed >>> 0;
  const nblocks = bytes.length >>> 2;
  for (let i = 0; i < nblocks; i++) {
    let k1 = (bytes[4 * i]! | (bytes[4 * i + 1]! << 8) | (bytes[4 * i + 2]! << 16) | (bytes[4 * i + 3]! << 24)) >>> 0;
    k1 = Math.imul(k1, c1) >>> 0;
    k1 = rotl(k1, 15);
    k1 = Math.imul(k1, c2) >>> 0;
    h1 = (h1 ^ k1) >>> 0;
    h1 = rotl(h1, 13);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) >>> 0;
  }
  const tail = nblocks * 4;
  const rest = bytes.length & 3;
  if (rest > 0) {
    let k1 = 0;
    if (rest >= 3) k1 ^= bytes[tail + 2]! << 16;
    if (rest >= 2) k1 ^= bytes[tail + 1]! << 8;
    k1 ^= bytes[tail]!;
    k1 = Math.imul(k1, c1) >>> 0;
    k1 = rotl(k1, 15);
    k1 = Math.imul(k1, c2) >>> 0;
    h1 = (h1 ^ k1) >>> 0;
  }
  h1 = (h1 ^ bytes.length) >>> 0;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b) >>> 0;
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35) >>> 0;
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

const ascii = (s: string) => Uint8Array.from(Buffer.from(s, 'latin1'));
/** The IPv4 key whose 4 bytes (network order) are `b`. */
const key4 = (b: Uint8Array): SubnetKey => ({ family: 4, hi: ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0, lo: 0, prefix: 32 });
const key6 = (b: Uint8Array): SubnetKey => ({
  family: 6,
  hi: ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0,
  lo: ((b[4]! << 24) | (b[5]! << 16) | (b[6]! << 8) | b[7]!) >>> 0,
  prefix: 64,
});

/** Published MurmurHash3_x86_32 test vectors (SMHasher verification set and common test suites). */
const VECTORS: [Uint8Array, number, number][] = [
  [ascii(''), 0, 0],
  [ascii(''), 1, 0x514e28b7],
  [ascii(''), 0xffffffff, 0x81f16f39],
  [Uint8Array.of(0xff, 0xff, 0xff, 0xff), 0, 0x76293b50],
  [Uint8Array.of(0x21, 0x43, 0x65, 0x87), 0, 0xf55b516b],
  [Uint8Array.of(0x21, 0x43, 0x65, 0x87), 0x5082edee, 0x2362f9de],
  [Uint8Array.of(0x21, 0x43, 0x65), 0, 0x7e4a8634],
  [Uint8Array.of(0x21, 0x43), 0, 0xa0f7b07a],
  [Uint8Array.of(0x21), 0, 0x72661cf4],
  [Uint8Array.of(0, 0, 0, 0), 0, 0x2362f9de],
  [Uint8Array.of(0, 0, 0), 0, 0x85f0b427],
  [Uint8Array.of(0, 0), 0, 0x30f4c306],
  [Uint8Array.of(0), 0, 0x514e28b7],
  [ascii('test'), 0, 0xba6bd213],
  [ascii('test'), 0x9747b28c, 0x704b81dc],
  [ascii('aaaa'), 0x9747b28c, 0x5a97808a],
  [ascii('abcd'), 0x9747b28c, 0xf0478627],
  [ascii('a'), 0x9747b28c, 0x7fa09ea6],
  [ascii('abc'), 0, 0xb3dd93fa],
  [ascii('Hello, world!'), 0, 0xc0363e43],
  [ascii('Hello, world!'), 0x9747b28c, 0x24884cba],
  [Uint8Array.from(Buffer.from('ππππππππ', 'utf8')), 0x9747b28c, 0xd58063c1],
  [ascii('The quick brown fox jumps over the lazy dog'), 0, 0x2e4ff723],
  [ascii('The quick brown fox jumps over the lazy dog'), 0x9747b28c, 0x2fa826cd],
];

test('the reference MurmurHash3_x86_32 in this test reproduces the published vectors', () => {
  for (const [bytes, seed, want] of VECTORS) {
    assert.equal(murmur3ref(bytes, seed), want, `${Buffer.from(bytes).toString('hex')} seed ${seed.toString(16)}`);
  }
});

test('murmurKey: published 4-byte vectors through the IPv4 key path (bytes in network order)', () => {
  const four = VECTORS.filter(([b]) => b.length === 4);
  assert.ok(four.length >= 7);
  for (const [bytes, seed, want] of four) {
    assert.equal(murmurKey(key4(bytes), seed), want, `${Buffer.from(bytes).toString('hex')} seed ${seed.toString(16)}`);
  }
  // "test" is the IPv4 key 116.101.115.116.
  assert.equal(murmurKey({ family: 4, hi: 0x74657374, lo: 0, prefix: 24 }, 0), 0xba6bd213);
  assert.equal(murmurKey({ family: 4, hi: 0x74657374, lo: 0, prefix: 24 }, 0x9747b28c), 0x704b81dc);
  // Only the key's bytes are hashed (ADR 0003): the prefix field does not enter.
  assert.equal(murmurKey({ family: 4, hi: 0x74657374, lo: 0, prefix: 8 }, 0), 0xba6bd213);
});

test('murmurKey: 8-byte (IPv6) keys agree with the reference on fixed and random keys', () => {
  // Cross-checked with an independent implementation (npm imurmurhash).
  assert.equal(murmurKey(key6(ascii('abcdefgh')), 0), 0x49ddccc4);
  assert.equal(murmurKey(key6(ascii('12345678')), 0x9747b28c), 0x8606451d);
  const next = prng(0x6a09e667);
  for (let i = 0; i < 10000; i++) {
    const b = new Uint8Array(8);
    for (let j = 0; j < 8; j++) b[j] = next() & 0xff;
    const seed = next();
    assert.equal(murmurKey(key6(b), seed), murmur3ref(b, seed), Buffer.from(b).toString('hex'));
    assert.equal(murmurKey(key4(b), seed), murmur3ref(b.subarray(0, 4), seed), Buffer.from(b.subarray(0, 4)).toString('hex'));
  }
});

test('fnv1a32: published FNV-1a 32-bit vectors, over UTF-8 bytes', () => {
  const cases: [string, number][] = [
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['b', 0xe70c2de5],
    ['c', 0xe60c2c52],
    ['foobar', 0xbf9cf968],
  ];
  for (const [s, want] of cases) assert.equal(fnv1a32(s), want, JSON.stringify(s));
  // A BigInt rendering of the definition (offset basis, XOR then multiply by the prime, mod 2^32).
  const ref = (bytes: Uint8Array) => {
    let h = 0x811c9dc5n;
    for (const b of bytes) h = ((h ^ BigInt(b)) * 0x01000193n) & 0xffffffffn;
    return Number(h);
  };
  for (const s of ['us-va', 'eu-ie', 'ap-tyo', 'sa-são', 'région-é', 'x'.repeat(100)]) {
    assert.equal(fnv1a32(s), ref(Buffer.from(s, 'utf8')), s);
    assert.equal(regionSeed(s), fnv1a32(s), `seed of ${s}`);
    assert.equal(regionSeed(s), fnv1a32(s), `seed of ${s} (memoised)`);
  }
  // UTF-8, not UTF-16 code units: 'é' is the two bytes c3 a9.
  assert.equal(fnv1a32('é'), ref(Uint8Array.of(0xc3, 0xa9)));
});

test('admissionDraw: MurmurHash3(key, FNV-1a(region)) / 2^32, uniform in [0, 1), independent across regions', () => {
  const k: SubnetKey = { family: 4, hi: 0xc6336400, lo: 0, prefix: 24 };
  assert.equal(admissionDraw(k, 'us-va'), murmur3ref(Uint8Array.of(198, 51, 100, 0), fnv1a32('us-va')) / 2 ** 32);
  const k6: SubnetKey = { family: 6, hi: 0x20010db8, lo: 0xabcd1200, prefix: 56 };
  assert.equal(admissionDraw(k6, 'eu-ie'), murmur3ref(Uint8Array.of(0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12, 0x00), fnv1a32('eu-ie')) / 2 ** 32);

  const n = 100000;
  const next = prng(42);
  const bins = new Array<number>(10).fill(0);
  let sa = 0;
  let sb = 0;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    const key: SubnetKey = { family: 4, hi: (next() & 0xffffff00) >>> 0, lo: 0, prefix: 24 };
    const a = admissionDraw(key, 'a');
    const b = admissionDraw(key, 'b');
    assert.ok(a >= 0 && a < 1);
    bins[Math.floor(a * 10)]!++;
    sa += a;
    sb += b;
    sab += a * b;
    saa += a * a;
    sbb += b * b;
  }
  for (const c of bins) assert.ok(Math.abs(c / n - 0.1) < 0.005, `decile share ${c / n}`);
  const cov = sab / n - (sa / n) * (sb / n);
  const corr = cov / Math.sqrt((saa / n - (sa / n) ** 2) * (sbb / n - (sb / n) ** 2));
  assert.ok(Math.abs(corr) < 0.02, `draws for two regions are uncorrelated (r = ${corr.toFixed(4)})`);
});
