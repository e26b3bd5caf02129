/**
 * Where a query's client is, and the ECS scope its reply carries
 * (docs/design.md "Choosing a region", steps 1 and 4). The one implementation shared by the
 * responder's hot path and by explain, so that explain places a client exactly as the DNS answer did.
 *
 * Pure (apart from caller-owned caches), synchronous, and allocation-free on the hot path:
 * results are written into a caller-owned ClientLocation / CellRange that the caller reuses
 * query after query; a packet source address is parsed once per distinct string (SourceCache).
 */
import { isSpecial4, isSpecial6, mask32, parseAddr, type Addr } from './addr.js';
import type { GeoTable } from './table.js';
import type { SubnetKey, Cell, CellRange } from '../model/cell.js';
import { ecsScope } from './scope.js';

/** ECS FAMILY values (RFC 7871 §6, IANA address family numbers). */
export const ECS_FAMILY_IPV4 = 1;
export const ECS_FAMILY_IPV6 = 2;

/** The cell floors: no cell, key or scope is finer than these. */
const FLOOR4 = 24;
const FLOOR6 = 56;

/** Where a client is, as locateClient leaves it. Reuse one per caller. */
export interface ClientLocation {
  /**
   * The subnet key: the address used, masked to min(ECS source prefix, /24 or /56); in the
   * special cell all zero with prefix 0 (family IPv6 only when an IPv6 ECS address fell back).
   */
  key: SubnetKey;
  /** Entry of the geo table holding the address; -1 in the special cell. */
  index: number;
  /** Ranking index of that entry; `geo.rankings.length` for the special cell (see cellsOf). */
  cell: number;
  /** ECS FAMILY of the query (1, 2), 0 without ECS. */
  ecsFamily: number;
  /** ECS source prefix of the query, -1 without ECS. */
  ecsSource: number;
  /** The ECS address located the client (it was present, source prefix > 0, not special). */
  fromEcs: boolean;
  /** The ECS address was private, reserved or not routable: the packet's source was used. */
  fallback: boolean;
}

/** A fresh ClientLocation to reuse across calls of locateClient. */
export function newClientLocation(): ClientLocation {
  return { key: { family: 4, hi: 0, lo: 0, prefix: 0 }, index: -1, cell: 0, ecsFamily: 0, ecsSource: -1, fromEcs: false, fallback: false };
}

/** A fresh CellRange to reuse across calls of locatedRange / replyScope. */
export function newCellRange(): CellRange {
  return { family: 4, firstHi: 0, firstLo: 0, lastHi: 0, lastLo: 0 };
}

/**
 * A one-entry cache of the last packet source address parsed (a resolver asks again and
 * again from one address): parsing allocates, a cache hit does not. One per caller.
 */
export class SourceCache {
  private last = '';
  private addr: Addr | null = null;

  /** The parsed address of `client` (null when it is not an IP address). */
  get(client: string): Addr | null {
    if (client !== this.last) {
      this.last = client;
      this.addr = parseAddr(client);
    }
    return this.addr;
  }
}

/**
 * Locates a client into `out`. ECS: `ecsSource` −1 = no option; else `ecsFamily` (1 IPv4,
 * 2 IPv6) and the address's top 64 bits (`ecsHi`, `ecsLo`; `ecsLo` 0 for IPv4). The ECS
 * address is used unless the source prefix is 0 (RFC 7871 §7.1.2: the client asked not to
 * be located by it) or it is special (private, reserved, not routable: `fallback`); then the
 * packet's source address `client` is used (parsed through `sources`). A client with neither
 * lands in the special cell (the default location), with key family IPv6 only when an IPv6
 * ECS address fell back. Never throws; allocates nothing on a source cache hit.
 */
