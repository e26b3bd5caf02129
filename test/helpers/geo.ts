/**
 * What the geo suites expect, worked out without the server's code:
 *
 * - the example fleet's coordinates and addresses, written out by hand (as in fleet.ts);
 * - great-circle ranking of the regions from a location (haversine, ties by id);
 * - the GeoLite2 City database read with MaxMind's own readers: `@maxmind/geoip2-node` for
 *   what it says about an address (country, subdivision, city, coordinates), `mmdb-lib` for
 *   the network around an address, from which the expected ECS scope of a reply is computed
 *   by the rule of docs/dns.md ("the widest aligned prefix around the key that stays inside
 *   the client's cell", cells never splitting a /24 or /56, overrides by longest prefix);
 * - the admission hash of docs/adr/0003 (MurmurHash3_x86_32 seeded with FNV-1a-32), from the
 *   published definitions;
 * - /readyz polling (bounded) until the geo table is in force.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Reader as Geoip2Reader, type ReaderModel } from '@maxmind/geoip2-node';
import { Reader as MmdbReader, type CityResponse } from 'mmdb-lib';
import { dig, digSummary, type DigMessage, type DigResult } from './dig.js';
import { sleep, type Endpoint } from './net.js';

// ---------------------------------------------------------------- the example fleet

export interface FleetRegion {
  lat: number;
  lon: number;
  a: string[];
  aaaa: string[];
}

/** regions/*.yaml, written out: coordinates and endpoint addresses (sorted). */
export const FLEET: Record<string, FleetRegion> = {
  'us-va': { lat: 39.04, lon: -77.49, a: ['192.0.2.10', '192.0.2.11'], aaaa: ['2001:db8:10::10'] },
  'us-tx': { lat: 32.45, lon: -99.73, a: ['192.0.2.20', '192.0.2.21'], aaaa: ['2001:db8:20::20'] },
  'ca-ab': { lat: 51.05, lon: -114.07, a: ['198.51.100.30'], aaaa: ['2001:db8:30::30'] },
  'eu-ie': { lat: 53.35, lon: -6.26, a: ['198.51.100.40', '198.51.100.41'], aaaa: ['2001:db8:40::40'] },
  'ap-tyo': { lat: 35.68, lon: 139.69, a: ['203.0.113.50'], aaaa: ['2001:db8:50::50'] },
  'ap-sin': { lat: 1.35, lon: 103.82, a: ['203.0.113.60'], aaaa: ['2001:db8:60::60'] },
  'sa-sao': { lat: -23.55, lon: -46.63, a: ['203.0.113.70'], aaaa: ['2001:db8:70::70'] },
};

/** policy.defaultLocation of gridsteer.yaml (Ashburn, VA). */
export const DEFAULT_LOCATION = { lat: 39.0, lon: -77.5 };
/** Regions kept per cell (docs/dns.md: "the top-4 ranking"). */
export const TOP_K = 4;
/** Cells never split a /24 (IPv4) or a /56 (IPv6). */
export const FLOOR4 = 24;
export const FLOOR6 = 56;

/** The region whose A (or AAAA) set is exactly `addrs`, or a description of what came back. */
export function regionOf(addrs: string[], family: 'a' | 'aaaa' = 'a'): string {
  const got = [...addrs].sort().join(',');
  for (const [id, r] of Object.entries(FLEET)) if ([...r[family]].sort().join(',') === got) return id;
  return `(no region answers ${got || 'nothing'})`;
}

const rad = (d: number) => (d * Math.PI) / 180;

