/**
 * Fuzz: 120k random and mutated packets through the responder in process. Every input
 * must be answered with a well-formed reply of the right size or dropped, never throw,
 * and never reach the responder's internal-error path (which would hide a bug).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMessage } from './message.js';
import { FLAG, QTYPE, UDP_MIN } from './constants.js';
import { makeResponder, query } from './testing.js';
import { newParsedQuery, parseQuery, Verdict } from './query.js';
import { xorshift32 } from '../../test/helpers/policy.js';
import { FRAMINGS, MUTATIONS, fuzzPacket, fuzzRng, fuzzTcpWrites } from '../../test/helpers/dns-fuzz.js';

/** Floats in [0, 1) from xorshift32: a failure names a reproducible seed and index. */
function rng(seed: number): () => number {
  const next = xorshift32(seed);
  return () => next() / 0x100000000;
}

const SEEDS: Buffer[] = [
  query('api.gslb.example.com.', QTYPE.A),
  query('API.gslb.example.com.', QTYPE.AAAA, { edns: { udpSize: 4096, extRcode: 0, version: 0, flags: 0x8000, options: [{ code: 8, data: Buffer.from([0, 1, 24, 0, 198, 51, 100]) }] } }),
  query('www.gslb.example.com.', QTYPE.A, { edns: { udpSize: 1232, extRcode: 0, version: 0, flags: 0, options: [{ code: 8, data: Buffer.from([0, 2, 56, 0, 0x20, 1, 0xd, 0xb8, 0xab, 0xcd, 0]) }] } }),
  query('big.gslb.example.com.', QTYPE.TXT, { edns: null }),
  query('nope.x.gslb.example.com.', QTYPE.MX),
  query('host.sub.gslb.example.com.', QTYPE.A),
  query('gslb.example.com.', QTYPE.ANY),
  query('example.org.', QTYPE.NS),
];

function mutate(r: () => number, seed: Buffer): Buffer {
  const pick = Math.floor(r() * 7);
  const b = Buffer.from(seed);
  switch (pick) {
    case 0: {
      // Bit flips.
      const n = 1 + Math.floor(r() * 8);
      for (let i = 0; i < n; i++) b[Math.floor(r() * b.length)]! ^= 1 << Math.floor(r() * 8);
      return b;
    }
    case 1:
      // Truncation.
      return b.subarray(0, Math.floor(r() * b.length));
    case 2: {
      // Wrong section counts.
      b.writeUInt16BE(Math.floor(r() * 4) === 0 ? 0xffff : Math.floor(r() * 4), 4 + 2 * Math.floor(r() * 4));
      return b;
    }
    case 3: {
      // Random bytes overwritten.
      const at = Math.floor(r() * b.length);
      const n = Math.min(b.length - at, 1 + Math.floor(r() * 16));
      for (let i = 0; i < n; i++) b[at + i] = Math.floor(r() * 256);
      return b;
    }
    case 4: {
      // Appended garbage.
      return Buffer.concat([b, Buffer.from(Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256)))]);
    }
    case 5: {
      // Entirely random packet.
      return Buffer.from(Array.from({ length: Math.floor(r() * 600) }, () => Math.floor(r() * 256)));
    }
    default: {
      // Compression pointers and label bytes sprinkled over the name area.
      const n = 1 + Math.floor(r() * 3);
      for (let i = 0; i < n; i++) {
        const at = 12 + Math.floor(r() * Math.max(1, b.length - 13));
        if (at + 1 < b.length) {
          b[at] = r() < 0.5 ? 0xc0 | Math.floor(r() * 4) : Math.floor(r() * 256);
          b[at + 1] = Math.floor(r() * 256);
        }
      }
      return b;
    }
  }
}

