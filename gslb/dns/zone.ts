/**
 * The zone compiler: configuration → a name table and pre-encoded answer templates.
 *
 * Every answer GridSteer can give is encoded here, once, at load: the bytes after the
 * question section, with compression pointers laid out for a question whose name is the
 * template's owner at offset 12. The responder copies a template behind the client's own
 * question bytes (same length, so pointers hold) and patches only what varies per query:
 * ID and flags, TTLs of steered records, pointer offsets when the question name is longer
 * than the owner (NXDOMAIN and referrals below a known node), and the OPT record.
 *
 * The compiled tables are plain data built from a ZoneSnapshot (JSON-serialisable), so
 * the primary validates config and sends snapshots to workers, which compile them again.
 */
import { QCLASS, QTYPE, RCODE, typeByName } from './constants.js';
import { MessageWriter, ipBytes, type RData, type ResourceRecord } from './message.js';
import { absoluteName, isSubdomainKey, labelsOf, nameKey, parentKey } from './name.js';
import { parseRData, RDataError } from './rdata.js';
import type { Config, RegionConfig } from '../config/schema.js';
import type { WhenAllDownPolicy } from '../model/policy.js';
import type { DecideName } from '../policy/decide.js';
import { isIP } from 'node:net';
import { renderPath } from '../config/load.js';

/** What the responder copies: see the module comment. Offsets are relative to `body`. */
export interface Template {
  body: Buffer;
  an: number;
  ns: number;
  ar: number;
  aa: boolean;
  rcode: number;
  /** Offsets of 2-byte compression pointers (shifted when the question is longer than the owner). */
  ptrs: number[];
  /** Offsets of TTL fields that take the decided TTL (steered records). */
  ttlAt: number[];
  /** Wire length of the owner name the template was encoded for. */
  ownerLen: number;
}

export interface ZoneInfo {
  /** Its index in CompiledZones.zones (the rate limiter's per-zone NXDOMAIN buckets). */
  index: number;
  key: string;
  /** Absolute, lowercase, no trailing dot. */
  name: string;
  soa: ResourceRecord;
  /** RFC 2308: min(SOA TTL, SOA MINIMUM). */
  negativeTtl: number;
  /** NXDOMAIN for a name directly below a node of this zone (owner: the apex). */
  nxdomain: Template;
}

/** A steered name's compiled form. */
export interface GslbNode {
  decide: DecideName;
  key: string;
}

export interface NameNode {
  key: string;
  name: string;
  zone: ZoneInfo;
  /** A delegation point below the apex: everything at and below gets `referral`. */
  referral?: Template;
  /** Answers by qtype for static data (the qtype's RRset, a CNAME chain, or NODATA). */
  answers: Map<number, Template>;
  /** NODATA (or the CNAME chain ending in one) for any other qtype. */
  otherwise: Template;
  /** RFC 8482 answer to ANY. */
  any: Template;
  /**
   * Set when A/AAAA at this name are steered: the name itself, or a CNAME chain ending at it.
   * Templates by family, keyed by region id, `*all` (every region) and `*empty` (NODATA).
   */
  steered?: { target: GslbNode; A: Map<string, Template>; AAAA: Map<string, Template> };
}

export interface CompiledZones {
  nodes: Map<string, NameNode>;
  zones: ZoneInfo[];
  /** Steered names by key. */
  gslb: Map<string, GslbNode>;
}

/** A problem found while compiling: `path` indexes gridsteer.yaml. */
export interface ZoneIssue {
  path: (string | number)[];
  message: string;
}

export class ZoneError extends Error {
  constructor(readonly issues: ZoneIssue[]) {
    super(`zones: ${issues.length} problem(s): ${issues.map((i) => `${renderPath(i.path)}: ${i.message}`).join('; ')}`);
  }
}

/** The part of the configuration the DNS layer needs: plain data, sent to workers as is. */
export interface ZoneSnapshot {
  zones: Config['zones'];
  names: Config['names'];
  regions: Pick<RegionConfig, 'id' | 'endpoints'>[];
  defaultWhenAllDown?: WhenAllDownPolicy;
}

