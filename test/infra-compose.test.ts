/**
 * infra/docker/compose.yaml, without a Docker engine.
 *
 * Static: three GridSteer nodes built from infra/docker/Dockerfile, each mounting the same
 * gridsteer.compose.yaml at GRIDSTEER_CONFIG, the example fleet beside it, the operator's
 * GeoIP folder (required, read-only) where geoip.database points, a geo-cache volume of its
 * own where the image's CACHE_DIRECTORY is, its own host ports, a health check on /readyz
 * through the entrypoint, and only CAP_NET_BIND_SERVICE; one Redis primary, one replica and
 * three Sentinels (quorum 2) from redis/sentinel.conf; the store URL of gridsteer.compose.yaml
 * names exactly those Sentinels and their master; and `gridsteer check-config` accepts
 * gridsteer.compose.yaml.
 *
 * The topology on loopback: the compose commands of the Redis services run with the local
 * redis-server (the service names and ports moved to loopback ports, as compose's network
 * would resolve them; each volume a temp folder), the three nodes through the image's
 * entrypoint as in infra-docker (helpers/infra.ts emulateImage) with the compose environment
 * and mounts. The Sentinels find the primary, the replica and each other; every node passes
 * its compose health check (store and geo table ready); a drain posted to node1 reaches
 * node2's and node3's answers, acknowledged by the replica (waitReplicas 1); SIGTERM stops
 * every node with exit 0.
 *
 * Needs root, libcap2-bin (setcap), redis-server, bind9-dnsutils (dig).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { parse } from 'yaml';
import { askSteered } from './helpers/geo.js';
import { apiCall } from './helpers/api.js';
import { freePort } from './helpers/ports.js';
import { cliPath, exampleRegions, repoRoot } from './helpers/paths.js';
import { respCommand } from './helpers/redis.js';
import {
  dockerDir,
  emulateImage,
  geoipFolder,
  interpolateDeep,
  loopback53,
  requireProgram,
  runAs,
  runtimeStage,
  startLogged,
  until,
  waitReady,
  type EmulatedContainer,
  type Logged,
  type Mount,
  readable,
} from './helpers/infra.js';

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  cap_drop?: string[];
  cap_add?: string[];
  security_opt?: string[];
  depends_on?: unknown;
  user?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}

const rawCompose = readFileSync(join(dockerDir, 'compose.yaml'), 'utf8');
const composeConfigText = readFileSync(join(dockerDir, 'gridsteer.compose.yaml'), 'utf8');
const composeConfig = parse(composeConfigText) as { regionsDir: string; geoip: { database: string }; state: { store: string; redis: { url: string; waitReplicas: number } } };
const sentinelConf = readFileSync(join(dockerDir, 'redis', 'sentinel.conf'), 'utf8');
const rt = runtimeStage();
const OPERATOR = 'infra-compose-operator-41b9aa';

/** compose.yaml as compose reads it: YAML merge keys, then interpolation from `env`. */
function loadCompose(env: Record<string, string | undefined>): Compose {
  return interpolateDeep(parse(rawCompose, { merge: true }) as Compose, env);
}

const staticEnv = { GEOIP_DIR: '/srv/geoip' };
const compose = loadCompose(staticEnv);
const services = Object.entries(compose.services);
const gridsteer = services.filter(([, s]) => s.build !== undefined);
const redisServers = services.filter(([, s]) => s.command?.[0] === 'redis-server');
const sentinels = services.filter(([, s]) => s.command?.some((a) => a.includes('--sentinel')));
const monitor = /^sentinel monitor (\S+) (\S+) (\d+) (\d+)$/m.exec(sentinelConf);
const sentinelPort = Number(/^port (\d+)$/m.exec(sentinelConf)?.[1]);

// ------------------------------------------------------------------ static

