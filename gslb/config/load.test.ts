/**
 * loadConfig: every problem is one issue naming the file, the line, the path, what is
 * expected and how to fix it; a good configuration comes back defaulted, deeply frozen and
 * versioned by a hash of its files.
 */
import { KIND_LIST } from '../model/kinds/index.js';
import { DEFAULT_GRID_RULES } from '../model/policy.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type LoadedConfig } from './load.js';
import { assertOneIssue, baseFiles, BASE_CONFIG, EU_IE, issuesOf, sub, tempFleet, US_VA, type Expect, type Files } from './testing.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const CONFIG = 'gridsteer.yaml';
const VA = 'regions/us-va.yaml';

interface Case extends Expect {
  name: string;
  /** Changes the base fleet (a fresh copy). */
  edit(f: Files): void;
}

const cases: Case[] = [
  // YAML itself.
  {
    name: 'YAML syntax: a tab used for indentation',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    ttl: 300\n', '\tttl: 300\n')),
    file: CONFIG,
    at: '\tttl: 300',
    path: '',
    message: [/^YAML syntax: /, /tab/i, /indent with spaces/, /then check again: \d+ more YAML errors after it may follow from this one/],
  },
  {
    name: 'YAML syntax: a key twice in one mapping',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    ttl: 300\n', '    ttl: 300\n    ttl: 600\n')),
    file: CONFIG,
    at: 'ttl: 600',
    path: '',
    message: [/^YAML syntax: /, /unique/, /remove one or merge/],
  },
  {
    name: 'YAML syntax: an unclosed bracket at the end of the file points at the last line, not past it',
    edit: (f) => (f[CONFIG] = f[CONFIG] + '    whenAllDown: [nearest\n\n'),
    file: CONFIG,
    at: 'whenAllDown: [nearest',
    path: '',
    message: [/^YAML syntax: /, /every \[ and \{ is closed/],
  },
  {
    name: 'YAML syntax in a region file',
    edit: (f) => (f[VA] = sub(f[VA], 'bias: 0', 'bias: 0: 1')),
    file: VA,
    at: 'bias: 0: 1',
    path: '',
    message: [/^YAML syntax: /, /quotes/],
  },
  {
    name: 'top level is a list',
    edit: (f) => (f[CONFIG] = '- zones\n- names\n'),
    file: CONFIG,
    at: '- zones',
    path: '',
    message: [/expected a mapping \(key: value lines\) at the top level/, /found a list/, /docs\/configuration\.md/],
  },
  {
    name: 'top level is empty',
    edit: (f) => (f[CONFIG] = '# nothing yet\n'),
    file: CONFIG,
    at: null,
    path: '',
    message: [/expected a mapping/, /the file is empty/],
  },
  {
    name: 'a region file that is a single value',
    edit: (f) => (f[VA] = 'us-va\n'),
    file: VA,
    at: 'us-va',
    path: '',
    message: [/expected a mapping/, /single value "us-va"/, /regions\/README\.md/],
  },
  // Unknown keys.
  {
    name: 'unknown key at the top level',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'colour: blue\n'),
    file: CONFIG,
    at: 'colour: blue',
    path: 'colour',
    message: [/^unknown key "colour"/, /remove it or fix its spelling/, /the keys allowed here are dns, http, workers, regionsDir, policy, zones, names, geoip, networks, state, ingest, windows, housekeeping, collectors, log$/],
  },
  {
    name: 'unknown key inside dns.tcp (a near miss is named)',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '  listen: ["127.0.0.1:0"]\n', '  listen: ["127.0.0.1:0"]\n  tcp:\n    idleTimeout: 5000\n')),
    file: CONFIG,
    at: 'idleTimeout: 5000',
    path: 'dns.tcp.idleTimeout',
    message: [/^unknown key "idleTimeout"/, /did you mean "idleTimeoutMs"\?/, /idleTimeoutMs, messageTimeoutMs, maxConnections, maxConnectionsPerClient, maxPipelined/],
  },
  {
    name: 'dns.rateLimit.exempt: not an address or prefix',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '  listen: ["127.0.0.1:0"]\n', '  listen: ["127.0.0.1:0"]\n  rateLimit:\n    exempt: [192.0.2.0/24, 192.0.2.0/33]\n')),
    file: CONFIG,
    at: '192.0.2.0/33',
    path: 'dns.rateLimit.exempt[1]',
    message: [/^not an address or a prefix: "192\.0\.2\.0\/33"/, /e\.g\. 192\.0\.2\.0\/24/],
  },
  {
    name: 'dns.rateLimit.mode: not on, log or off',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '  listen: ["127.0.0.1:0"]\n', '  listen: ["127.0.0.1:0"]\n  rateLimit:\n    mode: true\n')),
    file: CONFIG,
    at: 'mode: true',
    path: 'dns.rateLimit.mode',
    message: [/"on", "log" or "off"|"on", "log", "off"/],
  },
  {
    name: 'unknown key inside a zone record',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '{ name: mail, type: A, data: 192.0.2.25 }', '{ name: mail, type: A, data: 192.0.2.25, tll: 60 }')),
    file: CONFIG,
    at: 'tll: 60',
    path: 'zones[0].records[2].tll',
    message: [/^unknown key "tll"/, /did you mean "ttl"\?/, /name, type, ttl, data/],
  },
  {
    name: 'unknown key whose value is a block mapping points at the key',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'geo:\n  enabled: true\n'),
    file: CONFIG,
    at: 'geo:',
    path: 'geo',
    message: [/^unknown key "geo"/],
  },
  {
    name: 'unknown key inside a region file',
    edit: (f) => (f[VA] = f[VA] + 'colour: blue\n'),
    file: VA,
    at: 'colour: blue',
    path: 'colour',
    message: [/^unknown key "colour"/, /remove it or fix its spelling/, /id, name, location, bias, endpoints, capacity, power, drainHook, labels/],
  },
  {
    name: 'missing key: points at its parent',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '      serial: 1\n', '')),
    file: CONFIG,
    at: 'soa:',
    path: 'zones[0].soa.serial',
    message: [/^missing key "serial": add it \(zone serial\)/],
  },
  // Types and ranges.
  {
    name: 'wrong type: a quoted number for an integer TTL',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    ttl: 300\n', '    ttl: "300"\n')),
    file: CONFIG,
    at: 'ttl: "300"',
    path: 'zones[0].ttl',
    message: [/^must be an integer from 0 to 2147483647 \(got "300"\)/, /write the number without quotes/],
  },
  {
    name: 'wrong type: a word for an integer TTL',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    ttl: 30\n', '    ttl: thirty\n')),
    file: CONFIG,
    at: 'ttl: thirty',
    path: 'names[0].ttl',
    message: [/^must be an integer from 0 to 2147483647 \(got "thirty"\)/],
  },
  {
    name: 'out of range: a negative TTL',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '{ name: mail, type: A, data: 192.0.2.25 }', '{ name: mail, type: A, data: 192.0.2.25, ttl: -1 }')),
    file: CONFIG,
    at: 'ttl: -1',
    path: 'zones[0].records[2].ttl',
    message: [/^must be an integer from 0 to 2147483647 \(got -1\)/],
  },
  {
    name: 'out of range: dns.udpPayloadMax 100',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '  listen: ["127.0.0.1:0"]\n', '  listen: ["127.0.0.1:0"]\n  udpPayloadMax: 100\n')),
    file: CONFIG,
    at: 'udpPayloadMax: 100',
    path: 'dns.udpPayloadMax',
    message: [/^must be an integer from 512 to 4096 \(got 100\)/, /the default is 1232/],
  },
  {
    name: 'out of range: bias 150 in a region',
    edit: (f) => (f[VA] = sub(f[VA], 'bias: 0', 'bias: 150')),
    file: VA,
    at: 'bias: 150',
    path: 'bias',
    message: [/^must be a number from -99 to 99 \(got 150\)/, /the default is 0/],
  },
  {
    name: 'a union: workers must be "auto" or a number',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'workers: many\n'),
    file: CONFIG,
    at: 'workers: many',
    path: 'workers',
    message: [/^must be "auto" or an integer from 0 to 256 \(got "many"\)/],
  },
  {
    name: 'a union: record data is a string or a list, and a list item is checked itself',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'data: 192.0.2.25 }', 'data: ["192.0.2.25", ""] }')),
    file: CONFIG,
    at: 'data: ["192.0.2.25", ""]',
    path: 'zones[0].records[2].data[1]',
    message: [/^must not be empty \(got ""\)$/],
  },
  {
    name: 'an empty value',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'dns:\n  listen: ["127.0.0.1:0"]\n', 'dns:\n')),
    file: CONFIG,
    at: 'dns:',
    path: 'dns',
    message: [/^must be a mapping \(key: value\) \(got an empty value\)/, /write a value after the colon, or remove the key/],
  },
  {
    name: 'a listen address with a port above 65535',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '["127.0.0.1:0"]', '["127.0.0.1:65536"]')),
    file: CONFIG,
    at: '127.0.0.1:65536',
    path: 'dns.listen[0]',
    message: [/^must be host:port with an IP address or localhost and a port 0–65535, e\.g\. 127\.0\.0\.1:5353/, /got "127\.0\.0\.1:65536"/],
  },
  {
    name: 'a zone name that is not a DNS name',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'name: gslb.example.com', 'name: "gslb example.com"')),
    file: CONFIG,
    at: 'gslb example.com',
    path: 'zones[0].name',
    message: [/^must be a DNS name: labels of letters, digits/, /got "gslb example\.com"/],
  },
  // Enumerations.
  {
    name: 'bad enum: whenAllDown "sometimes"',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    ttl: 30\n', '    ttl: 30\n    whenAllDown: sometimes\n')),
    file: CONFIG,
    at: 'whenAllDown: sometimes',
    path: 'names[0].whenAllDown',
    message: [/^must be one of "nearest", "all", "empty", "servfail" \(got "sometimes"\)$/],
  },
  {
    name: 'bad enum: record type "XYZ"',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '{ name: mail, type: A,', '{ name: mail, type: XYZ,')),
    file: CONFIG,
    at: 'type: XYZ',
    path: 'zones[0].records[2].type',
    message: [/^must be one of "A", "AAAA", "CNAME", "TXT", "MX", "SRV", "CAA", "PTR", "NS" \(got "XYZ"\)$/],
  },
  {
    name: 'bad enum in a region: power.site',
    edit: (f) => (f[VA] = sub(f[VA], 'site: grid', 'site: solar')),
    file: VA,
    at: 'site: solar',
    path: 'power.site',
    message: [/^must be one of "grid", "behind-the-meter" \(got "solar"\)$/],
  },
  // Addresses.
  {
    name: 'bad IP in a region endpoint',
    edit: (f) => (f[VA] = sub(f[VA], '192.0.2.11', '192.0.2.300')),
    file: VA,
    at: '192.0.2.300',
    path: 'endpoints[1].address',
    message: [/^must be an IPv4 or IPv6 address, e\.g\. 192\.0\.2\.1 or 2001:db8::1 \(got "192\.0\.2\.300"\)$/],
  },
  {
    name: 'bad IP in a nameserver glue',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'addresses: [192.0.2.53]', 'addresses: [192.0.2.53, "2001:db8::53::1"]')),
    file: CONFIG,
    at: '2001:db8::53::1',
    path: 'zones[0].nameservers[0].addresses[1]',
    message: [/^must be an IPv4 or IPv6 address/, /got "2001:db8::53::1"/],
  },
  {
    name: 'the same endpoint twice in a region (however spelt)',
    edit: (f) => (f[VA] = sub(f[VA], '  - address: 192.0.2.11', '  - address: 2001:DB8:10:0::10')),
    file: VA,
    at: '2001:db8:10::10',
    path: 'endpoints[2].address',
    message: [/^2001:db8:10::10 is listed twice \(also endpoints\[1\]\): remove one$/],
  },
  // Regions as a set.
  {
    name: "a region file whose id differs from its file name",
    edit: (f) => {
      f['regions/us-east.yaml'] = f[VA]!;
      delete f[VA];
    },
    file: 'regions/us-east.yaml',
    at: 'id: us-va',
    path: 'id',
    message: [/"us-va" differs from the file name/, /set id: us-east, or rename the file to us-va\.yaml/],
  },
  {
    name: 'two region files with the same id',
    edit: (f) => (f['regions/us-va.yml'] = f[VA]!),
    file: 'regions/us-va.yml',
    at: 'id: us-va',
    path: 'id',
    message: [/region id "us-va" is also used by \S+\/regions\/us-va\.yaml/, /remove one of the two files, or rename one/],
  },
  {
    name: 'a name referring to an unknown region (a near miss is named)',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], 'regions: [eu-ie]', 'regions: [eu-ei]')),
    file: CONFIG,
    at: 'regions: [eu-ei]',
    path: 'names[1].regions[0]',
    message: [/^unknown region "eu-ei": no file eu-ei\.yaml in \S+\/regions/, /did you mean "eu-ie"\?/, /use one of eu-ie, us-va, or add eu-ei\.yaml there/],
  },
  {
    name: 'missing regions folder (regionsDir by default)',
    edit: (f) => {
      delete f[VA];
      delete f['regions/eu-ie.yaml'];
    },
    file: CONFIG,
    at: 'dns:', // regionsDir is not in the file: its first key
    path: 'regionsDir',
    message: [/cannot read the regions folder \S+\/regions set by regionsDir \(default "regions"\)/, /it does not exist/, /create it .*, or set regionsDir/],
  },
  {
    name: 'missing regions folder (regionsDir set)',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'regionsDir: fleet\n'),
    file: CONFIG,
    at: 'regionsDir: fleet',
    path: 'regionsDir',
    message: [/cannot read the regions folder \S+\/fleet set by regionsDir "fleet", relative to this file \(it does not exist\)/],
  },
  {
    name: 'empty regions folder',
    edit: (f) => {
      delete f[VA];
      delete f['regions/eu-ie.yaml'];
      f['regions/'] = '';
      f['regions/README.md'] = '# not a region\n';
    },
    file: CONFIG,
    at: 'dns:', // regionsDir is not in the file: its first key
    path: 'regionsDir',
    message: [/no region files \(\*\.yaml\) in the regions folder \S+\/regions/, /add one file per region, e\.g\. us-va\.yaml \(format: regions\/README\.md\)/],
  },  // Recurring windows (issue 21): node-cron's detailed validation names the cron field and the bad part.
  {
    name: 'a window whose cron expression has an hour out of range',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: ie-sunday, kind: tariff, regions: [us-va], cron: "0 25 * * sun", timezone: Europe/Dublin, duration: 2h, reason: patching }\n'),
    file: CONFIG,
    at: 'cron: "0 25 * * sun"',
    path: 'windows[0].cron',
    message: [/^"0 25 \* \* sun" is not a cron expression node-cron accepts: its hour field \("25"\)/, /write minute hour day-of-month month day-of-week/],
  },
  {
    name: 'a window whose cron expression has too many fields',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: ie-sunday, kind: tariff, regions: [us-va], cron: "0 0 2 * * sun 1", duration: 2h, reason: patching }\n'),
    file: CONFIG,
    at: 'cron: "0 0 2 * * sun 1"',
    path: 'windows[0].cron',
    message: [/the expression: expected 5 or 6 fields but got 7/],
  },
  {
    name: 'a window in a time zone the build does not know',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: ie-sunday, kind: tariff, regions: [us-va], cron: "0 2 * * sun", timezone: Europe/Dubln, duration: 2h, reason: patching }\n'),
    file: CONFIG,
    at: 'timezone: Europe/Dubln',
    path: 'windows[0].timezone',
    message: [/"Europe\/Dubln" is not a time zone this build knows \(tz data /, /use an IANA name such as Europe\/Dublin/],
  },
  {
    name: 'a grid source bound to an unknown region (policy.grid.loss.bindings)',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'policy:\n  grid:\n    loss:\n      bindings: { openadr3/vtn.example: [us-va, eu-ei] }\n'),
    file: CONFIG,
    at: 'bindings: { openadr3/vtn.example: [us-va, eu-ei] }',
    path: 'policy.grid.loss.bindings.openadr3/vtn.example[1]',
    message: [/unknown region "eu-ei": .*use one of eu-ie, us-va/],
  },
  {
    name: 'regions granted to a collector section that is not configured (ingest.collectors)',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'ingest:\n  collectors:\n    openadr3: { regions: [us-va] }\n'),
    file: CONFIG,
    at: 'openadr3: { regions: [us-va] }',
    path: 'ingest.collectors.openadr3',
    message: [/"openadr3" is not a configured collector section \(configured: none\)/],
  },
  {
    name: 'a window on an unknown region',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: ie-sunday, regions: [eu-ei], cron: "0 2 * * sun", duration: 2h, reason: patching }\n'),
    file: CONFIG,
    at: 'regions: [eu-ei]',
    path: 'windows[0].regions[0]',
    message: [/unknown region "eu-ei": use one of eu-ie, us-va/],
  },
  {
    name: 'a maintenance window over the safety limits without force',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: all, regions: [eu-ie, us-va], cron: "0 2 * * sun", duration: 2h, reason: patching }\n'),
    file: CONFIG,
    at: 'id: all',
    path: 'windows[0].force',
    message: [/exceeds the automation's safety limits: it drains 2 regions at once/, /set force: true to confirm it \(audited\)/],
  },
  {
    name: 'a window whose duration is not one',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: ie-sunday, kind: tariff, regions: [us-va], cron: "0 2 * * sun", duration: 2 hours, reason: patching }\n'),
    file: CONFIG,
    at: 'duration: 2 hours',
    path: 'windows[0].duration',
    message: [/2h, 90m, 3h30m or 1d/],
  },
  {
    name: 'two windows with one id',
    edit: (f) => (f[CONFIG] = f[CONFIG] + 'windows:\n  - { id: w, kind: tariff, regions: [us-va], cron: "0 2 * * sun", duration: 2h, reason: a }\n  - { id: w, kind: tariff, regions: [us-va], cron: "0 3 * * sun", duration: 2h, reason: b }\n'),
    file: CONFIG,
    at: 'reason: b',
    path: 'windows[1].id',
    message: [/window id "w" is also used by windows\[0\]: give each window its own id/],
  },
];

