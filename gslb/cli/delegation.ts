/**
 * `gridsteer check-delegation <zone>`: is the zone delegated to its GridSteer nodes the way
 * it should be? Asks the parent zone's servers for the delegation (the referral: NS set and
 * glue) and every node for its SOA (UDP and TCP), its NS set, the addresses of its
 * in-zone NS names, EDNS and the steered names, and reports each check as ok, warning or
 * error (docs/check-delegation.md lists them).
 *
 * Three layers:
 *  - the queries (gslb/cli/dns-client.ts, dns2's codec on our own sockets), injected as a
 *    QueryFn;
 *  - gathering (`gather`): finds the parent's servers through a resolver when none are
 *    given, asks them, derives the nodes from the NS set when none are given, probes each;
 *    it only collects replies;
 *  - judging (`evaluate` and the helpers it uses): pure functions from the replies to the
 *    checks, tested on a case table (delegation.test.ts).
 *
 * Exit codes: 0 no error (warnings allowed); 1 at least one check is an error, or --config
 * cannot be read or is not valid (a failure, nothing was checked); 2 usage error (--config
 * has no such zone, among others).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';
import { alignTable, parseDuration } from './operator.js';
import { canonicalIp, dnsQuery, formatEndpoint, normName, type Endpoint, type Outcome, type QType, type QueryFn, type QueryOptions, type Rec } from './dns-client.js';

export type { Endpoint, Outcome, QueryFn, Rec, Reply } from './dns-client.js';

export const CHECK_DELEGATION_USAGE = `usage: gridsteer check-delegation <zone> [options]

  Is <zone> (e.g. gslb.example.com) delegated to its GridSteer nodes correctly? Asks the
  parent zone's servers for the referral (NS set, glue) and every node for its SOA over UDP
  and TCP, its NS set, its NS names' addresses, EDNS and the steered names; reports each
  check as ok, warning or error.

  --parent ADDR      a server of the parent zone, IP[:port] (repeatable); default: the servers
                     of the closest enclosing zone, found through the resolver
  --resolver ADDR    a recursive resolver, IP[:port] (repeatable), to find the parent's servers
                     and the addresses of NS names outside the zone; default: /etc/resolv.conf
  --node ADDR        a GridSteer node to check, IP[:port] (repeatable); default: the addresses
                     of the NS names the parent lists
  --nodes-only       ask only the --node servers and compare them with each other (NS set, their
                     NS names' addresses, serial, EDNS, names; --config too): no parent or
                     resolver is asked, so the delegation itself is not checked; for trying it on
                     loopback (e.g. --node 127.0.0.1:5353 with npm start)
  --port N           the port of servers found by name (parents from the resolver, nodes from
                     the NS set); default 53
  --config FILE      also compare with the zone's NS set, glue and serial in this gridsteer.yaml
                     and query its steered names (then <zone> may be left out if it has one zone)
  --name NAME        a steered name every node must answer NOERROR (repeatable)
  --timeout DURATION per query, e.g. 2s or 500ms (default 3s; UDP is tried twice)
  -4, -6             only IPv4 / only IPv6 addresses of servers found by name
  --json             print the report as JSON

  exit: 0 no errors (warnings allowed), 1 any error, 2 usage error (nothing checked)
`;

// ---------------------------------------------------------------------------------------
// What the checks read and write

export type Status = 'ok' | 'warning' | 'error';

export interface Check {
  status: Status;
  /** referral, parent-agree, ns-set, ns, glue, lame, listed, reach, soa-udp, soa-tcp, edns, names, serial, config-ns, config-glue, config-serial, parent */
  check: string;
  subject: string;
  message: string;
}

export interface ParentServer {
  endpoint: Endpoint;
  /** Its NS name when it was found through the resolver. */
  name?: string;
}

/** A parent server's reply to `NS <zone>` (RD=0). */
export interface ParentProbe {
  server: ParentServer;
  outcome: Outcome;
}

/** A name's A and AAAA replies from one node. */
export interface NameProbe {
  name: string;
  a: Outcome;
  aaaa: Outcome;
}

/** What one node answered. */
export interface NodeProbe {
  endpoint: Endpoint;
  /** Given with --node (else derived from the parent's NS set). */
  explicit: boolean;
  /** SOA <zone> over UDP without EDNS. */
  soaUdp: Outcome;
  /** SOA <zone> over TCP. */
  soaTcp: Outcome;
  /** SOA <zone> over UDP with an OPT record. */
  edns: Outcome;
  /** NS <zone>. */
  ns: Outcome;
  /** A/AAAA of the in-zone NS names (empty when the node did not answer at all). */
  addresses: NameProbe[];
  /** A/AAAA of the steered names. */
  names: NameProbe[];
}

/** One NS name the parent lists and the addresses that were checked for it. */
export interface NsAddresses {
  name: string;
  /** Probed addresses (canonical). */
  addresses: string[];
  /** Addresses left out by -4 / -6. */
  skipped: string[];
  /** 'glue' (the referral's additional section), 'resolver', or 'none'. */
  from: 'glue' | 'resolver' | 'none';
  /** Why there is no address, when there is none. */
  note?: string;
}

/** The zone as gridsteer.yaml has it (--config). */
export interface Expected {
  file: string;
  ns: string[];
  /** In-zone NS names → their configured addresses (canonical). */
  glue: Record<string, string[]>;
  serial: number;
}

export interface Inputs {
  zone: string;
  /** The `parent` check: how the parent's servers were found (absent with --parent). */
  discovery?: { status: Status; message: string };
  parents: ParentProbe[];
  nsAddresses: NsAddresses[];
  nodes: NodeProbe[];
  expected?: Expected;
  /** '-4' or '-6' when given (for the wording of skipped addresses). */
  family?: '-4' | '-6';
  /** --nodes-only: no parent was asked; the nodes are compared with each other. */
  nodesOnly?: boolean;
}

// ---------------------------------------------------------------------------------------
// Small pure helpers

