/**
 * The three steering policies the simulator compares, as authoritative DNS answerers:
 *
 * - static geo: the nearest region (by biased great-circle distance), always; TTL 30 s.
 * - reactive failover (Route 53 style): health checks every 10 s; a region failing 3
 *   consecutive checks is marked down and skipped (the next nearest healthy one answers),
 *   3 consecutive passes mark it up again; every region down → the nearest. TTL 60 s.
 *   With check: load (the default) a region fails a check while it is dark or its load is
 *   above its capacity; with check: event, whenever one of its events is in force.
 * - GridSteer: the real planner (`plan`) over a store snapshot built with the real reducer
 *   (`reduce`, recording who wrote it: the scenario's `trust`) from every fact as a Signal, and the real `decide`. Facts: the scenario's
 *   grid facts (at T − notice, repeated by their source), a load.metrics scrape of every
 *   serving region every 15 s at mid-interval (kvCacheUse = load ÷ capacity now,
 *   throttledShare while throttled; a dark region's scrape fails and emits nothing), health
 *   probes of regions that have a power-off event, and demand buckets counted from its own
 *   answers (policies.gridsteer.demand: false leaves them out, and with them the planner's
 *   spill limits). With whenAllDown: all, a /24's clients use one of the addresses answered. It plans again whenever a fact arrives (at most once per simulated second) and
 *   after each 10-second demand bucket closes, like the state service.
 *
 * Contract: `answer` returns a region index (or −1 for no usable answer) and leaves the TTL in
 * seconds in `ttl`; `tick` is called once per simulated second, in time order.
 */
import { decide, regionStepAt, stepWeight, type DecideName } from '../policy/decide.js';
import type { Cell, SubnetKey } from '../model/cell.js';
import { admissionDraw } from '../policy/admission.js';
import { defaultSettings, gridSharesAt, plan, type PlannerSettings } from '../policy/planner/index.js';
import { reduce } from '../state/reducer.js';
import type { SignalRecord, DemandBucket, StoreSnapshot } from '../model/snapshot.js';
import { validateSignal } from '../state/signals.js';
import { drainLeadMs } from '../policy/drain.js';
import { FLEET, type Override, type Plan, type Signal } from '../model/types.js';
import { operatorShareAt } from '../policy/rules/operator.js';
import { HORIZON_MS } from '../policy/rules/windows.js';
import type { WindowOccurrence } from '../model/windows.js';
import { DEFAULT_FEED_PRINCIPAL, type PolicyParams, type TrustParams } from './scenario.js';
import { collectorPrincipal, type Provenance } from '../model/principal.js';
import { Rng } from './rng.js';
import { CLASS_CLAMPED, STREAM_NOISE, type World } from './world.js';

export type PolicyName = 'static' | 'reactive' | 'gridsteer';
export const POLICY_NAMES: readonly PolicyName[] = ['static', 'reactive', 'gridsteer'];
export const POLICY_TITLES: Record<PolicyName, string> = { static: 'static geo', reactive: 'reactive failover', gridsteer: 'GridSteer' };

/** What a policy may observe of the world (read only). */
export interface WorldState {
  /** 1 while the region serves (0 during a power-off event). */
  serving: Uint8Array;
  /** Concurrent sessions on the region now. */
  load: Float64Array;
  /** Capacity now, concurrent sessions (0 during a power-off). */
  capacityNow: Float64Array;
  /** Share of the region's GPUs throttled now. */
  throttled: Float64Array;
  /** True while one of the region's events is in force. */
  eventActive(r: number, t: number): boolean;
  /** Regions that have a power-off event in the scenario (GridSteer probes them). */
  probed: readonly number[];
}

