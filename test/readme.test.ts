/**
 * The README's console examples reproduce (issue 18). The example fleet (gridsteer.yaml as
 * shipped: geoip on, one DNS worker per core) is started on free loopback ports, the way
 * `npm start` would start it; the geo table is awaited (as after a first start); then every
 * ```console block of README.md runs in order through bash, its dig, curl and `gridsteer`
 * commands as written (only the ports 5353 and 8053 are rewritten to the test's, and
 * `gridsteer` is on the PATH as `npm link` would put it), and each command's output is
 * compared with the README's after normalising only what must vary (test/helpers/readme.ts:
 * message ids, version/plan ids, instants, per-node EDNS options such as COOKIE and NSID).
 *
 * Where the README shows a configuration change (the explain example's `policy.weights`), the
 * test takes that change from the README's own text, writes it into the config and reloads
 * with SIGHUP, as the README says. A block the test does not run carries
 * `<!-- readme-test: not run: REASON -->` above it; the test lists which and requires a reason.
 *
 * The commands run as one shell session: what one exports (the tokens) the next ones see.
 * When the README restarts the server with tokens (`GRIDSTEER_TOKENS=… npm start &`), the
 * test stops its server and starts it again with those variables, on a test clock that stands
 * still (GRIDSTEER_TEST_CLOCK=<fake>@0@<real>, which the CLI's operator commands follow too):
 * the drain blocks' ramp steps, TTLs and relative times ("in 30s → 65%", "in 2h") are then the
 * same on every run, with nothing normalised for them. A person types slower than a node
 * re-plans; before each command after the restart the test waits (bounded) until the node has
 * planned from the store's newest revision and every DNS process serves that plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { waitGeoTable } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { repoRoot } from './helpers/paths.js';
import { consoleBlocks, outputMatches, showNormalised, type Example } from './helpers/readme.js';
import { exampleConfigObject, spawnServer, writeTestConfig, type RunningServer } from './helpers/server.js';

const README = readFileSync(join(repoRoot, 'README.md'), 'utf8');

test('README: the two quick-start commands stay at the top, as they are', () => {
  const quick = README.indexOf('## Quick start');
  const next = README.indexOf('\n## ', quick + 1);
  assert.ok(quick > 0 && next > quick, 'README has a "## Quick start" section');
  const section = README.slice(quick, next);
  assert.match(section, /\nnpm ci && npm start {4}# serves the example fleet on 127\.0\.0\.1:5353/);
  assert.match(section, /\nnpm ci && npm test {5}# type-check, lint, unit and integration tests/);
  assert.ok(README.indexOf('## ', 3) === quick, 'the quick start is the first section');
});

test('README: every console block either runs here or says why not', () => {
  const blocks = consoleBlocks(README);
  assert.ok(blocks.length >= 5, `README has console blocks (found ${blocks.length})`);
  for (const b of blocks) assert.ok(b.examples.length > 0, `README.md:${b.line}: a console block without a "$ " command`);
  const notRun = blocks.filter((b) => b.notRun);
  for (const b of notRun) assert.ok(b.notRun!.length > 10, `README.md:${b.line}: say why the block is not run`);
  // The queries, the API and explain are the examples a newcomer tries first: they must run.
  for (const section of ['Ask it', 'Why did this client get that region?']) {
    assert.ok(
      blocks.some((b) => b.section === section && !b.notRun),
      `a block under "## ${section}" runs`,
    );
  }
});

test('README: the matcher fails on a difference and normalises only what varies', () => {
  // Ireland with one address where the fleet has two: a real mismatch.
  assert.equal(outputMatches(['198.51.100.40'], ['198.51.100.40', '198.51.100.41']), false);
  assert.equal(outputMatches(['; CLIENT-SUBNET: 198.51.100.0/24/0'], ['; CLIENT-SUBNET: 198.51.100.0/24/24']), false);
  assert.equal(outputMatches([';; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 1'], [';; ->>HEADER<<- opcode: QUERY, status: REFUSED, id: 2']), false);
  // What varies.
  assert.equal(outputMatches([';; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 1'], [';; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 65000']), true);
  assert.equal(outputMatches(['; EDNS: version: 0, flags:; udp: 1232'], ['; EDNS: version: 0, flags:; udp: 1232', '; COOKIE: 0011223344556677 (good)']), true);
  assert.equal(outputMatches(['plan b6d367e8451d926d at 2026-11-30T06:06:25Z'], ['plan 0123456789abcdef at 2027-01-01T00:00:00Z']), true);
  assert.equal(outputMatches(['a\tb  c'], ['a b\tc']), true);
  // Ellipses.
  assert.equal(outputMatches(['{"ready":true,…}'], ['{"ready":true,"checks":[]}']), true);
  assert.equal(outputMatches(['{"ready":true,…}'], ['{"ready":false,"checks":[]}']), false);
  assert.equal(outputMatches(['first', '…', 'last'], ['first', 'x', 'y', 'last']), true);
  assert.equal(outputMatches(['first', '…', 'last'], ['first', 'x', 'y']), false);
});

function envWithout(name: string): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[name];
  return env;
}

/**
 * The README's commands run as one shell session: what a command exports (`export
 * OPERATOR_TOKEN=…`) is in the environment of the commands after it. `vars` holds those.
 */