test('loadConfig reports each problem once, with file, line, path, what is expected and the fix', async (t) => {
  for (const c of cases) {
    await t.test(c.name, (tt) => {
      const files = baseFiles();
      c.edit(files);
      const dir = tempFleet(tt, files);
      assertOneIssue(c.name, dir, files, issuesOf(() => loadConfig(join(dir, CONFIG))), c);
    });
  }
});

test('loadConfig: a missing file is one issue naming it', (t) => {
  const dir = tempFleet(t, {});
  const issues = issuesOf(() => loadConfig(join(dir, 'nope.yaml')));
  assert.deepEqual(issues, [{ file: join(dir, 'nope.yaml'), path: '', message: 'cannot read the file (it does not exist): check the path' }]);
});

test('loadConfig reports problems in several files at once, and a broken region is not also "unknown"', (t) => {
  const files = baseFiles();
  files[CONFIG] = sub(files[CONFIG], '    ttl: 30\n', '    ttl: -30\n');
  files[VA] = sub(files[VA], 'bias: 0', 'bias: 150');
  files['regions/eu-ie.yaml'] = sub(files['regions/eu-ie.yaml'], '  country: IE', '  country: ie');
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => loadConfig(join(dir, CONFIG)));
  assert.deepEqual(
    issues.map((i) => `${i.file.slice(dir.length + 1)}:${i.line} ${i.path}`),
    ['gridsteer.yaml:22 names[0].ttl', 'regions/eu-ie.yaml:6 location.country', 'regions/us-va.yaml:5 bias'],
    JSON.stringify(issues, null, 2),
  );
  assert.match(issues[1]!.message, /^must be two capital letters, e\.g\. US \(got "ie"\)$/);
});

