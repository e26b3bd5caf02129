/**
 * Hashed admission (docs/design.md "Choosing a region", fixed by docs/adr/0003-admission-hash.md).
 *
 * A client's subnet key is admitted to region r when h(key, r) < w[home][r]. h is
 * MurmurHash3_x86_32 of the key's bytes, seeded with FNV-1a-32 of the region id, divided
 * by 2^32. Because the draw depends only on (key, r), lowering w[h][r] from 1 to w turns
 * away exactly the keys whose draw is ≥ w — a (1 − w) share of the clients of home h that
 * r admitted — and no client of any other home. Pure; no I/O.
 */
import type { SubnetKey } from '../model/cell.js';

/** FNV-1a, 32-bit, over the UTF-8 bytes of `s`. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

function mixH(h: number, k: number): number {
  h ^= mixK(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function fmix(h: number, len: number): number {
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * MurmurHash3_x86_32 of the key's bytes in network order — 4 bytes for IPv4, 8 for IPv6 —
 * with `seed`. Blocks are read little-endian, as the reference implementation reads memory.
 */
export function murmurKey(key: SubnetKey, seed: number): number {
  const le = (x: number) => ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
  let h = seed | 0;
  h = mixH(h, le(key.hi));
  if (key.family === 6) {
    h = mixH(h, le(key.lo));
    return fmix(h, 8);
  }
  return fmix(h, 4);
}

const seeds = new Map<string, number>();
/** The seed of a region: FNV-1a-32 of its id (memoised). */
export function regionSeed(region: string): number {
  let s = seeds.get(region);
  if (s === undefined) {
    s = fnv1a32(region);
    seeds.set(region, s);
  }
  return s;
}

/** The admission draw of `key` for `region`, uniform in [0, 1). */
export function admissionDraw(key: SubnetKey, region: string): number {
  return murmurKey(key, regionSeed(region)) / 0x100000000;
}