test('fuzz: 120,000 random and mutated packets never break the responder', () => {
  const resp = makeResponder();
  const r = rng(0x5eed2026);
  const p = newParsedQuery();
  const verdicts = new Map<Verdict, number>();
  let answered = 0;
  for (let i = 0; i < 120_000; i++) {
    const seed = SEEDS[i % SEEDS.length]!;
    const pkt = mutate(r, seed);
    const tcp = i % 5 === 0;
    const verdict = parseQuery(pkt, p);
    verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1);
    const udpLimit = p.edns && verdict !== Verdict.DROP ? Math.max(UDP_MIN, Math.min(p.udpSize, 1232)) : UDP_MIN;
    let out: Buffer | null;
    try {
      out = resp.answer(pkt, tcp);
    } catch (e) {
      assert.fail(`packet ${i} (${pkt.toString('hex')}) threw: ${(e as Error).message}`);
    }
    if (out === null) {
      assert.ok(pkt.length < 12 || (pkt.readUInt16BE(2) & FLAG.QR) !== 0, `packet ${i} dropped without reason: ${pkt.toString('hex')}`);
      continue;
    }
    answered++;
    let m;
    try {
      m = decodeMessage(out);
    } catch (e) {
      assert.fail(`reply to packet ${i} (${pkt.toString('hex')}) does not decode: ${(e as Error).message}: ${out.toString('hex')}`);
    }
    assert.equal(m.id, pkt.readUInt16BE(0), `packet ${i}: id`);
    assert.ok(m.flags & FLAG.QR, `packet ${i}: QR`);
    if (!tcp) assert.ok(out.length <= udpLimit, `packet ${i}: UDP reply of ${out.length} bytes exceeds ${udpLimit}`);
  }
  const s = resp.stats.snapshot();
  assert.equal(s.malformed.internal_error, undefined, 'the internal-error path was never taken');
  // The corpus really exercised both sides: many well-formed and many malformed inputs.
  assert.ok((verdicts.get(Verdict.OK) ?? 0) > 10_000, `OK verdicts: ${verdicts.get(Verdict.OK)}`);
  assert.ok((verdicts.get(Verdict.FORMERR) ?? 0) > 10_000, `FORMERR verdicts: ${verdicts.get(Verdict.FORMERR)}`);
  assert.ok((verdicts.get(Verdict.DROP) ?? 0) > 1_000, `DROP verdicts: ${verdicts.get(Verdict.DROP)}`);
  assert.ok(answered > 100_000);
});

test('fuzz: 60,000 packets of the shared generator (every option, count and length lies, compression loops) never break the responder', () => {
  const resp = makeResponder();
  const r = fuzzRng(0x20261202);
  const p = newParsedQuery();
  const kinds = new Map<string, number>();
  let answered = 0;
  for (let i = 0; i < 60_000; i++) {
    const { packet: pkt, mutation } = fuzzPacket(r, i);
    kinds.set(mutation, (kinds.get(mutation) ?? 0) + 1);
    const tcp = i % 4 === 0;
    const verdict = parseQuery(pkt, p);
    const udpLimit = p.edns && verdict !== Verdict.DROP ? Math.max(UDP_MIN, Math.min(p.udpSize, 1232)) : UDP_MIN;
    let out: Buffer | null;
    try {
      out = resp.answer(pkt, tcp);
    } catch (e) {
      assert.fail(`packet ${i} (${mutation}, ${pkt.toString('hex')}) threw: ${(e as Error).message}`);
    }
    if (out === null) {
      assert.ok(pkt.length < 12 || (pkt.readUInt16BE(2) & FLAG.QR) !== 0, `packet ${i} (${mutation}) dropped without reason: ${pkt.toString('hex')}`);
      continue;
    }
    answered++;
    let m;
    try {
      m = decodeMessage(out);
    } catch (e) {
      assert.fail(`reply to packet ${i} (${mutation}, ${pkt.toString('hex')}) does not decode: ${(e as Error).message}: ${out.toString('hex')}`);
    }
    assert.equal(m.id, pkt.readUInt16BE(0), `packet ${i}: id`);
    assert.ok(m.flags & FLAG.QR, `packet ${i}: QR`);
    if (!tcp) assert.ok(out.length <= udpLimit, `packet ${i} (${mutation}): UDP reply of ${out.length} bytes exceeds ${udpLimit}`);
  }
  assert.equal(resp.stats.snapshot().malformed.internal_error, undefined, 'the internal-error path was never taken');
  for (const k of MUTATIONS) assert.ok((kinds.get(k) ?? 0) > 1000, `mutation ${k} ran ${kinds.get(k) ?? 0} times`);
  assert.ok(answered > 30_000, `answered ${answered}`);
});

test('fuzz: the TCP framing generator carries every framing lie, and honest frames parse back', () => {
  const r = fuzzRng(7);
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const { writes, framings } = fuzzTcpWrites(r, i * 50, 50);
    for (const f of framings) seen.add(f);
    const stream = Buffer.concat(writes);
    if (framings.every((f) => f === 'honest' || f === 'split' || f === 'pipelined' || f === 'prefix-half')) {
      // An honest stream reads back as exactly `framings.length` messages.
      let at = 0;
      let n = 0;
      while (at + 2 <= stream.length) {
        at += 2 + stream.readUInt16BE(at);
        n++;
      }
      assert.equal(at, stream.length);
      assert.equal(n, framings.length);
    }
  }
  for (const f of FRAMINGS) assert.ok(seen.has(f), `framing ${f} generated`);
});
