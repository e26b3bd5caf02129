/**
 * The shared types every part of GridSteer builds on (fixed by docs/adr/0001-shared-types.md).
 *
 * Time base everywhere: milliseconds since the Unix epoch (UTC), as numbers.
 * Power in watts (W), energy in watt-hours (Wh), fractions in [0, 1].
 * None of these types carries behaviour: they are plain, JSON-serialisable data, so they
 * cross process boundaries (primary → workers) and the store unchanged. The shapes the
 * API returns (Override, RegionStep, Plan) are TypeBox schemas with their static types, so
 * the HTTP layer describes and serialises them from this one declaration.
 */
import { Type, type Static } from '@sinclair/typebox';
import { PlannerWindowSchema, WindowOccurrenceSchema } from './windows.js';

/** Region identifier: the `id` of a file in regions/ (lowercase, [a-z0-9-]). */
export type RegionId = string;

/** The kinds of fact a collector may emit: the names of the kinds' registry (gslb/model/kinds/index.ts). */
export type { SignalKind } from './kinds/index.js';
import type { SignalKind } from './kinds/index.js';

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
export const OVERRIDE_ACTIONS = ['drain', 'undrain', 'force-up', 'force-down', 'weight', 'freeze', 'distrust', 'window', 'window-skip'] as const;
export type OverrideAction = (typeof OVERRIDE_ACTIONS)[number];

/** The region of a fleet-wide override (`freeze`, `distrust`). */
export const FLEET = '*';

/**
 * An operator override: first-class state that survives restarts (docs/conventions.md "Operator overrides are state").
 * Precedence (docs/design.md "Rule order"): force-down > health down > drain/cap > grid obligations > power
 * budget > compute capacity > carbon. `force-up` overrides health alone and must have `end`.
 * Declared once here; the API's responses use this schema.
 */
export const OverrideSchema = Type.Object({
  id: Type.String({ description: 'unique id (assigned by the store)' }),
  region: Type.String({ description: `a region id, or ${FLEET} for a fleet-wide override (freeze, distrust)` }),
  action: Type.Union(
    OVERRIDE_ACTIONS.map((a) => Type.Literal(a)),
    { description: 'drain, undrain, force-up, force-down, weight or freeze; distrust (a grid source\'s facts of physical loss are no longer trusted); window (a recurring window added through the API) and window-skip (one occurrence skipped); freeze, distrust, window and window-skip are fleet-wide' },
  ),
  value: Type.Optional(
    Type.Number({ description: "drain: the cap to reach (0 = full drain, 0.3 = keep 30 %); weight: the weight; undrain: the cap it restores from (the drain's level when it was ended); else absent" }),
  ),
  ramp: Type.Integer({ description: 'ramp length, ms (0 = at once)' }),
  by: Type.Optional(
    Type.Integer({ description: 'drain: the deadline, ms epoch, by which the region must be drained (caches turned over, sessions given their allowance); the ramp is placed before it. Absent: the ramp starts at start' }),
  ),
  hold: Type.Optional(Type.Record(Type.String(), Type.Number(), { description: 'freeze: the gridPolicy share held per region (the automated cap in force when automation was frozen)' })),
  source: Type.Optional(Type.String({ description: 'distrust: the source prefix whose facts of physical loss are no longer trusted' })),
  principal: Type.Optional(Type.String({ description: 'distrust: the principal (token:<name>, collector:<name>) whose claims of physical loss are no longer trusted, whatever source they name (ADR 0021)' })),
  window: Type.Optional(PlannerWindowSchema),
  skip: Type.Optional(Type.Object({ window: Type.String(), at: Type.Integer({ description: "the skipped occurrence's start, ms epoch" }) }, { additionalProperties: false, description: 'window-skip: the occurrence it skips' })),
  actor: Type.String({ description: "who: a token's subject or automation/<rule>" }),
  reason: Type.String({ description: 'why, in words; shown in explain, audit and the dashboard' }),
  start: Type.Integer({ description: 'in force from, ms epoch' }),
  end: Type.Optional(Type.Integer({ description: 'in force until, ms epoch; mandatory for force-up' })),
});
export type Override = Static<typeof OverrideSchema>;

/**
 * One step of one region's schedule (ADR 0006): from `at` on, until the region's next step,
 * this holds for clients that would be sent to the region.
 */
export const RegionStepSchema = Type.Object({
  at: Type.Integer({ description: 'ms epoch from which the step holds' }),
  share: Type.Number({ description: 'admission weight w[home][region] in [0, 1] for every home not in homes' }),
  homes: Type.Optional(Type.Record(Type.String(), Type.Number(), { description: "homes whose weight into this region differs from share (static config weights, a saturated region's own clients)" })),
  down: Type.Boolean({ description: 'the region must not receive traffic at all (down or forced down)' }),
  ttlCap: Type.Optional(Type.Number({ description: 'hard cap on the TTL (seconds) of answers while this step holds; absent = no cap' })),
  refuse: Type.Optional(Type.Boolean({ description: "the gateway should refuse new connections and streams from this step (no cached answer may still name the region: T − S of a grid drain, or a drain deadline has passed): the drain hook says so" })),
  goawayBy: Type.Optional(
    Type.Integer({ description: 'ms epoch: from this step the gateway should send GOAWAY to every connection progressively, so that each (the long-lived ones included) has received it by then; the weight is 0 and refuse follows at goawayBy' }),
  ),
  reasons: Type.Array(Type.String(), { description: 'why, in words (signal expiry, ramp step k/n of a drain, a grid event …)' }),
});
export type RegionStep = Static<typeof RegionStepSchema>;

