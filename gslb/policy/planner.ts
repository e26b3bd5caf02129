/**
 * The planner: pure `plan(input) → Plan`. It reads no clock: every time-based effect (a
 * signal's expiry, a stale policy taking over, a drain ramp step, an override's end, a grid
 * event's start and end) becomes a step at an absolute instant, and `decide` picks the step
 * in force from `now`. Two nodes holding the same store snapshot and config produce
 * byte-identical plans (the version is the hash of the inputs).
 *
 * Per region and instant it works out (DESIGN.md "Data flow", precedence strongest first):
 *   operator force-down > health down (majority of vantages; operator force-up overrides
 *   health alone) > operator drain / weight > grid obligations (events, alert levels) >
 *   power budget > compute capacity.
 * Caps combine by minimum into the region's admission share a ∈ [0, 1]; every home admits
 * into the region with w[home][region] = a (times the configured static weight). Each region
 * has a schedule of its own (ADR 0006), so a plan grows with the changes, not with
 * regions × instants. A region
 * whose model servers are saturated (the inference extension's endpoint picker: more than
 * `saturation.queueWaiting` requests waiting or KV-cache use above `saturation.kvCacheUse`) takes no
 * spill: w[h][r] = 0 for every home h ≠ r, its own clients unaffected.
 *
 * What it does not do yet: proactive draining before an event (issue 6 puts it in this
 * schedule), demand-aware spill limits (demand buckets are read by nobody yet), per-name
 * overrides (`by`).
 */
import { createHash } from 'node:crypto';
import { greatCircleKm, rankRegions, type LatLon } from '../geo/distance.js';
import { FLEET, type Override, type Plan, type RegionId, type RegionStep, type SignalKind } from '../model/types.js';
import type { SignalRecord, DemandBucket, StoreSnapshot } from '../model/snapshot.js';
import type { Capacity, GridAlert, GridEvent, LoadMetrics, PowerBudget } from '../model/signals.js';
import { curveWords, drainCurve, type CurvePoint, type DrainCurve } from './drain.js';
import { DEFAULT_GRID_RULES, type GridRule } from '../model/policy.js';

/** What a kind's fact means once it is older than expiresAt + keepMs. */
export type StaleThen = 'down' | 'degraded' | 'healthy' | 'ignore';

export interface StalePolicy {
  /** How long past expiresAt the last value still holds, ms. */
  keepMs: number;
  /**
   * Then: `down` (a health vote for down, a capacity of 0), `degraded` (capacity capped at
   * `degradedShare`), `healthy` (as if the fact said all is well), `ignore` (the fact no
   * longer counts; for health, the vote is dropped).
   */
  then: StaleThen;
}

export interface PlannerRegion {
  id: RegionId;
  /** Where the region is (and its Route 53 bias): the neighbours a home spills to, nearest first. */
  location?: LatLon;
  bias?: number;
  /** Configured capacity units (a capacity signal in units is divided by this). */
  capacityUnits?: number;
  /** Configured grid import limit, W (used when no power.budget signal says otherwise). */
  importLimitW?: number;
  /** The site's draw at full load, W: power-limited share = available W / fullLoadW. */
  fullLoadW?: number;
  /** TTL0 for drain planning: the largest TTL of the names the region serves, s (default drain.ttl0S). */
  ttl0S?: number;
}

export interface PlannerSettings {
  regions: PlannerRegion[];
  /** Static weights from config, w[home][target] (missing = 1); multiplied with the plan's. */
  staticWeights: Record<RegionId, Record<RegionId, number>>;
  stale: Record<SignalKind, StalePolicy>;
  /** The cap `degraded` means. */
  degradedShare: number;
  /** gridPolicy: what grid facts mean for traffic (GridRule, first match per fact). */
  gridRules: GridRule[];
  /** Grid events and alerts: applied, or only shown in the plan's reasons (shadow). */
  gridMode: 'apply' | 'shadow';
  /** Sources (a prefix of `source`, e.g. a collector name) whose grid facts are only shown. */
  gridShadow: string[];
  /** Per source prefix: `cap` = may pre-arm and cap, but a drain needs an operator (it caps at gridCapFloor). */
  gridTrust: Record<string, 'full' | 'cap'>;
  /** The least share a `cap`-trust source may leave a region on its own. */
  gridCapFloor: number;
  /** A region whose model servers have more requests waiting, or more KV cache in use, takes no spill (the endpoint picker's rule). */
  /**
   * Saturation (queueWaiting, kvCacheUse): a saturated region takes no spill. `throttledFactor`:
   * a region with throttled GPUs that is also saturated is capped at this share of what the
   * throttle leaves, until it is not saturated (simulator finding 5, docs/simulation.md).
   */
  saturation: { queueWaiting: number; kvCacheUse: number; throttledFactor: number };
  /** Spacing of an operator drain's ramp steps, ms. */
  rampStepMs: number;
  /** A region that comes back up as a whole takes traffic back over this long, in rampStepMs steps (0 = at once). */
  slowStartMs: number;
  /** Carbon tie-break: regions within this many km of a home count as the same latency band (0 = off). */
  carbonBandKm: number;
  /** …and one must be this much cleaner (relative gCO2/kWh, or percentile points ÷ 100) to go first. */
  carbonMinGain: number;
  /** Proactive drain before known grid events, and the automation's safety limits (ADR 0007). */
  drain: DrainSettings;
  /** The steered names and the regions serving each (for the safety limit per name); absent = one name served by every region. */
  names?: { name: string; regions: RegionId[] }[];
}

/**
 * DESIGN.md "TTLs and draining": for an event at T capping a region at f, the weight reaches
 * f at T − S − max(Tmin, F) − m, the ramp starts R earlier in steps max(Tmin, F) apart, and
 * answers' TTLs start shrinking lead = TTL0 + R + max(Tmin, F) + S + m before T (decide
 * bounds every TTL by the next step). After the end E the cap holds for `holdMs`
 * (hysteresis), then the weight ramps back over `restoreMs`.
 */
export interface DrainSettings {
  /** TTL0, s: the largest TTL of the names a region serves (PlannerRegion.ttl0S overrides it per region). */
  ttl0S: number;
  /** Tmin, s (policy.minTtl). */
  minTtlS: number;
  /** F, s (policy.resolverMinTtl): the TTL floor resolvers are assumed to clamp to. */
  resolverFloorS: number;
  /** S: the time sessions get to finish before T, ms (at least). */
  sessionAllowanceMs: number;
  /**
   * With more notice than the lead needs, S grows to use it, up to this (ms): long streams
   * then end on their own before T instead of being cut. Equal to sessionAllowanceMs = fixed S.
   */
  sessionAllowanceMaxMs: number;
  /** m: margin, at least the clock-skew bound, ms. */
  marginMs: number;
  /** R: the ramp's length, ms (0 = one step). */
  rampMs: number;
  /** After the end: the cap holds this long before the restore begins (a flapping signal cannot whipsaw traffic), ms. */
  holdMs: number;
  /** After the hold: the weight ramps back to 1 over this long, ms (0 = at once). */
  restoreMs: number;
  /** Safety: gridPolicy may take at most this share of a name's capacity at once without an operator (1 = no limit). */
  maxAutoShare: number;
  /** Safety: gridPolicy starts draining at most one region per this interval, ms (0 = no limit). */
  minDrainIntervalMs: number;
}

export const DEFAULT_DRAIN: DrainSettings = {
  ttl0S: 30,
  minTtlS: 5,
  resolverFloorS: 30,
  sessionAllowanceMs: 300_000,
  sessionAllowanceMaxMs: 5_400_000,
  marginMs: 5_000,
  rampMs: 120_000,
  holdMs: 120_000,
  restoreMs: 300_000,
  maxAutoShare: 0.5,
  minDrainIntervalMs: 120_000,
};

export const DEFAULT_STALE: Record<SignalKind, StalePolicy> = {
  'health.probe': { keepMs: 300_000, then: 'ignore' },
  'load.metrics': { keepMs: 120_000, then: 'ignore' },
  capacity: { keepMs: 600_000, then: 'degraded' },
  'power.budget': { keepMs: 600_000, then: 'degraded' },
  'grid.event': { keepMs: 0, then: 'ignore' },
  'grid.alert': { keepMs: 3600_000, then: 'ignore' },
  carbon: { keepMs: 3600_000, then: 'ignore' },
  demand: { keepMs: 0, then: 'ignore' },
};

/** Planner settings with the configuration's defaults (docs/configuration.md), for `regions`. */
export function defaultSettings(regions: PlannerRegion[]): PlannerSettings {
  return {
    regions,
    staticWeights: {},
    stale: structuredClone(DEFAULT_STALE),
    degradedShare: 0.5,
    gridRules: DEFAULT_GRID_RULES,
    gridMode: 'apply',
    gridShadow: [],
    gridTrust: { 'grid-alerts': 'cap' },
    gridCapFloor: 0.25,
    saturation: { queueWaiting: 5, kvCacheUse: 0.8, throttledFactor: 0.5 },
    rampStepMs: 30_000,
    slowStartMs: 60_000,
    carbonBandKm: 250,
    carbonMinGain: 0.2,
    drain: { ...DEFAULT_DRAIN },
  };
}

/** The first rule matching a grid fact, or undefined. */
export function matchGridRule(rules: GridRule[], kind: string, source: string, type: string, level: number | undefined): GridRule | undefined {
  return rules.find(
    (r) =>
      r.kind === kind &&
      (r.types === undefined || r.types.includes(type)) &&
      (r.minLevel === undefined || (level ?? 0) >= r.minLevel) &&
      (r.maxLevel === undefined || (level ?? 0) <= r.maxLevel) &&
      (r.source === undefined || source.startsWith(r.source)),
  );
}

/** The trust of a source: the longest matching prefix in gridTrust, else full. */
function trustOf(s: PlannerSettings, source: string): 'full' | 'cap' {
  let best = '';
  let t: 'full' | 'cap' = 'full';
  for (const [prefix, v] of Object.entries(s.gridTrust)) {
    if (source.startsWith(prefix) && prefix.length >= best.length) {
      best = prefix;
      t = v;
    }
  }
  return t;
}

export interface PlanInput {
  configHash: string;
  snapshot: StoreSnapshot;
  settings: PlannerSettings;
  /**
   * Fail static (DESIGN.md "Many nodes"): the store is unreachable, so no signal can be
   * refreshed; every signal is taken as known until the store is back (no expiry or stale
   * policy steps). Grid events, override ends and ramps keep their schedule.
   */
  frozen?: boolean;
}

