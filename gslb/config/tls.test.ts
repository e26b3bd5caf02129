/**
 * http.tls: the loader reads the certificate, key and client CA (relative to gridsteer.yaml)
 * and reports each problem as one issue at http.tls.<key> naming the file and the fix;
 * readHttpTls gives the https options for each mode.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './load.js';
import { readHttpTls } from './tls.js';
import { makeTestCerts } from './testing-tls.js';
import { assertOneIssue, baseFiles, issuesOf, sub, tempFleet, type Expect, type Files } from './testing.js';

const CONFIG = 'gridsteer.yaml';
const certDir = mkdtempSync(join(tmpdir(), 'gridsteer-tls-unit-'));
after(() => rmSync(certDir, { recursive: true, force: true }));
const certs = makeTestCerts(certDir);
const pem = (f: string) => readFileSync(f, 'utf8');

const TLS_SECTION = `http:
  tls:
    cert: tls/server.crt
    key: tls/server.key
    clientCa: tls/ca.crt
`;

/** The base fleet with http.tls and its three files under tls/. */
function tlsFiles(): Files {
  const f = baseFiles();
  f[CONFIG] = f[CONFIG] + TLS_SECTION;
  f['tls/server.crt'] = pem(certs.serverCert);
  f['tls/server.key'] = pem(certs.serverKey);
  f['tls/ca.crt'] = pem(certs.ca);
  return f;
}

interface Case extends Expect {
  name: string;
  edit(f: Files): void;
}

const encryptedKey = generateKeyPairSync('ec', {
  namedCurve: 'P-256',
  privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
}).privateKey;

