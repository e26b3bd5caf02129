/**
 * What a site's telemetry says, as a power.budget: the mapped fields, their checks and
 * scaling, plain-JSON payloads, and the observation time. Pure: no I/O, no clock (callers
 * pass `now`), nothing thrown but ReadingError.
 *
 * Units: power W, energy Wh, state of charge % (0–100), times ms epoch.
 */
import { MAX_FUTURE_MS } from '../../gslb/model/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { MAX_WATTS } from '../../gslb/model/domains.js';
import { defineErrors } from '../kit/errors.js';

type PowerBudget = KindValue<'power.budget'>;

/** The fields a site maps to a source metric (a Sparkplug metric name or a JSON field). */
export const FIELDS = ['importLimitW', 'generationW', 'storageWh', 'storageMaxW', 'socPercent', 'drawW'] as const;
export type Field = (typeof FIELDS)[number];

/** The error codes of a refused message (besides the decoder's MQTT_ERR_PB_*), with what each means. */
export const READ_ERRORS = {
  MQTT_ERR_TOO_LARGE: 'the payload is longer than 4 MiB',
  MQTT_ERR_JSON: 'a plain topic\'s payload is not UTF-8 JSON holding an object',
  MQTT_ERR_VALUE: 'a mapped value is not a finite number, is negative or above 10 TW (MAX_WATTS) after scaling, or a state of charge outside 0–100',
} as const;
export type ReadErrorCode = keyof typeof READ_ERRORS;

/** A message refused for a site, with why in words. */
export const ReadingError = defineErrors('collectors/mqtt', READ_ERRORS, { name: 'ReadingError' });
export type ReadingError = InstanceType<typeof ReadingError>;

/** Most payload bytes read from one message (4 MiB). */
export const MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;

/**
 * What one message says about one site: per field the new value (W, Wh or %, scaled), or
 * null when the source says it is not known now (JSON null, Sparkplug is_null). A field
 * absent from the update keeps its last value.
 */
export type Update = Partial<Record<Field, number | null>>;

