/**
 * ECS scopes (RFC 7871 §7.2.1, docs/design.md "Choosing a region", step 4): how wide an answer may be
 * cached, from the client's subnet key and the cell range it falls in. Pure arithmetic.
 */
import type { CellRange, SubnetKey } from '../model/cell.js';

/** Trailing zero bits of a 32-bit value (32 for 0). */
function ctz32(x: number): number {
  return x === 0 ? 32 : 31 - Math.clz32(x & -x);
}

/**
 * The smallest p (0–32) such that the aligned /p block around `key` lies inside
 * [first, last] (all unsigned 32-bit, first ≤ key ≤ last), in closed form: the block's start
 * stays ≥ first once p passes the highest bit where key and first differ, or earlier if
 * first's low bits are zero from p on; likewise for its end and last (with ones).
 */
export function widestInside32(key: number, first: number, last: number): number {
  const d = (key ^ first) >>> 0;
  const fromFirst = 32 - ctz32(first);
  const pA = d === 0 ? 32 - ctz32(key) : fromFirst <= Math.clz32(d) ? fromFirst : Math.clz32(d) + 1;
  const e = (key ^ last) >>> 0;
  const toLast = 32 - ctz32(~last >>> 0);
  const pB = e === 0 ? 32 - ctz32(~key >>> 0) : toLast <= Math.clz32(e) ? toLast : Math.clz32(e) + 1;
  return Math.max(pA, pB);
}

/**
 * The ECS scope (RFC 7871 §7.2.1) for an answer: 0 when the source prefix is 0; the
 * floor (/24, /56) when admission could differ inside the cell; else the widest aligned
 * prefix around the key that stays inside the cell's range (never wider than needed to
 * stay in the cell, never 0 unless the cell is the whole space).
 */
export function ecsScope(key: SubnetKey, sourcePrefix: number, range: CellRange | undefined, admissionInPlay: boolean): number {
  if (sourcePrefix === 0) return 0;
  const floor = key.family === 4 ? 24 : 56;
  if (admissionInPlay || !range) return range ? floor : Math.min(sourcePrefix, floor);
  if (key.family === 4) return Math.min(widestInside32(key.hi >>> 0, range.firstHi >>> 0, range.lastHi >>> 0), floor);
  for (let p = 0; p <= floor; p++) {
    // Block of the key at prefix p: [first, last].
    let fHi: number;
    let fLo: number;
    let lHi: number;
    let lLo: number;
    if (p <= 32) {
      const m = p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0;
      fHi = (key.hi & m) >>> 0;
      lHi = (fHi | ~m) >>> 0;
      fLo = 0;
      lLo = 0xffffffff;
    } else {
      const m = (0xffffffff << (64 - p)) >>> 0;
      fHi = lHi = key.hi >>> 0;
      fLo = (key.lo & m) >>> 0;
      lLo = (fLo | ~m) >>> 0;
    }
    const geFirst = fHi > range.firstHi || (fHi === range.firstHi && fLo >= range.firstLo);
    const leLast = lHi < range.lastHi || (lHi === range.lastHi && lLo <= range.lastLo);
    if (geFirst && leLast) return p;
  }
  return floor;
}

