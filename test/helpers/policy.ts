/**
 * Test-only helpers for the geo and policy unit tests (not a test file itself): a seeded
 * PRNG, random public subnets, plans with weights and schedules, a synthetic geo table and
 * a zone snapshot whose steered name is served by three regions a, b and c.
 */
import { isSpecial, type Addr } from '../../gslb/geo/addr.js';
import { GeoTable, type RankingEntry } from '../../gslb/geo/table.js';
import type { ZoneSnapshot } from '../../gslb/dns/zone.js';
import type { Plan, RegionId, RegionStep, Signal } from '../../gslb/model/types.js';
import { heldAgainst, reduce } from '../../gslb/state/reducer.js';
import type { Provenance } from '../../gslb/model/principal.js';
import type { SignalRecord } from '../../gslb/model/snapshot.js';
import { SNAP } from '../../gslb/dns/testing.js';

/** splitmix32: a deterministic 32-bit PRNG (same sequence for the same seed, everywhere). */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/**
 * xorshift32 (Marsaglia): a deterministic 32-bit PRNG returning uint32, used by the fuzz
 * tests and benchmarks so that a failure names a reproducible seed and index.
 */
export function xorshift32(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

/** A random public (not special) IPv4 address masked to /24, as a uint32. */
export function randomPublic24(next: () => number): number {
  for (;;) {
    const a = (next() & 0xffffff00) >>> 0;
    if (!isSpecial({ family: 4, hi: a, lo: 0 })) return a;
  }
}

/** A random global-unicast IPv6 /56 (top 64 bits, low 8 of them zero), not special. */
export function randomPublic56(next: () => number): Addr {
  for (;;) {
    const a: Addr = { family: 6, hi: ((next() & 0x1fffffff) | 0x20000000) >>> 0, lo: (next() & 0xffffff00) >>> 0 };
    if (!isSpecial(a)) return a;
  }
}

/**
 * A fleet-wide step, the way tests like to write schedules: from `at` on, weights
 * w[home][target] (missing = 1), the regions down and TTL caps per region.
 */
export interface FleetStep {
  at: number;
  weights?: Record<RegionId, Record<RegionId, number>>;
  down?: RegionId[];
  ttlCap?: Record<RegionId, number>;
  reasons?: string[];
}

/**
 * Turns fleet-wide steps into the per-region schedules of a Plan (ADR 0006): each region
 * gets a step wherever its column of weights, its down flag or its TTL cap changes.
 */
export function planFromSteps(steps: FleetStep[], version = 'test:steps'): Plan {
  const regions = new Set<RegionId>();
  for (const st of steps) {
    for (const row of Object.values(st.weights ?? {})) for (const r of Object.keys(row)) regions.add(r);
    for (const r of st.down ?? []) regions.add(r);
    for (const r of Object.keys(st.ttlCap ?? {})) regions.add(r);
  }
  const out: Record<RegionId, RegionStep[]> = {};
  for (const r of regions) {
    const xs: RegionStep[] = [];
    let prev = JSON.stringify([{}, false, null]);
    for (const st of steps) {
      const homes: Record<RegionId, number> = {};
      for (const [h, row] of Object.entries(st.weights ?? {})) if (row[r] !== undefined) homes[h] = row[r]!;
      const down = (st.down ?? []).includes(r);
      const cap = st.ttlCap?.[r];
      const key = JSON.stringify([homes, down, cap ?? null]);
      if (key === prev) continue;
      prev = key;
      const x: RegionStep = { at: st.at, share: 1, down, reasons: st.reasons ?? ['test'] };
      if (Object.keys(homes).length > 0) x.homes = homes;
      if (cap !== undefined) x.ttlCap = cap;
      xs.push(x);
    }
    if (xs.length > 0) out[r] = xs;
  }
  return { version, configHash: 'test', storeRevision: 0, computedAt: 0, regions: out };
}

/** A one-step plan with weights w[home][target] (missing = 1). */
export function planWith(weights: Record<RegionId, Record<RegionId, number>>, extra: Omit<FleetStep, 'at' | 'weights'> = {}): Plan {
  return planFromSteps([{ at: 0, weights, ...extra }], `test:${JSON.stringify(weights)}`);
}

/** A plan from explicit fleet-wide steps. */
export function planOf(steps: FleetStep[]): Plan {
  return planFromSteps(steps);
}

/** Endpoints of the synthetic regions: one IPv4 and one IPv6 address each. */
export const REGION_ADDR: Record<string, { v4: string; v6: string }> = {
  a: { v4: '203.0.113.1', v6: '2001:db8:a::1' },
  b: { v4: '203.0.113.2', v6: '2001:db8:b::1' },
  c: { v4: '203.0.113.3', v6: '2001:db8:c::1' },
};

const BY_ADDRESS = new Map(Object.entries(REGION_ADDR).flatMap(([id, a]) => [[a.v4, id], [a.v6, id]] as [string, string][]));

/** The region whose endpoint is `addr` (or undefined). */
export function regionOfAddress(addr: string): string | undefined {
  return BY_ADDRESS.get(addr);
}

/** The zones of dns/testing.ts with api.gslb.example.com steered over regions a, b, c. */
export function snapshotABC(o: { whenAllDown?: 'nearest' | 'all' | 'empty' | 'servfail'; ttl?: number } = {}): ZoneSnapshot {
  return {
    zones: SNAP.zones,
    names: [{ name: 'api.gslb.example.com', ttl: o.ttl ?? 30, ...(o.whenAllDown ? { whenAllDown: o.whenAllDown } : {}) }],
    regions: Object.entries(REGION_ADDR).map(([id, a]) => ({ id, endpoints: [{ address: a.v4 }, { address: a.v6 }] })),
  } as ZoneSnapshot;
}

/**
 * A synthetic table. IPv4: `v4` lists [start address (dotted), ranking index] in address
 * order (the first must start at 0.0.0.0). IPv6: `v6` lists [top-64 hi, lo, ranking index].
 */
export function syntheticTable(rankings: string[][], v4: [string, number][], v6: [number, number, number][] = [[0, 0, 0]]): GeoTable {
  const entries: RankingEntry[] = rankings.map((regions, i) => (i === 0 ? { regions, origin: 'default', note: 'synthetic' } : { regions, origin: 'geoip' }));
  const toU32 = (s: string) => s.split('.').reduce((acc, x) => acc * 256 + Number(x), 0);
  return new GeoTable(
    { dbHash: 'synthetic', geometryHash: 'synthetic', databaseType: 'synthetic', databaseBuilt: '', builtAt: 0, buildMs: 0, networks4: v4.length, networks6: v6.length },
    entries,
    Uint32Array.from(v4, ([s]) => toU32(s)),
    Uint16Array.from(v4, ([, r]) => r),
    Uint32Array.from(v6, ([h]) => h),
    Uint32Array.from(v6, ([, l]) => l),
    Uint16Array.from(v6, ([, , r]) => r),
  );
}

/** Folds signals through the real reducer in order, like a store does; records sorted by id. */
export function foldRecords(...signals: Signal[]): SignalRecord[] {
  const byId = new Map<string, SignalRecord>();
  for (const s of signals) {
    const id = `${s.region}|${s.kind}|${s.source}|${s.key}`;
    const r = reduce(byId.get(id), s);
    if (r) byId.set(id, r);
  }
  return [...byId.values()].sort((x, y) => (x.id < y.id ? -1 : 1));
}

/** foldRecords with who wrote each (ADR 0021): `[signal, provenance]` pairs, through the real reducer and its ownership rule. */
export function foldRecordsBy(...writes: [Signal, Provenance | undefined][]): SignalRecord[] {
  const byId = new Map<string, SignalRecord>();
  for (const [s, by] of writes) {
    const id = `${s.region}|${s.kind}|${s.source}|${s.key}`;
    if (heldAgainst(byId.get(id), s, by) !== null) continue;
    const r = reduce(byId.get(id), s, undefined, by);
    if (r) byId.set(id, r);
  }
  return [...byId.values()].sort((x, y) => (x.id < y.id ? -1 : 1));
}
