/**
 * Pure readers of the two providers' answers (no I/O, `now` passed in): each takes the parsed
 * JSON body and returns the one number the carbon fact carries plus the time it is for, or
 * throws a CarbonError saying what is wrong. Nothing is coerced: a string "302" is not a
 * number, null is not a value, a negative intensity or a percentile above 100 is refused.
 *
 * Field lists follow the providers' public documentation (see fixtures/README.md):
 * - Electricity Maps `GET /v3/carbon-intensity/latest?zone=<zone>` → `{zone, carbonIntensity
 *   (gCO2eq/kWh), datetime, updatedAt, createdAt?, emissionFactorType?, isEstimated?,
 *   estimationMethod?, temporalGranularity?}`;
 * - WattTime v3 `GET /login` → `{token}`; `GET /v3/signal-index?region=<ba>&signal_type=co2_moer`
 *   → `{data: [{point_time, value (0–100 percentile)}], meta: {region, signal_type, units, …}}`.
 */
import { defineErrors } from '../kit/errors.js';

/**
 * Why a provider gave no fact, as a stable code (docs/conventions.md "Errors carry codes"). Every failure the
 * collector counts or logs carries one; README.md lists them.
 */
export const CARBON_ERRORS = {
  CARBON_ERR_CONFIG: 'the configuration cannot be run (start refuses it)',
  CARBON_ERR_SECRET: 'a token or password file is missing, empty, too large or holds characters a header cannot carry',
  CARBON_ERR_NETWORK: 'the provider could not be reached (refused, reset, DNS)',
  CARBON_ERR_TIMEOUT: 'no complete answer within timeoutMs',
  CARBON_ERR_AUTH: 'the provider refused the credentials (401/403, or 401 again after a fresh WattTime login)',
  CARBON_ERR_RATE_LIMITED: 'the provider answered 429',
  CARBON_ERR_HTTP: 'any other status than 200 (redirects are not followed: they would carry the credentials elsewhere)',
  CARBON_ERR_TOO_LARGE: 'the body is larger than 4 MiB',
  CARBON_ERR_BAD_JSON: 'the body is not JSON',
  CARBON_ERR_PAYLOAD: 'the JSON lacks a field, has a wrong type, or a value out of range',
  CARBON_ERR_STALE: 'the data is older than maxAgeMs',
} as const;

export type CarbonErrorCode = keyof typeof CARBON_ERRORS;

/** A failure with its code; `message` starts with `collectors/carbon:` when shown to operators. */
export const CarbonError = defineErrors('collectors/carbon', CARBON_ERRORS, { name: 'CarbonError', prefixMessages: false });
export type CarbonError = InstanceType<typeof CarbonError>;

/** Highest intensity accepted, gCO2eq/kWh: the dirtiest grids (lignite, oil) stay below ~1 300. */
export const MAX_G_PER_KWH = 5000;
/** Most points accepted in one WattTime answer (signal-index sends one). */
export const MAX_POINTS = 10_000;
/** Longest WattTime token accepted, characters. */
export const MAX_TOKEN_CHARS = 16 * 1024;
/** How far in the future a data time may be before `now` is used instead (gslb/state MAX_FUTURE_MS). */
export const FUTURE_SLACK_MS = 5000;

/** A header-safe secret: visible ASCII only (no spaces, controls or line breaks). */
export const HEADER_SAFE = /^[\x21-\x7E]+$/;

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|z|[+-](\d{2}):?(\d{2}))$/;

/**
 * An ISO 8601 time with a zone (`2026-03-04T21:00:00.000Z`, `…+00:00`) as ms epoch, or null.
 * Calendar fields are checked (Date.parse rolls 30 February over into March).
 */
export function parseTime(raw: unknown): number | null {
  if (typeof raw !== 'string') return null;
  const m = ISO_TIME.exec(raw);
  if (!m) return null;
  const [y, mo, d, h, mi, sec, oh, om] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x))) as number[];
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > new Date(Date.UTC(y!, mo!, 0)).getUTCDate() || h! > 23 || mi! > 59 || sec! > 59 || oh! > 23 || om! > 59) return null;
  const t = Date.parse(raw);
  return Number.isSafeInteger(t) && t >= 0 ? t : null;
}

/** What one answer says: the number and the ms-epoch time it is for, already made sane. */
export interface Reading {
  value: number;
  /** The data's own time if ≤ now + 5 s, else `now`. */
  observedAt: number;
  /** The data's own time as the provider wrote it (for logs). */
  dataTime: string;
  /** The data's own time was in the future and `now` was used. */
  clamped: boolean;
  /** Electricity Maps' isEstimated when it is a boolean (for logs; the fact has no field for it). */
  estimated?: boolean;
}

