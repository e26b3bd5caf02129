/**
 * The discrete-event engine: runs one policy over the world and the scenario's events on a
 * simulated clock (ms epoch), and measures what happened. Deterministic: the same world,
 * scenario, seed and policy give the same result; the session arrivals (times, clients,
 * lengths) come from a random stream of their own, so every policy of a run faces exactly the
 * same sessions. No wall clock is read.
 *
 * The model (docs/simulation.md has the full text):
 * - Sessions arrive as a Poisson process; each comes from a client picked by demand weight.
 * - A client with an open HTTP/2 connection sends the session on it (a new stream). An
 *   idle connection (no stream for world.idleTimeout) is closed. Otherwise the client resolves
 *   the name (a TTL-ignoring client reuses the address it has until its connection breaks),
 *   through its resolver's cache per (resolver, /24), and connects.
 * - A region out of power (power-off event, T ≤ t < E) refuses connections and streams. At T
 *   every session there is cut and every connection there breaks. A refused attempt is
 *   retried after world.retryBackoff (0 s, 1 s, 2 s, 4 s by default), resolving again; then
 *   the session fails.
 * - A throttle lowers the region's capacity from T to E; sessions there go on (slower): load
 *   may exceed capacity, which is measured, not cut.
 * - GridSteer's drain hook: when its plan lowers a region's own share from a to b (checked
 *   every simulated second), the region's gateway sends GOAWAY to (a − b) ÷ a of its open
 *   connections, picked at random (or, with goaway: admission, to those whose clients the plan
 *   no longer admits). A GOAWAY'd connection takes no new streams; its streams finish (or are
 *   cut at T); the client opens a new connection for its next session, resolving again.
 */
import type { Signal } from '../model/types.js';
import { makePolicy, type PolicyName, type SimPolicy, type WorldState } from './policies.js';
import { EventHeap } from './heap.js';
import { Rng } from './rng.js';
import type { Scenario } from './scenario.js';
import { sampleLengthMs, sampleTailMs } from './sessions.js';
import { STREAM_ARRIVALS, STREAM_POLICY, STREAM_WARM, type World } from './world.js';

/** The simulated span, ms epoch: warm-up from `start`, measured from `windowStart` to `windowEnd`. */
export interface Timeline {
  start: number;
  windowStart: number;
  windowEnd: number;
}

/**
 * The simulated span. With `hoursMs` below the scenario's hours, the window is shortened
 * before the first event (keeping 10 minutes before its start when it can) and then after:
 * facts announced before the window are known from its start.
 */
export function timeline(sc: Scenario, hoursMs?: number): Timeline {
  const full = sc.hoursMs;
  const h = hoursMs === undefined ? full : Math.min(full, hoursMs);
  const firstAt = Math.min(...sc.events.map((e) => e.atMs));
  const shift = Math.max(0, Math.min(firstAt - 600_000, full - h));
  const windowStart = sc.epoch + shift;
  return { start: windowStart - sc.world.warmupMs, windowStart, windowEnd: windowStart + h };
}

/** An event on the simulated clock. */
export interface EventRt {
  /** Index in the scenario's events. */
  idx: number;
  id: string;
  region: number;
  kind: 'power-off' | 'throttle';
  share: number;
  announce: number;
  T: number;
  E: number;
  /** Added distance is measured for the event region's clients in [distFrom, distTo). */
  distFrom: number;
  distTo: number;
}

export function eventsOf(world: World): EventRt[] {
  const sc = world.scenario;
  return sc.events.map((e, idx) => {
    const T = sc.epoch + e.atMs;
    const E = T + e.durationMs;
    const announce = T - e.noticeMs;
    return {
      idx,
      id: e.id,
      region: world.regionIndex.get(e.region)!,
      kind: e.effect.kind,
      share: e.effect.kind === 'throttle' ? e.effect.share : 1,
      announce,
      T,
      E,
      distFrom: Math.min(announce, T),
      distTo: E + DIST_AFTER_MS,
    };
  });
}