/** True when `name` is `zone` or below it (both normalised). */
export function inZone(name: string, zone: string): boolean {
  return zone === '' || name === zone || name.endsWith(`.${zone}`);
}

/** The name one label up ('' for the root). */
export function parentName(name: string): string {
  const i = name.indexOf('.');
  return i < 0 ? '' : name.slice(i + 1);
}

const uniq = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();
const sameSet = (a: string[], b: string[]): boolean => {
  const x = uniq(a);
  const y = uniq(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
};
const list = (xs: string[]): string => (xs.length === 0 ? '(none)' : uniq(xs).join(', '));
const minus = (a: string[], b: string[]): string[] => uniq(a).filter((x) => !b.includes(x));

/** `IP`, `IP:port`, `[IPv6]:port` or a bare IPv6 address → an endpoint; throws with the accepted forms. */
export function parseEndpoint(text: string, defaultPort: number): Endpoint {
  const s = text.trim();
  let host: string | undefined;
  let port: string | undefined;
  let m: RegExpExecArray | null;
  if ((m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s))) [host, port] = [m[1], m[2]];
  else if (net.isIPv6(s)) host = s;
  else if ((m = /^([^:]+)(?::(\d+))?$/.exec(s))) [host, port] = [m[1], m[2]];
  if (host === undefined || net.isIP(host) === 0) throw new Error(`"${text}" is not an IP address[:port] (e.g. 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53)`);
  const p = port === undefined ? defaultPort : Number(port);
  if (!Number.isInteger(p) || p < 1 || p > 65535) throw new Error(`"${text}": the port must be 1-65535`);
  return { host: canonicalIp(host), port: p };
}

/** A zone name as typed → lowercase, no trailing dot; throws when it is not a name below the root. */
export function parseZone(text: string): string {
  const z = normName(text.trim());
  const labels = z.split('.');
  if (z === '' || z.length > 253 || labels.some((l) => l.length === 0 || l.length > 63 || !/^[a-z0-9_-]+$/.test(l))) {
    throw new Error(`"${text}" is not a zone name like gslb.example.com`);
  }
  return z;
}

/** The `nameserver` lines of resolv.conf (port 53); none → 127.0.0.1, as the C library does. */
export function parseResolvConf(text: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const host = m?.[1]?.replace(/%.*$/, '');
    if (host && net.isIP(host) !== 0) out.push({ host: canonicalIp(host), port: 53 });
  }
  return out.length > 0 ? out : [{ host: '127.0.0.1', port: 53 }];
}

const recsOf = (recs: Rec[], type: string, name?: string): Rec[] => recs.filter((r) => r.type === type && (name === undefined || r.name === name));

/** The A and AAAA addresses in a section (for `name`, or any owner). */
function addressesIn(recs: Rec[], name?: string): string[] {
  return uniq([...recsOf(recs, 'A', name), ...recsOf(recs, 'AAAA', name)].map((r) => r.data));
}

function why(o: Outcome): string {
  return o.ok ? o.reply.rcode : `no answer (${o.error})`;
}

// ---------------------------------------------------------------------------------------
// Judging one reply

/** What a parent server's reply to `NS <zone>` says about the delegation. */
export interface ParentView {
  status: Status;
  message: string;
  /** The NS set it gives for the zone (null when it gives none). */
  ns: string[] | null;
  /** NS name → the addresses in its additional section. */
  glue: Map<string, string[]>;
}

export function readReferral(zone: string, o: Outcome): ParentView {
  const none = (status: Status, message: string): ParentView => ({ status, message, ns: null, glue: new Map() });
  if (!o.ok) return none('error', `no answer: ${o.error}`);
  const r = o.reply;
  if (r.rcode === 'REFUSED') return none('error', 'REFUSED: it does not serve the parent zone');
  if (r.rcode === 'NXDOMAIN') return none('error', `NXDOMAIN: the parent zone has no ${zone}, so there is no delegation`);
  if (r.rcode !== 'NOERROR') return none('error', `${r.rcode} to NS ${zone}`);
  const glueOf = (ns: string[]) => new Map(ns.map((n) => [n, addressesIn(r.additional, n)] as const).filter(([, a]) => a.length > 0));
  const glueText = (g: Map<string, string[]>) => (g.size === 0 ? 'no glue' : `glue for ${[...g.keys()].sort().join(', ')}`);
  const authNs = recsOf(r.authority, 'NS');
  const ansNs = recsOf(r.answer, 'NS', zone);
  if (!r.aa && r.answer.length === 0 && authNs.length > 0) {
    const owners = uniq(authNs.map((x) => x.name));
    if (owners.length !== 1 || owners[0] !== zone) {
      return none('error', `a referral to ${list(owners.map((x) => x || '.'))}, not to ${zone}: it is not a server of the parent zone`);
    }
    const ns = uniq(authNs.map((x) => x.data));
    const glue = glueOf(ns);
    return { status: 'ok', message: `referral (NS in authority, aa=0) to ${list(ns)}; ${glueText(glue)}`, ns, glue };
  }
  if (ansNs.length > 0) {
    const ns = uniq(ansNs.map((x) => x.data));
    const glue = glueOf(ns);
    const message = r.aa
      ? `answers NS ${zone} authoritatively (aa=1) instead of referring: it serves the zone itself, so the delegation's NS set is hidden; taking ${list(ns)} as the parent's`
      : `answers NS ${zone} in the answer section without aa: a resolver rather than a parent server?; taking ${list(ns)} as the parent's`;
    return { status: 'warning', message, ns, glue };
  }
  const soa = recsOf(r.authority, 'SOA')[0];
  if (soa) return none('error', `no delegation: NODATA with the SOA of ${soa.name || '.'} (the name exists at the parent without NS records)`);
  return none('error', `neither a referral nor an answer (aa=${r.aa ? 1 : 0}, ${r.answer.length} answer, ${r.authority.length} authority records)`);
}