/** Haversine distance in km on a sphere of the mean Earth radius. */
export function greatCircleKm(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const h = Math.sin(rad(b.lat - a.lat) / 2) ** 2 + Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(rad(b.lon - a.lon) / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** The fleet's regions ordered by distance from `loc` (every bias is 0), ties by id; top `k`. */
export function rankFrom(loc: { lat: number; lon: number }, k = TOP_K): string[] {
  return Object.entries(FLEET)
    .map(([id, r]) => ({ id, km: greatCircleKm(loc, r) }))
    .sort((x, y) => x.km - y.km || (x.id < y.id ? -1 : 1))
    .slice(0, k)
    .map((x) => x.id);
}

// ---------------------------------------------------------------- addresses as numbers

export type Family = 4 | 6;

export const familyBits = (f: Family): number => (f === 4 ? 32 : 128);
export const floorOf = (f: Family): number => (f === 4 ? FLOOR4 : FLOOR6);

/** Parses an IPv4 or IPv6 address (no zone, no embedded IPv4) into a number. */
export function parseIp(s: string): { family: Family; value: bigint } {
  if (!s.includes(':')) {
    const p = s.split('.').map(Number);
    if (p.length !== 4 || p.some((x) => !Number.isInteger(x) || x < 0 || x > 255)) throw new Error(`geo: bad IPv4 address ${s}`);
    return { family: 4, value: p.reduce((acc, x) => (acc << 8n) | BigInt(x), 0n) };
  }
  const [head, tail] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) throw new Error(`geo: bad IPv6 address ${s}`);
  return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

/** Dotted IPv4, or IPv6 as eight hex groups (what every reader accepts). */
export function formatIp(family: Family, v: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
  const g: string[] = [];
  for (let i = 7; i >= 0; i--) g.push(((v >> BigInt(i * 16)) & 0xffffn).toString(16));
  return g.join(':');
}

/** The mask keeping the top `prefix` bits of a `family` address. */
export function maskOf(family: Family, prefix: number): bigint {
  const bits = BigInt(familyBits(family));
  return prefix <= 0 ? 0n : ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(prefix))) - 1n);
}

export interface Cidr {
  family: Family;
  /** The address as written (host bits kept). */
  value: bigint;
  prefix: number;
  /** First and last address of the network. */
  start: bigint;
  end: bigint;
}

export function parseCidr(cidr: string): Cidr {
  const m = /^(.+)\/(\d{1,3})$/.exec(cidr);
  if (!m) throw new Error(`geo: ${cidr} is not a CIDR`);
  const { family, value } = parseIp(m[1]!);
  const prefix = Number(m[2]);
  const start = value & maskOf(family, prefix);
  return { family, value, prefix, start, end: start + (1n << BigInt(familyBits(family) - prefix)) - 1n };
}

// ---------------------------------------------------------------- the database

/** What the database says about one address (via @maxmind/geoip2-node). */
export interface Place {
  country: string | undefined;
  continent: string | undefined;
  subdivision: string | undefined;
  city: string | undefined;
  lat: number | undefined;
  lon: number | undefined;
  /** The database's network holding the address, e.g. 133.242.0.0/17. */
  network: string | undefined;
}

/** A network override as configured (`networks: [{ cidr, regions }]`). */
export interface OverrideSpec {
  cidr: string;
  regions: string[];
}

/** Thrown when the expected scope cannot be worked out (an even split inside one /24 or /56, too many networks). */
export class Incomputable extends Error {}

const LOOKUP_BUDGET = 3_000_000;

/** IPv6 prefixes a MaxMind database points at its IPv4 tree. */
const V6_ALIASES: Cidr[] = ['::/96', '::ffff:0:0/96', '2001::/32', '2002::/16'].map((c) => parseCidr(c));

/** Where the GeoIP suites find the unpacked database when the server does not say: its cache folder. */
export function defaultGeoCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CACHE_DIRECTORY) return env.CACHE_DIRECTORY.split(':')[0]!;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'gridsteer');
  return join(homedir(), '.cache', 'gridsteer');
}

export class GeoDb {
  private readonly model: ReaderModel;
  private readonly mmdb: MmdbReader<CityResponse>;
  private budget = 0;

  constructor(readonly file: string) {
    const buf = readFileSync(file);
    this.model = Geoip2Reader.openBuffer(buf);
    this.mmdb = new MmdbReader<CityResponse>(buf);
  }

  /** The database's metadata (mmdb-lib): node count and record size give the data section's offset. */
  get metadata(): { nodeCount: number; recordSize: number } {
    return this.mmdb.metadata;
  }

  /** What geoip2-node's City lookup says about `ip` (null when the address is not in the database). */
  place(ip: string): Place | null {
    try {
      const c = this.model.city(ip);
      return {
        country: c.country?.isoCode,
        continent: c.continent?.code,
        subdivision: c.subdivisions?.[0]?.isoCode,
        city: c.city?.names?.en,
        lat: c.location?.latitude,
        lon: c.location?.longitude,
        network: c.traits.network,
      };
    } catch (e) {
      if ((e as Error).name === 'AddressNotFoundError') return null;
      throw e;
    }
  }

