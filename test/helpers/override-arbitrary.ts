/**
 * fast-check arbitraries for operator overrides as the API receives them, for the property
 * test of the core (test/core-total.test.ts): one arbitrary per route that stores an
 * override, each built from that route's own body schema (POST /v1/overrides'
 * OverrideBodySchema, POST /v1/automation/freeze's FreezeBody, POST /v1/grid/distrust's
 * DistrustBody, POST /v1/windows' WindowBody) through signal-arbitrary's arbitraryOf, so a
 * bound changed there is generated without an edit here. The fields that decide whether an
 * override is in force are then drawn where it matters: times at each end of the instant
 * range and around the request's instant (an end 1 ms after it, a start 1 ms before), ramps
 * of 0, 1 ms and the longest allowed, values 0, -0, 1, the least positive double and the
 * largest double below 1. A field is sometimes set to a value the schema refuses, removed,
 * or joined by an unknown one: the test keeps what the API's validators accept.
 *
 * The routes without a body of their own are ops too: DELETE /v1/overrides/:id (`end`),
 * DELETE /v1/regions/:id/drain (`undrain`, the ramp back), freeze off, trust again, and
 * POST /v1/windows/:id/skip-next (`skip`).
 */
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import { DAY_MS, INSTANT_MAX, INSTANT_MIN } from '../../gslb/model/domains.js';
import { WINDOW_KINDS } from '../../gslb/model/windows.js';
import { OverrideBodySchema } from '../../gslb/api/routes/state.js';
import { DistrustBody, FreezeBody } from '../../gslb/api/routes/operator.js';
import { WindowBody } from '../../gslb/api/routes/windows.js';
import { arbitraryOf, SOURCES } from './signal-arbitrary.js';

type Body = Record<string, unknown>;

/** One request that creates or ends overrides, `ago` ms before the instant planned at. */
export type OverrideOp =
  | { op: 'create' | 'freeze' | 'distrust' | 'window'; ago: number; body: Body }
  /** `pick` chooses a drained region three times in four, when there is one (else `region`). */
  | { op: 'undrain'; ago: number; region: string; pick: number; reason: string }
  | { op: 'end' | 'skip'; ago: number; pick: number; reason: string };

/** Values the schemas refuse (or JSON cannot carry), for one field of a body. */
const BROKEN: unknown[] = [INSTANT_MIN - 1, INSTANT_MAX + 1, 1.5, -1, 1 + Number.EPSILON, -Number.MIN_VALUE, DAY_MS + 1, '0.5', '1796000000000', null, true, [], {}, '', 'a\u0001b', NaN, 1e300];

/** An instant relative to the request's instant `at` (resolved when the op is made): around it, and at the ends of the range. */
type AtInstant = (at: number) => number;
const clampInstant = (t: number) => Math.min(INSTANT_MAX, Math.max(INSTANT_MIN, t));
const INSTANT_AROUND: fc.Arbitrary<AtInstant> = fc.oneof(
  { arbitrary: fc.constantFrom(1, -1, 0, 30_000, 3_600_000, DAY_MS).map((d): AtInstant => (at) => clampInstant(at + d)), weight: 3 },
  { arbitrary: fc.constantFrom(INSTANT_MAX, INSTANT_MAX - 1, INSTANT_MIN).map((t): AtInstant => () => t), weight: 1 },
  { arbitrary: fc.integer({ min: -2 * DAY_MS, max: 7 * DAY_MS }).map((d): AtInstant => (at) => clampInstant(at + d)), weight: 3 },
  { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((f): AtInstant => () => Math.round(INSTANT_MIN + f * (INSTANT_MAX - INSTANT_MIN))), weight: 1 },
);

/** An end: mostly after the request's instant (from 1 ms to a week, or the range's end), sometimes anywhere around it. */
const END_AROUND: fc.Arbitrary<AtInstant> = fc.oneof(
  { arbitrary: fc.constantFrom(1, 30_000, 3_600_000, DAY_MS).map((d): AtInstant => (at) => clampInstant(at + d)), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 7 * DAY_MS }).map((d): AtInstant => (at) => clampInstant(at + d)), weight: 2 },
  { arbitrary: fc.constant((): number => INSTANT_MAX), weight: 1 },
  { arbitrary: INSTANT_AROUND, weight: 1 },
);

/** A start: mostly at or shortly before or after the request's instant, sometimes anywhere around it. */
const START_AROUND: fc.Arbitrary<AtInstant> = fc.oneof(
  { arbitrary: fc.constantFrom(0, -1, 1, -30_000, -3_600_000, 60_000).map((d): AtInstant => (at) => clampInstant(at + d)), weight: 3 },
  { arbitrary: INSTANT_AROUND, weight: 1 },
);

