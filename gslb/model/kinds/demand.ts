/** The `demand` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldLatest } from './folds.js';
import { Count, Instant, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const DemandValue = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 254, description: 'the steered name' }),
    bucket: Instant('start of the 10-second bucket (a multiple of 10000)'),
    queries: Count('queries from clients of this home for the name in the bucket'),
  },
  { ...strict, description: 'measured demand; region = the clients\' home' },
);

export type Demand = Static<typeof DemandValue>;

export const demand = {
  name: 'demand',
  value: DemandValue,
  fold: foldLatest,
  stale: { keepMs: 0, then: 'ignore', what: 'demand bucket' },
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{name, bucket, queries}',
    notes: 'accepted and stored as a signal; the planner\'s demand comes from the nodes\' own counts (`GET /v1/demand`)',
  },
  /** The longest expiresAt − observedAt a fact may claim: a demand bucket, at most a day. */
  maxValidityMs: DAY_MS,
  /** Nothing to say in words: demand is read by the planner as numbers. */
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ name: 'api.example.com', bucket: 1_893_456_000_000, queries: 10 }],
    invalid: [
      { value: { name: 'api.example.com', bucket: 1_893_456_000_000 + 5, queries: 10 }, field: 'value.bucket' },
      { value: { name: 'api.example.com', bucket: 1_893_456_000_000, queries: -1 }, field: 'value.queries' },
      { value: { bucket: 1_893_456_000_000, queries: 1 }, field: 'value.name' },
    ],
  },
  summary: (): string[] => [],
} as const satisfies KindDef<'demand'>;