  /**
   * The database network holding `v` and its record (null: not in the database). IPv6
   * prefixes that MaxMind databases alias to the IPv4 tree (::/96, ::ffff:0:0/96, Teredo
   * 2001::/32, 6to4 2002::/16) locate nobody as IPv6 clients: one unknown network each.
   */
  private lookup(family: Family, v: bigint): { rec: CityResponse | null; end: bigint; prefix: number } {
    if (++this.budget > LOOKUP_BUDGET) throw new Incomputable(`more than ${LOOKUP_BUDGET} database lookups`);
    if (family === 6) {
      for (const a of V6_ALIASES) if (v >= a.start && v <= a.end) return { rec: null, prefix: a.prefix, end: a.end };
    }
    const [rec, prefix] = this.mmdb.getWithPrefixLength(formatIp(family, v));
    const start = v & maskOf(family, prefix);
    return { rec, prefix, end: start + (1n << BigInt(familyBits(family) - prefix)) - 1n };
  }

  /** A cell's identity: how the address was placed and its top-K ranking. */
  private cellOfRecord(rec: CityResponse | null): string {
    if (!rec) return `default(not in the database)|${rankFrom(DEFAULT_LOCATION).join(',')}`;
    const lat = rec.location?.latitude;
    const lon = rec.location?.longitude;
    if (typeof lat !== 'number' || typeof lon !== 'number') return `default(no location)|${rankFrom(DEFAULT_LOCATION).join(',')}`;
    return `geoip|${rankFrom({ lat, lon }).join(',')}`;
  }

  /**
   * The cell of the /24 or /56 starting at `unit`: the ranking covering most of it
   * (networks weighted by size); null on an exact tie.
   */
  private unitCell(family: Family, unit: bigint): string | null {
    const floor = floorOf(family);
    const first = this.lookup(family, unit);
    if (first.prefix <= floor) return this.cellOfRecord(first.rec);
    const weight = new Map<string, number>();
    const end = unit + (1n << BigInt(familyBits(family) - floor));
    for (let a = unit; a < end; ) {
      const l = this.lookup(family, a);
      const c = this.cellOfRecord(l.rec);
      weight.set(c, (weight.get(c) ?? 0) + 2 ** -(l.prefix - floor));
      a = l.end + 1n;
    }
    const byWeight = [...weight.entries()].sort((x, y) => y[1] - x[1]);
    if (byWeight.length > 1 && byWeight[0]![1] === byWeight[1]![1]) return null;
    return byWeight[0]![0];
  }

  /** The cell at address `a` and the first address after `a` where it may change. */
  private cellAt(family: Family, a: bigint, overrides: (Cidr & { key: string })[]): { cell: string | null; next: bigint } {
    const floor = floorOf(family);
    let nextOv: bigint | undefined;
    let best: (Cidr & { key: string }) | undefined;
    for (const o of overrides) {
      if (o.family !== family) continue;
      if (o.start > a && (nextOv === undefined || o.start < nextOv)) nextOv = o.start;
      if (a >= o.start && a <= o.end && (!best || o.prefix > best.prefix)) best = o;
    }
    const cap = (n: bigint) => (nextOv !== undefined && nextOv < n ? nextOv : n);
    if (best) return { cell: best.key, next: cap(best.end + 1n) };
    const l = this.lookup(family, a);
    if (l.prefix <= floor) return { cell: this.cellOfRecord(l.rec), next: cap(l.end + 1n) };
    const unit = a & maskOf(family, floor);
    return { cell: this.unitCell(family, unit), next: cap(unit + (1n << BigInt(familyBits(family) - floor))) };
  }

  /** Whether every address of [start, end] is in `target` (null: cannot tell). */
  private inside(family: Family, start: bigint, end: bigint, target: string, overrides: (Cidr & { key: string })[]): boolean | null {
    for (let a = start; a <= end; ) {
      const { cell, next } = this.cellAt(family, a, overrides);
      if (cell === null) return null;
      if (cell !== target) return false;
      a = next;
    }
    return true;
  }