/** A value, short, for a message: `"12" (a string)`, `true`, `an object`. */
export function shown(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)} (a string)`;
  return String(v);
}

/**
 * A raw source number for `field`, times its scale (default 1): the value in W, Wh or %.
 * Throws ReadingError MQTT_ERR_VALUE when the result is not finite, negative, above MAX_WATTS
 * (gslb/model/domains.ts: a power or energy above 10 TW is a unit mistake), or a state of
 * charge above 100.
 */
export function scaled(field: Field, raw: number, scale: number | undefined, from: string): number {
  const v = raw * (scale ?? 1);
  if (!Number.isFinite(v)) throw new ReadingError('MQTT_ERR_VALUE', `${field} (${from}): ${raw}${scale !== undefined ? ` × ${scale}` : ''} is not a finite number`);
  if (v < 0) throw new ReadingError('MQTT_ERR_VALUE', `${field} (${from}): ${raw}${scale !== undefined ? ` × ${scale}` : ''} = ${v} is negative; a power.budget field is ≥ 0 (a negative scale flips a sign convention)`);
  if (field !== 'socPercent' && v > MAX_WATTS) throw new ReadingError('MQTT_ERR_VALUE', `${field} (${from}): ${raw}${scale !== undefined ? ` × ${scale}` : ''} = ${v} is above ${MAX_WATTS} (10 TW, MAX_WATTS); check the unit and the scale`);
  if (field === 'socPercent' && v > 100) throw new ReadingError('MQTT_ERR_VALUE', `socPercent (${from}): ${v} is above 100 % (scale a 0–1 fraction by 100)`);
  return v;
}

/** The value at `path` in a parsed JSON object: an own field of that exact name, else a dotted path through nested objects. */
export function fieldAt(obj: Record<string, unknown>, path: string): unknown {
  if (Object.hasOwn(obj, path)) return obj[path];
  if (!path.includes('.')) return undefined;
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** Parses a plain topic's payload: a JSON object, else ReadingError MQTT_ERR_JSON (or MQTT_ERR_TOO_LARGE). */
export function parseJsonObject(payload: Uint8Array): Record<string, unknown> {
  if (payload.length > MAX_PAYLOAD_BYTES) throw new ReadingError('MQTT_ERR_TOO_LARGE', `the payload is ${payload.length} bytes, more than ${MAX_PAYLOAD_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch (e) {
    throw new ReadingError('MQTT_ERR_JSON', `the payload is not UTF-8 JSON (${(e as Error).message.slice(0, 200)})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ReadingError('MQTT_ERR_JSON', `the payload is JSON but not an object; got ${shown(v)}`);
  return v as Record<string, unknown>;
}

/**
 * What a parsed JSON object says for a site: its mapped fields (`metrics`: field → JSON
 * field or dotted path) scaled, and its timestamp field (ms epoch number, or an ISO 8601
 * string with a zone) if present and readable. Throws ReadingError MQTT_ERR_VALUE naming the
 * first mapped field that is present but not a number (or null).
 */
export function readJson(
  obj: Record<string, unknown>,
  metrics: Partial<Record<Field, string>>,
  scale: Partial<Record<Field, number>> | undefined,
  timestampField: string,
): { update: Update; timestamp?: number } {
  const update: Update = {};
  for (const f of FIELDS) {
    const path = metrics[f];
    if (path === undefined) continue;
    const v = fieldAt(obj, path);
    if (v === undefined) continue;
    if (v === null) update[f] = null;
    else if (typeof v === 'number') update[f] = scaled(f, v, scale?.[f], `JSON field "${path}"`);
    else throw new ReadingError('MQTT_ERR_VALUE', `${f} (JSON field "${path}"): must be a number or null; got ${shown(v)}`);
  }
  const out: { update: Update; timestamp?: number } = { update };
  const t = fieldAt(obj, timestampField);
  if (typeof t === 'number' && Number.isFinite(t)) out.timestamp = t;
  else if (typeof t === 'string' && t.length <= 64 && /^\d{4}-\d\d-\d\dT.*(Z|[+-]\d\d:?\d\d)$/i.test(t)) {
    const ms = Date.parse(t);
    if (Number.isFinite(ms)) out.timestamp = ms;
  }
  return out;
}

/** A site's current values: per field the last known number (absent = not known). */
export type Values = Partial<Record<Field, number>>;

/** Applies an update to a site's values (null removes the field). */
export function applyUpdate(values: Values, u: Update): void {
  for (const f of FIELDS) {
    if (!(f in u)) continue;
    const v = u[f];
    if (v === null || v === undefined) delete values[f];
    else values[f] = v;
  }
}

/**
 * The power.budget a site's values make, or null when none of its fields is known.
 * storageWh is the mapped storageWh, else socPercent / 100 × storageCapacityWh (SunSpec
 * model 713 style: WHAvail, or SoC of a known capacity).
 */
export function budgetOf(values: Values, storageCapacityWh: number | undefined): PowerBudget | null {
  const b: PowerBudget = {};
  if (values.importLimitW !== undefined) b.importLimitW = values.importLimitW;
  if (values.generationW !== undefined) b.generationW = values.generationW;
  if (values.storageWh !== undefined) b.storageWh = values.storageWh;
  else if (values.socPercent !== undefined && storageCapacityWh !== undefined) b.storageWh = (values.socPercent / 100) * storageCapacityWh;
  if (values.storageMaxW !== undefined) b.storageMaxW = values.storageMaxW;
  if (values.drawW !== undefined) b.drawW = values.drawW;
  return Object.keys(b).length > 0 ? b : null;
}

/** How a message's own timestamp was judged: used, absent, too far ahead, too old (not after now − expireMs). */
export type Clock = 'ok' | 'none' | 'future' | 'old';

/**
 * The observation time of a message received at `now`: its own timestamp when present and
 * sane — not more than MAX_FUTURE_MS ahead of now and not so old that the fact would be
 * born expired (after now − expireMs) — else `now`. Integer ms.
 */
export function observedAtOf(timestamp: number | undefined, now: number, expireMs: number): { observedAt: number; clock: Clock } {
  if (timestamp === undefined) return { observedAt: now, clock: 'none' };
  if (!Number.isFinite(timestamp) || timestamp > now + MAX_FUTURE_MS) return { observedAt: now, clock: 'future' };
  if (timestamp <= now - expireMs) return { observedAt: now, clock: 'old' };
  return { observedAt: Math.floor(timestamp), clock: 'ok' };
}
