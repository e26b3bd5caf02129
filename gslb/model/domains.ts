/**
 * Value domains (issue 27, ADR 0020): every number an input may carry lies in a range
 * declared once here, and every schema that takes such a number (the signal kinds' values
 * and envelope, the API's bodies and query strings, the configuration, the collectors'
 * sections) is built from these helpers, never from a second copy.
 *
 * Why the ranges are what they are:
 *
 * - **Instants** (ms since the epoch, UTC) are integers from INSTANT_MIN (2000-01-01) to
 *   INSTANT_MAX (2200-01-01). JavaScript's Date holds ±8.64e15 ms (about ±275,000 years), so
 *   an instant in range plus any offset the code adds (holds, restores, expiries, lookahead,
 *   all bounded by MAX_DURATION_MS) is still a valid Date: `new Date(t).toISOString()` never
 *   throws on a value the validators accepted. No real fact is older than 2000 or later than
 *   2200; a value outside is a broken clock or a unit mistake (seconds for ms, µs for ms).
 * - **Durations** (ms) are integers from 0 to at most MAX_DURATION_MS (100 years); each
 *   schema names a tighter maximum where one makes sense (a ramp: a day).
 * - **Power and energy** (W, Wh) are finite numbers from 0 to MAX_WATTS (10 TW, about the
 *   world's generating capacity): a reading above is a unit mistake.
 * - **Counts** (queries, requests) are finite, 0 to MAX_COUNT.
 * - **Shares** are in [0, 1].
 *
 * JSON carries no NaN or ±Infinity, but it does carry 1e308 and -0: the bounds refuse the
 * first, and -0 is 0 (≥ 0 holds, and every use treats it as 0).
 */
import { Type, type TNumber, type TInteger } from '@sinclair/typebox';

/** The earliest instant accepted anywhere: 2000-01-01T00:00:00Z, ms. */
export const INSTANT_MIN = 946_684_800_000;
/** The latest instant accepted anywhere: 2200-01-01T00:00:00Z, ms. */
export const INSTANT_MAX = 7_258_118_400_000;
/** The longest duration any schema accepts, ms (100 years): INSTANT_MAX plus it is still a Date. */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;
/** One day, ms: the usual ceiling of ramps, holds and intervals. */
export const DAY_MS = 86_400_000;
/** The largest power or energy accepted, W or Wh (10 TW). */
export const MAX_WATTS = 1e13;
/** The largest count accepted (queries in a bucket, requests waiting): 2^31 − 1, well inside exact doubles. */
export const MAX_COUNT = 2_147_483_647;

/** A date's ISO text for a message; never throws (an out-of-range number reads as itself). */
export function isoOf(t: number): string {
  return Number.isFinite(t) && Math.abs(t) <= 8.64e15 ? new Date(t).toISOString() : String(t);
}

/** An instant: integer ms epoch in [INSTANT_MIN, INSTANT_MAX] (2000–2200). */
export const Instant = (description: string): TInteger =>
  Type.Integer({ minimum: INSTANT_MIN, maximum: INSTANT_MAX, description });

/** A duration: integer ms in [0, max] (max at most MAX_DURATION_MS). */
export const Duration = (description: string, max: number = DAY_MS, min = 0): TInteger =>
  Type.Integer({ minimum: min, maximum: Math.min(max, MAX_DURATION_MS), description });

/** A duration setting of the configuration: integer ms in [min, max] with its default (max at most MAX_DURATION_MS). */
export const DurationSetting = (description: string, dflt: number, min: number, max: number = DAY_MS): TInteger =>
  Type.Integer({ minimum: min, maximum: Math.min(max, MAX_DURATION_MS), default: dflt, description });

/** A share in [0, 1]. */
export const Share = (description: string): TNumber => Type.Number({ minimum: 0, maximum: 1, description });

/** Power, W, in [0, MAX_WATTS]. */
export const Watts = (description: string): TNumber => Type.Number({ minimum: 0, maximum: MAX_WATTS, description });

/** Energy, Wh, in [0, MAX_WATTS]. */
export const WattHours = (description: string): TNumber => Type.Number({ minimum: 0, maximum: MAX_WATTS, description });

/** A count (may be fractional where a rate or an average is meant), in [0, MAX_COUNT]. */
export const Count = (description: string): TNumber => Type.Number({ minimum: 0, maximum: MAX_COUNT, description });

/** A bounded non-negative number with its own ceiling (latency ms, g/kWh). */
export const Bounded = (description: string, max: number): TNumber => Type.Number({ minimum: 0, maximum: max, description });