interface Session {
  dir: string;
  binDir: string;
  vars: Record<string, string>;
  /** Set once the README restarts the server with tokens: its test clock, for the CLI too. */
  testClock?: string;
}

/** Variables bash sets by itself, never carried from one command to the next. */
const SHELL_OWN = new Set(['_', 'SHLVL', 'PWD', 'OLDPWD']);

/** The environment a README command runs in: the test's, the session's exports, the server. */
function sessionEnv(s: Session, srv: RunningServer): NodeJS.ProcessEnv {
  return {
    ...envWithout('GRIDSTEER_TOKEN'),
    PATH: `${s.binDir}:${process.env.PATH ?? ''}`,
    GRIDSTEER_SERVER: srv.http,
    ...(s.testClock ? { GRIDSTEER_TEST_CLOCK: s.testClock } : {}),
    ...s.vars,
  };
}

/** Runs bash with `script` in the session; returns its output and the variables it left different. */
function bash(script: string, env: NodeJS.ProcessEnv, envFile: string): Promise<{ code: number | null; out: string; changed: Record<string, string> }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-o', 'pipefail', '-c', `${script}\nrc=$?\nenv -0 > '${envFile}'\nexit $rc`],
      { timeout: 20000, killSignal: 'SIGKILL', cwd: repoRoot, env },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        const changed: Record<string, string> = {};
        let after = '';
        try {
          after = readFileSync(envFile, 'utf8');
        } catch {
          // the command killed the shell: nothing carried
        }
        for (const kv of after.split('\0')) {
          const at = kv.indexOf('=');
          if (at <= 0) continue;
          const [k, v] = [kv.slice(0, at), kv.slice(at + 1)];
          if (!SHELL_OWN.has(k) && env[k] !== v) changed[k] = v;
        }
        resolve({ code, out: `${String(stdout)}${String(stderr)}`, changed });
      },
    );
  });
}

