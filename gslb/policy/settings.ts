/**
 * What the planner is told (PlannerSettings, per region PlannerRegion) and the defaults it falls back on; the stale phases of a record.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { LatLon } from '../geo/distance.js';
import type { RegionId, SignalKind } from '../model/types.js';
import type { SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import type { PlannerWindow } from '../model/windows.js';
import { Value } from '@sinclair/typebox/value';
import { PolicySchema, type GridRule, type PolicyConfig } from '../model/policy.js';

export type { StaleThen } from '../model/kinds/kind.js';
import type { StaleThen } from '../model/kinds/kind.js';

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
  /** The least draw at which the region serves at all, W: an import limit leaving less is a physical loss (default 0). */
  minServingW?: number;
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
  /** Physical loss (ADR 0014): which source prefixes may declare which regions dark, and the bound on one source. */
  gridLoss: { bindings: Record<string, RegionId[]>; maxTrustedLossShare: number };
  /** A region whose model servers have more requests waiting, or more KV cache in use, takes no spill (the endpoint picker's rule). */
  /**
   * Saturation (queueWaiting, kvCacheUse): a saturated region takes no spill. `throttledFactor`:
   * a region with throttled GPUs that is also saturated is capped at this share of what the
   * throttle leaves, until it is not saturated (simulator finding 5, docs/simulation.md).
   */
  saturation: { queueWaiting: number; kvCacheUse: number; throttledFactor: number; spillMargin: number };
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
  /** Recurring windows from the configuration (rules/windows.ts), parsed at the edge; absent = none. */
  windows?: PlannerWindow[];
}

/**
 * docs/design.md "The drain curve": for an event at T capping a region at f, the weight reaches
 * f at T − S − max(Tmin, F) − m, the ramp starts R earlier in steps max(Tmin, F) apart, and
 * answers' TTLs start shrinking lead = max(R, TTL0 − max(Tmin, F)) + max(Tmin, F) + S + m
 * before T: the shrink overlaps the ramp (ADR 0016; decide bounds every TTL by the next
 * step). After the end E the cap holds for `holdMs`
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
   * With more notice than the lead needs, S of a grid obligation to take nothing grows to use it, up to this (ms):
   * long streams then end on their own before T instead of being cut. Equal to
   * sessionAllowanceMs = fixed S.
   */
  sessionAllowanceMaxMs: number;
  /** The same for every other curve (a grid cap above 0, a window, an operator's deadline), ms; at most sessionAllowanceMaxMs. */
  discretionarySessionAllowanceMaxMs: number;
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

/** The `policy:` section with every default filled in (from the config schema: declared once). */
const DEFAULT_POLICY: PolicyConfig = Value.Default(PolicySchema, {}) as PolicyConfig;

/** TTL0 when no steered names are given: the config schema's default TTL of a name, s. */
const DEFAULT_TTL0_S = 30;

/**
 * The planner settings for a `policy:` section (validated, defaults filled in), the fleet,
 * and the steered names (absent = one name served by every region, TTL0 = DEFAULT_TTL0_S).
 * The one mapping from configuration to settings: the server (gslb/control/setup.ts) and,
 * through defaultSettings(), the simulator and the benchmarks use it.
 */
export function settingsFromPolicy(p: PolicyConfig, regions: PlannerRegion[], names?: { name: string; regions: RegionId[]; ttl: number }[]): PlannerSettings {
  return {
    ...(names ? { names: names.map((n) => ({ name: n.name, regions: n.regions })) } : {}),
    regions,
    staticWeights: structuredClone(p.weights) as PlannerSettings['staticWeights'],
    stale: structuredClone(p.stale) as unknown as PlannerSettings['stale'],
    degradedShare: p.degradedShare,
    gridRules: structuredClone(p.grid.rules),
    gridMode: p.grid.mode,
    gridShadow: [...p.grid.shadow],
    gridTrust: { ...p.grid.trust },
    gridCapFloor: p.grid.capFloor,
    gridLoss: { bindings: structuredClone(p.grid.loss.bindings), maxTrustedLossShare: p.grid.loss.maxTrustedLossShare },
    saturation: { ...p.saturation },
    rampStepMs: p.rampStepMs,
    slowStartMs: p.health.slowStartMs,
    carbonBandKm: p.carbon.bandKm,
    carbonMinGain: p.carbon.minGain,
    drain: {
      ttl0S: names ? Math.max(0, ...names.map((n) => n.ttl)) : DEFAULT_TTL0_S,
      minTtlS: p.minTtl,
      resolverFloorS: p.resolverMinTtl,
      ...p.drain,
    },
  };
}

/** The drain settings of the defaults (TTL0 of DEFAULT_TTL0_S). */
export const DEFAULT_DRAIN: DrainSettings = settingsFromPolicy(DEFAULT_POLICY, []).drain;

/** Each kind's default stale policy (the config schema's, built from the kinds' registry). */
export const DEFAULT_STALE: Record<SignalKind, StalePolicy> = settingsFromPolicy(DEFAULT_POLICY, []).stale;

/** Planner settings with the configuration's defaults (docs/configuration.md), for `regions`. */
export function defaultSettings(regions: PlannerRegion[]): PlannerSettings {
  return settingsFromPolicy(DEFAULT_POLICY, regions);
}

export interface PlanInput {
  configHash: string;
  snapshot: StoreSnapshot;
  settings: PlannerSettings;
  /**
   * Fail static (docs/design.md "Many nodes"): the store is unreachable, so no signal can be
   * refreshed; every signal is taken as known until the store is back (no expiry or stale
   * policy steps). Grid events, override ends and ramps keep their schedule.
   */
  frozen?: boolean;
  /**
   * Evaluate every instant, also those where only a probe's vote changes (the planner skips
   * those when the votes decide as before). The plan is the same by contract, only slower:
   * a reference to check that shortcut against (gslb/policy/planner-memo.test.ts). Not part
   * of the plan's version.
   */
  exhaustive?: boolean;
  /**
   * The horizon epoch E = floor(now / HORIZON_MS) (rules/windows.ts): recurring windows are
   * expanded over E's horizon. The control loop passes it and plans again when it advances;
   * the planner never reads a clock. Absent: windows do not act. Part of the plan's version
   * when any window exists.
   */
  horizonEpoch?: number;
}

/** Rounds a share to 4 decimals so plans stay small and stable. */
export function round(x: number): number {
  return Math.round(Math.min(1, Math.max(0, x)) * 10000) / 10000;
}

type Phase = 'fresh' | 'kept' | 'stale';

export function phaseAt(r: SignalRecord, t: number, p: StalePolicy): Phase {
  if (t < r.signal.expiresAt) return 'fresh';
  if (t < r.signal.expiresAt + p.keepMs) return 'kept';
  return 'stale';
}
