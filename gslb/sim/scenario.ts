/**
 * Scenario files for `gridsteer simulate`: YAML, validated with a TypeBox schema, then
 * resolved (defaults filled in, durations in ms, the fleet loaded, every fact built into the
 * Signal GridSteer will be told and checked by the state layer's own validateSignal).
 *
 * Contract: loadScenario either returns a complete Scenario or throws ScenarioError listing
 * every problem found, each naming the file, the line and column when known, the path inside
 * the file and how to fix it. It never throws anything else for bad input (a missing file,
 * bad YAML, wrong types, unknown keys, unknown regions, events outside the simulated time).
 * It reads only the scenario file and the region files it names.
 */
import { readdirSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { FormatRegistry, Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { parse as parseYaml } from 'yaml';
import { closest, formatIssue, got, locateIn, parseYamlFile, pointerToPath, renderPath, type ConfigIssue, type ParsedFile } from '../config/yaml.js';
import { RegionSchema, type RegionConfig } from '../config/schema.js';
import { expected, type SchemaLike } from '../config/describe.js';
import { defaultSettings } from '../policy/planner/index.js';
import { WindowSpecSchema, type PlannerWindow, type WindowSpec } from '../model/windows.js';
import { checkWindow, safetyFactsOf } from '../config/windows.js';
import { SignalError, validateSignal } from '../state/signals.js';
import type { Signal, SignalKind } from '../model/types.js';
import { CONTINENTS, type Continent } from './metros.js';
import { DEFAULT_SESSION_LENGTH, type SessionLengthParams } from './sessions.js';

if (!FormatRegistry.Has('ip')) FormatRegistry.Set('ip', (s) => isIP(s) !== 0);

// ---------------------------------------------------------------------------------------
// Resolved types (what the simulator runs on). Times in ms, relative to the scenario start
// unless named otherwise.

export interface SimRegion {
  id: string;
  name: string;
  lat: number;
  lon: number;
  bias: number;
  capacityUnits: number;
  importLimitW?: number;
  fullLoadW?: number;
  /** IPv4 addresses answered for the region (decide needs at least one for A queries). */
  v4: string[];
}

/** What happens to the region: no power, a partial cap (GPUs lost), or nothing at all (a claim with no physical effect: the facts alone). */
export type EventEffect = { kind: 'power-off' } | { kind: 'throttle'; share: number } | { kind: 'none' };

export interface ScenarioFact {
  kind: 'grid.event' | 'grid.alert';
  source: string;
  key: string;
  /** The fact's value with start, end (and, for grid.event, id) filled in from the event; times absolute ms epoch. */
  value: Record<string, unknown>;
  /** The source repeats the fact this often until the event ends (a poller re-reading its feed), ms. */
  repeatMs: number;
}

export interface ScenarioEvent {
  id: string;
  region: string;
  /** Start T after the scenario start, ms. */
  atMs: number;
  durationMs: number;
  /** How long before T the facts are announced (0 = at T: no notice), ms. */
  noticeMs: number;
  effect: EventEffect;
  facts: ScenarioFact[];
  /**
   * What its source tells later, at given instants (modified, extended, cancelled): each
   * change's fact replaces the last one (same source and id, observedAt = the change). The
   * event's own atMs, durationMs and effect are the final truth, which the world follows;
   * `announcedDurationMs` is what the first facts said.
   */
  changes: EventChange[];
  announcedDurationMs: number;
}

/** A change of an event told by its source at `atMs` (after the scenario start): a new end (`endMs`, after the scenario start), or its cancellation. */
export interface EventChange {
  atMs: number;
  endMs?: number;
  cancelled?: true;
}

export interface WorldParams {
  sessionsPerHour: number;
  subnets: number;
  clientsPerSubnet: number;
  resolvers: number;
  clampingResolvers: number;
  clampTtlS: number;
  ttlIgnoringClients: number;
  idleTimeoutMs: number;
  session: SessionLengthParams;
  fleetHeadroom: number;
  demandShare: Record<Continent, number>;
  retryBackoffMs: number[];
  warmupMs: number;
  scrapeIntervalMs: number;
  scrapeSource: string;
  probeIntervalMs: number;
  name: string;
  bucketMs: number;
  /** Share of resolvers that send no ECS: one cached answer (chosen for the resolver's location) for every /24 behind them. */
  noEcsResolvers: number;
  /** A cut session is retried by its client with probability `share`, `delayMs` after the cut (resolving again). */
  cutRetry: { share: number; delayMs: number };
  /** Daily demand cycle: each metro's demand × (1 + amplitude × cos(2π (local solar hour − peakHour) ÷ 24)); amplitude 0 = flat. */
  dailyCycle: { amplitude: number; peakHour: number };
  /** Share of the resolvers without ECS placed far from their clients: in a metro drawn by demand from the whole world, not their /24s'. */
  noEcsDistant: number;
  /** The relative error (σ of a normal draw) of each load reading GridSteer scrapes: kvCacheUse × (1 + loadNoise × N(0, 1)), clamped to [0, 1]. */
  loadNoise: number;
}

/** The gateways' drain hook as the simulator models it (GridSteer only). */
export interface HookParams {
  /** false: no drain hook at all (no GOAWAY, no refusal by the gateway). */
  enabled: boolean;
  /** Delivery delay of a successful call, ms. */
  delayMs: number;
  /** Probability that one attempt fails (retried as gslb/control/hooks.ts does). */
  failureRate: number;
  /** Attempts after the first (hooks.ts `retries`). */
  retries: number;
  /** Wait before the first retry, doubled each time (hooks.ts `retryBaseMs`), ms. */
  retryBaseMs: number;
  /** From a step with `goawayBy`, GOAWAY every connection progressively until then (false: today's share-based GOAWAY only). */
  progressiveGoaway: boolean;
  /** The gateway refuses new streams from the plan's `refuse` steps. */
  refuse: boolean;
}

export interface PolicyParams {
  static: { ttl: number };
  reactive: { ttl: number; checkIntervalMs: number; failureThreshold: number; successThreshold: number; check: 'load' | 'event' };
  gridsteer: {
    ttl: number;
    minTtl: number;
    goaway: 'share' | 'admission';
    whenAllDown: 'nearest' | 'all' | 'empty' | 'servfail';
    demand: boolean;
    planner: Record<string, unknown>;
    hook: HookParams;
    /** Capacity units GridSteer is configured with, per region, where they differ from the fleet's real ones (wrong units). */
    capacityUnits: Record<string, number>;
  };
}

export interface Scenario {
  /** Absolute path of the scenario file. */
  file: string;
  /** Used for output file names: `name` from the file, else its base name. */
  name: string;
  title: string;
  description: string;
  seed: number;
  hoursMs: number;
  /** Wall time of the scenario start, ms epoch. */
  epoch: number;
  /** Where the fleet came from, for the report: a folder or `inline`. */
  regionsFrom: string;
  regions: SimRegion[];
  events: ScenarioEvent[];
  world: WorldParams;
  policies: PolicyParams;
  /** Who GridSteer trusts to declare physical loss (production default: nobody). */
  trust: TrustParams;
  /** What an operator does at given instants (GridSteer's overrides), in time order. */
  operator: OperatorAction[];
  /** Recurring windows (maintenance, tariff, practice runs) in their planner form, as gridsteer.yaml's `windows` (docs/schedules.md). */
  windows: PlannerWindow[];
}

/**
 * One operator action at `atMs` (after the scenario start), as the operator API makes it
 * (gslb/control/service.ts): a drain (to `value`, over `rampMs`, by the deadline `byMs`), an
 * undrain (every drain of the region ended, ramped back over drain.restoreMs), a force-up
 * (always with `untilMs`) or force-down (each replacing the region's earlier forces), a
 * weight (`value`), a freeze of automation (fleet-wide: gridPolicy's share of every region
 * held as the plan has it at `atMs`), an unfreeze (every freeze in force ended), or a
 * distrust of a source prefix or a principal; `untilMs` ends it (after the scenario start).
 */
export interface OperatorAction {
  atMs: number;
  action: 'drain' | 'undrain' | 'force-up' | 'force-down' | 'weight' | 'freeze' | 'unfreeze' | 'distrust';
  region?: string;
  value?: number;
  rampMs?: number;
  byMs?: number;
  untilMs?: number;
  source?: string;
  principal?: string;
  reason: string;
}

/**
 * The trust configuration of the simulated GridSteer, as production has it (ADR 0014, 0021):
 * `policy.grid.loss.bindings`, and who writes each fact source (the ingest token or collector
 * section, and whether its grant covers the source). Default: no bindings and every fact
 * written by one ungranted token, so no claim of physical loss is trusted.
 */
export interface TrustParams {
  /** Source prefix → the regions it may declare dark (policy.grid.loss.bindings). */
  bindings: Record<string, string[]>;
  /** Source prefix → who writes it (longest prefix wins); `granted`: its grant covers the prefix. */
  principals: Record<string, { principal: string; granted: boolean }>;
}

/** The operator actions a scenario may give (the operator API's, gslb/control/service.ts). */
export const OPERATOR_ACTIONS = ['drain', 'undrain', 'force-up', 'force-down', 'weight', 'freeze', 'unfreeze', 'distrust'] as const;

/** The principal that writes a fact no `trust.principals` entry covers: a token without grants (its facts are never trusted for a loss). */
export const DEFAULT_FEED_PRINCIPAL = 'token:feed';

export const DEFAULT_EPOCH = '2026-08-20T18:00:00Z';

export const DEFAULT_WORLD: WorldParams = {
  sessionsPerHour: 1_000_000,
  subnets: 5000,
  clientsPerSubnet: 4,
  resolvers: 500,
  clampingResolvers: 0.1,
  clampTtlS: 300,
  ttlIgnoringClients: 0.02,
  idleTimeoutMs: 60_000,
  session: DEFAULT_SESSION_LENGTH,
  fleetHeadroom: 2.5,
  demandShare: { 'north-america': 0.62, 'south-america': 0.05, europe: 0.13, asia: 0.18, oceania: 0.01, africa: 0.01 },
  retryBackoffMs: [0, 1000, 2000, 4000],
  warmupMs: 900_000,
  scrapeIntervalMs: 15_000,
  scrapeSource: 'prometheus/prom-{region}.example:9090',
  probeIntervalMs: 10_000,
  name: 'api.example.com',
  bucketMs: 60_000,
  noEcsResolvers: 0,
  cutRetry: { share: 0, delayMs: 1000 },
  dailyCycle: { amplitude: 0, peakHour: 14 },
  noEcsDistant: 0,
  loadNoise: 0,
};

export const DEFAULT_HOOK: HookParams = { enabled: true, delayMs: 0, failureRate: 0, retries: 3, retryBaseMs: 500, progressiveGoaway: true, refuse: true };

export const DEFAULT_POLICIES: PolicyParams = {
  static: { ttl: 30 },
  reactive: { ttl: 60, checkIntervalMs: 10_000, failureThreshold: 3, successThreshold: 3, check: 'load' },
  gridsteer: { ttl: 30, minTtl: 5, goaway: 'share', whenAllDown: 'nearest', demand: true, planner: {}, hook: DEFAULT_HOOK, capacityUnits: {} },
};

// ---------------------------------------------------------------------------------------
// The file's schema.

const strict = { additionalProperties: false } as const;
const DURATION_RE = '^\\s*(\\d+(\\.\\d+)?\\s*(ms|h|m|s)\\s*)+$';
const Duration = (description: string) =>
  Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: DURATION_RE })], {
    description,
    'x-form': 'a duration: a number of seconds, or a string such as 90s, 10m, 2h or 1h30m',
  });
