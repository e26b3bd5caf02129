/**
 * The compiled geo table: for every IPv4 address and every IPv6 /56, the ranking of regions
 * its location implies (docs/design.md "Geo cells"). A flat, sorted step function: entry i covers
 * from start[i] up to start[i+1] − 1; lookups are a binary search over typed arrays.
 * Serialised to one file (cached on disk, read by every DNS worker).
 */
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import type { Addr } from './addr.js';

/** How a cell's ranking was found. */
export type CellOrigin = 'geoip' | 'default' | 'override';

export interface RankingEntry {
  /** Region ids, nearest first (at most K). */
  regions: string[];
  origin: CellOrigin;
  /** For `override`: the CIDR; for `default`: why (no data, no location). */
  note?: string;
}

export interface GeoTableMeta {
  /** sha256 prefix of the database file. */
  dbHash: string;
  /** sha256 prefix of the fleet geometry (regions' coordinates, biases, overrides, K, floors). */
  geometryHash: string;
  databaseType: string;
  databaseBuilt: string;
  /** ms epoch. */
  builtAt: number;
  buildMs: number;
  networks4: number;
  networks6: number;
}

export class GeoTable {
  /**
   * For each value of an address's top 16 bits, the first entry to search from (the last
   * entry starting at or before that /16): a lookup binary-searches only between two
   * neighbouring slots, usually a handful of entries that share a cache line or two.
   */
  private readonly v4Slot: Uint32Array;
  private readonly v6Slot: Uint32Array;

  constructor(
    readonly meta: GeoTableMeta,
    readonly rankings: RankingEntry[],
    readonly v4Start: Uint32Array,
    readonly v4Rank: Uint16Array,
    readonly v6Hi: Uint32Array,
    readonly v6Lo: Uint32Array,
    readonly v6Rank: Uint16Array,
  ) {
    this.v4Slot = slots(v4Start);
    this.v6Slot = slots(v6Hi, v6Lo);
  }

  /** `${dbHash}-${geometryHash}`: what workers acknowledge. */
  get version(): string {
    return `${this.meta.dbHash}-${this.meta.geometryHash}`;
  }

