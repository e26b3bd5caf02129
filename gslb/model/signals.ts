/**
 * Signal payloads per kind, and the signal envelope, as TypeBox schemas with their static
 * types: the one declaration of what a fact looks like, read by collectors (to build
 * values), the state layer (to validate them), the planner (to read them) and the API (to
 * describe them). Declarations only; validation is gslb/state/signals.ts.
 *
 * Units: times ms epoch, power W, energy Wh, shares in [0, 1].
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { SignalKind } from './types.js';

const strict = { additionalProperties: false } as const;
const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });
const NonNeg = (description: string) => Type.Number({ minimum: 0, description });
const Ms = (description: string) => Type.Integer({ minimum: 0, description });

export const HealthProbeValue = Type.Object(
  {
    up: Type.Boolean({ description: 'the probe succeeded' }),
    latencyMs: Type.Optional(NonNeg('round-trip time of the probe')),
    detail: Type.Optional(Type.String({ maxLength: 500, description: 'what failed, in words' })),
  },
  { ...strict, description: 'one probe result; source = the vantage node (health/<node>), key = the endpoint probed' },
);

export const LoadMetricsValue = Type.Object(
  {
    queueDepth: Type.Optional(NonNeg('requests waiting for a slot')),
    runningRequests: Type.Optional(NonNeg('requests being served')),
    kvCacheUse: Type.Optional(Share('KV-cache utilisation')),
    gpuMemoryUse: Type.Optional(Share('GPU memory utilisation')),
    throttledShare: Type.Optional(Share('share of GPUs thermally or power throttled')),
  },
  { ...strict, minProperties: 1, description: 'model-server load; key = the server or pool' },
);

export const CapacityValue = Type.Object(
  {
    fraction: Type.Optional(Share('usable share of the region\'s configured capacity')),
    units: Type.Optional(NonNeg('usable capacity in the fleet\'s unit (e.g. GPUs)')),
  },
  { ...strict, minProperties: 1, description: 'usable capacity: a fraction, units, or both' },
);

export const PowerBudgetValue = Type.Object(
  {
    importLimitW: Type.Optional(NonNeg('grid import limit now, W')),
    generationW: Type.Optional(NonNeg('on-site generation now, W')),
    storageWh: Type.Optional(NonNeg('energy left in on-site storage, Wh')),
    storageMaxW: Type.Optional(NonNeg('the storage\'s maximum discharge power, W')),
    drawW: Type.Optional(NonNeg('the site\'s draw now, W')),
  },
  { ...strict, minProperties: 1, description: 'the power a site can use; key = the meter or site' },
);

/** What a grid event says, as its source says it; what it means for traffic is gridPolicy's. */
export const GRID_EVENT_TYPES = ['simple', 'import-capacity-limit', 'dispatch-setpoint', 'grid-emergency', 'load-shed', 'cap', 'drain'] as const;
export type GridEventType = (typeof GRID_EVENT_TYPES)[number];

export const GridEventValue = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200, description: 'the event id at its source' }),
    start: Ms('when the event starts'),
    end: Ms('when it ends'),
    type: Type.Union(GRID_EVENT_TYPES.map((t) => Type.Literal(t)), {
      description:
        'simple (OpenADR SIMPLE, with level), import-capacity-limit and dispatch-setpoint (with limitW), grid-emergency (OpenADR ALERT_GRID_EMERGENCY), load-shed (a utility order), cap (with cap) or drain (direct instructions, e.g. from a site controller)',
    }),
    level: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'for simple: the OpenADR SIMPLE level 0–3' })),
    limitW: Type.Optional(NonNeg('for import-capacity-limit and dispatch-setpoint: the limit or setpoint, W')),
    cap: Type.Optional(Share('for cap: the share of capacity the region may use during the event')),
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'the source\'s priority (OpenADR: lower number wins)' })),
    cancelled: Type.Optional(Type.Boolean({ description: 'the source cancelled the event' })),
    program: Type.Optional(Type.String({ maxLength: 200, description: 'e.g. the OpenADR program or the ISO notice' })),
  },
  { ...strict, description: 'a scheduled grid obligation as its source states it; key = the event id' },
);