test('compose.yaml: three GridSteer nodes from the Dockerfile, a Redis primary and replica, three Sentinels with quorum 2', () => {
  assert.deepEqual(gridsteer.map(([n]) => n), ['node1', 'node2', 'node3']);
  for (const [name, s] of gridsteer) {
    assert.equal(resolve(dockerDir, s.build!.context), repoRoot, `${name}: the build context is the repository`);
    assert.equal(s.build!.dockerfile, 'infra/docker/Dockerfile');
    assert.equal(s.image, 'gridsteer:latest');
  }
  const primary = redisServers.filter(([, s]) => !s.command!.includes('--replicaof'));
  const replica = redisServers.filter(([, s]) => s.command!.includes('--replicaof'));
  assert.deepEqual(primary.map(([n]) => n), ['redis-primary']);
  assert.deepEqual(replica.map(([n]) => n), ['redis-replica']);
  const r = replica[0]![1].command!;
  assert.deepEqual(r.slice(r.indexOf('--replicaof') + 1, r.indexOf('--replicaof') + 3), ['redis-primary', '6379']);
  for (const [name, s] of redisServers) {
    const c = s.command!;
    assert.equal(c[c.indexOf('--replica-announce-ip') + 1], name, `${name} announces its service name`);
    assert.equal(c[c.indexOf('--appendonly') + 1], 'yes', `${name} keeps an AOF`);
    assert.equal(c[c.indexOf('--appendfsync') + 1], 'always');
  }
  assert.deepEqual(sentinels.map(([n]) => n), ['sentinel1', 'sentinel2', 'sentinel3']);
  assert.ok(monitor, 'sentinel.conf monitors a master');
  assert.equal(monitor![2], 'redis-primary');
  assert.equal(monitor![3], '6379');
  assert.equal(Number(monitor![4]), Math.floor(sentinels.length / 2) + 1, 'quorum: a majority of the Sentinels');
  assert.match(sentinelConf, /^sentinel resolve-hostnames yes$/m);
  assert.match(sentinelConf, /^sentinel announce-hostnames yes$/m);
  assert.match(sentinelConf, /^dir \/data$/m);
  const dataVolumes = new Set<string>();
  for (const [name, s] of sentinels) {
    const script = s.command!.at(-1)!;
    assert.deepEqual(s.command!.slice(0, 2), ['sh', '-c']);
    assert.match(script, /^test -f \/data\/sentinel\.conf \|\| cp \/usr\/local\/etc\/redis\/sentinel\.conf \/data\/sentinel\.conf; exec redis-server \/data\/sentinel\.conf --sentinel --sentinel announce-ip (\S+)$/);
    assert.equal(/announce-ip (\S+)$/.exec(script)![1], name, `${name} announces its own name`);
    assert.ok(s.volumes!.includes('./redis/sentinel.conf:/usr/local/etc/redis/sentinel.conf:ro'));
    const data = s.volumes!.find((v) => v.endsWith(':/data'))!;
    dataVolumes.add(data);
    assert.ok(Object.hasOwn(compose.volumes, data.split(':')[0]!), `${data}: a named volume`);
  }
  assert.equal(dataVolumes.size, 3, 'each Sentinel keeps its own rewritten file');
  for (const [, s] of [...redisServers, ...sentinels]) assert.equal(s.user, 'redis', 'Redis runs as its own user');
});