/** The README's ports (5353, 8053) rewritten to the test server's. */
function onServer(command: string, srv: RunningServer): string {
  const httpHostPort = srv.http.replace(/^http:\/\//, '');
  return command.replace(/-p 5353\b/g, `-p ${srv.udp.port}`).replace(/127\.0\.0\.1:8053\b/g, httpHostPort);
}

/** Runs one README command through bash against the test's server, in the session. */
async function runExample(ex: Example, srv: RunningServer, s: Session): Promise<{ code: number | null; out: string[]; cmd: string }> {
  const cmd = onServer(ex.command, srv);
  const r = await bash(cmd, sessionEnv(s, srv), join(s.dir, 'env'));
  Object.assign(s.vars, r.changed);
  return { code: r.code, out: r.out.split('\n'), cmd };
}

/** `VAR=… npm start &`: the variables the README starts the server with, as bash expands them in the session. */
const NPM_START = /^((?:[A-Z_][A-Z0-9_]*=(?:"[^"]*"|\S*) )*)npm start &$/;

async function startEnv(command: string, srv: RunningServer, s: Session): Promise<Record<string, string>> {
  const prefix = NPM_START.exec(command)![1]!;
  const r = await bash(`${prefix}env -0 > '${join(s.dir, 'start-env')}'`, sessionEnv(s, srv), join(s.dir, 'env'));
  assert.equal(r.code, 0, r.out);
  const env: Record<string, string> = {};
  for (const kv of readFileSync(join(s.dir, 'start-env'), 'utf8').split('\0')) {
    const at = kv.indexOf('=');
    if (at > 0 && kv.startsWith('GRIDSTEER_')) env[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return env;
}

/**
 * Waits (bounded: 200 looks, 50 ms apart) until the server has planned from the store's newest
 * revision and every answering process serves that plan: a person types slower than a node
 * re-plans, a test does not.
 */
async function settled(srv: RunningServer, token: string): Promise<void> {
  let last = '';
  for (let i = 0; i < 200; i++) {
    const ready = (await (await fetch(`${srv.http}/readyz`)).json()) as { ready: boolean; checks: { name: string; ok: boolean; detail: string }[] };
    const store = ready.checks.find((c) => c.name === 'store')?.detail ?? '';
    const planned = /revision (\d+)/.exec(store)?.[1];
    // /v1/regions reads the snapshot the plan was made from: a change just stored shows in
    // /readyz as "(revision N stored, planning)" until the plan is made from it.
    const planning = /stored, planning/.test(store);
    const dnsOk = ready.checks.find((c) => c.name === 'dns' || c.name === 'dns-workers')?.ok === true;
    const fleet = (await (await fetch(`${srv.http}/v1/regions`, { headers: { authorization: `Bearer ${token}` } })).json()) as { revision: number };
    if (ready.ready && dnsOk && !planning && planned === String(fleet.revision)) return;
    last = `${JSON.stringify(ready)} store revision ${fleet.revision}`;
    await sleep(50);
  }
  assert.fail(`the server did not settle: ${last}`);
}

/** The `policy.weights: {…}` the README says the explain example runs with. */
function weightsFromReadme(): Record<string, unknown> {
  const m = /`policy\.weights: (\{[^`]+\})`/.exec(README);
  assert.ok(m, 'the explain section names the policy.weights it runs with, as `policy.weights: {…}`');
  return parse(m[1]!) as Record<string, unknown>;
}

async function readyVersion(http: string): Promise<{ ready: boolean; config: string; dns: string }> {
  const r = (await (await fetch(`${http}/readyz`)).json()) as { ready: boolean; checks: { name: string; detail: string; ok: boolean }[] };
  const config = r.checks.find((c) => c.name === 'config')?.detail ?? '';
  const dns = r.checks.find((c) => c.name === 'dns' || c.name === 'dns-workers');
  return { ready: r.ready && !!dns?.ok, config, dns: dns?.detail ?? '' };
}

test('README: the console examples reproduce against the example fleet', { timeout: 240000 }, async (t) => {
  const shipped = exampleConfigObject();
  const cfg = writeTestConfig((c) => {
    // As shipped: geoip as gridsteer.yaml has it (on by default), its workers setting.
    if ('geoip' in shipped) c.geoip = shipped.geoip;
    else delete c.geoip;
    c.workers = shipped.workers;
  });
  t.after(() => cfg.cleanup());
  const binDir = mkdtempSync(join(tmpdir(), 'gridsteer-readme-bin-'));
  t.after(() => rmSync(binDir, { recursive: true, force: true }));
  symlinkSync(join(repoRoot, 'bin', 'gridsteer.js'), join(binDir, 'gridsteer'));

  const workers = shipped.workers === 'auto' || shipped.workers === undefined ? 'auto' : Number(shipped.workers);
  const srv = await spawnServer({ configFile: cfg.file, workers, readyTimeoutMs: 60000 });
  t.after(async () => {
    await srv.stop();
  });
  await waitGeoTable(srv, { timeoutMs: 150000, idle: true });

  const norm = { replace: [[homedir(), '~'] as [string, string], [cfg.dir, '.']] as [string, string][] };
  const failures: string[] = [];
  const session: Session = { dir: binDir, binDir, vars: {} };
  let server = srv;
  let token: string | undefined;
  let ran = 0;
  for (const block of consoleBlocks(README)) {
    if (block.notRun) {
      t.diagnostic(`README.md:${block.line} (${block.section}): not run: ${block.notRun}`);
      continue;
    }
    if (block.section === 'Why did this client get that region?') {
      // The README's configuration change, then a reload (SIGHUP), as the README says.
      const before = await readyVersion(srv.http);
      const c = parse(readFileSync(cfg.file, 'utf8')) as { policy?: Record<string, unknown> };
      c.policy = { ...(c.policy ?? {}), weights: weightsFromReadme() };
      writeFileSync(cfg.file, stringify(c));
      srv.proc!.kill('SIGHUP');
      let now = before;
      for (let i = 0; i < 100 && (now.config === before.config || !now.ready || now.dns === before.dns); i++) {
        await sleep(100);
        now = await readyVersion(srv.http);
      }
      assert.notEqual(now.config, before.config, `the reload took the README's weights\n${srv.logs.slice(-10).join('\n')}`);
      assert.ok(now.ready, `ready again after the reload: ${JSON.stringify(now)}`);
    }
    for (const ex of block.examples) {
      if (NPM_START.test(ex.command)) {
        // The README restarts the server with tokens (`GRIDSTEER_TOKENS=… npm start &`). The
        // test starts it as before (free ports, the same config) with the variables the command
        // sets, on a clock that stands still 10 minutes ahead (GRIDSTEER_TEST_CLOCK, for the CLI
        // too), so the ramp steps and relative times printed below are the same on every run.
        assert.deepEqual(ex.expected.filter((l) => l.trim() !== ''), [], `README.md:${ex.line}: npm start & prints nothing here`);
        const env = await startEnv(ex.command, server, session);
        assert.ok(env.GRIDSTEER_TOKENS, `README.md:${ex.line}: the server is started with GRIDSTEER_TOKENS`);
        token = env.GRIDSTEER_TOKENS.split(',').map((x) => x.split(':')).find((x) => x[0] === 'operator' || x[0] === 'viewer')?.[2];
        assert.ok(token, 'a viewer or operator token among GRIDSTEER_TOKENS');
        await server.stop();
        const frozenAt = Math.floor(Date.now() / 60_000) * 60_000 + 10 * 60_000;
        session.testClock = `${frozenAt}@0@${Date.now()}`;
        server = await spawnServer({ configFile: cfg.file, workers, readyTimeoutMs: 60000, env: { ...env, GRIDSTEER_TEST_CLOCK: session.testClock } });
        const restarted = server;
        t.after(async () => {
          await restarted.stop();
        });
        await waitGeoTable(server, { timeoutMs: 150000, idle: true });
        ran++;
        continue;
      }
      if (token) await settled(server, token);
      const r = await runExample(ex, server, session);
      ran++;
      if (!outputMatches(ex.expected, r.out, norm)) {
        failures.push(
          `README.md:${ex.line}: $ ${ex.command}\n  ran: ${r.cmd} (exit ${r.code})\n--- README (normalised)\n${showNormalised(ex.expected, norm)}\n--- got (normalised)\n${showNormalised(r.out, norm)}\n`,
        );
      }
    }
  }
  assert.ok(ran >= 10, `ran ${ran} README commands`);
  assert.deepEqual(failures, [], `README examples that do not reproduce:\n${failures.join('\n')}`);
});