/** A body with its instants relative to the request's instant resolved (what the client sends at `at`). */
export function bodyAt(body: Body, at: number): Body {
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, typeof v === 'function' ? (v as AtInstant)(at) : v]));
}

const SHARE = fc.oneof(
  { arbitrary: fc.constantFrom(0, -0, 1, Number.MIN_VALUE, 1 - 2 ** -53, 0.5, 0.3), weight: 3 },
  { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }), weight: 1 },
);
const RAMP = fc.oneof(fc.constantFrom(0, 1, 60_000, DAY_MS, DAY_MS - 1), fc.integer({ min: 0, max: DAY_MS }));
const REASON = fc.oneof(
  { arbitrary: fc.constantFrom('swap PDUs', 'x'.repeat(500), '⚡ grid notice 14:02', 'r'), weight: 12 },
  { arbitrary: fc.constantFrom(' ', '\t'), weight: 1 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 1 },
);

/**
 * `base` (drawn from `schema`) with each field in `fields` replaced, nine times in ten, by its
 * arbitrary (undefined: left out), then broken one way now and then.
 */
function bodyOf(schema: TSchema, fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Body> {
  const keys = Object.keys(fields);
  return fc
    .tuple(
      arbitraryOf(schema as never) as fc.Arbitrary<Body>,
      fc.record(Object.fromEntries(keys.map((k) => [k, fields[k]!])) as Record<string, fc.Arbitrary<unknown>>),
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: keys.length, maxLength: keys.length }),
      fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.tuple(fc.nat(), fc.constantFrom(...BROKEN, undefined)), weight: 1 }),
    )
    .map(([base, mine, drawn, broken]) => {
      const body: Body = { ...base };
      keys.forEach((k, i) => {
        if (drawn[i] === 0) return; // the schema's own draw, one time in ten
        if (mine[k] === undefined) delete body[k];
        else body[k] = mine[k];
      });
      if (broken) {
        const [pick, v] = broken;
        const names = [...Object.keys(body), 'unknownField'];
        const k = names[pick % names.length]!;
        if (v === undefined) delete body[k];
        else body[k] = v;
      }
      return body;
    });
}

const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined, freq: 3 });

/**
 * The ops of one case: requests made over the last day before the instant planned at, oldest
 * first; a body's instants are functions of the request's instant (bodyAt resolves them), so
 * the arbitrary is built once, not per case.
 */
