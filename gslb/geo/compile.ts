/**
 * Compiles a GeoIP2/GeoLite2 City database against the fleet (docs/design.md "Geo cells"):
 * every network gets the top-K ranking of regions its location implies; networks finer
 * than the floor (/24 IPv4, /56 IPv6) are coarsened to it (the ranking covering most of
 * the block wins), so a resolver's /24 or /56 never spans two cells; network overrides
 * (CIDR → ordered regions, longest prefix wins) replace what the database says; adjacent
 * networks with the same ranking merge. CPU-heavy (seconds): run off the hot path.
 */
import { createHash } from 'node:crypto';
import { openMmdb, type TreeAccess } from './mmdb-walk.js';
import { parseAddr } from './addr.js';
import { GeoTable, type RankingEntry } from './table.js';
import { rankRegions, type LatLon } from './distance.js';

export const FLOOR4 = 24;
export const FLOOR6 = 56;
export const TOP_K = 4;

/** Everything about the fleet that changes the table (weights never do). */
export interface FleetGeometry {
  regions: { id: string; location: LatLon; bias: number }[];
  defaultLocation: LatLon;
  /** CIDR → ordered region ids; prefixes no longer than the floor. */
  overrides: { cidr: string; regions: string[] }[];
}

/** Hash of the geometry, stable across key order and region file order. */
export function geometryHash(g: FleetGeometry): string {
  const canon = {
    k: TOP_K,
    floors: [FLOOR4, FLOOR6],
    regions: [...g.regions].sort((a, b) => (a.id < b.id ? -1 : 1)).map((r) => [r.id, r.location.lat, r.location.lon, r.bias]),
    def: [g.defaultLocation.lat, g.defaultLocation.lon],
    overrides: g.overrides.map((o) => [o.cidr.toLowerCase(), o.regions]),
  };
  return createHash('sha256').update(JSON.stringify(canon)).digest('hex').slice(0, 16);
}

export function fileHash(db: Buffer): string {
  return createHash('sha256').update(db).digest('hex').slice(0, 16);
}

/** A parsed override: family, masked start (hi, lo) and prefix. */
export interface ParsedCidr {
  family: 4 | 6;
  hi: number;
  lo: number;
  prefix: number;
}

/** Parses `a.b.c.d/p` or `x::/p`; throws with a message saying what is expected. */
export function parseCidr(cidr: string): ParsedCidr {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim());
  const a = m ? parseAddr(m[1]!) : null;
  if (!m || !a || m[1]!.includes('%') || (a.family === 4 && m[1]!.includes(':') && !m[1]!.toLowerCase().startsWith('::ffff:'))) {
    throw new Error(`"${cidr}" is not a CIDR like 192.0.2.0/24 or 2001:db8::/48`);
  }
  const prefix = Number(m[2]);
  const floor = a.family === 4 ? FLOOR4 : FLOOR6;
  const max = a.family === 4 ? 32 : 128;
  if (prefix > max) throw new Error(`"${cidr}": prefix /${prefix} is longer than an IPv${a.family} address`);
  if (prefix > floor) throw new Error(`"${cidr}": overrides may be at most /${floor} for IPv${a.family} (the cell floor, so one resolver subnet never spans two cells)`);
  const hiMask = prefix >= 32 ? 0xffffffff : prefix <= 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const loMask = a.family === 4 || prefix <= 32 ? 0 : prefix >= 64 ? 0xffffffff : (0xffffffff << (64 - prefix)) >>> 0;
  // parseAddr keeps only the top 64 bits of an IPv6 address: bits past them are host bits too.
  if (((a.hi & ~hiMask) >>> 0) !== 0 || (a.family === 6 && (((a.lo & ~loMask) >>> 0) !== 0 || !low64Zero(m[1]!)))) {
    throw new Error(`"${cidr}": host bits are set beyond /${prefix}; did you mean ${a.family === 4 ? 'the network address' : 'the prefix'}?`);
  }
  return { family: a.family, hi: a.hi >>> 0, lo: a.family === 6 ? a.lo >>> 0 : 0, prefix };
}

/** True when the low 64 bits of a (valid) IPv6 address are all zero. */
function low64Zero(s: string): boolean {
  let str = s.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(str);
  if (dotted) {
    // An embedded IPv4 is the last 32 bits.
    if (dotted[1]!.split('.').some((x) => Number(x) !== 0)) return false;
    str = str.slice(0, -dotted[1]!.length) + '0:0';
  }
  const [head, tail] = str.includes('::') ? str.split('::') : [str, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.slice(4).every((x) => parseInt(x, 16) === 0);
}

interface Step {
  hi: number;
  lo: number;
  rank: number;
}

/** The rankings table: interned by (origin, note, regions). */
class Rankings {
  readonly list: RankingEntry[] = [];
  private readonly index = new Map<string, number>();
  intern(e: RankingEntry): number {
    const key = `${e.origin}|${e.note ?? ''}|${e.regions.join(',')}`;
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.list.length;
      if (i > 0xfffe) throw new Error('geo: more than 65534 distinct rankings');
      this.list.push(e);
      this.index.set(key, i);
    }
    return i;
  }
}

