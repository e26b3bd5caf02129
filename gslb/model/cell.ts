/**
 * Where a client is, as the DNS path and decide see it: its subnet key, the geo cell it is
 * in (a ranking of regions and the address range it holds for). Declarations only; geo makes
 * cells (gslb/geo), decide reads them (gslb/policy/decide.ts).
 */
import type { RegionId } from './types.js';

/** The subnet key: the client address masked to min(source prefix, /24 or /56). */
export interface SubnetKey {
  family: 4 | 6;
  /** IPv4: the masked address; IPv6: the top 32 bits of the masked address. */
  hi: number;
  /** IPv6: bits 32..63 of the masked address; IPv4: 0. */
  lo: number;
  /** The mask length applied. */
  prefix: number;
}

/**
 * A geo cell: the client's ranking of regions, nearest first (top K), and the address range
 * the ranking holds for (for ECS scopes). `range` is absent when the client was placed
 * without the table (the default location before the first compile).
 */
export interface Cell {
  ranking: readonly RegionId[];
  /** Why the client is where it is, in words (shown by explain). */
  origin: string;
  range?: CellRange;
}

/** [first, last] in the family's key space: IPv4 as (addr, 0), IPv6 as the top 64 bits. */
export interface CellRange {
  family: 4 | 6;
  firstHi: number;
  firstLo: number;
  lastHi: number;
  lastLo: number;
}

