/** The `health.probe` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldHealth } from './folds.js';
import { num, round, type Parts } from './format.js';
import { NonNeg, strict } from './schema.js';
import type { KindDef } from './kind.js';

export const HealthProbeValue = Type.Object(
  {
    up: Type.Boolean({ description: 'the probe succeeded' }),
    latencyMs: Type.Optional(NonNeg('round-trip time of the probe')),
    detail: Type.Optional(Type.String({ maxLength: 500, description: 'what failed, in words' })),
  },
  { ...strict, description: 'one probe result; source = the vantage node (health/<node>), key = the endpoint probed' },
);

export type HealthProbe = Static<typeof HealthProbeValue>;

export const healthProbe = {
  name: 'health.probe',
  value: HealthProbeValue,
  fold: foldHealth,
  stale: { keepMs: 300_000, then: 'ignore', what: 'health probe' },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    const h = v as unknown as HealthProbe;
    parts.push(h.up ? 'up' : 'down');
    n('latencyMs', '', (x) => `${round(x, 1)} ms`);
    if (typeof h.detail === 'string') parts.push(h.detail);
    return parts;
  },
} as const satisfies KindDef<'health.probe'>;
