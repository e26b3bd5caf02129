/** The `carbon` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldLatest } from './folds.js';
import { num, round, type Parts } from './format.js';
import { Bounded, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const CarbonValue = Type.Object(
  {
    gPerKWh: Type.Optional(Bounded('grid carbon intensity, g/kWh (at most 10,000)', 10_000)),
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
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{gPerKWh?, percentile?}',
    notes: 'a tie-breaker only: a clearly cleaner, healthy, uncapped region within `policy.carbon.bandKm` of a client\'s home is tried first (`Plan.prefer`)',
  },
  /** The longest expiresAt − observedAt a fact may claim: a carbon reading or forecast, at most a week. */
  maxValidityMs: 7 * DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ gPerKWh: 300 }, { percentile: 12 }, { gPerKWh: 40, percentile: 3 }],
    invalid: [
      { value: { gPerKWh: -1 }, field: 'value.gPerKWh' },
      { value: { percentile: 101 }, field: 'value.percentile' },
    ],
  },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    n('gPerKWh', '', (x) => `${round(x, 0)} g/kWh`);
    n('percentile', 'percentile');
    return parts;
  },
} as const satisfies KindDef<'carbon'>;