export function locateClient(
  geo: GeoTable,
  ecsFamily: number,
  ecsSource: number,
  ecsHi: number,
  ecsLo: number,
  client: string,
  sources: SourceCache,
  out: ClientLocation,
): void {
  const key = out.key;
  out.fallback = false;
  out.fromEcs = false;
  out.ecsSource = ecsSource;
  out.ecsFamily = ecsSource < 0 ? 0 : ecsFamily;
  let family: 4 | 6 = 4;
  let hi = 0;
  let lo = 0;
  let prefix = -1;
  let found = false;
  if (ecsSource > 0) {
    hi = ecsHi >>> 0;
    if (ecsFamily === ECS_FAMILY_IPV6) {
      family = 6;
      lo = ecsLo >>> 0;
    }
    if (family === 4 ? isSpecial4(hi) : isSpecial6(hi, lo)) out.fallback = true;
    else {
      found = true;
      out.fromEcs = true;
      prefix = ecsSource;
    }
  }
  if (!found && client) {
    const a = sources.get(client);
    if (a !== null && !(a.family === 4 ? isSpecial4(a.hi) : isSpecial6(a.hi, a.lo))) {
      found = true;
      family = a.family;
      hi = a.hi;
      lo = a.lo;
    }
  }
  if (!found) {
    out.index = -1;
    out.cell = geo.rankings.length;
    key.family = family;
    key.hi = 0;
    key.lo = 0;
    key.prefix = 0;
    return;
  }
  const floor = family === 6 ? FLOOR6 : FLOOR4;
  const keyPrefix = prefix < 0 ? floor : Math.min(prefix, floor);
  key.family = family;
  key.prefix = keyPrefix;
  key.hi = (hi & mask32(keyPrefix)) >>> 0;
  key.lo = family === 6 ? (lo & mask32(keyPrefix - 32)) >>> 0 : 0;
  if (family === 4) {
    out.index = geo.index4(hi);
    out.cell = geo.v4Rank[out.index]!;
  } else {
    out.index = geo.index6(hi, lo);
    out.cell = geo.v6Rank[out.index]!;
  }
}

/**
 * The address range of the located entry, written into `out` (same values as
 * GeoTable.range4/range6, without allocating); undefined for the special cell.
 */
export function locatedRange(geo: GeoTable, loc: ClientLocation, out: CellRange): CellRange | undefined {
  const i = loc.index;
  if (i < 0) return undefined;
  out.family = loc.key.family;
  if (loc.key.family === 4) {
    const s = geo.v4Start;
    out.firstHi = s[i]!;
    out.lastHi = i + 1 < s.length ? s[i + 1]! - 1 : 0xffffffff;
    out.firstLo = out.lastLo = 0;
    return out;
  }
  const H = geo.v6Hi;
  const L = geo.v6Lo;
  out.firstHi = H[i]!;
  out.firstLo = L[i]!;
  if (i + 1 >= H.length) {
    out.lastHi = out.lastLo = 0xffffffff;
  } else if (L[i + 1] === 0) {
    out.lastHi = (H[i + 1]! - 1) >>> 0;
    out.lastLo = 0xffffffff;
  } else {
    out.lastHi = H[i + 1]!;
    out.lastLo = (L[i + 1]! - 1) >>> 0;
  }
  return out;
}

/** True when the table puts every address in one cell: answers never depend on the client. */
export function isUniformTable(geo: GeoTable): boolean {
  return geo.v4Start.length === 1 && geo.v6Hi.length === 1 && geo.v4Rank[0] === geo.v6Rank[0];
}

/**
 * The cells of a table, by ranking index, plus the special cell last (index
 * `geo.rankings.length`: private, reserved or unparsable clients, at the default location,
 * ranked like ranking 0). `origin` is the words decide puts in its first reason.
 */
export function cellsOf(geo: GeoTable): Cell[] {
  const cells: Cell[] = geo.rankings.map((r) => ({
    ranking: r.regions,
    origin:
      r.origin === 'geoip'
        ? 'the GeoIP database'
        : r.origin === 'override'
          ? `the network override ${r.note ?? ''}`
          : `the default location (${r.note ?? 'no database'})`,
  }));
  cells.push({ ranking: geo.rankings[0]!.regions, origin: 'the default location (a private, reserved or unparsable address)' });
  return cells;
}

/**
 * The ECS scope prefix the responder writes in its reply's ECS option (RFC 7871 §7.2.1):
 * - 0 without ECS or with source prefix 0;
 * - 0 when the table is uniform and admission cannot split the cell (one answer for all);
 * - min(source, /24 or /56 of the ECS family) when the ECS address was unusable (fallback);
 * - when admission weights below 1 can split the cell (`splits`): `decided`, decide's own
 *   scope for this key and the located range (called with the ECS source);
 * - else the widest aligned prefix around the key inside the located range (ecsScope).
 * `range` is filled lazily (only the last case reads the table).
 */
export function replyScope(geo: GeoTable, uniform: boolean, loc: ClientLocation, splits: boolean, decided: number, range: CellRange): number {
  const src = loc.ecsSource;
  if (src <= 0) return 0;
  if (!splits && uniform) return 0;
  if (loc.fallback) return Math.min(src, loc.ecsFamily === ECS_FAMILY_IPV6 ? FLOOR6 : FLOOR4);
  if (splits) return decided;
  return ecsScope(loc.key, src, locatedRange(geo, loc, range), false);
}