/** An SOA reply from a node: authoritative, NOERROR, the zone's SOA in the answer. */
export function readSoa(zone: string, o: Outcome): { status: Status; message: string; serial: number | null } {
  if (!o.ok) return { status: 'error', message: `no answer: ${o.error}`, serial: null };
  const r = o.reply;
  const soa = recsOf(r.answer, 'SOA', zone)[0];
  if (r.rcode !== 'NOERROR') return { status: 'error', message: `${r.rcode}${r.aa ? '' : ' without aa'}: not authoritative for ${zone} (lame)`, serial: null };
  if (!r.aa) return { status: 'error', message: `answer without aa: not authoritative for ${zone} (lame)${soa ? '' : `, ${r.authority.length > 0 ? 'a referral' : 'no SOA'}`}`, serial: null };
  if (!soa) return { status: 'error', message: `aa but no SOA of ${zone} in the answer${r.tc ? ' (truncated)' : ''}`, serial: null };
  return { status: 'ok', message: `aa, serial ${soa.serial}`, serial: soa.serial ?? null };
}

/** An EDNS query's reply: NOERROR with an OPT record. */
export function readEdns(o: Outcome): { status: Status; message: string } {
  if (!o.ok) return { status: 'error', message: `no answer to a query with EDNS: ${o.error}` };
  const r = o.reply;
  if (r.rcode !== 'NOERROR') return { status: 'error', message: `${r.rcode} to a query with EDNS (RFC 6891): EDNS is broken` };
  if (!r.opt) return { status: 'error', message: 'no OPT record in the reply to a query with EDNS (RFC 6891)' };
  return { status: 'ok', message: `OPT in the reply (version ${r.opt.version}, UDP payload ${r.opt.udpPayload})` };
}

/** A node's NS set for the zone, or why there is none. */
export function readNs(zone: string, o: Outcome): { ns: string[] } | { problem: string } {
  if (!o.ok) return { problem: `no answer to NS ${zone}: ${o.error}` };
  const r = o.reply;
  if (r.rcode !== 'NOERROR') return { problem: `${r.rcode} to NS ${zone}` };
  if (!r.aa) return { problem: `NS ${zone} answered without aa` };
  const ns = uniq(recsOf(r.answer, 'NS', zone).map((x) => x.data));
  if (ns.length === 0) return { problem: `no NS records for ${zone} in the answer` };
  return { ns };
}

/** The addresses a node serves for a name (authoritative NOERROR or NXDOMAIN), or why unknown. */
export function readAddresses(p: NameProbe): { addresses: string[] } | { problem: string } {
  const out: string[] = [];
  for (const [type, o] of [['A', p.a], ['AAAA', p.aaaa]] as const) {
    if (!o.ok) return { problem: `${type} ${p.name}: no answer (${o.error})` };
    const r = o.reply;
    if (r.rcode !== 'NOERROR' && r.rcode !== 'NXDOMAIN') return { problem: `${type} ${p.name}: ${r.rcode}` };
    if (!r.aa) return { problem: `${type} ${p.name}: answer without aa` };
    out.push(...addressesIn(r.answer, p.name));
  }
  return { addresses: uniq(out) };
}

/** A steered name on one node: A and AAAA both NOERROR with aa. */
export function readName(p: NameProbe): { status: Status; text: string } {
  const parts: string[] = [];
  let status: Status = 'ok';
  let total = 0;
  for (const [type, o] of [['A', p.a], ['AAAA', p.aaaa]] as const) {
    if (!o.ok) {
      status = 'error';
      parts.push(`${type} no answer (${o.error})`);
      continue;
    }
    const r = o.reply;
    const n = recsOf(r.answer, type).length;
    total += n;
    if (r.rcode !== 'NOERROR') {
      status = 'error';
      parts.push(`${type} ${r.rcode}`);
    } else if (!r.aa) {
      status = 'error';
      parts.push(`${type} NOERROR without aa`);
    } else parts.push(`${type} ${n === 0 ? 'NODATA' : `${n} address${n === 1 ? '' : 'es'}`}`);
  }
  if (status === 'ok' && total === 0) {
    status = 'warning';
    parts.push('no address of either family');
  }
  return { status, text: `${p.name}: ${parts.join(', ')}` };
}

// ---------------------------------------------------------------------------------------
// Judging it all

const worst = (a: Status, b: Status): Status => (a === 'error' || b === 'error' ? 'error' : a === 'warning' || b === 'warning' ? 'warning' : 'ok');