  /** Index of the entry holding IPv4 `a` (uint32). */
  index4(a: number): number {
    const s = this.v4Start;
    const top = a >>> 16;
    let lo = this.v4Slot[top]!;
    let hi = top === 0xffff ? s.length - 1 : this.v4Slot[top + 1]!;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (s[mid]! <= a) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Index of the entry holding the IPv6 address whose top 64 bits are (h, l). */
  index6(h: number, l: number): number {
    const H = this.v6Hi;
    const L = this.v6Lo;
    const top = h >>> 16;
    let lo = this.v6Slot[top]!;
    let hi = top === 0xffff ? H.length - 1 : this.v6Slot[top + 1]!;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      const mh = H[mid]!;
      if (mh < h || (mh === h && L[mid]! <= l)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Ranking index of an address. */
  rankOf(a: Addr): number {
    return a.family === 4 ? this.v4Rank[this.index4(a.hi)]! : this.v6Rank[this.index6(a.hi, a.lo)]!;
  }

  /**
   * The cell range [first, last] of entry `i` in the family's key space: IPv4 as numbers,
   * IPv6 as (hi, lo) of the top 64 bits. `last` of the final entry is the top of the space.
   */
  range4(i: number): [number, number] {
    const s = this.v4Start;
    return [s[i]!, i + 1 < s.length ? s[i + 1]! - 1 : 0xffffffff];
  }

  range6(i: number): [number, number, number, number] {
    if (i + 1 >= this.v6Hi.length) return [this.v6Hi[i]!, this.v6Lo[i]!, 0xffffffff, 0xffffffff];
    let h = this.v6Hi[i + 1]!;
    let l = this.v6Lo[i + 1]!;
    if (l === 0) {
      h = (h - 1) >>> 0;
      l = 0xffffffff;
    } else l = (l - 1) >>> 0;
    return [this.v6Hi[i]!, this.v6Lo[i]!, h, l];
  }

  /** Writes the table atomically (temp file + rename). */
  save(file: string): void {
    const header = Buffer.from(JSON.stringify({ meta: this.meta, rankings: this.rankings, n4: this.v4Start.length, n6: this.v6Hi.length }));
    const pad = (n: number) => (4 - (n % 4)) % 4;
    const parts: Buffer[] = [MAGIC, u32(header.length), header, Buffer.alloc(pad(header.length))];
    for (const arr of [this.v4Start, this.v6Hi, this.v6Lo, this.v4Rank, this.v6Rank]) {
      const b = Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength);
      parts.push(b, Buffer.alloc(pad(b.length)));
    }
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.concat(parts));
    renameSync(tmp, file);
  }

  /** Reads a table written by save(); throws with a message naming the file on any mismatch. */
  static load(file: string): GeoTable {
    const buf = readFileSync(file);
    if (buf.length < 12 || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error(`geo: ${file} is not a GridSteer geo table`);
    const hlen = buf.readUInt32LE(MAGIC.length);
    let off = MAGIC.length + 4;
    const head = JSON.parse(buf.toString('utf8', off, off + hlen)) as { meta: GeoTableMeta; rankings: RankingEntry[]; n4: number; n6: number };
    off += hlen + ((4 - (hlen % 4)) % 4);
    // Copy into fresh aligned arrays (readFileSync buffers may share a pool at any offset).
    const take32 = (n: number) => {
      const a = new Uint32Array(n);
      Buffer.from(a.buffer).set(buf.subarray(off, off + n * 4));
      off += n * 4;
      return a;
    };
    const take16 = (n: number) => {
      const a = new Uint16Array(n);
      Buffer.from(a.buffer).set(buf.subarray(off, off + n * 2));
      off += n * 2 + ((4 - ((n * 2) % 4)) % 4);
      return a;
    };
    const v4Start = take32(head.n4);
    const v6Hi = take32(head.n6);
    const v6Lo = take32(head.n6);
    const v4Rank = take16(head.n4);
    const v6Rank = take16(head.n6);
    if (off !== buf.length) throw new Error(`geo: ${file} has the wrong length (truncated or corrupt): delete it to rebuild`);
    return new GeoTable(head.meta, head.rankings, v4Start, v4Rank, v6Hi, v6Lo, v6Rank);
  }
}

const MAGIC = Buffer.from('GSGEO01\n');

/**
 * slot[t] = index of the last entry starting at or before the address t << 16 (IPv4), or
 * (t << 16, 0) in the top 64 bits (IPv6: an entry whose hi is exactly t << 16 but whose lo is
 * not 0 starts after that address). Entries are sorted; entry 0 starts at 0. An address with
 * top bits t lies in entries slot[t]..slot[t+1].
 */
function slots(starts: Uint32Array, lows?: Uint32Array): Uint32Array {
  const out = new Uint32Array(65536);
  let i = 0;
  for (let t = 0; t < 65536; t++) {
    const base = t * 65536;
    while (i + 1 < starts.length && (starts[i + 1]! < base || (starts[i + 1] === base && (lows === undefined || lows[i + 1] === 0)))) i++;
    out[t] = i;
  }
  return out;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

/**
 * A table with no database: every address is at the default location (used until the first
 * compile finishes, and when the database cannot be read).
 */
export function defaultTable(regions: string[], why: string): GeoTable {
  return new GeoTable(
    { dbHash: 'none', geometryHash: 'none', databaseType: 'none', databaseBuilt: '', builtAt: 0, buildMs: 0, networks4: 0, networks6: 0 },
    [{ regions, origin: 'default', note: why }],
    Uint32Array.of(0),
    Uint16Array.of(0),
    Uint32Array.of(0),
    Uint32Array.of(0),
    Uint16Array.of(0),
  );
}