const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });
const Id = (description: string) => Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', 'x-form': 'lowercase letters, digits and -, e.g. us-tx', description });

const InlineRegion = Type.Object(
  {
    id: Id('the region id'),
    name: Type.Optional(Type.String({ description: 'a name for people' })),
    lat: Type.Number({ minimum: -90, maximum: 90, description: 'latitude in degrees' }),
    lon: Type.Number({ minimum: -180, maximum: 180, description: 'longitude in degrees' }),
    bias: Type.Optional(Type.Number({ minimum: -99, maximum: 99, description: 'Route 53 geoproximity bias' })),
    capacityUnits: Type.Number({ exclusiveMinimum: 0, description: 'capacity in the fleet\'s unit (GPUs): concurrent sessions are proportional to it' }),
    importLimitW: Type.Optional(Type.Number({ minimum: 0, description: 'grid import limit, W' })),
    fullLoadW: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'draw at full load, W' })),
    address: Type.Optional(Type.String({ format: 'ip', description: 'an IPv4 address answered for the region (default: one of 198.18.0.0/15)' })),
  },
  { ...strict, description: 'one region, inline' },
);

const FactSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('grid.event'), Type.Literal('grid.alert')], { description: 'the kind of fact GridSteer is told' }),
    source: Type.String({ minLength: 1, maxLength: 200, description: 'the collector and instance that reports it, e.g. openadr3/vtn.example' }),
    key: Type.Optional(Type.String({ maxLength: 200, description: 'grid.event: the event id (default); grid.alert: the zone (default: value.zone, else "zone")' })),
    value: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the fact\'s value without start and end (they come from the event): e.g. { type: load-shed } or { type: eea, level: 2 }' })),
    repeat: Type.Optional(Duration('the source re-reports the fact this often until the event ends (default 60 s, a poller\'s interval)')),
  },
  { ...strict, description: 'a fact about the event that GridSteer is told at T − notice' },
);

const EventSchema = Type.Object(
  {
    id: Id('the event id (also the grid.event id)'),
    region: Id('the region it happens to'),
    at: Duration('when it starts (T), after the simulation starts'),
    duration: Duration('how long it lasts (end E = T + duration)'),
    notice: Type.Optional(Duration('how long before T its facts are announced; 0 or absent: at T, no notice')),
    effect: Type.Object(
      {
        kind: Type.Union([Type.Literal('power-off'), Type.Literal('throttle'), Type.Literal('none')], {
          description: 'power-off: the region stops serving from T to E (sessions there are cut at T, new streams refused); throttle: its capacity drops to (1 − share) from T to E; none: nothing happens to it (a claim with no physical effect: GridSteer is told the facts all the same)',
        }),
        share: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'throttle: the share of GPUs lost (0.5 = half)' })),
      },
      { ...strict, description: 'what happens to the region' },
    ),
    facts: Type.Optional(Type.Array(FactSchema, { description: 'what GridSteer is told (none: it learns only from its own scrapes and probes)' })),
    changes: Type.Optional(
      Type.Array(
        Type.Object(
          {
            at: Duration('when the source tells the change, after the simulation starts (after the announcement, before the end told so far)'),
            end: Type.Optional(Duration('the new end E, after the simulation starts: shortened or extended')),
            cancelled: Type.Optional(Type.Literal(true, { description: 'the source cancels the event: it stops at this instant (before T: it never happens)' })),
          },
          { ...strict, description: 'one change: give end or cancelled' },
        ),
        { minItems: 1, maxItems: 16, description: 'what the source tells later: the event modified, extended or cancelled (its grid.event facts: a new end or cancelled; its grid.alert facts: a new end, or the all-clear, type normal level 0); the world follows the final truth' },
      ),
    ),
  },
  { ...strict, description: 'one event' },
);

