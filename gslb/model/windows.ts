/**
 * Recurring windows (issue 21, docs/schedules.md, ADR 0015): maintenance windows, tariff and
 * coincident-peak windows, failover practice runs. Declared once here: the configuration's
 * `windows:` entries and the API's body (WindowSpecSchema), the planner's form of a window
 * (PlannerWindow: the cron expression already parsed by node-cron at the edge, so the pure
 * planner reads plain data), and an occurrence as the plan lists it (WindowOccurrenceSchema).
 * Declarations, and two small pure helpers (a duration's milliseconds; whether a maintenance
 * window would exceed the automation's safety limits).
 */
import { Type, type Static } from '@sinclair/typebox';

const strict = { additionalProperties: false } as const;

export const WINDOW_KINDS = ['maintenance', 'tariff', 'practice'] as const;
export type WindowKind = (typeof WINDOW_KINDS)[number];

/** The longest a window may last: the planner's horizon reaches back this far (and a week covers a weekend's works). */
export const MAX_WINDOW_MS = 7 * 24 * 3_600_000;

/** `2h`, `90m`, `3h30m`, `1d`, `1d12h`: days, hours and minutes, at least one, at most 7 days in all. */
export const DURATION_PATTERN = '^(?=[0-9])([0-9]{1,2}d)?([0-9]{1,3}h)?([0-9]{1,5}m)?$';

/** A date in the window's time zone, YYYY-MM-DD. */
const LOCAL_DATE = '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$';

export const WindowSpecSchema = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', description: 'the window\'s name: lowercase letters, digits, ".", "_" and "-" (shown in the plan\'s reasons, explain, the dashboard and gridsteer windows)' }),
    kind: Type.Union(
      WINDOW_KINDS.map((k) => Type.Literal(k)),
      {
        default: 'maintenance',
        description:
          'maintenance: acts at the operator drain\'s rank (a window that would exceed the automation\'s safety limits needs force: true); tariff: a grid obligation, under the safety limits and the freeze; practice: a failover practice run (automation: every limit applies)',
      },
    ),
    regions: Type.Array(Type.String({ minLength: 1, maxLength: 63 }), { minItems: 1, maxItems: 256, uniqueItems: true, description: 'the regions it caps (each a region id)' }),
    cron: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'when each occurrence starts: a cron expression (node-cron syntax, minute hour day-of-month month day-of-week, e.g. "0 2 * * sun"); a seconds field, if given, must be 0',
    }),
    timezone: Type.String({ default: 'UTC', minLength: 1, maxLength: 64, description: 'the IANA time zone the cron expression is read in, e.g. Europe/Dublin, America/Chicago' }),
    duration: Type.String({ pattern: DURATION_PATTERN, description: 'how long each occurrence lasts (elapsed time, across a DST change too): e.g. 2h, 90m, 3h30m, 1d; at most 7d', 'x-form': 'days, hours and minutes such as 2h, 90m, 3h30m or 1d, at most 7d' }),
    cap: Type.Number({ minimum: 0, exclusiveMaximum: 1, default: 0, description: 'the share the regions keep during the window (0 = drain)' }),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'why, in words: shown in the plan\'s reasons and explain' }),
    blockedDates: Type.Optional(
      Type.Array(Type.String({ pattern: LOCAL_DATE }), { maxItems: 1000, uniqueItems: true, description: 'dates (YYYY-MM-DD in the window\'s time zone) on which no occurrence starts, e.g. release freezes' }),
    ),
    from: Type.Optional(Type.String({ pattern: LOCAL_DATE, description: 'no occurrence starts before this date (YYYY-MM-DD in the window\'s time zone)' })),
    until: Type.Optional(Type.String({ pattern: LOCAL_DATE, description: 'no occurrence starts after this date (YYYY-MM-DD in the window\'s time zone, inclusive)' })),
    minCapacityLeft: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          'practice: the run is skipped (or aborted) unless the other regions, as they stand, keep at least this share of the fleet\'s capacity (capacity units) with the practice regions out; default 0.5',
      }),
    ),
    force: Type.Optional(
      Type.Boolean({ description: 'maintenance: the operator confirms a window that takes more than the automation\'s safety limits allow (policy.drain.maxAutoShare of a name\'s capacity, or several regions at once under minDrainIntervalMs)' }),
    ),
  },
  { ...strict, description: 'a recurring window (docs/schedules.md)' },
);
export type WindowSpec = Static<typeof WindowSpecSchema>;

/** A cron expression's fields as node-cron's parse() gives them (names, ranges and steps expanded; L, W, # kept as strings). */
export const CronFieldsSchema = Type.Object(
  {
    minute: Type.Array(Type.Integer()),
    hour: Type.Array(Type.Integer()),
    dayOfMonth: Type.Array(Type.Union([Type.Integer(), Type.String()])),
    month: Type.Array(Type.Integer()),
    dayOfWeek: Type.Array(Type.Union([Type.Integer(), Type.String()])),
  },
  { ...strict, description: 'the cron expression parsed (node-cron parse())' },
);
export type CronFields = Static<typeof CronFieldsSchema>;