/** Rounds a share to 4 decimals so plans stay small and stable. */
const round = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 10000) / 10000;

type Phase = 'fresh' | 'kept' | 'stale';

function phaseAt(r: SignalRecord, t: number, p: StalePolicy): Phase {
  if (t < r.signal.expiresAt) return 'fresh';
  if (t < r.signal.expiresAt + p.keepMs) return 'kept';
  return 'stale';
}

/** A region's situation at one instant. */
interface RegionView {
  down: boolean;
  /** The gateway should refuse new streams (an obligation to take nothing is in force). */
  refuse: boolean;
  /** gridPolicy's cap before the safety limits and the freeze (for the safety pass). */
  gridRaw: number;
  /** gridPolicy's cap in force (after the safety limits and any freeze). */
  grid: number;
  /** Seconds (gridPolicy pre-arm); undefined = none. */
  ttlCap?: number;
  share: number;
  noSpill: boolean;
  reasons: string[];
}

/**
 * The curve of an operator drain with a deadline (`by`): planned like a grid event starting
 * at `by`, learned when the drain was asked for.
 */
const deadlineCurves = new WeakMap<PlannerSettings, WeakMap<Override, DrainCurve>>();

function deadlineCurve(o: Override, region: PlannerRegion, s: PlannerSettings): DrainCurve | undefined {
  if (o.action !== 'drain' || o.by === undefined) return undefined;
  // Asked for at every instant of the region's schedule: made once per (settings, override).
  let bySettings = deadlineCurves.get(s);
  if (!bySettings) deadlineCurves.set(s, (bySettings = new WeakMap()));
  let c = bySettings.get(o);
  if (!c) bySettings.set(o, (c = newDeadlineCurve(o, o.by, region, s)));
  return c;
}

function newDeadlineCurve(o: Override, by: number, region: PlannerRegion, s: PlannerSettings): DrainCurve {
  return drainCurve(
    { start: by, end: o.end ?? Infinity, learnedAt: o.start, cap: o.value ?? 0, ttl0S: region.ttl0S ?? s.drain.ttl0S, ...(o.ramp > 0 ? { rampMs: o.ramp } : {}) },
    s.drain,
  );
}

/** Steps of an immediate ramp of length `ramp` from `start`: n steps, rampStepMs apart or more. */
function rampSteps(ramp: number, rampStepMs: number): number {
  return ramp > 0 ? Math.max(1, Math.ceil(ramp / rampStepMs)) : 1;
}

/**
 * The cap operator drain/undrain/weight overrides leave at t (1 = none), with its words, and
 * whether the gateway should refuse new streams (a drain to 0 past its deadline).
 * The latest-starting drain or undrain in force decides; weight overrides combine by minimum.
 * - drain without `by`: ramps from `start` to `value` over `ramp`;
 * - drain with `by`: the deadline's curve (the ramp ends before `by`, DESIGN.md);
 * - undrain: ramps from `value` (the level the drain had reached) back to 1 over `ramp`.
 */
/** operatorCap with no override (shared: never written to). */
const NO_OPERATOR_CAP: { cap: number; why: string | null; refuse: boolean } = Object.freeze({ cap: 1, why: null, refuse: false });

function operatorCap(region: PlannerRegion, overrides: Override[], t: number, s: PlannerSettings): { cap: number; why: string | null; refuse: boolean } {
  if (overrides.length === 0) return NO_OPERATOR_CAP;
  let drainish: Override | undefined;
  let cap = 1;
  let why: string | null = null;
  for (const o of overrides) {
    if (o.start > t) continue;
    const curve = deadlineCurve(o, region, s);
    // A drain with a deadline keeps acting after its end while it holds and restores.
    const over = o.end !== undefined && t >= o.end;
    if (over && !(curve && curve.at(t).cap < 1)) continue;
    if (o.action === 'drain' || o.action === 'undrain') {
      if (!drainish || o.start > drainish.start || (o.start === drainish.start && o.id > drainish.id)) drainish = o;
    } else if (o.action === 'weight' && o.value !== undefined && o.value < cap) {
      cap = o.value;
      why = `weight ${o.value} by ${o.actor} (${o.reason}) [${o.id}]`;
    }
  }
  let refuse = false;
  if (drainish && drainish.action === 'drain') {
    const target = drainish.value ?? 0;
    const curve = deadlineCurve(drainish, region, s);
    let c: number;
    let how: string;
    if (curve) {
      const p = curve.at(t);
      c = p.cap;
      how = `by ${new Date(drainish.by!).toISOString()}${p.cap < 1 ? `: ${curveWords(curve, p).replace(/ ahead of .*$/, '')}` : ''}`;
      if (target === 0 && t >= drainish.by! && (drainish.end === undefined || t < drainish.end)) refuse = true;
      if (curve.shortfallMs > 0 && t < drainish.by!) how += ` (asked ${Math.round(curve.shortfallMs / 1000)} s later than the lead it needs)`;
    } else {
      const n = rampSteps(drainish.ramp, s.rampStepMs);
      const k = Math.min(n, Math.floor(((t - drainish.start) * n) / Math.max(1, drainish.ramp)) + 1);
      c = round(1 - ((1 - target) * k) / n);
      how = n > 1 ? `ramp step ${k}/${n}` : '';
    }
    if (c < cap) {
      cap = c;
      why = `drain to ${target} by ${drainish.actor} (${drainish.reason})${how ? `, ${how}` : ''} [${drainish.id}]`;
    }
  } else if (drainish && drainish.action === 'undrain' && drainish.value !== undefined && drainish.value < 1) {
    const from = drainish.value;
    const n = rampSteps(drainish.ramp, s.rampStepMs);
    const k = Math.min(n, Math.floor(((t - drainish.start) * n) / Math.max(1, drainish.ramp)) + 1);
    const c = round(from + ((1 - from) * k) / n);
    if (c < cap) {
      cap = c;
      why = `undrain by ${drainish.actor} (${drainish.reason}), slow start from ${from}, step ${k}/${n} [${drainish.id}]`;
    }
  }
  return { cap, why, refuse };
}

/** The instants of an override (start, each ramp step, end; a deadline drain's curve). */
function overrideInstants(o: Override, region: PlannerRegion, s: PlannerSettings): number[] {
  const out = [o.start];
  if (o.end !== undefined) out.push(o.end);
  const curve = deadlineCurve(o, region, s);
  if (curve) out.push(...curve.instants);
  else if ((o.action === 'drain' || o.action === 'undrain') && o.ramp > 0) {
    const n = rampSteps(o.ramp, s.rampStepMs);
    for (let k = 1; k < n; k++) out.push(o.start + Math.ceil((k * o.ramp) / n));
  }
  return out;
}

/** A region's records split by what reads them (done once per region, not per instant). */
interface RegionRecords {
  health: SignalRecord[];
  grid: SignalRecord[];
  power: SignalRecord[];
  compute: SignalRecord[];
  /** The grid records read through gridPolicy, with their drain curves. */
  facts: GridFact[];
  /** healthAt's tally, laid out once for viewAt's every instant (see tallyHealth). */
  tally: HealthScratch;
}

/**
 * A region's endpoints (health.probe keys, in the order healthAt lists them) and, per health
 * record, its endpoint's index (−1: not a health fold); arrays viewAt's tally reuses at each
 * instant instead of making new ones.
 */
interface HealthScratch {
  keys: string[];
  keyOf: Int32Array;
  ups: Int32Array;
  downs: Int32Array;
  /** Latest turn up of the vantages voting up; NaN: one of them never turned (healthAt's undefined). */
  since: Float64Array;
}

function healthScratch(health: readonly SignalRecord[]): HealthScratch {
  const keys: string[] = [];
  const keyOf = new Int32Array(health.length).fill(-1);
  health.forEach((r, j) => {
    if (r.fold.kind !== 'health') return;
    let k = keys.indexOf(r.signal.key);
    if (k < 0) k = keys.push(r.signal.key) - 1;
    keyOf[j] = k;
  });
  const n = keys.length;
  return { keys, keyOf, ups: new Int32Array(n), downs: new Int32Array(n), since: new Float64Array(n) };
}

/**
 * The health votes at t (per endpoint, each vantage's stable state; a stale probe votes as the
 * kind's stale policy says), counted into `h` (valid until the next call with it): what
 * healthAt and viewAt read. Returns the endpoints probed and those down.
 */
function tallyHealth(health: readonly SignalRecord[], h: HealthScratch, t: number, hp: StalePolicy): { probed: number; down: number } {
  const { keyOf, ups, downs, since } = h;
  ups.fill(0);
  downs.fill(0);
  since.fill(-Infinity);
  for (let j = 0; j < health.length; j++) {
    const k = keyOf[j]!;
    if (k < 0) continue;
    const r = health[j]!;
    const fold = r.fold as Extract<SignalRecord['fold'], { kind: 'health' }>;
    let vote: boolean | null = fold.stableUp;
    if (phaseAt(r, t, hp) === 'stale') vote = hp.then === 'down' ? false : hp.then === 'healthy' ? true : null;
    if (vote === true) {
      ups[k]!++;
      const u = fold.upSince;
      since[k] = u === undefined ? NaN : Math.max(since[k]!, u);
    } else if (vote === false) downs[k]!++;
  }
  return tallyCounts(h);
}

/** Endpoints a tally has votes for, and those down by a majority of them. */
function tallyCounts(h: HealthScratch): { probed: number; down: number } {
  let probed = 0;
  let down = 0;
  for (let k = 0; k < h.ups.length; k++) {
    if (h.ups[k]! + h.downs[k]! === 0) continue;
    probed++;
    if (h.downs[k]! > h.ups[k]!) down++;
  }
  return { probed, down };
}

/**
 * When the region came back up as a whole (slow start): the latest turn up among its up
 * endpoints; NaN when none is up or one of them never turned.
 */
function cameBackAt(h: HealthScratch): number {
  let back = -Infinity;
  let upEps = 0;
  for (let k = 0; k < h.keys.length; k++) {
    if (h.ups[k]! + h.downs[k]! === 0 || h.downs[k]! > h.ups[k]!) continue;
    upEps++;
    const sk = h.since[k]!;
    back = sk === -Infinity ? NaN : Math.max(back, sk);
  }
  return upEps > 0 ? back : NaN;
}