test('loadConfig: with a broken region file, a name using that region gets no second issue', (t) => {
  const files = baseFiles();
  files['regions/eu-ie.yaml'] = sub(files['regions/eu-ie.yaml'], 'endpoints:', 'endpoint:');
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => loadConfig(join(dir, CONFIG)));
  assert.deepEqual(
    issues.map((i) => `${i.file.slice(dir.length + 1)} ${i.path}`),
    ['regions/eu-ie.yaml endpoints', 'regions/eu-ie.yaml endpoint'],
    JSON.stringify(issues, null, 2),
  );
  assert.match(issues[0]!.message, /^missing key "endpoints": add it \(the addresses answered for this region\)$/);
  assert.match(issues[1]!.message, /^unknown key "endpoint": did you mean "endpoints"\?/);
});

test('ConfigError prints one line per issue: FILE:LINE:COL: path: message', (t) => {
  const files = baseFiles();
  files[CONFIG] = sub(files[CONFIG], '    ttl: 300\n', '    ttl: "300"\n');
  const dir = tempFleet(t, files);
  try {
    loadConfig(join(dir, CONFIG));
    assert.fail('expected a ConfigError');
  } catch (e) {
    assert.equal(
      (e as Error).message,
      `config: 1 problem:\n  ${join(dir, CONFIG)}:6:10: zones[0].ttl: must be an integer from 0 to 2147483647 (got "300"): write the number without quotes`,
    );
  }
});

