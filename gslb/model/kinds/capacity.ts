/** The `capacity` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldApplied } from './folds.js';
import { num, pct, type Parts } from './format.js';
import { Share, Count, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const CapacityValue = Type.Object(
  {
    fraction: Type.Optional(Share('usable share of the region\'s configured capacity')),
    units: Type.Optional(Count('usable capacity in the fleet\'s unit (e.g. GPUs)')),
  },
  { ...strict, minProperties: 1, description: 'usable capacity: a fraction, units, or both' },
);

export type Capacity = Static<typeof CapacityValue>;

export const capacity = {
  name: 'capacity',
  value: CapacityValue,
  fold: foldApplied,
  stale: { keepMs: 600_000, then: 'degraded', what: 'capacity reading' },
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{fraction?, units?}',
    notes: 'units are divided by the region\'s `capacity.units`',
  },
  /** The longest expiresAt − observedAt a fact may claim: a capacity reading, at most a week. */
  maxValidityMs: 7 * DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ fraction: 1 }, { units: 12 }, { fraction: 0.5, units: 6 }],
    invalid: [
      { value: {}, field: 'value' },
      { value: { fraction: 2 }, field: 'value.fraction' },
      { value: { units: -3 }, field: 'value.units' },
    ],
  },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    n('fraction', 'usable', pct);
    n('units', 'units');
    return parts;
  },
} as const satisfies KindDef<'capacity'>;