/** Every check, in report order: parent, delegation, nodes, serial, config. */
export function evaluate(inp: Inputs): Check[] {
  const z = inp.zone;
  const checks: Check[] = [];
  const add = (status: Status, check: string, subject: string, message: string) => void checks.push({ status, check, subject, message });
  const ep = (n: NodeProbe) => formatEndpoint(n.endpoint);

  // Parent: the referral from each server, and whether they agree.
  if (inp.nodesOnly) add('warning', 'parent', z, 'not asked (--nodes-only): the listed nodes are compared with each other; the delegation itself is not checked');
  if (inp.discovery) add(inp.discovery.status, 'parent', z, inp.discovery.message);
  const views = inp.parents.map((p) => ({ p, v: readReferral(z, p.outcome) }));
  for (const { p, v } of views) add(v.status, 'referral', formatEndpoint(p.server.endpoint) + (p.server.name ? ` (${p.server.name})` : ''), v.message);
  const withSet = views.filter((x) => x.v.ns !== null);
  const first = withSet[0];
  const parentNs = first?.v.ns ?? null;
  const parentGlue = first?.v.glue ?? new Map<string, string[]>();
  if (withSet.length > 1) {
    const sig = (v: ParentView) => `NS ${list(v.ns ?? [])}; glue ${[...v.glue.entries()].sort().map(([n, a]) => `${n} ${a.join(' ')}`).join('; ') || '(none)'}`;
    const sigs = new Map<string, string[]>();
    for (const { p, v } of withSet) sigs.set(sig(v), [...(sigs.get(sig(v)) ?? []), formatEndpoint(p.server.endpoint)]);
    if (sigs.size === 1) add('ok', 'parent-agree', z, `all ${withSet.length} parent servers give the same NS set and glue`);
    else add('error', 'parent-agree', z, `the parent servers disagree: ${[...sigs.entries()].map(([s, eps]) => `${eps.join(', ')}: ${s}`).join(' | ')}`);
  }

  // The nodes that answered at all.
  const live = inp.nodes.filter((n) => n.soaUdp.ok || n.soaTcp.ok);
  const nodeNs = live.map((n) => ({ n, r: readNs(z, n.ns) }));
  const answeredNs = nodeNs.flatMap(({ n, r }) => ('ns' in r ? [{ n, ns: r.ns }] : []));
  const nsGroups = new Map<string, string[]>();
  for (const { n, ns } of answeredNs) nsGroups.set(list(ns), [...(nsGroups.get(list(ns)) ?? []), ep(n)]);
  const childNs = nsGroups.size === 1 ? answeredNs[0]!.ns : null;

  // The NS set: the parent's against the nodes'.
  if (nsGroups.size > 1) {
    add('error', 'ns-set', z, `the nodes disagree: ${[...nsGroups.entries()].map(([s, eps]) => `${eps.join(', ')} serve ${s}`).join('; ')}`);
  } else if (parentNs !== null && childNs !== null) {
    if (sameSet(parentNs, childNs)) add('ok', 'ns-set', z, `the parent and the nodes agree: ${list(parentNs)}`);
    else {
      const onlyParent = minus(parentNs, childNs);
      const onlyChild = minus(childNs, parentNs);
      add(
        'error',
        'ns-set',
        z,
        `the parent lists ${list(parentNs)}, the nodes serve ${list(childNs)}` +
          (onlyParent.length ? `; only at the parent: ${list(onlyParent)}` : '') +
          (onlyChild.length ? `; only at the nodes: ${list(onlyChild)}` : ''),
      );
    }
  } else if (parentNs !== null && live.length > 0) {
    add('error', 'ns-set', z, `not compared: no node answered NS ${z} authoritatively; the parent lists ${list(parentNs)}`);
  } else if (inp.nodesOnly && childNs !== null) {
    add('ok', 'ns-set', z, `the ${answeredNs.length === 1 ? 'one node that answered serves' : `${answeredNs.length} nodes agree:`} ${list(childNs)}`);
  } else if (inp.nodesOnly && live.length > 0) {
    add('error', 'ns-set', z, `no node answered NS ${z} authoritatively`);
  }
  for (const { n, r } of nodeNs) if ('problem' in r) add('error', 'ns', ep(n), r.problem);

  // Glue: for each in-zone NS name at the parent, its glue against the nodes' A/AAAA.
  const nodeAddrs = (name: string) =>
    live.map((n) => {
      const p = n.addresses.find((a) => a.name === name);
      return { n, r: p ? readAddresses(p) : ({ problem: `${name} not asked` } as const) };
    });
  const consensus = (name: string): { addresses: string[] | null; text: string; problems: string[] } => {
    const rs = nodeAddrs(name);
    const known = rs.flatMap(({ n, r }) => ('addresses' in r ? [{ n, a: r.addresses }] : []));
    const problems = rs.flatMap(({ n, r }) => ('problem' in r ? [`${ep(n)}: ${r.problem}`] : []));
    const groups = new Map<string, string[]>();
    for (const { n, a } of known) groups.set(list(a), [...(groups.get(list(a)) ?? []), ep(n)]);
    if (groups.size === 1) return { addresses: known[0]!.a, text: list(known[0]!.a), problems };
    if (groups.size === 0) return { addresses: null, text: '(no node answered)', problems };
    return { addresses: null, text: [...groups.entries()].map(([a, eps]) => `${eps.join(', ')} serve ${a}`).join('; '), problems };
  };
  const glueNames = uniq((parentNs ?? []).filter((n) => inZone(n, z)));
  for (const name of glueNames) {
    const g = parentGlue.get(name) ?? [];
    const c = consensus(name);
    const nodesText = c.addresses !== null ? `the nodes serve ${c.text}` : c.text === '(no node answered)' ? 'no node answered for it' : `the nodes: ${c.text}`;
    if (g.length === 0) add('error', 'glue', name, `no glue at the parent: ${name} is inside ${z}, so resolvers can only reach it through glue; ${nodesText}`);
    else if (live.length === 0) add('ok', 'glue', name, `parent glue ${list(g)} (not compared: no node answered)`);
    else if (c.addresses === null) {
      const known = c.text !== '(no node answered)';
      add('error', 'glue', name, known ? `parent glue ${list(g)}; the nodes disagree: ${c.text}` : `parent glue ${list(g)}; not compared: ${c.problems.join('; ')}`);
    } else if (sameSet(g, c.addresses)) add('ok', 'glue', name, `parent glue ${list(g)} = the nodes' ${list(c.addresses)}`);
    else add('error', 'glue', name, `parent glue ${list(g)}, the nodes serve ${list(c.addresses)}`);
  }

  // --nodes-only: the in-zone NS names' addresses, the same on every node (what the glue must be).
  if (inp.nodesOnly && childNs !== null) {
    for (const name of childNs.filter((n) => inZone(n, z))) {
      const c = consensus(name);
      if (c.addresses !== null && c.problems.length === 0) add('ok', 'ns-addresses', name, `the nodes serve ${c.text} (the glue the parent should have)`);
      else add('error', 'ns-addresses', name, c.addresses !== null ? `${c.text}; ${c.problems.join('; ')}` : c.problems.length > 0 && c.text === '(no node answered)' ? c.problems.join('; ') : `the nodes disagree: ${c.text}`);
    }
  }

  // Lame delegation: every address of every NS name the parent lists must answer with aa.
  const familyWord = inp.family === '-4' ? 'IPv6' : 'IPv4';
  for (const a of inp.nsAddresses) {
    if (a.addresses.length === 0) {
      if (a.skipped.length > 0) add('warning', 'lame', a.name, `not checked: its only addresses (${list(a.skipped)}) are ${familyWord} and ${inp.family} was given`);
      else add('error', 'lame', a.name, `no address to ask: ${a.note ?? 'none found'}`);
      continue;
    }
    for (const addr of a.addresses) {
      for (const n of inp.nodes.filter((x) => x.endpoint.host === addr)) {
        const udp = readSoa(z, n.soaUdp);
        const tcp = readSoa(z, n.soaTcp);
        const subject = `${a.name} ${ep(n)}`;
        if (udp.status === 'ok' || tcp.status === 'ok') add('ok', 'lame', subject, 'answers authoritatively (aa) for the zone');
        else add('error', 'lame', subject, `lame delegation: listed at the parent, but ${udp.message}`);
      }
    }
  }

  // Nodes given with --node that the parent does not list.
  if (parentNs !== null) {
    for (const n of inp.nodes.filter((x) => x.explicit)) {
      const names = inp.nsAddresses.filter((a) => [...a.addresses, ...a.skipped].includes(n.endpoint.host)).map((a) => a.name);
      if (names.length > 0) add('ok', 'listed', ep(n), `listed at the parent as ${list(names)}`);
      else add('warning', 'listed', ep(n), `not listed at the parent: no NS name there has the address ${n.endpoint.host}, so resolvers never ask this node`);
    }
  }

  // Each node: reachable, SOA over UDP and TCP, EDNS, the steered names.
  const serials: { n: NodeProbe; serial: number }[] = [];
  for (const n of inp.nodes) {
    if (!n.soaUdp.ok && !n.soaTcp.ok) {
      add('error', 'reach', ep(n), `no answer over UDP (${n.soaUdp.error}) nor TCP (${n.soaTcp.error}): is it running, and reachable from here?`);
      continue;
    }
    const udp = readSoa(z, n.soaUdp);
    const tcp = readSoa(z, n.soaTcp);
    add(udp.status, 'soa-udp', ep(n), udp.message);
    add(tcp.status, 'soa-tcp', ep(n), tcp.message);
    const serial = udp.serial ?? tcp.serial;
    if (serial !== null) serials.push({ n, serial });
    const e = readEdns(n.edns);
    add(e.status, 'edns', ep(n), e.message);
    if (n.names.length > 0) {
      const rs = n.names.map(readName);
      add(rs.map((r) => r.status).reduce(worst, 'ok'), 'names', ep(n), rs.map((r) => r.text).join('; '));
    }
  }

  // The serial: every node the same.
  const bySerial = new Map<number, string[]>();
  for (const { n, serial } of serials) bySerial.set(serial, [...(bySerial.get(serial) ?? []), ep(n)]);
  if (bySerial.size === 1) add('ok', 'serial', z, serials.length === 1 ? `the one node that answered serves serial ${serials[0]!.serial}` : `all ${serials.length} nodes serve serial ${serials[0]!.serial}`);
  else if (bySerial.size > 1) add('error', 'serial', z, `the nodes serve different SOA serials: ${[...bySerial.entries()].map(([s, eps]) => `${s} on ${eps.join(', ')}`).join('; ')}`);

  // --config: the file against the parent (error) and against the nodes (warning: not reloaded?).
  const x = inp.expected;
  if (x) {
    const file = x.file;
    if (parentNs !== null && !sameSet(parentNs, x.ns)) add('error', 'config-ns', z, `the parent lists ${list(parentNs)}, ${file} has ${list(x.ns)}`);
    else if (childNs !== null && !sameSet(childNs, x.ns)) add('warning', 'config-ns', z, `the nodes serve ${list(childNs)}, ${file} has ${list(x.ns)}: a node not reloaded since the file changed?`);
    else add('ok', 'config-ns', z, `${file} has ${list(x.ns)}${parentNs === null && childNs === null ? ' (not compared: no NS set seen)' : ''}`);
    for (const [name, addrs] of Object.entries(x.glue).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const g = parentNs?.includes(name) ? (parentGlue.get(name) ?? []) : null;
      const c = live.length > 0 ? consensus(name) : null;
      if (g !== null && !sameSet(g, addrs)) add('error', 'config-glue', name, `parent glue ${list(g)}, ${file} has ${list(addrs)}`);
      else if (c?.addresses && !sameSet(c.addresses, addrs)) add('warning', 'config-glue', name, `the nodes serve ${list(c.addresses)}, ${file} has ${list(addrs)}: a node not reloaded?`);
      else add('ok', 'config-glue', name, `${file} has ${list(addrs)}`);
    }
    const differ = serials.filter((s) => s.serial !== x.serial);
    if (differ.length > 0) add('warning', 'config-serial', z, `${file} has serial ${x.serial}, ${differ.map((s) => `${ep(s.n)} serves ${s.serial}`).join(', ')}: reload the nodes (SIGHUP) after changing the zone`);
    else add('ok', 'config-serial', z, `${file} has serial ${x.serial}${serials.length > 0 ? ', as the nodes serve' : ''}`);
  }
  return checks;
}