/** Added distance is measured until this long after an event's end (the restore). */
export const DIST_AFTER_MS = 15 * 60_000;
/** Histogram resolution of added distance: 1 km bins up to half the Earth's circumference. */
export const KM_BINS = 20_038;

/** Per traffic class: [TTL-honouring, the rest]. */
export type ByClass = [number, number];

export interface Series {
  t0: number;
  bucketMs: number;
  n: number;
  /** Sessions started per (bucket, region) at b × R + r. */
  started: Float64Array;
  /** Attempts refused per bucket (a region out of power or no answer). */
  refused: Float64Array;
  /** Sessions that failed (every attempt refused) per bucket. */
  failed: Float64Array;
  /** Concurrent sessions per region at each bucket's end, b × R + r. */
  load: Float64Array;
  /** Capacity per region at each bucket's end. */
  capacity: Float64Array;
}

export interface PolicyResult {
  policy: PolicyName;
  /** Sessions arriving in the window. */
  arrivals: ByClass;
  started: ByClass;
  /** Every attempt refused. */
  failed: ByClass;
  /** Started on a region already at or over its capacity. */
  startedOverCapacity: ByClass;
  /** Active on a region when it lost power (sessions of any age). */
  cut: ByClass;
  refusedAttempts: ByClass;
  /** Per event: sessions with an attempt sent to the event's region while the event was in force. */
  sentToEventRegion: ByClass[];
  /** Per event: sessions started (served) on the event's region while the event was in force. */
  startedOnEventRegion: ByClass[];
  /** Added km (served region vs nearest) of sessions of the event regions' clients in their windows. */
  addedKm: { count: ByClass; sum: ByClass; p95: ByClass; mean: ByClass };
  /** Per region: peak load ÷ capacity in the window, when it happened, and time over capacity (ms). */
  peakUtil: number[];
  peakAt: number[];
  overCapacityMs: number[];
  dnsQueries: number;
  goaways: number;
  plans: number;
  series: Series;
}

const EV_END = 0;
const EV_RETRY = 1;
const EV_WORLD = 2;
const EV_FACT = 3;
const TICK_MS = 1000;

/** A growable pool of int/float columns with a free list. */
class Pool {
  size: number;
  free: number[] = [];
  next = 0;
  constructor(size: number) {
    this.size = size;
  }
  alloc(grow: (n: number) => void): number {
    if (this.free.length > 0) return this.free.pop()!;
    if (this.next === this.size) {
      this.size *= 2;
      grow(this.size);
    }
    return this.next++;
  }
}

function growI32(a: Int32Array<ArrayBuffer>, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}
function growF64(a: Float64Array<ArrayBuffer>, n: number): Float64Array<ArrayBuffer> {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}
function growU8(a: Uint8Array<ArrayBuffer>, n: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(n);
  b.set(a);
  return b;
}

/** Progress: simulated ms done so far of this policy's run (called about every simulated minute). */
export type Progress = (doneMs: number, totalMs: number) => void;

