/**
 * The simulated world, built once per run from a scenario, a seed and a scale: the fleet's
 * regions with their capacity in concurrent sessions, client /24s placed in metros, the
 * clients (hosts with an HTTP/2 connection pool) in each /24, and the recursive resolvers.
 * Every policy of a run shares one World, so they face the same clients. Pure: built from
 * (scenario, seed, scale) only.
 *
 * - Demand: world.demandShare per continent, then by metro population (metros.ts). A metro
 *   gets a number of /24s in proportion to its demand (at least one); its demand is split
 *   evenly among them, and evenly among each /24's clients.
 * - Each /24 uses one resolver of a pool; world.clampingResolvers of the resolvers (chosen at
 *   random) raise every TTL below world.clampTtl to it. world.ttlIgnoringClients of the
 *   clients (chosen at random) keep their address until their connection breaks.
 *   world.noEcsResolvers of the resolvers (drawn after everything else, so a world without
 *   them is the world it always was) send no ECS: a query's origin is then the resolver
 *   (placed in its metro), not the /24 (queryMetro).
 *   Classes (CLASS_*), the first that fits: TTL-ignoring (the client keeps its address),
 *   clamped-resolver (its resolver raises short TTLs), no-ECS (its resolver honours TTLs but
 *   sends no ECS), TTL-honouring (the client and its resolver honour TTLs, with ECS).
 * - Capacity: region r serves units_r × k concurrent sessions, with k such that the fleet's
 *   total is world.fleetHeadroom × the expected mean number of concurrent sessions
 *   (arrival rate × mean session length).
 */
import { isSpecial } from '../geo/addr.js';
import { greatCircleKm, rankRegions } from '../geo/distance.js';
import { METROS, metroWeights, type Metro } from './metros.js';
import { Alias, Rng } from './rng.js';
import type { Scenario, SimRegion } from './scenario.js';
import { meanLengthS } from './sessions.js';

/** Random streams (the seed is shared; each concern draws from its own stream). */
export const STREAM_WORLD = 1;
export const STREAM_ARRIVALS = 2;
export const STREAM_WARM = 3;
export const STREAM_POLICY = 4;
export const STREAM_HOOK = 5;
export const STREAM_CUT_RETRY = 6;
export const STREAM_CYCLE = 7;
export const STREAM_NOISE = 8;

export interface World {
  scenario: Scenario;
  seed: number;
  scale: number;
  regions: SimRegion[];
  regionIndex: Map<string, number>;
  /** Capacity of each region in concurrent sessions (no event in force). */
  capacity: Float64Array;
  /** Metros with demand, and per metro: its home region, its ranking (all regions, nearest first by biased distance) and km to each region. */
  metros: Metro[];
  metroHome: Int32Array;
  metroRanking: Int32Array[];
  /** km from metro m to region r at m × R + r. */
  metroKm: Float64Array;
  /** Demand weight of each metro (sums to 1). */
  metroWeight: Float64Array;
  subnetMetro: Int32Array;
  /** The /24's network address, as an unsigned 32-bit integer. */
  subnetAddr: Uint32Array;
  subnetResolver: Int32Array;
  subnetAlias: Alias;
  resolverClamps: Uint8Array;
  clientsPerSubnet: number;
  /** 1 when the resolver sends no ECS: its answer is chosen for its own location and cached once for every /24 behind it. */
  resolverNoEcs: Uint8Array;
  /** The metro of each resolver (it serves that metro's /24s). */
  resolverMetro: Int32Array;
  /** The network (/24) of each resolver's own address, for queries without ECS (0 when every resolver sends ECS). */
  resolverAddr: Uint32Array;
  /**
   * A DNS query's origin q: a /24 (q < S, the query carries its ECS) or a resolver without ECS
   * (q = S + resolver). Its metro (where decide places it) at q.
   */
  queryMetro: Int32Array;
  /** 1 when the client keeps its address until its connection breaks. */
  clientIgnoresTtl: Uint8Array;
  /** CLASS_HONOURING, CLASS_CLAMPED, CLASS_IGNORING or CLASS_NOECS. */
  clientClass: Uint8Array;
  /** Session arrivals per ms. */
  ratePerMs: number;
  /** Mean session length, ms. */
  meanLengthMs: number;
  /** Expected concurrent sessions, fleet-wide, and per home region. */
  expectedConcurrent: number;
  expectedHomeConcurrent: Float64Array;
  /** Expected share of sessions that are TTL-honouring (from the layout, not the run). */
  honouringShare: number;
  /** Expected share of sessions per class (CLASS_*). */
  classShare: [number, number, number, number];
}