// ---------------------------------------------------------------------------------------
// The report

export interface Report {
  zone: string;
  /** The parent zone when it was found through the resolver. */
  parentZone: string | null;
  parents: { server: string; name: string | null }[];
  /** --nodes-only: no parent was asked (the nodes were compared with each other). */
  nodesOnly: boolean;
  nodes: { server: string; explicit: boolean; nsNames: string[] }[];
  checks: Check[];
  summary: { ok: number; warning: number; error: number };
}

export function buildReport(inp: Inputs, parentZone: string | null): Report {
  const checks = evaluate(inp);
  const count = (s: Status) => checks.filter((c) => c.status === s).length;
  return {
    zone: inp.zone,
    parentZone,
    parents: inp.parents.map((p) => ({ server: formatEndpoint(p.server.endpoint), name: p.server.name ?? null })),
    nodesOnly: inp.nodesOnly === true,
    nodes: inp.nodes.map((n) => ({
      server: formatEndpoint(n.endpoint),
      explicit: n.explicit,
      nsNames: inp.nsAddresses.filter((a) => a.addresses.includes(n.endpoint.host)).map((a) => a.name),
    })),
    checks,
    summary: { ok: count('ok'), warning: count('warning'), error: count('error') },
  };
}

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;

export function renderReport(r: Report): string {
  const lines: string[] = [];
  lines.push(`check-delegation ${r.zone}${r.parentZone !== null ? ` (delegated from ${r.parentZone || 'the root'})` : ''}`);
  const head: string[][] = [];
  head.push(['  parent servers', r.parents.map((p) => p.server + (p.name ? ` (${p.name})` : '')).join(', ') || (r.nodesOnly ? '(not asked: --nodes-only)' : '(none)')]);
  head.push(['  nodes', r.nodes.map((n) => n.server + (n.nsNames.length > 0 ? ` (${n.nsNames.join(', ')})` : n.explicit ? ' (--node)' : '')).join(', ') || '(none)']);
  lines.push(...alignTable(head), '');
  const rows = [['', 'check', 'subject', ''], ...r.checks.map((c) => [c.status, c.check, c.subject, c.message])];
  lines.push(...alignTable(rows).slice(1), '');
  const s = r.summary;
  lines.push(`${plural(s.error, 'error')}, ${plural(s.warning, 'warning')}, ${s.ok} ok`);
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------
// Gathering (the only part that asks the network, through `query`)

export interface GatherOptions {
  zone: string;
  /** --parent; empty → found through the resolvers. */
  parents: Endpoint[];
  /** Resolvers for finding the parent and NS addresses outside the zone (called when needed). */
  resolvers: () => Endpoint[];
  /** --node; empty → the parent's NS addresses. */
  nodes: Endpoint[];
  /** Port of servers found by name. */
  port: number;
  /** Steered names to query. */
  names: string[];
  /** In-zone NS names whose addresses to ask every node (besides the parent's and the node's own). */
  extraNsNames: string[];
  timeoutMs: number;
  /** --nodes-only: ask the nodes only (no parent, no resolver). */
  nodesOnly?: boolean;
  family?: '-4' | '-6';
  expected?: Expected;
}

function keepFamily(addrs: string[], family: '-4' | '-6' | undefined): { keep: string[]; skipped: string[] } {
  if (!family) return { keep: addrs, skipped: [] };
  const want = family === '-4' ? 4 : 6;
  return { keep: addrs.filter((a) => net.isIP(a) === want), skipped: addrs.filter((a) => net.isIP(a) !== want) };
}

/** Asks the resolvers in turn until one answers (any rcode). */
async function askResolvers(q: QueryFn, resolvers: Endpoint[], name: string, type: QType, timeoutMs: number): Promise<Outcome & { via?: Endpoint }> {
  let last: Outcome = { ok: false, error: 'no resolver' };
  for (const r of resolvers) {
    last = await q(r, name, type, { transport: 'udp', edns: true, rd: true, timeoutMs, tcpOnTruncation: true });
    if (last.ok) return { ...last, via: r };
  }
  return last;
}

async function resolveAddresses(q: QueryFn, resolvers: Endpoint[], name: string, timeoutMs: number): Promise<{ addresses: string[]; note?: string }> {
  const [a, aaaa] = await Promise.all([askResolvers(q, resolvers, name, 'A', timeoutMs), askResolvers(q, resolvers, name, 'AAAA', timeoutMs)]);
  const addresses = uniq([a, aaaa].flatMap((o) => (o.ok ? addressesIn(o.reply.answer) : [])));
  if (addresses.length > 0) return { addresses };
  const fails = [a, aaaa].filter((o) => !o.ok || o.reply.rcode !== 'NOERROR').map(why);
  return { addresses, note: `the resolver found no A/AAAA for ${name}${fails.length ? ` (${fails.join(', ')})` : ''}` };
}

/**
 * The parent zone's servers, like `dig +trace` would find them, but through a resolver:
 * NS of the name one label up; when that name is not a zone, the SOA in the authority
 * section names the enclosing zone; else one more label up.
 */
export async function discoverParent(
  q: QueryFn,
  zone: string,
  resolvers: Endpoint[],
  timeoutMs: number,
): Promise<{ ok: true; parentZone: string; servers: { name: string; addresses: string[] }[]; via: string } | { ok: false; error: string }> {
  const via = resolvers.map(formatEndpoint).join(', ');
  let cand = parentName(zone);
  let ns: string[] = [];
  for (let i = 0; i < 130; i++) {
    const o = await askResolvers(q, resolvers, cand, 'NS', timeoutMs);
    if (!o.ok) return { ok: false, error: `the resolver (${via}) gave no answer for NS ${cand || '.'}: ${o.error}` };
    const r = o.reply;
    ns = uniq(recsOf(r.answer, 'NS', cand).map((x) => x.data));
    if (ns.length > 0) break;
    const soa = recsOf(r.authority, 'SOA')[0];
    if (soa && soa.name !== cand && inZone(cand, soa.name)) {
      cand = soa.name;
      continue;
    }
    if (r.rcode !== 'NOERROR' && r.rcode !== 'NXDOMAIN') return { ok: false, error: `the resolver (${via}) answered ${r.rcode} for NS ${cand || '.'}` };
    if (cand === '') return { ok: false, error: `the resolver (${via}) has no NS set for the root` };
    cand = parentName(cand);
  }
  if (ns.length === 0) return { ok: false, error: `no enclosing zone of ${zone} found through the resolver (${via})` };
  const servers = await Promise.all(ns.map(async (name) => ({ name, addresses: (await resolveAddresses(q, resolvers, name, timeoutMs)).addresses })));
  if (servers.every((s) => s.addresses.length === 0)) return { ok: false, error: `the resolver (${via}) found no address for the servers of ${cand || '.'} (${list(ns)})` };
  return { ok: true, parentZone: cand, servers, via };
}

/**
 * One node: SOA over UDP, over TCP and with EDNS, NS, the in-zone NS names' A/AAAA and the
 * steered names. Only the `edns` query carries an OPT record, so that a node that breaks
 * EDNS fails that check alone (resolvers fall back to plain DNS); a truncated UDP reply is
 * asked again over TCP.
 */
async function probeNode(q: QueryFn, endpoint: Endpoint, explicit: boolean, zone: string, nsNames: string[], names: string[], timeoutMs: number): Promise<NodeProbe> {
  const o = (transport: 'udp' | 'tcp', edns: boolean, tcpOnTruncation = true): QueryOptions => ({ transport, edns, rd: false, timeoutMs, tcpOnTruncation });
  const [soaUdp, soaTcp, edns, ns] = await Promise.all([
    q(endpoint, zone, 'SOA', o('udp', false, false)),
    q(endpoint, zone, 'SOA', o('tcp', false)),
    q(endpoint, zone, 'SOA', o('udp', true, false)),
    q(endpoint, zone, 'NS', o('udp', false)),
  ]);
  const base = { endpoint, explicit, soaUdp, soaTcp, edns, ns };
  if (!soaUdp.ok && !soaTcp.ok) return { ...base, addresses: [], names: [] };
  const own = ns.ok ? recsOf(ns.reply.answer, 'NS', zone).map((x) => x.data) : [];
  const ask = async (name: string): Promise<NameProbe> => {
    const [a, aaaa] = await Promise.all([q(endpoint, name, 'A', o('udp', false)), q(endpoint, name, 'AAAA', o('udp', false))]);
    return { name, a, aaaa };
  };
  const inZoneNames = uniq([...nsNames, ...own].filter((n) => inZone(n, zone)));
  const [addresses, steered] = await Promise.all([Promise.all(inZoneNames.map(ask)), Promise.all(names.map(ask))]);
  return { ...base, addresses, names: steered };
}

/** Asks everything the checks need; returns the inputs of `evaluate` and the parent zone when found. */
export async function gather(q: QueryFn, g: GatherOptions): Promise<{ inputs: Inputs; parentZone: string | null }> {
  const zone = g.zone;
  let parentServers: ParentServer[] = g.parents.map((endpoint) => ({ endpoint }));
  let discovery: Inputs['discovery'];
  let parentZone: string | null = null;
  let resolvers: Endpoint[] | undefined;
  const getResolvers = () => (resolvers ??= g.resolvers());
  if (parentServers.length === 0 && !g.nodesOnly) {
    const d = await discoverParent(q, zone, getResolvers(), g.timeoutMs);
    if (!d.ok) discovery = { status: 'error', message: `cannot find the parent zone's servers: ${d.error}; give them with --parent` };
    else {
      parentZone = d.parentZone;
      for (const s of d.servers) for (const a of keepFamily(s.addresses, g.family).keep) parentServers.push({ endpoint: { host: a, port: g.port }, name: s.name });
      discovery = parentServers.length > 0
        ? { status: 'ok', message: `the parent zone is ${d.parentZone || '.'}: ${d.servers.map((s) => `${s.name} ${list(s.addresses)}`).join('; ')} (through the resolver ${d.via})` }
        : { status: 'error', message: `the parent zone ${d.parentZone || '.'} has no ${g.family === '-4' ? 'IPv4' : 'IPv6'} server address (${g.family})` };
    }
  }
  parentServers = parentServers.filter((s, i, all) => all.findIndex((x) => formatEndpoint(x.endpoint) === formatEndpoint(s.endpoint)) === i);
  const parents: ParentProbe[] = await Promise.all(
    parentServers.map(async (server) => ({ server, outcome: await q(server.endpoint, zone, 'NS', { transport: 'udp', edns: true, rd: false, timeoutMs: g.timeoutMs, tcpOnTruncation: true }) })),
  );

  // The parent's NS names and their addresses: glue first, else the resolver (names outside the zone).
  const view = parents.map((p) => readReferral(zone, p.outcome)).find((v) => v.ns !== null);
  const nsAddresses: NsAddresses[] = await Promise.all(
    (view?.ns ?? []).map(async (name): Promise<NsAddresses> => {
      const glue = view?.glue.get(name);
      let addrs: string[];
      let from: NsAddresses['from'];
      let note: string | undefined;
      if (glue && glue.length > 0) [addrs, from] = [glue, 'glue'];
      else if (inZone(name, zone)) [addrs, from, note] = [[], 'none', `${name} is inside ${zone} and the parent gives no glue for it`];
      else {
        const r = await resolveAddresses(q, getResolvers(), name, g.timeoutMs);
        [addrs, from, note] = [r.addresses, r.addresses.length > 0 ? 'resolver' : 'none', r.note];
      }
      const f = keepFamily(addrs, g.family);
      return { name, addresses: f.keep, skipped: f.skipped, from, ...(note === undefined ? {} : { note }) };
    }),
  );

  // The nodes: --node, plus every NS address of the parent not already among them.
  const targets: { endpoint: Endpoint; explicit: boolean }[] = [];
  for (const e of g.nodes) if (!targets.some((t) => formatEndpoint(t.endpoint) === formatEndpoint(e))) targets.push({ endpoint: e, explicit: true });
  for (const a of nsAddresses) for (const host of a.addresses) if (!targets.some((t) => t.endpoint.host === host)) targets.push({ endpoint: { host, port: g.port }, explicit: false });
  const nsNames = uniq([...(view?.ns ?? []), ...g.extraNsNames]);
  const nodes = await Promise.all(targets.map((t) => probeNode(q, t.endpoint, t.explicit, zone, nsNames, g.names, g.timeoutMs)));
  return {
    inputs: {
      zone,
      ...(discovery ? { discovery } : {}),
      parents,
      nsAddresses,
      nodes,
      ...(g.expected ? { expected: g.expected } : {}),
      ...(g.family ? { family: g.family } : {}),
      ...(g.nodesOnly ? { nodesOnly: true } : {}),
    },
    parentZone,
  };
}

// ---------------------------------------------------------------------------------------
// The command

export interface DelegationIo {
  out(s: string): void;
  err(s: string): void;
  query: QueryFn;
  readFile(path: string): string;
}

export const defaultDelegationIo: DelegationIo = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  query: dnsQuery,
  readFile: (p) => readFileSync(p, 'utf8'),
};

