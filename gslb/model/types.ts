/**
 * The shared types every part of GridSteer builds on (fixed by docs/adr/0001-shared-types.md).
 *
 * Time base everywhere: milliseconds since the Unix epoch (UTC), as numbers.
 * Power in watts (W), energy in watt-hours (Wh), fractions in [0, 1].
 * None of these types carries behaviour: they are plain, JSON-serialisable data, so they
 * cross process boundaries (primary → workers) and the store unchanged.
 */

/** Region identifier: the `id` of a file in regions/ (lowercase, [a-z0-9-]). */
export type RegionId = string;

/** The kinds of fact a collector may emit (dotted names, see CONVENTIONS.md). */
export type SignalKind =
  | 'health.probe'
  | 'load.metrics'
  | 'capacity'
  | 'power.budget'
  | 'grid.event'
  | 'grid.alert'
  | 'carbon'
  | 'demand';

/**
 * A fact about one region at one time. Collectors emit these and nothing else.
 * The latest signal per (region, kind, source, key) by `observedAt` wins.
 * After `expiresAt` the fact is no longer known: the kind's stale policy applies
 * (never a silent default).
 */
export interface Signal<V = unknown> {
  region: RegionId;
  kind: SignalKind;
  /** Who observed it: collector name plus instance, e.g. `health/node-a`. */
  source: string;
  /** Tells apart facts of one source about one region, e.g. an endpoint or a meter id. */
  key: string;
  /** When the fact was true at its source (ms epoch). Rejected if > now + 5 s. */
  observedAt: number;
  /** When the fact stops being known (ms epoch), > observedAt. */
  expiresAt: number;
  /** Kind-specific payload; validated per kind by the state layer. */
  value: V;
}

/** What an operator (or automation acting for one) asks of a region. */
export type OverrideAction = 'drain' | 'undrain' | 'force-up' | 'force-down' | 'weight' | 'freeze';

/** The region of a fleet-wide override (`freeze`). */
export const FLEET = '*';

/**
 * An operator override: first-class state that survives restarts (CONVENTIONS.md habit 3).
 * Precedence (DESIGN.md): force-down > health down > drain/cap > grid obligations > power
 * budget > compute capacity > carbon. `force-up` overrides health alone and must have `end`.
 */
export interface Override {
  /** Unique id (assigned by the store). */
  id: string;
  region: RegionId;
  action: OverrideAction;
  /**
   * For `drain` the cap to reach (0 = full drain, 0.3 = keep 30 %); for `weight` the weight;
   * for `undrain` the cap it restores from (the drain's level when it was ended); else absent.
   */
  value?: number;
  /** Length of the weight ramp in ms (0 = at once). */
  ramp: number;
  /**
   * `drain` only: the deadline (ms epoch) by which the region must be drained — caches turned
   * over and sessions given their allowance, as for a grid event starting then (DESIGN.md
   * "TTLs and draining"); the ramp is placed before it. Absent: the ramp starts at `start`.
   */
  by?: number;
  /** `freeze` only: per region, the automated cap in force when automation was frozen (held while it lasts). */
  hold?: Record<RegionId, number>;
  /** Who: a token's subject or `automation/<rule>`. */
  actor: string;
  /** Why, in words; mandatory and shown in explain, audit and the dashboard. */
  reason: string;
  /** In force from (ms epoch). */
  start: number;
  /** In force until (ms epoch); mandatory for `force-up`. */
  end?: number;
}

/**
 * One step of one region's schedule (ADR 0006): from `at` on, until the region's next step,
 * this holds for clients that would be sent to the region.
 */
export interface RegionStep {
  /** ms epoch at which this step takes effect. */
  at: number;
  /** Admission weight w[home][region] in [0, 1] for every home not listed in `homes`. */
  share: number;
  /** Homes whose weight into this region differs from `share` (static config weights, a saturated region's own clients). */
  homes?: Record<RegionId, number>;
  /** The region must not receive traffic at all (down or forced down). */
  down: boolean;
  /** Hard cap on the TTL (seconds) of answers while this step holds; absent = no cap. */
  ttlCap?: number;
  /**
   * From this step the region's gateway should refuse new streams (a grid event or a drain
   * deadline has begun and the region is to take nothing): the drain hook says so.
   */
  refuse?: boolean;
  /** Why, in words (signal expiry, ramp step k/n of a drain, a grid event …). */
  reasons: string[];
}

/**
 * The planner's output: pure function of (configHash, storeRevision, state).
 * `version` is the hash of those inputs, so nodes with the same revision hold
 * byte-identical plans and switch steps at the same instants.
 */
export interface Plan {
  version: string;
  configHash: string;
  storeRevision: number;
  /** The newest input instant (ms epoch) — informational only, never read by decide. */
  computedAt: number;
  /**
   * Per region, its schedule ordered by `at` (the step in force at `now` is the last with
   * at ≤ now). A region without an entry, or before its first step, takes every client:
   * weight 1, up, no TTL cap.
   */
  regions: Record<RegionId, RegionStep[]>;
  /**
   * Carbon tie-break (ADR 0006): for clients whose home is the key, try this region first —
   * a healthy, uncapped region within the latency band of the home whose grid is clearly
   * cleaner. Order only: weights, health and caps still decide admission.
   */
  prefer?: Record<RegionId, { region: RegionId; reason: string }>;
  /** Measured demand (queries/s per home) that no region with headroom could take; absent = none. */
  unplaced?: Record<RegionId, number>;
}

/** One region's addresses for an answer. */
export interface AnswerAddresses {
  v4: string[];
  v6: string[];
}

/**
 * What `decide` returns for one (client cell, subnet, name, qtype, now).
 * `region` is null when nothing was admitted and whenAllDown gave `empty` or `servfail`.
 */
export interface Answer {
  region: RegionId | null;
  /** Addresses of the answer's qtype (A → IPv4, AAAA → IPv6). */
  addresses: string[];
  /** Seconds; never below the policy's minimum TTL. */
  ttl: number;
  /** ECS scope prefix length to return (0 = valid for every client). */
  ecsScope: number;
  /** `servfail` when whenAllDown says so, else `answer` (possibly empty = NODATA). */
  rcode: 'answer' | 'servfail';
  /** Why, in order: each step of the decision in words (shown by explain). */
  reasons: string[];
  /** Why, as one of a few classes (DECISION_CLASSES): a metric label, also on the hot path. */
  decision: DecisionClass;
}

/**
 * The classes of a steered decision (gridsteer_dns_decisions_total{reason}), in this order:
 * - `nearest`: the first region of the client's ranking that serves the name admitted it;
 * - `preferred`: the plan's carbon tie-break region, tried first, admitted it;
 * - `failover`: a region ranked before the answer was down;
 * - `spill`: a region ranked before the answer was up but did not admit the client (a weight
 *   below 1: a drain, a cap, static weights, a saturated region), none was down;
 * - `when_all_down`: no region admitted the client and whenAllDown answered (nearest, all, empty);
 * - `servfail`: no region admitted the client and whenAllDown is servfail.
 */
export const DECISION_CLASSES = ['nearest', 'preferred', 'failover', 'spill', 'when_all_down', 'servfail'] as const;
export type DecisionClass = (typeof DECISION_CLASSES)[number];
