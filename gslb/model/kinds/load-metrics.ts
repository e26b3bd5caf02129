/** The `load.metrics` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldLatest } from './folds.js';
import { num, pct, type Parts } from './format.js';
import { Share, NonNeg, strict } from './schema.js';
import type { KindDef } from './kind.js';

export const LoadMetricsValue = Type.Object(
  {
    queueDepth: Type.Optional(NonNeg('requests waiting for a slot')),
    runningRequests: Type.Optional(NonNeg('requests being served')),
    kvCacheUse: Type.Optional(Share('KV-cache utilisation')),
    gpuMemoryUse: Type.Optional(Share('GPU memory utilisation')),
    throttledShare: Type.Optional(Share('share of GPUs thermally or power throttled')),
  },
  { ...strict, minProperties: 1, description: 'model-server load; key = the server or pool' },
);

export type LoadMetrics = Static<typeof LoadMetricsValue>;

export const loadMetrics = {
  name: 'load.metrics',
  value: LoadMetricsValue,
  fold: foldLatest,
  stale: { keepMs: 120_000, then: 'ignore', what: 'load reading' },
  summary(v: Record<string, unknown>): string[] {
    const parts: Parts = [];
    const n = num(v, parts);
    n('queueDepth', 'queue');
    n('runningRequests', 'running');
    n('kvCacheUse', 'KV cache', pct);
    n('gpuMemoryUse', 'GPU memory', pct);
    n('throttledShare', 'throttled', pct);
    return parts;
  },
} as const satisfies KindDef<'load.metrics'>;