/** Runs `gridsteer check-delegation …` (`args` after the command word); resolves to the exit code. */
export async function runCheckDelegation(args: string[], io: DelegationIo = defaultDelegationIo): Promise<number> {
  const usage = (msg: string) => {
    io.err(`gridsteer: ${msg}\n${CHECK_DELEGATION_USAGE}`);
    return 2;
  };
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        parent: { type: 'string', multiple: true },
        resolver: { type: 'string', multiple: true },
        node: { type: 'string', multiple: true },
        'nodes-only': { type: 'boolean' },
        port: { type: 'string' },
        config: { type: 'string' },
        name: { type: 'string', multiple: true },
        timeout: { type: 'string' },
        ipv4: { type: 'boolean', short: '4' },
        ipv6: { type: 'boolean', short: '6' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    return usage((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) {
    io.out(CHECK_DELEGATION_USAGE);
    return 0;
  }
  if (parsed.positionals.length > 1) return usage(`check-delegation takes one zone (got ${parsed.positionals.length} arguments)`);
  if (v.ipv4 && v.ipv6) return usage('-4 and -6 exclude each other');
  const nodesOnly = v['nodes-only'] === true;
  if (nodesOnly && (v.node ?? []).length === 0) return usage('--nodes-only compares the --node servers: give at least one --node');
  if (nodesOnly && (v.parent !== undefined || v.resolver !== undefined)) return usage('--nodes-only asks no parent and no resolver: leave out --parent and --resolver');
  const family = v.ipv4 ? '-4' : v.ipv6 ? '-6' : undefined;
  let port = 53;
  if (v.port !== undefined) {
    port = Number(v.port);
    if (!/^\d{1,5}$/.test(v.port) || port < 1 || port > 65535) return usage(`--port takes a port 1-65535 (got "${v.port}")`);
  }
  let timeoutMs = 3000;
  if (v.timeout !== undefined) {
    try {
      timeoutMs = parseDuration(v.timeout);
    } catch (e) {
      return usage(`--timeout: ${(e as Error).message}`);
    }
    if (timeoutMs < 1 || timeoutMs > 60_000) return usage(`--timeout must be above 0 and at most 60s (got "${v.timeout}")`);
  }
  let parents: Endpoint[];
  let resolvers: Endpoint[] | undefined;
  let nodes: Endpoint[];
  let extraNames: string[];
  try {
    parents = (v.parent ?? []).map((s) => parseEndpoint(s, 53));
    resolvers = v.resolver ? v.resolver.map((s) => parseEndpoint(s, 53)) : undefined;
    nodes = (v.node ?? []).map((s) => parseEndpoint(s, 53));
    extraNames = (v.name ?? []).map(parseZone);
  } catch (e) {
    return usage((e as Error).message);
  }

  let zone: string | undefined;
  if (parsed.positionals.length === 1) {
    try {
      zone = parseZone(parsed.positionals[0]!);
    } catch (e) {
      return usage((e as Error).message);
    }
  }
  let expected: Expected | undefined;
  let configNames: string[] = [];
  if (v.config !== undefined) {
    const { loadConfig, ConfigError } = await import('../config/load.js');
    const { absoluteName } = await import('../dns/name.js');
    let config;
    try {
      config = loadConfig(v.config).config;
    } catch (e) {
      if (e instanceof ConfigError) {
        io.err(`${e.message}\ngridsteer: --config ${v.config} cannot be used: nothing was checked\n`);
        return 1;
      }
      throw e;
    }
    const zones = config.zones.map((z) => normName(z.name));
    if (zone === undefined) {
      if (zones.length !== 1) return usage(`name the zone to check: ${v.config} has ${zones.length} zones (${list(zones)})`);
      zone = zones[0]!;
    }
    const zc = config.zones.find((z) => normName(z.name) === zone);
    if (!zc) return usage(`${v.config} has no zone ${zone} (it has ${list(zones)})`);
    const ns = zc.nameservers.map((n) => absoluteName(n.name, zc.name));
    const glue: Record<string, string[]> = {};
    zc.nameservers.forEach((n, i) => {
      if (inZone(ns[i]!, zone!)) glue[ns[i]!] = uniq((n.addresses ?? []).map(canonicalIp));
    });
    expected = { file: v.config, ns: uniq(ns), glue, serial: zc.soa.serial };
    configNames = config.names.map((n) => normName(n.name)).filter((n) => inZone(n, zone!));
  }
  if (zone === undefined) return usage('check-delegation takes the zone to check, e.g. gridsteer check-delegation gslb.example.com');

  const { inputs, parentZone } = await gather(io.query, {
    zone,
    parents,
    resolvers: () => resolvers ?? parseResolvConf(readResolvConf(io)),
    nodes,
    port,
    names: uniq([...configNames, ...extraNames]),
    extraNsNames: expected ? Object.keys(expected.glue) : [],
    timeoutMs,
    ...(family ? { family } : {}),
    ...(expected ? { expected } : {}),
    ...(nodesOnly ? { nodesOnly } : {}),
  });
  const report = buildReport(inputs, parentZone);
  io.out(v.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
  return report.summary.error > 0 ? 1 : 0;
}

function readResolvConf(io: DelegationIo): string {
  try {
    return io.readFile('/etc/resolv.conf');
  } catch {
    return '';
  }
}