const WorldSchema = Type.Object(
  {
    sessionsPerHour: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1e8, description: 'new sessions per simulated hour (before --scale)' })),
    subnets: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'client /24s (before --scale)' })),
    clientsPerSubnet: Type.Optional(Type.Integer({ minimum: 1, maximum: 256, description: 'clients (hosts with a connection pool) per /24' })),
    resolvers: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'recursive resolvers (before --scale)' })),
    clampingResolvers: Type.Optional(Share('share of resolvers that raise every TTL below clampTtl to it')),
    clampTtl: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'the TTL floor of clamping resolvers, seconds' })),
    ttlIgnoringClients: Type.Optional(Share('share of clients that keep their address until their connection breaks')),
    idleTimeout: Type.Optional(Duration('an HTTP/2 connection without streams for this long is closed')),
    session: Type.Optional(
      Type.Object(
        {
          medianS: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'median of the lognormal body, seconds' })),
          sigma: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 5, description: 'σ of the body\'s log' })),
          tailShare: Type.Optional(Share('share of sessions in the Pareto tail')),
          tailMinS: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'where the tail starts, seconds' })),
          tailAlpha: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 10, description: 'the tail\'s Pareto shape' })),
          tailMaxS: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 86400, description: 'the longest session, seconds' })),
        },
        { ...strict, description: 'session length: lognormal body plus truncated Pareto tail' },
      ),
    ),
    fleetHeadroom: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'fleet capacity ÷ expected concurrent sessions' })),
    demandShare: Type.Optional(
      Type.Object(Object.fromEntries(CONTINENTS.map((c) => [c, Type.Optional(Type.Number({ minimum: 0, description: `share of demand from ${c}` }))])), {
        ...strict,
        description: 'share of demand per continent (normalised; missing = 0 when the mapping is given)',
      }),
    ),
    retryBackoff: Type.Optional(Type.Array(Duration('wait before the next attempt'), { maxItems: 20, description: 'a refused attempt is retried after each wait in turn; then the session fails' })),
    warmup: Type.Optional(Duration('simulated before the measured window (not measured)')),
    scrapeInterval: Type.Optional(Duration('GridSteer\'s load.metrics scrape of every region')),
    scrapeSource: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'the scrape\'s signal source; {region} is replaced by the region id' })),
    probeInterval: Type.Optional(Duration('GridSteer\'s health probes of regions with a power-off event')),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'the steered name' })),
    bucket: Type.Optional(Duration('the report\'s time-series bucket')),
    noEcsResolvers: Type.Optional(Share('share of resolvers that send no ECS: one cached answer, chosen for the resolver\'s location, serves every /24 behind it for its TTL')),
    noEcsDistant: Type.Optional(Share('share of the resolvers without ECS that sit far from their clients: in a metro drawn by demand from the whole world (a public resolver\'s site), not their /24s\' metro')),
    loadNoise: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'the relative error (σ) of each load reading GridSteer scrapes: kvCacheUse × (1 + loadNoise × a normal draw), clamped to [0, 1]' })),
    cutRetry: Type.Optional(
      Type.Object(
        {
          share: Type.Optional(Share('share of cut sessions their clients retry (resolving again)')),
          delay: Type.Optional(Duration('how long after the cut the client retries')),
        },
        { ...strict, description: 'cut sessions retried by their clients (default: none)' },
      ),
    ),
    dailyCycle: Type.Optional(
      Type.Object(
        {
          amplitude: Type.Optional(Type.Number({ minimum: 0, maximum: 0.95, description: 'demand swings by ± this share of its mean over a day (0 = flat)' })),
          peakHour: Type.Optional(Type.Number({ minimum: 0, maximum: 24, exclusiveMaximum: 24, description: 'local solar hour of the peak (0–24)' })),
        },
        { ...strict, description: 'an optional daily demand cycle, per metro by its local solar time' },
      ),
    ),
  },
  { ...strict, description: 'the simulated world (every key optional)' },
);

const PoliciesSchema = Type.Object(
  {
    static: Type.Optional(Type.Object({ ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'answer TTL, seconds' })) }, { ...strict, description: 'nearest region always' })),
    reactive: Type.Optional(
      Type.Object(
        {
          ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'answer TTL, seconds' })),
          checkInterval: Type.Optional(Duration('health check interval')),
          failureThreshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'consecutive failed checks before a region is down' })),
          successThreshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'consecutive passed checks before it is up again' })),
          check: Type.Optional(
            Type.Union([Type.Literal('load'), Type.Literal('event')], {
              description: 'load: a check fails while the region is dark or its load is above its capacity (a gateway answering 503 at capacity); event: while one of its events is in force',
            }),
          ),
        },
        { ...strict, description: 'Route 53 style health-checked failover' },
      ),
    ),
    gridsteer: Type.Optional(
      Type.Object(
        {
          ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'the name\'s TTL0, seconds' })),
          minTtl: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, description: 'Tmin, seconds' })),
          goaway: Type.Optional(
            Type.Union([Type.Literal('share'), Type.Literal('admission')], {
              description: 'when the plan lowers a region\'s share, the gateway sends GOAWAY to that share of its connections picked at random (share), or to the connections of clients the plan no longer admits (admission)',
            }),
          ),
          whenAllDown: Type.Optional(
            Type.Union([Type.Literal('nearest'), Type.Literal('all'), Type.Literal('empty'), Type.Literal('servfail')], {
              description: 'the name\'s whenAllDown: what decide answers when no region admits the client (default nearest, as gridsteer.yaml)',
            }),
          ),
          demand: Type.Optional(
            Type.Boolean({ description: 'count GridSteer\'s answers per home in 10-second demand buckets and give them to the planner, as DNS nodes do (its spill limits need them); default true' }),
          ),
          capacityUnits: Type.Optional(
            Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 }), {
              description: 'capacity units GridSteer is configured with, per region id, where they differ from the fleet\'s real ones (wrong capacity units: the simulated capacity keeps the region\'s own)',
            }),
          ),
          hook: Type.Optional(
            Type.Object(
              {
                enabled: Type.Optional(Type.Boolean({ description: 'false: the gateways have no drain hook (no GOAWAY, no refusal)' })),
                delay: Type.Optional(Duration('delivery delay of a successful hook call')),
                failureRate: Type.Optional(Share('probability that one attempt fails (retried)')),
                retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'attempts after the first (the hook\'s retries)' })),
                retryBase: Type.Optional(Duration('wait before the first retry, doubled each time (the hook\'s retryBaseMs)')),
                progressiveGoaway: Type.Optional(Type.Boolean({ description: 'from a plan step with goawayBy, GOAWAY every connection progressively by then (false: share-based GOAWAY only)' })),
                refuse: Type.Optional(Type.Boolean({ description: 'the gateway refuses new streams from the plan\'s refuse steps' })),
              },
              { ...strict, description: 'the gateways\' drain hook as simulated' },
            ),
          ),
          planner: Type.Optional(
            Type.Record(Type.String(), Type.Unknown(), {
              description: 'planner settings over defaultSettings(): a mapping merges key by key into the default mapping (e.g. drain: { sessionAllowanceMs: 600000 }), any other value replaces it',
            }),
          ),
        },
        { ...strict, description: 'the real planner and decide' },
      ),
    ),
  },
  { ...strict, description: 'per policy settings' },
);

/** A window as gridsteer.yaml writes it: kind, timezone and cap may be left to their defaults (maintenance, UTC, 0). */
const WP = WindowSpecSchema.properties;
const WindowFileSchema = Type.Object({ ...WP, kind: Type.Optional(WP.kind), timezone: Type.Optional(WP.timezone), cap: Type.Optional(WP.cap) }, { ...strict, description: WindowSpecSchema.description });

