/**
 * Policy shapes declared once as schemas with their static types: the configuration's
 * `policy:` section (PolicySchema, with every default: the one declaration of the planner's
 * defaults), gridPolicy rules with the shipped rules, and a name's whenAllDown. The config
 * schema (gslb/config/schema.ts) embeds them; the planner builds its settings from values of
 * PolicySchema (gslb/policy/settings.ts). Declarations and data only.
 */
import { DAY_MS, DurationSetting } from './domains.js';
import { Type, type Static } from '@sinclair/typebox';
import { KIND_LIST } from './kinds/index.js';

const strict = { additionalProperties: false } as const;

/**
 * One gridPolicy rule (docs/design.md "Data flow"): which grid facts it matches and what they mean.
 * Rules are tried in order; the first that matches a fact decides for it.
 */
export const GridRuleSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'shown in the plan\'s reasons and in explain' }),
    kind: Type.Union([Type.Literal('grid.event'), Type.Literal('grid.alert')], { description: 'which kind of grid fact' }),
    types: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'fact types it matches (grid.event: simple, import-capacity-limit, dispatch-setpoint, grid-emergency, load-shed, cap, drain; grid.alert: normal, watch, conservation, flex-alert, eea, grid-alert, load-shed, emergency); absent = any' })),
    minLevel: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'the fact\'s level is at least this' })),
    maxLevel: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'the fact\'s level is at most this' })),
    source: Type.Optional(Type.String({ minLength: 1, description: 'only facts whose source starts with this' })),
    then: Type.Object(
      {
        cap: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'cap the region at this share' })),
        capFromFact: Type.Optional(Type.Boolean({ description: 'cap at the fact\'s own cap (grid.event type cap)' })),
        drain: Type.Optional(Type.Boolean({ description: 'drain the region' })),
        importLimit: Type.Optional(Type.Boolean({ description: 'the fact\'s limitW is the site\'s grid import limit while it holds (needs power.fullLoadW in the region file)' })),
        ttlCap: Type.Optional(Type.Integer({ minimum: 0, description: 'cap answers\' TTL at this many seconds (pre-arm)' })),
        loss: Type.Optional(
          Type.Boolean({
            description:
              'the fact means the region loses power from its start (physical loss, not a discretionary cap): from a source bound to the region (policy.grid.loss.bindings) it is planned whatever the automation safety limits and the freeze say, within policy.grid.loss.maxTrustedLossShare; with importLimit, only when the limit plus on-site generation and storage is below the region\'s power.minServingW',
          }),
        ),
      },
      { ...strict, minProperties: 1, description: 'what a matching fact means' },
    ),
  },
  { ...strict, description: 'one gridPolicy rule' },
);

/** One gridPolicy rule: which grid facts it matches (first match per fact) and what they mean. */
export type GridRule = Static<typeof GridRuleSchema>;

/** The shipped gridPolicy (issue 5's defaults). Operators replace it with policy.grid.rules. */
export const DEFAULT_GRID_RULES: GridRule[] = [
  { name: 'openadr-simple-1', kind: 'grid.event', types: ['simple'], minLevel: 1, maxLevel: 1, then: { cap: 0.75 } },
  { name: 'openadr-simple-2', kind: 'grid.event', types: ['simple'], minLevel: 2, maxLevel: 2, then: { cap: 0.5 } },
  { name: 'openadr-simple-3', kind: 'grid.event', types: ['simple'], minLevel: 3, then: { drain: true } },
  { name: 'capacity-limit', kind: 'grid.event', types: ['import-capacity-limit', 'dispatch-setpoint'], then: { importLimit: true, loss: true } },
  { name: 'grid-emergency', kind: 'grid.event', types: ['grid-emergency'], then: { drain: true } },
  { name: 'load-shed-order', kind: 'grid.event', types: ['load-shed'], then: { drain: true, loss: true } },
  { name: 'power-off', kind: 'grid.event', types: ['power-off'], then: { drain: true, loss: true } },
  { name: 'direct-drain', kind: 'grid.event', types: ['drain'], then: { drain: true } },
  { name: 'direct-cap', kind: 'grid.event', types: ['cap'], then: { capFromFact: true } },
  { name: 'alert-watch', kind: 'grid.alert', types: ['watch', 'conservation', 'flex-alert'], then: { ttlCap: 30 } },
  { name: 'alert-eea1', kind: 'grid.alert', types: ['eea'], minLevel: 1, maxLevel: 1, then: { cap: 0.75, ttlCap: 30 } },
  { name: 'alert-eea2', kind: 'grid.alert', types: ['eea'], minLevel: 2, maxLevel: 2, then: { drain: true } },
  { name: 'alert-grid-alert', kind: 'grid.alert', types: ['grid-alert'], then: { drain: true } },
  { name: 'alert-eea3-load-shed', kind: 'grid.alert', types: ['eea', 'load-shed', 'emergency'], minLevel: 3, then: { drain: true } },
  { name: 'alert-load-shed', kind: 'grid.alert', types: ['load-shed', 'emergency'], then: { drain: true } },
];