test('compose.yaml: every node mounts the same configuration, the fleet, the operator\'s GeoIP folder and a cache volume of its own; own ports; health on /readyz; one capability', () => {
  const caches = new Set<string>();
  const hostPorts = new Set<string>();
  const configDir = posix.dirname(rt.env.GRIDSTEER_CONFIG!);
  for (const [name, s] of gridsteer) {
    const env = s.environment!;
    assert.equal(env.GRIDSTEER_CONFIG, rt.env.GRIDSTEER_CONFIG, `${name}: the image's GRIDSTEER_CONFIG`);
    assert.equal(env.GRIDSTEER_NODE, name);
    const v = s.volumes!;
    assert.ok(v.includes(`./gridsteer.compose.yaml:${env.GRIDSTEER_CONFIG}:ro`), `${name}: ${v.join(', ')}`);
    assert.ok(v.includes(`../../regions:${posix.join(configDir, composeConfig.regionsDir)}:ro`), `${name}: the example fleet where regionsDir points`);
    assert.ok(v.includes(`${staticEnv.GEOIP_DIR}:${posix.dirname(composeConfig.geoip.database)}:ro`), `${name}: the operator's GeoIP folder, read-only, where geoip.database is`);
    const cache = v.find((x) => x.endsWith(`:${rt.env.CACHE_DIRECTORY}`));
    assert.ok(cache, `${name}: a volume at the image's CACHE_DIRECTORY`);
    caches.add(cache.split(':')[0]!);
    assert.ok(Object.hasOwn(compose.volumes, cache.split(':')[0]!));
    const [dnsPort] = env.GRIDSTEER_DNS_LISTEN!.split(':').slice(-1);
    const httpPort = env.GRIDSTEER_HTTP_LISTEN!.split(':').at(-1);
    const published = s.ports!.map((p) => /^127\.0\.0\.1:(\d+):(\d+)\/(udp|tcp)$/.exec(p)).map((m) => ({ host: m![1]!, container: m![2]!, proto: m![3]! }));
    assert.deepEqual(published.map((p) => `${p.container}/${p.proto}`).sort(), [`${dnsPort}/tcp`, `${dnsPort}/udp`, `${httpPort}/tcp`].sort());
    for (const p of published) assert.ok(rt.expose.includes(`${p.container}/${p.proto}`), `${p.container}/${p.proto} is EXPOSEd by the image`);
    for (const p of published) {
      assert.ok(!hostPorts.has(`${p.host}/${p.proto}`), `${name}: host port ${p.host}/${p.proto} is its own`);
      hostPorts.add(`${p.host}/${p.proto}`);
    }
    assert.deepEqual(s.healthcheck!.test, ['CMD', rt.healthcheck[0], 'healthcheck', '/readyz']);
    assert.deepEqual([s.cap_drop, s.cap_add], [['ALL'], ['NET_BIND_SERVICE']]);
    assert.ok(!(s.security_opt ?? []).some((o) => /no-new-privileges/.test(o)), 'no-new-privileges would disable the file capability');
  }
  assert.equal(caches.size, 3);
  assert.throws(() => loadCompose({}), /GEOIP_DIR is required: set GEOIP_DIR to the folder of your licensed GeoLite2-City\.mmdb/);
  assert.equal(loadCompose({ GEOIP_DIR: '/g', GRIDSTEER_PUBLISH: '0.0.0.0' }).services.node2!.ports![0], '0.0.0.0:5302:53/udp');
});

test('gridsteer.compose.yaml: the Redis store behind exactly the compose Sentinels; `gridsteer check-config` accepts it', async (t) => {
  assert.equal(composeConfig.state.store, 'redis');
  const m = /^redis\+sentinel:\/\/([^/]+)\/([^/]+)$/.exec(composeConfig.state.redis.url);
  assert.ok(m, composeConfig.state.redis.url);
  assert.deepEqual(m[1]!.split(','), sentinels.map(([n]) => `${n}:${sentinelPort}`));
  assert.equal(m[2], monitor![1], 'the master name Sentinel monitors');
  assert.equal(composeConfig.state.redis.waitReplicas, 1);
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-compose-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(readable(exampleRegions), join(dir, composeConfig.regionsDir), 'dir');
  writeFileSync(join(dir, 'gridsteer.yaml'), composeConfigText);
  const r = await runAs(process.execPath, [cliPath, 'check-config', '--config', join(dir, 'gridsteer.yaml')], { env: { PATH: process.env.PATH ?? '' } });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^ok \S+: version \w+, 1 zone\(s\), 1 steered name\(s\), 7 region\(s\), \d+ token\(s\)\n$/);
});

// ------------------------------------------------------------------ the topology on loopback

/** Service name → its loopback port (what compose's DNS and the container port resolve to). */
const ports = new Map<string, { container: number; host: number }>();
const dirs: string[] = [];
const redisProcs: Logged[] = [];
const nodes: { name: string; c: EmulatedContainer; p: Logged; env: Record<string, string>; dns: { host: string; port: number }; http: string }[] = [];

/** `name port` and `name:port` of the compose services, then bare names, moved to loopback. */
function toLoopback(text: string): string {
  let out = text;
  for (const [name, p] of ports) {
    out = out.replaceAll(`${name}:${p.container}`, `127.0.0.1:${p.host}`).replaceAll(`${name} ${p.container}`, `127.0.0.1 ${p.host}`);
  }
  for (const name of ports.keys()) out = out.replace(new RegExp(`\\b${name}\\b`, 'g'), '127.0.0.1');
  return out;
}

