/**
 * prepare(): problems the zone compiler finds in gridsteer.yaml come out as ConfigError
 * issues like the loader's, with the file, the line and the path of the record at fault.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { prepare } from './serving.js';
import { assertOneIssue, baseFiles, issuesOf, lineOf, sub, tempFleet, type Expect, type Files } from '../config/testing.js';

const CONFIG = 'gridsteer.yaml';
/** The last static record of the base config: new records go after it (index 6 on). */
const LAST = '      - { name: ns.sub, type: A, data: 192.0.2.54 }\n';

/** The base config with `lines` (records, 6 spaces of indent) added after the last record. */
function withRecords(f: Files, ...lines: string[]): void {
  f[CONFIG] = sub(f[CONFIG], LAST, LAST + lines.map((l) => `      - ${l}\n`).join(''));
}

interface Case extends Expect {
  name: string;
  edit(f: Files): void;
}

const cases: Case[] = [
  {
    name: 'a record outside the zone',
    edit: (f) => withRecords(f, '{ name: www.example.org., type: A, data: 192.0.2.1 }'),
    file: CONFIG,
    at: 'www.example.org.',
    path: 'zones[0].records[6].name',
    message: [/www\.example\.org is outside the zone gslb\.example\.com/, /use a name relative to the zone, or "@"/],
  },
  {
    name: 'a CNAME plus other data',
    edit: (f) => withRecords(f, '{ name: www, type: TXT, data: "also here" }'),
    file: CONFIG,
    at: '{ name: www, type: CNAME, data: api }',
    path: 'zones[0].records[0].data',
    message: [/www\.gslb\.example\.com has a CNAME and other data \(TXT\)/, /a CNAME must stand alone \(RFC 2181 §10\.1\)/],
  },
  {
    name: 'an A record at a steered name',
    edit: (f) => withRecords(f, '{ name: api, type: A, data: 192.0.2.1 }'),
    file: CONFIG,
    at: '{ name: api, type: A,',
    path: 'zones[0].records[6].data',
    message: [/api\.gslb\.example\.com is a steered name: its A records come from the regions/, /remove this record/],
  },
  {
    name: 'bad A data (an IPv6 address)',
    edit: (f) => withRecords(f, '{ name: host1, type: A, data: "2001:db8::1" }'),
    file: CONFIG,
    at: 'name: host1',
    path: 'zones[0].records[6].data',
    message: [/^A data must be an IPv4 address like 192\.0\.2\.1 \(got "2001:db8::1"\)$/],
  },
  {
    name: 'bad A data in a list: the item is named',
    edit: (f) => withRecords(f, '{ name: host1, type: A, data: [192.0.2.1, 192.0.2.256] }'),
    file: CONFIG,
    at: 'name: host1',
    path: 'zones[0].records[6].data[1]',
    message: [/^A data must be an IPv4 address like 192\.0\.2\.1 \(got "192\.0\.2\.256"\)$/],
  },
  {
    name: 'bad AAAA data (an IPv4 address)',
    edit: (f) => withRecords(f, '{ name: host1, type: AAAA, data: 192.0.2.1 }'),
    file: CONFIG,
    at: 'name: host1',
    path: 'zones[0].records[6].data',
    message: [/^AAAA data must be an IPv6 address like 2001:db8::1 \(got "192\.0\.2\.1"\)$/],
  },
  {
    name: 'bad MX data (no preference)',
    edit: (f) => withRecords(f, '{ name: shop, type: MX, data: mail }'),
    file: CONFIG,
    at: 'name: shop',
    path: 'zones[0].records[6].data',
    message: [/^MX data must be "preference exchange", e\.g\. "10 mail" \(got "mail"\)$/],
  },
  {
    name: 'bad MX data (preference out of range)',
    edit: (f) => withRecords(f, '{ name: shop, type: MX, data: "70000 mail" }'),
    file: CONFIG,
    at: 'name: shop',
    path: 'zones[0].records[6].data',
    message: [/^MX preference must be an integer 0–65535 \(got "70000"\)$/],
  },
  {
    name: 'bad SRV data (three fields)',
    edit: (f) => withRecords(f, '{ name: _https._tcp, type: SRV, data: "10 5 api" }'),
    file: CONFIG,
    at: 'name: _https._tcp',
    path: 'zones[0].records[6].data',
    message: [/^SRV data must be "priority weight port target", e\.g\. "10 5 443 api" \(got "10 5 api"\)$/],
  },
  {
    name: 'bad CAA data (value not quoted)',
    edit: (f) => withRecords(f, `{ name: "@", type: CAA, data: "0 issue ca.example.net" }`),
    file: CONFIG,
    at: 'type: CAA',
    path: 'zones[0].records[6].data',
    message: [/^CAA data must be 'flags tag "value"', e\.g\. '0 issue "ca\.example\.net"'/],
  },
  {
    name: 'two TTLs in one RRset',
    edit: (f) => withRecords(f, '{ name: mail, type: A, data: 192.0.2.26, ttl: 60 }'),
    file: CONFIG,
    at: 'data: 192.0.2.26, ttl: 60',
    path: 'zones[0].records[6].data',
    message: [/^TTL 60 differs from 300 of the other A records at mail\.gslb\.example\.com \(RFC 2181 §5\.2\)/, /give them one TTL/],
  },
  {
    name: 'a duplicate record (names compare without case)',
    edit: (f) => withRecords(f, '{ name: MAIL, type: A, data: 192.0.2.25 }'),
    file: CONFIG,
    at: 'name: MAIL',
    path: 'zones[0].records[6].data',
    message: [/^duplicate A record at mail\.gslb\.example\.com: remove it$/],
  },
  {
    name: 'an in-zone nameserver without glue',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '{ name: ns1, addresses: [192.0.2.53] }', '{ name: ns1 }')),
    file: CONFIG,
    at: '{ name: ns1 }',
    path: 'zones[0].nameservers[0].addresses',
    message: [/ns1\.gslb\.example\.com is inside the zone, so it needs glue: add its addresses/],
  },
  {
    name: 'glue for an out-of-zone nameserver',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '{ name: ns.example.net. }', '{ name: ns.example.net., addresses: [198.51.100.53] }')),
    file: CONFIG,
    at: '198.51.100.53',
    path: 'zones[0].nameservers[1].addresses',
    message: [/ns\.example\.net is outside gslb\.example\.com: glue is only for names inside the zone; remove the addresses/],
  },
  {
    name: 'data below a delegation',
    edit: (f) => withRecords(f, '{ name: www.sub, type: TXT, data: "hidden" }'),
    file: CONFIG,
    at: 'name: www.sub',
    path: 'zones[0].records[6].data',
    message: [/www\.sub\.gslb\.example\.com is below the delegation at sub\.gslb\.example\.com: only glue \(A\/AAAA\) may be there/],
  },
  {
    // zone.ts reports this one at the zone (zones[0]); names[2].name would be more helpful.
    name: 'a steered name below a delegation',
    edit: (f) => (f[CONFIG] = f[CONFIG] + '  - name: app.sub.gslb.example.com\n'),
    file: CONFIG,
    at: '- name: app.sub.gslb.example.com',
    path: 'names[2].name',
    message: [/app\.sub\.gslb\.example\.com is below the delegation at sub\.gslb\.example\.com, so this server cannot answer for it/],
  },
  {
    name: 'a steered name in no zone',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'name: eu.gslb.example.com', 'name: eu.example.org')),
    file: CONFIG,
    at: 'name: eu.example.org',
    path: 'names[1].name',
    message: [/eu\.example\.org is in none of the zones \(gslb\.example\.com\): add its zone or fix the name/],
  },
  {
    name: 'a steered name twice',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'name: eu.gslb.example.com', 'name: API.gslb.example.com')),
    file: CONFIG,
    at: 'name: API.gslb.example.com',
    path: 'names[1].name',
    message: [/api\.gslb\.example\.com is configured twice/],
  },
  {
    name: 'the apex NS set as a record',
    edit: (f) => withRecords(f, '{ name: "@", type: NS, data: ns2 }'),
    file: CONFIG,
    at: 'type: NS, data: ns2',
    path: 'zones[0].records[6].type',
    message: [/the apex NS set comes from "nameservers": move it there/],
  },
];

