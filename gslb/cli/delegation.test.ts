import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import {
  buildReport,
  evaluate,
  gather,
  parseEndpoint,
  parseResolvConf,
  parseZone,
  readReferral,
  renderReport,
  runCheckDelegation,
  type Check,
  type DelegationIo,
  type Expected,
  type GatherOptions,
  type Outcome,
  type QueryFn,
  type Rec,
  type Reply,
} from './delegation.js';
import { dnsQuery, formatEndpoint, normName, type QType, type QueryOptions } from './dns-client.js';

const Z = 'gslb.example.com';
const NS1 = 'ns1.gslb.example.com';
const NS2 = 'ns2.gslb.example.com';
const NS3 = 'ns3.gslb.example.com';

// ---------------------------------------------------------------------------------------
// A fake network: each server is a function of the question.

type Handler = (name: string, type: QType, o: QueryOptions) => Outcome;

const rr = (name: string, type: string, data: string, serial?: number): Rec => ({ name, type, ttl: 300, data, ...(serial === undefined ? {} : { serial }) });
const reply = (o: QueryOptions, p: Partial<Reply>): Outcome => ({
  ok: true,
  reply: { transport: o.transport, rcode: 'NOERROR', aa: false, tc: false, ra: false, answer: [], authority: [], additional: [], opt: o.edns ? { udpPayload: 1232, version: 0 } : null, ...p },
});
const unreachable: Outcome = { ok: false, error: 'port unreachable (ECONNREFUSED)' };

function world(servers: Record<string, Handler>): QueryFn & { calls: string[] } {
  const calls: string[] = [];
  const q = (async (ep, name, type, o) => {
    const k = formatEndpoint(ep);
    calls.push(`${k} ${type} ${name} ${o.transport}${o.edns ? '+edns' : ''}${o.rd ? '+rd' : ''}`);
    const h = servers[k];
    return h ? h(normName(name), type, o) : o.transport === 'tcp' ? { ok: false, error: 'connection refused (ECONNREFUSED)' } : unreachable;
  }) as QueryFn & { calls: string[] };
  q.calls = calls;
  return q;
}

interface ParentSpec {
  ns?: string[];
  glue?: Record<string, string[]>;
  mode?: 'referral' | 'aa' | 'refused' | 'nxdomain' | 'nodata' | 'upward';
}