  /**
   * The ECS scope docs/dns.md gives a reply to a public client subnet `cidr` when no weight
   * below 1 is in play: the widest aligned prefix p ≤ /24 (/56) such that the block of the
   * subnet key (the address masked to min(source, /24 or /56)) at p lies inside the cell of
   * the client's /24 (/56). Throws Incomputable when the cell cannot be told apart.
   */
  expectedScope(cidr: string, overrides: OverrideSpec[] = []): number {
    this.budget = 0;
    const c = parseCidr(cidr);
    const floor = floorOf(c.family);
    const bits = familyBits(c.family);
    const ovs = overrides.map((o) => ({ ...parseCidr(o.cidr), key: `override ${o.cidr}|${o.regions.slice(0, TOP_K).join(',')}` }));
    const key = c.value & maskOf(c.family, Math.min(c.prefix, floor));
    const addr = c.value & maskOf(c.family, c.prefix);
    const target = this.cellAt(c.family, addr & maskOf(c.family, floor), ovs).cell;
    if (target === null) throw new Incomputable(`${cidr}: its /${floor} is split evenly between two cells`);
    for (let p = 0; p <= floor; p++) {
      const start = key & maskOf(c.family, p);
      const end = start + (1n << BigInt(bits - p)) - 1n;
      const r = this.inside(c.family, start, end, target, ovs);
      if (r === null) throw new Incomputable(`${cidr}: a /${floor} inside ${formatIp(c.family, start)}/${p} is split evenly between two cells`);
      if (r) return p;
    }
    return floor;
  }

  /** The cell identity of a client subnet (for messages and for comparing two subnets). */
  cellOf(cidr: string, overrides: OverrideSpec[] = []): string | null {
    this.budget = 0;
    const c = parseCidr(cidr);
    const ovs = overrides.map((o) => ({ ...parseCidr(o.cidr), key: `override ${o.cidr}|${o.regions.slice(0, TOP_K).join(',')}` }));
    return this.cellAt(c.family, c.start & maskOf(c.family, floorOf(c.family)), ovs).cell;
  }
}

// ---------------------------------------------------------------- admission (docs/adr/0003)

/** FNV-1a, 32 bits, over the UTF-8 bytes of `s`. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

/** MurmurHash3_x86_32 (Austin Appleby's reference algorithm) of `data` with `seed`. */
export function murmur3x86_32(data: Uint8Array, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));
  const scramble = (k: number) => Math.imul(rotl(Math.imul(k, c1), 15), c2);
  let h = seed | 0;
  const blocks = data.length >>> 2;
  for (let i = 0; i < blocks; i++) {
    const k = data[4 * i]! | (data[4 * i + 1]! << 8) | (data[4 * i + 2]! << 16) | (data[4 * i + 3]! << 24);
    h ^= scramble(k);
    h = (Math.imul(rotl(h, 13), 5) + 0xe6546b64) | 0;
  }
  const tail = blocks * 4;
  const rest = data.length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest >= 3) k ^= data[tail + 2]! << 16;
    if (rest >= 2) k ^= data[tail + 1]! << 8;
    k ^= data[tail]!;
    h ^= scramble(k);
  }
  h ^= data.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The admission draw of a client subnet for `region`: the key is the address masked to
 * min(source, /24 or /56), as 4 bytes (IPv4) or the top 8 bytes (IPv6), in network order.
 */
export function admissionDraw(cidr: string, region: string): number {
  const c = parseCidr(cidr);
  const key = c.value & maskOf(c.family, Math.min(c.prefix, floorOf(c.family)));
  const bytes = Buffer.alloc(c.family === 4 ? 4 : 8);
  const top = c.family === 4 ? key : key >> 64n;
  for (let i = bytes.length - 1, v = top; i >= 0; i--, v >>= 8n) bytes[i] = Number(v & 255n);
  return murmur3x86_32(bytes, fnv1a32(region)) / 2 ** 32;
}

// ---------------------------------------------------------------- readiness

export interface ReadyCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Readiness {
  status: number;
  ready: boolean;
  checks: ReadyCheck[];
}

