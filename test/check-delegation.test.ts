/**
 * `gridsteer check-delegation` against real servers on loopback: two GridSteer nodes serving
 * gslb.example.com on 127.0.53.2 and 127.0.53.3 (one port P on both, the config's NS glue
 * pointing at those addresses), and GridSteer instances serving the parent zone example.com
 * with a delegation (NS records below the apex plus glue): a good parent on 127.0.53.4:P and
 * bad ones on random ports. The CLI runs as a process (`node dist/gslb/cli/main.js
 * check-delegation …`); its stdout and exit code are checked. dig checks that the test
 * parent really answers with a referral.
 *
 * Cases: consistent (with --parent and --config; through the resolver with neither --parent
 * nor --node; --json) → exit 0, every check ok; the parent lists an NS the nodes do not →
 * exit 1 naming it (ns-set, lame); wrong glue → error naming the name and both address
 * sets; one node reloaded with another SOA serial → error; one node stopped → error for it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { dig, digSummary, run, type ToolRun } from './helpers/dig.js';
import { cliPath } from './helpers/paths.js';
import { spawnServer, writeTestConfig, type ConfigObject, type RunningServer, type TestConfig } from './helpers/server.js';

const ZONE = 'gslb.example.com';
const SERIAL = 2026113001;
/**
 * Node A, node B, the good parent: loopback addresses no other suite uses (collector-health
 * takes 127.0.0.2 and .3), so that suites running side by side cannot take port P there.
 * Nothing listens on 127.0.53.5 and .9 (the lame NS and the wrong glue).
 */
const HOSTS = ['127.0.53.2', '127.0.53.3', '127.0.53.4'];

/** The nodes' config: the example fleet with ns1/ns2 glue on the loopback addresses they listen on. */
function nodeConfig(cfg: ConfigObject): void {
  cfg.zones[0]!.nameservers = [
    { name: 'ns1', addresses: ['127.0.53.2'] },
    { name: 'ns2', addresses: ['127.0.53.3'] },
  ];
}

/** A parent: example.com, delegating gslb.example.com to `ns` (relative to example.com) with that glue. */
function parentConfig(delegation: { ns: string[]; glue: [string, string][] }): (cfg: ConfigObject) => void {
  return (cfg) => {
    cfg.zones = [
      {
        name: 'example.com',
        soa: { rname: 'hostmaster.example.com.', serial: 1 },
        nameservers: [{ name: 'ns', addresses: ['127.0.53.4'] }],
        records: [
          ...delegation.ns.map((n) => ({ name: 'gslb', type: 'NS', data: `${n}.example.com.` })),
          ...delegation.glue.map(([n, a]) => ({ name: n, type: a.includes(':') ? 'AAAA' : 'A', data: a })),
        ],
      },
    ];
    cfg.names = [];
  };
}

const GOOD = { ns: ['ns1.gslb', 'ns2.gslb'], glue: [['ns1.gslb', '127.0.53.2'], ['ns2.gslb', '127.0.53.3']] as [string, string][] };

function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const u = dgram.createSocket('udp4');
    u.once('error', () => {
      u.close();
      resolve(false);
    });
    u.bind(port, host, () => {
      const t = net.createServer();
      t.once('error', () => {
        u.close();
        resolve(false);
      });
      t.listen({ host, port, exclusive: true }, () => t.close(() => u.close(() => resolve(true))));
    });
  });
}

/**
 * One port free for UDP and TCP on every address of `hosts` (at most 50 candidates), taken
 * below the kernel's ephemeral range: a client socket (dig, kdig, a UDP query of another
 * suite) binds the wildcard address on an ephemeral port, which would take the port from our
 * servers between this check and their start.
 */
async function commonFreePort(hosts: string[]): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: keep the IANA default's lower bound
  }
  const from = Math.max(1025, Math.min(10000, low - 1000));
  for (let i = 0; i < 50; i++) {
    const port = from + Math.floor(Math.random() * Math.max(1, low - from));
    let all = true;
    for (const h of hosts) if (!(await canBind(h, port))) all = false;
    if (all) return port;
  }
  throw new Error(`no port below ${low} free on all of ${hosts.join(', ')}`);
}

/** Runs the CLI (bounded by run()'s process timeout). */
function checkDelegation(args: string[]): Promise<ToolRun> {
  return run(process.execPath, [cliPath, 'check-delegation', ...args], 60_000);
}

/** The report's check lines as [status, check, rest]. */
function lines(stdout: string): { status: string; check: string; rest: string }[] {
  return stdout
    .split('\n')
    .map((l) => /^(ok|warning|error) +(\S+) +(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ status: m[1]!, check: m[2]!, rest: m[3]! }));
}

const show = (r: ToolRun) => `$ ${r.cmd}\n(exit ${r.code})\n${r.stdout}${r.stderr}`;