export const WhenAllDown = Type.Union(
  [Type.Literal('nearest'), Type.Literal('all'), Type.Literal('empty'), Type.Literal('servfail')],
  { description: 'what to answer when no region admits the client: nearest (among every region of the name, the nearest up and not refusing new streams through max(TTL, resolverMinTtl) + drain.marginMs that takes clients of this home; then one that stays open; then one open now; else the nearest at all), all, empty (NODATA) or servfail' },
);

/** What a name answers when no region admits the client. */
export type WhenAllDownPolicy = Static<typeof WhenAllDown>;

/** A TTL in seconds (0 to 2^31 − 1), with its default when given. */
export const Ttl = (description: string, dflt?: number) =>
  Type.Integer({ description, minimum: 0, maximum: 2147483647, ...(dflt === undefined ? {} : { default: dflt }) });

const StaleThen = (dflt: string) =>
  Type.Union(['down', 'degraded', 'healthy', 'ignore'].map((t) => Type.Literal(t)), {
    default: dflt,
    description: 'then: down (a down vote, capacity 0), degraded (capped at policy.degradedShare), healthy (as if all were well), ignore (the fact stops counting)',
  });
const StalePolicySchema = (keepMs: number, then: string, what: string) =>
  Type.Object(
    {
      keepMs: DurationSetting('how long past its expiry the last value still holds, ms (at most 7 days)', keepMs, 0, 7 * DAY_MS),
      then: StaleThen(then),
    },
    { ...strict, default: {}, description: `what an expired ${what} means` },
  );


