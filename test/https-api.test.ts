/**
 * The HTTP API over TLS and mutual TLS (http.tls), against the spawned server, with
 * certificates made by openssl at test time (a CA, a server certificate for 127.0.0.1, a
 * client certificate from that CA and one from another CA), paths relative to
 * gridsteer.yaml. Node's https client asks; `gridsteer status` asks with $GRIDSTEER_CA,
 * $GRIDSTEER_CERT and $GRIDSTEER_KEY. A bad TLS file stops `serve` with a config error.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { makeTestCerts, type TestCerts } from '../gslb/config/testing-tls.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { run } from './helpers/dig.js';
import { cliPath } from './helpers/paths.js';
import { requireTool } from './helpers/tools.js';

const OPERATOR = 'op-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const TOKENS = { GRIDSTEER_TOKENS: `operator:alice:${OPERATOR},viewer:vic:${VIEWER}` };

interface Answer {
  status: number;
  body: string;
}

interface ClientTls {
  ca?: string;
  cert?: string;
  key?: string;
}

/** One HTTPS request on a fresh connection (no agent); rejects when the connection fails. */
function httpsGet(url: string, tls: ClientTls, token?: string, method = 'GET'): Promise<Answer> {
  const read = (f?: string) => (f === undefined ? undefined : readFileSync(f));
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        agent: false,
        ca: read(tls.ca),
        cert: read(tls.cert),
        key: read(tls.key),
        headers: token ? { authorization: `Bearer ${token}` } : {},
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Plain HTTP to the same port. */
function httpGet(url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Asserts that the request fails without any HTTP answer; returns the error. */
async function refused(p: Promise<Answer>, what: string): Promise<NodeJS.ErrnoException> {
  try {
    const a = await p;
    assert.fail(`${what}: expected the connection to fail, got HTTP ${a.status} ${a.body.slice(0, 200)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return e as NodeJS.ErrnoException;
  }
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node dist/gslb/cli/main.js …` with `env` on top of a clean GRIDSTEER_* environment (bounded: 20 s). */
function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('GRIDSTEER_')) delete base[k];
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { env: { ...base, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr });
    });
  });
}
const show = (r: Run) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** A test config whose http.tls names files under tls/ (relative), with the certificates made there. */
function tlsConfig(tls: Record<string, unknown>): { cfg: TestConfig; certs: TestCerts } {
  requireTool('openssl');
  const cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tls };
  });
  mkdirSync(join(cfg.dir, 'tls'));
  return { cfg, certs: makeTestCerts(join(cfg.dir, 'tls')) };
}

const MTLS = { cert: 'tls/server.crt', key: 'tls/server.key', clientCa: 'tls/ca.crt' };