/** A command's arguments moved to loopback: `name port` pairs and bare service names. */
function argsToLoopback(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const p = ports.get(args[i]!);
    if (p && args[i + 1] === String(p.container)) {
      out.push('127.0.0.1', String(p.host));
      i++;
    } else out.push(p ? '127.0.0.1' : args[i]!);
  }
  return out;
}

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}

async function ping(port: number): Promise<boolean> {
  return (await respCommand(port, ['PING'], 1000).catch(() => null)) === 'PONG';
}

describe('the topology on loopback', () => {
  before(async () => {
    assert.equal(process.getuid?.(), 0, 'this suite runs as root (the nodes run as the image user, uid 10053)');
    const redisServer = requireProgram('redis-server');
    requireProgram('dig');
    const geoDir = await geoipFolder();
    const env = { GEOIP_DIR: geoDir, GRIDSTEER_WORKERS: '1', GRIDSTEER_TOKENS: `operator:ops:${OPERATOR}` };
    const live = loadCompose(env);
    for (const [name] of redisServers) ports.set(name, { container: 6379, host: await freePort() });
    for (const [name] of sentinels) ports.set(name, { container: sentinelPort, host: await freePort() });

    // Redis: the compose command, on its loopback port, in its volume.
    for (const [name] of redisServers) {
      const s = live.services[name]!;
      const args = argsToLoopback(s.command!.slice(1));
      const data = tempDir(`gridsteer-${name}-`);
      const p = startLogged(redisServer, [...args, '--port', String(ports.get(name)!.host), '--bind', '127.0.0.1'], { env: { PATH: process.env.PATH ?? '' }, cwd: data });
      redisProcs.push(p);
      await until(async () => ((await ping(ports.get(name)!.host)) ? true : undefined), 15000, () => `${name} answers PING\n${p.logs.join('\n')}`);
    }
    const replicaPort = ports.get('redis-replica')!.host;
    await until(async () => (/master_link_status:up/.test(String(await respCommand(replicaPort, ['INFO', 'replication']))) ? true : undefined), 15000, () => 'the replica is in sync');

    // Sentinels: the compose script, with the mounted sentinel.conf and /data in temp folders.
    for (const [name] of sentinels) {
      const s = live.services[name]!;
      const data = tempDir(`gridsteer-${name}-`);
      const etc = tempDir(`gridsteer-${name}-etc-`);
      const conf = join(etc, 'sentinel.conf');
      writeFileSync(conf, toLoopback(sentinelConf).replace(/^port \d+$/m, `port ${ports.get(name)!.host}`).replace(/^dir \/data$/m, `dir ${data}`));
      const script = toLoopback(s.command!.at(-1)!).replaceAll('/usr/local/etc/redis/sentinel.conf', conf).replaceAll('/data/', `${data}/`);
      const p = startLogged('/bin/sh', ['-c', script], { env: { PATH: process.env.PATH ?? '' }, cwd: data });
      redisProcs.push(p);
    }
    const primaryPort = ports.get('redis-primary')!.host;
    for (const [name] of sentinels) {
      const port = ports.get(name)!.host;
      await until(
        async () => {
          const master = (await respCommand(port, ['SENTINEL', 'get-master-addr-by-name', monitor![1]!])) as string[];
          const peers = (await respCommand(port, ['SENTINEL', 'sentinels', monitor![1]!])) as unknown[];
          const replicas = (await respCommand(port, ['SENTINEL', 'replicas', monitor![1]!])) as unknown[];
          return master?.[1] === String(primaryPort) && peers.length === sentinels.length - 1 && replicas.length === 1 ? true : undefined;
        },
        30000,
        () => `${name} knows the primary, the replica and the other Sentinels\n${redisProcs.at(-1)!.logs.slice(-10).join('\n')}`,
      );
    }

    // The nodes: the image, the compose environment and mounts, published ports on loopback.
    for (const [name] of gridsteer) {
      const s = live.services[name]!;
      const mounts: Mount[] = s.volumes!.map((v) => {
        const [src, target] = v.split(':') as [string, string];
        return src.startsWith('.') || src.startsWith('/') ? { target, source: resolve(dockerDir, src) } : { target, volume: true };
      });
      const c = emulateImage({
        mounts,
        rewrite: (target, text, host) => (target === rt.env.GRIDSTEER_CONFIG ? toLoopback(text).replace(/(?<=:\s)\/var\/[^\s]+/g, (p) => host(p)) : text),
      });
      const dns = { host: loopback53(), port: 53 };
      const http = `127.0.0.1:${await freePort()}`;
      const nodeEnv: Record<string, string> = { ...c.env };
      for (const [k, v] of Object.entries(s.environment!)) nodeEnv[k] = v.startsWith('/') ? c.host(v) : v;
      Object.assign(nodeEnv, { GRIDSTEER_DNS_LISTEN: `${dns.host}:53`, GRIDSTEER_HTTP_LISTEN: http });
      const p = startLogged(c.entrypoint[0]!, c.entrypoint.slice(1), { env: nodeEnv, cwd: c.cwd, uid: c.uid, gid: c.gid });
      nodes.push({ name, c, p, env: nodeEnv, dns, http: `http://${http}` });
    }
    await Promise.all(nodes.map((n) => waitReady(n.p, 60000)));
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.p.stop('SIGKILL')));
    await Promise.all(redisProcs.map((p) => p.stop('SIGTERM', 5000)));
    for (const n of nodes) n.c.cleanup();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('the topology on loopback: every node passes its compose health check (store through the Sentinels, geo table compiled into its volume)', async () => {
    for (const n of nodes) {
      const hc = compose.services[n.name]!.healthcheck!.test.slice(1);
      const cmd = [n.c.host(hc[0]!), ...hc.slice(1)];
      const r = await until(
        async () => {
          const x = await runAs(cmd[0]!, cmd.slice(1), { env: n.env, cwd: n.c.cwd, uid: n.c.uid, gid: n.c.gid });
          return x.code === 0 ? x : undefined;
        },
        120000,
        () => `${n.name}: its health check passes\n${n.p.logs.slice(-10).join('\n')}`,
      );
      const body = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { ready: boolean; checks: { name: string; ok: boolean; detail: string }[] };
      assert.match(body.checks.find((x) => x.name === 'store')!.detail, /^redis/);
      assert.match(body.checks.find((x) => x.name === 'geo')!.detail, /^table \S+ from \S+\/var\/lib\/GeoIP\/GeoLite2-City\.mmdb/);
      assert.equal((await askSteered(n.dns, 'A')).region, 'us-va', `${n.name} answers the default location from Virginia`);
    }
  });

  test('a drain posted to node1 is acknowledged by the replica and reaches node2\'s and node3\'s answers', async (t) => {
    const r = await apiCall(nodes[0]!.http, 'POST', '/v1/overrides', OPERATOR, { region: 'us-va', action: 'drain', value: 0, reason: 'infra-compose test' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const regions = await until(
      async () => {
        const got = await Promise.all(nodes.map(async (n) => (await askSteered(n.dns, 'A')).region));
        return got.every((x) => x === 'us-tx') ? got : undefined;
      },
      15000,
      () => 'every node answers us-tx',
    );
    t.diagnostic(`answers after the drain: ${regions.join(', ')}`);
    const info = String(await respCommand(ports.get('redis-primary')!.host, ['INFO', 'replication']));
    assert.match(info, /connected_slaves:1/);
    const keys = (await respCommand(ports.get('redis-replica')!.host, ['KEYS', '*'])) as string[];
    assert.ok(keys.length > 0 && keys.every((k) => k.includes('gridsteer')), `the replica holds the store's keys: ${keys.join(', ')}`);
  });

  test('SIGTERM stops every node with exit 0', async () => {
    for (const n of nodes) assert.deepEqual(await n.p.stop('SIGTERM', 20000), { code: 0, signal: null, killed: false }, `${n.name}\n${n.p.logs.slice(-5).join('\n')}`);
  });
});
