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
 * - Overlapping or back-to-back events on one region: dark while any power-off is in force
 *   (cut once, when it goes dark), throttled by the largest share in force.
 * - A cut session may be retried by its client (world.cutRetry), resolving again; counted
 *   apart from arrivals. A resolver without ECS caches one answer for all its /24s.
 * - GridSteer's drain hook: whenever its plan changes a region's state (share, refuse,
 *   goawayBy; checked every simulated second) the hook calls the gateway; a call may fail and
 *   be retried, and takes effect after a delay (policies.gridsteer.hook). When the share the
 *   gateway was told falls from a to b it sends GOAWAY to (a − b) ÷ a of its open
 *   connections, picked at random (or, with goaway: admission, to those whose clients the plan
 *   no longer admits); from a step with goawayBy, to every connection progressively by then.
 *   A GOAWAY'd connection takes no new streams; its streams finish (or are cut at T); the
 *   client opens a new connection for its next session, resolving again.
 * - Cuts at T are split by session start at the announcement (the unavoidable bound); load is
 *   split into own clients and spill; GridSteer's plan's unplaced demand is sampled each second.
 */
import type { Signal } from '../model/types.js';
import type { WindowOccurrence } from '../model/windows.js';
import { capReactionMs, GridSteerPolicy, makePolicy, type PolicyName, type SimPolicy, type WorldState } from './policies.js';
import { EventHeap } from './heap.js';
import { Rng } from './rng.js';
import type { Scenario, ScenarioEvent, ScenarioFact } from './scenario.js';
import { sampleLengthMs, sampleTailMs } from './sessions.js';
import { cycleFactor, demandFactor, STREAM_ARRIVALS, STREAM_CUT_RETRY, STREAM_CYCLE, STREAM_HOOK, STREAM_POLICY, STREAM_WARM, type World } from './world.js';

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
  /** none: a claim with no physical effect (GridSteer is told; the region is as it was). */
  kind: 'power-off' | 'throttle' | 'none';
  /** The share of GPUs lost (a throttle); 1 for a power-off, 0 for none. */
  share: number;
  announce: number;
  /**
   * The earliest instant anyone could learn of the event: the announcement when GridSteer is
   * told (the event has facts), else T (only its own scrapes and probes can see it).
   */
  learn: number;
  T: number;
  E: number;
  /**
   * Power-off: whether this event is the one that takes the region dark at its T (no other
   * power-off of the region is in force then, and of events beginning at the same instant the
   * first in the file): only then are sessions cut at its T. False for a throttle.
   */
  goesDark: boolean;
  /** Power-off: the region has served since this instant when T comes (the end of its last earlier dark spell; −∞ if none). */
  servedFrom: number;
  /** Added distance is measured for the event region's clients in [distFrom, distTo). */
  distFrom: number;
  distTo: number;
}

/**
 * What a fact's source tells, piece by piece: the announced value from the announcement, then
 * each change's (a new end; a cancellation: cancelled: true for a grid.event, the all-clear
 * type normal level 0 for a grid.alert) from its instant, each re-reported until the
 * next change or the end it tells (a cancellation: until the end told before it). `end` is
 * the end told, ms epoch.
 */
export function factSegments(epoch: number, announce: number, e: ScenarioEvent, f: ScenarioFact): { from: number; to: number; end: number; value: Record<string, unknown> }[] {
  const out: { from: number; to: number; end: number; value: Record<string, unknown> }[] = [];
  let value = f.value;
  let from = announce;
  let end = value.end as number;
  for (const c of e.changes) {
    out.push({ from, to: epoch + c.atMs, end, value });
    from = epoch + c.atMs;
    if (c.cancelled) {
      // A grid.event says cancelled; a grid.alert has no such field: its source sends the all-clear (type normal, level 0), as an ISO ends an EEA.
      if (f.kind === 'grid.event') value = { ...value, cancelled: true };
      else {
        const { message: _message, ...rest } = value;
        value = { ...rest, type: 'normal', level: 0 };
      }
    }
    else {
      end = epoch + c.endMs!;
      value = { ...value, end };
    }
  }
  out.push({ from, to: end, end, value });
  return out;
}

export function eventsOf(world: World): EventRt[] {
  const sc = world.scenario;
  const offs = sc.events.map((e, idx) => ({ idx, region: e.region, T: sc.epoch + e.atMs, E: sc.epoch + e.atMs + e.durationMs, off: e.effect.kind === 'power-off' })).filter((x) => x.off);
  return sc.events.map((e, idx) => {
    const T = sc.epoch + e.atMs;
    const E = T + e.durationMs;
    const announce = T - e.noticeMs;
    const same = offs.filter((x) => x.region === e.region && x.idx !== idx);
    const goesDark = e.effect.kind === 'power-off' && !same.some((x) => (x.T < T && x.E >= T) || (x.T === T && x.idx < idx));
    return {
      idx,
      id: e.id,
      region: world.regionIndex.get(e.region)!,
      kind: e.effect.kind,
      share: e.effect.kind === 'throttle' ? e.effect.share : e.effect.kind === 'power-off' ? 1 : 0,
      announce,
      learn: e.facts.length > 0 ? Math.min(announce, T) : T,
      T,
      E,
      goesDark,
      servedFrom: Math.max(-Infinity, ...same.filter((x) => x.E <= T).map((x) => x.E)),
      distFrom: Math.min(announce, T),
      distTo: E + DIST_AFTER_MS,
    };
  });
}

/** Added distance is measured until this long after an event's end (the restore). */
export const DIST_AFTER_MS = 15 * 60_000;
/** Histogram resolution of added distance: 1 km bins up to half the Earth's circumference. */
export const KM_BINS = 20_038;