/** Runs one policy. Bounded: time advances monotonically to the window's end. */
export function runPolicy(world: World, policyName: PolicyName, tl: Timeline, onProgress?: Progress): PolicyResult {
  const sc = world.scenario;
  const w = sc.world;
  const R = world.regions.length;
  const K = world.clientsPerSubnet;
  const S = world.subnetMetro.length;
  const C = S * K;
  const events = eventsOf(world);
  const policy: SimPolicy = makePolicy(policyName, world, tl.start);
  const arr = new Rng(world.seed, STREAM_ARRIVALS);
  const prng = new Rng(world.seed, STREAM_POLICY);
  const heap = new EventHeap(1 << 14);
  const backoff = w.retryBackoffMs;
  const idleMs = w.idleTimeoutMs;
  const meanGap = 1 / world.ratePerMs;
  const inWindow = (t: number) => t >= tl.windowStart && t < tl.windowEnd;

  // World state.
  const serving = new Uint8Array(R).fill(1);
  const load = new Float64Array(R);
  const capacityNow = Float64Array.from(world.capacity);
  const throttled = new Float64Array(R);
  const eventsOfRegion: EventRt[][] = Array.from({ length: R }, () => []);
  for (const e of events) eventsOfRegion[e.region]!.push(e);
  const probed = [...new Set(events.filter((e) => e.kind === 'power-off').map((e) => e.region))].sort((a, b) => a - b);
  const ws: WorldState = {
    serving,
    load,
    capacityNow,
    throttled,
    probed,
    eventActive: (r, t) => eventsOfRegion[r]!.some((e) => t >= e.T && t < e.E),
  };

  // Clients, resolver caches (one per /24: each /24 uses one resolver).
  const curConn = new Int32Array(C).fill(-1);
  const sticky = new Int32Array(C).fill(-1);
  const cacheExp = new Float64Array(S);
  const cacheRegion = new Int32Array(S).fill(-1);
  const clampMs = w.clampTtlS * 1000;

  // Connections.
  const cp = new Pool(Math.max(1024, C));
  let cClient = new Int32Array(cp.size);
  let cRegion = new Int32Array(cp.size);
  let cActive = new Int32Array(cp.size);
  let cIdle = new Float64Array(cp.size);
  let cState = new Uint8Array(cp.size); // 0 free, 1 open, 2 draining (GOAWAY sent)
  let cPos = new Int32Array(cp.size);
  const growConns = (n: number) => {
    cClient = growI32(cClient, n);
    cRegion = growI32(cRegion, n);
    cActive = growI32(cActive, n);
    cIdle = growF64(cIdle, n);
    cState = growU8(cState, n);
    cPos = growI32(cPos, n);
  };
  const regionConns: Int32Array<ArrayBuffer>[] = Array.from({ length: R }, () => new Int32Array(256));
  const regionConnN = new Int32Array(R);

  // Sessions.
  const sp = new Pool(16_384);
  let sClient = new Int32Array(sp.size);
  let sConn = new Int32Array(sp.size);
  let sRegion = new Int32Array(sp.size);
  let sGen = new Int32Array(sp.size);
  let sLive = new Uint8Array(sp.size);
  const growSess = (n: number) => {
    sClient = growI32(sClient, n);
    sConn = growI32(sConn, n);
    sRegion = growI32(sRegion, n);
    sGen = growI32(sGen, n);
    sLive = growU8(sLive, n);
  };

  // Pending sessions (between arrival and start or failure).
  const pp = new Pool(4096);
  let pClient = new Int32Array(pp.size);
  let pLen = new Float64Array(pp.size);
  let pArr = new Float64Array(pp.size);
  let pTries = new Int32Array(pp.size);
  let pFlags = new Int32Array(pp.size);
  const growPend = (n: number) => {
    pClient = growI32(pClient, n);
    pLen = growF64(pLen, n);
    pArr = growF64(pArr, n);
    pTries = growI32(pTries, n);
    pFlags = growI32(pFlags, n);
  };

  // Results.
  const nb = Math.ceil((tl.windowEnd - tl.windowStart) / w.bucketMs);
  const series: Series = {
    t0: tl.windowStart,
    bucketMs: w.bucketMs,
    n: nb,
    started: new Float64Array(nb * R),
    refused: new Float64Array(nb),
    failed: new Float64Array(nb),
    load: new Float64Array(nb * R),
    capacity: new Float64Array(nb * R),
  };
  const bucketOf = (t: number) => Math.min(nb - 1, Math.floor((t - tl.windowStart) / w.bucketMs));
  const arrivals: ByClass = [0, 0];
  const started: ByClass = [0, 0];
  const failed: ByClass = [0, 0];
  const overCap: ByClass = [0, 0];
  const cut: ByClass = [0, 0];
  const refusedAttempts: ByClass = [0, 0];
  const sentTo: ByClass[] = events.map(() => [0, 0]);
  const startedOn: ByClass[] = events.map(() => [0, 0]);
  const kmHist = [new Uint32Array(KM_BINS + 1), new Uint32Array(KM_BINS + 1)];
  const kmSum: ByClass = [0, 0];
  const kmCount: ByClass = [0, 0];
  const peakUtil = new Array<number>(R).fill(0);
  const peakAt = new Array<number>(R).fill(0);
  const overMs = new Array<number>(R).fill(0);
  let dnsQueries = 0;
  let goaways = 0;
  const nearestKm = new Float64Array(world.metros.length);
  world.metros.forEach((_, m) => (nearestKm[m] = world.metroKm[m * R + world.metroHome[m]!]!));
  /** Per home region: the added-distance windows of its events. */
  const distWindows: [number, number][][] = Array.from({ length: R }, (_, r) => eventsOfRegion[r]!.map((e) => [e.distFrom, e.distTo] as [number, number]));

  const notePeak = (r: number, t: number) => {
    if (!inWindow(t) || capacityNow[r]! <= 0) return;
    const u = load[r]! / capacityNow[r]!;
    if (u > peakUtil[r]!) {
      peakUtil[r] = u;
      peakAt[r] = t;
    }
  };

  // --- connections -------------------------------------------------------------------
  const openConn = (c: number, r: number, t: number): number => {
    const k = cp.alloc(growConns);
    cClient[k] = c;
    cRegion[k] = r;
    cActive[k] = 0;
    cIdle[k] = t;
    cState[k] = 1;
    let list = regionConns[r]!;
    if (regionConnN[r] === list.length) regionConns[r] = list = growI32(list, list.length * 2);
    cPos[k] = regionConnN[r]!;
    list[regionConnN[r]!++] = k;
    curConn[c] = k;
    return k;
  };
  const freeConn = (k: number) => {
    const r = cRegion[k]!;
    const list = regionConns[r]!;
    const last = list[--regionConnN[r]!]!;
    list[cPos[k]!] = last;
    cPos[last] = cPos[k]!;
    if (curConn[cClient[k]!] === k) curConn[cClient[k]!] = -1;
    cState[k] = 0;
    cp.free.push(k);
  };
  const goaway = (k: number) => {
    if (cState[k] !== 1) return;
    goaways++;
    if (curConn[cClient[k]!] === k) curConn[cClient[k]!] = -1;
    if (cActive[k] === 0) freeConn(k);
    else cState[k] = 2;
  };

  // --- sessions ----------------------------------------------------------------------
  const newPending = (c: number, len: number, t: number): number => {
    const p = pp.alloc(growPend);
    pClient[p] = c;
    pLen[p] = len;
    pArr[p] = t;
    pTries[p] = 0;
    pFlags[p] = 0;
    return p;
  };
  const closePending = (p: number) => {
    if (inWindow(pArr[p]!) && pFlags[p]) {
      const cls = world.clientClass[pClient[p]!]! as 0 | 1;
      for (let e = 0; e < events.length; e++) if (pFlags[p]! & (1 << e)) sentTo[e]![cls]++;
    }
    pp.free.push(p);
  };
  const markSent = (p: number, r: number, t: number) => {
    const evs = eventsOfRegion[r]!;
    for (let i = 0; i < evs.length; i++) {
      const e = evs[i]!;
      if (t >= e.T && t < e.E) pFlags[p]! |= 1 << e.idx;
    }
  };
  const resolve = (c: number, t: number): number => {
    if (world.clientIgnoresTtl[c] && sticky[c]! >= 0) return sticky[c]!;
    const s = (c / K) | 0;
    let r: number;
    if (cacheExp[s]! > t) r = cacheRegion[s]!;
    else {
      r = policy.answer(s, t);
      dnsQueries++;
      if (r < 0) return -1;
      let ttlMs = policy.ttl * 1000;
      if (world.resolverClamps[world.subnetResolver[s]!] && ttlMs < clampMs) ttlMs = clampMs;
      cacheExp[s] = t + ttlMs;
      cacheRegion[s] = r;
    }
    if (world.clientIgnoresTtl[c]) sticky[c] = r;
    return r;
  };
  const refuse = (p: number, t: number) => {
    const c = pClient[p]!;
    const cls = world.clientClass[c]! as 0 | 1;
    if (inWindow(pArr[p]!)) refusedAttempts[cls]++;
    if (inWindow(t)) series.refused[bucketOf(t)]!++;
    sticky[c] = -1; // the connection broke: a TTL-ignoring client resolves again
    const tries = ++pTries[p]!;
    if (tries > backoff.length) {
      if (inWindow(pArr[p]!)) failed[cls]++;
      if (inWindow(t)) series.failed[bucketOf(t)]!++;
      closePending(p);
      return;
    }
    heap.push(t + backoff[tries - 1]!, (p << 2) | EV_RETRY, 0);
  };
  const startSession = (p: number, k: number, r: number, t: number) => {
    const c = pClient[p]!;
    const cls = world.clientClass[c]! as 0 | 1;
    const measured = inWindow(pArr[p]!);
    if (measured && load[r]! >= capacityNow[r]!) overCap[cls]++;
    load[r]!++;
    notePeak(r, t);
    cActive[k]!++;
    const sess = sp.alloc(growSess);
    sClient[sess] = c;
    sConn[sess] = k;
    sRegion[sess] = r;
    sLive[sess] = 1;
    heap.push(t + pLen[p]!, (sess << 2) | EV_END, ++sGen[sess]!);
    if (measured) {
      started[cls]++;
      const evs = eventsOfRegion[r]!;
      for (let i = 0; i < evs.length; i++) {
        const e = evs[i]!;
        if (t >= e.T && t < e.E) startedOn[e.idx]![cls]++;
      }
      const m = world.subnetMetro[(c / K) | 0]!;
      const win = distWindows[world.metroHome[m]!]!;
      for (let i = 0; i < win.length; i++) {
        if (t >= win[i]![0] && t < win[i]![1]) {
          const added = Math.max(0, world.metroKm[m * R + r]! - nearestKm[m]!);
          kmSum[cls] += added;
          kmCount[cls]++;
          kmHist[cls]![Math.min(KM_BINS, Math.round(added))]!++;
          break;
        }
      }
    }
    if (inWindow(t)) series.started[bucketOf(t) * R + r]!++;
    closePending(p);
  };
  const attempt = (p: number, t: number) => {
    const c = pClient[p]!;
    let k = curConn[c]!;
    if (k >= 0 && cActive[k] === 0 && t - cIdle[k]! >= idleMs) {
      freeConn(k);
      k = -1;
    }
    if (k >= 0) {
      const r = cRegion[k]!;
      markSent(p, r, t);
      if (!serving[r] || gatewayRefuses[r]) {
        freeConn(k);
        refuse(p, t);
        return;
      }
      startSession(p, k, r, t);
      return;
    }
    const r = resolve(c, t);
    if (r < 0) {
      refuse(p, t);
      return;
    }
    markSent(p, r, t);
    if (!serving[r] || gatewayRefuses[r]) {
      refuse(p, t);
      return;
    }
    startSession(p, openConn(c, r, t), r, t);
  };

  const endSession = (sess: number, t: number) => {
    if (!sLive[sess]) return;
    sLive[sess] = 0;
    const r = sRegion[sess]!;
    load[r]!--;
    const k = sConn[sess]!;
    if (--cActive[k]! === 0) {
      cIdle[k] = t;
      if (cState[k] === 2) freeConn(k);
    }
    sp.free.push(sess);
  };

  // --- world events ------------------------------------------------------------------
  const worldEvent = (code: number, t: number) => {
    const e = events[code >> 1]!;
    const r = e.region;
    const starting = (code & 1) === 0;
    if (e.kind === 'power-off') {
      if (starting) {
        serving[r] = 0;
        capacityNow[r] = 0;
        // Every session there is cut; every connection there breaks.
        for (let sess = 0; sess < sp.next; sess++) {
          if (!sLive[sess] || sRegion[sess] !== r) continue;
          const cls = world.clientClass[sClient[sess]!]! as 0 | 1;
          if (inWindow(t)) cut[cls]++;
          sLive[sess] = 0;
          load[r]!--;
          cActive[sConn[sess]!]!--;
          sp.free.push(sess);
        }
        while (regionConnN[r]! > 0) {
          const k = regionConns[r]![0]!;
          sticky[cClient[k]!] = -1;
          freeConn(k);
        }
      } else {
        serving[r] = 1;
        capacityNow[r] = world.capacity[r]! * (1 - throttled[r]!);
      }
    } else {
      throttled[r] = starting ? e.share : 0;
      if (serving[r]) capacityNow[r] = world.capacity[r]! * (1 - throttled[r]!);
      notePeak(r, t);
    }
  };

  // --- the drain hook (GridSteer) ----------------------------------------------------
  const lastShare = new Float64Array(R).fill(1);
  /** 1 while the region's gateway refuses new streams because the plan says so (GridSteer's `refuse`). */
  const gatewayRefuses = new Uint8Array(R);
  const drainHook = (t: number) => {
    for (let r = 0; r < R; r++) {
      const sh = policy.drainShare(r, t);
      if (sh === undefined) return;
      gatewayRefuses[r] = policy.refuses(r, t) ? 1 : 0;
      const last = lastShare[r]!;
      if (sh < last - 1e-9) {
        const shed = last > 0 ? 1 - sh / last : 1;
        // Copy the list first: GOAWAY may free connections (which reorders the list).
        const list = regionConns[r]!.slice(0, regionConnN[r]!);
        for (const k of list) {
          if (cState[k] !== 1) continue;
          if (cActive[k] === 0 && t - cIdle[k]! >= idleMs) {
            freeConn(k);
            continue;
          }
          const go = sc.policies.gridsteer.goaway === 'admission' ? !policy.admits(r, (cClient[k]! / K) | 0, t) : prng.next() < shed;
          if (go) goaway(k);
        }
      }
      lastShare[r] = sh;
    }
  };

  // --- schedule world instants and facts ---------------------------------------------
  events.forEach((e, i) => {
    heap.push(Math.max(e.T, tl.start), ((2 * i) << 2) | EV_WORLD, 0);
    heap.push(Math.max(e.E, tl.start), ((2 * i + 1) << 2) | EV_WORLD, 0);
  });
  const facts: { t: number; signal: Signal }[] = [];
  sc.events.forEach((e, i) => {
    const ev = events[i]!;
    e.facts.forEach((f) => {
      for (let at = ev.announce; at < ev.E; at += f.repeatMs) {
        const expiresAt = f.kind === 'grid.event' ? Math.max(ev.E, at + 3 * f.repeatMs) : at + 3 * f.repeatMs;
        facts.push({ t: Math.max(at, tl.start), signal: { region: e.region, kind: f.kind, source: f.source, key: f.key, observedAt: at, expiresAt, value: f.value } });
      }
    });
  });
  facts.sort((a, b) => a.t - b.t || a.signal.observedAt - b.signal.observedAt);
  if (policyName === 'gridsteer') facts.forEach((f, i) => heap.push(f.t, (i << 2) | EV_FACT, 0));

  // --- warm start: long sessions begun before the simulation, at their home ------------
  {
    const warm = new Rng(world.seed, STREAM_WARM);
    const p = w.session;
    const tailRate = world.ratePerMs * p.tailShare;
    if (tailRate > 0) {
      for (let t = tl.start - p.tailMaxS * 1000 + warm.exp(1 / tailRate); t < tl.start; t += warm.exp(1 / tailRate)) {
        const s = world.subnetAlias.sample(warm);
        const c = s * K + warm.int(K);
        const len = sampleTailMs(p, warm);
        if (t + len <= tl.start) continue;
        const r = world.metroHome[world.subnetMetro[s]!]!;
        const pend = newPending(c, t + len - tl.start, t);
        const k = curConn[c]! >= 0 ? curConn[c]! : openConn(c, r, tl.start);
        if (world.clientIgnoresTtl[c]) sticky[c] = cRegion[k]!;
        startSession(pend, k, cRegion[k]!, tl.start);
      }
    }
  }

  // --- the loop ----------------------------------------------------------------------
  let nextArrival = tl.start + arr.exp(meanGap);
  let nextTick = tl.start;
  const totalMs = tl.windowEnd - tl.start;
  let nextProgress = tl.start;
  for (;;) {
    const th = heap.peekTime();
    let t: number;
    if (th <= nextArrival && th <= nextTick) {
      t = heap.pop();
      if (t >= tl.windowEnd) break;
      const kind = heap.outA & 3;
      const x = heap.outA >>> 2;
      if (kind === EV_END) {
        // A session cut at T has a later generation in its slot (or none live): its end is void.
        if (heap.outB === sGen[x] && sLive[x]) endSession(x, t);
      } else if (kind === EV_RETRY) attempt(x, t);
      else if (kind === EV_WORLD) worldEvent(x, t);
      else policy.fact(facts[x]!.signal, t);
    } else if (nextTick <= nextArrival) {
      t = nextTick;
      if (t >= tl.windowEnd) break;
      nextTick += TICK_MS;
      policy.tick(t, ws);
      drainHook(t);
      if (inWindow(t)) {
        for (let r = 0; r < R; r++) {
          if (load[r]! > capacityNow[r]!) overMs[r] = overMs[r]! + TICK_MS;
          notePeak(r, t);
        }
        if ((t - tl.windowStart + TICK_MS) % w.bucketMs === 0 || t + TICK_MS >= tl.windowEnd) {
          const b = bucketOf(t);
          for (let r = 0; r < R; r++) {
            series.load[b * R + r] = load[r]!;
            series.capacity[b * R + r] = capacityNow[r]!;
          }
        }
      }
      if (onProgress && t >= nextProgress) {
        onProgress(t - tl.start, totalMs);
        nextProgress += 60_000;
      }
    } else {
      t = nextArrival;
      if (t >= tl.windowEnd) break;
      nextArrival += arr.exp(meanGap);
      const s = world.subnetAlias.sample(arr);
      const c = s * K + arr.int(K);
      const len = sampleLengthMs(w.session, arr);
      if (inWindow(t)) arrivals[world.clientClass[c]! as 0 | 1]++;
      attempt(newPending(c, len, t), t);
    }
  }
  onProgress?.(totalMs, totalMs);

  const pct = (h: Uint32Array, n: number, q: number) => {
    if (n === 0) return 0;
    const want = Math.ceil(q * n);
    let acc = 0;
    for (let i = 0; i < h.length; i++) {
      acc += h[i]!;
      if (acc >= want) return i;
    }
    return h.length - 1;
  };
  return {
    policy: policyName,
    arrivals,
    started,
    failed,
    startedOverCapacity: overCap,
    cut,
    refusedAttempts,
    sentToEventRegion: sentTo,
    startedOnEventRegion: startedOn,
    addedKm: {
      count: kmCount,
      sum: kmSum,
      mean: [kmCount[0] ? kmSum[0] / kmCount[0] : 0, kmCount[1] ? kmSum[1] / kmCount[1] : 0],
      p95: [pct(kmHist[0]!, kmCount[0], 0.95), pct(kmHist[1]!, kmCount[1], 0.95)],
    },
    peakUtil,
    peakAt,
    overCapacityMs: overMs,
    dnsQueries,
    goaways,
    plans: policy.plans,
    series,
  };
}