describe('mutual TLS (clientCa, client certificates required)', () => {
  let cfg: TestConfig;
  let certs: TestCerts;
  let srv: RunningServer;
  let good: ClientTls;

  before(async () => {
    ({ cfg, certs } = tlsConfig(MTLS));
    srv = await spawnServer({ configFile: cfg.file, env: TOKENS });
    good = { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey };
  });
  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  test('the server listens on https and says so', () => {
    assert.match(srv.http, /^https:\/\/127\.0\.0\.1:\d+$/);
    const line = srv.logs.find((l) => l.includes('api: HTTPS'));
    assert.ok(line, srv.logs.join('\n'));
    assert.match(line, /client certificates required \(mutual TLS\)/);
    assert.match(line, /"subjectAltName":"IP Address:127\.0\.0\.1"/);
  });

  test('a good client certificate and a token: 200; the token still gives the role', async () => {
    const ok = await httpsGet(`${srv.http}/v1/config`, good, VIEWER);
    assert.equal(ok.status, 200, ok.body);
    assert.equal((JSON.parse(ok.body) as { file: string }).file, cfg.file);
    const noToken = await httpsGet(`${srv.http}/v1/config`, good);
    assert.equal(noToken.status, 401, noToken.body);
    assert.match(noToken.body, /GSLB_ERR_AUTH_REQUIRED/);
    const viewerReload = await httpsGet(`${srv.http}/v1/config/reload`, good, VIEWER, 'POST');
    assert.equal(viewerReload.status, 403, viewerReload.body);
    const health = await httpsGet(`${srv.http}/healthz`, good);
    assert.equal(health.status, 200, health.body);
  });

  test('without a client certificate the handshake fails, even for /healthz and with a token', async () => {
    await refused(httpsGet(`${srv.http}/healthz`, { ca: certs.ca }), 'no client certificate');
    await refused(httpsGet(`${srv.http}/v1/config`, { ca: certs.ca }, VIEWER), 'no client certificate, a token');
  });

  test('a client certificate from another CA: the handshake fails', async () => {
    await refused(httpsGet(`${srv.http}/v1/config`, { ca: certs.ca, cert: certs.otherClientCert, key: certs.otherClientKey }, VIEWER), 'wrong CA');
  });

  test('a client that does not trust the server certificate refuses it', async () => {
    const e = await refused(httpsGet(`${srv.http}/healthz`, { cert: certs.clientCert, key: certs.clientKey }), 'server CA not given');
    assert.match(String(e.code), /CERT|SELF_SIGNED|UNABLE/, String(e));
  });

  test('plain HTTP to the TLS port gets no HTTP answer', async () => {
    await refused(httpGet(srv.http.replace(/^https:/, 'http:') + '/healthz'), 'plain http');
  });

  test('gridsteer status works over mutual TLS with $GRIDSTEER_CA, $GRIDSTEER_CERT and $GRIDSTEER_KEY', async () => {
    const env = { GRIDSTEER_SERVER: srv.http, GRIDSTEER_TOKEN: VIEWER, GRIDSTEER_CA: certs.ca, GRIDSTEER_CERT: certs.clientCert, GRIDSTEER_KEY: certs.clientKey };
    const r = await cli(['status'], env);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^us-va\s/m, show(r));
    const json = await cli(['status', '--json'], env);
    assert.equal(json.code, 0, show(json));
    assert.ok(JSON.parse(json.stdout), show(json));

    const noCert = await cli(['status'], { GRIDSTEER_SERVER: srv.http, GRIDSTEER_TOKEN: VIEWER, GRIDSTEER_CA: certs.ca });
    assert.equal(noCert.code, 1, show(noCert));
    assert.match(noCert.stderr, /cannot reach the GridSteer API at https:\/\/127\.0\.0\.1:\d+ \(.+\); the TLS handshake failed: check \$GRIDSTEER_CA .* \$GRIDSTEER_CERT and \$GRIDSTEER_KEY/, show(noCert));

    const noCa = await cli(['status'], { ...env, GRIDSTEER_CA: '' });
    assert.equal(noCa.code, 1, show(noCa));
    assert.match(noCa.stderr, /the TLS handshake failed/, show(noCa));

    const halfPair = await cli(['status'], { ...env, GRIDSTEER_KEY: '' });
    assert.equal(halfPair.code, 2, show(halfPair));
    assert.match(halfPair.stderr, /a client certificate needs both \$GRIDSTEER_CERT and \$GRIDSTEER_KEY/, show(halfPair));

    const missing = await cli(['status'], { ...env, GRIDSTEER_CA: join(cfg.dir, 'tls', 'nope.crt') });
    assert.equal(missing.code, 2, show(missing));
    assert.match(missing.stderr, /\$GRIDSTEER_CA is \S+nope\.crt, which cannot be read \(ENOENT\)/, show(missing));

    const plain = await cli(['status'], { ...env, GRIDSTEER_SERVER: srv.http.replace(/^https:/, 'http:') });
    assert.equal(plain.code, 2, show(plain));
    assert.match(plain.stderr, /\$GRIDSTEER_CA, \$GRIDSTEER_CERT, \$GRIDSTEER_KEY set, but the server http:\/\/\S+ is not https:\/\//, show(plain));
  });

  test('a reload keeps the TLS settings of the start (and says a restart is needed)', async () => {
    const c = parse(readFileSync(cfg.file, 'utf8')) as { http: { tls: Record<string, unknown> } };
    c.http.tls.requireClientCert = false;
    writeFileSync(cfg.file, stringify(c));
    const r = await httpsGet(`${srv.http}/v1/config/reload`, good, OPERATOR, 'POST');
    assert.equal(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { changed: boolean }).changed, true);
    // The warning is logged before the answer, but reaches us through a pipe: wait for it (bounded).
    const warned = () => srv.logs.some((l) => l.includes('http.tls changed; restart to use the new TLS settings'));
    for (let i = 0; i < 500 && !warned(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(warned(), srv.logs.slice(-10).join('\n'));
    await refused(httpsGet(`${srv.http}/healthz`, { ca: certs.ca }), 'no client certificate after the reload');
    assert.equal((await httpsGet(`${srv.http}/healthz`, good)).status, 200);
  });
});

describe('optional client certificates (requireClientCert: false)', () => {
  let cfg: TestConfig;
  let certs: TestCerts;
  let srv: RunningServer;

  before(async () => {
    ({ cfg, certs } = tlsConfig({ ...MTLS, requireClientCert: false }));
    srv = await spawnServer({ configFile: cfg.file, env: TOKENS });
  });
  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  test('no client certificate: let through, the token decides', async () => {
    assert.equal((await httpsGet(`${srv.http}/v1/config`, { ca: certs.ca }, VIEWER)).status, 200);
    assert.equal((await httpsGet(`${srv.http}/v1/config`, { ca: certs.ca })).status, 401);
  });

  test('a good client certificate: 200; one from another CA: the connection is closed', async () => {
    assert.equal((await httpsGet(`${srv.http}/v1/config`, { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey }, VIEWER)).status, 200);
    await refused(httpsGet(`${srv.http}/v1/config`, { ca: certs.ca, cert: certs.otherClientCert, key: certs.otherClientKey }, VIEWER), 'wrong CA');
  });
});

describe('TLS without client certificates (no clientCa)', () => {
  let cfg: TestConfig;
  let certs: TestCerts;
  let srv: RunningServer;

  before(async () => {
    ({ cfg, certs } = tlsConfig({ cert: 'tls/server.crt', key: 'tls/server.key' }));
    srv = await spawnServer({ configFile: cfg.file, env: TOKENS });
  });
  after(async () => {
    await srv?.stop();
    cfg?.cleanup();
  });

  test('https with the CA: 200; plain http: no answer; the CLI needs only $GRIDSTEER_CA', async () => {
    assert.equal((await httpsGet(`${srv.http}/v1/config`, { ca: certs.ca }, VIEWER)).status, 200);
    await refused(httpGet(srv.http.replace(/^https:/, 'http:') + '/healthz'), 'plain http');
    const r = await cli(['status'], { GRIDSTEER_SERVER: srv.http, GRIDSTEER_TOKEN: VIEWER, GRIDSTEER_CA: certs.ca });
    assert.equal(r.code, 0, show(r));
  });
});

describe('serve refuses bad TLS files with a config error', () => {
  const serve = (file: string) => run(process.execPath, [cliPath, 'serve', '--config', file, '--workers', '0', '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0'], 30000);
  const showRun = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

  test('a missing certificate file: exit 1, one line naming the file, http.tls.cert and the fix; never ready', async (t) => {
    const cfg = writeTestConfig((c) => {
      c.http = { ...(c.http ?? {}), tls: { cert: 'tls/missing.crt', key: 'tls/server.key' } };
    });
    t.after(() => cfg.cleanup());
    mkdirSync(join(cfg.dir, 'tls'));
    makeTestCerts(join(cfg.dir, 'tls'));
    const r = await serve(cfg.file);
    assert.equal(r.code, 1, showRun(r));
    assert.match(
      r.stderr,
      new RegExp(`^  ${cfg.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: http\\.tls\\.cert: cannot read \\S+/tls/missing\\.crt \\(it does not exist\\), set by http\\.tls\\.cert relative to this file: check the path`, 'm'),
      showRun(r),
    );
    assert.doesNotMatch(r.stdout + r.stderr, /"msg":"ready"|\n\s+at /, showRun(r));
    const check = await run(process.execPath, [cliPath, 'check-config', '--config', cfg.file], 30000);
    assert.equal(check.code, 1, showRun(check));
    assert.match(check.stderr, /http\.tls\.cert: cannot read/, showRun(check));
  });

  test('a key that does not match the certificate: exit 1 naming http.tls.key, no stack trace', async (t) => {
    const cfg = writeTestConfig((c) => {
      c.http = { ...(c.http ?? {}), tls: { cert: 'tls/server.crt', key: 'tls/stray.key' } };
    });
    t.after(() => cfg.cleanup());
    mkdirSync(join(cfg.dir, 'tls'));
    makeTestCerts(join(cfg.dir, 'tls'));
    const r = await serve(cfg.file);
    assert.equal(r.code, 1, showRun(r));
    assert.match(r.stderr, /http\.tls\.key: \S+\/tls\/stray\.key does not match the certificate \S+\/tls\/server\.crt/, showRun(r));
    assert.doesNotMatch(r.stdout + r.stderr, /"msg":"ready"|\n\s+at /, showRun(r));
  });
});