/** Parses a body as JSON; CARBON_ERR_BAD_JSON otherwise (never anything else). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new CarbonError('CARBON_ERR_BAD_JSON', `the body is not JSON (${(e as Error).message.slice(0, 120)})`);
  }
}

/** A received value, short, for a message: `"302" (a string)`, `null`, `an array`. */
function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)} (a string)`;
  return String(v);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (msg: string): CarbonError => new CarbonError('CARBON_ERR_PAYLOAD', msg);

/**
 * The data's own time `raw` (ISO 8601 with a zone) as observedAt: itself when ≤ now + 5 s,
 * else now (a source clock ahead of ours); refused when not a time (CARBON_ERR_PAYLOAD) or older
 * than `maxAgeMs` (CARBON_ERR_STALE).
 */
export function timeOf(raw: unknown, field: string, now: number, maxAgeMs: number): { observedAt: number; clamped: boolean } {
  if (typeof raw !== 'string' || !ISO_TIME.test(raw)) throw bad(`${field} must be an ISO 8601 time with a zone; got ${shown(raw)}`);
  const t = parseTime(raw);
  if (t === null) throw bad(`${field} is not a valid time: ${shown(raw)}`);
  if (now - t > maxAgeMs) throw new CarbonError('CARBON_ERR_STALE', `${field} ${raw} is ${Math.round((now - t) / 60000)} min old, more than maxAgeMs (${Math.round(maxAgeMs / 60000)} min)`);
  if (t > now + FUTURE_SLACK_MS) return { observedAt: now, clamped: true };
  return { observedAt: t, clamped: false };
}

/**
 * Electricity Maps `carbon-intensity/latest` for `zone` → gCO2eq/kWh at `datetime`.
 * Requires `carbonIntensity` (a number 0 … MAX_G_PER_KWH) and `datetime`; `zone`, when
 * present, must be the zone asked for.
 */
export function readElectricityMaps(body: unknown, zone: string, now: number, maxAgeMs: number): Reading {
  if (!isObject(body)) throw bad(`the answer must be a JSON object; got ${shown(body)}`);
  if (body.zone !== undefined && body.zone !== zone) throw bad(`zone is ${shown(body.zone)}, not the zone asked for (${zone})`);
  const ci = body.carbonIntensity;
  if (ci === undefined || ci === null) throw bad(`carbonIntensity is ${shown(ci)}: no value for ${zone}`);
  if (typeof ci !== 'number' || !Number.isFinite(ci)) throw bad(`carbonIntensity must be a number; got ${shown(ci)}`);
  if (ci < 0 || ci > MAX_G_PER_KWH) throw bad(`carbonIntensity ${ci} gCO2eq/kWh is outside 0 … ${MAX_G_PER_KWH}`);
  const { observedAt, clamped } = timeOf(body.datetime, 'datetime', now, maxAgeMs);
  const r: Reading = { value: ci, observedAt, dataTime: body.datetime as string, clamped };
  if (typeof body.isEstimated === 'boolean') r.estimated = body.isEstimated;
  return r;
}

/**
 * WattTime `v3/signal-index` for `region` → the co2_moer percentile (0–100) of the newest point
 * that is not in the future (else the first point, at `now`). `meta.region`, `meta.signal_type`
 * and `meta.units`, when present, must say `region`, `co2_moer` and `percentile`: anything
 * else is not the number this fact carries.
 */
export function readWattTimeIndex(body: unknown, region: string, now: number, maxAgeMs: number): Reading {
  if (!isObject(body)) throw bad(`the answer must be a JSON object; got ${shown(body)}`);
  const meta = body.meta;
  if (meta !== undefined) {
    if (!isObject(meta)) throw bad(`meta must be an object; got ${shown(meta)}`);
    if (meta.region !== undefined && meta.region !== region) throw bad(`meta.region is ${shown(meta.region)}, not the region asked for (${region})`);
    if (meta.signal_type !== undefined && meta.signal_type !== 'co2_moer') throw bad(`meta.signal_type is ${shown(meta.signal_type)}, not co2_moer`);
    if (meta.units !== undefined && meta.units !== 'percentile') throw bad(`meta.units is ${shown(meta.units)}, not percentile`);
  }
  const data = body.data;
  if (!Array.isArray(data)) throw bad(`data must be an array; got ${shown(data)}`);
  if (data.length === 0) throw bad(`data is empty: no value for ${region}`);
  if (data.length > MAX_POINTS) throw bad(`data has ${data.length} points, more than ${MAX_POINTS}`);
  let best: { value: number; t: number; raw: string } | null = null;
  let first: { value: number; raw: string } | null = null;
  for (let i = 0; i < data.length; i++) {
    const p: unknown = data[i];
    if (!isObject(p)) throw bad(`data[${i}] must be an object; got ${shown(p)}`);
    const v = p.value;
    if (v === undefined || v === null) throw bad(`data[${i}].value is ${shown(v)}`);
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`data[${i}].value must be a number; got ${shown(v)}`);
    if (v < 0 || v > 100) throw bad(`data[${i}].value ${v} is outside the percentile range 0 … 100`);
    const raw = p.point_time;
    if (typeof raw !== 'string' || !ISO_TIME.test(raw)) throw bad(`data[${i}].point_time must be an ISO 8601 time with a zone; got ${shown(raw)}`);
    const t = parseTime(raw);
    if (t === null) throw bad(`data[${i}].point_time is not a valid time: ${shown(raw)}`);
    first ??= { value: v, raw };
    if (t <= now + FUTURE_SLACK_MS && (best === null || t > best.t)) best = { value: v, t, raw };
  }
  if (best === null) {
    // Every point is ahead of our clock: the source's clock is off; the newest reading is now.
    return { value: first!.value, observedAt: now, dataTime: first!.raw, clamped: true };
  }
  const { observedAt } = timeOf(best.raw, 'point_time', now, maxAgeMs);
  return { value: best.value, observedAt, dataTime: best.raw, clamped: false };
}

/** WattTime `GET /login` → the bearer token (visible ASCII, at most MAX_TOKEN_CHARS). */
export function readWattTimeLogin(body: unknown): string {
  if (!isObject(body)) throw bad(`the login answer must be a JSON object; got ${shown(body)}`);
  const t = body.token;
  if (typeof t !== 'string' || t.length === 0) throw bad(`the login answer has no token (got ${t === undefined ? 'nothing' : typeof t === 'string' ? 'an empty string' : shown(t)})`);
  if (t.length > MAX_TOKEN_CHARS) throw bad(`the login token is ${t.length} characters, more than ${MAX_TOKEN_CHARS}`);
  if (!HEADER_SAFE.test(t)) throw bad('the login token holds characters a header cannot carry');
  return t;
}
