/**
 * Validation of signals arriving from collectors and the push API (the payload schemas are
 * declared in gslb/model/signals.ts). A signal either validates completely or is refused with a message naming the field
 * (`value.importLimitW: must be a number ≥ 0`); nothing is coerced or defaulted silently.
 *
 * Units: times ms epoch, power W, energy Wh, shares in [0, 1].
 */
import { Kind, type TSchema } from '@sinclair/typebox';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import type { Signal } from '../model/types.js';
import { MAX_EVENT_MS, MAX_FUTURE_MS, MAX_VALIDITY_MS, SignalEnvelope, VALUE_SCHEMAS } from '../model/signals.js';
import type { KindValue } from '../model/kinds/index.js';
import { INSTANT_MAX, INSTANT_MIN, isoOf } from '../model/domains.js';

type Demand = KindValue<'demand'>;
type GridAlert = KindValue<'grid.alert'>;
type GridEvent = KindValue<'grid.event'>;

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
      if (schema.minimum === INSTANT_MIN && schema.maximum === INSTANT_MAX) return `an instant: integer ms since the epoch, from ${INSTANT_MIN} (2000-01-01) to ${INSTANT_MAX} (2200-01-01)`;
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
export interface ValidateOptions {
  /**
   * Refuse a grid.event whose end has passed (`value.end` ≤ now): what an announcement by hand
   * or through POST /v1/signals must not be. Collectors' replays of past events are stored.
   */
  refuseEnded?: boolean;
}

export function validateSignal(input: unknown, now: number, regions: ReadonlySet<string>, opts: ValidateOptions = {}): Signal {
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
  const maxValidity = MAX_VALIDITY_MS[s.kind];
  if (s.expiresAt - s.observedAt > maxValidity) {
    throw new SignalError('expiresAt', `claims ${Math.round((s.expiresAt - s.observedAt) / 3_600_000)} h of validity; a ${s.kind} fact holds for at most ${maxValidity / 3_600_000} h after observedAt (refresh it instead)`);
  }
  if (s.kind === 'grid.event') {
    const v = s.value as GridEvent;
    if (v.end <= v.start) throw new SignalError('value.end', `must be after value.start (${v.start}); got ${v.end}`);
    if (v.end - v.start > MAX_EVENT_MS) throw new SignalError('value.end', `makes the event last ${Math.round((v.end - v.start) / 86_400_000)} days; at most ${MAX_EVENT_MS / 86_400_000} days (a standing limit belongs in the region's configuration)`);
    if (opts.refuseEnded && v.end <= now) {
      throw new SignalError('value.end', `has passed: ${isoOf(v.end)} is before now (${isoOf(now)}); a grid event that is over is not announced (a time relative to now, e.g. now + 1 h, is what was meant?)`);
    }
    if (v.type === 'cap' && v.cap === undefined) throw new SignalError('value.cap', 'is required when value.type is cap');
    if (v.type === 'simple' && v.level === undefined) throw new SignalError('value.level', 'is required when value.type is simple (the OpenADR SIMPLE level 0–3)');
    if ((v.type === 'import-capacity-limit' || v.type === 'dispatch-setpoint') && v.limitW === undefined) {
      throw new SignalError('value.limitW', `is required when value.type is ${v.type} (the limit in W)`);
    }
    if (s.key !== v.id) throw new SignalError('key', `must equal value.id ("${v.id}"): one record per event`);
  }
  if (s.kind === 'grid.alert') {
    const v = s.value as GridAlert;
    if (v.start !== undefined && v.end !== undefined && v.end <= v.start) throw new SignalError('value.end', `must be after value.start (${v.start}); got ${v.end}`);
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
