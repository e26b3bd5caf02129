/** The `power.budget` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldApplied } from './folds.js';
import { num, round, watts, type Parts } from './format.js';
import { NonNeg, strict } from './schema.js';
import type { KindDef } from './kind.js';

export const PowerBudgetValue = Type.Object(
  {
    importLimitW: Type.Optional(NonNeg('grid import limit now, W')),
    generationW: Type.Optional(NonNeg('on-site generation now, W')),
    storageWh: Type.Optional(NonNeg('energy left in on-site storage, Wh')),
    storageMaxW: Type.Optional(NonNeg('the storage\'s maximum discharge power, W')),
    drawW: Type.Optional(NonNeg('the site\'s draw now, W')),
  },
  { ...strict, minProperties: 1, description: 'the power a site can use; key = the meter or site' },
);

export type PowerBudget = Static<typeof PowerBudgetValue>;

export const powerBudget = {
  name: 'power.budget',
  value: PowerBudgetValue,
  fold: foldApplied,
  stale: { keepMs: 600_000, then: 'degraded', what: 'power budget' },
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