/** The endpoints a tally found down (by a majority of their vantages), in order. */
function downEndpoints(h: HealthScratch): string[] {
  return h.keys.filter((_, k) => h.ups[k]! + h.downs[k]! > 0 && h.downs[k]! > h.ups[k]!);
}

/**
 * One grid fact read through gridPolicy: a grid record's current content, or — while it
 * restores — the content it had before it changed or was cancelled (GridFold.last).
 */
interface GridFact {
  rule: GridRule;
  /** In words, e.g. "grid event e1 from openadr3/vtn: load-shed, 2026-…–2026-…". */
  what: string;
  /** The window [start, end) in which it is in force (end already cut at a change). */
  start: number;
  end: number;
  /** In force from here: the start, or when it was learned if later (nothing acts on what was not yet known). */
  from: number;
  /** The cap its rule asks for (1 = none), after the source's trust. */
  cap: number;
  limitW?: number;
  note: string;
  effect: string;
  shadow: boolean;
  previous: boolean;
  /** A grid alert past its expiresAt is kept (until its stale policy ends it): said so from here. */
  keptFrom?: number;
  priority?: number;
  priorityKey: string;
  curve?: DrainCurve;
}

/**
 * The share an import limit of `limitW` leaves the region (its full-load draw against the
 * limited import plus on-site generation and storage from its power budget), or 1 when the
 * region has no fullLoadW.
 */
function importShare(region: PlannerRegion, power: SignalRecord[], limitW: number): number {
  if (!region.fullLoadW) return 1;
  let avail = Math.min(region.importLimitW ?? Infinity, limitW);
  for (const r of power) {
    if (r.fold.kind !== 'applied') continue;
    const v = r.fold.value as PowerBudget;
    const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
    avail = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, limitW) + (v.generationW ?? 0) + storageW;
  }
  return Math.min(1, avail / region.fullLoadW);
}

function gridFacts(region: PlannerRegion, grid: SignalRecord[], power: SignalRecord[], s: PlannerSettings): GridFact[] {
  const out: GridFact[] = [];
  const iso = (t: number) => (Number.isFinite(t) ? new Date(t).toISOString() : '…');
  for (const r of grid) {
    const fold = r.fold.kind === 'grid' ? r.fold : undefined;
    const contents: { value: unknown; learnedAt: number; until?: number; previous: boolean }[] = [
      { value: r.signal.value, learnedAt: fold?.learnedAt ?? r.signal.observedAt, previous: false },
    ];
    if (fold?.last) contents.push({ value: fold.last.value, learnedAt: fold.last.learnedAt, until: fold.last.until, previous: true });
    for (const c of contents) {
      let kind: 'grid.event' | 'grid.alert';
      let type: string;
      let level: number | undefined;
      let start: number;
      let end: number;
      let what: string;
      let factCap: number | undefined;
      let limitW: number | undefined;
      let priority: number | undefined;
      let program = '';
      if (r.signal.kind === 'grid.event') {
        const v = c.value as GridEvent;
        if (v.cancelled) continue;
        kind = 'grid.event';
        ({ type, level, start, end, cap: factCap, limitW, priority } = v);
        program = v.program ?? '';
        what = `grid event ${v.id} from ${r.signal.source}: ${v.type}${v.level !== undefined ? ` level ${v.level}` : ''}${v.limitW !== undefined ? ` ${Math.round(v.limitW)} W` : ''}${v.cap !== undefined ? ` ${v.cap}` : ''}, ${iso(v.start)}–${iso(v.end)}`;
      } else {
        const v = c.value as GridAlert;
        kind = 'grid.alert';
        type = v.type ?? 'eea';
        level = v.level;
        start = v.start ?? c.learnedAt;
        end = v.end ?? Infinity;
        // The current content stops counting when its stale policy says so.
        if (!c.previous) end = Math.min(end, r.signal.expiresAt + s.stale['grid.alert'].keepMs);
        what = `grid alert ${type} level ${v.level}${v.zone ? ` in ${v.zone}` : ''} from ${r.signal.source}`;
      }
      if (c.previous) what += ` (until it changed at ${iso(c.until!)})`;
      const rule = matchGridRule(s.gridRules, kind, r.signal.source, type, level);
      if (!rule) continue;
      const shadow = s.gridMode === 'shadow' || s.gridShadow.some((p) => r.signal.source.startsWith(p));
      let cap = rule.then.drain ? 0 : rule.then.capFromFact ? (factCap ?? 1) : (rule.then.cap ?? 1);
      let note = '';
      if (cap < s.gridCapFloor && trustOf(s, r.signal.source) === 'cap') {
        note = ` (source trusted to cap only: a drain needs an operator's confirmation, so capped at ${s.gridCapFloor})`;
        cap = s.gridCapFloor;
      }
      // An import limit is planned ahead like a cap: the share it will leave.
      let curveCap = cap;
      if (rule.then.importLimit && limitW !== undefined) curveCap = Math.min(curveCap, importShare(region, power, limitW));
      const effect = [
        cap < 1 ? `cap ${round(cap)}` : '',
        rule.then.ttlCap !== undefined ? `TTL ≤ ${rule.then.ttlCap} s` : '',
        rule.then.importLimit && limitW !== undefined ? `import limit ${Math.round(limitW)} W` : '',
      ]
        .filter((x) => x !== '')
        .join(', ');
      const until = c.until;
      const curve =
        curveCap < 1 && Number.isFinite(start)
          ? drainCurve({ start, end, learnedAt: c.learnedAt, cap: round(curveCap), ttl0S: region.ttl0S ?? s.drain.ttl0S, ...(until !== undefined ? { until } : {}) }, s.drain)
          : undefined;
      out.push({
        rule,
        what,
        start,
        from: Math.max(start, c.learnedAt),
        end: Math.min(end, until ?? Infinity),
        cap,
        ...(limitW !== undefined ? { limitW } : {}),
        note,
        effect,
        shadow,
        previous: c.previous,
        ...(priority !== undefined ? { priority } : {}),
        ...(kind === 'grid.alert' && !c.previous ? { keptFrom: r.signal.expiresAt } : {}),
        priorityKey: `${r.signal.source}|${program}`,
        ...(curve ? { curve } : {}),
      });
    }
  }
  return out;
}

function splitRecords(recs: SignalRecord[], region: PlannerRegion, s: PlannerSettings): RegionRecords {
  const health: SignalRecord[] = [];
  const grid: SignalRecord[] = [];
  const power: SignalRecord[] = [];
  const compute: SignalRecord[] = [];
  for (const r of recs) {
    const k = r.signal.kind;
    if (k === 'health.probe') health.push(r);
    else if (k === 'grid.event' || k === 'grid.alert') grid.push(r);
    else if (k === 'power.budget') power.push(r);
    else if (k === 'capacity' || k === 'load.metrics') compute.push(r);
  }
  return { health, grid, power, compute, facts: gridFacts(region, grid, power, s), tally: healthScratch(health) };
}

interface LiveFact {
  f: GridFact;
  /** Its drain curve's point at t (undefined: no curve). */
  p: CurvePoint | undefined;
  inWindow: boolean;
}

/** liveFacts when nothing acts (shared: never written to). */
const NO_LIVE: { live: LiveFact[]; bestPriority: ReadonlyMap<string, number> } = { live: [], bestPriority: new Map() };

/**
 * The grid facts acting at t (in their window, or on their drain curve below 1) and, per
 * source and program, the lowest priority number among them (OpenADR: that one wins).
 */
function liveFacts(facts: readonly GridFact[], t: number): { live: LiveFact[]; bestPriority: ReadonlyMap<string, number> } {
  if (facts.length === 0) return NO_LIVE;
  const live: LiveFact[] = [];
  for (const f of facts) {
    const p = f.curve?.at(t);
    const inWindow = t >= f.from && t < f.end;
    if (inWindow || (p !== undefined && p.cap < 1)) live.push({ f, p, inWindow });
  }
  if (live.length === 0) return NO_LIVE;
  const bestPriority = new Map<string, number>();
  for (const { f } of live) {
    if (f.priority === undefined) continue;
    bestPriority.set(f.priorityKey, Math.min(bestPriority.get(f.priorityKey) ?? Infinity, f.priority));
  }
  return { live, bestPriority };
}

/**
 * The lowest grid-event import limit in force at t, W (Infinity: none), as viewAt applies
 * it: a fact in its window whose gridPolicy rule sets `importLimit`, not shadowed and not
 * yielding to a lower priority number of its source and program.
 */
function eventImportLimitAt(facts: readonly GridFact[], t: number): number {
  const { live, bestPriority } = liveFacts(facts, t);
  let limitW = Infinity;
  for (const { f, inWindow } of live) {
    const best = bestPriority.get(f.priorityKey);
    if (!inWindow || f.shadow || (f.priority !== undefined && best !== undefined && f.priority > best)) continue;
    if (f.rule.then.importLimit && f.limitW !== undefined && f.limitW < limitW) limitW = f.limitW;
  }
  return limitW;
}

/** Power at a site at one instant (regionPowerAt); an absent field is not known. */
export interface RegionPower {
  /**
   * What the site can draw, W: its grid import limit (the power budget's, else the region
   * file's `power.importLimitW`), lowered by a grid event's import limit while one is in
   * force, plus on-site generation and storage discharge (when storage holds energy).
   */
  availableW?: number;
  /** The site's draw, W: the latest reading of the power budget that sets availableW. */
  drawW?: number;
  /** availableW − drawW, W (negative: drawing more than is available). */
  headroomW?: number;
}

/**
 * A region's power at t from its signal records, as viewAt weighs a power budget: applied
 * (hysteresis-folded) budgets that are not stale, the smallest availability among them when
 * several sources report; without a budget, the configured import limit under any grid
 * event's limit. Nothing known (no import limit anywhere): no availableW.
 */