/** Per client class: [TTL-honouring, clamped-resolver, TTL-ignoring, no-ECS] (world.ts CLASS_*). */
export type ByClass = [number, number, number, number];
const zeros = (): ByClass => [0, 0, 0, 0];

/** The gateways' drain-hook deliveries (GridSteer). */
export interface HookStats {
  /** Calls made (a region's state changed). */
  calls: number;
  /** Calls delivered, and of them those delivered only after a failed attempt (late). */
  delivered: number;
  late: number;
  /** Attempts that failed; calls given up after every retry failed; calls abandoned for a newer state. */
  failedAttempts: number;
  gaveUp: number;
  abandoned: number;
  /** From the call to its delivery, ms: the longest and the sum (mean = sum ÷ delivered). */
  maxLagMs: number;
  sumLagMs: number;
}

/** Cut sessions retried by their clients. */
export interface CutRetryStats {
  retried: ByClass;
  /** Retries that started somewhere, that failed (every attempt refused), that tried a dark region first. */
  started: ByClass;
  failed: ByClass;
  sentDark: ByClass;
}

/**
 * A partial cap (a throttle event: demand response, an import limit, throttled GPUs) and
 * target (e): whether the region's simulated load held the capped level from T (or from when
 * the policy could act) to E. Sessions started on the region from `free` on are the policy's
 * choice: free = the instant anyone could learn of the cap (the announcement when GridSteer is
 * told, else T) + its reaction time (capReactionMs). From `from` = max(T, free) to E, every
 * simulated second with the load above the capacity in force and sessions started from `free`
 * on the region is a second the level did not hold: the judged excess is min(load − capacity,
 * those sessions). Sessions started before `free` (no steering could have moved them) are
 * reported, not judged.
 */
export interface CapCheck {
  free: number;
  from: number;
  /** The measured part of [from, E), ms. */
  spanMs: number;
  /** The level: the region's capacity with the cap in force. */
  capacity: number;
  /** Seconds with a judged excess, ms; its highest value ÷ the capacity in force then. */
  overMs: number;
  peakExcess: number;
  /** Seconds over capacity at all in the span, ms (sessions started before `free` included). */
  overAnyMs: number;
  /** At `from` (or the window's start): load on the region, and of it sessions started from `free` on. */
  loadAtFrom: number;
  newLoadAtFrom: number;
  /** Sessions started on the region in the span (all classes). */
  startsAfter: number;
}

/**
 * Spill over capacity in a span of the window, judged every simulated second (target d). At
 * each second: a region's spill excess is min(load from clients of other homes, load −
 * capacity) when over capacity; the fleet's **overflow** O is how far the reachable regions' load
 * (those not announced to lose power) exceeds their capacity — demand the fleet could not hold,
 * which should have been refused (left unplaced), not judged as spill; and the **judged** excess
 * J = max(0, the reachable regions' spill excess − O) + the spill excess of regions announced to
 * lose power. J > 0 means a region was over capacity by spill while the fleet had room
 * elsewhere (J is at most the capacity left unused on other regions).
 */
export interface SpillSpan {
  /** Measured seconds of the span, ms; of them with J > 0, and J's highest value (sessions) and as a share of the reachable capacity then. */
  spanMs: number;
  judgedMs: number;
  judgedPeak: number;
  judgedPeakShare: number;
  /** Per region: time it was over capacity by spill while J > 0, and the highest min(its spill excess, J) ÷ its capacity. */
  regionMs: number[];
  regionPeak: number[];
  /** Time with overflow O > 0, its highest value (sessions) and share of the reachable capacity, and its integral (session-seconds). */
  overflowMs: number;
  overflowPeak: number;
  overflowPeakShare: number;
  overflowSessionS: number;
}

/**
 * One second of target (d) (SpillSpan): per region its spill excess, min(load − own clients'
 * load − excused spill, load − capacity) when over capacity (written to `spillEx`); the
 * overflow O, the reachable regions' load above their capacity; and the judged excess J =
 * max(0, their spill excess − O) + the spill excess of the regions not reachable (announced to
 * lose power). `excused`: per region, spill that a partial cap in force found there (started
 * before the cap's `free`, CapCheck): no steering could have kept it off, as target (e) says.
 */
export function judgeSpill(load: ArrayLike<number>, loadHome: ArrayLike<number>, capacity: ArrayLike<number>, reachable: ArrayLike<number>, spillEx: Float64Array, excused?: ArrayLike<number>): { overflow: number; judged: number } {
  let capReach = 0;
  let loadReach = 0;
  let spillReach = 0;
  let spillElse = 0;
  for (let r = 0; r < load.length; r++) {
    const ex = load[r]! > capacity[r]! ? Math.max(0, Math.min(load[r]! - loadHome[r]! - (excused?.[r] ?? 0), load[r]! - capacity[r]!)) : 0;
    spillEx[r] = ex;
    if (reachable[r]) {
      capReach += capacity[r]!;
      loadReach += load[r]!;
      spillReach += ex;
    } else spillElse += ex;
  }
  const overflow = Math.max(0, loadReach - capReach);
  return { overflow, judged: Math.max(0, spillReach - overflow) + spillElse };
}