test('check-delegation against two GridSteer nodes and a parent that delegates to them', async (t) => {
  const P = await commonFreePort(HOSTS);
  const cleanups: (() => Promise<unknown> | void)[] = [];
  t.after(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  const configs: TestConfig[] = [];
  const start = async (mutate: (cfg: ConfigObject) => void, dnsListen: string): Promise<{ srv: RunningServer; cfg: TestConfig }> => {
    const cfg = writeTestConfig(mutate);
    configs.push(cfg);
    cleanups.push(() => cfg.cleanup());
    const srv = await spawnServer({ configFile: cfg.file, dnsListen: [dnsListen] });
    cleanups.push(() => srv.stop());
    return { srv, cfg };
  };
  const [a, b, parent, lameParent, badGlueParent] = await Promise.all([
    start(nodeConfig, `127.0.53.2:${P}`),
    start(nodeConfig, `127.0.53.3:${P}`),
    start(parentConfig(GOOD), `127.0.53.4:${P}`),
    // The parent lists ns3, which the nodes do not serve; its glue points where nothing listens.
    start(parentConfig({ ns: [...GOOD.ns, 'ns3.gslb'], glue: [...GOOD.glue, ['ns3.gslb', '127.0.53.5']] }), '127.0.0.1:0'),
    // ns2's glue is wrong.
    start(parentConfig({ ns: GOOD.ns, glue: [['ns1.gslb', '127.0.53.2'], ['ns2.gslb', '127.0.53.9']] }), '127.0.0.1:0'),
  ]);
  const at = (s: RunningServer) => `${s.udp.host}:${s.udp.port}`;

  await t.test('dig: the test parent answers NS gslb.example.com with a referral (no aa, NS in authority, glue)', async () => {
    const r = await dig(parent.srv.udp, ['+norec', 'NS', ZONE]);
    const m = r.msg;
    assert.equal(m.status, 'NOERROR', digSummary(r));
    assert.ok(!m.flags.includes('aa'), digSummary(r));
    assert.equal(m.answer.length, 0, digSummary(r));
    assert.deepEqual(m.authority.map((x) => `${x.name} ${x.type} ${x.data}`).sort(), [`${ZONE}. NS ns1.${ZONE}.`, `${ZONE}. NS ns2.${ZONE}.`], digSummary(r));
    assert.deepEqual(m.additional.map((x) => `${x.name} ${x.type} ${x.data}`).sort(), [`ns1.${ZONE}. A 127.0.53.2`, `ns2.${ZONE}. A 127.0.53.3`], digSummary(r));
    // And a node answers for the zone itself, authoritatively.
    const soa = await dig(a.srv.udp, ['+norec', 'SOA', ZONE]);
    assert.ok(soa.msg.flags.includes('aa'), digSummary(soa));
  });

  await t.test('consistent, with --parent and --config: exit 0 and every check ok', async () => {
    const r = await checkDelegation([ZONE, '--parent', `127.0.53.4:${P}`, '--port', String(P), '--config', configs[0]!.file, '--timeout', '2s']);
    assert.equal(r.code, 0, show(r));
    const ls = lines(r.stdout);
    assert.deepEqual(ls.filter((l) => l.status !== 'ok'), [], show(r));
    const checks = new Set(ls.map((l) => l.check));
    for (const c of ['referral', 'ns-set', 'glue', 'lame', 'soa-udp', 'soa-tcp', 'edns', 'names', 'serial', 'config-ns', 'config-glue', 'config-serial']) assert.ok(checks.has(c), `${c} missing:\n${show(r)}`);
    assert.match(r.stdout, new RegExp(`^ok +glue +ns2\\.gslb\\.example\\.com +parent glue 127\\.0\\.53\\.3 = the nodes' 127\\.0\\.53\\.3$`, 'm'), show(r));
    assert.match(r.stdout, new RegExp(`^ok +serial +gslb\\.example\\.com +all 2 nodes serve serial ${SERIAL}$`, 'm'), show(r));
    assert.match(r.stdout, new RegExp(`^ok +names +127\\.0\\.53\\.3:${P} +api\\.gslb\\.example\\.com: A \\d+ address`, 'm'), show(r));
    assert.match(r.stdout, /\n0 errors, 0 warnings, \d+ ok\n$/, show(r));
  });

  await t.test('consistent, found through the resolver (no --parent, no --node), --json', async () => {
    // The good parent stands in for the resolver: it answers NS example.com and A ns.example.com itself.
    const r = await checkDelegation([ZONE, '--resolver', `127.0.53.4:${P}`, '--port', String(P), '--name', 'api.gslb.example.com', '--json']);
    assert.equal(r.code, 0, show(r));
    const j = JSON.parse(r.stdout) as { parentZone: string; nodes: { server: string; nsNames: string[] }[]; checks: { status: string; check: string }[]; summary: { error: number; warning: number } };
    assert.equal(j.parentZone, 'example.com');
    assert.deepEqual(j.nodes.map((n) => `${n.server} ${n.nsNames.join(',')}`), [`127.0.53.2:${P} ns1.${ZONE}`, `127.0.53.3:${P} ns2.${ZONE}`]);
    assert.deepEqual(j.checks.filter((c) => c.status !== 'ok'), []);
    assert.ok(j.checks.some((c) => c.check === 'parent'));
    assert.deepEqual([j.summary.error, j.summary.warning], [0, 0]);
  });

  await t.test('the parent lists an NS the nodes do not: exit 1 naming it', async () => {
    const r = await checkDelegation([ZONE, '--parent', at(lameParent.srv), '--port', String(P), '--timeout', '2s']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, /^error +ns-set +gslb\.example\.com +the parent lists ns1\.gslb\.example\.com, ns2\.gslb\.example\.com, ns3\.gslb\.example\.com, the nodes serve ns1\.gslb\.example\.com, ns2\.gslb\.example\.com; only at the parent: ns3\.gslb\.example\.com$/m, show(r));
    assert.match(r.stdout, new RegExp(`^error +lame +ns3\\.gslb\\.example\\.com 127\\.0\\.53\\.5:${P} +lame delegation: listed at the parent, but no answer`, 'm'), show(r));
    // The two real nodes are still fine.
    assert.match(r.stdout, new RegExp(`^ok +lame +ns1\\.gslb\\.example\\.com 127\\.0\\.53\\.2:${P} `, 'm'), show(r));
  });

  await t.test('wrong glue at the parent: an error naming the name and both address sets', async () => {
    const r = await checkDelegation([ZONE, '--parent', at(badGlueParent.srv), '--node', `127.0.53.2:${P}`, '--node', `127.0.53.3:${P}`, '--port', String(P), '--timeout', '2s']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, /^error +glue +ns2\.gslb\.example\.com +parent glue 127\.0\.53\.9, the nodes serve 127\.0\.53\.3$/m, show(r));
    assert.match(r.stdout, /^ok +glue +ns1\.gslb\.example\.com /m, show(r));
    // Node B, given with --node, is not where the parent sends resolvers.
    assert.match(r.stdout, new RegExp(`^warning +listed +127\\.0\\.53\\.3:${P} +not listed at the parent`, 'm'), show(r));
  });

  await t.test('one node reloaded with another SOA serial: exit 1, both serials named', async () => {
    const file = configs[1]!.file;
    const cfg = parse(readFileSync(file, 'utf8')) as ConfigObject;
    (cfg.zones[0]!.soa as { serial: number }).serial = SERIAL + 1;
    writeFileSync(file, stringify(cfg));
    b.srv.proc!.kill('SIGHUP');
    // Bounded wait until node B serves the new serial.
    let served = '';
    for (let i = 0; i < 50 && !served.includes(String(SERIAL + 1)); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 200));
      served = (await dig(b.srv.udp, ['+short', 'SOA', ZONE])).stdout;
    }
    assert.match(served, new RegExp(` ${SERIAL + 1} `), `node B did not take the new serial: ${served}`);
    const r = await checkDelegation([ZONE, '--parent', `127.0.53.4:${P}`, '--port', String(P), '--config', configs[0]!.file, '--timeout', '2s']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, new RegExp(`^error +serial +gslb\\.example\\.com +the nodes serve different SOA serials: ${SERIAL} on 127\\.0\\.53\\.2:${P}; ${SERIAL + 1} on 127\\.0\\.53\\.3:${P}$`, 'm'), show(r));
    assert.match(r.stdout, new RegExp(`^warning +config-serial +gslb\\.example\\.com +.* has serial ${SERIAL}, 127\\.0\\.53\\.3:${P} serves ${SERIAL + 1}: reload`, 'm'), show(r));
    assert.deepEqual(lines(r.stdout).filter((l) => l.status !== 'ok').map((l) => `${l.status} ${l.check}`), ['error serial', 'warning config-serial'], show(r));
  });

  await t.test('one node down: an error for it, within the bound', async () => {
    const e = await b.srv.stop();
    assert.equal(e.code, 0);
    const r = await checkDelegation([ZONE, '--parent', `127.0.53.4:${P}`, '--port', String(P), '--timeout', '1s']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, new RegExp(`^error +reach +127\\.0\\.53\\.3:${P} +no answer over UDP \\(port unreachable \\(ECONNREFUSED\\)\\) nor TCP \\(connection refused \\(ECONNREFUSED\\)\\)`, 'm'), show(r));
    assert.match(r.stdout, new RegExp(`^error +lame +ns2\\.gslb\\.example\\.com 127\\.0\\.53\\.3:${P} +lame delegation`, 'm'), show(r));
    assert.deepEqual(lines(r.stdout).filter((l) => l.status !== 'ok').map((l) => `${l.status} ${l.check}`), ['error lame', 'error reach'], show(r));
    assert.match(r.stdout, new RegExp(`^ok +soa-udp +127\\.0\\.53\\.2:${P} +aa, serial ${SERIAL}$`, 'm'), show(r));
  });

  await t.test('usage errors exit 2', async () => {
    const r = await checkDelegation(['--parent', 'ns1.example.com', ZONE]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /^gridsteer: "ns1\.example\.com" is not an IP address\[:port\]/, show(r));
  });
});
