/**
 * explain(input) → ExplainResult: why one client gets the answer it gets for one steered name
 * ("why did Tokyo get Singapore?").
 *
 * Pure: no I/O and no clock (the location lookup is passed in; `now` selects the plan step).
 * It places the client with the responder's own code (geo/locate.ts: ECS or packet source,
 * subnet key, cell, special addresses), calls decide — the function the DNS path calls — for
 * the answer and its reasons, computes the reply's ECS scope with the responder's replyScope,
 * and lays out, per region, what decide weighed: distance, bias, whether the region serves
 * the name and the family, whether it is down, its weight and the client's admission draw.
 *
 * The answer is the one the responder gives at `now` for the same table and plan. One
 * difference is possible: the responder caches a per-cell decision for up to a second, so its
 * TTL may lag explain's by that second while a scheduled change approaches.
 */
import { formatAddr, mask32, parseAddr, type Addr } from '../geo/addr.js';
import { TOP_K, type FleetGeometry } from '../geo/compile.js';
import { cellsOf, ECS_FAMILY_IPV4, ECS_FAMILY_IPV6, isUniformTable, locateClient, locatedRange, newCellRange, newClientLocation, replyScope, SourceCache } from '../geo/locate.js';
import type { CellOrigin, GeoTable } from '../geo/table.js';
import type { GeoPosition, LocationLookup } from '../geo/locator.js';
import type { Plan, RegionId } from '../model/types.js';
import { admissionDraw } from '../policy/admission.js';
import { admissionSplits, decide, regionStepAt, stepWeight, type DecideName } from '../policy/decide.js';
import type { Cell, CellRange } from '../model/cell.js';
import { biasedDistance, greatCircleKm, rankRegions, type LatLon } from '../geo/distance.js';

/** What GET /v1/explain and `gridsteer explain` ask. */
export interface ExplainQuery {
  /** The packet's source address. */
  client: string;
  /** A steered name, or a name whose CNAME chain ends at one. */
  name: string;
  type: 'A' | 'AAAA';
  /** EDNS Client Subnet, `a.b.c.d/p` or `x::/p`. */
  subnet?: string;
}


export interface ExplainInput {
  /** The packet's source address: the resolver's, or the client's own. */
  client: string;
  /** The EDNS Client Subnet, `a.b.c.d/p` or `x::/p`; absent = a query without ECS. */
  subnet?: string;
  /** The name as asked (a steered name, or a CNAME leading to one). */
  name: string;
  /** The steered name that answers (from the compiled zones). */
  decideName: DecideName;
  qtype: 'A' | 'AAAA';
  /** ms epoch: selects the plan step in force. */
  now: number;
  /** The geo table the responder answers from (the default table before the first compile). */
  geo: GeoTable;
  /** The database lookup for the `located` section; null when there is no database. */
  lookup: LocationLookup | null;
  plan: Plan;
  /** Regions' coordinates and biases and the default location (the overrides are not read). */
  fleet: Pick<FleetGeometry, 'regions' | 'defaultLocation'>;
  /** Tmin, seconds. */
  minTtl: number;
  /** Words on the geo table in force, from the caller (e.g. "the first compile is running"). */
  geoNote?: string;
}

/** One region as decide weighed it for this client. */
export interface ExplainCandidate {
  region: RegionId;
  /** 1-based position in the cell's ranking; null for regions outside it (decide never walks them). */
  rank: number | null;
  /** Great-circle km from `distanceFrom`; null when there is no position to measure from. */
  distanceKm: number | null;
  bias: number;
  /** distanceKm scaled by the bias (what the ranking sorts by). */
  biasedKm: number | null;
  servesName: boolean;
  /** Serves the name with endpoints of the query's family. */
  hasFamily: boolean;
  /** Down in the plan step in force. */
  down: boolean;
  /** w[home][region] in the plan step in force (missing = 1). */
  weight: number;
  /** The client's admission draw h(subnetKey, region) in [0, 1), shown when weight < 1. */
  draw?: number;
  /** true: the walk admitted the client here; false: the walk passed over it; null: not reached. */
  admitted: boolean | null;
  /** The answer is this region's. */
  answered: boolean;
  why: string;
}

