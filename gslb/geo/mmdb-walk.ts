/**
 * Walks a MaxMind DB (GeoIP2/GeoLite2 City) search tree and reports every network with its
 * data record, in address order. mmdb-lib's Reader can only look addresses up; we read the
 * tree ourselves (MaxMind DB format 2.0: node records of 24, 28 or 32 bits) and use
 * mmdb-lib's decoder for the data section.
 *
 * IPv4 is walked from the IPv4 start node (::/96); in the IPv6 walk every subtree that is
 * that node (::/96 itself and the aliases ::ffff:0:0/96, 2001::/32, 2002::/16) is skipped,
 * so each address is reported once. IPv6 addresses are reported by their top 64 bits.
 */
import { Reader } from 'mmdb-lib';
import { MmdbLocationReader } from './mmdb-location.js';

export interface TreeAccess {
  nodeCount: number;
  left(node: number): number;
  right(node: number): number;
  ipv4Start: number;
  ipVersion: number;
}

/** Opens a database buffer; throws with a message naming what is wrong. */
export function openMmdb(db: Buffer): {
  reader: Reader<never>;
  tree: TreeAccess;
  decode(pointer: number): unknown;
  /** The record's location only (fast path; falls back to the full decoder on surprises). */
  location(pointer: number): { lat: number; lon: number } | null;
  databaseType: string;
  buildEpoch: Date;
} {
  const reader = new Reader<never>(db);
  const md = reader.metadata;
  const nodeBytes = md.nodeByteSize;
  const rs = md.recordSize;
  const left =
    rs === 24
      ? (n: number) => db.readUIntBE(n * nodeBytes, 3)
      : rs === 28
        ? (n: number) => {
            const o = n * nodeBytes;
            return ((db[o + 3]! & 0xf0) << 20) | db.readUIntBE(o, 3);
          }
        : (n: number) => db.readUInt32BE(n * nodeBytes);
  const right =
    rs === 24
      ? (n: number) => db.readUIntBE(n * nodeBytes + 3, 3)
      : rs === 28
        ? (n: number) => {
            const o = n * nodeBytes;
            return ((db[o + 3]! & 0x0f) << 24) | db.readUIntBE(o + 4, 3);
          }
        : (n: number) => db.readUInt32BE(n * nodeBytes + 4);
  if (rs !== 24 && rs !== 28 && rs !== 32) throw new Error(`geo: unsupported MaxMind DB record size ${rs}`);
  const internal = reader as unknown as { ipv4StartNodeNumber: number; decoder: { decodeFast(offset: number): { value: unknown } } };
  const dataBase = md.searchTreeSize - md.nodeCount;
  const fast = new MmdbLocationReader(db, md.searchTreeSize + 16);
  const decode = (pointer: number) => internal.decoder.decodeFast(pointer + dataBase).value;
  return {
    reader,
    tree: { nodeCount: md.nodeCount, left, right, ipv4Start: internal.ipv4StartNodeNumber, ipVersion: md.ipVersion },
    decode,
    location: (pointer: number) => {
      try {
        return fast.location(pointer + dataBase);
      } catch {
        const rec = decode(pointer) as { location?: { latitude?: number; longitude?: number } } | null;
        const lat = rec?.location?.latitude;
        const lon = rec?.location?.longitude;
        return typeof lat === 'number' && typeof lon === 'number' ? { lat, lon } : null;
      }
    },
    databaseType: md.databaseType,
    buildEpoch: md.buildEpoch,
  };
}

/**
 * Depth-first walk of one family. `visit(hi, lo, prefix, pointer)` gets every network with
 * data (pointer > nodeCount, a data-section record number) and every empty one (pointer = -1).
 * Iterative (explicit stack), so 128 levels cost no recursion.
 */
export function walkTree(tree: TreeAccess, family: 4 | 6, visit: (hi: number, lo: number, prefix: number, pointer: number) => void): void {
  const { nodeCount } = tree;
  const maxDepth = family === 4 ? 32 : 128;
  const root = family === 4 ? tree.ipv4Start : 0;
  // Stack of (node, depth, hi, lo); addresses beyond 64 bits are not tracked (reported as the /64).
  const sNode: number[] = [root];
  const sDepth: number[] = [0];
  const sHi: number[] = [0];
  const sLo: number[] = [0];
  while (sNode.length > 0) {
    const node = sNode.pop()!;
    const depth = sDepth.pop()!;
    const hi = sHi.pop()!;
    const lo = sLo.pop()!;
    if (family === 6 && depth > 0 && node === tree.ipv4Start) continue;
    if (node === nodeCount) {
      visit(hi, lo, depth, -1);
      continue;
    }
    if (node > nodeCount) {
      visit(hi, lo, depth, node);
      continue;
    }
    if (depth >= maxDepth) continue;
    // Right child first onto the stack, so the left (lower addresses) is visited first.
    let rHi = hi;
    let rLo = lo;
    if (family === 4) rHi = (hi | (1 << (31 - depth))) >>> 0;
    else if (depth < 32) rHi = (hi | (1 << (31 - depth))) >>> 0;
    else if (depth < 64) rLo = (lo | (1 << (63 - depth))) >>> 0;
    sNode.push(tree.right(node), tree.left(node));
    sDepth.push(depth + 1, depth + 1);
    sHi.push(rHi, hi);
    sLo.push(rLo, lo);
  }
}
