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

/** Runs one README command through bash against the test's server. */
function runExample(ex: Example, srv: RunningServer, binDir: string): Promise<{ code: number | null; out: string[]; cmd: string }> {
  const httpHostPort = srv.http.replace(/^http:\/\//, '');
  const cmd = ex.command.replace(/-p 5353\b/g, `-p ${srv.udp.port}`).replace(/127\.0\.0\.1:8053\b/g, httpHostPort);
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-o', 'pipefail', '-c', cmd],
      {
        timeout: 20000,
        killSignal: 'SIGKILL',
        cwd: repoRoot,
        env: { ...envWithout('GRIDSTEER_TOKEN'), PATH: `${binDir}:${process.env.PATH ?? ''}`, GRIDSTEER_SERVER: srv.http },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, out: `${String(stdout)}${String(stderr)}`.split('\n'), cmd });
      },
    );
  });
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
      const r = await runExample(ex, srv, binDir);
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