function load(t: { after(fn: () => void): void }, files: Files = baseFiles()): { dir: string; loaded: LoadedConfig } {
  const dir = tempFleet(t, files);
  return { dir, loaded: loadConfig(join(dir, CONFIG)) };
}

test('loadConfig applies the defaults of every setting left out', (t) => {
  const { loaded } = load(t);
  const c = loaded.config;
  assert.deepEqual(c.dns, {
    listen: ['127.0.0.1:0'],
    udpPayloadMax: 1232,
    tcp: { idleTimeoutMs: 10000, messageTimeoutMs: 3000, maxConnections: 1024, maxConnectionsPerClient: 32, maxPipelined: 128 },
    rateLimit: {
      mode: 'on',
      responsesPerSecond: 20,
      referralsPerSecond: 20,
      nodataPerSecond: 20,
      nxdomainsPerSecond: 10,
      errorsPerSecond: 10,
      zoneNxdomainsPerSecond: 0,
      slip: 2,
      ipv4PrefixLength: 24,
      ipv6PrefixLength: 56,
      exempt: [],
      tableSize: 65536,
    },
    cookies: { mode: 'on' },
  });
  assert.deepEqual(c.http, { listen: '127.0.0.1:8053', rateLimit: { writesPerMinute: 120, explainPerMinute: 600 } });
  assert.equal(c.workers, 'auto');
  assert.equal(c.regionsDir, 'regions');
  assert.deepEqual(c.policy, {
    minTtl: 5,
    resolverMinTtl: 30,
    defaultLocation: { lat: 39.0, lon: -77.5 },
    weights: {},
    health: { rise: 2, fall: 3, slowStartMs: 60000 },
    hysteresis: 0.05,
    // Each kind's default, from the kinds' registry (the kind file declares it): no list pinned here.
    stale: Object.fromEntries(KIND_LIST.map((k) => [k.name, { keepMs: k.stale.keepMs, then: k.stale.then }])),
    degradedShare: 0.5,
    grid: { mode: 'apply', shadow: [], trust: { 'grid-alerts': 'cap' }, capFloor: 0.25, loss: { bindings: {}, maxTrustedLossShare: 0.5 }, rules: DEFAULT_GRID_RULES },
    saturation: { queueWaiting: 5, kvCacheUse: 0.8, throttledFactor: 0.5, spillMargin: 0.1 },
    carbon: { bandKm: 250, minGain: 0.2 },
    rampStepMs: 30000,
    drain: { sessionAllowanceMs: 300000, sessionAllowanceMaxMs: 14400000, discretionarySessionAllowanceMaxMs: 5400000, marginMs: 5000, rampMs: 60000, holdMs: 120000, restoreMs: 300000, maxAutoShare: 0.5, minDrainIntervalMs: 120000 },
  });
  assert.deepEqual(c.state, {
    store: 'memory',
    file: 'var/gridsteer-state.jsonl',
    redis: { url: 'redis://127.0.0.1:6379', prefix: 'gridsteer', waitReplicas: 0, waitTimeoutMs: 1000, onLoss: 'hold' },
    planDebounceMs: 50,
    planMinIntervalMs: 250,
  });
  assert.deepEqual(c.collectors, {}, 'no collector runs unless configured');
  assert.deepEqual(c.geoip, { enabled: true, watchIntervalMs: 5000 });
  assert.deepEqual(c.networks, []);
  assert.deepEqual(c.zones[0]!.soa, { rname: 'hostmaster.example.com.', serial: 1, refresh: 3600, retry: 600, expire: 1209600, minimum: 60 });
  assert.deepEqual(c.zones[0]!.nameservers[1], { name: 'ns.example.net.', addresses: [] });
  assert.equal(c.names[1]!.ttl, 30, 'names[].ttl defaults to 30');
  assert.equal(c.zones[0]!.records[0]!.ttl, undefined, 'a record without ttl takes the zone ttl in the zone compiler');
  const ie = loaded.regions.find((r) => r.id === 'eu-ie')!;
  assert.equal(ie.bias, 0);
  assert.equal(ie.location.city, undefined);
});