/** GET {http}/readyz (bounded). */
export async function readyz(http: string, timeoutMs = 5000): Promise<Readiness> {
  const res = await fetch(`${http}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
  const body = (await res.json()) as { ready: boolean; checks: ReadyCheck[] };
  return { status: res.status, ready: body.ready, checks: body.checks };
}

/** The geo table in force, as /readyz reports it. */
export interface GeoTableState {
  /** The table version (`<database hash>-<geometry hash>`). */
  version: string;
  /** The database file the server uses. */
  database: string;
  /** A compile is under way. */
  compiling: boolean;
  detail: string;
}

/** Parses the geo check's detail: "table V from FILE[; compiling …][; last error: …]"; null without a table. */
export function parseGeoCheck(c: ReadyCheck | undefined): GeoTableState | null {
  if (!c || !c.ok) return null;
  const m = /^table (\S+) from (.+?)(?:; |$)/.exec(c.detail);
  if (!m) return null;
  return { version: m[1]!, database: m[2]!, compiling: /compiling/.test(c.detail), detail: c.detail };
}

/**
 * Polls /readyz (every 250 ms, at most `timeoutMs`, default 120 s) until the geo check is ok
 * with a table in force — one other than `notVersion` when given, and with no compile under
 * way when `idle`. Throws with the last readiness body and the server's last log lines.
 */
export async function waitGeoTable(
  srv: { http: string; logs: string[] },
  o: { timeoutMs?: number; notVersion?: string; idle?: boolean } = {},
): Promise<GeoTableState> {
  const timeoutMs = o.timeoutMs ?? 120000;
  const deadline = Date.now() + timeoutMs;
  let last = '(no answer yet)';
  for (let i = 0; Date.now() < deadline && i < timeoutMs / 100; i++) {
    try {
      const r = await readyz(srv.http);
      last = JSON.stringify(r);
      const geo = r.checks.find((c) => c.name === 'geo');
      if (geo && /^disabled/.test(geo.detail)) throw new Error(`geo: the server has geoip disabled: ${geo.detail}`);
      const st = parseGeoCheck(geo);
      if (st && (o.notVersion === undefined || st.version !== o.notVersion) && (!o.idle || !st.compiling)) return st;
    } catch (e) {
      if (/geoip disabled/.test((e as Error).message)) throw e;
      last = `error: ${(e as Error).message}`;
    }
    await sleep(250);
  }
  throw new Error(
    `geo: no table in force${o.notVersion ? ` other than ${o.notVersion}` : ''}${o.idle ? ' (and idle)' : ''} within ${timeoutMs} ms\nlast /readyz: ${last}\n${srv.logs.slice(-20).join('\n')}`,
  );
}

// ---------------------------------------------------------------- asking with dig

export interface DigEcs {
  address: string;
  source: number;
  scope: number;
}

/** The CLIENT-SUBNET option dig printed (`202.32.0.0/24/16`), or undefined. */
export function digEcs(msg: DigMessage): DigEcs | undefined {
  const o = msg.opt?.options.find((x) => x.name === 'CLIENT-SUBNET');
  const m = o ? /^(\S+)\/(\d+)\/(\d+)$/.exec(o.value.trim()) : null;
  return m ? { address: m[1]!, source: Number(m[2]), scope: Number(m[3]) } : undefined;
}

export interface SteeredReply {
  run: DigResult;
  status: string;
  /** Addresses of the answer's A or AAAA records, sorted. */
  addrs: string[];
  /** The region whose addresses these are (or a description when none matches). */
  region: string;
  ecs: DigEcs | undefined;
  /** `$ dig …` with its output, for assertion messages. */
  summary: string;
}

/** `dig [+subnet=SUBNET] NAME QTYPE` against `ep`, read as a steered answer. */
export async function askSteered(ep: Endpoint, qtype: 'A' | 'AAAA', subnet?: string, name = 'api.gslb.example.com', extra: string[] = []): Promise<SteeredReply> {
  const run = await dig(ep, [...(subnet === undefined ? [] : [`+subnet=${subnet}`]), ...extra, name, qtype]);
  const msg = run.msg;
  const addrs = msg.answer.filter((rr) => rr.type === qtype).map((rr) => rr.data).sort();
  return { run, status: msg.status, addrs, region: regionOf(addrs, qtype === 'A' ? 'a' : 'aaaa'), ecs: digEcs(msg), summary: digSummary(run) };
}

/** Whether two printed addresses are the same address. */
export function sameIp(a: string, b: string): boolean {
  try {
    const x = parseIp(a);
    const y = parseIp(b);
    return x.family === y.family && x.value === y.value;
  } catch {
    return false;
  }
}
