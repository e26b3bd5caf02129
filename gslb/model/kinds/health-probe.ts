/** The `health.probe` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldHealth } from './folds.js';
import { num, round, type Parts } from './format.js';
import { Bounded, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const HealthProbeValue = Type.Object(
  {
    up: Type.Boolean({ description: 'the probe succeeded' }),
    latencyMs: Type.Optional(Bounded('round-trip time of the probe, ms (at most a day)', 86_400_000)),
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
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{up, latencyMs?, detail?}',
    notes: '`source` = the vantage node, `key` = the endpoint. Anti-flap: `policy.health.fall` failures in a row take an endpoint down, `rise` successes bring it up; an endpoint is down on a majority of vantages, a region when all its probed endpoints are',
  },
  /** The longest expiresAt − observedAt a fact may claim: a probe result is fresh for a few intervals. */
  maxValidityMs: DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ up: true }, { up: false, detail: 'HTTP 503' }, { up: true, latencyMs: 12.5 }],
    invalid: [
      { value: {}, field: 'value.up' },
      { value: { up: 'yes' }, field: 'value.up' },
      { value: { up: true, latencyMs: -1 }, field: 'value.latencyMs' },
      { value: { up: true, latencyMs: 1e300 }, field: 'value.latencyMs' },
      { value: { up: true, colour: 'red' }, field: 'value.colour' },
    ],
  },
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