/** A server of example.com that delegates gslb.example.com. */
function parent(p: ParentSpec = {}): Handler {
  const ns = p.ns ?? [NS1, NS2];
  const glue = p.glue ?? { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'] };
  return (name, type, o) => {
    const additional = Object.entries(glue).flatMap(([n, as]) => as.map((a) => rr(n, a.includes(':') ? 'AAAA' : 'A', a)));
    const nsRecs = ns.map((n) => rr(Z, 'NS', n));
    switch (p.mode ?? 'referral') {
      case 'refused':
        return reply(o, { rcode: 'REFUSED' });
      case 'nxdomain':
        return reply(o, { rcode: 'NXDOMAIN', aa: true, authority: [rr('example.com', 'SOA', 'ns.example.com hostmaster.example.com 1', 1)] });
      case 'nodata':
        return reply(o, { aa: true, authority: [rr('example.com', 'SOA', 'ns.example.com hostmaster.example.com 1', 1)] });
      case 'aa':
        return reply(o, { aa: true, answer: nsRecs, additional });
      case 'upward':
        return reply(o, { authority: [rr('com', 'NS', 'a.gtld-servers.net')] });
      default:
        return name === Z && type === 'NS' ? reply(o, { authority: nsRecs, additional }) : reply(o, { rcode: 'REFUSED' });
    }
  };
}

interface NodeSpec {
  ns?: string[];
  hosts?: Record<string, string[]>;
  serial?: number;
  edns?: 'ok' | 'no-opt' | 'formerr';
  aa?: boolean;
  rcode?: string;
  tcp?: boolean;
  names?: Record<string, { a?: string[]; aaaa?: string[]; rcode?: string }>;
}

/** A GridSteer node serving gslb.example.com. */
function node(s: NodeSpec = {}): Handler {
  const ns = s.ns ?? [NS1, NS2];
  const hosts = s.hosts ?? { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'] };
  const names = s.names ?? { 'api.gslb.example.com': { a: ['192.0.2.10'], aaaa: ['2001:db8::10'] } };
  const soa = rr(Z, 'SOA', `${NS1} hostmaster.example.com ${s.serial ?? 7}`, s.serial ?? 7);
  return (name, type, o) => {
    if (o.transport === 'tcp' && s.tcp === false) return { ok: false, error: 'connection refused (ECONNREFUSED)' };
    if (o.edns && s.edns === 'formerr') return reply(o, { rcode: 'FORMERR', opt: null });
    const base: Partial<Reply> = { aa: s.aa ?? true, ...(s.rcode ? { rcode: s.rcode } : {}), ...(s.edns === 'no-opt' ? { opt: null } : {}) };
    if (s.rcode) return reply(o, base);
    if (name === Z) return reply(o, { ...base, answer: type === 'SOA' ? [soa] : type === 'NS' ? ns.map((n) => rr(Z, 'NS', n)) : [] });
    const addrs = hosts[name] ?? (names[name] ? (type === 'A' ? names[name]!.a : names[name]!.aaaa) ?? [] : undefined);
    if (names[name]?.rcode) return reply(o, { ...base, rcode: names[name]!.rcode! });
    if (addrs === undefined) return reply(o, { ...base, rcode: 'NXDOMAIN', authority: [soa] });
    const want = addrs.filter((a) => (type === 'AAAA') === a.includes(':'));
    return reply(o, { ...base, answer: want.map((a) => rr(name, type, a)), authority: want.length === 0 ? [soa] : [] });
  };
}

const P = '127.0.0.4:53';
const N1 = '127.0.0.2:53';
const N2 = '127.0.0.3:53';
const R = '127.0.0.53:53';

function opts(o: Partial<GatherOptions> = {}): GatherOptions {
  return {
    zone: Z,
    parents: [{ host: '127.0.0.4', port: 53 }],
    resolvers: () => [{ host: '127.0.0.53', port: 53 }],
    nodes: [],
    port: 53,
    names: ['api.gslb.example.com'],
    extraNsNames: [],
    timeoutMs: 1000,
    ...o,
  };
}

/** The checks that are not ok, as `status check subject`. */
const notOk = (cs: Check[]) => cs.filter((c) => c.status !== 'ok').map((c) => `${c.status} ${c.check} ${c.subject}`);
const find = (cs: Check[], check: string, subject?: string) => {
  const c = cs.find((x) => x.check === check && (subject === undefined || x.subject === subject));
  assert.ok(c, `no ${check} check${subject ? ` for ${subject}` : ''} in:\n${cs.map((x) => `${x.status} ${x.check} ${x.subject}: ${x.message}`).join('\n')}`);
  return c;
};

interface Case {
  name: string;
  servers: Record<string, Handler>;
  opts?: Partial<GatherOptions>;
  /** Exactly the checks that are not ok. */
  notOk: string[];
  /** check/subject → a pattern its message must match. */
  messages?: [string, string | undefined, RegExp][];
}

const healthy = () => ({ [P]: parent(), [N1]: node(), [N2]: node() });

const CASES: Case[] = [
  {
    name: 'consistent: every check ok',
    servers: healthy(),
    notOk: [],
    messages: [
      ['referral', `${P}`, /^referral \(NS in authority, aa=0\) to ns1\.gslb\.example\.com, ns2\.gslb\.example\.com; glue for ns1\.gslb\.example\.com, ns2\.gslb\.example\.com$/],
      ['ns-set', Z, /the parent and the nodes agree: ns1\.gslb\.example\.com, ns2\.gslb\.example\.com/],
      ['glue', NS2, /^parent glue 127\.0\.0\.3 = the nodes' 127\.0\.0\.3$/],
      ['lame', `${NS1} ${N1}`, /answers authoritatively/],
      ['soa-udp', N1, /^aa, serial 7$/],
      ['soa-tcp', N2, /^aa, serial 7$/],
      ['edns', N1, /OPT in the reply \(version 0, UDP payload 1232\)/],
      ['names', N1, /^api\.gslb\.example\.com: A 1 address, AAAA 1 address$/],
      ['serial', Z, /all 2 nodes serve serial 7/],
    ],
  },
  {
    name: 'the parent lists an NS the nodes do not (lame, nothing there)',
    servers: { [P]: parent({ ns: [NS1, NS2, NS3], glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'], [NS3]: ['127.0.0.9'] } }), [N1]: node(), [N2]: node() },
    notOk: [`error ns-set ${Z}`, `error glue ${NS3}`, `error lame ${NS3} 127.0.0.9:53`, 'error reach 127.0.0.9:53'],
    messages: [
      ['ns-set', Z, /only at the parent: ns3\.gslb\.example\.com/],
      ['lame', `${NS3} 127.0.0.9:53`, /^lame delegation: listed at the parent, but no answer: port unreachable/],
      ['glue', NS3, /^parent glue 127\.0\.0\.9, the nodes serve \(none\)$/],
    ],
  },
  {
    name: 'the parent lists an NS whose address answers, but not authoritatively (REFUSED)',
    servers: { ...healthy(), [P]: parent({ ns: [NS1, NS2, NS3], glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'], [NS3]: ['127.0.0.9'] } }), '127.0.0.9:53': node({ rcode: 'REFUSED', aa: false }) },
    notOk: [`error ns-set ${Z}`, `error glue ${NS3}`, `error lame ${NS3} 127.0.0.9:53`, 'error ns 127.0.0.9:53', 'error soa-udp 127.0.0.9:53', 'error soa-tcp 127.0.0.9:53', 'error edns 127.0.0.9:53', 'error names 127.0.0.9:53'],
    messages: [['lame', `${NS3} 127.0.0.9:53`, /^lame delegation: listed at the parent, but REFUSED without aa: not authoritative/]],
  },
  {
    name: 'wrong glue: names the NS name and both address sets',
    servers: { ...healthy(), [P]: parent({ glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.99'] } }) },
    notOk: [`error glue ${NS2}`, `error lame ${NS2} 127.0.0.99:53`, 'error reach 127.0.0.99:53'],
    messages: [['glue', NS2, /^parent glue 127\.0\.0\.99, the nodes serve 127\.0\.0\.3$/]],
  },
  {
    name: 'no glue for an in-zone NS name',
    servers: { ...healthy(), [P]: parent({ glue: { [NS1]: ['127.0.0.2'] } }) },
    notOk: [`error glue ${NS2}`, `error lame ${NS2}`],
    messages: [
      ['glue', NS2, /^no glue at the parent: ns2\.gslb\.example\.com is inside gslb\.example\.com.*the nodes serve 127\.0\.0\.3$/],
      ['lame', NS2, /no address to ask: .*no glue/],
    ],
  },
  {
    name: 'a node that is down',
    servers: { [P]: parent(), [N1]: node() },
    notOk: [`error lame ${NS2} ${N2}`, `error reach ${N2}`],
    messages: [['reach', N2, /^no answer over UDP \(port unreachable \(ECONNREFUSED\)\) nor TCP \(connection refused \(ECONNREFUSED\)\)/]],
  },
  {
    name: 'differing SOA serials',
    servers: { ...healthy(), [N2]: node({ serial: 8 }) },
    notOk: [`error serial ${Z}`],
    messages: [['serial', Z, /^the nodes serve different SOA serials: 7 on 127\.0\.0\.2:53; 8 on 127\.0\.0\.3:53$/]],
  },
  {
    name: 'the nodes disagree on the NS set',
    servers: { ...healthy(), [N2]: node({ ns: [NS1, NS2, NS3], hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'], [NS3]: ['127.0.0.9'] } }) },
    notOk: [`error ns-set ${Z}`],
    messages: [['ns-set', Z, /^the nodes disagree: 127\.0\.0\.2:53 serve ns1\.gslb\.example\.com, ns2\.gslb\.example\.com; 127\.0\.0\.3:53 serve ns1\.gslb\.example\.com, ns2\.gslb\.example\.com, ns3\.gslb\.example\.com$/]],
  },
  {
    name: 'the nodes agree on an NS set the parent does not have',
    servers: { ...healthy(), [N1]: node({ ns: [NS1] }), [N2]: node({ ns: [NS1] }) },
    notOk: [`error ns-set ${Z}`],
    messages: [['ns-set', Z, /only at the parent: ns2\.gslb\.example\.com$/]],
  },
  {
    name: 'the nodes disagree on an NS address',
    servers: { ...healthy(), [N2]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.33'] } }) },
    notOk: [`error glue ${NS2}`],
    messages: [['glue', NS2, /^parent glue 127\.0\.0\.3; the nodes disagree: 127\.0\.0\.2:53 serve 127\.0\.0\.3; 127\.0\.0\.3:53 serve 127\.0\.0\.33$/]],
  },
  {
    name: 'the parent answers authoritatively (it serves the child zone too): a warning',
    servers: { ...healthy(), [P]: parent({ mode: 'aa' }) },
    notOk: [`warning referral ${P}`],
    messages: [['referral', P, /answers NS gslb\.example\.com authoritatively \(aa=1\) instead of referring/]],
  },
  {
    name: 'the parent refuses: no NS set, so no node is found',
    servers: { ...healthy(), [P]: parent({ mode: 'refused' }) },
    notOk: [`error referral ${P}`],
    messages: [['referral', P, /^REFUSED: it does not serve the parent zone$/]],
  },
  {
    name: 'the parent has no such name',
    servers: { ...healthy(), [P]: parent({ mode: 'nxdomain' }) },
    opts: { nodes: [{ host: '127.0.0.2', port: 53 }] },
    notOk: [`error referral ${P}`],
    messages: [['referral', P, /^NXDOMAIN: the parent zone has no gslb\.example\.com/]],
  },
  {
    name: 'the parent has the name but no NS there',
    servers: { ...healthy(), [P]: parent({ mode: 'nodata' }) },
    notOk: [`error referral ${P}`],
    messages: [['referral', P, /^no delegation: NODATA with the SOA of example\.com/]],
  },
  {
    name: 'an upward referral: not a parent server',
    servers: { ...healthy(), [P]: parent({ mode: 'upward' }) },
    notOk: [`error referral ${P}`],
    messages: [['referral', P, /^a referral to com, not to gslb\.example\.com/]],
  },
  {
    name: 'a node without EDNS (no OPT) and one that FORMERRs it',
    servers: { ...healthy(), [N1]: node({ edns: 'no-opt' }), [N2]: node({ edns: 'formerr' }) },
    notOk: [`error edns ${N1}`, `error edns ${N2}`],
    messages: [
      ['edns', N1, /^no OPT record in the reply/],
      ['edns', N2, /^FORMERR to a query with EDNS/],
    ],
  },
  {
    name: 'a node that does not answer over TCP',
    servers: { ...healthy(), [N2]: node({ tcp: false }) },
    notOk: [`error soa-tcp ${N2}`],
    messages: [['soa-tcp', N2, /^no answer: connection refused/]],
  },
  {
    name: 'a node answering without aa (a referral, not the zone)',
    servers: { ...healthy(), [N2]: node({ aa: false }) },
    notOk: [`error ns ${N2}`, `error lame ${NS2} ${N2}`, `error soa-udp ${N2}`, `error soa-tcp ${N2}`, `error names ${N2}`],
    messages: [['soa-udp', N2, /^answer without aa: not authoritative for gslb\.example\.com \(lame\)$/]],
  },
  {
    name: 'steered names: SERVFAIL is an error, NODATA for both families a warning',
    servers: { ...healthy(), [N1]: node({ names: { 'api.gslb.example.com': { rcode: 'SERVFAIL' } } }), [N2]: node({ names: { 'api.gslb.example.com': {} } }) },
    notOk: [`error names ${N1}`, `warning names ${N2}`],
    messages: [
      ['names', N1, /^api\.gslb\.example\.com: A SERVFAIL, AAAA SERVFAIL$/],
      ['names', N2, /A NODATA, AAAA NODATA, no address of either family/],
    ],
  },
  {
    name: 'a --node the parent does not list: a warning',
    servers: { ...healthy(), '127.0.0.5:5353': node() },
    opts: { nodes: [{ host: '127.0.0.5', port: 5353 }, { host: '127.0.0.2', port: 53 }] },
    notOk: ['warning listed 127.0.0.5:5353'],
    messages: [
      ['listed', '127.0.0.5:5353', /^not listed at the parent: no NS name there has the address 127\.0\.0\.5/],
      ['listed', N1, /^listed at the parent as ns1\.gslb\.example\.com$/],
    ],
  },
  {
    name: '--node on another port stands for the NS address it shares',
    servers: { [P]: parent(), '127.0.0.2:5353': node(), [N2]: node() },
    opts: { nodes: [{ host: '127.0.0.2', port: 5353 }] },
    notOk: [],
    messages: [['lame', `${NS1} 127.0.0.2:5353`, /answers authoritatively/]],
  },
  {
    name: 'the parent servers disagree',
    servers: { ...healthy(), '127.0.0.14:53': parent({ ns: [NS1] }) },
    opts: { parents: [{ host: '127.0.0.4', port: 53 }, { host: '127.0.0.14', port: 53 }] },
    notOk: [`error parent-agree ${Z}`],
    messages: [['parent-agree', Z, /^the parent servers disagree: 127\.0\.0\.4:53: NS ns1\.gslb\.example\.com, ns2\.gslb\.example\.com; .* \| 127\.0\.0\.14:53: NS ns1\.gslb\.example\.com; glue/]],
  },
  {
    name: 'an NS name outside the zone: its address from the resolver, no glue check',
    servers: {
      [P]: parent({ ns: [NS1, 'ns.other.example'], glue: { [NS1]: ['127.0.0.2'] } }),
      [N1]: node({ ns: [NS1, 'ns.other.example'] }),
      '127.0.0.7:53': node({ ns: [NS1, 'ns.other.example'] }),
      [R]: (name, type, o) => reply(o, { ra: true, answer: name === 'ns.other.example' && type === 'A' ? [rr(name, 'A', '127.0.0.7')] : [] }),
    },
    notOk: [],
    messages: [['lame', 'ns.other.example 127.0.0.7:53', /answers authoritatively/]],
  },
  {
    name: '-4 with an NS name that has only an IPv6 address: a warning, not checked',
    servers: { ...healthy(), [P]: parent({ glue: { [NS1]: ['127.0.0.2'], [NS2]: ['::1'] } }), [N2]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['::1'] } }), [N1]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['::1'] } }) },
    opts: { family: '-4' },
    notOk: [`warning lame ${NS2}`],
    messages: [['lame', NS2, /^not checked: its only addresses \(::1\) are IPv6 and -4 was given$/]],
  },
];

for (const c of CASES) {
  test(`evaluate: ${c.name}`, async () => {
    const q = world(c.servers);
    const { inputs } = await gather(q, opts(c.opts));
    const checks = evaluate(inputs);
    const dump = checks.map((x) => `${x.status} ${x.check} ${x.subject}: ${x.message}`).join('\n');
    assert.deepEqual(notOk(checks).sort(), [...c.notOk].sort(), dump);
    for (const [check, subject, re] of c.messages ?? []) assert.match(find(checks, check, subject).message, re, dump);
  });
}

test('evaluate: RD=0 to authoritative servers; the parent with EDNS; SOA over UDP, TCP and with EDNS; only the edns check carries an OPT to the nodes', async () => {
  const q = world(healthy());
  await gather(q, opts());
  assert.ok(q.calls.includes(`${P} NS ${Z} udp+edns`), q.calls.join('\n'));
  for (const n of [N1, N2]) {
    for (const call of [`${n} SOA ${Z} udp`, `${n} SOA ${Z} tcp`, `${n} SOA ${Z} udp+edns`, `${n} NS ${Z} udp`, `${n} A ${NS1} udp`, `${n} AAAA ${NS2} udp`, `${n} A api.gslb.example.com udp`]) {
      assert.ok(q.calls.includes(call), `${call} not in\n${q.calls.join('\n')}`);
    }
  }
  assert.ok(!q.calls.some((c) => c.endsWith('+rd')), 'no RD to authoritative servers');
});

// ---------------------------------------------------------------------------------------
// --config: the file against the parent (error) and the nodes (warning)

const expected = (x: Partial<Expected> = {}): Expected => ({ file: 'gridsteer.yaml', ns: [NS1, NS2], glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'] }, serial: 7, ...x });

const CONFIG_CASES: { name: string; servers: Record<string, Handler>; expected: Expected; notOk: string[]; message?: RegExp }[] = [
  { name: 'all as configured', servers: healthy(), expected: expected(), notOk: [] },
  { name: 'the parent lists another NS set than the file', servers: healthy(), expected: expected({ ns: [NS1, NS2, NS3] }), notOk: [`error config-ns ${Z}`], message: /^the parent lists ns1\.gslb\.example\.com, ns2\.gslb\.example\.com, gridsteer\.yaml has ns1\.gslb\.example\.com, ns2\.gslb\.example\.com, ns3\.gslb\.example\.com$/ },
  { name: 'parent glue differs from the file', servers: healthy(), expected: expected({ glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.30'] } }), notOk: [`error config-glue ${NS2}`], message: /^parent glue 127\.0\.0\.3, gridsteer\.yaml has 127\.0\.0\.30$/ },
  { name: 'the nodes serve an older serial: not reloaded', servers: healthy(), expected: expected({ serial: 8 }), notOk: [`warning config-serial ${Z}`], message: /gridsteer\.yaml has serial 8, 127\.0\.0\.2:53 serves 7, 127\.0\.0\.3:53 serves 7: reload/ },
  {
    name: 'the nodes serve other addresses than the file and the parent agree on',
    servers: { [P]: parent({ glue: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3'] } }), [N1]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3', '::1'] } }), [N2]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.3', '::1'] } }) },
    expected: expected(),
    notOk: [`error glue ${NS2}`, `warning config-glue ${NS2}`],
    message: /^the nodes serve 127\.0\.0\.3, ::1, gridsteer\.yaml has 127\.0\.0\.3: a node not reloaded\?$/,
  },
];

for (const c of CONFIG_CASES) {
  test(`evaluate --config: ${c.name}`, async () => {
    const { inputs } = await gather(world(c.servers), opts({ expected: c.expected }));
    const checks = evaluate(inputs);
    const dump = checks.map((x) => `${x.status} ${x.check} ${x.subject}: ${x.message}`).join('\n');
    assert.deepEqual(notOk(checks).sort(), [...c.notOk].sort(), dump);
    if (c.message) assert.match(checks.find((x) => x.status !== 'ok' && x.check.startsWith('config'))!.message, c.message, dump);
    assert.ok(checks.some((x) => x.check === 'config-ns') && checks.some((x) => x.check === 'config-serial'), dump);
  });
}

// ---------------------------------------------------------------------------------------
// Finding the parent through a resolver

/** A resolver that knows example.com (NS ns.example.com 127.0.0.4) and nothing of b.example.com. */
function resolver(): Handler {
  const soa = rr('example.com', 'SOA', 'ns.example.com hostmaster.example.com 1', 1);
  return (name, type, o) => {
    if (name === 'example.com' && type === 'NS') return reply(o, { ra: true, answer: [rr('example.com', 'NS', 'ns.example.com')] });
    if (name === 'ns.example.com' && type === 'A') return reply(o, { ra: true, answer: [rr('ns.example.com', 'A', '127.0.0.4')] });
    if (name === 'ns.example.com') return reply(o, { ra: true, authority: [soa] });
    if (name === 'b.example.com') return reply(o, { ra: true, rcode: 'NXDOMAIN', authority: [soa] });
    return reply(o, { ra: true, rcode: 'SERVFAIL' });
  };
}

test('discovery: the NS set one label up; a name that is no zone leads to the SOA owner', async () => {
  const q = world({ ...healthy(), [R]: resolver() });
  const { inputs, parentZone } = await gather(q, opts({ parents: [] }));
  assert.equal(parentZone, 'example.com');
  assert.deepEqual(notOk(evaluate(inputs)), []);
  assert.match(find(evaluate(inputs), 'parent').message, /^the parent zone is example\.com: ns\.example\.com 127\.0\.0\.4 \(through the resolver 127\.0\.0\.53:53\)$/);
  assert.ok(q.calls.includes(`${R} NS example.com udp+edns+rd`), q.calls.join('\n'));

  // a.b.example.com: b.example.com does not exist, its SOA names example.com.
  const q2 = world({ [R]: resolver(), [P]: (name, type, o) => reply(o, { rcode: 'NXDOMAIN', aa: true }) });
  const g2 = await gather(q2, opts({ zone: 'a.b.example.com', parents: [] }));
  assert.equal(g2.parentZone, 'example.com');
  assert.match(find(evaluate(g2.inputs), 'referral').message, /^NXDOMAIN: the parent zone has no a\.b\.example\.com/);
  assert.deepEqual(q2.calls.filter((c) => c.startsWith(R)).slice(0, 2), [`${R} NS b.example.com udp+edns+rd`, `${R} NS example.com udp+edns+rd`]);
});

test('discovery: a resolver that does not answer is an error naming it, with the --parent hint', async () => {
  const { inputs } = await gather(world({}), opts({ parents: [] }));
  const checks = evaluate(inputs);
  assert.deepEqual(notOk(checks), [`error parent ${Z}`]);
  assert.match(find(checks, 'parent').message, /^cannot find the parent zone's servers: the resolver \(127\.0\.0\.53:53\) gave no answer for NS example\.com: port unreachable.*; give them with --parent$/);
});

// ---------------------------------------------------------------------------------------
// Parsing

test('parseEndpoint, parseZone, parseResolvConf: accepted and refused forms', () => {
  const ok: [string, string][] = [
    ['192.0.2.53', '192.0.2.53:53'],
    ['192.0.2.53:5353', '192.0.2.53:5353'],
    ['2001:db8::53', '[2001:db8::53]:53'],
    ['[2001:DB8:0::53]:5353', '[2001:db8::53]:5353'],
    ['[::1]', '[::1]:53'],
  ];
  for (const [t, want] of ok) assert.equal(formatEndpoint(parseEndpoint(t, 53)), want, t);
  for (const t of ['ns1.example.com', '192.0.2.53:0', '192.0.2.53:70000', '[192.0.2.53]:53x', '', '1.2.3:53']) assert.throws(() => parseEndpoint(t, 53), /IP address|port/, t);
  assert.equal(parseZone('GSLB.Example.COM.'), 'gslb.example.com');
  for (const t of ['.', '', 'a..b', 'with space.com', `${'x'.repeat(64)}.com`]) assert.throws(() => parseZone(t), /not a zone name/, t);
  assert.deepEqual(parseResolvConf('# x\nsearch example.com\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver bogus\noptions edns0\n'), [
    { host: '10.0.0.2', port: 53 },
    { host: 'fe80::1', port: 53 },
  ]);
  assert.deepEqual(parseResolvConf(''), [{ host: '127.0.0.1', port: 53 }]);
});

test('readReferral: a reply with no answer at all, an error and a resolver-style answer', () => {
  assert.match(readReferral(Z, { ok: false, error: 'no reply within 3s' }).message, /^no answer: no reply within 3s$/);
  const o: QueryOptions = { transport: 'udp', edns: false, rd: false, timeoutMs: 1 };
  assert.equal(readReferral(Z, reply(o, { rcode: 'SERVFAIL' })).status, 'error');
  const v = readReferral(Z, reply(o, { answer: [rr(Z, 'NS', NS1)] }));
  assert.equal(v.status, 'warning');
  assert.match(v.message, /without aa: a resolver rather than a parent server/);
  assert.deepEqual(v.ns, [NS1]);
  assert.match(readReferral(Z, reply(o, {})).message, /^neither a referral nor an answer/);
});

// ---------------------------------------------------------------------------------------
// The command: options, exit codes, output

function io(servers: Record<string, Handler>, files: Record<string, string> = {}): DelegationIo & { stdout: string; stderr: string; calls: string[] } {
  const q = world(servers);
  const o = {
    stdout: '',
    stderr: '',
    calls: q.calls,
    out: (s: string) => void (o.stdout += s),
    err: (s: string) => void (o.stderr += s),
    query: q,
    readFile: (p: string) => {
      if (p in files) return files[p]!;
      throw new Error(`ENOENT ${p}`);
    },
  };
  return o;
}

test('runCheckDelegation: exit 0 with the report; 1 on an error; --json', async () => {
  const o = io(healthy());
  assert.equal(await runCheckDelegation([Z, '--parent', '127.0.0.4', '--name', 'api.gslb.example.com'], o), 0, o.stderr);
  assert.match(o.stdout, /^check-delegation gslb\.example\.com\n {2}parent servers {2}127\.0\.0\.4:53\n {2}nodes {11}127\.0\.0\.2:53 \(ns1\.gslb\.example\.com\), 127\.0\.0\.3:53 \(ns2\.gslb\.example\.com\)\n\n/);
  assert.match(o.stdout, /^ok {2}referral {2}127\.0\.0\.4:53 +referral \(NS in authority, aa=0\)/m);
  assert.match(o.stdout, /\n0 errors, 0 warnings, 15 ok\n$/);

  const bad = io({ [P]: parent(), [N1]: node() });
  assert.equal(await runCheckDelegation([Z, '--parent', '127.0.0.4', '--json'], bad), 1);
  const j = JSON.parse(bad.stdout) as ReturnType<typeof buildReport>;
  assert.equal(j.zone, Z);
  assert.deepEqual(j.summary, { ok: j.checks.length - 2, warning: 0, error: 2 });
  assert.deepEqual(
    j.checks.filter((c) => c.status === 'error').map((c) => c.check),
    ['lame', 'reach'],
  );
  assert.deepEqual(j.nodes, [
    { server: N1, explicit: false, nsNames: [NS1] },
    { server: N2, explicit: false, nsNames: [NS2] },
  ]);
});

test('runCheckDelegation: the resolvers of /etc/resolv.conf when neither --parent nor --resolver is given', async () => {
  const o = io({ ...healthy(), [R]: resolver() }, { '/etc/resolv.conf': 'nameserver 127.0.0.53\n' });
  assert.equal(await runCheckDelegation([Z], o), 0, o.stdout + o.stderr);
  assert.match(o.stdout, /^check-delegation gslb\.example\.com \(delegated from example\.com\)$/m);
  const r = io({ ...healthy(), '127.0.0.60:5300': resolver() });
  assert.equal(await runCheckDelegation([Z, '--resolver', '127.0.0.60:5300'], r), 0, r.stdout);
  assert.ok(!r.calls.some((c) => c.startsWith(R)));
});

test('runCheckDelegation --nodes-only: only the listed nodes are asked and compared with each other', async () => {
  const o = io({ ...healthy(), [R]: resolver() }, { '/etc/resolv.conf': 'nameserver 127.0.0.53\n' });
  assert.equal(await runCheckDelegation([Z, '--nodes-only', '--node', N1, '--node', N2, '--name', 'api.gslb.example.com'], o), 0, o.stdout + o.stderr);
  assert.ok(o.calls.length > 0 && o.calls.every((c) => c.startsWith(`${N1} `) || c.startsWith(`${N2} `)), `only the nodes were asked:\n${o.calls.join('\n')}`);
  assert.match(o.stdout, /^warning +parent +gslb\.example\.com +not asked \(--nodes-only\)/m);
  assert.match(o.stdout, /^ {2}parent servers {2}\(not asked: --nodes-only\)$/m);
  assert.match(o.stdout, /^ok +ns-set +gslb\.example\.com +the 2 nodes agree: ns1\.gslb\.example\.com, ns2\.gslb\.example\.com/m);
  assert.match(o.stdout, /^ok +ns-addresses +ns1\.gslb\.example\.com +the nodes serve 127\.0\.0\.2/m);
  assert.match(o.stdout, /^ok +serial +gslb\.example\.com +all 2 nodes serve serial 7/m);
  assert.doesNotMatch(o.stdout, /^\w+ +(referral|parent-agree|lame|listed|glue) /m);

  // Nodes that disagree: the serial, the NS set, an NS name's address.
  const serial = io({ [N1]: node(), [N2]: node({ serial: 8 }) });
  assert.equal(await runCheckDelegation([Z, '--nodes-only', '--node', N1, '--node', N2], serial), 1);
  assert.match(serial.stdout, /^error +serial .*7 on 127\.0\.0\.2:53; 8 on 127\.0\.0\.3:53/m);
  const nsSet = io({ [N1]: node(), [N2]: node({ ns: [NS1, NS3], hosts: { [NS1]: ['127.0.0.2'], [NS3]: ['127.0.0.9'] } }) });
  assert.equal(await runCheckDelegation([Z, '--nodes-only', '--node', N1, '--node', N2], nsSet), 1);
  assert.match(nsSet.stdout, /^error +ns-set .*the nodes disagree/m);
  const addr = io({ [N1]: node(), [N2]: node({ hosts: { [NS1]: ['127.0.0.2'], [NS2]: ['127.0.0.99'] } }) });
  assert.equal(await runCheckDelegation([Z, '--nodes-only', '--node', N1, '--node', N2], addr), 1);
  assert.match(addr.stdout, /^error +ns-addresses +ns2\.gslb\.example\.com +the nodes disagree/m);
  // One node on loopback, as with npm start.
  const one = io({ '127.0.0.1:5353': node() });
  assert.equal(await runCheckDelegation([Z, '--nodes-only', '--node', '127.0.0.1:5353'], one), 0, one.stdout);
  assert.match(one.stdout, /the one node that answered serves ns1/);
});

test('runCheckDelegation: usage errors exit 2 and ask nothing; --help exits 0', async () => {
  for (const args of [
    [],
    [Z, 'extra'],
    ['not a zone'],
    [Z, '--parent', 'ns1.example.com'],
    [Z, '--node', '1.2.3.4:0'],
    [Z, '--port', '0'],
    [Z, '--port', 'x'],
    [Z, '--timeout', 'soon'],
    [Z, '--timeout', '0'],
    [Z, '--timeout', '2m'],
    [Z, '-4', '-6'],
    [Z, '--bogus'],
    [Z, '--name', 'a..b'],
    [Z, '--nodes-only'],
    [Z, '--nodes-only', '--node', '127.0.0.2', '--parent', '127.0.0.4'],
    [Z, '--nodes-only', '--node', '127.0.0.2', '--resolver', '127.0.0.53'],
  ]) {
    const o = io(healthy());
    assert.equal(await runCheckDelegation(args, o), 2, `${args.join(' ')}: ${o.stderr}`);
    assert.equal(o.calls.length, 0, args.join(' '));
    assert.match(o.stderr, /^gridsteer: .*\nusage: gridsteer check-delegation/, args.join(' '));
  }
  const h = io(healthy());
  assert.equal(await runCheckDelegation(['--help'], h), 0);
  assert.match(h.stdout, /^usage: gridsteer check-delegation <zone>/);
});

test('renderReport: columns, the summary line', () => {
  const r = buildReport({ zone: Z, parents: [], nsAddresses: [], nodes: [], discovery: { status: 'error', message: 'cannot find it' } }, null);
  assert.equal(renderReport(r), `check-delegation ${Z}\n  parent servers  (none)\n  nodes           (none)\n\nerror  parent  ${Z}  cannot find it\n\n1 error, 0 warnings, 0 ok\n`);
});

// ---------------------------------------------------------------------------------------
// The real transport (dns-client.ts) against sockets that misbehave: bounded, never throws

test('dnsQuery: silent UDP and TCP servers time out within the bound; a closed port fails at once', async (t) => {
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
  const tcp = net.createServer(() => {});
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
  t.after(() => {
    udp.close();
    tcp.close();
  });
  let udpSeen = 0;
  udp.on('message', () => udpSeen++);
  const o: QueryOptions = { transport: 'udp', edns: true, rd: false, timeoutMs: 200, tries: 2 };
  const u = await dnsQuery({ host: '127.0.0.1', port: udp.address().port }, Z, 'SOA', o);
  assert.deepEqual(u, { ok: false, error: 'no reply within 200ms' });
  assert.equal(udpSeen, 2, 'UDP is tried twice');
  const tc = await dnsQuery({ host: '127.0.0.1', port: (tcp.address() as net.AddressInfo).port }, Z, 'SOA', { ...o, transport: 'tcp' });
  assert.deepEqual(tc, { ok: false, error: 'no reply within 200ms over TCP' });
  // A port nobody listens on: ICMP port unreachable on the connected socket, no second try.
  const closed = dgram.createSocket('udp4');
  await new Promise<void>((r) => closed.bind(0, '127.0.0.1', () => r()));
  const port = closed.address().port;
  closed.close();
  assert.deepEqual(await dnsQuery({ host: '127.0.0.1', port }, Z, 'SOA', { ...o, timeoutMs: 5000 }), { ok: false, error: 'port unreachable (ECONNREFUSED)' });
});

test('dnsQuery: a reply is decoded with dns2 (AA, OPT, SOA serial), over UDP and TCP, IPv4 and IPv6', async (t) => {
  const { Packet } = await import('dns2');
  const answer = (buf: Buffer): Buffer => {
    const q = Packet.parse(buf);
    const r = Packet.createResponseFromRequest(q);
    r.header.aa = 1;
    r.answers.push({ name: Z, type: Packet.TYPE.SOA, class: Packet.CLASS.IN, ttl: 60, primary: NS1, admin: 'hostmaster.example.com', serial: 42, refresh: 1, retry: 1, expiration: 1, minimum: 1 } as never);
    if (q.additionals.some((x) => x.type === 41)) r.additionals.push(Packet.Resource.EDNS([]));
    return r.toBuffer();
  };
  const servers: { close(): void }[] = [];
  t.after(() => servers.forEach((s) => s.close()));
  for (const host of ['127.0.0.1', '::1']) {
    const udp = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    udp.on('message', (m, rinfo) => udp.send(answer(m), rinfo.port, rinfo.address));
    await new Promise<void>((r) => udp.bind(0, host, () => r()));
    const tcp = net.createServer((s) => {
      let b = Buffer.alloc(0);
      s.on('data', (d: Buffer) => {
        b = Buffer.concat([b, d]);
        if (b.length >= 2 && b.length >= 2 + b.readUInt16BE(0)) {
          const out = answer(b.subarray(2, 2 + b.readUInt16BE(0)));
          const len = Buffer.alloc(2);
          len.writeUInt16BE(out.length);
          s.end(Buffer.concat([len, out]));
        }
      });
    });
    await new Promise<void>((r) => tcp.listen(udp.address().port, host, () => r()));
    servers.push(udp, tcp);
    const ep = { host, port: udp.address().port };
    for (const transport of ['udp', 'tcp'] as const) {
      const r = await dnsQuery(ep, Z, 'SOA', { transport, edns: true, rd: false, timeoutMs: 2000 });
      assert.ok(r.ok, `${host} ${transport}: ${JSON.stringify(r)}`);
      assert.equal(r.reply.aa, true);
      assert.equal(r.reply.transport, transport);
      assert.deepEqual(r.reply.opt, { udpPayload: 4096, version: 0 });
      assert.deepEqual(r.reply.answer, [{ name: Z, type: 'SOA', ttl: 60, data: `${NS1} hostmaster.example.com 42`, serial: 42 }]);
      const plain = await dnsQuery(ep, Z, 'SOA', { transport, edns: false, rd: false, timeoutMs: 2000 });
      assert.ok(plain.ok && plain.reply.opt === null);
    }
  }
});