export function regionPowerAt(region: PlannerRegion, records: readonly SignalRecord[], s: PlannerSettings, t: number): RegionPower {
  const rr = splitRecords([...records], region, s);
  const eventLimitW = eventImportLimitAt(rr.facts, t);
  let out: RegionPower | undefined;
  for (const r of rr.power) {
    if (r.signal.kind !== 'power.budget' || r.fold.kind !== 'applied') continue;
    if (phaseAt(r, t, s.stale['power.budget']) === 'stale') continue;
    const v = r.fold.value as PowerBudget;
    const importW = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, eventLimitW);
    const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
    const availableW = importW + (v.generationW ?? 0) + storageW;
    if (!Number.isFinite(availableW) || (out?.availableW !== undefined && out.availableW <= availableW)) continue;
    const drawW = (r.signal.value as PowerBudget).drawW;
    out = drawW === undefined ? { availableW } : { availableW, drawW, headroomW: availableW - drawW };
  }
  if (out) return out;
  const importW = Math.min(region.importLimitW ?? Infinity, eventLimitW);
  return Number.isFinite(importW) ? { availableW: importW } : {};
}

/** A region's health probes at one instant, counted as the planner counts them (healthAt). */
export interface HealthTally {
  /** Endpoints (signal keys) with a probe record. */
  keys: string[];
  /** Per endpoint: vantages voting up, voting down. */
  ups: number[];
  downs: number[];
  /** Per endpoint, the latest time an up vote turned up (undefined: one of them never turned). */
  since: (number | undefined)[];
  /** Endpoints with at least one vote. */
  probed: number;
  /** Endpoints a majority of their vantages say are down. */
  downEps: string[];
  /** Every probed endpoint is down: the region is down by health (absent an operator's force-up). */
  down: boolean;
}

/**
 * Health at `t` from a region's health.probe records: per endpoint, a majority of vantage
 * votes (each vantage's stable state; a stale probe votes as the kind's stale policy says).
 */
export function healthAt(health: readonly SignalRecord[], t: number, hp: StalePolicy): HealthTally {
  const h = healthScratch(health);
  const { probed, down } = tallyHealth(health, h, t, hp);
  return {
    keys: h.keys,
    ups: [...h.ups],
    downs: [...h.downs],
    since: Array.from(h.since, (x) => (Number.isNaN(x) ? undefined : x)),
    probed,
    downEps: downEndpoints(h),
    down: probed > 0 && down === probed,
  };
}

/**
 * Reason texts made once per plan and handed out again at every instant that gives the same
 * words (per owner — a record, a region — and a variant): a region's views at its instants
 * then share their strings, so comparing steps is mostly a pointer check and the words are
 * not built, and collected, again and again (a 1,000-region fleet has ~10 instants per region).
 */
class Texts {
  private readonly by = new Map<object, { v: string | number; text: string }[]>();
  /** The text kept for (owner, variant), if any: `get(o, v) ?? put(o, v, words)` builds the words only once. */
  get(owner: object, variant: string | number): string | undefined {
    const xs = this.by.get(owner);
    if (xs) for (const x of xs) if (x.v === variant) return x.text;
    return undefined;
  }
  put(owner: object, variant: string | number, text: string): string {
    const xs = this.by.get(owner);
    if (xs) xs.push({ v: variant, text });
    else this.by.set(owner, [{ v: variant, text }]);
    return text;
  }
}

/** What viewAt needs besides the region's own records: fleet-wide freezes, the safety pass's floors, the plan's texts. */
interface ViewContext {
  freezes: Override[];
  texts: Texts;
  /** The least gridPolicy share the safety limits allow at t (undefined: no limit). */
  floor?: (t: number) => { floor: number; why: string } | undefined;
}

/** A cap's reason as viewAt words it. */
function capWords(id: RegionId, c: number, why: string): string {
  return `${id}: ${why} → cap ${round(c)}`;
}

/** viewAt's least cap so far and its reasons. */
interface CapAcc {
  share: number;
  reasons: string[];
}

/** A cap with its words made already (capWords, mostly through the plan's texts). */
function capText(a: CapAcc, c: number, text: string): void {
  if (c < a.share) a.share = c;
  if (c < 1) a.reasons.push(text);
}

/** A cap with its reason's words: made only when it caps. */
function capWhy(a: CapAcc, id: RegionId, c: number, why: string): void {
  if (c < a.share) a.share = c;
  if (c < 1) a.reasons.push(capWords(id, c, why));
}

function viewAt(region: PlannerRegion, rr: RegionRecords, ovs: Override[], t: number, s: PlannerSettings, ctx: ViewContext): RegionView {
  const reasons: string[] = [];
  const id = region.id;
  let forceDown: Override | undefined;
  let forceUp: Override | undefined;
  for (const o of ovs) {
    if (!(o.start <= t && (o.end === undefined || t < o.end))) continue;
    if (o.action === 'force-down') forceDown ??= o;
    else if (o.action === 'force-up') forceUp ??= o;
  }

  // Health: per endpoint, a majority of vantage votes.
  const health = tallyHealth(rr.health, rr.tally, t, s.stale['health.probe']);
  const healthDown = health.probed > 0 && health.down === health.probed;

  let down = false;
  if (forceDown) {
    down = true;
    reasons.push(`${id}: forced down by ${forceDown.actor} (${forceDown.reason}) [${forceDown.id}]`);
  } else if (healthDown && forceUp) {
    reasons.push(`${id}: health says down (${downEndpoints(rr.tally).join(', ')}) but forced up by ${forceUp.actor} (${forceUp.reason}) [${forceUp.id}]`);
  } else if (healthDown) {
    down = true;
    reasons.push(`${id}: down: every probed endpoint failed on a majority of vantages (${downEndpoints(rr.tally).join(', ')})`);
  }

  // The least cap and its reasons, gathered in one object (not closures over locals, which
  // would cost a context per view).
  const acc: CapAcc = { share: 1, reasons };
  const texts = ctx.texts;

  // Slow start: a region whose every up endpoint turned up recently came back as a whole
  // (a cold start): it takes clients back in steps over slowStartMs.
  if (!down && s.slowStartMs > 0) {
    const back = cameBackAt(rr.tally);
    if (!Number.isNaN(back)) {
      if (t >= back && t < back + s.slowStartMs) {
        const n = Math.max(1, Math.ceil(s.slowStartMs / s.rampStepMs));
        const k = Math.min(n, Math.floor(((t - back) * n) / s.slowStartMs) + 1);
        capText(acc, k / n, texts.get(rr.health, `${back}/${k}`) ?? texts.put(rr.health, `${back}/${k}`, capWords(id, k / n, `slow start after coming back up at ${new Date(back).toISOString()}, step ${k}/${n}`)));
      }
    }
  }

  const op = operatorCap(region, ovs, t, s);
  if (op.why) capWhy(acc, id, op.cap, op.why);

  // Grid obligations: every grid fact, read through gridPolicy (first matching rule), with
  // its drain curve (drain.ts): the ramp ahead of its start, the hold, the restore after it.
  let ttlCap: number | undefined;
  let eventLimitW = Infinity;
  let eventLimitWhy = '';
  let refuse = false;
  let grid = 1;
  // OpenADR: among overlapping events of one source and program, the lowest priority number wins.
  const { live, bestPriority } = liveFacts(rr.facts, t);
  for (const { f: f0, p, inWindow } of live) {
    const f = f0.keptFrom !== undefined && t >= f0.keptFrom ? { ...f0, what: `${f0.what} (expired, kept)` } : f0;
    const best = bestPriority.get(f.priorityKey);
    if (f.priority !== undefined && best !== undefined && f.priority > best) {
      reasons.push(`${id}: ${f.what} (priority ${f.priority}) yields to priority ${best} of the same program`);
      continue;
    }
    const phase = p && p.cap < 1 && f.curve ? `: ${curveWords(f.curve, p)}` : '';
    if (f.shadow) {
      reasons.push(`${id}: shadow: rule ${f.rule.name} (${f.what}) would apply: ${f.effect || 'nothing'}${f.note}${phase ? ` — now${phase}` : ''}`);
      continue;
    }
    if (p && p.cap < 1) {
      if (p.cap < grid) grid = p.cap;
      reasons.push(`${id}: rule ${f.rule.name} (${f.what})${f.note}${phase} → cap ${p.cap}`);
    }
    const c = f.curve;
    if (c && c.shortfallMs > 0 && !f.previous && t >= c.input.learnedAt && t < f.start) {
      ttlCap = Math.min(ttlCap ?? Infinity, s.drain.minTtlS);
      reasons.push(
        `${id}: ${f.what} was learned ${Math.round(c.shortfallMs / 1000)} s later than the lead it needs (${Math.round((c.input.start - c.noticeStart) / 1000)} s): TTL ${s.drain.minTtlS} s until it starts`,
      );
    }
    if (!inWindow) continue;
    if (f.cap === 0) refuse = true;
    if (f.rule.then.ttlCap !== undefined) {
      ttlCap = Math.min(ttlCap ?? Infinity, f.rule.then.ttlCap);
      reasons.push(`${id}: rule ${f.rule.name} (${f.what}) → TTL ≤ ${f.rule.then.ttlCap} s`);
    }
    if (f.rule.then.importLimit && f.limitW !== undefined && f.limitW < eventLimitW) {
      eventLimitW = f.limitW;
      eventLimitWhy = `rule ${f.rule.name} (${f.what})`;
    }
  }
  // Safety and the operator's freeze act on gridPolicy's share only (measured power and
  // compute are physical facts: no switch makes them untrue).
  const gridRaw = grid;
  const fr = ctx.freezes.length === 0 ? undefined : ctx.freezes.find((o) => o.start <= t && (o.end === undefined || t < o.end));
  if (fr) {
    const held = fr.hold?.[id] ?? 1;
    if (held !== grid) reasons.push(`${id}: automation frozen by ${fr.actor} (${fr.reason}) [${fr.id}]: gridPolicy held at ${held}${grid < 1 ? `, not ${grid}` : ' (it would lift)'}`);
    grid = held;
    if (held > 0) refuse = false;
  } else {
    const fl = ctx.floor?.(t);
    if (fl && fl.floor > grid) {
      reasons.push(`${id}: ${fl.why}: gridPolicy held at ${round(fl.floor)}, not ${grid}`);
      grid = round(fl.floor);
      refuse = false;
    }
  }
  if (grid < acc.share) acc.share = grid;

  // Power budget: available watts over full-load draw. A grid event's import limit lowers
  // the import part while it holds.
  let budgeted = false;
  for (const r of rr.power) {
    if (r.signal.kind !== 'power.budget' || r.fold.kind !== 'applied') continue;
    const pol = s.stale['power.budget'];
    const ph = phaseAt(r, t, pol);
    if (ph === 'stale') {
      if (pol.then === 'down') capText(acc, 0, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, 0, `power budget from ${r.signal.source} is stale (policy: down)`))));
      else if (pol.then === 'degraded') capText(acc, s.degradedShare, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, s.degradedShare, `power budget from ${r.signal.source} is stale (policy: degraded)`))));
      continue;
    }
    const fullLoadW = region.fullLoadW;
    if (!fullLoadW) continue;
    budgeted = true;
    const v = r.fold.value as PowerBudget;
    const importW = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, eventLimitW);
    const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
    const avail = importW + (v.generationW ?? 0) + storageW;
    if (avail < fullLoadW) {
      const limited = importW === eventLimitW;
      const c = avail / fullLoadW;
      const variant = limited ? `${eventLimitW}|${eventLimitWhy}` : avail;
      capText(
        acc,
        c,
        texts.get(r, variant) ??
          texts.put(r, variant, capWords(id, c, `power: ${Math.round(avail)} W available of ${fullLoadW} W at full load (${r.signal.source}${limited ? `; import limited by ${eventLimitWhy}` : ''})`)),
      );
    }
  }
  if (!budgeted && eventLimitW < Infinity) {
    if (region.fullLoadW) {
      const importW = Math.min(region.importLimitW ?? Infinity, eventLimitW);
      if (importW < region.fullLoadW) capWhy(acc, id, importW / region.fullLoadW, `power: ${Math.round(importW)} W of grid import available of ${region.fullLoadW} W at full load; import limited by ${eventLimitWhy}`);
    } else reasons.push(`${id}: ${eventLimitWhy} sets an import limit, but the region has no power.fullLoadW to turn watts into a share: not applied`);
  }

  // Compute capacity and load.
  let noSpill = false;
  for (const r of rr.compute) {
    const kind = r.signal.kind;
    if (kind !== 'capacity' && kind !== 'load.metrics') continue;
    const pol = s.stale[kind];
    const ph = phaseAt(r, t, pol);
    if (ph === 'stale') {
      if (pol.then === 'down') capText(acc, 0, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, 0, `${kind} from ${r.signal.source} is stale (policy: down)`))));
      else if (pol.then === 'degraded') capText(acc, s.degradedShare, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, s.degradedShare, `${kind} from ${r.signal.source} is stale (policy: degraded)`))));
      continue;
    }
    if (kind === 'capacity' && r.fold.kind === 'applied') {
      const v = r.fold.value as Capacity;
      let c = v.fraction ?? 1;
      if (v.units !== undefined && region.capacityUnits) c = Math.min(c, v.units / region.capacityUnits);
      if (c < 1) capText(acc, c, (texts.get(r, 'capacity') ?? texts.put(r, 'capacity', capWords(id, c, `capacity ${round(c)} reported by ${r.signal.source}`))));
    } else if (kind === 'load.metrics') {
      const v = r.signal.value as LoadMetrics;
      // GPU memory is not a sign of saturation: inference servers preallocate most of it.
      const waiting = v.queueDepth ?? 0;
      const kv = v.kvCacheUse ?? 0;
      const saturated = waiting > s.saturation.queueWaiting || kv > s.saturation.kvCacheUse;
      if (v.throttledShare !== undefined && v.throttledShare > 0) {
        // Throttled and saturated: the sessions already running exceed what the throttle
        // left, and long ones take minutes to end; admit fewer new ones until it is not.
        const left = 1 - v.throttledShare;
        const lost = v.throttledShare;
        if (saturated && s.saturation.throttledFactor < 1) {
          const c = left * s.saturation.throttledFactor;
          capText(
            acc,
            c,
            texts.get(r, 'throttled, saturated') ??
              texts.put(r, 'throttled, saturated', capWords(id, c, `${Math.round(lost * 100)} % of GPUs throttled and saturated (${r.signal.source}): ${s.saturation.throttledFactor} of what is left until the load is back under it`)),
          );
        } else capText(acc, left, (texts.get(r, 'throttled') ?? texts.put(r, 'throttled', capWords(id, left, `${Math.round(lost * 100)} % of GPUs throttled (${r.signal.source})`))));
      }
      if (saturated) {
        noSpill = true;
        reasons.push((texts.get(r, 'saturated') ?? texts.put(r, 'saturated', `${id}: saturated (${waiting} requests waiting, KV cache at ${Math.round(kv * 100)} %, ${r.signal.source}): takes no spill`)));
      }
    }
  }
  const view: RegionView = { down, refuse: refuse || op.refuse, gridRaw, grid, share: round(acc.share), noSpill, reasons };
  if (ttlCap !== undefined) view.ttlCap = ttlCap;
  return view;
}

