import { test } from 'node:test';
import assert from 'node:assert/strict';
import { siphash24 } from './siphash.js';

/**
 * The reference implementation's vectors (veorq/SipHash vectors.h, vectors_sip64): key bytes
 * 00..0f, message i = bytes 00..(i-1); each result as the reference prints it (little-endian
 * bytes). The first 16 cover the empty message, every tail length, one and two blocks.
 */
const VECTORS = [
  '310e0edd47db6f72',
  'fd67dc93c539f874',
  '5a4fa9d909806c0d',
  '2d7efbd796666785',
  'b7877127e09427cf',
  '8da699cd64557618',
  'cee3fe586e46c9cb',
  '37d1018bf50002ab',
  '6224939a79f5f593',
  'b0e4a90bdf82009e',
  'f3b9dd94c5bb5d7a',
  'a7ad6b22462fb3f4',
  'fbe50e86bc8f1e75',
  '903d84c02756ea14',
  'eef27a8e90ca23f7',
  'e545be4961ca29a1',
];

test('SipHash-2-4 reproduces the reference vectors', () => {
  const key = Uint8Array.from({ length: 16 }, (_, i) => i);
  const msg = Uint8Array.from({ length: 64 }, (_, i) => i);
  VECTORS.forEach((want, len) => {
    const out = Buffer.alloc(8);
    siphash24(key, msg, 0, len, out, 0);
    assert.equal(out.toString('hex'), want, `message of ${len} bytes`);
  });
});

test('SipHash-2-4 hashes a slice in place: an offset into a larger buffer gives the same result', () => {
  const key = Uint8Array.from({ length: 16 }, (_, i) => i);
  const big = Buffer.alloc(40, 0xee);
  for (let i = 0; i < 15; i++) big[7 + i] = i;
  const out = Buffer.alloc(12, 0xaa);
  siphash24(key, big, 7, 15, out, 2);
  assert.equal(out.subarray(2, 10).toString('hex'), VECTORS[15]);
  assert.equal(out[0], 0xaa);
  assert.equal(out[10], 0xaa);
});
