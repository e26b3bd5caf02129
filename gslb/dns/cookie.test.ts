import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COOKIE_BAD, COOKIE_CLIENT_ONLY, COOKIE_VALID, CookieJar, parseSecret } from './cookie.js';

const S1 = 'e5e973e5a6b2a43f48e7dc849e37bfcf';
const OLD = 'dd3bdf9344b678b185a6f5cb60fca715';
const NEW = '445536bcd2513298075a5d379663c962';

/** The COOKIE option data in a buffer at offset 5 (as in a query), and the jar's verdict and reply. */
function check(jar: CookieJar, option: string, client: string, now: number): { status: number; reply: string } {
  const data = Buffer.from(option, 'hex');
  const buf = Buffer.concat([Buffer.alloc(5, 0xee), data, Buffer.alloc(3, 0xee)]);
  const status = jar.check(buf, 5, data.length, client, now);
  return { status, reply: data.subarray(0, 8).toString('hex') + jar.server.toString('hex') };
}

test('RFC 9018 Appendix A: the published server cookies, byte for byte', () => {
  type Case = [string, { secret: string; previous?: string }, string, string, number, number, string];
  const cases: Case[] = [
    ['A.1 a client cookie alone: a new server cookie', { secret: S1 }, '2464c4abcf10c957', '198.51.100.100', 1559731985, COOKIE_CLIENT_ONLY, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['A.2 the same client 40 minutes later: valid, renewed (older than half an hour)', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559734385, COOKIE_VALID, '2464c4abcf10c957010000005cf7a871d4a564a1442aca77'],
    ['A.2 within half an hour: valid, echoed', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985 + 600, COOKIE_VALID, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['A.3 another client, reserved bytes set, within the hour: valid (the reserved bytes are hashed)', { secret: S1 }, 'fc93fc62807ddb8601abcdef5cf78f71a314227b6679ebf5', '203.0.113.203', 1559727985 + 60, COOKIE_VALID, 'fc93fc62807ddb8601abcdef5cf78f71a314227b6679ebf5'],
    ['A.3 at the RFC time (1 h 52 min old): expired, the fresh cookie of the RFC', { secret: S1 }, 'fc93fc62807ddb8601abcdef5cf78f71a314227b6679ebf5', '203.0.113.203', 1559734700, COOKIE_BAD, 'fc93fc62807ddb86010000005cf7a9acf73a7810aca2381e'],
    ['A.4 IPv6, made with the previous secret: valid during the rotation, renewed with the new one', { secret: NEW, previous: OLD }, '22681ab97d52c298010000005cf7c57926556bd0934c72f8', '2001:db8:220:1:59de:d0f4:8769:82b8', 1559741961, COOKIE_VALID, '22681ab97d52c298010000005cf7c609a6bb79d16625507a'],
    ['A.4 without the previous secret: bad', { secret: NEW }, '22681ab97d52c298010000005cf7c57926556bd0934c72f8', '2001:db8:220:1:59de:d0f4:8769:82b8', 1559741961, COOKIE_BAD, '22681ab97d52c298010000005cf7c609a6bb79d16625507a'],
    ['a cookie of ours from another address: bad', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.101', 1559731985, COOKIE_BAD, ''],
    ['a flipped hash bit: bad', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29481', '198.51.100.100', 1559731985, COOKIE_BAD, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['version 2: bad', { secret: S1 }, '2464c4abcf10c957020000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985, COOKIE_BAD, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['an 8-byte server cookie (another format): bad', { secret: S1 }, '2464c4abcf10c9570102030405060708', '198.51.100.100', 1559731985, COOKIE_BAD, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['stamped 5 minutes ahead: valid', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985 - 300, COOKIE_VALID, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
    ['stamped 5 minutes and 1 second ahead: bad', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985 - 301, COOKIE_BAD, ''],
    ['exactly an hour old: valid', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985 + 3600, COOKIE_VALID, ''],
    ['an hour and a second old: bad', { secret: S1 }, '2464c4abcf10c957010000005cf79f111f8130c3eee29480', '198.51.100.100', 1559731985 + 3601, COOKIE_BAD, ''],
    ['IPv4-mapped IPv6 source: the IPv4 address is hashed', { secret: S1 }, '2464c4abcf10c957', '::ffff:198.51.100.100', 1559731985, COOKIE_CLIENT_ONLY, '2464c4abcf10c957010000005cf79f111f8130c3eee29480'],
  ];
  for (const [name, secrets, option, client, now, status, reply] of cases) {
    const jar = new CookieJar({ mode: 'on', secret: secrets.secret, previousSecret: secrets.previous });
    const got = check(jar, option, client, now);
    assert.equal(got.status, status, name);
    if (reply) assert.equal(got.reply, reply, name);
  }
});

test('two nodes with the same secret accept each other\'s cookies; a node with another secret does not', () => {
  const a = new CookieJar({ mode: 'on', secret: S1 });
  const b = new CookieJar({ mode: 'on', secret: S1 });
  const c = new CookieJar({ mode: 'on', secret: NEW });
  const first = check(a, '0102030405060708', '192.0.2.7', 1_800_000_000);
  assert.equal(check(b, first.reply, '192.0.2.7', 1_800_000_010).status, COOKIE_VALID);
  assert.equal(check(c, first.reply, '192.0.2.7', 1_800_000_010).status, COOKIE_BAD);
  // The timestamp wraps (serial arithmetic): a cookie made just before 2^32 s is valid after.
  const wrap = check(a, '0102030405060708', '192.0.2.7', 0xffffff00);
  assert.equal(check(a, wrap.reply, '192.0.2.7', 0x00000010).status, COOKIE_VALID);
});

test('secrets: 32 hex digits, whitespace around ignored; anything else is refused naming the form', () => {
  assert.equal(parseSecret(` ${S1}\n`).toString('hex'), S1);
  assert.throws(() => parseSecret('abc'), /32 hex digits/);
  assert.throws(() => parseSecret('g'.repeat(32)), /non-hex/);
});