/**
 * A region's step from its view: `share` for every home; `homes` where a home differs —
 * static config weights w[home][region] multiply the share, and a saturated region (no
 * spill) has share 0 except for its own clients.
 */
function stepOf(id: RegionId, v: RegionView, t: number, sw: StaticWeights): RegionStep {
  const share = v.noSpill ? 0 : v.share;
  const st: RegionStep = { at: t, share, down: v.down, reasons: sw.reason === null ? v.reasons : [...v.reasons, sw.reason] };
  if (v.ttlCap !== undefined) st.ttlCap = v.ttlCap;
  if (v.refuse) st.refuse = true;
  if (!v.noSpill && sw.homes.length === 0) return st;
  const homes: Record<RegionId, number> = {};
  if (v.noSpill && v.share !== share) homes[id] = v.share;
  for (const [home, stat] of sw.homes) {
    const base = v.noSpill && home !== id ? 0 : v.share;
    const w = round(base * stat);
    if (w !== share) homes[home] = w;
    else delete homes[home];
  }
  if (Object.keys(homes).length > 0) st.homes = Object.fromEntries(Object.entries(homes).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  return st;
}

/** A region's static config weights (policy.weights) as stepOf reads them: made once per plan. */
interface StaticWeights {
  /** (home, weight) for every home of the fleet with a weight for this region. */
  homes: [RegionId, number][];
  /** The reason step lists for them, or null when every weight is 1. */
  reason: string | null;
}

function staticWeightsOf(id: RegionId, s: PlannerSettings, ids: ReadonlySet<RegionId>): StaticWeights {
  const homes: [RegionId, number][] = [];
  const words: string[] = [];
  for (const [home, row] of Object.entries(s.staticWeights)) {
    const stat = row[id];
    if (stat === undefined || !ids.has(home)) continue;
    homes.push([home, stat]);
    if (stat !== 1) words.push(`from ${home} ${stat}`);
  }
  return { homes, reason: words.length > 0 ? `${id}: static weights (policy.weights): ${words.sort().join(', ')}` : null };
}

/** Two steps of one region with the same effect and reasons (their `at` aside). */
function sameStep(a: RegionStep, b: RegionStep): boolean {
  if (a.share !== b.share || a.down !== b.down || a.ttlCap !== b.ttlCap || a.refuse !== b.refuse || a.reasons.length !== b.reasons.length) return false;
  for (let i = 0; i < a.reasons.length; i++) if (a.reasons[i] !== b.reasons[i]) return false;
  const ha = a.homes ?? {};
  const hb = b.homes ?? {};
  const ka = Object.keys(ha);
  if (ka.length !== Object.keys(hb).length) return false;
  for (const k of ka) if (ha[k] !== hb[k]) return false;
  return true;
}

/** Closed demand buckets the planner averages over (60 s of 10-second buckets). */
export const DEMAND_WINDOW_BUCKETS = 6;
/** Spill that began this long before a region's load reading is taken to be in it (demand window and cache turnover), ms. */
export const SPILL_SETTLE_MS = 60_000;
/** How many neighbours of a home its spill may go to, nearest first. */
const SPILL_NEIGHBOURS = 3;

/**
 * Measured demand per home in queries/s: the mean of the last DEMAND_WINDOW_BUCKETS closed
 * buckets, where "closed" means older than the newest bucket in the store (other nodes may
 * still be adding to the newest). All names summed: weights are per home, not per name.
 */
export function demandPerHome(rows: DemandBucket[]): Map<RegionId, number> {
  const out = new Map<RegionId, number>();
  if (rows.length === 0) return out;
  const newest = Math.max(...rows.map((r) => r.bucket));
  const closed = [...new Set(rows.filter((r) => r.bucket < newest).map((r) => r.bucket))].sort((a, b) => b - a).slice(0, DEMAND_WINDOW_BUCKETS);
  if (closed.length === 0) return out;
  const use = new Set(closed);
  for (const r of rows) if (use.has(r.bucket)) out.set(r.home, (out.get(r.home) ?? 0) + r.queries);
  for (const [h, q] of out) out.set(h, q / (closed.length * 10));
  return out;
}

/**
 * Spill limits (DESIGN.md "TTLs and draining": spill goes only where the receiving region
 * has headroom; what no region can take is reported as unplaced demand). From the views of
 * every region at `t` and measured demand D (q/s per home):
 * - a home h sends D_h × (1 − share_h) onward (all of D_h when it is down);
 * - a region n serving `S_n` (its own admitted demand D_n × share_n, plus spill from homes
 *   spilling since SPILL_SETTLE_MS before its load reading) at KV-cache use u_n can take
 *   `headroom_n = S_n / u_n − D_n × share_n` of spill (load grows with the demand it serves);
 *   without a load reading or any demand served, its headroom is not known and its admission
 *   is not limited;
 * - homes (in id order) place their spill on their nearest SPILL_NEIGHBOURS regions in turn;
 *   where a neighbour cannot take all that reaches it, w[h][n] = what it can take ÷ what
 *   reaches it, and the rest goes on.
 * Returns w[h][n] below 1 per receiving region, and words on unplaced demand per home.
 */
function spillLimits(
  s: PlannerSettings,
  views: Map<RegionId, RegionView>,
  util: Map<RegionId, number>,
  demand: Map<RegionId, number>,
  /** When each home began spilling (its share fell below 1 or it went down), ms epoch. */
  spillSince: Map<RegionId, number>,
  /** observedAt of the load reading behind util, per region. */
  loadAt: Map<RegionId, number>,
): { limits: Map<RegionId, Record<RegionId, number>>; reasons: Map<RegionId, string[]>; unplaced: Map<RegionId, number> } {
  const limits = new Map<RegionId, Record<RegionId, number>>();
  const reasons = new Map<RegionId, string[]>();
  const unplaced = new Map<RegionId, number>();
  const located = s.regions.filter((r) => r.location !== undefined) as (PlannerRegion & { location: LatLon })[];
  if (demand.size === 0 || located.length < 2) return { limits, reasons, unplaced };
  const homes = [...demand.keys()].filter((h) => views.has(h)).sort();
  const neighboursOf = new Map<RegionId, RegionId[]>();
  for (const h of homes) {
    const home = located.find((r) => r.id === h);
    if (!home) continue;
    neighboursOf.set(
      h,
      rankRegions(home.location, located.map((r) => ({ id: r.id, location: r.location, bias: r.bias ?? 0 })))
        .map((x) => x.id)
        .filter((id) => id !== h)
        .slice(0, SPILL_NEIGHBOURS),
    );
  }
  // What each region serves: its own clients it admits, plus the spill that reaches it from
  // homes that have been spilling since before its load reading by SPILL_SETTLE_MS (so the
  // reading u includes that load). Its capacity is served ÷ u, and the room left for spill
  // is that less its own admitted clients. Spill newer than the reading is not in u yet.
  const reaching = new Map<RegionId, number>();
  for (const h of homes) {
    const v = views.get(h)!;
    let left = (demand.get(h) ?? 0) * (v.down ? 1 : 1 - v.share);
    const since = spillSince.get(h) ?? Infinity;
    for (const n of neighboursOf.get(h) ?? []) {
      const vn = views.get(n)!;
      if (vn.down || vn.noSpill || left <= 1e-9) continue;
      if ((loadAt.get(n) ?? -Infinity) >= since + SPILL_SETTLE_MS) reaching.set(n, (reaching.get(n) ?? 0) + left * vn.share);
      left -= left * vn.share;
    }
  }
  const headroom = new Map<RegionId, number>();
  for (const r of located) {
    const v = views.get(r.id)!;
    const u = util.get(r.id);
    const ownServed = (demand.get(r.id) ?? 0) * (v.down ? 0 : v.share);
    const served = ownServed + (reaching.get(r.id) ?? 0);
    if (u === undefined || u <= 0 || served <= 0) continue;
    headroom.set(r.id, v.down ? 0 : Math.max(0, served / u - ownServed));
  }
  for (const h of homes) {
    const v = views.get(h)!;
    const home = located.find((r) => r.id === h);
    if (!home) continue;
    let left = (demand.get(h) ?? 0) * (v.down ? 1 : 1 - v.share);
    if (left <= 1e-9) continue;
    const sent = left;
    const neighbours = neighboursOf.get(h) ?? [];
    for (const n of neighbours) {
      const vn = views.get(n)!;
      if (vn.down || vn.noSpill) continue;
      const reach = left * vn.share;
      if (reach <= 1e-9) continue;
      const room = headroom.get(n);
      if (room === undefined) {
        left -= reach;
        continue;
      }
      const take = Math.min(reach, room);
      headroom.set(n, room - take);
      if (take < reach) (limits.get(n) ?? limits.set(n, {}).get(n)!)[h] = round(take / reach);
      left -= take;
    }
    if (left > 1e-6) {
      unplaced.set(h, Math.round(left * 1000) / 1000);
      const words = `${h}: ${left.toFixed(1)} of ${sent.toFixed(1)} q/s of spill could not be placed on ${neighbours.join(', ')} (no headroom); those clients get whenAllDown's answer or stay`;
      (reasons.get(h) ?? reasons.set(h, []).get(h)!).push(words);
    }
  }
  return { limits, reasons, unplaced };
}

/**
 * Per home region h, a region g to try first when: g is within carbonBandKm of h (the same
 * latency band), g is up with its full share and takes spill, h is not cleaner, and g's grid
 * is clearly cleaner — by fresh `carbon` facts, comparing gCO2/kWh when both have it (g at
 * least carbonMinGain lower, relative), else percentiles (at least carbonMinGain × 100 points
 * lower). Undefined when no home has such a region.
 */
function carbonPreferences(
  s: PlannerSettings,
  recsBy: Map<RegionId, SignalRecord[]>,
  viewsAt: () => Map<RegionId, RegionView>,
  t: number,
): Record<RegionId, { region: RegionId; reason: string }> | undefined {
  if (s.carbonBandKm <= 0) return undefined;
  const carbon = new Map<RegionId, { g?: number; p?: number }>();
  for (const [id, recs] of recsBy) {
    for (const r of recs) {
      if (r.signal.kind !== 'carbon' || phaseAt(r, t, s.stale.carbon) === 'stale') continue;
      const v = r.signal.value as { gPerKWh?: number; percentile?: number };
      const c = carbon.get(id) ?? {};
      if (v.gPerKWh !== undefined) c.g = Math.min(c.g ?? Infinity, v.gPerKWh);
      if (v.percentile !== undefined) c.p = Math.min(c.p ?? Infinity, v.percentile);
      carbon.set(id, c);
    }
  }
  if (carbon.size < 2) return undefined;
  const out: Record<RegionId, { region: RegionId; reason: string }> = {};
  const located = s.regions.filter((r) => r.location !== undefined) as (PlannerRegion & { location: LatLon })[];
  for (const h of located) {
    const ch = carbon.get(h.id);
    if (!ch) continue;
    let best: { id: RegionId; why: string; score: number } | undefined;
    for (const g of located) {
      if (g.id === h.id) continue;
      const cg = carbon.get(g.id);
      if (!cg || greatCircleKm(h.location, g.location) > s.carbonBandKm) continue;
      const v = viewsAt().get(g.id)!;
      if (v.down || v.share < 1 || v.noSpill) continue;
      let score: number | undefined;
      let why = '';
      if (ch.g !== undefined && cg.g !== undefined && cg.g <= ch.g * (1 - s.carbonMinGain)) {
        score = cg.g / Math.max(ch.g, 1e-9);
        why = `${Math.round(cg.g)} against ${Math.round(ch.g)} gCO2/kWh`;
      } else if ((ch.g === undefined || cg.g === undefined) && ch.p !== undefined && cg.p !== undefined && cg.p <= ch.p - s.carbonMinGain * 100) {
        score = cg.p / 100 - ch.p / 100;
        why = `carbon percentile ${Math.round(cg.p)} against ${Math.round(ch.p)}`;
      }
      if (score !== undefined && (!best || score < best.score || (score === best.score && g.id < best.id))) best = { id: g.id, why, score };
    }
    if (best) out[h.id] = { region: best.id, reason: `carbon tie-break: ${best.id} is within ${s.carbonBandKm} km of ${h.id} and cleaner (${best.why})` };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** From `from` on (until the next segment), gridPolicy's share may not go below `floor` (0 = no limit). */
interface FloorSegment {
  from: number;
  floor: number;
  why: string;
}

/**
 * The automation's safety limits (DESIGN.md "TTLs and draining"), over every region's
 * gridPolicy share in time (`grid`: per region, [instant, share] from that instant on):
 * - a region starts draining (its share leaves 1) at most one per minDrainIntervalMs: a
 *   later one is held at 1 until the interval after the previous start has passed;
 * - at no instant may gridPolicy take more than maxAutoShare of a name's capacity (capacity
 *   units, 1 per region without them): regions that started draining earliest keep their
 *   caps, the later ones are held at the share that keeps the name within the limit.
 * An operator's own drain is never limited: it is the confirmation the reasons ask for.
 */
function safetyFloors(s: PlannerSettings, grid: Map<RegionId, [number, number][]>): Map<RegionId, FloorSegment[]> {
  const out = new Map<RegionId, FloorSegment[]>();
  const d = s.drain;
  if (grid.size === 0 || (d.maxAutoShare >= 1 && d.minDrainIntervalMs <= 0)) return out;
  const units = new Map(s.regions.map((r) => [r.id, r.capacityUnits ?? 1]));
  // Regions by index in id order (so index order is the id order the rules break ties by);
  // per-instant state in typed arrays: a 1,000-region fleet has ~1,000 instants here.
  const ids = [...grid.keys()].sort();
  const G = ids.length;
  const unit = ids.map((id) => units.get(id)!);
  const groups = (s.names ?? [{ name: 'the fleet', regions: s.regions.map((r) => r.id) }]).map((n) => {
    const members = new Set(n.regions.filter((r) => units.has(r)));
    return { name: n.name, member: ids.map((id) => members.has(id)), total: [...members].reduce((x, r) => x + units.get(r)!, 0) };
  });
  // Every change of every region's share, in time order.
  const changes: { t: number; i: number; v: number }[] = [];
  ids.forEach((id, i) => {
    for (const [t, v] of grid.get(id)!) changes.push({ t, i, v });
  });
  changes.sort((a, b) => a.t - b.t || a.i - b.i);
  const times: number[] = [];
  for (const c of changes) if (times[times.length - 1] !== c.t) times.push(c.t);
  const cur = new Float64Array(G).fill(1);
  /** When each draining region's drain counts as started (NaN: not draining). */
  const onset = new Float64Array(G).fill(NaN);
  /** Held by the interval rule until (NaN: not held), after which region. */
  const heldUntil = new Float64Array(G).fill(NaN);
  const heldAfter: RegionId[] = new Array<RegionId>(G).fill('');
  // This instant's holds: floor (NaN: none), whether by the interval rule, else which group.
  const floor = new Float64Array(G);
  const byInterval = new Uint8Array(G);
  const byGroup = new Int32Array(G);
  // The hold of each region's last segment (floor NaN: none yet, or not held).
  const lastFloor = new Float64Array(G).fill(NaN);
  const lastUntil = new Float64Array(G);
  const lastGroup = new Int32Array(G);
  let lastStart = -Infinity;
  let lastStartRegion = '';
  const iso = (t: number) => new Date(t).toISOString();
  const insert = (t: number) => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    if (times[lo] !== t) times.splice(lo, 0, t);
  };
  /** Why a region is held (words are made only when a segment starts). */
  const words = (i: number): string =>
    byInterval[i]
      ? `safety: gridPolicy starts draining at most one region per ${d.minDrainIntervalMs / 1000} s without an operator (${heldAfter[i]} started at ${iso(heldUntil[i]! - d.minDrainIntervalMs)}): held until ${iso(heldUntil[i]!)}; an operator can drain it now (gridsteer drain ${ids[i]})`
      : `safety: gridPolicy may take at most ${Math.round(d.maxAutoShare * 100)} % of ${groups[byGroup[i]!]!.name}'s capacity at once without an operator (regions that started draining earlier come first); an operator can drain it (gridsteer drain ${ids[i]})`;
  const order: number[] = [];
  let ci = 0;
  for (let ti = 0; ti < times.length; ti++) {
    const t = times[ti]!;
    while (ci < changes.length && changes[ci]!.t <= t) {
      cur[changes[ci]!.i] = changes[ci]!.v;
      ci++;
    }
    floor.fill(NaN);
    // New drains, in id order at one instant: the interval rule.
    for (let i = 0; i < G; i++) {
      if (cur[i]! >= 1) {
        onset[i] = NaN;
        heldUntil[i] = NaN;
        continue;
      }
      if (Number.isNaN(onset[i]!)) {
        const allowed = d.minDrainIntervalMs > 0 ? Math.max(t, lastStart + d.minDrainIntervalMs) : t;
        onset[i] = allowed;
        if (allowed > t) {
          heldUntil[i] = allowed;
          heldAfter[i] = lastStartRegion;
          insert(allowed);
        }
        lastStart = allowed;
        lastStartRegion = ids[i]!;
      }
      if (t < heldUntil[i]!) {
        floor[i] = 1;
        byInterval[i] = 1;
      }
    }
    // The share of each name's capacity gridPolicy takes.
    if (d.maxAutoShare < 1) {
      for (let gi = 0; gi < groups.length; gi++) {
        const gr = groups[gi]!;
        const allowance = d.maxAutoShare * gr.total;
        let taken = 0;
        order.length = 0;
        for (let i = 0; i < G; i++) if (gr.member[i] && cur[i]! < 1 && Number.isNaN(floor[i]!)) order.push(i);
        order.sort((a, b) => onset[a]! - onset[b]! || a - b);
        for (const i of order) {
          const u = unit[i]!;
          const want = (1 - cur[i]!) * u;
          if (taken + want <= allowance + 1e-9) {
            taken += want;
            continue;
          }
          const f = round(1 - Math.max(0, allowance - taken) / u);
          taken = Math.max(taken, allowance);
          if (Number.isNaN(floor[i]!) || f > floor[i]!) {
            floor[i] = f;
            byInterval[i] = 0;
            byGroup[i] = gi;
          }
        }
      }
    }
    for (let i = 0; i < G; i++) {
      const f = floor[i]!;
      const held = !Number.isNaN(f);
      const until = held && byInterval[i] ? heldUntil[i]! : NaN;
      const group = held && !byInterval[i] ? byGroup[i]! : -1;
      const lf = lastFloor[i]!;
      if (held ? lf === f && Object.is(lastUntil[i], until) && lastGroup[i] === group : Number.isNaN(lf)) continue;
      lastFloor[i] = f;
      lastUntil[i] = until;
      lastGroup[i] = group;
      const id = ids[i]!;
      (out.get(id) ?? out.set(id, []).get(id)!).push({ from: t, floor: held ? f : 0, why: held ? words(i) : '' });
    }
  }
  return out;
}

/** canonical(settings), once per settings object (the service re-plans with the same one). */
const settingsKeys = new WeakMap<PlannerSettings, string>();

/** Canonical JSON (sorted keys) for hashing. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

/**
 * The plan for a snapshot. Deterministic: the same (configHash, snapshot, settings) give the
 * same bytes. Steps start at 0 (everything known now) and follow every instant at which
 * anything changes; consecutive steps with the same weights, caps, down set and reasons merge.
 * Settings are never changed in place (a reload makes new ones): a region whose inputs are
 * those of the last plan made with the same settings object keeps its schedule (RegionMemo,
 * ADR 0009), and the plan is the same as if it had been made again.
 */
export function plan(input: PlanInput): Plan {
  return planCore(input).plan;
}

/**
 * plan() and how many regions' schedules it made (the others were reused from the last plan
 * made with the same settings object, their inputs unchanged): for the benchmark and tests.
 */
export function planCounting(input: PlanInput): { plan: Plan; made: number } {
  const { plan, made } = planCore(input);
  return { plan, made };
}

/**
 * gridPolicy's share per region at `t` as the plan has it (after the safety limits, before
 * any freeze): what `POST /v1/automation/freeze` holds.
 */
export function gridSharesAt(input: PlanInput, t: number): Record<RegionId, number> {
  return planCore({ ...input, snapshot: { ...input.snapshot, overrides: input.snapshot.overrides.filter((o) => o.action !== 'freeze') } }).gridAt(t);
}

/** The cap operator overrides alone leave a region at `t` (1 = none): where an undrain ramps back from. */
export function operatorShareAt(s: PlannerSettings, region: RegionId, overrides: Override[], t: number): number {
  const r = s.regions.find((x) => x.id === region);
  if (!r) return 1;
  return operatorCap(r, overrides.filter((o) => o.region === region), t, s).cap;
}

/**
 * What the last plan made with a settings object made for one region, and from what: its
 * records (compared by content: sameData), its overrides and the fleet's freezes (as JSON),
 * and whether the inputs were frozen. A region's schedule depends on nothing else, so a plan
 * whose inputs for the region are the same reuses it.
 */
class RegionMemo {
  /** The schedule again under the safety pass's floors, for the floor segments (as JSON) it was made for. */
  floored?: { key: string; steps: RegionStep[] };
  readonly steps: RegionStep[];
  readonly grid: [number, number][] | null;
  constructor(
    /** The region's records it was made from (an array of the plan's own, never changed after). */
    private readonly recs: readonly SignalRecord[],
    private readonly ovsKey: string,
    private readonly freezeKey: string,
    private readonly frozen: boolean,
    readonly rr: RegionRecords,
    readonly instants: ReadonlyMap<number, number>,
    made: { steps: RegionStep[]; grid: [number, number][] | null },
  ) {
    this.steps = made.steps;
    this.grid = made.grid;
  }

  sameInputs(recs: readonly SignalRecord[], ovsKey: string, freezeKey: string, frozen: boolean): boolean {
    if (recs.length !== this.recs.length || ovsKey !== this.ovsKey || freezeKey !== this.freezeKey || frozen !== this.frozen) return false;
    for (let i = 0; i < recs.length; i++) if (!sameData(recs[i], this.recs[i])) return false;
    return true;
  }
}

/**
 * Structural equality of JSON-like data (records, as stores hand them out: plain objects,
 * arrays, strings, finite and infinite numbers). Content, not identity: both stores hand out
 * new objects with every snapshot.
 */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    n++;
    if (!Object.hasOwn(y, k) || !sameData(x[k], y[k])) return false;
  }
  for (const k in y) if (Object.hasOwn(y, k)) n--;
  return n === 0;
}

