import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMessage, encodeMessage, ipBytes, ipString, readName, DecodeError, type Message } from './message.js';
import { nameToWire, nameKey, keyToName, isSubdomainKey, NameError, absoluteName } from './name.js';
import { QTYPE } from './constants.js';

const base: Message = { id: 7, flags: 0x8400, questions: [], answers: [], authority: [], additional: [] };

test('round trips: every record kind survives encode → decode', () => {
  const cases: Message[] = [
    { ...base, questions: [{ name: 'example.com.', type: QTYPE.A, class: 1 }] },
    {
      ...base,
      questions: [{ name: 'API.Example.COM.', type: QTYPE.A, class: 1 }],
      answers: [
        // Compression points at the question, so owners come back in the question's case.
        { name: 'API.Example.COM.', type: QTYPE.A, class: 1, ttl: 30, data: { kind: 'raw', bytes: ipBytes('192.0.2.1') } },
        { name: 'API.Example.COM.', type: QTYPE.AAAA, class: 1, ttl: 30, data: { kind: 'raw', bytes: ipBytes('2001:db8::1') } },
      ],
    },
    {
      ...base,
      questions: [{ name: 'example.com.', type: QTYPE.SOA, class: 1 }],
      answers: [
        {
          name: 'example.com.',
          type: QTYPE.SOA,
          class: 1,
          ttl: 3600,
          data: { kind: 'soa', mname: 'ns1.example.com.', rname: 'hostmaster.example.com.', serial: 4294967295, refresh: 1, retry: 2, expire: 3, minimum: 4 },
        },
      ],
      authority: [{ name: 'example.com.', type: QTYPE.NS, class: 1, ttl: 60, data: { kind: 'name', name: 'ns1.example.com.' } }],
      additional: [{ name: 'example.com.', type: QTYPE.MX, class: 1, ttl: 60, data: { kind: 'mx', preference: 10, exchange: 'mail.example.net.' } }],
      edns: { udpSize: 1232, extRcode: 0, version: 0, flags: 0x8000, options: [{ code: 8, data: Buffer.from([0, 1, 24, 0, 192, 0, 2]) }] },
    },
    { ...base, questions: [{ name: '.', type: QTYPE.NS, class: 1 }] },
  ];
  for (const m of cases) {
    const wire = encodeMessage(m);
    const back = decodeMessage(wire);
    assert.deepEqual(back, { ...m, edns: m.edns });
    // Encoding again gives the same bytes (compression is deterministic).
    assert.deepEqual(encodeMessage(back), wire);
  }
});

test('compression: repeated names become pointers', () => {
  const m: Message = {
    ...base,
    questions: [{ name: 'api.gslb.example.com.', type: 1, class: 1 }],
    answers: [1, 2, 3].map((i) => ({ name: 'api.gslb.example.com.', type: 1, class: 1, ttl: 1, data: { kind: 'raw' as const, bytes: Buffer.from([192, 0, 2, i]) } })),
  };
  const wire = encodeMessage(m);
  // 12 header + 22 name + 4 + 3 × (2 pointer + 10 + 4)
  assert.equal(wire.length, 12 + 22 + 4 + 3 * 16);
});

test('decoder rejects malformed names: a case table', () => {
  const hdr = (qd: number) => Buffer.from([0, 1, 0, 0, 0, qd, 0, 0, 0, 0, 0, 0]);
  const cases: [string, Buffer, RegExp][] = [
    ['pointer to itself', Buffer.concat([hdr(1), Buffer.from([0xc0, 12, 0, 1, 0, 1])]), /backwards/],
    ['pointer forward', Buffer.concat([hdr(1), Buffer.from([0xc0, 20, 0, 1, 0, 1, 0, 0, 0, 0, 0])]), /backwards/],
    ['label over 63 (0x40 type)', Buffer.concat([hdr(1), Buffer.from([0x40, 0, 0, 1, 0, 1])]), /label type/],
    ['label runs past the end', Buffer.concat([hdr(1), Buffer.from([10, 97, 98])]), /past the end/],
    ['no terminating zero', Buffer.concat([hdr(1), Buffer.from([1, 97])]), /past the end/],
    ['question missing type', Buffer.concat([hdr(1), Buffer.from([0, 0])]), /past the end/],
    ['trailing bytes', Buffer.concat([hdr(0), Buffer.from([1, 2, 3])]), /trailing/],
    ['short header', Buffer.from([0, 1, 2]), /header/],
  ];
  for (const [what, buf, re] of cases) {
    assert.throws(() => decodeMessage(buf), (e: unknown) => e instanceof DecodeError && re.test((e as Error).message), what);
  }
});

test('decoder: pointer loops of two hops are rejected, a name over 255 bytes is rejected', () => {
  // offset 12: pointer to 14; offset 14: pointer to 12 → loop.
  const loop = Buffer.concat([Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from([0xc0, 14, 0xc0, 12])]);
  assert.throws(() => readName(loop, 12), /backwards|loop/);
  // 5 labels of 63 = 320 bytes.
  const long = Buffer.concat([...Array(5).fill(Buffer.concat([Buffer.from([63]), Buffer.alloc(63, 97)])), Buffer.from([0])]);
  assert.throws(() => readName(long, 0), /longer than 255/);
});

test('names: wire form limits and keys', () => {
  assert.throws(() => nameToWire('a'.repeat(64) + '.example'), NameError);
  assert.throws(() => nameToWire(Array(50).fill('abcdef').join('.')), NameError);
  assert.throws(() => nameToWire('a..b'), NameError);
  assert.equal(nameToWire('.').length, 1);
  assert.equal(nameKey('API.Example.com.'), nameKey('api.example.com'));
  assert.equal(keyToName(nameKey('Api.Example.com')), 'api.example.com.');
  assert.equal(isSubdomainKey(nameKey('a.example.com'), nameKey('example.com')), true);
  assert.equal(isSubdomainKey(nameKey('aexample.com'), nameKey('example.com')), false);
  assert.equal(isSubdomainKey(nameKey('example.com'), nameKey('example.com')), true);
  assert.equal(absoluteName('@', 'example.com'), 'example.com');
  assert.equal(absoluteName('www', 'example.com.'), 'www.example.com');
  assert.equal(absoluteName('Other.Net.', 'example.com'), 'other.net');
});

test('IP address bytes and text round trip', () => {
  const cases: [string, string][] = [
    ['192.0.2.1', '192.0.2.1'],
    ['2001:db8::1', '2001:db8::1'],
    ['2001:DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::', '::'],
    ['::ffff:192.0.2.1', '::ffff:c000:201'],
    ['2001:db8:10::10', '2001:db8:10::10'],
  ];
  for (const [input, shown] of cases) assert.equal(ipString(ipBytes(input)), shown, input);
});
