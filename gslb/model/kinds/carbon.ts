/** The `carbon` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldLatest } from './folds.js';
import { num, round, type Parts } from './format.js';
import { NonNeg, strict } from './schema.js';
import type { KindDef } from './kind.js';

export const CarbonValue = Type.Object(
  {
    gPerKWh: Type.Optional(NonNeg('grid carbon intensity')),
    percentile: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'where now ranks in the recent range' })),
  },
  { ...strict, minProperties: 1, description: 'grid carbon intensity' },
);

export type Carbon = Static<typeof CarbonValue>;

export const carbon = {
  name: 'carbon',
  value: CarbonValue,
  fold: foldLatest,
  stale: { keepMs: 3_600_000, then: 'ignore', what: 'carbon reading' },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    n('gPerKWh', '', (x) => `${round(x, 0)} g/kWh`);
    n('percentile', 'percentile');
    return parts;
  },
} as const satisfies KindDef<'carbon'>;