/**
 * Client classes: the client and its resolver honour TTLs (with ECS); the resolver clamps short
 * TTLs up (the client honours them); the client ignores TTLs; the resolver honours TTLs but
 * sends no ECS (one answer for every /24 behind it). A client is in the first of ignoring,
 * clamped, no-ECS that fits, else honouring.
 */
export const CLASS_HONOURING = 0;
export const CLASS_CLAMPED = 1;
export const CLASS_IGNORING = 2;
export const CLASS_NOECS = 3;
export const CLASS_TITLES = ['TTL-honouring', 'clamped-resolver', 'TTL-ignoring', 'no-ECS'] as const;
export type ClassName = (typeof CLASS_TITLES)[number];

/** Picks exactly round(share × n) of n indices at random (partial Fisher–Yates). */
function pickShare(n: number, share: number, rng: Rng): Uint8Array {
  const out = new Uint8Array(n);
  const k = Math.round(share * n);
  const idx = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < k; i++) {
    const j = i + rng.int(n - i);
    [idx[i], idx[j]] = [idx[j]!, idx[i]!];
    out[idx[i]!] = 1;
  }
  return out;
}

/** Builds the world. `scale` multiplies sessions per hour, /24s and resolvers (capacity follows demand). */
export function buildWorld(sc: Scenario, seed: number, scale: number): World {
  const w = sc.world;
  const rng = new Rng(seed, STREAM_WORLD);
  const regions = sc.regions;
  const R = regions.length;
  const regionIndex = new Map(regions.map((r, i) => [r.id, i]));
  const weightsAll = metroWeights(w.demandShare);
  const metros: Metro[] = [];
  const mw: number[] = [];
  METROS.forEach((m, i) => {
    if (weightsAll[i]! > 0) {
      metros.push(m);
      mw.push(weightsAll[i]!);
    }
  });
  const M = metros.length;
  const sum = mw.reduce((s, x) => s + x, 0);
  const metroWeight = Float64Array.from(mw, (x) => x / sum);
  const located = regions.map((r) => ({ id: r.id, location: { lat: r.lat, lon: r.lon }, bias: r.bias }));
  const metroKm = new Float64Array(M * R);
  const metroHome = new Int32Array(M);
  const metroRanking: Int32Array[] = [];
  metros.forEach((m, i) => {
    const ranked = rankRegions({ lat: m.lat, lon: m.lon }, located);
    metroRanking.push(Int32Array.from(ranked, (x) => regionIndex.get(x.id)!));
    metroHome[i] = regionIndex.get(ranked[0]!.id)!;
    regions.forEach((r, j) => (metroKm[i * R + j] = greatCircleKm({ lat: m.lat, lon: m.lon }, { lat: r.lat, lon: r.lon })));
  });

  // /24s per metro in proportion to demand, at least one each.
  const wantSubnets = Math.max(M, Math.round(w.subnets * scale));
  const perMetro = Array.from(metroWeight, (x) => Math.max(1, Math.round(x * wantSubnets)));
  const S = perMetro.reduce((s, x) => s + x, 0);
  const subnetMetro = new Int32Array(S);
  const subnetWeights: number[] = [];
  let k = 0;
  perMetro.forEach((n, m) => {
    for (let i = 0; i < n; i++) {
      subnetMetro[k++] = m;
      subnetWeights.push(metroWeight[m]! / n);
    }
  });
  const subnetAddr = new Uint32Array(S);
  const used = new Set<number>();
  /** A random /24 not drawn before and not special-purpose (clients' subnets, then resolvers'). */
  const freshSlash24 = (): number => {
    for (;;) {
      const a = (rng.u32() & 0xffffff00) >>> 0;
      if (used.has(a) || isSpecial({ family: 4, hi: a, lo: 0 })) continue;
      used.add(a);
      return a;
    }
  };
  for (let i = 0; i < S; i++) subnetAddr[i] = freshSlash24();
  // Resolvers: a pool per metro in proportion to its /24s (at least one), each /24 uses one at random.
  const wantResolvers = Math.max(M, Math.round(w.resolvers * scale));
  const resolversPerMetro = perMetro.map((n) => Math.max(1, Math.round((n / S) * wantResolvers)));
  const firstResolver: number[] = [];
  let nRes = 0;
  for (const n of resolversPerMetro) {
    firstResolver.push(nRes);
    nRes += n;
  }
  const subnetResolver = new Int32Array(S);
  for (let i = 0; i < S; i++) {
    const m = subnetMetro[i]!;
    subnetResolver[i] = firstResolver[m]! + rng.int(resolversPerMetro[m]!);
  }
  const resolverClamps = pickShare(nRes, w.clampingResolvers, rng);
  const K = w.clientsPerSubnet;
  const C = S * K;
  const clientIgnoresTtl = pickShare(C, w.ttlIgnoringClients, rng);
  // Resolvers without ECS (drawn last: a scenario without them builds the world it always did).
  const resolverMetro = new Int32Array(nRes);
  perMetro.forEach((_, m) => resolverMetro.fill(m, firstResolver[m]!, firstResolver[m]! + resolversPerMetro[m]!));
  const resolverNoEcs = pickShare(nRes, w.noEcsResolvers, rng);
  const clientClass = new Uint8Array(C);
  const classW = [0, 0, 0, 0];
  for (let c = 0; c < C; c++) {
    const s = (c / K) | 0;
    const res = subnetResolver[s]!;
    clientClass[c] = clientIgnoresTtl[c] ? CLASS_IGNORING : resolverClamps[res] ? CLASS_CLAMPED : resolverNoEcs[res] ? CLASS_NOECS : CLASS_HONOURING;
    classW[clientClass[c]!]! += subnetWeights[s]! / K;
  }
  const honouring = classW[CLASS_HONOURING]!;
  const resolverAddr = new Uint32Array(nRes);
  if (w.noEcsResolvers > 0) {
    for (let i = 0; i < nRes; i++) resolverAddr[i] = freshSlash24();
  }
  // Resolvers without ECS far from their clients (drawn after the rest: without them the world is as it was).
  if (w.noEcsDistant > 0) {
    const byDemand = new Alias(Array.from(metroWeight));
    for (let i = 0; i < nRes; i++) if (resolverNoEcs[i] && rng.next() < w.noEcsDistant) resolverMetro[i] = byDemand.sample(rng);
  }
  const queryMetro = new Int32Array(S + nRes);
  queryMetro.set(subnetMetro, 0);
  queryMetro.set(resolverMetro, S);

  const ratePerMs = (w.sessionsPerHour * scale) / 3_600_000;
  const meanLengthMs = meanLengthS(w.session) * 1000;
  const expectedConcurrent = ratePerMs * meanLengthMs;
  const units = regions.reduce((s, r) => s + r.capacityUnits, 0);
  const capacity = Float64Array.from(regions, (r) => (r.capacityUnits / units) * w.fleetHeadroom * expectedConcurrent);
  const expectedHomeConcurrent = new Float64Array(R);
  metros.forEach((_, m) => (expectedHomeConcurrent[metroHome[m]!]! += metroWeight[m]! * expectedConcurrent));
  const wsum = subnetWeights.reduce((s, x) => s + x, 0);
  return {
    scenario: sc,
    seed,
    scale,
    regions,
    regionIndex,
    capacity,
    metros,
    metroHome,
    metroRanking,
    metroKm,
    metroWeight,
    subnetMetro,
    subnetAddr,
    subnetResolver,
    subnetAlias: new Alias(subnetWeights),
    resolverClamps,
    resolverNoEcs,
    resolverMetro,
    resolverAddr,
    queryMetro,
    clientsPerSubnet: K,
    clientIgnoresTtl,
    clientClass,
    ratePerMs,
    meanLengthMs,
    expectedConcurrent,
    expectedHomeConcurrent,
    honouringShare: honouring / wsum,
    classShare: [classW[0]! / wsum, classW[1]! / wsum, classW[2]! / wsum, classW[3]! / wsum],
  };
}

/**
 * The daily cycle's factor for metro m at t (ms epoch): 1 + amplitude × cos(2π (h − peakHour) ÷ 24),
 * h the metro's local solar hour (UTC hour + longitude ÷ 15). 1 without a cycle.
 */
export function cycleFactor(world: World, m: number, t: number): number {
  const c = world.scenario.world.dailyCycle;
  if (c.amplitude <= 0) return 1;
  const h = (((t / 3_600_000) % 24) + world.metros[m]!.lon / 15 + 48) % 24;
  return 1 + c.amplitude * Math.cos((2 * Math.PI * (h - c.peakHour)) / 24);
}

/** Fleet-wide demand at t as a multiple of its mean (the demand-weighted cycle factor; 1 without a cycle). */
export function demandFactor(world: World, t: number): number {
  if (world.scenario.world.dailyCycle.amplitude <= 0) return 1;
  let f = 0;
  for (let m = 0; m < world.metros.length; m++) f += world.metroWeight[m]! * cycleFactor(world, m, t);
  return f;
}