export interface ExplainResult {
  /** ms epoch the explanation is for. */
  at: number;
  /** The name as asked, and the steered name that answers it. */
  name: string;
  steeredName: string;
  qtype: 'A' | 'AAAA';
  client: string;
  /** The ECS subnet as used (host bits cleared), null without one. */
  subnet: string | null;
  /** The subnet key as CIDR: what admission hashes and ECS scopes are computed from. */
  subnetKey: string;
  /** The ECS address located the client (else the packet's source did). */
  usedEcs: boolean;
  /** Why an ECS subnet that was given was not used. */
  fallbackReason?: string;
  /** The database's view of the address that located the client; null when not looked up or unknown. */
  located: (GeoPosition & { address: string }) | null;
  geoTable: { version: string; compiled: boolean; databaseType: string; databaseBuilt: string; note: string };
  cell: {
    origin: CellOrigin;
    /** Private, reserved or unparsable client: the special cell at the default location. */
    special: boolean;
    /** In words, as decide's first reason says it. */
    description: string;
    /** `first–last` of the table entry holding the address (IPv6 in whole /64s); null for the special cell. */
    range: string | null;
    /** The same range as CIDR blocks (at most 8; `rangeCidrsMore` counts the rest). */
    rangeCidrs: string[];
    rangeCidrsMore: number;
    /** Regions, nearest first (top K). */
    ranking: RegionId[];
  };
  /** Where distances are measured from: the position the cell's ranking came from. */
  distanceFrom: { what: 'database' | 'default-location'; lat: number; lon: number } | null;
  candidates: ExplainCandidate[];
  answer: {
    region: RegionId | null;
    addresses: string[];
    ttl: number;
    /** The reply's ECS scope prefix; null when the query carries no ECS (the reply then has none). */
    ecsScope: number | null;
    rcode: 'NOERROR' | 'SERVFAIL';
  };
  /** The plan step in force: since when, and why it exists. */
  planStep: { at: number; planVersion: string; reasons: string[] };
  /** decide's reasons, in order. */
  reasons: string[];
  /** What explain adds: fallbacks, the table in force, the scope, inconsistencies. */
  notes: string[];
}

/** Bad input to explain: `field` is the input at fault, `problem` completes "<field> …". */
export class ExplainError extends Error {
  constructor(
    readonly field: 'client' | 'subnet' | 'name' | 'type',
    readonly problem: string,
  ) {
    super(`explain: ${field} ${problem}`);
    this.name = 'ExplainError';
  }
}

interface Subnet {
  addr: Addr;
  prefix: number;
  text: string;
  hostBits: boolean;
}

/** Parses an ECS subnet as a resolver would send it; host bits are cleared (and reported). */
export function parseSubnet(s: string): Subnet {
  const m = /^([^/\s]+)\/(\d{1,3})$/.exec(s.trim());
  const a = m ? parseAddr(m[1]!) : null;
  if (!m || !a) throw new ExplainError('subnet', `"${s}" is not a subnet like 198.51.100.0/24 or 2001:db8:1200::/40`);
  if (a.family === 4 && m[1]!.includes(':')) throw new ExplainError('subnet', `"${s}": write an IPv4 subnet in dotted form (ECS carries it as family 1)`);
  const prefix = Number(m[2]);
  const max = a.family === 4 ? 32 : 128;
  if (prefix > max) throw new ExplainError('subnet', `"${s}": /${prefix} is longer than an IPv${a.family} address`);
  const masked: Addr = a.family === 4 ? { family: 4, hi: (a.hi & mask32(prefix)) >>> 0, lo: 0 } : { family: 6, hi: (a.hi & mask32(prefix)) >>> 0, lo: (a.lo & mask32(prefix - 32)) >>> 0 };
  const hostBits = masked.hi !== a.hi || masked.lo !== a.lo;
  // Past /64 the address is kept as given: nothing beyond the top 64 bits locates anyone.
  const text = a.family === 6 && prefix > 64 ? `${m[1]!.toLowerCase()}/${prefix}` : formatAddr(masked, prefix);
  return { addr: masked, prefix, text, hostBits };
}

