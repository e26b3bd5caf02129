/** The `power.budget` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldApplied } from './folds.js';
import { num, round, watts, type Parts } from './format.js';
import { Watts, WattHours, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const PowerBudgetValue = Type.Object(
  {
    importLimitW: Type.Optional(Watts('grid import limit now, W')),
    generationW: Type.Optional(Watts('on-site generation now, W')),
    storageWh: Type.Optional(WattHours('energy left in on-site storage, Wh')),
    storageMaxW: Type.Optional(Watts('the storage\'s maximum discharge power, W')),
    drawW: Type.Optional(Watts('the site\'s draw now, W')),
  },
  { ...strict, minProperties: 1, description: 'the power a site can use; key = the meter or site' },
);

export type PowerBudget = Static<typeof PowerBudgetValue>;

export const powerBudget = {
  name: 'power.budget',
  value: PowerBudgetValue,
  fold: foldApplied,
  stale: { keepMs: 600_000, then: 'degraded', what: 'power budget' },
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{importLimitW?, generationW?, storageWh?, storageMaxW?, drawW?}',
    notes: 'available W ÷ the region\'s `power.fullLoadW` caps it',
  },
  /** The longest expiresAt − observedAt a fact may claim: a power budget, at most a week. */
  maxValidityMs: 7 * DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ importLimitW: 12e6 }, { generationW: 8e6, drawW: 15.5e6 }, { storageWh: 8e6, storageMaxW: 4e6 }],
    invalid: [
      { value: { importLimitW: -1 }, field: 'value.importLimitW' },
      { value: { drawW: 1e300 }, field: 'value.drawW' },
      { value: { storageWh: '8e6' }, field: 'value.storageWh' },
    ],
  },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    n('importLimitW', 'import limit', watts);
    n('generationW', 'generation', watts);
    n('storageWh', 'storage', (x) => `${round(x / 1e3, 1)} kWh`);
    n('storageMaxW', 'storage max', watts);
    n('drawW', 'draw', watts);
    return parts;
  },
} as const satisfies KindDef<'power.budget'>;