/** Tests only: evaluate every instant (to check that skipping VOTES_ONLY instants changes no plan). */
export const skipOff = { on: false };

/** Per settings object (a reload makes a new one; settings are never changed in place), each region's RegionMemo. */
const regionMemos = new WeakMap<PlannerSettings, Map<RegionId, RegionMemo>>();

/**
 * Why a region is evaluated at an instant (bits): only a health probe's vote changes there
 * (VOTES_ONLY: what the votes decide may stay the same, see healthOutcome), or anything else.
 */
const VOTES_ONLY = 1;
const ANY_CHANGE = 2;

/**
 * What a region's health tally (rr.tally, just filled by tallyHealth) decides in viewAt: down
 * (and which endpoints), and when a slow start began if one can apply. At an instant where
 * only votes change, a view with the same outcome as the instant before is that view again:
 * nothing else viewAt reads changes there (overrides, facts, curves, floors and the other
 * records have instants of their own, and slow-start steps too).
 */
function healthOutcome(h: HealthScratch): string {
  const { probed, down } = tallyCounts(h);
  if (probed > 0 && down === probed) return `down ${downEndpoints(h).join(',')}`;
  const back = cameBackAt(h);
  return Number.isNaN(back) ? 'up' : `up ${back}`;
}

/**
 * The instants at which something happens to a region (it is evaluated at those only), each
 * with why (VOTES_ONLY, ANY_CHANGE): its
 * records' expiries and stale points, slow-start steps, its overrides' ramps and ends, the
 * fleet's freezes, its grid facts' windows and drain curves.
 */
