import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr, isSpecial, mask32, maskAddr, parse4, parseAddr, type Addr } from './addr.js';

const v4 = (hi: number): Addr => ({ family: 4, hi, lo: 0 });
const v6 = (hi: number, lo: number): Addr => ({ family: 6, hi, lo });

test('parse4: dotted quads to uint32; NaN for anything else', () => {
  const cases: [string, number][] = [
    ['0.0.0.0', 0],
    ['1.2.3.4', 0x01020304],
    ['255.255.255.255', 0xffffffff],
    ['192.0.2.1', 0xc0000201],
    ['10.0.0.0', 0x0a000000],
  ];
  for (const [s, n] of cases) assert.equal(parse4(s), n, s);
  for (const bad of ['', '1.2.3', '1.2.3.4.5', '256.0.0.1', '1.2.3.256', '1..2.3', '.1.2.3', '1.2.3.', '1.2.3.4 ', 'a.b.c.d', '1.2.3.1234', '::1', '-1.2.3.4']) {
    assert.ok(Number.isNaN(parse4(bad)), `${JSON.stringify(bad)} is not an IPv4 address`);
  }
});

test('parseAddr: IPv4, IPv6 (top 64 bits), mapped IPv6 becomes IPv4, junk is null', () => {
  const cases: [string, Addr | null][] = [
    ['192.0.2.1', v4(0xc0000201)],
    ['8.8.8.8', v4(0x08080808)],
    ['2001:db8::1', v6(0x20010db8, 0)],
    ['2001:db8:1:2:3:4:5:6', v6(0x20010db8, 0x00010002)],
    ['2001:DB8:ABCD:12::', v6(0x20010db8, 0xabcd0012)],
    ['2a00:1450:4001:81b::200e', v6(0x2a001450, 0x4001081b)],
    ['::', v6(0, 0)],
    ['::1', v6(0, 0)],
    ['fe80::1', v6(0xfe800000, 0)],
    ['ff02::1', v6(0xff020000, 0)],
    ['1::', v6(0x00010000, 0)],
    ['1:2:3:4::', v6(0x00010002, 0x00030004)],
    ['::2:3:4:5:6:7:8', v6(0x00000002, 0x00030004)],
    // IPv4-mapped, dotted and hex forms, and the fully written form: IPv4.
    ['::ffff:192.0.2.1', v4(0xc0000201)],
    ['::FFFF:8.8.4.4', v4(0x08080404)],
    ['::ffff:c000:201', v4(0xc0000201)],
    ['0:0:0:0:0:ffff:c000:0201', v4(0xc0000201)],
    ['0:0:0:0:0:ffff:192.0.2.1', v4(0xc0000201)],
    // NAT64 with an embedded IPv4 stays IPv6.
    ['64:ff9b::192.0.2.1', v6(0x0064ff9b, 0)],
    ['', null],
    ['x', null],
    ['1.2.3', null],
    ['2001:db8::1::2', null],
    ['2001:db8:0:0:0:0:0:0:1', null],
    ['12345::', null],
    ['2001:db8::/32', null],
    ['192.0.2.1/24', null],
    // A zone index (as a socket reports link-local peers) does not change the address.
    ['fe80::1%eth0', v6(0xfe800000, 0)],
  ];
  for (const [s, want] of cases) assert.deepEqual(parseAddr(s), want, s);
});

test('isSpecial: private, reserved, documentation, loopback, ULA, multicast; only 2000::/3 is global', () => {
  const special = [
    '0.0.0.0', '0.255.255.255', '10.0.0.0', '10.255.255.255', '100.64.0.1', '100.127.255.255', '127.0.0.1', '169.254.1.1',
    '172.16.0.1', '172.31.255.255', '192.0.0.8', '192.0.2.1', '192.168.1.1', '198.18.0.1', '198.19.255.255',
    '198.51.100.7', '203.0.113.200', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
    '::', '::1', '::1.2.3.4', '64:ff9b::1', '100::1', '2001:db8::1', '2001:db8:ffff:ffff::', 'fc00::1', 'fd12:3456:789a::1',
    'fe80::1', 'febf::1', 'ff02::1', 'ff0e::fb',
    // Outside 2000::/3 and not assigned: not routable.
    '1::1', '4000::1', 'c000::1', 'fec0::1', '::ffff:10.1.2.3', '::ffff:192.168.0.1',
  ];
  const global = [
    '1.1.1.1', '8.8.8.8', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0', '126.255.255.255', '128.0.0.0', '169.253.255.255',
    '172.15.255.255', '172.32.0.0', '192.0.1.255', '192.0.3.0', '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0',
    '198.51.99.255', '198.51.101.0', '203.0.112.255', '203.0.114.0', '223.255.255.255',
    '2000::1', '2001:4860:4860::8888', '2001:db7:ffff::', '2001:db9::', '2606:4700::1111', '2a00:1450::1', '3fff:ffff::1', '::ffff:8.8.8.8',
  ];
  for (const s of special) assert.equal(isSpecial(parseAddr(s)!), true, `${s} is special`);
  for (const s of global) assert.equal(isSpecial(parseAddr(s)!), false, `${s} is global`);
});

test('mask32, maskAddr and formatAddr', () => {
  assert.equal(mask32(0), 0);
  assert.equal(mask32(-3), 0);
  assert.equal(mask32(1), 0x80000000);
  assert.equal(mask32(24), 0xffffff00);
  assert.equal(mask32(32), 0xffffffff);
  assert.equal(mask32(40), 0xffffffff);
  assert.deepEqual(maskAddr(v4(0xc0a80a0b), 24), v4(0xc0a80a00));
  assert.deepEqual(maskAddr(v4(0xc0a80a0b), 0), v4(0));
  assert.deepEqual(maskAddr(v4(0xc0a80a0b), 32), v4(0xc0a80a0b));
  assert.deepEqual(maskAddr(v6(0x20010db8, 0xabcdef12), 56), v6(0x20010db8, 0xabcdef00));
  assert.deepEqual(maskAddr(v6(0x20010db8, 0xabcdef12), 32), v6(0x20010db8, 0));
  assert.deepEqual(maskAddr(v6(0x20010db8, 0xabcdef12), 20), v6(0x20010000, 0));
  assert.deepEqual(maskAddr(v6(0x20010db8, 0xabcdef12), 64), v6(0x20010db8, 0xabcdef12));
  assert.equal(formatAddr(v4(0xc0000201)), '192.0.2.1');
  assert.equal(formatAddr(v4(0xc0000200), 24), '192.0.2.0/24');
  assert.equal(formatAddr(v6(0x20010db8, 0xab00)), '2001:db8:0:ab00::');
  assert.equal(formatAddr(v6(0x20010db8, 0), 32), '2001:db8::/32');
  // Every formatted address parses back to itself.
  for (const a of [v4(0), v4(0xffffffff), v6(0x20010db8, 0x00010002), v6(0x2a001450, 0), v6(0, 0), v6(0xffffffff, 0xffffffff)]) {
    assert.deepEqual(parseAddr(formatAddr(a)), a, formatAddr(a));
  }
});
