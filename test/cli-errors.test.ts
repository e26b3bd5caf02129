/**
 * Every failure a user can cause ends in one line naming what failed and what to do, with
 * the documented exit status (../README.md#the-command: 1 a failure, 2 a usage error), and
 * never a stack trace (issue 33). The CLI runs as a user runs it (`node dist/gslb/cli/main.js`
 * as a child process), per command family, against:
 *  - unreachable: an address with no route, from inside a network namespace with only
 *    loopback up (made here; needs root or CAP_NET_ADMIN, as CI has);
 *  - refused: a loopback port just closed;
 *  - timeout: a loopback socket that takes the question and never answers;
 *  - a server error: an HTTP server that answers 500 with something that is not JSON;
 *  - bad input: a bad option, address or file.
 * And the last line of defence: a throw no command expected (injected into a socket
 * callback, where the original crash was) is one line too, its stack only with
 * GRIDSTEER_DEBUG=1.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run, type ToolRun } from './helpers/dig.js';
import { ip, ipTool } from './helpers/netns.js';
import { cliPath } from './helpers/paths.js';

/** TEST-NET-1 (RFC 5737): inside the namespace there is no route to it at all. */
const NO_ROUTE = '192.0.2.1';

let ns = '';
let dir = '';
/** A UDP port that was bound and closed (ICMP port unreachable), and a TCP one (RST). */
let closedUdp = 0;
let closedTcp = 0;
/** A UDP socket that reads every question and never answers. */
let silentUdp: dgram.Socket;
/** A TCP server that accepts and never answers. */
let silentTcp: net.Server;
/** An HTTP server whose every answer is 500 with an HTML body. */
let broken: http.Server;

function listenPort(s: net.Server | http.Server): Promise<number> {
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port)));
}

before(async () => {
  ns = `gs-cli-${randomBytes(3).toString('hex')}`;
  await ip(['netns', 'add', ns], 'a namespace with only loopback up (needs root or CAP_NET_ADMIN)');
  await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
  dir = mkdtempSync(join(tmpdir(), 'gridsteer-cli-errors-'));
  const u = dgram.createSocket('udp4');
  await new Promise<void>((r) => u.bind(0, '127.0.0.1', () => r()));
  closedUdp = u.address().port;
  await new Promise<void>((r) => u.close(() => r()));
  const t = net.createServer();
  closedTcp = await listenPort(t);
  await new Promise<void>((r) => t.close(() => r()));
  silentUdp = dgram.createSocket('udp4');
  silentUdp.on('message', () => {});
  await new Promise<void>((r) => silentUdp.bind(0, '127.0.0.1', () => r()));
  const held: net.Socket[] = [];
  silentTcp = net.createServer((s) => void held.push(s));
  silentTcp.on('close', () => held.forEach((s) => s.destroy()));
  broken = http.createServer((_req, res) => {
    res.writeHead(500, { 'content-type': 'text/html' });
    res.end('<html>Internal Server Error</html>');
  });
  await listenPort(silentTcp);
  await listenPort(broken);
});

after(async () => {
  silentUdp?.close();
  silentTcp?.close();
  broken?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (ns) await ip(['netns', 'del', ns]);
});

const port = (s: net.Server | http.Server) => (s.address() as net.AddressInfo).port;

/** The CLI, in the root namespace or inside the loopback-only one, with extra environment. */
function cli(args: string[], opts: { inNs?: boolean; env?: Record<string, string>; preload?: string } = {}): Promise<ToolRun> {
  const nodeArgs = [...(opts.preload ? ['--import', opts.preload] : []), cliPath, ...args];
  const envArgs = Object.entries({ GRIDSTEER_SERVER: '', GRIDSTEER_DEBUG: '', ...opts.env }).map(([k, v]) => `${k}=${v}`);
  // env(1) sets the variables for the child alike in both cases (run() inherits this environment).
  const argv = ['env', ...envArgs, process.execPath, ...nodeArgs];
  if (opts.inNs) return run(ipTool(), ['netns', 'exec', ns, ...argv], 60_000);
  return run('/usr/bin/env', argv.slice(1), 60_000);
}

