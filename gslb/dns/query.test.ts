/**
 * The question-name key cache (query.ts KeyCache): whatever names arrive, in whatever case
 * and order, with slots colliding, the key is the one keyFromWire computes from scratch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newParsedQuery, parseQuery, Verdict } from './query.js';
import { keyFromWire } from './name.js';
import { xorshift32 } from '../../test/helpers/policy.js';

/** A query for a name given as labels (raw bytes, any case). */
function queryFor(labels: number[][]): Buffer {
  const name = labels.flatMap((l) => [l.length, ...l]);
  return Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, ...name, 0, 0, 1, 0, 1]);
}

test('question keys match keyFromWire for 50k random names through one cache (case, collisions, reuse)', () => {
  const r = xorshift32(7);
  const alphabet = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_'].map((c) => c.charCodeAt(0)).concat([0, 0xc3, 0xff, 0x2e]);
  // A pool of 600 names (more than the cache's slots, so slots collide), asked in random
  // order with random case, so hits, misses and evictions all happen.
  const pool: number[][][] = [];
  for (let i = 0; i < 600; i++) {
    const labels: number[][] = [];
    const n = 1 + (r() % 4);
    for (let j = 0; j < n; j++) labels.push(Array.from({ length: 1 + (r() % 12) }, () => alphabet[r() % alphabet.length]!));
    pool.push(labels);
  }
  const p = newParsedQuery();
  const seen = new Map<string, number>();
  for (let i = 0; i < 50_000; i++) {
    const labels = pool[r() % pool.length]!.map((l) => l.map((c) => (c >= 97 && c <= 122 && r() % 2 ? c - 32 : c)));
    const q = queryFor(labels);
    assert.equal(parseQuery(q, p), Verdict.OK);
    const end = 12 + p.qnameLen - 1;
    const expected = keyFromWire(q, 12, end);
    if (p.key !== expected) assert.fail(`query ${i}: key ${JSON.stringify(p.key)} but keyFromWire says ${JSON.stringify(expected)}`);
    seen.set(expected, (seen.get(expected) ?? 0) + 1);
  }
  // Most names were asked many times: the cache was exercised on hits, not only misses.
  assert.ok(seen.size > 500, `${seen.size} distinct keys`);
});

test('names differing only in case share a key; names differing in one byte do not', () => {
  const p = newParsedQuery();
  const key = (s: string) => {
    assert.equal(parseQuery(queryFor(s.split('.').map((l) => [...l].map((c) => c.charCodeAt(0)))), p), Verdict.OK);
    return p.key;
  };
  const a = key('api.gslb.example.com');
  assert.equal(key('API.Gslb.EXAMPLE.com'), a);
  assert.notEqual(key('apj.gslb.example.com'), a);
  assert.equal(key('api.gslb.example.com'), a);
  assert.notEqual(key('api.gslb.example.co'), a);
  assert.notEqual(key('api.gslb.example.comm'), a);
});
