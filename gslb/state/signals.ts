/**
 * Signal payloads per kind, and validation of signals arriving from collectors and the push
 * API. A signal either validates completely or is refused with a message naming the field
 * (`value.importLimitW: must be a number ≥ 0`); nothing is coerced or defaulted silently.
 *
 * Units: times ms epoch, power W, energy Wh, shares in [0, 1].
 */
import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import type { Signal, SignalKind } from '../types.js';

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

/** A refused signal: `field` is the JSON path of the first problem (e.g. `value.level`). */
export class SignalError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'SignalError';
  }
}

/** What `schema` accepts, in words: `an integer from 0 to 3`, `one of "cap", "drain"`. */
function expected(schema: TSchema): string {
  const range = (min: unknown, max: unknown): string =>
    typeof min === 'number' && typeof max === 'number' ? ` from ${min} to ${max}` : typeof min === 'number' ? ` ≥ ${min}` : typeof max === 'number' ? ` ≤ ${max}` : '';
  switch (schema[Kind]) {
    case 'Integer':
      return `an integer${range(schema.minimum, schema.maximum)}`;
    case 'Number':
      return `a number${range(schema.minimum, schema.maximum)}`;
    case 'Boolean':
      return 'true or false';
    case 'Literal':
      return JSON.stringify(schema.const);
    case 'Union': {
      const variants = (schema.anyOf as TSchema[]).map(expected);
      return (schema.anyOf as TSchema[]).every((v) => v[Kind] === 'Literal') ? `one of ${variants.join(', ')}` : variants.join(' or ');
    }
    case 'String': {
      const { minLength: lo, maxLength: hi } = schema as { minLength?: number; maxLength?: number };
      const len = lo !== undefined && hi !== undefined ? ` of ${lo} to ${hi} characters` : hi !== undefined ? ` of at most ${hi} characters` : lo !== undefined ? ` of at least ${lo} characters` : '';
      return `a string${len}${schema.pattern ? ` matching ${schema.pattern}` : ''}`;
    }
    case 'Object':
      return 'a JSON object';
    default:
      return 'a value';
  }
}

/** A received value, short, for a message: `"2" (a string)`, `-1`, `an array`. */
function shown(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)} (a string)`;
  return String(v);
}

/** The first problem of `v` against `schema` as a SignalError on the field's dotted path under `prefix`. */
function firstError(schema: TSchema, v: unknown, prefix: string): SignalError | null {
  const e = Value.Errors(schema, v).First();
  if (!e) return null;
  // e.path is a JSON pointer (RFC 6901): /a/b, with ~1 for / and ~0 for ~ inside a name.
  const path = e.path
    .split('/')
    .filter((p) => p !== '')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const field = [prefix, path].filter((p) => p !== '').join('.') || '(signal)';
  const about = e.schema.description ? ` (${e.schema.description})` : '';
  let msg: string;
  switch (e.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      // e.schema is the object holding the unknown field.
      msg = `is not a known field (known: ${Object.keys(e.schema.properties as object).join(', ')}); remove it`;
      break;
    case ValueErrorType.ObjectRequiredProperty:
      msg = `is required${e.schema[Kind] === 'Unknown' ? '' : `: ${expected(e.schema)}`}${about}`;
      break;
    case ValueErrorType.ObjectMinProperties:
      msg = `must have at least one of ${Object.keys(e.schema.properties as object).join(', ')}${about}`;
      break;
    default:
      msg = `must be ${expected(e.schema)}${about}; got ${shown(e.value)}`;
  }
  return new SignalError(field, msg);
}

/**
 * Checks one signal against the envelope, its kind's payload and the time rules, given the
 * receiving node's clock `now` and the regions it knows. Returns the signal (the same
 * object) or throws SignalError naming the field.
 */
export function validateSignal(input: unknown, now: number, regions: ReadonlySet<string>): Signal {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new SignalError('(signal)', `must be a JSON object; got ${shown(input)}`);
  const env = firstError(SignalEnvelope, input, '');
  if (env) throw env;
  const s = input as Signal;
  if (!regions.has(s.region)) throw new SignalError('region', `"${s.region}" is not a region of this fleet (known: ${[...regions].sort().join(', ') || 'none'})`);
  if (s.expiresAt <= s.observedAt) throw new SignalError('expiresAt', `must be after observedAt (${s.observedAt}); got ${s.expiresAt}`);
  if (s.observedAt > now + MAX_FUTURE_MS) {
    throw new SignalError('observedAt', `is ${s.observedAt - now} ms in the future; at most ${MAX_FUTURE_MS} ms is accepted (check the source's clock)`);
  }
  const val = firstError(VALUE_SCHEMAS[s.kind], s.value, 'value');
  if (val) throw val;
  if (s.kind === 'grid.event') {
    const v = s.value as GridEvent;
    if (v.end <= v.start) throw new SignalError('value.end', `must be after value.start (${v.start}); got ${v.end}`);
    if (v.type === 'cap' && v.cap === undefined) throw new SignalError('value.cap', 'is required when value.type is cap');
    if (v.type === 'simple' && v.level === undefined) throw new SignalError('value.level', 'is required when value.type is simple (the OpenADR SIMPLE level 0–3)');
    if ((v.type === 'import-capacity-limit' || v.type === 'dispatch-setpoint') && v.limitW === undefined) {
      throw new SignalError('value.limitW', `is required when value.type is ${v.type} (the limit in W)`);
    }
    if (s.key !== v.id) throw new SignalError('key', `must equal value.id ("${v.id}"): one record per event`);
  }
  if (s.kind === 'demand') {
    const v = s.value as Demand;
    if (v.bucket % 10000 !== 0) throw new SignalError('value.bucket', `must be a multiple of 10000 (10-second buckets); got ${v.bucket}`);
  }
  return s;
}

/** The id of a signal's record: latest per id wins. */
export function signalId(s: Pick<Signal, 'region' | 'kind' | 'source' | 'key'>): string {
  return `${s.region}|${s.kind}|${s.source}|${s.key}`;
}