export interface SimPolicy {
  readonly name: PolicyName;
  /** TTL in seconds of the last answer. */
  ttl: number;
  /**
   * Region index for a query from origin `q` at `t` (ms epoch), or −1: q < S is a /24 (the
   * query carries its ECS), q = S + i a resolver without ECS (world.queryMetro places both).
   */
  answer(q: number, t: number): number;
  /** Once per simulated second. */
  tick(t: number, w: WorldState): void;
  /** A scenario fact reported at `t` (GridSteer only; the others ignore facts). */
  fact(signal: Signal, t: number): void;
  /**
   * The share the policy's plan leaves region r for its own clients at t (0 when down), which
   * the region's gateway drain hook follows; undefined for policies without a drain hook.
   */
  drainShare(r: number, t: number): number | undefined;
  /** Whether the plan tells the region's gateway to refuse new streams at t (GridSteer's `refuse` steps). */
  refuses(r: number, t: number): boolean;
  /**
   * The step's `goawayBy` (ms epoch) in force for region r at t: from that step the gateway
   * sends GOAWAY to every connection progressively so that all have it by then; undefined when
   * the plan does not say (or the planner does not set the field yet).
   */
  goawayBy(r: number, t: number): number | undefined;
  /** The plan's unplaced demand now, q/s per home region index (GridSteer); undefined for the others. */
  unplaced(): Float64Array | undefined;
  /** Whether the plan still admits /24 `s` (its clients' home decides the weight) to region r at t. */
  admits(r: number, s: number, t: number): boolean;
  /** Plans made (GridSteer), for the report. */
  readonly plans: number;
}

export class StaticPolicy implements SimPolicy {
  readonly name = 'static';
  ttl: number;
  readonly plans = 0;
  constructor(
    private readonly world: World,
    p: PolicyParams['static'],
  ) {
    this.ttl = p.ttl;
  }
  answer(q: number): number {
    return this.world.metroHome[this.world.queryMetro[q]!]!;
  }
  tick(): void {}
  fact(): void {}
  drainShare(): undefined {
    return undefined;
  }
  refuses(): boolean {
    return false;
  }
  goawayBy(): undefined {
    return undefined;
  }
  unplaced(): undefined {
    return undefined;
  }
  admits(): boolean {
    return true;
  }
}

export class ReactivePolicy implements SimPolicy {
  readonly name = 'reactive';
  ttl: number;
  readonly plans = 0;
  /** 1 when the region is marked down. */
  readonly down: Uint8Array;
  private readonly fails: Int32Array;
  private readonly oks: Int32Array;
  private nextCheck: number;

  constructor(
    private readonly world: World,
    private readonly p: PolicyParams['reactive'],
    t0: number,
  ) {
    this.ttl = p.ttl;
    const R = world.regions.length;
    this.down = new Uint8Array(R);
    this.fails = new Int32Array(R);
    this.oks = new Int32Array(R);
    this.nextCheck = t0;
  }

  /** One round of checks at t: `failing(r)` says whether region r fails its check. */
  check(failing: (r: number) => boolean): void {
    for (let r = 0; r < this.down.length; r++) {
      if (failing(r)) {
        this.fails[r]!++;
        this.oks[r] = 0;
        if (!this.down[r] && this.fails[r]! >= this.p.failureThreshold) this.down[r] = 1;
      } else {
        this.oks[r]!++;
        this.fails[r] = 0;
        if (this.down[r] && this.oks[r]! >= this.p.successThreshold) this.down[r] = 0;
      }
    }
  }

  tick(t: number, w: WorldState): void {
    while (t >= this.nextCheck) {
      // load: the check sees the region as it is now (dark, or loaded above its capacity: a gateway answering 503).
      this.check(this.p.check === 'load' ? (r) => !w.serving[r] || w.load[r]! > w.capacityNow[r]! : (r) => w.eventActive(r, this.nextCheck));
      this.nextCheck += this.p.checkIntervalMs;
    }
  }