/** The plan's unplaced demand over the window (GridSteer), sampled every simulated second. */
export interface UnplacedStats {
  /** Highest total (q/s, every home) and its instant. */
  peakQps: number;
  peakAt: number;
  /** Seconds with some demand unplaced; unplaced queries (q/s × s); times the total went from 0 to some or back; times it changed. */
  seconds: number;
  queries: number;
  flips: number;
  changes: number;
}

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
  /** Load from clients of other homes (spill) per region at each bucket's end. */
  spill: Float64Array;
  /** The plan's unplaced demand per home (q/s), mean over each bucket (GridSteer; 0 for the others). */
  unplaced: Float64Array;
  /** GOAWAYs sent by the gateways per bucket (GridSteer's drain hook). */
  goaways: Float64Array;
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
  /**
   * Per event (power-off): cut at its T, split by start: before its announcement (the
   * unavoidable bound: no steering after the announcement could have moved them) and after.
   */
  cutBeforeAnnounce: ByClass[];
  cutAfterAnnounce: ByClass[];
  /**
   * Of cutBeforeAnnounce, the sessions of other homes' clients: spill the policy placed on the
   * region before anyone could know of the event (a drill's or a window's drain, spill by room).
   * Not in the unavoidable bound, which counts the region's own clients only.
   */
  cutSpillBeforeAnnounce: ByClass[];
  /**
   * Per event (power-off, when it takes the region dark at its T inside the window): the
   * **unavoidable bound**, the same under every policy — sessions of the region's own clients
   * (its home, as no steering places them) started, while the region served, before the
   * earliest instant anyone could learn of the event (`learn`) and lasting past T: no steering
   * could have moved them. Counted from the sessions' arrivals (the warm start's included),
   * which every policy shares. `aliveAtT`: the same with every start before T — what is alive
   * on the region at T without steering. 0 for other events.
   */
  bound: ByClass[];
  aliveAtT: ByClass[];
  /** Per event: sessions of the region's own clients arriving in the window while the event is in force (the same under every policy). */
  homeArrivals: ByClass[];
  /** Per event: TTL-ignoring clients of the region's own with a session arriving in the window while it is in force (the same under every policy). */
  ignoringClients: number[];
  refusedAttempts: ByClass;
  /** Per event: sessions with an attempt sent to the event's region while the event was in force. */
  sentToEventRegion: ByClass[];
  /**
   * Per event: of those, the sessions with such an attempt made while the reachable fleet had
   * room at that instant (`roomNow`: the capacity in force then of the regions not announced to
   * lose power holds the expected demand then). Target (a) judges these.
   */
  sentWithRoom: ByClass[];
  /** Per event: sessions that failed (every attempt refused) with an attempt on the region while it was dark. */
  failedDark: ByClass[];
  /**
   * Per event: sessions that failed, none of their attempts on the dark region, with an attempt
   * refused by the region's own gateway from the announcement to T (GridSteer's refuse steps,
   * while its resolver or connection still named the region).
   */
  failedRefusedBeforeT: ByClass[];
  /** Per event: time in the measured part of [T, E), and of it time the reachable fleet had room, ms. */
  eventSpanMs: number[];
  eventRoomMs: number[];
  /** Per event: sessions started (served) on the event's region while the event was in force. */
  startedOnEventRegion: ByClass[];
  /** Added km (served region vs nearest) of sessions of the event regions' clients in their windows. */
  addedKm: { count: ByClass; sum: ByClass; p95: ByClass; mean: ByClass };
  /** Per region: peak load ÷ capacity in the window, when it happened, and time over capacity (ms). */
  peakUtil: number[];
  peakAt: number[];
  overCapacityMs: number[];
  /** Per region: the share of the load at its peak that came from clients of other homes (spill). */
  peakSpillShare: number[];
  /**
   * Per region, over the whole window: time over capacity by spill while the fleet had room
   * elsewhere (SpillSpan: J > 0) and the highest part of J it carried, min(its spill excess, J)
   * ÷ its capacity. Target (d), summed over the spans.
   */
  spillOverMs: number[];
  spillOverPeak: number[];
  /**
   * Target (d) per span, sampled every simulated second: spans[e] is event e's, from its
   * announcement (or T) to 15 minutes after its end; spans[events.length] the rest of the window.
   */
  spillSpans: SpillSpan[];
  /** Per event: for a throttle (a partial cap), target (e)'s measures; null for a power-off. */
  capChecks: (CapCheck | null)[];
  cutRetry: CutRetryStats;
  hook: HookStats;
  unplaced: UnplacedStats;
  dnsQueries: number;
  goaways: number;
  plans: number;
  /**
   * GridSteer with recurring windows in the scenario only: each occurrence overlapping the
   * window, as the latest plan listing it has it (a practice run's `skipped` or `aborted` with
   * the planner's words). Absent otherwise.
   */
  windows?: WindowOccurrence[];
  series: Series;
}