test('loadConfig: defaults are fresh objects for every load', (t) => {
  const a = load(t).loaded;
  const b = load(t).loaded;
  assert.notEqual(a.config.policy.defaultLocation, b.config.policy.defaultLocation);
  assert.deepEqual(a.config.policy.defaultLocation, b.config.policy.defaultLocation);
});

test('loadConfig returns a deeply frozen result', (t) => {
  const { loaded } = load(t);
  const unfrozen: string[] = [];
  const walk = (v: unknown, path: string) => {
    if (v === null || typeof v !== 'object') return;
    if (!Object.isFrozen(v)) unfrozen.push(path || '(root)');
    for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
  };
  walk(loaded, '');
  assert.deepEqual(unfrozen, []);
  assert.throws(() => {
    (loaded.config.dns as { udpPayloadMax: number }).udpPayloadMax = 4096;
  }, TypeError);
  assert.throws(() => {
    (loaded.regions[0]!.endpoints as { address: string }[]).push({ address: '192.0.2.99' });
  }, TypeError);
  assert.throws(() => {
    (loaded as { hash: string }).hash = 'x';
  }, TypeError);
});

test('loadConfig: regions come sorted by file, each with its file', (t) => {
  const { dir, loaded } = load(t);
  assert.deepEqual(
    loaded.regions.map((r) => [r.id, r.file]),
    [
      ['eu-ie', join(dir, 'regions/eu-ie.yaml')],
      ['us-va', join(dir, 'regions/us-va.yaml')],
    ],
  );
  assert.equal(loaded.file, join(dir, CONFIG));
});

