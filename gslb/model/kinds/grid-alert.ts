/** The `grid.alert` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldGrid } from './folds.js';
import type { Parts } from './format.js';
import { Instant, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

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
    issued: Type.Optional(Instant('when the operator issued it')),
    start: Type.Optional(Instant('when it takes effect, if announced ahead')),
    end: Type.Optional(Instant('when it is expected to end')),
    program: Type.Optional(Type.String({ maxLength: 200, description: 'who declared it' })),
  },
  { ...strict, description: "a grid operator's alert for the region's zone" },
);

export type GridAlert = Static<typeof GridAlertValue>;

export const gridAlert = {
  name: 'grid.alert',
  value: GridAlertValue,
  fold: foldGrid,
  stale: { keepMs: 3_600_000, then: 'ignore', what: 'grid alert level' },
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{level: 0–3, type?, zone?, message?, issued?, start?, end?, program?}',
    notes: 'an operator\'s alert (`type`: normal, watch, conservation, flex-alert, eea (the default), grid-alert, load-shed, emergency); read through gridPolicy like events',
  },
  /** The longest expiresAt − observedAt a fact may claim: an alert, at most a month. */
  maxValidityMs: 31 * DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ level: 1 }, { level: 3, type: 'eea', zone: 'ERCOT', message: 'EEA 3' }, { level: 0, start: 1_893_456_000_000, end: 1_893_456_000_000 + 3_600_000 }],
    invalid: [
      { value: { level: 7 }, field: 'value.level' },
      { value: {}, field: 'value.level' },
      { value: { level: 1, start: 1_893_456_000_000, end: 1_893_456_000_000 - 1 }, field: 'value.end' },
    ],
  },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const a = v as unknown as Partial<GridAlert>;
    parts.push(`${a.type ?? 'eea'} level ${a.level ?? '?'}${a.zone ? ` (${a.zone})` : ''}`);
    return parts;
  },
} as const satisfies KindDef<'grid.alert'>;