test('prepare() reports zone problems with the file, line and path of the record at fault', async (t) => {
  for (const c of cases) {
    await t.test(c.name, (tt) => {
      const files = baseFiles();
      c.edit(files);
      const dir = tempFleet(tt, files);
      assertOneIssue(c.name, dir, files, issuesOf(() => prepare(join(dir, CONFIG))), c);
    });
  }
});

test('prepare(): a CNAME at the apex is reported once, with the fix', (t) => {
  const files = baseFiles();
  withRecords(files, '{ name: "@", type: CNAME, data: www.example.net. }');
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => prepare(join(dir, CONFIG)));
  const line = lineOf(files[CONFIG]!, 'type: CNAME, data: www.example.net.');
  assert.deepEqual(
    issues.map((i) => [i.file, i.line, i.path]),
    [[join(dir, CONFIG), line, 'zones[0].records[6].data']],
  );
  assert.match(issues[0]!.message, /a CNAME cannot be at the zone apex .*: use A\/AAAA records there, or make the apex a steered name/);
});

test('prepare(): the same zone twice is reported at the second entry', (t) => {
  const files = baseFiles();
  files[CONFIG] = sub(files[CONFIG], 'names:\n', '  - name: GSLB.example.com.\n    soa: { rname: h, serial: 1 }\n    nameservers: [{ name: ns.example.net. }]\nnames:\n');
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => prepare(join(dir, CONFIG)));
  const show = JSON.stringify(issues, null, 2);
  assert.deepEqual([issues[0]?.line, issues[0]?.path], [lineOf(files[CONFIG]!, 'name: GSLB.example.com.'), 'zones[1].name'], show);
  assert.match(issues[0]!.message, /^zone gslb\.example\.com is configured twice \(also zones\[0\]\): merge the two entries$/, show);
  // The duplicate entry is not compiled, so nothing else is reported about it.
  assert.equal(issues.length, 1, show);
});