function show(r: ToolRun): string {
  return `$ ${r.cmd}\n(exit ${r.code})\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
}

/** No stack frame anywhere in what the user sees. */
function noStack(r: ToolRun): void {
  assert.doesNotMatch(`${r.stdout}\n${r.stderr}`, /^\s+at .+[(:]\d+/m, `a stack trace:\n${show(r)}`);
  assert.doesNotMatch(r.stderr, /node:internal|Node\.js v\d/, `node's crash report:\n${show(r)}`);
}

/** A failure: exit 1, one line on stderr that matches, nothing on stdout. */
function failure(r: ToolRun, line: RegExp): void {
  noStack(r);
  assert.equal(r.code, 1, show(r));
  assert.equal(r.stdout, '', show(r));
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `not one line:\n${show(r)}`);
  assert.match(lines[0]!, line, show(r));
}

/** A usage error: exit 2, the message on the first line of stderr (the usage follows). */
function usageError(r: ToolRun, line: RegExp): void {
  noStack(r);
  assert.equal(r.code, 2, show(r));
  assert.match(r.stderr.split('\n')[0]!, line, show(r));
}

/** check-delegation reports what it could not reach as error checks on stdout: exit 1, stderr empty. */
function delegationFailure(r: ToolRun, line: RegExp): void {
  noStack(r);
  assert.equal(r.code, 1, show(r));
  assert.equal(r.stderr, '', show(r));
  assert.match(r.stdout, line, show(r));
}

// ---------------------------------------------------------------- check-delegation (DNS)

test('check-delegation, resolver unreachable (no route; the crash of issue 33): an error check naming it, exit 1', async () => {
  const r = await cli(['check-delegation', 'gslb.example.com', '--resolver', NO_ROUTE, '--timeout', '500ms'], { inNs: true });
  delegationFailure(r, /the resolver \(192\.0\.2\.1:53\) gave no answer for NS example\.com: no route to it from here \(ENETUNREACH\); give them with --parent/);
});

test('check-delegation, parent and node unreachable: error checks naming them, exit 1', async () => {
  const r = await cli(['check-delegation', 'gslb.example.com', '--parent', NO_ROUTE, '--node', '192.0.2.2', '--timeout', '500ms'], { inNs: true });
  delegationFailure(r, /^error +referral +192\.0\.2\.1:53 .*ENETUNREACH/m);
  const n = await cli(['check-delegation', 'gslb.example.com', '--nodes-only', '--node', '192.0.2.2', '--timeout', '500ms'], { inNs: true });
  delegationFailure(n, /^error +reach +192\.0\.2\.2:53 .*no route to it from here \(ENETUNREACH\).*TCP/m);
});

test('check-delegation, resolver refused (a closed loopback port): exit 1, names the port', async () => {
  const r = await cli(['check-delegation', 'gslb.example.com', '--resolver', `127.0.0.1:${closedUdp}`, '--timeout', '2s']);
  delegationFailure(r, new RegExp(`the resolver \\(127\\.0\\.0\\.1:${closedUdp}\\) gave no answer for NS example\\.com: port unreachable \\(ECONNREFUSED\\)`));
});

test('check-delegation, resolver silent: exit 1 after the timeout, says so', async () => {
  const r = await cli(['check-delegation', 'gslb.example.com', '--resolver', `127.0.0.1:${silentUdp.address().port}`, '--timeout', '200ms']);
  delegationFailure(r, /no reply within 200ms/);
});

test('check-delegation, bad input: usage errors exit 2; an unreadable --config exits 1', async () => {
  usageError(await cli(['check-delegation', 'gslb.example.com', '--parent', 'not-an-ip']), /^gridsteer: "not-an-ip" is not an IP address/);
  usageError(await cli(['check-delegation', 'not a zone!']), /^gridsteer: "not a zone!" is not a zone name/);
  const r = await cli(['check-delegation', 'gslb.example.com', '--config', join(dir, 'missing.yaml')]);
  noStack(r);
  assert.equal(r.code, 1, show(r));
  assert.match(r.stderr, /missing\.yaml: \(top level\): cannot read the file \(it does not exist\): check the path\ngridsteer: --config .* cannot be used: nothing was checked\n$/, show(r));
});

// ---------------------------------------------------------------- the commands that ask the API

const API_CASES: { name: string; args: string[] }[] = [
  { name: 'status', args: ['status'] },
  { name: 'drain', args: ['drain', 'eu-ie', '--reason', 'test'] },
  { name: 'explain', args: ['explain', '192.0.2.10', 'api.gslb.example.com'] },
];