/** Top-K region ids for a location. */
function topK(g: FleetGeometry, loc: LatLon): string[] {
  return rankRegions(loc, g.regions, TOP_K).map((r) => r.id);
}

/**
 * Compiles `db` (the bytes of a .mmdb file) against `g`. Pure function of its inputs, apart
 * from `builtAt`/`buildMs` in the metadata.
 */
/** Progress of a compile: the fraction of the database's search tree walked, 0 to 1. */
export type CompileProgress = (fraction: number) => void;

/** Tree nodes walked between two progress reports. */
const PROGRESS_EVERY = 1 << 16;

export function compileGeo(db: Buffer, g: FleetGeometry, dbHash = fileHash(db), onProgress?: CompileProgress): GeoTable {
  const t0 = Date.now();
  const mm = openMmdb(db);
  // Every search-tree node is walked once (above the floor by walk, below it by majority), so
  // nodes walked ÷ nodeCount is how far the compile is.
  let walked = 0;
  const step = (): void => {
    if (++walked % PROGRESS_EVERY === 0) onProgress?.(Math.min(0.99, walked / Math.max(1, mm.tree.nodeCount)));
  };
  const rankings = new Rankings();
  // Index 0: the default location, for addresses the database does not know.
  const UNKNOWN = rankings.intern({ regions: topK(g, g.defaultLocation), origin: 'default', note: 'not in the database' });
  const NOLOC = rankings.intern({ regions: topK(g, g.defaultLocation), origin: 'default', note: 'in the database without a location' });
  const byPointer = new Map<number, number>();
  const byLocation = new Map<string, number>();
  const rankOfPointer = (p: number): number => {
    if (p < 0) return UNKNOWN;
    let r = byPointer.get(p);
    if (r !== undefined) return r;
    const loc = mm.location(p);
    if (loc === null) r = NOLOC;
    else {
      const key = `${loc.lat},${loc.lon}`;
      r = byLocation.get(key);
      if (r === undefined) {
        r = rankings.intern({ regions: topK(g, loc), origin: 'geoip' });
        byLocation.set(key, r);
      }
    }
    byPointer.set(p, r);
    return r;
  };

  const steps4: Step[] = [];
  const steps6: Step[] = [];
  let networks4 = 0;
  let networks6 = 0;
  const walk = (family: 4 | 6, out: Step[]) => {
    const tree = mm.tree;
    const floor = family === 4 ? FLOOR4 : FLOOR6;
    const root = family === 4 ? tree.ipv4Start : 0;
    const emit = (hi: number, lo: number, rank: number) => {
      if (family === 4) networks4++;
      else networks6++;
      const last = out[out.length - 1];
      if (last && last.rank === rank) return;
      out.push({ hi: hi >>> 0, lo: lo >>> 0, rank });
    };
    const stack: [number, number, number, number][] = [[root, 0, 0, 0]];
    while (stack.length > 0) {
      const [node, depth, hi, lo] = stack.pop()!;
      if (family === 6 && depth > 0 && node === tree.ipv4Start) {
        emit(hi, lo, UNKNOWN);
        continue;
      }
      if (node >= tree.nodeCount) {
        emit(hi, lo, rankOfPointer(node === tree.nodeCount ? -1 : node));
        continue;
      }
      step();
      if (depth === floor) {
        emit(hi, lo, majority(tree, node, family, rankOfPointer, UNKNOWN, step));
        continue;
      }
      let rHi = hi;
      let rLo = lo;
      if (depth < 32) rHi = (hi | (1 << (31 - depth))) >>> 0;
      else rLo = (lo | (1 << (63 - depth))) >>> 0;
      stack.push([tree.right(node), depth + 1, rHi, rLo], [tree.left(node), depth + 1, hi, lo]);
    }
  };
  walk(4, steps4);
  if (mm.tree.ipVersion === 6) walk(6, steps6);
  else steps6.push({ hi: 0, lo: 0, rank: UNKNOWN });

  // Overrides: a step function per family (longest prefix wins), laid over the database's.
  const ov4: { start: ParsedCidr; rank: number }[] = [];
  const ov6: { start: ParsedCidr; rank: number }[] = [];
  for (const o of g.overrides) {
    const c = parseCidr(o.cidr);
    const rank = rankings.intern({ regions: o.regions.slice(0, TOP_K), origin: 'override', note: o.cidr });
    (c.family === 4 ? ov4 : ov6).push({ start: c, rank });
  }
  const final4 = overlay(steps4, ov4, 4);
  const final6 = overlay(steps6, ov6, 6);
  onProgress?.(1);

  return new GeoTable(
    {
      dbHash,
      geometryHash: geometryHash(g),
      databaseType: mm.databaseType,
      databaseBuilt: mm.buildEpoch.toISOString(),
      builtAt: Date.now(),
      buildMs: Date.now() - t0,
      networks4,
      networks6,
    },
    rankings.list,
    Uint32Array.from(final4, (s) => s.hi),
    Uint16Array.from(final4, (s) => s.rank),
    Uint32Array.from(final6, (s) => s.hi),
    Uint32Array.from(final6, (s) => s.lo),
    Uint16Array.from(final6, (s) => s.rank),
  );
}