export const ScenarioSchema = Type.Object(
  {
    name: Type.Optional(Id('output file names (default: the file\'s base name)')),
    title: Type.String({ minLength: 1, maxLength: 200, description: 'one line for people' }),
    description: Type.Optional(Type.String({ maxLength: 5000, description: 'what the scenario shows' })),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295, description: 'the random seed (default 1)' })),
    hours: Type.Number({ exclusiveMinimum: 0, maximum: 48, description: 'simulated hours after the warm-up' }),
    epoch: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?Z$', 'x-form': 'a UTC time such as 2026-08-20T18:00:00Z', description: 'wall time of the simulation start' })),
    regions: Type.Object(
      {
        dir: Type.Optional(Type.String({ minLength: 1, description: 'a folder of region files (as regions/), relative to this file' })),
        list: Type.Optional(Type.Array(InlineRegion, { minItems: 2, description: 'the regions, inline' })),
      },
      { ...strict, description: 'the fleet: dir or list' },
    ),
    events: Type.Array(EventSchema, { minItems: 1, maxItems: 16, description: 'what happens' }),
    world: Type.Optional(WorldSchema),
    policies: Type.Optional(PoliciesSchema),
    windows: Type.Optional(
      Type.Array(WindowFileSchema, {
        maxItems: 32,
        description: 'recurring windows as gridsteer.yaml\'s windows (docs/schedules.md): maintenance windows, tariff windows, failover practice runs; GridSteer plans them with the horizon epoch the control loop passes',
      }),
    ),
    operator: Type.Optional(
      Type.Array(
        Type.Object(
          {
            at: Duration('when the operator acts, after the simulation starts'),
            action: Type.Union(OPERATOR_ACTIONS.map((a) => Type.Literal(a)), {
              description:
                'drain: gridsteer drain <region>; undrain: gridsteer undrain <region> (ends its drains, ramps back over drain.restoreMs); force-up / force-down: gridsteer force <region> up|down (replaces its earlier forces; force-up needs until); weight: an admission weight override (needs value); freeze: gridsteer freeze on (fleet-wide: gridPolicy\'s share of every region held where the plan has it); unfreeze: gridsteer freeze off; distrust: gridsteer distrust <source|principal> on',
            }),
            region: Type.Optional(Id('the region (drain, undrain, force-up, force-down, weight)')),
            value: Type.Optional(Share('drain: the cap to reach (default 0, a full drain); weight: the admission weight (required)')),
            ramp: Type.Optional(Duration('drain: the ramp length (default 0)')),
            by: Type.Optional(Duration('drain: the deadline by which the region is drained, after the simulation starts (the ramp is placed before it)')),
            until: Type.Optional(Duration('the override ends then, after the simulation starts (default: it stays)')),
            source: Type.Optional(Type.String({ minLength: 1, description: 'distrust: a source prefix' })),
            principal: Type.Optional(Type.String({ pattern: '^(token|collector):.+$', description: 'distrust: a principal, token:<name> or collector:<name>' })),
            reason: Type.Optional(Type.String({ minLength: 1, description: 'why, in words (default: "scenario")' })),
          },
          { ...strict, description: 'one operator action, passed to GridSteer\'s planner as an Override at that instant' },
        ),
        { maxItems: 64, description: 'operator overrides and acknowledgements at given instants (GridSteer only)' },
      ),
    ),
    trust: Type.Optional(
      Type.Object(
        {
          bindings: Type.Optional(
            Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 })), {
              description: 'policy.grid.loss.bindings: source prefix → the regions it may declare dark; default none (the production default: no claim of physical loss is trusted)',
            }),
          ),
          principals: Type.Optional(
            Type.Record(
              Type.String({ minLength: 1 }),
              Type.Object(
                {
                  principal: Type.String({ pattern: '^(token|collector):.+$', 'x-form': 'token:<name> or collector:<name>', description: 'who writes the facts of the sources starting with this prefix' }),
                  granted: Type.Optional(Type.Boolean({ description: 'its grant covers the prefix (default true); false: written without a grant, never trusted for a physical loss' })),
                },
                strict,
              ),
              { description: 'source prefix → who writes it (longest prefix wins); a source no prefix covers is written by token:feed without a grant' },
            ),
          ),
        },
        { ...strict, description: 'the trust configuration of the simulated GridSteer, as production has it (docs/grid-policy.md "Physical loss", ADR 0021)' },
      ),
    ),
  },
  { ...strict, description: 'a simulation scenario' },
);

type ScenarioFile = Static<typeof ScenarioSchema>;

// ---------------------------------------------------------------------------------------
// Errors.

/** One problem in the scenario file or a region file (the configuration loader's shape). */
export type ScenarioIssue = ConfigIssue;

export class ScenarioError extends Error {
  readonly issues: ScenarioIssue[];
  constructor(issues: ScenarioIssue[]) {
    super(`simulate: ${issues.length} problem${issues.length === 1 ? '' : 's'} in the scenario:\n` + issues.map(formatScenarioIssue).join('\n'));
    this.name = 'ScenarioError';
    this.issues = issues;
  }
}

/** One line: `  FILE:LINE:COL: path: message`. */
export const formatScenarioIssue = formatIssue;
export { renderPath };

/** Every schema problem of `p.data` as issues (one per path, the first error there). */
function schemaIssues(p: ParsedFile, schema: TSchema, prefix: (string | number)[] = []): ScenarioIssue[] {
  const seen = new Set<string>();
  const out: ScenarioIssue[] = [];
  const errors: ValueError[] = [...Value.Errors(schema, p.data)];
  for (const e of errors) {
    const path = [...prefix, ...pointerToPath(e.path)];
    const key = renderPath(path);
    // A union's own error follows the errors of its branches: the union's words are better.
    if (seen.has(key)) continue;
    const union = errors.find((x) => x.path === e.path && x.type === ValueErrorType.Union);
    seen.add(key);
    const s = (union?.schema ?? e.schema) as SchemaLike;
    let message: string;
    let at: 'key' | 'value' = 'value';
    let where = path;
    switch (e.type) {
      case ValueErrorType.ObjectAdditionalProperties: {
        const word = String(path[path.length - 1]);
        const known = Object.keys((e.schema as SchemaLike).properties ?? {});
        const near = closest(word, known);
        message = `unknown key "${word}": ${near ? `did you mean "${near}"? ` : ''}remove it or fix its spelling; the keys allowed here are ${known.join(', ')}`;
        at = 'key';
        break;
      }
      case ValueErrorType.ObjectRequiredProperty:
        message = `missing key "${String(path[path.length - 1])}": add it (${s['x-form'] ?? expected(s)}${s.description ? `: ${s.description}` : ''})`;
        where = path.slice(0, -1);
        at = 'key';
        break;
      default: {
        const v = e.value;
        let fix = '';
        const wantsNumber = s.type === 'number' || s.type === 'integer' || (s.anyOf ?? []).some((b) => b.type === 'number' || b.type === 'integer');
        if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) && wantsNumber && !(s.anyOf ?? []).some((b) => b.type === 'string')) fix = ': write the number without quotes';
        else if (v === null) fix = ': write a value after the colon, or remove the key';
        else if (s.description) fix = ` (${s.description})`;
        message = `must be ${s['x-form'] ?? expected(s)}${got(v)}${fix}`;
      }
    }
    out.push({ file: p.file, ...locateIn(p, where, at), path: key, message, ...(e.type === ValueErrorType.ObjectAdditionalProperties ? { suggests: suggestionOf(message) } : {}) } as ScenarioIssue);
  }
  // A misspelt required key is one problem: the unknown key's "did you mean" says it all.
  const suggested = new Set(out.flatMap((i) => ((i as { suggests?: string }).suggests ? [`${i.path.replace(/(\.|^)[^.[\]]+$/, '')}|${(i as { suggests?: string }).suggests}`] : [])));
  return out
    .filter((i) => !(i.message.startsWith('missing key') && suggested.has(`${i.path.replace(/(\.|^)[^.[\]]+$/, '')}|${i.path.replace(/^.*[.]/, '')}`)))
    .map((i) => {
      const { suggests: _, ...rest } = i as ScenarioIssue & { suggests?: string };
      return rest;
    });
}