/** A window as the planner reads it: plain data, the same on every node. */
export const PlannerWindowSchema = Type.Object(
  {
    id: Type.String(),
    kind: Type.Union(WINDOW_KINDS.map((k) => Type.Literal(k))),
    regions: Type.Array(Type.String()),
    cron: Type.String({ description: 'the expression as written (for the words)' }),
    fields: CronFieldsSchema,
    timezone: Type.String(),
    durationMs: Type.Integer({ minimum: 60_000 }),
    cap: Type.Number(),
    reason: Type.String(),
    blockedDates: Type.Array(Type.String()),
    from: Type.Optional(Type.String()),
    until: Type.Optional(Type.String()),
    force: Type.Optional(Type.Boolean()),
    minCapacityLeft: Type.Optional(Type.Number()),
    /** Where it was declared: the configuration, or the API (stored in the store, audited). */
    source: Type.Union([Type.Literal('config'), Type.Literal('api')]),
    /** API windows: when the window was created (an occurrence nearer than its drain lead drains late, with the shortfall said). Config windows are known before any occurrence. */
    learnedAt: Type.Optional(Type.Integer()),
  },
  strict,
);
export type PlannerWindow = Static<typeof PlannerWindowSchema>;

/** One occurrence of a window, as the plan lists it (the horizon's occurrences, skipped ones with why). */
export const WindowOccurrenceSchema = Type.Object(
  {
    window: Type.String({ description: 'the window\'s id' }),
    kind: Type.Union(WINDOW_KINDS.map((k) => Type.Literal(k))),
    regions: Type.Array(Type.String()),
    start: Type.Integer({ description: 'ms epoch: the occurrence starts (the regions are drained or capped by then: the ramp runs ahead of it)' }),
    end: Type.Integer({ description: 'ms epoch: the occurrence ends (then the hold and the restore)' }),
    cap: Type.Number({ description: 'the share the regions keep (0 = drain)' }),
    reason: Type.String(),
    source: Type.Union([Type.Literal('config'), Type.Literal('api')]),
    skipped: Type.Optional(Type.String({ description: 'why this occurrence does not act (a blocked date, gridsteer windows skip-next, a practice run\'s blocking condition)' })),
    aborted: Type.Optional(
      Type.Object({ at: Type.Integer({ description: 'ms epoch' }), why: Type.String() }, { additionalProperties: false, description: 'a practice run stopped by a blocking condition that began during it: the region restores from `at`' }),
    ),
  },
  { ...strict, description: 'one occurrence of a recurring window' },
);
export type WindowOccurrence = Static<typeof WindowOccurrenceSchema>;

/** A duration as WindowSpecSchema writes it (`3h30m`), in ms; NaN when it is not one. */
export function durationMs(d: string): number {
  const m = new RegExp(DURATION_PATTERN).exec(d);
  if (!m) return NaN;
  const n = (x: string | undefined) => (x ? Number(x.slice(0, -1)) : 0);
  return ((n(m[1]) * 24 + n(m[2])) * 60 + n(m[3])) * 60_000;
}

/** What the safety check needs to know of the fleet. */
export interface SafetyFacts {
  maxAutoShare: number;
  minDrainIntervalMs: number;
  /** Capacity units per region (1 when a region has none). */
  units: Record<string, number>;
  /** The steered names and their regions (the limit is per name). */
  names: { name: string; regions: string[] }[];
}

/**
 * Why a window would exceed the automation's safety limits (docs/design.md "Safety limits and the freeze"),
 * or null: it takes more than maxAutoShare of a name's capacity at once, or starts draining
 * more than one region at once while minDrainIntervalMs asks for one per interval. A
 * maintenance window doing so needs `force: true` when it is created.
 */
export function windowExceedsLimits(w: { regions: string[]; cap: number }, f: SafetyFacts): string | null {
  if (w.cap >= 1) return null;
  if (w.regions.length > 1 && f.minDrainIntervalMs > 0) {
    return `it drains ${w.regions.length} regions at once, and automation starts at most one drain per ${f.minDrainIntervalMs / 1000} s (policy.drain.minDrainIntervalMs)`;
  }
  for (const n of f.names) {
    const total = n.regions.reduce((x, r) => x + (f.units[r] ?? 1), 0);
    const taken = w.regions.filter((r) => n.regions.includes(r)).reduce((x, r) => x + (1 - w.cap) * (f.units[r] ?? 1), 0);
    if (total > 0 && taken > f.maxAutoShare * total + 1e-9) {
      return `it takes ${Math.round((taken / total) * 100)} % of ${n.name}'s capacity, more than the ${Math.round(f.maxAutoShare * 100)} % automation may (policy.drain.maxAutoShare)`;
    }
  }
  return null;
}