export function overrideOps(regions: readonly string[]): fc.Arbitrary<OverrideOp[]> {
  const region = fc.oneof({ arbitrary: fc.constantFrom(...regions), weight: 12 }, { arbitrary: fc.constantFrom('xx-none', ''), weight: 1 });
  const ago = fc.oneof(fc.constantFrom(0, 1, 30_000, 3_600_000, DAY_MS), fc.integer({ min: 0, max: DAY_MS }));
  const at = (body: fc.Arbitrary<OverrideOp>) => fc.tuple(ago, body).map(([d, op]): OverrideOp => ({ ...op, ago: d }));
  const create = at(
    bodyOf(OverrideBodySchema, {
      region,
      action: fc.constantFrom('drain', 'undrain', 'force-up', 'force-down', 'weight'),
      value: maybe(SHARE),
      ramp: maybe(RAMP),
      by: maybe(END_AROUND),
      start: maybe(START_AROUND),
      end: maybe(END_AROUND),
      reason: REASON,
    })
      // A deadline is a drain's, a value a drain's or a weight's: mostly left out of the rest.
      .map((body): OverrideOp => {
        const mostly = typeof body.reason === 'string' && body.reason.length % 5 !== 1;
        if (body.action !== 'drain' && mostly) delete body.by;
        if (body.action !== 'drain' && body.action !== 'weight' && mostly) delete body.value;
        return { op: 'create', ago: 0, body };
      }),
  );
  const freeze = at(
    bodyOf(FreezeBody, { frozen: fc.boolean(), reason: REASON, until: maybe(END_AROUND) }).map((body): OverrideOp => ({ op: 'freeze', ago: 0, body })),
  );
  const distrust = at(
    fc
      .tuple(
        bodyOf(DistrustBody, {
          source: maybe(fc.constantFrom(...SOURCES, 'openadr3/', 'grid-alerts/')),
          principal: maybe(fc.constantFrom('token:prober', 'collector:openadr3', 'nobody')),
          distrusted: fc.boolean(),
          reason: REASON,
          until: maybe(END_AROUND),
        }),
        fc.boolean(),
      )
      // Mostly exactly one of source and principal, as the route asks.
      .map(([body, source]): OverrideOp => {
        if (body.source !== undefined && body.principal !== undefined) delete body[source ? 'principal' : 'source'];
        return { op: 'distrust', ago: 0, body };
      }),
  );
  const windowBody = bodyOf(WindowBody, {
      id: fc.constantFrom('w1', 'w2', 'patch-tuesday', 'Bad Id'),
      kind: fc.constantFrom(...WINDOW_KINDS, 'bogus'),
      regions: fc.oneof({ arbitrary: fc.subarray([...regions], { minLength: 1, maxLength: 3 }), weight: 5 }, { arbitrary: fc.constant(['xx-none']), weight: 1 }),
      cron: fc.constantFrom('0 2 * * sun', '*/30 * * * *', '0 0 1 1 *', '0 0 29 2 *', '* * * * *', '0 0 31 2 *', '61 * * * *', '0 0 0 * * *'),
      timezone: fc.constantFrom('UTC', 'Europe/Dublin', 'America/Chicago', 'Pacific/Kiritimati', 'Nowhere/Zone'),
      duration: fc.constantFrom('1m', '2h', '90m', '7d', '8d', '0m'),
      cap: maybe(fc.constantFrom(0, -0, Number.MIN_VALUE, 0.5, 1 - 2 ** -53, 1)),
      reason: REASON,
      from: maybe(fc.constantFrom('2000-01-01', '2026-12-04', '2200-12-31', '1999-12-31')),
      until: maybe(fc.constantFrom('2000-01-02', '2026-12-05', '2200-12-31', '2201-01-01')),
      minCapacityLeft: maybe(fc.constantFrom(0, 0.5, 1)),
      force: maybe(fc.boolean()),
    });
  const window = at(
    fc
      .tuple(
        windowBody,
        fc.nat(), fc.constantFrom('0 2 * * sun', '0 12 * * *', '0 0 29 2 *'), fc.constantFrom('UTC', 'Europe/Dublin', 'Pacific/Kiritimati'), fc.constantFrom('1m', '90m', '7d'),
      )
      // Three in four made to pass the checks a window has beyond its schema, so windows are planned with, not only refused.
      .map(([body, seed, cron, timezone, duration]): OverrideOp => {
        if (seed % 4 !== 0) {
          if (typeof body.id !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(body.id)) body.id = `w${seed % 3}`;
          if (!(WINDOW_KINDS as readonly unknown[]).includes(body.kind)) body.kind = WINDOW_KINDS[seed % WINDOW_KINDS.length];
          Object.assign(body, { cron, timezone, duration });
          if (body.kind !== 'practice') delete body.minCapacityLeft;
          if (body.kind === 'maintenance') body.force = true;
          else delete body.force;
          if (typeof body.cap !== 'number' || body.cap >= 1 || body.cap < 0) body.cap = 0;
          if (!Array.isArray(body.regions) || body.regions.some((r) => !regions.includes(r as string))) body.regions = [regions[seed % regions.length]];
        }
        return { op: 'window', ago: 0, body };
      }),
  );
  const undrain = fc.record({ ago, region, pick: fc.nat(), reason: REASON }).map((x): OverrideOp => ({ op: 'undrain', ...x }));
  const ender = (op: 'end' | 'skip') => fc.record({ ago, pick: fc.nat(), reason: REASON }).map((x): Extract<OverrideOp, { op: 'end' | 'skip' }> => ({ op, ...x }));
  // A window is skipped right after it is added one time in two (a skip needs a window to skip).
  const windowThenSkip = fc.tuple(window, fc.option(ender('skip'), { nil: undefined, freq: 2 })).map(([w, skip]): OverrideOp[] => (skip ? [w, { ...skip, ago: w.ago, pick: 0 }] : [w]));
  const one = (a: fc.Arbitrary<OverrideOp>) => a.map((op) => [op]);
  return fc
    .array(
      fc.oneof(
        { arbitrary: one(create), weight: 8 },
        { arbitrary: one(freeze), weight: 2 },
        { arbitrary: one(distrust), weight: 2 },
        { arbitrary: windowThenSkip, weight: 1 },
        { arbitrary: one(undrain), weight: 1 },
        { arbitrary: one(ender('end')), weight: 1 },
        { arbitrary: one(ender('skip')), weight: 1 },
      ),
      { maxLength: 4 },
    )
    // Oldest first; a skip stays after the window it follows (the sort is stable).
    .map((groups) => groups.flat().sort((a, b) => b.ago - a.ago));
}