function suggestionOf(message: string): string | undefined {
  return /did you mean "([^"]+)"/.exec(message)?.[1];
}

/** Issues at a path set on the command line say so (the file does not hold that value). */
function markOverridden(issues: ScenarioIssue[], overrides: readonly ScenarioOverride[]): ScenarioIssue[] {
  return issues.map((i) => {
    const o = overrides.find((x) => {
      const p = parsePath(x.path);
      return p !== null && (i.path === renderPath(p) || i.path.startsWith(renderPath(p) + '.') || i.path.startsWith(renderPath(p) + '['));
    });
    return o ? { ...i, message: `${i.message} (the value comes from --set ${o.path}=${o.value})` } : i;
  });
}

// ---------------------------------------------------------------------------------------
// Durations.

/** Seconds (a number) or `1h30m`, `90s`, `250ms` → ms. */
export function durationMs(v: number | string): number {
  if (typeof v === 'number') return Math.round(v * 1000);
  let ms = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)\s*(ms|h|m|s)/g)) {
    const n = Number(m[1]);
    ms += m[2] === 'h' ? n * 3_600_000 : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n;
  }
  return Math.round(ms);
}

/** ms → `1h30m`, `10m`, `45s`, `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}` || `${ms}ms`;
}

// ---------------------------------------------------------------------------------------
// Loading.

function loadRegionDir(scenario: ParsedFile, dirSpec: string, issues: ScenarioIssue[]): SimRegion[] {
  const dir = resolve(dirname(scenario.file), dirSpec);
  const at = { file: scenario.file, ...locateIn(scenario, ['regions', 'dir']), path: 'regions.dir' };
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
    names = readdirSync(dir)
      .filter((n) => (n.endsWith('.yaml') || n.endsWith('.yml')) && !n.startsWith('.'))
      .sort();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    issues.push({ ...at, message: `cannot read the regions folder ${dir} (${code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'it is not a folder' : (code ?? String(e))}): give a folder of region files relative to the scenario file, e.g. ../../regions` });
    return [];
  }
  if (names.length < 2) {
    issues.push({ ...at, message: `the regions folder ${dir} has ${names.length} region file(s): the simulator needs at least 2` });
    return [];
  }
  const out: SimRegion[] = [];
  for (const n of names) {
    const rp = parseYamlFile(join(dir, n), issues);
    if (!rp) continue;
    const before = issues.length;
    if (rp.data === null || typeof rp.data !== 'object' || Array.isArray(rp.data)) {
      issues.push({ file: rp.file, path: '', message: 'expected a region (id:, name:, location:, endpoints:, …) as key: value lines (see regions/README.md)' });
      continue;
    }
    // Defaults first (bias: 0), as the configuration loader fills them.
    rp.data = Value.Default(RegionSchema, rp.data);
    issues.push(...schemaIssues(rp, RegionSchema));
    if (issues.length > before) continue;
    const r = rp.data as RegionConfig;
    if (r.capacity?.units === undefined) {
      issues.push({ file: rp.file, ...locateIn(rp, [], 'key'), path: 'capacity', message: 'the simulator needs the region\'s capacity: add capacity: { units: N } (e.g. its GPUs)' });
      continue;
    }
    const v4 = r.endpoints.map((e) => e.address).filter((a) => isIP(a) === 4);
    if (v4.length === 0) {
      issues.push({ file: rp.file, ...locateIn(rp, ['endpoints']), path: 'endpoints', message: 'the simulator answers A queries: give the region at least one IPv4 endpoint' });
      continue;
    }
    out.push({
      id: r.id,
      name: r.name,
      lat: r.location.lat,
      lon: r.location.lon,
      bias: r.bias ?? 0,
      capacityUnits: r.capacity.units,
      ...(r.power?.importLimitW !== undefined ? { importLimitW: r.power.importLimitW } : {}),
      ...(r.power?.fullLoadW !== undefined ? { fullLoadW: r.power.fullLoadW } : {}),
      v4,
    });
  }
  return out;
}

/** A setting given on the command line (--set PATH=VALUE): VALUE is read as YAML (30m, 0.5, false, { a: 1 }). */
export interface ScenarioOverride {
  path: string;
  value: string;
}

/** `events[0].notice` or `events.0.notice` → ['events', 0, 'notice']; null when malformed. */
export function parsePath(path: string): (string | number)[] | null {
  if (!/^[A-Za-z_][\w-]*(\[\d+\]|\.[\w-]+)*$/.test(path)) return null;
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([\w-]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : /^\d+$/.test(m[1]!) ? Number(m[1]) : m[1]!);
  return out;
}

/** Applies overrides to parsed data (creating mappings on the way); problems as issues. */
function applyOverrides(p: ParsedFile, overrides: readonly ScenarioOverride[], issues: ScenarioIssue[]): void {
  for (const o of overrides) {
    const path = parsePath(o.path);
    const where = { file: `${p.file} (--set ${o.path}=${o.value})`, path: o.path };
    if (!path || path.length === 0) {
      issues.push({ ...where, message: 'the path is not a setting path: write it like events[0].notice or policies.gridsteer.ttl' });
      continue;
    }
    let value: unknown;
    try {
      value = parseYaml(o.value);
    } catch (e) {
      issues.push({ ...where, message: `the value is not valid YAML (${(e as Error).message.split('\n')[0]}): quote it or fix it` });
      continue;
    }
    let node = p.data as Record<string | number, unknown>;
    let ok = true;
    for (let i = 0; i < path.length - 1; i++) {
      const seg = path[i]!;
      let next = node[seg];
      if (next === undefined || next === null) {
        if (typeof seg === 'number' || typeof path[i + 1] === 'number') {
          issues.push({ ...where, message: `${renderPath(path.slice(0, i + 1))} does not exist in the file: a list item can only be changed, not added` });
          ok = false;
          break;
        }
        next = node[seg] = {};
      }
      if (typeof next !== 'object') {
        issues.push({ ...where, message: `${renderPath(path.slice(0, i + 1))} is ${JSON.stringify(next)}, not a mapping or list: shorten the path` });
        ok = false;
        break;
      }
      node = next as Record<string | number, unknown>;
    }
    if (ok) node[path[path.length - 1]!] = value;
  }
}

/** Planner settings whose value is a record of fixed keys (checked key by key). */
const FIXED_KEY_SETTINGS = ['drain', 'saturation', 'stale'];

/** The planner settings a scenario may replace: every key of defaultSettings() but regions. */
export function plannerKeys(): string[] {
  return Object.keys(defaultSettings([])).filter((k) => k !== 'regions');
}

/**
 * Reads and checks a scenario file. Throws ScenarioError (every problem found) and nothing
 * else for bad input.
 */