  answer(q: number): number {
    const ranking = this.world.metroRanking[this.world.queryMetro[q]!]!;
    for (let i = 0; i < ranking.length; i++) if (!this.down[ranking[i]!]) return ranking[i]!;
    return ranking[0]!;
  }
  fact(): void {}
  drainShare(): undefined {
    return undefined;
  }
  refuses(): boolean {
    return false;
  }
  goawayBy(): undefined {
    return undefined;
  }
  unplaced(): undefined {
    return undefined;
  }
  admits(): boolean {
    return true;
  }
}

/** How many regions a geo cell ranks (docs/design.md "Geo cells": K = 4). */
export const CELL_K = 4;
/** Demand buckets the snapshot keeps (the planner reads the last 6 closed ones). */
const DEMAND_KEEP = 8;
const BUCKET_MS = 10_000;
/** The health collector section writes the probes (under its own grant). */
const PROBE_BY: Provenance = { principal: collectorPrincipal('health'), grant: 'health/' };

export class GridSteerPolicy implements SimPolicy {
  readonly name = 'gridsteer';
  ttl = 0;
  plans = 0;
  readonly settings: PlannerSettings;
  current: Plan;
  private readonly records = new Map<string, SignalRecord>();
  private revision = 0;
  private dirty = false;
  private readonly ids: string[];
  private readonly idSet: Set<string>;
  private readonly cells: Cell[];
  private readonly keys: SubnetKey[];
  private readonly decideName: DecideName;
  private readonly demandNow: Float64Array;
  private bucketStart = -1;
  private demandRows: DemandBucket[] = [];
  private nextScrape: number;
  private nextProbe: number;
  private readonly scrapeSources: string[];
  private readonly scrapeBy: Provenance[];
  private readonly addressRegion: Map<string, number>;
  private readonly unplacedNow: Float64Array;
  private unplacedOf: Plan | undefined;
  private readonly noise: Rng;
  /** The operator's overrides in force (the store's live ones), and the scenario's actions still to come. */
  private overrides: Override[] = [];
  private nextAction = 0;
  private overrideSeq = 0;
  private plannedEpoch = NaN;
  /** Each window occurrence (window id and start) as the latest plan listing it has it: ran, skipped or aborted, in the planner's words. */
  private readonly occurrences = new Map<string, WindowOccurrence>();

  constructor(
    private readonly world: World,
    private readonly p: PolicyParams['gridsteer'],
    t0: number,
  ) {
    const regions = world.regions;
    this.ids = regions.map((r) => r.id);
    this.idSet = new Set(this.ids);
    this.settings = simPlannerSettings(world, p);
    this.noise = new Rng(world.seed, STREAM_NOISE);
    this.cells = world.metros.map((m, i) => ({ ranking: Array.from(world.metroRanking[i]!.subarray(0, CELL_K), (r) => this.ids[r]!), origin: `simulated metro ${m.name}` }));
    // Query origins: the /24s (ECS), then the resolvers without ECS (their own /24).
    this.keys = [...Array.from(world.subnetAddr, (a) => ({ family: 4 as const, hi: a, lo: 0, prefix: 24 })), ...Array.from(world.resolverAddr, (a) => ({ family: 4 as const, hi: a, lo: 0, prefix: 24 }))];
    this.unplacedNow = new Float64Array(regions.length);
    this.decideName = { name: world.scenario.world.name, ttl: p.ttl, regions: new Map(regions.map((r) => [r.id, { v4: r.v4, v6: [] }])), whenAllDown: p.whenAllDown };
    this.demandNow = new Float64Array(regions.length);
    this.addressRegion = new Map(regions.flatMap((r, i) => r.v4.map((a) => [a, i] as [string, number])));
    this.scrapeSources = this.ids.map((id) => world.scenario.world.scrapeSource.replaceAll('{region}', id));
    this.scrapeBy = this.scrapeSources.map(collectorProvenance);
    // Scrapes run at mid-interval (an event at a round time is seen half an interval later); probes on the interval.
    this.nextScrape = t0 + Math.floor(world.scenario.world.scrapeIntervalMs / 2000) * 1000;
    this.nextProbe = t0;
    this.current = this.replan(t0);
  }