function regionInstants(region: PlannerRegion, recs: readonly SignalRecord[], rr: RegionRecords, ovs: readonly Override[], freezes: readonly Override[], s: PlannerSettings): Map<number, number> {
  const set = new Map<number, number>();
  const at = (t: number, why = ANY_CHANGE) => {
    if (t > 0 && Number.isFinite(t)) set.set(t, (set.get(t) ?? 0) | why);
  };
  for (const r of recs) {
    if (r.fold.kind === 'health' && r.fold.upSince !== undefined && s.slowStartMs > 0) {
      const n = Math.max(1, Math.ceil(s.slowStartMs / s.rampStepMs));
      for (let i = 0; i <= n; i++) at(r.fold.upSince + Math.ceil((i * s.slowStartMs) / n));
    }
    const keep = s.stale[r.signal.kind].keepMs;
    const why = r.signal.kind === 'health.probe' ? VOTES_ONLY : ANY_CHANGE;
    // Past expiresAt a kept value acts as a fresh one; only a grid alert's reason says
    // "(expired, kept)". The stale policy takes over at expiresAt + keepMs.
    if (r.signal.kind === 'grid.alert' || keep === 0) at(r.signal.expiresAt, why);
    if (keep > 0) at(r.signal.expiresAt + keep, why);
  }
  for (const o of freezes) {
    at(o.start);
    if (o.end !== undefined) at(o.end);
  }
  for (const o of ovs) for (const t of overrideInstants(o, region, s)) at(t);
  for (const f of rr.facts) {
    at(f.from);
    at(f.end);
    for (const t of f.curve?.instants ?? []) at(t);
  }
  return set;
}