/** An alert of the plan (ADR 0014): derived from its inputs like the rest of the plan, so every node has the same. */
export const PlanAlertSchema = Type.Object({
  id: Type.String({ description: 'stable while the same condition holds: kind and the events it names' }),
  severity: Type.Union([Type.Literal('critical'), Type.Literal('warning')]),
  kind: Type.Union(
    [Type.Literal('trusted-loss-over-limit'), Type.Literal('loss-waiting'), Type.Literal('held-by-safety'), Type.Literal('loss-during-freeze'), Type.Literal('loss-untrusted'), Type.Literal('records-quarantined')],
    {
      description:
        'trusted-loss-over-limit: a trusted physical loss is planned beyond the automation safety limits; loss-waiting: a loss beyond one source\'s bound waits for a second source or an operator\'s drain; held-by-safety: a cap or untrusted loss is held by the safety limits and waits for an operator; loss-during-freeze: a trusted loss acts although automation is frozen; loss-untrusted: a claim of physical loss not trusted (source not bound to the region, trusted to cap only, distrusted, stale or replayed); records-quarantined: stored records are held out of planning because planning with them failed or they could not be read (ADR 0020)',
    },
  ),
  regions: Type.Array(Type.String()),
  events: Type.Array(Type.String({ description: 'the grid facts, in words' })),
  at: Type.Integer({ description: 'ms epoch: when it matters (the event start T)' }),
  actBy: Type.Optional(Type.Integer({ description: 'ms epoch: the last instant an operator can act for the proactive drain to hold (T − the drain lead)' })),
  message: Type.String(),
});
export type PlanAlert = Static<typeof PlanAlertSchema>;

/**
 * A trust decision on one claim of physical loss (ADR 0014, 0021), derived from the inputs
 * like the rest of the plan: what the loss pass made of it, and who made the claim. The node
 * leading the `trust-audit` lease writes each change to the audit log.
 */
export const TrustDecisionSchema = Type.Object({
  region: Type.String(),
  source: Type.String(),
  principal: Type.String({ description: 'who wrote the claim: token:<name>, collector:<name>, or source:<source> for a record of an earlier build' }),
  eventId: Type.String(),
  status: Type.Union([Type.Literal('trusted'), Type.Literal('waiting'), Type.Literal('untrusted'), Type.Literal('distrusted'), Type.Literal('cancelled')], {
    description: 'trusted: planned dark whatever the safety limits say; waiting: beyond its principal\'s bound, waits for a second principal or an operator; untrusted / distrusted: a cap like any other; cancelled: its principal cancelled it, traffic restores',
  }),
  why: Type.String(),
  at: Type.Integer({ description: 'ms epoch: the event start T' }),
});
export type TrustDecision = Static<typeof TrustDecisionSchema>;

/**
 * The planner's output: pure function of (configHash, storeRevision, state).
 * `version` is the hash of those inputs, so nodes with the same revision hold
 * byte-identical plans and switch steps at the same instants.
 */
export const PlanSchema = Type.Object({
  version: Type.String({ description: "the hash of the plan's inputs" }),
  configHash: Type.String(),
  storeRevision: Type.Integer(),
  computedAt: Type.Integer({ description: 'the newest input instant (ms epoch); informational only, never read by decide' }),
  regions: Type.Record(Type.String(), Type.Array(RegionStepSchema), {
    description: 'per region, its schedule ordered by at (ADR 0006); the step in force at now is the last with at ≤ now. A region without an entry, or before its first step, takes every client: weight 1, up, no TTL cap',
  }),
  prefer: Type.Optional(
    Type.Record(Type.String(), Type.Object({ region: Type.String(), reason: Type.String() }), {
      description: 'carbon tie-break (ADR 0006): per home, the region tried first (a healthy, uncapped region within the latency band whose grid is clearly cleaner); order only',
    }),
  ),
  unplaced: Type.Optional(Type.Record(Type.String(), Type.Number(), { description: 'measured demand (q/s per home) no region with headroom can take; absent = none' })),
  overflow: Type.Optional(
    Type.Record(Type.String(), Type.Record(Type.String(), Type.Number()), {
      description:
        "per home, where its clients go when no region of their ranking admits them (whenAllDown nearest): regions beyond the home's neighbours in proportion to their headroom, then the home itself where only its slow start or a grid event's hold and restore keep it below its share (ADR 0018), and demand the whole fleet cannot take in proportion to the room each region has before it is full (else capacity); weights sum to 1",
    }),
  ),
  trust: Type.Optional(Type.Array(TrustDecisionSchema, { description: 'the trust decision on every claim of physical loss not over (ADR 0014, 0021), by region, source and event' })),
  alerts: Type.Optional(Type.Array(PlanAlertSchema, { description: 'what the plan wants an operator to know now or before an event: trusted losses beyond the safety limits, losses waiting for corroboration, held untrusted facts (ADR 0014)' })),
  windows: Type.Optional(Type.Array(WindowOccurrenceSchema, { description: "recurring windows' occurrences over the plan's horizon (docs/schedules.md), skipped ones with why; absent = no window" })),
  lookahead: Type.Optional(
    Type.Object(
      {
        resolverFloorS: Type.Integer({ minimum: 0, description: 'F: the TTL floor resolvers are assumed to clamp to, s (policy.resolverMinTtl)' }),
        marginMs: Type.Integer({ minimum: 0, description: 'm: the margin, at least the clock-skew bound, ms (policy.drain.marginMs)' }),
      },
      {
        description:
          "how far ahead decide looks for a region going dark: no answer names a region that refuses new streams, or will within max(the name's TTL, F) + m, while another region can serve (a cached answer outlives its TTL by up to F); absent = the name's TTL alone",
      },
    ),
  ),
});
export type Plan = Static<typeof PlanSchema>;

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