interface RRsetBuild {
  type: number;
  ttl: number;
  rrs: ResourceRecord[];
  path: (string | number)[];
}

interface NodeBuild {
  key: string;
  name: string;
  zone: number;
  rrsets: Map<number, RRsetBuild>;
  gslb?: GslbNode;
}

const HINFO_RFC8482 = Buffer.from([7, ...Buffer.from('RFC8482'), 0]);

/** Compiles a snapshot; throws ZoneError listing every problem. */
export function compileZones(snap: ZoneSnapshot): CompiledZones {
  const issues: ZoneIssue[] = [];
  const builds = new Map<string, NodeBuild>();
  const zoneKeys: string[] = [];
  const zoneInfos: { key: string; name: string; soa: ResourceRecord; negativeTtl: number; ttl: number }[] = [];
  /** Index into snap.zones of the entry each zone came from (duplicates are skipped). */
  const zoneEntry: number[] = [];

  const zoneOf = (key: string): number => {
    let best = -1;
    zoneKeys.forEach((zk, i) => {
      if (isSubdomainKey(key, zk) && (best < 0 || zk.length > zoneKeys[best]!.length)) best = i;
    });
    return best;
  };
  const node = (name: string, zone: number): NodeBuild => {
    const key = nameKey(name);
    let n = builds.get(key);
    if (!n) {
      n = { key, name, zone, rrsets: new Map() };
      builds.set(key, n);
    }
    return n;
  };
  const add = (name: string, zone: number, rr: ResourceRecord, path: (string | number)[]) => {
    const n = node(name, zone);
    const set = n.rrsets.get(rr.type);
    if (!set) n.rrsets.set(rr.type, { type: rr.type, ttl: rr.ttl, rrs: [rr], path });
    else {
      if (set.ttl !== rr.ttl) {
        issues.push({ path, message: `TTL ${rr.ttl} differs from ${set.ttl} of the other ${typeNameOf(rr.type)} records at ${name} (RFC 2181 §5.2): give them one TTL` });
      }
      const dup = set.rrs.some((o) => rdataEqual(o.data, rr.data));
      if (dup) issues.push({ path, message: `duplicate ${typeNameOf(rr.type)} record at ${name}: remove it` });
      else set.rrs.push(rr);
    }
  };

  // Zones: apex, SOA, NS and glue.
  snap.zones.forEach((z, zi) => {
    const zname = absoluteName(z.name, '');
    const key = nameKey(zname);
    if (zoneKeys.includes(key)) {
      issues.push({ path: ['zones', zi, 'name'], message: `zone ${zname} is configured twice (also zones[${zoneEntry[zoneKeys.indexOf(key)]}]): merge the two entries` });
      return;
    }
    zoneKeys.push(key);
    zoneEntry.push(zi);
    const nsNames = z.nameservers.map((n) => absoluteName(n.name, zname));
    const soaTtl = z.soa.ttl ?? z.ttl;
    const soa: ResourceRecord = {
      name: zname || '.',
      type: QTYPE.SOA,
      class: QCLASS.IN,
      ttl: soaTtl,
      data: {
        kind: 'soa',
        mname: (z.soa.mname ? absoluteName(z.soa.mname, zname) : nsNames[0]!) + '.',
        rname: absoluteName(z.soa.rname, zname) + '.',
        serial: z.soa.serial,
        refresh: z.soa.refresh,
        retry: z.soa.retry,
        expire: z.soa.expire,
        minimum: z.soa.minimum,
      },
    };
    zoneInfos.push({ key, name: zname, soa, negativeTtl: Math.min(soaTtl, z.soa.minimum), ttl: z.ttl });
  });
  snap.zones.forEach((z, zi) => {
    const zname = absoluteName(z.name, '');
    const zix = zoneKeys.indexOf(nameKey(zname));
    if (zix < 0 || zoneEntry[zix] !== zi) return;
    add(zname, zix, zoneInfos[zix]!.soa, ['zones', zi, 'soa']);
    z.nameservers.forEach((ns, ni) => {
      const nsName = absoluteName(ns.name, zname);
      add(zname, zix, { name: zname, type: QTYPE.NS, class: QCLASS.IN, ttl: z.ttl, data: { kind: 'name', name: nsName + '.' } }, ['zones', zi, 'nameservers', ni]);
      const inZone = isSubdomainKey(nameKey(nsName), nameKey(zname));
      const addrs = ns.addresses ?? [];
      if (inZone && addrs.length === 0) {
        issues.push({ path: ['zones', zi, 'nameservers', ni, 'addresses'], message: `${nsName} is inside the zone, so it needs glue: add its addresses` });
      }
      if (!inZone && addrs.length > 0) {
        issues.push({ path: ['zones', zi, 'nameservers', ni, 'addresses'], message: `${nsName} is outside ${zname}: glue is only for names inside the zone; remove the addresses` });
      }
      if (inZone) {
        addrs.forEach((a, ai) => {
          const type = isIP(a) === 4 ? QTYPE.A : QTYPE.AAAA;
          add(nsName, zix, { name: nsName, type, class: QCLASS.IN, ttl: z.ttl, data: { kind: 'raw', bytes: ipBytes(a) } }, ['zones', zi, 'nameservers', ni, 'addresses', ai]);
        });
      }
    });
    // Static records.
    z.records.forEach((r, ri) => {
      const path = ['zones', zi, 'records', ri];
      const type = typeByName(r.type)!;
      let owner: string;
      try {
        owner = absoluteName(r.name, zname);
        labelsOf(owner);
      } catch (e) {
        issues.push({ path: [...path, 'name'], message: (e as Error).message });
        return;
      }
      if (!isSubdomainKey(nameKey(owner), nameKey(zname))) {
        issues.push({ path: [...path, 'name'], message: `${owner} is outside the zone ${zname}: use a name relative to the zone, or "@"` });
        return;
      }
      if (type === QTYPE.NS && owner === zname) {
        issues.push({ path: [...path, 'type'], message: 'the apex NS set comes from "nameservers": move it there' });
        return;
      }
      const datas = Array.isArray(r.data) ? r.data : [r.data];
      datas.forEach((d, di) => {
        const dpath = Array.isArray(r.data) ? [...path, 'data', di] : [...path, 'data'];
        try {
          add(owner, zix, { name: owner, type, class: QCLASS.IN, ttl: r.ttl ?? z.ttl, data: parseRData(type, d, zname) }, dpath);
        } catch (e) {
          if (e instanceof RDataError) issues.push({ path: dpath, message: e.message });
          else throw e;
        }
      });
    });
  });

  // Steered names.
  const regionAddrs = new Map(
    snap.regions.map((r) => [
      r.id,
      {
        v4: r.endpoints.filter((e) => isIP(e.address) === 4).map((e) => e.address),
        v6: r.endpoints.filter((e) => isIP(e.address) === 6).map((e) => e.address),
      },
    ]),
  );
  const gslb = new Map<string, GslbNode>();
  snap.names.forEach((n, ni) => {
    const name = absoluteName(n.name.endsWith('.') ? n.name : n.name + '.', '');
    const key = nameKey(name);
    const zix = zoneOf(key);
    if (zix < 0) {
      issues.push({ path: ['names', ni, 'name'], message: `${name} is in none of the zones (${zoneInfos.map((z) => z.name).join(', ')}): add its zone or fix the name` });
      return;
    }
    if (gslb.has(key)) {
      const first = snap.names.findIndex((o) => nameKey(absoluteName(o.name.endsWith('.') ? o.name : o.name + '.', '')) === key);
      issues.push({ path: ['names', ni, 'name'], message: `${name} is configured twice (also names[${first}]; names compare without case): remove one` });
      return;
    }
    const ids = n.regions ?? snap.regions.map((r) => r.id);
    const regions = new Map<string, { v4: string[]; v6: string[] }>();
    for (const id of ids) {
      const a = regionAddrs.get(id);
      if (a) regions.set(id, a);
    }
    const g: GslbNode = {
      key,
      decide: { name, ttl: n.ttl, regions, whenAllDown: n.whenAllDown ?? snap.defaultWhenAllDown ?? 'nearest' },
    };
    gslb.set(key, g);
    const nb = node(name, zix);
    for (const t of [QTYPE.A, QTYPE.AAAA, QTYPE.CNAME]) {
      if (nb.rrsets.has(t)) {
        issues.push({
          path: nb.rrsets.get(t)!.path,
          message:
            t === QTYPE.CNAME
              ? `${name} is a steered name and cannot also have a CNAME: remove the CNAME (or point the CNAME elsewhere and steer that name)`
              : `${name} is a steered name: its ${typeNameOf(t)} records come from the regions' endpoints; remove this record`,
        });
      }
    }
    nb.gslb = g;
  });

  // Structure checks: CNAME exclusivity, delegations, occluded data.
  const cuts = new Set<string>();
  for (const b of builds.values()) {
    const cname = b.rrsets.get(QTYPE.CNAME);
    if (cname) {
      if (cname.rrs.length > 1) issues.push({ path: cname.path, message: `more than one CNAME at ${b.name}: keep one` });
      if (b.key === zoneKeys[b.zone]) {
        issues.push({ path: cname.path, message: 'a CNAME cannot be at the zone apex (it has SOA and NS): use A/AAAA records there, or make the apex a steered name' });
      } else if (b.rrsets.size > 1) {
        const others = [...b.rrsets.keys()].filter((t) => t !== QTYPE.CNAME).map(typeNameOf);
        issues.push({ path: cname.path, message: `${b.name} has a CNAME and other data (${others.join(', ')}); a CNAME must stand alone (RFC 2181 §10.1): remove the CNAME or the other records at ${b.name}` });
      }
    }
    if (b.rrsets.has(QTYPE.NS) && b.key !== zoneKeys[b.zone]) cuts.add(b.key);
  }
  const glueOnly = new Map<string, NodeBuild>();
  for (const b of builds.values()) {
    for (let k = parentKey(b.key); k !== undefined && k.length >= zoneKeys[b.zone]!.length; k = parentKey(k)) {
      if (cuts.has(k)) {
        const dataTypes = [...b.rrsets.keys()].filter((t) => t !== QTYPE.A && t !== QTYPE.AAAA);
        if (b.gslb) {
          const ni = snap.names.findIndex((o) => nameKey(absoluteName(o.name.endsWith('.') ? o.name : o.name + '.', '')) === b.key);
          issues.push({ path: ['names', ni, 'name'], message: `${b.name} is below the delegation at ${keyName(k)}, so this server cannot answer for it: steer a name outside the delegated subzone, or remove the delegation` });
        } else if (dataTypes.length > 0) {
          const set = b.rrsets.get(dataTypes[0]!)!;
          issues.push({ path: set.path, message: `${b.name} is below the delegation at ${keyName(k)}: only glue (A/AAAA) may be there; move the record to the child zone's servers, or remove it` });
        }
        glueOnly.set(b.key, b);
        break;
      }
    }
  }
  if (issues.length > 0) throw new ZoneError(issues);
  for (const k of glueOnly.keys()) builds.delete(k);

  // Empty non-terminals: every name between a node and its apex exists.
  for (const b of [...builds.values()]) {
    for (let k = parentKey(b.key); k !== undefined && isSubdomainKey(k, zoneKeys[b.zone]!) && !builds.has(k); k = parentKey(k)) {
      builds.set(k, { key: k, name: keyName(k), zone: b.zone, rrsets: new Map() });
    }
  }

  // Templates.
  const zones: ZoneInfo[] = zoneInfos.map((z, index) => ({
    index,
    key: z.key,
    name: z.name,
    soa: z.soa,
    negativeTtl: z.negativeTtl,
    nxdomain: encodeTemplate(z.name, { authority: [negSoa(z)] }, { aa: true, rcode: RCODE.NXDOMAIN }),
  }));
  const addressesOf = (key: string): ResourceRecord[] => {
    const b = builds.get(key) ?? glueOnly.get(key);
    if (!b) return [];
    return [...(b.rrsets.get(QTYPE.A)?.rrs ?? []), ...(b.rrsets.get(QTYPE.AAAA)?.rrs ?? [])];
  };
  const additionalFor = (rrs: ResourceRecord[]): ResourceRecord[] => {
    const out: ResourceRecord[] = [];
    for (const rr of rrs) {
      const d = rr.data;
      const target = d.kind === 'name' && rr.type === QTYPE.NS ? d.name : d.kind === 'mx' ? d.exchange : undefined;
      if (target) out.push(...addressesOf(nameKey(target)));
    }
    return out;
  };

  const nodes = new Map<string, NameNode>();
  for (const b of builds.values()) {
    const zone = zones[b.zone]!;
    const zinfo = zoneInfos[b.zone]!;
    const answers = new Map<number, Template>();
    if (cuts.has(b.key)) {
      const nsrrs = b.rrsets.get(QTYPE.NS)!.rrs;
      const referral = encodeTemplate(b.name, { authority: nsrrs, additional: additionalFor(nsrrs) }, { aa: false, rcode: RCODE.NOERROR });
      nodes.set(b.key, { key: b.key, name: b.name, zone, referral, answers, otherwise: referral, any: referral });
      continue;
    }
    // Follow a CNAME chain inside our data (RFC 1034 §4.3.2); at most 8 links.
    const chain: ResourceRecord[] = [];
    let cur: NodeBuild | undefined = b;
    let endKind: 'node' | 'nxdomain' | 'outside' = 'node';
    let endZone = zinfo;
    const seen = new Set<string>();
    while (cur && cur.rrsets.has(QTYPE.CNAME) && chain.length < 8 && !seen.has(cur.key)) {
      seen.add(cur.key);
      const rr: ResourceRecord = cur.rrsets.get(QTYPE.CNAME)!.rrs[0]!;
      chain.push(rr);
      const tkey = nameKey((rr.data as { name: string }).name);
      const next = builds.get(tkey);
      if (next) cur = next;
      else {
        const tz = zoneOf(tkey);
        const underCut = [...cuts].some((c) => isSubdomainKey(tkey, c)) || glueOnly.has(tkey);
        if (tz >= 0 && !underCut) {
          endKind = 'nxdomain';
          endZone = zoneInfos[tz]!;
        } else endKind = 'outside';
        cur = undefined;
      }
    }
    const final = cur;
    const isChain = chain.length > 0;
    const finalStop = !final || final.rrsets.has(QTYPE.CNAME) || cuts.has(final.key);
    const staticAnswer = (qtype: number): Template => {
      if (isChain && qtype === QTYPE.CNAME) return encodeTemplate(b.name, { answer: [chain[0]!] }, { aa: true, rcode: RCODE.NOERROR });
      if (!isChain || (final && !finalStop)) {
        const target = isChain ? final! : b;
        const set = target.rrsets.get(qtype);
        if (set) return encodeTemplate(b.name, { answer: [...chain, ...set.rrs], additional: additionalFor(set.rrs) }, { aa: true, rcode: RCODE.NOERROR });
        const tz = zoneInfos[target.zone]!;
        return encodeTemplate(b.name, { answer: chain, authority: [negSoa(tz)] }, { aa: true, rcode: RCODE.NOERROR });
      }
      if (endKind === 'nxdomain') return encodeTemplate(b.name, { answer: chain, authority: [negSoa(endZone)] }, { aa: true, rcode: RCODE.NXDOMAIN });
      return encodeTemplate(b.name, { answer: chain }, { aa: true, rcode: RCODE.NOERROR });
    };
    const types = new Set<number>(isChain ? [QTYPE.CNAME] : []);
    for (const t of (isChain && final && !finalStop ? final : b).rrsets.keys()) types.add(t);
    for (const t of types) answers.set(t, staticAnswer(t));
    const otherwise = staticAnswer(0);
    const any = encodeTemplate(
      b.name,
      { answer: [{ name: b.name, type: QTYPE.HINFO, class: QCLASS.IN, ttl: zinfo.ttl, data: { kind: 'raw', bytes: HINFO_RFC8482 } }] },
      { aa: true, rcode: RCODE.NOERROR },
    );
    const n: NameNode = { key: b.key, name: b.name, zone, answers, otherwise, any };
    const target = isChain ? (final && !finalStop ? final.gslb : undefined) : b.gslb;
    if (target) {
      const targetZone = zoneInfos[builds.get(target.key)!.zone]!;
      const fam = (type: number) => {
        const m = new Map<string, Template>();
        const family = type === QTYPE.A ? 'v4' : 'v6';
        const rrsFor = (addrs: string[]): ResourceRecord[] =>
          addrs.map((a) => ({ name: target.decide.name, type, class: QCLASS.IN, ttl: target.decide.ttl, data: { kind: 'raw', bytes: ipBytes(a) } as RData }));
        for (const [id, a] of target.decide.regions) {
          if (a[family].length > 0) m.set(id, encodeTemplate(b.name, { answer: [...chain, ...rrsFor(a[family])] }, { aa: true, rcode: RCODE.NOERROR, steered: chain.length }));
        }
        const all = [...new Set([...target.decide.regions.values()].flatMap((a) => a[family]))];
        m.set('*all', encodeTemplate(b.name, { answer: [...chain, ...rrsFor(all)] }, { aa: true, rcode: RCODE.NOERROR, steered: chain.length }));
        m.set('*empty', encodeTemplate(b.name, { answer: chain, authority: [negSoa(targetZone)] }, { aa: true, rcode: RCODE.NOERROR }));
        return m;
      };
      n.steered = { target, A: fam(QTYPE.A), AAAA: fam(QTYPE.AAAA) };
    }
    nodes.set(b.key, n);
  }
  return { nodes, zones, gslb };
}