function planCore(input: PlanInput): { plan: Plan; gridAt: (t: number) => Record<RegionId, number>; made: number } {
  const { snapshot: snap0, settings: s } = input;
  const snapshot: StoreSnapshot = input.frozen
    ? { ...snap0, records: snap0.records.map((r) => ({ ...r, signal: { ...r.signal, expiresAt: Infinity } })) }
    : snap0;
  const ids = new Set(s.regions.map((r) => r.id));
  const regionById = new Map(s.regions.map((r) => [r.id, r]));
  const recsBy = new Map<RegionId, SignalRecord[]>();
  const ovsBy = new Map<RegionId, Override[]>();
  for (const r of s.regions) {
    recsBy.set(r.id, []);
    ovsBy.set(r.id, []);
  }
  let newest = 0;
  for (const r of snapshot.records) {
    const region = r.signal.region;
    if (!ids.has(region) || r.signal.kind === 'demand') continue;
    recsBy.get(region)!.push(r);
    newest = Math.max(newest, r.signal.observedAt);
  }
  // Fleet-wide freezes of automation; every region is re-evaluated where one starts or ends.
  const freezes: Override[] = [];
  for (const o of snapshot.overrides) {
    if (o.region === FLEET && o.action === 'freeze') {
      freezes.push(o);
      newest = Math.max(newest, o.start);
      continue;
    }
    if (!ids.has(o.region)) continue;
    ovsBy.get(o.region)!.push(o);
    newest = Math.max(newest, o.start);
  }
  // Each region's schedule on its own: evaluated at 0 and at each of its instants, a step
  // wherever its view changes. Work and size grow with the changes, not regions × instants.
  // A region whose inputs are those of the last plan made with these settings keeps the
  // schedule that plan made for it (see RegionMemo): a plan after one signal redoes one region.
  const regionsOut: Record<RegionId, RegionStep[]> = {};
  const texts = new Texts();
  const ctx: ViewContext = { freezes, texts };
  const schedule = (region: PlannerRegion, rr: RegionRecords, own: ReadonlyMap<number, number>, c: ViewContext, extra: number[] = []): { steps: RegionStep[]; grid: [number, number][] | null } => {
    const id = region.id;
    let whyAt = own;
    if (extra.length > 0) {
      const m = new Map(own);
      for (const t of extra) m.set(t, ANY_CHANGE);
      whyAt = m;
    }
    const times = new Float64Array(whyAt.size + 1); // [0, ...instants], sorted numerically
    let n = 1;
    for (const t of whyAt.keys()) times[n++] = t;
    times.sort();
    const steps: RegionStep[] = [];
    /** gridPolicy's share at each instant, kept only for regions where it ever falls below 1. */
    let grid: [number, number][] | null = null;
    const ovs = ovsBy.get(id)!;
    const sw = staticWeightsOf(id, s, ids);
    const hp = s.stale['health.probe'];
    let outcome = '';
    for (const t of times) {
      // Only votes change here: if they decide what they decided before, so is the view.
      if (whyAt.get(t) === VOTES_ONLY && !skipOff.on) {
        tallyHealth(rr.health, rr.tally, t, hp);
        const o = healthOutcome(rr.tally);
        if (o === outcome) continue;
      }
      const v = viewAt(region, rr, ovs, t, s, c);
      outcome = healthOutcome(rr.tally);
      if (grid === null && v.gridRaw < 1) grid = [[0, 1]];
      if (grid !== null && grid[grid.length - 1]![1] !== v.gridRaw) grid.push([t, v.gridRaw]);
      const st = stepOf(id, v, t, sw);
      const last = steps[steps.length - 1];
      if (last && sameStep(last, st)) continue;
      steps.push(st);
    }
    return { steps, grid };
  };
  const keep = (id: RegionId, steps: RegionStep[]) => {
    // A region that is fully up throughout needs no schedule at all. The plan gets its own
    // step objects (the spill pass below replaces their homes and reasons; the memo's stay).
    if (!(steps.length === 1 && steps[0]!.share === 1 && !steps[0]!.homes && !steps[0]!.down && steps[0]!.reasons.length === 0)) regionsOut[id] = steps.map((st) => ({ ...st }));
    else delete regionsOut[id];
  };
  let memos = regionMemos.get(s);
  if (!memos) regionMemos.set(s, (memos = new Map()));
  const freezeKey = freezes.length === 0 ? '' : JSON.stringify(freezes);
  const frozen = input.frozen === true;
  const rrBy = new Map<RegionId, RegionRecords>();
  const memoBy = new Map<RegionId, RegionMemo>();
  const gridBy = new Map<RegionId, [number, number][]>();
  let made = 0;
  for (const region of s.regions) {
    const id = region.id;
    const recs = recsBy.get(id)!;
    const ovs = ovsBy.get(id)!;
    const ovsKey = ovs.length === 0 ? '' : JSON.stringify(ovs);
    let m = memos.get(id);
    if (!m || !m.sameInputs(recs, ovsKey, freezeKey, frozen)) {
      made++;
      const rr = splitRecords(recs, region, s);
      const own = regionInstants(region, recs, rr, ovs, freezes, s);
      m = new RegionMemo(recs, ovsKey, freezeKey, frozen, rr, own, schedule(region, rr, own, ctx));
      memos.set(id, m);
    }
    memoBy.set(id, m);
    rrBy.set(id, m.rr);
    keep(id, m.steps);
    if (m.grid) gridBy.set(id, m.grid);
  }
  // Safety limits on gridPolicy (safetyFloors): the regions they hold back are planned again.
  const floors = safetyFloors(s, gridBy);
  const floorCtx = new Map<RegionId, ViewContext>();
  for (const [id, segs] of floors) {
    const c: ViewContext = {
      freezes,
      texts,
      floor: (t) => {
        let cur: FloorSegment | undefined;
        for (const g of segs) if (g.from <= t) cur = g;
        return cur && cur.floor > 0 ? { floor: cur.floor, why: cur.why } : undefined;
      },
    };
    floorCtx.set(id, c);
    const m = memoBy.get(id)!;
    const segsKey = JSON.stringify(segs);
    if (m.floored?.key !== segsKey) {
      m.floored = {
        key: segsKey,
        steps: schedule(
          regionById.get(id)!,
          m.rr,
          m.instants,
          c,
          segs.map((g) => g.from),
        ).steps,
      };
    }
    keep(id, m.floored.steps);
  }

  // Every region's view at the newest input instant, worked out once (only if needed) for the
  // carbon tie-break and the spill limits, which both look at "now".
  let atRef: Map<RegionId, RegionView> | undefined;
  const viewsAtRef = (): Map<RegionId, RegionView> =>
    (atRef ??= new Map(s.regions.map((region) => [region.id, viewAt(region, rrBy.get(region.id)!, ovsBy.get(region.id)!, newest, s, floorCtx.get(region.id) ?? ctx)])));

  // Carbon tie-break, at the newest input instant: per home, a cleaner healthy region of its
  // latency band (a soft fact: never over health, drains, caps or power).
  const prefer = carbonPreferences(s, recsBy, viewsAtRef, newest);

  // Spill limits from measured demand, at the newest input instant (see spillLimits); plans
  // are made again every 10 s with fresh demand, so the limits follow it.
  const demand = demandPerHome(snapshot.demand);
  let spillKey = '';
  let unplaced: Record<RegionId, number> | undefined;
  if (demand.size > 0) {
    const tRef = newest;
    const views = viewsAtRef();
    const util = new Map<RegionId, number>();
    const loadAt = new Map<RegionId, number>();
    for (const region of s.regions) {
      for (const r of rrBy.get(region.id)!.compute) {
        if (r.signal.kind !== 'load.metrics' || phaseAt(r, tRef, s.stale['load.metrics']) === 'stale') continue;
        const v = r.signal.value as LoadMetrics;
        const u = v.kvCacheUse ?? 0;
        if (u > (util.get(region.id) ?? 0)) {
          util.set(region.id, u);
          loadAt.set(region.id, r.signal.observedAt);
        }
      }
    }
    // When each home began spilling: the first of the run of steps, up to tRef, in which it
    // does not take all its clients.
    const spillSince = new Map<RegionId, number>();
    for (const region of s.regions) {
      const steps = regionsOut[region.id] ?? [];
      let since: number | undefined;
      for (const st of steps) {
        if (st.at > tRef) break;
        const spilling = st.down || (st.homes?.[region.id] ?? st.share) < 1;
        since = spilling ? (since ?? st.at) : undefined;
      }
      if (since !== undefined) spillSince.set(region.id, since);
    }
    const { limits, reasons, unplaced: lost } = spillLimits(s, views, util, demand, spillSince, loadAt);
    if (lost.size > 0) unplaced = Object.fromEntries([...lost.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    // What demand changed in the plan (not the raw counts) goes into the version.
    if (limits.size > 0 || reasons.size > 0) spillKey = JSON.stringify([[...limits.entries()].sort(), [...reasons.entries()].sort()]);
    for (const region of s.regions) {
      const lim = limits.get(region.id);
      const why = reasons.get(region.id);
      if (!lim && !why) continue;
      const steps = (regionsOut[region.id] ??= [{ at: 0, share: 1, down: false, reasons: [] }]);
      for (const st of steps) {
        if (lim) {
          const homes = { ...(st.homes ?? {}) };
          for (const [h, w] of Object.entries(lim)) homes[h] = Math.min(homes[h] ?? st.share, round(w * st.share));
          st.homes = Object.fromEntries(Object.entries(homes).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
          st.reasons = [...st.reasons, `${region.id}: spill limited by headroom: ${Object.entries(lim).map(([h, w]) => `from ${h} ${w}`).join(', ')}`];
        }
        if (why) st.reasons = [...st.reasons, ...why];
      }
    }
  }

  // The inputs: a stored record is identified by its id and observedAt (latest wins, and the
  // store never replaces a record with an older one), so those stand for its content;
  // overrides are hashed whole, settings with sorted keys.
  const h = createHash('sha256').update(`${input.configHash}\n${snapshot.revision}\n${input.frozen ? 'frozen\n' : ''}`);
  // One flat string (joined, not a rope of 2 × records pieces that hashing must flatten).
  const ids4hash = snapshot.records.map((r) => `${r.id}@${r.signal.observedAt}`);
  h.update(ids4hash.length > 0 ? `${ids4hash.join('\n')}\n` : '').update(JSON.stringify(snapshot.overrides));
  h.update(spillKey);
  h.update(JSON.stringify(prefer ?? null));
  let sk = settingsKeys.get(s);
  if (sk === undefined) settingsKeys.set(s, (sk = canonical(s)));
  const version = h.update(sk).digest('hex').slice(0, 16);
  const out: Plan = { version, configHash: input.configHash, storeRevision: snapshot.revision, computedAt: newest, regions: regionsOut, ...(prefer ? { prefer } : {}), ...(unplaced ? { unplaced } : {}) };
  const gridAt = (t: number) =>
    Object.fromEntries(s.regions.map((region) => [region.id, viewAt(region, rrBy.get(region.id)!, ovsBy.get(region.id)!, t, s, floorCtx.get(region.id) ?? ctx).grid]));
  return { plan: out, gridAt, made };
}
