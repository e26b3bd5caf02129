/** The query log's pure parts: sample intervals, and the client subnets logged (never finer than /24 or /56). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ecsSubnet, sampleInterval, sourceSubnet } from './querylog.js';

test('sampleInterval: one reply in round(1 / rate); 0 (or nonsense) is off', () => {
  const cases: [rate: number, every: number][] = [
    [0, 0],
    [-1, 0],
    [Number.NaN, 0],
    [1, 1],
    [2, 1], // above 1 is every reply (the schema refuses it anyway)
    [0.5, 2],
    [0.3, 3],
    [0.25, 4],
    [0.01, 100],
    [0.001, 1000],
    [0.0015, 667],
    [1e-6, 1_000_000],
  ];
  for (const [rate, every] of cases) assert.equal(sampleInterval(rate), every, `rate ${rate}`);
});

test('sourceSubnet: the packet source cut to /24 or /56; IPv4-mapped IPv6 is IPv4; not an address → null', () => {
  const cases: [address: string, subnet: string | null][] = [
    ['198.51.100.7', '198.51.100.0/24'],
    ['127.0.0.1', '127.0.0.0/24'],
    ['0.0.0.0', '0.0.0.0/24'],
    ['255.255.255.255', '255.255.255.0/24'],
    ['::ffff:203.0.113.9', '203.0.113.0/24'],
    ['2001:db8:1234:5678:9abc::1', '2001:db8:1234:5600::/56'],
    ['2001:db8::1', '2001:db8::/56'],
    ['::1', '0::/56'],
    ['fe80::1', 'fe80::/56'],
    ['', null],
    ['?', null],
    ['example.org', null],
    ['1.2.3', null],
  ];
  for (const [address, subnet] of cases) assert.equal(sourceSubnet(address), subnet, JSON.stringify(address));
});

test('ecsSubnet: the ECS address cut to its source prefix or /24 (/56), whichever is shorter; prefix 0 or another family → null', () => {
  const cases: [family: number, source: number, bytes: number[], subnet: string | null][] = [
    [1, 24, [198, 51, 100], '198.51.100.0/24'],
    [1, 32, [198, 51, 100, 7], '198.51.100.0/24'],
    [1, 16, [198, 51], '198.51.0.0/16'],
    [1, 20, [198, 51, 0x7f], '198.51.112.0/20'],
    [1, 1, [0x80], '128.0.0.0/1'],
    [1, 0, [], null],
    [2, 56, [0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56], '2001:db8:1234:5600::/56'],
    [2, 128, [0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0, 0, 0, 0, 0, 1], '2001:db8:1234:5600::/56'],
    [2, 48, [0x2a, 0x00, 0x14, 0x50, 0x40, 0x00], '2a00:1450:4000::/48'],
    [2, 0, [], null],
    [3, 24, [1, 2, 3], null],
  ];
  for (const [family, source, bytes, subnet] of cases) assert.equal(ecsSubnet(family, source, bytes), subnet, `family ${family} /${source} ${bytes.join('.')}`);
});