export function loadScenario(file: string, overrides: readonly ScenarioOverride[] = []): Scenario {
  const abs = resolve(file);
  const issues: ScenarioIssue[] = [];
  const p = parseYamlFile(abs, issues);
  if (!p) throw new ScenarioError(issues);
  if (p.data === null || typeof p.data !== 'object' || Array.isArray(p.data)) {
    throw new ScenarioError([{ file: abs, path: '', message: 'expected a scenario as key: value lines (title:, hours:, regions:, events:, …; see bench/scenarios/README.md)' }]);
  }
  applyOverrides(p, overrides, issues);
  if (issues.length > 0) throw new ScenarioError(issues);
  issues.push(...schemaIssues(p, ScenarioSchema));
  if (issues.length > 0) throw new ScenarioError(markOverridden(issues, overrides));
  const f = p.data as ScenarioFile;
  const issue = (path: (string | number)[], message: string, at: 'key' | 'value' = 'value') => issues.push({ file: abs, ...locateIn(p, path, at), path: renderPath(path), message });

  // The fleet.
  let regions: SimRegion[] = [];
  let regionsFrom = 'inline';
  if ((f.regions.dir === undefined) === (f.regions.list === undefined)) {
    issue(['regions'], 'give exactly one of dir (a folder of region files) or list (the regions inline)', 'key');
  } else if (f.regions.dir !== undefined) {
    regions = loadRegionDir(p, f.regions.dir, issues);
    regionsFrom = f.regions.dir;
  } else {
    regions = f.regions.list!.map((r, i) => ({
      id: r.id,
      name: r.name ?? r.id,
      lat: r.lat,
      lon: r.lon,
      bias: r.bias ?? 0,
      capacityUnits: r.capacityUnits,
      ...(r.importLimitW !== undefined ? { importLimitW: r.importLimitW } : {}),
      ...(r.fullLoadW !== undefined ? { fullLoadW: r.fullLoadW } : {}),
      v4: [r.address ?? `198.18.0.${i + 1}`],
    }));
    f.regions.list!.forEach((r, i) => {
      if (r.address !== undefined && isIP(r.address) !== 4) issue(['regions', 'list', i, 'address'], `must be an IPv4 address (got ${r.address}): the simulator answers A queries`);
    });
  }
  const ids = new Set<string>();
  regions.forEach((r, i) => {
    if (ids.has(r.id)) issue(f.regions.list ? ['regions', 'list', i, 'id'] : ['regions', 'dir'], `region id "${r.id}" appears twice: give every region its own id`);
    ids.add(r.id);
  });

  const hoursMs = Math.round(f.hours * 3_600_000);
  const epochText = f.epoch ?? DEFAULT_EPOCH;
  const epoch = Date.parse(epochText);
  if (!Number.isFinite(epoch)) issue(['epoch'], `is not a valid time (got ${epochText}): write a UTC time such as ${DEFAULT_EPOCH}`);

  // Events and their facts.
  const eventIds = new Set<string>();
  const events: ScenarioEvent[] = [];
  f.events.forEach((e, i) => {
    const at = durationMs(e.at);
    const dur = durationMs(e.duration);
    const notice = e.notice === undefined ? 0 : durationMs(e.notice);
    if (eventIds.has(e.id)) issue(['events', i, 'id'], `event id "${e.id}" appears twice: give every event its own id`);
    eventIds.add(e.id);
    if (regions.length > 0 && !ids.has(e.region)) issue(['events', i, 'region'], `"${e.region}" is not a region of the fleet: use one of ${[...ids].sort().join(', ')}`);
    if (dur <= 0) issue(['events', i, 'duration'], 'must be longer than 0: give how long the event lasts, e.g. 1h');
    if (at >= hoursMs) issue(['events', i, 'at'], `starts at ${formatDuration(at)}, after the simulation ends (hours: ${f.hours}): start it earlier or raise hours`);
    else if (at + dur > hoursMs) issue(['events', i, 'duration'], `the event ends at ${formatDuration(at + dur)}, after the simulation ends (${formatDuration(hoursMs)}): shorten it or raise hours to at least ${Math.ceil(((at + dur) / 3_600_000) * 100) / 100}`);
    let effect: EventEffect;
    if (e.effect.kind === 'throttle') {
      if (e.effect.share === undefined) issue(['events', i, 'effect'], 'a throttle needs share: the share of GPUs lost, e.g. share: 0.5', 'key');
      effect = { kind: 'throttle', share: e.effect.share ?? 0.5 };
    } else {
      if (e.effect.share !== undefined) issue(['events', i, 'effect', 'share'], `only a throttle has a share: remove it (${e.effect.kind === 'none' ? 'none changes nothing on the region' : 'power-off stops the region entirely'})`, 'key');
      effect = { kind: e.effect.kind };
    }
    const T = epoch + at;
    const E = T + dur;
    const announce = T - notice;
    const facts: ScenarioFact[] = [];
    (e.facts ?? []).forEach((fa, j) => {
      const base = { ...(fa.value ?? {}) };
      const value: Record<string, unknown> = fa.kind === 'grid.event' ? { id: e.id, ...base, start: T, end: E } : { ...base, start: T, end: E, issued: announce };
      const key = fa.key ?? (fa.kind === 'grid.event' ? String(value.id) : typeof value.zone === 'string' ? value.zone : 'zone');
      const signal: Signal = { region: e.region, kind: fa.kind as SignalKind, source: fa.source, key, observedAt: announce, expiresAt: E + 1, value };
      if (Number.isFinite(epoch) && ids.has(e.region)) {
        try {
          validateSignal(signal, announce, ids);
        } catch (err) {
          if (!(err instanceof SignalError)) throw err;
          const field = err.field === '(signal)' ? [] : err.field.split('.');
          const fixed = field[0] === 'value' && (field[1] === 'start' || field[1] === 'end' || field[1] === 'issued');
          const msg = err.message.slice(err.field.length + 2);
          issue(['events', i, 'facts', j, ...field], `${msg}${fixed ? ' (start and end come from the event\'s at and duration)' : ''}`);
        }
      }
      facts.push({ kind: fa.kind, source: fa.source, key, value, repeatMs: fa.repeat === undefined ? 60_000 : durationMs(fa.repeat) });
      if (fa.repeat !== undefined && durationMs(fa.repeat) < 1000) issue(['events', i, 'facts', j, 'repeat'], 'must be at least 1s: a source cannot re-report faster than that here');
    });
    // Changes told later: the world follows the final truth (the last end told, or the cancellation).
    const changes: EventChange[] = [];
    let end = at + dur;
    let prevAt = at - notice;
    let trueEffect = effect;
    (e.changes ?? []).forEach((c, k) => {
      const here = ['events', i, 'changes', k];
      const cAt = durationMs(c.at);
      if (changes.some((x) => x.cancelled)) issue(here, 'comes after the cancellation: a cancelled event changes no more');
      if ((c.end === undefined) === (c.cancelled === undefined)) issue(here, 'give exactly one of end (a new end) or cancelled: true', 'key');
      if (cAt <= prevAt) issue([...here, 'at'], `must be after ${k === 0 ? 'the announcement (at − notice)' : 'the change before'} (${formatDuration(prevAt)})`);
      else if (cAt >= end) issue([...here, 'at'], `must be before the end told so far (${formatDuration(end)}): an event over changes no more`);
      if (c.end !== undefined) {
        const newEnd = durationMs(c.end);
        if (newEnd <= Math.max(at, cAt)) issue([...here, 'end'], `must be after T (${formatDuration(at)}) and after the change (${formatDuration(cAt)})`);
        else if (newEnd > hoursMs) issue([...here, 'end'], `ends at ${formatDuration(newEnd)}, after the simulation ends (${formatDuration(hoursMs)})`);
        end = newEnd;
        changes.push({ atMs: cAt, endMs: newEnd });
      } else {
        changes.push({ atMs: cAt, cancelled: true });
        if (cAt <= at) trueEffect = { kind: 'none' };
        else end = cAt;
      }
      prevAt = cAt;
    });
    events.push({ id: e.id, region: e.region, atMs: at, durationMs: end - at, noticeMs: notice, effect: trueEffect, facts, changes, announcedDurationMs: dur });
  });

  // The world.
  const w = f.world ?? {};
  const session: SessionLengthParams = { ...DEFAULT_SESSION_LENGTH, ...(w.session ?? {}) };
  if (session.tailMaxS <= session.tailMinS) issue(['world', 'session', 'tailMaxS'], `must be greater than tailMinS (${session.tailMinS})`);
  const demandShare = w.demandShare ? (Object.fromEntries(CONTINENTS.map((c) => [c, w.demandShare![c] ?? 0])) as Record<Continent, number>) : DEFAULT_WORLD.demandShare;
  if (CONTINENTS.reduce((s, c) => s + demandShare[c], 0) <= 0) issue(['world', 'demandShare'], 'give at least one continent a share above 0');
  const world: WorldParams = {
    sessionsPerHour: w.sessionsPerHour ?? DEFAULT_WORLD.sessionsPerHour,
    subnets: w.subnets ?? DEFAULT_WORLD.subnets,
    clientsPerSubnet: w.clientsPerSubnet ?? DEFAULT_WORLD.clientsPerSubnet,
    resolvers: w.resolvers ?? DEFAULT_WORLD.resolvers,
    clampingResolvers: w.clampingResolvers ?? DEFAULT_WORLD.clampingResolvers,
    clampTtlS: w.clampTtl ?? DEFAULT_WORLD.clampTtlS,
    ttlIgnoringClients: w.ttlIgnoringClients ?? DEFAULT_WORLD.ttlIgnoringClients,
    idleTimeoutMs: w.idleTimeout === undefined ? DEFAULT_WORLD.idleTimeoutMs : durationMs(w.idleTimeout),
    session,
    fleetHeadroom: w.fleetHeadroom ?? DEFAULT_WORLD.fleetHeadroom,
    demandShare,
    retryBackoffMs: w.retryBackoff ? w.retryBackoff.map(durationMs) : DEFAULT_WORLD.retryBackoffMs,
    warmupMs: w.warmup === undefined ? DEFAULT_WORLD.warmupMs : durationMs(w.warmup),
    scrapeIntervalMs: w.scrapeInterval === undefined ? DEFAULT_WORLD.scrapeIntervalMs : durationMs(w.scrapeInterval),
    scrapeSource: w.scrapeSource ?? DEFAULT_WORLD.scrapeSource,
    probeIntervalMs: w.probeInterval === undefined ? DEFAULT_WORLD.probeIntervalMs : durationMs(w.probeInterval),
    name: w.name ?? DEFAULT_WORLD.name,
    bucketMs: w.bucket === undefined ? DEFAULT_WORLD.bucketMs : durationMs(w.bucket),
    noEcsResolvers: w.noEcsResolvers ?? DEFAULT_WORLD.noEcsResolvers,
    cutRetry: {
      share: w.cutRetry?.share ?? DEFAULT_WORLD.cutRetry.share,
      delayMs: w.cutRetry?.delay === undefined ? DEFAULT_WORLD.cutRetry.delayMs : durationMs(w.cutRetry.delay),
    },
    dailyCycle: { amplitude: w.dailyCycle?.amplitude ?? DEFAULT_WORLD.dailyCycle.amplitude, peakHour: w.dailyCycle?.peakHour ?? DEFAULT_WORLD.dailyCycle.peakHour },
    noEcsDistant: w.noEcsDistant ?? DEFAULT_WORLD.noEcsDistant,
    loadNoise: w.loadNoise ?? DEFAULT_WORLD.loadNoise,
  };
  for (const [k, min] of [
    ['scrapeInterval', 1000],
    ['probeInterval', 1000],
    ['bucket', 10_000],
  ] as const) {
    const v = k === 'scrapeInterval' ? world.scrapeIntervalMs : k === 'probeInterval' ? world.probeIntervalMs : world.bucketMs;
    if (v < min) issue(['world', k], `must be at least ${formatDuration(min)} (got ${formatDuration(v)})`);
  }
  if (world.idleTimeoutMs < 1000) issue(['world', 'idleTimeout'], `must be at least 1s (got ${formatDuration(world.idleTimeoutMs)})`);

  // Policies.
  const po = f.policies ?? {};
  const gs = po.gridsteer ?? {};
  const planner = gs.planner ?? {};
  const defaults = defaultSettings([]) as unknown as Record<string, unknown>;
  const known = plannerKeys();
  for (const [k, v] of Object.entries(planner)) {
    if (!known.includes(k)) {
      const near = closest(k, known);
      issue(['policies', 'gridsteer', 'planner', k], `unknown planner setting "${k}": ${near ? `did you mean "${near}"? ` : ''}the settings are ${known.join(', ')}`, 'key');
      continue;
    }
    const d = defaults[k];
    const kind = (x: unknown) => (Array.isArray(x) ? 'a list' : x === null ? 'null' : typeof x === 'object' ? 'a mapping' : `a ${typeof x}`);
    if (kind(v) !== kind(d)) {
      issue(['policies', 'gridsteer', 'planner', k], `must be ${kind(d)} like the default ${JSON.stringify(d)}${got(v)}`);
      continue;
    }
    // Settings that are records of fixed keys (drain, saturation, stale): each key is merged, so each must be known.
    if (FIXED_KEY_SETTINGS.includes(k)) {
      const dm = d as Record<string, unknown>;
      for (const [sk, sv] of Object.entries(v as Record<string, unknown>)) {
        const here = ['policies', 'gridsteer', 'planner', k, sk];
        if (!(sk in dm)) {
          const near = closest(sk, Object.keys(dm));
          issue(here, `unknown key "${sk}" of ${k}: ${near ? `did you mean "${near}"? ` : ''}the keys are ${Object.keys(dm).join(', ')}`, 'key');
        } else if (kind(sv) !== kind(dm[sk])) issue(here, `must be ${kind(dm[sk])} like the default ${JSON.stringify(dm[sk])}${got(sv)}`);
      }
    }
  }
  const policies: PolicyParams = {
    static: { ttl: po.static?.ttl ?? DEFAULT_POLICIES.static.ttl },
    reactive: {
      ttl: po.reactive?.ttl ?? DEFAULT_POLICIES.reactive.ttl,
      checkIntervalMs: po.reactive?.checkInterval === undefined ? DEFAULT_POLICIES.reactive.checkIntervalMs : durationMs(po.reactive.checkInterval),
      failureThreshold: po.reactive?.failureThreshold ?? DEFAULT_POLICIES.reactive.failureThreshold,
      successThreshold: po.reactive?.successThreshold ?? DEFAULT_POLICIES.reactive.successThreshold,
      check: po.reactive?.check ?? DEFAULT_POLICIES.reactive.check,
    },
    gridsteer: {
      ttl: gs.ttl ?? DEFAULT_POLICIES.gridsteer.ttl,
      minTtl: gs.minTtl ?? DEFAULT_POLICIES.gridsteer.minTtl,
      goaway: gs.goaway ?? DEFAULT_POLICIES.gridsteer.goaway,
      whenAllDown: gs.whenAllDown ?? DEFAULT_POLICIES.gridsteer.whenAllDown,
      demand: gs.demand ?? DEFAULT_POLICIES.gridsteer.demand,
      planner: { ...planner },
      hook: {
        enabled: gs.hook?.enabled ?? DEFAULT_HOOK.enabled,
        delayMs: gs.hook?.delay === undefined ? DEFAULT_HOOK.delayMs : durationMs(gs.hook.delay),
        failureRate: gs.hook?.failureRate ?? DEFAULT_HOOK.failureRate,
        retries: gs.hook?.retries ?? DEFAULT_HOOK.retries,
        retryBaseMs: gs.hook?.retryBase === undefined ? DEFAULT_HOOK.retryBaseMs : durationMs(gs.hook.retryBase),
        progressiveGoaway: gs.hook?.progressiveGoaway ?? DEFAULT_HOOK.progressiveGoaway,
        refuse: gs.hook?.refuse ?? DEFAULT_HOOK.refuse,
      },
      capacityUnits: { ...(gs.capacityUnits ?? {}) },
    },
  };
  for (const id of Object.keys(policies.gridsteer.capacityUnits)) {
    if (regions.length > 0 && !ids.has(id)) issue(['policies', 'gridsteer', 'capacityUnits', id], `"${id}" is not a region of the fleet: use one of ${[...ids].sort().join(', ')}`, 'key');
  }
  if (policies.gridsteer.hook.failureRate >= 1) issue(['policies', 'gridsteer', 'hook', 'failureRate'], 'must be below 1: with every attempt failing the gateway would never hear of a drain (use enabled: false for no hook)');
  if (policies.gridsteer.hook.retryBaseMs < 10) issue(['policies', 'gridsteer', 'hook', 'retryBase'], 'must be at least 10ms, as the hook\'s retryBaseMs');
  if (policies.reactive.checkIntervalMs < 1000) issue(['policies', 'reactive', 'checkInterval'], 'must be at least 1s');

  // Trust.
  const trust: TrustParams = {
    bindings: Object.fromEntries(Object.entries(f.trust?.bindings ?? {}).map(([k, v]) => [k, [...v]])),
    principals: Object.fromEntries(Object.entries(f.trust?.principals ?? {}).map(([k, v]) => [k, { principal: v.principal, granted: v.granted ?? true }])),
  };
  for (const [src, bound] of Object.entries(trust.bindings)) {
    bound.forEach((r, j) => {
      if (regions.length > 0 && !ids.has(r)) issue(['trust', 'bindings', src, j], `"${r}" is not a region of the fleet: use one of ${[...ids].sort().join(', ')}`);
    });
  }
  // Operator actions.
  const operator: OperatorAction[] = [];
  const fileIndex: [OperatorAction, number][] = [];
  (f.operator ?? []).forEach((o, i) => {
    const here = ['operator', i];
    const atMs = durationMs(o.at);
    const a: OperatorAction = { atMs, action: o.action, reason: o.reason ?? 'scenario' };
    if (atMs >= hoursMs) issue([...here, 'at'], `is after the simulation ends (${formatDuration(hoursMs)})`);
    const fleetWide = o.action === 'distrust' || o.action === 'freeze' || o.action === 'unfreeze';
    if (o.action === 'distrust') {
      if ((o.source === undefined) === (o.principal === undefined)) issue(here, 'a distrust names exactly one of source (a source prefix) or principal', 'key');
      if (o.source !== undefined) a.source = o.source;
      if (o.principal !== undefined) a.principal = o.principal;
    }
    if (fleetWide) {
      if (o.region !== undefined) issue([...here, 'region'], `a ${o.action} is fleet-wide: remove region`, 'key');
      if (o.action !== 'distrust') for (const k of ['source', 'principal'] as const) if (o[k] !== undefined) issue([...here, k], `only a distrust names a ${k}: remove it`, 'key');
    } else {
      if (o.region === undefined) issue(here, `a ${o.action} needs region`, 'key');
      else if (regions.length > 0 && !ids.has(o.region)) issue([...here, 'region'], `"${o.region}" is not a region of the fleet: use one of ${[...ids].sort().join(', ')}`);
      else a.region = o.region;
      for (const k of ['source', 'principal'] as const) if (o[k] !== undefined) issue([...here, k], `only a distrust names a ${k}: remove it`, 'key');
    }
    for (const k of ['ramp', 'by'] as const) if (o[k] !== undefined && o.action !== 'drain') issue([...here, k], `only a drain has ${k}: remove it`, 'key');
    if (o.value !== undefined && o.action !== 'drain' && o.action !== 'weight') issue([...here, 'value'], 'only a drain or a weight has value: remove it', 'key');
    if (o.action === 'weight' && o.value === undefined) issue([...here, 'value'], 'a weight needs value: the admission weight in [0, 1]', 'key');
    if (o.action === 'force-up' && o.until === undefined) issue([...here, 'until'], 'a force-up needs until: a forgotten force-up keeps a dead region in service', 'key');
    if (o.value !== undefined) a.value = o.value;
    if (o.ramp !== undefined) a.rampMs = durationMs(o.ramp);
    if (o.by !== undefined) {
      a.byMs = durationMs(o.by);
      if (a.byMs <= atMs) issue([...here, 'by'], `must be after at (${formatDuration(atMs)}): the deadline by which the region is drained`);
    }
    if (o.until !== undefined) {
      a.untilMs = durationMs(o.until);
      if (o.action === 'undrain' || o.action === 'unfreeze') issue([...here, 'until'], `an ${o.action} acts at its instant and ends nothing later: remove until`, 'key');
      else if (a.untilMs <= Math.max(atMs, a.byMs ?? atMs)) issue([...here, 'until'], `must be after at${a.byMs !== undefined ? ' and by' : ''}`);
    }
    operator.push(a);
    fileIndex.push([a, i]);
  });
  operator.sort((x, y) => x.atMs - y.atMs);
  // As the API refuses it: a freeze while automation is frozen (switch it off first: unfreeze, or the freeze's until).
  let frozenUntil = -Infinity;
  let frozenBy = -1;
  for (const [a, i] of [...fileIndex].sort((x, y) => x[0].atMs - y[0].atMs || x[1] - y[1])) {
    if (a.action === 'unfreeze') frozenUntil = Math.min(frozenUntil, a.atMs);
    if (a.action !== 'freeze') continue;
    if (a.atMs < frozenUntil) issue(['operator', i, 'at'], `automation is already frozen by operator[${frozenBy}] then: give that freeze an until, or an unfreeze before ${formatDuration(a.atMs)}`);
    frozenUntil = a.untilMs ?? Infinity;
    frozenBy = i;
  }

  // Recurring windows, checked and parsed as the configuration's (gslb/control/setup.ts).
  const drainSet = { ...defaults.drain as Record<string, unknown>, ...((planner.drain ?? {}) as Record<string, unknown>) } as { maxAutoShare: number; minDrainIntervalMs: number };
  const safety = safetyFactsOf({ policy: { drain: drainSet }, names: [{ name: world.name }] }, regions.map((r) => ({ id: r.id, capacity: { units: r.capacityUnits } })));
  const windows: PlannerWindow[] = [];
  (f.windows ?? []).forEach((spec, i) => {
    const full: WindowSpec = { ...spec, kind: spec.kind ?? 'maintenance', timezone: spec.timezone ?? 'UTC', cap: spec.cap ?? 0 };
    const r = checkWindow(full, ids, safety, 'config');
    for (const pr of r.problems) issue(['windows', i, ...pr.path], pr.message);
    if (r.window) windows.push(r.window);
  });

  if ((planner.gridLoss as { bindings?: unknown } | undefined)?.bindings !== undefined) {
    issue(['policies', 'gridsteer', 'planner', 'gridLoss', 'bindings'], 'set the bindings under trust.bindings (with trust.principals saying who writes each source)', 'key');
  }

  if (issues.length > 0) throw new ScenarioError(markOverridden(issues, overrides));
  return {
    file: abs,
    name: f.name ?? basename(abs).replace(/\.ya?ml$/, ''),
    title: f.title,
    description: (f.description ?? '').trim(),
    seed: f.seed ?? 1,
    hoursMs,
    epoch,
    regionsFrom,
    regions,
    events,
    world,
    policies,
    trust,
    operator,
    windows,
  };
}
