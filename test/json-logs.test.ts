/**
 * Logs are JSON lines (issue 20), from a spawned `serve`:
 *
 * 1. a SIGHUP reload of a broken configuration is one JSON line at error level naming every
 *    issue (file, path, message), and the previous configuration keeps serving;
 * 2. a client aborting an upload (chunked, and a Content-Length it never sends) is logged at
 *    info, not as "api: internal error";
 * 3. every line the process wrote on stdout and stderr, start to stop, parses as JSON, and no
 *    line carries an API token (the ones sent in requests included).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig, writeTokensFile } from './helpers/server.js';

const OPERATOR = 'json-logs-operator-token-9f31c2';
const INGEST = 'json-logs-ingest-token-51aa7e';

let cfg: TestConfig;
let srv: RunningServer;
let good = '';

before(async () => {
  cfg = writeTestConfig((c) => {
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
  });
  writeTokensFile(cfg.dir, [{ name: 'olga', role: 'operator', token: OPERATOR }, { name: 'meter', role: 'ingest', token: INGEST }]);
  good = readFileSync(cfg.file, 'utf8');
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

type Line = { level: number; msg: string; issues?: { file: string; path: string; message: string }[]; signal?: string };
const parsed = (): Line[] => srv.logs.map((l) => JSON.parse(l) as Line);

/** Waits (bounded: 100 × 50 ms) for a log line matching `pick`. */
async function lineWhere(what: string, pick: (l: Line) => boolean): Promise<Line> {
  for (let i = 0; i < 100; i++) {
    const hit = srv.logs.map((l) => { try { return JSON.parse(l) as Line; } catch { return null; } }).find((l) => l !== null && pick(l));
    if (hit) return hit;
    await sleep(50);
  }
  assert.fail(`${what}: no such log line in\n${srv.logs.slice(-20).join('\n')}`);
}

test('a SIGHUP reload of a broken configuration: one JSON error line with every issue; the previous one keeps serving', { timeout: 30_000 }, async () => {
  const v0 = ((await (await fetch(`${srv.http}/v1/config`, { headers: { authorization: `Bearer ${OPERATOR}` }, signal: AbortSignal.timeout(5000) })).json()) as { version: string }).version;
  writeFileSync(cfg.file, good.replace(/^workers: 0$/m, 'workers: many\nno_such_setting: 1'));
  assert.ok(srv.proc!.kill('SIGHUP'));
  const line = await lineWhere('the refused reload', (l) => /reload by SIGHUP refused/.test(l.msg));
  assert.equal(line.level, 50, 'error level');
  assert.equal(line.signal, 'SIGHUP');
  assert.ok((line.issues?.length ?? 0) >= 2, JSON.stringify(line));
  const paths = line.issues!.map((i) => i.path).join(' ');
  assert.match(paths, /workers/);
  assert.match(paths, /no_such_setting/);
  for (const i of line.issues!) assert.equal(i.file, cfg.file);
  const v1 = ((await (await fetch(`${srv.http}/v1/config`, { headers: { authorization: `Bearer ${OPERATOR}` }, signal: AbortSignal.timeout(5000) })).json()) as { version: string }).version;
  assert.equal(v1, v0, 'the previous configuration stays in force');
  writeFileSync(cfg.file, good);
  assert.ok(srv.proc!.kill('SIGHUP'));
  const done = await lineWhere('the good reload', (l) => /reload by SIGHUP done/.test(l.msg));
  assert.equal(done.level, 30);
});

/** Sends `head` and `chunks` on a raw connection to the API, then cuts it. */
async function abortUpload(head: string, chunks: string[]): Promise<void> {
  const { hostname, port } = new URL(srv.http);
  const sock = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  sock.write(head);
  for (const c of chunks) {
    sock.write(c);
    await sleep(20);
  }
  await sleep(100);
  sock.destroy();
}

test('a client aborting an upload is logged at info, not as an internal error', { timeout: 30_000 }, async () => {
  const before = srv.logs.length;
  const head = (framing: string) => `POST /v1/signals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${INGEST}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`;
  const piece = 'x'.repeat(64_000);
  await abortUpload(head('Transfer-Encoding: chunked'), [`${piece.length.toString(16)}\r\n${piece}\r\n`, `${piece.length.toString(16)}\r\n${piece}\r\n`]);
  await abortUpload(head('Content-Length: 900000'), ['{"signals":["', piece, piece]);
  for (let i = 0; i < 40 && srv.logs.slice(before).filter((l) => /closed the connection/.test(l)).length < 2; i++) await sleep(50);
  const mine = srv.logs.slice(before).map((l) => JSON.parse(l) as Line);
  const aborts = mine.filter((l) => /the client closed the connection before its request was read/.test(l.msg));
  assert.equal(aborts.length, 2, `one info line per aborted upload:\n${srv.logs.slice(before).join('\n')}`);
  for (const a of aborts) assert.equal(a.level, 30);
  assert.equal(mine.filter((l) => /internal error/.test(l.msg) || l.level >= 50).length, 0, srv.logs.slice(before).join('\n'));
});

test('every line from start to stop is JSON, and no line carries a token', { timeout: 30_000 }, async () => {
  // A wrong token and a right one in requests: neither may reach the log.
  await fetch(`${srv.http}/v1/config`, { headers: { authorization: 'Bearer wrong-token-that-must-not-be-logged-77' }, signal: AbortSignal.timeout(5000) });
  await fetch(`${srv.http}/v1/config`, { headers: { authorization: `Bearer ${OPERATOR}` }, signal: AbortSignal.timeout(5000) });
  await srv.stop();
  assert.ok(srv.logs.length > 5);
  for (const l of srv.logs) assert.doesNotThrow(() => JSON.parse(l), `not a JSON line: ${l}`);
  for (const secret of [OPERATOR, INGEST, 'wrong-token-that-must-not-be-logged-77']) {
    assert.equal(srv.logs.filter((l) => l.includes(secret)).length, 0, `a log line carries ${secret}`);
  }
  assert.ok(parsed().some((l) => l.msg === 'ready'));
});