for (const c of API_CASES) {
  test(`${c.name}, server unreachable (no route): one line naming the server, exit 1`, async () => {
    const r = await cli([...c.args, '--server', `http://${NO_ROUTE}:8053`], { inNs: true });
    failure(r, new RegExp(`^gridsteer: cannot reach the GridSteer API at http://192\\.0\\.2\\.1:8053 \\(ENETUNREACH\\); is the server running\\?`));
  });

  test(`${c.name}, server refused (a closed loopback port): one line, exit 1`, async () => {
    const r = await cli([...c.args, '--server', `http://127.0.0.1:${closedTcp}`]);
    failure(r, new RegExp(`^gridsteer: cannot reach the GridSteer API at http://127\\.0\\.0\\.1:${closedTcp} \\(ECONNREFUSED\\); is the server running\\?`));
  });

  test(`${c.name}, server answers 500 with HTML: one line, exit 1`, async () => {
    const r = await cli([...c.args, '--server', `http://127.0.0.1:${port(broken)}`]);
    failure(r, /^gridsteer: http:\/\/127\.0\.0\.1:\d+ answered HTTP 500 with something that is not JSON; is --server the GridSteer HTTP API\?$/);
  });

  test(`${c.name}, bad --server: usage error, exit 2`, async () => {
    usageError(await cli([...c.args, '--server', 'not a url']), /^gridsteer: --server "not a url" is not a URL/);
  });
}

test('status, server silent (accepts, never answers): one line after the bound, exit 1', async () => {
  const r = await cli(['status', '--server', `http://127.0.0.1:${port(silentTcp)}`]);
  failure(r, /^gridsteer: cannot reach the GridSteer API at .* \(no answer within 10 s\); is the server running\?/);
});

test('status, a port fetch will not use: says so rather than "bad port" alone', async () => {
  const r = await cli(['status', '--server', 'http://127.0.0.1:6000']);
  failure(r, /port 6000 is one that fetch will not use/);
});

test('explain, bad input: usage error, exit 2', async () => {
  usageError(await cli(['explain', '192.0.2.10', '--server', `http://127.0.0.1:${closedTcp}`]), /^gridsteer: explain takes/);
});

// ---------------------------------------------------------------- files: simulate, check-config, serve

test('simulate, check-config and serve: a missing or broken file exits 1 naming it, no stack', async () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'a: [\n');
  for (const args of [
    ['simulate', join(dir, 'missing.yaml')],
    ['simulate', bad],
    ['check-config', '--config', join(dir, 'missing.yaml')],
    ['check-config', '--config', bad],
    ['serve', '--config', bad],
  ]) {
    const r = await cli(args);
    noStack(r);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /(missing|bad)\.yaml(:\d+:\d+)?: \(top level\): (cannot read the file \(it does not exist\): check the path|YAML syntax: )/, show(r));
  }
  usageError(await cli(['simulate']), /^gridsteer simulate: give one scenario file/);
});

// ---------------------------------------------------------------- the last line of defence

/** A module loaded before the CLI that makes every UDP send throw, inside connect's callback. */
function throwingSendPreload(): string {
  const f = join(dir, 'throw-send.mjs');
  writeFileSync(f, "import dgram from 'node:dgram';\ndgram.Socket.prototype.send = function () { throw new RangeError('injected failure'); };\n");
  return pathToFileURL(f).href;
}

test('an unexpected throw in a socket callback: one line naming the command, exit 1; the stack only with GRIDSTEER_DEBUG=1', async () => {
  const preload = throwingSendPreload();
  const args = ['check-delegation', 'gslb.example.com', '--resolver', `127.0.0.1:${silentUdp.address().port}`, '--timeout', '200ms'];
  const r = await cli(args, { preload });
  failure(r, /^gridsteer: check-delegation failed unexpectedly: injected failure; this is a bug, please report it \(GRIDSTEER_DEBUG=1 prints the stack\)$/);
  const d = await cli(args, { preload, env: { GRIDSTEER_DEBUG: '1' } });
  assert.equal(d.code, 1, show(d));
  assert.match(d.stderr, /^gridsteer: check-delegation failed unexpectedly: RangeError: injected failure\n\s+at /, show(d));
});