export const GRID_ALERT_TYPES = ['normal', 'watch', 'conservation', 'flex-alert', 'eea', 'grid-alert', 'load-shed', 'emergency'] as const;
export type GridAlertType = (typeof GRID_ALERT_TYPES)[number];

export const GridAlertValue = Type.Object(
  {
    level: Type.Integer({ minimum: 0, maximum: 3, description: 'severity 0 normal … 3 most severe (ERCOT EEA1–3 are 1–3)' }),
    type: Type.Optional(
      Type.Union(GRID_ALERT_TYPES.map((t) => Type.Literal(t)), {
        description: 'what was declared (absent = eea): normal, watch, conservation (appeal), flex-alert (CAISO), eea (energy emergency alert, with level), grid-alert (AESO), load-shed, emergency',
      }),
    ),
    zone: Type.Optional(Type.String({ maxLength: 100, description: 'the ISO zone or balancing authority' })),
    message: Type.Optional(Type.String({ maxLength: 2000, description: 'the notice text' })),
    issued: Type.Optional(Ms('when the operator issued it')),
    start: Type.Optional(Ms('when it takes effect, if announced ahead')),
    end: Type.Optional(Ms('when it is expected to end')),
    program: Type.Optional(Type.String({ maxLength: 200, description: 'who declared it' })),
  },
  { ...strict, description: "a grid operator's alert for the region's zone" },
);

export const CarbonValue = Type.Object(
  {
    gPerKWh: Type.Optional(NonNeg('grid carbon intensity')),
    percentile: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'where now ranks in the recent range' })),
  },
  { ...strict, minProperties: 1, description: 'grid carbon intensity' },
);

export const DemandValue = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 254, description: 'the steered name' }),
    bucket: Ms('start of the 10-second bucket (a multiple of 10000)'),
    queries: NonNeg('queries from clients of this home for the name in the bucket'),
  },
  { ...strict, description: 'measured demand; region = the clients\' home' },
);

export const VALUE_SCHEMAS: Record<SignalKind, TSchema> = {
  'health.probe': HealthProbeValue,
  'load.metrics': LoadMetricsValue,
  capacity: CapacityValue,
  'power.budget': PowerBudgetValue,
  'grid.event': GridEventValue,
  'grid.alert': GridAlertValue,
  carbon: CarbonValue,
  demand: DemandValue,
};

export type HealthProbe = Static<typeof HealthProbeValue>;
export type LoadMetrics = Static<typeof LoadMetricsValue>;
export type Capacity = Static<typeof CapacityValue>;
export type PowerBudget = Static<typeof PowerBudgetValue>;
export type GridEvent = Static<typeof GridEventValue>;
export type GridAlert = Static<typeof GridAlertValue>;
export type Carbon = Static<typeof CarbonValue>;
export type Demand = Static<typeof DemandValue>;

export const SIGNAL_KINDS = Object.keys(VALUE_SCHEMAS) as SignalKind[];

/** How far in the future observedAt may be (clock skew between a source and us). */
export const MAX_FUTURE_MS = 5000;

export const SignalEnvelope = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'a region id: lowercase letters, digits and -, e.g. eu-west' }),
    kind: Type.Union(SIGNAL_KINDS.map((k) => Type.Literal(k)), { description: 'what the fact is about; it selects the schema of value' }),
    source: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:/@-]+$', description: 'collector and instance, e.g. health/node-a' }),
    key: Type.String({ maxLength: 200, description: 'tells apart facts of one source about one region' }),
    observedAt: Ms('when the fact was true at its source'),
    expiresAt: Ms('when the fact stops being known'),
    value: Type.Unknown({ description: 'kind-specific payload' }),
  },
  { ...strict, description: 'a fact about one region at one time' },
);