  /** The snapshot the planner sees now (records by id, demand rows of the last buckets and the open one). */
  snapshot(): StoreSnapshot {
    const records = [...this.records.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const open: DemandBucket[] = this.bucketStart < 0 || !this.p.demand ? [] : this.ids.map((home, r) => ({ bucket: this.bucketStart, home, name: this.decideName.name, queries: this.demandNow[r]! }));
    return { revision: this.revision, records, overrides: this.overrides, demand: [...this.demandRows, ...open] };
  }

  /** Plans at `now` with the horizon epoch the control loop would pass (floor(now / HORIZON_MS)): recurring windows act from it. */
  private replan(now: number): Plan {
    this.plans++;
    this.dirty = false;
    this.plannedEpoch = Math.floor(now / HORIZON_MS);
    this.current = plan({ configHash: 'simulate', snapshot: this.snapshot(), settings: this.settings, horizonEpoch: Math.floor(now / HORIZON_MS) });
    for (const o of this.current.windows ?? []) this.occurrences.set(`${o.window}|${o.start}`, o);
    return this.current;
  }

  /**
   * The window occurrences that overlap [from, to), in time order, each as the latest plan
   * listing it has it (a practice run's skip or abort is the planner's, from the inputs it had
   * then: a later fact never acts before it was learned, so the latest word is the outcome).
   */
  windowOutcomes(from: number, to: number): WindowOccurrence[] {
    return [...this.occurrences.values()].filter((o) => o.start < to && o.end > from).sort((a, b) => a.start - b.start || (a.window < b.window ? -1 : 1));
  }

  /** Stores a signal as the state layer does: validated, folded by the real reducer with its writer's provenance, latest wins. */
  ingest(s: Signal, now: number, by: Provenance): void {
    validateSignal(s, now, this.idSet);
    const id = `${s.region}|${s.kind}|${s.source}|${s.key}`;
    const rec = reduce(this.records.get(id), s, undefined, by);
    if (!rec) return;
    this.records.set(id, rec);
    this.revision++;
    this.dirty = true;
  }

  fact(s: Signal, t: number): void {
    this.ingest(s, t, factProvenance(this.world.scenario.trust, s.source));
    this.replan(t);
  }

  answer(s: number, t: number): number {
    const m = this.world.queryMetro[s]!;
    const ans = decide(this.current, this.cells[m]!, this.keys[s]!, this.decideName, 'A', t, { minTtl: this.p.minTtl });
    this.ttl = ans.ttl;
    this.demandNow[this.world.metroHome[m]!]!++;
    if (ans.region !== null) return this.world.regionIndex.get(ans.region)!;
    // whenAllDown all: every address; the /24's clients use one of them (fixed per /24 by a hash).
    if (ans.rcode !== 'answer' || ans.addresses.length === 0) return -1;
    const pick = ans.addresses[Math.floor(admissionDraw(this.keys[s]!, 'sim:whenAllDown') * ans.addresses.length)]!;
    return this.addressRegion.get(pick) ?? -1;
  }

  /**
   * The scenario's operator actions due at t, as the operator API stores them
   * (gslb/control/service.ts): a drain, weight, force-up or force-down is created (a force
   * replaces the region's earlier forces), an undrain ends the region's drains and ramps it
   * back from their level over drain.restoreMs, a freeze holds gridPolicy's share of every
   * region as the plan has it at t (an unfreeze ends it), a distrust is a fleet override; each from t.
   */
  operate(t: number): void {
    const acts = this.world.scenario.operator;
    const epoch = this.world.scenario.epoch;
    while (this.nextAction < acts.length && epoch + acts[this.nextAction]!.atMs <= t) {
      const a = acts[this.nextAction++]!;
      const base = { id: `sim-${++this.overrideSeq}`, actor: 'sim/operator', reason: a.reason, start: t, ...(a.untilMs !== undefined ? { end: epoch + a.untilMs } : {}) };
      const region = a.region ?? FLEET;
      if (a.action === 'drain') this.overrides.push({ ...base, region, action: 'drain', value: a.value ?? 0, ramp: a.rampMs ?? 0, ...(a.byMs !== undefined ? { by: epoch + a.byMs } : {}) });
      else if (a.action === 'force-down' || a.action === 'force-up') {
        this.overrides = this.overrides.filter((o) => !(o.region === region && (o.action === 'force-up' || o.action === 'force-down')));
        this.overrides.push({ ...base, region, action: a.action, ramp: 0 });
      } else if (a.action === 'weight') this.overrides.push({ ...base, region, action: 'weight', value: a.value!, ramp: 0 });
      else if (a.action === 'freeze') {
        // As POST /v1/automation/freeze: gridPolicy's share of every region held as the plan has it now.
        const hold = gridSharesAt({ configHash: 'simulate', snapshot: this.snapshot(), settings: this.settings, horizonEpoch: Math.floor(t / HORIZON_MS) }, t);
        this.overrides.push({ ...base, region: FLEET, action: 'freeze', ramp: 0, hold });
      } else if (a.action === 'unfreeze') this.overrides = this.overrides.filter((o) => !(o.action === 'freeze' && (o.end === undefined || o.end > t)));
      else if (a.action === 'undrain') {
        const from = operatorShareAt(this.settings, region, this.overrides.filter((o) => o.region === region), t);
        this.overrides = this.overrides.filter((o) => !(o.region === region && (o.action === 'drain' || o.action === 'undrain')));
        const restoreMs = this.settings.drain.restoreMs;
        if (from < 1 && restoreMs > 0) this.overrides.push({ ...base, region, action: 'undrain', value: from, ramp: restoreMs, end: t + restoreMs });
      } else this.overrides.push({ ...base, region: FLEET, action: 'distrust', ramp: 0, ...(a.source !== undefined ? { source: a.source } : { principal: a.principal! }) });
      this.revision++;
      this.dirty = true;
    }
  }

  tick(t: number, w: WorldState): void {
    this.operate(t);
    const sc = this.world.scenario.world;
    // Demand: the 10-second bucket closes; the planner reads closed buckets only.
    const b = Math.floor(t / BUCKET_MS) * BUCKET_MS;
    if (b !== this.bucketStart) {
      if (this.bucketStart >= 0) {
        this.ids.forEach((home, r) => {
          if (this.p.demand && this.demandNow[r]! > 0) this.demandRows.push({ bucket: this.bucketStart, home, name: this.decideName.name, queries: this.demandNow[r]! });
        });
        const keepFrom = b - DEMAND_KEEP * BUCKET_MS;
        this.demandRows = this.demandRows.filter((x) => x.bucket >= keepFrom);
        if (this.p.demand) this.dirty = true;
      }
      this.demandNow.fill(0);
      this.bucketStart = b;
    }
    if (t >= this.nextScrape) {
      this.nextScrape += sc.scrapeIntervalMs;
      for (let r = 0; r < this.ids.length; r++) {
        if (!w.serving[r]) continue; // the scrape of a dark site fails: its last reading expires on its own
        const exact = w.capacityNow[r]! > 0 ? Math.min(1, w.load[r]! / w.capacityNow[r]!) : 1;
        // A noisy reading (world.loadNoise): its own random stream, drawn only when there is noise.
        const use = sc.loadNoise > 0 ? Math.min(1, Math.max(0, exact * (1 + sc.loadNoise * this.noise.normal()))) : exact;
        const value: Record<string, number> = { kvCacheUse: Math.round(use * 1e4) / 1e4 };
        if (w.throttled[r]! > 0) value.throttledShare = w.throttled[r]!;
        this.ingest({ region: this.ids[r]!, kind: 'load.metrics', source: this.scrapeSources[r]!, key: 'vllm', observedAt: t, expiresAt: t + 3 * sc.scrapeIntervalMs, value }, t, this.scrapeBy[r]!);
      }
    }
    if (t >= this.nextProbe) {
      this.nextProbe += sc.probeIntervalMs;
      for (const r of w.probed) {
        const region = this.world.regions[r]!;
        for (const vantage of ['sim-1', 'sim-2', 'sim-3']) {
          this.ingest({ region: region.id, kind: 'health.probe', source: `health/${vantage}`, key: region.v4[0]!, observedAt: t, expiresAt: t + 3 * sc.probeIntervalMs, value: { up: w.serving[r] === 1 } }, t, PROBE_BY);
        }
      }
    }
    // The control loop plans again when the horizon epoch moves on (a new day of window occurrences).
    if (this.dirty || Math.floor(t / HORIZON_MS) !== this.plannedEpoch) this.replan(t);
  }

  drainShare(r: number, t: number): number {
    const id = this.ids[r]!;
    const st = regionStepAt(this.current, id, t);
    return st.down ? 0 : stepWeight(st, id);
  }

  refuses(r: number, t: number): boolean {
    return regionStepAt(this.current, this.ids[r]!, t).refuse === true;
  }

  goawayBy(r: number, t: number): number | undefined {
    const st = regionStepAt(this.current, this.ids[r]!, t);
    const by = (st as { goawayBy?: number }).goawayBy;
    return typeof by === 'number' && Number.isFinite(by) ? by : undefined;
  }

  unplaced(): Float64Array {
    if (this.unplacedOf !== this.current) {
      this.unplacedOf = this.current;
      this.unplacedNow.fill(0);
      const u = (this.current as { unplaced?: Record<string, number> }).unplaced ?? {};
      for (const [home, qps] of Object.entries(u)) {
        const r = this.world.regionIndex.get(home);
        if (r !== undefined && Number.isFinite(qps)) this.unplacedNow[r] = qps;
      }
    }
    return this.unplacedNow;
  }

  admits(r: number, s: number, t: number): boolean {
    const id = this.ids[r]!;
    const st = regionStepAt(this.current, id, t);
    if (st.down) return false;
    const w = stepWeight(st, this.ids[this.world.metroHome[this.world.subnetMetro[s]!]!]!);
    return w >= 1 || admissionDraw(this.keys[s]!, id) < w;
  }
}

/**
 * The planner settings of a simulated GridSteer, as gslb/control/setup.ts builds them from a
 * configuration: defaultSettings() for the fleet, one steered name served by every region
 * with TTL0 = its TTL, drain planning with that TTL0 and Tmin, then the scenario's
 * `policies.gridsteer.planner` (a mapping merges key by key into the default's mapping; any
 * other value replaces the default).
 */
export function simPlannerSettings(world: World, p: PolicyParams['gridsteer']): PlannerSettings {
  const regions = world.regions;
  const base = defaultSettings(
    regions.map((r) => ({
      id: r.id,
      location: { lat: r.lat, lon: r.lon },
      bias: r.bias,
      // What GridSteer is configured with: the region's units unless the scenario gives it wrong ones.
      capacityUnits: p.capacityUnits[r.id] ?? r.capacityUnits,
      ttl0S: p.ttl,
      ...(r.importLimitW !== undefined ? { importLimitW: r.importLimitW } : {}),
      ...(r.fullLoadW !== undefined ? { fullLoadW: r.fullLoadW } : {}),
    })),
  );
  const s: Record<string, unknown> = {
    ...base,
    names: [{ name: world.scenario.world.name, regions: regions.map((r) => r.id) }],
    drain: { ...base.drain, ttl0S: p.ttl, minTtlS: p.minTtl },
  };
  for (const [k, v] of Object.entries(p.planner)) {
    const d = s[k];
    const mapping = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
    s[k] = mapping(d) && mapping(v) ? { ...(d as object), ...(v as object) } : v;
  }
  if (world.scenario.windows.length > 0) s.windows = world.scenario.windows;
  // Physical loss is trusted only from the sources the scenario binds (trust.bindings; default none, as in production).
  s.gridLoss = { ...((s.gridLoss ?? {}) as Record<string, unknown>), bindings: structuredClone(world.scenario.trust.bindings) };
  return s as unknown as PlannerSettings;
}

/**
 * Who writes a scenario fact of `source`, as the state service records it (ADR 0021): the
 * `trust.principals` entry of the longest prefix of the source, with its grant when granted,
 * else one ungranted token (DEFAULT_FEED_PRINCIPAL).
 */
export function factProvenance(trust: TrustParams, source: string): Provenance {
  let best: string | undefined;
  for (const k of Object.keys(trust.principals)) if (source.startsWith(k) && (best === undefined || k.length > best.length)) best = k;
  if (best === undefined) return { principal: DEFAULT_FEED_PRINCIPAL };
  const e = trust.principals[best]!;
  return e.granted ? { principal: e.principal, grant: best } : { principal: e.principal };
}

/** The collector section that writes a scrape or probe source (its first path segment), with its own grant. */
function collectorProvenance(source: string): Provenance {
  const section = source.split('/')[0]!;
  return { principal: collectorPrincipal(section), grant: `${section}/` };
}

export function makePolicy(name: PolicyName, world: World, t0: number): SimPolicy {
  const p = world.scenario.policies;
  switch (name) {
    case 'static':
      return new StaticPolicy(world, p.static);
    case 'reactive':
      return new ReactivePolicy(world, p.reactive, t0);
    case 'gridsteer':
      return new GridSteerPolicy(world, p.gridsteer, t0);
  }
}

/**
 * The drain lead of a simulated GridSteer, ms: max(R, TTL0 − g) + g + S + m with S at its
 * minimum (sessionAllowanceMs) and g = max(Tmin, F) — the notice the planner needs to drain a
 * region before T with no shortfall (gslb/policy/drain.ts).
 */
export function simDrainLeadMs(world: World): number {
  const d = simPlannerSettings(world, world.scenario.policies.gridsteer).drain;
  return drainLeadMs(d, d.ttl0S);
}

/**
 * The lead a drain needs for a client class (target (a) and (b) apply from it): the drain lead,
 * but for clients of clamping resolvers with the clamp's TTL as the resolver floor F (such a
 * resolver keeps the last answer naming the region that long after the weight reaches 0).
 */
export function simClassLeadMs(world: World, cls: number): number {
  const d = simPlannerSettings(world, world.scenario.policies.gridsteer).drain;
  if (cls !== CLASS_CLAMPED) return drainLeadMs(d, d.ttl0S);
  return drainLeadMs({ ...d, resolverFloorS: Math.max(d.resolverFloorS, world.scenario.world.clampTtlS) }, d.ttl0S);
}

/** The replan time the simulator allows (GridSteer plans at most once per simulated second). */
export const REPLAN_MS = 1000;

/**
 * For a partial cap (target e): how long after it could learn of the cap GridSteer may take
 * before the region's new sessions are its choice: max(TTL0, F) + the replan time (answers given
 * before are cached that long), and when it is not told (`told` false: a throttle it sees only in
 * its scrapes, learnt at T) one scrape interval + 10 s before that, ms.
 */
export function capReactionMs(world: World, told: boolean): number {
  const d = simPlannerSettings(world, world.scenario.policies.gridsteer).drain;
  return (told ? 0 : world.scenario.world.scrapeIntervalMs + 10_000) + Math.max(d.ttl0S, d.resolverFloorS) * 1000 + REPLAN_MS;
}