/** The ranking covering most of the block below `node` (ties: the lower ranking index). */
function majority(tree: TreeAccess, node: number, family: 4 | 6, rankOf: (p: number) => number, unknown: number, step: () => void): number {
  const weight = new Map<number, number>();
  const stack: [number, number][] = [[node, 0]];
  while (stack.length > 0) {
    const [n, d] = stack.pop()!;
    if (family === 6 && n === tree.ipv4Start) continue;
    if (n >= tree.nodeCount) {
      const r = n === tree.nodeCount ? unknown : rankOf(n);
      weight.set(r, (weight.get(r) ?? 0) + 2 ** -d);
      continue;
    }
    if (d > 104) continue;
    if (d > 0) step();
    stack.push([tree.left(n), d + 1], [tree.right(n), d + 1]);
  }
  let best = unknown;
  let bestW = -1;
  for (const [r, w] of weight) {
    if (w > bestW || (w === bestW && r < best)) {
      best = r;
      bestW = w;
    }
  }
  return best;
}

const cmp = (a: { hi: number; lo: number }, b: { hi: number; lo: number }) => (a.hi !== b.hi ? a.hi - b.hi : a.lo - b.lo);

/** End + 1 of a CIDR as (hi, lo), or null when it reaches the top of the space. */
function after(c: ParsedCidr): { hi: number; lo: number } | null {
  const bits = c.family === 4 ? 32 : 64;
  const size = bits - c.prefix;
  if (c.family === 4) {
    const e = c.hi + 2 ** size;
    return e > 0xffffffff ? null : { hi: e, lo: 0 };
  }
  if (size >= 32) {
    const e = c.hi + 2 ** (size - 32);
    return e > 0xffffffff ? null : { hi: e, lo: 0 };
  }
  const lo = c.lo + 2 ** size;
  if (lo <= 0xffffffff) return { hi: c.hi, lo };
  return c.hi === 0xffffffff ? null : { hi: c.hi + 1, lo: lo - 2 ** 32 };
}

/** Lays override CIDRs (longest prefix wins) over a step function; merges equal neighbours. */
function overlay(base: Step[], overrides: { start: ParsedCidr; rank: number }[], _family: 4 | 6): Step[] {
  if (overrides.length === 0) return base;
  // Boundaries where the override in force may change: every CIDR's start and end + 1.
  const points: { hi: number; lo: number }[] = [];
  for (const o of overrides) {
    points.push({ hi: o.start.hi, lo: o.start.lo });
    const e = after(o.start);
    if (e) points.push(e);
  }
  points.sort(cmp);
  const inCidr = (p: { hi: number; lo: number }, c: ParsedCidr) => {
    const e = after(c);
    return cmp(p, c) >= 0 && (e === null || cmp(p, e) < 0);
  };
  // The override step function: at each point, the longest matching prefix (or -1).
  const ovSteps: Step[] = [];
  for (const p of points) {
    let best = -1;
    let bestLen = -1;
    for (const o of overrides) {
      if (o.start.prefix > bestLen && inCidr(p, o.start)) {
        best = o.rank;
        bestLen = o.start.prefix;
      }
    }
    const last = ovSteps[ovSteps.length - 1];
    if (last && cmp(last, p) === 0) last.rank = best;
    else ovSteps.push({ hi: p.hi, lo: p.lo, rank: best });
  }
  // Merge the two step functions.
  const out: Step[] = [];
  let i = 0;
  let j = 0;
  let baseRank = base[0]!.rank;
  let ovRank = -1;
  const push = (hi: number, lo: number) => {
    const rank = ovRank >= 0 ? ovRank : baseRank;
    const last = out[out.length - 1];
    if (last && cmp(last, { hi, lo }) === 0) {
      last.rank = rank;
      if (out.length > 1 && out[out.length - 2]!.rank === rank) out.pop();
      return;
    }
    if (last && last.rank === rank) return;
    out.push({ hi, lo, rank });
  };
  while (i < base.length || j < ovSteps.length) {
    const takeBase = j >= ovSteps.length || (i < base.length && cmp(base[i]!, ovSteps[j]!) <= 0);
    if (takeBase) {
      const s = base[i++]!;
      baseRank = s.rank;
      push(s.hi, s.lo);
    } else {
      const s = ovSteps[j++]!;
      ovRank = s.rank;
      push(s.hi, s.lo);
    }
  }
  return out;
}
