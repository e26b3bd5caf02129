#!/usr/bin/env node
// A rolling upgrade, tried: a node of an earlier build and a node of this one serving together
// on one redis-server and one key prefix, as during an upgrade one node at a time
// (docs/operations.md "Upgrades"). It builds the earlier commit in a temporary git worktree
// (sharing this checkout's node_modules), starts a real redis-server on a free loopback port,
// one `gridsteer serve` of each build, and checks that each reads what the other writes:
//
//   - a drain posted to the old node moves both nodes' answers; an undrain posted to the new
//     node is stored and planned by both (the same override list on both);
//   - a quarantine entry (ADR 0020) in the store does not disturb the old node, and the new
//     node's audit actions are read by the old node's GET /v1/audit;
//   - a signal posted to the new node (its record carries a principal, ADR 0021) is listed by the
//     old node, and one posted to the old node (no principal) by the new one, which shows it
//     unattributed and lets its token write the record again;
//   - neither node exits, and both report the store ready.
//
//   npm run build && node scripts/rolling-upgrade.mjs <git ref of the earlier build>
//
// Exit status 0 when every check holds, 1 otherwise (the failing check is printed). Needs
// git, redis-server and dig; talks to loopback only. Not part of npm test: it builds another
// commit, which takes a minute.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
/* global fetch */
import { join, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const ref = process.argv[2];
if (!ref) {
  console.error('usage: node scripts/rolling-upgrade.mjs <git ref of the earlier build>');
  process.exit(2);
}
const H = join(root, 'dist', 'test', 'helpers');
if (!existsSync(join(H, 'server.js'))) {
  console.error('build first: npm run build');
  process.exit(2);
}
const { spawnServer, writeTestConfig, withRateLimitMode, writeTokensFile } = await import(join(H, 'server.js'));
const { startRedis } = await import(join(H, 'redis.js'));
const { askSteered } = await import(join(H, 'geo.js'));
const { apiCall } = await import(join(H, 'api.js'));

const work = mkdtempSync(join(tmpdir(), 'gridsteer-rolling-'));
const old = join(work, 'old');
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};
let redis;
let cfg;
const nodes = [];
try {
  execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', old, ref], { stdio: 'ignore' });
  symlinkSync(join(root, 'node_modules'), join(old, 'node_modules'));
  console.log(`building ${ref} in ${old} …`);
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: old, stdio: 'ignore' });
  // spawnServer runs `node <this checkout's cli> serve …` under `wrap`: this wrapper runs the old build's cli instead.
  const wrapper = join(work, 'old-node.sh');
  writeFileSync(wrapper, `#!/bin/sh\nnode="$1"; shift; shift\nexec "$node" ${JSON.stringify(join(old, 'dist', 'gslb', 'cli', 'main.js'))} "$@"\n`);
  chmodSync(wrapper, 0o755);

  redis = await startRedis();
  const prefix = 'rolling';
  cfg = writeTestConfig((c) => {
    // dns.rateLimit.mode off: every check's query comes from 127.0.0.1.
    withRateLimitMode(c, 'off');
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    c.state = { store: 'redis', redis: { url: redis.url, prefix }, planDebounceMs: 20 };
  });
  const OP = 'rolling-upgrade-operator-token';
  const VIEW = 'rolling-upgrade-viewer-token';
  const INGEST = 'rolling-upgrade-ingest-token';
  writeTokensFile(cfg.dir, [
    { name: 'olga', role: 'operator', token: OP },
    { name: 'vic', role: 'viewer', token: VIEW },
    // No grants: an earlier build refuses a tokens file with grants (an unknown key), so grants are added once every node runs this build.
    { name: 'prober', role: 'ingest', token: INGEST },
  ]);
  const oldNode = await spawnServer({ configFile: cfg.file, wrap: [wrapper] });
  nodes.push(oldNode);
  const newNode = await spawnServer({ configFile: cfg.file });
  nodes.push(newNode);
  const answers = async () => Promise.all(nodes.map(async (n) => (await askSteered(n.udp, 'A')).region));
  const settle = async (f) => {
    for (let i = 0; i < 50; i++) {
      if (await f()) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };
  const first = await answers();
  check(first[0] === first[1], `both nodes answer alike at start (${first.join(', ')})`);

  const drain = await apiCall(oldNode.http, 'POST', `/v1/regions/${first[0]}/drain`, OP, { reason: 'rolling upgrade: drain posted to the old node' });
  check(drain.status === 201, `a drain posted to the old node is stored (${drain.status})`);
  check(await settle(async () => (await answers()).every((r) => r !== first[0])), `both nodes move away from ${first[0]}`);

  await redis.command('HSET', `gs:{${prefix}}:quarantine`, 'signal:none|x|y|z', JSON.stringify({ target: 'signal:none|x|y|z', fingerprint: 'f', why: 'rolling upgrade check', at: Date.now(), by: 'rolling' }));
  const rev = await redis.command('INCR', `gs:{${prefix}}:rev`);
  await redis.command('PUBLISH', `gs:{${prefix}}:revision`, String(rev));
  const undrain = await apiCall(newNode.http, 'DELETE', `/v1/regions/${first[0]}/drain?reason=${encodeURIComponent('rolling upgrade: undrain posted to the new node')}`, OP);
  check(undrain.status === 200, `an undrain posted to the new node is stored (${undrain.status})`);
  const lists = async () => Promise.all(nodes.map(async (n) => JSON.stringify(((await apiCall(n.http, 'GET', '/v1/overrides', VIEW)).body.overrides ?? []).map((o) => o.id).sort())));
  check(await settle(async () => new Set(await lists()).size === 1), 'both nodes list the same overrides');
  const audit = await apiCall(oldNode.http, 'GET', '/v1/audit?limit=20', VIEW);
  check(audit.status === 200 && Array.isArray(audit.body.entries), `the old node reads the audit log the new one writes to (${audit.status}: ${(audit.body.entries ?? []).map((e) => e.action).join(', ')})`);
  // Signals both ways: records with and without a principal.
  const probe = (source, at) => ({ region: 'eu-ie', kind: 'health.probe', source, key: '198.51.100.40', observedAt: at, expiresAt: at + 600_000, value: { up: true } });
  const listed = async (n, source) => (((await apiCall(n.http, 'GET', '/v1/regions/eu-ie', VIEW)).body.signals ?? []).find((x) => x.source === source));
  const toNew = await apiCall(newNode.http, 'POST', '/v1/signals', INGEST, { signals: [probe('prober/new', Date.now())] });
  check(toNew.status === 200 && toNew.body.results?.[0]?.stored === true, `a signal posted to the new node is stored (${toNew.status})`);
  check(await settle(async () => (await listed(oldNode, 'prober/new')) !== undefined), 'the old node lists the signal the new node stored (its record carries a principal)');
  const toOld = await apiCall(oldNode.http, 'POST', '/v1/signals', INGEST, { signals: [probe('prober/old', Date.now())] });
  check(toOld.status === 200 && toOld.body.results?.[0]?.stored === true, `a signal posted to the old node is stored (${toOld.status})`);
  check(await settle(async () => (await listed(newNode, 'prober/old'))?.principal === undefined && (await listed(newNode, 'prober/old')) !== undefined), 'the new node lists the old node\'s signal, unattributed');
  const again = await apiCall(newNode.http, 'POST', '/v1/signals', INGEST, { signals: [probe('prober/old', Date.now() + 1)] });
  check(again.body.results?.[0]?.stored === true, `the new node's token writes the old node's record again (${JSON.stringify(again.body.results)})`);
  check(await settle(async () => (await listed(newNode, 'prober/old'))?.principal === 'token:prober'), 'and from then it is attributed to token:prober');
  for (const [i, n] of nodes.entries()) {
    const ready = await (await fetch(`${n.http}/readyz`)).json();
    check(ready.checks.find((c) => c.name === 'store')?.ok === true, `${i === 0 ? 'old' : 'new'} node: store ready (${ready.checks.find((c) => c.name === 'store')?.detail})`);
    check(n.proc.exitCode === null && n.proc.signalCode === null, `${i === 0 ? 'old' : 'new'} node still running`);
  }
} catch (e) {
  failures.push(String(e?.stack ?? e));
  console.error(e);
} finally {
  await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
  await redis?.cleanup().catch(() => undefined);
  cfg?.cleanup();
  try {
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', old], { stdio: 'ignore' });
  } catch {
    // left for `git worktree prune`
  }
  rmSync(work, { recursive: true, force: true });
}
console.log(failures.length === 0 ? `rolling upgrade from ${ref}: every check holds` : `rolling upgrade from ${ref}: ${failures.length} check(s) failed`);
process.exit(failures.length === 0 ? 0 : 1);