test('prepare(): every zone problem is reported, not only the first', (t) => {
  const files = baseFiles();
  withRecords(files, '{ name: a, type: A, data: nope }', '{ name: b, type: AAAA, data: nope }', '{ name: c.example.org., type: TXT, data: x }');
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => prepare(join(dir, CONFIG)));
  assert.deepEqual(
    issues.map((i) => i.path),
    ['zones[0].records[6].data', 'zones[0].records[7].data', 'zones[0].records[8].name'],
  );
});

test('prepare(): loader problems come first and stop before the zones are compiled', (t) => {
  const files = baseFiles();
  withRecords(files, '{ name: a, type: A, data: nope }');
  files[CONFIG] = files[CONFIG] + 'colour: blue\n';
  const dir = tempFleet(t, files);
  assert.deepEqual(
    issuesOf(() => prepare(join(dir, CONFIG))).map((i) => i.path),
    ['colour'],
  );
});

test('prepare(): the base fleet compiles; its version is the config hash', (t) => {
  const dir = tempFleet(t, baseFiles());
  const p = prepare(join(dir, CONFIG));
  assert.ok(p.state.version.includes(p.loaded.hash), `${p.state.version} carries ${p.loaded.hash}`);
  assert.deepEqual(p.state.geo.defaultRanking, ['us-va', 'eu-ie'], 'ranked from the default location (Ashburn)');
  assert.equal(p.state.geo.file, null, 'no geo table until the geo service compiles or loads one');
  assert.deepEqual([...p.zones.gslb.keys()].length, 2);
});

const DNS = '  listen: ["127.0.0.1:0"]\n';
const dnsCases: Case[] = [
  {
    name: 'dns.cookies.secretFile that does not exist',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], DNS, DNS + '  cookies: { secretFile: secrets/cookie.hex }\n')),
    file: CONFIG,
    at: 'secrets/cookie.hex',
    path: 'dns.cookies.secretFile',
    message: [/cannot read \S+\/secrets\/cookie\.hex \(ENOENT\)/, /openssl rand -hex 16 > secrets\/cookie\.hex/],
  },
  {
    name: 'dns.cookies.previousSecretFile that is not 32 hex digits',
    edit: (f) => {
      f[CONFIG] = sub(f[CONFIG], DNS, DNS + '  cookies: { previousSecretFile: old.hex }\n');
      f['old.hex'] = 'not-a-secret\n';
    },
    file: CONFIG,
    at: 'old.hex',
    path: 'dns.cookies.previousSecretFile',
    message: [/old\.hex: a cookie secret is 32 hex digits \(128 bits\)/, /got 12 characters with non-hex ones/],
  },
  {
    name: 'dns.nsid hex: with an odd number of digits',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], DNS, DNS + '  nsid: "hex:abc"\n')),
    file: CONFIG,
    at: 'hex:abc',
    path: 'dns.nsid',
    message: [/"hex:abc": after "hex:" an even number of hex digits/],
  },
];

test('prepare(): the cookie secret files and the NSID are checked, naming the setting and the file', async (t) => {
  for (const c of dnsCases) {
    await t.test(c.name, (tt) => {
      const files = baseFiles();
      c.edit(files);
      const dir = tempFleet(tt, files);
      assertOneIssue(c.name, dir, files, issuesOf(() => prepare(join(dir, CONFIG))), c);
    });
  }
});

test('prepare(): the cookie secret is read from its file; without one a random secret is made once per process', (t) => {
  const files = baseFiles();
  files[CONFIG] = sub(files[CONFIG], DNS, DNS + '  cookies: { secretFile: cookie.hex }\n  nsid: node-a\n');
  files['cookie.hex'] = '  00112233445566778899AABBCCDDEEFF\n';
  const p = prepare(join(tempFleet(t, files), CONFIG));
  assert.equal(p.state.opts.cookies?.secret, '00112233445566778899aabbccddeeff');
  assert.equal(p.state.opts.nsid, Buffer.from('node-a').toString('hex'));
  const dir = tempFleet(t, baseFiles());
  const g1 = prepare(join(dir, CONFIG)).state.opts.cookies!;
  const g2 = prepare(join(dir, CONFIG)).state.opts.cookies!;
  assert.match(g1.secret, /^[0-9a-f]{32}$/);
  assert.equal(g2.secret, g1.secret, 'kept across reloads');
  assert.equal(g1.mode, 'on');
});