/** A client class index (world.ts CLASS_*). */
export type Cls = 0 | 1 | 2 | 3;
/** A pending session that is a client's retry of a cut session (pFlags bit; the low bits mark events sent to). */
const RETRY_FLAG = 1 << 30;
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
export function runPolicy(world: World, policyName: PolicyName, tl: Timeline, onProgress?: Progress, wrap?: (p: SimPolicy) => SimPolicy): PolicyResult {
  const sc = world.scenario;
  const w = sc.world;
  const R = world.regions.length;
  const K = world.clientsPerSubnet;
  const S = world.subnetMetro.length;
  const C = S * K;
  const events = eventsOf(world);
  // `wrap` (tests) may stand in for parts of the policy, e.g. a plan field the planner does not set yet.
  const made = makePolicy(policyName, world, tl.start);
  const policy: SimPolicy = wrap ? wrap(made) : made;
  const arr = new Rng(world.seed, STREAM_ARRIVALS);
  const prng = new Rng(world.seed, STREAM_POLICY);
  const hrng = new Rng(world.seed, STREAM_HOOK);
  const crng = new Rng(world.seed, STREAM_CUT_RETRY);
  const yrng = new Rng(world.seed, STREAM_CYCLE);
  const amp = w.dailyCycle.amplitude;
  const hookP = sc.policies.gridsteer.hook;
  const heap = new EventHeap(1 << 14);
  const backoff = w.retryBackoffMs;
  const idleMs = w.idleTimeoutMs;
  // With a daily cycle, arrivals come at the peak rate and are thinned per metro.
  const meanGap = 1 / (world.ratePerMs * (1 + amp));
  const inWindow = (t: number) => t >= tl.windowStart && t < tl.windowEnd;

  // World state.
  const serving = new Uint8Array(R).fill(1);
  const load = new Float64Array(R);
  /** Load from the region's own clients (its home's). */
  const loadHome = new Float64Array(R);
  /**
   * Whether the reachable fleet has room now (the capacity in force of the regions not announced
   * to lose power holds the expected demand now), updated every tick: target (a) excuses
   * sessions sent to a dark region while it has none.
   */
  let roomNow = true;
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
    eventActive: (r, t) => eventsOfRegion[r]!.some((e) => e.kind !== 'none' && t >= e.T && t < e.E),
  };

  // Clients, resolver caches: one per (resolver, /24) with ECS, one per resolver without (query origin q, see SimPolicy.answer).
  const curConn = new Int32Array(C).fill(-1);
  const sticky = new Int32Array(C).fill(-1);
  const Q = world.queryMetro.length;
  const cacheExp = new Float64Array(Q);
  const cacheRegion = new Int32Array(Q).fill(-1);
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
  let sStart = new Float64Array(sp.size);
  let sEnd = new Float64Array(sp.size);
  let sHome = new Uint8Array(sp.size);
  const growSess = (n: number) => {
    sClient = growI32(sClient, n);
    sConn = growI32(sConn, n);
    sRegion = growI32(sRegion, n);
    sGen = growI32(sGen, n);
    sLive = growU8(sLive, n);
    sStart = growF64(sStart, n);
    sEnd = growF64(sEnd, n);
    sHome = growU8(sHome, n);
  };
  /** Home region of each client's /24. */
  const homeOf = (c: number) => world.metroHome[world.subnetMetro[(c / K) | 0]!]!;

  // Pending sessions (between arrival and start or failure).
  const pp = new Pool(4096);
  let pClient = new Int32Array(pp.size);
  let pLen = new Float64Array(pp.size);
  let pArr = new Float64Array(pp.size);
  let pTries = new Int32Array(pp.size);
  let pFlags = new Int32Array(pp.size);
  /** Bit e: an attempt went to event e's region while e was in force and the reachable fleet had room at that instant. */
  let pRoom = new Int32Array(pp.size);
  /** Bit e: an attempt was refused by the gateway of event e's region while it still served, from e's announcement to its T (GridSteer's own refusal). */
  let pRef = new Int32Array(pp.size);
  const growPend = (n: number) => {
    pClient = growI32(pClient, n);
    pLen = growF64(pLen, n);
    pArr = growF64(pArr, n);
    pTries = growI32(pTries, n);
    pFlags = growI32(pFlags, n);
    pRoom = growI32(pRoom, n);
    pRef = growI32(pRef, n);
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
    spill: new Float64Array(nb * R),
    unplaced: new Float64Array(nb * R),
    goaways: new Float64Array(nb),
  };
  const bucketOf = (t: number) => Math.min(nb - 1, Math.floor((t - tl.windowStart) / w.bucketMs));
  const arrivals = zeros();
  const started = zeros();
  const failed = zeros();
  const overCap = zeros();
  const cut = zeros();
  const refusedAttempts = zeros();
  const sentTo: ByClass[] = events.map(zeros);
  const sentRoom: ByClass[] = events.map(zeros);
  const failedDark: ByClass[] = events.map(zeros);
  const failedRefused: ByClass[] = events.map(zeros);
  const eventSpanMs = events.map(() => 0);
  const eventRoomMs = events.map(() => 0);
  const startedOn: ByClass[] = events.map(zeros);
  const cutBefore: ByClass[] = events.map(zeros);
  const cutAfter: ByClass[] = events.map(zeros);
  const cutSpillBefore: ByClass[] = events.map(zeros);
  const bound: ByClass[] = events.map(zeros);
  const aliveAtT: ByClass[] = events.map(zeros);
  const homeArrivals: ByClass[] = events.map(zeros);
  const ignoringSeen = events.map(() => new Uint8Array(C));
  const ignoringClients = events.map(() => 0);
  /**
   * A session of client c arriving at `start` and lasting until `end` (an arrival or a warm-start
   * session): the policy-independent figures of each event it bears on (see PolicyResult.bound).
   */
  const noteShared = (c: number, start: number, end: number) => {
    const home = homeOf(c);
    const cls = world.clientClass[c]! as Cls;
    for (const e of events) {
      if (e.region !== home) continue;
      if (e.goesDark && inWindow(e.T) && start >= e.servedFrom && start < e.T && end > e.T) {
        aliveAtT[e.idx]![cls]++;
        if (start < e.learn) bound[e.idx]![cls]++;
      }
      if (start >= e.T && start < e.E && inWindow(start)) {
        homeArrivals[e.idx]![cls]++;
        if (world.clientIgnoresTtl[c] && !ignoringSeen[e.idx]![c]) {
          ignoringSeen[e.idx]![c] = 1;
          ignoringClients[e.idx]!++;
        }
      }
    }
  };
  const kmHist = [0, 1, 2, 3].map(() => new Uint32Array(KM_BINS + 1));
  const kmSum = zeros();
  const kmCount = zeros();
  const peakUtil = new Array<number>(R).fill(0);
  const peakAt = new Array<number>(R).fill(0);
  const peakSpill = new Array<number>(R).fill(0);
  const overMs = new Array<number>(R).fill(0);
  const spillOverMs = new Array<number>(R).fill(0);
  const spillOverPeak = new Array<number>(R).fill(0);
  const spillSpans: SpillSpan[] = [...events, null].map(() => ({ spanMs: 0, judgedMs: 0, judgedPeak: 0, judgedPeakShare: 0, regionMs: new Array<number>(R).fill(0), regionPeak: new Array<number>(R).fill(0), overflowMs: 0, overflowPeak: 0, overflowPeakShare: 0, overflowSessionS: 0 }));
  const spillEx = new Float64Array(R);
  const reachable = new Uint8Array(R);
  const cutRetry: CutRetryStats = { retried: zeros(), started: zeros(), failed: zeros(), sentDark: zeros() };
  const hook: HookStats = { calls: 0, delivered: 0, late: 0, failedAttempts: 0, gaveUp: 0, abandoned: 0, maxLagMs: 0, sumLagMs: 0 };
  const unplaced: UnplacedStats = { peakQps: 0, peakAt: 0, seconds: 0, queries: 0, flips: 0, changes: 0 };
  const capChecks: (CapCheck | null)[] = events.map((e) => {
    if (e.kind !== 'throttle') return null;
    const free = e.learn + capReactionMs(world, sc.events[e.idx]!.facts.length > 0);
    const from = Math.max(e.T, free);
    const spanMs = Math.max(0, Math.min(e.E, tl.windowEnd) - Math.max(from, tl.windowStart));
    return { free, from, spanMs, capacity: world.capacity[e.region]! * (1 - e.share), overMs: 0, peakExcess: 0, overAnyMs: 0, loadAtFrom: 0, newLoadAtFrom: 0, startsAfter: 0 };
  });
  /** Per partial cap: live sessions on its region started from its `free` on; live sessions of other homes (spill) started before. */
  const capNew = new Float64Array(events.length);
  const capOldSpill = new Float64Array(events.length);
  /** Per region, this second: the spill a cap in force found there (the largest of its caps'), excused by target (d). */
  const capExcused = new Float64Array(R);
  const capSeen = new Uint8Array(events.length);
  /** A session started at `start` on region r (of its own clients: `home` 1) arrives (d = 1) or leaves (d = −1): the partial caps of r it counts for. */
  const capCount = (r: number, start: number, home: number, d: number) => {
    const evs = eventsOfRegion[r]!;
    for (let i = 0; i < evs.length; i++) {
      const cc = capChecks[evs[i]!.idx];
      if (!cc) continue;
      if (start >= cc.free) capNew[evs[i]!.idx]! += d;
      else if (!home) capOldSpill[evs[i]!.idx]! += d;
    }
  };
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
      peakSpill[r] = load[r]! > 0 ? (load[r]! - loadHome[r]!) / load[r]! : 0;
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
  const goaway = (k: number, t: number) => {
    if (cState[k] !== 1) return;
    goaways++;
    if (inWindow(t)) series.goaways[bucketOf(t)]!++;
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
    pRoom[p] = 0;
    pRef[p] = 0;
    return p;
  };
  /** A pending session is done: started, or `failed` (every attempt refused). */
  const closePending = (p: number, failedNow: boolean) => {
    const evBits = pFlags[p]! & ~RETRY_FLAG;
    if (inWindow(pArr[p]!) && (evBits || pRef[p])) {
      const cls = world.clientClass[pClient[p]!]! as Cls;
      if (pFlags[p]! & RETRY_FLAG) {
        if (evBits) cutRetry.sentDark[cls]++;
      } else {
        for (let e = 0; e < events.length; e++) {
          const bit = 1 << e;
          if (evBits & bit) {
            sentTo[e]![cls]++;
            if (pRoom[p]! & bit) sentRoom[e]![cls]++;
            if (failedNow) failedDark[e]![cls]++;
          } else if (pRef[p]! & bit && failedNow) failedRefused[e]![cls]++;
        }
      }
    }
    pp.free.push(p);
  };
  const markSent = (p: number, r: number, t: number) => {
    const evs = eventsOfRegion[r]!;
    for (let i = 0; i < evs.length; i++) {
      const e = evs[i]!;
      if (serving[r] && gatewayRefuses[r] && t >= e.announce && t < e.T) pRef[p]! |= 1 << e.idx;
      if (t < e.T || t >= e.E) continue;
      pFlags[p]! |= 1 << e.idx;
      if (roomNow) pRoom[p]! |= 1 << e.idx;
    }
  };
  const resolve = (c: number, t: number): number => {
    if (world.clientIgnoresTtl[c] && sticky[c]! >= 0) return sticky[c]!;
    const s = (c / K) | 0;
    const res = world.subnetResolver[s]!;
    // A resolver without ECS asks once for all its /24s (origin S + resolver) and caches one answer.
    const q = world.resolverNoEcs[res] ? S + res : s;
    let r: number;
    if (cacheExp[q]! > t) r = cacheRegion[q]!;
    else {
      r = policy.answer(q, t);
      dnsQueries++;
      if (r < 0) return -1;
      let ttlMs = policy.ttl * 1000;
      if (world.resolverClamps[res] && ttlMs < clampMs) ttlMs = clampMs;
      cacheExp[q] = t + ttlMs;
      cacheRegion[q] = r;
    }
    if (world.clientIgnoresTtl[c]) sticky[c] = r;
    return r;
  };
  const refuse = (p: number, t: number) => {
    const c = pClient[p]!;
    const cls = world.clientClass[c]! as Cls;
    const retry = (pFlags[p]! & RETRY_FLAG) !== 0;
    if (inWindow(pArr[p]!) && !retry) refusedAttempts[cls]++;
    if (inWindow(t)) series.refused[bucketOf(t)]!++;
    sticky[c] = -1; // the connection broke: a TTL-ignoring client resolves again
    const tries = ++pTries[p]!;
    if (tries > backoff.length) {
      if (inWindow(pArr[p]!)) {
        if (retry) cutRetry.failed[cls]++;
        else failed[cls]++;
      }
      if (inWindow(t)) series.failed[bucketOf(t)]!++;
      closePending(p, true);
      return;
    }
    heap.push(t + backoff[tries - 1]!, (p << 2) | EV_RETRY, 0);
  };
  const startSession = (p: number, k: number, r: number, t: number, startAt = t) => {
    const c = pClient[p]!;
    const cls = world.clientClass[c]! as Cls;
    const retry = (pFlags[p]! & RETRY_FLAG) !== 0;
    const measured = inWindow(pArr[p]!) && !retry;
    if (retry && inWindow(pArr[p]!)) cutRetry.started[cls]++;
    if (measured && load[r]! >= capacityNow[r]!) overCap[cls]++;
    const home = homeOf(c) === r ? 1 : 0;
    load[r]!++;
    loadHome[r]! += home;
    notePeak(r, t);
    cActive[k]!++;
    const sess = sp.alloc(growSess);
    sClient[sess] = c;
    sConn[sess] = k;
    sRegion[sess] = r;
    sLive[sess] = 1;
    sStart[sess] = startAt;
    sEnd[sess] = t + pLen[p]!;
    sHome[sess] = home;
    heap.push(t + pLen[p]!, (sess << 2) | EV_END, ++sGen[sess]!);
    capCount(r, startAt, home, 1);
    for (let i = 0; i < capChecks.length; i++) {
      const cc = capChecks[i];
      if (cc && events[i]!.region === r && t >= cc.from && t >= tl.windowStart && t < Math.min(events[i]!.E, tl.windowEnd)) cc.startsAfter++;
    }
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
    closePending(p, false);
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
    loadHome[r]! -= sHome[sess]!;
    capCount(r, sStart[sess]!, sHome[sess]!, -1);
    const k = sConn[sess]!;
    if (--cActive[k]! === 0) {
      cIdle[k] = t;
      if (cState[k] === 2) freeConn(k);
    }
    sp.free.push(sess);
  };

  // --- world events ------------------------------------------------------------------
  /** The region's state at t from every event in force (overlapping and back-to-back events included). */
  const regionState = (r: number, t: number) => {
    let dark = false;
    let thr = 0;
    for (const e of eventsOfRegion[r]!) {
      if (t < e.T || t >= e.E) continue;
      if (e.kind === 'power-off') dark = true;
      else if (e.kind === 'throttle') thr = Math.max(thr, e.share);
    }
    serving[r] = dark ? 0 : 1;
    throttled[r] = thr;
    capacityNow[r] = dark ? 0 : world.capacity[r]! * (1 - thr);
  };
  const cutRetryShare = w.cutRetry.share;
  const worldEvent = (code: number, t: number) => {
    const r = events[code >> 1]!.region;
    const wasServing = serving[r] === 1;
    regionState(r, t);
    if (wasServing && !serving[r]) {
      // The cut belongs to the power-off that takes the region dark now (EventRt.goesDark), whichever of the instant's events came first.
      const e = eventsOfRegion[r]!.find((x) => x.goesDark && x.T === t) ?? events[code >> 1]!;
      // Power lost: every session there is cut; every connection there breaks.
      for (let sess = 0; sess < sp.next; sess++) {
        if (!sLive[sess] || sRegion[sess] !== r) continue;
        const c = sClient[sess]!;
        const cls = world.clientClass[c]! as Cls;
        if (inWindow(t)) {
          cut[cls]++;
          if (sStart[sess]! < e.announce) {
            cutBefore[e.idx]![cls]++;
            if (!sHome[sess]) cutSpillBefore[e.idx]![cls]++;
          } else cutAfter[e.idx]![cls]++;
          // The client retries the cut session (its remaining part), resolving again.
          if (cutRetryShare > 0 && crng.next() < cutRetryShare && sEnd[sess]! > t) {
            const at = t + w.cutRetry.delayMs;
            const p = newPending(c, sEnd[sess]! - t, at);
            pFlags[p] = RETRY_FLAG;
            cutRetry.retried[cls]++;
            heap.push(at, (p << 2) | EV_RETRY, 0);
          }
        }
        sLive[sess] = 0;
        load[r]!--;
        loadHome[r]! -= sHome[sess]!;
        capCount(r, sStart[sess]!, sHome[sess]!, -1);
        cActive[sConn[sess]!]!--;
        sp.free.push(sess);
      }
      while (regionConnN[r]! > 0) {
        const k = regionConns[r]![0]!;
        sticky[cClient[k]!] = -1;
        freeConn(k);
      }
    }
    notePeak(r, t);
  };

  // --- the drain hook (GridSteer) ----------------------------------------------------
  // The hook calls a region's gateway whenever the region's state in force (share, refuse,
  // goawayBy) changes; a call fails with hook.failureRate, is retried as gslb/control/hooks.ts
  // does (retryBase × 2^k, `retries` times), and takes effect hook.delay after its successful
  // attempt; a newer state abandons it. The gateway acts on what it was told.
  /** 1 while the region's gateway refuses new streams because the plan says so (GridSteer's `refuse`). */
  const gatewayRefuses = new Uint8Array(R);
  const gwShare = new Float64Array(R).fill(1);
  const gwBy = new Float64Array(R).fill(NaN);
  const wantShare = new Float64Array(R).fill(1);
  const wantRefuse = new Uint8Array(R);
  const wantBy = new Float64Array(R).fill(NaN);
  const fActive = new Uint8Array(R);
  const fSentAt = new Float64Array(R);
  const fNextTry = new Float64Array(R);
  const fAttempt = new Int32Array(R);
  const fDeliverAt = new Float64Array(R).fill(Infinity);
  const sameBy = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));
  /** The gateway applies a delivered state: share-based GOAWAY on a fall (unless a goawayBy schedule covers it), refusal. */
  const gatewayApply = (r: number, sh: number, refuse: number, by: number, t: number) => {
    gatewayRefuses[r] = refuse;
    const last = gwShare[r]!;
    gwBy[r] = by;
    gwShare[r] = sh;
    if (!Number.isNaN(by) || !(sh < last - 1e-9)) return;
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
      if (go) goaway(k, t);
    }
  };
  /** From a step with goawayBy: each second, GOAWAY to the share of the remaining connections that spreads them evenly until goawayBy (all of them from then on). */
  const progressiveGoaway = (r: number, t: number) => {
    const by = gwBy[r]!;
    if (Number.isNaN(by) || regionConnN[r] === 0) return;
    const p = t >= by ? 1 : Math.min(1, TICK_MS / (by - t));
    const list = regionConns[r]!.slice(0, regionConnN[r]!);
    for (const k of list) {
      if (cState[k] !== 1) continue;
      if (p >= 1 || prng.next() < p) goaway(k, t);
    }
  };
  const drainHook = (t: number) => {
    if (!hookP.enabled) return;
    for (let r = 0; r < R; r++) {
      const sh = policy.drainShare(r, t);
      if (sh === undefined) return;
      const refuse = hookP.refuse && policy.refuses(r, t) ? 1 : 0;
      const by = hookP.progressiveGoaway ? (policy.goawayBy(r, t) ?? NaN) : NaN;
      if (sh !== wantShare[r] || refuse !== wantRefuse[r] || !sameBy(by, wantBy[r]!)) {
        wantShare[r] = sh;
        wantRefuse[r] = refuse;
        wantBy[r] = by;
        if (fActive[r] && inWindow(t)) hook.abandoned++;
        fActive[r] = 1;
        fSentAt[r] = t;
        fNextTry[r] = t;
        fAttempt[r] = 0;
        fDeliverAt[r] = Infinity;
        if (inWindow(t)) hook.calls++;
      }
      if (fActive[r] && fDeliverAt[r] === Infinity && t >= fNextTry[r]!) {
        const attempt = ++fAttempt[r]!;
        if (hookP.failureRate > 0 && hrng.next() < hookP.failureRate) {
          if (inWindow(t)) hook.failedAttempts++;
          if (attempt > hookP.retries) {
            fActive[r] = 0;
            if (inWindow(t)) hook.gaveUp++;
          } else fNextTry[r] = t + Math.min(300_000, hookP.retryBaseMs * 2 ** (attempt - 1));
        } else fDeliverAt[r] = t + hookP.delayMs;
      }
      if (fActive[r] && t >= fDeliverAt[r]!) {
        fActive[r] = 0;
        const lag = t - fSentAt[r]!;
        if (inWindow(t)) {
          hook.delivered++;
          if (fAttempt[r]! > 1) hook.late++;
          hook.sumLagMs += lag;
          hook.maxLagMs = Math.max(hook.maxLagMs, lag);
        }
        gatewayApply(r, wantShare[r]!, wantRefuse[r]!, wantBy[r]!, t);
      }
      progressiveGoaway(r, t);
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
      for (const seg of factSegments(sc.epoch, ev.announce, e, f)) {
        for (let at = seg.from; at < seg.to; at += f.repeatMs) {
          const expiresAt = f.kind === 'grid.event' ? Math.max(seg.end, at + 3 * f.repeatMs) : at + 3 * f.repeatMs;
          facts.push({ t: Math.max(at, tl.start), signal: { region: e.region, kind: f.kind, source: f.source, key: f.key, observedAt: at, expiresAt, value: seg.value } });
        }
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
        noteShared(c, t, t + len);
        const pend = newPending(c, t + len - tl.start, t);
        const k = curConn[c]! >= 0 ? curConn[c]! : openConn(c, r, tl.start);
        if (world.clientIgnoresTtl[c]) sticky[c] = cRegion[k]!;
        startSession(pend, k, cRegion[k]!, tl.start, t);
      }
    }
  }

  // --- the loop ----------------------------------------------------------------------
  let nextArrival = tl.start + arr.exp(meanGap);
  let nextTick = tl.start;
  const totalMs = tl.windowEnd - tl.start;
  let nextProgress = tl.start;
  let lastUnplaced = 0;
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
      // The reachable fleet: a region announced to lose power is not a place for sessions from
      // the announcement to its end (what starts there is cut at T; GridSteer drains it
      // ahead), so its capacity is not room for the rest.
      let capNow = 0;
      for (let r = 0; r < R; r++) {
        let announcedDark = false;
        for (const e of events) if (e.kind === 'power-off' && e.region === r && t >= e.announce && t < e.E) announcedDark = true;
        reachable[r] = announcedDark ? 0 : 1;
        if (!announcedDark) capNow += capacityNow[r]!;
      }
      roomNow = capNow >= world.expectedConcurrent * demandFactor(world, t);
      if (inWindow(t)) {
        const room = roomNow;
        for (const e of events) {
          if (t < e.T || t >= e.E) continue;
          eventSpanMs[e.idx]! += TICK_MS;
          if (room) eventRoomMs[e.idx]! += TICK_MS;
        }
        // Target (d), every second (SpillSpan): spill is the top layer of a region's load (all of
        // the excess it can explain is laid to it); the fleet's overflow O excuses as much of the
        // reachable regions' spill excess as the fleet could not hold.
        for (let r = 0; r < R; r++) {
          if (load[r]! > capacityNow[r]!) overMs[r] = overMs[r]! + TICK_MS;
          notePeak(r, t);
        }
        capExcused.fill(0);
        for (let i = 0; i < capChecks.length; i++) {
          const e = events[i]!;
          if (capChecks[i] && t >= e.T && t < e.E) capExcused[e.region] = Math.max(capExcused[e.region]!, capOldSpill[i]!);
        }
        const { overflow, judged } = judgeSpill(load, loadHome, capacityNow, reachable, spillEx, capExcused);
        let inSpan = false;
        const noteSpan = (sp: SpillSpan) => {
          sp.spanMs += TICK_MS;
          if (overflow > 0) {
            sp.overflowMs += TICK_MS;
            sp.overflowSessionS += (overflow * TICK_MS) / 1000;
            if (overflow > sp.overflowPeak) {
              sp.overflowPeak = overflow;
              sp.overflowPeakShare = capNow > 0 ? overflow / capNow : 1;
            }
          }
          if (judged <= 0) return;
          sp.judgedMs += TICK_MS;
          if (judged > sp.judgedPeak) {
            sp.judgedPeak = judged;
            sp.judgedPeakShare = capNow > 0 ? judged / capNow : 1;
          }
          for (let r = 0; r < R; r++) {
            if (spillEx[r]! <= 0) continue;
            sp.regionMs[r]! += TICK_MS;
            sp.regionPeak[r] = Math.max(sp.regionPeak[r]!, Math.min(spillEx[r]!, judged) / capacityNow[r]!);
          }
        };
        for (const e of events) {
          if (t < Math.min(e.announce, e.T) || t >= e.E + DIST_AFTER_MS) continue;
          inSpan = true;
          noteSpan(spillSpans[e.idx]!);
        }
        if (!inSpan) noteSpan(spillSpans[events.length]!);
        if (judged > 0) {
          for (let r = 0; r < R; r++) {
            if (spillEx[r]! <= 0) continue;
            spillOverMs[r] = spillOverMs[r]! + TICK_MS;
            spillOverPeak[r] = Math.max(spillOverPeak[r]!, Math.min(spillEx[r]!, judged) / capacityNow[r]!);
          }
        }
        for (let i = 0; i < capChecks.length; i++) {
          const cc = capChecks[i];
          const e = events[i]!;
          if (!cc || t < cc.from || t >= e.E) continue;
          const r = e.region;
          if (!capSeen[i]) {
            capSeen[i] = 1;
            cc.loadAtFrom = load[r]!;
            cc.newLoadAtFrom = capNew[i]!;
          }
          const excess = load[r]! - capacityNow[r]!;
          if (excess <= 0) continue;
          cc.overAnyMs += TICK_MS;
          const judged = Math.min(excess, capNew[i]!);
          if (judged > 0) {
            cc.overMs += TICK_MS;
            cc.peakExcess = Math.max(cc.peakExcess, judged / capacityNow[r]!);
          }
        }
        const un = policy.unplaced();
        if (un) {
          let tot = 0;
          const b = bucketOf(t);
          for (let r = 0; r < R; r++) {
            tot += un[r]!;
            series.unplaced[b * R + r] = series.unplaced[b * R + r]! + (un[r]! * TICK_MS) / w.bucketMs;
          }
          if (tot > unplaced.peakQps) {
            unplaced.peakQps = tot;
            unplaced.peakAt = t;
          }
          if (tot > 0) unplaced.seconds++;
          unplaced.queries += (tot * TICK_MS) / 1000;
          if (tot > 0 !== lastUnplaced > 0) unplaced.flips++;
          if (tot !== lastUnplaced) unplaced.changes++;
          lastUnplaced = tot;
        }
        if ((t - tl.windowStart + TICK_MS) % w.bucketMs === 0 || t + TICK_MS >= tl.windowEnd) {
          const b = bucketOf(t);
          for (let r = 0; r < R; r++) {
            series.load[b * R + r] = load[r]!;
            series.capacity[b * R + r] = capacityNow[r]!;
            series.spill[b * R + r] = load[r]! - loadHome[r]!;
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
      // The daily cycle: the metro's demand now ÷ the peak rate drawn (a stream of its own: without a cycle nothing changes).
      if (amp > 0 && yrng.next() * (1 + amp) >= cycleFactor(world, world.subnetMetro[s]!, t)) continue;
      if (inWindow(t)) arrivals[world.clientClass[c]! as Cls]++;
      noteShared(c, t, t + len);
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
    sentWithRoom: sentRoom,
    failedDark,
    failedRefusedBeforeT: failedRefused,
    eventSpanMs,
    eventRoomMs,
    startedOnEventRegion: startedOn,
    addedKm: {
      count: kmCount,
      sum: kmSum,
      mean: kmSum.map((x, i) => (kmCount[i] ? x / kmCount[i]! : 0)) as ByClass,
      p95: kmHist.map((h, i) => pct(h, kmCount[i]!, 0.95)) as ByClass,
    },
    peakUtil,
    peakAt,
    overCapacityMs: overMs,
    peakSpillShare: peakSpill,
    spillOverMs,
    spillOverPeak,
    spillSpans,
    capChecks,
    cutRetry,
    hook,
    unplaced,
    cutBeforeAnnounce: cutBefore,
    cutAfterAnnounce: cutAfter,
    cutSpillBeforeAnnounce: cutSpillBefore,
    bound,
    aliveAtT,
    homeArrivals,
    ignoringClients,
    dnsQueries,
    goaways,
    plans: policy.plans,
    ...(made instanceof GridSteerPolicy && sc.windows.length > 0 ? { windows: made.windowOutcomes(tl.windowStart, tl.windowEnd) } : {}),
    series,
  };
}
