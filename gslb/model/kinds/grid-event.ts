/** The `grid.event` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldGrid } from './folds.js';
import { watts, type Parts } from './format.js';
import { Share, Watts, Instant, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS, isoOf } from '../domains.js';

/** What a grid event says, as its source says it; what it means for traffic is gridPolicy's. */
export const GRID_EVENT_TYPES = ['simple', 'import-capacity-limit', 'dispatch-setpoint', 'grid-emergency', 'load-shed', 'power-off', 'cap', 'drain'] as const;
export type GridEventType = (typeof GRID_EVENT_TYPES)[number];

export const GridEventValue = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200, description: 'the event id at its source' }),
    start: Instant('when the event starts'),
    end: Instant('when it ends'),
    type: Type.Union(GRID_EVENT_TYPES.map((t) => Type.Literal(t)), {
      description:
        'simple (OpenADR SIMPLE, with level), import-capacity-limit and dispatch-setpoint (with limitW), grid-emergency (OpenADR ALERT_GRID_EMERGENCY), load-shed (a utility order), power-off (the site\'s supply will be cut: a utility or site controller\'s notice), cap (with cap) or drain (direct instructions, e.g. from a site controller)',
    }),
    level: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'for simple: the OpenADR SIMPLE level 0–3' })),
    limitW: Type.Optional(Watts('for import-capacity-limit and dispatch-setpoint: the limit or setpoint, W')),
    cap: Type.Optional(Share('for cap: the share of capacity the region may use during the event')),
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'the source\'s priority (OpenADR: lower number wins)' })),
    cancelled: Type.Optional(Type.Boolean({ description: 'the source cancelled the event' })),
    program: Type.Optional(Type.String({ maxLength: 200, description: 'e.g. the OpenADR program or the ISO notice' })),
  },
  { ...strict, description: 'a scheduled grid obligation as its source states it; key = the event id' },
);

export type GridEvent = Static<typeof GridEventValue>;

export const gridEvent = {
  name: 'grid.event',
  value: GridEventValue,
  fold: foldGrid,
  stale: { keepMs: 0, then: 'ignore', what: 'grid event record (the event itself runs from its start to its end)' },
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{id, start, end, type, level?, limitW?, cap?, priority?, cancelled?, program?}',
    notes: 'what the source said: `type` is `simple` (OpenADR SIMPLE, with `level`), `import-capacity-limit` / `dispatch-setpoint` (with `limitW`), `grid-emergency`, `load-shed`, or a direct `cap` (with `cap`) / `drain`; `key` must equal `id`; in force from `start` to `end`. What it means for traffic is `policy.grid.rules` (gridPolicy)',
  },
  /** The longest expiresAt − observedAt a fact may claim: an event announced up to a year ahead, with its own length. */
  maxValidityMs: 400 * DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [
      { id: 'ev-1', start: 1_893_456_000_000, end: 1_893_456_000_000 + 3_600_000, type: 'load-shed' },
      { id: 'ev-2', start: 1_893_456_000_000, end: 1_893_456_000_000 + 3_600_000, type: 'simple', level: 2, program: 'DR' },
      { id: 'ev-3', start: 1_893_456_000_000, end: 1_893_456_000_000 + 3_600_000, type: 'import-capacity-limit', limitW: 5e6 },
    ],
    invalid: [
      { value: { id: 'ev-1', start: 1_893_456_000_000, end: 1_893_456_000_000 - 1, type: 'load-shed' }, field: 'value.end' },
      { value: { id: 'ev-1', start: 1_893_456_000_000, end: 9e15, type: 'load-shed' }, field: 'value.end' },
      { value: { id: 'ev-1', start: 1_893_456_000_000, end: 1_893_456_000_000 + 1, type: 'simple' }, field: 'value.level' },
      { value: { id: 'ev-1', start: 1_893_456_000_000, end: 1_893_456_000_000 + 1, type: 'import-capacity-limit' }, field: 'value.limitW' },
      { value: { id: 'ev-1', start: 1_893_456_000_000, end: 1_893_456_000_000 + 1, type: 'explode' }, field: 'value.type' },
    ],
  },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const e = v as unknown as Partial<GridEvent>;
    parts.push(`${e.type ?? '?'}${e.level !== undefined ? ` level ${e.level}` : ''}${e.cap !== undefined ? ` cap ${e.cap}` : ''}${e.limitW !== undefined ? ` ${watts(e.limitW)}` : ''}`);
    if (e.cancelled) parts.push('cancelled');
    if (typeof e.start === 'number' && typeof e.end === 'number') parts.push(`${isoOf(e.start)} – ${isoOf(e.end)}`);
    return parts;
  },
} as const satisfies KindDef<'grid.event'>;