function negSoa(z: { soa: ResourceRecord; negativeTtl: number }): ResourceRecord {
  return { ...z.soa, ttl: z.negativeTtl };
}

function keyName(key: string): string {
  const parts: string[] = [];
  for (let i = 0; i < key.length; ) {
    const len = key.charCodeAt(i);
    parts.push(key.slice(i + 1, i + 1 + len));
    i += 1 + len;
  }
  return parts.join('.');
}

function typeNameOf(t: number): string {
  return Object.entries(QTYPE).find(([, v]) => v === t)?.[0] ?? `TYPE${t}`;
}

function rdataEqual(a: RData, b: RData): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Encodes the sections of an answer for a question whose name is `owner`.
 * `steered`: records from this index on in the answer section take the decided TTL.
 */
export function encodeTemplate(
  owner: string,
  s: { answer?: ResourceRecord[]; authority?: ResourceRecord[]; additional?: ResourceRecord[] },
  o: { aa: boolean; rcode: number; steered?: number },
): Template {
  const w = new MessageWriter(512);
  w.bytes(Buffer.alloc(12));
  w.name(owner).u16(0).u16(QCLASS.IN);
  const qEnd = w.pos;
  const ttlAt: number[] = [];
  const answer = s.answer ?? [];
  answer.forEach((rr, i) => {
    w.name(rr.name).u16(rr.type).u16(rr.class);
    if (o.steered !== undefined && i >= o.steered) ttlAt.push(w.pos - qEnd);
    w.u32(rr.ttl).rdata(rr.type, rr.data);
  });
  for (const rr of s.authority ?? []) w.record(rr);
  for (const rr of s.additional ?? []) w.record(rr);
  const full = w.finish();
  return {
    body: Buffer.from(full.subarray(qEnd)),
    an: answer.length,
    ns: s.authority?.length ?? 0,
    ar: s.additional?.length ?? 0,
    aa: o.aa,
    rcode: o.rcode,
    ptrs: w.pointers.filter((p) => p >= qEnd).map((p) => p - qEnd),
    ttlAt,
    ownerLen: qEnd - 12 - 4,
  };
}

/** The snapshot of a loaded config that the DNS layer compiles. */
export function snapshotOf(config: Config, regions: RegionConfig[]): ZoneSnapshot {
  return {
    zones: config.zones,
    names: config.names,
    regions: regions.map((r) => ({ id: r.id, endpoints: r.endpoints })),
    defaultWhenAllDown: config.policy.whenAllDown,
  };
}