const cases: Case[] = [
  {
    name: 'the certificate file does not exist',
    edit: (f) => delete f['tls/server.crt'],
    file: CONFIG,
    at: 'cert: tls/server.crt',
    path: 'http.tls.cert',
    message: [/^cannot read \S+\/tls\/server\.crt \(it does not exist\), set by http\.tls\.cert relative to this file/, /check the path, or point http\.tls\.cert at the server certificate \(PEM/],
  },
  {
    name: 'the key file does not exist',
    edit: (f) => delete f['tls/server.key'],
    file: CONFIG,
    at: 'key: tls/server.key',
    path: 'http.tls.key',
    message: [/^cannot read \S+\/tls\/server\.key \(it does not exist\)/, /point http\.tls\.key at the server certificate's private key/],
  },
  {
    name: 'the client CA file does not exist',
    edit: (f) => delete f['tls/ca.crt'],
    file: CONFIG,
    at: 'clientCa: tls/ca.crt',
    path: 'http.tls.clientCa',
    message: [/^cannot read \S+\/tls\/ca\.crt \(it does not exist\)/, /point http\.tls\.clientCa at the CA certificate\(s\) that sign client certificates/],
  },
  {
    name: 'the certificate path is a folder',
    edit: (f) => {
      delete f['tls/server.crt'];
      f['tls/server.crt/'] = '';
    },
    file: CONFIG,
    at: 'cert: tls/server.crt',
    path: 'http.tls.cert',
    message: [/\(it is a folder, not a file\)/],
  },
  {
    name: 'the certificate file holds no PEM certificate (a key by mistake)',
    edit: (f) => (f['tls/server.crt'] = pem(certs.serverKey)),
    file: CONFIG,
    at: 'cert: tls/server.crt',
    path: 'http.tls.cert',
    message: [/\/tls\/server\.crt holds no PEM certificate \(no "-----BEGIN CERTIFICATE-----" block\): point http\.tls\.cert at/],
  },
  {
    name: 'the certificate does not parse',
    edit: (f) => (f['tls/server.crt'] = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'),
    file: CONFIG,
    at: 'cert: tls/server.crt',
    path: 'http.tls.cert',
    message: [/holds a certificate that does not parse \(block 1: /],
  },
  {
    name: 'the key file is not a private key (the certificate by mistake)',
    edit: (f) => (f['tls/server.key'] = pem(certs.serverCert)),
    file: CONFIG,
    at: 'key: tls/server.key',
    path: 'http.tls.key',
    message: [/\/tls\/server\.key is not a PEM private key \(/, /point http\.tls\.key at/],
  },
  {
    name: 'the key is encrypted',
    edit: (f) => (f['tls/server.key'] = encryptedKey),
    file: CONFIG,
    at: 'key: tls/server.key',
    path: 'http.tls.key',
    message: [/is encrypted with a passphrase, which GridSteer cannot ask for: decrypt it \(openssl pkey/],
  },
  {
    name: 'the key does not match the certificate',
    edit: (f) => (f['tls/server.key'] = pem(certs.strayKey)),
    file: CONFIG,
    at: 'key: tls/server.key',
    path: 'http.tls.key',
    message: [/\/tls\/server\.key does not match the certificate \S+\/tls\/server\.crt \(http\.tls\.cert, subject "CN=127\.0\.0\.1"\)/, /use the key the certificate was issued for/],
  },
  {
    name: 'the client CA file holds no certificate',
    edit: (f) => (f['tls/ca.crt'] = 'not a certificate\n'),
    file: CONFIG,
    at: 'clientCa: tls/ca.crt',
    path: 'http.tls.clientCa',
    message: [/\/tls\/ca\.crt holds no PEM certificate/, /point http\.tls\.clientCa at/],
  },
  {
    name: 'requireClientCert without clientCa',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    clientCa: tls/ca.crt\n', '    requireClientCert: true\n')),
    file: CONFIG,
    at: 'requireClientCert: true',
    path: 'http.tls.requireClientCert',
    message: [/^requireClientCert needs clientCa/, /set http\.tls\.clientCa, or remove requireClientCert/],
  },
  {
    name: 'an unknown key under http.tls',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    clientCa: tls/ca.crt\n', '    clientCA: tls/ca.crt\n')),
    file: CONFIG,
    at: 'clientCA: tls/ca.crt',
    path: 'http.tls.clientCA',
    message: [/^unknown key "clientCA": did you mean "clientCa"\?/, /the keys allowed here are cert, key, clientCa, requireClientCert$/],
  },
  {
    name: 'http.tls without a key',
    edit: (f) => (f[CONFIG] = sub(f[CONFIG], '    key: tls/server.key\n', '')),
    file: CONFIG,
    at: '  tls:',
    path: 'http.tls.key',
    message: [/^missing key "key": add it \(PEM file of the certificate's private key/],
  },
  {
    name: 'requireClientCert is not a boolean',
    edit: (f) => (f[CONFIG] = f[CONFIG] + '    requireClientCert: yes\n'),
    file: CONFIG,
    at: 'requireClientCert: yes',
    path: 'http.tls.requireClientCert',
    message: [/must be true or false|must be a boolean/i],
  },
];

test('http.tls: each problem with the TLS files is one issue at http.tls.<key> naming the file and the fix', async (t) => {
  for (const c of cases) {
    await t.test(c.name, (tt) => {
      const files = tlsFiles();
      c.edit(files);
      const dir = tempFleet(tt, files);
      assertOneIssue(c.name, dir, files, issuesOf(() => loadConfig(join(dir, CONFIG))), c);
    });
  }
});

test('http.tls: good files load; paths are relative to the folder of gridsteer.yaml, not the current one', (t) => {
  const dir = tempFleet(t, tlsFiles());
  assert.notEqual(process.cwd(), dir);
  const loaded = loadConfig(join(dir, CONFIG));
  assert.deepEqual(loaded.config.http.tls, { cert: 'tls/server.crt', key: 'tls/server.key', clientCa: 'tls/ca.crt' });
  const { tls, problems } = readHttpTls(loaded.config.http.tls!, dir);
  assert.deepEqual(problems, []);
  assert.ok(tls);
  assert.equal(tls.files.cert, join(dir, 'tls/server.crt'));
  assert.equal(tls.subject, 'CN=127.0.0.1');
  assert.equal(tls.subjectAltName, 'IP Address:127.0.0.1');
});

test('readHttpTls: the https options of each mode', (t) => {
  const dir = tempFleet(t, tlsFiles());
  const opts = (tls: Parameters<typeof readHttpTls>[0]) => {
    const r = readHttpTls(tls, dir);
    assert.deepEqual(r.problems, []);
    const o = r.tls!.options;
    return { requestCert: o.requestCert, rejectUnauthorized: o.rejectUnauthorized, ca: o.ca !== undefined, required: r.tls!.requireClientCert };
  };
  const base = { cert: 'tls/server.crt', key: 'tls/server.key' };
  assert.deepEqual(opts(base), { requestCert: false, rejectUnauthorized: false, ca: false, required: false }, 'TLS only');
  assert.deepEqual(opts({ ...base, clientCa: 'tls/ca.crt' }), { requestCert: true, rejectUnauthorized: true, ca: true, required: true }, 'clientCa: required by default');
  assert.deepEqual(opts({ ...base, clientCa: 'tls/ca.crt', requireClientCert: true }), { requestCert: true, rejectUnauthorized: true, ca: true, required: true });
  assert.deepEqual(opts({ ...base, clientCa: 'tls/ca.crt', requireClientCert: false }), { requestCert: true, rejectUnauthorized: false, ca: true, required: false }, 'optional client certificates');
  assert.deepEqual(opts({ ...base, requireClientCert: false }), { requestCert: false, rejectUnauthorized: false, ca: false, required: false }, 'false without clientCa is harmless');
});

test('http.tls: problems with the certificate and the key are reported together', (t) => {
  const files = tlsFiles();
  delete files['tls/server.crt'];
  delete files['tls/server.key'];
  const dir = tempFleet(t, files);
  const issues = issuesOf(() => loadConfig(join(dir, CONFIG)));
  assert.deepEqual(issues.map((i) => i.path), ['http.tls.cert', 'http.tls.key'], JSON.stringify(issues, null, 2));
});