/** Throws ExplainError when `client` is not an address or `subnet` (when given) not a subnet. */
export function checkExplainInput(client: string, subnet: string | undefined): void {
  if (parseAddr(client.trim()) === null) throw new ExplainError('client', `"${client}" is not an IPv4 or IPv6 address`);
  if (subnet !== undefined && subnet.trim() !== '') parseSubnet(subnet);
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** RFC 5952 text of eight 16-bit groups. */
function format6(g: number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** An IPv6 address from its top 64 bits, the low 64 all zero or all one. */
function addr6(hi: number, lo: number, ones: boolean): string {
  const low = ones ? 0xffff : 0;
  return format6([hi >>> 16, hi & 0xffff, lo >>> 16, lo & 0xffff, low, low, low, low]);
}

function addr4(x: number): string {
  return formatAddr({ family: 4, hi: x >>> 0, lo: 0 });
}

/** The range as `first–last`. */
function rangeText(r: CellRange): string {
  return r.family === 4 ? `${addr4(r.firstHi)}–${addr4(r.lastHi)}` : `${addr6(r.firstHi, r.firstLo, false)}–${addr6(r.lastHi, r.lastLo, true)}`;
}

/** The range as the fewest CIDR blocks (IPv6 at most /64: the table's key space). */
function rangeCidrs(r: CellRange, limit: number): { cidrs: string[]; more: number } {
  const bits = r.family === 4 ? 32n : 64n;
  const val = (hi: number, lo: number) => (r.family === 4 ? BigInt(hi >>> 0) : (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));
  let cur = val(r.firstHi, r.firstLo);
  const end = val(r.lastHi, r.lastLo);
  const cidrs: string[] = [];
  let more = 0;
  while (cur <= end) {
    let size = 0n;
    // Largest aligned block starting at cur that stays inside the range.
    while (size < bits && (cur & ((1n << (size + 1n)) - 1n)) === 0n && cur + (1n << (size + 1n)) - 1n <= end) size++;
    if (cidrs.length < limit) {
      const prefix = Number(bits - size);
      if (r.family === 4) cidrs.push(`${addr4(Number(cur))}/${prefix}`);
      else cidrs.push(`${addr6(Number(cur >> 32n), Number(cur & 0xffffffffn), false)}/${prefix}`);
    } else more++;
    cur += 1n << size;
  }
  return { cidrs, more };
}

/** The key as CIDR text. */
function keyText(k: { family: 4 | 6; hi: number; lo: number; prefix: number }): string {
  return k.family === 4 ? `${addr4(k.hi)}/${k.prefix}` : `${addr6(k.hi, k.lo, false)}/${k.prefix}`;
}

/**
 * Explains the answer for one client. Throws ExplainError (field `client` or `subnet`) for
 * input that is not an address or a subnet; everything else is reported in the result.
 */
export function explain(input: ExplainInput): ExplainResult {
  const { geo, plan, now, qtype, decideName } = input;
  checkExplainInput(input.client, input.subnet);
  const client = input.client.trim();
  const clientAddr = parseAddr(client)!;
  const subnet = input.subnet === undefined || input.subnet.trim() === '' ? null : parseSubnet(input.subnet);
  const notes: string[] = [];

  // Locate exactly as the responder does.
  const loc = newClientLocation();
  locateClient(
    geo,
    subnet ? (subnet.addr.family === 4 ? ECS_FAMILY_IPV4 : ECS_FAMILY_IPV6) : 0,
    subnet ? subnet.prefix : -1,
    subnet ? subnet.addr.hi : 0,
    subnet ? subnet.addr.lo : 0,
    client,
    new SourceCache(),
    loc,
  );
  const special = loc.index < 0;
  const range = locatedRange(geo, loc, newCellRange());
  const base = cellsOf(geo)[loc.cell]!;
  const cell: Cell = range ? { ...base, range: { ...range } } : base;
  const entry = special ? geo.rankings[0]! : geo.rankings[loc.cell]!;

  // The table in force.
  const compiled = geo.meta.dbHash !== 'none';
  const tableNote = compiled
    ? `compiled from ${geo.meta.databaseType || 'the database'} (built ${geo.meta.databaseBuilt || 'unknown'})${input.geoNote ? `; ${input.geoNote}` : ''}`
    : `no compiled geo table is in force (${geo.rankings[0]?.note ?? 'none'}${input.geoNote ? `; ${input.geoNote}` : ''}): every client is placed at the default location`;
  if (!compiled) notes.push(`geo: ${tableNote}`);

  // ECS: used, or why not.
  let fallbackReason: string | undefined;
  if (subnet) {
    if (subnet.hostBits) notes.push(`subnet: host bits past /${subnet.prefix} were cleared (${subnet.text}); a resolver never sends them, and the DNS path answers such a query FORMERR`);
    if (subnet.prefix === 0) fallbackReason = `the ECS source prefix is 0: the client asked not to be located by its subnet (RFC 7871 §7.1.2), so the packet's source ${client} locates it`;
    else if (loc.fallback) fallbackReason = `the ECS subnet ${subnet.text} is private, reserved or not routable, so the packet's source ${client} locates the client`;
    if (fallbackReason) notes.push(`ecs: ${fallbackReason}`);
  }
  if (special) {
    notes.push(
      `cell: ${loc.fromEcs ? subnet!.text : client} is private, reserved or not routable${subnet && !loc.fromEcs ? ' and the ECS subnet was not used' : ''}: the client is placed at the default location, with subnet key ${keyText(loc.key)} (every such client draws alike)`,
    );
  }

  // The database's view, for people.
  let located: ExplainResult['located'] = null;
  // The address that located the client: the ECS network, or the source as given (IPv4-mapped as IPv4).
  const lookupAddress = special ? null : loc.fromEcs ? formatAddr(subnet!.addr) : clientAddr.family === 4 ? formatAddr(clientAddr) : client;
  if (lookupAddress !== null && input.lookup) {
    try {
      const p = input.lookup(lookupAddress);
      if (p) located = { address: lookupAddress, ...p };
      else notes.push(`located: the database has no location for ${lookupAddress}`);
    } catch (e) {
      notes.push(`located: the database lookup of ${lookupAddress} failed: ${(e as Error).message}`);
    }
  } else if (lookupAddress !== null) notes.push('located: no GeoIP database is in use (geoip disabled, or none could be read)');

  // Where the ranking was measured from.
  let distanceFrom: ExplainResult['distanceFrom'] = null;
  if (special || entry.origin === 'default') distanceFrom = { what: 'default-location', lat: input.fleet.defaultLocation.lat, lon: input.fleet.defaultLocation.lon };
  else if (located) distanceFrom = { what: 'database', lat: located.lat, lon: located.lon };
  if (!special && entry.origin === 'override') notes.push(`cell: the network override ${entry.note ?? ''} sets the ranking; distances are shown for information only`);
  if (!special && entry.origin === 'geoip' && located) {
    const expect = rankRegions(located, input.fleet.regions, TOP_K).map((r) => r.id);
    if (expect.join(',') !== entry.regions.join(',')) {
      notes.push(
        `cell: from ${lookupAddress}'s own position the ranking would be ${expect.join(', ')}; the cell keeps the ranking of most of its /${loc.key.family === 4 ? 24 : 56} ` +
          '(cells are never finer than /24 or /56), or the table was compiled from another database or fleet',
      );
    }
  }

  // The decision: the DNS path's own function.
  const ans = decide(plan, cell, loc.key, decideName, qtype, now, { minTtl: input.minTtl, explain: true, ecsSource: loc.ecsSource < 0 ? undefined : loc.ecsSource });
  const splits = admissionSplits(plan, cell.ranking, now);
  const uniform = isUniformTable(geo);
  const scope = replyScope(geo, uniform, loc, splits, ans.ecsScope, newCellRange());

  // Per region: what decide weighed (mirrors its walk; decide's own reasons are in `reasons`).
  const fam = qtype === 'A' ? 'v4' : 'v6';
  const famName = qtype === 'A' ? 'IPv4' : 'IPv6';
  const home = cell.ranking[0];
  const fleetById = new Map(input.fleet.regions.map((r) => [r.id, r]));
  const from: LatLon | null = distanceFrom;
  const measure = (id: RegionId) => {
    const r = fleetById.get(id);
    if (!r || !from) return { km: null, biased: null, bias: r?.bias ?? 0 };
    const km = greatCircleKm(from, r.location);
    return { km: round1(km), biased: round1(biasedDistance(km, r.bias)), bias: r.bias };
  };
  const ranked = new Set(cell.ranking);
  const others = input.fleet.regions
    .map((r) => r.id)
    .filter((id) => !ranked.has(id))
    .map((id) => ({ id, m: measure(id) }))
    .sort((a, b) => (a.m.biased ?? 0) - (b.m.biased ?? 0) || (a.id < b.id ? -1 : 1))
    .map((x) => x.id);
  let admittedBy: RegionId | null = null;
  /** A region with a weight below 1 was weighed (decide then scopes the answer to the floor). */
  let admissionInPlay = false;
  const candidates: ExplainCandidate[] = [];
  for (const id of [...cell.ranking, ...others]) {
    const rank = ranked.has(id) ? cell.ranking.indexOf(id) + 1 : null;
    const serves = decideName.regions.get(id);
    const hasFamily = serves !== undefined && serves[fam].length > 0;
    const step = regionStepAt(plan, id, now);
    const down = step.down;
    const weight = home === undefined ? 1 : stepWeight(step, home);
    const draw = weight < 1 ? admissionDraw(loc.key, id) : undefined;
    const blocked = !serves
      ? `does not serve ${decideName.name}`
      : !hasFamily
        ? `has no ${famName} endpoints: skipped for ${qtype}`
        : down
          ? `is down in its plan step from ${new Date(step.at).toISOString()}${step.reasons.length ? ` (${step.reasons.join('; ')})` : ''}`
          : null;
    const would = blocked === null && (draw === undefined || draw < weight);
    const verdict =
      blocked ??
      (draw === undefined
        ? `weight 1 for home ${home}: admitted`
        : would
          ? `weight ${weight} for home ${home}, draw ${draw.toFixed(4)} < ${weight}: admitted`
          : `weight ${weight} for home ${home}, draw ${draw.toFixed(4)} ≥ ${weight}: not admitted, spills to the next`);
    let admitted: boolean | null;
    let why: string;
    if (rank !== null && admittedBy === null) {
      admitted = would;
      if (would) admittedBy = id;
      if (blocked === null && draw !== undefined) admissionInPlay = true;
      why = verdict;
    } else if (rank !== null) {
      admitted = null;
      why = `not reached: ${admittedBy} admitted the client first${blocked ? `; it ${blocked}` : would ? '' : `; its draw ${draw!.toFixed(4)} ≥ ${weight} would not admit it`}`;
    } else {
      admitted = null;
      why = entry.origin === 'override' && !special ? `not in the override's list (${entry.note ?? ''})` : `not in the cell's ranking (its ${TOP_K} nearest by biased distance)`;
    }
    const answered = ans.region === id;
    if (answered && admitted !== true) why += `; answered under whenAllDown=${decideName.whenAllDown}: no region admitted the client`;
    candidates.push({
      region: id,
      rank,
      ...(({ km, biased, bias }) => ({ distanceKm: km, bias, biasedKm: biased }))(measure(id)),
      servesName: serves !== undefined,
      hasFamily,
      down,
      weight,
      ...(draw === undefined ? {} : { draw }),
      admitted,
      answered,
      why,
    });
  }
  if (subnet) notes.push(`scope: /${scope}: ${scopeWhy(loc.fallback, subnet, splits, uniform, admissionInPlay)}`);
  if (ans.rcode === 'answer' && ans.region === null && ans.addresses.length > 0) notes.push(`answer: whenAllDown=all: every serving region's ${famName} addresses`);
  if (ans.rcode === 'answer' && ans.addresses.length === 0) notes.push(`answer: NODATA (no ${qtype} records), under whenAllDown=${decideName.whenAllDown}`);

  return {
    at: now,
    name: input.name,
    steeredName: decideName.name,
    qtype,
    client,
    subnet: subnet ? subnet.text : null,
    subnetKey: keyText(loc.key),
    usedEcs: loc.fromEcs,
    ...(fallbackReason === undefined ? {} : { fallbackReason }),
    located,
    geoTable: { version: geo.version, compiled, databaseType: geo.meta.databaseType, databaseBuilt: geo.meta.databaseBuilt, note: tableNote },
    cell: {
      origin: entry.origin,
      special,
      description: cell.origin,
      range: range ? rangeText(range) : null,
      ...(range ? (({ cidrs, more }) => ({ rangeCidrs: cidrs, rangeCidrsMore: more }))(rangeCidrs(range, 8)) : { rangeCidrs: [], rangeCidrsMore: 0 }),
      ranking: [...cell.ranking],
    },
    distanceFrom,
    candidates,
    answer: { region: ans.region, addresses: [...ans.addresses], ttl: ans.ttl, ecsScope: subnet ? scope : null, rcode: ans.rcode === 'servfail' ? 'SERVFAIL' : 'NOERROR' },
    planStep: (() => {
      // The plan step of the client's home region (else of the region answered): its start and reasons.
      const ps = regionStepAt(plan, home ?? ans.region ?? '', now);
      return { at: ps.at, planVersion: plan.version, reasons: ps.reasons.length > 0 ? [...ps.reasons] : ['nothing planned for this region: weight 1, up'] };
    })(),
    reasons: ans.reasons,
    notes,
  };
}

/** Why the reply carries scope `scope` (the branches of replyScope, in words). */
function scopeWhy(fallback: boolean, subnet: Subnet, splits: boolean, uniform: boolean, admissionInPlay: boolean): string {
  const floor = subnet.addr.family === 4 ? 24 : 56;
  if (subnet.prefix === 0) return 'the query\'s source prefix is 0 (RFC 7871 §7.1.2)';
  if (!splits && uniform) return 'one cell holds every address and no admission weight is below 1: every client gets this answer';
  if (fallback) return `the ECS subnet was not used: min(source /${subnet.prefix}, /${floor})`;
  if (splits && admissionInPlay) return `a region weighed at or before the answer has a weight below 1, so the answer depends on the client's /${floor}`;
  return 'the widest prefix around the subnet key that stays inside the cell';
}