test('loadConfig: regionsDir "." reads the regions beside gridsteer.yaml, not gridsteer.yaml itself', (t) => {
  const dir = tempFleet(t, { [CONFIG]: BASE_CONFIG + 'regionsDir: .\n', 'us-va.yaml': US_VA, 'eu-ie.yaml': EU_IE });
  assert.deepEqual(
    loadConfig(join(dir, CONFIG)).regions.map((r) => r.id),
    ['eu-ie', 'us-va'],
  );
});

test('loadConfig: locate() maps a path in any file read to its line', (t) => {
  const { dir, loaded } = load(t);
  assert.deepEqual(loaded.locate(join(dir, CONFIG), ['zones', 0, 'records', 2, 'data']), { line: 16, column: 38 });
  assert.equal(loaded.locate(join(dir, VA), ['endpoints', 1, 'address']).line, 8);
  assert.deepEqual(loaded.locate(join(dir, 'other.yaml'), ['x']), {});
});

test('the hash changes when a region file changes, and not otherwise', (t) => {
  const { dir, loaded } = load(t);
  const h0 = loaded.hash;
  assert.match(h0, /^[0-9a-f]{16}$/);
  const again = () => loadConfig(join(dir, CONFIG)).hash;
  assert.equal(again(), h0, 'loading the same files again');

  const va = join(dir, VA);
  writeFileSync(va, US_VA);
  utimesSync(va, new Date(2001, 0, 1), new Date(2001, 0, 1));
  assert.equal(again(), h0, 'rewriting the same bytes and changing the mtime');

  const elsewhere = tempFleet(t, {});
  cpSync(dir, elsewhere, { recursive: true });
  assert.equal(loadConfig(join(elsewhere, CONFIG)).hash, h0, 'the same files in another folder');

  writeFileSync(va, US_VA.replace('bias: 0', 'bias: 10'));
  const h1 = again();
  assert.notEqual(h1, h0, 'a region file changed');
  writeFileSync(va, US_VA + '# a comment\n');
  const h2 = again();
  assert.notEqual(h2, h0, 'a comment changes the bytes, so the version');
  assert.notEqual(h2, h1);
  writeFileSync(va, US_VA);
  assert.equal(again(), h0, 'back to the first bytes');

  writeFileSync(join(dir, 'regions/ap-sin.yaml'), EU_IE.replace(/eu-ie/g, 'ap-sin'));
  assert.notEqual(again(), h0, 'a region added');
  rmSync(join(dir, 'regions/ap-sin.yaml'));
  writeFileSync(join(dir, 'regions/notes.txt'), 'not a region\n');
  assert.equal(again(), h0, 'a file that is not a region file');

  renameSync(join(dir, 'regions/eu-ie.yaml'), join(dir, 'regions/eu-ie.yml'));
  assert.notEqual(again(), h0, 'a region file renamed');
  renameSync(join(dir, 'regions/eu-ie.yml'), join(dir, 'regions/eu-ie.yaml'));

  writeFileSync(join(dir, CONFIG), BASE_CONFIG.replace('serial: 1', 'serial: 2'));
  assert.notEqual(again(), h0, 'gridsteer.yaml changed');
});

