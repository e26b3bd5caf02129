import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FLOOR4, FLOOR6, TOP_K, geometryHash, parseCidr, type FleetGeometry, type ParsedCidr } from './compile.js';

test('parseCidr: valid IPv4 and IPv6 networks up to the cell floor', () => {
  const cases: [string, ParsedCidr][] = [
    ['0.0.0.0/0', { family: 4, hi: 0, lo: 0, prefix: 0 }],
    ['10.0.0.0/8', { family: 4, hi: 0x0a000000, lo: 0, prefix: 8 }],
    ['192.0.2.0/24', { family: 4, hi: 0xc0000200, lo: 0, prefix: 24 }],
    ['100.64.0.0/10', { family: 4, hi: 0x64400000, lo: 0, prefix: 10 }],
    [' 198.51.100.0/22 ', { family: 4, hi: 0xc6336400, lo: 0, prefix: 22 }],
    ['::/0', { family: 6, hi: 0, lo: 0, prefix: 0 }],
    ['2001:db8::/32', { family: 6, hi: 0x20010db8, lo: 0, prefix: 32 }],
    ['2001:DB8:AB00::/40', { family: 6, hi: 0x20010db8, lo: 0xab000000, prefix: 40 }],
    ['2001:db8:abcd:1200::/56', { family: 6, hi: 0x20010db8, lo: 0xabcd1200, prefix: 56 }],
    ['2a00::/12', { family: 6, hi: 0x2a000000, lo: 0, prefix: 12 }],
    ['2001:db8::0.0.0.0/32', { family: 6, hi: 0x20010db8, lo: 0, prefix: 32 }],
    ['2001:db8:0:0:0:0:0:0/48', { family: 6, hi: 0x20010db8, lo: 0, prefix: 48 }],
  ];
  for (const [s, want] of cases) assert.deepEqual(parseCidr(s), want, s);
  assert.equal(FLOOR4, 24);
  assert.equal(FLOOR6, 56);
  assert.equal(TOP_K, 4);
});

test('parseCidr: junk, host bits set and prefixes past the floor are rejected with a message saying why', () => {
  const cases: [string, RegExp][] = [
    ['', /is not a CIDR like/],
    ['10.0.0.0', /is not a CIDR like/],
    ['10.0.0.0/', /is not a CIDR like/],
    ['/8', /is not a CIDR like/],
    ['10.0.0/8', /is not a CIDR like/],
    ['ten.0.0.0/8', /is not a CIDR like/],
    ['10.0.0.0/8/9', /is not a CIDR like/],
    ['10.0.0.0/-1', /is not a CIDR like/],
    ['10.0.0.0/1000', /is not a CIDR like/],
    ['2001:db8::1::/32', /is not a CIDR like/],
    ['0:0:0:0:0:ffff:10.0.0.0/8', /is not a CIDR like/],
    ['2a00:1450::%eth0/32', /is not a CIDR like/],
    ['10.0.0.0/33', /longer than an IPv4 address/],
    ['2001:db8::/129', /longer than an IPv6 address/],
    ['10.0.0.0/25', /at most \/24 for IPv4/],
    ['192.0.2.128/32', /at most \/24 for IPv4/],
    ['2001:db8::/57', /at most \/56 for IPv6/],
    ['2001:db8::/64', /at most \/56 for IPv6/],
    ['10.0.0.1/8', /host bits are set beyond \/8/],
    ['192.0.2.1/24', /host bits are set beyond \/24/],
    ['10.128.0.0/8', /host bits are set beyond \/8/],
    ['2001:db8::/16', /host bits are set beyond \/16/],
    ['2001:db8:0:100::/48', /host bits are set beyond \/48/],
    ['2001:db8:0:1::/56', /host bits are set beyond \/56/],
    // Host bits past the top 64 bits are host bits too.
    ['2001:db8::1/48', /host bits are set beyond \/48/],
    ['2001:db8:0:0:8000::/56', /host bits are set beyond \/56/],
    ['64:ff9b::192.0.2.1/32', /host bits are set beyond \/32/],
  ];
  for (const [s, re] of cases) assert.throws(() => parseCidr(s), re, s);
});

test('geometryHash: stable across region order, changes with coordinates, biases and overrides', () => {
  const g: FleetGeometry = {
    regions: [
      { id: 'a', location: { lat: 1, lon: 2 }, bias: 0 },
      { id: 'b', location: { lat: 3, lon: 4 }, bias: 10 },
    ],
    defaultLocation: { lat: 0, lon: 0 },
    overrides: [{ cidr: '10.0.0.0/8', regions: ['a'] }],
  };
  const h = geometryHash(g);
  assert.match(h, /^[0-9a-f]{16}$/);
  assert.equal(geometryHash({ ...g, regions: [...g.regions].reverse() }), h, 'region order does not matter');
  const g6: FleetGeometry = { ...g, overrides: [{ cidr: '2001:db8::/32', regions: ['a'] }] };
  assert.equal(geometryHash({ ...g6, overrides: [{ cidr: '2001:DB8::/32', regions: ['a'] }] }), geometryHash(g6), 'CIDR case does not matter');
  const variants: FleetGeometry[] = [
    { ...g, regions: [g.regions[0]!, { ...g.regions[1]!, location: { lat: 3, lon: 4.5 } }] },
    { ...g, regions: [g.regions[0]!, { ...g.regions[1]!, bias: 11 }] },
    { ...g, defaultLocation: { lat: 0, lon: 1 } },
    { ...g, overrides: [] },
    { ...g, overrides: [{ cidr: '10.0.0.0/8', regions: ['b'] }] },
  ];
  for (const v of variants) assert.notEqual(geometryHash(v), h, JSON.stringify(v));
});
