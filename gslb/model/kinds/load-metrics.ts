/** The `load.metrics` signal kind (gslb/model/kinds/kind.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { foldLatest } from './folds.js';
import { num, pct, type Parts } from './format.js';
import { Share, Count, strict } from './schema.js';
import type { KindDef } from './kind.js';
import { DAY_MS } from '../domains.js';

export const LoadMetricsValue = Type.Object(
  {
    queueDepth: Type.Optional(Count('requests waiting for a slot')),
    runningRequests: Type.Optional(Count('requests being served')),
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
  /** Its row of the kind table in docs/api.md (POST /v1/signals). */
  doc: {
    value: '{queueDepth?, runningRequests?, kvCacheUse?, gpuMemoryUse?, throttledShare?}',
    notes: 'throttling caps the region at `1 − throttledShare` (times `policy.saturation.throttledFactor`, 0.5, while it is also saturated); more than `policy.saturation.queueWaiting` requests waiting or KV-cache use above `policy.saturation.kvCacheUse` (5 and 0.8, the inference extension\'s endpoint picker) stops spill into it; below that, with measured demand, KV-cache use bounds the spill the region takes: what it serves (its own admitted clients, plus spill that began a minute or more before the reading) ÷ KV-cache use is its capacity, less its own clients is its room for spill (see `GET /v1/demand`)',
  },
  /** The longest expiresAt − observedAt a fact may claim: a load reading is fresh for a few scrapes. */
  maxValidityMs: DAY_MS,
  /** Facts it must accept and refuse (the registry's tests iterate these: gslb/model/kinds/index.test.ts). */
  examples: {
    valid: [{ queueDepth: 3 }, { runningRequests: 40, kvCacheUse: 0.62 }, { throttledShare: 0.25, gpuMemoryUse: 0.9 }],
    invalid: [
      { value: { queueDepth: -1 }, field: 'value.queueDepth' },
      { value: { kvCacheUse: 1.5 }, field: 'value.kvCacheUse' },
      { value: { runningRequests: 1e300 }, field: 'value.runningRequests' },
      { value: { throttledShare: 'half' }, field: 'value.throttledShare' },
    ],
  },
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