/** Continents of the countries in the example fleet (add a country when a region needs it). */
const CONTINENT: Record<string, string> = {
  US: 'North America',
  CA: 'North America',
  IE: 'Europe',
  JP: 'Asia',
  SG: 'Asia',
  BR: 'South America',
};

test('the shipped example (gridsteer.yaml and regions/) loads: seven regions on four continents', () => {
  const loaded = loadConfig(join(REPO, 'gridsteer.yaml'));
  assert.deepEqual(
    loaded.regions.map((r) => r.id),
    ['ap-sin', 'ap-tyo', 'ca-ab', 'eu-ie', 'sa-sao', 'us-tx', 'us-va'],
  );
  const continents = new Set(
    loaded.regions.map((r) => {
      const c = CONTINENT[r.location.country];
      assert.ok(c, `${r.file}: add country ${r.location.country} to the CONTINENT table of this test`);
      return c;
    }),
  );
  assert.deepEqual([...continents].sort(), ['Asia', 'Europe', 'North America', 'South America']);
  for (const r of loaded.regions) {
    assert.equal(readFileSync(r.file, 'utf8').includes(`id: ${r.id}\n`), true, `${r.file}: id line`);
  }
  assert.equal(loaded.config.zones.length, 1);
  assert.deepEqual(
    loaded.config.names.map((n) => n.name),
    ['api.gslb.example.com'],
  );
});

test('docs/schedules.md: each example windows: section loads with the shipped example, as copied', (t) => {
  const doc = readFileSync(join(REPO, 'docs/schedules.md'), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n(windows:\n[\s\S]*?)```/g)].map((m) => m[1]!);
  assert.equal(blocks.length, 3, 'the three examples: maintenance, tariff, practice');
  const kinds: string[] = [];
  for (const block of blocks) {
    const dir = tempFleet(t, { [CONFIG]: readFileSync(join(REPO, 'gridsteer.yaml'), 'utf8') + '\n' + block });
    cpSync(join(REPO, 'regions'), join(dir, 'regions'), { recursive: true });
    const loaded = loadConfig(join(dir, CONFIG));
    assert.equal(loaded.config.windows.length, 1);
    kinds.push(loaded.config.windows[0]!.kind);
  }
  assert.deepEqual(kinds, ['maintenance', 'tariff', 'practice']);
});
