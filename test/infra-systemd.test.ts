/**
 * infra/systemd: the unit and its environment file, without systemd as PID 1.
 *
 * - The hardening and lifecycle directives the unit must keep (DynamicUser, one capability,
 *   ProtectSystem=strict, state and cache directories, restart policy, reload, stop).
 * - `systemd-analyze verify` on the unit with no warning, and `systemd-analyze security
 *   --offline` rating it 2.0 or better ("OK"). Both need the ExecStart binary and script to
 *   exist: the copy they read differs from the unit only in the paths /usr/bin/node,
 *   /opt/gridsteer and /etc/gridsteer/gridsteer.env (moved to this node, this checkout and a
 *   temp copy); every other line is the unit's own.
 * - gridsteer.env read by systemd's rules.
 * - The unit's ExecStart run as systemd would run it: Environment= and the EnvironmentFile
 *   (GRIDSTEER_TOKENS uncommented, as its comment says), $GRIDSTEER_OPTS split into words,
 *   WorkingDirectory, UMask, a dynamic uid, AmbientCapabilities, CapabilityBoundingSet and
 *   NoNewPrivileges through setpriv, STATE_DIRECTORY and CACHE_DIRECTORY as systemd sets them
 *   (temp folders owned by that uid). The server binds port 53 on loopback with the ambient
 *   capability, compiles the geo table into CACHE_DIRECTORY, writes the memory store's file
 *   in STATE_DIRECTORY under the UMask; the ExecReload lines reload a changed configuration
 *   and refuse a broken one (the server keeps serving the previous); SIGTERM (KillMode=mixed:
 *   the main process) ends it with exit 0, which Restart=on-failure does not restart.
 *
 * Needs root (a dynamic uid, the capability), the Debian packages systemd (systemd-analyze),
 * util-linux (setpriv), bind9-dnsutils (dig).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { dig } from './helpers/dig.js';
import { askSteered } from './helpers/geo.js';
import { apiCall } from './helpers/api.js';
import { freePort } from './helpers/ports.js';
import { exampleConfig, exampleRegions, repoRoot } from './helpers/paths.js';
import {
  CAP_NET_BIND_SERVICE,
  capEff,
  expandExec,
  geoipFolder,
  loopback53,
  parseEnvFile,
  parseEnvironment,
  parseUnit,
  requireProgram,
  runAs,
  startLogged,
  systemdDir,
  uidOf,
  until,
  waitReady,
  publicCheckout,
  type Logged,
  readable,
} from './helpers/infra.js';

const unitText = readFileSync(join(systemdDir, 'gridsteer.service'), 'utf8');
const unit = parseUnit(unitText);
const envText = readFileSync(join(systemdDir, 'gridsteer.env'), 'utf8');
const svc = (k: string) => unit.get('Service', k);
const TOKEN = 'infra-systemd-operator-0c9e2f51';

/** The unit's paths and where they are in this test. */
function moves(o: { etc: string; env: string }): [string, string][] {
  return [
    ['/etc/gridsteer/gridsteer.env', o.env],
    ['/usr/bin/node', process.execPath],
    ['/opt/gridsteer', publicCheckout()],
    ['/etc/gridsteer', o.etc],
  ];
}
/** Replaces each of the unit's paths (the longest first, each place once). */
function move(text: string, m: [string, string][]): string {
  const sorted = [...m].sort((a, b) => b[0].length - a[0].length);
  const re = new RegExp(sorted.map(([from]) => from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return text.replace(re, (hit) => sorted.find(([from]) => from === hit)![1]);
}

test('gridsteer.service: hardened (dynamic user, one capability, read-only system), state and cache directories, restart policy, reload and stop', () => {
  const want: Record<string, string> = {
    Type: 'exec',
    DynamicUser: 'yes',
    AmbientCapabilities: 'CAP_NET_BIND_SERVICE',
    CapabilityBoundingSet: 'CAP_NET_BIND_SERVICE',
    NoNewPrivileges: 'yes',
    ProtectSystem: 'strict',
    ProtectHome: 'yes',
    PrivateTmp: 'yes',
    PrivateDevices: 'yes',
    ProtectKernelTunables: 'yes',
    ProtectKernelModules: 'yes',
    ProtectControlGroups: 'yes',
    RestrictSUIDSGID: 'yes',
    LockPersonality: 'yes',
    SystemCallArchitectures: 'native',
    StateDirectory: 'gridsteer',
    CacheDirectory: 'gridsteer',
    Restart: 'on-failure',
    RestartSec: '2s',
    TimeoutStopSec: '30s',
    KillMode: 'mixed',
    LimitNOFILE: '65536',
    UMask: '0027',
    EnvironmentFile: '/etc/gridsteer/gridsteer.env',
    WorkingDirectory: '/opt/gridsteer',
    ExecStart: '/usr/bin/node --enable-source-maps /opt/gridsteer/dist/gslb/cli/main.js serve $GRIDSTEER_OPTS',
  };
  for (const [k, v] of Object.entries(want)) assert.equal(svc(k), v, `[Service] ${k}`);
  assert.deepEqual(unit.all('Service', 'ExecReload'), ['/usr/bin/node /opt/gridsteer/dist/gslb/cli/main.js check-config', '/bin/kill -HUP $MAINPID']);
  assert.deepEqual(unit.all('Service', 'SystemCallFilter'), ['@system-service', '~@privileged']);
  assert.equal(svc('SystemCallErrorNumber'), 'EPERM', 'an unexpected system call fails instead of killing the server');
  assert.notEqual(svc('MemoryDenyWriteExecute'), 'yes', 'V8 needs writable executable memory');
  assert.deepEqual(parseEnvironment(unit.all('Service', 'Environment')), { NODE_ENV: 'production', GRIDSTEER_CONFIG: '/etc/gridsteer/gridsteer.yaml' });
  assert.equal(unit.get('Unit', 'After'), 'network-online.target');
  assert.equal(unit.get('Unit', 'Wants'), 'network-online.target');
  assert.equal(unit.get('Install', 'WantedBy'), 'multi-user.target');
});

describe('systemd-analyze', () => {
  let dir = '';
  let copy = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gridsteer-unit-'));
    writeFileSync(join(dir, 'gridsteer.env'), envText);
    copy = join(dir, 'gridsteer.service');
    const m = moves({ etc: join(dir, 'etc'), env: join(dir, 'gridsteer.env') });
    const pathLines = /^(ExecStart|ExecReload|EnvironmentFile|WorkingDirectory)=/;
    writeFileSync(copy, unitText.split('\n').map((l) => (pathLines.test(l) ? move(l, m) : l)).join('\n'));
    // The copy is the unit but for the moved paths, line by line.
    const a = unitText.split('\n');
    const b = readFileSync(copy, 'utf8').split('\n');
    assert.equal(a.length, b.length);
    const changed = a.filter((l, i) => l !== b[i]).map((l) => l.split('=')[0]);
    assert.deepEqual(changed, ['EnvironmentFile', 'WorkingDirectory', 'ExecStart', 'ExecReload']);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('systemd-analyze verify: no problem, no warning', async () => {
    const sa = requireProgram('systemd-analyze');
    const r = await runAs(sa, ['verify', copy], { env: { PATH: process.env.PATH ?? '', SYSTEMD_LOG_COLOR: '0' }, cwd: dir });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout + r.stderr, '', 'systemd-analyze verify says nothing');
    // And it does read the unit: a misspelt key is reported.
    const bad = join(dir, 'bad.service');
    writeFileSync(bad, readFileSync(copy, 'utf8').replace(/^ProtectSystem=strict$/m, 'ProtectSystem=strict\nProtectSytem=strict'));
    const r2 = await runAs(sa, ['verify', bad], { env: { PATH: process.env.PATH ?? '' }, cwd: dir });
    assert.match(r2.stderr, /Unknown key name 'ProtectSytem'|Unknown key 'ProtectSytem'/);
  });

  test('systemd-analyze security --offline: exposure 2.0 or lower ("OK")', async (t) => {
    const sa = requireProgram('systemd-analyze');
    const r = await runAs(sa, ['security', '--offline=true', '--threshold=20', '--no-pager', copy], { env: { PATH: process.env.PATH ?? '', SYSTEMD_COLORS: '0' }, cwd: dir });
    const level = /Overall exposure level for gridsteer\.service: (\d+\.\d+) (\w+)/.exec(r.stdout + r.stderr);
    assert.ok(level, r.stdout + r.stderr);
    assert.equal(r.code, 0, `exposure ${level[1]} ${level[2]} is above 2.0\n${r.stdout}`);
    t.diagnostic(`systemd-analyze security: ${level[1]} ${level[2]}`);
  });
});

test('gridsteer.env: read by systemd\'s rules; its commented settings are valid assignments', () => {
  assert.deepEqual(parseEnvFile(envText), { GRIDSTEER_CONFIG: '/etc/gridsteer/gridsteer.yaml', GRIDSTEER_OPTS: '--log-level info' });
  const commented = envText.split('\n').filter((l) => /^#[A-Z_]+=/.test(l)).map((l) => l.slice(1));
  const vars = parseEnvFile(commented.join('\n'));
  assert.deepEqual(Object.keys(vars).sort(), ['GRIDSTEER_HOOK_US_VA', 'GRIDSTEER_NODE', 'GRIDSTEER_TOKENS']);
  assert.match(vars.GRIDSTEER_TOKENS!, /^(?:(?:operator|viewer|ingest):[\w.@-]+:\S+)(?:,(?:operator|viewer|ingest):[\w.@-]+:\S+)*$/);
});

/** The settings infra/README.md tells an installer to put in /etc/gridsteer/gridsteer.yaml. */
function readmeEdits(): { dns: { listen: string[] }; http: { listen: string }; state: { file: string }; geoip: { database: string } } {
  const readme = readFileSync(join(repoRoot, 'infra', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## systemd'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'infra/README.md has the YAML of the systemd install');
  return parse(block[1]!) as ReturnType<typeof readmeEdits>;
}

test('infra/README.md: the systemd install writes state and reads the GeoIP file where the unit allows', () => {
  const e = readmeEdits();
  assert.deepEqual(Object.keys(e).sort(), ['dns', 'geoip', 'http', 'state']);
  assert.deepEqual(e.dns.listen, ['0.0.0.0:53', '[::]:53']);
  assert.equal(e.state.file, `/var/lib/${svc('StateDirectory')}/gridsteer-state.jsonl`, 'state.file in StateDirectory= (the rest is read-only under ProtectSystem=strict)');
  assert.equal(e.geoip.database, '/var/lib/GeoIP/GeoLite2-City.mmdb');
  const readme = readFileSync(join(repoRoot, 'infra', 'README.md'), 'utf8');
  for (const f of ['gridsteer.service', 'gridsteer.env']) assert.ok(readme.includes(`infra/systemd/${f}`), `the install copies ${f}`);
});

describe('ExecStart as systemd runs it', () => {
  const DYNAMIC_UID = 61184 + 953; // in systemd's dynamic range 61184–65519
  let dir = '';
  let etc = '';
  let stateDir = '';
  let cacheDir = '';
  let env: Record<string, string> = {};
  let m: [string, string][] = [];
  let p: Logged | undefined;
  let dnsAddr = '';
  let http = '';
  let cfg: Record<string, unknown> = {};

  /** setpriv with the unit's credentials and capabilities, under its UMask. */
  function asService(argv: string[]): [string, string[]] {
    const caps = (v: string) => v.split(/\s+/).map((c) => c.replace(/^CAP_/, '').toLowerCase());
    const ambient = caps(svc('AmbientCapabilities')!).map((c) => `+${c}`).join(',');
    const bounding = ['-all', ...caps(svc('CapabilityBoundingSet')!).map((c) => `+${c}`)].join(',');
    const setpriv = requireProgram('setpriv');
    return [
      '/bin/sh',
      [
        '-c',
        `umask ${svc('UMask')}; exec "$@"`,
        'sh',
        setpriv,
        `--reuid=${DYNAMIC_UID}`,
        `--regid=${DYNAMIC_UID}`,
        '--clear-groups',
        `--inh-caps=${ambient}`,
        `--ambient-caps=${ambient}`,
        `--bounding-set=${bounding}`,
        ...(svc('NoNewPrivileges') === 'yes' ? ['--no-new-privs'] : []),
        '--',
        ...argv,
      ],
    ];
  }

  before(async () => {
    assert.equal(process.getuid?.(), 0, 'this suite runs as root (a dynamic uid and the ambient capability)');
    requireProgram('dig');
    dir = mkdtempSync(join(tmpdir(), 'gridsteer-systemd-'));
    chmodSync(dir, 0o755);
    etc = join(dir, 'etc', 'gridsteer');
    mkdirSync(etc, { recursive: true, mode: 0o755 });
    m = moves({ etc, env: join(etc, 'gridsteer.env') });
    // StateDirectory= and CacheDirectory=: /var/lib/NAME and /var/cache/NAME, owned by the
    // service's user, with the *DirectoryMode.
    stateDir = join(dir, 'var', 'lib', svc('StateDirectory')!);
    cacheDir = join(dir, 'var', 'cache', svc('CacheDirectory')!);
    for (const [d, mode] of [[stateDir, svc('StateDirectoryMode')!], [cacheDir, svc('CacheDirectoryMode')!]] as const) {
      mkdirSync(d, { recursive: true });
      chmodSync(join(d, '..'), 0o755);
      chmodSync(join(d, '..', '..'), 0o755);
      chownSync(d, DYNAMIC_UID, DYNAMIC_UID);
      chmodSync(d, parseInt(mode, 8));
    }
    m.push(['/var/lib/gridsteer', stateDir], ['/var/cache/gridsteer', cacheDir]);
    // The configuration, as infra/README.md's install step makes it: the example with the
    // settings of the README's YAML block, their paths moved (the operator's GeoIP folder:
    // the suites' database), the listen addresses on loopback (port 53 still).
    const geo = await geoipFolder();
    m.push(['/var/lib/GeoIP', geo]);
    const edits = readmeEdits();
    dnsAddr = loopback53();
    http = `127.0.0.1:${await freePort()}`;
    cfg = parse(readFileSync(exampleConfig, 'utf8')) as Record<string, unknown>;
    Object.assign(cfg, {
      dns: { listen: [`${dnsAddr}:${edits.dns.listen[0]!.split(':').at(-1)}`] },
      http: { listen: http },
      workers: 1,
      state: { file: move(edits.state.file, m) },
      geoip: { database: move(edits.geoip.database, m) },
    });
    writeFileSync(join(etc, 'gridsteer.yaml'), stringify(cfg));
    symlinkSync(readable(exampleRegions), join(etc, 'regions'), 'dir');
    // gridsteer.env with GRIDSTEER_TOKENS uncommented and its placeholder filled in.
    const envFile = move(envText, m).replace(/^#GRIDSTEER_TOKENS=.*$/m, `GRIDSTEER_TOKENS=operator:alice:${TOKEN}`);
    writeFileSync(join(etc, 'gridsteer.env'), envFile);
    chmodSync(join(etc, 'gridsteer.env'), 0o600);
    // The environment systemd gives the service.
    env = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/',
      ...parseEnvironment(unit.all('Service', 'Environment').map((v) => move(v, m))),
      ...parseEnvFile(readFileSync(move(svc('EnvironmentFile')!, m), 'utf8')),
      STATE_DIRECTORY: stateDir,
      CACHE_DIRECTORY: cacheDir,
    };
  });

  after(async () => {
    await p?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('it starts: the dynamic uid with only CAP_NET_BIND_SERVICE binds port 53; the geo table lands in CACHE_DIRECTORY, the state file in STATE_DIRECTORY', async () => {
    const argv = expandExec(move(svc('ExecStart')!, m), env);
    assert.deepEqual(argv.slice(-4), [join(publicCheckout(), 'dist/gslb/cli/main.js'), 'serve', '--log-level', 'info'], '$GRIDSTEER_OPTS is split into words');
    const [file, args] = asService(argv);
    p = startLogged(file, args, { env, cwd: move(svc('WorkingDirectory')!, m) });
    const ready = await waitReady(p);
    assert.deepEqual(ready.dns, [`udp://${dnsAddr}:53`, `tcp://${dnsAddr}:53`]);
    assert.equal(uidOf(p.pid), DYNAMIC_UID);
    assert.equal(capEff(p.pid), CAP_NET_BIND_SERVICE);
    assert.equal((await askSteered({ host: dnsAddr, port: 53 }, 'A')).region, 'us-va');
    // The geo table: compiled into $CACHE_DIRECTORY, the server's default cache folder.
    await until(
      async () => {
        const r = (await (await fetch(`http://${http}/readyz`, { signal: AbortSignal.timeout(5000) })).json()) as { ready: boolean };
        return r.ready ? true : undefined;
      },
      120000,
      () => `ready with a geo table\n${p!.logs.slice(-10).join('\n')}`,
    );
    const tables = readdirSync(cacheDir).filter((f) => /^geo-\S+\.bin$/.test(f));
    assert.equal(tables.length, 1, readdirSync(cacheDir).join(', '));
    assert.equal(statSync(join(cacheDir, tables[0]!)).uid, DYNAMIC_UID);
    assert.equal((await askSteered({ host: dnsAddr, port: 53 }, 'A', '133.242.0.0/24')).region, 'ap-tyo');
    // The memory store's file, under UMask=0027, with the token from gridsteer.env.
    const ov = await apiCall(`http://${http}`, 'POST', '/v1/overrides', TOKEN, { region: 'sa-sao', action: 'drain', value: 0, reason: 'infra-systemd test' });
    assert.equal(ov.status, 201, JSON.stringify(ov.body));
    const st = statSync(join(stateDir, 'gridsteer-state.jsonl'));
    assert.equal(st.uid, DYNAMIC_UID);
    assert.equal(st.mode & 0o777, 0o640, 'UMask=0027');
  });

  test('ExecReload: a changed configuration is checked, then reloaded by SIGHUP; a broken one fails the reload and the previous keeps serving', async () => {
    assert.ok(p, 'the service runs');
    const reload = async () => {
      const out: { code: number | null; text: string }[] = [];
      for (const line of unit.all('Service', 'ExecReload')) {
        const [file, args] = asService(expandExec(move(line, m), { ...env, MAINPID: String(p!.pid) }));
        const r = await runAs(file, args, { env, cwd: move(svc('WorkingDirectory')!, m) });
        out.push({ code: r.code, text: r.stdout + r.stderr });
        if (r.code !== 0) break; // systemd stops at the first failing command
      }
      return out;
    };
    const zones = cfg.zones as { records: Record<string, unknown>[] }[];
    zones[0]!.records.push({ name: 'reload', type: 'TXT', data: 'second version' });
    writeFileSync(join(etc, 'gridsteer.yaml'), stringify(cfg));
    const ok = await reload();
    assert.deepEqual(ok.map((x) => x.code), [0, 0], JSON.stringify(ok));
    assert.match(ok[0]!.text, /^ok /);
    await p.waitLine((l) => l.includes('"msg":"config reloaded"'), 15000, 'the reload');
    const txt = await dig({ host: dnsAddr, port: 53 }, ['reload.gslb.example.com', 'TXT']);
    assert.deepEqual(txt.msg.answer.map((a) => a.data), ['"second version"']);
    writeFileSync(join(etc, 'gridsteer.yaml'), stringify(cfg).replace('minTtl: 5', 'minTtl: "5"'));
    const bad = await reload();
    assert.deepEqual(bad.map((x) => x.code), [1], 'check-config fails, so no SIGHUP is sent');
    assert.match(bad[0]!.text, /policy\.minTtl: must be an integer/);
    const again = await dig({ host: dnsAddr, port: 53 }, ['reload.gslb.example.com', 'TXT']);
    assert.deepEqual(again.msg.answer.map((a) => a.data), ['"second version"'], 'the previous configuration keeps serving');
  });

  test('stop: SIGTERM to the main process (KillMode=mixed) ends it with exit 0 within TimeoutStopSec; Restart=on-failure would not restart it', async () => {
    assert.ok(p, 'the service runs');
    assert.equal(svc('KillMode'), 'mixed');
    const timeoutMs = Number(/^(\d+)s$/.exec(svc('TimeoutStopSec')!)![1]) * 1000;
    const end = await p.stop((svc('KillSignal') ?? 'SIGTERM') as NodeJS.Signals, timeoutMs);
    assert.deepEqual(end, { code: 0, signal: null, killed: false }, p.logs.slice(-10).join('\n'));
    assert.equal(svc('Restart'), 'on-failure', 'exit 0 is a clean exit: no restart');
  });
});