/** The configuration's `policy:` section. */
export const PolicySchema = Type.Object(
  {
    minTtl: Ttl('Tmin: the smallest TTL ever answered, in seconds', 5),
    resolverMinTtl: Ttl('F: the TTL floor resolvers are assumed to clamp to, in seconds', 30),
    whenAllDown: Type.Optional(WhenAllDown),
    defaultLocation: Type.Object(
      {
        lat: Type.Number({ minimum: -90, maximum: 90, description: 'latitude in degrees' }),
        lon: Type.Number({ minimum: -180, maximum: 180, description: 'longitude in degrees' }),
      },
      { ...strict, description: 'where a client without a known location is placed', default: { lat: 39.0, lon: -77.5 } },
    ),
    weights: Type.Record(
      Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }),
      Type.Record(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), Type.Number({ minimum: 0, maximum: 1 })),
      {
        default: {},
        description:
          'static admission weights w[home][target] in [0, 1], multiplied with the planner\'s (missing = 1): a client whose nearest region is home is admitted to target for a share w of subnets, the rest spill to the next region (e.g. { us-va: { us-va: 0.9 } } sends 10 % of Virginia\'s clients onward)',
      },
    ),
    health: Type.Object(
      {
        rise: Type.Integer({ minimum: 1, maximum: 100, default: 2, description: 'consecutive successful probes before a down endpoint is up' }),
        fall: Type.Integer({ minimum: 1, maximum: 100, default: 3, description: 'consecutive failed probes before an up endpoint is down' }),
        slowStartMs: Type.Integer({ minimum: 0, maximum: DAY_MS, default: 60000, description: 'a region that comes back up as a whole (every endpoint was down) takes clients back over this long, in policy.rampStepMs steps; 0 = at once. A soft hold: its own clients that no other region has headroom for come back at once (docs/adr/0018-soft-holds.md)' }),
      },
      { ...strict, default: {}, description: 'anti-flap thresholds of health probes (per endpoint and vantage)' },
    ),
    hysteresis: Type.Number({ minimum: 0, maximum: 0.5, default: 0.05, description: 'relative change a capacity or power reading must exceed to be applied' }),
    stale: Type.Object(
      Object.fromEntries(KIND_LIST.map((k) => [k.name, StalePolicySchema(k.stale.keepMs, k.stale.then, k.stale.what)])),
      { ...strict, default: {}, description: 'per signal kind: what its facts mean once expired (never a silent default)' },
    ),
    degradedShare: Type.Number({ minimum: 0, maximum: 1, default: 0.5, description: 'the capacity share a stale policy of degraded leaves' }),
    grid: Type.Object(
      {
        mode: Type.Union([Type.Literal('apply'), Type.Literal('shadow')], { default: 'apply', description: 'apply grid events and alerts, or only show what they would do (shadow)' }),
        shadow: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
          default: [],
          description: 'sources (a prefix of a signal\'s source, e.g. a collector name such as grid-alerts) whose grid facts are only shown in the plan, not applied',
        }),
        trust: Type.Record(Type.String({ minLength: 1, maxLength: 200 }), Type.Union([Type.Literal('full'), Type.Literal('cap')]), {
          default: { 'grid-alerts': 'cap' },
          description: 'per source prefix: full, or cap (may pre-arm and cap, but a drain needs an operator\'s confirmation: it caps at capFloor instead); the longest prefix wins, others are full',
        }),
        capFloor: Type.Number({ minimum: 0, maximum: 1, default: 0.25, description: 'the least share a source trusted to cap only may leave a region on its own' }),
        loss: Type.Object(
          {
            bindings: Type.Record(
              Type.String({ minLength: 1, maxLength: 200 }),
              Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), { maxItems: 10000 }),
              {
                default: {},
                description:
                  'per source prefix (e.g. openadr3/vtn.utility.example), the regions whose physical loss it may declare (a gridPolicy rule with loss); a claim for any other region is untrusted and the safety limits apply to it as to any cap. The longest matching prefix decides',
              },
            ),
            maxTrustedLossShare: Type.Number({
              minimum: 0,
              maximum: 1,
              default: 0.5,
              description:
                "trusted losses declared by one source apply on their own up to this share of a name's capacity at once, and never to every region of a name; beyond that a loss applies only where a second source declares it too or an operator drains the region, and waits with a critical alert",
            }),
          },
          { ...strict, default: {}, description: 'physical loss (ADR 0014): which sources may declare that a region goes dark, and the bound on one source' },
        ),
        rules: Type.Array(GridRuleSchema, {
          default: DEFAULT_GRID_RULES,
          description: 'gridPolicy: what grid facts mean for traffic; tried in order, the first rule matching a fact decides for it (the default list is the shipped policy)',
        }),
      },
      { ...strict, default: {}, description: 'grid obligations: gridPolicy' },
    ),
    saturation: Type.Object(
      {
        queueWaiting: Type.Number({ minimum: 0, default: 5, description: 'more requests waiting than this (load.metrics queueDepth) is saturated' }),
        kvCacheUse: Type.Number({ minimum: 0, maximum: 1, default: 0.8, description: 'KV-cache use above this is saturated' }),
        throttledFactor: Type.Number({
          minimum: 0,
          maximum: 1,
          default: 0.5,
          description: 'a region with throttled GPUs (load.metrics throttledShare) that is also saturated is capped at this share of what the throttle leaves until it is not saturated, so that it gets back under its capacity while long sessions end; 1 = just the throttle',
        }),
        spillMargin: Type.Number({
          minimum: 0,
          maximum: 1,
          default: 0.1,
          description:
            'spill fills a region with headroom up to this much below kvCacheUse (0.1: to 70 % of its KV cache with the default 0.8). Load lags admission by the sessions\' length, and a region over kvCacheUse takes no spill: filling it right up to that point makes the two switch each other on and off (docs/simulation.md)',
        }),
      },
      { ...strict, default: {}, description: "a saturated region (the Gateway API Inference Extension endpoint picker's rule) takes no spill from other homes; its own clients stay" },
    ),
    carbon: Type.Object(
      {
        bandKm: Type.Number({ minimum: 0, maximum: 20000, default: 250, description: 'regions within this many km of a client\'s home region count as the same latency band; 0 turns the carbon tie-break off' }),
        minGain: Type.Number({ minimum: 0, maximum: 1, default: 0.2, description: 'how much cleaner a region of the band must be to go first: relative gCO2/kWh (0.2 = 20 % lower), or percentile points ÷ 100' }),
      },
      { ...strict, default: {}, description: 'carbon as a tie-breaker: a cleaner, healthy, uncapped region of the home\'s latency band is tried first (never over health, drains, caps or power)' },
    ),
    rampStepMs: Type.Integer({ minimum: 1000, maximum: DAY_MS, default: 30000, description: 'spacing of the steps of an operator drain ramp without a deadline, ms' }),
    drain: Type.Object(
      {
        sessionAllowanceMs: Type.Integer({ minimum: 0, maximum: 86_400_000, default: 300_000, description: 'S: how long sessions get to finish between the last answer naming the region expiring and the event start, ms' }),
        sessionAllowanceMaxMs: Type.Integer({
          minimum: 0,
          maximum: 86_400_000,
          default: 14_400_000,
          description:
            "with more notice than the lead needs, S of a grid obligation to take nothing (a load shed, a power-off, a grid operator's drain: what runs at the event is cut) grows to use it up to this, ms: set it to your longest sessions, which then end on their own before the event instead of being cut (at the cost of serving the region's clients from farther away for longer: up to 4 h ahead with the default); at most sessionAllowanceMs = a fixed S",
        }),
        discretionarySessionAllowanceMaxMs: Type.Integer({
          minimum: 0,
          maximum: 86_400_000,
          default: 5_400_000,
          description:
            "the same for every other curve — a grid cap above 0 (nothing is cut at the event: S only brings the load down by then), a recurring window, an operator's drain with a deadline (the operator chose the time) — ms; sessionAllowanceMaxMs bounds it",
        }),
        marginMs: Type.Integer({ minimum: 250, maximum: 3_600_000, default: 5000, description: 'm: margin before the event start, at least the clock-skew bound (250 ms), ms' }),
        rampMs: Type.Integer({ minimum: 0, maximum: 86_400_000, default: 60_000, description: 'R: length of the weight ramp ahead of an event, in steps max(minTtl, resolverMinTtl) apart, ms (0 = one step): sessions started during it may still be running at the event, so keep it short (ADR 0016)' }),
        holdMs: Type.Integer({ minimum: 0, maximum: 86_400_000, default: 120_000, description: 'after an event ends (or is cancelled or cleared) its cap holds this long before the restore (hysteresis against a flapping signal), ms. Soft, like the restore: the own clients of the region that no other region has headroom for come back at once (docs/adr/0018-soft-holds.md)' }),
        restoreMs: Type.Integer({ minimum: 0, maximum: 86_400_000, default: 300_000, description: 'after the hold, the weight ramps back to 1 over this long (slow start), ms' }),
        maxAutoShare: Type.Number({ minimum: 0, maximum: 1, default: 0.5, description: "safety: gridPolicy may take at most this share of a name's capacity (capacity units) at once without an operator's drain; 1 = no limit" }),
        minDrainIntervalMs: Type.Integer({ minimum: 0, maximum: 86_400_000, default: 120_000, description: 'safety: gridPolicy starts draining at most one region per this interval without an operator, ms (0 = no limit)' }),
      },
      { ...strict, default: {}, description: 'proactive drain before known grid events (docs/design.md "TTLs and draining", docs/adr/0007-proactive-drain.md) and the safety limits on automation' },
    ),
  },
  { ...strict, default: {}, description: 'how answers are chosen and how long they may be cached' },
);

export type PolicyConfig = Static<typeof PolicySchema>;
